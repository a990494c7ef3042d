"""Run suites under interpreters, interleaved, into one run of the results store.

Why interleaved: on a shared machine the speed of the same code drifts by 1.5x
to 4x over tens of seconds. Running one interpreter after the other would turn
that drift into a fake difference between interpreters. So the matrix runs in
rounds: each round visits every op in a shuffled order, and for each op every
interpreter, also shuffled, one pyperf worker process each. Every interpreter
thus samples every op in every phase of the run, next to the others. The
shuffle seed is recorded in the manifest.

Each worker process is a real pyperf worker (``--worker``) writing a one-run
pyperf file into ``.parts/``; when a series has all its parts, the interpreter's
own pyperf merges them into ``<series>.json``. Parts that exist are not redone,
which is how an interrupted run resumes.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import environments
import native
import results_store
from discovery import REPO_ROOT, Interpreter

SUITES_DIR = REPO_ROOT / "suites"
HARNESS = SUITES_DIR / "harness.py"
MERGER = SUITES_DIR / "_merge_parts.py"
CORE_SUITE = "lutz2009"
DEFAULT_TIMEOUT_SECONDS = 600
ERROR_TAIL_LINES = 12
FREE_DISK_MARGIN = 1.2
# An interpreter whose first tasks all fail (crash on start, hang) is given up on, rather
# than failing every op of every round one timeout at a time.
GIVE_UP_AFTER_FAILURES = 3


@dataclasses.dataclass(frozen=True)
class Profile:
    name: str
    rounds: int          # worker processes per op and interpreter
    values: int          # timed values per process
    warmups: int         # untimed warm-up values per process
    pypy_warmups: int    # PyPy's JIT needs more before its values are steady
    description: str


PROFILES = {
    # smoke proves that everything runs, not how fast: one process per suite, one value
    "smoke": Profile("smoke", 1, 1, 0, 0, "seconds per interpreter, one value per op; for tests"),
    "quick": Profile("quick", 10, 2, 1, 3, "the default: minutes for the whole machine"),
    "full": Profile("full", 40, 3, 1, 10, "pyperf's rigorous settings: 40 processes x 3 values"),
}


def available_suites() -> list[str]:
    sys.path.insert(0, str(SUITES_DIR))
    import harness
    return harness.available_suites()


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


def parse_profile(value: str) -> Profile:
    if value not in PROFILES:
        raise ValueError(f"unknown profile {value!r}; valid profiles: {', '.join(PROFILES)}")
    return PROFILES[value]


# -- machine facts -----------------------------------------------------------------

def filesystem_of(path: Path) -> dict:
    """The mount point and file system type holding ``path`` (from /proc/mounts)."""
    real = os.path.realpath(path)
    best = {"mount": "?", "type": "?", "device": "?"}
    try:
        with open("/proc/mounts") as f:
            for line in f:
                device, mount, fstype = line.split()[:3]
                if (real == mount or real.startswith(mount.rstrip("/") + "/")) and \
                        len(mount) >= len(best["mount"] if best["mount"] != "?" else ""):
                    best = {"mount": mount, "type": fstype, "device": device}
    except OSError:
        pass
    return best


def machine_state() -> dict:
    """What can make numbers move: load, CPU governor, affinity."""
    state = {"time": results_store.utc_now()}
    try:
        state["load_average"] = list(os.getloadavg())
    except OSError:
        state["load_average"] = None
    try:
        state["affinity"] = sorted(os.sched_getaffinity(0))
    except AttributeError:
        state["affinity"] = None
    governor = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    state["cpu_governor"] = governor.read_text().strip() if governor.exists() else "unavailable"
    return state


def machine_facts() -> dict:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    return {"host": platform.node(), "os": platform.platform(), "system": platform.system(),
            "cpu": cpu, "cpu_count": os.cpu_count(), "memory_bytes": memory,
            "host_python": sys.version.split()[0]}


def tail(text: str, lines: int = ERROR_TAIL_LINES) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


# -- the run -----------------------------------------------------------------------

@dataclasses.dataclass
class Task:
    """One worker process: the ops of one suite, for one series, in one round."""
    series: str
    io_stack: str
    suite: str
    round_index: int


@dataclasses.dataclass
class SeriesPlan:
    series: str
    interp: Interpreter | None  # None for the native ceiling
    io_stack: str
    env: environments.BenchEnvironment | None = None
    ops: list = dataclasses.field(default_factory=list)       # [(suite, op)]
    op_info: dict = dataclasses.field(default_factory=dict)   # op -> row of --list-ops
    skipped: dict = dataclasses.field(default_factory=dict)   # op -> reason
    failed_ops: dict = dataclasses.field(default_factory=dict)  # op -> error tail
    error: str | None = None
    tool: str | None = None                                   # the native ceiling program
    succeeded: bool = False                                   # one worker has succeeded
    hard_failures: int = 0                                    # crashes and timeouts


class MatrixError(RuntimeError):
    """The run cannot start (bad options, no disk, unwritable directory)."""


def run_matrix(interpreters: list[Interpreter], *, suites: list[str], profile: Profile,
               results_dir: Path, run_id: str, io_stacks=("c",), cache: str = "warm",
               seed: int | None = None, work_dir: Path | None = None, keep_fixtures: bool = False,
               timeout: float = DEFAULT_TIMEOUT_SECONDS, envs_dir: Path = environments.ENVS_DIR,
               aa_of: dict | None = None, log=print) -> dict:
    """Run every suite op under every interpreter; return the run's manifest.

    Interpreters that fail (no environment, crashes, timeouts) are recorded as
    failed in the manifest; the others complete.
    """
    run = results_store.Run(results_dir, run_id)
    seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    with run.exclusive():
        manifest = _open_manifest(run, profile, suites, io_stacks, cache, seed)
        _clean_leftovers(run, manifest, log)
        plans = _plan_series(run, interpreters, suites, profile, io_stacks, manifest, envs_dir,
                             aa_of or {}, log)
        work_root = Path(tempfile.mkdtemp(prefix=f"iomatrix-{run_id}-",
                                          dir=str(work_dir) if work_dir else None))
        fixtures_dir, scratch_dir = work_root / "fixtures", work_root / "scratch"
        session = manifest["sessions"][-1]
        session["work_dir"] = str(work_root)
        manifest["fixture_filesystem"] = filesystem_of(work_root)
        try:
            _make_fixtures(suites, profile, fixtures_dir, log)
            scratch_dir.mkdir()
            _plan_native(run, plans, work_root, manifest, log)
            tasks = _schedule(run, plans, profile, seed)
            session["resumed_parts"] = _count_existing_parts(run, plans)
            if session["resumed_parts"]:
                log(f"iomatrix: resuming run {run_id}: {session['resumed_parts']} finished worker "
                    "processes are kept, the rest is run now")
            run.write_manifest(manifest)
            _execute(run, plans, tasks, profile, cache, fixtures_dir, scratch_dir, timeout, seed, log)
            for plan in plans.values():
                _merge_series(run, plan, profile, log)
        except KeyboardInterrupt:
            session["interrupted"] = results_store.utc_now()
            log(f"iomatrix: interrupted; finished worker results are kept in {run.path}; "
                f"rerun with --run-id {run_id} to resume")
            raise
        finally:
            _record(manifest, plans)
            session["finished"] = results_store.utc_now()
            manifest["finished"] = session["finished"]
            manifest["machine_state_end"] = machine_state()
            run.write_manifest(manifest)
            if keep_fixtures:
                log(f"iomatrix: fixtures kept in {work_root}")
            else:
                shutil.rmtree(work_root, ignore_errors=True)
    return manifest


def _pid_alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except (OSError, TypeError):
        return False
    return True


def _clean_leftovers(run, manifest, log):
    """Remove what a killed session left: half-written files and its work directory.

    Finished parts are kept (they are complete: they appear by rename); the
    temporary names are never read as results.
    """
    for partial in list(run.path.glob(".*.partial-*")) + list(run.path.glob(".parts/*/.*.partial-*")):
        partial.unlink()
        log(f"iomatrix: removed {partial.name}, left half-written by an interrupted session")
    for session in manifest["sessions"][:-1]:
        work = session.get("work_dir")
        if work and Path(work).exists() and not _pid_alive(session.get("pid")):
            shutil.rmtree(work, ignore_errors=True)
            log(f"iomatrix: removed {work}, left by an interrupted session")


def _open_manifest(run, profile, suites, io_stacks, cache, seed) -> dict:
    manifest = run.read_manifest()
    session = {"started": results_store.utc_now(), "argv": sys.argv, "suites": suites,
               "io": list(io_stacks), "seed": seed, "pid": os.getpid()}
    if manifest:
        for key, value in (("profile", profile.name), ("cache", cache)):
            if manifest.get(key) != value:
                raise MatrixError(f"run {run.run_id} was made with {key} {manifest.get(key)!r}; "
                                  f"this call asks for {value!r}. Use another --run-id.")
        manifest["suites"] = sorted(set(manifest.get("suites", [])) | set(suites))
        manifest["io"] = sorted(set(manifest.get("io", [])) | set(io_stacks))
        manifest["sessions"].append(session)
        return manifest
    state = machine_state()
    manifest = {
        "iomatrix_manifest_version": 1, "run_id": run.run_id, **machine_facts(),
        "profile": profile.name, "profile_settings": dataclasses.asdict(profile),
        "cache": cache, "suites": list(suites), "io": list(io_stacks),
        "order": {"method": "interleaved rounds, shuffled ops and interpreters per round",
                  "seed": seed},
        "started": session["started"], "finished": None,
        "machine_state_start": state, "interpreters": {}, "sessions": [session],
    }
    return manifest


def _plan_series(run, interpreters, suites, profile, io_stacks, manifest, envs_dir, aa_of, log):
    plans: dict[str, SeriesPlan] = {}
    for interp in interpreters:
        for io_stack in io_stacks:
            series = results_store.series_name(interp.label, io_stack)
            plan = SeriesPlan(series, interp, io_stack)
            plans[series] = plan
            entry = manifest["interpreters"].setdefault(series, {})
            entry.update(interp.as_manifest())
            entry.update({"series": series, "io": io_stack})
            if interp.label in aa_of:
                entry["aa_of"] = aa_of[interp.label]
            if run.series_file(series).exists():
                log(f"iomatrix: {series}: {run.series_file(series)} exists; kept, not rerun")
                plan.error = None
                plan.ops = []
                entry["status"] = "ok"
                continue
            try:
                plan.env = environments.ensure_environment(interp, envs_dir, log=log)
                entry["pyperf_version"] = plan.env.pyperf_version
                entry["environment_notes"] = plan.env.notes
                plan.ops, plan.skipped, plan.op_info = _list_ops(plan, suites, profile)
            except (environments.EnvironmentSetupError, RuntimeError) as exc:
                plan.error = str(exc)
                log(f"iomatrix: {series} FAILED before running: {tail(str(exc), 3)}")
    return plans


def list_ops(env: environments.BenchEnvironment, suites: list[str], io_stack: str,
             profile: str) -> list[dict]:
    """What the interpreter of ``env`` can run: the rows of ``harness.py --list-ops``."""
    cmd = [env.python, str(HARNESS), "--list-ops", ",".join(suites), io_stack, profile]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env.command_env(),
                          timeout=120, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise RuntimeError(f"listing the ops failed (exit {proc.returncode}):\n"
                           + tail(proc.stderr or proc.stdout))
    return json.loads(proc.stdout.strip().splitlines()[-1])["ops"]


def _list_ops(plan: SeriesPlan, suites: list[str], profile: Profile):
    try:
        rows = list_ops(plan.env, suites, plan.io_stack, profile.name)
    except RuntimeError as exc:
        raise RuntimeError(f"{plan.series}: {exc}")
    ops = [(r["suite"], r["op"]) for r in rows if not r["unavailable"]]
    skipped = {r["op"]: r["unavailable"] for r in rows if r["unavailable"]}
    return ops, skipped, {r["op"]: r for r in rows}


def _plan_native(run, plans, work_root, manifest, log):
    """Add the native ceiling as one more series for the ops that describe their native twin."""
    infos = {}
    for plan in plans.values():
        for op, row in plan.op_info.items():
            if row.get("native") and not row.get("unavailable"):
                infos[op] = row
    if not infos:
        return
    entry = manifest.setdefault("native", {})
    plan = SeriesPlan(native.SERIES, None, "c", ops=sorted((r["suite"], op) for op, r in infos.items()),
                      op_info=infos)
    plans[native.SERIES] = plan
    if run.series_file(native.SERIES).exists():
        plan.ops = []
        return
    plan.tool, entry["tool"] = native.build_tool(work_root)
    if plan.tool is None:
        plan.error = entry["tool"]
        plan.ops = []
        log(f"iomatrix: {entry['tool']}; the run goes on without it")


def _make_fixtures(suites, profile, fixtures_dir, log):
    sys.path.insert(0, str(SUITES_DIR))
    import harness
    needed = harness.planned_fixture_bytes(suites, profile.name)
    fixtures_dir.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(fixtures_dir.parent).free
    if needed * FREE_DISK_MARGIN > free:
        raise MatrixError(f"not enough free disk in {fixtures_dir.parent}: the suites need about "
                          f"{needed / 2**20:.0f} MiB, {free / 2**20:.0f} MiB are free; "
                          "choose another --work-dir or fewer suites")
    started = time.monotonic()
    try:
        harness.make_fixtures(suites, profile.name, str(fixtures_dir))
    except OSError as exc:
        raise MatrixError(f"cannot write fixtures in {fixtures_dir}: {exc}")
    log(f"iomatrix: fixtures for {', '.join(suites)} made in {fixtures_dir} "
        f"({time.monotonic() - started:.1f} s)")


def _schedule(run, plans, profile, seed) -> list[Task]:
    """Rounds x suites (shuffled) x series (shuffled): one worker process per task."""
    rng = random.Random(seed)
    suites = sorted({suite for plan in plans.values() for suite, _ in plan.ops})
    runnable = [p for p in plans.values() if p.error is None and p.ops]
    tasks = []
    for round_index in range(profile.rounds):
        order = list(suites)
        rng.shuffle(order)
        for suite in order:
            series_order = list(runnable)
            rng.shuffle(series_order)
            for plan in series_order:
                if any(s == suite for s, _ in plan.ops) and \
                        not run.part_file(plan.series, suite, round_index).exists():
                    tasks.append(Task(plan.series, plan.io_stack, suite, round_index))
    return tasks


def batch_ops(plan: SeriesPlan, task: Task, seed: int) -> list[str]:
    """The ops of one batch, in an order shuffled per round and suite.

    The order depends on the round and suite only, not on the interpreter, so every
    interpreter meets each op at the same position of its batch.
    """
    ops = sorted(op for suite, op in plan.ops if suite == task.suite)
    random.Random(f"{seed}-{task.round_index}-{task.suite}").shuffle(ops)
    return [op for op in ops if op not in plan.failed_ops]


def _count_existing_parts(run, plans) -> int:
    return sum(1 for plan in plans.values() if run.parts_dir(plan.series).is_dir()
               for _ in run.parts_dir(plan.series).glob("r*--*.json"))


def worker_command(plan: SeriesPlan, task: Task, ops: list[str], profile: Profile, cache: str,
                   fixtures_dir: Path, scratch_dir: Path, output: Path, errors: Path) -> list[str]:
    warmups = profile.pypy_warmups if plan.interp.implementation == "pypy" else profile.warmups
    return [plan.env.python, str(HARNESS), "--batch", "--suite", task.suite,
            "--ops", json.dumps(ops), "--fixtures", str(fixtures_dir), "--scratch", str(scratch_dir),
            "--iomatrix-profile", profile.name, "--io", task.io_stack, "--cache", cache,
            "--round", str(task.round_index), "--warmups", str(warmups),
            "--values", str(profile.values), "--output", str(output), "--errors", str(errors)]


def _execute(run, plans, tasks, profile, cache, fixtures_dir, scratch_dir, timeout, seed, log):
    series_count = len({t.series for t in tasks})
    progress = Progress(len(tasks), log, profile.rounds, verbose_labels=series_count <= 4)
    for task in tasks:
        plan = plans[task.series]
        ops = batch_ops(plan, task, seed)
        if plan.error is not None or not ops:
            progress.skip()
            continue
        part = run.part_file(task.series, task.suite, task.round_index)
        part.parent.mkdir(parents=True, exist_ok=True)
        partial = part.with_name(f".{part.name}.partial-{os.getpid()}")
        progress.start(task)
        try:
            _run_task(plan, task, ops, part, partial, profile, cache, fixtures_dir, scratch_dir,
                      timeout, log)
        finally:  # Ctrl-C included: the worker is killed; its half-result goes
            for leftover in (partial, Path(f"{partial}.errors")):
                if leftover.exists():
                    leftover.unlink()
        progress.done()


def _run_task(plan, task, ops, part, partial, profile, cache, fixtures_dir, scratch_dir,
              timeout, log):
    """Run one batch; when it crashes or hangs, blame the op it was in and rerun the rest."""
    errors_file = Path(f"{partial}.errors")
    while ops:
        if plan.interp is None:
            culprit, fatal, errors = _run_native(plan, task, ops, profile, cache, fixtures_dir,
                                                 scratch_dir, partial, timeout)
        else:
            cmd = worker_command(plan, task, ops, profile, cache, fixtures_dir, scratch_dir,
                                 partial, errors_file)
            culprit, fatal = _run_worker(cmd, plan.env.command_env(), timeout, cwd=scratch_dir)
            errors = json.loads(errors_file.read_text()) if fatal is None and errors_file.exists() \
                else {}
        if fatal is None:
            if partial.exists():
                os.replace(partial, part)
                plan.succeeded = True
            for op, error in errors.items():
                # An op that raised (a failed verification, a missing API) is not a dead
                # interpreter: it never counts towards giving up on the interpreter.
                _fail_op(plan, task, op, error, log, may_give_up=False)
            if not partial.exists() and not part.exists() and not errors:
                _fail_op(plan, task, ops[0], "the worker exited without writing its result", log)
            return
        culprit = culprit if culprit in ops else ops[0]
        _fail_op(plan, task, culprit, fatal, log)
        if plan.error is not None:
            return
        ops = [op for op in ops if op != culprit]


def _fail_op(plan, task, op, error, log, may_give_up=True):
    plan.failed_ops[op] = error
    log(f"iomatrix: {task.series} {op} FAILED (round {task.round_index + 1}): {tail(error, 4)}")
    plan.hard_failures += may_give_up
    if may_give_up and not plan.succeeded and plan.hard_failures >= GIVE_UP_AFTER_FAILURES:
        plan.error = (f"gave up after its first {plan.hard_failures} worker processes crashed "
                      f"or hung; "
                      f"the last one: {error}")
        log(f"iomatrix: {task.series}: {plan.error.splitlines()[0]}")


def _run_native(plan, task, ops, profile, cache, fixtures_dir, scratch_dir, output, timeout):
    """The native ceiling's batch: the C program once per op, warm-ups plus values each."""
    parts = []
    for op in ops:
        info = plan.op_info[op]
        cmd = native.command(plan.tool, info["native"], fixtures_dir, scratch_dir,
                             profile.warmups + profile.values, cache)
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return op, f"timed out after {timeout:g} s (--timeout)", {}
        if proc.returncode != 0:
            return op, f"exit status {proc.returncode}\n{tail(proc.stderr)}", {}
        times = [float(line) for line in proc.stdout.split()]
        metadata = {"iomatrix_suite": task.suite, "iomatrix_category": info["category"],
                    "iomatrix_bytes": info["bytes"], "iomatrix_io": "native",
                    "iomatrix_cache": cache, "iomatrix_profile": profile.name,
                    "iomatrix_round": task.round_index,
                    "iomatrix_native": " ".join(map(str, info["native"]))}
        parts.append((op, metadata, times[:profile.warmups], times[profile.warmups:]))
    native.write_part(output, parts)
    return None, None, {}


def _kill(proc: subprocess.Popen) -> None:
    """Kill a worker and whatever it started (a process pool, a shell's child)."""
    if hasattr(os, "killpg"):
        os.killpg(proc.pid, signal.SIGKILL)
    else:  # Windows: no process groups to signal
        proc.kill()
    proc.wait()


def _run_worker(cmd, env, timeout, cwd=None) -> tuple[str | None, str | None]:
    """Run one batch worker: (None, None) when it succeeded, else (op it was in, error tail).

    The worker prints "START <op>" before each op; each op gets ``timeout``
    seconds of its own. A thread reads those lines (portable, unlike select()
    on pipes). The working directory is the run's scratch directory, so even a
    relative path written by an op stays inside the run's own temporary directory.
    """
    state = {"op": None, "started": time.monotonic()}

    def follow(stream):
        for line in stream:
            if line.startswith(b"START "):
                state["op"] = line[6:].decode("utf-8", "replace").strip()
                state["started"] = time.monotonic()

    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=stderr, env=env,
                                stdin=subprocess.DEVNULL, cwd=cwd,
                                start_new_session=hasattr(os, "killpg"))
        reader = threading.Thread(target=follow, args=(proc.stdout,), daemon=True)
        reader.start()
        try:
            while True:
                remaining = state["started"] + timeout - time.monotonic()
                if remaining <= 0:
                    _kill(proc)
                    return state["op"], f"timed out after {timeout:g} s (--timeout)"
                try:
                    proc.wait(timeout=min(remaining, 0.5))
                    break
                except subprocess.TimeoutExpired:
                    continue
        except BaseException:
            _kill(proc)
            raise
        finally:
            reader.join(timeout=5)
            proc.stdout.close()
        if proc.returncode != 0:
            stderr.seek(0)
            err = stderr.read().decode("utf-8", "replace")
            reason = (f"killed by signal {-proc.returncode} ({signal.Signals(-proc.returncode).name})"
                      if proc.returncode < 0 else f"exit status {proc.returncode}")
            return state["op"], f"{reason}\n{tail(err)}"
    return None, None


def _merge_series(run, plan: SeriesPlan, profile: Profile, log):
    if plan.error is not None or not plan.ops or run.series_file(plan.series).exists():
        return
    parts = sorted(run.parts_dir(plan.series).glob("r*--*.json"))
    expected = {results_store.part_file_name(suite, r)
                for suite, op in plan.ops if op not in plan.failed_ops for r in range(profile.rounds)}
    missing = expected - {p.name for p in parts}
    if missing or not parts:
        plan.error = plan.error or f"{len(missing)} worker results missing; rerun to resume"
        return
    if plan.interp is None:
        native.merge_parts(parts, run.series_file(plan.series))
        _remove_parts(run, plan.series)
        return
    cmd = [plan.env.python, str(MERGER), str(run.series_file(plan.series))] + [str(p) for p in parts]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=plan.env.command_env(),
                          stdin=subprocess.DEVNULL, timeout=600)
    if proc.returncode != 0:
        plan.error = f"merging the results failed:\n{tail(proc.stderr or proc.stdout)}"
        log(f"iomatrix: {plan.series}: {plan.error}")
        return
    _remove_parts(run, plan.series)
    log(f"iomatrix: {plan.series}: wrote {run.series_file(plan.series)}")


def _remove_parts(run, series):
    """The parts of a merged series are in its file now; .parts/ goes when it is empty."""
    shutil.rmtree(run.parts_dir(series))
    try:
        run.parts_dir(series).parent.rmdir()
    except OSError:
        pass  # other series still have parts


def _record(manifest, plans):
    for plan in plans.values():
        if plan.interp is None:
            entry = manifest.setdefault("native", {})
            entry["status"] = "failed" if plan.error else "ok"
            entry["failed_ops"] = plan.failed_ops
            continue
        entry = manifest["interpreters"][plan.series]
        if plan.error is None and entry.get("status") == "ok" and not plan.ops:
            continue  # kept from an earlier session
        entry["skipped_ops"] = plan.skipped
        entry["failed_ops"] = plan.failed_ops
        if plan.error is not None:
            entry["status"], entry["error_tail"] = "failed", tail(plan.error)
        elif plan.ops and len(plan.failed_ops) == len(plan.ops):
            entry["status"] = "failed"
            entry["error_tail"] = tail(next(iter(plan.failed_ops.values())))
        else:
            entry["status"] = "ok" if not plan.failed_ops else "partial"
            entry["error_tail"] = None
        entry["results_file"] = plan.series + ".json" if plan.error is None else None


class Progress:
    """One line per (round, op) group: where the run is and how long it has left."""

    def __init__(self, total: int, log, rounds: int, verbose_labels: bool = False):
        self.total, self.finished, self.log = total, 0, log
        self.rounds = rounds
        self.verbose_labels = verbose_labels
        self.started = time.monotonic()
        self.current_group = None
        self.group_labels: list[str] = []

    def start(self, task: Task):
        group = (task.round_index, task.suite)
        if group != self.current_group:
            self.current_group = group
            self.log(f"[{self.finished}/{self.total} done, {self.eta()}] round "
                     f"{task.round_index + 1}/{self.rounds}: suite {task.suite}")
        if self.verbose_labels:
            self.log(f"    {task.series}")

    def done(self):
        self.finished += 1

    def skip(self):
        self.finished += 1

    def eta(self) -> str:
        if self.finished == 0:
            return "ETA ?"
        elapsed = time.monotonic() - self.started
        remaining = elapsed / self.finished * (self.total - self.finished)
        return f"{elapsed:.0f} s elapsed, ETA {remaining // 60:.0f}m{remaining % 60:02.0f}s"
