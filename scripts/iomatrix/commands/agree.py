"""How far stored runs of one command agree, by the report's own arithmetic.

The unit is a *cell*: one op at one release step of the lineage (``3.12 → 3.13``),
the ratio a reader sees in a report's release-step table. Every run is analysed
exactly as its report is (``comparisons.analyse``: paired Hodges-Lehmann ratios
of a lockstep run, the report's findings rule), and then, over the cells every
run has:

- the spread: ``|log(r_i / r_j)|`` for every pair of runs and every cell, as
  median, 90th percentile and maximum, and the cells that moved most;
- the verdicts: a cell is slower, faster or the same in a run as its report
  decides (a finding: significant and beyond the threshold either way); the
  share of cells whose verdict is the same in every run;
- the findings that hold in every run, and those that do not;
- each run's A/A twin: ops flagged significant and the geometric mean ratio
  (the report's A/A section, ``sections.section_aa``).

Runs that differ in suites, ops, interpreters or steps are compared on what they
share; the rest is named. Conditions that differ (allocator, clock, output,
cache, affinity, profile, ...) are named first: the spread then measures them
too. A run that is missing, not a run directory, or has a file that cannot be
read is bad input (``cli.BadInput``, exit 2), named.

Here are the text and the JSON; the runs read, their cells and what they share are
computed in ``iomatrix.commands.agreement`` (its names are importable from here too).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from pathlib import Path

from iomatrix import cli, stats
from iomatrix.analysing import pooling
from iomatrix.storing import store
from iomatrix.reporting.markdown import code, fmt_ratio, fmt_value, md, table
# The runs, their cells and what they share are computed in agreement.py; the names stay
# importable from here, where the command line and the tests have always found them.
from iomatrix.commands.agreement import (  # noqa: F401
    CONDITION_KEYS, MOVED_MOST, SPREAD_PERCENTILE, AATwin, Agreement, Cell, Replication,
    RunView, aa_twins, agree, condition_differences, conditions, left_out, load, load_runs,
    replication, replications, resolve, spread_figures, spreads)


# -- the text --------------------------------------------------------------------------

def replication_lines(found: list[Replication]) -> list[str]:
    """The firm findings' replication, split by whether the two runs share a boot: within
    one boot a run's noise repeats; across boots (another machine of the same kind, or the
    same after a reboot) the host moves too, and that is the figure a reader relies on."""
    if not found:
        return []
    lines = ["#### Firm findings in the other run", "",
             "Per ordered pair of runs: the first run's firm findings (in the cells both "
             "have) that the other run has as a finding the same way, those it contradicts "
             "(significant the other way, or its whole interval within the threshold), and how "
             "often the first run's resampled interval (data.csv's resampled_low/high) holds the "
             "other run's estimate.", ""]
    rows = []
    for r in found:
        boot = {True: "same boot", False: "different boots", None: "not recorded"}[r.same_boot]
        rows.append([code(r.source), code(r.other), boot,
                     f"{r.held} of {r.firm}" + (f" ({r.held / r.firm:.1%})" if r.firm else ""),
                     str(r.contradicted),
                     f"{r.covered} of {r.next_run}"
                     + (f" ({r.covered / r.next_run:.0%})" if r.next_run else "")])
    lines += [table(rows, ["run", "other run", "boots", "firm held", "contradicted",
                           "resampled interval holds the other's estimate"],
                    ["left", "left", "left", "right", "right", "right"]), ""]
    for same, title in ((True, "one boot"), (False, "different boots"),
                        (None, "boots not recorded")):
        group = [r for r in found if r.same_boot is same]
        firm = sum(r.firm for r in group)
        if not firm:
            continue
        held = sum(r.held for r in group)
        nxt = sum(r.next_run for r in group)
        cov = sum(r.covered for r in group)
        lines.append(f"- **{title}**: firm findings held {held} of {firm} ({held / firm:.1%}), "
                     f"contradicted {sum(r.contradicted for r in group)}; resampled intervals "
                     f"hold the other run's estimate in {cov} of {nxt}"
                     + (f" ({cov / nxt:.0%})" if nxt else "") + ".")
    return lines + [""] + not_held_lines(found)


def not_held_lines(found: list[Replication]) -> list[str]:
    """Each firm finding the other run does not have, with both runs' intervals: where the
    other run's interval holds both 1 and the estimate, that run could not tell (its noise),
    which is not the same as a finding gone."""
    rows = [[code(r.source), code(r.other), code(m["op"]),
             f"{m['a']} → {m['b']}" + (f" ({m['condition']})" if m["condition"] else ""),
             interval_text(m["ratio"], m["low"], m["high"]),
             interval_text(m["other_ratio"], m["other_low"], m["other_high"]),
             "yes" if m["unresolved"] else "no"]
            for r in found for m in r.not_held]
    if not rows:
        return []
    unresolved = sum(r.unresolved for r in found)
    return ["#### Firm findings the other run does not have", "",
            f"{len(rows)} in all; in {unresolved} the other run's 95% interval holds both 1 "
            "and the first run's estimate (too wide to tell either way).", "",
            table(rows, ["run", "other run", "op", "step", "ratio [95%]", "other run's",
                         "other run could not tell"],
                  ["left", "left", "left", "left", "right", "right", "left"]), ""]


def prediction_lines(result: Agreement) -> list[str]:
    """Leave-one-out: how often the other runs' pool (the report's --pool, pooling.combine)
    expects the estimate of the run left out, over the shared cells; then the same with every
    run of one boot left out (a machine the pool has not seen). "Expects": within the pooled
    mean ± 1.96 √(SE² + τ² + the left-out run's own SE²); the printed interval, a rerun's
    prediction interval whose noise is one of the pooled runs' (pooling.rerun_interval), is
    counted beside it. The target is 90% both ways (docs/methodology.md, "Pooled numbers")."""
    if not result.one_out:
        return []
    lines = ["#### Does the pool predict a run it has not seen?", "",
             "Each run left out in turn: the other runs pooled (two-level random effects, runs "
             "within boots, docs/methodology.md \"Pooled numbers\"), and whether the pool "
             "expects the left-out run's estimate given that run's own interval (the pooled "
             "mean ± 1.96 √(its SE² + τ² + the run's own SE²)); beside it, whether the printed "
             "interval holds it (a rerun's 95% prediction interval, its noise one of the pooled "
             "runs' own: the mixture over their SEs). Over the shared cells with an interval. "
             "Target: at least 90%.", ""]

    def share(held, cells):
        return f"{held / cells:.0%}" if cells else "—"
    rows = [[code(p.left_out), str(len(p.pooled)), f"{p.held} of {p.cells}",
             share(p.held, p.cells), f"{p.held_printed} of {p.cells}",
             share(p.held_printed, p.cells)]
            for p in result.one_out + result.boot_out + result.cpu_out]
    lines += [table(rows, ["run left out", "runs pooled", "expected", "share",
                           "printed interval holds", "share"],
                    ["left", "right", "right", "right", "right", "right"]), ""]
    held, cells = pooling.totals(result.one_out)
    printed, _ = pooling.totals(result.one_out, printed=True)
    if cells:
        lines.append(f"- **One run left out**: the pool expects its estimate in {held} of "
                     f"{cells} cells ({held / cells:.1%}); the printed interval holds it in "
                     f"{printed} ({printed / cells:.1%}).")
    held, cells = pooling.totals(result.boot_out)
    printed, _ = pooling.totals(result.boot_out, printed=True)
    if cells:
        boots = len({p.left_out.split(" (boot ")[-1] for p in result.boot_out})
        every = len({pooling.boot_of(run.manifest, run.name) for run in result.runs})
        lines.append(f"- **One boot left out** (each in turn, {boots} of the {every} boots: "
                     "those with two runs outside them): the pool of the other boots' runs "
                     f"expects the estimate of each run of the left-out boot in {held} of "
                     f"{cells} cells ({held / cells:.1%}); the printed interval holds it in "
                     f"{printed} ({printed / cells:.1%}).")
    else:
        lines.append("- **One boot left out**: not checked (fewer than two runs outside every "
                     "boot).")
    lines += cpu_out_lines(result)
    if math.isfinite(result.pool_width):
        lines.append(f"- **The pool of all {len(result.runs)} runs**: the median printed "
                     f"interval is {result.pool_width:.3f} times as high as it is low; its "
                     f"between-boot floor (an SD of the log ratio) is {result.pool_floor:.4f}.")
    return lines + [""]


def cpu_out_lines(result: Agreement) -> list[str]:
    """Leave-one-CPU-kind-out, beside leave-one-boot-out (pooling.leave_one_cpu_out)."""
    kinds = list(dict.fromkeys(pooling.cpu_of(run.manifest) for run in result.runs))
    held, cells = pooling.totals(result.cpu_out)
    printed, _ = pooling.totals(result.cpu_out, printed=True)
    if not cells:
        return [f"- **One CPU kind left out**: not checked ({len(kinds)} CPU "
                f"kind{'s' * (len(kinds) != 1)}: {', '.join(map(md, kinds))}; it needs two "
                "kinds, two runs outside the one left out)."]
    left = list(dict.fromkeys(p.group for p in result.cpu_out))
    labelled, missed = result.cpu_out_labelled()
    return [f"- **One CPU kind left out** (each in turn, {len(left)} of the {len(kinds)} kinds: "
            f"{', '.join(map(md, left))}): the pool of the other kinds' runs expects the "
            f"estimate of each run of the left-out kind in {held} of {cells} cells "
            f"({held / cells:.1%}); the printed interval holds it in {printed} "
            f"({printed / cells:.1%}). Of the {missed} estimates it did not expect, "
            f"{labelled} lie in the {len(result.cpu_dependent)} cells the pool of all the "
            "runs labels \"depends on the CPU\"."]


def interval_text(ratio, low, high) -> str:
    if low is None or high is None:
        return f"{ratio:.2f}"
    return f"{ratio:.2f} [{low:.2f}, {high:.2f}]"


def render(result: Agreement) -> str:
    runs, threshold = result.runs, result.threshold
    headers = [code(run.name) for run in runs]
    lines = [f"### iomatrix agree: {', '.join(headers)}", ""]
    if result.differences:
        lines += [f"> **Conditions differ:** {'; '.join(result.differences)}. The spread "
                  "measures these differences too, not only the runs' noise.", ""]
    else:
        stated = conditions(runs[0].manifest)
        lines += ["Same conditions in every run: " + ", ".join(
            f"{md(key)} {code(value)}" for key, value in stated.items() if value is not None)
            + ".", ""]
    if result.left_out:
        lines += ["Compared on what every run has; left out: " + "; ".join(result.left_out)
                  + ".", ""]
    values = result.pair_values
    median, p90, largest = spread_figures(values)
    same = result.same_verdict()
    everywhere, somewhere = result.findings_everywhere(), result.findings_somewhere()
    pairs = len(runs) * (len(runs) - 1) // 2
    if somewhere:
        distances = [result.distance_from_one(cell) for cell in somewhere]
        flipped = (f" (their estimates a median {stats.median(distances):.0%} "
                   f"from 1, at most {max(distances):.0%})")
    else:
        flipped = ""
    methods = {run.analysis.data.paired for run in runs}
    method = stats.method_sentence(methods.pop()) if len(methods) == 1 else \
        ("The runs differ in method: a lockstep run's ratios are paired by round, another "
         f"run's unpaired. {stats.METHOD_PAIRED} Unpaired: {stats.METHOD}")
    lines += [
        "Release-step ratios as each run's report computes them. "
        f"{method} A verdict is slower or "
        f"faster when significant and beyond {threshold:.0%}, else the same.", "",
        f"- **Spread** over {len(result.cells)} cells × {pairs} pair{'s' * (pairs > 1)} of "
        f"runs, |log(r_i / r_j)|: median {median:.3f}, p{SPREAD_PERCENTILE} {p90:.3f}, "
        f"max {largest:.3f}.",
        f"- **Verdicts** the same in every run: {len(same)} of {len(result.cells)} "
        f"({len(same) / len(result.cells):.0%}).",
        f"- **Findings** that hold in every run: {len(everywhere)}; in some runs only: "
        f"{len(somewhere)}{flipped}.", ""]
    by_condition = {}
    for cell in result.cells:
        by_condition.setdefault(cell.condition, []).append(cell)
    if len(by_condition) > 1:
        # Each allocator condition on its own: the untouched allocator's ratios are larger
        # and move differently, so one mixed figure would hide either.
        for condition, cells in by_condition.items():
            c_median, c_p90, c_max = spread_figures(
                [v for cell in cells for v in result.spreads[cell]])
            c_same = [cell for cell in cells if cell in set(same)]
            lines.append(f"- {code(condition or runs[0].manifest.get('allocator') or 'steady')}"
                         f": {len(cells)} cells, spread median {c_median:.3f}, "
                         f"p{SPREAD_PERCENTILE} {c_p90:.3f}, max {c_max:.3f}; verdicts the same "
                         f"in {len(c_same)} ({len(c_same) / len(cells):.0%})")
        lines.append("")

    def ratio_row(cell):
        return [code(cell.op), md(cell.step)] + [fmt_ratio(run.cells[cell], threshold)
                                             for run in runs]
    lines += [f"#### The {min(MOVED_MOST, len(result.cells))} cells that moved most", "",
              table([ratio_row(cell) + [fmt_value(max(result.spreads[cell]), ".3f")]
                     for cell in result.moved_most()],
                    ["op", "step", *headers, "largest |log ratio|"],
                    ["left", "left"] + ["right"] * (len(runs) + 1)), ""]
    for title, found in ((f"Findings that hold in every run ({len(everywhere)})", everywhere),
                         (f"Findings that do not hold in every run ({len(somewhere)})",
                          somewhere)):
        lines += [f"#### {title}", ""]
        lines += [table([ratio_row(cell) for cell in found], ["op", "step", *headers],
                        ["left", "left"] + ["right"] * len(runs)), ""] if found else ["None.", ""]
    lines += prediction_lines(result)
    lines += replication_lines(replications(runs, threshold))
    rows = [[code(name), f"{code(twin.twin)} against {code(twin.of)}",
             f"{len(twin.flagged)} of {twin.ops}" + (f" ({twin.untested} untested)"
                                                     if twin.untested else ""),
             fmt_value(twin.geometric_mean, ".3f"), ", ".join(map(code, twin.flagged)) or "—"]
            for name, twins in result.aa.items() for twin in twins]
    lines += ["#### A/A twins", ""]
    lines += [table(rows, ["run", "twin", "ops flagged", "geometric mean", "flagged"],
                    ["left", "left", "right", "right", "left"]), ""] if rows else \
        ["No run has an A/A twin.", ""]
    return "\n".join(lines)


def as_json(result: Agreement) -> dict:
    """The figures and every shared cell, machine-readable."""
    median, p90, largest = spread_figures(result.pair_values)

    def side(comparison, verdict):
        return {"ratio": comparison.ratio, "low": comparison.low, "high": comparison.high,
                "significant": comparison.significant, "verdict": verdict}

    def cell_json(cell):
        return {"op": cell.op, "a": cell.a, "b": cell.b, "condition": cell.condition or None,
                "largest_spread": max(result.spreads[cell]),
                "runs": {run.name: side(run.cells[cell], run.verdicts[cell])
                         for run in result.runs}}
    return {
        "runs": [{"name": run.name, "path": str(run.run.path),
                  "conditions": conditions(run.manifest)} for run in result.runs],
        "threshold": result.threshold, "condition_differences": result.differences,
        "left_out": result.left_out, "cells": len(result.cells),
        "spread": {"median": median, f"p{SPREAD_PERCENTILE}": p90, "max": largest,
                   "values": len(result.pair_values)},
        "same_verdict": len(result.same_verdict()),
        "findings_everywhere": [cell_json(c) for c in result.findings_everywhere()],
        "findings_somewhere": [cell_json(c) for c in result.findings_somewhere()],
        "aa": {name: [dataclasses.asdict(t) for t in twins] for name, twins in result.aa.items()},
        "replication": [dataclasses.asdict(r)
                        for r in replications(result.runs, result.threshold)],
        "all_cells": [cell_json(c) for c in result.cells],
        "prediction": {**{kind: [{"left_out": p.left_out, "pooled": p.pooled, "cells": p.cells,
                                  "held": p.held, "held_printed": p.held_printed}
                                 for p in found]
                          for kind, found in (("one_run_out", result.one_out),
                                              ("one_boot_out", result.boot_out),
                                              ("one_cpu_out", result.cpu_out))},
                       "median_width": result.pool_width if math.isfinite(result.pool_width)
                       else None, "boot_floor": result.pool_floor},
    }


def check_json_destination(path: Path) -> None:
    """Refuse a --json file that exists (results are never replaced) or that would land in
    a run directory, where any *.json is read as one of the run's series."""
    path = Path(path)
    if os.path.lexists(path):
        raise cli.BadInput(f"--json {path}: exists; choose a new name (nothing is overwritten)")
    parent = path.parent.resolve()
    if (parent / store.MANIFEST).exists():
        raise cli.BadInput(f"--json {path}: {parent} is a run directory, where a JSON file "
                           "would be read as a series; write it elsewhere")
    store.check_output(path, "--json")   # nor in any run's results, symbolic links followed


def write_json(result: Agreement, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    store.atomic_write_text(path, json.dumps(as_json(result), indent=1) + "\n",
                            overwrite=False)
