"""The counting pass: system calls, page faults, context switches and instructions per op.

Timings on a shared machine wobble; counts do not. After the timing work of a
run, this pass runs every op of every series again, outside any timed region,
and counts what one call does:

- ``syscalls``: system calls by name, from ``strace -f`` of the whole worker
  process, cut to the counted window by the worker's markers;
- ``rusage``: minor and major page faults, voluntary and involuntary context
  switches (``getrusage`` deltas around the window, in a plain process: under
  strace or valgrind these numbers would describe the tool);
- ``instructions``: user-space instructions executed in the window, from
  valgrind's callgrind with address-space randomisation off (``setarch -R``)
  and ``PYTHONHASHSEED=0``, so that a count repeats.

The worker side is ``suites/_counting.py`` (its docstring describes the
markers). Each counter is its own worker process per suite: ``plain``,
``strace`` and ``valgrind``. Every op gets one warm-up call and then
``COUNT_CALLS`` counted calls; the stored numbers are totals over those calls.

Fixtures: the pass makes its own, with ``harness.py --make-fixtures ...
counting``; a suite that defines ``COUNT_DIVISOR`` (lutz2009: 8) makes its files
and writes that many times smaller, because valgrind runs 20-50x slower than
natively. ``bytes_per_call`` is stored with every op, so counts per MiB compare
with the timing pass's sizes; counts per call are for the counting sizes.

PyPy: instructions are not counted. What its JIT executes in a counted call
depends on which traces it has compiled by then, which one warm-up call does
not settle, and valgrind runs PyPy's JIT very slowly. Its syscalls and rusage
are counted.

Valgrind's instrumentation is switched on in the windows only (callgrind
``--instr-atstart=no`` and the client requests of
``_counting.ValgrindSwitch``, x86-64 only): start-up, fixture checks and warm-up
calls then run at the speed of valgrind's core, about half the pass's time
saved. Elsewhere the whole process is instrumented. The two ways count
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
      "fixtures": "counting",                # COUNT_DIVISOR sizes (see above)
      "methods": {"syscalls": "...", ...},   # tool, version and options per counter
      "skipped": {"instructions": "why"},    # counters not run for this series
      "ops": {
        "read_byBlocks_binaryMode": {
          "suite": "lutz2009", "bytes_per_call": 366925, "calls": 1,
          "syscalls": {"read": 46, "openat": 1, ...},     # totals over the calls
          "rusage": {"minflt": 0, "majflt": 0, "nvcsw": 0, "nivcsw": 1},
          "instructions": 1077463,
          "failed": {"instructions": "timed out after 60 s ..."}   # counting only
        }
      }
    }

An op already counted for a counter is kept when a run is resumed; failed and
missing ones are counted again. Nothing is written outside the run's results
directory and its work directory: strace's ``-o`` file, callgrind's output
files and valgrind's temporary files (``TMPDIR``) all go into the work dir.

Library functions for the report and compare tools: ``load_counts`` (tidy
rows), ``steps``, ``markdown_section``, ``aa_exactness``, ``compare_counts`` and
``compare_markdown``. They use only the standard library.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from iomatrix import contract, machine, procs, store
from iomatrix.paths import SUITES_DIR

HARNESS = SUITES_DIR / "harness.py"
FORMAT_VERSION = 1
COUNTERS = ("syscalls", "rusage", "instructions")
RUSAGE_FIELDS = ("minflt", "majflt", "nvcsw", "nivcsw")
COUNT_CALLS = 1
# Series are counted side by side: nothing is timed, and valgrind is single-threaded.
# Only the context switches notice the neighbour.
JOBS = max(1, min(2, os.cpu_count() or 1))
PROBE_TIMEOUT_SECONDS = 60
MIB = 1024 * 1024
# callgrind's --dump-before matches this libc function: the worker's window markers.
MARKER_FUNCTION = "getppid"
MARKER_RE = re.compile(r'"iomatrix-count-(begin|end)-(\d+)"')
# "1234  read(3, ..." or "[pid 1234] read(..." or "read(..."; "<... read resumed>" is the
# second half of a call already counted at its "<unfinished ...>" line.
SYSCALL_RE = re.compile(r"^(?:\[pid\s+\d+\]\s*|\d+\s+)?([a-z_][a-z0-9_]*)\(")
DUMP_RE = re.compile(r"\.(\d+)$")


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

def _probe(cmd, cwd, env=None) -> str | None:
    """None when ``cmd`` runs and exits 0, else why not (one line or a short tail)."""
    try:
        proc = procs.run(cmd, timeout=PROBE_TIMEOUT_SECONDS, cwd=cwd, env=env)
    except subprocess.TimeoutExpired:
        return f"{cmd[0]} did not finish within {PROBE_TIMEOUT_SECONDS} s"
    except OSError as exc:
        return f"cannot run {cmd[0]}: {exc.strerror or exc}"
    if proc.returncode != 0:
        return (f"{' '.join(map(str, cmd[:3]))} ... failed "
                f"({procs.describe_exit(proc.returncode)}): "
                + procs.tail(proc.stderr or proc.stdout, 3, " / "))
    return None


def tool_problems(counters, work_dir: Path, environ=None) -> dict:
    """{counter: why it cannot run here} for the requested counters whose tools fail.

    strace must be on PATH and allowed to trace (ptrace is often forbidden in
    containers); valgrind and setarch must be on PATH and setarch -R must work.
    """
    environ = dict(os.environ if environ is None else environ)
    path = environ.get("PATH", "")
    problems = {}
    probe_dir = Path(work_dir) / "probe"
    probe_dir.mkdir(parents=True, exist_ok=True)
    if "syscalls" in counters:
        strace = shutil.which("strace", path=path)
        if strace is None:
            problems["syscalls"] = ("strace is not installed (not on PATH); install it "
                                    "(Debian/Ubuntu: apt-get install strace)")
        else:
            why = _probe([strace, "-f", "-qq", "-o", str(probe_dir / "strace.txt"),
                          sys.executable, "-c", "pass"], probe_dir, environ)
            if why:
                problems["syscalls"] = f"strace cannot trace here (ptrace not permitted?): {why}"
    if "instructions" in counters:
        valgrind = shutil.which("valgrind", path=path)
        setarch = shutil.which("setarch", path=path)
        if valgrind is None:
            problems["instructions"] = ("valgrind is not installed (not on PATH); install it "
                                        "(Debian/Ubuntu: apt-get install valgrind)")
        elif setarch is None:
            problems["instructions"] = ("setarch is not on PATH (util-linux): without it "
                                        "address-space randomisation stays on")
        else:
            why = _probe([setarch, platform.machine(), "-R", valgrind, "--tool=none",
                          "--vgdb=no", sys.executable, "-c", "pass"], probe_dir,
                         {**environ, "TMPDIR": str(probe_dir)})
            if why:
                problems["instructions"] = f"valgrind cannot run here: {why}"
    return problems


def _tool_version(cmd) -> str:
    try:
        proc = procs.run(cmd, timeout=PROBE_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown version"
    return (proc.stdout or proc.stderr).strip().splitlines()[0] if (proc.stdout or proc.stderr) \
        else "unknown version"


def use_valgrind_switch() -> bool:
    """The worker's client requests are x86-64 machine code."""
    return platform.machine() in ("x86_64", "AMD64")


def methods(counters, environ=None) -> dict:
    path = dict(os.environ if environ is None else environ).get("PATH", "")
    found = {}
    if "syscalls" in counters and shutil.which("strace", path=path):
        found["syscalls"] = (f"{_tool_version([shutil.which('strace', path=path), '-V'])}, "
                             "strace -f -qq: every call of every thread between the markers")
    if "rusage" in counters:
        found["rusage"] = "getrusage(RUSAGE_SELF) deltas around the calls, in a plain process"
    if "instructions" in counters and shutil.which("valgrind", path=path):
        where = ("instrumentation on in the window only (--instr-atstart=no, client requests)"
                 if use_valgrind_switch() else "whole process instrumented")
        found["instructions"] = (
            f"{_tool_version([shutil.which('valgrind', path=path), '--version'])} callgrind, "
            f"setarch -R, PYTHONHASHSEED=0, --dump-before={MARKER_FUNCTION}; {where}")
    return found


# -- one series ----------------------------------------------------------------------

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
            "calls": COUNT_CALLS, "fixtures": "counting", "methods": {}, "skipped": {},
            "ops": {}}


def read_document(path: Path) -> dict | None:
    """The counters file at ``path``, or None when there is none; ResultFileError if broken."""
    if not os.path.lexists(path):
        return None
    data = store.read_json(path)
    if not isinstance(data, dict) or data.get("iomatrix_counters_version") != FORMAT_VERSION \
            or not isinstance(data.get("ops"), dict):
        raise store.ResultFileError(f"{path}: not an iomatrix counters file (version "
                                    f"{FORMAT_VERSION})")
    return data


def worker_environment(allocator: str, tmp_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONHOME", "PYTHONPATH")}
    env.update(machine.allocator_environment(allocator))
    env["PYTHONHASHSEED"] = "0"            # dict and set layouts repeat: so do the counts
    env["PYTHONDONTWRITEBYTECODE"] = "1"   # never write beside the suites
    env["TMPDIR"] = str(tmp_dir)           # valgrind's and anything else's temp files
    return env


def worker_command(python: str, suite: str, ops: list, fixtures: Path, scratch: Path,
                   output: Path, profile: str, io_stack: str, output_state: str,
                   first_index: int, switch: bool = False) -> list:
    return [python, str(HARNESS), "--count", "--suite", suite, "--ops", json.dumps(ops),
            "--fixtures", str(fixtures), "--scratch", str(scratch),
            "--iomatrix-profile", profile, "--io", io_stack, "--output-state", output_state,
            "--calls", str(COUNT_CALLS), "--first-index", str(first_index),
            "--output", str(output)] + (["--valgrind-switch"] if switch else [])


def tool_prefix(kind: str, switch: bool) -> list:
    """strace or valgrind before the worker; their files go to the attempt dir (the parent of
    the worker's working directory)."""
    if kind == "strace":
        return ["strace", "-f", "-qq", "-o", "../strace.txt"]
    if kind == "valgrind":
        return ["setarch", platform.machine(), "-R", "valgrind", "--tool=callgrind",
                "--vgdb=no", "--callgrind-out-file=../callgrind.%p",
                f"--dump-before={MARKER_FUNCTION}",
                f"--instr-atstart={'no' if switch else 'yes'}"]
    return []


def syscall_windows(strace_file: Path) -> dict:
    """{marker index: {syscall name: calls}} for every complete window of a strace -f file.

    A window runs from the stat of ``iomatrix-count-begin-N`` to that of
    ``...-end-N``; the two getppid() calls just inside the markers are not counted.
    """
    windows, current, counts = {}, None, None
    with open(strace_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            marker = MARKER_RE.search(line)
            if marker and SYSCALL_RE.match(line):
                kind, index = marker.group(1), int(marker.group(2))
                if kind == "begin":
                    current, counts = index, {}
                elif current == index:
                    if counts.get(MARKER_FUNCTION, 0) >= 2:
                        counts[MARKER_FUNCTION] -= 2
                        windows[index] = {k: v for k, v in counts.items() if v}
                    current, counts = None, None
                continue
            match = SYSCALL_RE.match(line)
            if current is not None and match:
                name = match.group(1)
                counts[name] = counts.get(name, 0) + 1
    return windows


def callgrind_dumps(attempt_dir: Path) -> list:
    """The instruction totals of callgrind's numbered dumps, in order (None: unreadable)."""
    dumps = []
    for path in attempt_dir.glob("callgrind.*"):
        match = DUMP_RE.search(path.name)
        if match and path.name.count(".") == 2:   # callgrind.<pid>.<n>; the final dump has no n
            dumps.append((int(match.group(1)), path))
    totals = []
    for _, path in sorted(dumps):
        value = None
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    value = int(line.split()[1])
                    break
        totals.append(value)
    return totals


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
        windows = syscall_windows(attempt_dir / "strace.txt")
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
            out[op] = ("ok", window) if window is not None else \
                ("failed", "no complete marker window in strace's output")
        else:
            # Dumps come in pairs per op: at the begin marker, then at the end marker;
            # the second holds the window. A count past 2**63 is callgrind's negative.
            value = dumps[first + 1] if first + 1 < len(dumps) else None
            if row.get("markers") != 2 or value is None or value >= 2 ** 63:
                out[op] = ("failed", f"no usable callgrind dump for the window (dump "
                                     f"{first + 2} of {len(dumps)}: {value})")
            else:
                out[op] = ("ok", value)
    return out


PASS_OF = {"syscalls": "strace", "rusage": "plain", "instructions": "valgrind"}


def run_pass(kind: str, series: Series, suite: str, ops: list, *, fixtures: Path,
             work: Path, tmp_dir: Path, profile: str, conditions, timeout: float, log) -> dict:
    """Count ``ops`` of one suite with one tool; {op: ("ok", value) | ("failed", why)}.

    An op that crashes or hangs the worker is failed (for counting only) with the
    output tail; the worker is started again for the ops after it.
    """
    results, first_index, attempt = {}, 0, 0
    switch = kind == "valgrind" and use_valgrind_switch()
    remaining = list(ops)
    while remaining:
        attempt += 1
        attempt_dir = work / f"{suite}-{kind}-{attempt}"
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
                                         stderr_dir=attempt_dir)
        rows = _read_rows(output)
        results.update(_results_of_attempt(kind, rows, attempt_dir))
        done = {row.get("op") for row in rows}
        if fatal is not None:
            culprit = culprit if culprit in remaining and culprit not in done else \
                next((op for op in remaining if op not in done), None)
            if culprit is not None:
                results[culprit] = ("failed", f"{kind}: {fatal}")
                log(f"iomatrix: counting {series.series} {culprit} ({kind}) FAILED: "
                    f"{procs.tail(fatal, 3)}")
                done.add(culprit)
        elif not done:
            results.setdefault(remaining[0], ("failed", f"{kind}: the worker wrote nothing"))
            done.add(remaining[0])
        first_index += len(remaining)
        remaining = [op for op in remaining if op not in done]
    return results


def count_series(run: store.Run, series: Series, counters, problems: dict, fixtures: Path,
                 work_root: Path, profile: str, conditions, timeout: float, tool_methods: dict,
                 slot: int = 0, log=print, stopping=None) -> dict:
    """Count one series, resuming from its counters file; the manifest's entry for it.

    ``stopping``: a threading.Event; once set, no further pass is started.

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
        return {"status": "failed", "reason": f"{exc}; remove it to count again"}
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
    failed = {}
    for counter in counters:
        if counter in skipped:
            continue
        document["methods"][counter] = tool_methods.get(counter)
        for suite in sorted({s for s, _ in series.ops}):
            wanted = [op for s, op in series.ops if s == suite]
            todo = [op for op in wanted if counter not in document["ops"].get(op, {})]
            if not todo or (stopping is not None and stopping.is_set()):
                continue
            results = run_pass(PASS_OF[counter], series, suite, todo, fixtures=fixtures,
                               work=work, tmp_dir=work_root / "tmp", profile=profile,
                               conditions=conditions,
                               timeout=timeout, log=log)
            for op in todo:
                entry = document["ops"].setdefault(op, {"suite": suite, "calls": COUNT_CALLS})
                entry.setdefault("failed", {}).pop(counter, None)
                state, value = results.get(op, ("failed", "the worker never reached this op"))
                if state == "ok":
                    entry[counter] = value
                else:
                    entry["failed"][counter] = procs.tail(str(value))
                if not entry["failed"]:
                    del entry["failed"]
            _fill_bytes(document, work, suite)
            contract.atomic_write_json(str(path), document)
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
    if status != "ok":
        log(f"iomatrix: counting {series.series}: {status}"
            + "".join(f"; {c} skipped: {why}" for c, why in skipped.items()))
    return entry


def _fill_bytes(document: dict, work: Path, suite: str) -> None:
    """bytes_per_call of each op, from any worker row of this suite (every pass has it)."""
    for rows_file in work.glob(f"{suite}-*/counts.jsonl"):
        for row in _read_rows(rows_file):
            entry = document["ops"].get(row.get("op"))
            if entry is not None and row.get("bytes_per_call") is not None:
                entry["bytes_per_call"] = row["bytes_per_call"]


def make_fixtures(suites, profile: str, directory: Path) -> None:
    """The counting pass's fixtures (COUNT_DIVISOR sizes), with the host's Python."""
    proc = procs.run([sys.executable, str(HARNESS), "--make-fixtures", ",".join(suites),
                      profile, str(directory), "counting"], timeout=3600,
                     env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"cannot make the counting fixtures in {directory}: "
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
              conditions, work_root: Path, timeout: float, log=print) -> None:
    """The counting pass of a run: every series of ``plans``; results into the manifest.

    Each series' manifest entry gets ``counters``: status ok, partial (some ops
    failed for counting), failed, or skipped (with the reason per counter).
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

    def one(slot_and_series):
        slot, series = slot_and_series
        return series.series, count_series(run, series, counters, problems, fixtures, work_root,
                                           profile, conditions, timeout, tool_methods, slot, log,
                                           stopping)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=JOBS)
    try:
        for name, entry in pool.map(one, enumerate(all_series)):
            manifest["interpreters"][name]["counters"] = entry
    except BaseException:
        # Ctrl-C: no new pass starts; the passes running now finish (their worker is in
        # its own process group, away from the terminal's SIGINT), their counts are kept.
        stopping.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    manifest["counters"] = {"counters": list(counters), "calls": COUNT_CALLS,
                            "seconds": round(time.monotonic() - started, 1),
                            "skipped": problems}
    log(f"iomatrix: counting done in {time.monotonic() - started:.0f} s")


# -- reading: tidy rows for the report and compare ---------------------------------------

def load_document_rows(path: Path, series: str | None = None) -> list:
    """Tidy rows of one counters file: series, suite, op, counter, per_call, per_MiB, ...

    ``counter`` is ``syscalls`` (all of them), ``syscall:<name>``, ``minflt``,
    ``majflt``, ``nvcsw``, ``nivcsw`` or ``instructions``.
    """
    document = read_document(Path(path))
    if document is None:
        return []
    series = series or document.get("series") or Path(path).name[:-len(store.COUNTERS_SUFFIX)]
    interp = document.get("interpreter") or {}
    rows = []
    for op, entry in document["ops"].items():
        calls = entry.get("calls") or 1
        nbytes = entry.get("bytes_per_call") or 0
        values = {}
        if isinstance(entry.get("syscalls"), dict):
            values["syscalls"] = sum(entry["syscalls"].values())
            for name, n in entry["syscalls"].items():
                values[f"syscall:{name}"] = n
        for field in RUSAGE_FIELDS:
            if isinstance(entry.get("rusage"), dict) and field in entry["rusage"]:
                values[field] = entry["rusage"][field]
        if isinstance(entry.get("instructions"), int):
            values["instructions"] = entry["instructions"]
        for counter, total in values.items():
            per_call = total / calls
            rows.append({"series": series, "suite": entry.get("suite"), "op": op,
                         "counter": counter, "per_call": per_call,
                         "per_MiB": per_call * MIB / nbytes if nbytes else None,
                         "bytes_per_call": nbytes, "implementation": interp.get("implementation"),
                         "version_info": interp.get("version_info"),
                         "free_threaded": interp.get("free_threaded"),
                         "source": interp.get("source"), "aa_of": interp.get("aa_of"),
                         "method": (document.get("methods") or {}).get(
                             "instructions" if counter == "instructions" else
                             "rusage" if counter in RUSAGE_FIELDS else "syscalls")})
    return rows


def load_counts(run_dir) -> list:
    """Tidy rows (see ``load_document_rows``) of every counters file of a run directory."""
    rows = []
    for path in sorted(Path(run_dir).glob("*" + store.COUNTERS_SUFFIX)):
        if path.is_symlink():
            continue
        rows.extend(load_document_rows(path))
    return rows


def skipped_counts(run_dir) -> dict:
    """{series: {counter: reason}} from the manifest: what was not counted, and why."""
    try:
        manifest = store.read_json(Path(run_dir) / store.MANIFEST, store.MAX_MANIFEST_BYTES)
    except store.ResultFileError:
        return {}
    out = {}
    for series, entry in (manifest.get("interpreters") or {}).items():
        info = entry.get("counters") if isinstance(entry, dict) else None
        if not isinstance(info, dict):
            continue
        reasons = dict(info.get("skipped") or {})
        if info.get("reason"):
            reasons["all"] = info["reason"]
        for op, failures in (info.get("failed_ops") or {}).items():
            for counter, why in failures.items():
                reasons[f"{counter} of {op}"] = "failed: " + str(why).splitlines()[-1]
        if reasons:
            out[series] = reasons
    return out


def _index(rows) -> dict:
    return {(r["series"], r["op"], r["counter"]): r for r in rows}


def _series_info(rows) -> dict:
    info = {}
    for r in rows:
        info.setdefault(r["series"], r)
    return info


def series_order(rows) -> list:
    """CPython by version (default build first), then the others: the report's column order."""
    def key(item):
        name, r = item
        version = tuple(r.get("version_info") or (0,))[:3]
        return (r.get("implementation") != "cpython", version, bool(r.get("free_threaded")),
                bool(r.get("aa_of")), name)
    return [name for name, _ in sorted(_series_info(rows).items(), key=key)]


def step_pairs(rows) -> list:
    """(before, after, kind) series pairs: successive CPython versions (one default build
    per minor version, pyenv's or a provisioned one first, per io stack), every other
    default build of a version against that one ("build"), each free-threaded build
    ("free-threaded") and other implementation of the same language version
    ("implementation": PyPy) against it, and each A/A twin against its original ("A/A")."""
    info = _series_info(rows)
    order = series_order(rows)

    def minor(name):
        return tuple(info[name].get("version_info") or ())[:2]

    def plain(name):
        r = info[name]
        return r.get("implementation") == "cpython" and not r.get("free_threaded") \
            and not r.get("aa_of")

    chains = {}   # io stack -> {minor version: series}
    for name in sorted((n for n in order if plain(n)),
                       key=lambda n: (info[n].get("source") not in ("pyenv", "provisioned"),
                                      order.index(n))):
        chains.setdefault(store.split_series(name)[1], {}).setdefault(minor(name), name)
    pairs = []
    for chain in chains.values():
        names = [chain[v] for v in sorted(chain)]
        pairs += [(a, b, "version") for a, b in zip(names, names[1:])]
    for name in order:
        r = info[name]
        base = chains.get(store.split_series(name)[1], {}).get(minor(name))
        if base is None or base == name:
            continue
        if r.get("aa_of"):
            continue
        kind = "free-threaded" if r.get("free_threaded") else \
            "build" if r.get("implementation") == "cpython" else "implementation"
        pairs.append((base, name, kind))
    for name in order:
        if info[name].get("aa_of") in info:
            pairs.append((info[name]["aa_of"], name, "A/A"))
    return pairs


def _ratio(before, after) -> float:
    """How far apart two counts are, as |log ratio|; a count from or to zero is large."""
    if before == after:
        return 0.0
    if not before or not after:
        return math.inf
    return abs(math.log(after / before))


def _fmt(value) -> str:
    if value is None:
        return "–"
    if value >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def _fmt_rel(value) -> str:
    return "0 on one side only" if value == math.inf else f"{value:.3%}"


def steps(rows, pairs=None, counters=("syscalls", "instructions")) -> list:
    """Changes between series pairs per op, biggest first.

    Each item: {before, after, kind, suite, op, changes: [(counter, a, b)], syscalls:
    [(name, a, b)] (the syscalls whose count per call changed), size} where size
    is the largest |log ratio| among ``counters``.
    """
    index = _index(rows)
    pairs = step_pairs(rows) if pairs is None else pairs
    ops = sorted({(r["suite"], r["op"]) for r in rows})
    out = []
    for a, b, kind in pairs:
        for suite, op in ops:
            changes = []
            for counter in counters:
                ra, rb = index.get((a, op, counter)), index.get((b, op, counter))
                if ra and rb and ra["per_call"] != rb["per_call"]:
                    changes.append((counter, ra["per_call"], rb["per_call"]))
            names = sorted({r["counter"][8:] for r in rows if r["op"] == op
                            and r["series"] in (a, b) and r["counter"].startswith("syscall:")})
            changed = []
            if (a, op, "syscalls") in index and (b, op, "syscalls") in index:
                for name in names:
                    va = index.get((a, op, "syscall:" + name), {}).get("per_call", 0)
                    vb = index.get((b, op, "syscall:" + name), {}).get("per_call", 0)
                    if va != vb:
                        changed.append((name, va, vb))
            if not changes and not changed:
                continue
            size = max([_ratio(x, y) for _, x, y in changes] or [0.0])
            changed.sort(key=lambda c: (-abs(c[2] - c[1]), c[0]))
            out.append({"before": a, "after": b, "kind": kind, "suite": suite, "op": op,
                        "changes": changes, "syscalls": changed, "size": size})
    out.sort(key=lambda s: (-s["size"], s["before"], s["after"], s["op"]))
    return out


def describe_step(step: dict, max_syscalls: int = 4) -> str:
    """One line: "`read_byBlocks_binaryMode` 3.13 -> 3.14: syscalls per call 47 -> 7 ..."."""
    parts = []
    for counter, a, b in step["changes"]:
        parts.append(f"{counter} per call {_fmt(a)} -> {_fmt(b)} ({(b - a) / a:+.1%})"
                     if a else f"{counter} per call {_fmt(a)} -> {_fmt(b)}")
    named = [f"`{name}` calls per call: {_fmt(a)} -> {_fmt(b)}"
             for name, a, b in step["syscalls"][:max_syscalls]]
    if len(step["syscalls"]) > max_syscalls:
        named.append(f"{len(step['syscalls']) - max_syscalls} more")
    text = "; ".join(parts + named)
    return f"`{step['op']}` ({step['suite']}) {step['before']} -> {step['after']}: {text}"


def aa_exactness(rows) -> list:
    """Per A/A pair and counter: how many ops counted the same, and the largest difference."""
    out = []
    for a, b, kind in step_pairs(rows):
        if kind != "A/A":
            continue
        index = _index(rows)
        for counter in ("syscalls", "instructions", "minflt", "majflt", "nvcsw", "nivcsw"):
            diffs = []
            for (series, op, c), r in index.items():
                if series == a and c == counter and (b, op, c) in index:
                    other = index[(b, op, c)]["per_call"]
                    diffs.append(abs(other - r["per_call"]) / r["per_call"]
                                 if r["per_call"] else (0.0 if other == 0 else math.inf))
            if diffs:
                out.append({"original": a, "twin": b, "counter": counter, "ops": len(diffs),
                            "identical": sum(d == 0 for d in diffs), "max_rel_diff": max(diffs)})
    return out


def _table(header, rows) -> list:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def markdown_section(rows, skipped: dict | None = None, top: int = 15,
                     heading: str = "## Counts: system calls, page faults, instructions") -> list:
    """The report's counters section: markdown lines.

    Tables of counts per call per op and series (system calls, instructions and
    instructions per MiB, minor page faults), how exact each counter is (A/A),
    then the biggest version steps, each naming the syscalls that changed.
    """
    lines = [heading, ""]
    if not rows:
        lines.append("No counts in this run (`--counters off`, or every counter skipped).")
        for series, reasons in sorted((skipped or {}).items()):
            for what, why in reasons.items():
                lines.append(f"- {series}: {what}: {why}")
        return lines + [""]
    order = series_order(rows)
    index = _index(rows)
    method = {r["counter"]: r["method"] for r in rows}
    lines += [f"Counted apart from timing: one warm-up call, then {COUNT_CALLS} counted call(s) "
              "between markers, per op and interpreter (`scripts/iomatrix/counters.py`). "
              "Counts per call are for the counting pass's sizes (a suite with a "
              "`COUNT_DIVISOR` makes its files and writes that many times smaller than in "
              "the timing pass: lutz2009 8x; see the bytes/call column); per MiB they "
              "compare across sizes.", ""]
    for counter in ("syscalls", "instructions", "minflt"):
        if counter in method:
            lines.append(f"- {counter}: {method[counter]}")
    lines.append("")
    exact = aa_exactness(rows)
    if exact:
        lines += ["How exact (A/A twin: the same interpreter counted twice):", ""]
        lines += _table(["counter", "pair", "ops identical", "largest difference"],
                        [[e["counter"], f"{e['original']} / {e['twin']}",
                          f"{e['identical']}/{e['ops']}", _fmt_rel(e["max_rel_diff"])]
                         for e in exact])
        lines += ["", "Context switches count what else the machine ran meanwhile (two series "
                      "are counted at a time); they are shown for completeness, not compared.", ""]
    ops = sorted({(r["suite"], r["op"], r["bytes_per_call"]) for r in rows})
    for counter, title, field in (("syscalls", "System calls per call", "per_call"),
                                  ("instructions", "Instructions per call (millions)",
                                   "per_call"),
                                  ("instructions", "Instructions per MiB (millions)", "per_MiB"),
                                  ("minflt", "Minor page faults per call", "per_call")):
        columns = [s for s in order if any((s, op, counter) in index for _, op, _ in ops)]
        if not columns:
            continue
        scale = 1e6 if counter == "instructions" else 1
        body = []
        for suite, op, nbytes in ops:
            cells = []
            for s in columns:
                r = index.get((s, op, counter))
                cells.append(_fmt(r[field] / scale) if r and r[field] is not None else "–")
            body.append([f"`{op}`", f"{nbytes:,}"] + cells)
        lines += [f"### {title}", ""]
        lines += _table(["op", "bytes/call"] + columns, body)
        lines.append("")
    found = [s for s in steps(rows) if s["kind"] == "version"]
    lines += ["### Biggest changes between versions", ""]
    if found:
        lines += [f"- {describe_step(s)}" for s in found[:top]]
        if len(found) > top:
            lines.append(f"- ... {len(found) - top} more changes")
    else:
        lines.append("No count changed between successive versions.")
    lines.append("")
    builds = [s for s in steps(rows) if s["kind"] in ("free-threaded", "build", "implementation")]
    if builds:
        lines += ["### Other builds and implementations of the same version", ""]
        lines += [f"- {describe_step(s)}" for s in builds[:top]]
        if len(builds) > top:
            lines.append(f"- ... {len(builds) - top} more changes")
        lines.append("")
    if skipped:
        lines += ["Not counted:", ""]
        for series, reasons in sorted(skipped.items()):
            for what, why in reasons.items():
                lines.append(f"- {series}: {what}: {why}")
        lines.append("")
    return lines


# -- compare and the gate --------------------------------------------------------------

def _side_rows(side) -> dict:
    """{series: rows} of a run directory, a series' pyperf file or a counters file."""
    side = Path(side)
    if side.is_dir():
        rows = load_counts(side)
    else:
        name = side.name
        if not name.endswith(store.COUNTERS_SUFFIX):
            name = name[:-len(".json")] + store.COUNTERS_SUFFIX if name.endswith(".json") \
                else name + store.COUNTERS_SUFFIX
        rows = load_document_rows(side.with_name(name))
    by_series = {}
    for r in rows:
        by_series.setdefault(r["series"], []).append(r)
    return by_series


def compare_counts(side_a, side_b, fail_above: float) -> tuple[list, bool]:
    """Counts of side B against side A, exactly: (rows, whether the gate fails).

    A side is a run directory, a series' pyperf file (its ``.counters.json``
    beside it is used) or a counters file. Two runs are paired by series name;
    two files are one pair whatever their names. Each row: {series_a, series_b,
    suite, op, counter, a, b, change, fails}; counters compared: instructions,
    syscalls and each syscall by name. The gate fails when instructions per call
    grow by more than ``fail_above`` (a fraction); every syscall-per-call increase
    is a row to list, but does not fail the gate on its own. Instruction counts
    are compared only when both sides used the same callgrind method.
    """
    a, b = _side_rows(side_a), _side_rows(side_b)
    if len(a) == 1 and len(b) == 1:
        pairs = [(next(iter(a)), next(iter(b)))]
    else:
        pairs = [(s, s) for s in a if s in b]
    out, fails = [], False
    for sa, sb in pairs:
        ia, ib = _index(a[sa]), _index(b[sb])
        for (_, op, counter), ra in sorted(ia.items()):
            rb = ib.get((sb, op, counter))
            if rb is None or not (counter == "instructions" or counter == "syscalls"
                                  or counter.startswith("syscall:")):
                continue
            if counter == "instructions" and ra["method"] != rb["method"]:
                continue
            va, vb = ra["per_call"], rb["per_call"]
            change = (vb - va) / va if va else (0.0 if vb == va else math.inf)
            fail = counter == "instructions" and change > fail_above
            fails = fails or fail
            if va != vb:
                out.append({"series_a": sa, "series_b": sb, "suite": ra["suite"], "op": op,
                            "counter": counter, "a": va, "b": vb, "change": change,
                            "fails": fail})
        for (_, op, counter), rb in sorted(ib.items()):   # a syscall only side B makes
            if counter.startswith("syscall:") and (sa, op, counter) not in ia \
                    and (sa, op, "syscalls") in ia:
                out.append({"series_a": sa, "series_b": sb, "suite": rb["suite"], "op": op,
                            "counter": counter, "a": 0, "b": rb["per_call"],
                            "change": math.inf, "fails": False})
    return out, fails


def compare_markdown(rows, fail_above: float) -> list:
    """compare_counts' rows as markdown lines: instruction changes, then syscall increases."""
    lines = ["### Counts", ""]
    instr = [r for r in rows if r["counter"] == "instructions"]
    more_calls = [r for r in rows if r["counter"].startswith("syscall") and r["b"] > r["a"]]
    if not instr and not more_calls:
        return lines + ["No count changed (or no counts on one side).", ""]
    if instr:
        lines += _table(["op", "series", "instructions per call", "change"],
                        [[f"`{r['op']}`", f"{r['series_a']} -> {r['series_b']}",
                          f"{_fmt(r['a'])} -> {_fmt(r['b'])}",
                          (f"**{r['change']:+.2%}**" if r["fails"] else f"{r['change']:+.2%}")]
                         for r in sorted(instr, key=lambda r: -r["change"])])
        lines += ["", f"**bold**: more instructions than {fail_above:.0%} above the baseline "
                      "(the gate fails).", ""]
    if more_calls:
        lines += ["More system calls per call:", ""]
        for r in sorted(more_calls, key=lambda r: (r["op"], r["counter"])):
            name = "all syscalls" if r["counter"] == "syscalls" else f"`{r['counter'][8:]}` calls"
            lines.append(f"- `{r['op']}` {r['series_a']} -> {r['series_b']}: {name} per call "
                         f"{_fmt(r['a'])} -> {_fmt(r['b'])}")
        lines.append("")
    return lines
