"""Numbers that travel: one cell's ratio pooled over stored runs of several hosts and boots.

A *cell* is one ratio of a report's release-step table (an op at ``3.12 → 3.13``). Each run
gives a cell its estimate and 95% interval (``comparisons.analyse``: the report's own
arithmetic). ``pool_cells`` combines the runs' log ratios by a two-level random-effects
meta-analysis (statsmodels' ``combine_effects``, Paule-Mandel's tau²; runs within boots, then
boots): the between-run and between-boot variances are estimated from how far the runs differ
beyond their own intervals (their sum, where a cell's runs span two boots or more, at least the
square of a floor learned over all the pool's cells, ``boot_floor``), and every interval
printed includes them. For each cell it keeps each run's ratio, the pooled estimate, the
interval a reader's rerun on another boot is expected in (``rerun_interval``, a prediction
interval) apart from the pooled mean's own confidence interval, how many runs and boots it
rests on, how many runs agree with the pooled verdict ("held in k of n runs"), and whether the
host moves the cell more than the runs' own noise ("depends on the host"). The CPU model is a
third level (runs within boots within CPU kinds, ``cpu_of``): each kind is pooled on its own
and the kinds' means then together, and a cell on which one kind's finding is contradicted by
another kind's figure "depends on the CPU" (``PooledCell.depends_on_cpu``); a pooled finding
whose counts did not move (time only) seen on one CPU kind is never a firm one
(``Pool.time_only``). Method and thresholds: docs/methodology.md, "Pooled numbers".

The cells are keyed by whatever the caller uses ((op, a, b) in the report, agree's Cell
in agree): this module only combines numbers. ``load_pool`` reads and vets the runs of a
pool (same profile and selection, the same interpreter builds) for the report.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import itertools
import math
import random
import re
from statistics import NormalDist, median

from iomatrix import cli, stats
from iomatrix.analysing import analysis, comparisons, counts
from iomatrix.measuring import phase
from iomatrix.storing import store

Z95 = NormalDist().inv_cdf(0.975)      # 1.96: a 95% interval is the estimate ± Z95 SE
# A run's interval can be a single point (every process timed the same ratio): its
# variance would be 0 and its weight infinite. 0.1% on the log scale is below any step
# a report resolves, so the floor never decides a cell.
MIN_SE = 0.001
# Keys of an interpreter's manifest entry that make it one build: a label whose build
# differs between two runs measures two interpreters, and its cells are not pooled.
BUILD_KEYS = ("implementation", "version", "free_threaded", "debug", "pgo", "lto", "jit")
# The CPU kind of a run whose manifest names no CPU model: a kind of its own, never merged
# with a known one (it may be any of them).
UNKNOWN_CPU = "unknown CPU"
MAX_CPU_NAME = 60
# Words of a model string that name no kind: trademarks, "CPU", "Processor", the nominal
# clock ("Intel(R) Xeon(R) Processor" and "Intel(R) Xeon(R) CPU" are one kind, "Intel Xeon").
CPU_NOISE = re.compile(r"\((?:R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@\s*[\d.]+\s*[GM]Hz")


def se_of_interval(low: float, high: float) -> float:
    """The standard error of a run's log ratio, from its 95% interval.

    The report's interval is a Hodges-Lehmann (rank) interval, not mean ± 1.96 SE, and
    need not be symmetric on the log scale; its width on the log scale over 2 x 1.96 is
    the SE of a normal estimate with an interval as wide (the usual way a meta-analysis
    takes a study that reports only its interval: Cochrane Handbook 6.3.1)."""
    return max((math.log(high) - math.log(low)) / (2 * Z95), MIN_SE)


@dataclasses.dataclass
class RunCells:
    """One run as a pool sees it: its cells' comparisons and verdicts, and its boot."""
    name: str
    boot: str                 # the manifest's boot_id, else "date YYYY-MM-DD" (see boot_of)
    cells: dict               # key -> stats.Comparison
    verdicts: dict            # key -> "slower" | "faster" | "same" (the report's findings)
    # op -> [(twin series, its original, Comparison)]: the ops this run's A/A twin flags
    # (aa_flags); a pooled figure of such an op carries the caveat (reporting.aa_caveat)
    aa_flagged: dict = dataclasses.field(default_factory=dict)
    cpu: str = UNKNOWN_CPU    # the CPU kind it measured on (cpu_of)
    counted: list = dataclasses.field(default_factory=list)   # its counts (counts.load_counts)


def aa_flags(an) -> dict:
    """op -> [(twin series, its original, Comparison)] of every A/A twin of the analysis
    (``comparisons.Analysis``) that flags the op (its interval against its original excludes
    1); empty in a run without an A/A twin."""
    out: dict = {}
    for v in an.lin.variants:
        if v.kind != "aa" or v.twin is None:
            continue
        for (op, series), c in an.twin_cmp.items():
            if series == v.series and c.significant:
                out.setdefault(op, []).append((v.series, v.twin, c))
    return out


def boot_of(manifest: dict, name: str) -> str:
    """The boot a run measured in: its manifest's boot_id (recorded since 2026-11-25). A run
    made before says none: it counts as a boot of its own per day it started ("date
    2026-11-24"), as if the machine of each day were another; two such runs of one day
    count as one boot (they may well have been)."""
    boot = manifest.get("boot_id")
    if boot:
        return str(boot)
    started = str(manifest.get("started") or "")
    try:
        return "date " + dt.datetime.fromisoformat(started).date().isoformat()
    except ValueError:
        return f"run {name}"


def cpu_of(manifest: dict) -> str:
    """The CPU kind a run measured on: its manifest's model string (machine.facts:
    /proc/cpuinfo's first "model name", else platform.processor()) without trademarks, the
    words "CPU" and "Processor" or a nominal clock, spaces folded ("Intel(R) Xeon(R)
    Processor": "Intel Xeon"); ``UNKNOWN_CPU`` when it names none ("?" is what machine.facts
    records when it found none). A name read from a file: data, escaped where shown."""
    model = manifest.get("cpu")
    if not isinstance(model, str):
        return UNKNOWN_CPU
    kind = " ".join(CPU_NOISE.sub(" ", cli.one_line(model)).split())[:MAX_CPU_NAME].strip()
    return kind if kind and kind != "?" else UNKNOWN_CPU


def same_build(one: dict, other: dict) -> bool:
    """Whether two manifest entries of a label are one build, on the keys both state (a run
    made before a key was recorded does not differ by its absence)."""
    return all(one.get(key) == other.get(key) for key in BUILD_KEYS
               if one.get(key) is not None and other.get(key) is not None)


@dataclasses.dataclass
class PooledCell:
    key: object
    runs: dict                # run name -> stats.Comparison, the runs pooled
    boots: int
    estimate: float           # the pooled ratio (exp of the random-effects mean over boots)
    low: float                # 95% prediction interval of a reader's rerun on another boot
    high: float               # (rerun_interval): what the page prints beside the estimate
    mean_low: float           # 95% confidence interval of the pooled mean itself (how well
    mean_high: float          # the pool knows the mean; not where a rerun lands)
    tau: float                # between-run SD of the log ratio across boots: √(τ_boot² + τ_run²)
    within_se: float          # median of the runs' own SEs of the log ratio
    i2: float                 # share of a typical run's spread beyond its own noise
    verdict: str              # slower | faster | same: the findings rule on low/high
    held: int                 # runs whose own verdict is the pooled verdict
    tau_boot: float = 0.0     # between-boot SD (second level; sqrt(floor² - tau_run²) where
                              # the floor decided)
    tau_run: float = 0.0      # between-run SD within one boot (first level)
    se_mean: float = 0.0      # SE of the pooled mean (log scale)
    tau_seen: float = 0.0     # the between-run SD the runs themselves show (before the floor)
    tau_cpu: float = 0.0      # between-CPU-kind SD (third level; 0 with one kind)
    cpus: tuple = ()          # the CPU kinds of its runs, in the runs' order
    by_cpu: dict = dataclasses.field(default_factory=dict)   # kind -> PooledCell of its runs
                                                             # (with two kinds or more)
    cpu_contradicted: bool = False   # one kind's finding another kind's figure contradicts

    @property
    def n(self) -> int:
        return len(self.runs)

    @property
    def host_dependent(self) -> bool:
        """The host moves this cell more than the runs' own noise does: the between-run SD
        the runs show (not the floor, which no run of this cell showed) is larger than the
        typical run's own SE (docs/methodology.md)."""
        return self.n >= 2 and self.tau_seen > self.within_se

    @property
    def depends_on_cpu(self) -> bool:
        """The verdict differs between CPU kinds: one kind's pool has the step as a finding
        and another kind's figure contradicts it (its pooled mean's 95% interval lies wholly
        on the other side of 1, or wholly within the threshold): ``cpu_contradicted``."""
        return self.cpu_contradicted

    @property
    def known_cpus(self) -> tuple:
        """The CPU kinds it was seen on that a manifest named (UNKNOWN_CPU may be any)."""
        return tuple(kind for kind in self.cpus if kind != UNKNOWN_CPU)

    @property
    def seen(self) -> tuple[float, float]:
        ratios = [c.ratio for c in self.runs.values()]
        return min(ratios), max(ratios)

    def holds(self, ratio: float) -> bool:
        """Whether the printed interval (a rerun's, its noise that of one of the pool's runs
        drawn at random: rerun_interval) holds it."""
        return self.low <= ratio <= self.high

    def predicts(self, comparison) -> bool:
        """Whether a further run's estimate is where the pool expects a run *with that run's
        own noise* (its interval's SE in place of the pool's runs' SEs): a run sampled less
        than the pool's runs lands farther from the pooled mean by its own noise alone."""
        own = se_of_interval(comparison.low, comparison.high)
        spread = math.sqrt(self.se_mean ** 2 + self.tau ** 2 + own ** 2)
        return abs(math.log(comparison.ratio) - math.log(self.estimate)) <= Z95 * spread


def random_effects(effects: list, ses: list) -> tuple[float, float, float]:
    """(mean, SE of the mean, tau²) of one random-effects combination: statsmodels'
    combine_effects with Paule-Mandel's tau² (an iteration that keeps it >= 0, where
    statsmodels' DerSimonian-Laird leaves a negative tau² unclipped, and the pooled variance
    of runs that agree closer than their intervals say could come out negative: a NaN
    interval; PM is also the estimator Veroniki et al. (2016) recommend). One value: itself."""
    if len(effects) == 1:
        return effects[0], ses[0], 0.0
    import numpy as np
    from statsmodels.stats.meta_analysis import combine_effects
    with np.errstate(divide="ignore", invalid="ignore"):   # I² of values that agree: 0/0
        result = combine_effects(np.array(effects), np.array(ses) ** 2, method_re="pm")
    mean, se_mean = float(result.mean_effect_re), float(result.sd_eff_w_re)
    if not (math.isfinite(mean) and math.isfinite(se_mean)):
        raise ValueError("a random-effects combination is not finite")
    return mean, se_mean, max(float(result.tau2), 0.0)


def combine(key, runs: dict, boots: dict, verdicts: dict, threshold: float,
            floor: float = 0.0, cpus: dict | None = None) -> PooledCell:
    """One cell pooled: ``runs`` {name: Comparison} with intervals, ``boots`` {name: boot},
    ``verdicts`` {name: the run's own verdict}; ``floor``: the least SD between runs of
    different boots of one CPU kind, sqrt(tau_boot² + tau_run²), where the cell's runs span
    two boots or more (``boot_floor``); ``cpus`` {name: CPU kind} (``cpu_of``; all one kind
    when not given).

    Two levels within a CPU kind (runs within boots, boots within the kind): the runs of each
    boot are pooled first (random effects: the boot's mean, its SE and the within-boot tau²),
    then the boots' means are pooled (random effects again: the pooled mean and the
    between-boot tau²). Runs of one boot share its offset: pooled as if independent, six runs
    of one boot outweigh one run of each other boot, and their spread (mostly within-boot)
    stood for the host's, which a run on a new boot did not land in (docs/methodology.md,
    "Pooled numbers"). With two CPU kinds or more, each kind is pooled so (``by_cpu``) and the
    kinds' means are pooled once more (random effects: the between-kind tau²)."""
    cpus = cpus or {}
    kinds: dict = {}
    for name in runs:
        kinds.setdefault(cpus.get(name, UNKNOWN_CPU), []).append(name)
    if len(kinds) == 1:
        return _within_kind(key, runs, boots, verdicts, threshold, floor, tuple(kinds))
    by_cpu = {kind: _within_kind(key, {n: runs[n] for n in names}, boots, verdicts, threshold,
                                 floor, (kind,))
              for kind, names in kinds.items()}
    parts = list(by_cpu.values())
    try:
        mean, se_mean, tau_cpu2 = random_effects([math.log(p.estimate) for p in parts],
                                                 [p.se_mean for p in parts])
    except ValueError as exc:
        raise ValueError(f"the random-effects pool of {key!r}: {exc}") from None
    # Within a kind: the between-boot and within-boot variances of the kinds that show them
    # (a kind of one boot, or of one run a boot, says nothing of either).
    spread = [p for p in parts if p.boots >= 2]
    runs_spread = [p for p in parts if p.n > p.boots]
    tau_boot2 = sum(p.tau_boot ** 2 for p in spread) / len(spread) if spread else 0.0
    tau_run2 = sum(p.tau_run ** 2 for p in runs_spread) / len(runs_spread) \
        if runs_spread else 0.0
    seen = [p.tau_seen ** 2 for p in parts if p.n >= 2]
    seen2 = sum(seen) / len(seen) if seen else 0.0
    cell = _finish(key, runs, verdicts, threshold, mean, se_mean, tau_boot2, tau_run2, seen2,
                   sum(p.boots for p in parts), tau_cpu2,
                   tuple(cpus.get(name, UNKNOWN_CPU) for name in runs))
    cell.by_cpu = by_cpu
    margin = math.log1p(threshold)
    cell.cpu_contradicted = any(contradicts(other, one.verdict, margin)
                                for one in parts if one.verdict != "same"
                                for other in parts if other is not one)
    return cell


def contradicts(cell: PooledCell, verdict: str, margin: float) -> bool:
    """Whether ``cell``'s pooled mean (its 95% confidence interval) contradicts ``verdict``
    (slower or faster): wholly on the other side of 1, or wholly within ``margin`` (log) of
    it; as agree counts a run's firm finding contradicted by another run."""
    low, high = math.log(cell.mean_low), math.log(cell.mean_high)
    other_way = high < 0 if verdict == "slower" else low > 0
    return other_way or (abs(low) < margin and abs(high) < margin)


def _within_kind(key, runs: dict, boots: dict, verdicts: dict, threshold: float, floor: float,
                 cpus: tuple) -> PooledCell:
    """The runs of one CPU kind pooled: runs within boots, then boots (``combine``)."""
    names = list(runs)
    try:
        by_boot: dict = {}
        for n in names:
            by_boot.setdefault(boots[n], []).append(
                (math.log(runs[n].ratio), se_of_interval(runs[n].low, runs[n].high)))
        firsts = [random_effects([e for e, _ in values], [s for _, s in values])
                  for values in by_boot.values()]
        within_boot = [tau2 for (_, _, tau2), values in zip(firsts, by_boot.values())
                       if len(values) >= 2]
        tau_run2 = sum(within_boot) / len(within_boot) if within_boot else 0.0
        means, mean_ses = [m for m, _, _ in firsts], [s for _, s, _ in firsts]
        mean, se_mean, tau_boot2 = random_effects(means, mean_ses)
        seen2 = tau_boot2 + tau_run2
        if len(means) >= 2 and tau_boot2 + tau_run2 < floor ** 2:
            # Two or three boots say little about the spread between boots; the floor (what
            # the pool's own cross-boot pairs of runs need, over all cells) stands for it,
            # and the boots' means are weighted with it (the random-effects weights).
            tau_boot2 = floor ** 2 - tau_run2
            weights = [1 / (s ** 2 + tau_boot2) for s in mean_ses]
            mean = sum(w * m for w, m in zip(weights, means)) / sum(weights)
            se_mean = math.sqrt(1 / sum(weights))
    except ValueError as exc:
        raise ValueError(f"the random-effects pool of {key!r}: {exc}") from None
    return _finish(key, runs, verdicts, threshold, mean, se_mean, tau_boot2, tau_run2, seen2,
                   len(by_boot), 0.0, cpus * len(names))


def _finish(key, runs: dict, verdicts: dict, threshold: float, mean: float, se_mean: float,
            tau_boot2: float, tau_run2: float, seen2: float, boots: int, tau_cpu2: float,
            cpus: tuple) -> PooledCell:
    """The pooled cell from its pooled mean and variances: the rerun interval, the verdict."""
    names = list(runs)
    ses = [se_of_interval(runs[n].low, runs[n].high) for n in names]
    tau2 = tau_cpu2 + tau_boot2 + tau_run2
    try:
        # Where a reader's rerun of the command, on another boot, is expected
        # (rerun_interval): the pooled mean's own uncertainty, the between-kind, between-boot
        # and within-boot variances, and the rerun's own noise, drawn from the pooled runs' SEs.
        low, high = rerun_interval(mean, se_mean ** 2 + tau2, ses)
    except ValueError as exc:
        raise ValueError(f"the random-effects pool of {key!r}: {exc}") from None
    within = median(ses)
    # The pooled verdict is the report's findings rule on the interval for a rerun: a change
    # a reader's own run is expected to show, not only one the pooled mean resolves.
    margin = math.log1p(threshold)
    if (low > 0 or high < 0) and abs(mean) > margin:
        verdict = "slower" if mean > 0 else "faster"
    else:
        verdict = "same"
    i2 = tau2 / (tau2 + within ** 2) if tau2 + within ** 2 > 0 else 0.0
    return PooledCell(key, runs, boots, math.exp(mean),
                      math.exp(low), math.exp(high), math.exp(mean - Z95 * se_mean),
                      math.exp(mean + Z95 * se_mean), math.sqrt(tau2), within, i2,
                      verdict, sum(verdicts[n] == verdict for n in names),
                      math.sqrt(tau_boot2), math.sqrt(tau_run2), se_mean, math.sqrt(seen2),
                      math.sqrt(tau_cpu2), tuple(dict.fromkeys(cpus)))


def rerun_interval(mean: float, shared_var: float, ses, level: float = 0.95) -> tuple:
    """(low, high) on the log scale: the ``level`` prediction interval of a reader's rerun's
    log ratio, on a boot the pool has not seen.

    A rerun's estimate is the pooled mean μ plus the error of μ (SE(μ)²), its boot's and its
    own offset (τ²_boot + τ²_run: ``shared_var`` is the sum of the three) and its own
    sampling noise, whose SE no one knows before the run: the pooled runs' own SEs of the
    cell, s_i, are the sample of what a run of this command gets. So the rerun's predictive
    distribution is the mixture, with equal weights over the pooled runs, of
    N(μ, shared_var + s_i²), and the interval is its (1 ∓ level)/2 quantiles (the
    components share μ: the mixture is symmetric about it). Equal weights over the runs, not
    the boots: a run's own noise is set by how it was sampled (its rounds and processes), one
    draw per run, while the boots' share is in shared_var already. This is what the median SE
    plugged into one normal (until 2026-11-27) understated: a mixture of normals of unequal
    variances has heavier tails than the normal of its median variance, and the noisier runs
    set the tails (docs/methodology.md, "Pooled numbers", the candidates compared).

    z, not a t of the boots' degrees of freedom (Hartung-Knapp-like): the between-boot
    variance of a cell where the boots show less is the floor learned over all the pool's
    cells (``boot_floor``: hundreds of cross-boot values), not a 1-2 degree-of-freedom
    estimate, and t₁ or t₂ (12.7 or 4.3 for 1.96) would treat it as one."""
    import numpy as np
    from scipy import optimize
    from scipy.stats import norm
    variances = shared_var + np.square(np.asarray(ses, dtype=float))
    if not (len(variances) and np.all(np.isfinite(variances)) and variances.min() > 0):
        raise ValueError("a rerun interval needs finite, positive spreads")
    scales = np.sqrt(variances)
    p = 0.5 + level / 2
    z = norm.ppf(p)
    smallest, largest = float(scales.min()), float(scales.max())
    if largest - smallest <= 1e-12 * largest:
        reach = z * largest                 # one variance: the mixture is that normal
    else:
        # the mixture's quantile lies between its narrowest and its widest component's
        reach = optimize.brentq(lambda x: float(np.mean(norm.cdf(x / scales))) - p,
                                z * smallest, z * largest, xtol=1e-12)
    return mean - reach, mean + reach


# The floor's coverage: the share of the pool's own pairs of runs on different boots whose
# difference it makes consistent (at 95%) with their two intervals; and the fewest such
# (pair, cell) values it is learned from (fewer: no floor).
FLOOR_COVERAGE = 0.95
FLOOR_MIN_VALUES = 20
# The most pairs of runs the floor is learned from: a pool of more runs (over 200) takes a
# uniform sample of its pairs, drawn with a fixed seed (one pool, one floor). Every pair of
# 10,000 runs, 50 million of them, took hours (issue 56); 20,000 pairs place a 95th
# percentile within a fraction of a percentile point.
MAX_FLOOR_PAIRS = 20_000


def floor_pairs(runs: list) -> list:
    """Every pair of ``runs`` (i < j), or MAX_FLOOR_PAIRS of them drawn uniformly."""
    n = len(runs)
    if n * (n - 1) // 2 <= MAX_FLOOR_PAIRS:
        return list(itertools.combinations(runs, 2))
    rng, chosen = random.Random(0), set()
    while len(chosen) < MAX_FLOOR_PAIRS:
        chosen.add(tuple(sorted(rng.sample(range(n), 2))))
    return [(runs[i], runs[j]) for i, j in sorted(chosen)]


def boot_floor(runs: list[RunCells], keys) -> float:
    """The least SD between runs of different boots of one CPU kind of the log ratio (what
    bounds sqrt(tau_boot² + tau_run²) in ``combine``), learned from the pool's own runs: for
    every pair of runs on different boots of one CPU kind (the kinds' own difference is the
    third level's, not a boot's) and every cell both have with an interval, the SD
    τ that makes their difference d just consistent with their SEs at 95%
    (|d| = 1.96 √(s₁² + s₂² + 2τ²)), and of those the 95th percentile. One number for all
    cells: with two or three boots a cell's own between-boot variance rests on one or two
    degrees of freedom, while the pool's hundreds of cells say together how far boots move a
    ratio beyond the runs' own intervals. 0 with fewer than two boots."""
    needs = []
    for one, other in floor_pairs(runs):
        if one.boot == other.boot or one.cpu != other.cpu:
            continue
        for key in keys:
            a, b = one.cells.get(key), other.cells.get(key)
            if a is None or b is None or None in (a.low, a.high, b.low, b.high):
                continue
            d = math.log(a.ratio) - math.log(b.ratio)
            v = se_of_interval(a.low, a.high) ** 2 + se_of_interval(b.low, b.high) ** 2
            needs.append(math.sqrt(max((d / Z95) ** 2 - v, 0.0) / 2))
    if len(needs) < FLOOR_MIN_VALUES:
        return 0.0
    needs.sort()
    return needs[min(len(needs) - 1, math.ceil(FLOOR_COVERAGE * len(needs)) - 1)]


def pool_cells(runs: list[RunCells], threshold: float, keys=None) -> dict:
    """key -> PooledCell over the runs that have the cell with an interval (a run whose
    cell has too few processes for one is left out of that cell)."""
    keys = keys if keys is not None else \
        list(dict.fromkeys(key for run in runs for key in run.cells))
    boots = {run.name: run.boot for run in runs}
    cpus = {run.name: run.cpu for run in runs}
    floor = boot_floor(runs, keys)
    out = {}
    for key in keys:
        have = {run.name: run.cells[key] for run in runs
                if key in run.cells and run.cells[key].low is not None
                and run.cells[key].high is not None}
        if have:
            verdicts = {run.name: run.verdicts.get(key, "same") for run in runs
                        if run.name in have}
            out[key] = combine(key, have, boots, verdicts, threshold, floor, cpus)
    return out


# -- does the pool predict? ----------------------------------------------------------------

@dataclasses.dataclass
class Prediction:
    left_out: str             # the run (or boot) left out of the pool
    pooled: list              # the runs pooled
    cells: int                # shared cells checked
    held: int                 # ... where the left-out run's estimate is where the pool expects
                              # a run with that run's own noise (PooledCell.predicts)
    missed: list              # (key, the left-out run's ratio, PooledCell) of those not held
    held_printed: int = 0     # ... held by the printed interval (a rerun's prediction
                              # interval: PooledCell.holds)
    group: str | None = None  # the boot or CPU kind left out (leave_one_group_out)

    @property
    def share(self) -> float:
        return self.held / self.cells if self.cells else float("nan")


def predict(left: RunCells, others: list[RunCells], threshold: float, keys) -> Prediction:
    """Pool ``others`` on ``keys`` and check whether each pooled cell expects ``left``'s
    estimate, given ``left``'s own interval (and, apart, whether the printed interval holds
    it); cells ``left`` has no interval for, or the others fewer than two runs of, are not
    checked."""
    pooled = pool_cells(others, threshold, keys)
    held, printed, cells, missed = 0, 0, 0, []
    for key, cell in pooled.items():
        mine = left.cells.get(key)
        if mine is None or mine.low is None or mine.high is None or cell.n < 2:
            continue
        cells += 1
        printed += cell.holds(mine.ratio)
        if cell.predicts(mine):
            held += 1
        else:
            missed.append((key, mine.ratio, cell))
    return Prediction(left.name, [run.name for run in others], cells, held, missed, printed)


def leave_one_out(runs: list[RunCells], threshold: float, keys) -> list[Prediction]:
    """For each run, the others pooled (at least two of them), checked against it."""
    return [predict(run, [other for other in runs if other is not run], threshold, keys)
            for run in runs if len(runs) >= 3]


def leave_one_group_out(runs: list[RunCells], threshold: float, keys, group,
                        label) -> list[Prediction]:
    """For each value of ``group(run)``, the runs of the other values pooled (at least two
    runs) and checked against each run of the value left out, named ``label(run)``."""
    out = []
    for value in dict.fromkeys(group(run) for run in runs):
        others = [run for run in runs if group(run) != value]
        if len(others) < 2:
            continue
        for run in runs:
            if group(run) == value:
                found = predict(run, others, threshold, keys)
                out.append(dataclasses.replace(found, left_out=label(run), group=value))
    return out


def leave_one_boot_out(runs: list[RunCells], threshold: float, keys) -> list[Prediction]:
    """For each boot, the runs of the other boots pooled and checked against each run of the
    boot left out: a machine the pool has not seen."""
    return leave_one_group_out(runs, threshold, keys, lambda run: run.boot,
                               lambda run: f"{run.name} (boot {run.boot})")


def leave_one_cpu_out(runs: list[RunCells], threshold: float, keys) -> list[Prediction]:
    """For each CPU kind, the runs of the other kinds pooled and checked against each run of
    the kind left out: a CPU the pool has not seen."""
    return leave_one_group_out(runs, threshold, keys, lambda run: run.cpu,
                               lambda run: f"{run.name} ({run.cpu})")


def totals(found: list[Prediction], printed: bool = False) -> tuple[int, int]:
    """(held, cells) over checks: by the run's own noise, or (printed) by the printed
    interval."""
    return (sum(p.held_printed if printed else p.held for p in found),
            sum(p.cells for p in found))


def median_width(cells) -> float:
    """The median over pooled cells of the printed interval's width, high / low: how much a
    pooled figure says (1.40: a rerun within ±18% or so of the estimate)."""
    widths = [cell.high / cell.low for cell in cells if cell.n >= 2]
    return median(widths) if widths else float("nan")


# -- the report's pool -----------------------------------------------------------------------

@dataclasses.dataclass
class Pool:
    main: str                 # the run the report is about
    runs: list                # RunCells, the main run first
    cells: dict               # (op, a, b) -> PooledCell
    left_out: list            # sentences: runs, cells or builds not pooled, and why
    threshold: float

    @property
    def boots(self) -> int:
        return len({(run.cpu, run.boot) for run in self.runs})

    @property
    def cpus(self) -> dict:
        """CPU kind -> its runs' names, in the pool's order (the main run's kind first)."""
        out: dict = {}
        for run in self.runs:
            out.setdefault(run.cpu, []).append(run.name)
        return out

    def get(self, op: str, a: str, b: str):
        return self.cells.get((op, a, b))

    def time_only(self, cell: PooledCell) -> bool:
        """A pooled finding (or, where the verdict depends on the CPU, a CPU kind's) whose
        counts did not move its way: ``comparisons.evidence_of`` on the main run's counts
        says "time only" (instruction counts are the same on both CPU kinds pooled to 0.1%).
        Code layout, caches and the CPU move such a step, and nothing in a run tells them
        from the interpreter's code."""
        found = [part for part in ([cell] + list(cell.by_cpu.values()))
                 if part.verdict != "same"]
        if not found or not self.runs[0].counted:
            return False
        op, a, b = cell.key
        move = counts.count_move(self.runs[0].counted, op, a, b)
        return all(comparisons.evidence_of(
            stats.Comparison(part.estimate, part.low, part.high, True, part.n, part.n),
            self.threshold, move) == "time only" for part in found)

    def one_cpu_time_only(self, cell: PooledCell) -> bool:
        """A time-only pooled finding seen on fewer than two known CPU kinds: never stated
        as firm; the pages say "time only, seen on <kinds>" and list it apart."""
        return cell.verdict != "same" and len(cell.known_cpus) < 2 and self.time_only(cell)

    def firm(self, cell: PooledCell) -> bool:
        """A pooled finding the pages state as one: not "depends on the CPU", not time only
        from one CPU kind."""
        return cell.verdict != "same" and not cell.depends_on_cpu and \
            not self.one_cpu_time_only(cell)

    def aa_flagged(self, op: str) -> list:
        """[(run name, twin series, its original, Comparison)]: every pooled run whose A/A
        twin flags ``op``, in the pool's order (the main run first)."""
        return [(run.name, *found) for run in self.runs for found in run.aa_flagged.get(op, [])]


# Ops whose timed code changed, with the run-id stamp from which runs time the new code: a
# run on the other side of it measured other work under the same name, and its cells of
# those ops are never pooled with the main run's (they are named left out). iobench's text
# read-modify-write transformed each block with str.translate and a dict that missed on most
# characters until 2026-11-27, then reverses it (issue 41: the old transform drowned the I/O).
OP_REVISIONS = ((re.compile(r"iobench_readmodify_text"), "20261127T"),)


def revised_ops(ops, run_id: str, main_id: str) -> list[str]:
    """The ops of ``ops`` whose code differs between runs ``run_id`` and ``main_id``."""
    return sorted({op for op in ops for pattern, stamp in OP_REVISIONS
                   if pattern.match(op) and (run_id < stamp) != (main_id < stamp)})


def run_cells(data: analysis.RunData, name: str, threshold: float,
              an: comparisons.Analysis | None = None) -> RunCells:
    """A run's release-step cells and their verdicts as its report decides them."""
    an = an if an is not None else comparisons.analyse(data, None, threshold)
    verdicts = {key: "same" for key in an.step_cmp}
    for finding in an.findings():
        verdicts[(finding.op, finding.a, finding.b)] = \
            "slower" if finding.comparison.ratio > 1 else "faster"
    return RunCells(name, boot_of(data.manifest, name), dict(an.step_cmp), verdicts,
                    aa_flags(an), cpu_of(data.manifest), an.counted)


def selection_of(manifest: dict):
    spec = manifest.get("spec")
    return spec.get("selection") if isinstance(spec, dict) else None


def same_command(main: dict, other: dict) -> str | None:
    """Why ``other`` is not a run of ``main``'s command (profile, selection), or None. A run
    that does not state its selection (made before run specs) is not refused for it."""
    if other.get("profile") != main.get("profile"):
        return f"profile {cli.one_line(repr(other.get('profile')))}, not " \
               f"{cli.one_line(repr(main.get('profile')))}"
    mine, theirs = selection_of(main), selection_of(other)
    if theirs is not None and theirs != mine:
        return f"selection {cli.one_line(repr(theirs))}, not {cli.one_line(repr(mine))}"
    return None


def same_command_runs(results_dir, main: store.Run, main_manifest: dict,
                      log=None) -> list[store.Run]:
    """Every stored run of the main run's command: the same profile and the same stated
    selection (runs that state none are left out of the automatic pool: named ones may
    still be given). Decided from the manifests alone, before any run's data is read (a
    store of thousands of runs of other commands costs their manifests only); ``log``: a
    progress line every few seconds (store.progress)."""
    out = []
    runs, _ = store.scan_runs(results_dir, log)   # the runs skipped are not the pool's
    for run in store.progress(runs, "runs' manifests for the pool", log):
        if run.run_id == main.run_id:
            continue
        try:
            manifest = run.read_manifest()
        except store.ResultFileError:
            continue
        if selection_of(manifest) is not None and same_command(main_manifest, manifest) is None:
            out.append(run)
    return out


def load_pool(main_data: analysis.RunData, main_an: comparisons.Analysis,
              others: list[store.Run], threshold: float, named: bool = True,
              log=None) -> Pool:
    """The main run and ``others`` pooled on the cells they have. A run of another profile or
    selection is refused (cli.BadInput, exit 2, naming the difference); a run that cannot be
    read is named and left out; a label whose interpreter build differs from the main
    run's is left out of that run's cells, named. A run met twice (the main run again, a
    run named twice, a copied run directory: store.distinct_runs) is pooled once, named.
    ``log``: a progress line every few seconds while the runs are read (store.progress)."""
    main_name = main_data.run.run_id if main_data.run else "main"
    left_out = []
    if main_data.run is not None:
        renamed = []    # pooled, under their directory's name: said, never "left out"
        distinct, same = store.distinct_runs([main_data.run] + list(others), renamed=renamed)
        others = distinct[1:]
        left_out += [f"run {line}" for line in same]
        for line in renamed:
            if log is not None:
                log(line)
    for run in others:
        try:
            manifest = run.read_manifest()
        except (store.ResultFileError, OSError):
            continue   # named below, when the run is read
        why = same_command(main_data.manifest, manifest)
        if why is not None:
            raise cli.BadInput(f"--pool: run {run.run_id} is of another command ({why} as run "
                               f"{main_name}); pool runs of one command")
    runs = [run_cells(main_data, main_name, threshold, main_an)]
    main_builds = main_data.manifest.get("interpreters", {})
    for run in store.progress(others, "runs of the pool", log):
        try:
            data = analysis.load_run(run)
        except (store.ResultFileError, OSError) as exc:
            # the run's own path left out: a page never shows a path of this machine
            why = str(exc).replace(str(run.path), run.run_id)
            left_out.append(f"run {run.run_id} (cannot be read: {cli.one_line(why)})")
            continue
        unread = [name for name, _ in data.problems if not phase.is_phase_file(name)]
        if unread or data.frame.empty:
            what = ", ".join(unread) if unread else "no result files"
            left_out.append(f"run {run.run_id} (cannot be read: {cli.one_line(what)})")
            continue
        cells = run_cells(data, run.run_id, threshold)
        differ = sorted(label for label, info in data.manifest.get("interpreters", {}).items()
                        if label in main_builds and not same_build(info, main_builds[label]))
        if differ:
            cells.cells = {key: c for key, c in cells.cells.items()
                           if key[1] not in differ and key[2] not in differ}
            left_out.append(f"run {run.run_id}'s cells of {', '.join(differ)} (another "
                            f"interpreter build than run {main_name}'s)")
        revised = revised_ops({key[0] for key in cells.cells}, run.run_id, main_name)
        if revised:
            cells.cells = {key: c for key, c in cells.cells.items() if key[0] not in revised}
            left_out.append(f"run {run.run_id}'s cells of {', '.join(revised)} (the op's "
                            f"code changed between it and run {main_name})")
        if selection_of(data.manifest) is None and selection_of(main_data.manifest):
            left_out.append(f"run {run.run_id} states no selection (made before run specs): "
                            "pooled on the cells it shares")
        runs.append(cells)
    keys = list(runs[0].cells)
    return Pool(main_name, runs, pool_cells(runs, threshold, keys), left_out, threshold)
