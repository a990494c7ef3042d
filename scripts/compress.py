"""Compress finished runs' series and counters files in place (``<series>.json.gz``).

    python3 scripts/compress.py RUN [RUN ...] [--results-dir results]

RUN is a run id in ``--results-dir``. Each plain ``<series>.json`` and
``<series>.counters.json`` becomes its gzip file (no name or time stored in it, so
one content always gives one file), written under a hidden half-written name, synced,
renamed into place, read back and compared before the plain file is removed; the
manifest and phase files stay plain. Every reader (report, compare, agree, history,
pyperf itself) takes either form. A compress that was killed is finished by the next:
a plain file beside its complete compressed copy is the leftover (removed; the readers
read the plain one meanwhile, nothing is lost), a damaged compressed file is written
again from the plain one. A run with unmerged parts or files a session left
half-written, a file stored both ways with other results in each, or a run in use by a
bench process, is refused (exit 2). A full disk is exit 3, one line saying which files
are compressed; every other file stays plain and whole. Standard library only: it runs
on any Python 3.9+. The work is in iomatrix.storing.store.
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
    parser.add_argument("--results-dir", type=cli.results_dir, default=ROOT / "results")
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
