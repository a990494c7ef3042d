"""Run suites under interpreters, in lockstep rounds, into one run of the results store.

Why: on a shared machine the speed of the same code drifts by 1.5x to 4x in
phases of seconds. Running one interpreter after the other would turn that
drift into a fake difference between interpreters. So the matrix runs in
rounds: each round visits every suite in a shuffled order, and for each suite
starts one worker process per series (a "batch": the suite's ops, each with its
warm-ups and values) and steps them through the ops together: each op is timed
by every series' worker one right after the other, in a shuffled order
(iomatrix.lockstep). Both sides of a ratio are thus measured in the same phase,
round by round, and the report pairs them by round (stats.compare). Fresh
processes every round let the rounds also sample what differs between
processes. The shuffle seed is in the manifest.

Each batch writes a one-run-per-op pyperf file into ``.parts/``; when a series
has every planned (op, round), the parts are merged into ``<series>.json``.
Parts that exist are not redone, which is how an interrupted run resumes; an
op that failed is redone by the next session of the same run id. A series'
status is derived from its files on every manifest write, never carried over.
"""
from __future__ import annotations

import dataclasses
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iomatrix import (contract, counters, environments, lockstep, machine, native, phase,
                      planning, procs, sampling, store, workdirs)
from iomatrix.planning import SeriesPlan, Task
from iomatrix.discovery import Interpreter
from iomatrix.paths import SUITES_DIR
from iomatrix.profiles import Profile

HARNESS = SUITES_DIR / "harness.py"
CORE_SUITE = "lutz2009"
DEFAULT_TIMEOUT_SECONDS = 600
FREE_DISK_MARGIN = 1.2
# An interpreter whose first tasks all fail (crash on start, hang) is given up on, rather
# than failing every op of every round one timeout at a time.
GIVE_UP_AFTER_FAILURES = 3
LIST_TIMEOUT_SECONDS = 120


AFFINITIES = ("one", "all")


class MatrixError(RuntimeError):
    """The run cannot start (bad options, no disk, unwritable directory)."""


# -- the worker side, as the host sees it -------------------------------------------

def run_harness(*args: str, timeout: float = LIST_TIMEOUT_SECONDS, python: str = sys.executable,
             env=None) -> dict:
    """Run a host-side mode of harness.py (listing, planning, fixtures); its JSON answer."""
    try:
        proc = procs.run([python, str(HARNESS), *args], timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"harness.py {args[0]} did not finish within {timeout:g} s")
    if proc.returncode != 0:
        detail = procs.tail(proc.stderr or proc.stdout).strip()
        separator = "\n" if "\n" in detail else " "  # a one-line reason stays on the line
        raise RuntimeError(f"harness.py {args[0]} failed ({procs.describe_exit(proc.returncode)}):"
                           f"{separator}{detail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def available_suites() -> list[str]:
    return run_harness("--list-suites")["suites"]


def parse_suites(value: str) -> list[str]:
    valid = available_suites()
    names = [s.strip() for s in value.split(",") if s.strip()]
    if names == ["all"]:
        return valid
    unknown = [n for n in names if n not in valid]
    if unknown or not names:
        raise ValueError(f"unknown suite(s) {', '.join(unknown) or repr(value)}; valid suites: "
                         + ", ".join(valid) + ", all")
    return names


def list_ops(env: environments.BenchEnvironment, suites: list[str], io_stack: str,
             profile: str) -> list[dict]:
    """What the interpreter of ``env`` can run: the rows of ``harness.py --list-ops``."""
    return run_harness("--list-ops", ",".join(suites), io_stack, profile, python=env.python,
                    env=env.command_env())["ops"]


# -- the run -------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Conditions:
    """The stated conditions every op of the run is measured in (see suites/_results.py)."""
    cache: str = "warm"
    allocator: str = "steady"
    output: str = "new"
    clock: str = "auto"  # "auto": CPU time where nothing waits for the disk (contract)
    affinity: str = "one"  # "one": every timed worker on the same CPU (machine.timing_cpus)


def run_matrix(interpreters: list[Interpreter], *, suites: list[str], profile: Profile,
               results_dir: Path, run_id: str, io_stacks=("c",), cache: str = "warm",
               allocator: str = "steady", output: str = "new", clock: str = "auto",
               affinity: str = "one", seed: int | None = None, work_dir: Path | None = None,
               keep_fixtures: bool = False,
               timeout: float = DEFAULT_TIMEOUT_SECONDS, envs_dir: Path = environments.ENVS_DIR,
               aa_of: dict | None = None, target: float = sampling.DEFAULT_TARGET,
               budget: float | None = None, counting: tuple = (), log=print) -> dict:
    """Run every suite op under every interpreter; return the run's manifest.

    Interpreters that fail (no environment, crashes, timeouts) are recorded as
    failed in the manifest; the others complete.
    """
    if affinity not in AFFINITIES:
        raise MatrixError(f"unknown affinity {affinity!r}; valid: {', '.join(AFFINITIES)}")
    conditions = Conditions(cache, allocator, output, clock, affinity)
    started = time.monotonic()
    deadline = started + (profile.budget_seconds if budget is None else budget)
    run = store.Run(results_dir, run_id)
    seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    with run.exclusive():
        manifest = _open_manifest(run, profile, suites, io_stacks, conditions, seed)
        for partial in run.partial_files():
            partial.unlink()
            log(f"iomatrix: removed {partial.name}, left half-written by an interrupted session")
        work_parent = Path(work_dir) if work_dir else Path(tempfile.gettempdir())
        workdirs.clean_stale_work_dirs(work_parent, run_id, log)
        plans = _plan_series(run, interpreters, suites, profile, io_stacks, manifest, envs_dir,
                             aa_of or {}, log)
        work_root = workdirs.make_work_dir(work_parent, run)
        fixtures_dir, scratch_dir = work_root / "fixtures", work_root / "scratch"
        session = manifest["sessions"][-1]
        manifest["fixture_filesystem"] = machine.filesystem_of(work_root)
        try:
            manifest["fixture_page_cache"] = _make_fixtures(suites, profile, fixtures_dir, log)
            scratch_dir.mkdir()
            _plan_native(run, plans, work_root, manifest, log)
            tasks = planning.schedule(run, plans, profile, seed)
            session["resumed_parts"] = planning.count_existing_parts(run, plans)
            if session["resumed_parts"]:
                log(f"iomatrix: resuming run {run_id}: {session['resumed_parts']} finished worker "
                    "processes are kept, the rest is run now")
            # The machine's phase is measured while timing runs, beside it (iomatrix.phase).
            probe = phase.Probe(run.path, _session_name(manifest),
                                machine.timing_cpus(conditions.affinity)[0])
            session["phase_probe"] = probe.manifest_entry()
            _write_manifest(run, manifest, plans, profile)
            try:
                _execute(run, plans, tasks, profile, conditions, fixtures_dir, scratch_dir,
                         timeout, seed, log)
                native.record_best(plans.get(native.SERIES), manifest, conditions.cache,
                                   fixtures_dir, scratch_dir, timeout, log)
                session["sampling"] = sampling.sample_until_tight(
                    run, plans, profile, target=target, deadline=deadline, seed=seed, log=log,
                    execute=lambda extra: _execute(run, plans, extra, profile, conditions,
                                                   fixtures_dir, scratch_dir, timeout, seed,
                                                   log))
            finally:
                probe.stop()
            for plan in plans.values():
                _merge_series(run, plan, profile, log)
            # After all timing work: counting never runs beside a timed worker.
            counters.count_run(run, plans, manifest, counting, profile=profile.name,
                               conditions=conditions, work_root=work_root, timeout=timeout,
                               log=log)
        except KeyboardInterrupt:
            session["interrupted"] = store.utc_now()
            log(f"iomatrix: interrupted; finished worker results are kept in {run.path}; "
                f"rerun with --run-id {run_id} to resume")
            raise
        finally:
            try:
                session["finished"] = store.utc_now()
                manifest["finished"] = session["finished"]
                manifest["machine_state_end"] = machine.state(store.utc_now())
                _write_manifest(run, manifest, plans, profile)
            finally:  # even when the manifest cannot be written, the work dir goes
                if keep_fixtures:
                    log(f"iomatrix: fixtures kept in {work_root}")
                else:
                    shutil.rmtree(work_root, ignore_errors=True)
    return manifest


# -- the manifest --------------------------------------------------------------------

def _open_manifest(run, profile, suites, io_stacks, conditions: Conditions, seed) -> dict:
    manifest = run.read_manifest()
    session = {"started": store.utc_now(), "argv": sys.argv, "suites": suites,
               "io": list(io_stacks), "seed": seed, "pid": os.getpid()}
    wanted = {"profile": profile.name, "cache": conditions.cache,
              "allocator": conditions.allocator, "output": conditions.output,
              "clock": conditions.clock, "affinity": conditions.affinity,
              "values": store.SETTLED_VALUES, "fixture_page_cache": contract.FIXTURE_READ_BACK}
    if manifest:
        for key, value in wanted.items():
            # Runs made before a condition was stated were measured in a mix of states; every
            # run states its profile and cache.
            recorded = manifest.get(key, None if key in ("profile", "cache") else "unstated")
            if recorded != value:
                raise MatrixError(f"run {run.run_id} was made with {key} {recorded!r}; "
                                  f"this call asks for {value!r}. Use another --run-id.")
        manifest["suites"] = sorted(set(manifest.get("suites", [])) | set(suites))
        manifest["io"] = sorted(set(manifest.get("io", [])) | set(io_stacks))
        manifest.setdefault("sessions", []).append(session)
        manifest.setdefault("interpreters", {})
        return manifest
    return {
        "iomatrix_manifest_version": 2, "run_id": run.run_id, **machine.facts(),
        **wanted, "timing_cpus": machine.timing_cpus(conditions.affinity)[1],
        "profile_settings": dataclasses.asdict(profile),
        "suites": list(suites), "io": list(io_stacks),
        "order": {"method": store.LOCKSTEP_ORDER, "seed": seed},
        "started": session["started"], "finished": None,
        "machine_state_start": machine.state(store.utc_now()), "interpreters": {},
        "sessions": [session],
    }


def _session_name(manifest: dict) -> str:
    """A file name for what the current session writes: its number in the run and its start."""
    started = manifest["sessions"][-1]["started"].replace(":", "").replace("+0000", "Z")
    return f"session{len(manifest['sessions']):03d}-{started}"


def _write_manifest(run, manifest, plans, profile) -> None:
    _record(run, manifest, plans, profile)
    run.write_manifest(manifest)


def _plan_series(run, interpreters, suites, profile, io_stacks, manifest, envs_dir, aa_of, log):
    plans: dict[str, SeriesPlan] = {}
    for interp in interpreters:
        for io_stack in io_stacks:
            series = store.series_name(interp.label, io_stack)
            plan = SeriesPlan(series, interp, io_stack)
            plans[series] = plan
            entry = manifest["interpreters"].setdefault(series, {})
            entry.update(interp.as_manifest())
            entry.update({"series": series, "io": io_stack})
            if interp.label in aa_of:
                entry["aa_of"] = aa_of[interp.label]
            if os.path.lexists(run.series_file(series)):
                log(f"iomatrix: {series}: {run.series_file(series)} exists; kept, not rerun")
                plan.kept = True
                continue
            try:
                plan.env = environments.ensure_environment(interp, envs_dir, log=log)
                entry["pyperf_version"] = plan.env.pyperf_version
                entry["environment_notes"] = plan.env.notes
                plan.ops, plan.skipped, plan.op_info = _list_ops(plan, suites, profile)
            except (environments.EnvironmentSetupError, RuntimeError) as exc:
                plan.error = str(exc)
                log(f"iomatrix: {series} FAILED before running: {procs.tail(str(exc), 3)}")
    return plans


def _list_ops(plan: SeriesPlan, suites: list[str], profile: Profile):
    try:
        rows = list_ops(plan.env, suites, plan.io_stack, profile.name)
    except RuntimeError as exc:
        raise RuntimeError(f"{plan.series}: {exc}")
    ops = [(r["suite"], r["op"]) for r in rows if not r["unavailable"]]
    skipped = {r["op"]: r["unavailable"] for r in rows if r["unavailable"]}
    return ops, skipped, {r["op"]: r for r in rows}


def _plan_native(run, plans, work_root, manifest, log):
    """Add the native reference as one more series for the ops that describe their twin."""
    infos = {}
    for plan in plans.values():
        for op, row in plan.op_info.items():
            if row.get("native") and not row.get("unavailable"):
                infos[op] = row
    if not infos:
        return
    entry = manifest.setdefault("native", {})
    plan = SeriesPlan(native.SERIES, None, "c",
                      ops=sorted((r["suite"], op) for op, r in infos.items()), op_info=infos)
    plans[native.SERIES] = plan
    if os.path.lexists(run.series_file(native.SERIES)):
        plan.kept = True
        return
    plan.tool, entry["tool"] = native.build_tool(work_root)
    if plan.tool is None:
        plan.error = entry["tool"]
        log(f"iomatrix: {entry['tool']}; the run goes on without it")


def _make_fixtures(suites, profile, fixtures_dir, log):
    needed = run_harness("--plan", ",".join(suites), profile.name)["bytes"]
    fixtures_dir.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(fixtures_dir.parent).free
    if needed * FREE_DISK_MARGIN > free:
        raise MatrixError(f"not enough free disk in {fixtures_dir.parent}: the suites need about "
                          f"{needed / 2**20:.0f} MiB, {free / 2**20:.0f} MiB are free; "
                          "choose another --work-dir or fewer suites")
    started = time.monotonic()
    try:
        made = run_harness("--make-fixtures", ",".join(suites), profile.name,
                           str(fixtures_dir), timeout=3600)
    except RuntimeError as exc:
        raise MatrixError(f"cannot write fixtures in {fixtures_dir}: {exc}")
    log(f"iomatrix: fixtures for {', '.join(suites)} made in {fixtures_dir} "
        f"({time.monotonic() - started:.1f} s), page cache: {made.get('page_cache')}")
    return made["page_cache"]


# -- running -------------------------------------------------------------------------

def worker_command(plan: SeriesPlan, task: Task, ops: list[str], profile: Profile,
                   conditions: Conditions, fixtures_dir: Path, scratch_dir: Path, output: Path,
                   errors: Path) -> list[str]:
    warmups = profile.pypy_warmups if plan.interp.implementation == "pypy" else profile.warmups
    return [plan.env.python, str(HARNESS), "--batch", "--suite", task.suite,
            "--ops", json.dumps(ops), "--fixtures", str(fixtures_dir), "--scratch", str(scratch_dir),
            "--iomatrix-profile", profile.name, "--io", task.io_stack,
            "--cache", conditions.cache, "--allocator", conditions.allocator,
            "--output-state", conditions.output,
            *([] if conditions.clock == "auto" else ["--clock", conditions.clock]),
            "--round", str(task.round_index), "--warmups", str(warmups),
            "--values", str(profile.values), "--output", str(output), "--errors", str(errors)]


def worker_environment(plan: SeriesPlan, conditions: Conditions) -> dict:
    env = plan.env.command_env()
    env.update(machine.allocator_environment(conditions.allocator))
    return env


def _execute(run, plans, tasks, profile, conditions, fixtures_dir, scratch_dir, timeout, seed,
             log):
    series_count = len({t.series for t in tasks})
    progress = Progress(len(tasks), log, profile.rounds, verbose_labels=series_count <= 4)
    for group in planning.lockstep_groups(tasks):
        batches = []
        for task in group:
            plan = plans[task.series]
            ops = planning.batch_ops(plan, task, seed)
            if plan.error is not None or not ops:
                progress.done()
                continue
            part = planning.part_for(run, task)
            part.parent.mkdir(parents=True, exist_ok=True)
            batches.append(Batch(plan, task, ops, part, Path(contract.partial_path(str(part)))))
            progress.start(task)
        try:
            _run_group(batches, profile, conditions, fixtures_dir, scratch_dir, timeout, seed,
                       log)
        finally:  # Ctrl-C included: the workers are killed; their half-results go
            for batch in batches:
                for leftover in (batch.partial, batch.errors_file):
                    if leftover.exists():
                        leftover.unlink()
        for _ in batches:
            progress.done()


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


def worker_cpus(batch, conditions: Conditions):
    """The CPUs a batch's worker may use: the run's timing CPU, unless an op of the batch
    works in threads or child processes (its clock is the wall clock): those get every
    CPU, or they would measure concurrency on one."""
    if any(batch.plan.op_info.get(op, {}).get("clock") == "wall" for op in batch.ops):
        return None
    return machine.timing_cpus(conditions.affinity)[0]


def _run_group(batches, profile, conditions, fixtures_dir, scratch_dir, timeout, seed, log):
    """One round of one suite: the interpreters' batches in lockstep (iomatrix.lockstep),
    then the native reference's. A batch whose lockstep worker failed is blamed on its op
    and the rest of its ops run again on their own (_run_task)."""
    stepped = [b for b in batches if b.plan.interp is not None]
    if stepped:
        task = stepped[0].task
        workers = []
        try:
            for batch in stepped:
                cmd = worker_command(batch.plan, batch.task, batch.ops, profile, conditions,
                                     fixtures_dir, scratch_dir, batch.partial, batch.errors_file)
                workers.append(lockstep.LockstepWorker(
                    batch, [*cmd, "--lockstep"], worker_environment(batch.plan, conditions),
                    cwd=scratch_dir, cpus=worker_cpus(batch, conditions)))
            order = planning.round_order((op for b in stepped for op in b.ops), seed,
                                         task.round_index, task.suite)
            lockstep.run_round(workers, order, timeout,
                               random.Random(f"{seed}-{task.round_index}-{task.suite}-turns"))
        finally:
            for worker in workers:
                worker.close()
        for worker in workers:
            batch = worker.key
            if worker.failure is None:
                _collect(batch, batch.ops, log)
                continue
            culprit, fatal = worker.failure
            culprit = culprit if culprit in batch.ops else batch.ops[0]
            _fail_op(batch.plan, batch.task, culprit, fatal, log)
            rest = [op for op in batch.ops if op != culprit]
            if rest and batch.plan.error is None:
                _run_task(batch, rest, profile, conditions, fixtures_dir, scratch_dir, timeout,
                          log)
    for batch in batches:
        if batch.plan.interp is None:
            _run_task(batch, batch.ops, profile, conditions, fixtures_dir, scratch_dir, timeout,
                      log)


def _run_task(batch, ops, profile, conditions, fixtures_dir, scratch_dir, timeout, log):
    """Run a batch in a worker of its own; when it crashes or hangs, blame the op it was in
    and rerun the rest."""
    plan, task = batch.plan, batch.task
    while ops:
        if plan.interp is None:
            culprit, fatal = native.run_batch(plan.tool, plan.op_info, task.suite,
                                              task.round_index, ops, profile, conditions.cache,
                                              fixtures_dir, scratch_dir, batch.partial, timeout)
        else:
            cmd = worker_command(plan, task, ops, profile, conditions, fixtures_dir, scratch_dir,
                                 batch.partial, batch.errors_file)
            culprit, fatal = procs.supervise(cmd, worker_environment(plan, conditions), timeout,
                                             cwd=scratch_dir, cpus=worker_cpus(batch, conditions))
        if fatal is None:
            _collect(batch, ops, log)
            return
        culprit = culprit if culprit in ops else ops[0]
        _fail_op(plan, task, culprit, fatal, log)
        if plan.error is not None:
            return
        ops = [op for op in ops if op != culprit]


def _collect(batch, ops, log):
    """A worker that finished: its result becomes the part; the ops it reports as failed
    are recorded."""
    plan, task = batch.plan, batch.task
    errors = store.read_json(batch.errors_file) if batch.errors_file.exists() else {}
    if batch.partial.exists():
        os.replace(batch.partial, batch.part)
        plan.succeeded = True
    for op, error in errors.items():
        # An op that raised (a failed verification, a missing API) is not a dead
        # interpreter: it never counts towards giving up on the interpreter.
        _fail_op(plan, task, op, str(error), log, may_give_up=False)
    if not batch.part.exists() and not errors:
        _fail_op(plan, task, ops[0], "the worker exited without writing its result", log)


def _fail_op(plan, task, op, error, log, may_give_up=True):
    plan.failed_ops[op] = error
    log(f"iomatrix: {task.series} {op} FAILED (round {task.round_index + 1}): "
        f"{procs.tail(error, 4)}")
    plan.hard_failures += may_give_up
    if may_give_up and not plan.succeeded and plan.hard_failures >= GIVE_UP_AFTER_FAILURES:
        plan.error = (f"gave up after its first {plan.hard_failures} worker processes crashed "
                      f"or hung; the last one: {error}")
        log(f"iomatrix: {task.series}: {plan.error.splitlines()[0]}")


def _merge_series(run, plan: SeriesPlan, profile: Profile, log):
    """Merge a series' parts into ``<series>.json`` once every planned op and round is there."""
    if plan.error is not None or not plan.ops or plan.kept:
        return
    if planning.missing_processes(run, plan, profile):
        return  # incomplete: the parts stay, the next session of this run id redoes the rest
    parts = sorted(run.parts_dir(plan.series).glob("r*--*.json"))
    try:
        contract.merge_parts(str(run.series_file(plan.series)), [str(p) for p in parts])
    except (OSError, ValueError, KeyError) as exc:
        plan.error = f"merging the results failed: {exc}"
        log(f"iomatrix: {plan.series}: {plan.error}")
        return
    shutil.rmtree(run.parts_dir(plan.series))
    try:
        run.parts_dir(plan.series).parent.rmdir()   # .parts/ goes with its last series
    except OSError:
        pass
    log(f"iomatrix: {plan.series}: wrote {run.series_file(plan.series)}")


def _record(run, manifest, plans, profile):
    for plan in plans.values():
        if plan.interp is None:
            entry = manifest.setdefault("native", {})
        else:
            entry = manifest["interpreters"][plan.series]
        if plan.ops:
            entry["planned_ops"] = sorted(op for _, op in plan.ops)
        planned = entry.get("planned_ops") if isinstance(entry.get("planned_ops"), list) else []
        status, missing = planning.series_status(run, plan, planned, profile)
        entry["status"] = status
        entry["missing"] = missing
        entry["results_file"] = plan.series + ".json" if status == "ok" else None
        if plan.kept:
            continue
        entry["skipped_ops"] = plan.skipped
        entry["failed_ops"] = plan.failed_ops
        entry["error_tail"] = procs.tail(plan.error) if plan.error else (
            procs.tail(next(iter(plan.failed_ops.values()))) if status == "failed" and
            plan.failed_ops else None)


class Progress:
    """One line per (round, suite) group: where the run is and how long it has left."""

    def __init__(self, total: int, log, rounds: int, verbose_labels: bool = False):
        self.total, self.finished, self.log = total, 0, log
        self.rounds = rounds
        self.verbose_labels = verbose_labels
        self.started = time.monotonic()
        self.current_group = None

    def start(self, task: Task):
        group = (task.round_index, task.suite)
        if group != self.current_group:
            self.current_group = group
            which = (f"{task.round_index + 1}/{self.rounds}" if task.round_index < self.rounds
                     else f"{task.round_index + 1} (extra)")
            self.log(f"[{self.finished}/{self.total} done, {self.eta()}] round {which}: "
                     f"suite {task.suite}")
        if self.verbose_labels:
            self.log(f"    {task.series}")

    def done(self):
        self.finished += 1

    def eta(self) -> str:
        if self.finished == 0:
            return "ETA ?"
        elapsed = time.monotonic() - self.started
        remaining = elapsed / self.finished * (self.total - self.finished)
        return f"{elapsed:.0f} s elapsed, ETA {remaining // 60:.0f}m{remaining % 60:02.0f}s"

