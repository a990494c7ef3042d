"""Where a main command's timing went, and what fewer extra rounds would have said.

    python3 docs/experiments/main_speed.py gaps RUN_DIR
    python3 docs/experiments/main_speed.py cut RUN_DIR --at 0,30,60,75,90,120

``gaps``: from every worker's own start and end of each op (``iomatrix_started``,
``iomatrix_finished``: after the op's setup, around its warm-ups and values), the planned and
the extra rounds' spans, the time some worker was inside an op, the time between two lockstep
groups (worker start-up not hidden, the host's work between groups), and each extra round's
start, end and processes, from the end of the planned rounds.

``cut``: every release step of the lineage and the A/A twin against its original, each op, as
the report decides it (paired Hodges-Lehmann ratio with its Wilcoxon interval, a finding when
the interval excludes 1 and the estimate is beyond 5%), with the extra rounds that ended by
each time after the planned rounds, against the whole run: an extra round depends only on the
rounds before it, so a cut is the run a smaller extra budget would have made. Reads a run
directory as stored (its files gzipped or not). Needs scipy (run it with the report's
environment: .nox/report/bin/python).
"""
import argparse
import collections
import glob
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))

THRESHOLD = 0.05


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def processes(run_dir):
    """(series, suite, round, op, mean, started, finished) of every worker's op."""
    rows = []
    for path in glob.glob(os.path.join(run_dir, "*.json*")):
        name = os.path.basename(path)
        if ".counters." in name or name.startswith(("manifest", "native")):
            continue
        document = load(path)
        top = document.get("metadata", {})
        for bench in document["benchmarks"]:
            shared = {**top, **bench.get("metadata", {})}
            for process in bench["runs"]:
                meta = {**shared, **process.get("metadata", {})}
                values = process.get("values") or []
                if "iomatrix_started" not in meta or not values:
                    continue
                rows.append((meta["iomatrix_series"], meta["iomatrix_suite"],
                             meta["iomatrix_round"], meta["name"], sum(values) / len(values),
                             meta["iomatrix_started"], meta["iomatrix_finished"]))
    return rows


def planned_rounds(run_dir):
    manifest = load_manifest(run_dir)
    return (manifest.get("profile_settings") or {}).get("rounds", 8)


def load_manifest(run_dir):
    for name in ("manifest.json", "manifest.json.gz"):
        if os.path.exists(os.path.join(run_dir, name)):
            return load(os.path.join(run_dir, name))
    return {}


def union(intervals):
    total, current = 0.0, None
    for start, end in sorted(intervals):
        if current is None or start > current[1]:
            if current is not None:
                total += current[1] - current[0]
            current = [start, end]
        else:
            current[1] = max(current[1], end)
    return total + (current[1] - current[0] if current else 0.0)


def gaps(run_dir):
    rows = processes(run_dir)
    planned = planned_rounds(run_dir)
    groups = collections.defaultdict(list)
    for series, suite, round_, op, _, start, end in rows:
        # a lockstep group: one (round, suite) of batches, or one op of the one-op series
        key = (round_, suite, op) if "@" in series else (round_, suite)
        groups[key].append((start, end))
    spans = sorted((min(s for s, _ in g), max(e for _, e in g), k) for k, g in groups.items())
    between = sum(max(0.0, b[0] - a[1]) for a, b in zip(spans, spans[1:]))
    for label, chosen in (("planned", [r for r in rows if r[2] < planned]),
                          ("extra", [r for r in rows if r[2] >= planned])):
        if chosen:
            start, end = min(r[5] for r in chosen), max(r[6] for r in chosen)
            print(f"{label} rounds: {end - start:.1f} s from the first op to the last, "
                  f"{union([(r[5], r[6]) for r in chosen]):.1f} s with a worker inside an op, "
                  f"{len(chosen)} worker ops")
    print(f"between groups: {between:.1f} s over {len(spans)} groups "
          f"({between / max(1, len(spans) - 1):.2f} s each)")
    planned_end = max((r[6] for r in rows if r[2] < planned), default=0.0)
    by_round = collections.defaultdict(list)
    for row in rows:
        if row[2] >= planned:
            by_round[row[2]].append(row)
    for round_ in sorted(by_round):
        chosen = by_round[round_]
        print(f"  extra round {round_ + 1}: +{min(r[5] for r in chosen) - planned_end:.1f} s "
              f"to +{max(r[6] for r in chosen) - planned_end:.1f} s, {len(chosen)} worker ops")


def lineage_and_twins(run_dir, series):
    """The lineage's series in version order and the (original, twin) A/A pairs, as the
    bench side takes them (planning.lineage_labels) from the manifest's interpreters."""
    from iomatrix.interpreters import discovery
    from iomatrix.measuring import planning
    manifest = load_manifest(run_dir)
    interps = []
    for label, entry in (manifest.get("interpreters") or {}).items():
        if label in series and "version_info" in entry:
            interps.append(discovery.Interpreter(label, entry.get("executable", ""),
                                                 entry.get("source", ""), entry))
    lineage = planning.lineage_labels(interps)
    ordered = sorted((i for i in interps if i.label in lineage), key=lambda i: i.version_info)
    twins = [(entry["aa_of"], label) for label, entry in manifest["interpreters"].items()
             if entry.get("aa_of") and label in series]
    return [i.label for i in ordered], twins


def verdict(a, b):
    from iomatrix import stats
    try:
        comparison = stats.compare(a, b, paired=True)
    except ValueError:
        return None
    if not comparison.significant:
        return 0
    if comparison.ratio > 1 + THRESHOLD:
        return 1
    return -1 if comparison.ratio < 1 / (1 + THRESHOLD) else 0


def cut(run_dir, cuts):
    rows = processes(run_dir)
    planned = planned_rounds(run_dir)
    planned_end = max(r[6] for r in rows if r[2] < planned)
    means = collections.defaultdict(dict)
    for series, _, round_, op, mean, start, end in rows:
        if "@" not in series and "~" not in series:
            means[(series, op)][round_] = (mean, end)
    lineage, twins = lineage_and_twins(run_dir, {s for s, _ in means})
    steps = list(zip(lineage, lineage[1:])) + twins
    ops = sorted({op for _, op in means})

    def verdicts(limit):
        found = {}
        for old, new in steps:
            for op in ops:
                if (old, op) in means and (new, op) in means:
                    a, b = ({r: m for r, (m, end) in means[(s, op)].items()
                             if r < planned or end - planned_end <= limit} for s in (old, new))
                    found[(old, new, op)] = verdict(a, b)
        return found

    whole = verdicts(float("inf"))
    aa_ops = [k for k in whole if (k[0], k[1]) in twins and "__control" not in k[2]]
    print(f"{len(whole)} cells ({len(steps) - len(twins)} release steps and "
          f"{len(twins)} A/A twin x ops)")
    for limit in [float("inf")] + cuts:
        found = whole if limit == float("inf") else verdicts(limit)
        changed = [k for k in found if found[k] != whole[k]]
        reversed_ = [k for k in changed if found[k] and whole[k] and found[k] != whole[k]]
        flagged = sum(1 for k in aa_ops if found[k])
        print(f"extra rounds to {'the end' if limit == float('inf') else f'+{limit:g} s'}: "
              f"{sum(1 for k in found if found[k] and k not in aa_ops)} findings, A/A "
              f"{flagged} of {len(aa_ops)} I/O ops flagged; {len(changed)} cells with another "
              f"verdict than the whole run, {len(reversed_)} reversed")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("gaps")
    p.add_argument("run_dir")
    p = sub.add_parser("cut")
    p.add_argument("run_dir")
    p.add_argument("--at", default="0,30,60,75,90,120",
                   help="seconds after the planned rounds, comma-separated")
    args = parser.parse_args(argv)
    if args.command == "gaps":
        gaps(args.run_dir)
    else:
        cut(args.run_dir, [float(x) for x in args.at.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
