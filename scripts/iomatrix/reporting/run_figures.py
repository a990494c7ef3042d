"""The figures of a run's report: which PNGs it draws and the names its pages link them by.

``draw_figures`` draws the heatmaps per suite, the release steps' heatmap (of the ops
``steps_heatmap_ops`` picks), the lineage trend, the chunk curve and the strip plots of the
listed findings. matplotlib is imported only when a figure is wanted (``figures``). Split
from pages.py, which re-exports these names.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from iomatrix.analysing.comparisons import Analysis
from iomatrix.markup import plot_text
from iomatrix.measuring import native


def steps_heatmap_ops(an: Analysis) -> list:
    """The ops of the main page's heatmap of release steps: every op when they fit in one
    screen's heatmap, else those with the largest significant step changes."""
    from iomatrix.reporting import figures
    if len(an.ops) <= figures.MAX_HEATMAP_ROWS:
        return list(an.ops)
    largest: dict = {}
    for (op, _, _), c in an.step_cmp.items():
        if c.significant:
            largest[op] = max(largest.get(op, 0.0), abs(math.log(c.ratio)))
    chosen = sorted(largest, key=lambda op: -largest[op])[:figures.MAX_HEATMAP_ROWS]
    return [op for op in an.ops if op in chosen]


def draw_figures(an: Analysis, figures_dir: Path, draw: bool) -> tuple[dict, list, list]:
    """Heatmaps per suite (split so none is taller than a screen), the lineage trend, the strip
    plots of the findings, the chunk curve. Returns ({suite: [names]}, [main names],
    [strip names]); with ``draw`` False only the names (the PNGs exist already)."""
    from iomatrix.reporting import figures
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
        ops = steps_heatmap_ops(an)
        if ops:
            titles = {(a, b): f"{a} → {b}" for a, b in an.steps}
            ratios = pd.DataFrame([[getattr(an.step_cmp.get((op, a, b)), "ratio", math.nan)
                                    for a, b in an.steps] for op in ops],
                                  index=ops, columns=list(titles.values()))
            significant = pd.DataFrame([[bool(getattr(an.step_cmp.get((op, a, b)),
                                                      "significant", False))
                                         for a, b in an.steps] for op in ops],
                                       index=ops, columns=list(titles.values()))
            if draw:
                figures.heatmap(ratios, significant, figures_dir / "steps.png",
                                "Each release against the one before it")
            main.append("steps.png")
        categories = sorted({an.category_of[op] for op in an.ops})
        geomeans = figures.category_geomeans(an.oldest_cmp, an.category_of, categories,
                                             an.lin.releases[1:])
        # a category is a series file's free text (its ops' names follow the name rule)
        geomeans.index = [plot_text(category) for category in geomeans.index]
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
