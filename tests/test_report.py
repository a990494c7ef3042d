"""Report arithmetic on small hand-made pyperf files: ratios, significance, geometric means."""
from __future__ import annotations

import json
import re
import math

import pytest

import report
from iomatrix.analysing import analysis
from iomatrix.reporting import pages
from iomatrix.storing import store
from iomatrix import stats
from conftest import all_pages, without_intervals, write_pyperf_file


def make_run(tmp_path, series: dict, run_id="T", interpreters=None):
    """A run directory with a manifest and one pyperf file per series."""
    run_dir = tmp_path / run_id
    run_dir.mkdir(parents=True)
    interpreters = interpreters or {}
    manifest = {"run_id": run_id, "host": "testhost", "profile": "quick", "cache": "warm",
                "suites": ["lutz2009"], "io": ["c"], "started": "2026-01-01T00:00:00+00:00",
                "interpreters": {}}
    for index, (label, benchmarks) in enumerate(series.items()):
        write_pyperf_file(run_dir / f"{label}.json", benchmarks)
        manifest["interpreters"][label] = {"label": label.split("+")[0], "implementation": "cpython",
                                           "version_info": [3, index, 0], "version": f"3.{index}.0",
                                           "status": "ok", **interpreters.get(label, {})}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return store.Run(tmp_path, run_id)


def processes(base, factor, n=6, jitter=0.01):
    """n processes of 3 values around base*factor, with a deterministic small jitter."""
    return [[base * factor * (1 + jitter * ((i * 7 + j) % 5 - 2) / 2) for j in range(3)]
            for i in range(n)]


def test_ratio_significance_and_geometric_mean(tmp_path):
    run = make_run(tmp_path, {
        "3.0": {"read_byLines_textMode": processes(0.010, 1.0),
                "write_byLines_textMode": processes(0.100, 1.0)},
        "3.1": {"read_byLines_textMode": processes(0.010, 2.0),
                "write_byLines_textMode": processes(0.100, 0.5)},
    })
    data = analysis.load_run(run)
    means = analysis.process_means(data.frame)
    comparisons = analysis.compare_all(means, analysis.ordered_ops(data), "3.0", ["3.1"])
    slow = comparisons[("read_byLines_textMode", "3.1")]
    fast = comparisons[("write_byLines_textMode", "3.1")]
    assert slow.ratio == pytest.approx(2.0, rel=1e-3) and slow.significant
    assert fast.ratio == pytest.approx(0.5, rel=1e-3) and fast.significant
    assert stats.geometric_mean([slow.ratio, fast.ratio]) == pytest.approx(1.0, rel=1e-3)
    text = without_intervals(all_pages(data))
    assert "2.00 ▲" in text
    assert "0.50 ▼" in text
    assert "[read_byLines_textMode] 3.1 is 2.00 times slower than 3.0" in text
    assert "[write_byLines_textMode] 3.1 is 2.00 times faster than 3.0" in text
    # the geometric mean over both ops, on the main page
    assert re.search(r"\| `3.1`\s*\|\s*2 \|\s*1.00 \|", pages.build_report(data))


def test_noise_is_not_significant(tmp_path):
    # Same distribution on both sides, shuffled between rounds: no significant difference.
    a = [[0.010 * f] for f in (1.00, 1.20, 0.90, 1.10, 0.95, 1.05)]
    b = [[0.010 * f] for f in (1.10, 0.95, 1.05, 0.90, 1.20, 1.00)]
    run = make_run(tmp_path, {"3.0": {"read_byLines_textMode": a},
                              "3.1": {"read_byLines_textMode": b}})
    data = analysis.load_run(run)
    comparison = analysis.compare_all(analysis.process_means(data.frame), ["read_byLines_textMode"],
                                    "3.0", ["3.1"])[("read_byLines_textMode", "3.1")]
    assert comparison.significant is False
    assert "(not significant)" in all_pages(data)


def test_an_op_missing_in_one_interpreter_is_a_dash(tmp_path):
    run = make_run(tmp_path, {
        "3.0": {"read_byLines_textMode": processes(0.01, 1), "write_byLines_textMode": processes(0.1, 1)},
        "3.1": {"read_byLines_textMode": processes(0.01, 1.5)},
    })
    data = analysis.load_run(run)
    text = all_pages(data)
    row = next(line for line in text.splitlines() if line.startswith("| `write_byLines_textMode`"))
    assert "—" in row
    # the geometric mean uses the ops both have, and says how many
    assert re.search(r"\| `3.1`\s*\|\s*1 \|\s*1.50 \|", pages.build_report(data))


def test_one_interpreter_gives_a_report_without_ratios(tmp_path):
    run = make_run(tmp_path, {"3.0": {"read_byLines_textMode": processes(0.01, 1)}})
    text = all_pages(analysis.load_run(run))
    assert "there is nothing to compare" in text
    assert "Geometric means" not in text and "## Findings" not in text
    assert "## Times" in text and "nan" not in text


def test_corrupt_and_foreign_files_are_named_and_the_rest_reported(tmp_path):
    run = make_run(tmp_path, {"3.0": {"read_byLines_textMode": processes(0.01, 1)},
                              "3.1": {"read_byLines_textMode": processes(0.01, 1.2)}})
    good = (run.path / "3.1.json").read_text()
    (run.path / "3.2.json").write_text(good[: len(good) // 2])          # truncated
    (run.path / "other.json").write_text(json.dumps({"tool": "asv"}))   # another tool's JSON
    data = analysis.load_run(run)
    problems = dict(data.problems)
    assert "perhaps truncated" in problems["3.2.json"]
    assert "not a pyperf result file" in problems["other.json"]
    text = pages.build_report(data)
    assert "## Files not read" in text and "`3.2.json`" in text
    assert "1.20" in text
    assert (run.path / "3.2.json").exists()  # nothing deleted


def test_baseline_option_and_unknown_baseline(tmp_path):
    run = make_run(tmp_path, {"3.0": {"read_byLines_textMode": processes(0.01, 1)},
                              "3.1": {"read_byLines_textMode": processes(0.01, 2)}})
    data = analysis.load_run(run)
    assert "0.50 ▼" in without_intervals(all_pages(data, baseline="3.1"))
    with pytest.raises(ValueError, match="unknown baseline '9.9'; valid: 3.0, 3.1"):
        pages.build_report(data, baseline="9.9")


def test_metadata_cannot_break_tables(tmp_path):
    evil = "evil|host\n<script>alert(1)</script>"
    run = make_run(tmp_path, {"3.0": {"read_byLines_textMode": processes(0.01, 1)},
                              "3.1": {"read_byLines_textMode": processes(0.01, 1)}},
                   interpreters={"3.1": {"executable": evil, "configure_args": "a|b"}})
    manifest = json.loads((run.path / "manifest.json").read_text())
    manifest["host"] = evil
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    text = pages.build_report(analysis.load_run(run))
    assert "<script>" not in text
    assert "evil\\|host" in text
    for line in text.splitlines():
        if line.startswith("| host"):
            assert line.count("|") - line.count("\\|") == 3


def test_main_writes_latest_and_a_kept_copy(tmp_path, monkeypatch):
    make_run(tmp_path / "results", {"3.0": {"read_byLines_textMode": processes(0.01, 1)},
                                    "3.1": {"read_byLines_textMode": processes(0.01, 1)}})
    monkeypatch.setattr(report, "ROOT", tmp_path)
    assert report.main(["--results-dir", str(tmp_path / "results")]) == 0
    assert (tmp_path / "reports" / "latest.md").exists()
    assert (tmp_path / "reports" / "T.md").exists()


def test_main_reports_a_missing_run_clearly(tmp_path, capsys):
    assert report.main(["--results-dir", str(tmp_path), "--run-id", "nope"]) == 2
    assert "no run nope" in capsys.readouterr().err


def test_mann_whitney_exact_p_values():
    # fully separated samples: only 2 of the C(n+m, n) orderings are as extreme
    assert stats.mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)
    assert stats.mann_whitney_p([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12]) == pytest.approx(2 / 924)
    assert stats.mann_whitney_p([1, 3, 5], [2, 4, 6]) == pytest.approx(0.7)
    # beyond 25 a side, the normal approximation: U = 1 + ... + 14 = 105, mean 450, sd sqrt(4575)
    big_a, big_b = list(range(30)), [x + 15.5 for x in range(30)]
    expected = math.erfc((450 - 105 - 0.5) / math.sqrt(4575) / math.sqrt(2))
    assert stats.mann_whitney_p(big_a, big_b) == pytest.approx(expected)


def test_a_slow_mode_in_a_few_processes_is_not_a_difference():
    """Bimodal per-process means, as measured on shared machines: medians and ranks hold."""
    fast, slow = 0.0074, 0.0140
    a = {i: v for i, v in enumerate([fast, fast * 1.01, slow, fast * 0.99, fast, slow * 1.02])}
    b = {i: v for i, v in enumerate([slow, fast, fast * 1.02, fast * 0.98, fast * 1.01, fast])}
    comparison = stats.compare(a, b)
    assert comparison.significant is False
    assert comparison.ratio == pytest.approx(1.0, abs=0.02)


def test_too_few_processes_cannot_be_significant():
    comparison = stats.compare({0: 1.0, 1: 1.0}, {0: 2.0, 1: 2.0})
    assert comparison.significant is None and comparison.ratio == 2.0
    assert comparison.low is None and comparison.high is None
    assert stats.min_processes_for_significance() == 4


def test_runs_of_two_hosts_merge_into_one_report(tmp_path, capsys):
    """Two run directories whose manifests name different hosts: a section each and a cross-host table."""
    results = tmp_path / "results"
    for run_id, host, factor in (("linux-run", "linux-box", 1.0), ("mac-run", "mac-box", 1.5)):
        run = make_run(results, {"3.12": {"read_byLines_textMode": processes(0.01, 1),
                                          "write_byLines_textMode": processes(0.1, 1)},
                                 "3.13": {"read_byLines_textMode": processes(0.01, factor),
                                          "write_byLines_textMode": processes(0.1, factor)}},
                       run_id=run_id)
        manifest = json.loads((run.path / "manifest.json").read_text())
        manifest["host"] = host
        (run.path / "manifest.json").write_text(json.dumps(manifest))
    out = tmp_path / "merged.md"
    assert report.main(["--results-dir", str(results), "--run-id", "linux-run", "--run-id",
                        "mac-run", "--run-id", "windows-run", "--out", str(out),
                        "--no-figures"]) == 0
    assert "windows-run" in capsys.readouterr().err  # named and skipped
    text = without_intervals(out.read_text())
    assert text.startswith("<!-- generated") and text.count("<!-- generated") == 1
    assert "# iomatrix report: 2 runs on 2 hosts" in text
    assert "Not found, skipped: windows-run" in text
    assert "## Across hosts" in text and "### `3.13` on 2 hosts" in text
    cross = text[text.index("### `3.13` on 2 hosts"):text.index("## iomatrix report: run linux-run")]
    assert "1.50 ▲" in cross
    assert "## iomatrix report: run linux-run" in text and "## iomatrix report: run mac-run" in text
    assert "### Geometric means against `3.12`" in text
