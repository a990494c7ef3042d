"""A run's stored crosschecks: ``RUN/crosscheck/<made>-<A>-<B>.json``.

``nox -s crosscheck -- --run-dir RUN`` times the lutz2009 ops with a plain loop under the
run's conditions and sets its ratios beside the harness's (iomatrix.commands.crosscheck).
Its result is stored inside the run it checked, in a directory of its own that only this
module writes (outputs.RUN_SUBDIRECTORIES: no report or other tool may write there), so
the run's report can say how far its harness stands from a plain loop, and a run that
travels carries its check with it. One file per crosscheck, never replaced: a second
crosscheck of the same run is a second file, and the report quotes the newest.

The document (schema ``crosscheck``): when it was made (UTC), the two labels A and B,
the plain side's settings, and per allocator condition the conditions both sides ran
under and, per op, the plain loop's seconds and the harness's (median of per-process
means) for each label. The plain loop's seconds are the median over fresh processes of
each one's best call (``plain_seconds``) and, from version 2, of the mean of its settled
calls (``plain_mean_seconds``: the harness's statistic, which the gap is taken on), and
version 2 keeps every call of every plain process (``plain_processes``). Ratios are made
by the reader from those. Nothing in it is a path of the machine that made it.

A run directory is untrusted input: every file is read through the schema; one that is
damaged, foreign or a link is named and not used, never an error of the report.
"""
from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path

from iomatrix.storing import contract, store

DIRECTORY = "crosscheck"
# 2: the plain loop's mean of settled calls beside its best call, and every call kept.
VERSION = 2
KIND = "crosscheck"
# "2026-11-27T17:30:05Z": the form ``made`` takes; a page prints its date.
MADE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
MAX_FILES = 1000       # a run is crosschecked a few times; more is not a run iomatrix wrote
MAX_BYTES = 4 * 1024 * 1024
# Plain calls per op and interpreter (--calls x --processes) a stored crosscheck takes: at
# most 3 conditions x 14 ops x 2 labels of them, written compactly, the times to the
# nanosecond (about 30 bytes a call for its four figures: 2.5 MB), stay inside MAX_BYTES.
MAX_CALLS_PER_OP = 1000


def made_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def directory_problem(run_dir: Path) -> str | None:
    """Why crosschecks cannot be stored in ``run_dir`` (checked before any timing): its
    crosscheck/ is a link or not a directory, or the run directory cannot take a file."""
    place = Path(run_dir) / DIRECTORY
    if place.is_symlink():
        return f"{place} is a symbolic link; a crosscheck is stored in the run itself only"
    if os.path.lexists(place) and not place.is_dir():
        return f"{place} is not a directory"
    target = place if place.is_dir() else Path(run_dir)
    if not os.access(target, os.W_OK | os.X_OK):
        return f"cannot write in {target} (no permission or a read-only file system)"
    return None


def write(run_dir: Path, document: dict) -> Path:
    """Store ``document`` (checked against the schema first) as a new file in
    ``run_dir/crosscheck/``; an existing file is never replaced (a name taken gets a
    number). OSError when the place cannot take it."""
    schema = store.schema_module()
    if schema is not None:
        schema.check(KIND, document)
    place = Path(run_dir) / DIRECTORY
    if place.is_symlink():
        raise OSError(f"{place} is a symbolic link")
    place.mkdir(exist_ok=True)
    a, b = document["labels"]
    stem = f"{document['made'].replace('-', '').replace(':', '')}-{a}-{b}"
    # Compact: the per-call lists of version 2 would take a line per number indented.
    text = json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n"
    for number in range(1, MAX_FILES + 1):
        path = place / (f"{stem}.json" if number == 1 else f"{stem}-{number}.json")
        try:
            contract.atomic_write_bytes(str(path), text.encode("utf-8"), overwrite=False)
            return path
        except FileExistsError:   # that name is taken: the next number
            continue
    raise OSError(f"{place}: {MAX_FILES} crosschecks stored already")


def files(run_dir: Path) -> list[Path]:
    """The stored crosscheck files of a run (not hidden, not half-written), by name."""
    place = Path(run_dir) / DIRECTORY
    if place.is_symlink() or not place.is_dir():
        return []
    return sorted(p for p in place.glob("*.json") if not p.name.startswith("."))[:MAX_FILES]


def read_all(run_dir: Path) -> tuple[list[dict], list[tuple[str, str]]]:
    """(the valid stored crosschecks, oldest first; [(file name, why it was not used)])."""
    found, problems = [], []
    place = Path(run_dir) / DIRECTORY
    if place.is_symlink():
        problems.append((DIRECTORY, "a symbolic link, not followed"))
        return [], problems
    for path in files(run_dir):
        try:
            found.append(store.read_json(path, MAX_BYTES, kind=KIND))
        except store.ResultFileError as exc:
            problems.append((path.name, store.without_path(str(exc), path)))
    return sorted(found, key=lambda d: d["made"]), problems


def untouched(document: dict) -> dict | None:
    """The condition of ``document`` with glibc's allocator untouched (``default``)."""
    return next((c for c in document["conditions"] if c["allocator"] == "default"), None)


def newest_untouched(run_dir: Path) -> tuple[dict | None, dict | None, list]:
    """(the newest stored crosscheck that checked the untouched condition, that condition,
    the problems of the files not used)."""
    documents, problems = read_all(run_dir)
    for document in reversed(documents):
        condition = untouched(document)
        if condition is not None:
            return document, condition, problems
    return None, None, problems


def ratio(row: dict, side: str, labels: list) -> float | None:
    """B/A of one op on one side (``plain``: the best call, ``plain_mean``: the mean of
    settled calls, or ``harness``), None where one is missing."""
    seconds = row.get(f"{side}_seconds") or {}
    a, b = (seconds.get(label) for label in labels)
    return b / a if a and b else None


def like_for_like(document: dict) -> str:
    """The plain side the gap is taken on: ``plain_mean`` (the mean of the settled calls,
    the statistic of the harness's values) where the document has it (version 2), else
    ``plain`` (the best call: all a version 1 crosscheck stored)."""
    rows = [row for condition in document["conditions"] for row in condition["rows"]]
    return "plain_mean" if rows and all(row.get("plain_mean_seconds") is not None
                                        for row in rows) else "plain"


def gap(row: dict, labels: list, side: str = "plain_mean") -> float | None:
    """The plain loop's ratio (by ``side``'s statistic; the best call where the row has no
    mean) over the harness's: 1 where the harness is a plain program."""
    if row.get(f"{side}_seconds") is None:
        side = "plain"
    plain, harness = ratio(row, side, labels), ratio(row, "harness", labels)
    return plain / harness if plain and harness else None


def made_date(document: dict) -> str:
    return document["made"][:10] if re.match(MADE_PATTERN, document["made"]) else "?"
