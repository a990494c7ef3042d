"""One interpreter series across every run of a results directory: a table and a figure.

    nox -s history -- LABEL [--results-dir results] [--out FILE] [--figure PNG]

The work is in iomatrix.commands.history (its docstring says what the command does);
this file is the command line.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.commands.history import HistoryError, build_markdown, collect, draw
from iomatrix.storing import store

ROOT = Path(__file__).resolve().parent.parent


def log(text: str) -> None:
    """A progress line of the reading (thousands of runs take a while)."""
    print(f"history: {text}", file=sys.stderr, flush=True)


@cli.main_guard
def main(argv=None) -> int:
    parser = cli.Parser(prog="nox -s history --", description=__doc__.split("\n")[0])
    parser.add_argument("label", metavar="LABEL", type=cli.series,
                        help="an interpreter series, e.g. 3.13 or 3.13+pyio")
    parser.add_argument("--results-dir", type=cli.results_dir, default=ROOT / "results")
    parser.add_argument("--out", type=Path, default=None, help="also write the markdown here")
    parser.add_argument("--figure", type=Path, default=None, help="write the figure (PNG) here")
    args = parser.parse_args(argv)
    for path, option in ((args.out, "--out"), (args.figure, "--figure")):
        if path is not None:
            store.check_output(path, option)   # refused before any work, not after
    try:
        found, problems, same = collect(args.results_dir, args.label, log)
    except HistoryError as exc:
        print(f"history: error: {cli.one_line(exc)}", file=sys.stderr)
        return 2
    for path, message in problems:
        print(cli.terminal_text(f"history: skipped {path}: {message}"), file=sys.stderr)
    for line in same:
        print(cli.terminal_text(f"history: {line}"), file=sys.stderr)
    link = None
    if args.figure and found:
        try:
            draw(args.label, found, args.figure)
        except OSError as exc:
            raise HistoryError(f"--figure {args.figure}: cannot write ({exc.strerror or exc})")
        base = args.out.resolve().parent if args.out else Path.cwd()
        link = Path(os.path.relpath(args.figure.resolve(), base)).as_posix()
        print(f"history: wrote {args.figure}", file=sys.stderr)
    text = build_markdown(args.label, found, problems, link, same, args.results_dir)
    print(cli.terminal_text(text))
    if args.out:
        store.write_output(args.out, text + "\n", "--out")
        print(f"history: wrote {args.out}", file=sys.stderr)
    return 0 if found else 2


if __name__ == "__main__":
    sys.exit(main())
