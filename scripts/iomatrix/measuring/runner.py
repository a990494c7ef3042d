"""Run suites under interpreters, in lockstep rounds, into one run of the results store.

Why: on a shared machine the speed of the same code drifts by 1.5x to 4x in
phases of seconds. Running one interpreter after the other would turn that
drift into a fake difference between interpreters. So the matrix runs in
rounds: each round visits every suite in a shuffled order, and for each suite
starts one worker process per series (a "batch": the suite's ops, each with its
warm-ups and values; one op a worker under the untouched allocator) and steps them
through the ops together: each op's warm-ups, then each of its values, are taken by
every series' worker one right after the other, in version order either way
(iomatrix.measuring.lockstep, iomatrix.measuring.workers). Both sides of a ratio are thus
measured in the same phase, round by round, and the report pairs them by round
(stats.compare). Fresh processes every round let the rounds also sample what
differs between processes. The shuffle seed is in the manifest.

What a run does is its spec (iomatrix.measuring.spec.RunSpec), built once from the command
line and recorded in the manifest (iomatrix.measuring.record). Each batch writes a
one-run-per-op pyperf file into ``.parts/``; when a series has every planned
(op, round), the parts are merged into ``<series>.json``. Parts that exist are
not redone, which is how an interrupted run resumes; an op that failed is redone
by the next session of the same run id. A series' status is derived from its
files on every manifest write, never carried over.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from iomatrix import cli, procs
from iomatrix.interpreters import environments
from iomatrix.measuring import (counters, knobs, machine, native, phase, planning, record,
                                sampling, selection, stages, workers)
from iomatrix.storing import contract, store, workdirs
from iomatrix.interpreters.discovery import Interpreter
from iomatrix.measuring.planning import SeriesPlan
from iomatrix.measuring.spec import (AFFINITIES, ALLOCATOR_TWIN_SUITES, DEFAULT_TIMEOUT_SECONDS, Conditions,
                                     RunSpec, SpecError)
from iomatrix.measuring.workers import HARNESS, Session

__all__ = ["AFFINITIES", "Conditions", "DEFAULT_TIMEOUT_SECONDS", "HARNESS", "MatrixError",
           "RunSpec", "SpecError", "run_matrix"]

# The default selection of the bench and matrix commands (iomatrix.measuring.selection).
DEFAULT_SELECTION = selection.CORE
# The 2009 study alone (release's default: both sides of a release check run it).
CORE_SUITE = selection.STUDY_SUITE
FREE_DISK_MARGIN = 1.2
LIST_TIMEOUT_SECONDS = 120


class MatrixError(RuntimeError):
    """The run cannot start (no disk, unwritable directory)."""


# -- the worker side, as the host sees it -------------------------------------------

def run_harness(*args: str, timeout: float = LIST_TIMEOUT_SECONDS, python: str = sys.executable,
                env=None, cpus=None) -> dict:
    """Run a host-side mode of harness.py (listing, planning, fixtures); its JSON answer."""
    try:
        proc = procs.run([python, str(HARNESS), *args], timeout=timeout, env=env, cpus=cpus)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"harness.py {args[0]} did not finish within {timeout:g} s")
    if proc.returncode != 0:
        detail = procs.tail(proc.stderr or proc.stdout).strip()
        separator = "\n" if "\n" in detail else " "  # a one-line reason stays on the line
        raise RuntimeError(f"harness.py {args[0]} failed ({procs.describe_exit(proc.returncode)}):"
                           f"{separator}{detail}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def list_ops(env: environments.BenchEnvironment, suites, io_stack: str,
             profile: str) -> list[dict]:
    """What the interpreter of ``env`` can run: the rows of ``harness.py --list-ops``."""
    return run_harness("--list-ops", ",".join(suites), io_stack, profile, python=env.python,
                       env=env.command_env())["ops"]


def system_metadata(env: environments.BenchEnvironment, cpus) -> dict:
    """pyperf's metadata of the interpreter of ``env`` and the machine, collected by pyperf
    in a process on ``cpus`` (the timed workers' CPUs: its CPU frequency and configuration
    are theirs). The workers write it into their results without importing pyperf."""
    return run_harness("--system-metadata", python=env.python, env=env.command_env(),
                       cpus=cpus)


# -- the run -------------------------------------------------------------------------

# Set to 1: a finished session leaves its series and counters files plain (run_matrix).
PLAIN_RESULTS_ENV = "IOMATRIX_PLAIN_RESULTS"


def run_matrix(interpreters: list[Interpreter], spec: RunSpec | None = None, *, log=print,
               **options) -> dict:
    """Run the spec's ops under every interpreter; return the run's manifest.

    ``options`` instead of a spec: the keywords of ``RunSpec.create`` (the form older
    callers use). Interpreters that fail (no environment, crashes, timeouts) are
    recorded as failed in the manifest; the others complete.
    """
    if spec is None:
        spec = RunSpec.create(**options)
    elif options:
        raise TypeError(f"run_matrix takes a spec or its options, not both: {sorted(options)}")
    run = store.Run(spec.results_dir, spec.run_id)
    deadline = time.monotonic() + spec.budget_seconds
    with run.exclusive():
        manifest = record.open_manifest(run, spec)
        timer = stages.Stages()
        # the same dict: every manifest write of the session has the stages so far
        manifest["sessions"][-1]["stages"] = timer.seconds
        for partial in run.partial_files():
            partial.unlink()
            log(f"iomatrix: removed {partial.name}, left half-written by an interrupted session")
        work_parent = spec.work_dir or Path(tempfile.gettempdir())
        workdirs.clean_stale_work_dirs(work_parent, spec.run_id, log)
        with timer.timed("environments"):
            plans = _plan_series(run, interpreters, spec, manifest, log)
        work_root = workdirs.make_work_dir(work_parent, run)
        session = Session(spec, work_root / "fixtures", work_root / "scratch", log)
        manifest["fixture_filesystem"] = machine.filesystem_of(work_root)
        try:
            _run_session(run, session, plans, manifest, work_root, deadline, timer)
        except KeyboardInterrupt:
            manifest["sessions"][-1]["interrupted"] = store.utc_now()
            log(f"iomatrix: interrupted; finished worker results are kept in {run.path}; "
                f"rerun with --run-id {spec.run_id} to resume")
            raise
        finally:
            _close_session(run, spec, manifest, plans, work_root, log)
        # The session finished: its merged series and counters files are stored compressed
        # (pyperf and every reader take .json.gz; 62 MB of stored runs were 8 MB so). A
        # series still in parts stays for the next session of this run id, which does it.
        # IOMATRIX_PLAIN_RESULTS=1 leaves them plain (to read them with other tools; the
        # tests, which open a run's files by their plain names).
        if os.environ.get(PLAIN_RESULTS_ENV) != "1":
            compressed = store.compress_finished(run)
            if compressed:
                log(f"iomatrix: {len(compressed)} result files stored compressed (.json.gz)")
    return manifest


def _run_session(run, session: Session, plans: dict, manifest: dict, work_root: Path,
                 deadline: float, timer: stages.Stages | None = None) -> None:
    """Fixtures, the timing rounds with the phase probe beside them, the extra rounds of
    loose ops, the merge, then the counting pass; each stage's seconds in ``timer``."""
    spec, log = session.spec, session.log
    timer = timer or stages.Stages()
    entry = manifest["sessions"][-1]
    with timer.timed("fixtures"):
        manifest["fixture_page_cache"] = _make_fixtures(spec, session.fixtures_dir, log)
        session.scratch_dir.mkdir()
    with timer.timed("native"):
        _plan_native(run, plans, work_root, manifest, log)
    tasks = planning.schedule(run, plans, spec.profile, spec.seed, spec.conditions.allocator)
    entry["resumed_parts"] = planning.count_existing_parts(run, plans)
    if entry["resumed_parts"]:
        log(f"iomatrix: resuming run {spec.run_id}: {entry['resumed_parts']} finished worker "
            "processes are kept, the rest is run now")
    # The machine's phase is measured while timing runs, beside it (iomatrix.measuring.phase).
    probe = phase.Probe(run.path, record.session_name(manifest),
                        machine.timing_cpus(spec.conditions.affinity)[0])
    entry["phase_probe"] = probe.manifest_entry()
    record.write_manifest(run, manifest, plans, spec.profile)
    try:
        started = time.monotonic()
        with timer.timed("planned_rounds"):
            _execute(run, session, plans, tasks)
        planned_end = time.monotonic()
        planned_round_seconds = (planned_end - started) / max(1, spec.profile.rounds)
        with timer.timed("native"):
            native.record_best(plans.get(native.SERIES), manifest, spec.conditions.cache,
                               session.fixtures_dir, session.scratch_dir, spec.timeout_seconds,
                               log, spec.profile.native_repeat)
        deadline = sampling.extra_rounds_deadline(deadline, planned_end, spec.extra_seconds)
        with timer.timed("extra_rounds"):
            entry["sampling"] = sampling.sample_until_tight(
                run, plans, spec.profile, target=spec.target, deadline=deadline, seed=spec.seed,
                planned_round_seconds=planned_round_seconds if tasks else 0.0,
                log=log, execute=lambda extra: _execute(run, session, plans, extra),
                allocator=spec.conditions.allocator)
    finally:
        probe.stop()
    with timer.timed("merge"):
        for plan in plans.values():
            _merge_series(run, plan, spec.profile, log)
    # After all timing work: counting never runs beside a timed worker.
    with timer.timed("counting"):
        counters.count_run(run, counted_plans(run, plans, spec), manifest, spec.counting,
                           profile=spec.profile.name, conditions=spec.conditions,
                           work_root=work_root, timeout=spec.timeout_seconds, log=log,
                           seed=spec.seed, aa_recount=spec.aa_recount)
    log("iomatrix: the session's stages (seconds):\n" + stages.table(timer.seconds))


def _close_session(run, spec: RunSpec, manifest: dict, plans: dict, work_root: Path,
                   log) -> None:
    try:
        entry = manifest["sessions"][-1]
        entry["finished"] = store.utc_now()
        manifest["finished"] = entry["finished"]
        manifest["machine_state_end"] = machine.state(store.utc_now())
        record.write_manifest(run, manifest, plans, spec.profile)
    finally:  # even when the manifest cannot be written, the work dir goes
        if spec.keep_fixtures:
            log(f"iomatrix: fixtures kept in {work_root}")
        else:
            shutil.rmtree(work_root, ignore_errors=True)
        # Every worker of the session has exited, so a half-written file left now is one a
        # group's cleanup did not reach: a Ctrl-C that lands inside that cleanup (under load,
        # between a part sealed and its errors file removed) stops it there.
        for partial in run.partial_files():
            partial.unlink(missing_ok=True)


def counted_plans(run, plans: dict, spec: RunSpec) -> dict:
    """The plans as the counting pass sees them: the ops of the spec's counted suites only
    (a series kept from an earlier session: the ops of its file); not the series of a
    further allocator condition."""
    counted = {}
    for name, plan in plans.items():
        if plan.allocator is not None or plan.ablation_of is not None:
            continue  # counted under the run's own condition and defaults only (what a call does)
        ops = plan.ops
        if not ops and plan.kept:
            try:
                ops = list(dict.fromkeys((r["suite"], r["op"])
                                         for r in store.load_series(run.series_file(name))))
            except store.ResultFileError:
                ops = []
        counted[name] = dataclasses.replace(
            plan, ops=[(s, op) for s, op in ops if s in spec.counted_suites], kept=False)
    # The order the pass counts in is counters._schedule's: the A/A twin's original first,
    # the twin once it is done (it takes its non-sampled ops from the cache it fills).
    return counted


# -- planning ------------------------------------------------------------------------

def _plan_series(run, interpreters, spec: RunSpec, manifest: dict, log) -> dict:
    plans: dict[str, SeriesPlan] = {}
    # Further allocator conditions time the lineage's releases again, not every variant:
    # a twin round costs a process per op, and the lineage steps are what the report
    # compares across conditions (allocator_section).
    twinned = planning.lineage_labels(interpreters) - {spec.aa_twin}
    for interp in interpreters:
        for io_stack in spec.io_stacks:
            series = store.series_name(interp.label, io_stack)
            plan = SeriesPlan(series, interp, io_stack)
            plans[series] = plan
            entry = manifest["interpreters"].setdefault(series, {})
            entry.update(interp.as_manifest())
            entry.update({"series": series, "io": io_stack})
            if spec.aa and interp.label == spec.aa_twin:
                entry["aa_of"] = spec.aa
            if os.path.lexists(run.series_file(series)):
                log(f"iomatrix: {series}: {run.series_file(series)} exists; kept, not rerun")
                plan.kept = True
            else:
                try:
                    plan.env = environments.ensure_environment(interp, spec.envs_dir, log=log)
                    entry["pyperf_version"] = plan.env.pyperf_version
                    entry["environment_notes"] = plan.env.notes
                    plan.ops, plan.skipped, plan.op_info = _list_ops(plan, spec)
                    plan.system_metadata = system_metadata(
                        plan.env, machine.timing_cpus(spec.conditions.affinity)[0])
                except (environments.EnvironmentSetupError, RuntimeError) as exc:
                    plan.error = str(exc)
                    log(f"iomatrix: {series} FAILED before running: {procs.tail(str(exc), 3)}")
            if interp.label in twinned:
                for allocator in spec.allocator_twins:
                    twin = _plan_allocator_twin(run, plan, allocator, spec, manifest, log)
                    plans[twin.series] = twin
    for ablation in _plan_ablations(run, plans, spec, manifest, log):
        plans[ablation.series] = ablation
    return plans


def _plan_ablations(run, plans: dict, spec: RunSpec, manifest: dict, log) -> list[SeriesPlan]:
    """The ablations of the lineage's steps (measuring.knobs): for each step OLD -> NEW
    whose releases changed a knob's default, NEW's series timed again with the old value
    and OLD's with the new one, for the ops the knob applies to, as series of their own
    ("3.14.7~buffering=4096") in the same lockstep rounds, for the profile's twin rounds.
    The values are those the releases take on the fixtures' file system (Knob.effective)."""
    lineage = planning.lineage_labels([p.interp for p in plans.values()
                                       if p.interp is not None and p.allocator is None])
    steps = sorted((p for p in plans.values() if p.interp is not None and p.allocator is None
                    and p.io_stack == "c" and p.interp.label in lineage
                    and p.interp.label != spec.aa_twin),
                   key=lambda p: p.interp.version_info)
    try:
        blksize = os.stat(spec.work_dir or tempfile.gettempdir()).st_blksize
    except OSError:
        blksize = None
    found = []
    for old, new in zip(steps, steps[1:]):
        between = knobs.knobs_between(knobs.release_key(old.interp.version),
                                      knobs.release_key(new.interp.version))
        for knob in between:
            old_value, new_value = knob.values_on(blksize)
            # an older release without the setting (knob.old_side) is not timed with it
            sides = ((new, old_value), (old, new_value)) if knob.old_side else \
                ((new, old_value),)
            for plan, value in sides:
                ops = [(s, op) for s, op in plan.ops if re.search(knob.ops, op)]
                if ops:
                    found.append(_plan_ablation(run, plan, knob, value, ops, spec, manifest,
                                                log))
    return found


def _plan_ablation(run, plan: SeriesPlan, knob, value: int, ops: list, spec: RunSpec,
                   manifest: dict, log) -> SeriesPlan:
    series = knobs.ablation_series(plan.series, knob, value)
    ablation = SeriesPlan(series, plan.interp, plan.io_stack, env=plan.env, ops=ops,
                          op_info=plan.op_info, skipped=plan.skipped, error=plan.error,
                          rounds=spec.profile.twin_rounds, ablation_of=plan.series,
                          knob=(knob.name, value), system_metadata=plan.system_metadata)
    entry = manifest["interpreters"].setdefault(series, {})
    entry.update({k: v for k, v in manifest["interpreters"][plan.series].items()
                  if k not in ("counters", "status", "missing", "results_file")})
    entry.update({"series": series, "ablation_of": plan.series, "knob": knob.name,
                  "knob_value": value})
    if os.path.lexists(run.series_file(series)):
        log(f"iomatrix: {series}: {run.series_file(series)} exists; kept, not rerun")
        ablation.kept = True
    return ablation


def _plan_allocator_twin(run, plan: SeriesPlan, allocator: str, spec: RunSpec, manifest: dict,
                         log) -> SeriesPlan:
    """The series of ``plan`` timed again under a further allocator condition: the ops of
    ALLOCATOR_TWIN_SUITES, one per process, for the profile's twin rounds; not their controls
    (selection.CONTROL_SUFFIX: the loop over data in memory is compared with its op within one
    condition, and one process per op and round under each condition would double the twin)."""
    series = spec.twin_series(plan.series, allocator)
    twin = SeriesPlan(series, plan.interp, plan.io_stack, env=plan.env,
                      ops=[(s, op) for s, op in plan.ops if s in ALLOCATOR_TWIN_SUITES
                           and not op.endswith(selection.CONTROL_SUFFIX)],
                      op_info=plan.op_info, skipped=plan.skipped, error=plan.error,
                      allocator=allocator, rounds=spec.profile.twin_rounds,
                      system_metadata=plan.system_metadata)
    entry = manifest["interpreters"].setdefault(series, {})
    entry.update({k: v for k, v in manifest["interpreters"][plan.series].items()
                  if k not in ("counters", "status", "missing", "results_file")})
    entry.update({"series": series, "allocator": allocator, "allocator_of": plan.series})
    if os.path.lexists(run.series_file(series)):
        log(f"iomatrix: {series}: {run.series_file(series)} exists; kept, not rerun")
        twin.kept = True
    return twin


def _list_ops(plan: SeriesPlan, spec: RunSpec):
    try:
        rows = list_ops(plan.env, spec.suites, plan.io_stack, spec.profile.name)
    except RuntimeError as exc:
        raise RuntimeError(f"{plan.series}: {exc}")
    if spec.ops is not None:
        absent = sorted(set(spec.ops) - {r["op"] for r in rows})
        if absent:  # a selection that names ops its suites do not have (iomatrix.measuring.selection)
            raise RuntimeError(f"{plan.series}: the selection {spec.selection!r} names ops "
                               f"its suites do not list: {', '.join(absent)}")
        rows = [r for r in rows if spec.chooses(r["suite"], r["op"])]
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


def _make_fixtures(spec: RunSpec, fixtures_dir: Path, log):
    suites, profile = ",".join(spec.suites), spec.profile.name
    needed = run_harness("--plan", suites, profile)["bytes"]
    fixtures_dir.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(fixtures_dir.parent).free
    if needed * FREE_DISK_MARGIN > free:
        raise MatrixError(f"not enough free disk in {fixtures_dir.parent}: the suites need about "
                          f"{needed / 2**20:.0f} MiB, {free / 2**20:.0f} MiB are free; "
                          "choose another --work-dir or fewer suites")
    started = time.monotonic()
    try:
        made = run_harness("--make-fixtures", suites, profile, str(fixtures_dir), timeout=3600)
    except RuntimeError as exc:
        raise MatrixError(f"cannot write fixtures in {fixtures_dir}: {exc}")
    log(f"iomatrix: fixtures for {', '.join(spec.suites)} made in {fixtures_dir} "
        f"({time.monotonic() - started:.1f} s), page cache: {made.get('page_cache')}")
    return made["page_cache"]


# -- running -------------------------------------------------------------------------

def _execute(run, session: Session, plans: dict, tasks: list) -> None:
    """Run the tasks group by group (``planning.lockstep_groups``, ``workers.run_groups``)."""
    spec = session.spec
    # a run of up to 4 series names each as it starts; an ablation's series (a knob set on
    # one of them, measuring.knobs) does not make a run of 2 interpreters a big one
    series_count = len({t.series for t in tasks
                        if t.series not in plans or plans[t.series].ablation_of is None})
    progress = Progress(len(tasks), session.log, spec.profile.rounds,
                        verbose_labels=series_count <= 4)
    workers.run_groups(run, session, plans, planning.lockstep_groups(tasks, spec.seed),
                       progress.start, progress.done)


def _merge_series(run, plan: SeriesPlan, profile, log):
    """Merge a series' parts into ``<series>.json`` once every planned op and round is there."""
    if plan.error is not None or not plan.ops or plan.kept:
        return
    if planning.missing_processes(run, plan, profile):
        return  # incomplete: the parts stay, the next session of this run id redoes the rest
    parts, refused = [], []
    for part in sorted(run.parts_dir(plan.series).glob("r*--*.json")):
        try:
            store.read_part(run, plan.series, part)   # this run's, this series', valid
            parts.append(part)
        except store.ResultFileError as exc:   # its ops were timed again (parts_on_disk)
            refused.append(part)
            log(f"iomatrix: {plan.series}: {cli.one_line(exc)}")
    try:
        contract.merge_parts(str(run.series_file(plan.series)), [str(p) for p in parts])
    except (OSError, ValueError, KeyError) as exc:
        plan.error = f"merging the results failed: {exc}"
        log(f"iomatrix: {plan.series}: {plan.error}")
        return
    if refused:   # kept where they are, for a look; the merged ones go
        for part in parts:
            part.unlink()
        log(f"iomatrix: {plan.series}: wrote {run.series_file(plan.series)}; "
            f"{len(refused)} refused part file(s) left in {run.parts_dir(plan.series)}")
        return
    shutil.rmtree(run.parts_dir(plan.series))
    try:
        run.parts_dir(plan.series).parent.rmdir()   # .parts/ goes with its last series
    except OSError:
        pass
    log(f"iomatrix: {plan.series}: wrote {run.series_file(plan.series)}")


class Progress:
    """One line per (round, suite) group: where the run is and how long it has left."""

    def __init__(self, total: int, log, rounds: int, verbose_labels: bool = False):
        self.total, self.finished, self.log = total, 0, log
        self.rounds = rounds
        self.verbose_labels = verbose_labels
        self.started = time.monotonic()
        self.current_group = None

    def start(self, task):
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
