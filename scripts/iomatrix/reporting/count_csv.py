"""data.csv's rows of the counts: per series and op, the counts per call behind the findings'
sentences, each with the size it was counted at (``count_basis``: "timed size", "scaled from
1/8, instructions per byte checked at 1/16", or an older run's "counting size, not scaled";
iomatrix.measuring.countsizes)."""
from __future__ import annotations

# data.csv's statistic of each counter given: the counters a finding's counts cell speaks of.
STATISTICS = {"instructions": "instructions_per_call", "syscalls": "syscalls_per_call",
              "syscall_bytes": "syscall_bytes_per_call"}


def count_rows(an, writer, run_id: str, fields: list) -> None:
    """One row per series, op and counter of STATISTICS, value per call, the basis in the
    ``count_basis`` column (the other columns blank)."""
    rows = getattr(an, "counted", None) or []
    for r in sorted(rows, key=lambda r: (r["series"], r["op"], r["counter"])):
        statistic = STATISTICS.get(r["counter"])
        if statistic is None or r["op"] not in an.suite_of:
            continue
        row = dict.fromkeys(fields, "")
        row.update(run_id=run_id, series=r["series"], op=r["op"], suite=an.suite_of[r["op"]],
                   category=an.category_of[r["op"]], statistic=statistic,
                   value=repr(r["per_call"]), count_basis=r.get("count_basis", ""))
        writer.writerow([row[f] for f in fields])
