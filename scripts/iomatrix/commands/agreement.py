"""The agreement of stored runs, computed: each run's cells, what the runs share, the spread.

Each run named is read and analysed exactly as its report is (``load``: its cells, their
verdicts and its classified findings, a ``RunView``); ``agree`` puts the runs side by side
on the cells every one has (``Agreement``: the conditions that differ, what is left out,
the spread of each cell's ratio, each run's A/A twin), and ``replications`` says how one
run's firm findings fare in another. The text and the JSON are agree.py's, which
re-exports these names.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import sys
from pathlib import Path

from iomatrix import cli, stats
from iomatrix.analysing import analysis, comparisons, pooling
from iomatrix.measuring import phase
from iomatrix.reporting import allocator_section
from iomatrix.storing import store
from iomatrix.reporting.markdown import code, md, names

MOVED_MOST = 5            # cells listed as the ones that moved most between runs
SPREAD_PERCENTILE = 90

# Run-level conditions an op is timed under (README "How it measures"): runs that differ in
# one of them measure that difference as well as the noise.
CONDITION_KEYS = ("profile", "allocator", "clock", "output", "cache", "affinity",
                  "timing_cpus", "values", "host")


@dataclasses.dataclass(frozen=True, order=True)
class Cell:
    """One ratio of a report's release-step table.

    ``condition`` is empty while a run holds one set of conditions; when a run carries
    more than one allocator condition per op (issue 28) it names the condition, so each
    condition's cells are compared only with the same condition's cells of other runs.
    """
    op: str
    a: str
    b: str
    condition: str = ""

    @property
    def step(self) -> str:
        step = f"{self.a} → {self.b}"
        return f"{step} ({self.condition})" if self.condition else step


@dataclasses.dataclass
class RunView:
    """One run as its report sees it."""
    name: str                         # how the tables head this run's column
    run: store.Run
    analysis: comparisons.Analysis
    cells: dict                       # Cell -> stats.Comparison
    verdicts: dict                    # Cell -> "slower" | "faster" | "same"
    classified: dict = dataclasses.field(default_factory=dict)  # Cell -> its Finding

    @property
    def boot(self) -> str | None:
        return self.manifest.get("boot_id")

    @property
    def manifest(self) -> dict:
        return self.analysis.data.manifest


@dataclasses.dataclass
class AATwin:
    twin: str                         # the twin series, e.g. 3.15-aa
    of: str                           # the series it repeats
    flagged: list                     # ops flagged significant
    ops: int
    untested: int                     # ops with too few processes for a verdict
    geometric_mean: float


@dataclasses.dataclass
class Agreement:
    runs: list                        # RunView, in the order given
    threshold: float
    differences: list                 # conditions that differ: "allocator (`steady` → `fresh`)"
    left_out: list                    # sentences naming what not every run has
    cells: list                       # the shared cells, sorted
    spreads: dict                     # Cell -> [|log(r_i / r_j)| for each pair of runs]
    aa: dict                          # run name -> [AATwin]
    # Does a pool of the other runs predict a run? (pooling.leave_one_out: each run left out
    # in turn; leave_one_boot_out: every run of one boot left out; leave_one_cpu_out: every
    # run of one CPU kind). Empty under three runs (cpu_out: under two runs of other kinds).
    one_out: list = dataclasses.field(default_factory=list)
    boot_out: list = dataclasses.field(default_factory=list)
    # The pool of every run: the median width (high / low) of its printed intervals, and the
    # between-boot floor it learned (pooling.boot_floor). NaN and 0 under three runs.
    pool_width: float = float("nan")
    pool_floor: float = 0.0
    cpu_out: list = dataclasses.field(default_factory=list)
    # The cells the pool of every run labels "depends on the CPU" (PooledCell.depends_on_cpu):
    # the page's warning, against which cpu_out's misses are counted (cpu_out_labelled).
    cpu_dependent: frozenset = frozenset()

    def cpu_out_labelled(self) -> tuple[int, int]:
        """(cpu_out's misses in a cell the whole pool labels "depends on the CPU", all its
        misses): how much of what a pool of other CPU kinds did not expect the page warns
        of."""
        missed = [key for p in self.cpu_out for key, _, _ in p.missed]
        return sum(key in self.cpu_dependent for key in missed), len(missed)

    @property
    def pair_values(self) -> list:
        return sorted(v for values in self.spreads.values() for v in values)

    def same_verdict(self) -> list:
        return [cell for cell in self.cells
                if len({run.verdicts[cell] for run in self.runs}) == 1]

    def findings_everywhere(self) -> list:
        return self._by_size([cell for cell in self.same_verdict()
                              if self.runs[0].verdicts[cell] != "same"])

    def findings_somewhere(self) -> list:
        return self._by_size([cell for cell in self.cells
                              if len({run.verdicts[cell] for run in self.runs}) > 1])

    def distance_from_one(self, cell: Cell) -> float:
        """How far a cell's estimates are from 1: exp of the mean over runs of |log ratio|,
        minus 1 (0.04: 4%)."""
        return math.exp(sum(abs(math.log(run.cells[cell].ratio)) for run in self.runs)
                        / len(self.runs)) - 1

    def moved_most(self, count: int = MOVED_MOST) -> list:
        return sorted(self.cells, key=lambda cell: (-max(self.spreads[cell]), cell))[:count]

    def _by_size(self, cells: list) -> list:
        """Largest change first."""
        return sorted(cells, key=lambda cell: (-self.distance_from_one(cell), cell))


# -- the runs ------------------------------------------------------------------------

def resolve(arg: str, results_dir: Path) -> store.Run:
    """A run directory, or a run id under ``results_dir``; BadInput naming ``arg`` else."""
    path = Path(arg)
    if path.exists() or path.is_symlink():
        if path.is_symlink() or not path.is_dir():
            raise cli.BadInput(f"{arg}: not a run directory (a run is a directory with "
                               f"{store.MANIFEST})")
        if not (path / store.MANIFEST).is_file():
            raise cli.BadInput(f"{arg}: not a run directory (no {store.MANIFEST} in it)")
        directory = path.resolve()
        if not cli.NAME_PATTERN.fullmatch(directory.name) or \
                len(directory.name) > cli.MAX_NAME_LENGTH:
            raise cli.BadInput(f"{arg}: not a run directory name iomatrix makes")
        return store.Run(directory.parent, directory.name)
    if cli.NAME_PATTERN.fullmatch(arg) and len(arg) <= cli.MAX_NAME_LENGTH:
        candidate = Path(results_dir) / arg
        if (candidate / store.MANIFEST).is_file() and not candidate.is_symlink():
            return store.Run(Path(results_dir), arg)
        if candidate.is_dir():
            raise cli.BadInput(f"{arg}: not a run directory (no {store.MANIFEST} in "
                               f"{candidate})")
    raise cli.BadInput(f"{arg}: no such run (looked for the directory {arg} and the run "
                       f"{Path(results_dir) / arg})")


def load(run: store.Run, name: str, threshold: float) -> RunView:
    """The run analysed as its report does; BadInput naming the run when it cannot be."""
    try:
        data = analysis.load_run(run)
    except (store.ResultFileError, OSError) as exc:
        raise cli.BadInput(f"run {name}: {exc}")
    for file_name, message in data.problems:
        if not phase.is_phase_file(file_name):   # the machine's phase is context only
            raise cli.BadInput(f"run {name}: cannot read {file_name}: {message}")
    if data.frame.empty:
        raise cli.BadInput(f"run {name}: no result files in {run.path}")
    an = comparisons.analyse(data, None, threshold)
    if not an.steps:
        raise cli.BadInput(f"run {name}: no release step to compare (its series "
                           f"{', '.join(an.order) or 'none'} hold fewer than two CPython "
                           "releases)")
    condition = ""   # the run's own condition
    cells = {Cell(op, a, b, condition): c for (op, a, b), c in an.step_cmp.items()}
    verdicts = {cell: "same" for cell in cells}
    classified = {}
    for finding in an.findings():
        cell = Cell(finding.op, finding.a, finding.b, condition)
        verdicts[cell] = "slower" if finding.comparison.ratio > 1 else "faster"
        classified[cell] = finding
    # A further allocator condition's lineage steps (<series>@default) are cells of their own,
    # compared only with the same condition's cells of other runs.
    for (op, a, b), c in an.untouched_steps.items():
        cell = Cell(op, a, b, allocator_section.UNTOUCHED)
        cells[cell] = c
        verdicts[cell] = ("slower" if c.ratio > 1 else "faster") \
            if comparisons.is_finding(c, threshold) else "same"
    return RunView(name, run, an, cells, verdicts, classified)


def load_runs(args: list[str], results_dir: Path, threshold: float,
              log=None) -> list[RunView]:
    """The runs named, each analysed (``load``). A run named twice (its id again, its
    directory by another path, a copy of it: store.distinct_runs) is compared once, said in
    one line to ``log`` (default: stderr); fewer than two different runs is bad input."""
    if len(args) < 2:
        raise cli.BadInput(f"give two or more runs to compare (got {len(args)})")
    resolved = [resolve(arg, results_dir) for arg in args]
    renamed = []
    runs, same = store.distinct_runs(resolved, list(args), renamed=renamed)
    if len(runs) < 2:
        raise cli.BadInput(f"{same[0]}; give two or more different runs to compare")
    log = log or (lambda text: print(cli.terminal_text(f"agree: {text}"), file=sys.stderr))
    for line in renamed + same:
        log(line)
    kept = {id(run) for run in runs}
    args = [arg for arg, run in zip(args, resolved) if id(run) in kept]
    ids = [run.run_id for run in runs]
    # Two results directories can hold runs of one id: then the columns are named as given.
    titles = ids if len(set(ids)) == len(ids) else list(args)
    return [load(run, title, threshold) for run, title in zip(runs, titles)]


# -- what the runs share ---------------------------------------------------------------

def conditions(manifest: dict) -> dict:
    """The conditions a run states: the manifest's own keys, then its run spec's."""
    found = {key: manifest.get(key) for key in CONDITION_KEYS}
    found["rounds"] = "paired (lockstep)" if store.paired_rounds(manifest) else "unpaired"
    spec = manifest.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("conditions"), dict):
        found.update(spec["conditions"])
    return {key: None if value is None else str(value) for key, value in found.items()}


def condition_differences(runs: list[RunView]) -> list[str]:
    """'allocator (`steady` → `fresh`)' for each condition the runs do not share; a run
    that does not state a condition shows it as unstated."""
    stated = [conditions(run.manifest) for run in runs]
    out = []
    for key in dict.fromkeys(k for c in stated for k in c):
        values = [c.get(key) or "unstated" for c in stated]
        if len(set(values)) > 1:
            out.append(f"{md(key)} ({' → '.join(code(v) for v in values)})")
    for series in sorted(set.intersection(*(set(run.analysis.order) for run in runs))):
        versions = [analysis.series_info(run.analysis.data, series).get("version") or "unstated"
                    for run in runs]
        if len(set(versions)) > 1:
            out.append(f"the interpreter {code(series)} ({' → '.join(map(code, versions))})")
    return out


def _not_everywhere(runs: list[RunView], what: str, items_of) -> list[str]:
    """A sentence per run listing the items of ``what`` that only some runs have."""
    held = [set(items_of(run)) for run in runs]
    everywhere = set.intersection(*held)
    out = []
    for run, items in zip(runs, held):
        extra = sorted(items - everywhere)
        if extra:
            out.append(f"{what} not in every run, {code(run.name)} has {names(extra)}")
    return out


def left_out(runs: list[RunView]) -> list[str]:
    """Sentences naming the suites, interpreters, ops and cells not every run has."""
    out = []
    out += _not_everywhere(runs, "suites", lambda run: run.analysis.suites)
    out += _not_everywhere(runs, "interpreters", lambda run: run.analysis.order)
    out += _not_everywhere(runs, "ops", lambda run: run.analysis.ops)
    shared = set.intersection(*(set(run.cells) for run in runs))
    for run in runs:
        extra = [cell for cell in run.cells if cell not in shared]
        if extra:
            steps = list(dict.fromkeys(cell.step for cell in extra))
            found = sum(run.verdicts[cell] != "same" for cell in extra)
            out.append(f"{len(extra)} cells of {code(run.name)} left out (steps "
                       f"{names(steps, md)}; {found} of them findings)")
    return out


def spreads(runs: list[RunView], cells: list) -> dict:
    """Cell -> |log(r_i / r_j)| for every pair of runs."""
    return {cell: [abs(math.log(a.cells[cell].ratio / b.cells[cell].ratio))
                   for a, b in itertools.combinations(runs, 2)] for cell in cells}


def spread_figures(values: list) -> tuple[float, float, float]:
    """(median, 90th percentile, maximum). The percentile is the value at index
    int(n * 0.9) of the sorted values, as the machine phase's percentiles (phase.py) and
    the figures quoted before this command existed."""
    ordered = sorted(values)
    index = min(len(ordered) - 1, int(len(ordered) * SPREAD_PERCENTILE / 100))
    return stats.median(ordered), ordered[index], ordered[-1]


def aa_twins(run: RunView) -> list[AATwin]:
    """The run's A/A twins against the series they repeat, as the report's A/A section."""
    an = run.analysis
    out = []
    for variant in an.lin.variants:
        if variant.kind != "aa" or variant.twin is None:
            continue
        found = {op: c for (op, series), c in an.twin_cmp.items() if series == variant.series}
        if found:
            out.append(AATwin(variant.series, variant.twin,
                              [op for op, c in found.items() if c.significant], len(found),
                              sum(c.significant is None for c in found.values()),
                              stats.geometric_mean(c.ratio for c in found.values())))
    return out


def agree(args: list[str], results_dir: Path, threshold: float) -> Agreement:
    """Everything the command prints, from the runs named by ``args``."""
    runs = load_runs(args, results_dir, threshold)
    cells = sorted(set.intersection(*(set(run.cells) for run in runs)))
    # An op whose timed code changed between two of the runs (pooling.OP_REVISIONS) measured
    # other work under one name: its cells are not compared.
    revised = sorted({op for run in runs for op in pooling.revised_ops(
        {cell.op for cell in cells}, run.name, runs[0].name)})
    cells = [cell for cell in cells if cell.op not in revised]
    if not cells:
        raise cli.BadInput(f"runs {', '.join(run.name for run in runs)} share no op at any "
                           "release step; " + "; ".join(left_out(runs)))
    pooled = pooled_runs(runs)
    notes = left_out(runs) + ([f"ops whose code changed between the runs: "
                               f"{', '.join(revised)}"] if revised else [])
    whole = pooling.pool_cells(pooled, threshold, cells) if len(runs) >= 3 else {}
    return Agreement(runs, threshold, condition_differences(runs), notes, cells,
                     spreads(runs, cells), {run.name: aa_twins(run) for run in runs},
                     pooling.leave_one_out(pooled, threshold, cells),
                     pooling.leave_one_boot_out(pooled, threshold, cells),
                     pooling.median_width(whole.values()),
                     pooling.boot_floor(pooled, cells) if whole else 0.0,
                     pooling.leave_one_cpu_out(pooled, threshold, cells),
                     frozenset(key for key, cell in whole.items() if cell.depends_on_cpu))


def pooled_runs(runs: list[RunView]) -> list[pooling.RunCells]:
    """The runs as a pool sees them: their cells, verdicts, boots (pooling.boot_of) and CPU
    kinds (pooling.cpu_of)."""
    return [pooling.RunCells(run.name, pooling.boot_of(run.manifest, run.name), run.cells,
                             run.verdicts, cpu=pooling.cpu_of(run.manifest)) for run in runs]


@dataclasses.dataclass
class Replication:
    """How one run's firm findings fare in another run, on the cells both have."""
    source: str
    other: str
    firm: int                 # firm findings of ``source`` in cells ``other`` has
    held: int                 # ... that are a finding the same way in ``other``
    contradicted: int         # ... that ``other`` has significantly the other way, or
                              # with its whole 95% interval within the threshold
    next_run: int             # firm or borderline findings with a resampled interval
    covered: int              # ... whose interval holds ``other``'s estimate
    same_boot: bool | None    # None: a side did not record its boot
    # The firm findings not held, each {"op", "a", "b", "condition", "ratio", "low", "high",
    # "other_ratio", "other_low", "other_high", "unresolved"}: ``unresolved`` when the other
    # run's 95% interval holds both 1 and this run's estimate (too wide to tell either way).
    not_held: list = dataclasses.field(default_factory=list)

    @property
    def unresolved(self) -> int:
        return sum(1 for miss in self.not_held if miss["unresolved"])


def replication(source: RunView, other: RunView, threshold: float) -> Replication:
    firm = held = contradicted = next_run = covered = 0
    not_held = []
    margin = math.log1p(threshold)
    for cell, finding in source.classified.items():
        theirs = other.cells.get(cell)
        if theirs is None or pooling.revised_ops({cell.op}, source.name, other.name):
            continue
        if finding.next_run is not None:
            next_run += 1
            covered += finding.next_run[0] <= theirs.ratio <= finding.next_run[1]
        if finding.firmness != "firm":
            continue
        firm += 1
        known = theirs.low is not None and theirs.high is not None
        if other.verdicts.get(cell) == source.verdicts[cell]:
            held += 1
        else:
            ours = finding.comparison
            not_held.append({
                "op": cell.op, "a": cell.a, "b": cell.b, "condition": cell.condition or None,
                "ratio": ours.ratio, "low": ours.low, "high": ours.high,
                "other_ratio": theirs.ratio, "other_low": theirs.low, "other_high": theirs.high,
                "unresolved": known and theirs.low <= 1 <= theirs.high
                and theirs.low <= ours.ratio <= theirs.high})
        other_way = bool(theirs.significant) and (theirs.ratio > 1) != (finding.comparison.ratio > 1)
        within = known and abs(math.log(theirs.low)) < margin and \
            abs(math.log(theirs.high)) < margin
        contradicted += other_way or within
    boots = (source.boot, other.boot)
    return Replication(source.name, other.name, firm, held, contradicted, next_run, covered,
                       None if None in boots else boots[0] == boots[1], not_held)


def replications(runs: list[RunView], threshold: float) -> list[Replication]:
    """Every ordered pair of runs: firm findings held, and the next-run interval's coverage."""
    return [replication(a, b, threshold) for a, b in itertools.permutations(runs, 2)]
