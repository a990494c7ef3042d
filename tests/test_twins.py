"""The twins of the newest release (issue 45): planned by ``provision`` with no VERSION,
built beside the plain build (a twin that cannot be built leaves one line), refused when
a build does not read as the recipe its name says, and their verdicts on the findings.

The builds are of tests/fake_cpython packed as Python-3.14.7 (test_provision.py's fake
tree: its interpreter answers the probe with the build variables configure recorded),
into an IOMATRIX_CACHE under tmp_path; discovery and the network are replaced by the
interpreters and tarballs each test names, so nothing here builds a real CPython or
reads the machine's cache.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from iomatrix.analysing import analysis, comparisons
from iomatrix.interpreters import cache as build_cache
from iomatrix.interpreters import discovery, newest, provision, sources
from iomatrix.reporting import pages, twin_verdicts
from test_lineage import OP_SLOWER, entry, make_run
from test_provision import make_tarball


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A test cache whose tarballs/ holds a fake 3.14.7 and a (never built) 3.15.0rc2;
    the machine has 3.13.0; no network."""
    root = tmp_path / "cache"
    monkeypatch.setenv("IOMATRIX_CACHE", str(root))
    for name in ("FAKE_CPYTHON_FAIL", "FAKE_CPYTHON_UNSUPPORTED", "FAKE_CPYTHON_DROP",
                 "FAKE_CPYTHON_MAKE_SLEEP", "FAKE_CPYTHON_MISSING"):
        monkeypatch.delenv(name, raising=False)
    make_tarball(root / "tarballs" / "Python-3.14.7.tar.xz", top="Python-3.14.7")
    (root / "tarballs" / "python3.15_3.15.0~rc2.orig.tar.xz").write_bytes(b"")
    monkeypatch.setattr(discovery, "discover", lambda: [cpython("3.13", "3.13.0")])
    monkeypatch.setattr(newest, "_fetch", lambda url: None)
    monkeypatch.setattr(newest, "_pool_has", lambda url: None)
    monkeypatch.setattr(newest, "offers_in_apt", lambda series: [])
    # apt's own entries are the machine's: one archive of no host, which nothing is asked
    # (each plan asked apt-get for them once per minor version: 1.5-3.5 s of CPU a test).
    monkeypatch.setattr(sources, "debian_mirrors", lambda: ["http://archive.invalid/debian/"])
    return root


def cpython(label, version, free_threaded=False, recipe="shared-O3"):
    return discovery.Interpreter(label, f"/x/{label}", "pyenv", {
        "version": version, "implementation": "cpython", "free_threaded": free_threaded,
        "recipe": recipe})


def plan_lines(**kwargs) -> list[str]:
    steps, _ = newest.default_plan(**kwargs)
    return [step.describe() for step in steps]


# -- the plan ----------------------------------------------------------------------------

def test_the_plan_puts_both_twins_of_the_newest_stable_release_beside_it(machine):
    assert plan_lines() == [
        "3.14: build 3.14.7 (from the cache's tarballs/)",
        "3.14: build 3.14.7t (the free-threaded twin of 3.14.7, from the cache's tarballs/)",
        "3.14: build 3.14.7-pgo (the PGO+LTO twin of 3.14.7, from the cache's tarballs/)",
        # a pre-release minor version has no twins: 3.14 is the newest stable one
        "3.15: build 3.15.0rc2 (from the cache's tarballs/)",
    ]
    assert plan_lines(twins=False) == [
        "3.14: build 3.14.7 (from the cache's tarballs/)",
        "3.15: build 3.15.0rc2 (from the cache's tarballs/)"]


def test_the_list_shows_the_twins_and_no_twins_leaves_them_out(machine, capsys):
    assert provision.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "3.14: would build 3.14.7t (the free-threaded twin of 3.14.7, " in out
    assert "3.14: would build 3.14.7-pgo (the PGO+LTO twin of 3.14.7, " in out
    assert provision.main(["--list", "--no-twins"]) == 0
    assert "twin" not in capsys.readouterr().out
    assert not (machine / "pythons").exists()   # a listing builds nothing
    assert provision.main(["3.14.7", "--no-twins"]) == 2
    assert "--no-twins go with --newest" in capsys.readouterr().err


def test_the_plan_reuses_every_build_in_the_cache(machine):
    provision.build("3.14.7", recipe="release", say=lambda text: None)
    provision.build("3.14.7t", say=lambda text: None)
    lines = plan_lines()
    # The PGO+LTO build is no plain 3.14.7: the plain one is still to build.
    assert "3.14: build 3.14.7 (from the cache's tarballs/)" in lines
    assert "3.14: 3.14.7-pgo is here already (the PGO+LTO twin of 3.14.7, in the cache: " \
           "3.14.7-pgo)" in lines
    assert not any("build 3.14.7t" in line or "build 3.14.7-pgo" in line for line in lines)


def test_the_plan_takes_a_twin_discovery_finds(machine, monkeypatch):
    monkeypatch.setattr(discovery, "discover", lambda: [
        cpython("3.13", "3.13.0"), cpython("3.14", "3.14.7"),
        cpython("3.14t", "3.14.7", free_threaded=True),
        cpython("3.14-pgo", "3.14.7", recipe="static-O3-pgo-lto")])
    lines = plan_lines()
    assert "3.14: 3.14.7 is here already (found by discovery)" in lines
    assert "3.14: 3.14.7t is here already (the free-threaded twin of 3.14.7, found by " \
           "discovery: 3.14t)" in lines
    assert "3.14: 3.14.7-pgo is here already (the PGO+LTO twin of 3.14.7, found by " \
           "discovery: 3.14-pgo)" in lines


def test_free_threaded_plans_each_t_build_once(machine):
    lines = plan_lines(free_threaded=True)
    assert sum("3.14.7t" in line for line in lines) == 1
    assert "3.14: build 3.14.7t (the free-threaded twin of 3.14.7, from the cache's " \
           "tarballs/)" in lines


# -- building them -----------------------------------------------------------------------

def built(root) -> list[str]:
    return [f"{Path(b['prefix']).name}:{b['recipe']}"
            for b in build_cache.list_builds(root)]


def run_newest(capsys, *argv) -> tuple[int, str, str]:
    status = provision.main(["--newest", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def without_15(machine):
    (machine / "tarballs" / "python3.15_3.15.0~rc2.orig.tar.xz").unlink()


def test_provision_builds_the_plain_build_and_both_twins(machine, capsys):
    without_15(machine)
    status, out, err = run_newest(capsys)
    assert status == 0, err
    assert built(machine) == ["3.14.7:lineage", "3.14.7-pgo:release", "3.14.7t:lineage"]
    info = json.loads((machine / "pythons" / "3.14.7-pgo" / "iomatrix-build.json").read_text())
    assert "--enable-optimizations" in info["configure_args"]
    assert "--with-lto" in info["configure_args"]
    assert info["free_threaded"] is False
    # built in the order plain, free-threaded, PGO+LTO (the slowest last)
    order = [line.split("]")[0] for line in out.splitlines() if "building with" in line]
    assert order == ["[3.14.7", "[3.14.7t", "[3.14.7-pgo"]
    assert "twin missing" not in err
    # a second run reuses all three
    status, out, _ = run_newest(capsys)
    assert status == 0 and "building" not in out


def test_a_twin_the_compiler_cannot_build_leaves_one_line(machine, capsys, monkeypatch):
    without_15(machine)
    monkeypatch.setenv("FAKE_CPYTHON_UNSUPPORTED", "--with-lto")   # no LTO support here
    status, _, err = run_newest(capsys)
    assert status == 0, err
    assert built(machine) == ["3.14.7:lineage", "3.14.7t:lineage"]
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("warning: twin missing: 3.14.7-pgo (PGO+LTO twin of 3.14.7) "
                               "was not built: configure failed: ")
    assert "see the log" in lines[0]
    assert not [p for p in (machine / "pythons").iterdir() if p.name.startswith(".")]


def test_a_free_threaded_twin_that_fails_leaves_the_others(machine, capsys, monkeypatch):
    without_15(machine)
    monkeypatch.setenv("FAKE_CPYTHON_UNSUPPORTED", "--disable-gil")
    status, _, err = run_newest(capsys)
    assert status == 0, err
    assert built(machine) == ["3.14.7:lineage", "3.14.7-pgo:release"]
    assert [line for line in err.splitlines() if line.strip()] == [
        line for line in err.splitlines() if line.startswith(
            "warning: twin missing: 3.14.7t (free-threaded twin of 3.14.7) was not built: ")]


def test_twins_of_a_plain_build_that_failed_are_named_missing(machine, capsys, monkeypatch):
    without_15(machine)
    monkeypatch.setenv("FAKE_CPYTHON_FAIL", "make")
    status, _, err = run_newest(capsys)
    assert status == 3   # the plain build failed: that is the provision's failure
    assert "error: [3.14.7] make failed" in err
    assert "warning: twin missing: 3.14.7t (free-threaded twin of 3.14.7) was not built: " \
           "its plain build 3.14.7 failed" in err
    assert "warning: twin missing: 3.14.7-pgo (PGO+LTO twin of 3.14.7) was not built: " \
           "its plain build 3.14.7 failed" in err
    assert built(machine) == []


def test_a_missing_tarball_leaves_a_plain_build_elsewhere_alone(machine, capsys):
    # 3.15.0rc2's tarball is an empty file, refused (exit 2); the 3.14 builds, twins
    # included, stand.
    status, _, err = run_newest(capsys)
    assert status == 2
    assert "error: [3.15.0rc2]" in err and "twin missing" not in err
    assert built(machine) == ["3.14.7:lineage", "3.14.7-pgo:release", "3.14.7t:lineage"]


# -- a build must read as the recipe its name says ----------------------------------------

def test_a_pgo_build_without_pgo_is_refused(machine, capsys, monkeypatch):
    # configure ignored --enable-optimizations: the build reads as static-O3-lto
    monkeypatch.setenv("FAKE_CPYTHON_DROP", "--enable-optimizations")
    status = provision.main(["3.14.7", "--recipe", "release"])
    err = capsys.readouterr().err
    assert status == 3
    assert "3.14.7-pgo reads as static-O3-lto, not static-O3-pgo-lto as the release recipe " \
           "its name says" in err
    assert built(machine) == []
    assert not (machine / "pythons" / "3.14.7-pgo").exists()


def test_as_a_twin_a_build_that_misreads_is_missing_and_the_rest_stands(machine, capsys,
                                                                        monkeypatch):
    without_15(machine)
    monkeypatch.setenv("FAKE_CPYTHON_DROP", "--with-lto")
    status, _, err = run_newest(capsys)
    assert status == 0
    assert built(machine) == ["3.14.7:lineage", "3.14.7t:lineage"]
    assert "warning: twin missing: 3.14.7-pgo (PGO+LTO twin of 3.14.7) was not built: " \
           "check in place failed: 3.14.7-pgo reads as static-O3-pgo, not " \
           "static-O3-pgo-lto" in err


def relabel(machine, source: str, target: str, **info_changes) -> None:
    """Move a finished build under another name (and edit its build info): a label that
    says something else than the build is."""
    pythons = machine / "pythons"
    shutil.move(pythons / source, pythons / target)
    path = pythons / target / build_cache.BUILD_INFO
    info = json.loads(path.read_text())
    path.write_text(json.dumps({**info, **info_changes}))


def test_a_cached_build_under_a_label_it_is_not_is_not_reused(machine, capsys):
    provision.build("3.14.7", say=lambda text: None)
    # a shared -O3 build in the PGO+LTO twin's place, its build info claiming the recipe
    relabel(machine, "3.14.7", "3.14.7-pgo", recipe="release", optimized=True)
    assert provision.main(["3.14.7", "--recipe", "release"]) == 3
    err = capsys.readouterr().err
    assert "3.14.7-pgo reads as shared-O3, not static-O3-pgo-lto as the release recipe its " \
           "name says" in err and "not reused" in err
    assert (machine / "pythons" / "3.14.7-pgo").is_dir()   # nothing lost: left for a look


def test_a_build_with_the_gil_is_no_free_threaded_twin(machine, capsys):
    provision.build("3.14.7", say=lambda text: None)
    relabel(machine, "3.14.7", "3.14.7t", free_threaded=True, version="3.14.7t")
    assert provision.main(["3.14.7t"]) == 3
    assert "holds a build with the GIL, which 3.14.7t is not" in capsys.readouterr().err


def test_a_cached_build_of_another_recipe_under_the_twins_name_is_refused(machine, capsys):
    provision.build("3.14.7", say=lambda text: None)
    relabel(machine, "3.14.7", "3.14.7-pgo")   # build info: the lineage recipe
    assert provision.main(["3.14.7", "--recipe", "release"]) == 3
    assert "holds a lineage build of 3.14.7" in capsys.readouterr().err


def test_recipe_read_from_real_build_variables():
    from iomatrix.interpreters import build_stages
    pgo = {"implementation": "cpython", "linkage": "static", "sysconfig": {
        "CONFIG_ARGS": "'--enable-optimizations' '--with-lto'", "OPT": "-DNDEBUG -g -O3 -Wall"}}
    assert build_stages.recipe_read(pgo) == "static-O3-pgo-lto"
    fp = {**pgo, "linkage": "shared", "sysconfig": {
        "CONFIG_ARGS": "'--enable-shared'", "OPT": "-DNDEBUG -g -O3 -Wall",
        "CFLAGS": "-O3 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"}}
    assert build_stages.recipe_read(fp) == "shared-O3"   # 3.15's frame pointers left out
    assert build_stages.recipe_read({"implementation": "cpython"}) is None


# -- their verdicts on the main page ---------------------------------------------------------

def twins_run(tmp_path):
    """3.13 → 3.14 → 3.15 with OP_SLOWER 1.5x slower at each step; 3.14t as slow as 3.14,
    the PGO+LTO 3.14.7-pgo as fast as 3.13 (the 3.13 → 3.14 finding does not hold in it)."""
    return make_run(tmp_path, {
        "3.13": (entry("3.13.0", "shared-O3"), 1.0),
        "3.14": (entry("3.14.7", "shared-O3", "provisioned"), 1.5),
        "3.14t": (entry("3.14.7", "shared-O3", "provisioned", free_threaded=True), 1.5),
        "3.14.7-pgo": (entry("3.14.7", "static-O3-pgo-lto", "provisioned"), 1.0),
        "3.15": (entry("3.15.0rc2", "shared-O3-fp", "provisioned"), 2.25),
    })


def test_each_twin_says_how_many_findings_hold_with_it_in_place(tmp_path):
    data = analysis.load_run(twins_run(tmp_path))
    an = comparisons.analyse(data, None, 0.05)
    assert {(f.op, f.a, f.b) for f in an.findings()} == {
        (OP_SLOWER, "3.13", "3.14"), (OP_SLOWER, "3.14", "3.15")}
    found = {tv.twin: tv for tv in twin_verdicts.twin_verdicts(an)}
    assert set(found) == {"3.14t", "3.14.7-pgo"}
    pgo, ft = found["3.14.7-pgo"], found["3.14t"]
    assert (pgo.plain, pgo.kind, ft.kind) == ("3.14", "recipe", "free-threaded")
    assert {(v.older, v.newer, v.holds) for v in pgo.verdicts} == {
        ("3.13", "3.14.7-pgo", False), ("3.14.7-pgo", "3.15", True)}
    assert (ft.held, len(ft.verdicts)) == (2, 2)
    lines = "\n".join(twin_verdicts.section_twins(an))
    assert "1 of 2 findings on a step with `3.14` hold in the PGO+LTO build" in lines
    assert "2 of 2 findings on a step with `3.14` hold in the free-threaded build" in lines
    assert "`3.14t` against `3.14`, the free-threaded twin of the same release: " in lines
    assert f"not: {OP_SLOWER} (3.13 → 3.14.7-pgo: 1.00)" in lines.replace("\\_", "_")
    main = pages.build_report(data, threshold=0.05)
    assert "**The twins.**" in main
    assert "1 of 2 findings on a step with `3.14` hold in the PGO+LTO build" in main


def test_a_step_between_two_twins_is_checked_between_them(tmp_path):
    run = make_run(tmp_path, {
        "3.13": (entry("3.13.0", "shared-O3"), 1.0),
        "3.13t": (entry("3.13.0", "shared-O3", free_threaded=True), 2.0),
        "3.14": (entry("3.14.7", "shared-O3", "provisioned"), 1.5),
        "3.14t": (entry("3.14.7", "shared-O3", "provisioned", free_threaded=True), 2.0),
    })
    an = comparisons.analyse(analysis.load_run(run), None, 0.05)
    found = {tv.twin: tv for tv in twin_verdicts.twin_verdicts(an)}
    # 3.13t → 3.14t, not 3.13 → 3.14t: the free-threaded builds did not slow down
    assert [(v.older, v.newer, v.holds) for v in found["3.14t"].verdicts] == [
        ("3.13t", "3.14t", False)]


def test_a_run_without_twins_says_nothing_of_them(tmp_path):
    run = make_run(tmp_path, {"3.13": (entry("3.13.0", "shared-O3"), 1.0),
                              "3.14": (entry("3.14.7", "shared-O3", "provisioned"), 1.5)})
    an = comparisons.analyse(analysis.load_run(run), None, 0.05)
    assert twin_verdicts.twin_verdicts(an) == [] and twin_verdicts.section_twins(an) == []


def test_the_aa_twin_is_of_the_lineage_never_of_the_pgo_twin():
    from iomatrix.measuring import bench

    def built(label, recipe, free_threaded=False):
        return discovery.Interpreter(label, f"/x/{label}", "provisioned", {
            "version": "3.14.7", "version_info": [3, 14, 7], "implementation": "cpython",
            "free_threaded": free_threaded, "recipe": recipe})
    here = [built("3.14", "shared-O3"), built("3.14t", "shared-O3", True),
            built("3.14.7-pgo", "static-O3-pgo-lto")]
    assert bench.newest_plain_cpython(here) == "3.14"
    assert bench.newest_plain_cpython(here[2:]) == "3.14.7-pgo"   # no lineage: what there is


def test_a_recipe_given_builds_the_plain_release_by_it_and_each_build_once(machine, capsys):
    without_15(machine)
    status, _, err = run_newest(capsys, "--recipe", "release")
    assert status == 0, err
    assert built(machine) == ["3.14.7-pgo:release", "3.14.7t:lineage"]
    assert provision.main(["--list", "--recipe", "release"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line for line in listed if "3.14.7-pgo" in line] == [
        "3.14: 3.14.7-pgo is here already (the PGO+LTO twin of 3.14.7, in the cache: "
        "3.14.7-pgo)"], listed


@pytest.mark.slow
def test_real_builds_in_the_cache_read_as_their_recipes(monkeypatch):
    """The machine's own provisioned builds (read only, never written): each reads as the
    recipe its directory names, and a twin's kind is what its name says. Skipped where
    `nox -s provision` has built nothing."""
    monkeypatch.delenv("IOMATRIX_CACHE", raising=False)
    builds = build_cache.list_builds()
    if not builds:
        pytest.skip("no provisioned build in the iomatrix cache")
    from iomatrix.interpreters import build_stages
    for build in builds:
        prefix = Path(build["prefix"])
        recipe = build_cache.RECIPES[build["recipe"]]
        build_stages.check_existing(prefix, recipe, bool(build.get("free_threaded")))
        assert prefix.name.endswith("t" + recipe.suffix) == bool(build.get("free_threaded"))
