"""Why the A/A twin (3.15 vs 3.15-aa: one executable) flags chunks_read_64KiB.

The matrix runs the A/A twin as a second series of the same executable, but each label
gets its own environment (iomatrix.interpreters.environments: ``<envs_dir>/<label>/``), so
the two labels' workers differ in their executable path (``.../3.15/bin/python`` vs
``.../3.15-aa/bin/python``), sys.prefix, sys.path and the --output/--errors part paths
(``.parts/<label>/...``). This script starts fresh worker processes, alternating
conditions that differ in one such factor only, pinned to one CPU, under the steady
allocator's variables, and prints per-call CPU times and (bare mode) where the 64 KiB
buffers land (address of the bytes data mod 4096 and mod 64).

Modes:

  bare     (default) a small child that does what chunks_read_64KiB does (open the fixture,
           f.read(65536) until EOF, keep the last chunk) for 1 warm-up and --calls calls,
           timed in CPU time (getrusage, as the harness's cpu clock); it imports pyperf
           first when it can, like a worker. Conditions:
             venv:LABEL   <envs>/LABEL/bin/python, argv holding LABEL's part paths
             pad:N        <envs>/<first label>/bin/python and its argv, plus an environment
                          variable of N bytes (shifts only the initial stack)
             argv:N       the same, plus an argument of N bytes
             shift:N      the same, and the child keeps a bytearray(N) made before the op
                          (N > 512: from malloc), which moves where the reader's 128 KiB
                          buffer and the 64 KiB bytes objects land in the heap
             sys:LABEL    the executable itself (no venv), argv holding LABEL's part paths
  harness  the real worker: suites/harness.py --batch --suite chunks --ops
           '["chunks_read_64KiB"]' with the command line iomatrix.measuring.workers builds,
           for the conditions venv:LABEL only; values from its pyperf file.

Usage (stdlib only; run with any Python 3.6+):

  python3 docs/experiments/aa_chunks.py --processes 40
  python3 docs/experiments/aa_chunks.py --conditions venv:3.15,venv:3.15-aa,pad:0,pad:3 \
      --processes 60 --calls 5
  python3 docs/experiments/aa_chunks.py --mode harness --processes 30 --calls 5

The fixture (48 MiB, the quick profile's chunks.bin) is made once with the harness
(``harness.py --make-fixtures chunks quick DIR``) under --work-dir (default /tmp/aa_chunks).
Processes run one at a time, the conditions in a shuffled order per round. The user/sys
split comes from getrusage, which charges whole ticks: only their sum (the harness's cpu
clock) is a measurement. The addresses are deterministic for one command line, environment
and child code: any change to the child script moves them (and may swap which label is slow).
"""
from __future__ import print_function

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(REPO, "suites", "harness.py")
STEADY = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824",
          "MALLOC_TOP_PAD_": "0", "MIMALLOC_PURGE_DELAY": "-1"}
SIZE = 64 * 1024

CHILD = r'''
import os, sys, json, resource
try:
    import pyperf  # as a worker does: its imports shape the heap before the op runs
except ImportError:
    pass
path, calls, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
shift = int(os.environ.get("AA_SHIFT", "0"))
keep = bytearray(shift) if shift else None   # moves the malloc heap's next free chunk
HEADER = sys.getsizeof(b"") - 1   # bytes object header: its data starts at id + HEADER

def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime, u.ru_nivcsw, u.ru_utime, u.ru_stime

def run(addrs):
    total = count = 0
    last = None
    with open(path, "rb") as f:
        read = f.read
        block = read(size)
        while block:
            count += 1
            total += len(block)
            if addrs is not None and count <= 8:
                addrs.add(id(block) + HEADER)
            last = block
            block = read(size)
    return total, count, last

times, user, system, preempted = [], [], [], 0
for i in range(calls + 1):
    addrs = set() if i == calls else None
    t0, s0, u0, k0 = cpu()
    total, count, last = run(addrs)
    t1, s1, u1, k1 = cpu()
    if i:
        times.append(t1 - t0)
        user.append(u1 - u0)
        system.append(k1 - k0)
        preempted += s1 != s0
    assert total == os.path.getsize(path)
print(json.dumps({"times": times, "user": user, "system": system,
                  "addrs": sorted(addrs), "preempted": preempted,
                  "stack": id(sys._getframe()) % 4096}))
'''


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=("bare", "harness"), default="bare")
    p.add_argument("--envs", default=os.path.join(REPO, ".nox", "iomatrix-envs"))
    # The provisioned 3.15.0rc2 in the iomatrix cache ($IOMATRIX_CACHE, else ~/.cache/iomatrix)
    cache = os.environ.get("IOMATRIX_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                              "iomatrix")
    p.add_argument("--executable", default=os.path.join(cache, "pythons", "3.15.0rc2", "bin",
                                                        "python3"),
                   help="for sys:LABEL conditions")
    p.add_argument("--conditions", default="venv:3.15,venv:3.15-aa")
    p.add_argument("--processes", type=int, default=30, help="per condition")
    p.add_argument("--calls", type=int, default=5, help="timed calls (values) per process")
    p.add_argument("--cpu", default="1")
    p.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "aa_chunks"))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--raw", default=None, help="write every process's record here (JSON)")
    return p.parse_args()


def fixture(args, python):
    fx = os.path.join(args.work_dir, "fixtures")
    path = os.path.join(fx, "chunks.bin")
    if not os.path.exists(path):
        subprocess.check_call([python, HARNESS, "--make-fixtures", "chunks", "quick", fx])
    return fx, path


def part_paths(work, label):
    parts = os.path.join(work, "results", "RUN", ".parts", label)
    if not os.path.isdir(parts):
        os.makedirs(parts)
    partial = os.path.join(parts, "r000--chunks.json.partial")
    return partial, partial + ".errors"


def command(args, cond, fx, path, child):
    kind, _, value = cond.partition(":")
    labels = [c.split(":", 1)[1] for c in args.conditions.split(",") if c.startswith("venv:")]
    label = value if kind in ("venv", "sys") else (labels[0] if labels else "3.15")
    python = (args.executable if kind == "sys"
              else os.path.join(args.envs, label, "bin", "python"))
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    env.update(STEADY)
    partial, errors = part_paths(args.work_dir, label)
    if args.mode == "harness":
        if os.path.exists(partial):
            os.remove(partial)
        cmd = [python, HARNESS, "--batch", "--suite", "chunks", "--ops",
               json.dumps(["chunks_read_64KiB"]), "--fixtures", fx,
               "--scratch", os.path.join(args.work_dir, "scratch"),
               "--iomatrix-profile", "quick", "--io", "c", "--cache", "warm",
               "--allocator", "steady", "--output-state", "new", "--round", "0",
               "--warmups", "1", "--values", str(args.calls), "--output", partial,
               "--errors", errors]
    else:
        cmd = [python, child, path, str(args.calls), str(SIZE), "--output", partial,
               "--errors", errors]
    if kind == "pad":
        env["AA_PAD"] = "x" * int(value)
    elif kind == "argv":
        cmd.append("y" * int(value))
    elif kind == "shift":
        env["AA_SHIFT"] = value
    return ["taskset", "-c", args.cpu] + cmd, env, partial


def one(args, cond, fx, path, child):
    cmd, env, partial = command(args, cond, fx, path, child)
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if out.returncode:
        raise SystemExit("%s failed:\n%s" % (cond, out.stderr[-2000:]))
    if args.mode == "harness":
        with open(partial) as f:
            doc = json.load(f)
        run = doc["benchmarks"][0]["runs"][-1]
        return {"times": run["values"], "addrs": [], "preempted": 0}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    args = parse()
    conds = args.conditions.split(",")
    if not os.path.isdir(args.work_dir):
        os.makedirs(args.work_dir)
    scratch = os.path.join(args.work_dir, "scratch")
    if not os.path.isdir(scratch):
        os.makedirs(scratch)
    first_python = os.path.join(args.envs, "3.15", "bin", "python")
    fx, path = fixture(args, first_python if os.path.exists(first_python) else args.executable)
    child = os.path.join(args.work_dir, "child.py")
    with open(child, "w") as f:
        f.write(CHILD)
    rng = random.Random(args.seed)
    records = {c: [] for c in conds}
    for _ in range(args.processes):
        order = list(conds)
        rng.shuffle(order)
        for cond in order:
            records[cond].append(one(args, cond, fx, path, child))
    if args.raw:
        with open(args.raw, "w") as f:
            json.dump(records, f)
    report(args, conds, records)


def med(r, key):
    return statistics.median(r[key]) if r.get(key) else float("nan")


def offsets(r, modulo):
    return "/".join("%d" % (a % modulo) for a in r["addrs"])


def report(args, conds, records):
    base = statistics.median(med(r, "times") for r in records[conds[0]])
    print("mode %s, %d processes per condition, %d timed calls each (after 1 warm-up), "
          "CPU %s" % (args.mode, args.processes, args.calls, args.cpu))
    print("per-call CPU ms: median (p10, p90) over processes of each process's median; "
          "user/sys: medians; ratio: median / the first condition's")
    head = "%-14s %7s %7s %7s %6s %6s %6s" % ("condition", "median", "p10", "p90", "user",
                                              "sys", "ratio")
    if args.mode == "bare":
        head += "  data address mod 4096 of the two alternating 64 KiB blocks (processes)"
    print(head)
    for cond in conds:
        meds = sorted(med(r, "times") for r in records[cond])
        line = "%-14s %7.3f %7.3f %7.3f %6.3f %6.3f %6.3f" % (
            cond, 1e3 * statistics.median(meds), 1e3 * meds[len(meds) // 10],
            1e3 * meds[(9 * len(meds)) // 10],
            1e3 * statistics.median(med(r, "user") for r in records[cond]),
            1e3 * statistics.median(med(r, "system") for r in records[cond]),
            statistics.median(meds) / base)
        if args.mode == "bare":
            seen = {}
            for r in records[cond]:
                seen[offsets(r, 4096)] = seen.get(offsets(r, 4096), 0) + 1
            line += "  " + ", ".join("%s (%d)" % kv for kv in
                                     sorted(seen.items(), key=lambda kv: -kv[1])[:3])
        print(line)
    if args.mode != "bare":
        return
    for modulo in (4096, 64):
        print("\nall conditions pooled, by the blocks' data address mod %d:" % modulo)
        print("  %-12s %5s %7s %6s %6s" % ("offsets", "procs", "median", "user", "sys"))
        by = {}
        for cond in conds:
            for r in records[cond]:
                by.setdefault(offsets(r, modulo), []).append(r)
        for key, rs in sorted(by.items(), key=lambda kv: statistics.median(
                med(r, "times") for r in kv[1])):
            print("  %-12s %5d %7.3f %6.3f %6.3f" % (
                key, len(rs), 1e3 * statistics.median(med(r, "times") for r in rs),
                1e3 * statistics.median(med(r, "user") for r in rs),
                1e3 * statistics.median(med(r, "system") for r in rs)))


if __name__ == "__main__":
    main()
