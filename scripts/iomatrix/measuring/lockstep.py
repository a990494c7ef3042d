"""Lockstep rounds: every interpreter's worker of a round takes each op in turn.

Why: on a shared machine the speed of the same code drifts in phases that last
seconds (docs/methodology.md). When interpreter A's worker times an op and B's
worker times it tens of seconds later, the ratio B/A carries the drift between
the two moments, and so does every ratio of the next run, differently. In a
lockstep round the workers of all interpreters are started together and each
op is timed by one worker after the other, one at a time: first every worker's
setup and warm-ups of the op, then every worker's first value, then its second,
and so on. A's and B's values of one op in one round are thus taken within
moments of each other, on the same CPU (``cpus``), and the ratio of the two
(paired by round, ``stats.compare(paired=True)``) cancels the phase.

The workers take each step in version order (``in_version_order``), ascending or
descending at random per step: the two sides of a release step, and the A/A twin
and its interpreter, are next to each other, one value apart. Why: a vCPU's speed
here also moves in bursts of a few tenths of a second, and the two vCPUs do so
independently (2026-11-26: a fixed Python loop of ~100 ms, timed back to back,
ran 59 to 108 ms, 5th to 95th percentile; the spread of the log ratio of two of
its values grew from 0.047 one value apart to 0.10 eight values apart, as
interquartile range / 1.35; docs/experiments/adjacent_values.py). In a shuffled
order the two sides of a step were on average several values apart. The random
direction takes turns on which side goes first, so that what one worker leaves
behind for the next (dirty pages of a write, the caches) falls on both sides.

Only one worker runs at any time; the others are blocked reading their stdin
(``harness.py --batch --lockstep``), so they cost no CPU. Each op of each
worker has ``timeout`` seconds; a worker that crashes, hangs or breaks the
protocol is stopped and its failure (the op it was in, why) is returned for
the runner to record and redo, while the round goes on with the others.
"""
from __future__ import annotations

import queue
import random
import subprocess
import tempfile
import threading
import time

from iomatrix import procs


class WorkerFailed(Exception):
    """The worker crashed, hung or broke the protocol."""


class LockstepWorker:
    """One ``harness.py --batch --lockstep`` process and its protocol lines."""

    def __init__(self, key, cmd: list[str], env: dict, cwd=None, stderr_dir=None,
                 cpus: set | None = None):
        self.key = key
        self.waiting_for: str | None = None   # the step it waits to be told to take
        self.current: str | None = None       # the op it was last told to run (blame)
        self.failure: tuple[str | None, str] | None = None
        self.exited = False
        self._stderr = tempfile.TemporaryFile(dir=stderr_dir)
        self._lines: queue.Queue = queue.Queue()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, env=env, cwd=cwd,
                                     **procs.new_group_kwargs())
        procs.pin(self.proc, cpus)
        self._reader = threading.Thread(target=self._follow, daemon=True)
        self._reader.start()

    def _follow(self):
        for line in self.proc.stdout:
            self._lines.put(line.decode("utf-8", "replace").rstrip("\n"))
        self._lines.put(None)  # end of output: the worker exited (or closed stdout)

    @property
    def alive(self) -> bool:
        return self.failure is None and not self.exited

    def await_idle(self, timeout: float) -> None:
        """Wait until the worker waits for its next op (``waiting_for``) or has exited.

        Raises WorkerFailed when it exits with an error, or is not idle within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerFailed(f"timed out after {timeout:g} s (--timeout)")
            try:
                line = self._lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                self._reap(max(deadline - time.monotonic(), 1.0))
                return
            if line.startswith("WAIT "):
                self.waiting_for = line[5:].strip()
                return
            if line.startswith("START "):
                self.current = line[6:].strip()

    def _reap(self, timeout: float) -> None:
        try:
            returncode = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise WorkerFailed("closed its output but did not exit")
        self.waiting_for = None
        if returncode != 0:
            raise WorkerFailed(procs.describe_exit(returncode))
        self.exited = True

    def go(self) -> None:
        """Let the worker take the step it waits for."""
        self.current, self.waiting_for = op_of(self.waiting_for), None
        try:
            self.proc.stdin.write(b"go\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it died meanwhile: await_idle sees the exit and says how

    def fail(self, why: str) -> None:
        """Stop the worker (and what it started) and record the op it was in and why."""
        procs.kill_group(self.proc)
        self._stderr.seek(0)
        err = self._stderr.read().decode("utf-8", "replace")
        self.failure = (self.current, f"{why}\n{procs.tail(err)}".strip())

    def close(self) -> None:
        """Stop a worker that is still running (it writes nothing) and release its files."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # end of input: the worker stops without writing
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            if self.proc.poll() is None:
                procs.kill_group(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._reader.join(timeout=5)
        self._stderr.close()


def op_of(step: str | None) -> str | None:
    """The op of a worker's step: "read_x" (setup, warm-ups) or "read_x#0" (its first value)."""
    return step.split("#", 1)[0] if step is not None else None


def in_version_order(workers: list[LockstepWorker], position, rng: random.Random) -> list:
    """``workers`` sorted by ``position`` (their interpreter's version, then label), reversed
    for half of the calls at random (the module docstring says why)."""
    ordered = sorted(workers, key=position)
    if rng.random() < 0.5:
        ordered.reverse()
    return ordered


def run_round(workers: list[LockstepWorker], order: list[str], timeout: float,
              rng: random.Random, position=None) -> None:
    """Step ``workers`` through the ops of ``order``. For each op, every worker whose next
    op it is takes its first step (setup and warm-ups), one after the other in version
    order (``in_version_order``; ``position(worker)`` is its sort key, by default its
    key's text), ascending or descending at random; then each takes its first value, in
    a direction drawn anew, and so on until none has a step of the op left. Failures are
    recorded in each worker's ``failure``; the caller closes the workers."""
    position = position or (lambda worker: str(worker.key))
    for worker in workers:  # started together: each announces its first op, or fails
        _step(worker, timeout, start=False)
    for op in order:
        while True:
            turn = [w for w in workers if w.alive and op_of(w.waiting_for) == op]
            if not turn:
                break
            for worker in in_version_order(turn, position, rng):
                _step(worker, timeout, start=True)
    for worker in workers:
        if worker.alive:  # it waits for an op the round does not have: a protocol error
            worker.fail(f"waited for {worker.waiting_for!r}, which this round does not run")


def _step(worker: LockstepWorker, timeout: float, *, start: bool) -> None:
    try:
        if start:
            worker.go()
        worker.await_idle(timeout)
    except WorkerFailed as exc:
        worker.fail(str(exc))
