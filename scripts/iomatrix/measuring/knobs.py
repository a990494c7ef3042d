"""The knobs an ablation sets: one entry of KNOBS per default that changed (issue 43).

Where a release changed a default that an op's time hangs on (3.14's 128 KiB buffer,
gh-117151), the run times the op again with the knob set to the other side's value: under
the new release with the old value, under the old release with the new one, as series of
their own in the same lockstep rounds (``3.14.7~buffering=4096``: ``ablation_series``).
The report reads them back as ops ``OP~buffering=4096`` of the release's own series
(analysing.ablation) and says beside the finding whether the knob reproduces the step.

A knob is one entry of KNOBS: its name (what the worker sets: suites/_api.py,
``Context.set_knob``), the words of a changelog entry that speak of it, the release whose
default changed, the values on either side and the ops it applies to. ``effective`` gives
the values a release really takes on the fixtures' file system where that is not the
documented default: 3.13's open() took the file's ``st_blksize`` (4 KiB on Linux's file
systems), not io.DEFAULT_BUFFER_SIZE (8 KiB), so the old side's value there is 4 KiB.
docs/methodology.md, "Ablations", has the table.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from iomatrix.measuring.selection import CONTROL_SUFFIX

# An ablation series is "<series>~<knob>=<value>" (3.14.7~buffering=4096); its ops are read
# back as "<op>~<knob>=<value>" (cli.SERIES_PATTERN allows the suffix).
SEPARATOR = "~"


@dataclass(frozen=True)
class Knob:
    name: str            # what the worker sets: "buffering" (open()'s buffering=VALUE)
    words: str           # an entry that speaks of it ("a|b|c", changelog's matching)
    changed_in: str      # the first release with the new default ("3.14.0a6")
    entry: str           # the changelog entry that changed it ("gh-117151")
    old_value: int       # the documented default before
    new_value: int       # the documented default from changed_in on
    ops: str             # the ops it applies to (re.search on the op name)
    what: str = "buffer"  # the page's noun: "with a 4 KiB buffer"
    # (old, new) as the two releases really take them on a file system of this block size;
    # None: the documented values
    effective: Callable[[int], tuple[int, int]] | None = None
    # Whether the older release can take the new value: False where it has no such setting
    # (2.x's builtin file object neither decodes nor translates newlines), so only the newer
    # release is timed with the old value (the closest it has).
    old_side: bool = True
    # How a page says a value ("encoding='latin-1'"); None: "a 4 KiB buffer" (size and what)
    phrase: Callable[[int], str] | None = None
    # The first release whose default changed again (a later entry of KNOBS of the same name):
    # a step to it or past it is that entry's, so two ablations of one name never time the
    # same series (a run of 2.7 and 3.14 alone takes gh-117151's buffer, not PEP 3116's).
    until: str | None = None

    def values_on(self, blksize: int | None) -> tuple[int, int]:
        if self.effective is None or not blksize:
            return self.old_value, self.new_value
        return self.effective(blksize)


def _read_ahead(blksize: int) -> tuple[int, int]:
    # 2.x's file iteration reads ahead READAHEAD_BUFSIZE (8 KiB, Objects/fileobject.c's
    # file_iternext) whatever the file system; 3.0 to 3.13's BufferedReader takes
    # st_blksize when above 1, else DEFAULT_BUFFER_SIZE (8 KiB), as _open_buffer's old side
    return 8192, _open_buffer(blksize)[0]


def _open_buffer(blksize: int) -> tuple[int, int]:
    # up to 3.13: st_blksize when above 1, else DEFAULT_BUFFER_SIZE (8 KiB);
    # from 3.14.0a6: max(min(st_blksize, 8 MiB), DEFAULT_BUFFER_SIZE (128 KiB))
    old = blksize if blksize > 1 else 8192
    return old, max(min(blksize, 8 << 20), 131072)


# The text layer's knobs take a code, since a knob's value is a whole number (the worker's
# --knob NAME=VALUE, a series name "3.6.15~encoding=2"): suites/_api.py's TEXT_ENCODINGS and
# NEWLINES hold the same codes (tests/test_ablation.py checks they agree).
TEXT_ENCODINGS = {1: "utf-8", 2: "latin-1"}
NEWLINES = {1: None, 2: ""}     # 1: universal newlines (3.x's default), 2: no translation


def _encoding_phrase(code: int) -> str:
    return f"encoding={TEXT_ENCODINGS.get(code, code)!r}"


def _newline_phrase(code: int) -> str:
    return f"newline={NEWLINES.get(code, code)!r}"


# The text ops whose 2.7 side reads or writes bytes through the builtin file object (lutz2009's
# text modes: its TEXT_API_27), where a page says "3.x's text mode decodes".
TEXT_OPS_FROM_2X = r"^(read|write)_\w+_textMode$"
# The line iterations whose 2.7 side is the builtin file object's read-ahead (PEP 3116's
# buffering knob): lutz2009's line reads and chunks_iterate_lines, the same iteration of a
# binary file. (That op's ablation once took twice its main series' time with the knob at the
# default's own value, 3.6.15 with buffering=4096: 2,928 page faults a call against 560. The
# cause was no knob and no condition of the host: 3.6's pymalloc mapped and unmapped an arena
# per object, as the worker's command line left its arenas; harness.keep_spare_arena.)
LINE_OPS_FROM_2X = r"^(read_byLines_(text|binary)Mode|chunks_iterate_lines)$"

KNOBS = [
    # gh-117151: io.DEFAULT_BUFFER_SIZE 8 KiB -> 128 KiB, and open() takes
    # max(min(st_blksize, 8 MiB), DEFAULT_BUFFER_SIZE) where it took st_blksize. textio's
    # files too (io.open: textio_write_lines_ascii's write calls 32 -> 3 in 3.14).
    Knob("buffering", "default_buffer_size|buffer size|buffering|st_blksize", "3.14.0a6",
         "gh-117151", 8192, 131072,
         r"^(read_by|write_by|chunks_|mmapio_slices_seek|iobench_|textio_)", "buffer",
         _open_buffer),
    # bpo-36103: shutil.copyfileobj's default length (COPY_BUFSIZE) 16 KiB -> 64 KiB.
    Knob("copy_bufsize", "copyfileobj|copy_bufsize|buffer size", "3.8.0a3", "bpo-36103",
         16384, 65536, r"^copies_copyfileobj_default$", "copy buffer"),
    # gh-117151 (3.14.0a1): COPY_BUFSIZE 64 KiB -> 256 KiB on non-Windows platforms.
    Knob("copy_bufsize", "copyfileobj|copy_bufsize|buffer size", "3.14.0a1", "gh-117151",
         65536, 262144, r"^copies_copyfileobj_default$", "copy buffer"),
    # PEP 3116 (3.0): text mode decodes (the locale's encoding, UTF-8 here) and translates
    # newlines, where 2.x's file object moved bytes as they were. 3.x with the cheapest
    # decoder (latin-1: every byte is its character, no validation) and no newline
    # translation (newline='') is as near the 2.x file object as its text mode comes: where
    # that takes the step away, the decoder or the translation is the step.
    Knob("encoding", "decode|decoder|decoding|utf-8|utf8|latin-1|latin1|codec|text mode",
         "3.0.0", "PEP 3116", 2, 1, TEXT_OPS_FROM_2X, "decoder", old_side=False,
         phrase=_encoding_phrase),
    Knob("newline", "newline|universal newline|translat|text mode", "3.0.0", "PEP 3116",
         2, 1, TEXT_OPS_FROM_2X, "newline", old_side=False, phrase=_newline_phrase),
    # PEP 3116 (3.0): the io stack's BufferedReader replaced 2.x's stdio file object. A line
    # iteration of 2.7 reads ahead 8 KiB a refill (file_iternext's READAHEAD_BUFSIZE; strace
    # of 2.7.18 iterating a 1.8 MB file: 182 read calls of 8,192 bytes and 89 of 4,096 where
    # stdio's buffer held a rest), 3.x's buffered_iternext refills its st_blksize buffer
    # (4 KiB here: 451 read calls in binary mode; text mode's reads are 8 KiB already, its
    # TextIOWrapper's chunk: 226). 3.x with 2.7's 8 KiB asks whether the read-ahead's size
    # is the step.
    # 2.7 has no such value to set (its open()'s buffering sizes stdio's buffer, not the
    # read-ahead), so only the newer release is timed. No knob for the seek+read ops
    # (mmapio_slices_seek_read): 2.7's fseek+fread and 3.x's seek+read make the same read
    # calls of the same bytes, so their step is the io stack's cost per call, which no
    # default sets; nor for the loop around the I/O, which the op's control times.
    Knob("buffering", "read-ahead|readahead|buffer size|buffering|st_blksize", "3.0.0",
         "PEP 3116", 8192, 8192, LINE_OPS_FROM_2X, "buffer", _read_ahead, old_side=False,
         until="3.14.0a6"),
]
NAMES = frozenset(k.name for k in KNOBS)


def release_key(version: str) -> tuple | None:
    """A version text as numbers that sort as releases do (3.14.0a6 < 3.14.0 < 3.14.7), as
    discovery.release_order sorts builds; None when it is none."""
    match = re.fullmatch(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?(?:(a|b|rc)([0-9]+))?\+?",
                         str(version).strip())
    if match is None:
        return None
    major, minor, micro, pre, serial = match.groups()
    level = ({"a": 0, "b": 1, "rc": 2}[pre], int(serial)) if pre else (3, 0)
    return (int(major), int(minor), int(micro or 0), *level)


def knobs_between(old: tuple | None, new: tuple | None, op: str | None = None) -> list[Knob]:
    """The knobs whose default changed in the step OLD -> NEW (release_key tuples), and that
    apply to ``op`` when it is given."""
    if old is None or new is None:
        return []
    if op is not None and op.endswith(CONTROL_SUFFIX):
        return []   # a control does no I/O: no knob of the I/O can move it
    return [k for k in KNOBS if old < release_key(k.changed_in) <= new
            and (k.until is None or new < release_key(k.until))
            and (op is None or re.search(k.ops, op))]


def ablation_series(series: str, knob: Knob, value: int) -> str:
    return f"{series}{SEPARATOR}{knob.name}={value}"


def ablation_op(op: str, knob, value: int) -> str:
    """"OP~KNOB=VALUE"; ``knob`` a Knob or its name."""
    return f"{op}{SEPARATOR}{getattr(knob, 'name', knob)}={value}"


def split_ablation(name: str) -> tuple[str, str, int] | None:
    """(base, knob, value) of "3.14.7~buffering=4096" or "OP~buffering=4096", else None."""
    base, sep, rest = str(name).rpartition(SEPARATOR)
    knob, eq, value = rest.partition("=")
    if not sep or not eq or not value.isdigit() or not base:
        return None
    return base, knob, int(value)
