"""Release day: NEW against OLD with an A/A twin, as a comment with the gate's exit code."""
from __future__ import annotations

import json
import shutil

import pytest

from iomatrix import cli
from iomatrix.commands import release
from iomatrix.interpreters import discovery, environments
from conftest import need, run_nox


def tree(directory):
    return sorted(p.relative_to(directory) for p in directory.rglob("*"))


@pytest.mark.parametrize("posargs, message", [
    (["bogus"], "unknown interpreter 'bogus'"),
    (["3.12", "--against", "nope"], "unknown interpreter 'nope' for --against"),
    (["2.7"], "no earlier 2.7 release built by 2.7's recipe"),
    (["3.12", "--fail-above", "nan"], "--fail-above"),
    (["3.12", "--run-id", "x\n"], "run id"),
])
def test_bad_input_is_exit_2_and_writes_nothing(tmp_path, capsys, posargs, message,
                                                machine_interpreters):
    need(machine_interpreters, "2.7")
    results = tmp_path / "results"
    try:
        status = release.main([*posargs, "--results-dir", str(results)], log=lambda *a: None)
    except SystemExit as exc:  # argparse's exit for a bad option value
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert tree(tmp_path) == []


def test_a_version_that_cannot_be_built_is_exit_2_with_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(release, "provision", _refuse_to_build)
    status = release.main(["3.99.1", "--results-dir", str(tmp_path / "results")],
                          log=lambda *a: None)
    assert status == 2
    err = capsys.readouterr().err
    assert "cannot build 3.99.1 here" in err and "nox -s provision -- 3.99.1" in err
    assert not (tmp_path / "results").exists()


def _refuse_to_build(version, debian_source, log, recipe="lineage"):
    raise release.ReleaseError(f"cannot build {version} here (provisioning exited 1); build it "
                               f"with `nox -s provision -- {version}` or declare an interpreter "
                               "in iomatrix.toml, then rerun")


def interp(label, version, source="pyenv", free_threaded=False, recipe="shared-O3"):
    """An interpreter as discovery describes it, with its build recipe."""
    info = {"implementation": "cpython", "version": version, "free_threaded": free_threaded,
            "version_info": [int(x) for x in version.split("rc")[0].split(".")[:3]],
            "recipe": recipe}
    return discovery.Interpreter(label, f"/x/{label}", source, info)


def test_old_defaults_to_the_previous_release_of_the_minor_version():
    here = [interp("3.13", "3.13.0"), interp("3.13.9", "3.13.9"), interp("3.13.15", "3.13.15"),
            interp("3.13t", "3.13.0", free_threaded=True), interp("3.14", "3.14.7"),
            interp("3.13-debian", "3.13.12", source="debian", recipe="debian-O2")]
    assert release.default_old(here, release.find(here, "3.13.15")).label == "3.13.9"
    assert release.find(here, "3.13.15").label == "3.13.15"
    # a newer release is no base: 3.13.9's previous release here is 3.13.0
    assert release.default_old(here, release.find(here, "3.13.9")).label == "3.13"
    with pytest.raises(release.ReleaseError, match="no earlier 3.13 release"):
        release.default_old(here, release.find(here, "3.13t"))


def test_old_is_built_by_news_recipe():
    here = [interp("3.13", "3.13.0"), interp("3.13.14", "3.13.14", "provisioned",
                                             recipe="static-O3"),
            interp("3.13.15", "3.13.15", "provisioned")]
    new = release.find(here, "3.13.15")
    assert release.default_old(here, new).label == "3.13"  # not the static 3.13.14
    only_static = [i for i in here if i.label != "3.13"]
    with pytest.raises(release.ReleaseError, match=r"built by 3.13.15's recipe \(shared-O3\).*"
                       r"other recipes are not compared by default: 3.13.14 \(static-O3\).*"
                       r"build 3.13.14"):
        release.default_old(only_static, new)


def test_the_previous_patch_release_is_built_when_it_can_be():
    here = [interp("3.13", "3.13.0"), interp("3.13.15", "3.13.15", "provisioned")]
    asked = []

    def build(version):  # what provisioning and discovery would give back
        asked.append(version)
        return here + [interp("3.13.14", "3.13.14", "provisioned")]
    found = list(here)
    assert release.default_old(found, release.find(here, "3.13.15"), build).label == "3.13.14"
    assert asked == ["3.13.14"] and "3.13.14" in [i.label for i in found]
    # Not buildable: the newest older release of the recipe here.
    assert release.default_old(list(here), release.find(here, "3.13.15"),
                               lambda version: None).label == "3.13"


@pytest.mark.parametrize("version, previous", [
    ("3.13.15", "3.13.14"), ("3.14.7t", "3.14.6t"), ("3.15.0rc2", "3.15.0rc1"),
    ("3.15.0rc1", None), ("3.14.0", None), ("3.15.0b3", "3.15.0b2"),
])
def test_previous_release(version, previous):
    assert release.previous_release(version) == previous


def test_a_base_of_another_recipe_is_refused_unless_allowed(tmp_path):
    here = [interp("3.13", "3.13.0"), interp("3.13.15-pgo", "3.13.15", "provisioned",
                                             recipe="static-O3-pgo-lto")]
    args = release.parser().parse_args(["3.13.15-pgo", "--against", "3.13"])
    with pytest.raises(release.ReleaseError, match=(
            r"3.13 is built shared-O3 and 3.13.15-pgo static-O3-pgo-lto.*"
            r"nox -s provision -- 3.13.0 --recipe release\) or give --allow-recipe-change")):
        release.resolve(args, here, log=lambda *a: None)
    args = release.parser().parse_args(["3.13.15-pgo", "--against", "3.13",
                                        "--allow-recipe-change"])
    _, new, old = release.resolve(args, here, log=lambda *a: None)
    assert (new.label, old.label) == ("3.13.15-pgo", "3.13")
    manifest = {"host": "vm", "cpu": "AMD EPYC", "cpu_count": 2, "os": "Linux 6.1",
                "interpreters": {"3.13": {**old.info, "shared": True, "linkage": "shared",
                                          "opt": "-O3"},
                                 "3.13.15-pgo": {**new.info, "shared": False, "linkage": "static",
                                                 "pgo": True,
                                                 "configure_args": "'--prefix=/p' "
                                                 "'--enable-optimizations' '--with-lto'"}}}
    lines = release.context_lines(args, manifest, new, old)
    assert lines[0].startswith("> **The builds differ: shared-O3 → static-O3-pgo-lto**")
    text = "\n".join(lines)
    assert "| recipe | shared-O3 | static-O3-pgo-lto |" in text
    assert "| libpython | shared | static |" in text
    assert "| PGO | unknown | yes |" in text
    assert "| configure | — | `--enable-optimizations --with-lto` |" in text
    assert "Machine: vm, AMD EPYC, 2 CPUs, Linux 6.1." in text
    assert "iomatrix commit: " in text and "unknown" not in text.split("commit: ")[1][:12]
    assert ("Reproduce: `nox -s release -- 3.13.15-pgo --against 3.13 --profile quick --suite "
            in text and "--allow-recipe-change`" in text)


def test_a_release_check_runs_both_with_an_aa_twin_and_writes_the_comment(tmp_path,
                                                                         machine_interpreters):
    need(machine_interpreters, "3.11")
    need(machine_interpreters, "3.11-debian")
    results = tmp_path / "results"
    status = release.main(["3.11", "--against", "3.11-debian", "--profile", "smoke",
                           "--suite", "lutz2009",   # the comment's form, not every suite
                           "--results-dir", str(results), "--run-id", "R",
                           "--allow-recipe-change"], log=lambda *a: None)
    assert status in (0, 1)
    run_dir = results / "R"
    assert {"3.11.json", "3.11-debian.json", "3.11-debian-aa.json"} <= {
        p.name for p in run_dir.iterdir()}
    comment = (run_dir / "release.md").read_text()
    assert comment.startswith("## Release check: `3.11`")
    assert f"(exit {status})" in comment and "A/A check" in comment
    # Pyenv's 3.11 against Debian's: the recipe change comes first, then both builds.
    assert "> **The builds differ: debian-O2 → shared-O3**" in comment.split("| build |")[0]
    assert "| recipe | debian-O2 | shared-O3 |" in comment
    assert "Reproduce: `nox -s release -- 3.11 --against 3.11-debian" in comment
    assert len(comment) <= 65536


def test_the_release_session_exits_with_the_gates_code(tmp_path, machine_interpreters):
    need(machine_interpreters, "2.7")
    done = run_nox("-s", "release", "--", "2.7", "--results-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no earlier 2.7 release" in done.stderr + done.stdout


# Slow (a second real release check, 15-40 s): the default base's choice is tested above on
# described interpreters (test_old_*, test_the_previous_patch_release_is_built_*), and a real
# release check runs in the default suite (test_a_release_check_runs_both_with_an_aa_twin_*).
@pytest.mark.slow
def test_release_day_compares_with_the_previous_patch_release_of_the_same_recipe(
        tmp_path, machine_interpreters):
    """On a machine with the lineage builds of 3.13.14 and 3.13.15 (nox -s provision --
    3.13.14 3.13.15) beside pyenv's 3.13.0: the base is 3.13.14, not 3.13.0."""
    new = need(machine_interpreters, "3.13.15")
    need(machine_interpreters, "3.13.14")
    results = tmp_path / "results"
    status = release.main(["3.13.15", "--profile", "smoke", "--suite", "lutz2009",
                           "--results-dir", str(results), "--run-id", "R"], log=lambda *a: None)
    assert status in (0, 1)
    comment = (results / "R" / "release.md").read_text()
    assert comment.startswith("## Release check: `3.13.15` (3.13.15) against `3.13.14` (3.13.14)")
    assert f"| recipe | {new.recipe} | {new.recipe} |" in comment
    assert "The builds differ" not in comment


def test_a_release_comment_is_named_by_the_release_where_the_label_is_only_the_minor():
    # discovery gives "3.14" to the newest 3.14 build: two release days of 3.14 (3.14.6, then
    # 3.14.7) must not write the same comment file or run id.
    from iomatrix.commands.release import release_name
    from iomatrix.interpreters.discovery import Interpreter
    newest = Interpreter("3.14", "/x/3.14.7/bin/python3", "cache", {"version": "3.14.7"})
    older = Interpreter("3.14.6", "/x/3.14.6/bin/python3", "cache", {"version": "3.14.6"})
    pgo = Interpreter("3.13.15-pgo", "/x/pgo/bin/python3", "cache", {"version": "3.13.15"})
    free = Interpreter("3.14t", "/x/t/bin/python3", "cache", {"version": "3.14.7", "free_threaded": True})
    unknown = Interpreter("3.14", "/x/bin/python3", "cache", {})
    assert [release_name(i) for i in (newest, older, pgo, free, unknown)] == \
        ["3.14.7", "3.14.6", "3.13.15-pgo", "3.14t", "3.14"]


def test_a_side_that_does_not_complete_is_exit_3_and_its_run_is_kept(tmp_path, monkeypatch,
                                                                     capsys,
                                                                     machine_interpreters):
    """NEW's every worker crashes: the run is made and kept, the manifest says why, and the
    exit is 3, the tool's own failure as the matrix's, not 2 (bad input: nothing written)."""
    real = need(machine_interpreters, "2.7")
    wrapper = tmp_path / "bin" / "python"
    wrapper.parent.mkdir()
    # 2.7 itself but for the timing workers (what its probe, listing and metadata run works)
    wrapper.write_text(f'#!/bin/sh\ncase "$*" in *--batch*) kill -SEGV $$ ;; esac\n'
                       f'exec {real.executable} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("IOMATRIX_PYTHONS", f"crashy={wrapper}")
    # Its environment is 2.7's with the wrapper as its python (written here, as a made one is
    # marked: making one would install pyperf with 2.7's pip, seconds for nothing).
    env = environments.ensure_environment(real, log=lambda *a: None)
    own = environments.ENVS_DIR / "crashy"
    shutil.rmtree(own, ignore_errors=True)
    own.mkdir(parents=True)
    try:
        (own / environments.MARKER).write_text(json.dumps({
            "executable": str(wrapper), "version": real.version,
            "pyperf": environments.pyperf_pin(real.version_info), "python": str(wrapper),
            "pythonpath": env.pythonpath}))
        status = release.main(["crashy", "--against", "2.7", "--profile", "smoke", "--suite",
                               "lutz2009", "--results-dir", str(tmp_path / "results"),
                               "--run-id", "R", "--allow-recipe-change"], log=lambda *a: None)
    finally:
        shutil.rmtree(own, ignore_errors=True)
    err = capsys.readouterr().err
    assert status == cli.EXIT_INTERNAL_ERROR, err
    assert "release: error: not complete: crashy (failed)" in err
    manifest = json.loads((tmp_path / "results" / "R" / "manifest.json").read_text())
    assert manifest["interpreters"]["crashy"]["status"] == "failed"
    assert manifest["interpreters"]["2.7"]["status"] == "ok"
