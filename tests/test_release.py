"""Release day: NEW against OLD with an A/A twin, as a comment with the gate's exit code."""
from __future__ import annotations

import pytest

from iomatrix import discovery, release
from conftest import need, run_nox


def tree(directory):
    return sorted(p.relative_to(directory) for p in directory.rglob("*"))


@pytest.mark.parametrize("posargs, message", [
    (["bogus"], "unknown interpreter 'bogus'"),
    (["3.12", "--against", "nope"], "unknown interpreter 'nope' for --against"),
    (["2.7"], "no other 2.7 release here"),
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


def _refuse_to_build(version, debian_source, log):
    raise release.ReleaseError(f"cannot build {version} here (provisioning exited 1); build it "
                               f"with `nox -s provision -- {version}` or declare an interpreter "
                               "in iomatrix.toml, then rerun")


def test_old_defaults_to_the_newest_other_release_of_the_minor_version():
    def interp(label, version, source="pyenv", free_threaded=False):
        info = {"implementation": "cpython", "version": version, "free_threaded": free_threaded,
                "version_info": [int(x) for x in version.split(".")[:3]]}
        return discovery.Interpreter(label, f"/x/{label}", source, info)
    here = [interp("3.13", "3.13.0"), interp("3.13.9", "3.13.9"), interp("3.13.15", "3.13.15"),
            interp("3.13t", "3.13.0", free_threaded=True), interp("3.14", "3.14.7"),
            interp("3.13-debian", "3.13.12", source="debian")]
    assert release.default_old(here, release.find(here, "3.13.15")).label == "3.13.9"
    assert release.find(here, "3.13.15").label == "3.13.15"
    with pytest.raises(release.ReleaseError, match="no other 3.13 release"):
        release.default_old(here, release.find(here, "3.13t"))


def test_a_release_check_runs_both_with_an_aa_twin_and_writes_the_comment(tmp_path,
                                                                         machine_interpreters):
    need(machine_interpreters, "3.11")
    need(machine_interpreters, "3.11-debian")
    results = tmp_path / "results"
    status = release.main(["3.11", "--against", "3.11-debian", "--profile", "smoke",
                           "--results-dir", str(results), "--run-id", "R"], log=lambda *a: None)
    assert status in (0, 1)
    run_dir = results / "R"
    assert {"3.11.json", "3.11-debian.json", "3.11-debian-aa.json"} <= {
        p.name for p in run_dir.iterdir()}
    comment = (run_dir / "release.md").read_text()
    assert comment.startswith("## Release check: `3.11`")
    assert f"(exit {status})" in comment and "A/A check" in comment
    assert len(comment) <= 65536


def test_the_release_session_exits_with_the_gates_code(tmp_path, machine_interpreters):
    need(machine_interpreters, "2.7")
    done = run_nox("-s", "release", "--", "2.7", "--results-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no other 2.7 release here" in done.stderr + done.stdout
