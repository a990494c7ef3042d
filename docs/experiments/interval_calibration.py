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
"""
import itertools
import math
import statistics
import sys
from pathlib import Path

import pandas as pd

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
    print(f"run pairs x ratios: {len(zs)}")
    print(f"z: median {statistics.median(zs):.2f} (calibrated: 0.67), p90 {p90:.2f} (1.64), "
          f"above 1.96: {sum(z > Z95 for z in zs) / len(zs):.1%} (5%)")
    print(f"a run's interval holds another run's estimate: {sum(held) / len(held):.1%} "
          f"(calibrated: 83%)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
