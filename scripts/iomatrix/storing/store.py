"""The results store: ``results/<run-id>/`` with one pyperf JSON file per series and a manifest.

Layout of a run directory::

    results/<run-id>/manifest.json               host, machine, profile, interpreters and status
    results/<run-id>/<series>.json               pyperf JSON (``python -m pyperf compare_to``)
    results/<run-id>/<series>.counters.json      the counting pass (iomatrix/measuring/counters.py)
    results/<run-id>/.parts/<series>/...         one file per worker process until merged
    results/<run-id>/.lock                       held while a bench process writes into the run

A series is an interpreter label, plus ``+pyio`` when the suite ran on the
pure-Python io stack. File names, metadata keys, atomic writes and safe reads
are the results contract's (``suites/_results.py``). A run directory is
untrusted input: nothing here follows a symlink, reads a special file, or acts
on a path read from a file. Where a tool may write, and a report's pages written
whole, are in ``outputs`` (their names are importable from here too).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import errno
import functools
import gzip
import hashlib
import itertools
import json
import os
import re
import socket
import time
import zlib
from pathlib import Path

from iomatrix import cli
from iomatrix.storing import contract, outputs
# Where a tool may write and a report's pages written whole live in outputs.py; their names
# stay importable from here, where every tool has found them.
from iomatrix.storing.outputs import (  # noqa: F401
    REPORT_SUFFIXES, RUN_SUBDIRECTORIES, atomic_write_bytes_unrenamed, atomic_write_text,
    check_output, check_report_destination, page_file, report_places, run_directory_of,
    where_written, write_output, write_report_pages)

MANIFEST = contract.MANIFEST
LOCK_FILE = contract.LOCK_FILE
PARTS_DIR = contract.PARTS_DIR
PYIO_SUFFIX = contract.PYIO_SUFFIX
COUNTERS_SUFFIX = contract.COUNTERS_SUFFIX
MAX_RESULT_BYTES = contract.MAX_RESULT_BYTES
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
# A stored run's series and counters files may be gzip-compressed ("3.13.json.gz",
# "3.13.counters.json.gz": pyperf.BenchmarkSuite.load reads the first as it is); the
# manifest stays plain (it is what makes a directory a run). Every reader here takes
# either, and a run holds each file one way, never both.
GZ_SUFFIX = ".gz"


# The manifest's order.method of a run made in lockstep rounds (iomatrix.measuring.lockstep): its
# series are compared round by round (stats.compare(paired=True)). Runs made before say
# "interleaved rounds, ..." and are compared unpaired.
LOCKSTEP_ORDER = ("lockstep rounds: per round and suite one worker per series; each op's "
                  "warm-ups, then each of its values, taken by every series one after the "
                  "other in version order, ascending or descending at random")
# Lockstep runs made before 2026-11-26: the same pairing by round, each worker's warm-ups and
# first value in one step, in a shuffled order.
LOCKSTEP_ORDER_SHUFFLED = ("lockstep rounds: per round and suite one worker per series, each "
                           "op timed by every series one after the other in a shuffled order")
LOCKSTEP_ORDERS = (LOCKSTEP_ORDER, LOCKSTEP_ORDER_SHUFFLED)


# The manifest's "values" of a run whose lockstep values of short calls each begin right after
# one untimed call of the op (suites/harness.py settle). Runs made before do not state it.
SETTLED_VALUES = "settled"


def paired_rounds(manifest: dict) -> bool:
    """Whether a run's rounds pair its series (a lockstep run)."""
    order = manifest.get("order") if isinstance(manifest, dict) else None
    return isinstance(order, dict) and order.get("method") in LOCKSTEP_ORDERS


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


# Deeper than any document iomatrix writes (a manifest nests 5 levels); json.loads recurses
# once per level, and 100,000 levels end in a RecursionError.
MAX_DEPTH = 64
# A JSON string, unrolled ("[^"\\]*" runs between escapes): the same matches as
# '"(?:[^"\\]|\\.)*"', three times faster on the counters files (a report reads them
# several times; this check was a tenth of its time).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKET_STEP)


class NotAResult(ValueError):
    """JSON that no iomatrix result holds: too deep, or a non-finite number."""


def nesting_depth(data: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings left out)."""
    # the brackets alone, then the highest running sum of +1 per opener and -1 per closer
    brackets = _JSON_STRING.sub(b'""', data).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(map(_BRACKET_STEP.__getitem__, brackets), initial=0))


def _refuse_constant(name: str):
    # the constant is not quoted: a page that names the file must not show a non-finite word
    raise NotAResult("holds a non-finite number, which no result may hold")


def parse_json(data: bytes):
    """JSON text as Python objects: nesting at most MAX_DEPTH, no NaN or Infinity (NotAResult);
    ValueError or UnicodeDecodeError for text that is not JSON."""
    depth = nesting_depth(data)
    if depth > MAX_DEPTH:
        raise NotAResult(f"nested {depth} levels deep; a result nests at most {MAX_DEPTH}")
    return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)


@functools.lru_cache(maxsize=None)
def schema_module():
    """iomatrix.storing.schema, or None where pydantic is not installed.

    The reading tools (report, compare, history, release's comparison, crosscheck) run
    with the report extras, pydantic among them, and check every document. The bench
    side runs on nox's own Python with the standard library only; there it reads back
    the files it has just written (a resumed run's manifest, the merged series), and
    reading them skips the schema but still refuses deep nesting and non-finite numbers.

    Asked once per process: an import that failed is not remembered by Python, so each
    call on the bench side compiled schema.py again and searched the path for pydantic
    (3 ms without a .pyc, as in a fresh clone under PYTHONDONTWRITEBYTECODE; the merge
    reads every part file twice, thousands of them: 13.5 s of a main command's merge).
    """
    try:
        from iomatrix.storing import schema
    except ImportError:
        return None
    return schema


def gunzip(data: bytes, limit: int, path) -> bytes:
    """The content of a gzip file, refusing more than ``limit`` bytes once decompressed (a
    small file can hold a great deal); ResultFileError for a damaged or truncated one."""
    inflater = zlib.decompressobj(wbits=31)        # 31: the gzip header and trailer
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as exc:
        raise ResultFileError(f"{path}: not valid gzip, perhaps truncated ({exc})")
    if len(out) > limit:
        raise ResultFileError(f"{path}: larger than {limit} bytes decompressed, more than any "
                              "iomatrix result; not read")
    if not inflater.eof:
        raise ResultFileError(f"{path}: not valid gzip, perhaps truncated (the compressed "
                              "data ends early)")
    return out


def is_gzip(path) -> bool:
    return str(path).endswith(GZ_SUFFIX)


def write_json_document(path: Path, document) -> None:
    """A run's JSON document written whole, in the form its name says: compressed for
    ``*.gz`` (a counting pass that adds to a compressed counters file keeps it compressed)."""
    data = (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")
    contract.atomic_write_bytes(str(path), gzip.compress(data, 9, mtime=0)
                                if is_gzip(path) else data)


def compress_file(path: Path) -> Path:
    """``path`` replaced by ``path.gz`` holding the same bytes: the compressed file written
    under its half-written name, synced and renamed into place, read back and compared, and
    only then the plain file removed, so a kill at any point leaves the plain file whole
    beside at most a complete compressed one (``pair_state``), never a half ``.json.gz``.
    A compressed file already there is taken when it holds the same bytes (a compress
    stopped before it removed the plain file) and written again when damaged; one holding
    other results is refused (ResultFileError). The compressed file's name and time are not
    stored in it (``gzip -n``), so one content always compresses to one file. OSError for a
    write that fails (a full disk: the plain file stays, nothing half-written is left)."""
    data = contract.read_bytes(str(path))
    target = path.with_name(path.name + GZ_SUFFIX)
    state = pair_state(path) if os.path.lexists(target) else None
    if state == DIFFERENT:
        raise ResultFileError(f"{target}: holds other results than {path.name}; keep one and "
                              "compress again")
    if state != SAME:
        contract.atomic_write_bytes(str(target), gzip.compress(data, 9, mtime=0))
        _sync_directory(path.parent)
        try:
            same = gunzip(contract.read_bytes(str(target)), len(data), target) == data
        except ResultFileError:
            same = False
        if not same:
            os.unlink(target)
            raise OSError(errno.EIO, f"does not read back as {path.name}; not compressed",
                          str(target))
    os.unlink(path)
    _sync_directory(path.parent)
    return target


def _sync_directory(directory: Path) -> None:
    """The renames and removals in ``directory`` made durable, in their order: a crash never
    keeps the plain file's removal and loses the compressed file's rename."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def compressing(run: "Run"):
    """Compress the run's finished series and counters files, the caller holding the run's
    lock, yielding each compressed file as it is done: every plain ``<series>.json`` whose
    series has no unmerged parts left, and its ``.counters.json`` (a series still in parts
    is resumed by a later session, which merges and compresses it then). What a killed
    compress left is finished first: its half-written compressed files removed (never the
    data: the plain file stays until its compressed one is in place), a plain file beside
    its complete compressed copy removed, a damaged compressed file written again. A file
    stored both ways with other results in each is left as it is (the readers name it)."""
    for leftover in run.path.glob(".*" + GZ_SUFFIX + ".partial-*"):
        os.unlink(leftover)
    for path in sorted(run.series_files() + counters_files(run.path)):
        series = plain_name(path)[:-len(COUNTERS_SUFFIX)] \
            if plain_name(path).endswith(COUNTERS_SUFFIX) else plain_name(path)[:-len(".json")]
        if is_gzip(path) or run.parts_dir(series).exists() or (
                os.path.lexists(path.with_name(path.name + GZ_SUFFIX))
                and pair_state(path) == DIFFERENT):
            continue
        yield compress_file(path)


def compress_finished(run: "Run") -> list[Path]:
    """``compressing`` to its end (the matrix calls this at the end of every session that
    finished); the files compressed."""
    return list(compressing(run))


def compress_run(run: "Run") -> list[Path]:
    """Compress a finished run's series and counters files (the manifest, phase files and
    anything half-written stay as they are); the files compressed. A run with unmerged
    parts, a file a session left half-written or a file stored both ways with other results
    in each is refused (BadInput); a failed write (a full disk) is MachineFailure, exit 3,
    saying what is complete: the files compressed before it, every other one plain."""
    leftovers = [p for p in run.partial_files() if p.parent == run.path
                 and p.name.split(".partial-")[0].endswith(GZ_SUFFIX)]
    if len(run.partial_files()) > len(leftovers) or (run.path / PARTS_DIR).exists():
        raise cli.BadInput(f"run {run.run_id}: has unmerged parts or half-written files; "
                           "compress a finished run")
    files = run.series_files() + counters_files(run.path)
    odd = [p.name for p in files if p.is_symlink() or not p.is_file()]
    if odd:
        raise cli.BadInput(f"run {run.run_id}: {', '.join(odd)} not a regular file (a link, "
                           "a directory, a device); a run's files are plain files")
    twice = twice_stored(files + [p.with_name(p.name + GZ_SUFFIX) for p in files
                                  if os.path.lexists(p.with_name(p.name + GZ_SUFFIX))])
    if twice:
        raise cli.BadInput(f"run {run.run_id}: {', '.join(twice)} stored both plain and "
                           "compressed, with other results in each; keep one and compress "
                           "again")
    done = []
    try:
        with run.exclusive():
            for target in compressing(run):
                done.append(target)
    except RunInUseError as exc:
        raise cli.BadInput(str(exc))
    except OSError as exc:
        where = f" {exc.filename}" if exc.filename else ""
        raise outputs.write_failure(exc, f"run {run.run_id}: cannot compress{where} "
                                         f"({exc.strerror or exc}); {len(done)} files "
                                         "compressed before it are complete and every other "
                                         "one is stored plain, whole, as before (nothing is "
                                         "lost); free space and compress again") from None
    return done


def read_json(path: Path, limit: int = MAX_RESULT_BYTES, kind: str | None = None):
    """JSON from a regular file of a run directory, gzip-compressed or not (``*.gz``),
    checked against the schema of ``kind`` (a document of iomatrix.storing.schema.MODELS)
    when given; ResultFileError names the file and the field."""
    try:
        data = contract.read_bytes(str(path), limit)
        data = parse_json(gunzip(data, limit, path) if is_gzip(path) else data)
    except contract.UnsafeFileError as exc:
        raise ResultFileError(str(exc))
    except NotAResult as exc:
        raise ResultFileError(f"{path}: {exc}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path}: not valid JSON, perhaps truncated ({exc})")
    except OSError as exc:
        raise ResultFileError(f"{path}: cannot read ({exc.strerror or exc})")
    schema = schema_module() if kind else None
    if schema is not None:
        try:
            schema.check(kind, data)
        except schema.SchemaError as exc:
            raise ResultFileError(f"{path}: {exc}")
    return data


# Opens of the lock file tried when each one finds it removed by the holder before (who
# removes it while still holding it), then the last one is kept; and makes of the run
# directory tried when a writer before removed it empty meanwhile.
LOCK_ATTEMPTS = 10


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
        """The series' file: ``<series>.json``, or its compressed ``.json.gz`` when only
        that one exists (a new file is always written plain)."""
        return stored_form(self.path / f"{series}.json")

    def counters_file(self, series: str) -> Path:
        return stored_form(self.path / f"{series}{COUNTERS_SUFFIX}")

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
        for attempt in range(LOCK_ATTEMPTS):
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                break
            except FileExistsError as exc:
                # another writer removed it empty (exclusive's clean-up) between mkdir's
                # "exists" and its own is_dir check: make it again
                if os.path.lexists(self.path) or attempt == LOCK_ATTEMPTS - 1:
                    raise cli.BadInput(f"cannot create {self.path}: {exc.strerror or exc}")
            except OSError as exc:
                raise cli.BadInput(f"cannot create {self.path}: {exc.strerror or exc}")
        if not self.path.is_dir():
            raise cli.BadInput(f"{self.path}: not a directory")

    @contextlib.contextmanager
    def exclusive(self):
        """Hold the run's lock: a second live writer is refused, not interleaved.

        The lock file is there only while the lock is held: made (without following a
        symlink: a planted ``.lock -> somewhere`` is refused, never written through), locked,
        and removed, still locked, when the block ends however it ends, so that a refusal
        inside the block (a resume that asks for another spec) leaves the run as it was and
        a finished run holds no lock file. One left by a killed process is taken over. The
        directories made for it that are left empty (a refusal's) are removed too.
        """
        made = []
        directory = Path(os.path.abspath(self.path))
        while not os.path.lexists(directory) and directory != directory.parent:
            made.append(directory)
            directory = directory.parent
        lock_path = str(self.path / LOCK_FILE)
        fd = None
        try:
            self.make_directory()
            fd = self._take_lock(lock_path)
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {utc_now()}\n"
                     .encode())
            yield self
        finally:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.unlink(lock_path)   # still locked: no one else holds this file
                os.close(fd)
            for path in made:   # deepest first; a directory that holds anything stays
                with contextlib.suppress(OSError):
                    os.rmdir(path)

    def _take_lock(self, lock_path: str) -> int:
        """The locked lock file's descriptor; RunInUseError when a live process holds it."""
        for attempt in range(LOCK_ATTEMPTS):
            try:
                fd = contract.open_regular(lock_path, os.O_RDWR | os.O_CREAT)
            except contract.UnsafeFileError as exc:
                raise cli.BadInput(f"{exc}; remove it (a lock file is a plain file iomatrix "
                                   "makes)")
            except FileNotFoundError:   # removed empty by a refused writer that made it
                self.make_directory()
                continue
            except OSError as exc:  # a read-only file system, a directory it may not write in
                raise cli.BadInput(f"--results-dir {self.results_dir}: cannot write in "
                                   f"{self.path} ({exc.strerror or exc})")
            try:
                _lock_exclusively(fd)
            except OSError:
                holder = os.read(fd, 200).decode("utf-8", "replace").strip() or "another process"
                os.close(fd)
                raise RunInUseError(
                    f"run {self.run_id} in {self.results_dir} is in use by {holder}; "
                    "wait for it or choose another --run-id") from None
            try:   # the holder before may have removed it between the open and the lock
                held = os.fstat(fd)
                named = os.lstat(lock_path)
                if (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino):
                    return fd
            except FileNotFoundError:
                pass
            if attempt == LOCK_ATTEMPTS - 1:   # a file system whose inodes do not compare
                return fd
            os.close(fd)
        # every attempt found the run directory gone (another process removes it each time)
        raise RunInUseError(f"run {self.run_id} in {self.results_dir}: its directory was "
                            f"removed {LOCK_ATTEMPTS} times while it was being locked; "
                            "wait for whatever removes it or choose another --run-id")

    # -- manifest ---------------------------------------------------------------
    def check_directory(self) -> None:
        """Refuse a run directory that is a symbolic link: its files would be read from
        wherever it points (a run directory is untrusted input)."""
        if self.path.is_symlink():
            raise ResultFileError(f"{self.path}: is a symbolic link; a run directory must be "
                                  "a real directory (not followed)")

    def read_manifest(self) -> dict:
        """The manifest, checked against iomatrix.storing.schema.Manifest; {} when there is none."""
        self.check_directory()
        path = self.path / MANIFEST
        if not os.path.lexists(path):
            return {}
        return read_json(path, MAX_MANIFEST_BYTES, kind="manifest")

    def read_manifest_or_problem(self) -> tuple[dict, list]:
        """(the manifest, []) or, when it cannot be used, ({}, [(file, why)]): for the
        readers that go on without it (report, history) and name what they left out.
        A run directory that is a symbolic link is refused whole (ResultFileError)."""
        self.check_directory()
        try:
            return self.read_manifest(), []
        except ResultFileError as exc:
            return {}, [(MANIFEST, f"{without_path(str(exc), self.path / MANIFEST)}; the run "
                                   "is read without it (versions, conditions and status "
                                   "unknown)")]

    def write_manifest(self, manifest: dict) -> None:
        self.make_directory()
        atomic_write_text(self.path / MANIFEST,
                          json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def series_files(self) -> list[Path]:
        """The merged pyperf files of this run, plain or compressed (not the manifest,
        counters or hidden files), each read once (``read_once``)."""
        return read_once(sorted(p for p in list(self.path.glob("*.json"))
                                + list(self.path.glob("*.json" + GZ_SUFFIX))
                                if p.name != MANIFEST
                                and not plain_name(p).endswith(COUNTERS_SUFFIX)))

    def partial_files(self) -> list[Path]:
        """Half-written files of any kind (the contract's one naming scheme)."""
        found = list(self.path.glob(contract.PARTIAL_GLOB))
        parts = self.path / PARTS_DIR
        if parts.is_dir() and not parts.is_symlink():
            found += list(parts.glob(contract.PARTIAL_GLOB))
            found += list(parts.glob("*/" + contract.PARTIAL_GLOB))
        return sorted(found)


def plain_name(path) -> str:
    """A file's name without ``.gz``: "3.13.json.gz" -> "3.13.json"."""
    name = Path(path).name
    return name[:-len(GZ_SUFFIX)] if name.endswith(GZ_SUFFIX) else name


def series_of(path) -> str:
    """The series a result file holds, by its name: "3.13.json" and "3.13.json.gz" -> "3.13"."""
    name = plain_name(path)
    return name[:-len(".json")] if name.endswith(".json") else Path(name).stem


def stored_form(path: Path) -> Path:
    """``path``, or ``path.gz`` where only the compressed file exists."""
    compressed = path.with_name(path.name + GZ_SUFFIX)
    if not os.path.lexists(path) and os.path.lexists(compressed):
        return compressed
    return path


def counters_files(run_dir) -> list[Path]:
    """The counters files of a run directory, plain or compressed; a file stored both ways
    is read plain only (twice_stored names it where the series are read)."""
    directory = Path(run_dir)
    plain = sorted(directory.glob("*" + COUNTERS_SUFFIX))
    have = {p.name for p in plain}
    return sorted(plain + [p for p in directory.glob("*" + COUNTERS_SUFFIX + GZ_SUFFIX)
                           if plain_name(p) not in have])


# How a compressed file stands beside its plain one when a run holds both (pair_state).
SAME, DAMAGED, DIFFERENT = "same", "damaged", "different"


def pair_state(plain: Path) -> str:
    """How ``plain.gz`` stands beside ``plain`` when a run holds both: SAME (whole, and
    holding plain's very bytes: the plain file is the leftover of a compress stopped before
    it removed it), DAMAGED (truncated or not gzip: the plain file is the data), or
    DIFFERENT (whole, with other results, or one of them unreadable: which one is the run's
    is not known)."""
    plain = Path(plain)
    compressed = plain.with_name(plain.name + GZ_SUFFIX)
    try:
        data = contract.read_bytes(str(plain))
        packed = contract.read_bytes(str(compressed))
    except (OSError, ValueError):   # UnsafeFileError is a ValueError
        return DIFFERENT
    try:
        return SAME if gunzip(packed, MAX_RESULT_BYTES, compressed) == data else DIFFERENT
    except ResultFileError:
        return DAMAGED


def twice_stored(paths) -> list[str]:
    """Names of files a run holds both plain and compressed with other results in each
    (``pair_state`` DIFFERENT): which one counts is not known, so neither is read (each
    reader names them as problems). A pair a stopped compress left is not one of them: its
    plain file is the data, read once (``read_once``), and compress finishes the job."""
    by_name = {Path(p).name: Path(p) for p in paths}
    return sorted(name for name, path in by_name.items()
                  if name + GZ_SUFFIX in by_name and pair_state(path) == DIFFERENT)


def read_once(paths) -> list[Path]:
    """``paths`` without the compressed file of a pair a stopped compress left (complete
    and the same, or damaged: ``pair_state``), whose plain file holds the data: nothing is
    lost and nothing read twice."""
    names = {Path(p).name for p in paths}
    return [Path(p) for p in paths
            if not (is_gzip(p) and plain_name(p) in names
                    and pair_state(Path(p).with_name(plain_name(p))) != DIFFERENT)]


def list_runs(results_dir: Path) -> list[Run]:
    """Runs with a readable manifest, oldest first."""
    return scan_runs(results_dir)[0]


def without_path(message: str, path: Path) -> str:
    """A ResultFileError's message without its leading path, for a list that names it."""
    prefix = f"{path}: "
    return message[len(prefix):] if message.startswith(prefix) else message


def scan_runs(results_dir: Path, log=None) -> tuple[list[Run], list[tuple[Path, str]]]:
    """(runs with a valid manifest, oldest first; (path, why) of the run directories skipped).

    One broken run directory never hides the others: it is listed as a problem. ``log``:
    where a progress line goes every few seconds (``progress``).
    """
    runs, problems = [], []
    directory = Path(results_dir)
    if not directory.is_dir():
        return [], []
    try:
        children = sorted(directory.iterdir())
    except OSError as exc:
        return [], [(directory, f"cannot be listed ({exc.strerror or exc})")]
    started = {}
    latest = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1)).strftime("%Y%m%dT%H%M%SZ")

    def when(value, run_id: str) -> str:
        """The run's start as a sortable UTC stamp (YYYYmmddTHHMMSSZ): the manifest's
        "started" when it is a time as utc_now() writes it (ISO 8601 with an offset), else
        the stamp a default run id starts with; neither later than tomorrow; else "" (the
        oldest). The manifest is untrusted: free text ("zzz", "9999-...") never makes a run
        the newest."""
        stamps = []
        try:
            moment = dt.datetime.fromisoformat(value) if isinstance(value, str) and \
                len(value) <= 40 else None
        except ValueError:
            moment = None
        if moment is not None and moment.tzinfo is not None and 1970 < moment.year < 9999:
            stamps.append(moment.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
        stamp = re.match(r"\d{8}T\d{6}Z", run_id)
        stamps += [stamp.group()] if stamp else []
        return next((s for s in stamps if s <= latest), "")
    for child in progress(children, "run directories' manifests", log):
        if not os.path.lexists(child / MANIFEST):
            continue
        if child.is_symlink():
            problems.append((child, "is a symbolic link; a run directory must be a real "
                                    "directory (not followed); skipped"))
            continue
        if not cli.NAME_PATTERN.fullmatch(child.name) or len(child.name) > cli.MAX_NAME_LENGTH:
            problems.append((child, "not a run directory name iomatrix makes; skipped"))
            continue
        run = Run(results_dir, child.name)
        try:
            value = run.read_manifest().get("started") or ""
        except ResultFileError as exc:
            problems.append((child / MANIFEST,
                             f"{without_path(str(exc), child / MANIFEST)}; the run is skipped"))
            continue
        started[run.run_id] = when(value, run.run_id)
        runs.append(run)
    return sorted(runs, key=lambda r: (started[r.run_id], r.run_id)), problems


def newest_run(results_dir: Path) -> Run:
    runs, problems = scan_runs(results_dir)
    if not runs:
        detail = f" ({'; '.join(f'{path}: {why}' for path, why in problems)})" \
            if problems else ""
        raise cli.BadInput(f"no runs in {results_dir} (a run is a directory with {MANIFEST})"
                           f"{detail}")
    return runs[-1]


def run_identity(run: Run) -> tuple:
    """What makes a run one run, wherever its directory is and whatever it is named: its
    manifest's run id and a digest of the manifest's content. A copied run directory is the
    same run under another name, and a tool that gathers runs (history, the pool, agree, a
    merged report) counts it once (``distinct_runs``): compared by directory name, a copy
    pooled as "held 2 of 2" (issue 56). A manifest that states no run id (none iomatrix
    writes) falls back to the directory's name; one that cannot be read makes the run only
    itself (its directory's real path)."""
    try:
        manifest = parse_json(contract.read_bytes(str(run.path / MANIFEST), MAX_MANIFEST_BYTES))
    except (OSError, ValueError):   # UnsafeFileError, NotAResult, UnicodeError: ValueErrors
        return ("", os.path.realpath(run.path))
    stated = manifest.get("run_id") if isinstance(manifest, dict) else None
    digest = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode("utf-8")).hexdigest()
    return (stated if isinstance(stated, str) and stated else run.run_id, digest)


def distinct_runs(runs: list, names: list | None = None,
                  renamed: list | None = None) -> tuple[list, list[str]]:
    """``runs`` with each run once (``run_identity``), the first of each kept, in their order;
    and one line per run met more than once, naming the others (``names``: how the caller
    names each run, default its directory's name): "X-copy: the same run as X (the same
    manifest: named twice, or a copied directory), counted once". Each tool that gathers
    runs says it so; it is bad input only where, counted once, the runs are too few for
    what was asked (agree's two, a pool's second). A run kept whose directory's name is not
    its manifest's run id (a renamed or copied directory) is read under its directory's
    name, and said in a line too: among the lines, or in ``renamed`` where one is given (a
    caller that says the runs counted once apart from the runs read under another name)."""
    names = names if names is not None else [run.run_id for run in runs]
    kept, groups, lines = {}, {}, []
    for run, name in zip(runs, names):
        identity = run_identity(run)
        if identity in kept:
            groups[identity].append(name)
            continue
        kept[identity], groups[identity] = (run, name), []
        stated = identity[0]
        if stated and stated != run.run_id:
            shown = stated if cli.name_problem(stated, "run id") is None else "another run id"
            (renamed if renamed is not None else lines).append(
                f"{name}: its manifest names run {shown} (a renamed or copied directory); "
                "read as it is named here")
    for identity, others in groups.items():
        if others:
            first = kept[identity][1]
            copies = ", ".join(dict.fromkeys(others))
            lines.append(f"{copies}: the same run as {first} (the same manifest: named "
                         "twice, or a copied directory), counted once")
    return [run for run, _ in kept.values()], lines


# Seconds between two progress lines of a tool reading many runs (history, the pool).
PROGRESS_SECONDS = 3.0
# From this many items on, the reading is also said when it starts and when it ends, however
# fast it goes: whether a line is printed never depends on the machine's speed alone.
PROGRESS_MANY = 100


def progress(items: list, what: str, log=None, every: float | None = None):
    """Each of ``items`` in turn, and every ``every`` seconds (PROGRESS_SECONDS) a line to
    ``log`` saying how far the reading is ("read 2,000 of 10,000 runs"): a tool that reads
    thousands of runs says it is working (issue 56: 10,000 runs took minutes in silence).
    With PROGRESS_MANY items or more, a line when it starts ("reading 10,000 runs") and one
    when it is done ("read 10,000 of 10,000 runs in 33 s")."""
    every = PROGRESS_SECONDS if every is None else every
    many = log is not None and len(items) >= PROGRESS_MANY
    if many:
        log(f"reading {len(items):,} {what}")
    started = last = time.monotonic()
    for done, item in enumerate(items):
        now = time.monotonic()
        if log is not None and now - last >= every:
            left = (now - started) / done * (len(items) - done) if done else None
            log(f"read {done:,} of {len(items):,} {what} in {duration(now - started)}"
                + (f", about {duration(left)} left" if left is not None else ""))
            last = now
        yield item
    if many:
        log(f"read {len(items):,} of {len(items):,} {what} in "
            f"{duration(time.monotonic() - started)}")


def duration(seconds: float) -> str:
    """'45 s', '3 min 20 s'."""
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


def load_series(path: Path) -> list[dict]:
    """Read one pyperf JSON file into rows: one per benchmark run (process).

    The file is checked against iomatrix.storing.schema.Series (types, finite times from 1 ns to
    1 hour, non-negative byte counts and rounds); ResultFileError names the file and the
    field for that, for truncated JSON, JSON of another tool, symlinks, special files or
    files too large.
    """
    path = Path(path)
    if os.path.lexists(path.parent / MANIFEST):
        # In a run directory the file's name is its series' name, which reaches the pages:
        # it follows the series rule (a loose file given to compare is named by its label).
        problem = cli.name_problem(series_of(path), "series")
        if problem is not None:
            raise ResultFileError(f"{path}: its name is not a series name ({problem})")
    data = read_json(path, kind="series")
    if not isinstance(data, dict) or "benchmarks" not in data:  # only without pydantic
        raise ResultFileError(f"{path}: not a pyperf result file (no 'benchmarks' key)")
    suite_meta = data.get("metadata") or {}
    rows = []
    for b, bench in enumerate(data["benchmarks"]):
        bench_meta = {**suite_meta, **(bench.get("metadata") or {})}
        for r, run in enumerate(bench.get("runs") or []):
            where = f"benchmarks[{b}].runs[{r}]"
            meta = {**bench_meta, **(run.get("metadata") or {})}
            values = [float(v) for v in run.get("values") or []]
            if not values:
                continue  # calibration runs carry only warmups
            # The metadata of three levels together: what one level's schema cannot see.
            if contract.KEY_SUITE not in meta:
                raise ResultFileError(f"{path}: benchmark {meta.get('name')!r} was not written by "
                                      "an iomatrix suite (no iomatrix_suite metadata)")
            name = meta.get("name")
            if not isinstance(name, str) or not name:
                raise ResultFileError(f"{path}: {where}: a benchmark needs a name")
            # pyperf stores values already divided by loops x inner_loops: one value, one op
            rows.append({
                "op": name,
                "suite": meta[contract.KEY_SUITE],
                "category": meta.get(contract.KEY_CATEGORY, ""),
                "bytes": meta.get(contract.KEY_BYTES) or 0,
                "round": meta.get(contract.KEY_ROUND, 0),
                "io": meta.get(contract.KEY_IO, "c"),
                "cache": meta.get(contract.KEY_CACHE, "warm"),
                "profile": meta.get(contract.KEY_PROFILE, ""),
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


# -- part files --------------------------------------------------------------------------

# The host stamps each worker's part with the run and series it was made for when it takes
# it in (seal_part); a part is merged only when it carries this run's id and its own series
# (read_part). A part copied from another run, another series' directory, or planted by
# hand is refused by name, never merged, and its ops are timed again.
KEY_RUN_ID = "iomatrix_run_id"
KEY_SERIES = "iomatrix_series"


def seal_part(partial: Path, part: Path, run_id: str, series: str) -> None:
    """A worker's finished result ``partial`` (the part's half-written name) becomes the part
    ``part``, stamped with the run id and series it belongs to."""
    document = parse_json(contract.read_bytes(str(partial)))
    if not isinstance(document, dict):
        raise ResultFileError(f"{partial}: not a pyperf result file")
    metadata = document.get("metadata")
    document["metadata"] = {**(metadata if isinstance(metadata, dict) else {}),
                            KEY_RUN_ID: run_id, KEY_SERIES: series}
    # Rewritten under its own half-written name, then renamed: a part is whole or absent.
    fd = contract.open_regular(str(partial), os.O_WRONLY | os.O_TRUNC)
    try:
        data = memoryview((json.dumps(document, indent=2, sort_keys=True) + "\n").encode())
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(partial, part)


def _part_benchmark_problem(bench, metadata: dict, suite: str | None) -> str | None:
    """What is wrong with one benchmark of a part (the checks that need no pydantic)."""
    if not isinstance(bench, dict):
        return "a benchmark that is not an object"
    own = bench.get("metadata")
    meta = {**metadata, **(own if isinstance(own, dict) else {})}
    its_suite = meta.get(contract.KEY_SUITE)
    problem = cli.name_problem(meta.get("name"), "op") or cli.name_problem(its_suite, "suite")
    if problem is None and its_suite != suite:
        problem = f"it holds suite {its_suite!r}, its file name says {suite!r}"
    for entry in ([] if problem is not None else bench.get("runs") or []):
        values = entry.get("values", []) if isinstance(entry, dict) else None
        if not isinstance(values, list) or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and
                1e-9 <= v <= 3600.0 for v in values):
            return "a value that is not a time from 1 ns to 1 hour"
    return problem


def read_part(run: "Run", series: str, path: Path) -> dict:
    """A part file of ``series`` in ``run``, checked as a series file is (the schema, where
    pydantic is installed; on the bench side, the names and times it holds) and as one of
    this run's: its stamp names this run and this series, its file name its suite.
    ResultFileError naming the file and the reason otherwise."""
    where = f"{path}: part file refused, not merged"
    try:
        document = read_json(path, kind="series")
    except ResultFileError as exc:
        raise ResultFileError(f"{where}: {without_path(str(exc), path)}") from None
    if not isinstance(document, dict) or not isinstance(document.get("benchmarks"), list):
        raise ResultFileError(f"{where}: not a pyperf result file")
    metadata = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    stamp = (metadata.get(KEY_RUN_ID), metadata.get(KEY_SERIES))
    if stamp != (run.run_id, series):
        found = "no run id (not taken in by this run's runner)" if stamp[0] is None else \
            f"run {cli.one_line(repr(stamp[0]))}, series {cli.one_line(repr(stamp[1]))}"
        raise ResultFileError(f"{where}: it belongs to {found}, not to run {run.run_id!r}, "
                              f"series {series!r}")
    pieces = path.name[:-len(".json")].split("--")
    suite = pieces[1] if len(pieces) in (2, 3) else None
    for bench in document["benchmarks"]:
        problem = _part_benchmark_problem(bench, metadata, suite)
        if problem is not None:
            raise ResultFileError(f"{where}: {problem}")
    return document
