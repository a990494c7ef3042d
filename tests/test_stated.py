"""Findings stated right (issue 35): like with like, the firm rule, replication across runs."""
from __future__ import annotations

import types

from iomatrix import stats
from iomatrix.analysing import comparisons, study
from iomatrix.commands import agree


def comparison(ratio, low, high, n=10):
    return stats.Comparison(ratio, low, high, not low <= 1 <= high, n, n, paired=True)


def test_2x_text_ops_of_the_builtin_open_read_bytes_and_the_others_decode():
    assert study.undecoded_on_2x("lutz2009", "read-text")
    assert study.undecoded_on_2x("lutz2009", "write-text")
    assert study.undecoded_on_2x("manyfiles", "manyfiles")
    assert not study.undecoded_on_2x("lutz2009", "read-binary")
    assert not study.undecoded_on_2x("iobench", "write-text")      # io.open on 2.7: decodes
    assert study.bytes_on_2x_note("read_allAtOnce_textMode", "read-text") == \
        "2.7 reads bytes here, 3.x decodes"
    assert study.bytes_on_2x_note("write_byLines_textMode", "write-text") == \
        "2.7 writes bytes here, 3.x encodes"


def test_a_step_the_counts_do_not_back_is_never_firm_where_the_run_counted():
    c = comparison(1.5, 1.4, 1.6)
    far = (1.45, 1.55)
    assert comparisons.firmness_of(c, 0.05, far, False, 0.0, "confirmed", counted=True) == "firm"
    assert comparisons.firmness_of(c, 0.05, far, False, 0.0, "memory", counted=True) == "firm"
    for evidence in ("time only", None):
        assert comparisons.firmness_of(c, 0.05, far, False, 0.0, evidence,
                                       counted=True) == "borderline"
    # a run without the counting pass: firm on its rounds alone, as before
    assert comparisons.firmness_of(c, 0.05, far, False, 0.0, None, counted=False) == "firm"


def view(name, boot, cells, firm=(), borderline=()):
    """A RunView-like run: {cell: (ratio, low, high)}, the cells named firm/borderline."""
    comparisons_ = {cell: comparison(*values) for cell, values in cells.items()}
    verdicts = {cell: ("slower" if c.ratio > 1.05 and c.significant else
                       "faster" if c.ratio < 1 / 1.05 and c.significant else "same")
                for cell, c in comparisons_.items()}
    classified = {cell: comparisons.Finding(cell.op, cell.a, cell.b, comparisons_[cell],
                                            firmness="firm" if cell in firm else "borderline",
                                            next_run=(comparisons_[cell].low,
                                                      comparisons_[cell].high))
                  for cell in list(firm) + list(borderline)}
    return types.SimpleNamespace(name=name, boot=boot, cells=comparisons_, verdicts=verdicts,
                                 classified=classified)


def test_replication_counts_held_contradicted_and_the_intervals_cover_by_boot():
    held, flipped, gone = (agree.Cell(op, "3.13", "3.14") for op in ("a", "b", "c"))
    one = view("one", "boot-1", {held: (2.0, 1.9, 2.1), flipped: (1.5, 1.4, 1.6),
                                 gone: (1.3, 1.2, 1.4)}, firm=[held, flipped, gone])
    other = view("other", "boot-2", {held: (2.05, 1.95, 2.2), flipped: (0.7, 0.6, 0.8),
                                     gone: (1.0, 0.99, 1.01)})
    r = agree.replication(one, other, 0.05)
    assert (r.firm, r.held, r.contradicted) == (3, 1, 2)
    assert (r.next_run, r.covered) == (3, 1)       # only 2.05 lies in [1.9, 2.1]
    assert r.same_boot is False
    lines = "\n".join(agree.replication_lines(agree.replications([one, other], 0.05)))
    assert "different boots" in lines and "held 1 of 3" in lines
    unknown = view("old", None, {})
    assert agree.replication(one, unknown, 0.05).same_boot is None


def test_the_firm_findings_not_held_are_listed_with_whether_the_other_run_could_tell():
    wide, flipped = agree.Cell("a", "3.13", "3.14"), agree.Cell("b", "3.13", "3.14")
    one = view("one", "boot-1", {wide: (1.3, 1.2, 1.4), flipped: (1.5, 1.4, 1.6)},
               firm=[wide, flipped])
    other = view("other", "boot-2", {wide: (1.1, 0.8, 1.5), flipped: (0.7, 0.6, 0.8)})
    r = agree.replication(one, other, 0.05)
    assert [(m["op"], m["unresolved"]) for m in r.not_held] == [("a", True), ("b", False)]
    assert r.unresolved == 1
    text = "\n".join(agree.not_held_lines([r]))
    assert "2 in all; in 1 the other run's 95% interval holds both 1" in text
    assert "1.30 [1.20, 1.40]" in text and "1.10 [0.80, 1.50]" in text
    # an interval the other run does not have (an unpaired old run): never "could not tell"
    other.cells[wide] = stats.Comparison(1.1, None, None, False, 10, 10, paired=False)
    assert agree.replication(one, other, 0.05).not_held[0]["unresolved"] is False
    assert agree.not_held_lines([agree.replication(one, one, 0.05)]) == []


def test_a_distributions_build_says_how_it_links():
    from iomatrix.reporting.sections import build_text
    assert build_text({"recipe": "debian-O2", "linkage": "static", "shared": False}) == \
        "debian-O2, static"
    assert build_text({"recipe": "shared-O3", "linkage": "shared"}) == "shared-O3"
    # an older run recorded sysconfig's word only: named as such, not taken for the binary's
    assert build_text({"recipe": "debian-O2", "shared": True}) == \
        "debian-O2, shared (sysconfig's word)"
