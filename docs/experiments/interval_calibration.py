"""Are a run's 95% intervals honest? Compare several runs of the same command.

Usage (from the project root, after the report of each run was written):

    python3 docs/experiments/interval_calibration.py RUN RUN [RUN ...]

RUN is a run id (reads reports/<RUN>/data.csv, the report's tidy table), a report's pages
directory (DIR/data.csv, as `--out DIR.md` writes) or a data.csv file. For every
(series, op) ratio to the oldest interpreter that two runs share, it standardises the difference of
their log ratios by the two intervals: z = |log r_i - log r_j| / sqrt(s_i^2 + s_j^2),
with s = (log high - log low) / (2 * 1.96). If the intervals are right, z is distributed
as |N(0, 1)|: median 0.67, 90th percentile 1.64, 5% above 1.96. Intervals that are too
narrow (a run-level effect they do not hold) give larger z.

It also prints how often one run's interval holds another run's estimate. For correct
95% intervals of two runs with equal spread that is P(|Z| < 1.96 / sqrt(2)) = 83%, not
95%: the other estimate has its own error.

And the agreement of the report's own ratios to the oldest release, the paired ones a
reader sees: |log r_i - log r_j| over every pair of runs (median, 90th percentile,
maximum, as `nox -s agree` computes them: iomatrix.commands.agree.spread_figures), and the share
of ratios whose verdict (significantly slower, faster, or neither) is the same in every
run. `nox -s agree` gives the same kind of figures from the stored runs themselves, for
the release steps and with the report's findings rule.
"""
import itertools
import math
import statistics
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from iomatrix.commands.agree import spread_figures  # noqa: E402  (the project's one spread arithmetic)

Z95 = 1.959964


def data_csv(run: str) -> Path:
    given = Path(run)
    if given.is_file():
        return given
    if (given / "data.csv").is_file():
        return given / "data.csv"
    return Path("reports") / run / "data.csv"


def ratios(run: str) -> pd.DataFrame:
    table = pd.read_csv(data_csv(run), dtype={"series": str, "against": str})
    table = table[(table.statistic == "ratio_to_oldest") & table.low.notna() & table.high.notna()]
    return table.set_index(["series", "op"])[["value", "low", "high"]]


def verdict(row) -> int:
    """1 significantly slower, -1 faster, 0 neither: the interval against 1."""
    return 1 if row.low > 1 else -1 if row.high < 1 else 0


def main(run_ids: list[str]) -> int:
    if len(run_ids) < 2:
        print(__doc__)
        return 2
    tables = {run_id: ratios(run_id) for run_id in run_ids}
    zs, held = [], []
    for a, b in itertools.permutations(run_ids, 2):
        shared = tables[a].index.intersection(tables[b].index)
        for key in shared:
            ra, rb = tables[a].loc[key], tables[b].loc[key]
            held.append(ra.low <= rb.value <= ra.high)
            if run_ids.index(a) < run_ids.index(b):
                sa = (math.log(ra.high) - math.log(ra.low)) / (2 * Z95)
                sb = (math.log(rb.high) - math.log(rb.low)) / (2 * Z95)
                zs.append(abs(math.log(ra.value / rb.value)) / math.hypot(sa, sb))
    zs.sort()
    p90 = zs[int(0.9 * (len(zs) - 1))]
    shared = set.intersection(*(set(t.index) for t in tables.values()))
    spread = sorted(abs(math.log(tables[a].loc[key].value / tables[b].loc[key].value))
                    for a, b in itertools.combinations(run_ids, 2) for key in shared)
    same_verdict = sum(len({verdict(tables[run].loc[key]) for run in run_ids}) == 1
                       for key in shared)
    print(f"run pairs x ratios: {len(zs)}")
    print(f"z: median {statistics.median(zs):.2f} (calibrated: 0.67), p90 {p90:.2f} (1.64), "
          f"above 1.96: {sum(z > Z95 for z in zs) / len(zs):.1%} (5%)")
    print(f"a run's interval holds another run's estimate: {sum(held) / len(held):.1%} "
          f"(calibrated: 83%)")
    median, p90, largest = spread_figures(spread)
    print(f"the report's ratios, |log(ratio_i/ratio_j)|: median "
          f"{median:.3f}, p90 {p90:.3f}, max "
          f"{largest:.3f}; verdict the same in every run: {same_verdict} of {len(shared)} "
          f"({same_verdict / len(shared):.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
