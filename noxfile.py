"""iomatrix: file-I/O benchmarks of many Python interpreters, side by side.

    nox                      the main job: every interpreter, in lockstep rounds, then the report
    nox -l                   the sessions: one bench-<label> per interpreter found here
    nox -s bench-3.13 -- --profile smoke --run-id R
    nox -s report -- --run-id R
    nox -s tests

Interpreters are found by iomatrix.interpreters.discovery, not by nox: nox's own search
sees only what is on PATH, and virtualenv refuses Pythons older than 3.9.
So bench sessions run with ``venv_backend="none"`` and make their own
environment per interpreter (iomatrix.interpreters.environments); the session's
``python`` is the interpreter's label, which is what ``nox -p LABEL`` selects.
"""
from __future__ import annotations

import atexit
import logging
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
# The one place the host library is put on the path (the tools in scripts/ find it as
# their own directory; pytest through pyproject.toml).
sys.path.insert(0, str(ROOT / "scripts"))

from iomatrix import cli  # noqa: E402
from iomatrix.interpreters import discovery, sources
from iomatrix.measuring import bench, stages
from iomatrix.commands import release as release_check  # noqa: E402

nox.options.reuse_venv = "yes"
# uv makes a session's venv in seconds (virtualenv and pip take about 40 s for the report and
# test dependencies); without uv, nox falls back to virtualenv. `pip install 'nox[uv]'` brings both.
nox.options.default_venv_backend = "uv|virtualenv"
# `nox` alone runs the matrix session: every bench session's work, in lockstep rounds, then the
# report. nox applies default sessions before it filters by -p, so when the user selects
# interpreters with -p we leave the defaults alone and `nox -p 3.13` runs bench-3.13.
if not any(arg in ("-p", "--python", "--pythons") or arg.startswith(("--python=", "-p"))
           for arg in sys.argv[1:]):
    nox.options.sessions = ["matrix"]

PYPROJECT = nox.project.load_toml(str(ROOT / "pyproject.toml"))
EXTRAS = PYPROJECT["project"]["optional-dependencies"]

STARTED = time.monotonic()  # the main command's stages start here (stages.main_command_table)
try:
    # What each interpreter says about itself is checked by the probe (a bad answer drops
    # that interpreter with a warning line), so the sort below sees only valid versions.
    INTERPRETERS = sorted(discovery.discover(), key=discovery.sort_key)
except discovery.DiscoveryError as exc:
    # A declaration that cannot be understood (IOMATRIX_PYTHONS, iomatrix.toml) is bad
    # input: exit 2 with one line, not sys.exit(message)'s 1, the regression status.
    print(f"error: iomatrix: {cli.one_line(exc)}", file=sys.stderr)
    sys.exit(cli.EXIT_BAD_INPUT)
except Exception as exc:  # noqa: BLE001 - a bug of discovery: 3 and one line, never nox's 1
    print(f"error: iomatrix: internal error in interpreter discovery, please report: "
          f"{type(exc).__name__}: {cli.one_line(exc)}", file=sys.stderr)
    sys.exit(cli.EXIT_INTERNAL_ERROR)
LABELS = [interp.label for interp in INTERPRETERS]
DISCOVERED = time.monotonic()
# The main command's run and its stages after the matrix session (changelog, report), for
# the table printed after its report; empty unless the matrix session ran in this nox call.
MAIN: dict = {}


def bad_input(message: str) -> None:
    """Bad input ends a bench or matrix session with exit status 2 and one line, as every
    iomatrix command (nox would turn session.error into 1, a regression's status)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


# The exit statuses that failed sessions of this nox call owe (cli's contract), for
# exit_with_owed_status.
OWED_STATUSES: list[int] = []


def fail_with_status(session: nox.Session, message: str, status: int) -> None:
    """Fail the session with ``message``, and end this nox call with ``status``.

    A failed session ends nox with its own exit status 1, which a CI gate reads as a
    regression. The session still fails the nox way (session.error), so the sessions
    after it still run (several bench sessions, the report the matrix queued) and nox
    prints its summary; then the process exits with the highest status owed."""
    if not OWED_STATUSES:
        atexit.register(exit_with_owed_status)
    OWED_STATUSES.append(status)
    session.error(message)


def exit_with_owed_status() -> None:
    # Runs as nox exits (with its 1, or a later session's own status): os._exit is the one
    # way an exit handler can change the status; it skips the handlers still to run, so
    # logging's flush is done here.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(max(OWED_STATUSES))


def run_bench(session: nox.Session, labels: list[str], args, aa: str | None = None,
              before_failing=lambda: None) -> None:
    try:
        bench.run_checked(INTERPRETERS, labels, args, aa=aa, log=session.log)
    except bench.BadBenchInput as exc:
        bad_input(str(exc))
    except bench.BenchError as exc:
        # An interpreter that failed (IncompleteRun), or a run that could not go on (no
        # disk, a run id in use): exit 3. Of cli's four statuses it is not 0 (the run is
        # not done), not 1 (nothing was compared, so no regression was found) and not 2
        # (nothing the user typed is wrong: an interpreter crashed, hung or is gone). 3 is
        # the contract's status for a command that failed for any other reason ("read its
        # output"): a CI gate fails the job and never reports a regression.
        if isinstance(exc, bench.IncompleteRun):
            before_failing()
        fail_with_status(session, str(exc), cli.EXIT_INTERNAL_ERROR)
    except Exception as exc:  # noqa: BLE001 - a bug: exit 3 with its traceback, never nox's 1
        session.log(traceback.format_exc())
        fail_with_status(session, f"internal error: please report (the traceback above): "
                                  f"{cli.one_line(exc)}", cli.EXIT_INTERNAL_ERROR)


def describe(interp: discovery.Interpreter) -> str:
    if not interp.ok:
        return f"{interp.executable} (unusable: {interp.error})"
    kind = {"cpython": "CPython", "pypy": "PyPy"}.get(interp.implementation, interp.implementation)
    ft = " free-threaded" if interp.free_threaded else ""
    # The build recipe (shared-O3, static-O3-pgo-lto): what of the build changes speed.
    recipe = interp.recipe or ("recipe unknown" if interp.implementation == "cpython" else None)
    return f"{kind} {interp.version}{ft}, {interp.source}" + (f", {recipe}" if recipe else "")


def register_bench_session(interp: discovery.Interpreter) -> None:
    """One session per interpreter: ``bench-<label>``, selected by ``nox -p <label>`` too.

    The session's ``python`` is a plain string (not a list), so nox keeps it with
    venv_backend="none" and ``-p`` can filter on it.
    """
    label = interp.label

    def bench_session(session: nox.Session) -> None:
        args = bench.parser(f"nox -s bench-{label} --", matrix=False).parse_args(session.posargs)
        run_bench(session, [label], args)

    # nox -l prints the docstring: a path or an error an interpreter printed, one line
    bench_session.__doc__ = cli.one_line(f"Run the suites under {describe(interp)}.")
    bench_session.__name__ = f"bench_{label}"
    nox.session(name=f"bench-{label}", python=label, venv_backend="none",
                default=True)(bench_session)


for _interp in INTERPRETERS:
    register_bench_session(_interp)


@nox.session(python=False, default=False)
def matrix(session: nox.Session) -> None:
    """The main job: every interpreter, in lockstep rounds, with an A/A twin; then the report."""
    args = bench.parser("nox -s matrix --", matrix=True).parse_args(session.posargs)
    labels = args.pythons or list(LABELS)
    try:
        aa = bench.resolve_aa(args.aa, labels, INTERPRETERS)
    except cli.BadInput as exc:
        bad_input(str(exc))
    if aa and aa not in labels:
        labels.append(aa)

    def queue_report():
        # The report lists failed interpreters too: it runs even when this session fails.
        if not args.no_report and not args.list:
            MAIN.update(run=(args.results_dir, args.run_id), after={},
                        matrix=time.monotonic() - started)
            fetch_changelogs(session, labels)
            session.notify("report", bench.report_arguments(args))
    started = time.monotonic()
    run_bench(session, labels, args, aa=aa, before_failing=queue_report)
    queue_report()


def fetch_changelogs(session: nox.Session, labels: list[str]) -> None:
    """Queue the step that fetches the changelogs the report names causes from, into the cache
    before the report runs (the report reads the cache only). It runs in the report's
    environment (nox's own has no pydantic, which reads the cache): `nox -s changelog --
    --for-report VERSION...` says in one line what could not be had and never fails the run."""
    versions = [i.version.rstrip("+") for i in INTERPRETERS
                if i.ok and i.label in labels and i.implementation == "cpython"]
    # IOMATRIX_OFFLINE: fetch nothing (a machine that must not reach out; the tests' runs)
    offline = ["--offline"] if sources.offline() else []
    if versions:
        session.notify("changelog", ["--for-report", *offline, *sorted(set(versions))])


def run_tool(session: nox.Session, tool: str) -> None:
    """Run scripts/<tool>.py in a session venv with the report dependencies, exiting with its code.

    ``session.run`` turns any failure into nox's own exit 1, which a CI gate reads as a
    regression; the tool's code (0 done, 1 regression, 2 bad input, 3 internal error) is
    passed on instead.
    """
    session.install(*EXTRAS["report"])
    command = [session.virtualenv.bin + "/python", str(ROOT / "scripts" / f"{tool}.py"),
               *session.posargs]
    session.log(" ".join(command[1:]))
    # Python may keep the bytecode it compiles (as the tests session): uv installs no .pyc
    # files, so with PYTHONDONTWRITEBYTECODE set every report compiled the pandas, scipy,
    # matplotlib and arch it imports anew (some 4 s of CPU a report).
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    status = subprocess.call(command, env={**env, "VIRTUAL_ENV": session.virtualenv.location,
                                           "PATH": session.bin + os.pathsep + os.environ["PATH"]})
    if status:
        raise SystemExit(status)


def timed_for_main(session: nox.Session, name: str, tool: str) -> None:
    """run_tool, its seconds kept as a stage of the main command when the matrix queued it;
    after the report, the main command's stages are printed (stages.main_command_table)."""
    started = time.monotonic()
    try:
        run_tool(session, tool)
    finally:
        if MAIN:
            MAIN["after"][name] = time.monotonic() - started
            if name == "report":
                session.log("the main command's stages (seconds):\n" + stages.main_command_table(
                    *MAIN["run"], DISCOVERED - STARTED, MAIN["matrix"], MAIN["after"],
                    time.monotonic() - STARTED))


@nox.session(default=False)
def report(session: nox.Session) -> None:
    """Write the markdown report of a run (posargs: --run-id, --baseline, --out, ...)."""
    timed_for_main(session, "report", "report")


@nox.session(default=False)
def preview(session: nox.Session) -> None:
    """Render a run's pages to HTML as GitHub shows them (posargs: [--run-id ID | PAGE.md] ...)."""
    run_tool(session, "preview")


@nox.session(default=False)
def compare(session: nox.Session) -> None:
    """Compare two runs or result files op by op, as a PR comment (posargs: A B [--label L])."""
    run_tool(session, "compare")


@nox.session(default=False)
def agree(session: nox.Session) -> None:
    """How far stored runs agree: ratio spread, findings, A/A twins (posargs: RUN RUN [RUN...])."""
    run_tool(session, "agree")


@nox.session(default=False)
def history(session: nox.Session) -> None:
    """One interpreter's times across every stored run (posargs: LABEL [--figure PNG] ...)."""
    run_tool(session, "history")


@nox.session(default=False)
def release(session: nox.Session) -> None:
    """Release day: NEW against the previous release of its minor version, as a PR comment
    (posargs: NEW [--against OLD] [--debian-source]); exit 0, 1 (regression), 2 (bad input)
    or 3 (a side that did not complete, an internal error)."""
    session.install(*EXTRAS["report"])
    status = release_check.main(session.posargs, compare_python=session.virtualenv.bin + "/python",
                                log=session.log)
    if status:
        raise SystemExit(status)  # nox passes it on: the gate's code, not nox's generic 1


@nox.session(default=False)
def bisect(session: nox.Session) -> None:
    """The release where an op's time changed (posargs: OP --between OLD NEW [--no-build]);
    with --cpython-repo PATH (a CPython clone), the commit (docs/bisect.md)."""
    run_tool(session, "bisect_releases")


@nox.session(default=False)
def upstream(session: nox.Session) -> None:
    """A standalone reproducer and an issue text for a finding (posargs: OP --between OLD NEW)."""
    run_tool(session, "upstream")


@nox.session(venv_backend="none", default=False)
def crosscheck(session: nox.Session) -> None:
    """Time the lutz2009 ops in a plain loop; compare the ratios with the harness's."""
    # Its own exit status (1 a disagreement, 2 bad input, 3 internal error), not nox's 1
    # for any failure.
    status = subprocess.call([sys.executable, "-m", "iomatrix.commands.crosscheck", *session.posargs],
                             env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")})
    if status:
        raise SystemExit(status)


@nox.session(venv_backend="none", default=False)
def provision(session: nox.Session) -> None:
    """Build CPython into the iomatrix cache (posargs: [VERSION...] [--list] [--recipe NAME]);
    no VERSION: the newest release of each minor version this machine lacks."""
    # Its own exit status (2 bad input, 3 a download or build failed), not nox's 1 for any
    # failure, which a gate reads as a regression.
    status = subprocess.call([sys.executable, str(ROOT / "scripts" / "provision.py"),
                              *session.posargs])
    if status:
        raise SystemExit(status)


@nox.session(default=False)
def changelog(session: nox.Session) -> None:
    """Fetch and cache CPython's Misc/NEWS for versions, for the reports' candidate changes
    (posargs: VERSION... [--offline])."""
    timed_for_main(session, "changelog", "changelog")


@nox.session(default=False)
def tests(session: nox.Session) -> None:
    """Run the test suite (real interpreters, real pyperf runs with tiny settings)."""
    session.install(*EXTRAS["test"])
    # Four pytest-xdist workers on this 2-core kind of machine: most tests wait on real
    # interpreters, pyperf workers and timeouts (with two workers the suite kept about one
    # core busy), so four finish in about half the time. worksteal balances the long tests;
    # a module-scoped fixture may then be built once per worker that runs its tests.
    session.run("pytest", *(session.posargs or ["-q", "-m", "not slow", "-n", "4",
                                                 "--dist", "worksteal"]),
                # Python may keep the bytecode it compiles: uv installs no .pyc files, so with
                # PYTHONDONTWRITEBYTECODE set each of the tests' hundred-odd processes that
                # import pandas and scipy compiled them anew (4 s of a report's 6 s here).
                env={"PYTHONDONTWRITEBYTECODE": None})
