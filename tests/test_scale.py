"""Many runs (issue 56, family 7): history and the pool read them in one pass each, say how far
they are on stderr, keep only what the output needs (history: one series' process means per
run, giving the same table as reading each run whole), and the pool decides which runs are of
its command from their manifests before any data is read. No timing is asserted."""
from __future__ import annotations

import history as history_command
from iomatrix import stats
from iomatrix.analysing import analysis, pooling
from iomatrix.commands import history
from iomatrix.storing import store
from test_agree import make_run as make_lockstep_run
from test_compare import READ, WRITE, make_run, processes
from test_history import three_runs


def test_progress_yields_every_item_and_says_how_far_it_is():
    lines = []
    assert list(store.progress([1, 2, 3], "runs", lines.append, every=0)) == [1, 2, 3]
    assert lines[0].startswith("read 0 of 3 runs in 0 s")
    assert lines[-1].startswith("read 2 of 3 runs in ") and lines[-1].endswith(" left")
    assert list(store.progress([1, 2], "runs")) == [1, 2]   # no log: silent
    # many items: said when the reading starts and ends, however fast it is
    lines = []
    many = list(range(store.PROGRESS_MANY))
    assert list(store.progress(many, "runs", lines.append, every=3600)) == many
    assert lines == [f"reading {len(many)} runs", f"read {len(many)} of {len(many)} runs in 0 s"]
    assert store.duration(200.4) == "3 min 20 s" and store.duration(4.6) == "5 s"


def test_history_says_how_far_its_reading_is(tmp_path, monkeypatch, capsys):
    results = three_runs(tmp_path)
    monkeypatch.setattr(store, "PROGRESS_SECONDS", 0)
    lines = []
    found, _, _ = history.collect(results, "3.13", lines.append)
    assert len(found) == 3
    assert any(line.startswith("read 2 of 3 runs in ") for line in lines)
    assert any("of 3 run directories' manifests" in line for line in lines)
    assert history_command.main(["3.13", "--results-dir", str(results)]) == 0
    assert "history: read 2 of 3 runs in " in capsys.readouterr().err


def whole_run_table(results, label):
    """The history's table as it was computed before (each run's data read whole: one
    RunData per run, its frame, analysis.ordered_ops, analysis.context of the frame)."""
    runs, _ = store.scan_runs(results)
    times, ops, contexts, counts = {}, [], [], []
    for run in runs:
        data = analysis.load_file(run.series_file(label), run, run.read_manifest(),
                                  series=run.run_id)
        for (run_id, op), by_round in analysis.process_means(data.frame).items():
            times[(op, run_id)] = stats.location(by_round.values())
        ops += analysis.ordered_ops(data)
        contexts.append(analysis.context(data.manifest, data.frame))
        counts.append(data.frame["op"].nunique())
    return times, list(dict.fromkeys(ops)), contexts, counts


def test_the_light_reading_gives_the_table_of_the_whole_reading(tmp_path):
    results = three_runs(tmp_path)
    # a run that states no profile or page cache: its processes' metadata describe it
    make_run(results, "n-fourth", {"3.13": {WRITE: processes(0.100, phase=4),
                                            READ: processes(0.011, phase=4)}},
             started="2026-04-01T00:00:00+00:00", profile=None, cache=None)
    found, problems, same = history.collect(results, "3.13")
    assert problems == [] and same == []
    table, ops = history.history_frame(found)[0], history.history_frame(found)[2]
    times, whole_ops, contexts, counts = whole_run_table(results, "3.13")
    assert ops == whole_ops
    assert {(op, run_id): table.at[op, run_id] for op in table.index
            for run_id in table.columns if table.at[op, run_id] == table.at[op, run_id]} \
        == times
    assert [d.context for d in found] == contexts
    assert contexts[-1]["profile"] == "quick"           # from the processes' metadata
    assert [len(d.means) for d in found] == counts
    assert all(set(d.manifest) <= set(history.SHOWN_KEYS) for d in found)


def test_the_floor_takes_every_pair_of_a_small_pool_and_a_fixed_sample_of_a_large_one():
    small = list(range(200))                 # 19,900 pairs: all of them
    assert len(pooling.floor_pairs(small)) == 200 * 199 // 2
    large = list(range(1_000))
    pairs = pooling.floor_pairs(large)
    assert len(pairs) == len(set(pairs)) == pooling.MAX_FLOOR_PAIRS
    assert all(i < j for i, j in pairs)
    assert pooling.floor_pairs(large) == pairs    # one pool, one floor


def test_the_pool_picks_its_runs_by_their_manifests_before_reading_any_data(tmp_path):
    results = tmp_path / "results"
    for run_id in ("A", "B"):
        make_lockstep_run(results, run_id, spec={"selection": "core"})
    # a run of another command whose data would be refused if it were read
    make_lockstep_run(results, "C", spec={"selection": "core"}, profile="full")
    (results / "C" / "3.13.json").write_text("{not json")
    main = analysis.load_run(store.Run(results, "B"))
    lines = []
    others = pooling.same_command_runs(results, main.run, main.manifest, lines.append)
    assert [run.run_id for run in others] == ["A"]
    pool = pooling.load_pool(main, None, others, 0.05, log=lines.append)
    assert [run.name for run in pool.runs] == ["B", "A"] and pool.left_out == []
