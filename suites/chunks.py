"""chunks: iterating a binary file by "lines" versus reading it in fixed-size chunks.

Stresses the cost per call of the buffered reader on a large random binary
file: ``for chunk in f`` (which splits at every b"\\n", so on random data it
yields ~256-byte pieces through readline), ``f.read(N)`` loops for N from
4 KiB to 16 MiB in powers of two (small N pays per-call overhead, large N pays
for allocating and filling a new bytes object every call), and ``readinto``
a preallocated bytearray, which allocates nothing per call.

Sizes: smoke 2 MiB, quick 48 MiB, full 256 MiB. Each pass
opens, reads to the end and closes it (smoke makes several passes a call,
except under ``--cache cold``). Every op counts the bytes it got and
keeps its last chunk; verify compares the total with the fixture's size, the
number of chunks with what N implies and the last chunk with the file's tail.

What a call's time is made of: ``open``, the reads (per call: a method call, a
system call or a copy from the buffer, a new bytes object of N bytes; for
iteration, ``readline``'s search for b"\n" per ~256-byte piece) and the loop's
own ``count += 1; total += len(chunk); last = chunk`` per piece, which the
controls of ``CONTROLS`` (``<op>__control``: the same loop over pieces of the same
lengths in memory, one object per length so that the loop reads cached memory as the op's
does) time apart; ``readinto`` allocates nothing per call.

In ``core``, the default selection (the 2009 study plus a handful of ops from each
suite), for what they showed as ratios of new to old time per call in the
all-suites reference report (reports/20261122T083756Z-vm.md):

- ``chunks_iterate_lines``: for chunk in f (readline per ~256 bytes): 3.11 -> 3.12 1.40x,
  3.13 -> 3.14 0.50x
- ``chunks_read_64KiB``: 64 KiB reads, slower in 3.14 (1.20x) while 4 KiB got 0.43x
"""
from __future__ import division

import io

from _api import Fixture, Op, control_op, expect_equal, next_of
from _data import DeterministicBytes, write_bytes

KIB = 1024
MIB = 1024 * KIB
FIXTURE = "chunks.bin"
FILE_BYTES = {"smoke": 2 * MIB, "quick": 48 * MIB, "full": 256 * MIB}
READ_SIZES = tuple(4 * KIB << i for i in range(13))          # 4 KiB .. 16 MiB
READINTO_SIZES = (4 * KIB, 64 * KIB, 1 * MIB, 16 * MIB)
MIN_BYTES_PER_RUN = 16 * MIB    # smoke reads its small file several times per call
# The counting pass (suites/_counting.py) runs every op under valgrind, 20-50x slower than
# natively, and needs no call long enough to time: there the files are this many times smaller
# and every call makes one pass. Counts are stored with the bytes per call, so per-MiB figures
# compare across sizes.
COUNT_DIVISOR = 32


def _file_bytes(profile, counting=False):
    return FILE_BYTES[profile] // (COUNT_DIVISOR if counting else 1)


def FIXTURE_BYTES(profile):
    return FILE_BYTES[profile]


def fixtures(profile, counting=False):
    def make(path):
        write_bytes(path, DeterministicBytes(2023).block(_file_bytes(profile, counting)))
    return [Fixture(FIXTURE, make)]


def size_label(n):
    if n >= MIB:
        return "%dMiB" % (n // MIB)
    return "%dKiB" % (n // KIB)


def _tail(path, size):
    with open(path, "rb") as f:
        f.seek(-size, 2)
        return f.read()


# This suite's ops in ``--suite core`` (the default run) and why each is there; the
# docstring says the same. iomatrix.measuring.selection reads this literal (never imports it).
CORE = {
    "chunks_iterate_lines":
        "for chunk in f (readline per ~256 bytes): 3.11 -> 3.12 1.40x, 3.13 -> 3.14 0.50x",
    "chunks_read_64KiB": "64 KiB reads, slower in 3.14 (1.20x) while 4 KiB got 0.43x",
}

# The ops with a control op ("<op>__control", _api.control_op): the op's Python loop over the
# file's content in memory, timed beside it. iomatrix.measuring.selection reads this literal
# too: core takes the controls of its core ops.
CONTROLS = {
    "chunks_iterate_lines": "for chunk in a list of pieces of the same lengths",
    "chunks_read_4KiB": "the same 4 KiB chunks from a list",
    "chunks_read_64KiB": "the same 64 KiB chunks from a list",
    "chunks_read_1MiB": "the same 1 MiB chunks from a list",
}


# How each op that reads or writes text on 3.x opens its file on 2.7, by op name or by
# category (an op's name wins): "open" (the builtin: on 2.x the C stdio file object, which
# reads and writes bytes, so its 2.7 -> 3.x step also times decoding), "io.open" or
# "codecs.open" (they decode as 3.x does) or "mmap". Here: binary files only.
# iomatrix.analysing.study reads this literal (never imports it); tests/test_controls.py
# checks it against what each op calls under 2.7.
TEXT_API_27 = {}


def ops(ctx):
    path = ctx.path(FIXTURE)
    facts = ctx.expect(FIXTURE)
    file_bytes = _file_bytes(ctx.profile, ctx.counting)
    passes = 1 if ctx.cache == "cold" or ctx.counting else \
        max(1, MIN_BYTES_PER_RUN // file_bytes)
    open_ = ctx.open
    inner = passes if passes > 1 else None
    nbytes = passes * file_bytes

    def check_total(what, total):
        expect_equal("bytes %s from %s" % (what, path), total, passes * facts["bytes"])

    def iterate():
        total = 0
        count = 0
        last = None
        for _ in range(passes):
            with open_(path, "rb") as f:
                for chunk in f:
                    count += 1
                    total += len(chunk)
                    last = chunk
        return total, count, last

    def verify_iterate(result):
        total, count, last = result
        check_total("iterated", total)
        tail = _tail(path, len(last))
        # every piece but perhaps the last ends with b"\n"
        per_pass = facts["lines"] + (0 if tail.endswith(b"\n") else 1)
        expect_equal("pieces iterated from %s" % path, count, passes * per_pass)
        expect_equal("last piece of %s" % path, last, tail)

    out = [Op("chunks_iterate_lines", "read-binary", nbytes, iterate, verify_iterate,
              inner_loops=inner, evict=(FIXTURE,))]
    content = {}      # the file's content, for the controls (setup, outside timing)

    def load_content():
        with open(path, "rb") as f:
            content["data"] = f.read()
        # split at b"\n" only, as the file's iteration does (splitlines also splits at \r)
        pieces = list(io.BytesIO(content["data"]))
        # One object per piece length (the last piece itself: verify compares it with the
        # file's tail). The op's loop reads each piece while it is new and in the cache; a
        # list of every distinct piece (quick: 196,904 objects, 57 MB) made the control's
        # loop miss the cache on each, so the control took longer than its op (31.9 against
        # 24.4 ms under 3.14). 3.13.0, quick's 48 MiB: 26.0 ms with distinct pieces, 17.3 ms
        # with one per length (1,848 lengths).
        by_length = {}
        content["pieces"] = [by_length.setdefault(len(p), p) for p in pieces[:-1]] + pieces[-1:]

    def iterate_control():
        pieces = content["pieces"]
        total = 0
        count = 0
        last = None
        for _ in range(passes):
            for chunk in pieces:
                count += 1
                total += len(chunk)
                last = chunk
        return total, count, last
    out.append(control_op(out[0], iterate_control, setup=load_content, teardown=content.clear))

    def reader(size):
        def run():
            total = 0
            count = 0
            last = None
            for _ in range(passes):
                with open_(path, "rb") as f:
                    read = f.read
                    block = read(size)
                    while block:
                        count += 1
                        total += len(block)
                        last = block
                        block = read(size)
            return total, count, last

        def verify(result):
            total, count, last = result
            check_total("read", total)
            expect_equal("reads of %d bytes from %s" % (size, path), count,
                         passes * -(-facts["bytes"] // size))
            expect_equal("last chunk of %s" % path, last, _tail(path, len(last)))
        return run, verify

    def read_control(size):
        """The op's loop of reads, each ``read(size)`` the next of the same chunks, cut in
        setup (``next_of``; the last is the empty chunk that ends the loop)."""
        cut = []

        def setup():
            load_content()
            data = content["data"]
            cut[:] = [data[i:i + size] for i in range(0, len(data), size)] + [b""]

        def run():
            total = 0
            count = 0
            last = None
            for _ in range(passes):
                read = next_of(cut)
                block = read()
                while block:
                    count += 1
                    total += len(block)
                    last = block
                    block = read()
            return total, count, last

        def teardown():
            content.clear()
            del cut[:]
        return setup, run, teardown

    for size in READ_SIZES:
        run, verify = reader(size)
        op = Op("chunks_read_%s" % size_label(size), "read-binary", nbytes, run, verify,
                inner_loops=inner, evict=(FIXTURE,), native=("read", FIXTURE, size))
        out.append(op)
        if op.name in CONTROLS:
            setup, run, teardown = read_control(size)
            out.append(control_op(op, run, setup=setup, teardown=teardown))

    def readinto(size):
        buffers = []

        def setup():
            buffers.append(bytearray(size))

        def run():
            buf = buffers[0]
            total = 0
            count = 0
            last = 0
            for _ in range(passes):
                with open_(path, "rb") as f:
                    into = f.readinto
                    n = into(buf)
                    while n:
                        count += 1
                        total += n
                        last = n
                        n = into(buf)
            return total, count, last

        def verify(result):
            total, count, last = result
            check_total("read into a buffer", total)
            expect_equal("readinto calls of %d bytes on %s" % (size, path), count,
                         passes * -(-facts["bytes"] // size))
            expect_equal("last chunk of %s" % path, bytes(buffers[0][:last]), _tail(path, last))

        def teardown():
            del buffers[:]
        return setup, run, verify, teardown

    for size in READINTO_SIZES:
        setup, run, verify, teardown = readinto(size)
        out.append(Op("chunks_readinto_%s" % size_label(size), "read-binary", nbytes, run, verify,
                      setup=setup, teardown=teardown, inner_loops=inner, evict=(FIXTURE,),
                      native=("read", FIXTURE, size)))
    return out
