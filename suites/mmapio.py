"""mmapio: memory-mapped access (the mmap module) against the same work on ``read()``.

Stresses what mapping a file saves or costs compared with copying it into a
bytes object first. Every pair does the same work from an unopened file:

- whole file: ``mmap.read(len(m))`` versus ``f.read()`` in binary and in text mode;
- find: ``mmap.find(needle)`` versus ``f.read().find(needle)`` (the needle is a
  unique line placed 90% into the file);
- regex: ``re.findall`` of five-letter words on the mmap versus on the
  ``read()`` bytes and the ``read()`` text;
- slices: many ``m[i:i + n]`` records versus slices of ``read()`` and versus
  ``f.seek(i); f.read(n)``;
- seek + find: the line starting at many offsets, by ``m.find(b"\\n", i)``
  and by ``m.seek(i); m.readline()`` versus ``data.find`` on ``read()`` and
  versus ``f.seek(i); f.readline()``;
- in-place modify of many records of a scratch copy: slice assignment
  through an ACCESS_WRITE map versus ``f.seek(i); f.write(record)``.

The file is ASCII text. Sizes: smoke 512 KiB, quick 4 MiB, full 64 MiB. On the
smoke file the whole-file and find ops repeat (inner_loops) except under
``--cache cold``. Offsets are a deterministic spread over the file. Verify
compares counts, offsets and crc32s with references computed in setup from
one plain read (outside timing). mmap objects are not context managers on
2.7, hence the try/finally blocks.

What a call's time is made of: ``open`` and ``mmap`` (or a whole ``read``), then the
work: one C call for the whole-file, find and regex ops (copying, searching or
matching the mapped pages or the bytes read); per offset, a slice, a ``find`` or a
``seek`` and ``read``/``readline`` call with the loop's own ``append`` for the
slices, seek + find and modify ops (20,000 offsets a call). ``slices_seek_read``
has a control, ``mmapio_slices_seek_read__control`` (``CONTROLS``): the same loop
appending the same records from a list, so its loop's share is set apart.

In ``core``, the default selection (the 2009 study plus a handful of ops from each
suite), for what they showed as ratios of new to old time per call in the
all-suites reference report (reports/20261122T083756Z-vm.md):

- ``mmapio_slices_seek_read``: f.seek(i); f.read(n): 3.13 -> 3.14 4.34x (each small read
  after a seek refills a 128 KiB buffer)
- ``mmapio_find_mmap``: mmap.find: 3.10 -> 3.11 0.23x
"""
from __future__ import division

import mmap
import os
import re
import shutil
import zlib

from _api import Fixture, Op, control_op, expect_equal, file_crc32, next_of
from _data import ascii_text, write_bytes

KIB = 1024
MIB = 1024 * KIB
FIXTURE = "mmapio.txt"
FILE_BYTES = {"smoke": 512 * KIB, "quick": 4 * MIB, "full": 64 * MIB}
NEEDLE = b"iomatrix-needle: the only line like this one\n"
NEEDLE_AT = 0.9                   # fraction of the file before the needle line
RECORDS = 20000                   # offsets per call for slices, seek + find and modify
RECORD_BYTES = 64
MIN_BYTES_PER_RUN = 8 * MIB       # whole-file ops repeat on the smoke file
# The counting pass (suites/_counting.py) runs every op under valgrind, 20-50x slower than
# natively, and needs no call long enough to time: there the file and the records per call are
# this many times smaller
# and every call makes one pass. Counts are stored with the bytes per call, so per-MiB figures
# compare across sizes.
COUNT_DIVISOR = 16


def _file_bytes(profile, counting=False):
    return FILE_BYTES[profile] // (COUNT_DIVISOR if counting else 1)
FIVE_LETTER_WORDS = re.compile(br"\b[A-Za-z]{5}\b")
FIVE_LETTER_WORDS_TEXT = re.compile(r"\b[A-Za-z]{5}\b")
LETTER_RUNS = re.compile(br"[A-Za-z]+")   # the reference for FIVE_LETTER_WORDS
INVERT_BYTES = bytes(bytearray(255 - i for i in range(256)))


def FIXTURE_BYTES(profile):
    return FILE_BYTES[profile]


def scratch_bytes(profile):
    return FILE_BYTES[profile]


def needle_offset(size):
    return int(size * NEEDLE_AT)


def fixtures(profile, counting=False):
    size = _file_bytes(profile, counting)

    def make(path):
        head = needle_offset(size)
        body = (ascii_text(head, seed=2020).encode("ascii") + NEEDLE
                + ascii_text(size - head - len(NEEDLE), seed=2021).encode("ascii"))
        write_bytes(path, body)
    return [Fixture(FIXTURE, make)]


def record_offsets(size, count=RECORDS, record=RECORD_BYTES):
    """``count`` offsets spread over the file (a fixed stride walk, not sorted)."""
    span = max(1, size - record)
    stride = 7919 * 4099          # odd: visits the file in a scattered order
    return [(i * stride) % span for i in range(count)]


def _map(f, access=mmap.ACCESS_READ):
    return mmap.mmap(f.fileno(), 0, access=access)


# This suite's ops in ``--suite core`` (the default run) and why each is there; the
# docstring says the same. iomatrix.measuring.selection reads this literal (never imports it).
CORE = {
    "mmapio_slices_seek_read":
        "f.seek(i); f.read(n): 3.13 -> 3.14 4.34x (each small read after a seek refills "
        "a 128 KiB buffer)",
    "mmapio_find_mmap": "mmap.find: 3.10 -> 3.11 0.23x",
}

# The ops with a control op ("<op>__control", _api.control_op): the op's loop over the file's
# content in memory, timed beside it. iomatrix.measuring.selection reads this literal too: core
# takes the controls of its core ops.
CONTROLS = {
    "mmapio_slices_seek_read": "the same records from a list, one per offset",
}


# How each op that reads or writes text on 3.x opens its file on 2.7, by op name or by
# category (an op's name wins): "open" (the builtin: on 2.x the C stdio file object, which
# reads and writes bytes, so its 2.7 -> 3.x step also times decoding), "io.open" or
# "codecs.open" (they decode as 3.x does) or "mmap". Here: its two text reads use ``io.open`` on 2.7, which decodes as 3.x does; the others are bytes on every version.
# iomatrix.analysing.study reads this literal (never imports it); tests/test_controls.py
# checks it against what each op calls under 2.7.
TEXT_API_27 = {
    "mmapio_read_whole_file_text": "io.open",
    "mmapio_regex_read_text": "io.open",
}


def ops(ctx):
    path = ctx.path(FIXTURE)
    size = _file_bytes(ctx.profile, ctx.counting)
    record_count = RECORDS // (COUNT_DIVISOR if ctx.counting else 1)   # offsets per call
    passes = 1 if ctx.cache == "cold" or ctx.counting else max(1, MIN_BYTES_PER_RUN // size)
    inner = passes if passes > 1 else None
    open_ = ctx.open
    io_open = ctx.io_module.open
    ref = {}

    def reference():
        """Facts about the file, from one plain read (setup, outside timing)."""
        if not ref:
            with open(path, "rb") as f:
                data = f.read()
            offsets = record_offsets(len(data), record_count)
            records = [data[i:i + RECORD_BYTES] for i in offsets]
            lines = []
            for i in offsets:
                end = data.find(b"\n", i)
                lines.append(data[i:end + 1])
            ref.update({
                "size": len(data),
                "crc": zlib.crc32(data) & 0xFFFFFFFF,
                "needle": needle_offset(size),
                "words": sum(1 for w in LETTER_RUNS.findall(data) if len(w) == 5),
                "offsets": offsets,
                "records_crc": zlib.crc32(b"".join(records)) & 0xFFFFFFFF,
                "lines_crc": zlib.crc32(b"".join(lines)) & 0xFFFFFFFF,
            })
        return ref

    def op(name, category, nbytes, run, verify, reps=None, native=None):
        return Op("mmapio_" + name, category, nbytes, run, verify, setup=reference,
                  inner_loops=reps, evict=(FIXTURE,), native=native)

    out = []

    # -- whole file ------------------------------------------------------------------
    def read_mmap():
        total = 0
        for _ in range(passes):
            with open_(path, "rb") as f:
                m = _map(f)
                try:
                    data = m.read(len(m))   # 2.7's read() needs the size
                finally:
                    m.close()
            total += len(data)
        return total, zlib.crc32(data) & 0xFFFFFFFF

    def read_file(mode):
        def run():
            total = 0
            for _ in range(passes):
                if mode == "rb":
                    with open_(path, "rb") as f:
                        data = f.read()
                else:
                    with io_open(path, "r", encoding="ascii") as f:
                        data = f.read()
                total += len(data)
            if mode != "rb":
                data = data.encode("ascii")  # outside the loop: one conversion for verify
            return total, zlib.crc32(data) & 0xFFFFFFFF
        return run

    def verify_whole(result):
        expect_equal("bytes read from %s" % path, result[0], passes * ref["size"])
        expect_equal("crc32 of what was read from %s" % path, result[1], ref["crc"])

    nbytes = passes * size
    out.append(op("read_whole_mmap", "mmap", nbytes, read_mmap, verify_whole, inner))
    out.append(op("read_whole_file_binary", "mmap", nbytes, read_file("rb"), verify_whole, inner,
                  native=("read", FIXTURE, 0)))
    out.append(op("read_whole_file_text", "mmap", nbytes, read_file("r"), verify_whole, inner))

    # -- find ----------------------------------------------------------------------------
    def find_mmap():
        found = []
        for _ in range(passes):
            with open_(path, "rb") as f:
                m = _map(f)
                try:
                    found.append(m.find(NEEDLE))
                finally:
                    m.close()
        return found

    def find_read():
        found = []
        for _ in range(passes):
            with open_(path, "rb") as f:
                found.append(f.read().find(NEEDLE))
        return found

    def verify_find(found):
        expect_equal("offsets of the needle in %s" % path, found, [ref["needle"]] * passes)

    out.append(op("find_mmap", "mmap", nbytes, find_mmap, verify_find, inner))
    out.append(op("find_read_bytes", "mmap", nbytes, find_read, verify_find, inner))

    # -- regex -------------------------------------------------------------------------
    def regex_mmap():
        with open_(path, "rb") as f:
            m = _map(f)
            try:
                return len(FIVE_LETTER_WORDS.findall(m))
            finally:
                m.close()

    def regex_read_bytes():
        with open_(path, "rb") as f:
            return len(FIVE_LETTER_WORDS.findall(f.read()))

    def regex_read_text():
        with io_open(path, "r", encoding="ascii") as f:
            return len(FIVE_LETTER_WORDS_TEXT.findall(f.read()))

    def verify_regex(count):
        expect_equal("five-letter words in %s" % path, count, ref["words"])

    out.append(op("regex_mmap", "mmap", size, regex_mmap, verify_regex))
    out.append(op("regex_read_bytes", "mmap", size, regex_read_bytes, verify_regex))
    out.append(op("regex_read_text", "mmap", size, regex_read_text, verify_regex))

    # -- slices --------------------------------------------------------------------------
    record_bytes = record_count * RECORD_BYTES

    def slices_mmap():
        offsets = ref["offsets"]
        with open_(path, "rb") as f:
            m = _map(f)
            try:
                records = [m[i:i + RECORD_BYTES] for i in offsets]
            finally:
                m.close()
        return records

    def slices_read():
        offsets = ref["offsets"]
        with open_(path, "rb") as f:
            data = f.read()
        return [data[i:i + RECORD_BYTES] for i in offsets]

    def slices_seek_read():
        offsets = ref["offsets"]
        records = []
        append = records.append
        with open_(path, "rb") as f:
            seek, read = f.seek, f.read
            for i in offsets:
                seek(i)
                append(read(RECORD_BYTES))
        return records

    def verify_records(records):
        expect_equal("records sliced from %s" % path, len(records), record_count)
        expect_equal("crc32 of the records from %s" % path,
                     zlib.crc32(b"".join(records)) & 0xFFFFFFFF, ref["records_crc"])

    out.append(op("slices_mmap", "mmap", record_bytes, slices_mmap, verify_records))
    out.append(op("slices_read_bytes", "mmap", size, slices_read, verify_records))
    out.append(op("slices_seek_read", "mmap", record_bytes, slices_seek_read, verify_records))
    records_read = []

    def control_setup():
        reference()
        with open(path, "rb") as f:
            data = f.read()
        records_read[:] = [data[i:i + RECORD_BYTES] for i in ref["offsets"]]

    def slices_seek_read_control():
        """slices_seek_read's loop, each ``seek(i); read(n)`` replaced by the next of the same
        records, cut in setup (``next_of``)."""
        read = next_of(records_read)
        records = []
        append = records.append
        for i in ref["offsets"]:
            append(read())
        return records
    out.append(control_op(out[-1], slices_seek_read_control, setup=control_setup,
                          teardown=lambda: records_read.__delitem__(slice(None))))

    # -- seek + find: the line from each offset -------------------------------------------
    def lines_mmap():
        offsets = ref["offsets"]
        lines = []
        append = lines.append
        with open_(path, "rb") as f:
            m = _map(f)
            try:
                find = m.find
                for i in offsets:
                    append(m[i:find(b"\n", i) + 1])
            finally:
                m.close()
        return lines

    def lines_mmap_seek_readline():
        offsets = ref["offsets"]
        lines = []
        append = lines.append
        with open_(path, "rb") as f:
            m = _map(f)
            try:
                seek, readline = m.seek, m.readline
                for i in offsets:
                    seek(i)
                    append(readline())
            finally:
                m.close()
        return lines

    def lines_read():
        offsets = ref["offsets"]
        lines = []
        append = lines.append
        with open_(path, "rb") as f:
            data = f.read()
        find = data.find
        for i in offsets:
            append(data[i:find(b"\n", i) + 1])
        return lines

    def lines_seek_readline():
        offsets = ref["offsets"]
        lines = []
        append = lines.append
        with open_(path, "rb") as f:
            seek, readline = f.seek, f.readline
            for i in offsets:
                seek(i)
                append(readline())
        return lines

    def verify_lines(lines):
        expect_equal("lines found in %s" % path, len(lines), record_count)
        expect_equal("crc32 of the lines from %s" % path,
                     zlib.crc32(b"".join(lines)) & 0xFFFFFFFF, ref["lines_crc"])

    out.append(op("seekfind_mmap_find", "mmap", record_bytes, lines_mmap, verify_lines))
    out.append(op("seekfind_mmap_readline", "mmap", record_bytes, lines_mmap_seek_readline,
                  verify_lines))
    out.append(op("seekfind_read_bytes", "mmap", size, lines_read, verify_lines))
    out.append(op("seekfind_file_readline", "mmap", record_bytes, lines_seek_readline,
                  verify_lines))

    # -- modify in place (a scratch copy) -------------------------------------------------
    copy_path = ctx.scratch_path("mmapio-modify.txt")
    state = {"calls": 0}

    def modify_setup():
        shutil.copyfile(path, copy_path)
        # Records may overlap; applying the inverted records in order defines the result.
        data = bytearray(open_and_read(path))
        forward = []
        for i in ref["offsets"]:
            piece = bytes(data[i:i + RECORD_BYTES]).translate(INVERT_BYTES)
            forward.append(piece)
            data[i:i + RECORD_BYTES] = piece
        changed = bytes(data)
        state["pieces"] = [forward]
        # Undoing: the same offsets in reverse order, writing what was there before.
        undo = bytearray(changed)
        restore = []
        for i in reversed(ref["offsets"]):
            piece = bytes(undo[i:i + RECORD_BYTES]).translate(INVERT_BYTES)
            restore.append(piece)
            undo[i:i + RECORD_BYTES] = piece
        state["pieces"].append(restore)
        state["orders"] = [list(ref["offsets"]), list(reversed(ref["offsets"]))]
        state["crcs"] = [zlib.crc32(changed) & 0xFFFFFFFF, zlib.crc32(bytes(undo)) & 0xFFFFFFFF]

    def next_index():
        index = state["calls"] % 2
        state["calls"] += 1
        return index

    def modify_mmap():
        index = next_index()
        pieces, order = state["pieces"][index], state["orders"][index]
        with open_(copy_path, "r+b") as f:
            m = _map(f, mmap.ACCESS_WRITE)
            try:
                for i, piece in zip(order, pieces):
                    m[i:i + RECORD_BYTES] = piece
            finally:
                m.close()
        return index

    def modify_seek_write():
        index = next_index()
        pieces, order = state["pieces"][index], state["orders"][index]
        with open_(copy_path, "r+b") as f:
            seek, write = f.seek, f.write
            for i, piece in zip(order, pieces):
                seek(i)
                write(piece)
        return index

    def verify_modify(index):
        crc, got_size = file_crc32(copy_path)
        expect_equal("size of %s" % copy_path, got_size, ref["size"])
        expect_equal("crc32 of %s after call %d" % (copy_path, state["calls"]), crc,
                     state["crcs"][index])

    def modify_teardown():
        state.clear()
        state["calls"] = 0
        if os.path.exists(copy_path):
            os.remove(copy_path)

    for name, run in (("modify_mmap", modify_mmap), ("modify_seek_write", modify_seek_write)):
        out.append(Op("mmapio_" + name, "mmap-write", record_bytes, run, verify_modify,
                      setup=_chain(reference, modify_setup), teardown=modify_teardown))
    return out


def open_and_read(path):
    with open(path, "rb") as f:
        return f.read()


def _chain(*steps):
    def run_all():
        for step in steps:
            step()
    return run_all
