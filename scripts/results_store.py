"""The results store: ``results/<run-id>/`` with one pyperf JSON file per series and a manifest.

Layout of a run directory::

    results/<run-id>/manifest.json        host, machine, profile, interpreters and their status
    results/<run-id>/<series>.json        pyperf JSON (``python -m pyperf compare_to`` reads it)
    results/<run-id>/.parts/<series>/...  one file per worker process until the series is merged
    results/<run-id>/.lock                held while a bench process writes into the run

A series is an interpreter label, plus ``+pyio`` when the suite ran on the
pure-Python io stack. Every file is written under a temporary name and renamed,
so an interrupted run leaves complete files or none; nothing is ever
overwritten: a finished series file is kept and its work is not redone.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import socket
from pathlib import Path

MANIFEST = "manifest.json"
LOCK_FILE = ".lock"
PARTS_DIR = ".parts"
PYIO_SUFFIX = "+pyio"
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class RunInUseError(RuntimeError):
    """Another live process is writing into the same run."""


class ResultFileError(ValueError):
    """A results file that is not a usable pyperf result of ours."""


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def default_run_id() -> str:
    host = re.sub(r"[^A-Za-z0-9-]+", "-", socket.gethostname()).strip("-") or "host"
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + host


def validate_run_id(run_id: str) -> str:
    if not RUN_ID_PATTERN.match(run_id):
        raise ValueError(f"--run-id {run_id!r}: use letters, digits, '.', '_' and '-' only")
    return run_id


def series_name(label: str, io_stack: str) -> str:
    return label + (PYIO_SUFFIX if io_stack == "pyio" else "")


def split_series(series: str) -> tuple[str, str]:
    if series.endswith(PYIO_SUFFIX):
        return series[: -len(PYIO_SUFFIX)], "pyio"
    return series, "c"


def atomic_write_text(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        with open(partial, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(partial, path)
    finally:
        if partial.exists():
            partial.unlink()


def part_file_name(suite: str, round_index: int) -> str:
    """One worker process's result: the ops of one suite in one round."""
    return f"r{round_index:03d}--{suite}.json"


def _lock_exclusively(handle) -> None:
    """A non-blocking exclusive lock, released when the process ends (even by kill -9)."""
    try:
        import fcntl
    except ImportError:  # Windows
        import msvcrt
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        return
    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


class Run:
    """One run directory."""

    def __init__(self, results_dir: Path, run_id: str):
        self.results_dir = Path(results_dir)
        self.run_id = validate_run_id(run_id)
        self.path = self.results_dir / run_id

    def series_file(self, series: str) -> Path:
        return self.path / f"{series}.json"

    def parts_dir(self, series: str) -> Path:
        return self.path / PARTS_DIR / series

    def part_file(self, series: str, suite: str, round_index: int) -> Path:
        return self.parts_dir(series) / part_file_name(suite, round_index)

    @contextlib.contextmanager
    def exclusive(self):
        """Hold the run's lock: a second live writer is refused, not interleaved."""
        self.path.mkdir(parents=True, exist_ok=True)
        lock_path = self.path / LOCK_FILE
        handle = open(lock_path, "a+")
        try:
            try:
                _lock_exclusively(handle)
            except OSError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                raise RunInUseError(
                    f"run {self.run_id} in {self.results_dir} is in use by {holder}; "
                    "wait for it or choose another --run-id")
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {utc_now()}\n")
            handle.flush()
            yield self
        finally:
            handle.close()

    # -- manifest ---------------------------------------------------------------
    def read_manifest(self) -> dict:
        path = self.path / MANIFEST
        if not path.exists():
            return {}
        try:
            return json.loads(path.read_text())
        except ValueError as exc:
            raise ResultFileError(f"{path}: not valid JSON ({exc})")

    def write_manifest(self, manifest: dict) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def series_files(self) -> list[Path]:
        return sorted(p for p in self.path.glob("*.json") if p.name != MANIFEST)


def list_runs(results_dir: Path) -> list[Run]:
    """Runs with a manifest, oldest first (run ids start with a UTC timestamp, but sort by start time)."""
    runs = []
    for child in Path(results_dir).iterdir() if Path(results_dir).is_dir() else []:
        if (child / MANIFEST).exists() and RUN_ID_PATTERN.match(child.name):
            runs.append(Run(results_dir, child.name))

    def started(run):
        try:
            return run.read_manifest().get("started", "")
        except ResultFileError:
            return ""
    return sorted(runs, key=lambda r: (started(r), r.run_id))


def newest_run(results_dir: Path) -> Run:
    runs = list_runs(results_dir)
    if not runs:
        raise FileNotFoundError(f"no runs in {results_dir} (a run is a directory with {MANIFEST})")
    return runs[-1]


MAX_RESULT_BYTES = 256 * 1024 * 1024


def load_series(path: Path) -> list[dict]:
    """Read one pyperf JSON file into rows: one per benchmark run (process).

    Raises ResultFileError with the file and the problem for truncated JSON,
    JSON of another tool, or files too large to be ours.
    """
    size = path.stat().st_size
    if size > MAX_RESULT_BYTES:
        raise ResultFileError(f"{path}: {size} bytes is larger than any iomatrix result "
                              f"({MAX_RESULT_BYTES} bytes); not read")
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: not valid JSON, perhaps truncated ({exc})")
    if not isinstance(data, dict) or "benchmarks" not in data or "version" not in data:
        raise ResultFileError(f"{path}: not a pyperf result file (no 'benchmarks'/'version' keys)")
    suite_meta = data.get("metadata", {}) or {}
    rows = []
    for bench in data["benchmarks"]:
        bench_meta = {**suite_meta, **(bench.get("metadata") or {})}
        for run in bench.get("runs", []):
            meta = {**bench_meta, **(run.get("metadata") or {})}
            values = run.get("values") or []
            if not values:
                continue  # calibration runs carry only warmups
            if "iomatrix_suite" not in meta:
                raise ResultFileError(f"{path}: benchmark {meta.get('name')!r} was not written by "
                                      "an iomatrix suite (no iomatrix_suite metadata)")
            # pyperf stores values already divided by loops x inner_loops: one value, one op
            rows.append({
                "op": meta.get("name"),
                "suite": meta["iomatrix_suite"],
                "category": meta.get("iomatrix_category", ""),
                "bytes": meta.get("iomatrix_bytes", 0),
                "round": meta.get("iomatrix_round", 0),
                "io": meta.get("iomatrix_io", "c"),
                "cache": meta.get("iomatrix_cache", "warm"),
                "profile": meta.get("iomatrix_profile", ""),
                "mean": sum(values) / len(values),
                "values": list(values),
                "mem_max_rss": meta.get("mem_max_rss"),
                "peak_rss": meta.get("iomatrix_peak_rss"),
                "date": meta.get("date"),
            })
    return rows
