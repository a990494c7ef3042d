"""A run's report: a main page that answers first, one detail page per suite, and a tidy CSV.

The main page opens with the findings (consecutive releases of the lineage whose
change is significant and beyond the threshold, largest first), then geometric
means, the variants against their twins, and links to the suite pages, which
hold the per-op tables. Tables have at most ``markdown.MAX_COLUMNS`` value columns, so
they read at GitHub's page width. ``build_merged_report`` puts the main pages of
runs on several hosts together. All are generated files: regenerate, never edit.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from iomatrix import counts, native, stats, store
from iomatrix.analysis import (VARIANT_KINDS, RunData, build_flag_differences, ordered_ops,
                               ordered_series, process_means)
from iomatrix.comparisons import MAX_FINDINGS, Analysis, Finding, analyse
from iomatrix.markdown import (FASTER, SLOWER, anchor, code, fmt_ratio, fmt_time,
                               md, table, wide_table)
from iomatrix.sections import (column_title, section_aa, section_header, section_metadata,
                               section_problems, section_skipped, section_then_and_now,
                               section_warnings)
from iomatrix.suite_pages import step_title, suite_page, tidy_csv

DEFAULT_THRESHOLD = 0.05
TOP_PER_VARIANT = 5       # largest significant changes listed per variant on the main page


@dataclasses.dataclass
class Pages:
    main: str
    suites: dict          # suite -> markdown of its detail page
    csv: str              # the tidy table: one row per run, series, op and statistic


# -- shared pieces ---------------------------------------------------------------------

def geomean_cell(comparisons) -> str:
    ratios = [c.ratio for c in comparisons]
    return f"{stats.geometric_mean(ratios):.2f}" if ratios else "—"


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
              f"{stats.method_sentence(an.data.paired)}", ""]
    untested = [c for c in an.step_cmp.values() if c.significant is None]
    if untested:
        fewest = min(min(c.n_a, c.n_b) for c in untested)
        lines += [f"{len(untested)} of {len(an.step_cmp)} step comparisons have too few worker "
                  f"processes for an interval (as few as {fewest} a side; at least "
                  f"{stats.min_processes_for_significance()} a side are needed at "
                  f"{stats.CONFIDENCE:.0%}): no finding can come from those, and their ratios "
                  "show [n/a].", ""]
    if not findings and len(untested) == len(an.step_cmp):
        return lines
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
    lines = ["## C reference", "",
             f"A C program ({md(info.get('tool', ''))}) repeats {len(measured)} block reads, "
             "writes and copies in the same run with the same call pattern: one unbuffered "
             "system call per block. It is a reference for that pattern, not a limit: Python "
             "buffers, and can be faster. Per-op tables are on the suite pages.", ""]
    return lines + section_machines_best(an, info.get("best"))


def section_machines_best(an: Analysis, best) -> list[str]:
    """Python's throughput as a share of the machine's best (the same files read, written and
    copied by the C program in page-aligned 1 MiB blocks, measured in the same run)."""
    if not isinstance(best, dict) or not isinstance(best.get("ops"), dict):
        return ["The machine's best (large page-aligned blocks) was not measured in this run "
                "(runs made before it was).", ""]
    ops = [op for op in an.ops if op in best["ops"]]
    series = [s for s in an.lin.releases if any((s, op) in an.means for op in ops)]
    if not ops or not series:
        return []

    def share(op):
        def cell(s):
            python = an.means.get((s, op))
            if not python:
                return "–"
            return f"{best['ops'][op]['seconds'] / stats.location(python.values()):.0%}"
        return cell
    rows = [(code(op), op) for op in ops]
    columns = [("best (C, 1 MiB blocks)", lambda op: fmt_time(best["ops"][op]["seconds"]))]
    columns += [(code(s), lambda op, s=s: share(op)(s)) for s in series]
    return (["### Against the machine's best", "",
             "The same files read, written and copied by the C program in page-aligned 1 MiB "
             f"blocks, the fastest of {best.get('repeat', '?')} calls, measured in this run "
             "after the timed work; each release's throughput as a share of it (100% = as fast "
             "as the machine's best).", ""]
            + wide_table(rows, columns))


def section_suite_links(an: Analysis, link: str) -> list[str]:
    rows = [[f"[{md(suite)}]({link}/{suite}.md)",
             str(sum(an.suite_of[op] == suite for op in an.ops)),
             str(sum(an.suite_of[f.op] == suite for f in an.findings()))] for suite in an.suites]
    return ["## Suite pages", "",
            "Every op's ratios with intervals, times, throughput, noise and the figures, one "
            f"page per suite; the full data as a tidy CSV: [{link}/data.csv]({link}/data.csv).",
            "", table(rows, ["suite", "ops", "findings"]), ""]


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
