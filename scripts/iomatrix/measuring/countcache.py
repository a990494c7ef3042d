"""The counts cache: system calls and instructions counted once per interpreter binary.

What one op's call executes is deterministic: the same interpreter binary running the same
suite code on the same fixture sizes under the same tools counts the same system calls and
(within callgrind's exactness) the same instructions in every run. The counting pass
(``iomatrix.measuring.counters``) therefore stores each count it makes here and takes it
from here in every later run whose key is the same; a run's manifest names the counts it
took from the cache (``counters.from_cache`` of each series).

The key of one count, all of it compared on reading:

- ``counter`` and ``method``: syscalls or instructions, and the tool's version and options
  (``counttools.methods``: a new strace or valgrind counts again);
- ``interpreter``: the SHA-256 of the interpreter's executable (symlinks resolved) and of
  every shared library ``ldd`` lists for it (libpython of an ``--enable-shared`` build,
  libc, libm...): a rebuilt interpreter or an updated libc is counted again;
- ``suite_source``: the SHA-256 of the suite's file, ``harness.py`` and every ``_*.py``
  module of ``suites/`` (the worker side, the fixtures and their sizes);
- ``counting_code``: the SHA-256 of the host-side code that turns the tools' output into
  counts (counters, counttools, countsizes, callgrind, countsfile, syscallbytes);
- ``op``, ``profile`` (the fixture sizes, with the counting divisor), the io stack, the
  output state, the allocator, the counted calls;
- ``worker``: the ops the op's counting worker runs, in order, with their suites' sources
  (``CountsCache.worker_history``): an op's instructions move by up to 2.8% with the ops run
  before it in its process, so a worker that runs other ops (another selection, a resumed
  run) counts again;
- ``sizes``: the size rule (``countsizes.key_of``): "timed", or the scaled rule with its
  check; an instructions value holds its basis (``count_size``), taken with it;
- ``platform``: machine and kernel release; ``environment``: the variables that change what
  the worker does (``PYTHON*``, ``LANG``, ``LC_*``, ``MALLOC_*``, ``MIMALLOC_*``).

Rusage (page faults, context switches) is not cached: it describes the machine as much as
the op, and its pass runs at native speed. An A/A twin never writes the cache, and reads it
for what it does not count again: it counts the syscalls of a sample of its ops again (drawn
from the run's seed, ``iomatrix.measuring.twincount``, which says why not the instructions;
``--aa-recount all``: every op and counter) to show how exactly counts repeat, and takes the
others, its original's counts under the same key, from here. The report compares only what it
counted again.

Files: ``<cache root>/counts/<interpreter hash>/<key hash>.json`` (the cache root of
``iomatrix.interpreters.cache``: ``$IOMATRIX_CACHE`` or ``~/.cache/iomatrix``), each
``{"iomatrix_counts_cache_version": 2, "key": {...}, "value": {...},
"bytes_per_call": N}``, written to a temporary file in the same directory and renamed
into place, so that runs counting at the same time never leave a half-written entry. An
entry that cannot be read or whose key or value is not what it should be is named in one
line, counted again, and replaced.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import subprocess
import tempfile
from pathlib import Path

from iomatrix import procs
from iomatrix.interpreters import cache as build_cache
from iomatrix.paths import SUITES_DIR

CACHE_VERSION = 2   # 2: the worker's ops in the key
# An entry is a few kB (its key, and a count's value with its call paths' functions); one
# larger is not ours and is not read (interpreters.cache.read_json).
MAX_ENTRY_BYTES = 16 << 20
CACHED_COUNTERS = ("syscalls", "instructions")
SUBDIRECTORY = "counts"
HOST_CODE = [Path(__file__).with_name(name) for name in ("counters.py", "counttools.py",
                                                          "countsizes.py")] + [
    Path(__file__).parent.parent / "callgrind.py",
    Path(__file__).parent.parent / "storing" / "countsfile.py",
    Path(__file__).parent.parent / "storing" / "syscallbytes.py"]
ENVIRONMENT_RE = re.compile(r"PYTHON.*|LANG|LANGUAGE|LC_.*|MALLOC_.*|MIMALLOC_.*")
LDD_LIBRARY_RE = re.compile(r"=>\s*(/\S+)|^\s*(/\S+)\s+\(0x")


def _sha256_of_files(paths) -> str:
    digest = hashlib.sha256()
    for path in paths:
        digest.update(Path(path).name.encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def shared_libraries(executable: str) -> list[str]:
    """The shared libraries the dynamic loader maps for ``executable`` (ldd), real paths;
    [] where ldd is missing or says nothing (a static binary)."""
    try:
        proc = procs.run(["ldd", executable], timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    found = set()
    for line in (proc.stdout or "").splitlines():
        match = LDD_LIBRARY_RE.search(line)
        path = match and (match.group(1) or match.group(2))
        if path and os.path.isfile(path):
            found.add(os.path.realpath(path))
    return sorted(found)


def interpreter_hash(executable: str) -> dict:
    """{"binary": sha256, "libraries": {real path's name: sha256}} of an interpreter."""
    real = os.path.realpath(executable)
    return {"binary": _sha256_of_files([real]),
            "libraries": {Path(lib).name: _sha256_of_files([lib])
                          for lib in shared_libraries(real)}}


def suite_source_hash(suite: str) -> str:
    """The suite's file and the harness modules every worker imports."""
    harness = sorted(SUITES_DIR.glob("_*.py")) + [SUITES_DIR / "harness.py"]
    return _sha256_of_files([SUITES_DIR / f"{suite}.py"] + harness)


def counting_environment(environ=None) -> dict:
    environ = os.environ if environ is None else environ
    return {k: v for k, v in sorted(environ.items()) if ENVIRONMENT_RE.fullmatch(k)}


def key_digest(key: dict) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()


def _counts_of_names(value) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and type(v) is int and v >= 0 for k, v in value.items())


def valid_value(counter: str, value) -> bool:
    """What the counting pass stores for one op's counter, checked before it is used."""
    if not isinstance(value, dict):
        return False
    if counter == "syscalls":
        return set(value) == {"syscalls", "syscall_bytes"} and _counts_of_names(
            value["syscalls"]) and _counts_of_names(value["syscall_bytes"])
    if counter == "instructions":
        count = value.get("instructions")
        return (set(value) <= {"instructions", "cache", "functions", "call_edges",
                                 "call_paths_unavailable", "count_size"}
                and isinstance(value.get("count_size", {}), dict)
                and type(count) is int and 0 <= count < 2 ** 63
                and _counts_of_names(value.get("cache", {}))
                and isinstance(value.get("functions", []), list))
    return False


class CountsCache:
    """The counts of one counting pass's key parts; ``key`` for one op, ``get``, ``put``."""

    def __init__(self, root: Path | None = None, log=print):
        self.log = log
        try:
            self.root = Path(root) if root is not None else build_cache.cache_directory(
                SUBDIRECTORY)
        except build_cache.BadCache as exc:   # every op counted, nothing kept: said once
            log(f"iomatrix: the counts cache is not used: {exc}")
            self.root = None
        self._interpreters: dict[str, dict] = {}
        self._suites: dict[str, str] = {}
        self._common = {"iomatrix_counts_cache_version": CACHE_VERSION,
                        "counting_code": _sha256_of_files(HOST_CODE),
                        "platform": {"machine": platform.machine(),
                                     "kernel": platform.release()},
                        "environment": counting_environment()}

    def key(self, counter: str, method: str | None, executable: str, suite: str, op: str, *,
            profile: str, io_stack: str, output: str, allocator: str, calls: int,
            worker_ops, sizes="timed") -> dict:
        """``worker_ops``: every (suite, op) the op's counting worker runs, in its order
        (``worker_history``)."""
        if executable not in self._interpreters:
            self._interpreters[executable] = interpreter_hash(executable)
        return {**self._common, "counter": counter, "method": method,
                "interpreter": self._interpreters[executable], "suite": suite,
                "suite_source": self._suite_hash(suite), "op": op, "profile": profile,
                "io": io_stack, "output": output, "allocator": allocator, "calls": calls,
                "sizes": sizes, "worker": self.worker_history(worker_ops)}

    def _suite_hash(self, suite: str) -> str:
        if suite not in self._suites:
            self._suites[suite] = suite_source_hash(suite)
        return self._suites[suite]

    def worker_history(self, worker_ops) -> str:
        """The SHA-256 of the ops one counting worker runs, in order, with their suites'
        sources. An op's instructions depend on what its process ran before it:
        write_byBlocks_textMode under 3.13 counted 22,929,048 instructions after the 26 ops
        a main command's worker runs before it, 23,562,473 (+2.8%) after the 17 ops of
        lutz2009 alone, and 23,045,763 alone (2026-11-27). So a count is the cache's only for
        a worker that runs the same ops, of the same code, in the same order (the counting
        pass counts every op of a worker again when any misses: counters.count_series)."""
        listed = [[suite, op, self._suite_hash(suite)] for suite, op in worker_ops]
        return hashlib.sha256(json.dumps(listed).encode()).hexdigest()

    def path(self, key: dict) -> Path:
        return self.root / key["interpreter"]["binary"][:16] / f"{key_digest(key)}.json"

    def get(self, key: dict, log=None):
        """(value, bytes_per_call) of the entry for ``key``, or None: absent, or damaged
        (then named in one line, to ``log`` or the cache's own, and replaced when the op is
        counted again)."""
        log = log or self.log
        if self.root is None:
            return None
        path = self.path(key)
        try:
            entry = build_cache.read_json(path, MAX_ENTRY_BYTES)
            why = None if isinstance(entry, dict) or entry is None else "not a JSON object"
        except build_cache.BadCacheEntry as exc:
            entry, why = None, exc.why
        if entry is None and why is None:
            return None
        if why is None and entry.get("key") != key:
            why = "its key is not the one it is filed under"
        elif why is None and not valid_value(key["counter"], entry.get("value")):
            why = f"not a valid {key['counter']} count"
        elif why is None and not (entry.get("bytes_per_call") is None or (
                type(entry["bytes_per_call"]) is int and entry["bytes_per_call"] >= 0)):
            why = "its bytes_per_call is not a count"
        if why is not None:
            log(f"iomatrix: counts cache entry {path.parent.name}/{path.name} is damaged "
                     f"({why}); counted again")
            return None
        return entry["value"], entry.get("bytes_per_call")

    def put(self, key: dict, value: dict, bytes_per_call: int | None, log=None) -> None:
        """Store one count: a temporary file, renamed into place (atomic; the last of two
        concurrent writers of the same key wins, and both wrote the same count)."""
        if self.root is None:
            return
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".partial",
                                             dir=path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"iomatrix_counts_cache_version": CACHE_VERSION, "key": key,
                               "value": value, "bytes_per_call": bytes_per_call}, f,
                              sort_keys=True)
                os.replace(temporary, path)
            finally:
                if os.path.lexists(temporary):
                    os.remove(temporary)
        except OSError as exc:
            # The count is in the run's own file already; only the next run's saving is lost.
            (log or self.log)(f"iomatrix: cannot store a count in the counts cache "
                     f"({exc.strerror or exc}); the run's counts are kept")
