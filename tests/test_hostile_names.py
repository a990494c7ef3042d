"""Hostile names, output paths, part files and numbers (issue 34, items 1, 2 and 4).

Every case runs on real files: a run directory on disk, the tools' own mains, the runner's
own merge. A name is never a path, an output never lands in a run's results (links
followed), a report is replaced whole or not at all, a part file of another run is never
merged, and a number out of its range is a schema error naming the field.
"""
from __future__ import annotations

import json
import os
import string
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from iomatrix import cli
from iomatrix.interpreters import discovery
from iomatrix.measuring import planning, runner
from iomatrix.storing import contract, countsfile, outputs, schema, store
from iomatrix.storing.profiles import PROFILES
from test_fuzz import PROFILE, call, counters_document, make_run, tree

import compare
import history
import report

OP = "read_byLines_textMode"


def series_document(op: str = OP, suite: str = "lutz2009", values=(0.01, 0.0101),
                    **metadata) -> dict:
    runs = [({contract.KEY_ROUND: 0}, [(1, values[0])], list(values))]
    meta = {contract.KEY_SUITE: suite, contract.KEY_BYTES: 1000, contract.KEY_IO: "c",
            **metadata}
    return contract.pyperf_document([contract.pyperf_benchmark(op, meta, runs)])


def schema_problem(kind: str, document) -> str | None:
    try:
        schema.check(kind, document)
    except schema.SchemaError as exc:
        return str(exc)
    return None


# -- 1. names are names ------------------------------------------------------------------

HOSTILE_SUITES = {"parent": "../../x", "absolute": "/tmp/iomatrix-hostile/x",
                  "main page": "../o", "newline": "x\n", "backtick": "a`b", "hidden": ".x",
                  "tag": "<script>", "empty": "", "reserved": "manifest"}


@pytest.mark.parametrize("suite", HOSTILE_SUITES.values(), ids=HOSTILE_SUITES.keys())
def test_a_hostile_suite_name_is_a_schema_error_and_writes_no_page(tmp_path, capsys, suite):
    results = tmp_path / "results"
    run_dir = make_run(results, "B")
    contract.atomic_write_json(str(run_dir / "3.11.json"), series_document(suite=suite))
    assert "iomatrix_suite" in schema_problem("series", series_document(suite=suite))
    out_dir = tmp_path / "out" / "deep"
    out_dir.mkdir(parents=True)
    outside_before = tree(tmp_path)
    code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--out",
                                      out_dir / "o.md", "--no-figures"], capsys)
    assert code == 0, err
    assert "skipped B/3.11.json" in err and "iomatrix_suite" in err
    written = {p for p in tree(tmp_path) if p not in outside_before}
    assert all(out_dir in p.parents or p == out_dir for p in written), sorted(written)
    assert not Path("/tmp/iomatrix-hostile").exists()
    assert (out_dir / "o.md").read_text().startswith(("<!--", "#"))   # the main page itself


def test_a_page_name_that_is_not_a_name_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "r.md"
    for name in ("../o", "/etc/x", "a/b", ".hidden", "x\n"):
        with pytest.raises(cli.BadInput, match="page"):
            store.write_report_pages(out, "main\n", {name: "text"})
        assert list(tmp_path.iterdir()) == []   # nor its temporary directory left behind


@pytest.mark.parametrize("label", ["manifest", "native", "py.counters", "x.parts", "phase",
                                   "3.13phase", "../x", "3.13+pyio", "a\n", "x" * 65])
def test_reserved_or_bad_labels_are_refused_everywhere(label):
    assert cli.name_problem(label, "label")
    with pytest.raises(cli.BadInput, match="label"):
        cli.checked(label, "label")
    if label == label.strip():   # the variable's entries are stripped of white space
        with pytest.raises(discovery.DiscoveryError, match="IOMATRIX_PYTHONS"):
            discovery.parse_env_declarations(f"{label}=/usr/bin/python3")
    problem = schema_problem("counters", {**counters_document("3.13"),
                                          "interpreter": {"label": label}})
    assert problem and "interpreter.label" in problem


def test_the_c_reference_series_and_real_names_pass():
    for kind, name in [("series", "native"), ("series", "3.13+pyio"), ("series", "3.13@default"),
                       ("series", "3.14t+pyio@fresh"), ("label", "pypy3.9"),
                       ("label", "3.13.15-pgo"), ("suite", "lutz2009"),
                       ("op", "read_allAtOnce_binaryMode[large.bin]"), ("run id", "R-1.x")]:
        assert cli.name_problem(name, kind) is None, (kind, name)


# The property: whatever text comes in, a name the rule accepts is a plain file name that
# stays in its directory, and the schema and the command line agree on it.
names = st.text(alphabet=st.sampled_from(string.ascii_letters + string.digits + "._-+@/\\`<> \n[]"),
                max_size=90)


@PROFILE
@given(name=names | st.text(max_size=90))
def test_an_accepted_suite_name_is_a_file_name_inside_its_directory(tmp_path_factory, name):
    problem = cli.name_problem(name, "suite")
    if problem is not None:
        return
    directory = tmp_path_factory.getbasetemp()
    assert (directory / f"{name}.md").resolve().parent == directory.resolve()
    assert not name.startswith(".") and "/" not in name and "\n" not in name
    assert len(name) <= cli.MAX_NAME_LENGTH
    assert store.page_file(directory, name, ".md").name == f"{name}.md"


@PROFILE
@given(name=names, kind=st.sampled_from(["label", "series", "suite", "op"]))
def test_the_schema_and_the_command_line_share_one_rule(name, kind):
    accepted = cli.name_problem(name, kind) is None
    if kind == "op":
        document = series_document(op=name)
        where = "name"
    elif kind == "suite":
        document = series_document(suite=name)
        where = "iomatrix_suite"
    else:
        document = {**counters_document("3.13"), "series": name} if kind == "series" else \
            {**counters_document("3.13"), "interpreter": {"label": name}}
    problem = schema_problem("counters" if kind in ("label", "series") else "series", document)
    assert (problem is None) == accepted, (name, problem)
    if kind in ("op", "suite") and not accepted:
        assert where in problem
    if kind == "series" and accepted:
        cli.series(name)   # the command line's type takes it too


# -- 2. outputs go where asked and nowhere else -------------------------------------------

def linked_run(tmp_path: Path) -> tuple[Path, Path]:
    """A store with runs A and B, B with phase/ and .parts/; links to both from outside."""
    results = tmp_path / "results"
    make_run(results, "A")
    run_dir = make_run(results, "B")
    (run_dir / ".parts" / "3.13").mkdir(parents=True)
    (tmp_path / "to-phase").symlink_to(run_dir / "phase")
    (tmp_path / "to-parts").symlink_to(run_dir / ".parts" / "3.13")
    (tmp_path / "to-run").symlink_to(run_dir)
    return results, run_dir


@pytest.mark.parametrize("link", ["to-phase", "to-parts"])
@pytest.mark.parametrize("tool", ["compare --json", "compare --out", "history --out",
                                  "report --out"])
def test_an_output_through_a_link_into_a_run_is_refused(tmp_path, capsys, link, tool):
    results, run_dir = linked_run(tmp_path)
    name, option = tool.split()
    main, args = {"compare": (compare.main, ["A", "B"]), "history": (history.main, ["3.13"]),
                  "report": (report.main, ["--run-id", "B", "--no-figures"])}[name]
    target = tmp_path / link / ("x.json" if option == "--json" else "x.md")
    before = tree(run_dir)
    code, _, err = call(main, [*args, "--results-dir", results, option, target], capsys)
    assert code == cli.EXIT_BAD_INPUT, err
    assert option in err and len(err.strip().splitlines()) == 1, err
    assert tree(run_dir) == before


def test_a_json_file_through_a_link_to_a_run_is_refused(tmp_path, capsys):
    results, run_dir = linked_run(tmp_path)
    before = tree(run_dir)
    code, _, err = call(compare.main, ["A", "B", "--results-dir", results, "--json",
                                       tmp_path / "to-run" / "new.json"], capsys)
    assert code == cli.EXIT_BAD_INPUT and "lies in the run directory" in err, err
    assert tree(run_dir) == before


@pytest.mark.parametrize("where", ["B/phase.md", "B/.parts.md"])
def test_report_out_whose_pages_would_go_in_a_runs_own_directory_writes_nothing(
        tmp_path, capsys, where):
    results, run_dir = linked_run(tmp_path)
    before = tree(tmp_path)
    code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--no-figures",
                                      "--out", results / where], capsys)
    assert code == cli.EXIT_BAD_INPUT, err
    assert tree(tmp_path) == before   # not even the main page


def test_report_out_whose_pages_directory_is_a_file_writes_nothing(tmp_path, capsys):
    results, _ = linked_run(tmp_path)
    (tmp_path / "o").write_text("a file, not a directory")
    before = tree(tmp_path)
    code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--no-figures",
                                      "--out", tmp_path / "o.md"], capsys)
    assert code == cli.EXIT_BAD_INPUT and "not a directory" in err, err
    assert tree(tmp_path) == before


def old_and_new_report(tmp_path: Path, capsys) -> tuple[Path, dict]:
    """A report written once (the old one); the run then changed, so a new one differs."""
    results = tmp_path / "results"
    run_dir = make_run(results, "B")
    out = tmp_path / "out" / "r.md"
    code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--out", out,
                                      "--no-figures"], capsys)
    assert code == 0, err
    old = tree(out.parent)
    assert (out.parent / "r" / "lutz2009.md").is_file() and (out.parent / "r" / "data.csv").is_file()
    contract.atomic_write_json(str(run_dir / "3.11.json"), series_document(
        values=(0.02, 0.0202), **{contract.KEY_PROFILE: "quick", contract.KEY_CACHE: "warm"}))
    return out, old


@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"),
                                     KeyboardInterrupt()], ids=["disk-full", "ctrl-c"])
def test_an_interrupted_report_leaves_the_previous_one_whole(tmp_path, capsys, monkeypatch,
                                                             failure):
    out, old = old_and_new_report(tmp_path, capsys)
    real_replace = os.replace

    def replace_failing_at_the_main_page(source, target):
        if Path(target) == out:   # the pages directory is already swapped: the last step
            raise failure
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace_failing_at_the_main_page)
    args = ["--results-dir", tmp_path / "results", "--run-id", "B", "--out", out, "--no-figures"]
    if isinstance(failure, KeyboardInterrupt):
        with pytest.raises(KeyboardInterrupt):
            report.main([str(a) for a in args])
        capsys.readouterr()
    else:
        code = report.main([str(a) for a in args])   # a full disk: exit 3 (issue 56)
        err = capsys.readouterr().err
        assert code == cli.EXIT_INTERNAL_ERROR and "previous report is left" in err, err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert tree(out.parent) == old   # every old page, byte for byte, and nothing hidden left
    monkeypatch.undo()
    code, _, err = call(report.main, args, capsys)   # and the next report replaces it whole
    assert code == 0, err
    new = tree(out.parent)
    # nothing hidden left but the pages directory's marker (storing/outputs.py)
    assert new != old and not [p for p in new if p.name.startswith(".")
                               and p.name != outputs.MARKER]


# -- part files belong to their run ------------------------------------------------------

def parts_run(tmp_path: Path):
    run = store.Run(tmp_path / "results", "R")
    run.make_directory()
    contract.atomic_write_json(str(run.path / store.MANIFEST), {"run_id": "R"})
    run.parts_dir("2.7").mkdir(parents=True)
    plan = planning.SeriesPlan(series="2.7", interp=None, io_stack="c", ops=[("lutz2009", OP)])
    return run, plan


def sealed_part(run, series: str, name: str, values, run_id: str | None = None) -> Path:
    partial = run.parts_dir(series) / f".{name}.partial-1"
    contract.atomic_write_json(str(partial), series_document(values=values))
    store.seal_part(partial, run.parts_dir(series) / name, run_id or run.run_id, series)
    return run.parts_dir(series) / name


@pytest.mark.parametrize("planted", ["another run", "another series", "unstamped", "bad suite"])
def test_a_planted_part_is_refused_by_name_and_never_merged(tmp_path, planted):
    run, plan = parts_run(tmp_path)
    sealed_part(run, "2.7", "r000--lutz2009.json", (0.01, 0.011))
    name = "r000--lutz2009--2.json"
    if planted == "another run":
        sealed_part(run, "2.7", name, (99.0, 99.0), run_id="OTHER")
    elif planted == "another series":
        (run.path / ".parts" / "3.12").mkdir()
        source = sealed_part(run, "3.12", name, (99.0, 99.0))
        os.replace(source, run.parts_dir("2.7") / name)
    else:
        document = series_document(values=(99.0, 99.0),
                                   suite="lutz2009" if planted == "unstamped" else "chunks")
        if planted == "bad suite":
            document["metadata"].update({store.KEY_RUN_ID: "R", store.KEY_SERIES: "2.7"})
        contract.atomic_write_json(str(run.parts_dir("2.7") / name), document)
    with pytest.raises(store.ResultFileError, match=f"{name}: part file refused, not merged"):
        store.read_part(run, "2.7", run.parts_dir("2.7") / name)
    log = []
    runner._merge_series(run, plan, PROFILES["smoke"], log.append)
    assert plan.error is None, plan.error
    assert any(name in line and "refused" in line for line in log), log
    rows = store.load_series(run.series_file("2.7"))
    assert [row["values"] for row in rows] == [[0.01, 0.011]]   # the planted times are not there
    assert (run.parts_dir("2.7") / name).is_file()   # kept for a look, never merged


def test_a_run_whose_only_part_is_planted_redoes_the_work(tmp_path):
    run, plan = parts_run(tmp_path)
    sealed_part(run, "2.7", "r000--lutz2009.json", (99.0, 99.0), run_id="OTHER")
    assert planning.parts_on_disk(run, "2.7") == {}
    assert planning.missing_processes(run, plan, PROFILES["smoke"]) == {OP: 1}
    runner._merge_series(run, plan, PROFILES["smoke"], print)
    assert not run.series_file("2.7").exists()


# -- 4. a counters file names its own series ---------------------------------------------

def test_a_counters_file_naming_another_series_is_refused_with_a_message(tmp_path, capsys):
    results = tmp_path / "results"
    run_dir = make_run(results, "B")
    path = run_dir / "3.13.counters.json"
    contract.atomic_write_json(str(path), counters_document("3.12"))
    with pytest.raises(store.ResultFileError, match="series field says '3.12'.*'3.13'"):
        countsfile.read_document(path)
    code, _, err = call(report.main, ["--results-dir", results, "--run-id", "B", "--out",
                                      tmp_path / "o.md", "--no-figures"], capsys)
    assert code == 0 and "3.13.counters.json" in err and "series field" in err, err


# -- 3. every number a page states has bounds --------------------------------------------

OUT_OF_BOUNDS = {
    "bytes per call": ("series", lambda d: d["benchmarks"][0]["metadata"].update(
        iomatrix_bytes=2 ** 50), "iomatrix_bytes"),
    "peak RSS": ("series", lambda d: d["benchmarks"][0]["metadata"].update(
        iomatrix_peak_rss=-2 ** 50), "iomatrix_peak_rss"),
    "page faults": ("series", lambda d: d["benchmarks"][0]["metadata"].update(
        iomatrix_minflt_per_value=1e12), "iomatrix_minflt_per_value"),
    "max RSS": ("series", lambda d: d["benchmarks"][0]["metadata"].update(
        mem_max_rss=2 ** 50), "mem_max_rss"),
    "no instructions": ("counters", lambda d: d["ops"][OP].update(instructions=0),
                        "instructions"),
    "syscalls": ("counters", lambda d: d["ops"][OP]["syscalls"].update(read=10 ** 12),
                 "syscalls"),
    "load average": ("manifest", lambda d: d.update(
        machine_state_start={"load_average": [1e300, 0.0, 0.0]}), "load_average"),
    "sampling target": ("manifest", lambda d: d.update(
        sessions=[{"sampling": {"target": 1e300}}]), "sampling.target"),
    "sampling rounds": ("manifest", lambda d: d.update(
        sessions=[{"sampling": {"extra_rounds": -5}}]), "extra_rounds"),
    "budget": ("manifest", lambda d: d.update(spec={"budget_seconds": 1e300}),
               "budget_seconds"),
    "profile rounds": ("manifest", lambda d: d.update(profile_settings={"rounds": 10 ** 12}),
                       "rounds"),
    "phase sample": ("phase sample", lambda d: d.update(loop_seconds=3600.0), "loop_seconds"),
}


@pytest.mark.parametrize("case", OUT_OF_BOUNDS, ids=OUT_OF_BOUNDS.keys())
def test_a_number_out_of_bounds_is_a_schema_error_naming_its_field(case):
    kind, damage, field = OUT_OF_BOUNDS[case]
    document = {"series": lambda: series_document(),
                "counters": lambda: counters_document("3.13"),
                "manifest": lambda: {"run_id": "R"},
                "phase sample": lambda: {"wall_time": 1.7e9, "loop_seconds": 0.001,
                                         "copy_seconds": 0.001}}[kind]()
    assert schema_problem(kind, document) is None
    damage(document)
    problem = schema_problem(kind, document)
    assert problem and field in problem, problem


def test_a_ratio_of_two_valid_times_is_a_valid_ratio():
    """compare's output of 1 ns against 1 hour passes its own schema (it was exit 3)."""
    compared = {"series_a": "3.12", "series_b": "3.13", "op": OP, "time_a": 1e-9,
                "time_b": 3600.0, "ratio": 3600.0 / 1e-9, "regression": True,
                "processes_a": 2, "processes_b": 2}
    output = {"method": "m", "paired": False, "confidence": 0.95, "fail_above": 0.05,
              "machine_phase": {"a": None, "b": None}, "comparisons": [compared]}
    assert schema_problem("compare output", output) is None
    compared["ratio"] = 1e-9 / 3600.0
    assert schema_problem("compare output", output) is None
    compared["op"] = "../x"
    assert "comparisons[0].op" in schema_problem("compare output", output)


def test_an_output_that_is_a_link_or_a_device_is_refused_and_left_alone(tmp_path):
    """An output is replaced whole: a link would be replaced, a device turned into a file
    (/dev/full once was), so both are exit 2 and stay as they were."""
    target = tmp_path / "target.md"
    target.write_text("canary")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    for path, what in ((link, "symbolic link"), (Path("/dev/null"), "not a regular file")):
        with pytest.raises(cli.BadInput, match=what):
            store.check_output(path, "--out")
        with pytest.raises(cli.BadInput, match=what):
            store.write_output(path, "x", "--out")
    assert link.is_symlink() and target.read_text() == "canary"
    assert Path("/dev/null").is_char_device()
