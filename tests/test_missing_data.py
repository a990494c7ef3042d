"""A series the manifest lists as measured whose data file is gone (issue 56, family 3).

A run of three releases, 3.14 slower than 3.12 and 3.13: with 3.13's data file deleted (or
truncated, or stored twice with other results), the report must not drop 3.13 without a
word and state "3.14 made ... slower than 3.12" as if 3.12 → 3.14 were a release step of
the run. Each case is a real run written as the hostile probe writes one
(docs/experiments/hostile_probe.py ``make_run``), reported as a user would.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import sys
from pathlib import Path

import pytest

import agree
import history
import report
from iomatrix.analysing import analysis
from iomatrix.storing import store

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "experiments"))
import hostile_probe as probe  # noqa: E402 - the probe's own run writer

LABELS = ("3.12", "3.13", "3.14")


def three_releases(results: Path, run_id: str = probe.RUN_A) -> Path:
    return probe.make_run(results, probe.RunSpec(run_id=run_id, labels=LABELS,
                                                 speed={"3.14": 3.7}))


def call(main, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main([str(a) for a in args])
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue(), err.getvalue()


def reported(tmp_path: Path, *run_ids: str) -> tuple[str, str, Path]:
    """(the main page, the terminal's output, the pages' directory) of a report."""
    out = tmp_path / "out" / "o.md"
    args = [a for run_id in run_ids for a in ("--run-id", run_id)]
    status, stdout, stderr = call(report.main, "--results-dir", tmp_path / "results", *args,
                                  "--out", out, "--no-figures")
    assert status == 0, stderr
    return out.read_text(encoding="utf-8"), stdout + stderr, out.parent / "o"


def first_paragraph(page: str) -> str:
    """The answer in words: the page's first paragraph after its title."""
    return page.split("\n\n")[1]


DAMAGE = {
    "deleted": (lambda path: path.unlink(), "missing, deleted or moved after the run"),
    "truncated": (lambda path: path.write_text(path.read_text()[:200]), "not valid JSON"),
    "stored twice, with other results": (
        lambda path: path.with_name(path.name + store.GZ_SUFFIX).write_bytes(gzip.compress(
            path.read_text().replace("0.01", "0.02").encode())), "stored both as"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_series_whose_data_is_gone_is_named_with_its_file_and_the_step_over_it(
        tmp_path, damage):
    run_dir = three_releases(tmp_path / "results")
    harm, why = DAMAGE[damage]
    harm(run_dir / "3.13.json")
    page, terminal, pages = reported(tmp_path, probe.RUN_A)
    answer = first_paragraph(page)
    # the answer itself says what is left out, which file and why, and that the finding's
    # step stands over it: on the first screen and in the terminal's "In words"
    assert "Left out: 3.13 (3.13.json: " in answer and why in answer, answer
    assert "the step 3.12 → 3.14 stands over 3.13: not a step between consecutive " \
           "releases" in answer
    words = terminal.split("In words: ", 1)[1]
    assert "Left out: 3.13 (3.13.json" in words and "stands over 3.13" in words
    assert str(tmp_path) not in answer            # no machine path on the page
    # the problems list names the file, the release steps say the step stands over it
    assert "## Files not read" in page and "- `3.13.json`: " in page
    unread = page.split("## Files not read", 1)[1].split("\n## ", 1)[0]
    assert why in unread and str(tmp_path) not in unread     # the file named, not its path
    steps = page.split("## Release steps", 1)[1].replace("\u00a0", " ")   # nowrap's spaces
    assert "- 3.12 → 3.14: stands over `3.13`" in steps, steps[:1500]
    # the suite page, where its columns would have been, says it too
    suite = (pages / "lutz2009.md").read_text(encoding="utf-8")
    assert "> **Warning:** Left out: `3.13` (`3.13.json`: " in suite
    assert "`3.12` → `3.14` stands over `3.13`" in suite


def test_nothing_is_said_of_a_series_the_manifest_does_not_list_as_written(tmp_path):
    """A series that failed (no data file by its status) is the failed-interpreters list's,
    not a file gone missing; a run whose files are all there says nothing of the kind."""
    run_dir = three_releases(tmp_path / "results")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["interpreters"]["3.13"]["status"] = "failed"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    (run_dir / "3.13.json").unlink()
    page, terminal, _ = reported(tmp_path, probe.RUN_A)
    assert "Left out" not in page and "Files not read" not in page
    assert "Failed interpreters" in page
    three_releases(tmp_path / "results", probe.RUN_B)
    data = analysis.load_run(store.Run(tmp_path / "results", probe.RUN_B))
    assert data.left_out == {} and data.problems == []


def test_a_compressed_series_deleted_is_named_by_its_stored_name(tmp_path):
    run_dir = three_releases(tmp_path / "results")
    store.compress_file(run_dir / "3.13.json")
    data = analysis.load_run(store.Run(tmp_path / "results", probe.RUN_A))
    assert data.left_out == {}
    (run_dir / "3.13.json.gz").unlink()
    data = analysis.load_run(store.Run(tmp_path / "results", probe.RUN_A))
    assert list(data.left_out) == ["3.13"] and data.left_out["3.13"][0] == "3.13.json"
    assert [(name, message.endswith(data.left_out["3.13"][1])) for name, message
            in data.problems] == [("3.13.json", True)]


def test_every_series_gone_leaves_a_page_that_names_each_file(tmp_path):
    run_dir = three_releases(tmp_path / "results")
    for label in LABELS:
        (run_dir / f"{label}.json").unlink()
    page, _, _ = reported(tmp_path, probe.RUN_A)
    assert "No results could be read from this run." in page
    for label in LABELS:
        assert f"- `{label}.json`: missing, deleted or moved after the run" in page


def test_the_merged_report_names_it_in_its_run_s_section(tmp_path):
    run_dir = three_releases(tmp_path / "results")
    three_releases(tmp_path / "results", probe.RUN_B)
    (run_dir / "3.13.json").unlink()
    page, _, _ = reported(tmp_path, probe.RUN_A, probe.RUN_B)
    section = page.split(f"# iomatrix report: run {probe.RUN_A}", 1)[1].split(
        "# iomatrix report: run", 1)[0]
    assert "Left out: 3.13 (3.13.json: missing" in section
    assert "stands over 3.13" in section


def test_pool_and_agree_name_the_run_whose_file_is_gone(tmp_path):
    """Another run whose series file is gone is left out of a pool with its file named, and
    agree refuses it (exit 2) naming the file: neither counts a run with a release missing
    as a run that agrees."""
    three_releases(tmp_path / "results")
    other = three_releases(tmp_path / "results", probe.RUN_B)
    (other / "3.13.json").unlink()
    out = tmp_path / "out" / "p.md"
    status, _, stderr = call(report.main, "--results-dir", tmp_path / "results", "--run-id",
                             probe.RUN_A, "--pool", probe.RUN_B, "--out", out, "--no-figures")
    assert status == 2 and f"run {probe.RUN_B} (cannot be read: 3.13.json)" in stderr, stderr
    status, _, stderr = call(agree.main, probe.RUN_A, probe.RUN_B, "--results-dir",
                             tmp_path / "results")
    assert status == 2 and "3.13.json" in stderr and "missing" in stderr, stderr


def test_history_names_the_run_whose_file_is_gone(tmp_path):
    """history of a release whose file one run's manifest lists as written, and which is
    gone, names that file (from the results directory down, not by the machine's path) on
    the page and on stderr: the run is never missing from the history without a word."""
    three_releases(tmp_path / "results")
    other = three_releases(tmp_path / "results", probe.RUN_B)
    (other / "3.13.json").unlink()
    out = tmp_path / "out" / "h.md"
    status, _, stderr = call(history.main, "3.13", "--results-dir", tmp_path / "results",
                             "--out", out)
    assert status == 0 and "3.13.json: missing, deleted or moved after the run" in stderr
    page = out.read_text()
    assert f"- `{probe.RUN_B}/3.13.json`: missing, deleted or moved after the run; the " \
        "manifest lists series 3.13 as written, status ok" in page
    assert str(tmp_path) not in page
    # a release whose files are all there: nothing is said of any
    status, _, stderr = call(history.main, "3.12", "--results-dir", tmp_path / "results")
    assert status == 0 and "missing" not in stderr
