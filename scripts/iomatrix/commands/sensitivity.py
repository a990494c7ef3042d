"""Sensitivity: an interpreter made slower on one op by a known fraction, to see what flags it.

    python -m iomatrix.commands.sensitivity --base 3.13 --dest /tmp/slow313 [--slowdown 0.06]

builds a copy of the ``--base`` CPython (its binary copied, its standard library
linked file by file) whose ``sitecustomize`` makes iterating over the lines of
lutz2009's text fixture slower: ``open()`` of that file in text read mode
returns a thin proxy that notes the time when iteration starts and, when the
file is closed (the end of the ``with`` block), spins for ``--slowdown`` times
the time since. Only ``read_byLines_textMode`` iterates over that file; the
other text reads call ``read()``, which the proxy hands to the real file object
directly, so they pay the proxy's creation only (about a microsecond per call).

Why a fraction of each call and not a fixed spin: a fixed spin is a fixed share
of the op only at one machine speed. Measured here, a copy spun 871 us per call
(+6.6% by the plain loop) came out 1.05 in a run whose calls took 12.2 ms
instead of 10.1 ms, so the slowdown a run saw depended on the machine's phase.
A spin proportional to the call's own time is the same fraction of it in every
phase, like a real regression of the interpreter's line iteration would be.

The slowdown is then measured with plain loops two ways. In the copy's own
processes (``measure_paired``): the op's loop through the proxy and through the
real ``open()`` in adjacent calls, so both see the same phase of the process and
the machine; this is what the proxy adds. Across interleaved fresh processes of
both interpreters (``measure``, the plain timer, median over processes of each
process's median call), on that op and two control ops: what a comparison of
two interpreters' processes sees, which on this machine can differ by more than
the slowdown (+15% to -20% in four measurements within three minutes).
It prints both, and the declaration to use:

    IOMATRIX_PYTHONS="3.13-slow=/tmp/slow313/bin/python3.13" nox -s matrix -- --pythons 3.13,3.13-slow ...

A copy, not a venv: the matrix makes a venv of every interpreter, and a venv of
a venv forgets the first one's site-packages; a ``sitecustomize`` in the copy's
own standard library directory is on every venv's path.
"""
from __future__ import annotations

import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from iomatrix import cli
from iomatrix.commands import crosscheck
from iomatrix.interpreters import discovery

OP = "read_byLines_textMode"
CONTROLS = ("read_byBlocks_textMode", "read_allAtOnce_textMode")
TEXT_FIXTURE = "large.txt"
MARKER = "iomatrix-sensitivity-copy"   # the file that says --dest may be replaced

SITECUSTOMIZE = '''\
"""iomatrix sensitivity copy: iterating over the lines of {fixture} costs {fraction!r} more.

When iteration over that file starts, the time is noted; when the file is closed,
the proxy spins for {fraction!r} times the time since. Made by
scripts/iomatrix/commands/sensitivity.py; not part of CPython.
"""
import builtins
import os
import time

_open = builtins.open
_FRACTION = {fraction!r}
_FIXTURE = {fixture!r}


class _SlowLineIteration(object):
    __slots__ = ("_f", "_started", "read", "readline")

    def __init__(self, f):
        self._f = f
        self._started = None
        self.read, self.readline = f.read, f.readline

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._started is not None:
            now = time.perf_counter()
            end = now + _FRACTION * (now - self._started)
            self._started = None
            while time.perf_counter() < end:
                pass
        self._f.close()

    def __iter__(self):
        self._started = time.perf_counter()
        return iter(self._f)

    def __getattr__(self, name):
        return getattr(self._f, name)


def open(file, mode="r", *args, **kwargs):
    f = _open(file, mode, *args, **kwargs)
    if mode in ("r", "rt") and isinstance(file, str) and os.path.basename(file) == _FIXTURE:
        return _SlowLineIteration(f)
    return f


builtins.open = open
'''


def stdlib_dir(executable: str) -> Path:
    info = discovery.probe(executable)
    major, minor = info["version_info"][:2]
    return Path(os.path.realpath(executable)).parent.parent / "lib" / f"python{major}.{minor}"


def build(base_executable: str, dest: Path, fraction: float) -> Path:
    """A copy of the base interpreter with the slowing sitecustomize; its executable."""
    real = Path(os.path.realpath(base_executable))
    lib = stdlib_dir(base_executable)
    if not (lib / "os.py").exists():
        raise cli.BadInput(f"{base_executable}: no standard library at {lib}")
    if (lib / "sitecustomize.py").exists():
        raise cli.BadInput(f"{base_executable} has a sitecustomize of its own; choose another")
    if dest.exists() or dest.is_symlink():
        # Only a copy this module made is replaced: --dest naming any other directory (a
        # typo, a home) must not cost its contents.
        if dest.is_symlink() or not (dest / MARKER).is_file():
            raise cli.BadInput(f"--dest {dest}: exists and is not a sensitivity copy made "
                               f"here (no {MARKER}); choose a new directory")
        shutil.rmtree(dest)
    (dest / "bin").mkdir(parents=True)
    (dest / MARKER).write_text(f"a copy of {real} made by scripts/iomatrix/commands/sensitivity.py\n")
    new_lib = dest / "lib" / lib.name
    new_lib.mkdir(parents=True)
    for entry in lib.iterdir():
        if entry.name != "__pycache__":
            os.symlink(entry, new_lib / entry.name)
    executable = dest / "bin" / real.name
    shutil.copy2(real, executable)   # its own place, so its prefix is dest (found by os.py)
    write_sitecustomize(dest, fraction)
    prefix = discovery.probe(str(executable))
    if not prefix.get("executable", "").startswith(str(dest)):
        raise RuntimeError(f"the copy in {dest} does not run as itself: {prefix}")
    return executable


def write_sitecustomize(dest: Path, fraction: float) -> None:
    lib = next((dest / "lib").iterdir())
    (lib / "sitecustomize.py").write_text(SITECUSTOMIZE.format(fraction=fraction,
                                                               fixture=TEXT_FIXTURE))


# Run by the copy: the op's loop with the copy's open() (the proxy) and with the real
# open() one right after the other, so both sides of each pair see the same phase of the
# process and the machine; prints the median of proxy/real over the pairs.
PAIRED_PROBE = r"""
import sys, time, sitecustomize
path, pairs = sys.argv[1], int(sys.argv[2])

def lines(open_):
    t0 = time.perf_counter()
    n = 0
    with open_(path, "r") as f:
        for line in f:
            n += len(line)
    return time.perf_counter() - t0, n

real, proxy = sitecustomize._open, open
expected = lines(real)[1]
ratios = []
for i in range(pairs):
    order = (real, proxy) if i % 2 else (proxy, real)
    times = {}
    for open_ in order:
        seconds, n = lines(open_)
        if n != expected:
            sys.exit("read %d characters, expected %d" % (n, expected))
        times[open_] = seconds
    ratios.append(times[proxy] / times[real])
ratios.sort()
print(ratios[len(ratios) // 2])
"""


@contextlib.contextmanager
def study_fixtures():
    """A temporary directory with lutz2009's fixtures (quick profile) in ``fixtures/``;
    removed afterwards, whatever happens."""
    work = Path(tempfile.mkdtemp(prefix="iomatrix-sensitivity-"))
    try:
        crosscheck.runner.run_harness("--make-fixtures", crosscheck.SUITE, "quick",
                                      str(work / "fixtures"), timeout=600)
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_paired(slow, processes: int, pairs: int = 20) -> float:
    """What the proxy adds to the op, as the copy's own processes measure it: per fresh
    process, the median of proxy/real over ``pairs`` adjacent pairs of calls; the median
    over processes. Both sides run in one process, so this is free of the
    process-to-process spread a comparison of two interpreters' processes carries (and
    of any difference between the copy's processes and its base's)."""
    with study_fixtures() as work:
        ratios = []
        for _ in range(processes):
            out = subprocess.run([slow.executable, "-c", PAIRED_PROBE,
                                  str(work / "fixtures" / TEXT_FIXTURE), str(pairs)],
                                 capture_output=True, text=True, timeout=600)
            if out.returncode != 0:
                raise RuntimeError(f"{slow.executable}: the paired probe failed: "
                                   f"{out.stderr.strip()[-500:]}")
            ratios.append(float(out.stdout))
    return statistics.median(ratios) - 1


def measure(base, slow, processes: int, calls: int, allocator: str = "steady",
            clock: str = "cpu", ops=(OP,) + CONTROLS, log=print) -> dict:
    """{op: (base seconds, slow seconds)}: medians over interleaved fresh processes of each
    process's median call, by the plain timer, in the harness's default conditions."""
    conditions = {"allocator": allocator, "output": "new", "cache": "warm", "affinity": "one"}
    with study_fixtures() as work:
        fixtures, scratch = work / "fixtures", work / "scratch"
        scratch.mkdir()
        rng = random.Random(2009)
        times: dict = {(op, side): [] for op in ops for side in ("base", "slow")}
        for index in range(processes):
            for op in ops:
                pair = [("base", base), ("slow", slow)]
                rng.shuffle(pair)
                for side, interp in pair:
                    result = crosscheck.time_plain(interp, op, fixtures, scratch, calls,
                                                   conditions)
                    times[op, side].append(statistics.median(result[clock]))
            log(f"sensitivity: {index + 1}/{processes} processes per op")
    return {op: (statistics.median(times[op, "base"]), statistics.median(times[op, "slow"]))
            for op in ops}


def main(argv=None) -> int:
    p = cli.Parser(prog="python -m iomatrix.commands.sensitivity",
                   description="Build an interpreter slower on read_byLines_textMode by a "
                               "known amount and measure its slowdown with a plain loop.")
    p.add_argument("--base", default="3.13", type=cli.label, help="label of the base CPython")
    p.add_argument("--dest", type=Path, required=True,
                   help="directory of the copy: new, or a copy made here before (replaced)")
    p.add_argument("--slowdown", type=cli.threshold, default=0.06,
                   help="wanted slowdown of the op, as a fraction (default: 0.06)")
    p.add_argument("--processes", type=cli.positive_int, default=10)
    p.add_argument("--calls", type=cli.positive_int, default=15)
    args = p.parse_args(argv)
    interps = {i.label: i for i in discovery.discover() if i.ok}
    if args.base not in interps or interps[args.base].implementation != "cpython" \
            or interps[args.base].version_info[0] < 3:
        valid = ", ".join(label for label, i in interps.items()
                          if i.implementation == "cpython" and i.version_info[0] >= 3)
        raise cli.BadInput(f"--base {args.base!r}: not a CPython 3 here; valid: {valid}")
    base = interps[args.base]
    executable = build(base.executable, args.dest, args.slowdown)
    copy = discovery.Interpreter(f"{args.base}-slow", str(executable), "declared",
                                 discovery.probe(str(executable)))
    paired = measure_paired(copy, args.processes)
    print(f"sensitivity: {OP}: the copy's own processes, proxy against real open() in "
          f"adjacent calls: slowdown {paired * 100:+.1f}% (median of {args.processes} "
          "processes)")
    measured = measure(base, copy, args.processes, args.calls)
    for op, (t_base, t_slow) in measured.items():
        print(f"sensitivity: {op:28} {base.label} {t_base * 1e3:8.3f} ms   {copy.label} "
              f"{t_slow * 1e3:8.3f} ms   slowdown {(t_slow / t_base - 1) * 100:+.1f}%")
    print(f'declare it: IOMATRIX_PYTHONS="{copy.label}={executable}"')
    return 0


if __name__ == "__main__":
    sys.exit(cli.main_guard(main)())
