"""Agreement with a plain timer: the lutz2009 ops in a plain loop, beside the harness's ratios.

    nox -s crosscheck -- [--pythons A,B] [--run-dir DIR] [--calls 20] [--processes 15]

For two interpreters (default: 2.7 and the newest plain CPython), every lutz2009
op is timed by ``suites/_plain_timer.py``: a fresh process per (op,
interpreter), ``--calls`` calls in a loop, no pyperf, no warm-up, no other op
in the process. The processes are interleaved (op by op, the two interpreters
in a shuffled order, ``--processes`` times) so that both see the same phases of
a shared machine.

Two plain statistics come from the same processes, and the command prints both:

- the mean of the settled calls (the like-for-like one, which the agreement is judged
  on): per process, the calls after its warm-ups by the harness's rule under the untouched
  allocator (at least 3, more while a call is more than 10% faster than the one before, at
  most 12: ``settled_from``), those not preempted (the harness takes a preempted call
  again), averaged; the median over processes. This is the plain loop's figure for what an
  ordinary program sees: a program's time is the sum of its calls, so its cost per call is
  their mean, lucky and unlucky calls alike; and it is the statistic of the harness's side,
  whose value is the mean of the calls it timed after its warm-ups.
- the best call ("best of N", what a person with a stopwatch loop would report, and the
  statistic of the table in issue 42): per process the fastest unpreempted call, the median
  over processes. It is a lower bound: on an op whose calls vary (3.x's whole-file text read
  under glibc untouched pays about 1,400 page faults a call, whose cost varies call to call)
  it picks the lucky call, where a mean holds the typical one, so against the harness's
  means it reads the harness as too slow by that op's spread.

Every call of every process (wall and CPU time, page faults, involuntary switches) is kept
in the result (``--json`` and the stored crosscheck), so both statistics, and any other,
can be taken again from one measurement.

The harness's ratios come from a run directory (``--run-dir``), or from a run
this command makes (the two interpreters, lutz2009, ``--profile``, no A/A twin)
in a temporary results directory it names. The plain timer runs under the
conditions that run states in its manifest: the same allocator environment,
the same output state, the warm page cache, and the clock its values measured
(CPU time or wall time); the fixtures are made by the harness's own maker, so
files and sizes are the same.

Every allocator condition the run holds for both interpreters is checked (``--allocator
all``, the default): the run's own, and the main command's ``LABEL@default`` series, where
glibc's allocator is untouched as in an ordinary program; the plain timer then runs under
that condition too, one op per fresh process as the harness times it.

The result is stored in the run it checked, as a new file in ``RUN/crosscheck/``
(iomatrix.storing.crosschecks; ``--no-store``: not), so that the run's report can say how
far its harness stands from a plain loop under the untouched allocator; where it cannot be
stored (a read-only run) that is said before any timing (exit 2).

It prints, per op and condition, B/A by the plain timer and by the harness, and flags the ops
where the two differ by more than ``--threshold`` (default 25%, as
|log(plain / harness)| > log(1.25)). Exit status 0 when every op agrees, 1 when
some do not, 2 on bad input (unknown label, a run without both series, ...).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from iomatrix import cli, procs, stats
from iomatrix.interpreters import discovery
from iomatrix.measuring import bench, machine, runner, selection
from iomatrix.storing import contract, crosschecks, store
from iomatrix.paths import SUITES_DIR
from iomatrix.storing.profiles import PROFILES

SUITE = "lutz2009"
PLAIN_TIMER = SUITES_DIR / "_plain_timer.py"
# The harness's warm-up rule under glibc's untouched allocator (suites/harness.py:
# MIN_WARMUPS_DEFAULT_ALLOCATOR, MAX_WARMUPS_DEFAULT_ALLOCATOR, SETTLED_WITHIN; a test holds
# them equal): the calls before a process's settled ones.
MIN_WARMUPS, MAX_WARMUPS, SETTLED_WITHIN = 3, 12, 0.10
# Enough calls for settled ones after the most warm-ups the rule takes (2.7's whole-file read
# takes 5-8 in a fresh process: docs/experiments/2026-11-27-allocator-plain.md).
DEFAULT_CALLS = 20
# With 3 processes one that sat in a slow stretch for all its calls decided an op's median:
# 2.7's write_byLines_textMode came out 144 ms plain against 85-90 ms in 5 other processes.
# With 5, 3.12's faulting whole-file text read under glibc untouched decided it: its mean
# call differs from one fresh process to the next (2.8 to 4.9 ms, 1,401 faults each; what
# the kernel hands a process costs more or less to fault in), so the median of 5 moved
# 3.2-4.3 ms between sets and the op's plain/harness 0.96-1.38; with 15, 1.02 (2026-11-27,
# idle, the main command's run).
DEFAULT_PROCESSES = 15
DEFAULT_THRESHOLD = 0.25
BASELINE = "2.7"
PLAIN_TIMEOUT_SECONDS = 300


class CrosscheckError(cli.BadInput):
    """Bad input (exit 2), with a message that lists the valid choices."""


@dataclasses.dataclass
class Row:
    op: str
    plain: dict          # label -> seconds (median over processes of best of N)
    harness: dict        # label -> seconds (median of per-process means)
    # label -> seconds (median over processes of the mean of the settled calls: like for like)
    plain_mean: dict = dataclasses.field(default_factory=dict)

    def ratio(self, side: dict, a: str, b: str) -> float | None:
        if side.get(a) and side.get(b):
            return side[b] / side[a]
        return None

    def disagreement(self, a: str, b: str) -> float | None:
        """The plain loop's ratio by the mean of settled calls over the harness's (the
        statistic the harness's values are), or None when one is missing."""
        p, h = self.ratio(self.plain_mean, a, b), self.ratio(self.harness, a, b)
        return p / h if p and h else None

    def best_disagreement(self, a: str, b: str) -> float | None:
        """The plain loop's ratio by the best call over the harness's (shown, not judged)."""
        p, h = self.ratio(self.plain, a, b), self.ratio(self.harness, a, b)
        return p / h if p and h else None


# -- choosing the interpreters ---------------------------------------------------

def choose(interpreters: list[discovery.Interpreter], labels: list[str] | None):
    """The two interpreters (A = reference, B); an unknown label lists the valid ones."""
    usable = [i for i in interpreters if i.ok]
    valid = ", ".join(i.label for i in usable)
    if labels is None:
        newest = bench.newest_plain_cpython(usable)
        labels = [BASELINE, newest] if newest else [BASELINE]
    if len(labels) != 2 or labels[0] == labels[1]:
        raise CrosscheckError(f"--pythons takes two different labels, A,B; valid labels: {valid}")
    by_label = {i.label: i for i in usable}
    unknown = [label for label in labels if label not in by_label]
    if unknown:
        raise CrosscheckError(f"unknown interpreter label(s) {', '.join(unknown)}; "
                              f"valid labels: {valid}")
    return [by_label[label] for label in labels]


# -- the harness's side -------------------------------------------------------------

def series_name(label: str, allocator: str, run_allocator: str) -> str:
    """The series that holds ``label``'s values under ``allocator``: the run's own series for
    its first allocator, ``LABEL@ALLOCATOR`` for a further one (the main command times the
    study's ops again under glibc's untouched allocator as ``LABEL@default``)."""
    return label if allocator == run_allocator else f"{label}@{allocator}"


def run_allocators(run_dir: Path, labels: list[str]) -> list[str]:
    """The allocator conditions ``run_dir`` holds for both labels: its own, then each further
    one whose series exist for both (the order the main command times them in)."""
    manifest = store.Run(run_dir.parent, run_dir.name).read_manifest()
    own = manifest.get("allocator")
    further = [a for a in contract.ALLOCATORS if a != own
               and all(store.stored_form(run_dir / f"{series_name(lb, a, own)}.json").exists()
                       for lb in labels)]
    return [own, *further]


def run_conditions(run_dir: Path, labels: list[str], allocator: str | None = None) -> dict:
    """The stated conditions of a run, checked to be ones the plain timer can reproduce;
    under ``allocator`` (the run's own when None), with the series that hold it."""
    if not run_dir.is_dir():
        raise CrosscheckError(f"--run-dir {run_dir}: no such run directory")
    if not os.path.lexists(run_dir / store.MANIFEST):
        raise CrosscheckError(f"--run-dir {run_dir}: no {store.MANIFEST}; not a run")
    # checked against the schema; a run directory that is a symlink is refused (exit 2)
    manifest = store.Run(run_dir.parent, run_dir.name).read_manifest()
    own = manifest.get("allocator")
    allocator = allocator or own
    series = {label: series_name(label, allocator, own) for label in labels}
    missing = [series[label] for label in labels
               if not store.Run(run_dir.parent, run_dir.name).series_file(series[label]).exists()]
    if missing:
        have = sorted(store.series_of(p)
                      for p in store.Run(run_dir.parent, run_dir.name).series_files())
        raise CrosscheckError(f"--run-dir {run_dir}: no series {', '.join(missing)}; "
                              f"the run has: {', '.join(have) or 'none'}")
    conditions = {key: manifest.get(key) for key in ("output", "cache")}
    conditions["allocator"] = allocator
    conditions["series"] = series
    # A run made before workers were pinned ran them on any CPU: so does the plain timer.
    conditions["affinity"] = manifest.get("affinity") if manifest.get("affinity") in \
        runner.AFFINITIES else "all"
    if conditions["allocator"] not in contract.ALLOCATORS or \
            conditions["output"] not in contract.OUTPUT_STATES:
        raise CrosscheckError(
            f"--run-dir {run_dir}: the run does not state its allocator and output state "
            f"(allocator {conditions['allocator']!r}, output {conditions['output']!r}): it was "
            "measured in a mix of conditions that a plain timer cannot reproduce; make a new run")
    if conditions["cache"] != "warm":
        raise CrosscheckError(f"--run-dir {run_dir}: cache {conditions['cache']!r}; the plain "
                              "timer reproduces the warm page cache only")
    return conditions


def harness_times(run_dir: Path, series: str) -> tuple[dict, set, set]:
    """({op: median of per-process means}, the clocks its values measured, the output
    states its write ops recorded) of one series."""
    by_op: dict = {}
    clocks, outputs = set(), set()
    for row in store.load_series(store.stored_form(run_dir / f"{series}.json")):
        if row["op"].endswith(selection.CONTROL_SUFFIX):
            continue    # a control (the loop over data in memory) does no I/O to cross-check
        if row["suite"] == SUITE and row["io"] == "c":
            by_op.setdefault(row["op"], []).append(row["mean"])
            # "wall (no getrusage ...)" is a wall clock too
            clocks.add("cpu" if row["clock"] == "cpu" else "wall")
            if row["op"].startswith("write_"):
                outputs.add(row["output"])
    return {op: stats.median(means) for op, means in by_op.items()}, clocks, outputs


def make_run(interps, profile: str, results_dir: Path | None, log) -> Path:
    """A small matrix run of the two interpreters (in a new temporary results directory
    unless one is given)."""
    results_dir = results_dir or Path(tempfile.mkdtemp(prefix="iomatrix-crosscheck-"))
    run_id = store.default_run_id()
    log(f"crosscheck: making a {profile} run of {', '.join(i.label for i in interps)} "
        f"in {results_dir / run_id}")
    manifest = runner.run_matrix(interps, suites=[SUITE], profile=PROFILES[profile],
                                 results_dir=results_dir, run_id=run_id, log=log)
    failed = bench.failures(manifest, [i.label for i in interps])
    if failed:  # nothing to compare with: exit 2, one line, never exit 1 (a "disagreement")
        raise CrosscheckError(f"the harness run did not complete: {', '.join(failed)} "
                              f"(see {results_dir / run_id / store.MANIFEST})")
    return results_dir / run_id


# -- the plain timer's side ---------------------------------------------------------------

def plain_command(interp, op: str, fixtures: Path, scratch: Path, calls: int,
                  conditions: dict) -> list[str]:
    return [interp.executable, str(PLAIN_TIMER), "--suite", SUITE, "--op", op,
            "--fixtures", str(fixtures), "--scratch", str(scratch), "--calls", str(calls),
            "--output-state", conditions["output"], "--allocator", conditions["allocator"]]


def plain_environment(conditions: dict) -> dict:
    """The worker's environment: no PYTHONPATH/PYTHONHOME leaking in, the run's allocator."""
    env = dict(os.environ)
    for key in ("PYTHONPATH", "PYTHONHOME"):
        env.pop(key, None)
    env.update(machine.allocator_environment(conditions["allocator"]))
    return env


def time_plain(interp, op: str, fixtures: Path, scratch: Path, calls: int,
               conditions: dict) -> dict:
    """One fresh process: the JSON line _plain_timer.py prints."""
    cmd = plain_command(interp, op, fixtures, scratch, calls, conditions)
    try:
        proc = procs.run(cmd, timeout=PLAIN_TIMEOUT_SECONDS, env=plain_environment(conditions),
                         cwd=str(scratch), cpus=machine.timing_cpus(conditions["affinity"])[0])
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{interp.label} {op}: the plain timer took more than "
                           f"{PLAIN_TIMEOUT_SECONDS} s")
    if proc.returncode != 0:
        raise RuntimeError(f"{interp.label} {op}: the plain timer failed "
                           f"({procs.describe_exit(proc.returncode)}): "
                           f"{procs.tail(proc.stderr or proc.stdout).strip()}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    if result["allocator"] != conditions["allocator"]:
        raise RuntimeError(f"{interp.label} {op}: allocator {result['allocator']!r}, "
                           f"not the run's {conditions['allocator']!r}")
    return result


def best_call(result: dict, conditions: dict) -> float:
    """The best call of one process, by the run's clock, among the calls that were not
    preempted (the harness's condition: it takes a preempted call again), or of all calls
    when every one was."""
    times = result[conditions["clock"]]
    quiet = [t for t, switches in zip(times, result["nivcsw"]) if switches == 0]
    return min(quiet or times)


def settled_from(times: list) -> int:
    """How many of a process's first calls are warm-ups by the harness's rule under the
    untouched allocator (harness.warm_until_settled): at least MIN_WARMUPS, more while the
    newest was more than SETTLED_WITHIN faster than the one before, at most MAX_WARMUPS.
    Used under every condition: a call that is still getting faster is no program's
    steady cost under any allocator."""
    count = 0
    while count < min(MAX_WARMUPS, len(times)) and (
            count < MIN_WARMUPS or times[count - 1] < times[count - 2] * (1 - SETTLED_WITHIN)):
        count += 1
    return count


def settled_mean(result: dict, conditions: dict) -> float:
    """The mean of one process's settled calls (after ``settled_from``'s warm-ups), by the
    run's clock, among those not preempted (the harness takes a preempted call again), or
    of all settled calls when every one was; the last call when none settled (fewer calls
    than the warm-ups took)."""
    times = result[conditions["clock"]]
    start = settled_from(times)
    settled = list(zip(times[start:], result["nivcsw"][start:]))
    quiet = [t for t, switches in settled if switches == 0]
    chosen = quiet or [t for t, _ in settled] or times[-1:]
    return sum(chosen) / len(chosen)


def plain_times(interps, ops: list[str], calls: int, processes: int, conditions: dict,
                work: Path, seed: int, log) -> tuple[dict, dict, list]:
    """({label: {op: median over processes of the best call}}, {label: {op: median over
    processes of the mean of the settled calls}}, every process's result)."""
    fixtures, scratch = work / "fixtures", work / "scratch"
    runner.run_harness("--make-fixtures", SUITE, "quick", str(fixtures), timeout=600)
    scratch.mkdir()
    rng = random.Random(seed)
    best: dict = {i.label: {} for i in interps}
    mean: dict = {i.label: {} for i in interps}
    raw = []
    for index in range(processes):
        order = list(ops)
        rng.shuffle(order)
        for op in order:
            pair = list(interps)
            rng.shuffle(pair)
            for interp in pair:
                result = time_plain(interp, op, fixtures, scratch, calls, conditions)
                result.update(label=interp.label, process=index,
                              warmups=settled_from(result[conditions["clock"]]))
                raw.append(result)
                best[interp.label].setdefault(op, []).append(best_call(result, conditions))
                mean[interp.label].setdefault(op, []).append(settled_mean(result, conditions))
        log(f"crosscheck: plain timer, {index + 1}/{processes} processes per op done")

    def medians(side):
        return {label: {op: stats.median(v) for op, v in by_op.items()}
                for label, by_op in side.items()}
    return medians(best), medians(mean), raw


# -- the comparison ------------------------------------------------------------------

def compare(interps, run_dir: Path, calls: int, processes: int, threshold: float,
            seed: int, work_dir: Path | None = None, log=print,
            allocator: str | None = None) -> dict:
    """Time the plain side and read the harness side; the rows and what they ran under
    (under ``allocator``: the run's own condition when None)."""
    labels = [i.label for i in interps]
    conditions = run_conditions(run_dir, labels, allocator)
    harness, clocks, outputs = {}, set(), set()
    for label in labels:
        harness[label], seen, written = harness_times(run_dir, conditions["series"][label])
        clocks |= seen
        outputs |= written
    if outputs - {conditions["output"]}:
        # Before the output state was applied to lutz2009, its writes recorded none and
        # wrote over the previous call's file whatever the manifest said.
        raise CrosscheckError(f"--run-dir {run_dir}: its writes were not made in the stated "
                              f"output state {conditions['output']!r} (recorded: "
                              f"{', '.join(sorted(map(str, outputs)))}); make a new run")
    if len(clocks) != 1:
        raise CrosscheckError(f"--run-dir {run_dir}: its values measure {' and '.join(clocks)} "
                              "time; the plain timer needs one clock")
    conditions["clock"] = clocks.pop()
    ops = sorted(set(harness[labels[0]]) & set(harness[labels[1]]))
    if not ops:
        raise CrosscheckError(f"--run-dir {run_dir}: no {SUITE} op in both series")
    work = Path(tempfile.mkdtemp(prefix="iomatrix-crosscheck-work-", dir=work_dir))
    try:
        plain, plain_mean, raw = plain_times(interps, ops, calls, processes, conditions, work,
                                             seed, log)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = [Row(op, {lb: plain[lb].get(op) for lb in labels},
                {lb: harness[lb].get(op) for lb in labels},
                {lb: plain_mean[lb].get(op) for lb in labels}) for op in ops]
    return {"labels": labels, "run_dir": str(run_dir), "conditions": conditions, "calls": calls,
            "processes": processes, "threshold": threshold, "seed": seed, "rows": rows,
            "raw": raw}


def flagged(result: dict) -> list[str]:
    a, b = result["labels"]
    limit = math.log1p(result["threshold"])
    return [row.op for row in result["rows"]
            if row.disagreement(a, b) is None or abs(math.log(row.disagreement(a, b))) > limit]


def format_table(result: dict) -> str:
    """Per op: the plain loop's seconds and B/A by the mean of settled calls (the
    like-for-like statistic, which ``plain/harness`` and the flags are judged on), its B/A
    by the best call (shown, as issue 42's table took it), the harness's B/A."""
    a, b = result["labels"]
    c = result["conditions"]
    lines = [f"crosscheck: {b} / {a}, lutz2009, allocator {c['allocator']}, output "
             f"{c['output']}, cache {c['cache']}, clock {c['clock']}",
             f"  plain: {result['calls']} calls in each of {result['processes']} fresh "
             "processes; mean = the mean of each process's settled calls (after the "
             "harness's warm-up rule), best = each process's best call; the median over "
             "processes",
             f"  harness: median of per-process means (each the mean of the calls it timed "
             f"after its warm-ups), "
             f"{result['run_dir']}",
             "  plain/harness is judged like for like (mean against mean); best/harness is "
             "shown: the best call is a lower bound that picks a lucky call where calls vary",
             "",
             f"{'op':40} {'mean ' + a:>11} {'mean ' + b:>11} {'mean':>7} {'best':>7} "
             f"{'harness':>8} {'plain/harness':>14} {'best/harness':>13}"]
    bad = set(flagged(result))
    for row in result["rows"]:
        p, best, h = row.ratio(row.plain_mean, a, b), row.ratio(row.plain, a, b), \
            row.ratio(row.harness, a, b)
        mark = "  DIFFERS" if row.op in bad else ""
        lines.append(f"{row.op:40} {_ms(row.plain_mean.get(a)):>11} "
                     f"{_ms(row.plain_mean.get(b)):>11} {_num(p):>7} {_num(best):>7} "
                     f"{_num(h):>8} {_num(row.disagreement(a, b)):>14} "
                     f"{_num(row.best_disagreement(a, b)):>13}{mark}")
    for name, judged in (("mean", True), ("best", False)):
        gaps = [g for g in (row.disagreement(a, b) if judged else row.best_disagreement(a, b)
                            for row in result["rows"]) if g]
        if gaps:
            column = f"{_num(stats.geometric_mean(gaps)):>14} {'':>13}" if judged else \
                f"{'':>14} {_num(stats.geometric_mean(gaps)):>13}"
            lines.append(f"{'geometric mean (' + name + ')':40} {'':>11} {'':>11} {'':>7} "
                         f"{'':>7} {'':>8} {column}")
    limit = int(round(result["threshold"] * 100))
    lines.append("")
    lines.append(f"{len(bad)} of {len(result['rows'])} ops differ by more than {limit}% "
                 "(plain mean against the harness)"
                 + (f": {', '.join(sorted(bad))}" if bad else ""))
    return "\n".join(lines)


def _ms(seconds) -> str:
    return "-" if not seconds else f"{seconds * 1e3:.2f} ms"


def _num(value) -> str:
    return "-" if not value else f"{value:.2f}"


def as_json(result: dict) -> dict:
    """``--json``: per op the plain loop's best call (``plain_seconds``, ``plain_ratio``) and
    mean of settled calls (``plain_mean_seconds``, ``plain_mean_ratio``), the harness's, and
    ``plain_over_harness`` (mean against the harness: the one judged) beside
    ``best_over_harness``; ``raw``: every process's calls."""
    a, b = result["labels"]
    out = {k: v for k, v in result.items() if k != "rows"}
    out["rows"] = [{"op": r.op, "plain_seconds": r.plain, "plain_mean_seconds": r.plain_mean,
                    "harness_seconds": r.harness,
                    "plain_ratio": r.ratio(r.plain, a, b),
                    "plain_mean_ratio": r.ratio(r.plain_mean, a, b),
                    "harness_ratio": r.ratio(r.harness, a, b),
                    "plain_over_harness": r.disagreement(a, b),
                    "best_over_harness": r.best_disagreement(a, b)} for r in result["rows"]]
    out["differ"] = flagged(result)
    return out


# What the stored crosscheck keeps of each plain process (schema: CrosscheckProcess).
PROCESS_KEYS = ("op", "label", "process", "warmups", "wall", "cpu", "minflt", "nivcsw")


def stored_process(result: dict) -> dict:
    """One plain process as the stored crosscheck keeps it: its times to the nanosecond
    (the clocks' resolution at best; it keeps the file small: crosschecks.MAX_CALLS_PER_OP)."""
    kept = {key: result[key] for key in PROCESS_KEYS}
    for clock in ("wall", "cpu"):
        kept[clock] = [None if t is None else round(t, 9) for t in kept[clock]]
    return kept


def stored_document(results: list[dict]) -> dict:
    """What ``RUN/crosscheck/`` keeps of one crosscheck (storing.crosschecks): the figures
    per condition and op, and every call of every plain process (its times, faults and
    involuntary switches, and the warm-ups the rule counted), so that either statistic can
    be taken again from the stored file; no path of this machine, no interpreter's
    environment (``--json`` has the rest)."""
    first = results[0]
    conditions = []
    for result in results:
        c = result["conditions"]
        conditions.append({
            **{key: c[key] for key in ("allocator", "output", "cache", "clock", "affinity",
                                        "series")},
            "rows": [{"op": r.op, "plain_seconds": dict(r.plain),
                      "plain_mean_seconds": dict(r.plain_mean),
                      "harness_seconds": dict(r.harness)} for r in result["rows"]],
            "differ": flagged(result),
            "plain_processes": [stored_process(p) for p in result["raw"]]})
    return {"iomatrix_crosscheck_version": crosschecks.VERSION, "made": crosschecks.made_now(),
            "labels": list(first["labels"]), "calls": first["calls"],
            "processes": first["processes"], "threshold": first["threshold"],
            "seed": first["seed"] if 0 <= first["seed"] <= 10 ** 15 else None,
            "conditions": conditions}


def parser() -> cli.Parser:
    p = cli.Parser(prog="nox -s crosscheck --",
                   description="Time the lutz2009 ops with a plain loop and compare the ratios "
                               "with the harness's.")
    p.add_argument("--pythons", type=cli.label_list, default=None,
                   help="two labels A,B: B/A is compared (default: 2.7 and the newest CPython)")
    p.add_argument("--run-dir", type=Path, default=None,
                   help="a harness run holding both series (default: make a small run)")
    p.add_argument("--profile", default="quick", choices=("smoke", "quick"),
                   help="profile of the run made when --run-dir is not given")
    p.add_argument("--results-dir", type=cli.results_dir, default=None,
                   help="where that run goes (default: a new temporary directory)")
    p.add_argument("--calls", type=cli.positive_int, default=DEFAULT_CALLS,
                   help="calls per plain process: warm-ups by the harness's rule, then "
                        "settled calls, whose mean is compared (default: %(default)s)")
    p.add_argument("--processes", type=cli.positive_int, default=DEFAULT_PROCESSES,
                   help="fresh processes per op and interpreter (default: %(default)s)")
    p.add_argument("--threshold", type=cli.threshold, default=DEFAULT_THRESHOLD,
                   help="flag ops whose two ratios differ by more than this (default: 0.25)")
    p.add_argument("--seed", type=int, default=None, help="seed of the interleaved order")
    p.add_argument("--allocator", default="all", choices=("all", *contract.ALLOCATORS),
                   help="the allocator condition to check: all (default: the run's own and "
                        "each further one it holds for both interpreters, such as the main "
                        "command's LABEL@default series, glibc untouched), or one of them")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")
    p.add_argument("--no-store", action="store_true",
                   help="do not store the result in the run's crosscheck/ directory (by "
                        "default it is, for the run's report)")
    return p


@cli.main_guard
def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if not args.no_store and args.calls * args.processes > crosschecks.MAX_CALLS_PER_OP:
        raise CrosscheckError(f"--calls {args.calls} x --processes {args.processes}: a "
                              f"crosscheck stored in the run keeps every call, at most "
                              f"{crosschecks.MAX_CALLS_PER_OP} per op and interpreter; "
                              "pass fewer, or --no-store (and --json to keep them)")
    if args.json is not None:
        store.check_output(args.json, "--json")  # before the timing, not after it
    try:
        interps = choose(discovery.discover(), args.pythons)
    except discovery.DiscoveryError as exc:
        raise CrosscheckError(str(exc))
    for interp in interps:
        print(cli.terminal_text(f"crosscheck: {interp.label}: {interp.implementation} "
                                f"{interp.version} ({interp.executable})"))
    if args.run_dir is not None and not args.no_store and args.run_dir.is_dir() and \
            (args.run_dir / store.MANIFEST).is_file():
        problem = crosschecks.directory_problem(args.run_dir)
        if problem:  # before the timing, not after it
            raise CrosscheckError(f"--run-dir {args.run_dir}: cannot store the crosscheck in "
                                  f"the run ({problem}); pass --no-store to time without it")
    run_dir = args.run_dir or make_run(interps, args.profile, args.results_dir, print)
    labels = [i.label for i in interps]
    held = run_allocators(run_dir, labels) if run_dir.is_dir() and \
        (run_dir / store.MANIFEST).is_file() else [None]
    if args.allocator == "all" or held == [None]:  # no readable run: compare names why
        chosen = held
    elif args.allocator in held:
        chosen = [args.allocator]
    else:
        raise CrosscheckError(f"--allocator {args.allocator}: the run holds no series of both "
                              f"interpreters under it; it holds: "
                              f"{', '.join(a for a in held if a) or 'none'}")
    seed = random.SystemRandom().randrange(2**32) if args.seed is None else args.seed
    results = [compare(interps, run_dir, args.calls, args.processes, args.threshold, seed,
                       allocator=allocator) for allocator in chosen]
    print(cli.terminal_text("\n\n".join(format_table(result) for result in results)))
    if args.json:
        document = as_json(results[0]) if len(results) == 1 else \
            {"conditions": [as_json(result) for result in results]}
        store.write_output(args.json, json.dumps(document, indent=2) + "\n", "--json")
    if not args.no_store:
        try:
            stored = crosschecks.write(run_dir, stored_document(results))
        except OSError as exc:  # checked before the timing; a disk that filled up since
            raise RuntimeError(f"the crosscheck could not be stored in {run_dir}: "
                               f"{exc.strerror or exc}") from None
        print(cli.terminal_text(f"crosscheck: stored in {stored}"))
    return 1 if any(flagged(result) for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
