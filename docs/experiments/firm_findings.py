"""Do firm findings hold in the next run? Compare the release-step findings of several runs.

Usage (from the project root):

    python3 docs/experiments/firm_findings.py RUN RUN [RUN ...] [--threshold 0.05]

RUN is a run directory or a run id under results/. Each run is analysed as the report does
(iomatrix.analysing.comparisons: findings significant and beyond the threshold either way, each
"firm" or "borderline" by stats.next_run_interval and the op's floor, Analysis.firm_floor,
never firm from a series that splits into modes). Printed: the floor per run (median over
its findings, as a ratio), and for the release-step cells that are a firm finding in some run:

- pairwise: over every (run where the cell is firm, another run), the share where the other
  run has it as a finding (firm or borderline) the same way;
- every other run: the share of those cells that are a finding the same way in every run
  besides one where they are firm;
- contradicted: firm cells that another run has significantly the other way, or with its
  whole 95% interval within the threshold either side;
- firm from split: firm findings whose series the run names as split into modes (0 by rule).

The issue's target (issue 26): at least 95% a finding in the other runs, none contradicted.
"""
import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from iomatrix.analysing import analysis, comparisons  # noqa: E402
from iomatrix.storing import store

RESULTS = Path(__file__).resolve().parents[2] / "results"


class BadInput(Exception):
    """A one-line error for the user (exit status 2)."""


def run_of(given: str) -> store.Run:
    path = Path(given) if Path(given).is_dir() else RESULTS / given
    if not (path / store.MANIFEST).is_file():
        raise BadInput(f"{given}: not a run directory (no {store.MANIFEST})")
    return store.Run(path.parent, path.name)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction between 0 and 1 (0.05: 5%)")
    return value


def side(ratio: float) -> int:
    return 1 if ratio > 1 else -1


def replication(analyses: list) -> dict:
    """The figures of the module docstring, from one Analysis per run."""
    found = [{(f.op, f.a, f.b): f for f in an.findings()} for an in analyses]
    firm = {cell for run in found for cell, f in run.items() if f.firmness == "firm"}
    pairs = held = in_every_other = 0
    contradicted = set()
    for cell in sorted(firm):
        holds_everywhere = True
        for i, run in enumerate(found):
            if cell not in run or run[cell].firmness != "firm":
                continue
            way = side(run[cell].comparison.ratio)
            for j, an in enumerate(analyses):
                if j == i or cell not in an.step_cmp:
                    continue
                pairs += 1
                other = found[j].get(cell)
                if other is not None and side(other.comparison.ratio) == way:
                    held += 1
                else:
                    holds_everywhere = False
                c = an.step_cmp[cell]
                within = c.low is not None and 1 / (1 + an.threshold) < c.low \
                    and c.high < 1 + an.threshold
                if within or (c.significant and side(c.ratio) != way):
                    contradicted.add(cell)
        in_every_other += holds_everywhere
    floors = [sorted(f.floor for f in run.values() if f.floor is not None) for run in found]
    return {"findings": [len(run) for run in found],
            "floor": [math.exp(fl[len(fl) // 2]) if fl else math.nan for fl in floors],
            "firm": [sum(f.firmness == "firm" for f in run.values()) for run in found],
            "firm_cells": len(firm), "pairs": pairs, "held": held,
            "in_every_other": in_every_other, "contradicted": sorted(contradicted),
            "firm_from_split": sum(f.firmness == "firm" and f.modes is not None
                                   for run in found for f in run.values())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="firm_findings.py", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN")
    parser.add_argument("--threshold", type=fraction, default=0.05)
    args = parser.parse_args(argv)
    try:
        if len(args.runs) < 2:
            raise BadInput("give two runs or more")
        analyses = [comparisons.analyse(analysis.load_run(run_of(r)), None, args.threshold)
                    for r in args.runs]
    except (BadInput, store.ResultFileError) as exc:
        print(f"firm_findings.py: {exc}", file=sys.stderr)
        return 2
    fig = replication(analyses)
    print(f"runs: {', '.join(args.runs)}; threshold {args.threshold:.0%}")
    print(f"findings per run: {fig['findings']}; firm per run: {fig['firm']}")
    print("floor beyond the threshold per run (median, ratio): "
          + ", ".join(f"{x:.3f}" for x in fig["floor"]))
    print(f"firm in some run: {fig['firm_cells']} release-step cells")
    share = fig["held"] / fig["pairs"] if fig["pairs"] else math.nan
    print(f"pairwise: a finding the same way in the other run {fig['held']}/{fig['pairs']} "
          f"({share:.1%})")
    every = fig["in_every_other"] / fig["firm_cells"] if fig["firm_cells"] else math.nan
    print(f"every other run: a finding the same way {fig['in_every_other']}/{fig['firm_cells']} "
          f"({every:.1%})")
    print(f"contradicted (significantly the other way, or wholly within ±{args.threshold:.0%}, "
          f"in another run): {len(fig['contradicted'])}"
          + "".join(f"\n  {op} {a} -> {b}" for op, a, b in fig["contradicted"]))
    print(f"firm findings from a series split into modes: {fig['firm_from_split']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
