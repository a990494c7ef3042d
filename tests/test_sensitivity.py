"""scripts/iomatrix/commands/sensitivity.py: the slowed copy of an interpreter is built as described.

No timing is asserted: only that the copy runs as itself, slows nothing but iteration over
the lines of lutz2009's text fixture, and still reads every line.
"""
from __future__ import annotations

import subprocess

import pytest

from conftest import need
from iomatrix import cli
from iomatrix.commands import sensitivity

PROBE = r"""
import os, sys
d = sys.argv[1]
for name in ("large.txt", "other.txt"):
    with open(os.path.join(d, name), "w") as f:
        f.write("a line\n" * 1000)
fixture = open(os.path.join(d, "large.txt"))
other = open(os.path.join(d, "other.txt"))
binary = open(os.path.join(d, "large.txt"), "rb")
print(type(fixture).__name__, type(other).__name__, type(binary).__name__)
with fixture as f:
    print(sum(len(line) for line in f))
with open(os.path.join(d, "large.txt")) as f:
    print(len(f.read()))
"""


def test_the_copy_wraps_only_the_text_fixture(machine_interpreters, tmp_path):
    base = need(machine_interpreters, "3.13")
    executable = sensitivity.build(base.executable, tmp_path / "slow", fraction=0.06)
    assert executable.parent == tmp_path / "slow" / "bin"
    out = subprocess.run([str(executable), "-c", PROBE, str(tmp_path)], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["_SlowLineIteration", "TextIOWrapper", "BufferedReader", "7000", "7000"]
    # a venv of the copy (what the matrix makes) keeps the sitecustomize
    subprocess.run([str(executable), "-m", "venv", "--without-pip", str(tmp_path / "venv")],
                   check=True)
    out = subprocess.run([str(tmp_path / "venv" / "bin" / "python"), "-c", PROBE, str(tmp_path)],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "_SlowLineIteration"
    # the copy can be rebuilt in place
    assert sensitivity.build(base.executable, tmp_path / "slow", fraction=0.07) == executable
    assert "0.07" in next((tmp_path / "slow" / "lib").iterdir()).joinpath(
        "sitecustomize.py").read_text()


def test_a_dest_that_is_not_a_copy_is_refused_and_kept(machine_interpreters, tmp_path):
    base = need(machine_interpreters, "3.13")
    precious = tmp_path / "home"
    precious.mkdir()
    (precious / "notes.txt").write_text("mine")
    with pytest.raises(cli.BadInput, match="not a sensitivity copy"):
        sensitivity.build(base.executable, precious, fraction=0.06)
    assert [p.name for p in precious.iterdir()] == ["notes.txt"]


def test_the_paired_probe_reads_every_line_with_both_opens(machine_interpreters, tmp_path):
    base = need(machine_interpreters, "3.13")
    executable = sensitivity.build(base.executable, tmp_path / "slow", fraction=0.06)
    copy = sensitivity.discovery.Interpreter("3.13-slow", str(executable), "declared",
                                             sensitivity.discovery.probe(str(executable)))
    # Timing is not asserted: only that the probe runs both sides to the end (it exits with
    # an error when a side reads a different number of characters) and gives a number.
    slowdown = sensitivity.measure_paired(copy, processes=1, pairs=2)
    assert isinstance(slowdown, float) and slowdown > -1
