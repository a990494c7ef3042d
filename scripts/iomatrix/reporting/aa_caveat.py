"""The A/A twin's caveat on a finding: the twin flagged the finding's op in this run.

The A/A twin (``--aa``) is the newest plain CPython timed a second time under another label.
Where it differs significantly from its original on an op, the harness moved that op by
more than its interval allows between two identical interpreters (docs/methodology.md, "The
A/A twin": path lengths that move buffers, an op whose values split into modes), and any
release step of that op can carry the same bias. Each finding on such an op says so in its
row: on the main page (``note``, in the findings table's last column) and in data.csv
(``csv_value``, the ``aa_caveat`` column of the finding's row).
"""
from __future__ import annotations

from iomatrix.analysing.comparisons import Analysis
from iomatrix.reporting.markdown import code, nowrap


def flagged(an: Analysis) -> dict:
    """op -> [(twin series, its original, Comparison)] of every A/A twin that flags the op
    (its interval against its original excludes 1); empty in a run without an A/A twin."""
    out: dict = {}
    for v in an.lin.variants:
        if v.kind != "aa" or v.twin is None:
            continue
        for (op, series), c in an.twin_cmp.items():
            if series == v.series and c.significant:
                out.setdefault(op, []).append((v.series, v.twin, c))
    return out


def note(an: Analysis, op: str) -> str | None:
    """The row's caveat on the main page, or None where no A/A twin flags the op."""
    found = flagged(an).get(op)
    if not found:
        return None
    said = "<br>".join(nowrap(f"{code(twin)}: {c.ratio:.2f} [{c.low:.2f}, {c.high:.2f}]")
                       for twin, _, c in found)
    return f"*A/A flags this op:*<br>{said}<br>*a bias of that size*<br>*may be in the step*"


def csv_value(an: Analysis, op: str) -> str:
    """The ``aa_caveat`` cell of a finding's data.csv row: each flagging twin's ratio to its
    original with its interval ("3.15-aa/3.15 1.044 [1.022, 1.066]"), blank otherwise."""
    return "; ".join(f"{twin}/{of} {c.ratio:.3f} [{c.low:.3f}, {c.high:.3f}]"
                     for twin, of, c in flagged(an).get(op, []))
