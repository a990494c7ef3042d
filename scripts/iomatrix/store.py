"""The results store: ``results/<run-id>/`` with one pyperf JSON file per series and a manifest.

Layout of a run directory::

    results/<run-id>/manifest.json               host, machine, profile, interpreters and status
    results/<run-id>/<series>.json               pyperf JSON (``python -m pyperf compare_to``)
    results/<run-id>/<series>.counters.json      the counting pass (iomatrix/counters.py)
    results/<run-id>/.parts/<series>/...         one file per worker process until merged
    results/<run-id>/.lock                       held while a bench process writes into the run

A series is an interpreter label, plus ``+pyio`` when the suite ran on the
pure-Python io stack. File names, metadata keys, atomic writes and safe reads
are the results contract's (``suites/_results.py``). A run directory is
untrusted input: nothing here follows a symlink, reads a special file, or acts
on a path read from a file.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import socket
from pathlib import Path

from iomatrix import cli, contract

MANIFEST = contract.MANIFEST
LOCK_FILE = contract.LOCK_FILE
PARTS_DIR = contract.PARTS_DIR
PYIO_SUFFIX = contract.PYIO_SUFFIX
COUNTERS_SUFFIX = contract.COUNTERS_SUFFIX
MAX_RESULT_BYTES = contract.MAX_RESULT_BYTES
MAX_MANIFEST_BYTES = 16 * 1024 * 1024


# The manifest's order.method of a run made in lockstep rounds (iomatrix.lockstep): its
# series are compared round by round (stats.compare(paired=True)). Runs made before say
# "interleaved rounds, ..." and are compared unpaired.
LOCKSTEP_ORDER = ("lockstep rounds: per round and suite one worker per series, each op "
                  "timed by every series one after the other in a shuffled order")


# The manifest's "values" of a run whose lockstep values of short calls each begin right after
# one untimed call of the op (suites/harness.py settle). Runs made before do not state it.
SETTLED_VALUES = "settled"


def paired_rounds(manifest: dict) -> bool:
    """Whether a run's rounds pair its series (a lockstep run)."""
    order = manifest.get("order") if isinstance(manifest, dict) else None
    return isinstance(order, dict) and order.get("method") == LOCKSTEP_ORDER


class RunInUseError(RuntimeError):
    """Another live process is writing into the same run."""


class ResultFileError(cli.BadInput):
    """A results file that is not a usable result of ours (exit status 2)."""


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def default_run_id() -> str:
    host = re.sub(r"[^A-Za-z0-9-]+", "-", socket.gethostname()).strip("-")[:40] or "host"
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + host


def validate_run_id(run_id: str) -> str:
    return cli.checked_name(run_id, "--run-id")


def series_name(label: str, io_stack: str) -> str:
    return label + (PYIO_SUFFIX if io_stack == "pyio" else "")


def split_series(series: str) -> tuple[str, str]:
    if series.endswith(PYIO_SUFFIX):
        return series[: -len(PYIO_SUFFIX)], "pyio"
    return series, "c"


def series_order_key(series: str, implementation: str, version, free_threaded: bool):
    """The report's order of series: plain CPython first, oldest first, then free-threaded,
    A/A twins and +pyio after their build. The first series of an op in this order is the
    reference of its ratios, for the report (analysis) and for sampling alike."""
    label, io_stack = split_series(series)
    return (0 if implementation == "cpython" and not label.startswith("pypy") else 1,
            tuple(version), bool(free_threaded), label.endswith("-aa"), io_stack == "pyio",
            series)


def atomic_write_text(path: Path, text: str, overwrite: bool = True) -> None:
    contract.atomic_write_bytes(str(path), text.encode("utf-8"), overwrite=overwrite)


def read_json(path: Path, limit: int = MAX_RESULT_BYTES):
    """JSON from a regular file of a run directory; ResultFileError names the file."""
    try:
        return contract.read_json(str(path), limit)
    except contract.UnsafeFileError as exc:
        raise ResultFileError(str(exc))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: not valid JSON, perhaps truncated ({exc})")
    except OSError as exc:
        raise ResultFileError(f"{path}: cannot read ({exc.strerror or exc})")


def _lock_exclusively(fd: int) -> None:
    """A non-blocking exclusive lock, released when the process ends (even by kill -9)."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


class Run:
    """One run directory."""

    def __init__(self, results_dir: Path, run_id: str):
        self.results_dir = Path(results_dir)
        self.run_id = validate_run_id(run_id)
        self.path = self.results_dir / run_id

    def series_file(self, series: str) -> Path:
        return self.path / f"{series}.json"

    def counters_file(self, series: str) -> Path:
        return self.path / f"{series}{COUNTERS_SUFFIX}"

    def parts_dir(self, series: str) -> Path:
        return self.path / PARTS_DIR / series

    def part_file(self, series: str, suite: str, round_index: int) -> Path:
        return self.parts_dir(series) / contract.part_file_name(suite, round_index)

    def make_directory(self) -> None:
        """Create the run directory; refuse one that is a symlink or not a directory."""
        if self.results_dir.exists() and not self.results_dir.is_dir():
            raise cli.BadInput(f"--results-dir {self.results_dir}: not a directory")
        if self.path.is_symlink():
            raise cli.BadInput(f"{self.path}: is a symbolic link; a run directory must be a "
                               "real directory")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise cli.BadInput(f"cannot create {self.path}: {exc.strerror or exc}")
        if not self.path.is_dir():
            raise cli.BadInput(f"{self.path}: not a directory")

    @contextlib.contextmanager
    def exclusive(self):
        """Hold the run's lock: a second live writer is refused, not interleaved.

        The lock file is opened without following a symlink and must be a regular
        file: a planted ``.lock -> somewhere`` is refused, never written through.
        """
        self.make_directory()
        lock_path = str(self.path / LOCK_FILE)
        try:
            fd = contract.open_regular(lock_path, os.O_RDWR | os.O_CREAT)
        except contract.UnsafeFileError as exc:
            raise cli.BadInput(f"{exc}; remove it (a lock file is a plain file iomatrix makes)")
        try:
            try:
                _lock_exclusively(fd)
            except OSError:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
                raise RunInUseError(
                    f"run {self.run_id} in {self.results_dir} is in use by {holder}; "
                    "wait for it or choose another --run-id")
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {utc_now()}\n"
                     .encode())
            yield self
        finally:
            os.close(fd)

    # -- manifest ---------------------------------------------------------------
    def read_manifest(self) -> dict:
        """The manifest, shape-checked; {} when there is none."""
        path = self.path / MANIFEST
        if not os.path.lexists(path):
            return {}
        manifest = read_json(path, MAX_MANIFEST_BYTES)
        check_manifest(manifest, path)
        return manifest

    def write_manifest(self, manifest: dict) -> None:
        self.make_directory()
        atomic_write_text(self.path / MANIFEST,
                          json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def series_files(self) -> list[Path]:
        """The merged pyperf files of this run (not the manifest, counters or hidden files)."""
        return sorted(p for p in self.path.glob("*.json")
                      if p.name != MANIFEST and not p.name.endswith(COUNTERS_SUFFIX))

    def partial_files(self) -> list[Path]:
        """Half-written files of any kind (the contract's one naming scheme)."""
        found = list(self.path.glob(contract.PARTIAL_GLOB))
        parts = self.path / PARTS_DIR
        if parts.is_dir() and not parts.is_symlink():
            found += list(parts.glob(contract.PARTIAL_GLOB))
            found += list(parts.glob("*/" + contract.PARTIAL_GLOB))
        return sorted(found)


MANIFEST_DICTS = ("interpreters", "native", "machine_state_start", "machine_state_end",
                  "order", "profile_settings", "fixture_filesystem", "counters")
MANIFEST_LISTS = ("sessions", "suites", "io")
MANIFEST_STRINGS = ("run_id", "profile", "cache", "started", "host", "os", "cpu", "allocator",
                    "output", "clock", "affinity", "timing_cpus", "values",
                    "fixture_page_cache")


def check_manifest(manifest, path) -> None:
    """Raise ResultFileError naming the field when a manifest is not shaped like ours."""
    if not isinstance(manifest, dict):
        raise ResultFileError(f"{path}: a manifest is a JSON object, not "
                              f"{type(manifest).__name__}")
    for key in MANIFEST_DICTS:
        # null is allowed where a fact may be unknown, never for the interpreters table
        nullable = key != "interpreters"
        if key in manifest and not isinstance(manifest[key], dict) and not (
                nullable and manifest[key] is None):
            raise ResultFileError(f"{path}: field {key!r} must be an object")
    for key in MANIFEST_LISTS:
        if key in manifest and not isinstance(manifest[key], list):
            raise ResultFileError(f"{path}: field {key!r} must be a list")
    for key in MANIFEST_STRINGS:
        if key in manifest and manifest[key] is not None and not isinstance(manifest[key], str):
            raise ResultFileError(f"{path}: field {key!r} must be a string")
    for series, entry in (manifest.get("interpreters") or {}).items():
        if not isinstance(entry, dict):
            raise ResultFileError(f"{path}: interpreters[{series!r}] must be an object")
    for i, session in enumerate(manifest.get("sessions") or []):
        if not isinstance(session, dict):
            raise ResultFileError(f"{path}: sessions[{i}] must be an object")


def list_runs(results_dir: Path) -> list[Run]:
    """Runs with a readable manifest, oldest first."""
    return scan_runs(results_dir)[0]


def scan_runs(results_dir: Path) -> tuple[list[Run], list[str]]:
    """(runs with a readable manifest, oldest first; problems with the others, named).

    One broken run directory never hides the others: it is listed as a problem.
    """
    runs, problems = [], []
    directory = Path(results_dir)
    if not directory.is_dir():
        return [], []
    started = {}
    for child in directory.iterdir():
        if not (child / MANIFEST).exists() and not (child / MANIFEST).is_symlink():
            continue
        if not cli.NAME_PATTERN.fullmatch(child.name) or child.is_symlink():
            problems.append(f"{child}: not a run directory name iomatrix makes; skipped")
            continue
        run = Run(results_dir, child.name) if len(child.name) <= cli.MAX_NAME_LENGTH else None
        if run is None:
            problems.append(f"{child}: run id too long; skipped")
            continue
        try:
            value = run.read_manifest().get("started") or ""
        except ResultFileError as exc:
            problems.append(f"{exc}; skipped")
            continue
        started[run.run_id] = value if isinstance(value, str) else ""
        runs.append(run)
    return sorted(runs, key=lambda r: (started[r.run_id], r.run_id)), problems


def check_report_destination(out: Path, results_dir: Path) -> None:
    """Refuse a report file whose pages would land among a store's results.

    A report writes ``out``, its suite pages and data.csv in ``out.parent/out.stem/``
    and its figures in ``out.parent/figures/`` (scripts/report.py). Beside the runs of
    ``results_dir`` the pages directory of ``A.md`` would be run ``A`` itself, and a
    pages directory holding a manifest is some store's run directory: either way the
    report's files would mix with a run's results. Inside a run directory
    (``RUN/report.md``, the matrix's default outside ``results/``) they stay apart."""
    out = Path(out)
    if out.suffix != ".md":
        raise cli.BadInput(f"--out {out}: a report is a markdown file; give a name ending "
                           "in .md")
    parent = out.parent.resolve()
    pages_dir = parent / out.stem
    if parent == Path(results_dir).resolve():
        raise cli.BadInput(f"--out {out}: its pages would go in {pages_dir} and its figures "
                           f"in {parent / 'figures'}, among the runs of --results-dir "
                           f"{results_dir}; write the report outside the results directory "
                           "(or in a run's own directory, as RUN/report.md)")
    if (pages_dir / MANIFEST).exists() or (pages_dir / MANIFEST).is_symlink():
        raise cli.BadInput(f"--out {out}: its pages would go in {pages_dir}, which is a run "
                           f"directory (it has a {MANIFEST}); choose another name or place")


def newest_run(results_dir: Path) -> Run:
    runs, problems = scan_runs(results_dir)
    if not runs:
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise cli.BadInput(f"no runs in {results_dir} (a run is a directory with {MANIFEST})"
                           f"{detail}")
    return runs[-1]


def _number(value, path, where) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value \
            or value in (float("inf"), float("-inf")):
        raise ResultFileError(f"{path}: {where}: {value!r} is not a finite number")
    return float(value)


def _object(value, path, where) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ResultFileError(f"{path}: {where} must be an object")
    return value


def load_series(path: Path) -> list[dict]:
    """Read one pyperf JSON file into rows: one per benchmark run (process).

    Raises ResultFileError with the file and the field for truncated JSON,
    JSON of another tool, odd shapes, symlinks, special files or files too large.
    """
    data = read_json(path)
    if not isinstance(data, dict) or "benchmarks" not in data or "version" not in data:
        raise ResultFileError(f"{path}: not a pyperf result file (no 'benchmarks'/'version' keys)")
    if not isinstance(data["benchmarks"], list):
        raise ResultFileError(f"{path}: field 'benchmarks' must be a list")
    suite_meta = _object(data.get("metadata"), path, "'metadata'")
    rows = []
    for b, bench in enumerate(data["benchmarks"]):
        bench = _object(bench, path, f"benchmarks[{b}]")
        bench_meta = {**suite_meta, **_object(bench.get("metadata"), path,
                                               f"benchmarks[{b}].metadata")}
        runs = bench.get("runs", [])
        if not isinstance(runs, list):
            raise ResultFileError(f"{path}: benchmarks[{b}].runs must be a list")
        for r, run in enumerate(runs):
            where = f"benchmarks[{b}].runs[{r}]"
            run = _object(run, path, where)
            meta = {**bench_meta, **_object(run.get("metadata"), path, where + ".metadata")}
            values = run.get("values") or []
            if not isinstance(values, list):
                raise ResultFileError(f"{path}: {where}.values must be a list")
            values = [_number(v, path, f"{where}.values") for v in values]
            if any(v <= 0 for v in values):  # no verified call takes no time: not a timing
                raise ResultFileError(f"{path}: {where}.values: a time of 0 or less")
            if not values:
                continue  # calibration runs carry only warmups
            if contract.KEY_SUITE not in meta:
                raise ResultFileError(f"{path}: benchmark {meta.get('name')!r} was not written by "
                                      "an iomatrix suite (no iomatrix_suite metadata)")
            name = meta.get("name")
            if not isinstance(name, str) or not name:
                raise ResultFileError(f"{path}: {where}: a benchmark needs a name")
            byte_count = meta.get(contract.KEY_BYTES, 0)
            round_index = meta.get(contract.KEY_ROUND, 0)
            # pyperf stores values already divided by loops x inner_loops: one value, one op
            rows.append({
                "op": name,
                "suite": str(meta[contract.KEY_SUITE]),
                "category": str(meta.get(contract.KEY_CATEGORY, "")),
                "bytes": _number(byte_count, path, where + " bytes") if byte_count else 0,
                "round": int(_number(round_index, path, where + " round")),
                "io": str(meta.get(contract.KEY_IO, "c")),
                "cache": str(meta.get(contract.KEY_CACHE, "warm")),
                "profile": str(meta.get(contract.KEY_PROFILE, "")),
                "allocator": meta.get(contract.KEY_ALLOCATOR),
                "output": meta.get(contract.KEY_OUTPUT),
                # runs before the clock was a condition measured wall time
                "clock": meta.get(contract.KEY_CLOCK, "wall"),
                "other_clock": meta.get(contract.KEY_OTHER_CLOCK),
                "retakes": meta.get(contract.KEY_RETAKES),
                "mean": sum(values) / len(values),
                "values": values,
                "mem_max_rss": meta.get("mem_max_rss"),
                "peak_rss": meta.get(contract.KEY_PEAK_RSS),
                "minflt": meta.get(contract.KEY_MINFLT),
                "majflt": meta.get(contract.KEY_MAJFLT),
                "nvcsw": meta.get(contract.KEY_NVCSW),
                "nivcsw": meta.get(contract.KEY_NIVCSW),
                "date": meta.get("date"),
            })
    return rows
