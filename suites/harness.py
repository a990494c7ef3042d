"""The worker side of iomatrix: fixtures, operations and the pyperf entry point.

This file and every suite module run under *every* interpreter of the matrix,
from Python 2.7 to the newest 3.x and PyPy, so they are written in the common
subset of Python 2.7 and 3.x: no f-strings, no annotations, no pathlib.

A suite is a module in this directory that defines:

    fixtures(profile) -> list of Fixture   files made once per run, outside timing
    ops(ctx)          -> list of Op        the timed operations
    scratch_bytes(profile) -> int          (optional) disk an op may write at once

The host (``scripts/matrix.py``) makes the fixtures once per run with
``make_fixtures`` and then starts one worker process per (round, op,
interpreter)::

    python suites/harness.py --suite lutz2009 --op read_byLines_textMode \\
        --fixtures DIR --scratch DIR --worker --worker-task 0 -l 1 -w 1 -n 3 -o part.json

The pyperf options after ``--op`` are pyperf's own: each process is one pyperf
worker, and the host merges the parts into one pyperf JSON file per interpreter.
Run without ``--worker`` the same command is an ordinary pyperf script (pyperf
spawns its own workers, which receive our options through add_cmdline_args).
"""
from __future__ import division, print_function

import errno
import importlib
import json
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES_MANIFEST = "fixtures.json"
PROFILES = ("smoke", "quick", "full")
IO_STACKS = ("c", "pyio")
CACHE_MODES = ("warm", "cold")
CRC_CHUNK = 1 << 20
OP_METADATA = ("name", "loops", "inner_loops", "unit", "date")


class VerificationError(AssertionError):
    """An operation read or wrote something other than what the fixture says."""


class SkipOp(Exception):
    """Raised by an op's setup when this interpreter lacks what the op needs."""


class Fixture(object):
    """A file made once per run; ``make(path)`` writes it deterministically."""

    def __init__(self, name, make):
        self.name = name
        self.make = make


class Op(object):
    """One timed operation.

    ``run()`` does the operation once and returns what ``verify(result)``
    checks, outside the timed region. ``nbytes`` is the bytes one call
    processes (for throughput). ``inner_loops`` says how many repetitions one
    ``run()`` contains, so pyperf reports the time of one repetition.
    ``unavailable`` is ``None`` or the reason this interpreter cannot run it.
    ``evict`` lists fixture names whose pages the cold-cache mode drops before
    every call. ``native`` describes the same work for the native ceiling
    (suites/native_ceiling.c): ``("read", fixture, block)``,
    ``("write", nbytes, block)`` or ``("copy", fixture, block)``; block 0 is
    the whole file in one call. ``track_peak_rss`` asks the harness to measure
    how much memory one call holds (``iomatrix_peak_rss``), in an untimed first
    call of each worker process.
    """

    def __init__(self, name, category, nbytes, run, verify, setup=None,
                 teardown=None, inner_loops=None, unavailable=None, evict=(), native=None,
                 track_peak_rss=False):
        self.name = name
        self.category = category
        self.nbytes = int(nbytes)
        self.run = run
        self.verify = verify
        self.setup = setup
        self.teardown = teardown
        self.inner_loops = inner_loops
        self.unavailable = unavailable
        self.evict = tuple(evict)
        self.native = native
        self.track_peak_rss = track_peak_rss

    @property
    def bytes_per_value(self):
        """Bytes behind one pyperf value: pyperf divides a call's time by inner_loops."""
        return self.nbytes // (self.inner_loops or 1)


def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_peak_rss():
    """Reset VmHWM to the current RSS (Linux 4.0+); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except (IOError, OSError):
        return False


def peak_rss_delta(func):
    """Call ``func()`` once; return (its result, bytes the peak RSS grew by, method).

    On Linux the peak is reset before the call, so the number is how much
    memory the call itself held at its worst, whatever the process did before.
    Elsewhere it is the growth of ru_maxrss: exact in a fresh process (the
    op's first call), an underestimate after a bigger earlier peak.
    """
    if sys.platform.startswith("linux") and _reset_peak_rss():
        before = _status_kib("VmRSS")
        result = func()
        return result, (_status_kib("VmHWM") - before) * 1024, "VmHWM"
    import resource
    scale = 1 if sys.platform == "darwin" else 1024   # bytes on macOS, KiB elsewhere
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = func()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result, (after - before) * scale, "ru_maxrss"




def expect_equal(what, got, expected):
    """Raise VerificationError unless got == expected."""
    if got != expected:
        raise VerificationError("%s: got %r, expected %r" % (what, got, expected))


def file_crc32(path):
    crc = 0
    size = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(CRC_CHUNK)
            if not block:
                break
            size += len(block)
            crc = zlib.crc32(block, crc)
    return crc & 0xFFFFFFFF, size


def count_newlines(path):
    lines = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(CRC_CHUNK)
            if not block:
                break
            lines += block.count(b"\n")
    return lines


class DeterministicBytes(object):
    """A tiny linear congruential generator, identical under every Python.

    ``random`` changed its algorithms between 2.7 and 3.x; fixtures must be
    byte-identical wherever and whenever they are made.
    """

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def next(self):
        self.state = (self.state * 1103515245 + 12345) & 0x7FFFFFFF
        return self.state >> 8

    def choice(self, seq):
        return seq[self.next() % len(seq)]

    def block(self, size):
        """``size`` pseudo-random bytes (cheap: repeats a 64 KiB random pool at shifting offsets)."""
        pool = bytearray(self.next() & 0xFF for _ in range(65536 + 4096))
        out = bytearray()
        while len(out) < size:
            start = self.next() % 4096
            out += pool[start:start + 65536]
        return bytes(out[:size])


WORDS = ("the", "python", "file", "read", "write", "buffer", "line", "text",
         "binary", "release", "fixed", "issue", "module", "stream", "codec",
         "unicode", "io", "bytes", "version", "performance", "regression",
         "interpreter", "object", "call", "slow", "fast", "open", "close",
         "seek", "tell", "newline", "encoding", "decode", "patch", "bug", "a",
         "of", "to", "in", "and", "is", "for", "with", "on", "now", "when")


def ascii_text(size, seed, max_words=14):
    """Deterministic English-like ASCII lines, like a NEWS file, ``size`` bytes long."""
    rng = DeterministicBytes(seed)
    out = []
    total = 0
    while total < size:
        n = 1 + rng.next() % max_words
        line = " ".join(rng.choice(WORDS) for _ in range(n))
        if rng.next() % 5 == 0:
            line = "- Issue #%d: %s." % (1000 + rng.next() % 9000, line)
        line += "\n"
        out.append(line)
        total += len(line)
    text = "".join(out)[:size]
    # The file ends with a complete line so line counts are unambiguous.
    return text[:-1] + "\n"


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def load_suite(name):
    """Import suites/<name>.py; a clear error names the valid suites."""
    if name not in available_suites():
        raise SystemExit("unknown suite %r; valid suites: %s"
                         % (name, ", ".join(available_suites())))
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    return importlib.import_module(name)


def available_suites():
    names = []
    for entry in sorted(os.listdir(HERE)):
        # harness.py and _private.py files are machinery, every other module is a suite
        if entry.endswith(".py") and not entry.startswith("_") and entry != "harness.py":
            names.append(entry[:-3])
    return names


# -- fixtures ---------------------------------------------------------------

def make_fixtures(suite_names, profile, directory):
    """Make every fixture the suites need in ``directory`` and describe them in fixtures.json.

    Returns the manifest dict. Files are written under temporary names and
    renamed, so an interrupted call never leaves a file that looks complete.
    Raises OSError (with the directory named) when it cannot write.
    """
    if not os.path.isdir(directory):
        os.makedirs(directory)
    manifest = {"profile": profile, "files": {}}
    for suite_name in suite_names:
        suite = load_suite(suite_name)
        for fixture in suite.fixtures(profile):
            if fixture.name in manifest["files"]:
                continue  # shared between suites, made once
            path = os.path.join(directory, fixture.name)
            partial = path + ".partial"
            try:
                fixture.make(partial)
                os.rename(partial, path)
            except BaseException:
                if os.path.exists(partial):
                    os.remove(partial)
                raise
            crc, size = file_crc32(path)
            manifest["files"][fixture.name] = {
                "bytes": size, "crc32": crc, "lines": count_newlines(path)}
    tmp = os.path.join(directory, FIXTURES_MANIFEST + ".partial")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
    os.rename(tmp, os.path.join(directory, FIXTURES_MANIFEST))
    return manifest


def planned_fixture_bytes(suite_names, profile):
    """Upper bound of disk the suites need: fixtures plus what ops write at once."""
    total = 0
    for suite_name in suite_names:
        suite = load_suite(suite_name)
        sizes = getattr(suite, "FIXTURE_BYTES", None)
        if sizes is not None:
            total += sizes(profile)
        scratch = getattr(suite, "scratch_bytes", None)
        if scratch is not None:
            total += scratch(profile)
    return total


class Context(object):
    """What an op may use: fixture paths and facts, a scratch dir, the io stack."""

    def __init__(self, fixtures_dir, scratch_dir, profile="quick", io_stack="c",
                 cache="warm", manifest=None):
        self.fixtures_dir = fixtures_dir
        self.scratch = scratch_dir
        self.profile = profile
        self.io_stack = io_stack
        self.cache = cache
        self.manifest = manifest or {"files": {}}
        self.open = builtin_open_for(io_stack)
        self.io_module = io_module_for(io_stack)

    def path(self, name):
        return os.path.join(self.fixtures_dir, name)

    def expect(self, name):
        """The recorded facts of fixture ``name``: bytes, crc32, lines."""
        try:
            return self.manifest["files"][name]
        except KeyError:
            return {"bytes": 0, "crc32": 0, "lines": 0}

    def scratch_path(self, name):
        return os.path.join(self.scratch, "%d-%s" % (os.getpid(), name))

    def check_fixture(self, name):
        """Fail loudly when the fixture changed since it was made (outside timing)."""
        facts = self.manifest["files"].get(name)
        if facts is None:
            raise VerificationError("fixture %s is not in %s" % (name, FIXTURES_MANIFEST))
        crc, size = file_crc32(self.path(name))
        if (crc, size) != (facts["crc32"], facts["bytes"]):
            raise VerificationError(
                "fixture %s is corrupted: %d bytes crc32 %08x, expected %d bytes crc32 %08x"
                % (self.path(name), size, crc, facts["bytes"], facts["crc32"]))


def builtin_open_for(io_stack):
    """``open`` as the study used it, or the pure-Python io stack's open."""
    if io_stack == "pyio":
        import _pyio
        return _pyio.open
    return open


def io_module_for(io_stack):
    if io_stack == "pyio":
        import _pyio
        return _pyio
    import io
    return io


def load_context(fixtures_dir, scratch_dir, profile, io_stack, cache):
    manifest_path = os.path.join(fixtures_dir, FIXTURES_MANIFEST)
    with open(manifest_path) as f:
        manifest = json.load(f)
    return Context(fixtures_dir, scratch_dir, profile, io_stack, cache, manifest)


# -- cold page cache ------------------------------------------------------------

POSIX_FADV_DONTNEED = 4  # Linux value; used only through ctypes on 2.7


def _libc_fadvise():
    import ctypes
    import ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fadvise = libc.posix_fadvise
    fadvise.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_int]
    return fadvise


def cold_cache_evictor():
    """A function(path) that drops a file's pages from the page cache.

    Uses os.posix_fadvise (3.3+) or libc's through ctypes (2.7, PyPy); raises
    RuntimeError when neither exists, so a cold run can never silently be warm.
    """
    if hasattr(os, "posix_fadvise"):
        def advise(fd):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    elif sys.platform.startswith("linux"):
        fadvise = _libc_fadvise()

        def advise(fd):
            rc = fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
            if rc != 0:
                raise OSError(rc, os.strerror(rc))
    else:
        raise RuntimeError("--cache cold needs posix_fadvise, which %s lacks" % sys.platform)

    def evict(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages are not dropped; write them out first
            advise(fd)
        finally:
            os.close(fd)
    return evict


# -- the pyperf side ----------------------------------------------------------

def add_cmdline_args(cmd, args):
    """pyperf hook: pass our options on to the worker processes pyperf spawns."""
    cmd.extend(("--suite", args.suite, "--op", args.op, "--fixtures", args.fixtures,
                "--scratch", args.scratch, "--iomatrix-profile", args.iomatrix_profile, "--io", args.io,
                "--cache", args.cache, "--round", str(args.round)))


def make_timer(op, evict_paths, evict):
    import pyperf
    perf_counter = pyperf.perf_counter

    def time_func(loops):
        total = 0.0
        for _ in range(loops):
            for path in evict_paths:
                evict(path)
            t0 = perf_counter()
            result = op.run()
            total += perf_counter() - t0
            op.verify(result)
        return total
    return time_func


def find_op(ctx, suite_name, op_name):
    suite = load_suite(suite_name)
    ops = suite.ops(ctx)
    for op in ops:
        if op.name == op_name:
            return op
    raise SystemExit("unknown op %r in suite %s; valid ops: %s"
                     % (op_name, suite_name, ", ".join(o.name for o in ops)))


def list_ops(suite_names, io_stack="c", profile="quick"):
    """[{suite, op, category, bytes, unavailable, native}] for this interpreter and profile."""
    try:
        ctx = Context(os.devnull, os.devnull, profile=profile, io_stack=io_stack)
        missing_stack = None
    except ImportError as exc:  # an interpreter without _pyio: every op is skipped, with why
        ctx = Context(os.devnull, os.devnull, profile=profile, io_stack="c")
        missing_stack = "no pure-Python io stack here (%s)" % exc
    rows = []
    for suite_name in suite_names:
        suite = load_suite(suite_name)
        for op in suite.ops(ctx):
            rows.append({"suite": suite_name, "op": op.name, "category": op.category,
                         "bytes": op.bytes_per_value,
                         "unavailable": missing_stack or op.unavailable,
                         "native": list(op.native) if op.native else None})
    return rows


def base_metadata(op, args):
    return {
        "iomatrix_suite": args.suite,
        "iomatrix_category": op.category,
        "iomatrix_bytes": op.bytes_per_value,
        "iomatrix_io": args.io,
        "iomatrix_cache": args.cache,
        "iomatrix_profile": args.iomatrix_profile,
        "iomatrix_round": args.round,
    }


def prepare(op, ctx, checked_fixtures):
    """Everything before timing: fixture check (also the warm read), setup, and the timer.

    Returns (timer, extra metadata). The caller runs ``op.teardown`` afterwards.
    Raises SkipOp, VerificationError, or EnvironmentError (ENOSPC named by the caller).
    """
    if op.unavailable:
        raise SkipOp(op.unavailable)
    evict, evict_paths = None, []
    if ctx.cache == "cold" and op.evict:
        evict = cold_cache_evictor()
        evict_paths = [ctx.path(name) for name in op.evict]
    for name in op.evict:
        if name not in checked_fixtures:
            ctx.check_fixture(name)  # also reads it once: the warm cache
            checked_fixtures.add(name)
    if op.setup is not None:
        op.setup()
    extra = {}
    if op.track_peak_rss:
        result, peak, method = peak_rss_delta(op.run)
        op.verify(result)
        extra = {"iomatrix_peak_rss": peak, "iomatrix_peak_rss_method": method}
    return make_timer(op, evict_paths, evict), extra


def add_common_options(parser):
    parser.add_argument("--suite", required=True)
    parser.add_argument("--fixtures", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--iomatrix-profile", dest="iomatrix_profile", default="quick",
                        choices=PROFILES)
    parser.add_argument("--io", default="c", choices=IO_STACKS)
    parser.add_argument("--cache", default="warm", choices=CACHE_MODES)
    parser.add_argument("--round", type=int, default=0)


def run_pyperf(argv=None):
    """One op as an ordinary pyperf script: pyperf spawns and runs the workers."""
    import pyperf
    runner = pyperf.Runner(add_cmdline_args=add_cmdline_args)
    add_common_options(runner.argparser)
    runner.argparser.add_argument("--op", required=True)
    args = runner.parse_args(argv)
    ctx = load_context(args.fixtures, args.scratch, args.iomatrix_profile, args.io, args.cache)
    op = find_op(ctx, args.suite, args.op)
    if not args.worker:
        def never(loops):
            raise RuntimeError("pyperf's manager process does not time")
        runner.bench_time_func(op.name, never)  # the manager spawns workers; they do the rest
        return
    try:
        timer, extra = prepare(op, ctx, set())
        metadata = base_metadata(op, args)
        metadata.update(extra)
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


def measure_in_batch(op, ctx, args, checked, system):
    """Warm-ups and values of one op, as a pyperf Benchmark with one Run."""
    import datetime
    import pyperf
    try:
        timer, extra = prepare(op, ctx, checked)
        inner = op.inner_loops or 1
        warmups = [(1, timer(1) / inner) for _ in range(args.warmups)]
        values = [timer(1) / inner for _ in range(args.values)]
    finally:
        if op.teardown is not None:
            op.teardown()
    metadata = base_metadata(op, args)
    metadata.update(extra)
    metadata.update({"name": op.name, "loops": 1, "unit": "second"})
    if op.inner_loops:
        metadata["inner_loops"] = op.inner_loops
    if system is None:
        run = pyperf.Run(values, warmups=warmups, metadata=metadata)
    else:
        # pyperf's system metadata takes tens of ms to collect: once per process is enough
        for key, value in system.items():
            metadata.setdefault(key, value)
        metadata["date"] = datetime.datetime.now().isoformat(" ")
        run = pyperf.Run(values, warmups=warmups, metadata=metadata, collect_metadata=False)
    return pyperf.Benchmark([run])


def run_batch(argv):
    """Several ops of one suite in one worker process, written as one pyperf file.

    This is what the matrix runs: starting a process per op costs more than
    most ops, so each process runs a batch of ops (in the order given), each
    with its own warm-ups and values, and writes one pyperf Run per op. Before
    each op it prints "START <op>" so the host can time out, or blame, the
    op that hangs or crashes. An op that raises (a verification failure, a
    missing API) is recorded in the --errors file and the batch goes on.
    """
    import argparse
    import traceback
    import pyperf
    parser = argparse.ArgumentParser(prog="harness.py --batch")
    add_common_options(parser)
    parser.add_argument("--ops", required=True, help="JSON list of op names, in run order")
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--values", type=int, default=3)
    parser.add_argument("--output", required=True)
    parser.add_argument("--errors", required=True)
    args = parser.parse_args(argv)
    ctx = load_context(args.fixtures, args.scratch, args.iomatrix_profile, args.io, args.cache)
    by_name = dict((op.name, op) for op in load_suite(args.suite).ops(ctx))
    benchmarks, errors, checked = [], {}, set()
    system = None  # pyperf's system metadata, from the first op's run
    for name in json.loads(args.ops):
        print("START %s" % name)
        sys.stdout.flush()
        op = by_name.get(name)
        if op is None:
            errors[name] = "unknown op %r in suite %s" % (name, args.suite)
            continue
        try:
            benchmarks.append(measure_in_batch(op, ctx, args, checked, system))
            if system is None:
                system = dict((k, v) for k, v in benchmarks[-1].get_metadata().items()
                              if not k.startswith("iomatrix_") and k not in OP_METADATA)
        except SkipOp as exc:
            errors[name] = "unavailable here: %s" % exc
        except Exception as exc:
            if isinstance(exc, EnvironmentError) and exc.errno == errno.ENOSPC:
                errors[name] = "op %s: no space left on device in %s (%s)" % (
                    name, args.scratch, exc)
            else:
                errors[name] = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    with open(args.errors, "w") as f:
        json.dump(errors, f)
    if benchmarks:
        pyperf.BenchmarkSuite(benchmarks).dump(args.output)
    return 0


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--list-ops":
        # --list-ops SUITE[,SUITE] [IO] [PROFILE]: what this interpreter can run, as JSON
        suites = argv[1].split(",") if len(argv) > 1 else available_suites()
        io_stack = argv[2] if len(argv) > 2 else "c"
        profile = argv[3] if len(argv) > 3 else "quick"
        print(json.dumps({"python": sys.version, "ops": list_ops(suites, io_stack, profile)}))
        return 0
    if argv and argv[0] == "--batch":
        return run_batch(argv[1:])
    run_pyperf(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
