"""bisect: the release where an op's time changed, over real builds (smoke profile)."""
from __future__ import annotations

import io
import tarfile

import pytest

from iomatrix.commands import bisect, bisect_points
from conftest import need
from test_discovery import machine  # noqa: F401  (the fixture: a machine of the test's own)

QUIET = dict(log=lambda *a: None)


@pytest.fixture(autouse=True)
def offline(monkeypatch, no_changelog_download):
    # python.org is not asked: the tests say what this offline machine can have; nor is a
    # changelog for the answer's candidates downloaded (conftest.no_changelog_download)
    monkeypatch.setattr(bisect_points, "python_org_reachable", lambda: False)


def tree(directory):
    return sorted(p.relative_to(directory) for p in directory.rglob("*"))


def test_releases_between_one_minor_and_across_minors():
    assert bisect.releases_between("3.14.5", "3.14.7") == ["3.14.5", "3.14.6", "3.14.7"]
    across = bisect.releases_between("3.13.15", "3.14.7")
    assert across[:3] == ["3.13.15", "3.14.0a1", "3.14.0a2"]
    assert across[-5:] == ["3.14.3", "3.14.4", "3.14.5", "3.14.6", "3.14.7"]
    assert "3.13.16" not in across and "3.14.0rc3" in across
    middle = bisect.releases_between("3.9.18", "3.12.1")
    assert "3.10.13" in middle and "3.11.7" in middle and "3.9.19" not in middle


@pytest.mark.slow
def test_mmap_find_is_bisected_to_3_11(tmp_path, capsys, machine_interpreters):
    """mmap.find moved to fastsearch in 3.11 (bpo-46848): 3.10 -> 3.11 is the step.

    Slow: test_many_points_are_bisected finds the same step with the same statements (the
    step's row, "Not narrowed further", the answer file, a series per point and the A/A
    twin), and test_a_failed_build_is_exit_3_* times every point in one run as this one does."""
    for label in ("3.9", "3.10", "3.11", "3.12"):
        need(machine_interpreters, label)
    status = bisect.main(["mmapio_find_mmap", "--between", "3.9", "3.12", "--profile", "smoke",
                          "--no-build", "--counters", "off", "--results-dir",
                          str(tmp_path / "results"), "--run-id", "b1"], **QUIET)
    assert status == 0
    out = capsys.readouterr().out
    assert "between 3.10.13 and 3.11.7" in out.split("\n\n")[1]
    assert "| 3.10.13 -> 3.11.7 |" in out
    assert "Not narrowed further: between 3.10.13 and 3.11.7 no build of 3.10.14 .. 3.11.6" in out
    answer = tmp_path / "results" / "b1" / "bisect.md"
    assert answer.read_text().startswith("## Bisect: `mmapio_find_mmap`")
    # the run is a run like any other: its manifest and one series per point and the twin
    assert {p.name for p in (tmp_path / "results" / "b1").glob("*.json")} >= {
        "manifest.json", "3.9.json", "3.10.json", "3.11.json", "3.12.json", "3.9-aa.json"}


def test_a_release_that_can_be_built_but_is_not_is_named(machine, monkeypatch):
    """A machine of the test's own (test_discovery's fakes: pyenv's 3.13.0 and a provisioned
    3.13.15, the lineage's recipe; an empty IOMATRIX_CACHE): 3.13.5 is in Debian's pool, not
    built, and --no-build names it so. What the bisection does with such points is
    test_many_points_are_bisected's (real builds); here only which releases are points,
    whatever this machine's own cache holds (a 3.13.5 built by an earlier bisect)."""
    import argparse
    from test_discovery import PYENV_3_13
    for version in ("3.13.0", "3.13.15"):
        (machine.pyenv_python if version == "3.13.0" else machine.provisioned)(
            version, version, sysconfig=PYENV_3_13)
    found = machine.discover()
    args = argparse.Namespace(between=["3.13", "3.13.15"], no_build=True)
    old, new, recipe, everything, points, why = bisect_points.plan(args, found, QUIET["log"])
    assert (old, new, recipe.name) == ("3.13.0", "3.13.15", "lineage")
    assert sorted(points) == ["3.13.0", "3.13.15"]
    assert why["3.13.5"] == "can be built (Debian's pool), not built: --no-build"
    assert why["3.13.4"] == "not in Debian's pool; python.org unreachable"
    step = bisect.Step(points["3.13.0"], points["3.13.15"], None, "b2",
                       [v for v in everything if v not in points])
    assert "3.13.5, 3.13.12, 3.13.14: can be built (Debian's pool), not built: --no-build" \
        in bisect.gap_text(step, why)


@pytest.mark.parametrize("posargs, message", [
    (["no_such_op", "--between", "3.9", "3.12"], "unknown op 'no_such_op'; valid: "),
    (["mmapio_find_mmap", "--between", "3.9", "3.14.99"], "unknown release '3.14.99' for NEW"),
    (["mmapio_find_mmap", "--between", "bogus", "3.12"], "unknown release 'bogus' for OLD"),
    (["mmapio_find_mmap", "--between", "3.12", "3.9"], "OLD 3.12.1 is newer than NEW 3.9.18"),
    (["mmapio_find_mmap", "--between", "3.12", "3.12.1"], "empty range"),
])
def test_bad_input_is_exit_2_and_writes_nothing(tmp_path, capsys, posargs, message,
                                                machine_interpreters):
    need(machine_interpreters, "3.9")
    need(machine_interpreters, "3.12")
    status = bisect.main([*posargs, "--results-dir", str(tmp_path / "results"),
                          "--out", str(tmp_path / "answer.md")], **QUIET)
    assert status == 2
    err = capsys.readouterr().err
    assert message in err
    if "unknown op" in message:
        assert "mmapio_slices_seek_read" in err
    assert tree(tmp_path) == []


def broken_tarball(path, top):
    """A source tarball whose configure fails at once."""
    script = b"#!/bin/sh\necho 'configure: error: this tarball is broken on purpose' >&2\nexit 1\n"
    with tarfile.open(path, "w:xz") as tar:
        info = tarfile.TarInfo(f"{top}/configure")
        info.size, info.mode = len(script), 0o755
        tar.addfile(info, io.BytesIO(script))


def test_a_failed_build_is_exit_3_with_its_log_and_the_other_points_timed(
        tmp_path, capsys, monkeypatch, machine_interpreters):
    need(machine_interpreters, "3.12")
    need(machine_interpreters, "3.13")
    cache = tmp_path / "cache"
    (cache / "tarballs").mkdir(parents=True)
    broken_tarball(cache / "tarballs" / "Python-3.13.0rc3.tar.xz", "Python-3.13.0rc3")
    monkeypatch.setenv("IOMATRIX_CACHE", str(cache))
    status = bisect.main(["mmapio_find_mmap", "--between", "3.12", "3.13", "--profile", "smoke",
                          "--counters", "off", "--results-dir", str(tmp_path / "results"),
                          "--run-id", "b3"], **QUIET)
    assert status == 3
    captured = capsys.readouterr()
    assert "| 3.12.1 -> 3.13.0 |" in captured.out
    assert "- 3.13.0rc3: its build failed" in captured.out
    assert "this tarball is broken on purpose" in captured.err
    assert (tmp_path / "results" / "b3" / "3.13.json").is_file()


def test_many_points_are_bisected(tmp_path, capsys, machine_interpreters):
    """3.6 .. 3.13: eight pyenv builds, more than TIME_ALL: a binary search finds 3.10 -> 3.11."""
    for label in ("3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"):
        need(machine_interpreters, label)
    status = bisect.main(["mmapio_find_mmap", "--between", "3.6", "3.13", "--profile", "smoke",
                          "--no-build", "--counters", "off", "--results-dir",
                          str(tmp_path / "results"), "--run-id", "b4"], **QUIET)
    assert status == 0
    out = capsys.readouterr().out
    assert "between 3.10.13 and 3.11.7" in out.split("\n\n")[1]
    assert "8 points could be had: bisected in 3 lockstep runs" in out
    # mmap.find moved to fastsearch in 3.11 (bpo-46848)
    assert "| 3.10.13 -> 3.11.7 |" in out
    assert "Not narrowed further: between 3.10.13 and 3.11.7 no build of 3.10.14 .. 3.11.6" in out
    answer = tmp_path / "results" / "b4-1" / "bisect.md"
    assert answer.read_text().startswith("## Bisect: `mmapio_find_mmap`")
    assert not (tmp_path / "results" / "b4-4").exists()
    # each run is a run like any other: its manifest, one series per point and the twin
    assert {p.name for p in (tmp_path / "results" / "b4-1").glob("*.json")} >= {
        "manifest.json", "3.6.json", "3.6-aa.json", "3.13.json"}


def test_the_answer_names_its_run_without_a_path_of_this_machine(tmp_path):
    """A committed answer once ended "run ... in /abs/path/results": inside the repository the
    path is relative to it, elsewhere the run id alone."""
    from iomatrix.paths import RESULTS_DIR
    assert bisect.run_place("b1", RESULTS_DIR) == "run `b1` in `results/b1`"
    assert bisect.run_place("b1", tmp_path / "results") == "run `b1`"
