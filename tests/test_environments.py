"""The per-interpreter environments (iomatrix.interpreters.environments): made once, reused on
the evidence of the marker and pyperf's package file, remade when that file is gone.

Real interpreters and real installs (uv from PyPI's configured index, as the main command makes
them), in the test's own environments directory."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from iomatrix.interpreters import environments


@pytest.fixture
def interp(machine_interpreters):
    found = next((i for i in machine_interpreters.values()
                  if i.ok and i.version_info[:2] >= (3, 9) and i.source == "pyenv"), None)
    if found is None:
        pytest.skip("no pyenv CPython 3.9+ here")
    return found


def spawned(monkeypatch) -> list:
    """The commands the environments module starts from here on."""
    calls = []
    real = environments.procs.run

    def recording(cmd, *args, **kwargs):
        calls.append(cmd)
        return real(cmd, *args, **kwargs)
    monkeypatch.setattr(environments.procs, "run", recording)
    return calls


def test_a_made_environment_is_reused_without_starting_its_python(tmp_path, interp, monkeypatch):
    envs = tmp_path / "envs"
    env = environments.ensure_environment(interp, envs, log=lambda *a: None)
    marker = json.loads((envs / interp.label / environments.MARKER).read_text())
    assert Path(marker["pyperf_file"]).is_file()
    assert str(envs / interp.label) in os.path.realpath(marker["pyperf_file"])
    calls = spawned(monkeypatch)
    again = environments.ensure_environment(interp, envs, log=lambda *a: None)
    assert again.python == env.python and calls == []


def test_an_environment_whose_pyperf_is_gone_is_remade(tmp_path, interp):
    envs, said = tmp_path / "envs", []
    environments.ensure_environment(interp, envs, log=said.append)
    marker_path = envs / interp.label / environments.MARKER
    package = Path(json.loads(marker_path.read_text())["pyperf_file"]).parent
    for path in package.iterdir():
        if path.is_file():
            path.unlink()
    env = environments.ensure_environment(interp, envs, log=said.append)
    assert any("is stale; remaking it" in line for line in said)
    assert subprocess.run([env.python, "-c", "import pyperf"]).returncode == 0
    assert Path(json.loads(marker_path.read_text())["pyperf_file"]).is_file()


@pytest.mark.parametrize("recorded", [None, "/etc/hostname", 42])
def test_a_marker_without_its_own_pyperf_file_is_checked_by_importing(tmp_path, interp,
                                                                      monkeypatch, recorded):
    # An older marker (no file), or one naming a file outside its environment or not a path:
    # never trusted as it is; pyperf is imported, and the marker gets the file it imports from.
    envs = tmp_path / "envs"
    environments.ensure_environment(interp, envs, log=lambda *a: None)
    marker_path = envs / interp.label / environments.MARKER
    marker = json.loads(marker_path.read_text())
    real_file = marker.pop("pyperf_file")
    if recorded is not None:
        marker["pyperf_file"] = recorded
    marker_path.write_text(json.dumps(marker))
    calls = spawned(monkeypatch)
    environments.ensure_environment(interp, envs, log=lambda *a: None)
    assert len(calls) == 1 and "import pyperf" in calls[0][-1]
    assert json.loads(marker_path.read_text())["pyperf_file"] == real_file
