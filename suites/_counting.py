"""The worker side of the counting pass: K calls of each op between markers.

Runs under every interpreter of the matrix (Python 2.7, 3.6+, free-threaded
builds, PyPy), so it is written in the common subset of 2.7 and 3.x, and it
never imports pyperf: counting needs only the standard library. The host side
is ``scripts/iomatrix/measuring/counters.py``; it runs this once per counter and size for
each series (plain and under strace at the timed size; under valgrind at the timed size, and
for the ops of ``countsizes.SCALED`` at the two counting sizes) and cuts the counted windows
out.

    python suites/harness.py --count --suite lutz2009 --ops '["read_byBlocks_binaryMode"]' \\
        --fixtures DIR --scratch DIR --iomatrix-profile smoke --io c --calls 1 \\
        --output counts.jsonl

The host starts it with the scratch directory as its working directory (the
markers below are relative paths). For each op, in the order given:

1. print ``START <op>`` (the host times out, or blames, the op it was in);
2. fixture check (which is also the warm read), setup;
3. one warm-up call, verified; the op's output files put in the run's stated state
   (as the timing pass does); ``gc.collect()``, so that the counted calls do
   not depend on what earlier ops of the batch allocated;
4. ``getrusage``; the begin markers; K calls (results kept, not verified yet);
   the end markers; ``getrusage``;
5. every result verified, outside the counted window; teardown;
6. one JSON object on one line appended to --output (flushed: the ops done
   before a crash keep their counts).

The markers let the host cut exactly the counted window out of a trace of the
whole process:

* for strace: ``os.stat()`` of a relative path that does not exist,
  ``iomatrix-count-begin-<index>`` before and ``iomatrix-count-end-<index>``
  after the calls (short, so that strace's default 32-character string limit
  never cuts them); it shows as stat / newfstatat / statx ... = -1 ENOENT
  under every interpreter. Between the two, the first and the last syscall are
  the getppid() markers below, which the host drops.
* for valgrind: ``os.getppid()`` just inside the stat markers. Every
  interpreter calls libc's ``getppid`` for it and nothing else in these
  processes does, so ``callgrind --dump-before=getppid`` writes one dump at
  each marker: the dump made at the end marker holds exactly the instructions
  from the begin marker's getppid to the end marker's (the K calls, the loop
  around them and the return from one getppid).

The JSON object per op: ``{"op", "suite", "index", "calls", "bytes_per_call",
"inner_loops", "markers", "minflt", "majflt", "nvcsw", "nivcsw", "error"}``;
the rusage fields are totals over the K calls (the host divides), ``markers``
how many getppid() markers the op passed (0, 1 or 2), ``error`` is None or why
the op was not counted (then the counts are absent).
"""
from __future__ import division, print_function

import gc
import json
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from _api import (SkipOp, count_divisor_factor, load_context, load_suite, prepare_outputs,  # noqa: E402
                  prepare_untimed)
from _results import CACHE_MODES, IO_STACKS, OUTPUT_STATES, PROFILES  # noqa: E402

MARKER_PREFIX = "iomatrix-count-"
RUSAGE_FIELDS = ("ru_minflt", "ru_majflt", "ru_nvcsw", "ru_nivcsw")


def marker_name(kind, index):
    """``iomatrix-count-begin-3``: the relative path the marker stats (the host parses it)."""
    return "%s%s-%d" % (MARKER_PREFIX, kind, index)


def _stat_marker(path):
    try:
        os.stat(path)
    except OSError:
        pass
    else:  # someone made the file: the marker would still show, but say so
        sys.stderr.write("iomatrix: marker path %s exists\n" % path)


def _rusage():
    import resource
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return [getattr(usage, field) for field in RUSAGE_FIELDS]


class ValgrindSwitch(object):
    """Callgrind's START/STOP_INSTRUMENTATION client requests, made from Python.

    A valgrind client request is a magic instruction sequence (four rotates of
    rdi that add up to 128 bits, then ``xchg rbx, rbx``): a no-op natively,
    recognised by valgrind. The 33 bytes below are that sequence as a C
    function ``size_t request(size_t args[6])`` (x86-64 System V), put into an
    executable page with mmap and called through ctypes. With it the host runs
    callgrind with ``--instr-atstart=no``: start-up, fixture checks, setup and
    warm-up calls run at close to the speed of valgrind's null tool, and only the
    counted windows are instrumented: the pass takes about half the time (lutz2009
    at full size under 3.13: 55 s instead of 114 s).
    Only x86-64; elsewhere the host instruments everything.
    """

    CODE = (b"\x48\x89\xf8"                    # mov rax, rdi     (&args)
            b"\x31\xd2"                        # xor edx, edx     (default result 0)
            b"\x48\xc1\xc7\x03\x48\xc1\xc7\x0d"  # rol rdi, 3; rol rdi, 13
            b"\x48\xc1\xc7\x3d\x48\xc1\xc7\x33"  # rol rdi, 61; rol rdi, 51
            b"\x48\x87\xdb"                    # xchg rbx, rbx    (the request)
            b"\x48\x89\xd0"                    # mov rax, rdx     (its result)
            b"\xc3")                           # ret
    RUNNING_ON_VALGRIND = 0x1001
    CALLGRIND_BASE = (ord("C") << 24) | (ord("T") << 16)
    START_INSTRUMENTATION = CALLGRIND_BASE + 4
    STOP_INSTRUMENTATION = CALLGRIND_BASE + 5

    def __init__(self):
        import ctypes
        import mmap
        import platform
        if platform.machine() not in ("x86_64", "AMD64"):
            raise RuntimeError("valgrind client requests are only coded for x86-64, not %s"
                               % platform.machine())
        self._page = mmap.mmap(-1, mmap.PAGESIZE,
                               prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self._page.write(self.CODE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(self._page))
        self._func = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p)(address)
        self._args = (ctypes.c_size_t * 6)()
        self._address = ctypes.addressof(self._args)
        if not self.request(self.RUNNING_ON_VALGRIND):
            raise RuntimeError("--valgrind-switch given, but not running under valgrind")

    def request(self, code):
        self._args[0] = code
        return self._func(self._address)

    def start(self):
        self.request(self.START_INSTRUMENTATION)

    def stop(self):
        self.request(self.STOP_INSTRUMENTATION)


class _NoSwitch(object):
    def start(self):
        pass

    def stop(self):
        pass


def in_fresh_frame(function):
    """Call ``function(None)`` from C, so that the interpreter enters its eval loop anew.

    Callgrind knows the call stack only from the instruction it starts instrumenting
    at. Switched on inside a running frame, it sees the code of that frame's eval loop
    after returns it never saw the calls of, and files those instructions under the
    last function it saw called, not the one they are in: on 3.11.7, reading 5,000
    lines 20 times, the eval loop's 22.9% of the window was filed under
    ``_PyObject_MakeTpCall`` (ctypes' call of the switch) and ``_PyEval_EvalFrameDefault``
    was absent. From 3.11 a Python function called from Python runs in the same C call
    of the eval loop as its caller, so only a call made from C (here ``map``) starts a
    frame that callgrind sees entered; every instruction of the window is then beneath
    it, and the window's self costs per function are those of callgrind over the whole
    program (the same 22.9% for the eval loop, and within 0.1% of the instructions of
    a window with instrumentation on from the start).
    """
    return list(map(function, (None,)))[0]


def count_op(op, ctx, suite_name, index, calls, checked, switch=None):
    """Warm up, then count ``calls`` calls of ``op`` between the markers; the op's JSON row.

    ``markers`` in the row says how many getppid() markers the op passed (0, 1
    or 2; 1 when a counted call raised): the host consumes that many
    callgrind dumps for the op.
    """
    row = {"op": op.name, "suite": suite_name, "index": index, "calls": calls,
           "bytes_per_call": op.nbytes, "inner_loops": op.inner_loops, "error": None,
           "markers": 0}
    switch = switch or _NoSwitch()
    begin = marker_name("begin", index)
    end = marker_name("end", index)
    run = op.run
    getppid = os.getppid
    try:
        prepare_untimed(op, ctx, checked)
        op.verify(run())  # the warm-up call
        # The run's output state, once before the window (the K calls then write over
        # each other, as the timing pass's values do in "overwrite").
        prepare_outputs(op, ctx.output, run)
        results = []
        append = results.append
        loop = range(calls)
        gc.collect()
        before = _rusage()
        # Set before the window, not inside it: nothing between the markers but the calls.
        row["markers"] = 1

        def window(_):
            _stat_marker(begin)
            getppid()
            try:
                for _ in loop:
                    append(run())
            finally:
                getppid()
                row["markers"] = 2
                _stat_marker(end)
        switch.start()
        try:
            # The window runs in a C call of the eval loop made after the switch (see
            # in_fresh_frame): callgrind then files each instruction under its own function.
            in_fresh_frame(window)
        finally:
            switch.stop()
        after = _rusage()
        for result in results:
            op.verify(result)
        for field, a, b in zip(RUSAGE_FIELDS, before, after):
            row[field[3:]] = b - a
    except Exception as exc:
        if isinstance(exc, SkipOp):
            row["error"] = "unavailable here: %s" % exc
        else:
            row["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    finally:
        if op.teardown is not None:
            try:
                op.teardown()
            except Exception as exc:
                if row["error"] is None:
                    row["error"] = "teardown: %s" % exc
    return row


def run_count(argv):
    import argparse
    parser = argparse.ArgumentParser(prog="_counting.py")
    parser.add_argument("--suite", default=None,
                        help="the suite of the ops given by name alone")
    parser.add_argument("--ops", required=True,
                        help="JSON list of op names (of --suite) or [suite, op] pairs, in run "
                             "order: one process counts the ops of several suites (the host "
                             "gives every op of a series to one worker per tool and size: under valgrind "
                             "each process's start-up took 1.4 s of CPU, 7 of a pass's 26 s)")
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--iomatrix-profile", dest="iomatrix_profile", default="smoke",
                        choices=PROFILES)
    parser.add_argument("--io", default="c", choices=IO_STACKS)
    parser.add_argument("--cache", default="warm", choices=CACHE_MODES[:1],
                        help="counting is warm-cache only: eviction would add its own syscalls")
    parser.add_argument("--output-state", dest="output_state", default="new",
                        choices=OUTPUT_STATES)
    parser.add_argument("--calls", type=int, default=1,
                        help="counted calls per op (after 1 warm-up)")
    parser.add_argument("--first-index", type=int, default=0,
                        help="index of the first op in the marker names (a rerun continues)")
    parser.add_argument("--output", required=True, help="JSON lines, one per op, appended")
    parser.add_argument("--valgrind-switch", action="store_true",
                        help="switch callgrind's instrumentation on around each window only "
                             "(the host runs callgrind with --instr-atstart=no)")
    args = parser.parse_args(argv)
    if args.calls < 0:
        parser.error("--calls must be >= 0")
    switch = None
    if args.valgrind_switch:
        try:
            switch = ValgrindSwitch()
        except Exception as exc:
            sys.stderr.write("iomatrix: cannot switch valgrind's instrumentation: %s\n" % exc)
            return 3
    ctx = load_context(args.fixtures, args.scratch, args.iomatrix_profile, args.io, args.cache,
                       args.output_state)
    suites = {}   # suite name -> {op name: op}, each suite loaded when its first op comes
    checked = set()
    with open(args.output, "a") as out:
        for offset, item in enumerate(json.loads(args.ops)):
            suite, name = (item[0], item[1]) if isinstance(item, list) else (args.suite, item)
            index = args.first_index + offset
            print("START %s" % name)
            sys.stdout.flush()
            if suite is None:
                parser.error("op %r is given without its suite (--suite or [suite, op])" % name)
            if suite not in suites:
                loaded = count_divisor_factor(load_suite(suite), ctx.manifest)
                suites[suite] = dict((op.name, op) for op in loaded.ops(ctx))
            op = suites[suite].get(name)
            if op is None:
                row = {"op": name, "suite": suite, "index": index, "calls": args.calls,
                       "error": "unknown op %r in suite %s" % (name, suite)}
            else:
                row = count_op(op, ctx, suite, index, args.calls, checked, switch)
            out.write(json.dumps(row, sort_keys=True) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(run_count(sys.argv[1:]))
