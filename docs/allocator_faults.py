#!/usr/bin/env python
"""Minor page faults and time per call of a whole-file read, text mode against binary mode.

    python allocator_faults.py                        # the 2009 study's 2,935,401-byte file
    python allocator_faults.py --size 64K 1M 2935401 16M --calls 20

Stand-alone (standard library only; Python 2.7 and every 3.x) so that it can be
attached to an upstream report. For each size it writes a file of ASCII text
lines in a temporary directory, then, for each mode, starts a fresh interpreter
that does nothing but ``with open(path, mode) as f: f.read()`` ``--calls`` times
in a loop, and prints per call: the minor page faults (getrusage), the wall time
and the CPU time. The first two calls are shown apart: the first maps its
buffers fresh, and glibc moves its thresholds when it unmaps them. A fresh process per (size, mode) keeps the history of glibc's allocator
the same for every line: its mmap and trim thresholds move as a process frees
large blocks, so a read after other work can behave differently.

What it shows on glibc (iomatrix's docs/allocator.md has the explanation and
the numbers): from about 64 KiB up to 32 MiB, Python 3's text-mode read pays a
minor fault for every page of both the bytes it read and the str it decoded on
every call, while binary mode and Python 2.7 reuse the heap and pay none after
the second call. Nothing is set in the allocator's environment; variables that
would change it (MALLOC_*, MIMALLOC_*, GLIBC_TUNABLES, PYTHONMALLOC) are named in
the header when present.
"""
from __future__ import division, print_function

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import timeit

STUDY_FILE_BYTES = 2935401      # the 2009 study's text file
DEFAULT_CALLS = 20
LINE = b"All work and no play makes Jack a dull boy; the quick brown fox jumps over it.\n"
MODES = (("text", "r"), ("binary", "rb"))
UNITS = {"K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024}


def parse_size(text):
    """``2935401``, ``64K``, ``16M`` (binary units) as a byte count."""
    scale = UNITS.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    try:
        size = int(digits) * scale
    except ValueError:
        raise argparse.ArgumentTypeError("not a size: %r (use 2935401, 64K, 16M)" % text)
    if size < 1:
        raise argparse.ArgumentTypeError("a size must be at least 1 byte: %r" % text)
    return size


def write_text_file(path, size):
    """``size`` bytes of ASCII text lines (the last one cut short)."""
    repeats = size // len(LINE) + 1
    with open(path, "wb") as f:
        f.write((LINE * repeats)[:size])


def minor_faults():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def cpu_seconds():
    import resource
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure_here(path, mode, calls):
    """[(minor faults, wall seconds, cpu seconds)] of ``calls`` whole-file reads, in this
    process. The result is dropped after each call, as a program that reads a file,
    uses it and moves on does."""
    clock = timeit.default_timer
    rows = []
    for _ in range(calls):
        faults, cpu, start = minor_faults(), cpu_seconds(), clock()
        with open(path, mode) as f:
            size = len(f.read())
        wall = clock() - start
        rows.append((minor_faults() - faults, wall, cpu_seconds() - cpu))
        if size != os.path.getsize(path):
            raise SystemExit("read %d characters of a %d-byte file" % (size, os.path.getsize(path)))
    return rows


def measure_in_fresh_process(path, mode, calls):
    """measure_here in a new interpreter (the same one), so every measurement starts from
    the same allocator state."""
    command = [sys.executable, os.path.abspath(__file__), "--child", path, mode, str(calls)]
    output = subprocess.check_output(command)
    return json.loads(output.decode("ascii").strip().splitlines()[-1])


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def summarize(rows):
    """The faults of the first and second calls (glibc maps, then moves its threshold);
    from the third call on, what every call costs: mean faults, median wall and CPU ms."""
    later = rows[2:]
    return {"first_faults": rows[0][0], "second_faults": rows[1][0],
            "faults": sum(r[0] for r in later) / len(later),
            "wall_ms": median([r[1] for r in later]) * 1000,
            "cpu_ms": median([r[2] for r in later]) * 1000}


def allocator_variables():
    return sorted(name for name, value in os.environ.items()
                  if name.startswith(("MALLOC_", "MIMALLOC_")) or name == "PYTHONMALLOC"
                  or (name == "GLIBC_TUNABLES" and "glibc.malloc." in value))


def libc_version():
    """The C library this process runs on (confstr asks the running one; libc_ver reads
    the executable's symbol versions, which name the oldest glibc it needs)."""
    try:
        import ctypes  # Python 2.7's confstr does not know CS_GNU_LIBC_VERSION
        version = ctypes.CDLL(None).gnu_get_libc_version
        version.restype = ctypes.c_char_p
        return "glibc " + version().decode("ascii")
    except (ImportError, AttributeError, OSError):
        return " ".join(platform.libc_ver()).strip() or "unknown libc"


def header():
    libc = libc_version()
    lines = ["# Python %s (%s), %s, %s" % (platform.python_version(),
                                           platform.python_implementation(), libc,
                                           platform.machine())]
    variables = allocator_variables()
    lines.append("# allocator environment: %s" % (
        ", ".join(variables) + " SET (not glibc's defaults)" if variables else
        "untouched (no MALLOC_*, MIMALLOC_*, GLIBC_TUNABLES malloc, PYTHONMALLOC)"))
    return lines


COLUMNS = ("size", "mode", "calls", "pages", "faults_1st", "faults_2nd", "faults/call",
           "ms/call", "cpu_ms/call")
ROW_FORMAT = "%10s  %-6s  %5s  %6s  %10s  %10s  %11s  %8s  %11s"


def format_row(size, mode, calls, summary):
    return ROW_FORMAT % (
        size, mode, calls, -(-size // 4096), summary["first_faults"], summary["second_faults"],
        "%.1f" % summary["faults"], "%.3f" % summary["wall_ms"], "%.3f" % summary["cpu_ms"])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        path, mode, calls = argv[1], argv[2], int(argv[3])
        print(json.dumps(measure_here(path, mode, calls)))
        return 0
    parser = argparse.ArgumentParser(
        description="Minor page faults and time per whole-file read, text against binary mode, "
                    "each in a fresh process.")
    parser.add_argument("--size", nargs="+", type=parse_size, default=[STUDY_FILE_BYTES],
                        help="file sizes in bytes (K, M: binary units); default %d, the 2009 "
                             "study's file" % STUDY_FILE_BYTES)
    parser.add_argument("--calls", type=int, default=DEFAULT_CALLS,
                        help="reads per process (default %d; at least 3: the first two are "
                             "shown apart)" % DEFAULT_CALLS)
    args = parser.parse_args(argv)
    if args.calls < 3:
        parser.error("--calls must be at least 3 (the first two calls are shown apart)")
    try:
        import resource  # noqa: F401  (getrusage: the faults are the point)
    except ImportError:
        parser.error("no resource module here (Windows?): minor faults cannot be read")
    for line in header():
        print(line)
    print("# pages: the file's size in 4 KiB pages; faults_1st, faults_2nd: the first two "
          "calls; faults/call (mean), ms/call (wall, median), cpu_ms/call (median): the "
          "calls from the third on")
    print(ROW_FORMAT % COLUMNS)
    directory = tempfile.mkdtemp(prefix="allocator_faults-")
    try:
        for size in args.size:
            path = os.path.join(directory, "text-%d.txt" % size)
            write_text_file(path, size)
            for name, mode in MODES:
                rows = measure_in_fresh_process(path, mode, args.calls)
                print(format_row(size, name, args.calls, summarize(rows)))
                sys.stdout.flush()
            os.remove(path)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
