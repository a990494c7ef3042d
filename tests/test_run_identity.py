"""A run is its manifest, not its directory's name (issue 56, family 4): a copied run directory,
a run id given twice or a run named by its path is counted once by every tool that gathers
runs (history, the pool, agree, a merged report), said in one line; bad input only where the
runs, counted once, are too few for what was asked."""
from __future__ import annotations

import json
import shutil

import pytest

import agree as agree_command
import history as history_command
import report
from iomatrix import cli
from iomatrix.analysing import analysis, pooling
from iomatrix.commands import agreement, history
from iomatrix.storing import store
from test_agree import make_run


def copy_run(results, run_id, name=None):
    shutil.copytree(results / run_id, results / (name or f"{run_id}-copy"))
    return store.Run(results, name or f"{run_id}-copy")


def test_a_copy_is_the_same_run_and_another_run_is_not(tmp_path):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    copy = copy_run(results, "A")
    a, b = store.Run(results, "A"), store.Run(results, "B")
    assert store.run_identity(copy) == store.run_identity(a) != store.run_identity(b)
    assert store.run_identity(a)[0] == "A"
    # one byte of the manifest's content more is another run
    manifest = json.loads((copy.path / store.MANIFEST).read_text())
    (copy.path / store.MANIFEST).write_text(json.dumps({**manifest, "host": "elsewhere"}))
    assert store.run_identity(copy) != store.run_identity(a)


def test_a_manifest_that_cannot_be_read_is_only_its_own_directory(tmp_path):
    results = tmp_path / "results"
    make_run(results, "A")
    copy = copy_run(results, "A")
    (copy.path / store.MANIFEST).write_text("{not json")
    (results / "A" / store.MANIFEST).write_text("{not json")
    assert store.run_identity(copy) != store.run_identity(store.Run(results, "A"))


def test_distinct_runs_keeps_the_first_and_says_which_were_the_same(tmp_path):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    copy_run(results, "A")
    runs = [store.Run(results, name) for name in ("A", "B", "A-copy", "A")]
    kept, lines = store.distinct_runs(runs)
    assert [run.run_id for run in kept] == ["A", "B"]
    assert lines == ["A-copy, A: the same run as A (the same manifest: named twice, or a "
                     "copied directory), counted once"]


def test_a_renamed_run_directory_is_read_under_its_name_and_said(tmp_path):
    results = tmp_path / "results"
    make_run(results, "A")
    (results / "A").rename(results / "renamed")
    kept, lines = store.distinct_runs([store.Run(results, "renamed")])
    assert [run.run_id for run in kept] == ["renamed"]
    assert lines == ["renamed: its manifest names run A (a renamed or copied directory); "
                     "read as it is named here"]


def test_a_manifest_run_id_that_is_no_name_is_not_shown(tmp_path):
    results = tmp_path / "results"
    make_run(results, "A")
    path = results / "A" / store.MANIFEST
    path.write_text(path.read_text().replace('"run_id": "A"', '"run_id": "<b>x</b>\\n"'))
    _, lines = store.distinct_runs([store.Run(results, "A")])
    assert lines == ["A: its manifest names run another run id (a renamed or copied "
                     "directory); read as it is named here"]


def test_history_reads_a_copied_run_once_and_says_so(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", started="2026-01-01T00:00:00+00:00")
    make_run(results, "B", started="2026-01-02T00:00:00+00:00")
    copy_run(results, "A")
    found, problems, same = history.collect(results, "3.13")
    assert [d.run.run_id for d in found] == ["A", "B"] and problems == []
    assert same == ["A-copy: the same run as A (the same manifest: named twice, or a copied "
                    "directory), counted once"]
    assert history_command.main(["3.13", "--results-dir", str(results)]) == 0
    out = capsys.readouterr()
    assert "#2 " in out.out and "#3 " not in out.out
    assert "A-copy: the same run as A" in out.out   # on the page
    assert "history: A-copy: the same run as A" in out.err


def test_the_pool_pools_a_copy_once_whether_found_or_named(tmp_path, capsys):
    results = tmp_path / "results"
    for run_id in ("A", "B"):
        make_run(results, run_id, spec={"selection": "core"})
    copy_run(results, "A")
    main = analysis.load_run(store.Run(results, "B"))
    found = pooling.same_command_runs(results, main.run, main.manifest)
    assert [run.run_id for run in found] == ["A", "A-copy"]   # the manifests decide: alike
    pool = pooling.load_pool(main, None, found, 0.05)
    assert [run.name for run in pool.runs] == ["B", "A"]
    assert pool.left_out == ["run A-copy: the same run as A (the same manifest: named twice, "
                             "or a copied directory), counted once"]
    assert all(cell.n == 2 for cell in pool.cells.values())
    for named in ([], ["A", "A-copy", "B"]):
        status = report.main(["--results-dir", str(results), "--out",
                              str(tmp_path / "out" / "p.md"), "--no-figures", "--run-id", "B",
                              "--pool", *named])
        err = capsys.readouterr().err
        assert status == 0 and "report: pooled 2 runs on" in err
        assert "left out run A-copy: the same run as A" in err


def test_a_pool_of_the_main_run_and_its_copy_alone_is_bad_input(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", spec={"selection": "core"})
    copy_run(results, "A")
    assert report.main(["--results-dir", str(results), "--out", str(tmp_path / "out" / "p.md"),
                        "--no-figures", "--run-id", "A", "--pool"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing to pool run A with" in err[0]
    assert "A-copy: the same run as A" in err[0]
    assert not (tmp_path / "out").exists()


def test_agree_compares_a_copy_once_and_one_run_alone_is_bad_input(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    copy_run(results, "A")
    views = agreement.load_runs(["A", "A-copy", "B"], results, 0.05, log=print)
    assert [view.name for view in views] == ["A", "B"]
    assert "A-copy: the same run as A" in capsys.readouterr().out
    assert agree_command.main(["A", "A-copy", "--results-dir", str(results)]) == 2
    assert "give two or more different runs" in capsys.readouterr().err


def test_a_merged_report_merges_each_run_once(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B", host="otherhost")
    copy_run(results, "A")
    out = tmp_path / "out" / "m.md"
    assert report.main(["--results-dir", str(results), "--out", str(out), "--no-figures",
                        "--run-id", "A", "--run-id", "A-copy", "--run-id", "B"]) == 0
    assert "report: --run-id A-copy: the same run as A" in capsys.readouterr().err
    assert "# iomatrix report: 2 runs on 2 hosts" in out.read_text()
    # the same id twice: the run's own report, not a merge of it with itself
    assert report.main(["--results-dir", str(results), "--out", str(out), "--no-figures",
                        "--run-id", "A", "--run-id", "A"]) == 0
    assert "report: --run-id A: the same run as A" in capsys.readouterr().err
    assert "# iomatrix report: 2 runs" not in out.read_text()


def test_a_renamed_run_is_pooled_and_said_never_left_out(tmp_path):
    results = tmp_path / "results"
    for run_id in ("A", "B"):
        make_run(results, run_id, spec={"selection": "core"})
    (results / "A").rename(results / "renamed")
    main = analysis.load_run(store.Run(results, "B"))
    said = []
    pool = pooling.load_pool(main, None, [store.Run(results, "renamed")], 0.05, log=said.append)
    assert [run.name for run in pool.runs] == ["B", "renamed"] and pool.left_out == []
    assert said[0] == ("renamed: its manifest names run A (a renamed or copied directory); "
                       "read as it is named here")


def test_agree_on_a_renamed_run_named_twice_says_they_are_the_same_run(tmp_path):
    results = tmp_path / "results"
    make_run(results, "A")
    (results / "A").rename(results / "renamed")
    with pytest.raises(cli.BadInput, match="^renamed: the same run as renamed"):
        agreement.load_runs(["renamed", "renamed"], results, 0.05, log=lambda text: None)
