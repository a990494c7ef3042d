"""The machine's phase: how fast the same fixed code ran while a run measured.

Why: on a shared machine (here, 2 vCPUs of a KVM guest) the speed of the same
code moves by 1.4x to 2x in phases of seconds to minutes, and both CPUs see the
phase at once (the host's other tenants); shorter bursts, of tenths of a second,
each vCPU has on its own (correlation +0.02 between the two, 2026-11-26), and
the probe cannot see those on the timed CPU (lockstep's version order narrows
them). Lockstep rounds cancel it inside one
run (both sides of a ratio are timed within moments); nothing cancels it
between two runs, and a phase that slows one interpreter's op more than
another's moves even a paired ratio. So a run measures its own phase and the
report states it, and ``compare`` says when two runs were measured in different
ones.

How: for the timing pass of every session (not the counting pass, whose own
load it would measure) a probe process runs on a CPU that times no worker
(``spare_cpu``). Every ``INTERVAL`` seconds it times, in CPU time of its thread
(``time.thread_time``, so a slice given to another process is not counted), two
fixed pieces of work: a Python loop of ``LOOP_ITERATIONS`` additions (the
interpreter's kind of work) and one copy of ``COPY_BYTES`` between two buffers
(what a read from the page cache does; too large for a core's L2, so it runs in
the last-level cache and memory that the host's other tenants share). Each
sample is one line "wall time, loop seconds, copy seconds" of
``phase/<session>.tsv`` in the run directory. The probe costs about 2 ms of its
CPU per sample (0.4%) and never runs on the timed one (ops that work in threads
or processes use every CPU, the probe's too). When the timed workers are not
pinned (``--affinity all``, one CPU, no affinity on the platform) no CPU is
free of them and no probe runs; the manifest and the report say so.

Measured (docs/methodology.md, "The machine's phase"): in three main-command
runs back to back the probe's memory copy took 0.69, 0.77 and 0.90 ms at the
median while its Python loop stayed at 1.35 ms, and the ops slowed with the copy
(2.7's whole-file read 1.19x, 3.6's line read 1.38x from the first run to the
third); inside a run the per-process times of the 14 lutz2009 ops follow the
copy (correlation up to +0.63), not the loop. Both are kept: the loop says
whether a phase was in the CPU or in memory.

``python -m iomatrix.measuring.phase --interval S`` is the probe itself (it writes to
stdout and stops when its stdin closes, so it never outlives the runner).
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import select
import statistics
import subprocess
import sys
import time
from pathlib import Path

from iomatrix import paths, procs
from iomatrix.measuring import machine
from iomatrix.storing import contract

PHASE_DIR = "phase"
INTERVAL = 0.5           # seconds between samples: ~1000 samples in a main-command run
LOOP_ITERATIONS = 20_000  # ~1.6 ms on this machine at its fastest
COPY_BYTES = 4 << 20      # past L2 (512 KiB a core here): in the L3 and memory other tenants share
HEADER = "# iomatrix phase probe 1: wall_time loop_seconds copy_seconds"
FASTEST_PERCENTILE = 5    # "fastest": the 5th percentile, not one lucky sample
MIN_SAMPLES = 10
MAX_PHASE_BYTES = 16 * 1024 * 1024  # all of a run's phase files; one session writes ~40 bytes/s
DIFFERENT_PHASE = 0.10    # two runs whose probes differ by more are said to differ


# -- the probe (a process of its own) ---------------------------------------------------

def probe(interval: float, out=sys.stdout, stop=sys.stdin) -> None:
    """Write a sample every ``interval`` seconds until ``stop`` is readable (closed)."""
    source, target = bytearray(COPY_BYTES), bytearray(COPY_BYTES)
    out.write(HEADER + "\n")
    out.flush()
    while True:
        started = time.thread_time()
        total = 0
        for i in range(LOOP_ITERATIONS):
            total += i
        looped = time.thread_time()
        target[:] = source
        copied = time.thread_time()
        out.write(f"{time.time():.3f}\t{looped - started:.7f}\t{copied - looped:.7f}\n")
        out.flush()
        if select.select([stop], [], [], interval)[0]:
            return  # the runner closed our stdin (or died): stop


def spare_cpu(timing_cpus: set | None) -> tuple[int | None, str | None]:
    """(a CPU this process may use that times no worker, None) or (None, why there is none)."""
    if timing_cpus is None:
        return None, ("not measured: the timed workers are not pinned to one CPU (--affinity "
                      "all, a single CPU, or no affinity here), so no CPU is free of them")
    usable = machine.usable_cpus()
    if usable is None:
        return None, "not measured: this platform cannot set CPU affinity"
    spare = sorted(usable - set(timing_cpus))
    if not spare:
        return None, "not measured: no CPU is left beside the timed one"
    return spare[0], None


class Probe:
    """The probe process of one session, writing into the run's ``phase/`` directory."""

    def __init__(self, run_path: Path, session_name: str, timing_cpus: set | None,
                 interval: float = INTERVAL):
        self.cpu, self.why_not = spare_cpu(timing_cpus)
        self.file = f"{PHASE_DIR}/{session_name}.tsv"
        self.interval = interval
        self.proc = None
        if self.cpu is None:
            return
        directory = Path(run_path) / PHASE_DIR
        if directory.is_symlink() or (directory.exists() and not directory.is_dir()):
            self.cpu, self.why_not = None, f"not measured: {directory} is not a plain directory"
            return
        directory.mkdir(exist_ok=True)
        try:  # a new file, never a symlink or an earlier session's file
            fd = contract.open_regular(str(Path(run_path) / self.file),
                                       os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except (OSError, ValueError) as exc:
            self.cpu, self.why_not = None, f"not measured: cannot create {self.file} ({exc})"
            return
        try:
            env = {**os.environ, "PYTHONPATH": str(paths.SCRIPTS_DIR)}
            self.proc = subprocess.Popen(  # its own group: a Ctrl-C is the runner's to handle
                [sys.executable, "-m", "iomatrix.measuring.phase", "--interval", str(interval)],
                stdin=subprocess.PIPE, stdout=fd, env=env, **procs.new_group_kwargs())
        finally:
            os.close(fd)
        try:
            os.sched_setaffinity(self.proc.pid, {self.cpu})
        except OSError as exc:  # it exited already, or the CPU was taken away meanwhile
            self.stop()
            self.why_not = f"not measured: cannot pin the probe to CPU {self.cpu} ({exc})"
            self.proc, self.cpu = None, None

    def manifest_entry(self) -> dict:
        """What the session's manifest says of the probe."""
        if self.proc is None:
            return {"status": self.why_not}
        return {"status": "measured", "cpu": self.cpu, "file": self.file,
                "interval_seconds": self.interval, "loop_iterations": LOOP_ITERATIONS,
                "copy_bytes": COPY_BYTES}

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()  # the probe's signal to stop
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()


# -- reading a run's phase ---------------------------------------------------------------

@dataclasses.dataclass
class Phase:
    """A run's probe samples, summarised."""
    samples: int
    loop_median: float
    loop_fastest: float
    copy_median: float
    copy_fastest: float

    @property
    def loop_slowdown(self) -> float:
        return self.loop_median / self.loop_fastest

    @property
    def copy_slowdown(self) -> float:
        return self.copy_median / self.copy_fastest


def read_phase(run_path: Path) -> tuple[Phase | None, list[tuple[str, str]]]:
    """The run's phase (None when it has no usable samples) and the problems met, as
    (file, message): a damaged or foreign file is named and skipped, never raised."""
    directory = Path(run_path) / PHASE_DIR
    problems: list[tuple[str, str]] = []
    if not os.path.lexists(directory):
        return None, problems
    if directory.is_symlink() or not directory.is_dir():
        return None, [(PHASE_DIR, "not a plain directory; not read")]
    try:  # listed, not globbed: a directory that cannot be read is named, not taken as empty
        names = sorted(name for name in os.listdir(directory) if name.endswith(".tsv"))
    except OSError as exc:
        return None, [(PHASE_DIR, f"cannot be read ({exc.strerror or exc}); not read")]
    loops, copies = [], []
    budget = MAX_PHASE_BYTES  # for all the files together: a planted heap is not read forever
    for path in (directory / name for name in names):
        name = f"{PHASE_DIR}/{path.name}"
        try:
            data = contract.read_bytes(str(path), budget)
            text = data.decode("utf-8")
        except (OSError, ValueError) as exc:  # UnsafeFileError and UnicodeError are ValueErrors
            problems.append((name, f"not read ({exc})"))
            continue
        budget -= len(data)
        bad = 0
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            sample = _sample(line)
            if sample is None:
                bad += 1
                continue
            loops.append(sample[0])
            copies.append(sample[1])
        if bad:
            problems.append((name, f"{bad} line(s) are not a probe sample; skipped"))
    if len(loops) < MIN_SAMPLES:
        return None, problems
    return Phase(len(loops), statistics.median(loops), _percentile(loops, FASTEST_PERCENTILE),
                 statistics.median(copies), _percentile(copies, FASTEST_PERCENTILE)), problems


def is_phase_file(name: str) -> bool:
    """Whether a problem's file name (from read_phase) is one of the phase files."""
    return name == PHASE_DIR or name.startswith(PHASE_DIR + "/")


def _sample(line: str) -> tuple[float, float] | None:
    """(loop seconds, copy seconds) of a line, or None when it is not a plausible sample
    (iomatrix.storing.schema.PhaseSample: each time from 1 ns to 1 hour, finite)."""
    fields = line.split("\t")
    if len(fields) != 3:
        return None
    try:
        wall, loop, copy = (float(f) for f in fields)
    except ValueError:
        return None
    if not all(math.isfinite(v) and v > 0 for v in (wall, loop, copy)):
        return None
    from iomatrix.storing import store  # the probe process itself never reads samples
    schema = store.schema_module()
    if schema is not None:
        try:
            schema.check("phase sample", {"wall_time": wall, "loop_seconds": loop,
                                          "copy_seconds": copy})
        except schema.SchemaError:
            return None
    return loop, copy


def _percentile(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * percent / 100))]


def describe(phase: Phase | None, manifest: dict) -> str:
    """The report's sentence on the run's phase."""
    if phase is None:
        statuses = [s.get("phase_probe", {}).get("status") for s in manifest.get("sessions", [])
                    if isinstance(s, dict) and isinstance(s.get("phase_probe"), dict)]
        reason = next((s for s in statuses if s and s != "measured"), None)
        if reason:
            return f"Machine phase: {reason}."
        if statuses:
            return "Machine phase: not measured (the probe left too few samples)."
        return "Machine phase: not measured (a run made before the probe)."
    return (f"Machine phase: a probe on a CPU that timed no worker ran a fixed Python loop in "
            f"{phase.loop_median * 1e3:.2f} ms at the median, {phase.loop_slowdown:.2f}x its "
            f"fastest in this run, and a {COPY_BYTES >> 20} MiB memory copy in "
            f"{phase.copy_median * 1e3:.2f} ms, {phase.copy_slowdown:.2f}x ({phase.samples} "
            f"samples): the machine's speed moved that much while the run measured.")


def short(phase: Phase | None) -> str:
    """A table cell: the probe's medians, for runs listed side by side (history)."""
    if phase is None:
        return "not measured"
    return f"copy {phase.copy_median * 1e3:.2f} ms, loop {phase.loop_median * 1e3:.2f} ms"


def compare_phases(a: Phase | None, b: Phase | None) -> str | None:
    """compare's sentence on two runs' phases, or None when both were alike."""
    if a is None or b is None:
        missing = " and ".join(side for side, p in (("A", a), ("B", b)) if p is None)
        return (f"The machine's phase was not measured in {missing}: whether the machine "
                "ran at another speed in one run than in the other is not known.")
    loop, copy = b.loop_median / a.loop_median, b.copy_median / a.copy_median
    if abs(math.log(loop)) <= math.log1p(DIFFERENT_PHASE) and \
            abs(math.log(copy)) <= math.log1p(DIFFERENT_PHASE):
        return None
    return (f"The machine ran at another speed in B than in A: the phase probe's Python loop "
            f"took {loop:.2f}x and its memory copy {copy:.2f}x A's time (medians). On one "
            "host, ratios between the runs carry that difference as well as the interpreters'.")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The phase probe: one sample per interval "
                                     "on stdout until stdin closes.")
    parser.add_argument("--interval", type=float, default=INTERVAL)
    args = parser.parse_args(argv)
    if not args.interval > 0:
        parser.error("--interval must be a positive number of seconds")
    probe(args.interval)
    return 0


if __name__ == "__main__":
    sys.exit(main())
