"""The A/A twin's caveat on a finding: the twin flagged the finding's op in this run.

The A/A twin (``--aa``) is the newest plain CPython timed a second time under another label.
Where it differs significantly from its original on an op, the harness moved that op by
more than its interval allows between two identical interpreters (docs/methodology.md, "The
A/A twin": path lengths that move buffers, an op whose values split into modes), and any
release step of that op can carry the same bias. Each finding on such an op says so in its
row: on the main page (``note``, in the findings table's last column) and in data.csv
(``csv_value``, the ``aa_caveat`` column of the finding's row). A pooled report's figures rest
on every pooled run, so a pooled figure of an op the A/A twin of *any* pooled run flags says
in how many (``pool_note``, below the pooled figure; data.csv's ``pooled_aa_flagged_runs``).
"""
from __future__ import annotations

from iomatrix.analysing import pooling
from iomatrix.analysing.comparisons import Analysis
from iomatrix.reporting.markdown import code, nowrap


def flagged(an: Analysis) -> dict:
    """op -> [(twin series, its original, Comparison)] of every A/A twin that flags the op
    (its interval against its original excludes 1); empty in a run without an A/A twin.
    The pool records the same of each pooled run (pooling.aa_flags)."""
    return pooling.aa_flags(an)


def pool_runs(pool: pooling.Pool, op: str) -> list:
    """The names of the pooled runs whose A/A twin flags ``op``, each once."""
    return list(dict.fromkeys(name for name, *_ in pool.aa_flagged(op)))


def pool_note(pool: pooling.Pool, op: str) -> str:
    """Below a pooled figure: "A/A flags it" and "in k of n runs" on two lines, or '' where
    no pooled run's twin flags it (lines as narrow as the findings table's "[95% interval]")."""
    runs = pool_runs(pool, op)
    if not runs:
        return ""
    return "<br>" + nowrap("*A/A flags it*") + "<br>" + \
        nowrap(f"*in {len(runs)} of {len(pool.runs)} runs*")


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
