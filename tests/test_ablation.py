"""Ablations (issue 43): the knob table, the worker's knob, and a real run of two interpreters
whose step changed a knob's default, read end to end into the pages.

The real run is 3.7 and 3.8 on ``copies_copyfileobj_default``: bpo-36103 (3.8.0a3) raised
shutil.copyfileobj's default length from 16 KiB to 64 KiB, so the run times 3.8 again with
16 KiB and 3.7 with 64 KiB, in the same lockstep rounds. No assertion here is about a time:
what the ablation found is read from the run and checked to be what the pages say.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import _api  # noqa: E402  (suites/ is on the path: pyproject.toml)
from conftest import all_pages, need, shared_between_workers
from iomatrix import cli
from iomatrix.analysing import ablation, analysis, evidence
from iomatrix.analysing.comparisons import Analysis, Finding, analyse
from iomatrix.measuring import knobs, runner
from iomatrix.measuring.spec import RunSpec
from iomatrix.reporting import markdown, pages
from iomatrix.storing import store
from iomatrix.storing.profiles import PROFILES

OP = "copies_copyfileobj_default"
# Smoke's file sizes; ten rounds of three values, so that the step (0.6-0.7 on a quiet host)
# is most often a finding on a busy one too: the pages state an ablation beside a finding.
ROUNDS = 10
TEN_ROUNDS = dataclasses.replace(PROFILES["smoke"], rounds=ROUNDS, max_rounds=ROUNDS,
                                 twin_rounds=ROUNDS, values=3, warmups=1)


# -- the table and the names ----------------------------------------------------------------

def test_the_knobs_of_a_step_and_the_values_a_release_takes():
    step = knobs.knobs_between(knobs.release_key("3.13.15"), knobs.release_key("3.14.7"))
    assert {(k.name, k.changed_in) for k in step} == {("buffering", "3.14.0a6"),
                                                      ("copy_bufsize", "3.14.0a1")}
    assert knobs.knobs_between(knobs.release_key("3.14.0a5"), knobs.release_key("3.14.0"),
                               "read_byBlocks_binaryMode")[0].name == "buffering"
    assert knobs.knobs_between(knobs.release_key("3.12.1"), knobs.release_key("3.13.0")) == []
    assert knobs.knobs_between(knobs.release_key("3.14.0a5"), knobs.release_key("3.14.0"),
                               "read_byBlocks_binaryMode__control") == []   # no I/O to ablate
    assert [k.entry for k in knobs.knobs_between(knobs.release_key("3.7.16"),
                                                 knobs.release_key("3.8.18"), OP)] == ["bpo-36103"]
    buffering = next(k for k in knobs.KNOBS if k.name == "buffering")
    # 3.13's open() takes st_blksize (4 KiB here), 3.14's max(min(st_blksize, 8 MiB), 128 KiB)
    assert buffering.values_on(4096) == (4096, 131072)
    assert buffering.values_on(1 << 20) == (1 << 20, 1 << 20)
    assert buffering.values_on(None) == (8192, 131072)
    assert knobs.split_ablation("3.14.7~buffering=4096") == ("3.14.7", "buffering", 4096)
    assert knobs.split_ablation("3.14.7") is None


def test_an_ablation_series_name_follows_the_name_rule():
    assert cli.name_problem("3.14.7~buffering=4096", "series") is None
    assert cli.name_problem("3.13+pyio@default~copy_bufsize=16384", "series") is None
    for bad in ("3.14~buffering=", "3.14~Buffering=1", "3.14~buffering=1/2", "3.14~../x=1"):
        assert cli.name_problem(bad, "series") is not None, bad


# -- the worker's knob ------------------------------------------------------------------------

def test_the_buffering_knob_reaches_every_file_the_ops_open(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 100_000)
    ctx = _api.Context(str(tmp_path), str(tmp_path))
    ctx.set_knob("buffering", 4096)
    for open_ in (ctx.open, ctx.io_module.open):
        with open_(str(path), "rb") as f:
            f.read(1)
            assert f.raw.tell() == 4096     # one refill of the buffer: its size
    with ctx.io_module.open(str(path), "r", encoding="ascii") as f:
        assert f.buffer.raw.tell() == 0 and f.read(1) == "x"
    assert ctx.io_module.SEEK_END == 2      # the rest of the module as it is
    with pytest.raises(ValueError, match="unknown knob"):
        ctx.set_knob("nonsense", 1)


def test_the_copy_knob_sets_copyfileobj_s_default_length(monkeypatch):
    import shutil as shutil_module
    monkeypatch.setattr(shutil_module, "COPY_BUFSIZE", shutil_module.COPY_BUFSIZE)
    _api.set_copy_bufsize(16384)
    assert shutil_module.COPY_BUFSIZE == 16384


def refused_knob(tmp_path: Path, suite: str, knob: str) -> subprocess.CompletedProcess:
    """The worker (harness.py) started with a bad ``--knob`` in a batch of no ops: it must
    refuse it with exit 2 and write nothing (the caller checks both)."""
    harness = Path(_api.__file__).with_name("harness.py")
    proc = subprocess.run([sys.executable, str(harness), "--batch", "--suite", suite,
                           "--ops", "[]", "--fixtures", str(tmp_path), "--scratch",
                           str(tmp_path), "--output", str(tmp_path / "o"), "--errors",
                           str(tmp_path / "e"), "--knob", knob],
                          capture_output=True, text=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    return proc


def test_a_bad_knob_is_refused_by_the_worker_with_exit_2(tmp_path):
    proc = refused_knob(tmp_path, "copies", "buffering=-1")
    assert proc.returncode == 2 and "NAME=VALUE" in proc.stderr


# -- a real run -------------------------------------------------------------------------------

def ablation_run(tmp_path_factory, machine_interpreters, labels, suite, op, profile, run_id):
    """Results directory of a real run of the two interpreters ``labels`` on ``op`` alone, the
    ablations its step takes timed in its own rounds (made once per test run:
    shared_between_workers)."""
    interps = [need(machine_interpreters, label) for label in labels]

    def build(directory):
        spec = RunSpec.create(suites=suite, profile=profile, seed=7,
                              results_dir=directory / "results", run_id=run_id,
                              work_dir=directory)
        runner.run_matrix(interps, dataclasses.replace(spec, ops=(op,)), log=lambda *a: None)
    directory, _ = shared_between_workers(tmp_path_factory, f"ablation-{run_id}-{op}", build)
    return directory / "results"


def the_step_of(an: Analysis, op: str, a: str, b: str) -> Finding:
    """The step a -> b of op: the listed finding when it is one, else the comparison."""
    listed = [f for f in an.findings() if f.op == op and (f.a, f.b) == (a, b)]
    return listed[0] if listed else Finding(op, a, b, an.step_cmp[(op, a, b)])


@pytest.fixture(scope="module")
def copies_run(tmp_path_factory, machine_interpreters):
    """A run of 3.7 and 3.8 on OP, ten rounds (ablation_run)."""
    return ablation_run(tmp_path_factory, machine_interpreters, ("3.7", "3.8"), "copies", OP,
                        TEN_ROUNDS, "A")


def analysed(results: Path) -> Analysis:
    return analyse(analysis.load_run(store.Run(results, "A")), None, 0.05)


def the_step(an: Analysis) -> Finding:
    """The step 3.7 -> 3.8 of OP."""
    return the_step_of(an, OP, "3.7", "3.8")


def test_a_run_times_the_ablations_in_its_own_rounds(copies_run):
    manifest = json.loads((copies_run / "A" / "manifest.json").read_text())
    entries = {s: e for s, e in manifest["interpreters"].items() if e.get("ablation_of")}
    assert {s: (e["ablation_of"], e["knob"], e["knob_value"], e["planned_ops"], e["status"])
            for s, e in entries.items()} == {
        "3.8~copy_bufsize=16384": ("3.8", "copy_bufsize", 16384, [OP], "ok"),
        "3.7~copy_bufsize=65536": ("3.7", "copy_bufsize", 65536, [OP], "ok")}
    rows = store.load_series(copies_run / "A" / "3.8~copy_bufsize=16384.json")
    assert sorted(r["round"] for r in rows) == list(range(ROUNDS))   # the main series' rounds
    document = json.loads((copies_run / "A" / "3.8~copy_bufsize=16384.json").read_text())
    assert "copy_bufsize=16384" in json.dumps(document)          # iomatrix_knob, per value
    data = analysis.load_run(store.Run(copies_run, "A"))
    assert set(data.frame["series"]) == {"3.7", "3.8"}           # split out of the findings
    assert set(zip(data.ablations["series"], data.ablations["op"])) == {
        ("3.8", f"{OP}~copy_bufsize=16384"), ("3.7", f"{OP}~copy_bufsize=65536")}
    assert "~" not in "".join(data.frame["op"])


def test_the_ablation_s_result_stands_beside_its_finding(copies_run):
    an = analysed(copies_run)
    step = the_step(an)
    result = ablation.outcome(an, step)
    assert result is not None and not result.failed
    assert "with a 16 KiB copy buffer 3.8.18 is" in result.words
    assert "with a 64 KiB copy buffer 3.7.16 is" in result.words
    assert result.words.startswith("confirmed by ablation" if result.reproduces
                                   else "not reproduced by the ablation")
    if not any(f.op == OP for f in an.findings()):
        pytest.skip("the step is no finding in this run: the pages say nothing of it")
    text = all_pages(analysis.load_run(store.Run(copies_run, "A")))
    said = result.words if result.reproduces else result.words.replace(   # against (issue 57)
        "not reproduced by the ablation", "not supported by the ablation")
    assert markdown.md(said) in text
    finding = the_step(an)
    if finding.firmness in (None, "firm"):     # the summary quotes the firm findings only
        built = pages.build_pages(analysis.load_run(store.Run(copies_run, "A")))
        assert f"An ablation tests one: {OP}'s 3.7 → 3.8 ({finding.comparison.ratio:.2f}) " \
               f"is {result.words}." in built.summary
    verdict = evidence.verdict_for(an, step)
    if result.reproduces:       # bpo-36103 speaks of copyfileobj's buffer: the rule names it
        assert verdict.candidate is None or verdict.evidence in (evidence.ABLATION,
                                                                 evidence.BISECT,
                                                                 evidence.SOURCE,
                                                                 evidence.FUNCTION)


def test_an_ablation_that_failed_says_so_and_keeps_the_finding(copies_run, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(copies_run, copy)
    before = {(f.op, f.a, f.b) for f in analysed(copy).findings()}
    (copy / "A" / "3.8~copy_bufsize=16384.json").unlink()
    (copy / "A" / "3.7~copy_bufsize=65536.json").unlink()
    an = analysed(copy)
    assert {(f.op, f.a, f.b) for f in an.findings()} == before
    result = ablation.outcome(an, the_step(an))
    assert result.failed and not result.reproduces
    assert result.words.startswith("the ablation failed (copy_bufsize; 3.8~copy_bufsize=16384")
    assert "the finding stands as measured" in result.words
    if before:
        assert markdown.md(result.words) in all_pages(analysis.load_run(store.Run(copy, "A")))


# -- the text layer's knobs (issue 43 item 2) ----------------------------------------------------

TEXT_OP = "read_byBlocks_textMode"
SIX_ROUNDS = dataclasses.replace(PROFILES["smoke"], rounds=6, max_rounds=6, twin_rounds=6,
                                 values=2, warmups=1)


def test_the_text_knobs_codes_are_the_workers():
    assert _api.TEXT_ENCODINGS == knobs.TEXT_ENCODINGS and _api.NEWLINES == knobs.NEWLINES
    assert set(_api.KNOBS) == knobs.NAMES
    text = [k for k in knobs.knobs_between(knobs.release_key("2.7.18"),
                                           knobs.release_key("3.6.15"), TEXT_OP)]
    assert [(k.name, k.old_value, k.new_value, k.old_side) for k in text] == [
        ("encoding", 2, 1, False), ("newline", 2, 1, False)]
    assert ablation.value_words(text[0], 2) == "encoding='latin-1'"
    assert ablation.value_words(text[1], 2) == "newline=''"
    # binary ops, textio (io.open on 2.7 too) and 3.x steps take none of them
    for op, old, new in (("read_byBlocks_binaryMode", "2.7.18", "3.6.15"),
                         ("textio_write_lines_ascii", "2.7.18", "3.6.15"),
                         (TEXT_OP, "3.6.15", "3.7.16"), (f"{TEXT_OP}__control", "2.7.18", "3.6.15")):
        assert not [k for k in knobs.knobs_between(knobs.release_key(old), knobs.release_key(new), op)
                    if k.name in ("encoding", "newline")], op


def test_the_text_knobs_reach_every_text_open_and_no_binary_one(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes(b"caf\xc3\xa9\r\nb\n")
    ctx = _api.Context(str(tmp_path), str(tmp_path))
    ctx.set_knob("encoding", 2)
    for open_ in (ctx.open, ctx.io_module.open):
        with open_(str(path)) as f:
            assert f.encoding == "latin-1" and f.read() == "caf\xc3\xa9\nb\n"
        with open_(str(path), "r", encoding="utf-8") as f:    # the op's own choice stands
            assert f.read() == "caf\xe9\nb\n"
        with open_(str(path), "rb") as f:
            assert f.read() == path.read_bytes()
    ctx = _api.Context(str(tmp_path), str(tmp_path))
    ctx.set_knob("newline", 2)
    with ctx.open(str(path), encoding="utf-8") as f:
        assert f.read() == "caf\xe9\r\nb\n"                   # no translation
    assert ctx.io_module.SEEK_END == 2
    with pytest.raises(ValueError, match="unknown value"):
        ctx.set_knob("encoding", 9)


def test_a_text_knob_s_unknown_code_is_refused_by_the_worker_with_exit_2(tmp_path):
    proc = refused_knob(tmp_path, "lutz2009", "encoding=9")
    assert proc.returncode == 2 and "encoding knob's VALUE is one of 1, 2" in proc.stderr


@pytest.fixture(scope="module")
def text_run(tmp_path_factory, machine_interpreters):
    """A run of 2.7 and 3.6 on TEXT_OP, six rounds (ablation_run)."""
    return ablation_run(tmp_path_factory, machine_interpreters, ("2.7", "3.6"), "lutz2009",
                        TEXT_OP, SIX_ROUNDS, "T")


def text_step(an: Analysis) -> Finding:
    return the_step_of(an, TEXT_OP, "2.7", "3.6")


def test_a_2_x_to_3_x_text_step_is_timed_with_the_cheapest_text_layer(text_run):
    manifest = json.loads((text_run / "T" / "manifest.json").read_text())
    entries = {s: (e["ablation_of"], e["knob"], e["knob_value"], e["planned_ops"], e["status"])
               for s, e in manifest["interpreters"].items() if e.get("ablation_of")}
    # only 3.6 is timed with them: 2.7's file object has no encoding or newline to set
    assert entries == {"3.6~encoding=2": ("3.6", "encoding", 2, [TEXT_OP], "ok"),
                       "3.6~newline=2": ("3.6", "newline", 2, [TEXT_OP], "ok")}
    an = analyse(analysis.load_run(store.Run(text_run, "T")), None, 0.05)
    result = ablation.outcome(an, text_step(an))
    assert result is not None and not result.failed
    assert "with encoding='latin-1' 3.6.15 is" in result.words
    assert "with newline='' 3.6.15 is" in result.words and "its own default" not in result.words
    assert result.words.startswith("confirmed by ablation" if result.reproduces
                                   else "not reproduced by the ablation")
    verdict = evidence.verdict_for(an, text_step(an))
    assert verdict.ablation == result.words
    # a result that did not reproduce the step is said against the cause (issue 57)
    said = result.words if result.reproduces else result.words.replace(
        "not reproduced by the ablation", "not supported by the ablation")
    if any(f.op == TEXT_OP and (f.a, f.b) == ("2.7", "3.6") for f in an.findings()):
        assert markdown.md(said) in all_pages(analysis.load_run(store.Run(text_run, "T")))
        # the main page says it under the stated cause's row too (Likely causes)
        main = pages.build_pages(analysis.load_run(store.Run(text_run, "T")), draw=False).main
        causes = main[main.index("### Likely causes"):].replace("\u00a0", " ")
        assert markdown.md(said) in causes[:causes.index("\n## ")]


def test_a_text_ablation_that_failed_says_so_beside_the_other(text_run, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(text_run, copy)
    before = {(f.op, f.a, f.b) for f in analysed_text(copy).findings()}
    (copy / "T" / "3.6~newline=2.json").unlink()
    an = analysed_text(copy)
    assert {(f.op, f.a, f.b) for f in an.findings()} == before     # nothing removed
    result = ablation.outcome(an, text_step(an))
    assert "with encoding='latin-1' 3.6.15 is" in result.words
    assert "the ablation failed (newline; 3.6~newline=2" in result.words
    assert "the finding stands as measured" in result.words and not result.failed


def analysed_text(results: Path) -> Analysis:
    return analyse(analysis.load_run(store.Run(results, "T")), None, 0.05)
