"""The 2.7 -> 3.x buffer ablation (issue 57): 3.x's line iteration timed with 2.7's 8 KiB
read-ahead (measuring/knobs.py, PEP 3116's ``buffering`` entry), and a real run of 2.7.18 and
3.6.15 on ``read_byLines_binaryMode`` read end to end into the pages.

No assertion is about a time: the run's series, the op's verification and what the pages say
of the ablation (reproduced or not, with the knob's phrase) are checked.
"""
from __future__ import annotations

import json

import pytest

from conftest import all_pages
from iomatrix.analysing import ablation, analysis, evidence
from iomatrix.analysing.comparisons import analyse
from iomatrix.measuring import knobs
from iomatrix.reporting import markdown
from iomatrix.storing import store
from test_ablation import SIX_ROUNDS, ablation_run, the_step_of

OP = "read_byLines_binaryMode"


def pep_3116_knobs(old: str, new: str, op: str) -> list:
    return [k for k in knobs.knobs_between(knobs.release_key(old), knobs.release_key(new), op)
            if k.name == "buffering"]


def test_the_read_ahead_knob_of_a_2_x_step():
    (knob,) = pep_3116_knobs("2.7.18", "3.6.15", OP)
    assert (knob.entry, knob.old_side) == ("PEP 3116", False)
    # 2.7 reads ahead 8 KiB whatever the file system; 3.x's buffer is st_blksize up to 3.13
    assert knob.values_on(4096) == (8192, 4096) and knob.values_on(1) == (8192, 8192)
    assert ablation.value_words(knob, 8192) == "an 8 KiB buffer"
    assert [k.entry for k in pep_3116_knobs("2.7.18", "3.13.0", "read_byLines_textMode")] == \
        ["PEP 3116"]
    # a step to 3.14 or later is gh-117151's buffer, never both (one series per name)
    assert [k.entry for k in pep_3116_knobs("2.7.18", "3.14.7", OP)] == ["gh-117151"]
    # chunks' line iteration takes it too: with a spare pymalloc arena its ablation series is
    # like its main one again (harness 61cf2e9)
    assert [k.entry for k in pep_3116_knobs("2.7.18", "3.6.15", "chunks_iterate_lines")] == \
        ["PEP 3116"]
    # no knob for the seek+read op (same read calls), a block read, a control or a 3.x step
    for op, old, new in (("mmapio_slices_seek_read", "2.7.18", "3.6.15"),
                         ("read_byBlocks_binaryMode", "2.7.18", "3.6.15"),
                         (f"{OP}__control", "2.7.18", "3.6.15"), (OP, "3.6.15", "3.7.16")):
        assert not pep_3116_knobs(old, new, op), op


def test_the_article_follows_the_number():
    knob = pep_3116_knobs("2.7.18", "3.6.15", OP)[0]
    assert [ablation.value_words(knob, v) for v in (4096, 11 << 10, 18 << 10, 8 << 20,
                                                   110 << 10)] == [
        "a 4 KiB buffer", "an 11 KiB buffer", "an 18 KiB buffer", "an 8 MiB buffer",
        "a 110 KiB buffer"]


@pytest.fixture(scope="module")
def lines_run(tmp_path_factory, machine_interpreters):
    """A run of 2.7 and 3.6 on OP, six rounds (test_ablation.ablation_run)."""
    return ablation_run(tmp_path_factory, machine_interpreters, ("2.7", "3.6"), "lutz2009", OP,
                        SIX_ROUNDS, "B")


def test_3_6_is_timed_with_2_7_s_read_ahead_and_the_pages_say_it(lines_run):
    manifest = json.loads((lines_run / "B" / "manifest.json").read_text())
    entries = {s: (e["ablation_of"], e["knob"], e["knob_value"], e["planned_ops"], e["status"],
                   e["failed_ops"])
               for s, e in manifest["interpreters"].items() if e.get("ablation_of")}
    # only 3.6 is timed with it: 2.7's read-ahead is no setting of its open()
    assert entries == {"3.6~buffering=8192": ("3.6", "buffering", 8192, [OP], "ok", {})}
    assert {e["status"] for e in manifest["interpreters"].values()} == {"ok"}   # it verified
    data = analysis.load_run(store.Run(lines_run, "B"))
    assert set(zip(data.ablations["series"], data.ablations["op"])) == {
        ("3.6", f"{OP}~buffering=8192")}
    an = analyse(data, None, 0.05)
    step = the_step_of(an, OP, "2.7", "3.6")
    result = ablation.outcome(an, step)
    assert result is not None and not result.failed and result.knob.entry == "PEP 3116"
    assert "with an 8 KiB buffer 3.6.15 is" in result.words
    assert "its own default" not in result.words                 # 2.7 is not timed with it
    assert result.words.startswith("confirmed by ablation" if result.reproduces
                                   else "not reproduced by the ablation")
    verdict = evidence.verdict_for(an, step)
    assert verdict.ablation == result.words
    if result.reproduces:   # PEP 3116 is the stated cause: the ablation tests it
        assert verdict.test is None or verdict.test.by == evidence.ABLATION_TEST
    if any(f.op == OP and (f.a, f.b) == ("2.7", "3.6") for f in an.findings()):
        said = result.words if result.reproduces else result.words.replace(
            "not reproduced by the ablation", "not supported by the ablation")
        assert markdown.md(said) in all_pages(analysis.load_run(store.Run(lines_run, "B")))
