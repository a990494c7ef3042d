"""A run's report as markdown: the sections in order, the figures, and several runs merged.

``build_report`` is the report of one run, ``build_merged_report`` of runs on
several hosts. Both are generated files: regenerate them, never edit them.
"""
from __future__ import annotations

import math
from pathlib import Path

from iomatrix import cli, native, stats, store
from iomatrix.analysis import (RunData, compare_all, default_baseline, ordered_ops,
                               ordered_series, process_means, series_info)
from iomatrix.markdown import FASTER, SLOWER, code, fmt_ratio, fmt_time, md, table
from iomatrix.sections import (section_aa, section_absolute, section_categories,
                               section_header, section_memory, section_metadata, section_native,
                               section_noise, section_problems, section_ratio_matrix,
                               section_sentences, section_skipped, section_steps,
                               section_then_and_now, section_warnings)

DEFAULT_THRESHOLD = 0.05


def section_figures(data, ops, order, baseline, comparisons, figures_dir: Path,
                    link: str) -> list[str]:
    """PNGs beside the report (iomatrix/figures.py): ratio heatmaps (one per suite when the run
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
        ratios, significant = figures.ratio_frames(comparisons, suite_ops, others)
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
    geomeans = figures.category_geomeans(comparisons, category_of, categories, versions)
    figures.category_trend(geomeans, figures_dir / "categories.png",
                           f"Geometric mean per category, against {baseline}")
    lines += [f"![geometric mean per category]({link}/categories.png)", ""]
    if figures.chunk_curve(data.frame, figures_dir / "chunks.png",
                           order=[s for s in order if not series_info(data, s).get("aa_of")]):
        lines += [f"![throughput by chunk size]({link}/chunks.png)", ""]
    return lines


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
        raise cli.BadInput(f"unknown baseline {baseline!r}; valid: {', '.join(order)}")
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
