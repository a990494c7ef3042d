"""How far stored runs agree: the spread of their release-step ratios, verdicts, findings, A/A.

    nox -s agree -- RUN RUN [RUN ...] [--threshold 0.05] [--results-dir results] [--json FILE]

RUN is a run directory (``results/<run-id>``) or a run id in ``--results-dir``.
Each run is analysed as its report is (the same paired ratios, intervals and
findings rule); over the (op, release step) cells every run has, it prints the
spread |log(r_i / r_j)| over every pair of runs (median, p90, max), the cells
that moved most, the share of cells whose verdict (slower, faster, same) is the
same in every run, the findings that hold in every run and those that do not,
and each run's A/A twin. Runs that differ in suites, ops, interpreters or
conditions are compared on what they share, and the rest is named.

Exit status: 0 done; 2 bad input (a missing, damaged or foreign run, fewer than
two different runs), in one line naming the run. A run given twice (its id again,
its directory by another path, a copied directory: the same manifest) is compared
once, said in one line on stderr. ``--json FILE`` also
writes every figure and shared cell as JSON (a new file; nothing is overwritten).
The work is in iomatrix.commands.agree; this file is the command line.
"""
from __future__ import annotations

import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.commands import agree
from iomatrix.reporting import pages

ROOT = Path(__file__).resolve().parent.parent


@cli.main_guard
def main(argv=None) -> int:
    parser = cli.Parser(prog="nox -s agree --", description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="run directory or run id (two or more)")
    parser.add_argument("--results-dir", type=cli.results_dir, default=ROOT / "results",
                        help="where run ids are looked up (default: results/)")
    parser.add_argument("--threshold", type=cli.threshold, default=pages.DEFAULT_THRESHOLD,
                        help="a finding is significant and beyond this either way "
                             "(default: %(default)s = 5%%, as the report)")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write every figure and shared cell as JSON here (a new file)")
    args = parser.parse_args(argv)
    if args.json is not None:
        agree.check_json_destination(args.json)
    result = agree.agree(args.runs, args.results_dir, args.threshold)
    print(cli.terminal_text(agree.render(result)))
    if args.json is not None:
        agree.write_json(result, args.json)
        print(f"agree: wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
