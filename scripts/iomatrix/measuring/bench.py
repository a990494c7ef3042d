"""The bench and matrix commands: their options, and a run of chosen interpreters.

``noxfile.py`` only declares sessions; each bench session and the matrix session
parse their posargs with ``parser()`` and call ``run()``, which builds the run
spec once (``RunSpec.from_args``) and raises ``BenchError`` with a message for the
session to fail with (``BadBenchInput``, exit 2, when the input is what is wrong).
"""
from __future__ import annotations

import argparse
import errno
import os
from pathlib import Path

from iomatrix import cli
from iomatrix.interpreters import discovery, environments
from iomatrix.measuring import (counters, machine, planning, runner, sampling, selection,
                                twincount)
from iomatrix.storing import contract, store, workdirs
from iomatrix.paths import RESULTS_DIR
from iomatrix.measuring.spec import AFFINITIES, RunSpec

DEFAULT_RUN_ID = store.default_run_id()


class BenchError(RuntimeError):
    """The run could not start or an interpreter failed: the session fails with this."""


class BadBenchInput(BenchError):
    """The options, a label or the run id asked for is what is wrong: exit status 2."""


class IncompleteRun(BenchError):
    """The run finished, but some series are not complete (their status says why)."""


def parser(prog: str, matrix: bool) -> cli.Parser:
    p = cli.Parser(prog=prog, description="Run iomatrix suites.")
    p.add_argument("--suite", default=runner.DEFAULT_SELECTION,
                   help="core (the default: the 2009 study's ops and a handful of telling ops "
                        "of every other suite; --list shows them), all, or suite names, "
                        "comma-separated (lutz2009: the study alone)")
    p.add_argument("--profile", default="quick", choices=contract.PROFILES,
                   help="(default: %(default)s)")
    p.add_argument("--results-dir", default=RESULTS_DIR, type=cli.results_dir)
    p.add_argument("--run-id", default=DEFAULT_RUN_ID, type=cli.run_id,
                   help="default: UTC timestamp plus host name; reuse it to add or resume")
    p.add_argument("--io", default=["c"], type=cli.comma_choices(contract.IO_STACKS),
                   help="io stack(s): c, pyio or c,pyio (pyio: the pure-Python _pyio)")
    p.add_argument("--cache", default="warm", choices=contract.CACHE_MODES)
    p.add_argument("--allocator", default=["steady", "default"] if matrix else ["steady"],
                   type=cli.comma_choices(contract.ALLOCATORS),
                   help="glibc's allocator: steady (thresholds pinned high: the heap is reused), "
                        "fresh (pinned low: every large buffer a new mmap) or default (glibc's "
                        "own, as an ordinary program runs); several, comma-separated: the first "
                        "for every op, each further one times the study's and the chunked "
                        "reads' ops again as series LABEL@ALLOCATOR (default: %(default)s)")
    p.add_argument("--keep-allocator-env", action="store_true",
                   help="time --allocator default with the MALLOC_*/MIMALLOC_* variables this "
                        "environment sets (refused otherwise)")
    p.add_argument("--output-state", dest="output", default="new", choices=contract.OUTPUT_STATES,
                   help="writes go into a new file (default) or over an existing one")
    p.add_argument("--clock", default="auto", choices=("auto", *contract.CLOCKS),
                   help="what a value measures: auto (default: CPU time where nothing waits "
                        "for the disk, wall time otherwise), cpu or wall")
    p.add_argument("--affinity", default="one", choices=AFFINITIES,
                   help="one (default): every timed worker on the same CPU, so both sides of "
                        "a ratio run on the same one; all: not pinned")
    p.add_argument("--seed", type=int, default=None, help="seed of the shuffled order")
    p.add_argument("--work-dir", type=Path, default=None,
                   help="where fixtures are made (default: the system temp dir)")
    p.add_argument("--keep-fixtures", action="store_true")
    p.add_argument("--timeout", type=cli.positive_seconds, default=600.0,
                   help="seconds one worker process may take per op (default: %(default)s)")
    p.add_argument("--target", type=cli.threshold, default=sampling.DEFAULT_TARGET,
                   help="after the ops with a borderline release step, extra rounds go to "
                        "ops with a ratio whose 95%% interval is wider than this on either "
                        "side of it (default: %(default)s = 1.5%%)")
    p.add_argument("--budget", type=cli.positive_seconds, default=None,
                   help="seconds after which no extra round starts (default: the profile's, "
                        "and its extra seconds after the planned rounds where those take longer; "
                        "given, it is the whole budget)")
    p.add_argument("--counters", default=None, type=counters.parse_counters,
                   help="the counting pass after timing: on, off, or some of "
                        + ",".join(counters.COUNTERS) + " (default: on for the matrix "
                        "session's quick and full profiles, for the suites with counting "
                        "sizes (COUNT_DIVISOR: every suite today); off for smoke runs and "
                        "bench sessions; given, it counts every chosen op)")
    p.add_argument("--list", action="store_true",
                   help="print the chosen suites and their ops, marking those in core")
    if matrix:
        p.add_argument("--pythons", default=None, type=cli.label_list,
                       help="labels, comma-separated (default: every interpreter found)")
        p.add_argument("--aa", default="newest", metavar="LABEL",
                       help="also run LABEL a second time as LABEL-aa, so the report states its "
                            "own false-positive rate (default: the newest CPython of the run; "
                            "'none' to skip)")
        p.add_argument("--aa-recount", default=twincount.AA_RECOUNT,
                       type=twincount.parse_aa_recount, metavar="N|all",
                       help="the counting pass counts N of the A/A twin's ops again, drawn "
                            "from the run's seed, and takes its others' syscalls and "
                            "instructions from the counts cache; all: every op "
                            "(default: %(default)s)")
        p.add_argument("--no-report", action="store_true")
        p.add_argument("--out", type=Path, default=None,
                       help="the report's file (default: reports/latest.md and a kept copy, for "
                            "runs in the default results dir)")
    return p


def newest_plain_cpython(interpreters: list[discovery.Interpreter]) -> str | None:
    """The A/A twin's default: the newest usable default-build CPython, a release of the
    lineage where there is one (never its PGO+LTO twin, 3.14.7-pgo, whose label sorts after
    the lineage's 3.14 of the same version)."""
    plain = [i for i in interpreters if i.ok and i.implementation == "cpython"
             and not i.free_threaded and i.source in ("pyenv", "provisioned")]
    lineage = planning.lineage_labels(plain)
    return max(plain, key=lambda i: (i.label in lineage, discovery.sort_key(i))).label \
        if plain else None


def resolve_aa(value: str | None, labels: list[str], interpreters) -> str | None:
    if value in (None, "none"):
        return None
    if value == "newest":
        chosen = [i for i in interpreters if i.label in labels]
        return newest_plain_cpython(chosen)
    return cli.checked_name(value, "--aa")


def list_ops(interp: discovery.Interpreter, spec: RunSpec, log=print) -> None:
    """The chosen suites' ops as ``interp`` lists them; ops in core say why they are."""
    env = environments.ensure_environment(interp, log=log)
    rows = runner.list_ops(env, spec.suites, "c", spec.profile.name)
    core = {op: why for ops in selection.core_ops().values() for op, why in ops.items()}
    chosen = [r for r in rows if spec.chooses(r["suite"], r["op"])]
    for suite in spec.suites:
        ops = [r for r in chosen if r["suite"] == suite]
        log(f"{suite} ({len(ops)} ops)")
        for r in ops:
            note = f"  [core: {core[r['op']]}]" if r["op"] in core else ""
            note += f"  [unavailable: {r['unavailable']}]" if r["unavailable"] else ""
            log(f"  {r['op']}{note}")
    in_core = sum(1 for r in chosen if r["op"] in core)
    log(f"total: {len(chosen)} ops in {len(spec.suites)} suites, {in_core} of them in core")


def run(interpreters: list[discovery.Interpreter], labels: list[str], args: argparse.Namespace,
        aa: str | None = None, log=print) -> dict | None:
    """Run the matrix for ``labels`` (plus an A/A twin of ``aa``); the manifest, or None
    for --list. Raises BenchError when the run cannot start or an interpreter failed."""
    matrix = hasattr(args, "pythons")
    try:
        selected = discovery.select(interpreters, labels)
        # musl or another libc: no knobs to pin the heap with, so the untouched condition
        # only, said in one line; nothing fails (machine.usable_allocators).
        args.allocator, unavailable = machine.usable_allocators(
            args.allocator, [i.executable for i in selected if i.ok])
        if unavailable and not args.list:
            log(f"iomatrix: {unavailable}")
        spec = RunSpec.from_args(args, interpreters=labels, aa=aa, matrix=matrix)
        out = report_out(args) if matrix and not args.no_report else None
        if out is not None and not args.list:  # refused before the run, not after its minutes
            store.check_report_destination(out, args.results_dir)
    except (cli.BadInput, discovery.DiscoveryError) as exc:
        raise BadBenchInput(str(exc))
    if args.list:
        list_ops(selected[0], spec, log)
        return None
    if aa:
        original = selected[labels.index(aa)]
        selected.append(discovery.Interpreter(spec.aa_twin, original.executable, "aa",
                                              original.info, original.error))
    for interp in selected:
        ft = " free-threaded" if interp.free_threaded else ""
        state = "" if interp.ok else f"  UNUSABLE: {interp.error}"
        log(f"{interp.label}: {interp.implementation} {interp.version}{ft} "
            f"({interp.executable}){state}")
    try:
        try:
            manifest = runner.run_matrix(selected, spec, log=log)
        except store.RunInUseError:
            if args.run_id != DEFAULT_RUN_ID:
                raise  # an explicit id in use by a live run is refused
            # Two runs started in the same second on one host: the second gets its own id.
            args.run_id = f"{DEFAULT_RUN_ID}-{os.getpid()}"
            log(f"run {DEFAULT_RUN_ID} is in use by another process; using {args.run_id}")
            manifest = runner.run_matrix(selected, spec.with_run_id(args.run_id), log=log)
    except cli.BadInput as exc:  # a resume that asks for another spec, a .lock symlink
        raise BadBenchInput(str(exc))
    except (runner.MatrixError, workdirs.WorkDirError, store.RunInUseError) as exc:
        raise BenchError(str(exc))
    except OSError as exc:  # the disk filled up, or the file system failed, mid-run
        raise BenchError(os_failure(exc, args))
    log(f"run {args.run_id} in {args.results_dir / args.run_id}")
    return manifest


def os_failure(exc: OSError, args: argparse.Namespace) -> str:
    """One line for a run that a failing file system stopped: what failed, what is kept."""
    run_dir = Path(args.results_dir) / args.run_id
    where = f" ({exc.filename})" if exc.filename else ""
    what = ("the disk is full" if exc.errno in (errno.ENOSPC, errno.EDQUOT)
            else f"a write failed: {exc.strerror or exc}")
    return (f"{what}{where}; the run stopped. The worker results finished before it are kept "
            f"in {run_dir} (its .parts/); free space and rerun with --run-id {args.run_id} to "
            "resume")


def run_checked(interpreters, labels: list[str], args: argparse.Namespace, aa: str | None = None,
                log=print) -> dict | None:
    """``run``, then IncompleteRun naming every series of ``labels`` (and the twin) not ok."""
    manifest = run(interpreters, labels, args, aa=aa, log=log)
    if manifest is None:
        return None
    failed = failures(manifest, labels + ([f"{aa}-aa"] if aa else []))
    if failed:
        raise IncompleteRun(f"not complete: {', '.join(failed)} (see manifest.json for the "
                            "error tails)")
    return manifest


def failures(manifest: dict, labels: list[str]) -> list[str]:
    """Series of ``labels`` that did not complete, with their status."""
    return [f"{series} ({entry.get('status')})"
            for series, entry in manifest["interpreters"].items()
            if entry.get("status") != "ok" and store.split_series(series)[0] in labels]


def report_out(args: argparse.Namespace) -> Path | None:
    """The matrix's report file, None for reports/latest.md and its kept copy. Those are
    written only for a run in the default results dir: a run elsewhere gets its report
    inside its own directory."""
    if args.out is None and Path(args.results_dir).resolve() != RESULTS_DIR.resolve():
        return Path(args.results_dir) / args.run_id / "report.md"
    return args.out


def report_arguments(args: argparse.Namespace) -> list[str]:
    """The report session's posargs for this run."""
    out = report_out(args)
    return ["--results-dir", str(args.results_dir), "--run-id", args.run_id,
            *(["--out", str(out)] if out else [])]
