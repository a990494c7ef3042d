"""A results store of many small runs, to time history and the pool on it (issue 56, family 7).

    python3 docs/experiments/many_runs.py OUT [--runs 10000] [--copies 0]

Writes ``OUT/results/`` holding ``--runs`` runs of one command, each as the hostile probe's
``make_run`` builds a small valid run (two series, 3.12 and 3.13, two lutz2009 ops, six
processes each, counters and a phase probe), one minute apart from 2026-01-01 on; run ids
``20260101T000000Z-r00000`` and on. ``--copies N`` also copies the first N runs to a
directory of another name (the same run twice: issue 56's family 4). OUT must not exist
(never the repository's results/). Then, with an interpreter that has the report's extras:

    /usr/bin/time -v .nox/tests/bin/python scripts/history.py 3.13 \\
        --results-dir OUT/results --out /tmp/h/h.md
    /usr/bin/time -v .nox/tests/bin/python scripts/report.py --results-dir OUT/results \\
        --run-id 20260101T000000Z-r09999 --pool --out /tmp/h/p.md --no-figures
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def probe_module():
    """hostile_probe.py beside this file, for its make_run and RunSpec."""
    spec = importlib.util.spec_from_file_location("hostile_probe", HERE / "hostile_probe.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module        # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def run_id_of(k: int) -> str:
    return (START + dt.timedelta(minutes=k)).strftime("%Y%m%dT%H%M%SZ") + f"-r{k:05d}"


def make_runs(results: Path, count: int, copies: int = 0, probe=None) -> list[Path]:
    """``count`` small runs of one command in ``results``, and ``copies`` of them again under
    other names (``<run id>-copy``); their directories. ``probe``: the hostile probe's
    module, when it is the caller (else loaded from beside this file)."""
    probe = probe or probe_module()
    made = []
    for k in range(count):
        when = START + dt.timedelta(minutes=k)
        spec = probe.RunSpec(run_id=run_id_of(k), speed={"3.13": 1.0 + 0.0001 * (k % 50)},
                             manifest={"started": when.isoformat(), "boot_id": f"boot-{k % 7}",
                                       "spec": {"selection": "core"}})
        made.append(probe.make_run(results, spec))
    for path in made[:copies]:
        shutil.copytree(path, path.with_name(path.name + "-copy"))
    return made


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="a new directory (its results/ is made)")
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--copies", type=int, default=0)
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out}: exists; give a new directory")
    started = time.monotonic()
    make_runs(args.out / "results", args.runs, args.copies)
    print(f"{args.runs} runs ({args.copies} copied) in {args.out / 'results'}, "
          f"{time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
