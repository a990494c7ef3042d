"""The counting pass's file, ``<series>.counters.json``: its format's constants and its reader.

Both the counting pass that writes it (``iomatrix.measuring.counters``, measuring) and the readers
that analyse it (``iomatrix.analysing.counts``) stand on this module, so measuring never imports
analysing (the stages' contract, ``tests/test_imports.py``). ``iomatrix.measuring.counters``'
docstring gives the format.
"""
from __future__ import annotations

import os
from pathlib import Path

from iomatrix import cli
from iomatrix.storing import store
# The byte-moving calls and their bound: a module of their own, which the schema reads too
# (the schema is imported by store, so it cannot import this module).
from iomatrix.storing.syscallbytes import BYTE_SYSCALLS, MAX_SYSCALL_BYTES  # noqa: F401

FORMAT_VERSION = 1
COUNTERS = ("syscalls", "rusage", "instructions")
RUSAGE_FIELDS = ("minflt", "majflt", "nvcsw", "nivcsw")
COUNT_CALLS = 1  # counted calls per op, after one warm-up call


def read_document(path: Path) -> dict | None:
    """The counters file at ``path``, or None when there is none; ResultFileError naming
    the field when it is not a valid one (iomatrix.storing.schema.Counters: counts are
    non-negative integers, at least one call per op)."""
    if not os.path.lexists(path):
        return None
    data = store.read_json(path, kind="counters")
    if not isinstance(data, dict) or data.get("iomatrix_counters_version") != FORMAT_VERSION \
            or not isinstance(data.get("ops"), dict):  # checked here too where pydantic is not
        raise store.ResultFileError(f"{path}: not an iomatrix counters file (version "
                                    f"{FORMAT_VERSION})")
    # The file name says whose counts these are; a document that names another series
    # would have its counts filed under the wrong series, or under none (they vanished).
    named = store.plain_name(path)[:-len(store.COUNTERS_SUFFIX)] \
        if store.plain_name(path).endswith(store.COUNTERS_SUFFIX) else None
    if named is not None and data.get("series") not in (None, named):
        raise store.ResultFileError(
            f"{path}: its series field says {cli.one_line(repr(data.get('series')))}, its "
            f"file name {named!r}; the counts are not used (rename the file or fix the field)")
    return data
