"""A run's report: a main page that answers first, one detail page per suite, and a tidy CSV.

The main page opens with the findings (consecutive releases of the lineage whose
change is significant and beyond the threshold, largest first), then geometric
means, the variants against their twins, and links to the suite pages, which
hold the per-op tables. Tables have at most ``MAX_COLUMNS`` value columns, so
they read at GitHub's page width. ``build_merged_report`` puts the main pages of
runs on several hosts together. All are generated files: regenerate, never edit.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import math
from pathlib import Path

from iomatrix import cli, counts, native, stats, store
from iomatrix.analysis import (VARIANT_KINDS, Lineage, RunData, build_flag_differences,
                               compare_all, default_baseline, lineage, ordered_ops,
                               ordered_series, process_means)
from iomatrix.markdown import (FASTER, SLOWER, anchor, code, fmt_ratio, fmt_time, md, table)
from iomatrix.sections import (column_title, section_aa, section_header, section_memory,
                               section_metadata, section_problems, section_sentences,
                               section_skipped, section_then_and_now, section_warnings)

DEFAULT_THRESHOLD = 0.05
MAX_FINDINGS = 10         # per direction on the main page; every finding is on its suite's page
MAX_COLUMNS = 6           # value columns per table: a ratio cell with its interval is ~24 chars
TOP_PER_VARIANT = 5       # largest significant changes listed per variant on the main page


@dataclasses.dataclass
class Pages:
    main: str
    suites: dict          # suite -> markdown of its detail page
    csv: str              # the tidy table: one row per run, series, op and statistic


@dataclasses.dataclass
class Finding:
    op: str
    a: str
    b: str
    comparison: stats.Comparison


@dataclasses.dataclass
class Analysis:
    """Everything the pages are built from, computed once."""
    data: RunData
    ops: list
    order: list
    means: dict
    lin: Lineage
    oldest: str
    baseline: str | None          # the user's --baseline when it is not the oldest
    threshold: float
    suite_of: dict
    category_of: dict
    steps: list                   # (a, b) along the lineage
    step_cmp: dict                # (op, a, b) -> Comparison
    oldest_cmp: dict              # (op, series) -> Comparison against the oldest
    twin_cmp: dict                # (op, series) -> Comparison of a variant against its twin
    baseline_cmp: dict            # (op, series) -> Comparison against --baseline

    @property
    def suites(self) -> list:
        return list(dict.fromkeys(self.suite_of[op] for op in self.ops))

    def findings(self) -> list[Finding]:
        """Steps that are significant and beyond the threshold either way, largest first."""
        found = [Finding(op, a, b, c) for (op, a, b), c in self.step_cmp.items()
                 if c.significant and (c.beyond(self.threshold)
                                       or c.ratio < 1 / (1 + self.threshold))]
        return sorted(found, key=lambda f: (-abs(math.log(f.comparison.ratio)), f.op))

    def listed(self) -> tuple[list[Finding], list[Finding]]:
        """The findings the main page lists: the largest slowdowns, then the largest speed-ups."""
        found = self.findings()
        return ([f for f in found if f.comparison.ratio > 1][:MAX_FINDINGS],
                [f for f in found if f.comparison.ratio < 1][:MAX_FINDINGS])


def analyse(data: RunData, baseline: str | None, threshold: float) -> Analysis:
    order = ordered_series(data)
    if baseline is not None and baseline not in order:
        raise cli.BadInput(f"unknown baseline {baseline!r}; valid: {', '.join(order)}")
    ops = [op for op in ordered_ops(data)
           if (data.frame.loc[data.frame["op"] == op, "series"] != native.SERIES).any()]
    means = process_means(data.frame)
    lin = lineage(data, order)
    oldest = lin.releases[0] if lin.releases else default_baseline(data, order)
    steps = list(zip(lin.releases, lin.releases[1:]))
    step_cmp = {(op, a, b): c for a, b in steps
                for (op, _), c in compare_all(means, ops, a, [b]).items()}
    twin_cmp = {}
    for v in lin.variants:
        if v.twin:
            twin_cmp.update(compare_all(means, ops, v.twin, [v.series]))
    chosen = baseline if baseline not in (None, oldest) else None
    return Analysis(data, ops, order, means, lin, oldest, chosen, threshold,
                    dict(zip(data.frame["op"], data.frame["suite"])),
                    dict(zip(data.frame["op"], data.frame["category"])), steps, step_cmp,
                    compare_all(means, ops, oldest, order), twin_cmp,
                    compare_all(means, ops, chosen, order) if chosen else {})


# -- shared pieces ---------------------------------------------------------------------

def wide_table(rows: list, columns: list, first: str = "op", max_columns: int = MAX_COLUMNS) \
        -> list[str]:
    """``rows``: (title, key); ``columns``: (header, cell(key) -> str). Split into tables of
    at most ``max_columns`` value columns, each with the row titles, so none is too wide."""
    lines = []
    for start in range(0, len(columns), max_columns):
        part = columns[start:start + max_columns]
        body = [[title] + [cell(key) for _, cell in part] for title, key in rows]
        lines += [table(body, [first] + [header for header, _ in part]), ""]
    return lines


def geomean_cell(comparisons) -> str:
    ratios = [c.ratio for c in comparisons]
    return f"{stats.geometric_mean(ratios):.2f}" if ratios else "—"


def step_title(a: str, b: str) -> str:
    return f"{code(a)} → {code(b)}"


def timer_notes(data: RunData) -> list[str]:
    """What times each interpreter: pyperf under Python 2 has no perf_counter."""
    notes = []
    for series, info in sorted(data.manifest.get("interpreters", {}).items()):
        if (info.get("version_info") or [3])[0] == 2 and info.get("pyperf_version"):
            notes.append(f"{code(series)} runs pyperf {md(info['pyperf_version'])}, which under "
                         "Python 2 times with `time.time()` (wall-clock time of the day) instead "
                         "of `time.perf_counter()`: its times are coarser and follow clock "
                         "adjustments.")
    return notes


def section_counters(data: RunData, findings: list[Finding]) -> list[str]:
    """The counting pass (``<series>.counters.json`` beside the series files): counts per op,
    version steps on counts, how exact each counter is. Nothing for a run that did not
    count (``--counters off``), so such a report has no empty section."""
    rows, skipped = counts.load_counts(data.run.path), counts.skipped_counts(data.run.path)
    if not rows and not skipped:
        return []
    return counts.markdown_section(rows, skipped)


# -- the main page ---------------------------------------------------------------------

def section_findings(an: Analysis, link: str, strip_figures: list[str]) -> list[str]:
    lines = ["## Findings", ""]
    if len(an.lin.releases) < 2:
        kinds = sorted({v.kind for v in an.lin.variants})
        lines += [f"This run has no release lineage ({len(an.lin.releases)} plain CPython "
                  "release): there are no release steps to rank. "
                  + (f"Its variants ({', '.join(kinds)}) are compared with their twins below."
                     if kinds else ""), ""]
        return lines
    findings = an.findings()
    chain = " → ".join(code(s) for s in an.lin.releases)
    lines += [f"Changes between consecutive releases of the lineage {chain} that are "
              f"significant and beyond {an.threshold:.0%} either way, largest first. "
              f"{stats.METHOD}", ""]
    untested = [c for c in an.step_cmp.values() if c.significant is None]
    if untested:
        fewest = min(min(c.n_a, c.n_b) for c in untested)
        lines += [f"{len(untested)} of {len(an.step_cmp)} step comparisons have too few worker "
                  f"processes for an interval (as few as {fewest} a side; at least "
                  f"{stats.min_processes_for_significance()} a side are needed at "
                  f"{stats.CONFIDENCE:.0%}): no finding can come from those, and their ratios "
                  "show [n/a].", ""]
    if not findings:
        return lines + [f"None: no step of the lineage changed an op significantly by more "
                        f"than {an.threshold:.0%}.", ""]
    slower, faster = an.listed()
    counted = counts.load_counts(an.data.run.path)  # what the counting pass saw, if it ran
    rank = 0
    for title, listed in (("Slower", slower), ("Faster", faster)):
        if not listed:
            continue
        rows = []
        for f in listed:
            rank += 1
            suite = an.suite_of[f.op]
            detail = f"[{md(suite)}]({link}/{suite}.md#{anchor('Release steps')})"
            rows.append([str(rank), code(f.op), step_title(f.a, f.b),
                         fmt_ratio(f.comparison, an.threshold), detail]
                        + ([counts.change_of(counted, f.op, f.a, f.b) or "no change"]
                           if counted else []))
        headers = ["#", "op", "step", "ratio [95% interval]", "detail"]
        align = ["right", "left", "left", "right", "left"]
        if counted:
            headers, align = headers + ["counts per call"], align + ["left"]
        lines += [f"### {title}", "", table(rows, headers, align), ""]
    more = len(findings) - len(slower) - len(faster)
    if more:
        lines += [f"{more} more findings are on the suite pages (the largest "
                  f"{MAX_FINDINGS} each way are listed here): they are the marked cells of each suite "
                  "page's release-steps table.", ""]
    if strip_figures:
        lines += ["Each listed finding's per-process means, both sides (numbered as above): "
                  "a ratio hides a series that splits into two modes; these do not.", ""]
    lines += [f"![per-process values of findings]({path})" for path in strip_figures]
    return lines + ([""] if strip_figures else [])


def section_geomeans(an: Analysis) -> list[str]:
    """Geometric means against the oldest release, overall and per category, one row a series."""
    others = [s for s in an.order if s != an.oldest]
    if not others:
        return []
    categories = sorted({an.category_of[op] for op in an.ops})

    def of(series, category=None):
        return [c for (op, s), c in an.oldest_cmp.items()
                if s == series and (category is None or an.category_of[op] == category)]
    rows = [(column_title(an.data, s), s) for s in others]
    columns = [("ops", lambda s: str(len(of(s)))), ("all ops", lambda s: geomean_cell(of(s)))]
    columns += [(md(cat), lambda s, cat=cat: geomean_cell(of(s, cat))) for cat in categories]
    return [f"## Geometric means against {code(an.oldest)}", "",
            f"Each series' ratios to {code(an.oldest)}, geometric mean over the ops it ran "
            "(the ops column counts them; a series that ran fewer ops is a mean over those). "
            "—: no op of that category.", ""] + wide_table(rows, columns, "series")


def section_steps(an: Analysis) -> list[str]:
    if not an.steps:
        return []
    rows = []
    for a, b in an.steps:
        cs = [c for (op, x, y), c in an.step_cmp.items() if (x, y) == (a, b)]
        rows.append([step_title(a, b), str(len(cs)), geomean_cell(cs),
                     str(sum(bool(c.significant) and c.ratio > 1 for c in cs)),
                     str(sum(bool(c.significant) and c.ratio < 1 for c in cs)),
                     str(sum(c.regression(an.threshold) for c in cs))])
    return ["## Release steps", "",
            "Each release of the lineage against the one before it (the previous-release base): "
            "geometric mean of the op ratios, and how many ops changed significantly.", "",
            table(rows, ["step", "ops", "geometric mean", SLOWER, FASTER,
                         f"regressions > {an.threshold:.0%}"]), ""]


def section_variants(an: Analysis, link: str) -> list[str]:
    lines = []
    for kind, title in VARIANT_KINDS.items():
        variants = [v for v in an.lin.variants if v.kind == kind]
        if not variants or kind == "aa":     # the A/A check has its own section
            continue
        lines += [f"## {title}", ""]
        for v in variants:
            if v.twin is None:
                lines += [f"- {code(v.series)}: no twin in this run, so it is only compared with "
                          f"{code(an.oldest)} (geometric means above).", ""]
                continue
            cs = {op: c for (op, s), c in an.twin_cmp.items() if s == v.series}
            slower = sum(bool(c.significant) and c.ratio > 1 for c in cs.values())
            faster = sum(bool(c.significant) and c.ratio < 1 for c in cs.values())
            lines += [f"### {code(v.series)} against {code(v.twin)}", "",
                      f"{len(cs)} ops, geometric mean {geomean_cell(cs.values())}; "
                      f"{slower} significantly slower, {faster} significantly faster.", ""]
            if kind == "build":
                only_mine, only_theirs = build_flag_differences(an.data, v.series, v.twin)
                if only_mine or only_theirs:
                    lines += [f"Build flags only {code(v.series)} has: "
                              f"{', '.join(code(f) for f in only_mine) or 'none'}; only "
                              f"{code(v.twin)} has: "
                              f"{', '.join(code(f) for f in only_theirs) or 'none'}.", ""]
            top = sorted((c for c in cs.items() if c[1].significant),
                         key=lambda oc: -abs(math.log(oc[1].ratio)))[:TOP_PER_VARIANT]
            if top:
                lines += [table([[code(op), fmt_ratio(c, an.threshold)] for op, c in top],
                                ["largest significant changes", "ratio [95% interval]"]), ""]
    if lines:
        lines = [f"Each variant against its twin; per-op tables are on the suite pages "
                 f"({link}/).", ""] + lines
    return lines


def section_baseline(an: Analysis) -> list[str]:
    if not an.baseline:
        return []
    rows = []
    for s in an.order:
        cs = [c for (op, x), c in an.baseline_cmp.items() if x == s]
        if cs:
            rows.append([column_title(an.data, s), str(len(cs)), geomean_cell(cs)])
    return [f"## Against the chosen baseline {code(an.baseline)}", "",
            table(rows, ["series", "ops", "geometric mean"]), ""]


def section_native_summary(an: Analysis) -> list[str]:
    info = an.data.manifest.get("native")
    if not info:
        return []
    measured = [op for op in an.ops if (native.SERIES, op) in an.means]
    if info.get("status") != "ok" and not measured:
        return ["## C reference", "", f"Not measured: {md(info.get('tool', 'unknown reason'))}.",
                ""]
    return ["## C reference", "",
            f"A C program ({md(info.get('tool', ''))}) repeats {len(measured)} block reads, "
            "writes and copies in the same run with the same call pattern: one unbuffered "
            "system call per block. It is a reference for that pattern, not a limit: Python "
            "buffers, and can be faster. The machine's best (large page-aligned reads) is not "
            "measured by this run. Per-op tables are on the suite pages.", ""]


def section_suite_links(an: Analysis, link: str) -> list[str]:
    rows = [[f"[{md(suite)}]({link}/{suite}.md)",
             str(sum(an.suite_of[op] == suite for op in an.ops)),
             str(sum(an.suite_of[f.op] == suite for f in an.findings()))] for suite in an.suites]
    return ["## Suite pages", "",
            "Every op's ratios with intervals, times, throughput, noise and the figures, one "
            f"page per suite; the full data as a tidy CSV: [{link}/data.csv]({link}/data.csv).",
            "", table(rows, ["suite", "ops", "findings"]), ""]


# -- a suite's page --------------------------------------------------------------------

def suite_page(an: Analysis, suite: str, main_name: str, heatmaps: list[str]) -> str:
    ops = [op for op in an.ops if an.suite_of[op] == suite]
    rows = [(code(op), op) for op in ops]
    lines = ["<!-- generated by scripts/report.py: do not edit, regenerate -->",
             f"# {md(suite)}: run {md(an.data.run.run_id if an.data.run else '?')}", "",
             f"Back to the [main page](../{main_name}). {stats.METHOD} **Bold**: a regression "
             f"(significant and slower by more than {an.threshold:.0%}); [n/a]: too few "
             "processes for an interval; —: not measured.", ""]
    if an.steps:
        lines += ["## Release steps", ""] + wide_table(rows, [
            (step_title(a, b), lambda op, a=a, b=b: fmt_ratio(an.step_cmp.get((op, a, b)),
                                                              an.threshold))
            for a, b in an.steps])
    others = [s for s in an.order if s != an.oldest]
    if others:
        lines += [f"## Against {code(an.oldest)}", ""] + wide_table(rows, [
            (column_title(an.data, s), lambda op, s=s: fmt_ratio(an.oldest_cmp.get((op, s))))
            for s in others])
    twinned = [v for v in an.lin.variants if v.twin]
    if twinned:
        lines += ["## Variants against their twins", ""] + wide_table(rows, [
            (f"{code(v.series)} / {code(v.twin)}",
             lambda op, v=v: fmt_ratio(an.twin_cmp.get((op, v.series)))) for v in twinned])
    if an.baseline:
        lines += [f"## Against {code(an.baseline)}", ""] + wide_table(rows, [
            (column_title(an.data, s), lambda op, s=s: fmt_ratio(an.baseline_cmp.get((op, s))))
            for s in an.order if s != an.baseline])
    lines += section_times(an, ops, rows)
    lines += section_reference(an, ops)
    lines += section_noise(an, ops, rows)
    memory = section_memory(an.data, ops, an.order)
    lines += memory
    if suite == "lutz2009" and others:
        lines += section_sentences(ops, an.order, an.oldest, an.oldest_cmp)
    if heatmaps:
        lines += ["## Figures", "",
                  f"Ratios against {code(an.oldest)} on one colour scale shared by every heatmap "
                  f"(red slower, blue faster, saturating at 1/8× and 8×); "
                  f"{SLOWER}/{FASTER} or a dot: significant.", ""]
        lines += [f"![{md(suite)} heatmap]({path})" for path in heatmaps] + [""]
    return "\n".join(lines)


def section_times(an: Analysis, ops: list, rows: list) -> list[str]:
    def time_of(op, s):
        return stats.location((an.means.get((s, op)) or {}).values())
    nbytes = dict(zip(an.data.frame["op"], an.data.frame["bytes"]))
    lines = ["## Times", "", "Time of one operation: exp of the Hodges-Lehmann location of the "
             "log per-process means (the one-sample form of the ratios' estimator).", ""]
    lines += wide_table(rows, [(column_title(an.data, s),
                                lambda op, s=s: fmt_time(time_of(op, s))) for s in an.order],
                        max_columns=MAX_COLUMNS + 2)
    moving = [(title, op) for title, op in rows if nbytes.get(op)]
    if moving:
        def mbps(op, s):
            t = time_of(op, s)
            return "—" if math.isnan(t) else f"{nbytes[op] / t / 1e6:.0f}"
        lines += ["## Throughput (MB/s)", "", "Bytes the op reads or writes per second "
                  "(10^6 bytes), from the times above.", ""]
        lines += wide_table(moving, [(column_title(an.data, s), lambda op, s=s: mbps(op, s))
                                     for s in an.order], max_columns=MAX_COLUMNS + 2)
    return lines


def section_reference(an: Analysis, ops: list) -> list[str]:
    measured = [op for op in ops if (native.SERIES, op) in an.means]
    if not measured:
        return []
    series = an.lin.releases or an.order

    def share(op, s):
        python = an.means.get((s, op))
        if not python:
            return "—"
        return f"{stats.location(an.means[(native.SERIES, op)].values()) / stats.location(python.values()):.0%}"
    rows = [(code(op), op) for op in measured]
    return ["## Against the C program with the same call pattern", "",
            "The C program's time over the interpreter's: 100% is as fast as one unbuffered "
            "system call per block; above 100%, Python's buffering beats that pattern. Not a "
            "ceiling.", ""] + wide_table(
        rows, [("C time", lambda op: fmt_time(stats.location(an.means[(native.SERIES, op)]
                                                               .values())))]
        + [(column_title(an.data, s), lambda op, s=s: share(op, s)) for s in series],
        max_columns=MAX_COLUMNS + 2)


def section_noise(an: Analysis, ops: list, rows: list) -> list[str]:
    def rsd(op, s):
        value = stats.relative_stdev((an.means.get((s, op)) or {}).values())
        return "—" if math.isnan(value) else f"{value:.1%}"
    return ["## Noise per op", "",
            "Relative standard deviation of the per-process means (—: fewer than two processes). "
            "The intervals above already account for it: they come from the same processes.",
            ""] + wide_table(rows, [(column_title(an.data, s), lambda op, s=s: rsd(op, s))
                                    for s in an.order], max_columns=MAX_COLUMNS + 2)


# -- the tidy CSV ------------------------------------------------------------------------

CSV_FIELDS = ["run_id", "series", "op", "suite", "category", "statistic", "against", "value",
              "low", "high", "significant", "processes"]


def tidy_csv(an: Analysis) -> str:
    """One row per run, series, op and statistic; ratio rows carry their interval bounds."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    run_id = an.data.run.run_id if an.data.run else ""

    def ratio_rows(statistic, comparisons, against_of):
        for (op, s), c in comparisons.items():
            writer.writerow([run_id, s, op, an.suite_of[op], an.category_of[op], statistic,
                             against_of(s), repr(c.ratio), "" if c.low is None else repr(c.low),
                             "" if c.high is None else repr(c.high),
                             "" if c.significant is None else str(c.significant).lower(),
                             c.n_b])
    for (s, op), by_process in sorted(an.means.items()):
        if op in an.suite_of:
            writer.writerow([run_id, s, op, an.suite_of[op], an.category_of[op], "time_s", "",
                             repr(stats.location(by_process.values())), "", "", "",
                             len(by_process)])
    ratio_rows("ratio_to_oldest", an.oldest_cmp, lambda s: an.oldest)
    for (op, a, b), c in an.step_cmp.items():
        ratio_rows("ratio_to_previous_release", {(op, b): c}, lambda s, a=a: a)
    twin_of = {v.series: v.twin for v in an.lin.variants}
    ratio_rows("ratio_to_twin", an.twin_cmp, lambda s: twin_of[s])
    if an.baseline:
        ratio_rows("ratio_to_baseline", an.baseline_cmp, lambda s: an.baseline)
    return out.getvalue()


# -- figures -----------------------------------------------------------------------------

def draw_figures(an: Analysis, figures_dir: Path, draw: bool) -> tuple[dict, list, list]:
    """Heatmaps per suite (split so none is taller than a screen), the lineage trend, the strip
    plots of the findings, the chunk curve. Returns ({suite: [names]}, [main names],
    [strip names]); with ``draw`` False only the names (the PNGs exist already)."""
    from iomatrix import figures
    others = [s for s in an.order if s != an.oldest]
    heatmaps: dict = {}
    for suite in an.suites:
        suite_ops = [op for op in an.ops if an.suite_of[op] == suite]
        # As few parts as keep each under the row limit, of even size (33 ops: 17 + 16).
        size = math.ceil(len(suite_ops) / math.ceil(len(suite_ops) / figures.MAX_HEATMAP_ROWS))
        parts = [suite_ops[i:i + size] for i in range(0, len(suite_ops), size)]
        for k, part in enumerate(parts, 1):
            ratios, significant = figures.ratio_frames(an.oldest_cmp, part, others)
            measured = ratios.columns[ratios.notna().any()]
            if not len(measured):
                continue
            name = f"heatmap-{suite}-{k}.png" if len(parts) > 1 else f"heatmap-{suite}.png"
            if draw:
                figures.heatmap(ratios[measured], significant[measured], figures_dir / name,
                                f"{suite}{f' ({k}/{len(parts)})' if len(parts) > 1 else ''}: "
                                f"time against {an.oldest}")
            heatmaps.setdefault(suite, []).append(name)
    main = []
    if len(an.lin.releases) >= 2:
        categories = sorted({an.category_of[op] for op in an.ops})
        geomeans = figures.category_geomeans(an.oldest_cmp, an.category_of, categories,
                                             an.lin.releases[1:])
        if draw:
            figures.category_trend(geomeans, figures_dir / "categories.png",
                                   f"Geometric mean per category along the lineage, against "
                                   f"{an.oldest}")
        main.append("categories.png")
    chunk_series = an.lin.releases + [native.SERIES]
    if (figures.chunk_curve(an.data.frame[an.data.frame["series"].isin(chunk_series)],
                            figures_dir / "chunks.png", order=chunk_series) if draw
            else (figures_dir / "chunks.png").exists()):
        main.append("chunks.png")
    strips = []
    findings = [f for listed in an.listed() for f in listed]
    for k in range(0, len(findings), figures.STRIPS_PER_FIGURE):
        panels = [{"title": f"#{n} {f.op}\n{f.a} → {f.b}: {f.comparison.ratio:.2f}×",
                   "a": f.a, "b": f.b, "a_values": list(an.means[(f.a, f.op)].values()),
                   "b_values": list(an.means[(f.b, f.op)].values())}
                  for n, f in enumerate(findings[k:k + figures.STRIPS_PER_FIGURE], k + 1)]
        name = f"findings-{k // figures.STRIPS_PER_FIGURE + 1}.png"
        if draw:
            figures.strips(panels, figures_dir / name, "Per-process means of the findings")
        strips.append(name)
    return heatmaps, main, strips


# -- the report ----------------------------------------------------------------------------

def build_pages(data: RunData, baseline: str | None = None,
                threshold: float = DEFAULT_THRESHOLD, figures_dir: Path | None = None,
                figures_link: str = "figures", pages_link: str = "latest",
                main_name: str = "latest.md", draw: bool = True) -> Pages:
    """The main page, the suite pages (``pages_link/<suite>.md`` from the main page) and the
    CSV; with ``figures_dir``, also the PNGs, linked as ``figures_link/NAME`` from the main
    page (``../figures_link/NAME`` from a suite page)."""
    lines = section_header(data)
    order = ordered_series(data)
    if not order:
        lines += ["No results could be read from this run.", ""] + section_problems(data)
        return Pages("\n".join(lines + section_metadata(data, order)), {}, "")
    an = analyse(data, baseline, threshold)
    notes = timer_notes(data)
    lines += [f"- {note}" for note in notes] + ([""] if notes else [])
    heatmaps, main_figures, strips = ({}, [], []) if figures_dir is None else \
        draw_figures(an, figures_dir, draw)
    if len(order) == 1:
        lines += [f"Only {code(order[0])} is in this run: there is nothing to compare, so "
                  f"there are no ratios; its times are on the suite pages.", ""]
    else:
        lines += section_findings(an, pages_link, [f"{figures_link}/{n}" for n in strips])
        lines += section_counters(data, an.findings())
    lines += section_problems(data) + section_warnings(data)
    if len(order) > 1:
        lines += section_geomeans(an) + section_steps(an) + section_baseline(an)
        lines += section_aa(data, an.ops, an.means)
        lines += section_variants(an, pages_link)
        if main_figures:
            titles = {"categories.png": "geometric mean per category along the lineage",
                      "chunks.png": "throughput by chunk size along the lineage"}
            lines += ["## Figures", ""] + [f"![{titles[name]}]({figures_link}/{name})"
                                          for name in main_figures] + [""]
        lines += section_then_and_now(data, an.means, order, an.oldest)
    lines += section_native_summary(an)
    lines += section_suite_links(an, pages_link)
    lines += section_skipped(data) + section_metadata(data, order)
    suites = {suite: suite_page(an, suite, main_name,
                                [f"../{figures_link}/{n}" for n in heatmaps.get(suite, [])])
              for suite in an.suites}
    return Pages("\n".join(lines), suites, tidy_csv(an))


def build_report(data: RunData, baseline: str | None = None,
                 threshold: float = DEFAULT_THRESHOLD, figures_dir: Path | None = None,
                 figures_link: str = "figures") -> str:
    """The main page alone (see build_pages)."""
    return build_pages(data, baseline, threshold, figures_dir, figures_link).main


def demote(text: str) -> str:
    """One heading level down, so a run's report becomes a section of a merged one."""
    return "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines()
                     if not line.startswith("<!-- generated"))


def section_cross_host(runs: list[RunData]) -> list[str]:
    """Each label that ran on several hosts: its time per op on each, and the ratio."""
    lines = []
    labels: dict = {}
    for data in runs:
        for series in ordered_series(data):
            if not series.endswith(store.PYIO_SUFFIX):
                labels.setdefault(series, []).append(data)
    for label, found in labels.items():
        if len(found) < 2:
            continue
        per_run = [process_means(d.frame) for d in found]
        shared = [op for op in ordered_ops(found[0])
                  if all((label, op) in means for means in per_run)]
        if not shared:
            continue
        rows, ratios = [], {i: [] for i in range(1, len(found))}
        for op in shared:
            row = [code(op), fmt_time(stats.location(per_run[0][(label, op)].values()))]
            for i in range(1, len(found)):
                comparison = stats.compare(per_run[0][(label, op)], per_run[i][(label, op)])
                ratios[i].append(comparison.ratio)
                row += [fmt_time(stats.location(per_run[i][(label, op)].values())),
                        fmt_ratio(comparison)]
            rows.append(row)
        rows.append(["**geometric mean**", ""] + [cell for i in range(1, len(found)) for cell in
                                                    ("", f"**{stats.geometric_mean(ratios[i]):.2f}**")])
        headers = ["op", md(host_title(found[0]))]
        for data in found[1:]:
            headers += [md(host_title(data)), f"ratio to {md(found[0].manifest.get('host', '?'))}"]
        lines += [f"### `{label}` on {len(found)} hosts", "", table(rows, headers), ""]
    if not lines:
        return ["## Across hosts", "", "No interpreter label ran on more than one host.", ""]
    return ["## Across hosts", "",
            "The same interpreter label on each host: time per op, and the ratio to the "
            f"first host. {stats.METHOD} Hosts differ in more than their Python, so these "
            "ratios describe machines, not releases.", ""] + lines


def host_title(data: RunData) -> str:
    m = data.manifest
    return f"{m.get('host', '?')} ({m.get('system', '?')}, run {data.run.run_id})"


def build_merged_report(runs: list[RunData], missing: list[str], baseline, threshold,
                        figures_root: Path | None) -> str:
    hosts = sorted({d.manifest.get("host", "?") for d in runs})
    lines = [f"<!-- generated by scripts/report.py from {len(runs)} runs: do not edit, "
             "regenerate -->",
             f"# iomatrix report: {len(runs)} runs on {len(hosts)} hosts", "",
             "Runs: " + ", ".join(f"{md(host_title(d))}" for d in runs) + ".", ""]
    if missing:
        lines += ["Not found, skipped: " + ", ".join(md(m) for m in missing) + ".", ""]
    contexts = {(d.manifest.get("profile"), d.manifest.get("cache"),
                 (d.manifest.get("fixture_filesystem") or {}).get("type")) for d in runs}
    if len(contexts) > 1:
        lines += ["> **Warning:** the runs differ in profile, page-cache mode or file system "
                  f"({'; '.join(', '.join(map(str, c)) for c in sorted(contexts, key=str))}); "
                  "compare them with care.", ""]
    lines += section_cross_host(runs)
    for data in runs:
        figures_dir = figures_root / data.run.run_id if figures_root else None
        text = build_report(data, baseline if baseline in ordered_series(data) else None,
                            threshold, figures_dir, f"figures/{data.run.run_id}")
        lines += [demote(text), ""]
    return "\n".join(lines)
