"""Figures for the reports: ratio heatmap, category trend, chunk-size curve, history lines.

Every function draws headless (matplotlib's Agg backend), writes one PNG at
``DPI``, closes its figure and returns the path; ``chunk_curve`` returns None
when there is nothing to draw. Ratios are drawn on log scales, so 0.5 and 2 are
equally far from 1; a diverging palette puts "slower" in red and "faster" in
blue, and a missing value is grey, never a colour that could be read as 1.0.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402

from iomatrix import stats  # noqa: E402
from iomatrix.storing import contract, outputs  # noqa: E402

DPI = 120
SLOWER, FASTER = "▲", "▼"            # the report's markers (DejaVu Sans has both)
MISSING_COLOUR = "#d9d9d9"
NICE_RATIOS = (1 / 16, 1 / 8, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 4,
               8, 16)
# One colour scale for every heatmap of every report, saturating at 1/8x and 8x, so a colour
# means the same ratio in every figure.
SHARED_COLOUR_LIMIT = 8.0
# No figure taller than a screen: the report splits a suite's ops into heatmaps of this many.
MAX_HEATMAP_ROWS = 24
STRIPS_PER_FIGURE = 6
ANNOTATE_MAX_ROWS, ANNOTATE_MAX_CELLS = 150, 1200
POINTS_PER_CHAR = 0.6                  # average glyph width of DejaVu Sans, in font sizes
CHUNK_OP = re.compile(r"^chunks_(read|readinto)_(\d+)(KiB|MiB)$")
UNIT_BYTES = {"KiB": 1024, "MiB": 1024 * 1024}


def _text_inches(texts, fontsize: float) -> float:
    longest = max((len(str(t)) for t in texts), default=1)
    return longest * fontsize * POINTS_PER_CHAR / 72


def _ratio_label(ratio: float) -> str:
    if ratio >= 1:
        return f"{ratio:g}×"
    inverse = 1 / ratio
    return f"1/{inverse:g}×" if abs(inverse - round(inverse)) < 1e-9 else f"{ratio:.2g}×"


def _save(fig, path: Path) -> Path:
    """Write ``fig`` as a PNG of at most 256 colours: every clone of the repository carries
    the published reports' figures, and a plot's few flat colours need no more (a third of
    the size of matplotlib's RGBA file or less). The file is written whole or not at all
    (the contract's atomic write: a half-written name beside it, renamed, never through a
    link); a write that fails is bad input naming the file (read-only), or the machine's
    failure (a full disk: exit 3, ``outputs.write_failure``)."""
    import io
    from PIL import Image   # matplotlib's own dependency
    path = Path(path)
    buffer, png = io.BytesIO(), io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=DPI, facecolor="white")
    finally:
        plt.close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=256).save(png, format="PNG", optimize=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        contract.atomic_write_bytes(str(path), png.getvalue())
    except OSError as exc:
        raise outputs.write_failure(exc, f"{path}: cannot write the figure "
                                         f"({exc.strerror or exc})") from None
    return path


def _ratio_limits(frame) -> tuple[float, float]:
    """Y limits of a log ratio axis: the data with 10% room, and never narrower than 0.8-1.25."""
    finite = frame.to_numpy()[np.isfinite(frame.to_numpy())]
    if not finite.size:
        return 0.8, 1.25
    return min(finite.min() / 1.1, 0.8), max(finite.max() * 1.1, 1.25)


def _log_ratio_lines_axes(ax, values, x, labels, rotate_beyond: int) -> None:
    """A log ratio y axis fitted to ``values`` and x tick labels, slanted when there are many."""
    low, high = _ratio_limits(values)
    ax.set_yscale("log")
    ax.set_ylim(low, high)
    _log_ratio_axis(ax.yaxis, low, high)
    ax.set_xticks(x)
    many = len(labels) > rotate_beyond
    ax.set_xticklabels(labels, rotation=45 if many else 0, ha="right" if many else "center",
                       fontsize=8)


def _log_ratio_axis(axis, low: float, high: float) -> None:
    """Ticks at readable ratios on a log axis between ``low`` and ``high``."""
    ticks = [r for r in NICE_RATIOS if low <= r <= high] or [1.0]
    if len(ticks) > 9:
        ticks = [r for r in ticks if r in (1 / 16, 1 / 8, 1 / 4, 1 / 2, 0.8, 1, 1.25, 2, 4, 8, 16)]
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda value, _: _ratio_label(value)))


def symmetric_ticks(limit: float) -> list[float]:
    """About four ratios above 1 up to ``limit``, their inverses below, and 1."""
    for candidates in ((2, 4, 8, 16), (1.5, 2, 3, 4), (1.25, 1.5, 2), (1.1, 1.25)):
        up = [r for r in candidates if r <= limit * 1.001]
        if len(up) >= 2 or candidates[0] == 1.1:
            break
    return sorted([1 / r for r in up] + [1.0] + up)


def _series_colours(n: int):
    """Distinct colours: tab10, or tab20 for up to 20 series (never a gradient, whose
    neighbours cannot be told apart); beyond 20 the line styles differ too."""
    palette = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [palette(i % palette.N) for i in range(n)]


LINE_STYLES = ("-", "--", ":", "-.")


MARKERS = "osD^vP*Xhp<>"


# -- data for the figures ----------------------------------------------------------

def ratio_frames(comparisons: dict, ops: list, series: list) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ops x series of ratios (NaN: not measured) and of significance, from
    ``{(op, series): stats.Comparison}``."""
    ratios = pd.DataFrame(math.nan, index=list(ops), columns=list(series), dtype=float)
    significant = pd.DataFrame(False, index=list(ops), columns=list(series), dtype=bool)
    for (op, name), comparison in comparisons.items():
        if op in ratios.index and name in ratios.columns:
            ratios.at[op, name] = comparison.ratio
            significant.at[op, name] = bool(comparison.significant)
    return ratios, significant


def category_geomeans(comparisons: dict, category_of: dict, categories: list,
                      series: list) -> pd.DataFrame:
    """Categories x series of the geometric mean of the ratios of the category's ops."""
    return pd.DataFrame(
        [[stats.geometric_mean(c.ratio for (op, s), c in comparisons.items()
                               if s == name and category_of[op] == category) for name in series]
         for category in categories], index=categories, columns=series)


# -- ratio heatmap ---------------------------------------------------------------------

def heatmap(ratios: pd.DataFrame, significant: pd.DataFrame, path: Path, title: str) -> Path:
    """Ops (rows) x series (columns) of ratios, coloured on a log scale centred on 1.0.

    Cells carry the ratio and ▲/▼ when significant; beyond ``ANNOTATE_MAX_ROWS``
    rows or ``ANNOTATE_MAX_CELLS`` cells the text would not fit, so only a dot
    marks significant cells and NaN cells are hatched (grey with "—" otherwise).
    The figure grows with the matrix: rows and columns keep a readable size.
    """
    ratios = ratios.astype(float)
    significant = significant.reindex(index=ratios.index, columns=ratios.columns).eq(True)
    rows, cols = list(map(str, ratios.index)), list(map(str, ratios.columns))
    n_rows, n_cols = max(len(rows), 1), max(len(cols), 1)
    logs = np.log2(ratios.where(ratios > 0).to_numpy(dtype=float)) if len(rows) and len(cols) \
        else np.full((n_rows, n_cols), np.nan)
    limit = math.log2(SHARED_COLOUR_LIMIT)

    annotate = n_rows <= ANNOTATE_MAX_ROWS and n_rows * n_cols <= ANNOTATE_MAX_CELLS
    font = 8.0 if n_rows <= 30 else 7.0 if n_rows <= 60 else 6.5
    if annotate:
        row_h = 0.27 if n_rows <= 30 else 0.22 if n_rows <= 60 else 0.19
    else:
        row_h = font / 72 * 1.6
    col_w = 0.62 if annotate else 0.34
    label_w = _text_inches(rows, font) + 0.25
    header_h = _text_inches(cols, font) * 0.75 + 0.35   # series names at 45 degrees, on top
    title_h = 0.5
    footer_h = header_h if n_rows > 30 else 0.25
    colorbar_w = 1.0
    fig_w = max(label_w + n_cols * col_w + colorbar_w + 0.2, 5.0)
    fig_h = title_h + header_h + n_rows * row_h + footer_h
    fig = plt.figure(figsize=(fig_w, fig_h))
    grid_left, grid_w = label_w / fig_w, n_cols * col_w / fig_w
    grid_bottom, grid_h = footer_h / fig_h, n_rows * row_h / fig_h
    ax = fig.add_axes([grid_left, grid_bottom, grid_w, grid_h])

    cmap = plt.get_cmap("RdBu_r").with_extremes(bad=MISSING_COLOUR)
    norm = Normalize(-limit, limit)
    image = ax.imshow(np.ma.masked_invalid(logs), cmap=cmap, norm=norm, aspect="auto",
                      interpolation="nearest")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=45, ha="left", rotation_mode="anchor", fontsize=font)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=font)
    ax.tick_params(top=True, labeltop=True, bottom=n_rows > 30, labelbottom=False, length=0)
    if n_rows > 30:   # a tall matrix gets its series names at the foot too
        for x, name in enumerate(cols):
            ax.annotate(name, (x, 0), xycoords=("data", "axes fraction"), xytext=(0, -4),
                        textcoords="offset points", rotation=45, ha="right", va="top",
                        fontsize=font, rotation_mode="anchor")
    ax.set_xticks(np.arange(-0.5, len(cols), 1), minor=True)
    ax.set_yticks(np.arange(-0.5, len(rows), 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.0 if annotate else 0.5)
    ax.tick_params(which="minor", length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)

    for i in range(len(rows)):
        for j in range(len(cols)):
            value = logs[i, j]
            dark = np.isfinite(value) and abs(value) > 0.55 * limit
            colour = "white" if dark else "black"
            sig = bool(significant.iat[i, j]) and np.isfinite(value)
            if annotate:
                if not np.isfinite(value):
                    text = "—"
                else:
                    ratio = ratios.iat[i, j]
                    text = f"{ratio:.2f}" if ratio < 9.995 else f"{ratio:.1f}"
                    if sig:
                        text += SLOWER if ratio > 1 else FASTER
                ax.text(j, i, text, ha="center", va="center", fontsize=font - 0.5, color=colour,
                        fontweight="bold" if sig else "normal")
            elif sig:
                ax.plot(j, i, marker="o", markersize=2.2, color=colour, linestyle="none")
            elif not np.isfinite(value):   # without a text, hatch it: grey alone is nearly white
                ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="////",
                                       edgecolor="#9a9a9a", linewidth=0))

    bar_h = min(grid_h, 3.5 / fig_h)   # at the top of a tall matrix, next to the names
    cax = fig.add_axes([(label_w + n_cols * col_w + 0.25) / fig_w, grid_bottom + grid_h - bar_h,
                        0.16 / fig_w, bar_h])
    bar = fig.colorbar(image, cax=cax)
    ticks = symmetric_ticks(2 ** limit)
    bar.set_ticks([math.log2(r) for r in ticks])
    bar.set_ticklabels([_ratio_label(r) for r in ticks])
    bar.ax.tick_params(labelsize=font)
    bar.set_label("ratio (log scale)", fontsize=font)
    legend = (f"{SLOWER}/{FASTER} significant (bold), —: not measured" if annotate
              else "• significant, hatched: not measured")
    fig.text(0.01, 1 - 0.12 / fig_h, title, ha="left", va="top", fontsize=font + 3,
             fontweight="bold")
    fig.text(0.01, 1 - 0.34 / fig_h, legend, ha="left", va="top", fontsize=font, color="#444444")
    return _save(fig, path)


# -- category trend --------------------------------------------------------------------

def category_trend(geomeans: pd.DataFrame, path: Path, title: str) -> Path:
    """One line per category (rows) of geometric-mean ratios across series (columns, in order)."""
    geomeans = geomeans.astype(float)
    series = list(map(str, geomeans.columns))
    x = np.arange(len(series))
    fig_w = max(6.5, 0.55 * len(series) + 3.8)
    fig, ax = plt.subplots(figsize=(fig_w, 4.6))
    ax.axhline(1.0, color="#666666", linewidth=1, zorder=1)
    colours = plt.get_cmap("tab10" if len(geomeans) <= 10 else "tab20")
    values = geomeans.where(geomeans > 0)
    for k, (category, row) in enumerate(values.iterrows()):
        ax.plot(x, row.to_numpy(), marker=MARKERS[k % len(MARKERS)], markersize=5,
                linewidth=1.6, color=colours(k % colours.N), label=str(category), zorder=2)
    _log_ratio_lines_axes(ax, values, x, series, rotate_beyond=6)
    ax.set_xlim(-0.5, max(len(series) - 0.5, 0.5))
    ax.set_ylabel("geometric mean ratio (log scale)")
    ax.set_title(title, fontsize=11, loc="left")
    ax.grid(axis="y", color="#e5e5e5")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False,
              title="category", title_fontsize=8)
    fig.tight_layout()
    return _save(fig, path)


# -- chunk-size curve ------------------------------------------------------------------

def chunk_sizes(frame: pd.DataFrame) -> pd.DataFrame:
    """The chunks suite's read(N)/readinto(N) ops: series, kind, size in bytes, MB/s.

    ``bytes`` is what one pyperf value processed (the harness divides a call's
    bytes by its inner loops, as pyperf divides its time), so MB/s is bytes
    over the mean time of the op's processes.
    """
    columns = ["series", "kind", "size", "mbps"]
    if frame is None or frame.empty or "suite" not in frame:
        return pd.DataFrame(columns=columns)
    chunks = frame[frame["suite"] == "chunks"]
    parsed = chunks["op"].str.extract(CHUNK_OP)
    chunks = chunks[parsed[0].notna()].assign(kind=parsed[0], size=parsed[1].astype(float)
                                              * parsed[2].map(UNIT_BYTES))
    if chunks.empty:
        return pd.DataFrame(columns=columns)
    grouped = chunks.groupby(["series", "kind", "size"], sort=False).agg(
        time=("mean", "mean"), nbytes=("bytes", "first")).reset_index()
    grouped["mbps"] = grouped["nbytes"] / grouped["time"] / 1e6
    return grouped[grouped["time"] > 0][columns]


def _size_label(n: float) -> str:
    return f"{n / 1024 ** 2:g} MiB" if n >= 1024 ** 2 else f"{n / 1024:g} KiB"


def chunk_curve(frame: pd.DataFrame, path: Path, order: list | None = None,
                title: str = "Throughput by chunk size (chunks suite)") -> Path | None:
    """Throughput (MB/s) against the chunk size of f.read(N) (and readinto), one line per series.

    ``frame`` is analysis.RunData.frame; ``order`` the series in version order
    (default: as they appear). None when the frame has no chunks ops.
    """
    data = chunk_sizes(frame)
    if data.empty:
        return None
    present = list(dict.fromkeys(data["series"]))
    order = [s for s in (order or present) if s in present] + \
        [s for s in present if s not in (order or present)]
    kinds = [k for k in ("read", "readinto") if k in set(data["kind"])]
    titles = {"read": "f.read(N)", "readinto": "f.readinto(buffer of N bytes)"}
    fig, axes = plt.subplots(1, len(kinds), figsize=(5.2 * len(kinds) + 2.2, 4.6), sharey=True,
                             squeeze=False)
    colours = _series_colours(len(order))
    for ax, kind in zip(axes[0], kinds):
        for k, series in enumerate(order):
            rows = data[(data["series"] == series) & (data["kind"] == kind)].sort_values("size")
            if rows.empty:
                continue
            native = series == "native"
            ax.plot(rows["size"], rows["mbps"], marker=MARKERS[k % len(MARKERS)], markersize=4,
                    linewidth=1.5, linestyle="--" if native else LINE_STYLES[k // 20 % 4],
                    color="black" if native else colours[k], label=series)
        sizes = sorted(set(data.loc[data["kind"] == kind, "size"]))
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes)
        ax.set_xticklabels([_size_label(s) for s in sizes], rotation=45, ha="right", fontsize=8)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_title(titles[kind], fontsize=10)
        ax.set_xlabel("chunk size N")
        ax.grid(color="#e5e5e5")
    axes[0][0].set_ylim(0, data["mbps"].max() * 1.08)     # shared by both panels
    axes[0][0].set_ylabel("throughput (MB/s, 10^6 bytes)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1), fontsize=8, frameon=False,
                       title="series", title_fontsize=8)
    fig.suptitle(title, x=0.01, ha="left", fontsize=11)
    fig.tight_layout()
    return _save(fig, path)


# -- per-process values of a finding -----------------------------------------------

def strips(panels: list[dict], path: Path, title: str) -> Path:
    """Small multiples, one per finding: each side's per-process means as points.

    ``panels``: dicts with ``title``, ``a``/``b`` (names) and ``a_values``/``b_values``
    (seconds). A bimodal side shows as two clusters, which a ratio alone hides.
    """
    cols = min(3, len(panels))
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.6 * rows + 0.5), squeeze=False)
    rng = np.random.default_rng(0)   # fixed jitter: the same figure for the same data
    for ax, panel in zip(axes.flat, panels):
        for x, (name, values) in enumerate(((panel["a"], panel["a_values"]),
                                            (panel["b"], panel["b_values"]))):
            values = np.asarray(values, dtype=float) * 1e3
            ax.plot(x + rng.uniform(-0.12, 0.12, len(values)), values, "o", markersize=4,
                    alpha=0.75, color=plt.get_cmap("tab10")(x))
        ax.set_xticks([0, 1])
        ax.set_xticklabels([panel["a"], panel["b"]], fontsize=8)
        ax.set_xlim(-0.5, 1.5)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("ms per call (one point per process)", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.set_title(panel["title"], fontsize=7.5, loc="left")
        ax.grid(axis="y", color="#e5e5e5")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.suptitle(title, x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


# -- history ---------------------------------------------------------------------------

HISTORY_LEGEND_MAX = 20     # beyond this many ops, grey lines, a mean line and the extremes
HISTORY_EXTREMES = 3


def history_trend(times: pd.DataFrame, path: Path, title: str) -> Path:
    """Ops (rows) x runs (columns, oldest first) of times, each op normalised to its first run."""
    times = times.astype(float)
    first = times.apply(lambda row: row.dropna().iloc[0] if row.notna().any() else np.nan, axis=1)
    normalised = times.div(first, axis=0)
    runs = list(map(str, times.columns))
    x = np.arange(len(runs))
    fig, ax = plt.subplots(figsize=(max(7.0, 0.7 * len(runs) + 4.5), 4.8))
    ax.axhline(1.0, color="#666666", linewidth=1, zorder=1)
    many = len(normalised) > HISTORY_LEGEND_MAX
    palette = plt.get_cmap("tab20")
    if not many:
        for k, (op, row) in enumerate(normalised.iterrows()):
            ax.plot(x, row.to_numpy(), marker=MARKERS[k % len(MARKERS)], markersize=4,
                    linewidth=1.3, color=palette(k % palette.N), label=str(op), zorder=3)
    else:
        # Too many ops for a legend: every op in grey, their geometric mean in black and
        # the ops that moved most since their first run in colour.
        for _, row in normalised.iterrows():
            ax.plot(x, row.to_numpy(), color="#b0b0b0", linewidth=0.6, alpha=0.7, zorder=2)
        logs = np.log(normalised.where(normalised > 0))
        ax.plot(x, np.exp(logs.mean(axis=0, skipna=True)).to_numpy(), color="black",
                linewidth=2.2, marker="o", markersize=4, label="geometric mean of all ops",
                zorder=4)
        last = normalised.apply(lambda row: row.dropna().iloc[-1] if row.notna().any()
                                else np.nan, axis=1).dropna().sort_values(ascending=False)
        extremes = list(last.index[:HISTORY_EXTREMES]) + list(last.index[-HISTORY_EXTREMES:])
        for k, op in enumerate(dict.fromkeys(extremes)):
            ax.plot(x, normalised.loc[op].to_numpy(), linewidth=1.3, color=palette(2 * k),
                    label=f"{op} ({last[op]:.2f}×)", zorder=3)
    _log_ratio_lines_axes(ax, normalised, x, runs, rotate_beyond=4)
    ax.set_xlim(-0.3, len(runs) - 0.7)
    ax.set_ylabel("time relative to the first run (log scale)")
    ax.set_title(title, fontsize=11, loc="left")
    ax.grid(axis="y", color="#e5e5e5")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=7, frameon=False,
              title=f"{len(normalised)} ops" + (", the largest changes" if many else ""),
              title_fontsize=7)
    fig.tight_layout()
    return _save(fig, path)
