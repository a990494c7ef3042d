"""The A/A twin counts again a sample of its ops and takes the others from the counts cache
(iomatrix/measuring/twincount.py, counters.count_series and count_run): real strace counts of
a real 3.13 and its twin, the report's A/A sentence on them, --aa-recount's bad values.
Instructions are never sampled (twincount's docstring says why)."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import need, run_nox
from iomatrix.analysing import counts
from iomatrix.interpreters import discovery
from iomatrix.measuring import bench, countcache, counters, counttools, planning, runner, twincount
from iomatrix.storing import store

OPS = ["read_allAtOnce_textMode", "read_byBlocks_binaryMode", "read_byLines_textMode"]
SAMPLED = "read_byBlocks_binaryMode"
CONDITIONS = runner.Conditions()
WHICH = ("syscalls", "rusage")

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed")


@pytest.fixture(scope="module")
def fixtures(lutz_count_fixtures):
    return lutz_count_fixtures


def count(directory, interp, fixtures, cache, label, aa_of=None, recount=None, slot=0):
    """count_series of OPS' syscalls and rusage into run "R" of ``directory``: (entry, the
    counters file's ops, the ops the strace passes counted)."""
    run = store.Run(directory / "results", "R")
    run.make_directory()
    info = dict(interp.as_manifest(), label=label, aa_of=aa_of)
    series = counters.Series(label, info, "c", [("lutz2009", op) for op in OPS])
    work = directory / f"work-{label}"
    entry = counters.count_series(run, series, WHICH, counttools.tool_problems(WHICH, work),
                                  fixtures, work, "smoke", CONDITIONS, 120.0,
                                  counttools.methods(WHICH), slot, log=lambda m: None,
                                  cache=cache, recount=recount)
    ops = json.loads(run.counters_file(label).read_text())["ops"]
    straced = [row["op"] for rows in (work / f"s{slot:04d}").glob("*-strace-*/counts.jsonl")
               for row in map(json.loads, rows.read_text().splitlines())]
    return entry, ops, straced


def test_the_sample_is_drawn_from_the_seed_and_covers_every_op_over_seeds():
    names = [f"op{i}" for i in range(42)]
    chosen = twincount.sample(names, 7, 6)
    assert len(chosen) == 6 and chosen <= set(names)
    assert twincount.sample(list(reversed(names)), 7, 6) == chosen   # the seed decides
    assert set().union(*(twincount.sample(names, seed, 6) for seed in range(60))) == set(names)
    assert twincount.sample(names, 7, "all") is None and twincount.sample(names, 7, 42) is None


def test_the_twin_takes_unsampled_ops_from_the_cache_and_counts_the_sample_again(
        tmp_path, machine_interpreters, fixtures):
    interp = need(machine_interpreters, "3.13")
    cache = countcache.CountsCache(tmp_path / "counts")
    original, first, _ = count(tmp_path, interp, fixtures, cache, "3.13")
    assert original["status"] == "ok" and "recounted" not in original
    stored = sorted((tmp_path / "counts").rglob("*.json"))
    assert len(stored) == len(OPS)

    twin, again, straced = count(tmp_path, interp, fixtures, cache, "3.13-aa", aa_of="3.13",
                                 recount=frozenset({SAMPLED}), slot=1)
    assert twin["status"] == "ok"
    assert twin["recounted"] == {"syscalls": [SAMPLED]}
    assert sorted(twin["from_cache"]["syscalls"]) == sorted(set(OPS) - {SAMPLED})
    assert straced == [SAMPLED]                      # strace ran for the sample only
    assert again[SAMPLED]["syscalls"] == first[SAMPLED]["syscalls"]   # counted: it repeats
    for op in OPS:   # the file says which counts were copied; rusage is always counted
        assert again[op].get("from_cache", []) == ([] if op == SAMPLED else ["syscalls"])
        assert again[op]["syscalls"] == first[op]["syscalls"] and "rusage" in again[op]
    assert sorted((tmp_path / "counts").rglob("*.json")) == stored   # the twin wrote nothing


def test_with_an_empty_cache_the_twin_leaves_nothing_uncounted(tmp_path, machine_interpreters,
                                                               fixtures):
    interp = need(machine_interpreters, "3.13")
    cache = countcache.CountsCache(tmp_path / "counts")
    twin, ops, straced = count(tmp_path, interp, fixtures, cache, "3.13-aa", aa_of="3.13",
                               recount=frozenset({SAMPLED}))
    assert twin["status"] == "ok" and "from_cache" not in twin and not twin["failed_ops"]
    assert sorted(twin["recounted"]["syscalls"]) == sorted(OPS) == sorted(straced)
    assert all("syscalls" in ops[op] and "from_cache" not in ops[op] for op in OPS)
    assert not (tmp_path / "counts").exists() or not list((tmp_path / "counts").rglob("*.json"))


def counted_run(tmp_path, interp, aa_recount, which=WHICH):
    """count_run of 3.13 and its twin on an empty cache, as the matrix runs it: the manifest."""
    run = store.Run(tmp_path / "results", "R")
    run.make_directory()
    twin = discovery.Interpreter("3.13-aa", interp.executable, "aa", interp.info, interp.error)
    plans = {i.label: planning.SeriesPlan(i.label, i, "c", ops=[("lutz2009", op) for op in OPS])
             for i in (twin, interp)}     # the twin listed first: the pass still waits for 3.13
    manifest = {"interpreters": {"3.13": {}, "3.13-aa": {"aa_of": "3.13"}},
                "sessions": [{"seed": 5}]}
    counters.count_run(run, plans, manifest, which, profile="smoke", conditions=CONDITIONS,
                       work_root=tmp_path / "work", timeout=120.0, log=lambda m: None,
                       cache_root=tmp_path / "counts", aa_recount=aa_recount)
    return run, manifest


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("setarch") is None,
                    reason="valgrind or setarch not installed")
def test_the_pass_counts_the_twin_after_its_original_so_its_other_ops_are_hits(
        tmp_path, machine_interpreters):
    """On an empty cache: the original fills it first, then the twin counts the sample's
    syscalls again and takes the rest, and every op's instructions, from it."""
    interp = need(machine_interpreters, "3.13")
    run, manifest = counted_run(tmp_path, interp, 1, which=counters.COUNTERS)
    original = manifest["interpreters"]["3.13"]["counters"]
    twin = manifest["interpreters"]["3.13-aa"]["counters"]
    sample = twincount.sample(OPS, 5, 1)
    assert original["status"] == twin["status"] == "ok" and "from_cache" not in original
    assert twin["recounted"] == {"syscalls": sorted(sample, key=OPS.index)}
    assert sorted(twin["from_cache"]["syscalls"]) == sorted(set(OPS) - sample)
    assert sorted(twin["from_cache"]["instructions"]) == sorted(OPS)
    assert manifest["counters"]["from_cache"] == 2 * len(OPS) - 1

    # The report compares only the op counted again, and says so.
    rows = counts.load_counts(run.path)
    exact = {e["counter"]: e for e in counts.aa_exactness(rows)}
    assert (exact["syscalls"]["ops"], exact["syscalls"]["identical"],
            exact["syscalls"]["copied"]) == (1, 1, 2)
    assert "instructions" not in exact and "estimated_cycles" not in exact   # all copied
    assert (exact["minflt"]["ops"], exact["minflt"]["copied"]) == (3, 0)  # rusage: all counted
    text = "\n".join(counts.markdown_section(rows))
    assert ("`3.13-aa`: the system calls of 1 op counted again: all equal. The system calls "
            "of its other 2 ops and the instructions of every op are `3.13`'s, taken from the "
            "counts cache, and are not compared (an op's instructions depend on what ran "
            "before it in its worker process") in text
    assert "| syscalls | `3.13` / `3.13-aa` | 1/1 counted again |" in text
    assert "| instructions | `3.13` / `3.13-aa`" not in text


def test_aa_recount_all_counts_every_op_again_and_reads_as_before(tmp_path,
                                                                   machine_interpreters):
    interp = need(machine_interpreters, "3.13")
    run, manifest = counted_run(tmp_path, interp, "all")
    twin = manifest["interpreters"]["3.13-aa"]["counters"]
    assert twin["status"] == "ok" and "from_cache" not in twin and "recounted" not in twin
    text = "\n".join(counts.markdown_section(counts.load_counts(run.path)))
    assert "| syscalls | `3.13` / `3.13-aa` | 3/3 |" in text and "counted again" not in text


def test_a_bad_aa_recount_is_one_line_exit_2_and_nothing_written(tmp_path):
    parser = bench.parser("nox -s matrix --", matrix=True)
    assert parser.parse_args(["--aa-recount", "all"]).aa_recount == "all"
    assert parser.parse_args(["--aa-recount", "12"]).aa_recount == 12
    assert parser.parse_args([]).aa_recount == twincount.AA_RECOUNT
    proc = run_nox("-s", "matrix", "--", "--aa-recount", "0", "--profile", "smoke",
                   "--results-dir", str(tmp_path / "results"), "--no-report")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    [line] = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert "'0': the number of the A/A twin's ops to count again" in line and "or all" in line
    assert not (tmp_path / "results").exists()
    with pytest.raises(runner.SpecError, match="--aa-recount"):
        runner.RunSpec.create(results_dir=tmp_path, run_id="R", aa_recount="some")
