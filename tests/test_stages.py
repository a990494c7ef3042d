"""Where the main command's time goes, and what was cut (docs/experiments/2026-11-27-main-speed.md):
each session's stages in the manifest, the extra rounds' part means read once, the A/A twin
counted after its original, uv found beside nox, a tarball's C files read in one pass."""
from __future__ import annotations

import dataclasses
import json
import stat
import sys
import threading

import pytest

from iomatrix.analysing import csource
from iomatrix.interpreters import environments, sources
from iomatrix.measuring import counters, runner, sampling, stages
from iomatrix.storing import schema, store
from iomatrix.storing.profiles import PROFILES
from conftest import need
from test_evidence import NEW_C, OLD_C, make_tarball
from test_sampling import plans_with_rounds


def test_a_stage_adds_up_its_blocks_and_the_table_keeps_their_order():
    timer = stages.Stages()
    with timer.timed("planned_rounds"):
        pass
    with pytest.raises(KeyError):   # a stage that raises is still timed
        with timer.timed("counting"):
            raise KeyError("x")
    with timer.timed("planned_rounds"):
        pass
    assert list(timer.seconds) == ["planned_rounds", "counting"]
    assert all(seconds >= 0 for seconds in timer.seconds.values())
    lines = stages.table({"fixtures": 1.5, "counting": 30.0}, {"report": 12.25},
                         total=43.75).splitlines()
    assert [line.split()[0] for line in lines] == ["fixtures", "counting", "report", "total"]
    assert lines[-1].split()[1:] == ["43.8", "s"]


def test_the_schema_knows_every_stage():
    assert schema.STAGE_NAMES == stages.SESSION_STAGES


def test_a_run_records_its_stages_in_its_manifest(tmp_path, machine_interpreters):
    profile = dataclasses.replace(PROFILES["smoke"], rounds=1, max_rounds=2, budget_seconds=0,
                                  extra_seconds=600)
    runner.run_matrix([need(machine_interpreters, "2.7")], suites=["lutz2009"], profile=profile,
                      results_dir=tmp_path, run_id="S", work_dir=tmp_path, target=1e-9,
                      log=lambda *a: None)
    manifest = store.Run(tmp_path, "S").read_manifest()   # checked against the schema
    recorded = manifest["sessions"][-1]["stages"]
    assert set(recorded) == set(stages.SESSION_STAGES)   # stored with its keys sorted
    assert recorded["planned_rounds"] > 0 and recorded["extra_rounds"] > 0
    table = stages.main_command_table(tmp_path, "S", 0.5, sum(recorded.values()) + 1.0,
                                      {"changelog": 2.0, "report": 9.0}, 99.0)
    names = [line.split()[0] for line in table.splitlines()]
    assert names == ["discovery", *stages.SESSION_STAGES, "matrix_other", "changelog",
                     "report", "total"]
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text("{ damaged")
    assert "cannot be read" in stages.main_command_table(tmp_path, "bad", 0, 0, {}, 0)


def test_a_manifest_with_an_unknown_stage_is_refused(tmp_path):
    with pytest.raises(schema.SchemaError):
        schema.check("manifest", {"iomatrix_manifest_version": 1, "run_id": "R",
                                  "sessions": [{"stages": {"lunch": 3.0}}]})


def test_the_extra_rounds_read_a_part_once_and_again_when_it_changed(tmp_path, monkeypatch):
    run = store.Run(tmp_path, "B")
    plans_with_rounds(run, {"3.12": {"op": [1.0] * 6}})
    reads = []
    real = store.read_part
    monkeypatch.setattr(store, "read_part", lambda *a: reads.append(a[2]) or real(*a))
    first = sampling.process_means(run, "3.12")
    assert first == {"op": {r: 1.0 for r in range(6)}} and len(reads) == 6
    assert sampling.process_means(run, "3.12") == first and len(reads) == 6   # cached
    part = run.part_file("3.12", "lutz2009", 2)
    document = json.loads(part.read_text())
    document["benchmarks"][0]["runs"][0]["values"] = [2.5]
    part.write_text(json.dumps(document, indent=1))   # another size: read again
    assert sampling.process_means(run, "3.12")["op"][2] == 2.5 and len(reads) == 7
    part.write_text("not json")   # an unreadable part adds no evidence
    assert 2 not in sampling.process_means(run, "3.12")["op"]


def test_the_aa_twin_is_counted_after_its_original(tmp_path):
    """counted_plans keeps the plans' order; the counting pass starts the twin's original
    first and the twin once the original is done (its non-sampled ops are then cache hits),
    ahead of the series still waiting."""
    run = store.Run(tmp_path, "C")
    plans = plans_with_rounds(run, {"3.11": {"op": [1.0] * 6}, "3.12": {"op": [1.0] * 6},
                                    "3.13-aa": {"op": [1.0] * 6}, "3.13": {"op": [1.0] * 6}},
                              twins={"3.13-aa": "3.13"})
    spec = runner.RunSpec.create(suites=["lutz2009"], profile=PROFILES["smoke"],
                                 results_dir=tmp_path, run_id="C")
    assert list(runner.counted_plans(run, plans, spec)) == ["3.11", "3.12", "3.13-aa", "3.13"]
    manifest = {"interpreters": {"3.13-aa": {"aa_of": "3.13"}}}
    all_series = counters.series_of_plans(run, plans, manifest)
    events, lock = [], threading.Lock()

    def one(slot, series):
        with lock:
            events.append(("start", series.series, slot))
        with lock:
            events.append(("end", series.series, slot))
        return {"status": "ok"}
    done = list(counters._schedule(all_series, one, threading.Event()))
    assert sorted(name for name, _ in done) == ["3.11", "3.12", "3.13", "3.13-aa"]
    starts = [name for kind, name, _ in events if kind == "start"]
    assert starts[0] == "3.13"
    assert events.index(("end", "3.13", 3)) < events.index(("start", "3.13-aa", 2))
    # the twin goes ahead of what still waits, once its original is done
    assert starts.index("3.13-aa") <= counters.JOBS
    assert sorted(slot for kind, _, slot in events if kind == "start") == [0, 1, 2, 3]


def test_uv_is_found_beside_the_python_running_nox(tmp_path, monkeypatch):
    monkeypatch.setattr(environments.shutil, "which", lambda name: None)
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    monkeypatch.setattr(sys, "executable", str(python))
    assert environments.find_uv() is None   # none there
    uv = python.with_name("uv")
    uv.write_text("#!/bin/sh\n")
    assert environments.find_uv() is None   # not executable
    uv.chmod(uv.stat().st_mode | stat.S_IXUSR)
    assert environments.find_uv() == str(uv)


def test_a_tarballs_c_files_are_read_in_one_pass(tmp_path, monkeypatch):
    tarball = make_tarball(tmp_path / "Python-3.12.9.tar.xz", "Python-3.12.9",
                           {"Modules/_io/bufferedio.c": OLD_C, "Modules/_io/fileio.c": NEW_C,
                            "README.rst": "text"})
    passes = []
    real = sources.read_members
    monkeypatch.setattr(sources, "read_members", lambda *a: passes.append(a) or real(*a))
    csource.member_text.cache_clear()
    csource._c_files.cache_clear()
    assert csource.member_text(str(tarball), "Modules/_io/bufferedio.c") == OLD_C
    assert csource.member_text(str(tarball), "Modules/_io/fileio.c") == NEW_C
    assert csource.member_text(str(tarball), "Modules/_io/textio.c") is None
    assert len(passes) == 1
    assert csource.member_text(str(tarball), "README.rst") == "text"   # not C: read alone
    assert len(passes) == 1
    csource.member_text.cache_clear()
    csource._c_files.cache_clear()


def test_the_one_pass_keeps_the_bounds(tmp_path, monkeypatch):
    tarball = make_tarball(tmp_path / "Python-3.12.8.tar.xz", "Python-3.12.8",
                           {"a.c": "x" * 100, "b.c": "y" * 10, "c.c": "z" * 10})
    found = sources.read_members(tarball, lambda name: name.endswith(".c"), 50, 15)
    assert found == {"Python-3.12.8/b.c": b"y" * 10}   # a.c over the limit, c.c over keep
    monkeypatch.setattr(sources, "MAX_MEMBERS", 2)
    with pytest.raises(sources.TarLimit):
        sources.read_members(tarball, lambda name: True, 50, 1000)
