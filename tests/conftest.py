"""Shared fixtures: the real interpreters of this machine, and small pyperf-format files."""
from __future__ import annotations

import os
import fcntl
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iomatrix.interpreters import discovery
from iomatrix.storing import contract

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def _own_iomatrix_cache_for_the_session(tmp_path_factory):
    """The tests never read nor write the user's iomatrix cache (``$IOMATRIX_CACHE``, else
    ~/.cache/iomatrix: builds, tarballs, changelogs, counts): what a test finds there would
    depend on what this machine built or fetched before. Discovery, the shared smoke runs
    and every process the tests start see an empty cache of the test run's own."""
    before = os.environ.get("IOMATRIX_CACHE")
    os.environ["IOMATRIX_CACHE"] = str(tmp_path_factory.mktemp("iomatrix-cache"))
    # The matrix session fetches the changelogs its report needs (iomatrix.commands.changelogs):
    # not from the tests' runs, which would download tarballs into each test's empty cache.
    os.environ["IOMATRIX_OFFLINE"] = "1"
    # A finished session stores its files compressed (runner.run_matrix); the tests open a
    # run's series by their plain names, so their runs stay plain: test_lockstep's
    # first test checks the compressed default.
    os.environ["IOMATRIX_PLAIN_RESULTS"] = "1"
    yield
    if before is None:
        os.environ.pop("IOMATRIX_CACHE", None)
    else:
        os.environ["IOMATRIX_CACHE"] = before


@pytest.fixture(autouse=True)
def _own_iomatrix_cache(tmp_path_factory, monkeypatch):
    """And each test its own empty cache (outside its tmp_path, which some tests list):
    a count, a changelog or a build one test stored is never another test's starting point.
    A test that needs something in the cache puts it there (or sets IOMATRIX_CACHE itself)."""
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path_factory.mktemp("iomatrix-cache")))


@pytest.fixture
def no_changelog_download(monkeypatch):
    """A changelog not in the test's cache is not fetched (news._fetch: Debian's source pool
    through apt, then python.org). upstream and bisect name a step's candidate changes from
    its NEW release's changelog, fetching it when the cache lacks it: in a test that was a
    download of CPython's source (apt reaches Debian's pool on this machine) and a pass over
    its .tar.xz (2 s of CPU per test), and what the test saw hung on the network. The tests
    that take this fixture check what holds without a changelog ("no changelog for ..."); the
    candidates have tests of their own with a tarball put in the cache."""
    from iomatrix.analysing import news

    def offline(version, tarballs, say):
        say(f"no changelog fetched for {version}: the tests fetch nothing")
        return None
    monkeypatch.setattr(news, "_fetch", offline)


@pytest.fixture(scope="session")
def lutz_fixtures(tmp_path_factory):
    """lutz2009's fixtures at the smoke profile's sizes, as the timing pass makes them
    (harness.py --make-fixtures): read only by the workers of the tests that take it."""
    directory = tmp_path_factory.mktemp("fixtures")
    subprocess.run([sys.executable, str(ROOT / "suites" / "harness.py"), "--make-fixtures",
                    "lutz2009", "smoke", str(directory)], check=True, capture_output=True,
                   timeout=300)
    return directory


@pytest.fixture(scope="session")
def lutz_count_fixtures(tmp_path_factory):
    """lutz2009's fixtures at the smoke profile's sizes, as the counting pass makes them
    (counters.make_fixtures): read only by the counting tests."""
    from iomatrix.measuring import counters
    directory = tmp_path_factory.mktemp("count-fixtures") / "fixtures"
    counters.make_fixtures(["lutz2009"], "smoke", directory)
    return directory


@pytest.fixture(scope="session")
def machine_interpreters():
    """Every interpreter discovery finds here, by label."""
    return {i.label: i for i in discovery.discover()}


def need(interpreters, label):
    if label not in interpreters:
        pytest.skip(f"no {label} interpreter on this machine")
    return interpreters[label]


def shared_between_workers(tmp_path_factory, name: str, build):
    """``(directory, value)`` of ``build(directory)``, built once for the whole test run.

    A module-scoped fixture is built once per pytest-xdist worker that runs one of its tests
    (with worksteal, up to once per worker); a real run that several tests only read is built
    here once: the first worker to ask builds it under a lock in the run's shared temporary
    directory, the others wait and read ``value`` (JSON) from it. Without xdist it is built
    in this process's temporary directory, as a fixture would be. Only for what the tests
    read and never change."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent   # popen-gwN's parent: one directory for every worker of this run
    directory, done = root / f"shared-{name}", root / f"shared-{name}.json"
    with open(root / f"shared-{name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(directory, ignore_errors=True)   # what a failed build left
            directory.mkdir()
            done.write_text(json.dumps(build(directory)))
    return directory, json.loads(done.read_text())


def plain_smoke_run(tmp_path_factory, interp) -> Path:
    """Results directory of one plain smoke run of ``interp``: suite lutz2009, run id "S",
    every condition at its default (``runner.run_matrix`` as the matrix makes it), made
    once per test run (shared_between_workers)."""
    from iomatrix.measuring import runner
    from iomatrix.storing.profiles import PROFILES

    def build(directory):
        runner.run_matrix([interp], suites=["lutz2009"], profile=PROFILES["smoke"],
                          results_dir=directory / "results", run_id="S",
                          work_dir=directory, log=lambda *a: None)
    directory, _ = shared_between_workers(tmp_path_factory, f"smoke-{interp.label}", build)
    return directory / "results"


@pytest.fixture(scope="session")
def smoke_313(tmp_path_factory, machine_interpreters):
    """plain_smoke_run of 3.13. Nine tests need such a run as the start of what they check:
    tests/test_lockstep.py (the pinned CPU, a resume refused for another affinity or an
    unstated condition, an older run's report), tests/test_spec.py (a resume refused for
    another spec, a run made before the spec) and tests/test_trust.py (a second session's
    phase probe). A test that only reads it reads it here, one that changes or resumes it
    works on ``copy_of_smoke``'s copy."""
    return plain_smoke_run(tmp_path_factory, need(machine_interpreters, "3.13"))


@pytest.fixture(scope="session")
def smoke_27(tmp_path_factory, machine_interpreters):
    """plain_smoke_run of 2.7, the start of tests/test_robustness.py's too-little-disk test
    and tests/test_untrusted.py's status test (each works on ``copy_of_smoke``'s copy)."""
    return plain_smoke_run(tmp_path_factory, need(machine_interpreters, "2.7"))


def copy_of_smoke(shared: Path, tmp_path: Path) -> Path:
    """A results directory of this test's own holding a copy of a shared smoke run "S"
    (the spec lets a run be resumed from another results or work directory)."""
    copy = tmp_path / "results"
    shutil.copytree(shared, copy, symlinks=True)
    return copy


# The sessions that install the report's dependencies into a venv of the repository's .nox/
# (report, and changelog, which the matrix session queues before it). Tests run nox from
# several xdist workers at once, and two of them making the same venv at once broke it
# ("No module named pip.__main__"): the venvs are made once, under a lock, before any test's
# nox call may need them.
TOOL_SESSIONS = ("report", "changelog")
_tool_venvs_ready = False   # this process has seen them made (their check imports pandas: 1 s)


def _tool_venv_ready(name: str) -> bool:
    python = ROOT / ".nox" / name / "bin" / "python"
    return python.exists() and subprocess.run(
        [str(python), "-c", "import pandas, pydantic, statsmodels, tabulate"],
        capture_output=True).returncode == 0


def ensure_tool_venvs(env=None) -> None:
    global _tool_venvs_ready
    if _tool_venvs_ready:
        return
    lock_path = ROOT / ".nox" / ".tool-venvs.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # `-- --help`: the session makes its venv, then its tool prints its help and writes
        # nothing (--install-only would still run the tool: run_tool calls it itself, not
        # through session.run). Two different venvs: made side by side, not one after the other.
        made = [name for name in TOOL_SESSIONS if not _tool_venv_ready(name)]
        making = [subprocess.Popen([sys.executable, "-m", "nox", "--noxfile",
                                    str(ROOT / "noxfile.py"), "-s", name, "--", "--help"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   cwd=ROOT, env=env)
                  for name in made]
        for process in making:
            process.wait(timeout=900)
        # uv installs no .pyc files: on a fresh checkout the first report processes, started
        # at once by several workers as the lock was released, each compiled pandas, scipy and
        # the rest (3 s of CPU each, 1.5 s to import them compiled). Compiled once here, what
        # each session's tool imports (the changelog's: pydantic alone).
        compiling = [subprocess.Popen([str(ROOT / ".nox" / name / "bin" / "python"), "-c",
                                       "import " + ", ".join(TOOL_LIBRARIES[name])],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      cwd=ROOT, env=env)
                     for name in made if (ROOT / ".nox" / name / "bin" / "python").exists()]
        for process in compiling:
            process.wait(timeout=900)
    _tool_venvs_ready = True


# What the workers import, at collection (pandas, matplotlib, pydantic, hypothesis) or in the
# analysis (scipy.stats, statsmodels, arch): uv installs no .pyc files, so each of the four
# xdist workers, started at once, compiled all of them itself (about 3.5 s of CPU each; 2 s
# to import them compiled).
HEAVY_LIBRARIES = ("pandas", "matplotlib.pyplot", "pydantic", "hypothesis", "scipy.stats",
                   "statsmodels.stats.meta_analysis", "arch.bootstrap")
# ... and what the tools of TOOL_SESSIONS import in their venvs (EXTRAS["report"], no hypothesis)
TOOL_LIBRARIES = {"report": tuple(name for name in HEAVY_LIBRARIES if name != "hypothesis"),
                  "changelog": ("pydantic",)}


def compile_heavy_libraries_once() -> None:
    """Import HEAVY_LIBRARIES once in a child, before xdist starts its workers, so that their
    bytecode is written once (where Python may write it: not with PYTHONDONTWRITEBYTECODE,
    then each worker compiles what it imports, as before)."""
    import importlib.util
    spec = importlib.util.find_spec("pandas")
    if spec is None or spec.origin is None \
            or Path(importlib.util.cache_from_source(spec.origin)).exists():
        return   # compiled by an earlier run of this venv (or not there: the tests say so)
    subprocess.run([sys.executable, "-c", "import " + ", ".join(HEAVY_LIBRARIES)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)


def pytest_configure(config):
    """The xdist controller starts making the tool venvs at once, in a process of its own
    that holds their lock (ensure_tool_venvs): the workers' first tests need no nox, and
    their first nox call waits for the lock instead of making the venvs then. Without
    xdist, the first run_nox makes them. Meanwhile it compiles the heavy libraries the
    workers import (compile_heavy_libraries_once)."""
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist") \
            or not getattr(config.option, "numprocesses", None):
        return
    config._tool_venvs_maker = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.path[:0] = sys.argv[1:]; "
         "import conftest; conftest.ensure_tool_venvs()", str(ROOT / "tests"),
         *map(str, (ROOT / "scripts", ROOT / "suites"))],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    compile_heavy_libraries_once()   # while the venvs are made


def pytest_unconfigure(config):
    maker = getattr(config, "_tool_venvs_maker", None)
    if maker is not None:
        maker.wait()


def run_nox(*args, cwd=ROOT, env=None, timeout=600):
    """Run nox as a user would; returns the CompletedProcess (never raises on failure).

    With ``--no-install``: a session venv nox reuses gets no ``uv pip install`` check (0.4 s
    of CPU a session here, in most of the tests' nox calls); one nox makes anew is still
    installed into, and ensure_tool_venvs makes the report's and the changelog's, with their
    install, where they are missing (a fresh checkout's CI makes every venv it uses, so no
    install step can go missing unseen)."""
    ensure_tool_venvs(env)
    return subprocess.run([sys.executable, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py"),
                           "--no-install", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def write_pyperf_file(path: Path, benchmarks: dict, label_meta: dict | None = None):
    """Write a pyperf JSON file: {op: [[values of process 1], [values of process 2], ...]}.

    Each process becomes a run with iomatrix metadata and round = its index, as
    the matrix writes them; the file is written through the results contract.
    """
    out = []
    for op, processes in benchmarks.items():
        runs = [({"date": "2026-01-01 00:00:00", contract.KEY_ROUND: round_index},
                 [(1, values[0])], values) for round_index, values in enumerate(processes)]
        metadata = {contract.KEY_SUITE: "lutz2009",
                    contract.KEY_CATEGORY: "read-text" if "read" in op else "write-text",
                    contract.KEY_BYTES: 1_000_000, contract.KEY_IO: "c",
                    contract.KEY_CACHE: "warm", contract.KEY_PROFILE: "quick",
                    **(label_meta or {})}
        out.append(contract.pyperf_benchmark(op, metadata, runs))
    contract.atomic_write_json(str(path), contract.pyperf_document(out))


def truncated_compressed(plain: Path) -> tuple[Path, bytes]:
    """Store a run's plain series file ``plain`` as the matrix does (``.json.gz``), but cut
    in half: a damaged compressed file, for the tests that it is named like a truncated
    plain one. Returns its path and the bytes it holds (which the tool must leave as
    they are)."""
    import gzip
    path = plain.with_name(plain.name + ".gz")
    whole = gzip.compress(plain.read_bytes())
    plain.unlink()
    path.write_bytes(whole[: len(whole) // 2])
    return path, path.read_bytes()


def without_intervals(text: str) -> str:
    """A page with its ratio intervals taken out: '1.50 [1.49, 1.51] ▲' reads '1.50 ▲'.

    For tests about markers and bold; the intervals have tests of their own."""
    import re
    text = text.replace("\u00a0", " ")   # pages keep a ratio in one piece with no-break spaces
    return re.sub(r" \[(?:[0-9.]+, [0-9.]+|n/a)\]", "", text)


def all_pages(data, **options) -> str:
    """A run's main page and its suite pages as one text, for tests about what a report says
    wherever it says it (iomatrix.reporting.pages.build_pages)."""
    from iomatrix.reporting import pages
    built = pages.build_pages(data, **options)
    # No-break spaces read as spaces here; tests/test_preview.py checks where they must be.
    return "\n".join([built.main, *built.suites.values(), *built.others.values()]) \
        .replace("\u00a0", " ")
