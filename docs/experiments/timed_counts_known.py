"""The known case of issue 41 item 4: ``read_allAtOnce_textMode`` 3.13.15 -> 3.14 as the
report reads it from two counters files (docs/experiments/2026-11-27-timed-counts.md).

    python docs/experiments/timed_counts_known.py OLD.counters.json NEW.counters.json OUT

OUT: an empty scratch directory (the two files are copied into one run directory there).
"""
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, "scripts")
from iomatrix.analysing import callpaths, countrows, counts  # noqa: E402
from iomatrix.reporting import findings  # noqa: E402

OP = "read_allAtOnce_textMode"
old, new, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]) / "R"
out.mkdir(parents=True)
for path in (old, new):
    shutil.copy(path, out)
a, b = (p.name[:-len(".counters.json")] for p in (old, new))
rows = counts.load_counts(out)
for s in (a, b):
    r = countrows.lookup(rows).by_key[(s, OP, "instructions")]
    print(f"{s}: instructions/call {r['per_call']:,.0f}, bytes/call {r['bytes_per_call']:,}, "
          f"basis {r.get('count_basis')}")
move = counts.count_move(rows, OP, a, b)
print("move:", {k: move[k] for k in ("up", "down", "instructions")})
f = SimpleNamespace(op=OP, a=a, b=b)
print("most in:", findings.top_function(countrows.load_functions(out), rows, f,
                                        callpaths.load_call_graphs(out)))
print("sentence:", counts.size_sentence(rows, [(OP, a, b, float(rows[0]["bytes_per_call"]))]))
