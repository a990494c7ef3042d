"""Compare two runs, or two result files, op by op: a pull-request comment and an exit status.

    nox -s compare -- A B [--results-dir results] [--label L] [--fail-above 0.05] [--out FILE]
                          [--json FILE] [--allow-condition-change] [--fail-on CLASSES]

The work is in iomatrix.commands.compare (its docstring says what the command does);
this file is the command line.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from iomatrix import cli
# compare() is the library call the tests use, re-exported here (the release command runs
# this script)
from iomatrix.commands.compare import (DEFAULT_FAIL_ABOVE, CompareError, as_json,  # noqa: F401
                                       compare, compare_full, json_text)
from iomatrix.storing import outputs, schema

ROOT = Path(__file__).resolve().parent.parent


@cli.main_guard
def main(argv=None) -> int:
    parser = cli.Parser(prog="nox -s compare --", description=__doc__.split("\n")[0])
    parser.add_argument("a", metavar="A", help="run directory, run id or result file (before)")
    parser.add_argument("b", metavar="B", help="run directory, run id or result file (after)")
    parser.add_argument("--results-dir", type=cli.results_dir, default=ROOT / "results",
                        help="where run ids are looked up (default: results/)")
    parser.add_argument("--label", default=None,
                        help="compare only this series (default: every series both runs have)")
    parser.add_argument("--fail-above", type=cli.fail_above, default=DEFAULT_FAIL_ABOVE,
                        help="a significant slowdown above this fails (default: %(default)s = 5%%)")
    parser.add_argument("--fail-on", type=cli.fail_on, default=None, metavar="CLASSES",
                        help="which regressions fail the gate by their class: any (default), "
                             "or comma-separated: " + ", ".join(cli.FAIL_ON_CLASSES))
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    parser.add_argument("--json", type=Path, default=None,
                        help="also write every comparison (ratio, interval, verdict) as JSON here")
    parser.add_argument("--allow-condition-change", action="store_true",
                        help="gate a comparison whose two sides were measured under different "
                             "conditions (default: state the differences, exit 0)")
    args = parser.parse_args(argv)
    for path, option in ((args.out, "--out"), (args.json, "--json")):
        if path is not None:
            outputs.check_outputs([path], option)   # refused before any work, not after
    if args.out is not None and args.json is not None and \
            os.path.abspath(args.out) == os.path.abspath(args.json):
        raise CompareError(f"--out and --json are the same file ({args.out})")
    try:
        result = compare_full(args.a, args.b, args.results_dir, args.label, args.fail_above,
                              args.allow_condition_change, args.fail_on)
    except CompareError as exc:
        print(f"compare: error: {cli.one_line(exc)}", file=sys.stderr)
        return cli.EXIT_BAD_INPUT
    print(cli.terminal_text(result.text))
    files, options = {}, {}
    if args.json:
        document = as_json(result.sections, args.fail_above, result.phases, result.differences,
                           result.gated, result.counts_host, args.fail_on)
        schema.check("compare output", document)  # what we write is what we promise to read
        files[args.json], options[args.json] = json_text(document), "--json"
    if args.out:
        files[args.out], options[args.out] = result.text + "\n", "--out"
    if files:   # all or none: a full disk while writing one leaves neither changed
        outputs.write_outputs(files, options)
        print(f"compare: wrote {', '.join(map(str, files))}", file=sys.stderr)
    return result.status


if __name__ == "__main__":
    sys.exit(main())
