"""The worker processes of a run: their command lines, and one lockstep group run through.

A batch is one worker process's work: the ops of one suite, for one series, in one
round. The batches of one (round, suite) run as a lockstep group
(``iomatrix.measuring.lockstep``): every series' worker takes each op in turn. A worker
that crashes or hangs costs the op it was in; the rest of its ops run again in a
worker of their own (``run_task``). What each worker is told comes from the run
spec only: the same options reach every worker (pyperformance's lesson: a worker
left to its defaults quietly measures something else).
"""
from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Callable

from iomatrix import procs
from iomatrix.measuring import lockstep, machine, native, planning
from iomatrix.storing import contract, store
from iomatrix.paths import SUITES_DIR
from iomatrix.measuring.planning import SeriesPlan, Task
from iomatrix.measuring.spec import RunSpec

HARNESS = SUITES_DIR / "harness.py"
# An interpreter whose first tasks all fail (crash on start, hang) is given up on, rather
# than failing every op of every round one timeout at a time.
GIVE_UP_AFTER_FAILURES = 3


@dataclasses.dataclass(frozen=True)
class Session:
    """What the workers of one session of a run share: its spec, work dirs and log."""
    spec: RunSpec
    fixtures_dir: Path
    scratch_dir: Path
    log: Callable = print


@dataclasses.dataclass
class Batch:
    """One worker process's work: the ops of one suite, one series, one round."""
    plan: SeriesPlan
    task: Task
    ops: list
    part: Path
    partial: Path

    @property
    def errors_file(self) -> Path:
        return Path(f"{self.partial}.errors")


def worker_command(session: Session, batch: Batch, ops: list[str]) -> list[str]:
    spec, plan, task = session.spec, batch.plan, batch.task
    profile, conditions = spec.profile, spec.conditions
    warmups = profile.pypy_warmups if plan.interp.implementation == "pypy" else profile.warmups
    return [plan.env.python, str(HARNESS), "--batch", "--suite", task.suite,
            "--ops", json.dumps(ops), "--fixtures", str(session.fixtures_dir),
            "--scratch", str(session.scratch_dir),
            "--iomatrix-profile", profile.name, "--io", task.io_stack,
            "--cache", conditions.cache, "--allocator", plan.allocator or conditions.allocator,
            *(["--keep-allocator-env"] if spec.keep_allocator_env else []),
            "--output-state", conditions.output,
            *([] if conditions.clock == "auto" else ["--clock", conditions.clock]),
            *(["--knob", "%s=%d" % plan.knob] if plan.knob else []),
            "--round", str(task.round_index), "--warmups", str(warmups),
            "--values", str(profile.values), "--output", str(batch.partial),
            "--errors", str(batch.errors_file),
            *(["--system-metadata", json.dumps(plan.system_metadata, sort_keys=True)]
              if plan.system_metadata is not None else [])]


def worker_environment(plan: SeriesPlan, spec: RunSpec) -> dict:
    env = plan.env.command_env()
    env.update(machine.allocator_environment(plan.allocator or spec.conditions.allocator))
    return env


def worker_cpus(batch: Batch, spec: RunSpec):
    """The CPUs a batch's worker may use: the run's timing CPU, unless an op of the batch
    works in threads or child processes (its clock is the wall clock): those get every
    CPU, or they would measure concurrency on one."""
    if any(batch.plan.op_info.get(op, {}).get("clock") == "wall" for op in batch.ops):
        return None
    return machine.timing_cpus(spec.conditions.affinity)[0]


def run_groups(run: store.Run, session: Session, plans: dict, groups: list[list[Task]],
               on_start: Callable, on_done: Callable) -> None:
    """Run the lockstep groups one after the other. While a group is timed, the next group's
    workers start on the spare CPU (``start_ahead``): a worker's start-up (interpreter and the
    suite imported, its ops built) is most of a short op's cost, and the groups of
    the untouched allocator's one-op workers are many. ``on_start(task)`` and ``on_done()``
    are called for each task of a group as it begins and ends."""
    reserved: set = set()   # parts of batches not yet collected: no two batches share one
    ahead = None            # the next group: (its batches, its workers started ahead)

    def batches_of(group):
        batches = []
        for task in group:
            plan = plans[task.series]
            ops = planning.batch_ops(plan, task, session.spec.seed)
            if plan.error is None and ops:
                batches.append(new_batch(run, plan, task, ops, reserved))
        return batches

    try:
        for index, group in enumerate(groups):
            batches, started = ahead if ahead is not None else (batches_of(group), None)
            ahead = None
            if index + 1 < len(groups):
                upcoming = batches_of(groups[index + 1])
                ahead = (upcoming, start_ahead(session, upcoming))
            for task in group:
                on_start(task)
            try:
                run_group(session, batches, started)
            finally:  # Ctrl-C included: the workers are killed; their half-results go
                for batch in batches:
                    remove_leftovers(batch)
                    reserved.discard(batch.part)
            for _ in group:
                on_done()
    finally:
        if ahead is not None:  # stopped early: the workers started ahead write nothing
            upcoming, started = ahead
            close_all(started)
            for batch in upcoming:
                remove_leftovers(batch)


def start_ahead(session: Session, batches: list[Batch]) -> list:
    """Start the lockstep workers of a group before its turn, on the CPUs that time no
    worker, while the group before it is timed: their start-up then overlaps that group's
    timing instead of following it. They go to their own CPUs when their group runs
    (``run_group``); each waits blocked on its input until then, so it takes no CPU from
    the timed worker. Nothing is started ahead when no CPU is spare (one CPU, or the
    workers not pinned): the group starts its workers when its turn comes."""
    spare = machine.spare_cpus(session.spec.conditions.affinity)
    stepped = [b for b in batches if b.plan.interp is not None]
    return start_workers(session, stepped, spare) if spare and stepped else []


def start_workers(session: Session, stepped: list[Batch], start_cpus=None) -> list:
    """The lockstep workers of ``stepped``, on ``start_cpus`` (None: their own CPUs)."""
    spec = session.spec
    started = []
    try:
        for batch in stepped:
            started.append(lockstep.LockstepWorker(
                batch, [*worker_command(session, batch, batch.ops), "--lockstep"],
                worker_environment(batch.plan, spec), cwd=session.scratch_dir,
                cpus=start_cpus or worker_cpus(batch, spec)))
    except BaseException:
        close_all(started)
        raise
    return started


def close_all(started: list) -> None:
    for worker in started:
        worker.close()


def run_group(session: Session, batches: list[Batch], started: list | None = None) -> None:
    """One round of one suite: the interpreters' batches in lockstep, then the native
    reference's. A batch whose lockstep worker failed is blamed on its op and the rest of
    its ops run again on their own (run_task). ``started``: the group's workers, started
    ahead (``start_ahead``); a batch whose interpreter was given up on meanwhile is
    dropped with its worker."""
    started = list(started or [])
    for worker in [w for w in started if w.key.plan.error is not None]:
        started.remove(worker)
        worker.close()
    stepped = [b for b in batches if b.plan.interp is not None and b.plan.error is None]
    if stepped:
        _run_lockstep(session, stepped, started)
    for batch in batches:
        if batch.plan.interp is None:
            run_task(session, batch, batch.ops)


def _run_lockstep(session: Session, stepped: list[Batch], started: list) -> None:
    spec, task = session.spec, stepped[0].task
    workers = list(started)
    try:
        for worker in workers:   # started ahead on a spare CPU: now to their own
            procs.pin(worker.proc, worker_cpus(worker.key, spec) or machine.usable_cpus())
        waiting = {id(w.key) for w in workers}
        workers += start_workers(session, [b for b in stepped if id(b) not in waiting])
        order = planning.round_order((op for b in stepped for op in b.ops), spec.seed,
                                     task.round_index, task.suite)
        lockstep.run_round(workers, order, spec.timeout_seconds,
                           random.Random(f"{spec.seed}-{task.round_index}-{task.suite}-turns"),
                           position=version_position)
    finally:
        for worker in workers:
            worker.close()
    for worker in workers:
        batch = worker.key
        if worker.failure is None:
            collect(session, batch, batch.ops)
            continue
        culprit, fatal = worker.failure
        culprit = culprit if culprit in batch.ops else batch.ops[0]
        fail_op(session, batch, culprit, fatal)
        rest = [op for op in batch.ops if op != culprit]
        if rest and batch.plan.error is None:
            run_task(session, batch, rest)


def version_position(worker: lockstep.LockstepWorker) -> tuple:
    """Where a worker takes its turn in a lockstep step: by its interpreter's version, then
    its series label, so that a release step's two sides, and the A/A twin ("3.15-aa") and
    its interpreter, take their values one right after the other. (The untouched-allocator
    series, "3.14@default", time one op per process in lockstep groups of their own.)"""
    plan = worker.key.plan
    return tuple(plan.interp.version_info[:3]), plan.series


def run_task(session: Session, batch: Batch, ops: list[str]) -> None:
    """Run a batch in a worker of its own; when it crashes or hangs, blame the op it was in
    and rerun the rest."""
    spec, plan, task = session.spec, batch.plan, batch.task
    while ops:
        if plan.interp is None:
            culprit, fatal = native.run_batch(
                plan.tool, plan.op_info, task.suite, task.round_index, ops, spec.profile,
                spec.conditions.cache, session.fixtures_dir, session.scratch_dir,
                batch.partial, spec.timeout_seconds)
        else:
            culprit, fatal = procs.supervise(
                worker_command(session, batch, ops), worker_environment(plan, spec),
                spec.timeout_seconds, cwd=session.scratch_dir, cpus=worker_cpus(batch, spec))
        if fatal is None:
            collect(session, batch, ops)
            return
        culprit = culprit if culprit in ops else ops[0]
        fail_op(session, batch, culprit, fatal)
        if plan.error is not None:
            return
        ops = [op for op in ops if op != culprit]


def collect(session: Session, batch: Batch, ops: list[str]) -> None:
    """A worker that finished: its result becomes the part; the ops it reports as failed
    are recorded."""
    errors = store.read_json(batch.errors_file) if batch.errors_file.exists() else {}
    if batch.partial.exists():   # stamped with its run and series: store.read_part
        store.seal_part(batch.partial, batch.part, session.spec.run_id, batch.plan.series)
        batch.plan.succeeded = True
    for op, error in errors.items():
        # An op that raised (a failed verification, a missing API) is not a dead
        # interpreter: it never counts towards giving up on the interpreter.
        fail_op(session, batch, op, str(error), may_give_up=False)
    if not batch.part.exists() and not errors:
        fail_op(session, batch, ops[0], "the worker exited without writing its result")


def fail_op(session: Session, batch: Batch, op: str, error: str, may_give_up=True) -> None:
    plan, task, log = batch.plan, batch.task, session.log
    plan.failed_ops[op] = error
    log(f"iomatrix: {task.series} {op} FAILED (round {task.round_index + 1}): "
        f"{procs.tail(error, 4)}")
    plan.hard_failures += may_give_up
    if may_give_up and not plan.succeeded and plan.hard_failures >= GIVE_UP_AFTER_FAILURES:
        plan.error = (f"gave up after its first {plan.hard_failures} worker processes crashed "
                      f"or hung; the last one: {error}")
        log(f"iomatrix: {task.series}: {plan.error.splitlines()[0]}")


def remove_leftovers(batch: Batch) -> None:
    """A batch's half-results: gone once its group is over (Ctrl-C included)."""
    for leftover in (batch.partial, batch.errors_file):
        if leftover.exists():
            leftover.unlink()


def new_batch(run: store.Run, plan: SeriesPlan, task: Task, ops: list[str],
              reserved: set | None = None) -> Batch:
    """A batch and the part it will write; ``reserved``: parts of batches made but not yet
    collected (a group started ahead), which this one must not take, and to which its own
    is added."""
    part = planning.part_for(run, task, reserved or set())
    if reserved is not None:
        reserved.add(part)
    part.parent.mkdir(parents=True, exist_ok=True)
    return Batch(plan, task, ops, part, Path(contract.partial_path(str(part))))
