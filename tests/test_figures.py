"""figures.py: every function writes a PNG, copes with NaN, and draws nothing without data."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from iomatrix.reporting import figures
from iomatrix.storing import store
from conftest import write_pyperf_file

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SERIES = ["3.0", "3.1", "3.5", "3.9", "3.12", "3.13t"]


def is_png(path) -> bool:
    return path.exists() and path.stat().st_size > 1000 and path.read_bytes()[:8] == PNG_MAGIC


def ratio_frame(n_ops, series, seed=0):
    rng = np.random.default_rng(seed)
    ops = [f"read_allAtOnce_binaryMode[large-{i}.bin]" for i in range(n_ops)]
    ratios = pd.DataFrame(np.exp(rng.normal(0, 0.5, (n_ops, len(series)))), index=ops,
                          columns=series)
    significant = pd.DataFrame(rng.random(ratios.shape) > 0.5, index=ops, columns=series)
    return ratios, significant


@pytest.mark.parametrize("n_ops, n_series", [(14, 6), (100, 15), (1, 1)])
def test_heatmap_writes_a_png_with_nan_cells(tmp_path, n_ops, n_series):
    ratios, significant = ratio_frame(n_ops, [f"3.{i}" for i in range(n_series)])
    ratios.iloc[0, 0] = math.nan
    if n_ops > 1:
        ratios.iloc[1, -1] = 900.0     # far beyond the colour scale: saturates
        ratios.iloc[-1, 0] = 0.001
    path = figures.heatmap(ratios, significant, tmp_path / "out" / "heat.png", "title")
    assert path == tmp_path / "out" / "heat.png" and is_png(path)


def test_heatmap_of_all_nan_and_no_significance_frame(tmp_path):
    ratios = pd.DataFrame(math.nan, index=["a", "b"], columns=["3.0", "3.1"])
    path = figures.heatmap(ratios, pd.DataFrame(), tmp_path / "heat.png", "nothing measured")
    assert is_png(path)


def test_symmetric_ticks_are_inverse_pairs():
    for limit in (1.1, 1.3, 2.5, 8):
        ticks = figures.symmetric_ticks(limit)
        assert 1.0 in ticks and len(ticks) >= 3
        for r in ticks:
            assert any(math.isclose(r * s, 1.0) for s in ticks)


def test_category_trend_with_gaps(tmp_path):
    geomeans = pd.DataFrame([[1.0, 1.2, math.nan, 0.9], [0.5, math.nan, 2.0, 1.1],
                             [math.nan, math.nan, 1.3, math.nan]],
                            index=["read-text", "write-text", "copy"],
                            columns=["3.0", "3.5", "3.12", "3.13t"])
    assert is_png(figures.category_trend(geomeans, tmp_path / "trend.png", "title"))


def frame_of(tmp_path, files: dict) -> pd.DataFrame:
    """{series: {op: processes}} through real pyperf-format files, as report.load_run reads them."""
    rows = []
    for series, (benchmarks, meta) in files.items():
        path = tmp_path / f"{series}.json"
        write_pyperf_file(path, benchmarks, meta)
        for row in store.load_series(path):
            row["series"] = series
            rows.append(row)
    return pd.DataFrame(rows)


def test_chunk_curve_is_none_without_chunks_data(tmp_path):
    frame = frame_of(tmp_path, {"3.13": ({"read_byLines_textMode": [[0.01], [0.01]]}, None)})
    assert figures.chunk_curve(frame, tmp_path / "chunks.png") is None
    assert figures.chunk_curve(frame.iloc[0:0], tmp_path / "chunks.png") is None
    assert not (tmp_path / "chunks.png").exists()


def test_chunk_curve_draws_read_and_readinto(tmp_path):
    chunks = {"iomatrix_suite": "chunks", "iomatrix_bytes": 2 * 2**20, "inner_loops": 8}
    ops = {f"chunks_read_{n}": [[0.001 * f], [0.0011 * f]]
           for n, f in (("4KiB", 2), ("64KiB", 1), ("1MiB", 1), ("16MiB", 1.5))}
    ops.update({"chunks_readinto_4KiB": [[0.002]], "chunks_readinto_16MiB": [[0.001]],
                "chunks_iterate_lines": [[0.01]]})
    frame = frame_of(tmp_path, {"2.7": (ops, chunks), "3.13": (ops, chunks),
                                "3.13t": ({"chunks_read_4KiB": [[0.002]]}, chunks)})  # one op only
    path = figures.chunk_curve(frame, tmp_path / "chunks.png", order=["3.13", "2.7"])
    assert is_png(path)
    data = figures.chunk_sizes(frame)
    row = data[(data["series"] == "2.7") & (data["kind"] == "read") & (data["size"] == 2**20)]
    # iomatrix_bytes is already per value (the harness divided by the inner loops)
    assert row["mbps"].iloc[0] == pytest.approx(2 * 2**20 / 0.00105 / 1e6)
    assert set(data["kind"]) == {"read", "readinto"}


def test_history_trend_few_and_many_ops(tmp_path):
    for n_ops in (5, 60):
        times = pd.DataFrame(np.linspace(0.01, 0.02, n_ops * 4).reshape(n_ops, 4),
                             index=[f"op{i}" for i in range(n_ops)],
                             columns=[f"#{i} 2026-0{i}-01\nhost" for i in range(1, 5)])
        times.iloc[0, 0] = math.nan    # an op new in the second run
        path = figures.history_trend(times, tmp_path / f"history{n_ops}.png", "title")
        assert is_png(path)


def test_every_heatmap_shares_one_colour_scale(tmp_path):
    """A 1.1x cell is the same colour whether the largest ratio beside it is 1.2x or 6x."""
    from PIL import Image
    small = pd.DataFrame({"a": [1.1, 1.2]}, index=["x", "y"])
    large = pd.DataFrame({"a": [1.1, 6.0]}, index=["x", "y"])
    flags = pd.DataFrame({"a": [False, False]}, index=["x", "y"])
    colours = []
    for name, frame in (("small", small), ("large", large)):
        path = figures.heatmap(frame, flags, tmp_path / f"{name}.png", name)
        image = Image.open(path).convert("RGB")
        # the first cell's colour, away from its text: left edge of the grid, first row
        colours.append(cell_colour(image))
    assert colours[0] == colours[1]


def cell_colour(image):
    """The most common non-white, non-black colour of the image's upper half (the 1.1x cell
    covers more pixels of the first row than any text)."""
    width, height = image.size
    counts = {}
    for x in range(0, width, 2):
        for y in range(0, height // 2, 2):
            pixel = image.getpixel((x, y))
            if min(pixel) < 245 and max(pixel) > 60:
                counts[pixel] = counts.get(pixel, 0) + 1
    return max(counts, key=counts.get)


def test_strips_draw_one_panel_per_finding(tmp_path):
    panels = [{"title": f"op{k}", "a": "3.13", "b": "3.14", "a_values": [0.01, 0.011, 0.012],
               "b_values": [0.02, 0.021, 0.04]} for k in range(4)]
    path = figures.strips(panels, tmp_path / "s.png", "findings")
    assert path.read_bytes().startswith(b"\x89PNG")
