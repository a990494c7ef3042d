"""Turn one run of the results store into a markdown report.

    python scripts/report.py [--results-dir results] [--run-id ID] [--baseline LABEL]
                             [--out FILE] [--threshold 0.05]

Defaults: the newest run, the oldest CPython of the run as baseline, and
``reports/latest.md`` plus a kept copy ``reports/<run-id>.md``. The report is a
generated file: regenerate it, never edit it.

What it shows: the ratio matrix (each interpreter against the baseline, with
significance), version steps (each interpreter against the previous version,
to find the release that introduced a regression), geometric means overall and
per category, the 2009 study's sentences, the study's published ratios beside
today's, absolute times and throughput, noise per op, an A/A section when the
run has one, and the machine and interpreter metadata.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import html
import math
import sys
from pathlib import Path

import pandas as pd
from tabulate import tabulate

from iomatrix import native
from iomatrix import store
from iomatrix import stats

ROOT = Path(__file__).resolve().parent.parent
PUBLISHED_STUDY = Path(__file__).resolve().parent / "data" / "lutz2009-published.csv"
DEFAULT_THRESHOLD = 0.05
SLOWER, FASTER = "▲", "▼"
HIGH_LOAD_PER_CPU = 0.5


# -- loading ------------------------------------------------------------------------

@dataclasses.dataclass
class RunData:
    run: store.Run
    manifest: dict
    frame: pd.DataFrame            # one row per worker process
    problems: list                 # (file, message) for files that could not be read


def load_run(run: store.Run) -> RunData:
    manifest = run.read_manifest()
    rows, problems = [], []
    for path in run.series_files():
        try:
            series_rows = store.load_series(path)
        except (store.ResultFileError, OSError) as exc:
            problems.append((path.name, str(exc)))
            continue
        series = path.stem
        for row in series_rows:
            row["series"] = series
        rows += series_rows
    columns = ["series", "op", "suite", "category", "bytes", "round", "io", "cache", "profile",
               "mean", "values", "mem_max_rss", "peak_rss"]
    frame = pd.DataFrame(rows, columns=columns)
    return RunData(run, manifest, frame, problems)


# -- shaping -------------------------------------------------------------------------

def series_info(data: RunData, series: str) -> dict:
    return data.manifest.get("interpreters", {}).get(series, {})


def series_sort_key(data: RunData, series: str):
    info = series_info(data, series)
    label, io_stack = store.split_series(series)
    implementation = info.get("implementation", "cpython")
    return (0 if implementation == "cpython" else 1, tuple(info.get("version_info", (99,))),
            bool(info.get("free_threaded")), label.endswith("-aa"), io_stack == "pyio", series)


def ordered_series(data: RunData) -> list[str]:
    """The interpreters' series in version order (the native ceiling has its own section)."""
    present = set(data.frame["series"].unique()) - {native.SERIES}
    return sorted(present, key=lambda s: series_sort_key(data, s))


def default_baseline(data: RunData, order: list[str]) -> str | None:
    for series in order:
        info = series_info(data, series)
        if info.get("implementation", "cpython") == "cpython" and not series.endswith("+pyio") \
                and not info.get("aa_of"):
            return series
    return order[0] if order else None


def process_means(frame: pd.DataFrame) -> dict:
    """{(series, op): {round: mean}}"""
    out: dict = {}
    for (series, op), group in frame.groupby(["series", "op"], sort=False):
        out[(series, op)] = dict(zip(group["round"], group["mean"]))
    return out


def ordered_ops(data: RunData) -> list[str]:
    """Ops in suite order as the suites define them (first appearance in the results)."""
    frame = data.frame
    suite_rank = {s: i for i, s in enumerate(data.manifest.get("suites", []))}
    firsts = frame.drop_duplicates("op")[["op", "suite"]]
    return sorted(firsts["op"], key=lambda op: (
        suite_rank.get(frame.loc[frame["op"] == op, "suite"].iloc[0], 99), op_study_rank(op), op))


STUDY_ORDER = ["read_byLines_textMode", "read_byLines_binaryMode", "read_byBlocks_textMode",
               "read_byBlocks_binaryMode", "read_allAtOnce_textMode", "read_allAtOnce_binaryMode",
               "read_byBlocks_binaryMode[large.bin]", "read_allAtOnce_binaryMode[large.bin]",
               "write_byLines_textMode", "write_byLines_binaryMode", "write_byBlocks_textMode",
               "write_byBlocks_binaryMode", "write_allAtOnce_textMode",
               "write_allAtOnce_binaryMode"]


def op_study_rank(op: str) -> int:
    return STUDY_ORDER.index(op) if op in STUDY_ORDER else len(STUDY_ORDER)


def compare_all(means: dict, ops: list[str], base: str, others: list[str]) -> dict:
    """{(op, series): Comparison} of every series against ``base``."""
    out = {}
    for op in ops:
        if (base, op) not in means:
            continue
        for series in others:
            if series != base and (series, op) in means:
                out[(op, series)] = stats.compare(means[(base, op)], means[(series, op)])
    return out


# -- formatting ----------------------------------------------------------------------

def md(text) -> str:
    """Escape a metadata string for a markdown table cell: no |, newline or HTML survives."""
    text = html.escape(str(text), quote=False)
    text = text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    for char in "`*_[]":
        text = text.replace(char, "\\" + char)
    return text


def code(text) -> str:
    """An op or label name as a code span; a | or newline still cannot break the table."""
    text = str(text).replace("`", "'").replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return f"`{text}`"


def fmt_ratio(comparison: stats.Comparison | None, threshold: float | None = None) -> str:
    if comparison is None:
        return "—"
    cell = f"{comparison.ratio:.2f}"
    if comparison.significant:
        cell += " " + (SLOWER if comparison.ratio > 1 else FASTER)
        if threshold is not None and comparison.ratio > 1 + threshold:
            cell = f"**{cell}**"
    return cell


def fmt_time(seconds: float) -> str:
    if seconds is None or math.isnan(seconds):
        return "—"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def table(rows, headers, align=None) -> str:
    align = align or ["left"] + ["right"] * (len(headers) - 1)
    return tabulate(rows, headers=headers, tablefmt="pipe", disable_numparse=True, colalign=align)


def column_title(data: RunData, series: str, baseline: str | None = None) -> str:
    info = series_info(data, series)
    title = code(series)
    if info.get("free_threaded"):
        title += " (free-threaded)"
    if series == baseline:
        title += " (baseline)"
    return title


# -- sections ------------------------------------------------------------------------

def section_header(data: RunData) -> list[str]:
    m = data.manifest
    return [
        f"<!-- generated by scripts/report.py from {md(data.run.path)}: do not edit, regenerate -->",
        f"# iomatrix report: run {md(data.run.run_id)}", "",
        f"Host **{md(m.get('host', '?'))}**, profile **{md(m.get('profile', '?'))}**, page cache "
        f"**{md(m.get('cache', '?'))}**, io stacks {md(', '.join(m.get('io', ['c'])))}, "
        f"started {md(m.get('started', '?'))}, finished {md(m.get('finished', '?'))}.", "",
    ]


def section_problems(data: RunData) -> list[str]:
    lines = []
    if data.problems:
        lines += ["## Files not read", "",
                  "These files are in the run directory but could not be used; they were left as "
                  "they are and the rest of the report is built without them.", ""]
        lines += [f"- `{md(name)}`: {md(message)}" for name, message in data.problems]
        lines.append("")
    failed = {s: e for s, e in data.manifest.get("interpreters", {}).items()
              if e.get("status") in ("failed", "partial")}
    if failed:
        lines += ["## Failed interpreters and ops", ""]
        for series, entry in failed.items():
            lines.append(f"- **{code(series)}** ({md(entry.get('executable', '?'))}): "
                         f"{md(entry.get('status'))}")
            if entry.get("error_tail"):
                lines.append(f"  - error: {md(entry['error_tail'])}")
            for op, error in (entry.get("failed_ops") or {}).items():
                lines.append(f"  - op {code(op)}: {md(error)}")
        lines.append("")
    return lines


def section_warnings(data: RunData) -> list[str]:
    warnings = []
    m = data.manifest
    cpus = m.get("cpu_count") or 1
    # At the start only: at the end, the load average is mostly the run's own workers.
    load = (m.get("machine_state_start") or {}).get("load_average")
    if load and load[0] > HIGH_LOAD_PER_CPU * cpus:
        warnings.append(f"High load when the run started: {load[0]:.2f} on {cpus} CPUs (1-minute "
                        "average); other work may have competed with the benchmarks.")
    builds = {}
    for series, info in m.get("interpreters", {}).items():
        if info.get("status") == "failed" or info.get("implementation") != "cpython":
            continue
        kind = []
        kind.append("PGO+LTO" if info.get("optimized") and info.get("lto") else
                    "PGO" if info.get("optimized") else "LTO" if info.get("lto") else "plain -O")
        kind.append("debug" if info.get("debug") else "release")
        kind.append("shared" if info.get("shared") else "static")
        builds[series] = ", ".join(kind)
    if len(set(builds.values())) > 1:
        groups: dict = {}
        for series, kind in builds.items():
            groups.setdefault(kind, []).append(series)
        parts = "; ".join(f"{kind}: {', '.join(code(s) for s in sorted(v))}"
                          for kind, v in sorted(groups.items()))
        warnings.append(f"Interpreters built differently are compared here ({parts}); part of a "
                        "ratio may be the build, not the release.")
    if len({info.get("free_threaded") for info in m.get("interpreters", {}).values()}) > 1:
        warnings.append("Free-threaded and default builds are compared; free-threaded columns "
                        "are marked.")
    profiles = set(data.frame["profile"].dropna().unique()) if len(data.frame) else set()
    caches = set(data.frame["cache"].dropna().unique()) if len(data.frame) else set()
    if len(profiles) > 1 or len(caches) > 1:
        warnings.append(f"Results of different profiles ({', '.join(sorted(profiles))}) or cache "
                        f"modes ({', '.join(sorted(caches))}) are mixed in this run.")
    if not warnings:
        return []
    return ["## Warnings", ""] + [f"- {w}" for w in warnings] + [""]


def section_ratio_matrix(data, ops, order, baseline, comparisons, threshold) -> list[str]:
    others = [s for s in order if s != baseline]
    rows = []
    for op in ops:
        rows.append([code(op)] + [fmt_ratio(comparisons.get((op, s))) for s in others])
    rows.append(["**geometric mean**"] + [
        f"**{stats.geometric_mean(c.ratio for (o, s), c in comparisons.items() if s == series):.2f}**"
        for series in others])
    return [f"## Slowdown ratios against {code(baseline)}", "",
            f"Median time of each interpreter's worker processes divided by that of "
            f"{code(baseline)} (> 1: slower). {SLOWER}/{FASTER}: significantly slower/faster "
            f"(Mann-Whitney U test on per-process means, {stats.CONFIDENCE:.0%} confidence); "
            "no marker: not significant; —: not measured.", "",
            table(rows, ["op"] + [column_title(data, s) for s in others]), ""]


def section_steps(data, ops, order, means, threshold) -> list[str]:
    steps = [(a, b) for a, b in zip(order, order[1:])]
    if not steps:
        return []
    rows, regressions = [], []
    step_cmp = {}
    for a, b in steps:
        for op, comparison in compare_all(means, ops, a, [b]).items():
            step_cmp[(op[0], a, b)] = comparison
    for op in ops:
        row = [code(op)]
        for a, b in steps:
            comparison = step_cmp.get((op, a, b))
            row.append(fmt_ratio(comparison, threshold))
            if comparison and comparison.significant and comparison.ratio > 1 + threshold:
                regressions.append((op, a, b, comparison.ratio))
        rows.append(row)
    rows.append(["**geometric mean**"] + [
        f"**{stats.geometric_mean(c.ratio for (o, x, y), c in step_cmp.items() if (x, y) == step):.2f}**"
        for step in steps])
    lines = ["## Version steps", "",
             "Each interpreter against the one before it, so the release that brought a change "
             f"stands out. **Bold**: significantly slower by more than {threshold:.0%}.", "",
             table(rows, ["op"] + [f"{code(a)} → {code(b)}" for a, b in steps]), ""]
    if regressions:
        lines += ["Regressions above the threshold:", ""]
        lines += [f"- {code(op)}: {code(b)} is {r:.2f} times slower than {code(a)}"
                  for op, a, b, r in regressions]
        lines.append("")
    return lines


def section_categories(data, ops, order, baseline, comparisons) -> list[str]:
    others = [s for s in order if s != baseline]
    category_of = dict(zip(data.frame["op"], data.frame["category"]))
    categories = sorted({category_of[op] for op in ops})
    rows = []
    for category in categories:
        rows.append([md(category)] + [
            f"{stats.geometric_mean(c.ratio for (o, s), c in comparisons.items() if s == series and category_of[o] == category):.2f}"
            for series in others])
    rows.append(["**all ops**"] + [
        f"**{stats.geometric_mean(c.ratio for (o, s), c in comparisons.items() if s == series):.2f}**"
        for series in others])
    return [f"## Geometric means per category, against {code(baseline)}", "",
            table(rows, ["category"] + [column_title(data, s) for s in others]), ""]


def sentence(op: str, series: str, baseline: str, comparison: stats.Comparison) -> str:
    if comparison.ratio >= 1:
        text = f"{series} is {comparison.ratio:.2f} times slower than {baseline}"
    else:
        text = f"{series} is {1 / comparison.ratio:.2f} times faster than {baseline}"
    if comparison.significant is None:
        text += " (too few processes to test)"
    elif not comparison.significant:
        text += " (not significant)"
    return f"[{op}] {text}"


def section_sentences(ops, order, baseline, comparisons) -> list[str]:
    lines = ["## In the words of the 2009 study", "",
             "<details><summary>One sentence per op and interpreter</summary>", "", "```text"]
    for series in order:
        if series == baseline:
            continue
        for op in ops:
            comparison = comparisons.get((op, series))
            if comparison is not None:
                lines.append(sentence(op, series, baseline, comparison))
        lines.append("")
    lines += ["```", "", "</details>", ""]
    return lines


def load_published_study() -> dict:
    """{op: (seconds under 2.6, seconds under 3.0)} from the study's published timings."""
    out: dict = {}
    with open(PUBLISHED_STUDY, newline="") as f:
        for row in csv.DictReader(f):
            out.setdefault(row["operation"], {})[row["python"]] = float(row["seconds"])
    return {op: (v["2.6"], v["3.0"]) for op, v in out.items() if "2.6" in v and "3.0" in v}


def section_figures(data, ops, order, baseline, comparisons, figures_dir: Path,
                    link: str) -> list[str]:
    """PNGs beside the report (scripts/figures.py): ratio heatmaps (one per suite when the run
    has several), the per-category trend, and the chunk-size curve when the chunks suite ran."""
    from iomatrix import figures
    others = [s for s in order if s != baseline]
    suite_of = dict(zip(data.frame["op"], data.frame["suite"]))
    category_of = dict(zip(data.frame["op"], data.frame["category"]))
    suites = list(dict.fromkeys(suite_of[op] for op in ops))
    lines = ["## Figures", "",
             f"Red: slower than {code(baseline)}, blue: faster, on a log scale; "
             f"{SLOWER}/{FASTER} or a dot: significant.", ""]
    for suite in suites:
        suite_ops = [op for op in ops if suite_of[op] == suite]
        cells = {s: {op: comparisons.get((op, s)) for op in suite_ops} for s in others}
        ratios = pd.DataFrame({s: {op: c.ratio if c else math.nan for op, c in col.items()}
                               for s, col in cells.items()}).reindex(index=suite_ops, columns=others)
        significant = pd.DataFrame({s: {op: bool(c and c.significant) for op, c in col.items()}
                                    for s, col in cells.items()}).reindex(index=suite_ops,
                                                                           columns=others)
        measured = ratios.columns[ratios.notna().any()]  # series that ran this suite
        ratios, significant = ratios[measured], significant[measured]
        name = f"heatmap-{suite}.png" if len(suites) > 1 else "heatmap.png"
        figures.heatmap(ratios, significant, figures_dir / name,
                        f"{suite}: time against {baseline}")
        lines += [f"![{md(suite)}: ratios against {md(baseline)}]({link}/{name})", ""]
    categories = sorted({category_of[op] for op in ops})
    # a trend of releases: not the A/A twin, not the pure-Python io stack
    versions = [s for s in others if not series_info(data, s).get("aa_of")
                and not s.endswith(store.PYIO_SUFFIX)]
    geomeans = pd.DataFrame(
        [[stats.geometric_mean(c.ratio for (o, s), c in comparisons.items()
                               if s == series and category_of[o] == category) for series in versions]
         for category in categories], index=categories, columns=versions)
    figures.category_trend(geomeans, figures_dir / "categories.png",
                           f"Geometric mean per category, against {baseline}")
    lines += [f"![geometric mean per category]({link}/categories.png)", ""]
    if figures.chunk_curve(data.frame, figures_dir / "chunks.png",
                           order=[s for s in order if not series_info(data, s).get("aa_of")]):
        lines += [f"![throughput by chunk size]({link}/chunks.png)", ""]
    return lines


def section_then_and_now(data, means, order, baseline) -> list[str]:
    published = load_published_study()
    cpython = [s for s in order if not s.endswith("+pyio") and not series_info(data, s).get("aa_of")
               and series_info(data, s).get("implementation", "cpython") == "cpython"
               and not series_info(data, s).get("free_threaded")]
    if not cpython or not any((cpython[0], op) in means for op in published):
        return []
    oldest, newest = baseline if baseline in cpython else cpython[0], cpython[-1]
    pyio = [s for s in order if s.endswith("+pyio")]
    newest_pyio = pyio[-1] if pyio else None
    headers = ["op", "2009: 3.0 / 2.6 (published)", f"today: {code(newest)} / {code(oldest)}"]
    if newest_pyio:
        headers.append(f"today, pure-Python io: {code(newest_pyio)} / {code(oldest)}")
    rows = []
    for op in STUDY_ORDER:
        if op not in published or (oldest, op) not in means:
            continue
        then = published[op][1] / published[op][0]
        row = [code(op), f"{then:.1f}"]
        now = compare_all(means, [op], oldest, [newest]).get((op, newest))
        row.append(fmt_ratio(now))
        if newest_pyio:
            row.append(fmt_ratio(compare_all(means, [op], oldest, [newest_pyio]).get((op, newest_pyio))))
        rows.append(row)
    return ["## Then and now", "",
            "The study's published 2.6 → 3.0 ratios (Windows Vista laptop, January 2009) beside "
            f"this run's oldest → newest CPython. A `+pyio` column runs the modern interpreter on "
            "the pure-Python io stack (`_pyio`), the design 3.0 shipped with.", "",
            table(rows, headers), ""]


def section_absolute(data, ops, order) -> list[str]:
    agg = data.frame.groupby(["op", "series"]).agg(
        time=("values", lambda vs: stats.mean([v for values in vs for v in values])),
        nbytes=("bytes", "first"))
    times = agg["time"].unstack("series")
    throughput = (agg["nbytes"] / agg["time"] / 1e6).unstack("series")
    time_rows = [[code(op)] + [fmt_time(times.at[op, s]) if s in times.columns else "—"
                               for s in order] for op in ops]
    mbps_rows = [[code(op)] + [f"{throughput.at[op, s]:.0f}"
                               if s in throughput.columns and not math.isnan(throughput.at[op, s])
                               and agg.at[(op, s), "nbytes"] else "—" for s in order]
                 for op in ops if (agg.xs(op, level="op")["nbytes"] > 0).any()]
    headers = ["op"] + [column_title(data, s) for s in order]
    return ["## Absolute times", "", "Mean time of one operation (all values of all processes).",
            "", table(time_rows, headers), "",
            "## Throughput (MB/s)", "", "Bytes the op reads or writes per second (10^6 bytes).",
            "", table(mbps_rows, headers), ""]


def section_native(data, ops, order, means) -> list[str]:
    info = data.manifest.get("native")
    if not info:
        return []
    if info.get("status") != "ok" and not any((native.SERIES, op) in means for op in ops):
        return ["## Native ceiling", "", f"Not measured: {md(info.get('tool', 'unknown reason'))}.", ""]
    rows = []
    for op in ops:
        if (native.SERIES, op) not in means:
            continue
        ceiling = stats.mean(list(means[(native.SERIES, op)].values()))
        row = [code(op), fmt_time(ceiling)]
        for series in order:
            python = means.get((series, op))
            row.append(f"{ceiling / stats.mean(list(python.values())):.0%}" if python else "—")
        rows.append(row)
    if not rows:
        return []
    return ["## Throughput as a share of the native ceiling", "",
            "The same reads and writes (same file, same block size, open to close) done by a C "
            f"program in the same run ({md(info.get('tool', ''))}); 100% means the interpreter "
            "adds nothing to the system calls.", "",
            table(rows, ["op", "native time"] + [column_title(data, s) for s in order]), ""]


def section_memory(data, ops, order) -> list[str]:
    """Peak memory of one call, for the ops that measure it (the copy methods)."""
    frame = data.frame[data.frame["peak_rss"].notna() & (data.frame["series"] != native.SERIES)]
    if frame.empty:
        return []
    peaks = frame.groupby(["op", "series"])["peak_rss"].median().unstack("series")
    nbytes = frame.groupby("op")["bytes"].first()
    rows = []
    for op in [o for o in ops if o in peaks.index]:
        cells = [f"{peaks.at[op, s] / 2**20:.1f}" if s in peaks.columns and not math.isnan(peaks.at[op, s])
                 else "—" for s in order]
        holds = [s for s in order if s in peaks.columns and peaks.at[op, s] >= 0.5 * nbytes[op]]
        rows.append([code(op), f"{nbytes[op] / 2**20:.0f}"] + cells +
                    ["yes" if holds else "no"])
    return ["## Peak memory of one call (MiB)", "",
            "How far the resident set grew during one untimed call of the op, in a fresh worker "
            "process (median over processes). The last column says whether the method holds the "
            "whole file in memory (peak ≥ half the file) under any interpreter.", "",
            table(rows, ["op", "file MiB"] + [column_title(data, s) for s in order]
                  + ["holds the file"]), ""]


def section_noise(data, ops, order, means, threshold) -> list[str]:
    rows, noisy = [], 0
    for op in ops:
        row = [code(op)]
        for series in order:
            rsd = stats.relative_stdev((means.get((series, op)) or {}).values())
            if math.isnan(rsd):
                row.append("—")
            else:
                flag = " ⚠" if rsd > threshold else ""
                noisy += bool(flag)
                row.append(f"{rsd:.1%}{flag}")
        rows.append(row)
    return ["## Noise per op", "",
            "Relative standard deviation of the per-process means. ⚠: noisier than the "
            f"{threshold:.0%} regression threshold, so a change of that size in this op cannot be "
            f"told from noise by one process; the t-test above accounts for it ({noisy} cells).",
            "", table(rows, ["op"] + [column_title(data, s) for s in order]), ""]


def section_aa(data, ops, means) -> list[str]:
    lines = []
    for series, info in data.manifest.get("interpreters", {}).items():
        twin_of = info.get("aa_of")
        if not twin_of or (twin_of, ops[0] if ops else None) not in means:
            continue
        comparisons = compare_all(means, ops, twin_of, [series])
        if not comparisons:
            continue
        flagged = [op for (op, _), c in comparisons.items() if c.significant]
        gm = stats.geometric_mean(c.ratio for c in comparisons.values())
        verdict = "meets" if len(flagged) <= 0.05 * len(comparisons) and abs(gm - 1) <= 0.02 \
            else "misses"
        lines += [f"## A/A check: {code(twin_of)} against itself", "",
                  f"The same interpreter ran twice in this run, as {code(twin_of)} and "
                  f"{code(series)}. Any difference is noise or bias of the harness.", "",
                  table([[f"{len(flagged)} of {len(comparisons)} ({len(flagged) / len(comparisons):.1%})",
                          f"{gm:.3f}", verdict]],
                        ["ops flagged significant", "geometric mean ratio",
                         "target (≤ 5% flagged, 1.00 ± 0.02)"]), ""]
        if flagged:
            lines += ["Flagged: " + ", ".join(code(op) for op in flagged), ""]
    return lines


def section_skipped(data) -> list[str]:
    rows = []
    for series, info in data.manifest.get("interpreters", {}).items():
        for op, reason in sorted((info.get("skipped_ops") or {}).items()):
            rows.append([code(series), code(op), md(reason)])
    if not rows:
        return []
    return ["## Skipped ops", "", "Ops an interpreter cannot run, with the reason.", "",
            table(rows, ["interpreter", "op", "reason"], ["left", "left", "left"]), ""]


def section_metadata(data, order) -> list[str]:
    m = data.manifest
    fs = m.get("fixture_filesystem") or {}
    start, end = m.get("machine_state_start") or {}, m.get("machine_state_end") or {}
    machine = [
        ["host", md(m.get("host", "?"))], ["OS", md(m.get("os", "?"))],
        ["CPU", md(f"{m.get('cpu', '?')} x {m.get('cpu_count', '?')}")],
        ["memory", md(f"{(m.get('memory_bytes') or 0) / 2**30:.1f} GiB")],
        ["fixture file system", md(f"{fs.get('type', '?')} on {fs.get('mount', '?')}")],
        ["profile", md(f"{m.get('profile')} {m.get('profile_settings', '')}")],
        ["page cache", md(m.get("cache", "?"))],
        ["order", md(f"{(m.get('order') or {}).get('method')}, seed {(m.get('order') or {}).get('seed')}")],
        ["load average start / end", md(f"{start.get('load_average')} / {end.get('load_average')}")],
        ["CPU governor", md(start.get("cpu_governor", "?"))],
        ["affinity", md(start.get("affinity", "?"))],
        ["sessions", md(len(m.get("sessions", [])))],
    ]
    interp_rows = []
    for series in sorted(m.get("interpreters", {}), key=lambda s: series_sort_key(data, s)):
        info = m["interpreters"][series]
        flags = [f for f, on in (("free-threaded", info.get("free_threaded")),
                                 ("PGO", info.get("optimized")), ("LTO", info.get("lto")),
                                 ("debug", info.get("debug")), ("shared", info.get("shared"))) if on]
        interp_rows.append([code(series), md(info.get("version", "?")),
                            md(info.get("implementation", "?")), md(", ".join(flags) or "—"),
                            md(info.get("source", "?")), md(info.get("executable", "?")),
                            md(info.get("pyperf_version", "?")), md(info.get("status", "?")),
                            md(info.get("configure_args", "") or "—")])
    return ["## Machine", "", table(machine, ["", ""], ["left", "left"]), "",
            "## Interpreters", "",
            table(interp_rows, ["series", "version", "implementation", "build", "source",
                                "executable", "pyperf", "status", "configure arguments"],
                  ["left"] * 9), ""]


# -- the report ----------------------------------------------------------------------

def build_report(data: RunData, baseline: str | None = None,
                 threshold: float = DEFAULT_THRESHOLD, figures_dir: Path | None = None,
                 figures_link: str = "figures") -> str:
    """The markdown; with ``figures_dir``, also the PNGs, linked as ``figures_link/NAME``."""
    lines = section_header(data) + section_problems(data) + section_warnings(data)
    order = ordered_series(data)
    if not order:
        lines += ["No results could be read from this run.", ""]
        return "\n".join(lines + section_metadata(data, order))
    if baseline is None:
        baseline = default_baseline(data, order)
    elif baseline not in order:
        raise ValueError(f"unknown baseline {baseline!r}; valid: {', '.join(order)}")
    ops = [op for op in ordered_ops(data)
           if (data.frame.loc[data.frame["op"] == op, "series"] != native.SERIES).any()]
    means = process_means(data.frame)
    comparisons = compare_all(means, ops, baseline, order)
    if len(order) == 1:
        lines += [f"Only {code(order[0])} is in this run: there is nothing to compare, so "
                  "there are no ratios; absolute times follow.", ""]
    else:
        lines += section_aa(data, ops, means)
        lines += section_ratio_matrix(data, ops, order, baseline, comparisons, threshold)
        releases = [s for s in order if not series_info(data, s).get("aa_of")
                    and not s.endswith(store.PYIO_SUFFIX)]
        lines += section_steps(data, ops, releases, means, threshold)
        lines += section_categories(data, ops, order, baseline, comparisons)
        if figures_dir is not None:
            lines += section_figures(data, ops, order, baseline, comparisons, figures_dir,
                                     figures_link)
        lines += section_then_and_now(data, means, order, baseline)
        lines += section_sentences(ops, order, baseline, comparisons)
    lines += section_absolute(data, ops, order)
    lines += section_native(data, ops, order, means)
    lines += section_memory(data, ops, order)
    lines += section_noise(data, ops, order, means, threshold)
    lines += section_skipped(data)
    lines += section_metadata(data, order)
    return "\n".join(lines)


def demote(text: str) -> str:
    """One heading level down, so a run's report becomes a section of a merged one."""
    return "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines()
                     if not line.startswith("<!-- generated"))


def section_cross_host(runs: list[RunData]) -> list[str]:
    """Each label that ran on several hosts: its median time per op on each, and the ratio."""
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
            row = [code(op), fmt_time(stats.median(list(per_run[0][(label, op)].values())))]
            for i in range(1, len(found)):
                comparison = stats.compare(per_run[0][(label, op)], per_run[i][(label, op)])
                ratios[i].append(comparison.ratio)
                row += [fmt_time(stats.median(list(per_run[i][(label, op)].values()))),
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
            "The same interpreter label on each host: median time per op, and the ratio to the "
            "first host (significance as above). Hosts differ in more than their Python, so "
            "these ratios describe machines, not releases.", ""] + lines


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


def write_report(text: str, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    store.atomic_write_text(out, text)


def find_runs(results_dir: Path, run_ids: list[str] | None):
    """The runs asked for (default: the newest), and the ids that do not exist."""
    if not run_ids:
        return [store.newest_run(results_dir)], []
    found, missing = [], []
    for run_id in run_ids:
        run = store.Run(results_dir, run_id)
        (found if (run.path / store.MANIFEST).exists() else missing).append(run)
    return found, [f"{r.run_id} (no {store.MANIFEST} in {r.path})" for r in missing]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nox -s report --", description=__doc__.split("\n")[0])
    parser.add_argument("--results-dir", type=Path, default=ROOT / "results")
    parser.add_argument("--run-id", action="append", default=None,
                        help="default: the newest run; repeat it to merge runs of several hosts")
    parser.add_argument("--baseline", default=None, help="default: the oldest CPython in the run")
    parser.add_argument("--out", type=Path, default=None,
                        help="default: reports/latest.md plus reports/<run-id>.md")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help="slowdown that counts as a regression (default: %(default)s)")
    parser.add_argument("--no-figures", action="store_true",
                        help="skip the PNG figures (default: figures/<run-id>/ beside the report)")
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.error(f"unknown option(s) {' '.join(unknown)}; valid options: --results-dir, "
                     "--run-id, --baseline, --out, --threshold, --no-figures")
    try:
        runs, missing = find_runs(args.results_dir, args.run_id)
        for name in missing:
            print(f"report: run {name}: not found, skipped", file=sys.stderr)
        if not runs:
            raise FileNotFoundError(f"no run {', '.join(missing)} in {args.results_dir}")
        loaded = [load_run(run) for run in runs]
        out_dir = args.out.parent if args.out else ROOT / "reports"
        figures_root = None if args.no_figures else out_dir / "figures"
        if len(loaded) == 1:
            run = runs[0]
            figures_dir = figures_root / run.run_id if figures_root else None
            text = build_report(loaded[0], args.baseline, args.threshold, figures_dir,
                                f"figures/{run.run_id}")
            kept = f"{run.run_id}.md"
        else:
            text = build_merged_report(loaded, missing, args.baseline, args.threshold,
                                       figures_root)
            kept = f"merged-{runs[0].run_id}-and-{len(runs) - 1}-more.md"
    except (FileNotFoundError, ValueError, store.ResultFileError) as exc:
        print(f"report: error: {exc}", file=sys.stderr)
        return 2
    outs = [args.out] if args.out else [ROOT / "reports" / "latest.md", ROOT / "reports" / kept]
    for out in outs:
        write_report(text, out)
        print(f"report: wrote {out}")
    for data in loaded:
        for name, message in data.problems:
            print(f"report: skipped {data.run.run_id}/{name}: {message}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
