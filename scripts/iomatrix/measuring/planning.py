"""What a run still has to do: its tasks, the parts on disk, and each series' status.

A run's state is its files: a part ``.parts/<series>/r003--lutz2009.json`` holds
one batch (one worker process, one round of one suite); a further worker of the same
round and suite (a redo of an incomplete batch, or the next one-op worker) writes
``r003--lutz2009--2.json``, ``--3`` and so on. Everything here is derived from those files
on every call, never remembered, so a resumed or damaged run is planned from what
is really there.
"""
from __future__ import annotations

import dataclasses
import os
import random
from pathlib import Path

from iomatrix.interpreters import environments
from iomatrix.storing import store
from iomatrix.interpreters.discovery import Interpreter
from iomatrix.storing.profiles import Profile


@dataclasses.dataclass
class Task:
    """One worker process: the ops of one suite, for one series, in one round."""
    series: str
    io_stack: str
    suite: str
    round_index: int
    ops: list = dataclasses.field(default_factory=list)   # empty: every op the part lacks
    one_op_per_process: bool = False   # a twin series, or any under the untouched allocator


@dataclasses.dataclass
class SeriesPlan:
    series: str
    interp: Interpreter | None  # None for the native reference
    io_stack: str
    env: environments.BenchEnvironment | None = None
    ops: list = dataclasses.field(default_factory=list)       # [(suite, op)]
    op_info: dict = dataclasses.field(default_factory=dict)   # op -> row of --list-ops
    skipped: dict = dataclasses.field(default_factory=dict)   # op -> reason
    failed_ops: dict = dataclasses.field(default_factory=dict)  # op -> error tail
    error: str | None = None
    tool: str | None = None                                   # the native reference program
    succeeded: bool = False                                   # one worker has succeeded
    hard_failures: int = 0                                    # crashes and timeouts
    kept: bool = False                                        # merged by an earlier session
    # A further allocator condition's series ("3.13@default", RunSpec.allocator_twins): its
    # workers get this allocator and time one op each (glibc's thresholds move with what a
    # process freed, so each op's history is its own untimed calls only).
    allocator: str | None = None
    rounds: int | None = None                                 # None: the profile's rounds
    # An ablation's series ("3.14.7~buffering=4096", measuring.knobs): the series it times
    # again with one knob set, and (knob, value); its workers get --knob.
    ablation_of: str | None = None
    knob: tuple | None = None
    # pyperf's metadata of the interpreter and the machine (harness.py --system-metadata),
    # collected once per interpreter and session and handed to each of its workers.
    system_metadata: dict | None = None

    def planned_rounds(self, profile: Profile) -> int:
        return self.rounds if self.rounds is not None else profile.rounds


def parts_on_disk(run, series) -> dict:
    """{(suite, round): {ops the existing parts of that batch hold}}."""
    found: dict = {}
    directory = run.parts_dir(series)
    if not directory.is_dir() or directory.is_symlink():
        return found
    for part in directory.glob("r*--*.json"):
        key = part_key(part.name)
        if key is None:
            continue
        try:
            document = store.read_part(run, series, part)   # this run's, this series'
            names = {op_name(document, b) for b in document["benchmarks"]}
        except (store.ResultFileError, KeyError, TypeError):
            continue  # an unreadable part is as good as missing: its ops are redone
        found.setdefault(key, set()).update(names)
    return found


def op_name(document: dict, benchmark: dict) -> str:
    """The op of one benchmark of a pyperf file. A file of one benchmark (a suite with one
    chosen op, a redo of one op) keeps all its metadata at the top: pyperf moves what
    every benchmark shares there."""
    return {**(document.get("metadata") or {}), **(benchmark.get("metadata") or {})}["name"]


def part_key(name: str):
    """(suite, round) of a part file "r003--lutz2009.json" or a redo "r003--lutz2009--2.json"."""
    stem = name[:-len(".json")]
    pieces = stem.split("--")
    if len(pieces) not in (2, 3) or not pieces[0].startswith("r") or not pieces[0][1:].isdigit():
        return None
    return pieces[1], int(pieces[0][1:])


# The allocator condition under which a worker times one op only: glibc's untouched
# thresholds move with what the process freed, so the harness refuses a second op in a
# process (suites/harness.py, start_timing).
ONE_OP_ALLOCATORS = frozenset({"default"})


def times_one_op_per_process(plan: SeriesPlan, allocator: str) -> bool:
    """Whether plan's workers time one op each: a further allocator condition's series
    (a twin), or any series when the run's own allocator is the untouched one."""
    return plan.allocator is not None or allocator in ONE_OP_ALLOCATORS


def schedule(run, plans, profile, seed, allocator: str = "steady") -> list[Task]:
    """Rounds x suites (shuffled) x series (shuffled): one worker process per task.

    A batch whose part is missing runs whole; one whose part lacks some ops (they
    failed in an earlier session) runs those ops again.
    """
    rng = random.Random(seed)
    suites = sorted({suite for plan in plans.values() for suite, _ in plan.ops})
    runnable = [p for p in plans.values() if p.error is None and p.ops and not p.kept]
    done = {p.series: parts_on_disk(run, p.series) for p in runnable}
    tasks = []
    for round_index in range(max([profile.rounds, *(p.planned_rounds(profile)
                                                    for p in runnable)])):
        order = list(suites)
        rng.shuffle(order)
        for suite in order:
            series_order = [p for p in runnable if round_index < p.planned_rounds(profile)]
            rng.shuffle(series_order)
            # One-op tasks (twin series, the untouched allocator) come after the round's
            # batches, grouped by op in lockstep_groups
            series_order.sort(key=lambda p: times_one_op_per_process(p, allocator))
            for plan in series_order:
                wanted = {op for s, op in plan.ops if s == suite}
                if not wanted:
                    continue
                have = done[plan.series].get((suite, round_index), set())
                missing = wanted - have
                if missing and times_one_op_per_process(plan, allocator):
                    tasks += [Task(plan.series, plan.io_stack, suite, round_index, [op], True)
                              for op in sorted(missing)]
                elif missing:
                    tasks.append(Task(plan.series, plan.io_stack, suite, round_index,
                                      sorted(missing) if have else []))
    return tasks


def round_order(ops, seed: int, round_index: int, suite: str) -> list[str]:
    """``ops`` in the order of one round of one suite, shuffled per round and suite.

    Each op's place comes from a random key of its own name, so any subset of the
    suite's ops (an interpreter that lacks some, a redo of the failed ones) is in the
    same relative order: a lockstep round can step every interpreter through it.
    """
    def key(op):
        return random.Random(f"{seed}-{round_index}-{suite}-{op}").random(), op
    return sorted(set(ops), key=key)


def batch_ops(plan: SeriesPlan, task: Task, seed: int) -> list[str]:
    """The ops of one batch, in the round's order (``round_order``), so every interpreter
    meets each op at the same position of its batch."""
    ops = round_order((op for suite, op in plan.ops if suite == task.suite), seed,
                      task.round_index, task.suite)
    wanted = set(task.ops) if task.ops else set(ops)
    return [op for op in ops if op in wanted and op not in plan.failed_ops]


def lockstep_groups(tasks: list[Task], seed: int = 0) -> list[list[Task]]:
    """The tasks of one (round, suite) as the workers of a lockstep round; the one-op tasks
    of twin series grouped by op, in the round's order of ops (``round_order``), so every
    twin series times an op in lockstep with the others."""
    def key(task):
        return task.round_index, task.suite, task.one_op_per_process
    groups: list[list[Task]] = []
    for task in tasks:
        if groups and key(groups[-1][0]) == key(task):
            groups[-1].append(task)
        else:
            groups.append([task])
    split = []
    for group in groups:
        if not group[0].one_op_per_process:
            split.append(group)
            continue
        by_op: dict = {}
        for task in group:
            by_op.setdefault(task.ops[0], []).append(task)
        first = group[0]
        split += [by_op[op] for op in round_order(by_op, seed, first.round_index, first.suite)]
    return split


def count_existing_parts(run, plans) -> int:
    return sum(1 for plan in plans.values() if run.parts_dir(plan.series).is_dir()
               for _ in run.parts_dir(plan.series).glob("r*--*.json"))


def part_for(run, task: Task, reserved: set = frozenset()) -> Path:
    """Where a batch's result goes: its part, or a numbered redo beside an incomplete one
    (or beside one that a batch still running will write: ``reserved``)."""
    part = run.part_file(task.series, task.suite, task.round_index)
    attempt = 2
    while os.path.lexists(part) or part in reserved:
        part = part.with_name(f"r{task.round_index:03d}--{task.suite}--{attempt}.json")
        attempt += 1
    return part


def missing_processes(run, plan: SeriesPlan, profile: Profile) -> dict:
    """{op: number of planned processes with no result} for a series still in parts."""
    have = parts_on_disk(run, plan.series)
    missing = {}
    for suite, op in plan.ops:
        absent = sum(1 for r in range(plan.planned_rounds(profile))
                     if op not in have.get((suite, r), set()))
        if absent:
            missing[op] = absent
    return missing


def processes_in_file(path: Path) -> dict:
    """{op: processes} of a merged series file; {} when it cannot be read."""
    counts: dict = {}
    try:
        for row in store.load_series(path):
            counts[row["op"]] = counts.get(row["op"], 0) + 1
    except store.ResultFileError:
        return {}
    return counts


def series_status(run, plan: SeriesPlan, planned: list, profile: Profile) -> tuple[str, dict]:
    """(status, missing) of a series, derived from its files, never carried over.

    ok: its file exists, parses and holds every planned op with the planned number
    of processes. incomplete: some are missing (the next session redoes them).
    """
    rounds = plan.planned_rounds(profile)
    if os.path.lexists(run.series_file(plan.series)):
        have = processes_in_file(run.series_file(plan.series))
        missing = {op: rounds - have.get(op, 0) for op in planned
                   if have.get(op, 0) < rounds}
        if not have:
            return "unreadable", {}
        return ("ok" if not missing else "incomplete"), missing
    if plan.error is not None and not plan.succeeded:
        return "failed", {}
    missing = missing_processes(run, plan, profile) if plan.ops else {}
    if plan.ops and len(missing) == len(plan.ops) and \
            all(n == rounds for n in missing.values()):
        return ("failed" if plan.error or plan.failed_ops else "not run"), missing
    return "incomplete", missing


# Sources whose builds carry a distribution's own flags (as analysis.DISTRIBUTION_SOURCES).
DISTRIBUTION_SOURCES = ("debian", "system")


def lineage_labels(interpreters: list[Interpreter]) -> set[str]:
    """The labels of the release lineage, chosen as the report chooses it (analysis.lineage,
    which needs pandas: the bench side runs on nox's own Python without it): plain CPython
    builds (not free-threaded, not a distribution's, not the A/A twin), per minor version
    the newest patch release built by the recipe most of them share. 3.15's frame pointers
    are CPython's own default (gh-149202), not its builder's, so a "-fp" from 3.15 on does
    not count."""
    def recipe(interp):
        parts = (interp.recipe or "").split("-")
        if interp.version_info[:2] >= (3, 15):
            parts = [p for p in parts if p != "fp"]
        return "-".join(parts) or None
    plain = [i for i in interpreters if i.ok and i.implementation == "cpython"
             and not i.free_threaded and i.source not in (*DISTRIBUTION_SOURCES, "aa")]
    recipes = [recipe(i) for i in plain if recipe(i)]
    common = max(dict.fromkeys(recipes), key=recipes.count) if recipes else None
    newest: dict = {}
    for interp in plain:
        if recipe(interp) != common:
            continue
        minor = interp.version_info[:2]
        if minor not in newest or interp.version_info > newest[minor].version_info:
            newest[minor] = interp
    return {interp.label for interp in newest.values()}
