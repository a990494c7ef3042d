"""The results contract: what a result file holds, how it is named, written, read and merged.

Everything that writes or reads iomatrix results goes through this module: the
workers (every Python from 2.7, so this file is written in the common subset of
2.7 and 3.x), the host's runner, store and reports, and the tests. It uses only
the standard library.

- The axes of a run (profiles, io stacks, cache modes, allocator and output
  states) are defined here once; every command line takes its ``choices`` from
  these tuples.
- The ``iomatrix_*`` metadata keys a result carries are the ``KEY_*`` names.
- A file is written under a half-written name, ``.<name>.partial-<pid>``, in
  the same directory, then renamed: a reader never sees half a file, and the
  cleanup and ``.gitignore`` know the one pattern (``PARTIAL_GLOB``).
- Result directories are untrusted input (they travel through git and CI
  artifacts): files are opened without following symlinks, must be regular
  files, and are read with a size limit on what is read, not on ``st_size``
  (``/dev/zero`` reports 0 bytes; a FIFO would block).
"""
from __future__ import division, print_function

import errno
import json
import os
import stat

# -- the axes of a run --------------------------------------------------------
PROFILES = ("smoke", "quick", "full")
IO_STACKS = ("c", "pyio")
CACHE_MODES = ("warm", "cold")
# glibc's allocator: "default" leaves it alone (no MALLOC_* or MIMALLOC_* variable: what
# an ordinary program gets). glibc then moves its mmap threshold by itself as the process
# frees large blocks, so a timing depends on what ran before in the process: under
# "default" a worker times one op only, after nothing but that op's own untimed calls
# (harness.py; docs/allocator.md says what the history changes and why). "steady" pins
# the thresholds high, so the buffers of a call come from the heap that earlier calls
# left (a long-running program's state); "fresh" pins them at glibc's defaults, so every
# large buffer is a new mmap with its page faults (a program that reads one file once).
ALLOCATORS = ("default", "steady", "fresh")
# Where a write goes: a new file (the old one is removed outside the timed region),
# or over an existing file of the same size (truncated inside the timed call).
OUTPUT_STATES = ("new", "overwrite")
# The clock of a timed value. "cpu": the CPU time the worker spent in the call, user plus
# system (getrusage; the kernel's page-cache copies, syscalls and page faults are system
# time), so the time the CPU was given to other processes is not counted. On a shared
# 2-core machine that time is most of the spread: a 1.7 ms read measured 1.7-9.9 ms by
# the wall clock, one ~4 ms scheduler slice per involuntary context switch, and 1.7-1.9
# ms in CPU time (docs/methodology-draft.md). "wall": elapsed time. Where an op waits for
# the disk, the wait is the point and is no CPU time: a cold cache, and writes over an
# existing file (ext4 starts writing a truncated-and-rewritten file back at close, and the
# next truncate waits for it: 40-60 ms wall, 9 ms CPU, against 11-31 ms and 7 ms for a new
# file). So CPU time is the default only where nothing waits: warm cache, new output files.
CLOCKS = ("cpu", "wall")


def default_clock(cache, output):
    return "cpu" if (cache, output) == ("warm", "new") else "wall"


# The page-cache state of the fixtures in the warm condition (suites/_fixtures.py
# read_back_evictor): each file is dropped from the cache after it is written and read back.
FIXTURE_READ_BACK = "read back from disk after writing"

# What the host sets for each allocator state; the worker records what it sees.
ALLOCATOR_ENVIRONMENT = {
    # Nothing: glibc's and mimalloc's own behaviour. The worker refuses to time under
    # "default" when the caller's environment holds allocator variables (allocator_variables)
    # unless it is told to keep them (harness.py --keep-allocator-env).
    "default": {},
    # glibc caps the mmap threshold at 32 MiB on 64-bit; below it every buffer of a
    # lutz2009 call (25 MiB at most) comes from the heap, which is never trimmed.
    # Free-threaded builds allocate with mimalloc, which by default gives freed memory
    # back to the system after 10 ms idle: a lockstep worker that waited for its turn paid
    # 717 page faults for one whole-file read (3.14t, 5 ms instead of 2 ms); with
    # MIMALLOC_PURGE_DELAY=-1 it never gives memory back, 0 faults. Other builds ignore it.
    "steady": {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824",
               "MALLOC_TOP_PAD_": "0", "MIMALLOC_PURGE_DELAY": "-1"},
    # glibc's defaults, pinned: setting a threshold switches off its dynamic adjustment,
    # so every buffer of 128 KiB or more is a fresh mmap, as in a process's first call;
    # mimalloc gives freed memory back at once, so every call faults its buffers in again.
    "fresh": {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072",
              "MALLOC_TOP_PAD_": "0", "MIMALLOC_PURGE_DELAY": "0"},
}


# Variables that change what the allocator does, whoever set them: glibc's MALLOC_*
# (mallopt from the environment), mimalloc's MIMALLOC_*, glibc's tunables when they name
# a malloc setting, and CPython's own choice of allocator (PYTHONMALLOC).
ALLOCATOR_VARIABLE_PREFIXES = ("MALLOC_", "MIMALLOC_")


def allocator_variables(environ):
    """{name: value} of the variables in ``environ`` that change the allocator."""
    found = {}
    for name, value in environ.items():
        if name.startswith(ALLOCATOR_VARIABLE_PREFIXES) or name == "PYTHONMALLOC" or \
                (name == "GLIBC_TUNABLES" and "glibc.malloc." in value):
            found[name] = value
    return found


def describe_variables(variables):
    """``NAME=value NAME=value`` in name order, or ``none``: one line for the metadata."""
    if not variables:
        return "none"
    return " ".join("%s=%s" % (name, variables[name]) for name in sorted(variables))


# -- metadata keys ------------------------------------------------------------
KEY_SUITE = "iomatrix_suite"
KEY_CATEGORY = "iomatrix_category"
KEY_BYTES = "iomatrix_bytes"
KEY_IO = "iomatrix_io"
KEY_CACHE = "iomatrix_cache"
KEY_PROFILE = "iomatrix_profile"
KEY_ROUND = "iomatrix_round"
KEY_ALLOCATOR = "iomatrix_allocator"
# The allocator variables the worker saw in its environment (describe_variables), under
# every condition: the pinned ones set by the host, and any that came from the caller.
KEY_ALLOCATOR_ENV = "iomatrix_allocator_env"
# How many ops this worker process timed before this one (0: the op ran alone after its
# own untimed calls). Under "default" it is always 0 (harness.py refuses a second op).
KEY_EARLIER_OPS = "iomatrix_earlier_ops"
KEY_OUTPUT = "iomatrix_output"
KEY_NATIVE = "iomatrix_native"
KEY_PEAK_RSS = "iomatrix_peak_rss"
KEY_PEAK_RSS_METHOD = "iomatrix_peak_rss_method"
KEY_KNOB = "iomatrix_knob"                # an ablation's knob, "buffering=4096" (harness --knob)
KEY_CPU = "iomatrix_cpu"                  # the CPU(s) the worker was allowed to run on
KEY_CLOCK = "iomatrix_clock"              # what the values measure: CLOCKS
KEY_OTHER_CLOCK = "iomatrix_other_clock_per_value"  # the other clock's mean, for evidence
KEY_RETAKES = "iomatrix_retakes_per_value"  # preempted calls taken again (harness.make_timer)
# When the op ran in its worker, seconds since the epoch (time.time()), from the first
# warm-up to the last value. In a lockstep round (harness.py --lockstep) the interpreters'
# windows for one op follow each other; the windows show how closely.
KEY_STARTED = "iomatrix_started"
KEY_FINISHED = "iomatrix_finished"
# Per process, summed over its timed calls and divided by their number (a value is the
# mean of the run's "loops" calls; the names say "per value" from when it was one call):
KEY_MINFLT = "iomatrix_minflt_per_value"
KEY_MAJFLT = "iomatrix_majflt_per_value"
KEY_NVCSW = "iomatrix_nvcsw_per_value"
KEY_NIVCSW = "iomatrix_nivcsw_per_value"
RUSAGE_KEYS = (("ru_minflt", KEY_MINFLT), ("ru_majflt", KEY_MAJFLT),
               ("ru_nvcsw", KEY_NVCSW), ("ru_nivcsw", KEY_NIVCSW))
PREFIX = "iomatrix_"

# -- file names ---------------------------------------------------------------
MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
PARTS_DIR = ".parts"
PYIO_SUFFIX = "+pyio"
COUNTERS_SUFFIX = ".counters.json"
PARTIAL_GLOB = ".*.partial-*"
# Larger than any result iomatrix writes (a full run's series is a few MiB).
MAX_RESULT_BYTES = 256 * 1024 * 1024
PYPERF_FORMAT_VERSION = "1.0"


class UnsafeFileError(ValueError):
    """A result path that is a symlink, not a regular file, or too large to be ours."""


def partial_path(path):
    """The half-written name of ``path``: hidden, in the same directory, owned by this pid."""
    head, name = os.path.split(path)
    return os.path.join(head, ".%s.partial-%d" % (name, os.getpid()))


def part_file_name(suite, round_index):
    """One worker process's result: the ops of one suite in one round."""
    return "r%03d--%s.json" % (round_index, suite)


def _nofollow():
    return getattr(os, "O_NOFOLLOW", 0)


def open_regular(path, flags=os.O_RDONLY, mode=0o644):
    """os.open without following a final symlink; refuse anything but a regular file.

    O_NONBLOCK keeps a FIFO from blocking the open; it is then refused by the
    fstat check (and the flag is irrelevant for regular files).
    """
    try:
        fd = os.open(path, flags | _nofollow() | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError("%s: is a symbolic link; not followed" % path)
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFileError("%s: not a regular file; not read" % path)
    except BaseException:
        os.close(fd)
        raise
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


def read_bytes(path, limit=MAX_RESULT_BYTES):
    """The content of a regular file, refusing more than ``limit`` bytes."""
    fd = open_regular(path)
    try:
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise UnsafeFileError("%s: larger than %d bytes, more than any iomatrix result; "
                                      "not read" % (path, limit))
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_json(path, limit=MAX_RESULT_BYTES):
    """Parsed JSON of a regular file (ValueError for invalid JSON, UnsafeFileError)."""
    return json.loads(read_bytes(path, limit).decode("utf-8"))


def atomic_write_bytes(path, data, overwrite=True):
    """Write ``data`` under the half-written name, fsync, and rename it into place.

    With ``overwrite=False`` an existing ``path`` is refused (results are never
    replaced). The rename replaces a symlink at ``path`` itself, never its target.
    """
    if not overwrite and os.path.lexists(path):
        raise OSError(errno.EEXIST, "refusing to overwrite %s" % path)
    partial = partial_path(path)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _nofollow(), 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        if not overwrite and os.path.lexists(path):
            raise OSError(errno.EEXIST, "refusing to overwrite %s" % path)
        getattr(os, "replace", os.rename)(partial, path)  # 2.7 has no os.replace
    finally:
        if os.path.lexists(partial):
            os.remove(partial)


def atomic_write_json(path, data, overwrite=True):
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    atomic_write_bytes(path, text.encode("utf-8"), overwrite=overwrite)


# -- pyperf's JSON format -------------------------------------------------------

def pyperf_benchmark(name, metadata, runs):
    """One benchmark of pyperf's format. ``runs``: [(run metadata, warmups, values)];
    warmups are (loops, value) pairs."""
    meta = {"name": name, "loops": 1, "unit": "second"}
    meta.update(metadata)
    return {"metadata": meta,
            "runs": [{"metadata": dict(run_meta), "warmups": [list(w) for w in warmups],
                      "values": list(values)} for run_meta, warmups, values in runs]}


def pyperf_document(benchmarks, metadata=None):
    return {"version": PYPERF_FORMAT_VERSION, "metadata": dict(metadata or {}),
            "benchmarks": list(benchmarks)}


def merge_parts(output, parts):
    """Merge one-process pyperf files into one pyperf file at ``output`` (never overwritten).

    Runs of the same op are gathered under one benchmark. Metadata that differs
    between the parts (a round, a date, a process's counts) stays with each run;
    the suite-level metadata of pyperf's own files is pushed down to benchmarks,
    so nothing is lost and ``python -m pyperf compare_to`` reads the result.
    """
    by_name, order = {}, []
    for part in parts:
        document = read_json(part)
        common = document.get("metadata") or {}
        for bench in document["benchmarks"]:
            meta = dict(common)
            meta.update(bench.get("metadata") or {})
            name = meta["name"]
            if name not in by_name:
                by_name[name] = []
                order.append(name)
            for run in bench["runs"]:
                by_name[name].append((meta, run))
    benchmarks = []
    for name in order:
        entries = by_name[name]
        shared = dict(entries[0][0])
        for meta, _ in entries[1:]:
            for key in list(shared):
                if meta.get(key) != shared[key]:
                    del shared[key]
        runs = []
        for meta, run in entries:
            run_meta = dict((k, v) for k, v in meta.items() if k not in shared)
            run_meta.update(run.get("metadata") or {})
            run = dict(run)
            run["metadata"] = run_meta
            runs.append(run)
        benchmarks.append({"metadata": shared, "runs": runs})
    atomic_write_json(output, pyperf_document(benchmarks), overwrite=False)
