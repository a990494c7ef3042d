"""The counts cache (iomatrix/measuring/countcache.py): real strace counts of a real 3.13,
taken from the cache in a later run, never when their key changed, counted again when an
entry is damaged."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import need
from iomatrix.measuring import countcache, counters, counttools, runner
from iomatrix.storing import store

WHOLE_TEXT = "read_allAtOnce_textMode"
CONDITIONS = runner.Conditions()

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")


@pytest.fixture(scope="module")
def fixtures(lutz_count_fixtures):
    return lutz_count_fixtures


def count(directory, interp, fixtures, cache, run_id, label=None, aa_of=None, ops=(WHOLE_TEXT,)):
    """count_series of the syscalls of ``ops`` (lutz2009's; WHOLE_TEXT among them) into a run
    and work dir of their own: (entry, the run's entry of WHOLE_TEXT, the strace passes that
    ran, the log)."""
    run = store.Run(directory / "results", run_id)
    run.make_directory()
    info = dict(interp.as_manifest(), aa_of=aa_of)
    series = counters.Series(label or interp.label, info, "c", [("lutz2009", op) for op in ops])
    work, lines = directory / f"work-{run_id}", []
    which = ("syscalls",)
    entry = counters.count_series(run, series, which, counttools.tool_problems(which, work),
                                  fixtures, work, "smoke", CONDITIONS, 120.0,
                                  counttools.methods(which), log=lines.append, cache=cache)
    op = json.loads(run.counters_file(series.series).read_text())["ops"][WHOLE_TEXT]
    passes = sorted(p.name for p in (work / "s0000").glob(f"{counters.ALL_SUITES}-strace-*"))
    return entry, op, passes, lines


def entries(root):
    return sorted(root.rglob("*.json"))


def test_a_count_is_taken_from_the_cache_in_a_later_run(tmp_path, machine_interpreters,
                                                        fixtures):
    interp = need(machine_interpreters, "3.13")
    cache = countcache.CountsCache(tmp_path / "counts")
    first, counted, passes, _ = count(tmp_path, interp, fixtures, cache, "R1")
    assert first["status"] == "ok" and "from_cache" not in first and passes
    assert len(entries(tmp_path / "counts")) == 1
    assert counted["syscalls"]["openat"] >= 1

    # A later run (another cache object, as another process would have): no strace ran.
    again, taken, passes, _ = count(tmp_path, interp, fixtures,
                                    countcache.CountsCache(tmp_path / "counts"), "R2")
    assert again["from_cache"] == {"syscalls": [WHOLE_TEXT]} and passes == []
    assert {k: taken[k] for k in ("syscalls", "syscall_bytes", "bytes_per_call")} == {
        k: counted[k] for k in ("syscalls", "syscall_bytes", "bytes_per_call")}

    # The A/A twin counting every op (--aa-recount all: no sample given) reads no count.
    twin, _, passes, _ = count(tmp_path, interp, fixtures, cache, "R3", label="3.13-aa",
                               aa_of="3.13")
    assert "from_cache" not in twin and passes


def test_a_damaged_entry_is_named_counted_again_and_replaced(tmp_path, machine_interpreters,
                                                             fixtures):
    interp = need(machine_interpreters, "3.13")
    cache = countcache.CountsCache(tmp_path / "counts")
    _, counted, _, _ = count(tmp_path, interp, fixtures, cache, "R1")
    [entry] = entries(tmp_path / "counts")
    good = json.loads(entry.read_text())
    for damage in ('{"iomatrix_counts_cache_version": 1, "key": {"cut', 
                   json.dumps({**good, "value": {"syscalls": {"read": -1}, "syscall_bytes": {}}})):
        entry.write_text(damage)
        again, recounted, passes, lines = count(tmp_path, interp, fixtures, cache,
                                                f"R{len(damage)}")
        assert "from_cache" not in again and passes
        [line] = [line for line in lines if "counts cache" in line]
        assert f"{entry.name} is damaged" in line and line.endswith("counted again")
        assert recounted["syscalls"] == counted["syscalls"]
        assert json.loads(entry.read_text()) == good      # replaced by the new count
    assert [p.name for p in entry.parent.iterdir()] == [entry.name]   # no temporary left


def test_an_edited_suite_or_another_binary_is_never_taken_from_the_cache(
        tmp_path, machine_interpreters, fixtures, monkeypatch):
    interp = need(machine_interpreters, "3.13")
    cache = countcache.CountsCache(tmp_path / "counts")
    count(tmp_path, interp, fixtures, cache, "R1")
    # The suite edited (a copy of suites/ with one more line in lutz2009.py): a new key.
    edited = tmp_path / "suites"
    shutil.copytree(countcache.SUITES_DIR, edited,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(edited / "lutz2009.py", "a") as f:
        f.write("# edited\n")
    monkeypatch.setattr(countcache, "SUITES_DIR", edited)
    again, _, passes, _ = count(tmp_path, interp, fixtures,
                                countcache.CountsCache(tmp_path / "counts"), "R2")
    assert "from_cache" not in again and passes
    assert len(entries(tmp_path / "counts")) == 2      # the first one stays, unused

    # Another interpreter binary (2.7) has keys of its own.
    key = dict(profile="smoke", io_stack="c", output="new", allocator="default", calls=1,
               worker_ops=[("lutz2009", WHOLE_TEXT)])
    old = need(machine_interpreters, "2.7")
    assert cache.key("syscalls", "m", interp.executable, "lutz2009", WHOLE_TEXT, **key) != \
        cache.key("syscalls", "m", old.executable, "lutz2009", WHOLE_TEXT, **key)


def test_the_key_holds_the_binary_and_its_libpython(machine_interpreters):
    """pyenv's builds are --enable-shared: libpython is hashed with the executable."""
    interp = need(machine_interpreters, "3.13")
    found = countcache.interpreter_hash(interp.executable)
    assert len(found["binary"]) == 64
    if interp.info.get("linkage") == "shared" or interp.info.get("shared"):
        assert any(name.startswith("libpython3.13") for name in found["libraries"])
    assert any(name.startswith("libc.so") for name in found["libraries"])


def test_entries_that_are_not_counts_are_refused():
    assert countcache.valid_value("syscalls", {"syscalls": {"read": 3}, "syscall_bytes": {}})
    assert not countcache.valid_value("syscalls", {"syscalls": {"read": 3.5},
                                                   "syscall_bytes": {}})
    assert not countcache.valid_value("syscalls", {"syscalls": {}})
    assert countcache.valid_value("instructions", {"instructions": 12, "cache": {},
                                                   "functions": []})
    assert not countcache.valid_value("instructions", {"instructions": 2 ** 63})
    assert not countcache.valid_value("rusage", {"minflt": 0})


def test_the_main_commands_manifest_says_which_counts_came_from_the_cache(
        tmp_path, machine_interpreters, smoke_313):
    """Two resumes of copies of the shared smoke run with syscalls counted (run_matrix, as the
    matrix runs it), in the test's own IOMATRIX_CACHE (conftest): the second counts nothing."""
    from conftest import copy_of_smoke
    from iomatrix.measuring.spec import RunSpec
    interp = need(machine_interpreters, "3.13")
    manifests = []
    for name in ("first", "second"):
        copy_of_smoke(smoke_313, tmp_path / name)
        spec = RunSpec.create(suites="lutz2009", profile="smoke", run_id="S",
                              results_dir=tmp_path / name / "results", work_dir=tmp_path / name,
                              counting=("syscalls",))
        manifests.append(runner.run_matrix([interp], spec, log=lambda *a: None))
    first, second = (m["interpreters"]["3.13"]["counters"] for m in manifests)
    assert first["status"] == second["status"] == "ok"
    assert "from_cache" not in first and manifests[0]["counters"]["from_cache"] == 0
    ops = json.loads((tmp_path / "second" / "results" / "S" / "3.13.counters.json")
                     .read_text())["ops"]
    assert sorted(second["from_cache"]["syscalls"]) == sorted(ops)
    assert manifests[1]["counters"]["from_cache"] == len(ops)
    # what the manifest says is what the run's manifest file holds
    written = json.loads((tmp_path / "second" / "results" / "S" / "manifest.json").read_text())
    assert written["interpreters"]["3.13"]["counters"]["from_cache"] == second["from_cache"]


def test_a_count_is_the_caches_only_for_a_worker_of_the_same_ops(tmp_path, machine_interpreters,
                                                                 fixtures):
    """An op's counts depend on the ops its worker ran before it: a worker of other ops
    (another selection, a resumed run) never takes them, and one that misses some of its
    ops in the cache counts all of them again, in one worker."""
    interp = need(machine_interpreters, "3.13")
    both = ("read_allAtOnce_binaryMode", WHOLE_TEXT)
    root = tmp_path / "counts"
    first, _, passes, _ = count(tmp_path, interp, fixtures, countcache.CountsCache(root), "R1",
                                ops=both)
    assert "from_cache" not in first and passes and len(entries(root)) == 2
    alone, _, passes, _ = count(tmp_path, interp, fixtures, countcache.CountsCache(root), "R2")
    assert "from_cache" not in alone and passes                # WHOLE_TEXT after nothing else
    again, _, passes, _ = count(tmp_path, interp, fixtures, countcache.CountsCache(root), "R3",
                                ops=both)
    assert sorted(again["from_cache"]["syscalls"]) == sorted(both) and passes == []
    for entry in entries(root):   # the binary read's count of the two-op worker, removed
        document = json.loads(entry.read_text())
        if document["key"]["op"] == both[0]:
            entry.unlink()
    partly, _, passes, lines = count(tmp_path, interp, fixtures, countcache.CountsCache(root),
                                     "R4", ops=both)
    assert "from_cache" not in partly and passes
    assert any("1 of 2 ops' syscalls not in the counts cache: all 2 counted again" in line
               for line in lines)
