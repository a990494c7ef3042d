"""The plain timer of ``nox -s crosscheck``: one op, N calls in a loop, in a fresh process.

    python _plain_timer.py --suite lutz2009 --op OP --fixtures DIR --scratch DIR
                           [--calls 7] [--output-state new|overwrite]

No pyperf, no warm-up, no batch, no other op before it: the process is started
for this op alone, calls it ``--calls`` times and prints one JSON line with the
wall time and the CPU time of every call (and the page faults and context
switches of each), so the host can take each process's best call and the mean of
its settled calls (iomatrix.commands.crosscheck) by the clock the harness run used. It runs under every interpreter from
2.7 on, so it is written in the common subset of 2.7 and 3.x.

Why it reuses the suite's ops instead of spelling the loops out again: the
crosscheck is there to test the harness (pyperf's calibration, the batch
worker, the shuffled order of ops in one process, warm-ups, the stated
conditions), not the op code. The lutz2009 ops are already plain loops over the
builtin ``open()``; a second copy of them could only differ by mistake, and a
difference would then say nothing about the harness. The fixtures are the
run's own (same files, same sizes), every call is verified like in the harness,
and the output state is put in place here, with its own two lines of code, not
the harness's function.

The allocator state comes from the environment the host sets (the same glibc
variables as the matrix: suites/_results.py ALLOCATOR_ENVIRONMENT); the process
reports what it saw. Under ``default`` it refuses, as the harness does, an
environment that sets allocator variables unless ``--keep-allocator-env``; the
process times one op only, so its history is that op's own calls.
"""
from __future__ import division, print_function

import argparse
import json
import os
import sys
import timeit

import _results as results
from _api import SkipOp, load_context, load_suite
from harness import allocator_state, inherited_allocator_refusal

# timeit's default timer is the best wall clock of each version: time.time() on 2.7
# (gettimeofday, microseconds), time.perf_counter() from 3.3.
clock = timeit.default_timer


def rusage():
    try:
        import resource
    except ImportError:  # Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF)


def put_outputs_in_state(op, output_state):
    """The stated output state, outside the timed region (the harness does the same)."""
    for path in op.outputs:
        if output_state == "new":
            if os.path.exists(path):
                os.remove(path)
        elif not os.path.exists(path):
            op.verify(op.run())  # "overwrite": an untimed call leaves a file to write over


def cpu_seconds(usage):
    return usage.ru_utime + usage.ru_stime


def time_op(op, calls, output_state):
    """[(wall seconds, cpu seconds, minflt, nivcsw)] of ``calls`` calls of ``op``, verified.

    CPU time is user + system time of this process (getrusage), the harness's
    clock for a warm cache; None where there is no getrusage.
    """
    if op.unavailable:
        raise SkipOp(op.unavailable)
    if op.setup is not None:
        op.setup()
    rows = []
    try:
        for _ in range(calls):
            put_outputs_in_state(op, output_state)
            before = rusage()
            t0 = clock()
            result = op.run()
            elapsed = clock() - t0
            after = rusage()
            op.verify(result)
            if before is None:
                rows.append((elapsed, None, None, None))
            else:
                rows.append((elapsed, cpu_seconds(after) - cpu_seconds(before),
                             after.ru_minflt - before.ru_minflt,
                             after.ru_nivcsw - before.ru_nivcsw))
    finally:
        if op.teardown is not None:
            op.teardown()
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="_plain_timer.py")
    parser.add_argument("--suite", default="lutz2009")
    parser.add_argument("--op", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--calls", type=int, default=7)
    parser.add_argument("--output-state", dest="output", default="new",
                        choices=results.OUTPUT_STATES)
    parser.add_argument("--allocator", default="steady", choices=results.ALLOCATORS,
                        help="the state the host pinned (recorded as seen, not set here)")
    parser.add_argument("--keep-allocator-env", dest="keep_allocator_env", action="store_true",
                        help="under --allocator default, time even with MALLOC_*/MIMALLOC_* "
                             "variables in the environment (recorded either way)")
    args = parser.parse_args(argv)
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    refusal = inherited_allocator_refusal(args.allocator, args.keep_allocator_env)
    if refusal:
        parser.error(refusal)
    ctx = load_context(args.fixtures, args.scratch, "quick", "c", "warm", args.output)
    ops = dict((op.name, op) for op in load_suite(args.suite).ops(ctx))
    if args.op not in ops:
        parser.error("unknown op %r; valid ops: %s" % (args.op, ", ".join(sorted(ops))))
    op = ops[args.op]
    for name in op.evict:
        ctx.check_fixture(name)  # fixture unchanged; also its warm read, as in the harness
    rows = time_op(op, args.calls, args.output)
    print(json.dumps({
        "op": op.name, "python": sys.version.split()[0],
        "allocator": allocator_state(args.allocator),
        "allocator_env": results.describe_variables(results.allocator_variables(os.environ)),
        "output": args.output if op.outputs else None,
        "wall": [r[0] for r in rows], "cpu": [r[1] for r in rows],
        "minflt": [r[2] for r in rows], "nivcsw": [r[3] for r in rows]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
