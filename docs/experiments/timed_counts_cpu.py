"""CPU time of one series' counting pass (every core op, every counter, no counts cache):
the children's user + system time, and the wall time (docs/experiments/2026-11-27-timed-counts.md).

    python docs/experiments/timed_counts_cpu.py PYTHON OUT [--all-timed]

Run from a checkout (the counting code of that checkout is measured) with the tests'
environment's Python; OUT: an empty scratch directory outside the tree. ``--all-timed``:
every op's instructions at the timed size too (countsizes.SCALED emptied).
"""
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, "scripts")
from iomatrix.measuring import counters, counttools, runner, selection  # noqa: E402
from iomatrix.storing import store  # noqa: E402

py, out = sys.argv[1], Path(sys.argv[2])
if "--all-timed" in sys.argv:
    from iomatrix.measuring import countsizes
    countsizes.SCALED.clear()
ops = [(s, op) for s, o in selection.core_ops().items() for op in o]


def cpu(a, b):
    return b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime


t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
fixtures = out / "fixtures"
counters.make_fixtures(sorted({s for s, _ in ops}), "quick", fixtures)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
run = store.Run(out / "results", "R")
run.make_directory()
info = {"executable": py, "implementation": "cpython", "label": Path(py).parent.parent.name}
series = counters.Series(info["label"], info, "c", ops)
which = counters.COUNTERS
entry = counters.count_series(run, series, which, counttools.tool_problems(which, out / "w"),
                              fixtures, out / "w", "quick", runner.Conditions(), 600.0,
                              counttools.methods(which), 0, log=print)
r2 = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{info['label']}: status {entry['status']} fixtures cpu {cpu(r0, r1):.1f} s; counting "
      f"cpu {cpu(r1, r2):.1f} s, wall {time.monotonic() - t0:.1f} s")
