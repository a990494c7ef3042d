"""The tools of the counting pass: whether each is usable here, how it is run, what it wrote.

``strace`` counts system calls by name, ``valgrind``'s callgrind counts
instructions (``setarch -R`` and ``PYTHONHASHSEED=0`` make a count repeat). A tool
that is missing, or that ptrace restrictions stop (containers), is found here by
a short probe run in the work dir, and its counter is skipped with the reason.
The worker's markers (``suites/_counting.py``) cut the counted window out of the
tools' whole-process output: a stat() of a marker path for strace, a getppid()
call for callgrind's ``--dump-before``.
"""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from iomatrix import callgrind, procs
from iomatrix.storing.countsfile import BYTE_SYSCALLS

PROBE_TIMEOUT_SECONDS = 60
# callgrind's --dump-before matches this libc function: the worker's window markers.
MARKER_FUNCTION = "getppid"
MARKER_RE = re.compile(r'"iomatrix-count-(begin|end)-(\d+)"')
# "1234  read(3, ..." or "[pid 1234] read(..." or "read(..."; "<... read resumed>" is the
# second half of a call already counted at its "<unfinished ...>" line.
SYSCALL_RE = re.compile(r"^(?:\[pid\s+\d+\]\s*|\d+\s+)?([a-z_][a-z0-9_]*)\(")
RESUMED_RE = re.compile(r"^(?:\[pid\s+\d+\]\s*|\d+\s+)?<\.\.\. ([a-z_][a-z0-9_]*) resumed>")
# A call's return value ends its line: ") = 131072", or ") = -1 EAGAIN (...)"; the tail after
# the number has no quote, so a ") = 5" inside a string argument is never taken for it.
RETURN_RE = re.compile(r"\)\s+=\s+(-?\d+)(?:\s[^\"]*)?$")
DUMP_RE = re.compile(r"\.(\d+)$")


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


# strace and the worker it traces run on one CPU (the counting pass gives each series counted
# at the same time its own). Under ptrace every system call stops the worker twice and wakes
# strace each time; across two vCPUs each wake-up costs about 100 us here. Alone on an idle
# machine, the strace pass of 3.12's 42 ops took 5.6 s of CPU on one CPU instead of 15.6 (wall
# 5.8 s instead of 20.9) and counted the same calls, op by op (2026-11-28: only
# manyfiles_read_threads' futex, munmap and exit calls moved, as they do between two passes
# either way). Beside another series' callgrind the scheduler already kept the two together:
# the pin makes the pass's cost independent of what the other CPU does (docs/methodology.md).
STRACE_ON_ONE_CPU = "strace and the worker on one CPU"


# An op's instructions depend a little on what its process ran before it (up to 1.8% on
# 3.15 when the ops of every suite share one process instead of one process per suite):
# files counted the older way are another method (compare_counts does not compare them).
ONE_WORKER = "every suite's ops in one process per series"


def use_valgrind_switch() -> bool:
    """The worker's client requests are x86-64 machine code."""
    return platform.machine() in ("x86_64", "AMD64")


def methods(counters, environ=None) -> dict:
    path = dict(os.environ if environ is None else environ).get("PATH", "")
    found = {}
    if "syscalls" in counters and shutil.which("strace", path=path):
        # "bytes moved": a file counted before the bytes were has the older string, so a
        # resumed run counts its syscalls again, the bytes with them (counters.count_series).
        found["syscalls"] = (f"{_tool_version([shutil.which('strace', path=path), '-V'])}, "
                             f"strace -f -qq, {STRACE_ON_ONE_CPU}: every call of every thread "
                             "between the markers; bytes "
                             "moved from the return values of read/write-like calls")
    if "rusage" in counters:
        found["rusage"] = "getrusage(RUSAGE_SELF) deltas around the calls, in a plain process"
    if "instructions" in counters and shutil.which("valgrind", path=path):
        # "entered after the switch": the window's C frame starts after instrumentation does
        # (_counting.in_fresh_frame), so self costs are filed under the right functions; a
        # file of the older way (without it) is another method, never compared with this one.
        where = ("instrumentation on in the window only (--instr-atstart=no, client requests; "
                 "the window in a frame entered after the switch)"
                 if use_valgrind_switch() else "whole process instrumented")
        found["instructions"] = (
            f"{_tool_version([shutil.which('valgrind', path=path), '--version'])} callgrind, "
            f"setarch -R, PYTHONHASHSEED=0, --dump-before={MARKER_FUNCTION}; {where}; "
            f"{callgrind.CACHE_DESCRIPTION}; {ONE_WORKER}")
    return found


# -- one series ----------------------------------------------------------------------


def tool_prefix(kind: str, switch: bool) -> list:
    """strace or valgrind before the worker; their files go to the attempt dir (the parent of
    the worker's working directory)."""
    if kind == "strace":
        return ["strace", "-f", "-qq", "-o", "../strace.txt"]
    if kind == "valgrind":
        return ["setarch", platform.machine(), "-R", "valgrind", "--tool=callgrind",
                "--vgdb=no", "--callgrind-out-file=../callgrind.%p",
                f"--dump-before={MARKER_FUNCTION}",
                f"--instr-atstart={'no' if switch else 'yes'}", *callgrind.CACHE_OPTIONS]
    return []


def syscall_windows(strace_file: Path) -> dict:
    """{marker index: {syscall name: calls}} for every complete window of a strace -f file
    (``syscall_byte_windows`` without the bytes)."""
    return {index: calls for index, (calls, _) in syscall_byte_windows(strace_file).items()}


def syscall_byte_windows(strace_file: Path) -> dict:
    """{marker index: ({syscall name: calls}, {syscall name: bytes})} for every complete
    window of a strace -f file.

    A window runs from the stat of ``iomatrix-count-begin-N`` to that of
    ``...-end-N``; the two getppid() calls just inside the markers are not counted.
    The bytes are the sums of the non-negative return values of ``BYTE_SYSCALLS``: a call
    strace splits between threads (``read(3, <unfinished ...>``, later ``<... read resumed>
    ...) = N``) is counted at its first line and its bytes at the second; a call still
    unfinished when the window ends moved nothing the window saw complete.
    """
    windows, current, counts, moved = {}, None, None, None
    with open(strace_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            marker = MARKER_RE.search(line)
            if marker and SYSCALL_RE.match(line):
                kind, index = marker.group(1), int(marker.group(2))
                if kind == "begin":
                    current, counts, moved = index, {}, {}
                elif current == index:
                    if counts.get(MARKER_FUNCTION, 0) >= 2:
                        counts[MARKER_FUNCTION] -= 2
                        windows[index] = ({k: v for k, v in counts.items() if v}, moved)
                    current, counts, moved = None, None, None
                continue
            if current is None:
                continue
            match = SYSCALL_RE.match(line)
            name = match.group(1) if match else None
            if match:
                counts[name] = counts.get(name, 0) + 1
            else:
                resumed = RESUMED_RE.match(line)
                name = resumed.group(1) if resumed else None
            if name in BYTE_SYSCALLS:
                returned = RETURN_RE.search(line)
                if returned and int(returned.group(1)) >= 0:
                    moved[name] = moved.get(name, 0) + int(returned.group(1))
    return windows


def callgrind_dumps(attempt_dir: Path) -> list:
    """callgrind's numbered dumps of one worker, in order: callgrind.<pid>.<n> (the final
    dump, at exit, has no <n> and is not a window)."""
    dumps = []
    for path in attempt_dir.glob("callgrind.*"):
        match = DUMP_RE.search(path.name)
        if match and path.name.count(".") == 2:
            dumps.append((int(match.group(1)), path))
    return [path for _, path in sorted(dumps)]


def window_counts(dump: Path) -> dict | None:
    """What the counting pass keeps of one window's dump: {"instructions": Ir, "cache":
    {event: total} (empty without cache simulation), "functions": [[name, file, self Ir,
    calls]] (callgrind.kept_functions), "call_edges": [[caller, callee, calls, inclusive Ir]]
    (callgrind.kept_edges)}; None when the dump cannot be read. A dump whose header reads
    but whose body is damaged or cut short keeps its header's totals, and instead of the
    functions and edges says why in "call_paths_unavailable"."""
    try:
        profile = callgrind.read_profile(dump)
    except OSError:
        return None
    except callgrind.CallgrindFormatError as exc:
        # A damaged body: the header's totals stand (callgrind wrote them), the functions and
        # call paths do not; the op's findings say "call paths unavailable".
        try:
            events = callgrind.read_summary(dump)
        except (OSError, callgrind.CallgrindFormatError):
            return None
        profile = {"events": events}
        return {"instructions": events.get("Ir"), "cache": callgrind.cache_counts(profile),
                "call_paths_unavailable": procs.tail(str(exc), 1)[:200]}
    if not profile["complete"]:
        return {"instructions": profile["events"].get("Ir"),
                "cache": callgrind.cache_counts(profile),
                "call_paths_unavailable": "callgrind's dump ends before its totals line "
                                          "(cut short)"}
    kept = callgrind.kept_functions(profile)
    return {"instructions": profile["events"].get("Ir"), "cache": callgrind.cache_counts(profile),
            "functions": kept, "call_edges": callgrind.kept_edges(profile, kept)}
