"""The counting pass: system calls, page faults, context switches and instructions per op.

Timings on a shared machine wobble; counts do not. After the timing work of a
run, this pass runs every op of every series again, outside any timed region,
and counts what one call does:

- ``syscalls``: system calls by name, from ``strace -f`` of the whole worker
  process (strace and the worker on one CPU: ``counttools.STRACE_ON_ONE_CPU``), cut to
  the counted window by the worker's markers; beside them
  ``syscall_bytes``, the bytes the calls that move bytes (read, write, their p-, v- and
  pv- forms, sendfile, copy_file_range, splice) moved, the sum of their non-negative
  return values by name. What a call moves can differ from what the op returns: 3.14's
  128 KiB buffer (gh-117151) reads 128 KiB for a 64-byte record;
- ``rusage``: minor and major page faults, voluntary and involuntary context
  switches (``getrusage`` deltas around the window, in a plain process: under
  strace or valgrind these numbers would describe the tool);
- ``instructions``: user-space instructions executed in the window, from
  valgrind's callgrind with address-space randomisation off (``setarch -R``)
  and ``PYTHONHASHSEED=0``, so that a count repeats.

The worker side is ``suites/_counting.py`` (its docstring describes the
markers). Each counter is its own worker process per series and size: ``plain``,
``strace`` and ``valgrind`` (at the timed size, and for the ops of ``countsizes.SCALED`` at
the two counting sizes), each running the ops of every suite, suite by suite (one
process per suite cost a valgrind start-up each: 1.4 s of CPU, 10 of a series' 26 s
under callgrind with 7 suites, 2026-11-27). Every op gets one warm-up call and then
``COUNT_CALLS`` counted calls; the stored numbers are totals over those calls.

Sizes (``iomatrix.measuring.countsizes``): every op is counted at the size it was timed
at, a call as the timing pass makes it (the pass makes its own copy of the timing
fixtures, ``fixtures/timed``), by every counter, except the instructions of the few ops
whose timed call is too long for callgrind (``countsizes.SCALED``): those are counted at
the counting size (``fixtures/counting-1``: a suite's ``COUNT_DIVISOR``, lutz2009 8,
chunks 32, copies 8, iobench 8, textio 8, mmapio 16 and as many fewer records a call,
manyfiles 4 times fewer files; one pass a call) and at half of it
(``fixtures/counting-2``), and scaled to the timed size by their instructions per byte
when the two sizes agree within ``countsizes.TOLERANCE``, else counted at the timed
size. Each count's basis is stored with it (``count_size``). Threads are counted with
their process (strace -f, callgrind's totals over all threads). ``bytes_per_call`` is a
timed call's.

PyPy: instructions are not counted. What its JIT executes in a counted call
depends on which traces it has compiled by then, which one warm-up call does
not settle, and valgrind runs PyPy's JIT very slowly. Its syscalls and rusage
are counted.

Valgrind's instrumentation is switched on in the windows only (callgrind
``--instr-atstart=no`` and the client requests of
``_counting.ValgrindSwitch``, x86-64 only): start-up, fixture checks and warm-up
calls then run at the speed of valgrind's core, about half the pass's time
saved. The window itself runs in a frame entered after the switch
(``_counting.in_fresh_frame``): callgrind sees only the calls made after it starts,
and files the instructions of a frame entered before under the wrong function (3.11:
the eval loop's under ``_PyObject_MakeTpCall``). Elsewhere the whole process is
instrumented. The two ways count
different numbers for the same call (on 3.13: 0.2% apart for
read_byLines_textMode, 2% for write_byBlocks_textMode); the file records which
was used, and compare_counts compares instructions only when it is the same.

How exact (A/A: the same interpreter counted twice): see ``aa_exactness``. System
calls repeat exactly; instructions repeat within a fraction of a percent; page
faults nearly; context switches depend on what else the machine runs.

Files: ``results/<run>/<series>.counters.json``, written through the results
contract (atomic, under its partial name), updated after every pass. Format
(``iomatrix_counters_version`` 1)::

    {
      "iomatrix_counters_version": 1,
      "series": "3.13",
      "interpreter": {"label", "executable", "implementation", "version",
                      "version_info", "free_threaded", "source", "aa_of"},
      "calls": 1,                            # counted calls per op (after 1 warm-up)
      "fixtures": "timed",                   # older files: "counting" (COUNT_DIVISOR sizes,
                                             # no count_size: not scaled)
      "methods": {"syscalls": "...", ...},   # tool, version and options per counter
      "skipped": {"instructions": "why"},    # counters not run for this series
      "ops": {
        "read_byBlocks_binaryMode": {
          "suite": "lutz2009", "bytes_per_call": 366925, "calls": 1,
          "syscalls": {"read": 46, "openat": 1, ...},     # totals over the calls
          "syscall_bytes": {"read": 366925},              # optional (older files lack it):
                                  # bytes the byte-moving calls returned, totals by name
          "rusage": {"minflt": 0, "majflt": 0, "nvcsw": 0, "nivcsw": 1},
          "instructions": 1077463,
          "count_size": {"syscalls": {"basis": "timed"}, ...,   # each count's basis
                         "instructions": {"basis": "scaled", ...}},   # (countsizes)
          "from_cache": ["instructions", "syscalls"],   # optional: the counts taken from
                                  # the counts cache, not counted in this run
          "failed": {"instructions": "timed out after 60 s ..."}   # counting only
        }
      }
    }

An op already counted for a counter is kept when a run is resumed; failed and
missing ones are counted again. System calls and instructions counted in an earlier run
of the same interpreter binary, suite code, fixture sizes and tools are taken from the
counts cache instead (``iomatrix.measuring.countcache`` gives the key); the manifest's
``counters.from_cache`` names them, per series and counter (and each op's ``from_cache``
in the file). The A/A twin counts again only the syscalls of a sample of its ops
(``iomatrix.measuring.twincount``) and takes its other counts from the cache, after its
original has filled it; its ``counters.recounted`` names the ops it counted. Nothing is
written outside the run's results
directory and its work directory: strace's ``-o`` file, callgrind's output
files and valgrind's temporary files (``TMPDIR``) all go into the work dir.

Reading the files (tidy rows, steps, the report section, compare and the gate)
is ``iomatrix.analysing.counts``.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from iomatrix import procs
from iomatrix.measuring import countcache, countsizes, machine, twincount
from iomatrix.storing import contract, store
from iomatrix.storing.countsfile import COUNT_CALLS, COUNTERS, FORMAT_VERSION, RUSAGE_FIELDS, read_document
from iomatrix.measuring.counttools import (callgrind_dumps, methods, syscall_byte_windows, tool_prefix,
                                           tool_problems, use_valgrind_switch, window_counts)
from iomatrix.paths import SUITES_DIR

HARNESS = SUITES_DIR / "harness.py"
# Series are counted side by side: nothing is timed, and valgrind is single-threaded.
# Only the context switches notice the neighbour.
JOBS = max(1, min(2, os.cpu_count() or 1))


def parse_counters(value: str) -> tuple[str, ...]:
    """``--counters``: on (all), off (none), or a comma-separated choice of COUNTERS."""
    value = value.strip()
    if value == "on":
        return COUNTERS
    if value == "off":
        return ()
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n not in COUNTERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown counter(s) {', '.join(unknown) or repr(value)}; valid: on, off, "
            + ", ".join(COUNTERS))
    return tuple(n for n in COUNTERS if n in names)


# -- the tools -----------------------------------------------------------------------

class Series:
    """What the counting pass needs to know about one series."""

    def __init__(self, series: str, interpreter: dict, io_stack: str, ops: list):
        self.series = series
        self.interpreter = interpreter      # the manifest's fields: executable, implementation...
        self.io_stack = io_stack
        self.ops = ops                      # [(suite, op)] in the suite's order

    @property
    def is_pypy(self) -> bool:
        return self.interpreter.get("implementation") == "pypy"


def new_document(series: Series, counters) -> dict:
    keys = ("label", "executable", "implementation", "version", "version_info",
            "free_threaded", "source", "aa_of")
    return {"iomatrix_counters_version": FORMAT_VERSION, "series": series.series,
            "interpreter": {k: series.interpreter.get(k) for k in keys},
            "calls": COUNT_CALLS, "fixtures": "timed", "methods": {}, "skipped": {},
            "ops": {}}


def worker_environment(allocator: str, tmp_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH")}
    env.update(machine.allocator_environment(allocator))
    env["PYTHONHASHSEED"] = "0"            # dict and set layouts repeat: so do the counts
    env["PYTHONDONTWRITEBYTECODE"] = "1"   # never write beside the suites
    env["TMPDIR"] = str(tmp_dir)           # valgrind's and anything else's temp files
    return env


def worker_command(python: str, suite: str | None, ops: list, fixtures: Path, scratch: Path,
                   output: Path, profile: str, io_stack: str, output_state: str,
                   first_index: int, switch: bool = False) -> list:
    """``ops``: op names of ``suite``, or (suite None) [suite, op] pairs of several suites."""
    return [python, str(HARNESS), "--count", *(["--suite", suite] if suite else []),
            "--ops", json.dumps([list(op) if isinstance(op, tuple) else op for op in ops]),
            "--fixtures", str(fixtures), "--scratch", str(scratch),
            "--iomatrix-profile", profile, "--io", io_stack, "--output-state", output_state,
            "--calls", str(COUNT_CALLS), "--first-index", str(first_index),
            "--output", str(output)] + (["--valgrind-switch"] if switch else [])


def _read_rows(path: Path) -> list:
    rows = []
    if path.exists():
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        rows.append(json.loads(line))
                    except ValueError:
                        break   # a line cut by a crash: the ops after it are redone
    return rows


def _results_of_attempt(kind: str, rows: list, attempt_dir: Path) -> dict:
    """{op: ("ok", value) or ("failed", why)} for the rows one worker process wrote."""
    out = {}
    if kind == "strace":
        windows = syscall_byte_windows(attempt_dir / "strace.txt")
    elif kind == "valgrind":
        dumps, position = callgrind_dumps(attempt_dir), 0
    for row in rows:
        op, error = row.get("op"), row.get("error")
        if kind == "valgrind":
            first = position
            position += int(row.get("markers") or 0)
        if error:
            out[op] = ("failed", error)
        elif kind == "plain":
            out[op] = ("ok", {f: row[f] for f in RUSAGE_FIELDS})
        elif kind == "strace":
            window = windows.get(row["index"])
            out[op] = ("ok", {"syscalls": window[0], "syscall_bytes": window[1]}) \
                if window is not None else \
                ("failed", "no complete marker window in strace's output")
        else:
            # Dumps come in pairs per op: at the begin marker, then at the end marker;
            # the second holds the window. A count past 2**63 is callgrind's negative.
            value = window_counts(dumps[first + 1]) if first + 1 < len(dumps) else None
            instructions = value and value["instructions"]
            if row.get("markers") != 2 or instructions is None or instructions >= 2 ** 63:
                out[op] = ("failed", f"no usable callgrind dump for the window (dump "
                                     f"{first + 2} of {len(dumps)}: {instructions})")
            else:
                out[op] = ("ok", value)
    return out


PASS_OF = {"syscalls": "strace", "rusage": "plain", "instructions": "valgrind"}
# The attempt directory's first word when one worker counts the ops of several suites.
ALL_SUITES = "all"


def run_pass(kind: str, series: Series, suite: str | None, ops: list, *, fixtures: Path,
             work: Path, tmp_dir: Path, profile: str, conditions, timeout: float, log,
             tag: str = "", bytes_out: dict | None = None, cpu: int | None = None) -> dict:
    """Count ``ops`` of one suite with one tool; {op: ("ok", value) | ("failed", why)}.
    ``suite`` None: ``ops`` are (suite, op) pairs, counted in one worker process.

    ``cpu``: strace and the worker it traces run on this CPU only
    (``counttools.STRACE_ON_ONE_CPU``); None: the first this process may use. The other
    tools' workers are not pinned.

    ``tag``: in the attempt directories' names of a pass at a counting size (``@1``,
    ``@2``), whose rows' bytes are not the timed call's (``_fill_bytes`` skips them);
    ``bytes_out``: {op: bytes_per_call} of the rows, filled in.

    An op that crashes or hangs the worker is failed (for counting only) with the
    output tail; the worker is started again for the ops after it.
    """
    def name(op):
        return op[1] if isinstance(op, tuple) else op

    results, first_index, attempt = {}, 0, 0
    switch = kind == "valgrind" and use_valgrind_switch()
    remaining = list(ops)
    while remaining:
        attempt += 1
        attempt_dir = work / f"{suite or ALL_SUITES}-{kind}{tag}-{attempt}"
        shutil.rmtree(attempt_dir, ignore_errors=True)   # an earlier call's, in our work dir
        scratch = attempt_dir / "scratch"
        scratch.mkdir(parents=True)
        output = attempt_dir / "counts.jsonl"
        # Paths relative to the worker's directory (scratch), the same for every series:
        # the arguments and environment are then identical for an A/A twin. With absolute
        # paths that differed by series, an A/A twin's instructions differed by up to 2%.
        cmd = tool_prefix(kind, switch) + worker_command(
            series.interpreter["executable"], suite, remaining,
            Path(os.path.relpath(fixtures, scratch)), Path("."), Path("..", output.name),
            profile, series.io_stack, conditions.output, first_index, switch)
        env = worker_environment(conditions.allocator, tmp_dir)
        culprit, fatal = procs.supervise(cmd, env, timeout, cwd=scratch,
                                         stderr_dir=attempt_dir,
                                         cpus=_strace_cpus(cpu) if kind == "strace" else None)
        rows = _read_rows(output)
        if bytes_out is not None:
            bytes_out.update({row["op"]: row["bytes_per_call"] for row in rows
                              if row.get("bytes_per_call") is not None})
        results.update(_results_of_attempt(kind, rows, attempt_dir))
        done = {row.get("op") for row in rows}
        names = [name(op) for op in remaining]
        if fatal is not None:
            culprit = culprit if culprit in names and culprit not in done else \
                next((op for op in names if op not in done), None)
            if culprit is not None:
                results[culprit] = ("failed", f"{kind}: {fatal}")
                log(f"iomatrix: counting {series.series} {culprit} ({kind}) FAILED: "
                    f"{procs.tail(fatal, 3)}")
                done.add(culprit)
        elif not done:
            results.setdefault(names[0], ("failed", f"{kind}: the worker wrote nothing"))
            done.add(names[0])
        first_index += len(remaining)
        remaining = [op for op in remaining if name(op) not in done]
    return results


def _strace_cpus(cpu: int | None) -> set | None:
    """The one CPU of a strace pass: ``cpu``, or the first this process may use."""
    if cpu is not None:
        return {cpu}
    usable = machine.usable_cpus()
    return {min(usable)} if usable else None


def count_series(run: store.Run, series: Series, counters, problems: dict, fixtures: Path,
                 work_root: Path, profile: str, conditions, timeout: float, tool_methods: dict,
                 slot: int = 0, log=print, stopping=None,
                 cache: countcache.CountsCache | None = None, recount=None,
                 cpu: int | None = None) -> dict:
    """Count one series, resuming from its counters file; the manifest's entry for it.

    ``cpu``: the CPU of its strace passes (``run_pass``).

    ``stopping``: a threading.Event; once set, no further pass is started.
    ``cache``: the counts cache (iomatrix.measuring.countcache): the syscalls and
    instructions it holds for this series' key are taken from it, not counted, and the
    manifest entry's ``from_cache`` names them (and each op's ``from_cache`` in the counters
    file); what is counted is stored in it. None: no cache.

    ``recount``: for an A/A twin, the ops whose syscalls it counts again (``twincount.sample``;
    ``twincount.recount_of``: not their instructions); it takes its other counts from the
    cache (its original's: the same key) where there, counts them where not, and writes
    nothing into the cache; its entry's
    ``recounted`` names what it counted. None: the twin counts every op and never reads the
    cache (``--aa-recount all``, and every twin before the sample).

    The series works in ``<work_root>/s<slot>``: a name of the same length for every
    series, because the length of the worker's working directory moves valgrind's
    instruction counts (measured on 3.13: 59 instructions of 1.29 million for 26 more
    characters; presumably addresses move, and code whose path depends on alignment,
    such as memcpy's, with them). Give series counted at the same time different slots.
    """
    started = time.monotonic()
    path = run.counters_file(series.series)
    try:
        document = read_document(path) or new_document(series, counters)
    except store.ResultFileError as exc:
        # A damaged file is counted again, and kept aside (hidden, never read as counts)
        # rather than replaced: nothing is lost, and the good files of the run stay as they are.
        kept = path.with_name(f".{path.name}.damaged-{int(time.time())}")
        os.rename(path, kept)
        log(f"iomatrix: {series.series}: {exc}; kept as {kept.name}, counted again")
        document = new_document(series, counters)
    skipped = {}
    for counter in counters:
        if counter in problems:
            skipped[counter] = problems[counter]
        elif counter == "instructions" and series.is_pypy:
            skipped[counter] = ("not counted for PyPy: what its JIT runs in a counted call "
                                "depends on what it has compiled by then")
    document["skipped"] = skipped
    work = work_root / f"s{slot:04d}"
    work.mkdir(parents=True, exist_ok=True)
    (work_root / "tmp").mkdir(exist_ok=True)
    failed, from_cache = {}, {}
    twin = bool(series.interpreter.get("aa_of"))
    use_cache = cache is not None and (not twin or recount is not None)
    recounted: dict = {}
    for counter in counters:
        if counter in skipped:
            continue
        if document["methods"].get(counter) not in (None, tool_methods.get(counter)):
            # Counted another way before (an older method, another valgrind): a resumed run
            # counts that counter again for every op rather than mix two methods in one file.
            for entry in document["ops"].values():
                for key in ((counter, "cache", "functions", "call_edges",
                             "call_paths_unavailable") if counter == "instructions"
                            else (counter, "syscall_bytes") if counter == "syscalls"
                            else (counter,)):
                    entry.pop(key, None)
                _mark_from_cache(entry, counter, False)
        document["methods"][counter] = tool_methods.get(counter)
        # Every suite's ops in one worker per tool and size, suite by suite in name order (the
        # same order, hence the same history before each op, for every series of the run).
        suites = sorted({s for s, _ in series.ops})
        todo = [(s, op) for suite in suites for s, op in series.ops
                if s == suite and counter not in document["ops"].get(op, {})]
        if document.get("fixtures") != "timed":
            # A file of an older version, counted at the counting sizes: its counts are
            # kept as they are, and only ops it lacks altogether are counted (at the
            # timed size, each saying so), never a second size beside an op's old one.
            todo = [(s, op) for s, op in todo if op not in document["ops"]]
        if not todo or (stopping is not None and stopping.is_set()):
            continue
        results, keys = {}, {}
        for suite in suites if use_cache else ():
            ops = [op for s, op in todo if s == suite
                   and not (twin and op in twincount.recount_of(counter, recount))]
            if ops:
                keys.update(_cache_keys(cache, series, counter, tool_methods, suite, ops,
                                        todo, profile, conditions, log))
        suite_of = {op: s for s, op in todo}
        for op, key in keys.items():
            hit = cache.get(key, log)
            if hit is not None:
                results[op] = ("ok", hit[0])
                if hit[1] is not None:
                    document["ops"].setdefault(op, {"suite": suite_of[op], "calls": COUNT_CALLS})[
                        "bytes_per_call"] = hit[1]
                from_cache.setdefault(counter, []).append(op)
        counted_now = [op for _, op in todo if op not in results]
        if counted_now and results and not twin:
            # A count is the cache's for a worker that runs every op of todo
            # (countcache.worker_history): a worker of the missing ops alone would count
            # them after other ops than their key says, so all of todo is counted again.
            log(f"iomatrix: counting {series.series}: {len(counted_now)} of {len(todo)} ops' "
                f"{counter} not in the counts cache: all {len(todo)} counted again (an op's "
                "counts depend on the ops its worker ran before it)")
            results.clear()
            from_cache.pop(counter, None)
            counted_now = [op for _, op in todo]
        if twin and use_cache and counter in countcache.CACHED_COUNTERS and counted_now:
            recounted[counter] = counted_now

        def run_at(size, ops, kind=PASS_OF[counter]):
            """(results, {op: bytes per call}) of ``ops`` counted at ``size``, in one worker."""
            found = {}
            return run_pass(kind, series, None, [(suite_of[op], op) for op in ops],
                            fixtures=fixture_dir(fixtures, size), work=work,
                            tmp_dir=work_root / "tmp", profile=profile, conditions=conditions,
                            timeout=timeout, log=log,
                            tag="" if size == "timed" else f"@{size}", bytes_out=found,
                            cpu=cpu), found

        def timed_bytes(ops):
            """{op: bytes of a call at the timed size}: from the passes at the timed
            size before (or the cache); a plain pass at that size where none ran."""
            have = {op: document["ops"].get(op, {}).get("bytes_per_call") for op in ops}
            missing = [op for op, b in have.items() if not b]
            if missing:
                have.update(run_at("timed", missing, "plain")[1])
            return have
        if counted_now and counter == "instructions":
            # The size choice (iomatrix.measuring.countsizes): at the timed size, or at
            # two smaller sizes and scaled with the rule checked.
            results.update(countsizes.count_instructions(counted_now, run_at, timed_bytes))
        elif counted_now:
            results.update(run_at("timed", counted_now)[0])
        for suite, op in todo:
            entry = document["ops"].setdefault(op, {"suite": suite, "calls": COUNT_CALLS})
            entry.setdefault("failed", {}).pop(counter, None)
            state, value = results.get(op, ("failed", "the worker never reached this op"))
            if state == "ok":
                _mark_from_cache(entry, counter, op in from_cache.get(counter, ()))
                # the count's basis: at the timed size, or scaled (countsizes)
                if counter == "instructions":
                    value = dict(value)
                    basis = value.pop("count_size", countsizes.TIMED)
                else:
                    basis = countsizes.TIMED
                entry.setdefault("count_size", {})[counter] = basis
            if state == "ok" and counter in ("instructions", "syscalls"):
                # callgrind's window: the count, and beside it the simulated cache
                # misses and the functions the instructions ran in (iomatrix.callgrind);
                # strace's: the calls, and beside them the bytes the calls moved
                entry.update(value)
            elif state == "ok":
                entry[counter] = value
            else:
                entry["failed"][counter] = procs.tail(str(value))
            if not entry["failed"]:
                del entry["failed"]
        _fill_bytes(document, work, ALL_SUITES)
        for op in counted_now if not twin else ():   # a twin's counts are not the cache's
            if op in keys and results.get(op, ("failed",))[0] == "ok":
                cache.put(keys[op], results[op][1], document["ops"][op].get("bytes_per_call"),
                          log)
        store.write_json_document(path, document)   # .gz stays compressed
    for op, entry in document["ops"].items():
        for counter, why in (entry.get("failed") or {}).items():
            failed.setdefault(op, {})[counter] = why
    counted = [c for c in counters if c not in skipped]
    status = "skipped" if not counted else ("failed" if failed and all(
        c in (entry.get("failed") or {}) for entry in document["ops"].values() for c in counted)
        else "partial" if failed else "ok")
    entry = {"status": status, "counters": counted, "skipped": skipped,
             "failed_ops": failed, "seconds": round(time.monotonic() - started, 1),
             "file": path.name if path.exists() else None}
    if from_cache:
        entry["from_cache"] = from_cache
    if recounted:
        entry["recounted"] = recounted
    if status != "ok":
        log(f"iomatrix: counting {series.series}: {status}"
            + "".join(f"; {c} skipped: {why}" for c, why in skipped.items()))
    return entry


def _mark_from_cache(entry: dict, counter: str, taken: bool) -> None:
    """Note in an op's entry whether ``counter``'s count was taken from the counts cache
    (``from_cache``: a list of counters, absent when none): the report then knows which of
    an A/A twin's counts were counted again."""
    marks = [c for c in entry.get("from_cache", []) if c != counter] + ([counter] if taken else [])
    if marks:
        entry["from_cache"] = sorted(marks)
    else:
        entry.pop("from_cache", None)


def _schedule(all_series: list, one, stopping: threading.Event):
    """(series name, entry) of ``one(slot, series)`` for every series, JOBS at a time, as each
    is done; slots are the series' places in ``all_series`` (a slot per series).

    The A/A twin takes its counts outside its sample from the counts cache, so it starts only
    once its original (the series of its ``aa_of`` label and io stack) is done: on a fresh
    machine the original's counts are then in the cache. The original goes first, and its
    twin next, so the twin's sample overlaps the other series instead of running alone at
    the end.
    """
    originals = {}
    for twin in all_series:
        if twin.interpreter.get("aa_of"):
            originals[twin.series] = next(
                (s.series for s in all_series if not s.interpreter.get("aa_of")
                 and s.interpreter.get("label") == twin.interpreter["aa_of"]
                 and s.io_stack == twin.io_stack), None)
    first = set(originals.values())
    slots = {s.series: slot for slot, s in enumerate(all_series)}
    waiting = [s for s in all_series if originals.get(s.series)]
    ready = [s for s in all_series if s.series in first] + [
        s for s in all_series if s.series not in first and not originals.get(s.series)]
    running: dict = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        try:
            while ready or running or waiting:
                while ready and len(running) < JOBS and not stopping.is_set():
                    series = ready.pop(0)
                    running[pool.submit(one, slots[series.series], series)] = series.series
                if not running:   # stopping: nothing more is started
                    return
                done, _ = concurrent.futures.wait(
                    running, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in done:
                    name = running.pop(future)
                    yield name, future.result()
                    released = [s for s in waiting if originals[s.series] == name]
                    waiting = [s for s in waiting if s not in released]
                    ready = released + ready
        except BaseException:
            # a series failed, or Ctrl-C: no new pass starts; those running finish, their
            # counts kept (the pool's exit waits for them)
            stopping.set()
            raise


def _cache_keys(cache, series: Series, counter: str, tool_methods: dict, suite: str, ops,
                worker_ops, profile: str, conditions, log) -> dict:
    """{op: its counts cache key} for a counter the cache keeps; {} when the interpreter's
    binary cannot be read (its counts are then counted, as without a cache). ``worker_ops``:
    every (suite, op) the counter's worker runs, in order."""
    if counter not in countcache.CACHED_COUNTERS:
        return {}
    try:
        return {op: cache.key(counter, tool_methods.get(counter),
                              series.interpreter["executable"], suite, op, profile=profile,
                              io_stack=series.io_stack, output=conditions.output,
                              allocator=conditions.allocator, calls=COUNT_CALLS,
                              worker_ops=worker_ops, sizes=countsizes.key_of(counter, op))
                for op in ops}
    except OSError as exc:
        log(f"iomatrix: counting {series.series}: the counts cache is not used "
            f"({exc.strerror or exc}: {procs.tail(str(exc.filename or ''), 1)})")
        return {}


def _fill_bytes(document: dict, work: Path, suite: str) -> None:
    """bytes_per_call of each op, from any worker row of this suite at the timed size (every
    pass has it; those at a counting size, ``@`` in their directory's name, are not the
    timed call's)."""
    for rows_file in work.glob(f"{suite}-*/counts.jsonl"):
        if "@" in rows_file.parent.name:
            continue
        for row in _read_rows(rows_file):
            entry = document["ops"].get(row.get("op"))
            if entry is not None and row.get("bytes_per_call") is not None:
                entry["bytes_per_call"] = row["bytes_per_call"]


def fixture_dir(fixtures: Path, size) -> Path:
    """The fixtures of one size under the pass's ``fixtures``: ``timed`` (the timing
    pass's sizes), ``counting-1`` (COUNT_DIVISOR) or ``counting-2`` (twice it)."""
    return Path(fixtures) / ("timed" if size == "timed" else f"counting-{size}")


def make_fixtures(suites, profile: str, directory: Path) -> None:
    """The counting pass's fixtures, with the host's Python: the timed sizes, and the two
    smaller ones at which the ops of countsizes.SCALED are counted."""
    for size, kind in (("timed", []), (1, ["counting"]),
                       (countsizes.CHECK_FACTOR, [f"counting:{countsizes.CHECK_FACTOR}"])):
        target = fixture_dir(directory, size)
        proc = procs.run([sys.executable, str(HARNESS), "--make-fixtures", ",".join(suites),
                          profile, str(target)] + kind, timeout=3600,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        if proc.returncode != 0:
            raise RuntimeError(f"cannot make the counting fixtures in {target}: "
                               + procs.tail(proc.stderr or proc.stdout, 3, " / "))


def series_of_plans(run: store.Run, plans: dict, manifest: dict) -> list:
    """The runner's series plans as Series: the ops each can run, in the suite's order.

    A series whose pyperf file an earlier session wrote has no listed ops: its
    ops are those of the file.
    """
    found = []
    for plan in plans.values():
        if plan.interp is None:
            continue  # the native reference has no interpreter to count
        ops = list(plan.ops)
        if not ops and plan.kept:
            try:
                ops = list(dict.fromkeys((r["suite"], r["op"])
                                         for r in store.load_series(run.series_file(plan.series))))
            except store.ResultFileError:
                ops = []
        info = dict(manifest["interpreters"].get(plan.series, {}))
        info.update(plan.interp.as_manifest())
        found.append(Series(plan.series, info, plan.io_stack, ops))
    return found


def count_run(run: store.Run, plans: dict, manifest: dict, counters, *, profile: str,
              conditions, work_root: Path, timeout: float, log=print,
              cache_root: Path | None = None, seed: int | None = None,
              aa_recount=twincount.AA_RECOUNT) -> None:
    """The counting pass of a run: every series of ``plans``; results into the manifest.

    Each series' manifest entry gets ``counters``: status ok, partial (some ops
    failed for counting), failed, or skipped (with the reason per counter), and
    ``from_cache``, the counts taken from the counts cache (``cache_root``, by default
    the iomatrix cache's ``counts/``: iomatrix.measuring.countcache).
    An A/A twin counts again the syscalls of ``aa_recount`` of its ops (a number; ``all``:
    every op and counter), drawn from
    ``seed`` (by default the session's, from the manifest), and starts once its original
    is counted (``_schedule``); its entry's ``recounted`` names the ops it counted.
    The timing results are never touched; a failure here fails no series.
    """
    if not counters:
        return
    started = time.monotonic()
    work_root = Path(work_root) / "counting"
    work_root.mkdir(parents=True, exist_ok=True)
    all_series = [s for s in series_of_plans(run, plans, manifest) if s.ops]
    problems = tool_problems(counters, work_root)
    for counter, why in problems.items():
        log(f"iomatrix: counting {counter} skipped: {why}")
    tool_methods = methods(counters)
    suites = sorted({suite for s in all_series for suite, _ in s.ops})
    fixtures = work_root / "fixtures"
    try:
        if suites and len(problems) < len(counters):
            make_fixtures(suites, profile, fixtures)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        for s in all_series:
            manifest["interpreters"][s.series]["counters"] = {"status": "failed",
                                                              "reason": str(exc)}
        log(f"iomatrix: counting failed: {exc}")
        return
    log(f"iomatrix: counting {', '.join(counters)} for {len(all_series)} series "
        f"({JOBS} at a time)")

    stopping = threading.Event()
    cache = countcache.CountsCache(cache_root, log=log)

    if seed is None:
        seed = (manifest.get("sessions") or [{}])[-1].get("seed") or 0
    samples = {s.series: twincount.sample([op for _, op in s.ops], seed, aa_recount)
               for s in all_series if s.interpreter.get("aa_of")}
    for name, chosen in samples.items():
        if chosen is not None:
            log(f"iomatrix: counting {name} (A/A): the syscalls of {len(chosen)} ops counted "
                f"again ({', '.join(sorted(chosen))}); its other syscalls and its instructions "
                "from the counts cache where there (--aa-recount all: every op)")

    # Series counted at the same time trace on different CPUs (counttools.STRACE_ON_ONE_CPU).
    free_cpus: queue.SimpleQueue = queue.SimpleQueue()
    usable = sorted(machine.usable_cpus() or [None])
    for lane in range(JOBS):
        free_cpus.put(usable[lane % len(usable)])

    def one(slot, series):
        cpu = free_cpus.get()
        try:
            return count_series(run, series, counters, problems, fixtures, work_root, profile,
                                conditions, timeout, tool_methods, slot, log, stopping, cache,
                                recount=samples.get(series.series), cpu=cpu)
        finally:
            free_cpus.put(cpu)
    # Ctrl-C or a failed series: _schedule starts no new pass; the passes running now finish
    # (their worker is in its own process group, away from the terminal's SIGINT), their
    # counts kept.
    for name, entry in _schedule(all_series, one, stopping):
        manifest["interpreters"][name]["counters"] = entry
    taken = sum(len(ops) for s in all_series
                for ops in manifest["interpreters"][s.series].get("counters", {})
                .get("from_cache", {}).values())
    manifest["counters"] = {"counters": list(counters), "calls": COUNT_CALLS,
                            "seconds": round(time.monotonic() - started, 1),
                            "skipped": problems, "from_cache": taken}
    log(f"iomatrix: counting done in {time.monotonic() - started:.0f} s"
        + (f" ({taken} counts taken from the counts cache)" if taken else ""))
