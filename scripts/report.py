"""Turn one run of the results store into a markdown report.

    python scripts/report.py [--results-dir results] [--run-id ID] [--baseline LABEL]
                             [--out FILE] [--threshold 0.05] [--no-figures]
                             [--pool [RUN ...]]

Defaults: the newest run, the oldest release of the run's lineage as base, and
``reports/latest.md`` plus a kept copy ``reports/<run-id>.md``. Next to each
main page ``DIR/NAME.md``, its suite pages and tidy CSV go in ``DIR/NAME/``
(``<suite>.md``, ``data.csv``), its figures in ``DIR/figures/<run-id>/``; a
report is only ever written there, never over a run's results. The report is a
generated file: regenerate it, never edit it. ``--pool RUN ...`` pools the run's
release-step ratios with those of the runs named (``--pool`` alone: every stored run
of the same profile and selection; iomatrix.analysing.pooling): the summary, the
findings and data.csv then quote the pooled figures, a page ``pool.md`` lists every
run's ratio, and the kept copy is ``reports/<run-id>-pool.md``. The work is in the library
(iomatrix.analysing.analysis, iomatrix.reporting.pages); this file is the command line.
"""
from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.analysing import analysis, pooling
from iomatrix.reporting import pages
from iomatrix.storing import outputs, store

ROOT = Path(__file__).resolve().parent.parent


def write_report(text: str, out: Path, figures=()) -> None:
    """A merged report: its main page alone, and the figures drawn for it (errors: exit 2)."""
    store.write_report_pages(out, text, None, figures=figures)


def write_pages(result: pages.Pages, out: Path, figures=()) -> list[Path]:
    """The main page at ``out``; its suite pages, other pages (counts, machine, allocator,
    pool) and CSV in ``out``'s stem directory, all replaced together (store.write_report_pages:
    an interrupted report leaves the previous one whole). A page's file name is its suite's
    name, which the schema vetted, and is checked again to stay in the pages directory."""
    overlap = set(result.suites) & set(result.others)
    if overlap:   # pages.extra_page_name renames the report's own pages; never overwrite one
        raise cli.BadInput(f"suite(s) {', '.join(sorted(overlap))}: named like one of the "
                           "report's own pages")
    return store.write_report_pages(out, result.main, {**result.suites, **result.others},
                                    result.csv, figures)


def report_outs(runs, pooled: bool = False) -> list[Path]:
    """The default main pages: reports/latest.md and a kept copy named after the run(s)."""
    kept = f"{runs[0].run_id}.md" if len(runs) == 1 else \
        f"merged-{runs[0].run_id}-and-{len(runs) - 1}-more.md"
    if pooled:
        kept = f"{runs[0].run_id}-pool.md"
    return [ROOT / "reports" / "latest.md", ROOT / "reports" / kept]


def find_runs(results_dir: Path, run_ids: list[str] | None):
    """The runs asked for (default: the newest), and the ids that do not exist. A run asked
    for twice (its id again, or a copy of its directory: store.distinct_runs) is merged once,
    said in one line on stderr."""
    if not run_ids:
        return [store.newest_run(results_dir)], []
    found, missing = [], {}
    for run_id in run_ids:
        run = store.Run(results_dir, run_id)
        if (run.path / store.MANIFEST).exists():
            found.append(run)
        else:
            missing.setdefault(run_id, run)
    found, same = store.distinct_runs(found)
    for line in same:
        print(cli.terminal_text(f"report: --run-id {line}"), file=sys.stderr)
    return found, [f"{r.run_id} (no {store.MANIFEST} in {r.path})" for r in missing.values()]


def progress_line(text: str) -> None:
    """How far the pool's reading is (thousands of stored runs take a while)."""
    print(f"report: --pool: {text}", file=sys.stderr, flush=True)


# The pooled runs named on stderr at most (a pool of thousands is counted, not listed).
NAMED_RUNS = 10


def pool_of(main: analysis.RunData, args) -> pooling.Pool:
    """The main run pooled with the runs named after --pool (none: every stored run of its
    command). A run named that does not exist, or cannot be read, is named and left out;
    a run of another profile or selection is refused (exit 2)."""
    if args.pool:
        # every run named, the main run or one named twice too: load_pool pools each once
        # and says so (store.distinct_runs)
        named = [store.Run(args.results_dir, run_id) for run_id in args.pool]
        others = [run for run in named if (run.path / store.MANIFEST).is_file()]
        missing = list(dict.fromkeys(run.run_id for run in named if run not in others))
    else:
        others, missing = pooling.same_command_runs(args.results_dir, main.run,
                                                    main.manifest, progress_line), []
    pool = pooling.load_pool(main, None, others, args.threshold, log=progress_line)
    pool.left_out[:0] = [f"run {name}: not found" for name in missing]
    if len(pool.runs) < 2:
        left = f" (left out: {'; '.join(pool.left_out)})" if pool.left_out else \
            " (no other stored run of its profile and selection)"
        raise cli.BadInput(f"--pool: nothing to pool run {main.run.run_id} with{left}")
    for text in pool.left_out:
        print(cli.terminal_text(f"report: --pool: left out {text}"), file=sys.stderr)
    names = [run.name for run in pool.runs]
    more = f" and {len(names) - NAMED_RUNS:,} more" if len(names) > NAMED_RUNS else ""
    print(f"report: pooled {len(pool.runs):,} runs on {pool.boots} boots: "
          f"{', '.join(names[:NAMED_RUNS])}{more}", file=sys.stderr)
    return pool


@cli.main_guard
def main(argv=None) -> int:
    parser = cli.Parser(prog="nox -s report --", description=__doc__.split("\n")[0])
    parser.add_argument("--results-dir", type=cli.results_dir, default=ROOT / "results")
    parser.add_argument("--run-id", action="append", default=None, type=cli.run_id,
                        help="default: the newest run; repeat it to merge runs of several hosts")
    parser.add_argument("--baseline", default=None,
                        help="default: the oldest CPython in the run")
    parser.add_argument("--out", type=Path, default=None,
                        help="default: reports/latest.md plus reports/<run-id>.md")
    parser.add_argument("--threshold", type=cli.threshold, default=pages.DEFAULT_THRESHOLD,
                        help="slowdown that counts as a regression (default: %(default)s)")
    parser.add_argument("--no-figures", action="store_true",
                        help="skip the PNG figures (default: figures/<run-id>/ beside the report)")
    parser.add_argument("--pool", nargs="*", default=None, type=cli.run_id, metavar="RUN",
                        help="pool the run with these runs (none named: every stored run of "
                             "the same profile and selection)")
    args = parser.parse_args(argv)
    if args.pool is not None and args.run_id and len(args.run_id) > 1:
        raise cli.BadInput("--pool pools runs into one run's report: give one --run-id "
                           "(the main run) and the others after --pool")
    if args.out is not None:   # before anything is read: a bad --out costs nothing
        store.check_report_destination(args.out, args.results_dir)
    runs, missing = find_runs(args.results_dir, args.run_id)
    summary = ""
    for name in missing:
        print(f"report: run {name}: not found, skipped", file=sys.stderr)
    if not runs:
        raise cli.BadInput(f"no run {', '.join(missing)} in {args.results_dir}")
    # Every place the report writes is checked before the first byte is written, and before
    # any run is analysed: a bad destination costs nothing.
    pooled = args.pool is not None
    figures_runs = [] if args.no_figures else [run.run_id for run in runs]
    for out in [args.out] if args.out is not None else report_outs(runs, pooled):
        store.check_report_destination(out, args.results_dir, figures_runs)
    loaded = [analysis.load_run(run) for run in runs]
    pool = pool_of(loaded[0], args) if pooled else None
    out_dir = args.out.parent if args.out else ROOT / "reports"
    figures_root = None if args.no_figures else out_dir / "figures"
    outs = [args.out] if args.out else report_outs(runs, pooled)
    with contextlib.ExitStack() as stack:
        if len(loaded) == 1:
            run = runs[0]
            figures_dir = figures_root / run.run_id if figures_root else None
            # The figures are drawn in a hidden directory beside their place, put in place
            # with the first copy's pages (store.write_report_pages) and linked by the others.
            staged = stack.enter_context(outputs.staged_directory(figures_dir)) \
                if figures_dir else None
            # Analysed once for every copy (reports/latest.md and its kept copy differ only in
            # their links): the findings' bootstrap and candidate changes are the report's
            # largest costs, and its caches keep them.
            analysed = pages.analyse(loaded[0], args.baseline, args.threshold) \
                if pages.ordered_series(loaded[0]) else None
            for k, out in enumerate(outs):
                result = pages.build_pages(loaded[0], args.baseline, args.threshold,
                                           staged if k == 0 else figures_dir,
                                           f"figures/{run.run_id}", out.stem, out.name,
                                           draw=k == 0, pool=pool, analysed=analysed)
                placed = [(staged, figures_dir)] if staged and k == 0 else []
                for path in write_pages(result, out, placed):
                    print(cli.terminal_text(f"report: wrote {path}"))
                summary = result.summary
        else:
            staged_root = stack.enter_context(outputs.staged_directory(
                figures_root / "merged")) if figures_root else None
            text = pages.build_merged_report(loaded, missing, args.baseline, args.threshold,
                                             staged_root)
            placed = [(staged_root / r.run_id, figures_root / r.run_id) for r in runs
                      if staged_root and (staged_root / r.run_id).is_dir()]
            for k, out in enumerate(outs):
                write_report(text, out, placed if k == 0 else ())
                print(cli.terminal_text(f"report: wrote {out}"))
    for data in loaded:
        for name, message in data.problems:
            print(cli.terminal_text(f"report: skipped {data.run.run_id}/{name}: {message}"),
                  file=sys.stderr)
    if summary:
        # Last, so the main command ends with the answer in words.
        print(cli.terminal_text(f"\nIn words: {summary}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
