"""iomatrix: file-I/O benchmarks of many Python interpreters, side by side.

    nox                      the main job: every interpreter, interleaved, then the report
    nox -l                   the sessions: one bench-<label> per interpreter found here
    nox -s bench-3.13 -- --profile smoke --run-id R
    nox -s report -- --run-id R
    nox -s tests

Interpreters are found by scripts/discovery.py, not by nox: nox's own search
sees only what is on PATH, and virtualenv refuses Pythons older than 3.9.
So bench sessions run with ``venv_backend="none"`` and make their own
environment per interpreter (scripts/environments.py); the session's
``python`` is the interpreter's label, which is what ``nox -p LABEL`` selects.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "scripts"))

import discovery  # noqa: E402
import results_store  # noqa: E402

nox.options.reuse_venv = "yes"
# `nox` alone runs the matrix session: every bench session's work, interleaved, then the
# report. nox applies default sessions before it filters by -p, so when the user selects
# interpreters with -p we leave the defaults alone and `nox -p 3.13` runs bench-3.13.
if not any(arg in ("-p", "--python", "--pythons") or arg.startswith(("--python=", "-p"))
           for arg in sys.argv[1:]):
    nox.options.sessions = ["matrix"]

REPORT_REQUIREMENTS = ["pandas>=2", "tabulate>=0.9", "matplotlib>=3.7", "pyperf>=2.6"]
TEST_REQUIREMENTS = [*REPORT_REQUIREMENTS, "pytest>=7", "nox>=2024.3.2", "pyyaml"]
# One id for every session of one `nox` invocation, so `nox -s bench-2.7 bench-3.13`
# writes one run.
DEFAULT_RUN_ID = results_store.default_run_id()

try:
    INTERPRETERS = sorted(discovery.discover(), key=discovery.sort_key)
except discovery.DiscoveryError as exc:
    sys.exit(f"iomatrix: {exc}")
LABELS = [interp.label for interp in INTERPRETERS]


def bench_parser(prog: str, matrix: bool) -> argparse.ArgumentParser:
    import matrix as matrix_module
    parser = argparse.ArgumentParser(prog=prog, description="Run iomatrix suites.")
    parser.add_argument("--suite", default=matrix_module.CORE_SUITE,
                        help="suite name(s), comma-separated, or 'all' (default: %(default)s)")
    parser.add_argument("--profile", default="quick",
                        help="smoke | quick | full (default: %(default)s)")
    parser.add_argument("--results-dir", default=str(ROOT / "results"), type=Path)
    parser.add_argument("--run-id", default=DEFAULT_RUN_ID,
                        help="default: UTC timestamp plus host name; reuse it to add or resume")
    parser.add_argument("--io", default="c",
                        help="io stack(s): c, pyio or c,pyio (pyio: the pure-Python _pyio)")
    parser.add_argument("--cache", default="warm", help="warm | cold page cache")
    parser.add_argument("--seed", type=int, default=None, help="seed of the shuffled order")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where fixtures are made (default: the system temp dir)")
    parser.add_argument("--keep-fixtures", action="store_true")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds one worker process may take (default: %(default)s)")
    parser.add_argument("--list", action="store_true", help="print the suites and their ops")
    if matrix:
        parser.add_argument("--pythons", default=None,
                            help="labels, comma-separated (default: every interpreter found)")
        parser.add_argument("--aa", default=None, metavar="LABEL",
                            help="also run LABEL a second time as LABEL-aa (an A/A check)")
        parser.add_argument("--no-report", action="store_true")
        parser.add_argument("--out", type=Path, default=None,
                            help="the report's file (default: reports/latest.md and a kept copy)")
    return parser


def parse_posargs(parser: argparse.ArgumentParser, posargs: list[str]) -> argparse.Namespace:
    """Like parse_args, but an unknown option names the valid ones."""
    args, unknown = parser.parse_known_args(posargs)
    if unknown:
        valid = sorted(o for a in parser._actions for o in a.option_strings if o.startswith("--"))
        parser.error(f"unknown option(s) {' '.join(unknown)}; valid options: {', '.join(valid)}")
    return args


def run_bench(session: nox.Session, labels: list[str], args: argparse.Namespace,
              aa: str | None = None, before_failing=lambda: None) -> None:
    """Run the matrix for ``labels``; fail the session (after ``before_failing``) when one failed."""
    import matrix
    try:
        suites = matrix.parse_suites(args.suite)
        profile = matrix.parse_profile(args.profile)
        io_stacks = [s.strip() for s in args.io.split(",")]
        if any(s not in ("c", "pyio") for s in io_stacks):
            raise ValueError(f"unknown io stack in {args.io!r}; valid: c, pyio")
        if args.cache not in ("warm", "cold"):
            raise ValueError(f"unknown cache mode {args.cache!r}; valid: warm, cold")
        results_store.validate_run_id(args.run_id)
        selected = discovery.select(INTERPRETERS, labels)
    except (ValueError, discovery.DiscoveryError) as exc:
        session.error(str(exc))
    if args.list:
        list_ops(session, selected[0], suites, profile.name)
        return
    aa_of = {}
    if aa:
        twin = discovery.Interpreter(f"{aa}-aa", selected[labels.index(aa)].executable, "aa",
                                     selected[labels.index(aa)].info,
                                     selected[labels.index(aa)].error)
        selected.append(twin)
        aa_of[twin.label] = aa
    for interp in selected:
        ft = " free-threaded" if interp.free_threaded else ""
        state = "" if interp.ok else f"  UNUSABLE: {interp.error}"
        session.log(f"{interp.label}: {interp.implementation} {interp.version}{ft} "
                    f"({interp.executable}){state}")
    options = dict(suites=suites, profile=profile, results_dir=args.results_dir,
                   io_stacks=io_stacks, cache=args.cache, seed=args.seed, work_dir=args.work_dir,
                   keep_fixtures=args.keep_fixtures, timeout=args.timeout, aa_of=aa_of,
                   log=session.log)
    try:
        try:
            manifest = matrix.run_matrix(selected, run_id=args.run_id, **options)
        except results_store.RunInUseError:
            if args.run_id != DEFAULT_RUN_ID:
                raise  # an explicit id in use by a live run is refused
            # Two runs started in the same second on one host: the second gets its own id.
            args.run_id = f"{DEFAULT_RUN_ID}-{os.getpid()}"
            session.log(f"run {DEFAULT_RUN_ID} is in use by another process; using {args.run_id}")
            manifest = matrix.run_matrix(selected, run_id=args.run_id, **options)
    except (matrix.MatrixError, results_store.RunInUseError) as exc:
        session.error(str(exc))
    failed = [s for s, e in manifest["interpreters"].items()
              if e.get("status") == "failed" and s.split("+")[0] in [i.label for i in selected]]
    session.log(f"run {args.run_id} in {args.results_dir / args.run_id}")
    if failed:
        before_failing()
        session.error(f"failed: {', '.join(failed)} (see manifest.json for the error tails)")


def list_ops(session: nox.Session, interp: discovery.Interpreter, suites: list[str],
             profile: str) -> None:
    import environments
    import matrix
    env = environments.ensure_environment(interp, log=session.log)
    rows = matrix.list_ops(env, suites, "c", profile)
    for suite in suites:
        ops = [r for r in rows if r["suite"] == suite]
        print(f"{suite} ({len(ops)} ops)")
        for r in ops:
            note = f"  [unavailable: {r['unavailable']}]" if r["unavailable"] else ""
            print(f"  {r['op']}{note}")
    print(f"total: {len(rows)} ops in {len(suites)} suites")


def describe(interp: discovery.Interpreter) -> str:
    if not interp.ok:
        return f"{interp.executable} (unusable: {interp.error})"
    kind = {"cpython": "CPython", "pypy": "PyPy"}.get(interp.implementation, interp.implementation)
    ft = " free-threaded" if interp.free_threaded else ""
    return f"{kind} {interp.version}{ft}, {interp.source}"


def register_bench_session(interp: discovery.Interpreter) -> None:
    """One session per interpreter: ``bench-<label>``, selected by ``nox -p <label>`` too.

    The session's ``python`` is a plain string (not a list), so nox keeps it with
    venv_backend="none" and ``-p`` can filter on it.
    """
    label = interp.label

    def bench(session: nox.Session) -> None:
        args = parse_posargs(bench_parser(f"nox -s bench-{label} --", matrix=False), session.posargs)
        run_bench(session, [label], args)

    bench.__doc__ = f"Run the suites under {describe(interp)}."
    bench.__name__ = f"bench_{label}"
    nox.session(name=f"bench-{label}", python=label, venv_backend="none", default=True)(bench)


for _interp in INTERPRETERS:
    register_bench_session(_interp)


@nox.session(python=False, default=False)
def matrix(session: nox.Session) -> None:
    """The main job: every interpreter, interleaved op by op, then the report."""
    args = parse_posargs(bench_parser("nox -s matrix --", matrix=True), session.posargs)
    labels = args.pythons.split(",") if args.pythons else list(LABELS)
    if args.aa and args.aa not in labels:
        labels.append(args.aa)

    def queue_report():
        # The report lists failed interpreters too: it runs even when this session fails.
        if not args.no_report and not args.list:
            out = ["--out", str(args.out)] if args.out else []
            session.notify("report", ["--results-dir", str(args.results_dir), "--run-id",
                                      args.run_id, *out])
    run_bench(session, labels, args, aa=args.aa, before_failing=queue_report)
    queue_report()


@nox.session(default=False)
def report(session: nox.Session) -> None:
    """Write the markdown report of a run (posargs: --run-id, --baseline, --out, ...)."""
    session.install(*REPORT_REQUIREMENTS)
    session.run("python", str(ROOT / "scripts" / "report.py"), *session.posargs)


@nox.session(default=False)
def compare(session: nox.Session) -> None:
    """Compare two runs or result files op by op, as a PR comment (posargs: A B [--label L])."""
    session.install(*REPORT_REQUIREMENTS)
    session.run("python", str(ROOT / "scripts" / "compare.py"), *session.posargs)


@nox.session(default=False)
def history(session: nox.Session) -> None:
    """One interpreter's times across every stored run (posargs: LABEL [--figure PNG] ...)."""
    session.install(*REPORT_REQUIREMENTS)
    session.run("python", str(ROOT / "scripts" / "history.py"), *session.posargs)


@nox.session(venv_backend="none", default=False)
def provision(session: nox.Session) -> None:
    """Build CPython VERSION[t] from source into the iomatrix cache (posargs: VERSION ...)."""
    session.run(sys.executable, str(ROOT / "scripts" / "provision.py"), *session.posargs)


@nox.session(default=False)
def tests(session: nox.Session) -> None:
    """Run the test suite (real interpreters, real pyperf runs with tiny settings)."""
    session.install(*TEST_REQUIREMENTS)
    session.run("pytest", *(session.posargs or ["-q", "-m", "not slow"]))
