"""Controls (issue 41): beside an op that does Python work around its I/O, the same loop and
payload over data in memory, timed in the same rounds; a release step its control explains
is the code around the I/O, not an I/O finding."""
from __future__ import annotations

from pathlib import Path
import ast
import csv
import io
import json
import os
import subprocess
import sys

import pytest

from iomatrix.interpreters import discovery
from iomatrix import stats
from iomatrix.analysing import analysis, comparisons, controls, study
from iomatrix.measuring import runner, selection
from iomatrix.paths import SUITES_DIR
from iomatrix.reporting import pages, suite_pages, summary
from iomatrix.storing import store
from conftest import ROOT, all_pages, write_pyperf_file

import _api  # noqa: E402  (suites/ is on the path: pyproject.toml)

LINES = "read_byLines_binaryMode"           # its control explains nothing: an I/O finding
BLOCKS = "read_byBlocks_binaryMode"         # its control moves as much as it: not I/O
TEXT_LINES = "read_byLines_textMode"        # its control is missing from the run
NOISE = [1.00, 0.99, 1.01, 1.00, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00]


def rounds(ms: float) -> list:
    """Ten processes of three values each, around ``ms`` milliseconds."""
    return [[ms * n / 1000] * 3 for n in NOISE]


def make_run(results, run_id: str, series: dict):
    """A lockstep run of 3.11 and 3.12: ``series`` {label: {op: ms}}."""
    run_dir = results / run_id
    run_dir.mkdir(parents=True)
    manifest = {"run_id": run_id, "host": "testhost", "profile": "quick", "cache": "warm",
                "suites": ["lutz2009"], "io": ["c"], "started": "2026-01-01T00:00:00+00:00",
                "order": {"method": store.LOCKSTEP_ORDER}, "interpreters": {}}
    for label, ops in series.items():
        write_pyperf_file(run_dir / f"{label}.json", {op: rounds(ms) for op, ms in ops.items()})
        minor = int(label.split(".")[1])
        manifest["interpreters"][label] = {"label": label, "implementation": "cpython",
                                           "version_info": [3, minor, 0],
                                           "version": f"3.{minor}.0", "status": "ok"}
    (run_dir / store.MANIFEST).write_text(json.dumps(manifest))
    return store.Run(results, run_id)


SERIES = {
    "3.11": {LINES: 8.1, LINES + "__control": 1.0, BLOCKS: 10.0, BLOCKS + "__control": 5.0,
             TEXT_LINES: 6.0},
    "3.12": {LINES: 15.5, LINES + "__control": 0.9, BLOCKS: 14.0, BLOCKS + "__control": 9.0,
             TEXT_LINES: 9.0},
}


@pytest.fixture
def an(tmp_path):
    return comparisons.analyse(analysis.load_run(make_run(tmp_path, "C", SERIES)), None, 0.05)


def test_each_step_beside_its_controls_and_the_verdict(an):
    io_step = controls.step(an, LINES, "3.11", "3.12")
    assert io_step.verdict == controls.IO and not io_step.around
    assert io_step.share == pytest.approx(-0.1 / 7.4, rel=0.05)
    assert controls.sentence(io_step).startswith(
        "of 8.1 → 15.5 ms, the loop without I/O 1 → 0.9 ms")
    around = controls.step(an, BLOCKS, "3.11", "3.12")
    assert around.verdict == controls.AROUND
    assert around.share == pytest.approx(1.0, rel=0.05)
    assert around.without.ratio == pytest.approx(1.0, abs=0.02)     # the I/O alone: 5 -> 5 ms
    missing = controls.step(an, TEXT_LINES, "3.11", "3.12")
    assert missing.verdict == controls.MISSING and missing.missing_sides == ("3.11", "3.12")
    assert controls.sentence(missing) == "control missing (3.11, 3.12)"
    # A control op has no control; an op its suite does not declare one for has none either.
    assert controls.step(an, LINES + "__control", "3.11", "3.12") is None


def test_the_rule_by_hand():
    within = stats.Comparison(1.01, 0.99, 1.03, False, 10, 10, True)
    beyond = stats.Comparison(1.30, 1.25, 1.35, True, 10, 10, True)
    assert controls.judge(0.5, within, 0.05) == controls.AROUND     # half explains: enough
    assert controls.judge(0.49, within, 0.05) == controls.IO
    assert controls.judge(-1.0, within, 0.05) == controls.IO        # the other way
    assert controls.judge(0.9, beyond, 0.05) == controls.IO         # the I/O moved too
    assert controls.judge(0.9, None, 0.05) == controls.IO           # no I/O time to compare
    assert controls.judge(None, within, 0.05) == controls.IO


def test_the_code_around_the_io_is_neither_listed_nor_summarised_but_kept_labelled(an):
    slower, faster = an.listed()
    listed = {f.op for f in slower + faster}
    assert LINES in listed and TEXT_LINES in listed
    assert BLOCKS not in listed and not any(op.endswith("__control") for op in listed)
    assert {f.op for f in an.findings()} >= {BLOCKS, BLOCKS + "__control"}   # still findings
    words = summary.summary_paragraph(an)
    assert BLOCKS not in words and "__control" not in words
    built = pages.build_pages(an.data, draw=False)
    main = built.main.replace("\u00a0", " ")
    findings = main.split("## Findings")[1].split("\n## ")[0]
    assert "of 8.1 → 15.5 ms," in findings and "the loop without I/O 1 → 0.9 ms" in findings
    assert "control missing<br>(3.11, 3.12)" in findings
    assert f"1 significant step is {controls.AROUND}" in findings
    assert f"[`{BLOCKS}`](latest/lutz2009.md#op-read_byblocks_binarymode) 3.11 → 3.12" in findings
    page = built.suites["lutz2009"].replace("\u00a0", " ")
    section = page.split("## The loop without I/O (controls)")[1].split("\n## ")[0]
    assert f"**{controls.AROUND}**" in section and "| I/O " in section
    rows = list(csv.DictReader(io.StringIO(built.csv)))
    verdicts = {(r["op"], r["statistic"]): r["evidence"] for r in rows
                if r["statistic"] in ("control_share", "without_control_ratio")}
    assert verdicts[(BLOCKS, "control_share")] == controls.AROUND
    assert verdicts[(LINES, "without_control_ratio")] == controls.IO
    assert verdicts[(TEXT_LINES, "control_share")] == controls.MISSING


def test_an_older_run_without_controls_is_reported_as_before_saying_so(tmp_path):
    older = {label: {op: ms for op, ms in ops.items() if not op.endswith("__control")}
             for label, ops in SERIES.items()}
    an = comparisons.analyse(analysis.load_run(make_run(tmp_path, "O", older)), None, 0.05)
    slower, _ = an.listed()
    assert {f.op for f in slower} == {LINES, BLOCKS, TEXT_LINES}     # every finding, as before
    text = all_pages(an.data, draw=False)
    assert text.count("control missing<br>(3.11, 3.12)") == 3      # the main page's rows
    assert text.count("control missing (3.11, 3.12)") == 3         # the suite page's


def test_a_control_sits_right_after_its_op(an):
    ops = an.ops
    assert ops.index(LINES + "__control") == ops.index(LINES) + 1
    assert ops.index(BLOCKS + "__control") == ops.index(BLOCKS) + 1


# -- the suites' side ------------------------------------------------------------------------

def listed_ops(suite: str, profile: str = "smoke") -> list:
    out = subprocess.run([sys.executable, str(runner.HARNESS), "--list-ops", suite, "c", profile],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["ops"]


@pytest.mark.parametrize("suite", selection.available_suites())
def test_each_declared_control_is_listed_beside_its_op_and_nothing_else_is_one(suite):
    declared = selection.declared_controls().get(suite, {})
    rows = listed_ops(suite)
    names = {row["op"] for row in rows}
    made = {row["control_of"]: row for row in rows if row["control_of"]}
    assert set(made) == set(declared)
    for op, row in made.items():
        assert op in names and row["op"] == op + "__control" and row["category"] == "control"
        assert all(why.strip() for why in declared.values())
    for row in rows:
        assert row["op"].endswith("__control") == bool(row["control_of"])


def test_core_takes_the_controls_of_its_core_ops():
    suites, ops = selection.resolve("core")
    core = selection.core_ops()
    declared = selection.declared_controls()
    expected = [op for suite, chosen in core.items() for op in chosen] + [
        op + "__control" for suite, chosen in core.items() for op in chosen
        if op in declared.get(suite, {})]
    assert sorted(ops) == sorted(expected)
    for op in ("read_byLines_binaryMode__control", "manyfiles_read_sequential__control",
               "iobench_readmodify_text_utf8_lf_400KiB_4096units__control",
               "chunks_iterate_lines__control", "textio_write_lines_ascii__control",
               "mmapio_slices_seek_read__control"):
        assert op in ops
        assert selection.core_reason(op).startswith("the control of ")


def test_each_suite_docstring_says_what_each_ops_time_is_made_of():
    for suite in selection.available_suites():
        doc = ast.get_docstring(ast.parse((SUITES_DIR / f"{suite}.py").read_text()))
        assert "What a call's time is made of" in doc, suite


def test_a_control_that_computes_something_else_fails_its_check(tmp_path):
    fixtures = tmp_path / "fixtures"
    import _fixtures
    _fixtures.make_fixtures(["lutz2009", "iobench"], "smoke", str(fixtures))
    ctx = _api.load_context(str(fixtures), str(tmp_path), "smoke", "c", "warm")
    import lutz2009
    import iobench
    for op in lutz2009.ops(ctx) + iobench.ops(ctx):
        if not op.control_of or op.unavailable:
            continue
        op.setup and op.setup()
        try:
            result = op.run()
            op.verify(result)        # what it computed is what its op computes
            if isinstance(result, int):
                bad = result + 1
            else:
                bad = (result[0] + 1,) + tuple(result[1:])
            with pytest.raises(_api.VerificationError):
                op.verify(bad)
        finally:
            op.teardown and op.teardown()


def test_the_rule_of_a_finding_is_the_analysis_own():
    for c in (stats.Comparison(1.06, 1.01, 1.1, True, 9, 9, True),
              stats.Comparison(0.94, 0.9, 0.99, True, 9, 9, True),
              stats.Comparison(1.04, 1.01, 1.1, True, 9, 9, True),
              stats.Comparison(1.5, 0.9, 2.0, False, 9, 9, True)):
        assert controls.is_finding(c, 0.05) == comparisons.is_finding(c, 0.05)


# -- like with like: the API each op's 2.7 side really uses ------------------------------------

PY27 = str((discovery.pyenv_root() or Path("/nonexistent")) / "versions" / "2.7.18" / "bin" / "python")
PROBE = ROOT / "tests" / "data" / "probe_text_api.py"


def py27_or_skip():
    if not os.path.exists(PY27):
        pytest.skip("no Python 2.7 here")
    return PY27


@pytest.fixture(scope="module")
def probed_27(tmp_path_factory):
    """{suite: {op: the APIs its setup and one call opened files with}} under 2.7."""
    python = py27_or_skip()
    base = tmp_path_factory.mktemp("probe")
    fixtures, scratch = base / "fixtures", base / "scratch"
    scratch.mkdir()
    import _fixtures
    _fixtures.make_fixtures(selection.available_suites(), "smoke", str(fixtures))
    found = {}
    for suite in selection.available_suites():
        out = subprocess.run([python, str(PROBE), str(SUITES_DIR), str(fixtures), str(scratch),
                              suite], capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        found[suite] = json.loads(out.stdout)
    return found


def test_each_text_ops_2_7_api_is_declared_as_it_really_is(probed_27):
    """Every op that opened a file in text mode under 2.7 uses the API its suite declares
    (TEXT_API_27), and every op the declaration names as "open" did call the builtin open in
    text mode where its calls ran in this process."""
    categories = {}
    for suite in selection.available_suites():
        for row in listed_ops(suite):
            categories[row["op"]] = row["category"]
    for suite, ops in probed_27.items():
        for op, apis in ops.items():
            text = sorted({api.split(":")[0] for api in apis if api.endswith(":text")})
            declared = study.text_api_27(suite, categories[op], op)
            if text:
                assert text == [declared], (suite, op, apis)
            elif declared == study.BUILTIN_OPEN and "process" not in op:
                raise AssertionError(f"{op} is declared to read or write text with the builtin "
                                     f"open on 2.7, but opened {apis}")


def test_the_note_that_2_7_reads_bytes_is_where_the_builtin_open_is(an):
    assert study.undecoded_on_2x("lutz2009", "read-text", "read_byLines_textMode")
    assert study.undecoded_on_2x("manyfiles", "manyfiles", "manyfiles_read_sequential")
    assert not study.undecoded_on_2x("lutz2009", "read-binary", "read_byLines_binaryMode")
    assert not study.undecoded_on_2x("lutz2009", "control", "read_byLines_textMode__control")
    assert not study.undecoded_on_2x("iobench", "write-text",
                                     "iobench_readmodify_text_utf8_lf_400KiB_4096units")
    # mmapio's text reads use io.open on 2.7: they decode, like 3.x
    assert not study.undecoded_on_2x("mmapio", "mmap", "mmapio_read_whole_file_text")
    # a suite that does not declare it (an older run's) keeps the categories of before
    assert study.text_api_27("nosuchsuite", "manyfiles", "x") is None


# -- "most in": the release's code, the build's costs apart --------------------------------------

def test_most_in_never_headlines_a_cost_of_the_build():
    from iomatrix.reporting import findings
    functions = {
        ("3.11", LINES): (1, [("buffered_iternext", "Modules/_io/bufferedio.c", 100_000, 10),
                              ("_PyEval_EvalFrameDefault", "Python/ceval.c", 500_000, 1)]),
        ("3.12", LINES): (1, [("__tls_get_addr", "elf/dl-tls.c", 800_000, 9000),
                              ("buffered_iternext", "Modules/_io/bufferedio.c", 600_000, 10),
                              ("_PyEval_EvalFrameDefault", "Python/ceval.c", 510_000, 1),
                              ("0x00000000048c73c0", "???", 50_000, 100)])}
    from test_callpaths import counted_finding
    rows, found = counted_finding(LINES)
    cell = findings.top_function(functions, rows, found)
    assert cell.startswith("most in `buffered_iternext`<br>+500,000/call")
    assert "build: +850,000/call" in cell.replace("\u00a0", " ")


def test_counts_say_the_size_they_were_counted_at(tmp_path):
    from iomatrix.analysing import counts
    rows = [{"series": s, "op": op, "suite": "lutz2009", "counter": "syscalls", "per_call": 10,
             "per_MiB": None, "bytes_per_call": 366925, "implementation": "cpython",
             "method": "strace"} for s in ("3.11", "3.12") for op in (LINES, BLOCKS)]
    assert counts.counting_divisor(rows, LINES, ("3.11", "3.12"), 2935401) == \
        pytest.approx(8, rel=1e-4)
    assert counts.counting_divisor(rows, LINES, "3.11", 366925) is None    # the timed size
    assert counts.counting_divisor(rows, LINES, "3.10", 2935401) is None   # not counted
    said = counts.size_sentence(rows, [(LINES, "3.11", "3.12", 2935401)])
    assert "at 1/8 of the timed size" in said and "not scaled" in said
    assert counts.fmt_divisor([8.0, 32.0]) == "1/8 to 1/32"
    # the native reference's rows of an op record no bytes: the interpreters' are the timed ones
    import pandas as pd
    frame = pd.DataFrame({"series": ["native", "3.11"], "op": [BLOCKS, BLOCKS],
                          "bytes": [0, 2935401]})
    assert analysis.timed_bytes(frame) == {BLOCKS: 2935401}
