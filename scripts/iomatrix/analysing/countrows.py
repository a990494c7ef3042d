"""The counting pass's files read as tidy rows, and the index a report asks them through.

``load_counts`` reads every ``<series>.counters.json`` of a run directory into tidy rows
(``load_document_rows``: one row per series, op and counter, per call and per MiB), naming
the files it cannot read (``unreadable_files``); ``skipped_counts`` says from the manifest
what was not counted and why. ``CountRows`` keeps its ``Lookup`` (rows indexed by series, op
and counter) once built. ``side_rows`` reads one side of ``compare``; ``load_functions``
the functions callgrind kept. Split from counts.py (the steps, tables and comparisons
made of these rows), which re-exports these names.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import stat
from pathlib import Path

from iomatrix import callgrind
from iomatrix.measuring import countsizes
from iomatrix.storing import store
from iomatrix.storing.countsfile import RUSAGE_FIELDS, read_document

MIB = 1024 * 1024


def load_document_rows(path: Path, series: str | None = None) -> list:
    """Tidy rows of one counters file: series, suite, op, counter, per_call, per_MiB, ...
    Read once per process and file version (``_rows_of_version``): a report asked for every
    file of its run 16 times (each section, each page), 178 reads of gzipped JSON.

    ``counter`` is ``syscalls`` (all of them), ``syscall:<name>``, ``syscall_bytes`` (the
    bytes the byte-moving calls moved, all of them: read, write and their kin) and
    ``syscall_bytes:<name>`` (those of one call, ``syscall_bytes:read``), ``minflt``,
    ``majflt``, ``nvcsw``, ``nivcsw``, ``instructions`` or ``estimated_cycles``. A file
    without ``syscall_bytes`` (counted before it was) has no rows of it: nothing guessed.
    ``from_cache``: the count was taken from the counts cache, not counted in this run (an
    A/A twin's such counts are its original's, no evidence of repeating).
    """
    version = _file_version(path)
    if version is None:
        return _document_rows(Path(path), series)     # read_document says what is wrong
    # shallow copies: a caller that changes a row changes its own
    return [dict(row) for row in _rows_of_version((*version, series))]


def _file_version(path) -> tuple | None:
    """(path, inode, size, mtime) of a regular file, the key of what is read once per
    process and file version; None for anything else (read anew, to say what is wrong)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return str(path), info.st_ino, info.st_size, info.st_mtime_ns


@functools.lru_cache(maxsize=256)
def _rows_of_version(version: tuple) -> tuple:
    return tuple(_document_rows(Path(version[0]), version[-1]))


def read_document_once(path: Path) -> dict | None:
    """countsfile.read_document, once per process and file version (``_document_of_version``):
    the rows, the kept functions and the call graphs of a report each read every counters
    file of the run, and reading one (gzip, JSON, the schema) costs some 20 ms. Callers only
    read the document."""
    version = _file_version(path)
    if version is None:
        return read_document(Path(path))            # which says what is wrong
    return _document_of_version(version)


@functools.lru_cache(maxsize=32)
def _document_of_version(version: tuple) -> dict | None:
    return read_document(Path(version[0]))


def _document_rows(path: Path, series: str | None) -> list:
    document = read_document_once(Path(path))
    if document is None:
        return []
    series = series or document.get("series") or \
        store.plain_name(path)[:-len(store.COUNTERS_SUFFIX)]
    interp = document.get("interpreter") or {}
    rows = []
    for op, entry in document["ops"].items():
        calls = entry.get("calls") or 1   # the schema: at least 1
        nbytes = entry.get("bytes_per_call") or 0
        values = {}
        if isinstance(entry.get("syscalls"), dict):
            values["syscalls"] = sum(entry["syscalls"].values())
            for name, n in entry["syscalls"].items():
                values[f"syscall:{name}"] = n
        if isinstance(entry.get("syscall_bytes"), dict):
            values["syscall_bytes"] = sum(entry["syscall_bytes"].values())
            for name, n in entry["syscall_bytes"].items():
                values[f"syscall_bytes:{name}"] = n
        for field in RUSAGE_FIELDS:
            if isinstance(entry.get("rusage"), dict) and entry["rusage"].get(field) is not None:
                values[field] = entry["rusage"][field]
        if isinstance(entry.get("instructions"), int):
            values["instructions"] = entry["instructions"]
            # Memory behaviour as a count: cachegrind's rough cycle estimate from the
            # instructions and callgrind's simulated cache misses (iomatrix.callgrind).
            cycles = callgrind.estimated_cycles(entry["instructions"], entry.get("cache") or {}) \
                if set(callgrind.EVENTS[1:]) <= set(entry.get("cache") or {}) else None
            if cycles is not None:
                values["estimated_cycles"] = cycles
        bases = {group: countsizes.basis_words(countsizes.basis_of(document, entry, group))
                 for group in ("syscalls", "rusage", "instructions")}
        for counter, total in values.items():
            per_call = total / calls
            group = "instructions" if counter in ("instructions", "estimated_cycles") else \
                "rusage" if counter in RUSAGE_FIELDS else "syscalls"
            rows.append({"series": series, "suite": entry.get("suite"), "op": op,
                         "counter": counter, "per_call": per_call,
                         "per_MiB": per_call * MIB / nbytes if nbytes else None,
                         "bytes_per_call": nbytes, "implementation": interp.get("implementation"),
                         "version_info": interp.get("version_info"),
                         "free_threaded": interp.get("free_threaded"),
                         "source": interp.get("source"), "aa_of": interp.get("aa_of"),
                         "method": (document.get("methods") or {}).get(group),
                         # at the timed size, or scaled with its rule checked, or (older
                         # files) at the counting size: iomatrix.measuring.countsizes
                         "count_basis": bases[group],
                         "count_divisor": _divisor(countsizes.basis_of(document, entry, group)),
                         "from_cache": group in (entry.get("from_cache") or ())})
    return rows


def _divisor(basis: dict) -> float | None:
    """How many times smaller than timed the count was made (a scaled one), else None."""
    return basis.get("divisor") if basis.get("basis") == "scaled" else None


def load_counts(run_dir, problems: list | None = None) -> "CountRows":
    """Tidy rows (see ``load_document_rows``) of every counters file of a run directory.

    A file that cannot be read (a symlink, a special file, damaged, not valid) is
    skipped and, when ``problems`` is given, appended to it as (file name, why);
    ``unreadable_files`` names them for the report's "Files not read"."""
    rows = CountRows()
    for path in store.counters_files(run_dir):
        try:
            rows.extend(load_document_rows(path))
        except store.ResultFileError as exc:
            if problems is not None:
                problems.append((path.name, f"{exc}; its counts are left out"))
    return rows


def unreadable_files(run_dir) -> list:
    """(file name, why) of the counters files of a run directory that cannot be read."""
    problems: list = []
    load_counts(run_dir, problems)
    return problems


def skipped_counts(run_dir) -> dict:
    """{series: {counter: reason}} from the manifest: what was not counted, and why."""
    try:  # a broken manifest is named by the run's reader (analysis.load_run)
        manifest = store.read_json(Path(run_dir) / store.MANIFEST, store.MAX_MANIFEST_BYTES,
                                   kind="manifest")
    except store.ResultFileError:
        return {}
    out = {}
    for series, entry in (manifest.get("interpreters") or {}).items():
        info = entry.get("counters") if isinstance(entry, dict) else None
        if not isinstance(info, dict):
            continue
        reasons = dict(info.get("skipped") or {})
        if info.get("reason"):
            reasons["all"] = info["reason"]
        for op, failures in (info.get("failed_ops") or {}).items():
            for counter, why in failures.items():
                reasons[f"{counter} of {op}"] = "failed: " + str(why).splitlines()[-1]
        if reasons:
            out[series] = reasons
    return out


@dataclasses.dataclass
class Lookup:
    """Count rows indexed once, for the questions asked per op (a report asks them per
    finding: scanning every row for each made a report quadratic in ops, issue 34)."""
    by_key: dict           # (series, op, counter) -> row
    syscall_names: dict    # (series, op) -> {syscall names counted}
    series_of: dict        # op -> {series that counted it}
    suite_ops: list        # sorted (suite, op)
    suite_of: dict         # op -> its suite (the first of suite_ops)
    byte_syscall_names: dict   # (series, op) -> {names of the calls whose bytes were summed}


def build_lookup(rows) -> Lookup:
    by_key, names, series_of, suite_ops, byte_names = {}, {}, {}, set(), {}
    for r in rows:
        by_key[(r["series"], r["op"], r["counter"])] = r
        if r["counter"].startswith("syscall:"):
            names.setdefault((r["series"], r["op"]), set()).add(r["counter"][8:])
        elif r["counter"].startswith("syscall_bytes:"):
            byte_names.setdefault((r["series"], r["op"]), set()).add(r["counter"][14:])
        series_of.setdefault(r["op"], set()).add(r["series"])
        suite_ops.add((r["suite"], r["op"]))
    suite_ops = sorted(suite_ops, key=_suite_op_key)
    suite_of: dict = {}
    for suite, op in suite_ops:
        suite_of.setdefault(op, suite)
    return Lookup(by_key, names, series_of, suite_ops, suite_of, byte_names)


def _suite_op_key(item):
    suite, op = item
    return (suite is not None, suite or "", op)   # a row without a suite sorts first


class CountRows(list):
    """Count rows (``load_document_rows``) that build their ``Lookup`` once, on first use.
    Read only once made: the lookup does not follow later changes to the list."""

    @functools.cached_property
    def lookup(self) -> Lookup:
        return build_lookup(self)


def lookup(rows) -> Lookup:
    """``rows``' lookup: kept with a ``CountRows``, built afresh for a plain list."""
    return rows.lookup if isinstance(rows, CountRows) else build_lookup(rows)


def counted_series(rows, op: str) -> set:
    """The series that counted ``op``."""
    return lookup(rows).series_of.get(op, set())


def side_rows(side) -> dict:
    """{series: rows} of a run directory, a series' pyperf file or a counters file."""
    side = Path(side)
    if side.is_dir():
        rows = load_counts(side)
    else:
        name = store.plain_name(side)   # a compressed file's counts may be either way
        if name.endswith(store.COUNTERS_SUFFIX):
            rows = load_document_rows(side)
        else:
            name = name[:-len(".json")] + store.COUNTERS_SUFFIX if name.endswith(".json") \
                else name + store.COUNTERS_SUFFIX
            rows = load_document_rows(store.stored_form(side.with_name(name)))
    by_series = {}
    for r in rows:
        by_series.setdefault(r["series"], []).append(r)
    return by_series


def misattributed_functions(document: dict) -> bool:
    """Whether a counters file's functions were counted by the switch without a fresh frame.

    Files of that method (before issue 35) switched callgrind's instrumentation on inside
    a running frame, which files that frame's instructions under the wrong function (3.11+:
    the eval loop's under ``_PyObject_MakeTpCall``). Their totals are right; their
    functions are not used (counting the run again replaces them)."""
    method = (document.get("methods") or {}).get("instructions") or ""
    return "--instr-atstart=no" in method and "entered after the switch" not in method


def load_functions(run_dir) -> dict:
    """{(series, op): (counted calls, [[name, file, self instructions, times entered]])}
    (files counted before calls were kept: three elements) of a run's counters
    files, for the ops whose functions were kept (iomatrix.callgrind); unreadable files and
    files whose functions are misattributed (``misattributed_functions``) are left out here
    (load_counts names the unreadable ones)."""
    found = {}
    for series, document in usable_counters_documents(run_dir):
        for op, entry in document["ops"].items():
            if entry.get("functions"):
                found[(series, op)] = (entry.get("calls") or 1, entry["functions"])
    return found


def usable_counters_documents(run_dir):
    """(series, document) of each counters file of a run whose functions can be used:
    unreadable files and files whose functions are misattributed are left out (load_counts
    names the unreadable ones). load_functions and callpaths.load_call_graphs read these."""
    for path in store.counters_files(run_dir):
        try:
            document = read_document_once(path)
        except store.ResultFileError:
            continue
        if not document or misattributed_functions(document):
            continue
        yield (document.get("series")
               or store.plain_name(path)[:-len(store.COUNTERS_SUFFIX)]), document
