# -*- coding: utf-8 -*-
"""iobench: the matrix of CPython's former Tools/iobench, as pyperf ops.

Stresses the buffered and text layers of ``open()`` with small and large
requests on an already open file: ``read(1)``, ``read(20)``, ``read(4096)``,
iteration by lines and whole-file ``read()`` on 20 KiB, 400 KiB and 10 MiB
files, in binary mode and in text mode with utf-8 (multilingual: Latin,
Greek, Cyrillic, CJK and emoji), latin-1 and utf-16 and with lf or crlf line
ends; seeking forward 1000 units at a time; and the writing paths of ``r+``
and ``a`` files: overwriting 1, 20 and 4096 units at a time, read-modify-write
(read N units, seek back, write N changed units) and appending.

This is where Python 3.0 was 5 to 48 times slower than 2.6 (bpo-4561). Like
the original, the file is opened once (in setup) and every repetition starts
with ``seek(0)``: the open() cost belongs to lutz2009. Binary files use
``ctx.open`` (on 2.7 the C stdio file object, as the original ran); text files
need an encoding, so they use ``ctx.io_module.open`` (``io.open`` on 2.7).

Small files are read several times per call (inner_loops) so that a call
lasts a millisecond or more; under ``--cache cold`` every read op reads its
file once per call, straight after the eviction. The 10 MiB ops are listed
but unavailable in the smoke profile, whose fixtures stop at 400 KiB. Text read-modify-write has no 1-unit op: every ``tell()``
after a write flushes and every read after a seek decodes a fresh 8 KiB chunk,
so one pass over 400 KiB would take seconds; 20 and 4096 units show the cost.

Writing ops work on copies under the scratch directory and toggle the copy
between two payloads (the original and a transformed one), so every call must
really write: verify compares the whole file's crc32 with the payload's.

What a call's time is made of. Reads: per request, a method call, the buffered
layer's copy (and for text the decoder's chunk and the universal-newline pass),
a new object, and the loop's own bookkeeping (``calls += 1``, ``last = block``),
which for 1- and 20-unit requests is a large share: their controls show it.
Seeks: the ``seek`` call (text: a cookie and a decoder reset). Overwrites and
appends: a ``write`` call per piece, the buffering, (text) encoding, and the
system calls at each flush. Read-modify-write: per block ``tell`` (text), ``read``,
``seek``, the transform and ``write``; the transform is cheap and the same on every
version (binary: ``bytes.translate`` with a 256-byte table; text: the block
reversed, a slice), so the step is the I/O's, not the transform's. The ops listed in
``CONTROLS`` have a control ``<op>__control``: the same loop and transform over the
same pieces in memory.

In ``core``, the default selection (the 2009 study plus a handful of ops from each
suite), for what they showed as ratios of new to old time per call in the
all-suites reference report (reports/20261122T083756Z-vm.md):

- ``iobench_readmodify_text_utf8_lf_400KiB_4096units``: text read-modify-write (tell, read,
  seek, write); its 3.12 and 3.14 steps were its old str.translate transform's
- ``iobench_seek_text_utf8_lf_400KiB_1000units``: text seek and tell: 3.6 -> 3.7 0.79x,
  3.11 -> 3.12 1.20x
"""
from __future__ import division, print_function

import os
import shutil
import zlib

from _api import Fixture, Op, Sink, control_op, expect_equal, file_crc32, next_of
from _data import MEASURE_CODEC, DeterministicBytes, encoding_words, multilingual_text, write_bytes

KIB = 1024
MIB = 1024 * KIB
SIZES = (("20KiB", 20 * KIB), ("400KiB", 400 * KIB), ("10MiB", 10 * MIB))
SMOKE_SIZES = ("20KiB", "400KiB")
# Millions of 1- and 20-unit reads per call: they alone would double a quick run.
FULL_ONLY_SMALL_UNIT_SIZES = ("10MiB",)
WRITE_SIZE = "400KiB"              # the size the writing ops and the extra text formats use
READ_UNITS = (1, 20, 4096)
READ_KINDS = ("1unit", "20units", "4096units", "lines", "whole")
SEEK_STEP = 1000
OVERWRITE_UNITS = (1, 20, 4096)
READ_MODIFY_UNITS = {"binary": (1, 20, 4096), "text_utf8_lf": (20, 4096)}
APPEND_UNITS = (20, 4096)

# Text formats: name -> (encoding, line end). utf8_lf is run at every size,
# the others at WRITE_SIZE only.
TEXT_FORMATS = (
    ("utf8_lf", "utf-8", u"\n"),
    ("utf8_crlf", "utf-8", u"\r\n"),
    ("latin1_lf", "latin-1", u"\n"),
    ("latin1_crlf", "latin-1", u"\r\n"),
    ("utf16_lf", "utf-16", u"\n"),
    ("utf16_crlf", "utf-16", u"\r\n"),
)
ALL_SIZES_FORMAT = "utf8_lf"
TAIL_UNITS = 4096          # the largest read; verify compares the last read with the file's tail

# Bytes one run() should process at least, per kind of op, so that a call
# takes a millisecond or more on a fast interpreter (the host runs workers with
# --loops 1): small files are read several times per call (inner_loops).
# Decoding utf-8 and utf-16 is several times slower than binary reads, hence
# two tables; latin-1 decodes about as fast as a copy and uses the binary one.
# The counting pass (suites/_counting.py) runs every op under valgrind, 20-50x slower than
# natively, and needs no call long enough to time: there the files are this many times smaller
# than the size in the op's name (400 KiB -> 50 KiB) and every call makes one pass. Counts are
# stored with the bytes per call, so per-MiB figures compare across sizes.
COUNT_DIVISOR = 8
MIN_BYTES_PER_RUN = {
    "binary": {"1unit": 32 * KIB, "20units": 256 * KIB, "4096units": 8 * MIB,
               "lines": 2 * MIB, "whole": 32 * MIB, "seek": 8 * MIB,
               "overwrite_1": 32 * KIB, "overwrite_20": 256 * KIB, "overwrite_4096": 4 * MIB,
               "readmodify_1": 8 * KIB, "readmodify_20": 128 * KIB, "readmodify_4096": 2 * MIB,
               "append_20": 256 * KIB, "append_4096": 2 * MIB},
    "text": {"1unit": 32 * KIB, "20units": 256 * KIB, "4096units": 1 * MIB,
             "lines": 1 * MIB, "whole": 2 * MIB, "seek": 2 * MIB,
             "overwrite_1": 16 * KIB, "overwrite_20": 128 * KIB, "overwrite_4096": 1 * MIB,
             "readmodify_20": 8 * KIB, "readmodify_4096": 256 * KIB,
             "append_20": 128 * KIB, "append_4096": 1 * MIB},
}

# -- multilingual text ----------------------------------------------------------

# -- payload transforms (involutions, so two calls restore the original) -----------

INVERT_BYTES = bytes(bytearray(255 - i for i in range(256)))
SWAP_ASCII_CASE = dict((ord(c), ord(c.swapcase()))
                       for c in u"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def invert(data):
    return data.translate(INVERT_BYTES)


def swap_case(text):
    return text.translate(SWAP_ASCII_CASE)


def reverse(block):
    """The text read-modify-write's transform: the block's characters in reverse order.

    It used to be ``block.translate(SWAP_ASCII_CASE)``, a dict that misses on most
    characters of this 43%-non-ASCII text: each miss raises and clears a LookupError
    inside str.translate, which cost more than the reads and writes (21.0 -> 36.3 ms for
    the translate alone from 3.11 to 3.12, 3.44 vs 3.39 ms for the I/O loop) and moved
    with the releases' exception handling, not with their I/O. A slice costs a copy,
    the same on every version, and keeps what the op needs: the same characters (so
    the same encoded length: the write lands where the read was), a changed payload,
    and an involution (two calls restore the original)."""
    return block[::-1]


def reverse_blocks(text, units):
    """What one read-modify-write pass in ``units``-character blocks makes of ``text``."""
    return u"".join(reverse(piece) for piece in _split(text, units))


# -- fixtures -----------------------------------------------------------------------

def _sizes(profile):
    return [(label, size) for label, size in SIZES if profile != "smoke" or label in SMOKE_SIZES]


def binary_name(label):
    return "iobench-%s.bin" % label


def text_name(label, fmt):
    return "iobench-%s-%s.txt" % (label, fmt)


def _text_formats_for(label):
    return [f for f in TEXT_FORMATS if f[0] == ALL_SIZES_FORMAT or label == WRITE_SIZE]


def FIXTURE_BYTES(profile):
    total = 0
    for label, size in _sizes(profile):
        total += size * (1 + len(_text_formats_for(label)))
    return total + MIB  # text files end on a line, a little past their nominal size


def scratch_bytes(profile):
    return 2 * dict(SIZES)[WRITE_SIZE]  # one copy, doubled while appending


def fixtures(profile, counting=False):
    out = []
    for index, (label, size) in enumerate(_sizes(profile)):
        size //= COUNT_DIVISOR if counting else 1
        out.append(Fixture(binary_name(label), _binary_maker(size, 4561 + index)))
        for fmt, encoding, newline in _text_formats_for(label):
            out.append(Fixture(text_name(label, fmt),
                               _text_maker(size, 1000 + index, encoding, newline)))
    return out


def _binary_maker(size, seed):
    def make(path):
        write_bytes(path, DeterministicBytes(seed).block(size))
    return make


def _text_maker(size, seed, encoding, newline):
    def make(path):
        text = multilingual_text(size, seed, encoding, newline, encoding_words(encoding))
        write_bytes(path, text.encode(encoding))
    return make


# -- reference facts, computed in setup from the file (outside timing) ---------------

def _read_raw(path):
    with open(path, "rb") as f:
        return f.read()


def reference(path, encoding=None):
    """What a reader must see: units, lines, last line and tail of the file.

    Binary units are bytes; text units are characters after universal-newline
    translation, as ``open(..., encoding=...)`` with the default newline sees them.
    """
    raw = _read_raw(path)
    if encoding is None:
        data = raw
        nl = b"\n"
    else:
        data = raw.decode(encoding).replace(u"\r\n", u"\n")
        nl = u"\n"
    lines = data.count(nl)
    if data and not data.endswith(nl):
        lines += 1
    last_start = data.rfind(nl, 0, len(data) - 1) + 1
    return {"units": len(data), "lines": lines, "last_line": data[last_start:],
            "tail": data[-TAIL_UNITS:]}


# -- ops ---------------------------------------------------------------------------------

def fixture_bytes(ctx, name):
    """The fixture's size from the manifest; its nominal size when listing ops (no manifest)."""
    label = name.split("-")[1].split(".")[0]
    return ctx.expect(name)["bytes"] or dict(SIZES)[label]


def _passes(encoding, kind, nominal_size, counting=False):
    if counting:
        return 1    # counts need no call long enough to time
    table = MIN_BYTES_PER_RUN["binary" if encoding in (None, "latin-1") else "text"]
    return max(1, table[kind] // nominal_size)


def _toggle_passes(encoding, kind, nominal_size, counting=False):
    """Passes for the ops that switch a copy between two payloads: odd, so a call
    that wrote nothing leaves the file in the state verify rejects."""
    return _passes(encoding, kind, nominal_size, counting) | 1


def _opener(ctx, encoding):
    """open(path, mode) for binary (ctx.open) or for text in ``encoding``."""
    if encoding is None:
        return ctx.open
    io_open = ctx.io_module.open

    def open_text(path, mode):
        return io_open(path, mode, encoding=encoding)
    return open_text


class _Handle(object):
    """A file opened in setup and closed in teardown."""

    def __init__(self, opener, path, mode):
        self.opener = opener
        self.path = path
        self.mode = mode
        self.f = None

    def open(self):
        self.f = self.opener(self.path, self.mode)

    def close(self):
        if self.f is not None:
            self.f.close()
            self.f = None


def _read_op(ctx, fmt_name, encoding, label, size, kind):
    name = binary_name(label) if encoding is None else text_name(label, fmt_name)
    path = ctx.path(name)
    passes = 1 if ctx.cache == "cold" else _passes(encoding, kind, size, ctx.counting)
    handle = _Handle(_opener(ctx, encoding), path, "rb" if encoding is None else "r")
    ref = {}

    def setup():
        ref.update(reference(path, encoding))
        handle.open()

    if kind == "lines":
        def run():
            f = handle.f
            total = 0
            last = None
            for _ in range(passes):
                f.seek(0)
                for line in f:
                    total += 1
                    last = line
            return total, last

        def verify(result):
            expect_equal("lines read from %s" % name, result[0], passes * ref["lines"])
            expect_equal("last line of %s" % name, result[1], ref["last_line"])
    elif kind == "whole":
        def run():
            f = handle.f
            total = 0
            data = None
            for _ in range(passes):
                f.seek(0)
                data = f.read()
                total += len(data)
            return total, data[-TAIL_UNITS:]

        def verify(result):
            expect_equal("units read from %s" % name, result[0], passes * ref["units"])
            expect_equal("tail of %s" % name, result[1], ref["tail"])
    else:
        units = int(kind.replace("units", "").replace("unit", ""))

        def run():
            f = handle.f
            read = f.read
            calls = 0
            total = 0
            last = None
            for _ in range(passes):
                f.seek(0)
                block = read(units)
                while block:
                    calls += 1
                    last = block
                    block = read(units)
                # every read but the last returns `units` units
                total += (calls - 1) * units + len(last)
                calls = 0
            return total, last

        def verify(result):
            expect_equal("units read from %s" % name, result[0], passes * ref["units"])
            expect_equal("last read of %s" % name, result[1], ref["tail"][-len(result[1]):])

    mode_name = "binary" if encoding is None else "text_" + fmt_name
    # No native twin: the ceiling opens the file for every read, these ops keep it open.
    op = Op("iobench_read_%s_%s_%s" % (mode_name, label, kind), "read-" + mode_name.split("_")[0],
            passes * fixture_bytes(ctx, name), run, verify, setup=setup,
            teardown=handle.close, inner_loops=passes if passes > 1 else None,
            evict=(name,))
    if op.name not in CONTROLS:
        return [op]
    return [op, _read_control(op, handle, ref, kind, passes, setup)]


def _read_control(op, handle, ref, kind, passes, op_setup):
    """op's loop over the file's content in memory: the same lines from a list, or the same
    ``units``-unit pieces, cut in setup, each ``read(units)`` replaced by the next of them
    (``next_of``; the last is the empty block that ends the loop)."""
    state = {}
    units = None if kind == "lines" else int(kind.replace("units", "").replace("unit", ""))

    def setup():
        op_setup()      # the reference facts verify needs, and the file, read once
        f = handle.f
        if kind == "lines":
            state["lines"] = list(f)
        else:
            data = f.read()
            state["pieces"] = _split(data, units) + [data[:0]]
        handle.close()  # the control does no I/O: nothing is left open

    def teardown():
        state.clear()

    if kind == "lines":
        def run():
            lines = state["lines"]
            total = 0
            last = None
            for _ in range(passes):
                for line in lines:
                    total += 1
                    last = line
            return total, last
    else:
        def run():
            pieces = state["pieces"]
            calls = 0
            total = 0
            last = None
            for _ in range(passes):
                read = next_of(pieces)
                block = read()
                while block:
                    calls += 1
                    last = block
                    block = read()
                total += (calls - 1) * units + len(last)
                calls = 0
            return total, last
    return control_op(op, run, setup=setup, teardown=teardown)


def _seek_op(ctx, fmt_name, encoding, label, size):
    name = binary_name(label) if encoding is None else text_name(label, fmt_name)
    path = ctx.path(name)
    passes = 1 if ctx.cache == "cold" else _passes(encoding, "seek", size, ctx.counting)
    handle = _Handle(_opener(ctx, encoding), path, "rb" if encoding is None else "r")
    positions = []

    def setup():
        positions.extend(range(0, os.path.getsize(path), SEEK_STEP))
        handle.open()

    def run():
        f = handle.f
        seek = f.seek
        count = 0
        for _ in range(passes):
            for pos in positions:
                seek(pos)
            count += len(positions)
        return count, f.tell()

    def verify(result):
        expect_equal("seeks in %s" % name, result[0], passes * len(positions))
        expect_equal("final position in %s" % name, result[1], positions[-1])

    mode_name = "binary" if encoding is None else "text_" + fmt_name
    op = Op("iobench_seek_%s_%s_%dunits" % (mode_name, label, SEEK_STEP), "seek",
            passes * fixture_bytes(ctx, name), run, verify, setup=setup,
            teardown=handle.close, inner_loops=passes if passes > 1 else None,
            evict=(name,))
    if op.name not in CONTROLS:
        return [op]
    sink = Sink()

    def control_setup():
        positions[:] = range(0, os.path.getsize(path), SEEK_STEP)   # op's, not added to them

    def control_run():
        write = sink.write
        count = 0
        for _ in range(passes):
            for pos in positions:
                write(pos)
            count += len(positions)
        return count, sink.take()

    def control_teardown():
        del positions[:]
    return [op, control_op(op, control_run, setup=control_setup, teardown=control_teardown)]


class _ScratchCopy(object):
    """A scratch copy of a fixture, opened in setup; verify tracks which payload it holds."""

    def __init__(self, ctx, name, suffix, encoding, mode, transform=None):
        self.transform = transform  # original -> changed payload; default invert or swap_case
        self.source = ctx.path(name)
        self.path = ctx.scratch_path("iobench-%s-%s" % (suffix, name))
        self.encoding = encoding
        self.handle = _Handle(_opener(ctx, encoding), self.path, mode)
        self.original = None      # the fixture's content, bytes or text
        self.crcs = None          # crc32 of the file holding payload 0 or 1
        self.calls = 0

    def setup(self):
        shutil.copyfile(self.source, self.path)
        raw = _read_raw(self.source)
        if self.encoding is None:
            self.original = raw
            changed = (self.transform or invert)(raw)
        else:
            self.original = raw.decode(self.encoding)
            changed = (self.transform or swap_case)(self.original).encode(self.encoding)
        self.crcs = (zlib.crc32(raw) & 0xFFFFFFFF, zlib.crc32(changed) & 0xFFFFFFFF)
        self.handle.open()

    def next_payload_index(self):
        """0 -> 1 -> 0 ...: the payload the coming call writes (1 = changed)."""
        self.calls += 1
        return self.calls % 2

    def check(self, index):
        self.handle.f.flush()
        crc, size = file_crc32(self.path)
        expect_equal("size of %s" % self.path, size, os.path.getsize(self.source))
        expect_equal("crc32 of %s after call %d" % (self.path, self.calls), crc, self.crcs[index])

    def teardown(self):
        self.handle.close()
        if os.path.exists(self.path):
            os.remove(self.path)


def _split(data, units):
    return [data[i:i + units] for i in range(0, len(data), units)]


def _overwrite_op(ctx, fmt_name, encoding, units):
    label = WRITE_SIZE
    name = binary_name(label) if encoding is None else text_name(label, fmt_name)
    copy = _ScratchCopy(ctx, name, "overwrite", encoding, "r+b" if encoding is None else "r+")
    passes = _toggle_passes(encoding, "overwrite_%d" % units, dict(SIZES)[label], ctx.counting)
    pieces = []

    def setup():
        copy.setup()
        changed = invert(copy.original) if encoding is None else swap_case(copy.original)
        pieces.append(_split(copy.original, units))
        pieces.append(_split(changed, units))

    def run():
        f = copy.handle.f
        write = f.write
        index = 0
        for _ in range(passes):
            index = copy.next_payload_index()
            f.seek(0)
            for piece in pieces[index]:
                write(piece)
            f.flush()
        return index

    def teardown():
        del pieces[:]
        copy.teardown()

    mode_name = "binary" if encoding is None else "text_" + fmt_name
    return Op("iobench_overwrite_%s_%s_%s" % (mode_name, label, _units_label(units)),
              "write-" + mode_name.split("_")[0], passes * fixture_bytes(ctx, name), run,
              copy.check, setup=setup, teardown=teardown,
              inner_loops=passes if passes > 1 else None)


def _read_modify_op(ctx, fmt_name, encoding, units):
    label = WRITE_SIZE
    name = binary_name(label) if encoding is None else text_name(label, fmt_name)
    transform = invert if encoding is None else reverse
    copy = _ScratchCopy(ctx, name, "readmodify", encoding, "r+b" if encoding is None else "r+",
                        None if encoding is None else lambda text: reverse_blocks(text, units))
    passes = _toggle_passes(encoding, "readmodify_%d" % units, dict(SIZES)[label], ctx.counting)

    if encoding is None:
        def one_pass(f):
            read, write, seek = f.read, f.write, f.seek
            seek(0)
            block = read(units)
            while block:
                seek(-len(block), 1)
                write(block.translate(INVERT_BYTES))
                block = read(units)
    else:
        def one_pass(f):
            read, write, seek, tell = f.read, f.write, f.seek, f.tell
            seek(0)
            while True:
                pos = tell()
                block = read(units)
                if not block:
                    break
                seek(pos)
                write(block[::-1])      # reverse(block), inline as the binary op's translate

    def run():
        f = copy.handle.f
        index = 0
        for _ in range(passes):
            index = copy.next_payload_index()
            one_pass(f)
            f.flush()
        return index

    mode_name = "binary" if encoding is None else "text_" + fmt_name
    op = Op("iobench_readmodify_%s_%s_%s" % (mode_name, label, _units_label(units)),
            "write-" + mode_name.split("_")[0], passes * 2 * fixture_bytes(ctx, name), run,
            copy.check, setup=copy.setup, teardown=copy.teardown,
            inner_loops=passes if passes > 1 else None)
    if op.name not in CONTROLS:
        return [op]
    return [op, _read_modify_control(op, copy, passes, units, transform)]


def _read_modify_control(op, copy, passes, units, transform):
    """op's transform over the same ``units``-unit pieces in memory, each result written to
    a Sink: the loop and the transform without the reads, seeks and writes."""
    pieces = []
    sink = Sink()

    def setup():
        raw = _read_raw(copy.source)
        original = raw if copy.encoding is None else raw.decode(copy.encoding)
        pieces.extend(_split(original, units))

    def run():
        write = sink.write
        count = 0
        for _ in range(passes):
            for block in pieces:
                write(block.translate(INVERT_BYTES) if copy.encoding is None else block[::-1])
            count += len(pieces)
        return count

    def verify(count):
        expect_equal("pieces transformed by %s" % op.name, count, passes * len(pieces))
        expect_equal("last piece transformed by %s" % op.name, sink.take(),
                     transform(pieces[-1]))

    def teardown():
        del pieces[:]
    return control_op(op, run, verify, setup=setup, teardown=teardown)


def _append_op(ctx, fmt_name, encoding, units):
    label = WRITE_SIZE
    name = binary_name(label) if encoding is None else text_name(label, fmt_name)
    source = ctx.path(name)
    path = ctx.scratch_path("iobench-append-" + name)
    opener = _opener(ctx, encoding)
    passes = _passes(encoding, "append_%d" % units, dict(SIZES)[label], ctx.counting)
    state = {}

    def setup():
        shutil.copyfile(source, path)
        raw = _read_raw(source)
        payload = raw if encoding is None else raw.decode(encoding)
        state["pieces"] = _split(payload, units)
        # What one pass appends: utf-16 starts no new BOM when appending to a
        # non-empty file, so the appended bytes are the body without its BOM.
        body = raw if encoding is None else payload.encode(MEASURE_CODEC.get(encoding, encoding))
        state["base"] = len(raw)
        state["appended"] = len(body)
        state["crc"] = zlib.crc32(body) & 0xFFFFFFFF

    def run():
        pieces = state["pieces"]
        for _ in range(passes):
            f = opener(path, "ab" if encoding is None else "a")
            write = f.write
            for piece in pieces:
                write(piece)
            f.close()

    def verify(_):
        base, appended = state["base"], state["appended"]
        expect_equal("size of %s" % path, os.path.getsize(path), base + passes * appended)
        with open(path, "r+b") as f:
            f.seek(base + (passes - 1) * appended)
            expect_equal("crc32 of the last append to %s" % path,
                         zlib.crc32(f.read()) & 0xFFFFFFFF, state["crc"])
            f.truncate(base)  # the next call appends to the fixture's size again

    def teardown():
        state.clear()
        if os.path.exists(path):
            os.remove(path)

    mode_name = "binary" if encoding is None else "text_" + fmt_name
    return Op("iobench_append_%s_%s_%s" % (mode_name, label, _units_label(units)),
              "write-" + mode_name.split("_")[0], passes * fixture_bytes(ctx, name), run,
              verify, setup=setup, teardown=teardown,
              inner_loops=passes if passes > 1 else None)


def _units_label(units):
    return "1unit" if units == 1 else "%dunits" % units


def _smoke_gate(ctx, label, ops):
    if ctx.profile == "smoke" and label not in SMOKE_SIZES:
        for op in ops:
            op.unavailable = "the smoke profile makes no %s fixtures" % label
    elif ctx.profile != "full" and label in FULL_ONLY_SMALL_UNIT_SIZES:
        for op in ops:
            if op.name.endswith(("_1unit", "_20units")):
                op.unavailable = ("reading %s by 1 or 20 units takes seconds a call: full "
                                  "profile only" % label)
    return ops


# This suite's ops in ``--suite core`` (the default run) and why each is there; the
# docstring says the same. iomatrix.measuring.selection reads this literal (never imports it).
CORE = {
    "iobench_readmodify_text_utf8_lf_400KiB_4096units":
        "text read-modify-write (tell, read, seek, write); its 3.12 and 3.14 steps were its "
        "old str.translate transform's",
    "iobench_seek_text_utf8_lf_400KiB_1000units":
        "text seek and tell: 3.6 -> 3.7 0.79x, 3.11 -> 3.12 1.20x",
}

# The ops with a control op ("<op>__control", _api.control_op): the op's Python loop and payload
# over the file's content in memory, timed beside it. iomatrix.measuring.selection reads this
# literal too: core takes the controls of its core ops.
CONTROLS = {
    "iobench_read_binary_400KiB_lines": "for line in a list of the same lines",
    "iobench_read_binary_400KiB_1unit": "the same 1-byte pieces from a list",
    "iobench_read_binary_400KiB_20units": "the same 20-byte pieces from a list",
    "iobench_read_binary_400KiB_4096units": "the same 4096-byte pieces from a list",
    "iobench_read_text_utf8_lf_400KiB_lines": "for line in a list of the same lines",
    "iobench_read_text_utf8_lf_400KiB_1unit": "the same 1-character pieces from a list",
    "iobench_read_text_utf8_lf_400KiB_20units": "the same 20-character pieces from a list",
    "iobench_read_text_utf8_lf_400KiB_4096units": "the same 4096-character pieces from a list",
    "iobench_seek_binary_400KiB_1000units": "each offset passed to a Sink",
    "iobench_seek_text_utf8_lf_400KiB_1000units": "each offset passed to a Sink",
    "iobench_readmodify_binary_400KiB_1unit": "translate of each 1-byte piece",
    "iobench_readmodify_binary_400KiB_20units": "translate of each 20-byte piece",
    "iobench_readmodify_binary_400KiB_4096units": "translate of each 4096-byte piece",
    "iobench_readmodify_text_utf8_lf_400KiB_20units": "reversal of each 20-character piece",
    "iobench_readmodify_text_utf8_lf_400KiB_4096units":
        "reversal of each 4096-character piece",
}


# How each op that reads or writes text on 3.x opens its file on 2.7, by op name or by
# category (an op's name wins): "open" (the builtin: on 2.x the C stdio file object, which
# reads and writes bytes, so its 2.7 -> 3.x step also times decoding), "io.open" or
# "codecs.open" (they decode as 3.x does) or "mmap". Here: text files need an encoding: ``io.open`` on 2.7, which decodes as 3.x does.
# iomatrix.analysing.study reads this literal (never imports it); tests/test_controls.py
# checks it against what each op calls under 2.7.
TEXT_API_27 = {
    "read-text": "io.open", "write-text": "io.open",
    # the seeks' category holds binary and text ops alike: the text ones by name
    "iobench_seek_text_utf8_lf_20KiB_1000units": "io.open",
    "iobench_seek_text_utf8_lf_400KiB_1000units": "io.open",
    "iobench_seek_text_utf8_lf_10MiB_1000units": "io.open",
}


def ops(ctx):
    formats = dict((f[0], f) for f in TEXT_FORMATS)
    out = []
    for label, size in SIZES:
        group = []
        for kind in READ_KINDS:
            group += _read_op(ctx, None, None, label, size, kind)
        for fmt_name, encoding, _ in _text_formats_for(label):
            for kind in READ_KINDS:
                group += _read_op(ctx, fmt_name, encoding, label, size, kind)
        group += _seek_op(ctx, None, None, label, size)
        group += _seek_op(ctx, ALL_SIZES_FORMAT, formats[ALL_SIZES_FORMAT][1], label, size)
        out += _smoke_gate(ctx, label, group)
    text_fmt = formats[ALL_SIZES_FORMAT]
    for units in OVERWRITE_UNITS:
        out.append(_overwrite_op(ctx, None, None, units))
        out.append(_overwrite_op(ctx, text_fmt[0], text_fmt[1], units))
    for units in READ_MODIFY_UNITS["binary"]:
        out += _read_modify_op(ctx, None, None, units)
    for units in READ_MODIFY_UNITS["text_utf8_lf"]:
        out += _read_modify_op(ctx, text_fmt[0], text_fmt[1], units)
    for units in APPEND_UNITS:
        out.append(_append_op(ctx, None, None, units))
        out.append(_append_op(ctx, text_fmt[0], text_fmt[1], units))
    return out
