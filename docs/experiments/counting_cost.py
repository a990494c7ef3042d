"""What one interpreter's counting pass costs, per tool, and how far two ways' counts differ.

    python3 docs/experiments/counting_cost.py passes PYTHON COUNTERS_FILE OUT.json [--per-suite]
        [--scripts DIR]
    python3 docs/experiments/counting_cost.py diff A.json B.json

``passes``: the ops of a stored counters file (their suites and order), counted afresh with
PYTHON by each tool (plain, strace, valgrind) at the quick profile's counting sizes, in a
temporary directory; the CPU seconds of each tool's workers (getrusage of the children: the
figure that holds on a loaded machine) and the counts into OUT.json. ``--per-suite``: one
worker per suite, as before 2026-11-27 (needs the host code of that time: ``--scripts`` the
``scripts/`` directory of a checkout of it). ``diff``: the ops whose system calls differ and
the instructions' relative differences beyond 0.02%.
"""
import argparse
import gzip
import json
import os
import resource
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def passes(args):
    sys.path.insert(0, str(args.scripts or HERE.parent.parent / "scripts"))
    from iomatrix.measuring import counters
    from iomatrix.measuring.spec import Conditions
    opener = gzip.open if args.counters.endswith(".gz") else open
    with opener(args.counters, "rt") as f:
        stored = json.load(f)
    pairs = sorted(((v["suite"], op) for op, v in stored["ops"].items()), key=lambda p: p[0])
    root = Path(tempfile.mkdtemp(prefix="counting-cost-"))
    (root / "tmp").mkdir()
    counters.make_fixtures(sorted({s for s, _ in pairs}), "quick", root / "fixtures")
    series = counters.Series("x", {"executable": args.python, "implementation": "cpython"}, "c",
                             [])
    out = {}
    for kind in ("plain", "strace", "valgrind"):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        options = dict(fixtures=root / "fixtures", work=root / "s0000", tmp_dir=root / "tmp",
                       profile="quick", conditions=Conditions(), timeout=600, log=print)
        if args.per_suite:
            results = {}
            for suite in sorted({s for s, _ in pairs}):
                results.update(counters.run_pass(kind, series, suite,
                                                 [op for s, op in pairs if s == suite], **options))
        else:
            results = counters.run_pass(kind, series, None, pairs, **options)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        failed = [op for op, (state, _) in results.items() if state != "ok"]
        print(f"{kind}: {cpu:.2f} s of CPU; failed: {failed}", flush=True)
        out[kind] = results
    Path(args.out).write_text(json.dumps(out))
    print(f"counts in {args.out}; work files in {root}")


def diff(args):
    a, b = (json.loads(Path(p).read_text()) for p in (args.a, args.b))
    print("syscalls differ:", [op for op in a["strace"]
                               if a["strace"][op][1]["syscalls"] != b["strace"][op][1]["syscalls"]])
    rel = sorted((a["valgrind"][op][1]["instructions"] / b["valgrind"][op][1]["instructions"] - 1,
                  op) for op in a["valgrind"])
    print("instructions, A/B - 1:", ", ".join(f"{op} {x:+.5f}" for x, op in rel
                                             if abs(x) > 0.0002))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("passes")
    p.add_argument("python")
    p.add_argument("counters")
    p.add_argument("out")
    p.add_argument("--per-suite", action="store_true")
    p.add_argument("--scripts", type=Path)
    d = sub.add_parser("diff")
    d.add_argument("a")
    d.add_argument("b")
    args = parser.parse_args()
    (passes if args.command == "passes" else diff)(args)


if __name__ == "__main__":
    main()
