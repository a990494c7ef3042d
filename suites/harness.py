"""The worker entry point: what the host runs under every interpreter of the matrix.

Like every file in this directory it runs under every interpreter, from Python
2.7 to the newest 3.x and PyPy, so it is written in the common subset of 2.7 and
3.x: no f-strings, no annotations, no pathlib. Modes:

    harness.py --list-suites                             the suites (JSON)
    harness.py --system-metadata                         pyperf's metadata of this
                                                         interpreter and machine (JSON)
    harness.py --list-ops SUITE[,SUITE] [IO] [PROFILE]   what this interpreter can run (JSON)
    harness.py --plan SUITE[,SUITE] PROFILE              disk the fixtures need (JSON)
    harness.py --make-fixtures SUITE[,SUITE] PROFILE DIR [counting[:K]]
                                                         make the fixtures (host side)
    harness.py --batch ...                               the matrix's worker (below)
    harness.py --count ...                               the counting pass (_counting.py)
    harness.py --suite S --op OP ... [pyperf options]    one op as an ordinary pyperf script

The matrix (``scripts/iomatrix/measuring/workers.py``) starts one ``--batch`` worker per
(round, suite, series), or per op under ``--allocator default`` and for the further allocator
conditions' series: it runs the suite's ops in the order given, each with
its own warm-ups and timed values, and writes one pyperf run per op (pyperf's JSON
format, written without importing pyperf: process_metadata says why).

Conditions are chosen, not inherited: before every timed call the op's output
files are put in the stated state (``--output-state new``: removed, so the call
creates them; ``overwrite``: left by the previous call), outside the timed
region; the allocator state is pinned by the host through glibc's environment
variables (``--allocator``, see _results.py) and recorded here as seen; under
``steady`` the worker also keeps pymalloc a spare arena (keep_spare_arena). Under
``--allocator default`` nothing is pinned: glibc moves its thresholds as the
process frees large blocks, so a timing depends on what the process did
before. The worker then times one op only, after nothing but its own untimed
calls (it refuses a batch of several), and refuses to time at all when the
caller's environment holds allocator variables, unless ``--keep-allocator-env``
says the user wants them (docs/allocator.md). Per
process, the page faults and context switches of the timed calls are recorded
(getrusage, outside the timed region), so a bimodal series can be explained
from its own data.

A value is the CPU time of the call (user + system, getrusage) when nothing in
it waits for the disk (warm page cache, writes into new files), and wall time
otherwise (``--clock`` chooses; the value's clock is recorded, and the other
clock's mean per value beside it). On a shared machine the wall clock also
counts the slices the CPU spent on other processes, which made most of the
spread of a series (docs/methodology-draft.md). A short call that was
preempted is taken again (make_timer).
"""
from __future__ import division, print_function

import datetime
import errno
import json
import os
import sys
import time

try:
    from time import perf_counter  # 3.3+, pyperf's perf_counter there
except ImportError:  # 2.7: pyperf 1.7.1 takes time.time off Windows (time.clock on it)
    perf_counter = time.clock if sys.platform == "win32" else time.time

import _results as results
from _api import (KNOBS, TEXT_KNOBS, Context, SkipOp, available_suites, load_context,
                  load_suite, prepare_outputs, prepare_untimed)
from _fixtures import (cold_cache_evictor, make_fixtures, peak_rss_delta,
                       planned_fixture_bytes)

# What pyperf records of one process when it collects metadata (pyperf._collect_metadata:
# the date, the load, the uptime, the peak RSS, the CPU affinity): a batch worker records
# these of itself (process_metadata); every other key of pyperf's metadata describes the
# interpreter and the machine, and the host collects it once per interpreter and session
# (harness.py --system-metadata) and hands it to the workers (--system-metadata).
PROCESS_METADATA = ("date", "load_avg_1min", "runnable_threads", "uptime", "mem_max_rss",
                    "cpu_affinity")
# Attempts after the first at a call that was not preempted (make_timer), for calls
# shorter than RETAKE_BELOW_SECONDS: a longer call spans several scheduler slices, is
# preempted nearly always on a loaded machine, and its CPU time averages over them.
RETAKES = 3
RETAKE_BELOW_SECONDS = 0.02
# A value times as many calls as it takes to last this long (judged by the fastest warm-up):
# a call of 0.3 ms (2.7 reading the study's file whole) varies by its own size from call
# to call on a shared machine, and one call per value made the ratios of the shortest
# ops the least reproducible of the suite. Each value is still the time of one call.
MIN_VALUE_SECONDS = 0.005
# PyPy's values last longer. Its garbage collector frees the buffers of a whole-file
# read in a major collection every call or every few calls, and a collection costs from
# a fraction of a call to ten calls, depending on what the process holds. A value of one
# or a few calls holds a collection or not: PyPy reading the study's 2.8 MiB file whole
# gave values of 0.6 to 11.7 ms in one main-command run, and its ratio was the one that
# moved most between runs. A value of 50 ms averages over the collections, as a program
# that reads many files does: in lockstep runs of 2.7 and PyPy alone, the sd of that
# op's per-round log ratio went from 0.67 to 0.32 (docs/methodology.md). JIT warm-up
# stays the warm-ups' job.
MIN_VALUE_SECONDS_PYPY = 0.05
MAX_LOOPS = 1000
# Untimed calls before the values under --allocator default, at least. glibc's first
# call of a large read maps its buffer and, unmapping it, raises the mmap threshold; the
# second takes the buffer from the heap, which grows (714 faults for 2.7 reading the
# study's file whole); only from the third call on is a call what every later call
# costs (docs/allocator.md). With the profiles' one warm-up, 2.7's first value held
# the second call (0.77 ms against 0.14 ms for the others) and its calls per value were
# reckoned from the slow warm-up (3 instead of 16). Three, not two: the rule below compares
# a call with the one before it, and call 2 (the heap's growth) against call 1 (map and
# unmap) says nothing about whether the calls have settled: in 9 of 59 fresh 2.7 processes
# call 2 was not 10% faster than call 1, the rule stopped there, and the values averaged in
# calls 3-5, which were still getting faster (crosscheck data of 2026-11-27, issue 42).
MIN_WARMUPS_DEFAULT_ALLOCATOR = 3
# ... and then more, while they still get faster: after the first two calls, 2.7's whole-file
# read of the study's file took 0.65, 0.46, 0.21, 0.16, 0.14 ms in calls 3 to 7 of a fresh
# process, with no page fault (issue 42; docs/methodology.md, "The untouched allocator
# against a plain program"). With two warm-ups its value averaged those calls in (0.35 ms
# in the reference run of 2026-11-26, against 0.14 ms steady), so the harness's 3.x/2.7
# ratio came out below a plain loop's. A warm-up more than SETTLED_WITHIN faster than the
# one before it means the calls have not settled; at most MAX_WARMUPS_DEFAULT_ALLOCATOR.
MAX_WARMUPS_DEFAULT_ALLOCATOR = 12
SETTLED_WITHIN = 0.10


def min_value_seconds(implementation):
    """How long a value lasts at least, for ``platform.python_implementation()``."""
    return MIN_VALUE_SECONDS_PYPY if implementation == "PyPy" else MIN_VALUE_SECONDS


def allocator_state(requested):
    """The allocator condition this process runs in, as recorded in the results."""
    import platform
    libc = platform.libc_ver()[0]
    if libc != "glibc":
        if requested == "default":  # the platform's own allocator is still what is asked for
            return "default (%s, not glibc)" % (libc or sys.platform)
        return "unpinned (%s: no glibc)" % (libc or sys.platform)
    expected = results.ALLOCATOR_ENVIRONMENT[requested]
    if any(os.environ.get(k) != v for k, v in expected.items()):
        return "unpinned (the allocator variables of %r are not set)" % requested
    if requested == "default":
        inherited = results.allocator_variables(os.environ)
        if inherited:  # only with --keep-allocator-env: the user asked to time with them
            return "default with the caller's %s" % results.describe_variables(inherited)
    return requested


class AllocatorHistoryError(RuntimeError):
    """A second op in a process under --allocator default."""


# The ops this process has timed, in order. Under "default" glibc's thresholds after an
# op depend on the blocks it freed (docs/allocator.md), so a second op would be timed in
# a state the first one left: it is refused, and every op records how many ran before it.
TIMED_OPS = []


def start_timing(op_name, allocator):
    """Note that this process times ``op_name`` now; the number of ops it timed before."""
    if allocator == "default" and TIMED_OPS:
        raise AllocatorHistoryError(
            "--allocator default times one op per process (glibc's thresholds depend on what "
            "the process freed before); this one already timed %s" % ", ".join(TIMED_OPS))
    TIMED_OPS.append(op_name)
    return len(TIMED_OPS) - 1


def inherited_allocator_refusal(allocator, keep):
    """The one-line reason this worker must not time, or None.

    Under "default" the allocator must be glibc's own: a MALLOC_* variable from the
    caller (a shell profile, a CI setting) would make the values another condition
    under the name of the untouched one."""
    if allocator != "default" or keep:
        return None
    inherited = results.allocator_variables(os.environ)
    if not inherited:
        return None
    return ("--allocator default measures the allocator untouched, but the environment sets "
            "%s; unset them, or pass --keep-allocator-env to time with them (they are recorded)"
            % ", ".join(sorted(inherited)))


def refuse(message):
    """Bad input: one line on stderr, exit status 2, nothing timed or written."""
    sys.stderr.write("harness.py: error: %s\n" % message)
    raise SystemExit(2)


def allowed_cpus():
    if hasattr(os, "sched_getaffinity"):
        return ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))
    return "unknown (no sched_getaffinity on this Python)"


def _rusage():
    try:
        import resource
    except ImportError:  # Windows
        return None
    return resource.getrusage(resource.RUSAGE_SELF)


def resolve_clock(op, requested, cache, output):
    """The clock ``op``'s values measure: the op's own (an op whose work runs in other
    threads or processes needs the wall clock: CPU time would add up the threads and
    miss the children), else the requested one, else the conditions' default (the
    output state matters only to ops that write).

    CPU time needs getrusage; where there is none (Windows) the values are wall
    time and the recorded clock says why.
    """
    clock = op.clock or requested or results.default_clock(
        cache, output if op.outputs else "new")
    if clock == "cpu" and _rusage() is None:
        return "wall (no getrusage here for the cpu clock)"
    return clock


def cpu_seconds(usage):
    return usage.ru_utime + usage.ru_stime


def make_timer(op, ctx, evict_paths, evict, rusage_totals, clock="wall"):
    """pyperf's time_func for ``op``: only ``op.run()`` is inside the timed region.

    Both clocks bracket the call; ``clock`` says which one the values are. The
    other one's total goes to ``rusage_totals`` (KEY_OTHER_CLOCK) as evidence:
    wall time well above CPU time means the worker waited for the CPU or the disk.

    A call during which the worker was switched out involuntarily is taken
    again, up to RETAKES times (every call is verified): on a shared machine
    such a call's wall time holds another process's slice (about 4 ms here),
    and its CPU time can come out far too low (a 13 MiB read measured 0.19 to
    1.4 ms of CPU in some preempted calls, 2.4 to 3.0 ms in calls that were
    not; likely the VM's steal-time accounting). The values are thus
    uninterrupted calls wherever the machine allows it; calls longer than
    RETAKE_BELOW_SECONDS, or preempted in every attempt, are kept as they
    are, and the counts say so (KEY_RETAKES, KEY_NIVCSW of the kept calls).
    Ops with a clock of their own (threads, child processes) are not retaken.
    """
    cpu_clock = clock == "cpu"
    # An op with a clock of its own (the wall clock: its work runs in threads or child
    # processes, manyfiles) switches among its own threads in every call, so a switch says
    # nothing of another process's slice: its calls are kept as they come. Taken again, they
    # were retaken in every attempt (manyfiles_read_threads: 191 involuntary switches a call)
    # and cost four calls each for nothing.
    retakes = 0 if op.clock else RETAKES

    def timed_call():
        prepare_outputs(op, ctx.output, op.run)
        for path in evict_paths:
            evict(path)
        before = _rusage()
        t0 = perf_counter()
        result = op.run()
        wall = perf_counter() - t0
        after = _rusage()
        op.verify(result)
        return before, wall, after

    def time_func(loops):
        total = 0.0
        for _ in range(loops):
            for attempt in range(retakes + 1):
                before, wall, after = timed_call()
                if before is None or after.ru_nivcsw == before.ru_nivcsw \
                        or wall > RETAKE_BELOW_SECONDS:
                    break
            if before is None:
                total += wall
                continue
            cpu = cpu_seconds(after) - cpu_seconds(before)
            total += cpu if cpu_clock else wall
            if rusage_totals is not None:
                for field, key in results.RUSAGE_KEYS:
                    rusage_totals[key] = rusage_totals.get(key, 0) + \
                        getattr(after, field) - getattr(before, field)
                rusage_totals[results.KEY_OTHER_CLOCK] = \
                    rusage_totals.get(results.KEY_OTHER_CLOCK, 0) + (wall if cpu_clock else cpu)
                rusage_totals[results.KEY_RETAKES] = \
                    rusage_totals.get(results.KEY_RETAKES, 0) + attempt
        return total
    return time_func


def prepare(op, ctx, checked_fixtures, rusage_totals=None, allocator=None):
    """Everything before timing: fixture check (also the warm read), setup, a spare arena
    under ``--allocator steady`` (keep_spare_arena), and the timer.

    Returns (timer, extra metadata). The caller runs ``op.teardown`` afterwards.
    Raises SkipOp, VerificationError, or EnvironmentError (ENOSPC named by the caller).
    """
    evict, evict_paths = None, []
    if ctx.cache == "cold" and op.evict and not op.unavailable:
        evict = cold_cache_evictor()  # before setup: a cold cache that cannot be made fails first
        evict_paths = [ctx.path(name) for name in op.evict]
    prepare_untimed(op, ctx, checked_fixtures)
    if allocator == "steady":
        keep_spare_arena()
    extra = {}
    if op.track_peak_rss:
        result, peak, method = peak_rss_delta(op.run)
        op.verify(result)
        extra = {results.KEY_PEAK_RSS: peak, results.KEY_PEAK_RSS_METHOD: method}
    clock = resolve_clock(op, ctx.clock, ctx.cache, ctx.output)
    return make_timer(op, ctx, evict_paths, evict, rusage_totals, clock), extra


# Strings of ~250 bytes (pymalloc's 240/256-byte class on 2.7 and 3.x: 16 a pool, 1,024 an
# arena): 8,192 of them fill eight arenas, 2.5 ms under 3.6.
SPARE_ARENA_OBJECTS = 8192
SPARE_ARENAS = []   # one string per op prepared, kept for the process's life


def keep_spare_arena(objects=SPARE_ARENA_OBJECTS):
    """Leave the small-object allocator an arena with free pools that never empties.

    pymalloc (2.7 to 3.7; 3.8 keeps one empty arena, bpo-37257) gives an arena back to the
    system the moment its last pool empties. When no arena has a free pool, an op whose short-
    lived objects need a pool of a new size class maps a fresh 256 KiB arena, touches a page,
    frees the object and unmaps the arena again: a page fault and two system calls per object
    (3.6's chunks_iterate_lines: 2,928 arena maps and minor faults a call, twice the time).
    Whether that happens hung on the bytes of the worker's command line, which set how full
    its arenas were: the same 3.6 worker with "~buffering=4096" in its result path (an
    ablation series' name) paid 2,928 faults a call, with "~abcdefghi=4096" 24, with a path
    two characters shorter 0 (docs/experiments/2026-12-05-ablation-conditions.md). Under
    ``steady`` (a long-running program's heap, whatever ran before) the worker makes new
    arenas here and keeps one object of the last one: that arena's other pools stay free for
    the op, so no arena comes and goes with a call. Outside timing; what the op does is
    unchanged."""
    made = ["%200d" % i for i in range(objects)]   # distinct objects, none a cached constant
    SPARE_ARENAS.append(made[-1])   # the last made: in the newest arena
    del made


def base_metadata(op, args):
    metadata = {
        results.KEY_SUITE: args.suite,
        results.KEY_CATEGORY: op.category,
        results.KEY_BYTES: op.bytes_per_value,
        results.KEY_IO: args.io,
        results.KEY_CACHE: args.cache,
        results.KEY_PROFILE: args.iomatrix_profile,
        results.KEY_ROUND: args.round,
        results.KEY_ALLOCATOR: allocator_state(args.allocator),
        results.KEY_ALLOCATOR_ENV: results.describe_variables(
            results.allocator_variables(os.environ)),
        results.KEY_CPU: allowed_cpus(),
        results.KEY_CLOCK: resolve_clock(op, args.clock, args.cache, args.output),
    }
    if op.outputs:
        metadata[results.KEY_OUTPUT] = args.output
    if args.knob:
        metadata[results.KEY_KNOB] = "%s=%d" % args.knob
    return metadata


def add_common_options(parser):
    parser.add_argument("--suite", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--iomatrix-profile", dest="iomatrix_profile", default="quick",
                        choices=results.PROFILES)
    parser.add_argument("--io", default="c", choices=results.IO_STACKS)
    parser.add_argument("--cache", default="warm", choices=results.CACHE_MODES)
    parser.add_argument("--allocator", default="steady", choices=results.ALLOCATORS)
    parser.add_argument("--keep-allocator-env", dest="keep_allocator_env", action="store_true",
                        help="under --allocator default, time even when the environment sets "
                             "MALLOC_*/MIMALLOC_* variables (they are recorded either way)")
    parser.add_argument("--output-state", dest="output", default="new",
                        choices=results.OUTPUT_STATES)
    parser.add_argument("--round", type=int, default=0)
    parser.add_argument("--knob", default=None, type=knob_arg,
                        help="an ablation: NAME=VALUE, one default set otherwise for every op "
                             "(_api.Context.set_knob: buffering, copy_bufsize, encoding, "
                             "newline)")
    parser.add_argument("--clock", default=None, choices=results.CLOCKS,
                        help="what a value measures (default: cpu for a warm cache and new "
                             "output files, where nothing waits for the disk; wall otherwise)")


def knob_arg(text):
    """--knob NAME=VALUE: (name, value), a known knob and a whole number of 1 or more."""
    import argparse
    name, _, value = text.partition("=")
    if name not in KNOBS or not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError("%r: NAME=VALUE, NAME one of %s, VALUE a whole number "
                                         "of 1 or more" % (text, ", ".join(KNOBS)))
    if name in TEXT_KNOBS and int(value) not in TEXT_KNOBS[name][1]:
        raise argparse.ArgumentTypeError("%r: the %s knob's VALUE is one of %s" % (
            text, name, ", ".join(map(str, sorted(TEXT_KNOBS[name][1])))))
    return name, int(value)


def open_context(args):
    """The ops' Context of a worker: the fixtures' facts, the conditions, the knob."""
    ctx = load_context(args.fixtures, args.scratch, args.iomatrix_profile, args.io, args.cache,
                       args.output)
    ctx.clock = args.clock
    if args.knob:
        ctx.set_knob(*args.knob)
    return ctx


def add_cmdline_args(cmd, args):
    """pyperf hook: pass our options on to the worker processes pyperf spawns."""
    cmd.extend(("--suite", args.suite, "--op", args.op, "--fixtures", args.fixtures,
                "--scratch", args.scratch, "--iomatrix-profile", args.iomatrix_profile,
                "--io", args.io, "--cache", args.cache, "--allocator", args.allocator,
                "--output-state", args.output, "--round", str(args.round)))
    if args.clock:
        cmd.extend(("--clock", args.clock))
    if args.knob:
        cmd.extend(("--knob", "%s=%d" % args.knob))
    if args.keep_allocator_env:
        cmd.append("--keep-allocator-env")


def find_op(ctx, suite_name, op_name):
    ops = load_suite(suite_name).ops(ctx)
    for op in ops:
        if op.name == op_name:
            return op
    raise SystemExit("unknown op %r in suite %s; valid ops: %s"
                     % (op_name, suite_name, ", ".join(o.name for o in ops)))


def list_ops(suite_names, io_stack="c", profile="quick"):
    """[{suite, op, category, bytes, unavailable, clock, control_of, native}] for this
    interpreter and profile (control_of: the op a control op is the control of)."""
    try:
        ctx = Context(os.devnull, os.devnull, profile=profile, io_stack=io_stack)
        missing_stack = None
    except ImportError as exc:  # an interpreter without _pyio: every op is skipped, with why
        ctx = Context(os.devnull, os.devnull, profile=profile, io_stack="c")
        missing_stack = "no pure-Python io stack here (%s)" % exc
    rows = []
    for suite_name in suite_names:
        for op in load_suite(suite_name).ops(ctx):
            rows.append({"suite": suite_name, "op": op.name, "category": op.category,
                         "bytes": op.bytes_per_value,
                         "unavailable": missing_stack or op.unavailable,
                         "clock": op.clock,
                         "control_of": op.control_of,
                         "native": list(op.native) if op.native else None})
    return rows


def run_pyperf(argv=None):
    """One op as an ordinary pyperf script: pyperf spawns and runs the workers."""
    import pyperf
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    add_common_options(runner.argparser)
    runner.argparser.add_argument("--op", required=True)
    args = runner.parse_args(argv)
    refusal = inherited_allocator_refusal(args.allocator, args.keep_allocator_env)
    if refusal:
        refuse(refusal)
    ctx = open_context(args)
    op = find_op(ctx, args.suite, args.op)
    if not args.worker:
        def never(loops):
            raise RuntimeError("pyperf's manager process does not time")
        runner.bench_time_func(op.name, never)  # the manager spawns workers; they do the rest
        return
    try:
        earlier = start_timing(op.name, args.allocator)
        timer, extra = prepare(op, ctx, set(), allocator=args.allocator)
        metadata = base_metadata(op, args)
        metadata.update(extra)
        metadata[results.KEY_EARLIER_OPS] = earlier
        runner.bench_time_func(op.name, timer, inner_loops=op.inner_loops, metadata=metadata)
    except SkipOp as exc:
        raise SystemExit("op %s is unavailable here: %s" % (op.name, exc))
    except EnvironmentError as exc:
        if exc.errno == errno.ENOSPC:
            raise SystemExit("op %s: no space left on device in %s (%s)"
                             % (op.name, args.scratch, exc))
        raise
    finally:
        if op.teardown is not None:
            op.teardown()


def loops_per_value(call_seconds, min_seconds=MIN_VALUE_SECONDS):
    """Calls per value: enough for ``min_seconds``, from the fastest warm-up call's time."""
    if not call_seconds or call_seconds <= 0:
        return 1
    return max(1, min(MAX_LOOPS, int(min_seconds / call_seconds + 0.999)))


def warm_until_settled(warmups, call, limit=None, within=None):
    """``warmups`` and further ones of ``call()`` while the newest is more than ``within``
    faster than the one before it (the calls still get faster), up to ``limit`` in all."""
    limit = MAX_WARMUPS_DEFAULT_ALLOCATOR if limit is None else limit
    within = SETTLED_WITHIN if within is None else within
    warmups = list(warmups)
    while len(warmups) < limit and (
            len(warmups) < 2 or warmups[-1][1] < warmups[-2][1] * (1 - within)):
        warmups.append((1, call()))
    return warmups


def settle(timer, rusage_totals, until_settled=False):
    """One untimed call of the op right before a lockstep value of short calls (more
    than one per value), so that every such value starts in the same state: right after
    a call of the same op in the same process.

    Why: in lockstep a worker waits while the other interpreters take their values,
    and they leave the CPU caches, and for free-threaded builds mimalloc (which
    returns freed memory to the system after a few ms idle), in another state. Measured
    (run 20261123T072526Z-vm, made before this call): the second value of a
    whole-file read was 11 to 16% slower than the first (median over interpreters),
    and 2.6 times slower on 3.14t, whose second values paid 180 to 360 page faults.
    With this call before the second value only, the first (after one warm-up) came
    out 8 to 27% slower than the second on 3.13 and 3.14t: one call after the setup
    does not leave the op in the state that later calls see, so the first value is
    settled too. Values of one call (5 ms or more) are not: a settling call there cost
    two calls more per round (rounds went from 17 to 11 in the main command's budget)
    and their second values were within 2-4% of the first; what 3.14t paid there
    (3206 faults per 25 MiB write) was mimalloc's, which the steady allocator now keeps.
    The counts of this call are not kept: they describe the timed values only.

    ``until_settled`` (under --allocator default): calls until one is no more than
    SETTLED_WITHIN faster than the one before (warm_until_settled). There a 2.7
    whole-file read takes 3-5 back-to-back calls to come down from 0.45-0.55 ms to 0.11 ms
    once other work has filled the CPU caches (docs/experiments/warm_calls.py: with a 32 MiB
    copy between calls it never does), and the other workers' turns fill them before every
    value; one call left a value's first calls cold (issue 42: 2.7's values 24% above a plain
    loop's best call, 3.12's 11%)."""
    kept = dict(rusage_totals)
    if until_settled:
        warm_until_settled([], lambda: timer(1))
    else:
        timer(1)
    rusage_totals.clear()
    rusage_totals.update(kept)


def measure_in_batch(op, ctx, args, checked, system, before_value=None):
    """Warm-ups and values of one op: a benchmark of pyperf's JSON format with one run.

    ``before_value(i)`` is called before each value, the first too (lockstep: the host
    lets every interpreter take its warm-ups before any takes its first value, and its
    value i before any takes value i + 1, so the values of one op follow each other
    closely). In lockstep every value of short calls is preceded by one settling call
    (``settle``; under ``--allocator default``, calls until they have settled). ``system``: pyperf's metadata of the interpreter and the machine
    (``system_metadata``)."""
    import platform
    rusage_totals = {}
    earlier = start_timing(op.name, args.allocator)
    try:
        timer, extra = prepare(op, ctx, checked, rusage_totals, args.allocator)
        inner = op.inner_loops or 1
        started = time.time()
        warmup_count = args.warmups
        if args.allocator == "default":
            warmup_count = max(warmup_count, MIN_WARMUPS_DEFAULT_ALLOCATOR)
        warmups = [(1, timer(1) / inner) for _ in range(warmup_count)]
        if args.allocator == "default":
            warmups = warm_until_settled(warmups, lambda: timer(1) / inner)
        # From the fastest warm-up: a PyPy warm-up that held a major collection asked for
        # a few calls only, and its values then held a collection or not (5 to 91 calls).
        loops = loops_per_value(min(w[1] for w in warmups) * inner if warmups else None,
                                min_value_seconds(platform.python_implementation()))
        rusage_totals.clear()  # the counts describe the timed values only
        values = []
        for index in range(args.values):
            if before_value is not None:
                before_value(index)
                if loops > 1:
                    settle(timer, rusage_totals, until_settled=args.allocator == "default")
            values.append(timer(loops) / (loops * inner))
        finished = time.time()
    finally:
        if op.teardown is not None:
            op.teardown()
    metadata = base_metadata(op, args)
    metadata.update(extra)
    metadata[results.KEY_STARTED] = started
    metadata[results.KEY_EARLIER_OPS] = earlier
    metadata[results.KEY_FINISHED] = finished
    for key, total in rusage_totals.items():
        metadata[key] = total / (len(values) * loops)  # per call
    metadata.update({"name": op.name, "loops": loops, "unit": "second"})
    if op.inner_loops:
        metadata["inner_loops"] = op.inner_loops
    for key, value in system.items():
        metadata.setdefault(key, value)
    metadata.update(process_metadata())
    check_run(values, warmups)
    # The whole metadata at the benchmark's level and none in the run, as pyperf writes a
    # benchmark of one run.
    return results.pyperf_benchmark(op.name, metadata, [({}, warmups, values)])


def check_run(values, warmups):
    """pyperf.Run's checks of its values and warm-ups, with its messages: a value that is
    not a positive number fails the op here, not when the host reads the file."""
    number = (int, float) if sys.version_info[0] >= 3 else (int, long, float)  # noqa: F821
    if any(isinstance(v, bool) or not (isinstance(v, number) and v > 0) for v in values):
        raise ValueError("values must be a sequence of number > 0.0")
    if any(isinstance(loops, bool) or not isinstance(loops, int) or loops < 1
           or not (isinstance(value, number) and value >= 0) for loops, value in warmups):
        raise ValueError("warmups must be a sequence of (loops, value) where loops is a int "
                         ">= 1 and value is a float >= 0.0")
    if not values and not warmups:
        raise ValueError("values and warmups are empty sequence")


def system_metadata():
    """pyperf's metadata of this interpreter and machine (``pyperf.Run``'s, as ``python -m
    pyperf collect_metadata`` gathers it), without PROCESS_METADATA."""
    import pyperf
    collected = pyperf.Run([1.0]).get_metadata()
    return dict((k, v) for k, v in collected.items() if k not in PROCESS_METADATA)


def process_metadata():
    """PROCESS_METADATA of this process, read as pyperf reads them.

    Why not pyperf itself: importing it (its runner, psutil, importlib.metadata for its
    hooks) and collecting its metadata made a worker's start, to its first WAIT, 27 ms
    (3.6) to 52 ms (3.12) longer here, more than the warm-ups and the value of a short op,
    and the untouched allocator's one-op workers are started by the thousand
    (docs/methodology.md, "Lockstep rounds")."""
    metadata = {"date": datetime.datetime.now().isoformat(" ")}
    try:
        with open("/proc/loadavg") as f:
            fields = f.read().split()
        metadata["load_avg_1min"] = float(fields[0])
        if len(fields) >= 4 and "/" in fields[3]:
            metadata["runnable_threads"] = int(fields[3].split("/", 1)[0])
    except (IOError, OSError, ValueError, IndexError):
        if hasattr(os, "getloadavg"):
            metadata["load_avg_1min"] = os.getloadavg()[0]
    try:
        with open("/proc/stat") as f:
            boot = [int(line[6:]) for line in f if line.startswith("btime ")]
        if boot:
            metadata["uptime"] = time.time() - boot[0]
    except (IOError, OSError, ValueError):
        pass
    usage = _rusage()
    if usage is not None:
        # kilobytes on Linux, bytes on macOS (pyperf's get_max_rss)
        metadata["mem_max_rss"] = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    if hasattr(os, "sched_getaffinity"):
        cpus = os.sched_getaffinity(0)
        count = os.cpu_count()
        if count and set(cpus) != set(range(count)):  # pyperf records a restricted set only
            metadata["cpu_affinity"] = format_cpu_list(cpus)
    return metadata


def format_cpu_list(cpus):
    """"0-2,5" for {0, 1, 2, 5} (pyperf's format_cpu_list)."""
    ranges = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)



class HostStopped(Exception):
    """The lockstep host sent no "go": it gave up on this worker."""


def take_control_channel():
    """The host's "go" lines, on a private copy of stdin; fd 0 becomes /dev/null, so that
    nothing an op starts (a child process, a thread) can read the host's lines."""
    control = os.fdopen(os.dup(0), "r")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return control


def run_batch(argv):
    """Several ops of one suite in one worker process, written as one pyperf file.

    This is what the matrix runs: starting a process per op costs more than
    most ops, so each process runs a batch of ops (in the order given; one op under
    --allocator default, whose thresholds depend on what the process freed before), each
    with its own warm-ups and values, and writes one pyperf Run per op. Before
    each op it prints "START <op>" so the host can time out, or blame, the
    op that hangs or crashes. An op that raises (a verification failure, a
    missing API) is recorded in the --errors file and the batch goes on.

    With --lockstep the worker prints "WAIT <op>" before each op (its setup and
    warm-ups) and "WAIT <op>#<i>" before each value i (from 0),
    and goes on only when the host sends "go" on stdin: the host
    (iomatrix.measuring.lockstep) runs every interpreter's worker of a round side by side
    and lets them take each step in turn, one at a time, so the two sides of
    every ratio are measured within moments of each other. Anything else, or
    end of input, stops the batch (the host gave up on it) without writing.
    """
    import argparse
    import traceback
    parser = argparse.ArgumentParser(prog="harness.py --batch")
    add_common_options(parser)
    parser.add_argument("--ops", required=True, help="JSON list of op names, in run order")
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--values", type=int, default=3)
    # Not "output": that is --output-state's dest (add_common_options); sharing it made the
    # result file's path the output state, so every write ran as "overwrite".
    parser.add_argument("--output", dest="result_file", required=True)
    parser.add_argument("--errors", required=True)
    parser.add_argument("--lockstep", action="store_true",
                        help="wait for a line on stdin before each op (iomatrix.measuring.lockstep)")
    parser.add_argument("--system-metadata", dest="system_metadata", default=None,
                        help="JSON object: pyperf's metadata of this interpreter and machine, "
                             "as harness.py --system-metadata prints it (the host collects it "
                             "once per interpreter); without it the worker collects it itself "
                             "with pyperf")
    args = parser.parse_args(argv)
    system = None
    if args.system_metadata is not None:
        try:
            system = json.loads(args.system_metadata)
        except ValueError as exc:
            refuse("--system-metadata is not JSON: %s" % exc)
        if not isinstance(system, dict):
            refuse("--system-metadata is not a JSON object")
    op_names = json.loads(args.ops)
    refusal = inherited_allocator_refusal(args.allocator, args.keep_allocator_env)
    if refusal:
        refuse(refusal)
    if args.allocator == "default" and len(op_names) != 1:
        refuse("--allocator default times one op per worker process (glibc's thresholds "
               "depend on what the process freed before); --ops names %d: start one worker "
               "per op" % len(op_names))
    if system is None:
        # A worker started by hand: pyperf collects it here, after the refusals (a refused
        # worker does nothing else: it imports no pyperf and times nothing)
        system = system_metadata()
    control = take_control_channel() if args.lockstep else None
    ctx = open_context(args)
    by_name = dict((op.name, op) for op in load_suite(args.suite).ops(ctx))
    benchmarks, errors, checked = [], {}, set()
    def wait_for_host(step):
        print("WAIT %s" % step)
        sys.stdout.flush()
        if control.readline().strip() != "go":
            raise HostStopped(step)

    for name in op_names:
        if control is not None:
            try:
                wait_for_host(name)
            except HostStopped:
                return 3  # the host stopped the round: nothing is written
        print("START %s" % name)
        sys.stdout.flush()
        op = by_name.get(name)
        if op is None:
            errors[name] = "unknown op %r in suite %s" % (name, args.suite)
            continue
        before_value = None
        if control is not None:
            def before_value(index, name=name):
                wait_for_host("%s#%d" % (name, index))
        try:
            benchmarks.append(measure_in_batch(op, ctx, args, checked, system, before_value))
        except HostStopped:
            return 3
        except SkipOp as exc:
            errors[name] = "unavailable here: %s" % exc
        except Exception as exc:
            if isinstance(exc, EnvironmentError) and exc.errno == errno.ENOSPC:
                errors[name] = "op %s: no space left on device in %s (%s)" % (
                    name, args.scratch, exc)
            else:
                errors[name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    results.atomic_write_json(args.errors, errors)
    if benchmarks:
        # --output is already a half-written name: the host renames it when the worker is done
        with open(args.result_file, "w") as f:
            json.dump(results.pyperf_document(benchmarks), f, sort_keys=True)
    return 0


def _suites_arg(text):
    return text.split(",") if text else available_suites()


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    mode = argv[0] if argv else None
    if mode == "--list-ops":
        suites = _suites_arg(argv[1] if len(argv) > 1 else "")
        io_stack = argv[2] if len(argv) > 2 else "c"
        profile = argv[3] if len(argv) > 3 else "quick"
        print(json.dumps({"python": sys.version, "ops": list_ops(suites, io_stack, profile)}))
        return 0
    if mode == "--system-metadata":
        print(json.dumps(system_metadata(), sort_keys=True))
        return 0
    if mode == "--list-suites":
        print(json.dumps({"suites": available_suites()}))
        return 0
    if mode == "--plan":
        print(json.dumps({"bytes": planned_fixture_bytes(_suites_arg(argv[1]), argv[2])}))
        return 0
    if mode == "--make-fixtures":
        try:
            # "counting" or "counting:K" (K times smaller again: _api.count_divisor_factor)
            counting = argv[4] if len(argv) > 4 else ""
            if counting not in ("counting", "") and not (
                    counting.startswith("counting:") and counting[9:].isdigit()
                    and int(counting[9:]) >= 1):
                sys.stderr.write("bad fixtures kind %r: counting or counting:K\n" % counting)
                return 2
            counting = int(counting[9:]) if counting.startswith("counting:") else \
                int(counting == "counting")
            manifest = make_fixtures(_suites_arg(argv[1]), argv[2], argv[3], counting)
        except (IOError, OSError) as exc:  # ENOSPC, EACCES: one line the host can show
            sys.stderr.write("cannot write fixtures: %s\n" % exc)
            return 1
        print(json.dumps({"files": len(manifest["files"]),
                          "page_cache": manifest.get("page_cache")}))
        return 0
    if mode == "--batch":
        return run_batch(argv[1:])
    if mode == "--count":
        import _counting
        return _counting.run_count(argv[1:])
    run_pyperf(argv)
    return 0


if __name__ == "__main__":
    status = main()
    if sys.argv[1:2] == ["--batch"]:
        # A batch worker has written and closed its results by now: it ends without the
        # interpreter's finalization (tearing down the suite's modules, and pyperf's and
        # psutil's where it collected pyperf's metadata itself: 10-25 ms a worker here with
        # them), which the lockstep host would wait out before the next step. A main command
        # starts about 2,500 workers.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status or 0)
    sys.exit(status)
