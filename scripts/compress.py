"""Compress finished runs' series and counters files in place (``<series>.json.gz``).

    python3 scripts/compress.py RUN [RUN ...] [--results-dir results]

RUN is a run id in ``--results-dir``. Each plain ``<series>.json`` and
``<series>.counters.json`` becomes its gzip file (no name or time stored in it, so
one content always gives one file), read back and compared before the plain file is
removed; the manifest and phase files stay plain. Every reader (report, compare,
agree, history, pyperf itself) takes either form. A run with unmerged parts or
half-written files, or in use by a bench process, is refused (exit 2). Standard
library only: it runs on any Python 3.9+. The work is in iomatrix.storing.store.
"""
from __future__ import annotations

import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.storing import store

ROOT = Path(__file__).resolve().parent.parent


@cli.main_guard
def main(argv=None) -> int:
    parser = cli.Parser(prog="python3 scripts/compress.py", description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN", type=cli.run_id)
    parser.add_argument("--results-dir", type=Path, default=ROOT / "results")
    args = parser.parse_args(argv)
    runs = [store.Run(args.results_dir, run_id) for run_id in args.runs]
    for run in runs:   # every run checked before the first is touched
        if not (run.path / store.MANIFEST).is_file() or run.path.is_symlink():
            raise cli.BadInput(f"run {run.run_id}: no {store.MANIFEST} in --results-dir")
    for run in runs:
        done = store.compress_run(run)
        print(f"compress: {run.run_id}: {len(done)} files compressed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
