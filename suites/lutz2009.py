"""lutz2009: the 14 file operations of the 2009 "Python 3.0 is N times slower" study.

Stresses the builtin ``open()`` as ordinary programs use it: iteration by
lines, 4 KiB block reads and whole-file reads of a ~2.8 MiB ASCII text file in
text and binary mode, block and whole-file reads of a ~12.5 MiB random binary
file, and 25 MiB writes by lines, by blocks and all at once in both modes.
Names and sizes are the study's (Mark Lutz, timeIO.py, January 2009), so its
published 2.6 -> 3.0 ratios can be set beside today's. On 2.x ``open()`` is
the C stdio file object, which is what the study timed.

Every op verifies what it read (characters or bytes counted against the
fixture) or wrote (size and tail of the output file), outside the timed region.

What a call's time is made of. Line reads: the file's buffered reads and
(3.x text mode) decoding, the iteration that cuts each line (a new object a line),
and the loop's own ``n += len(line)`` once per line (63,015 lines), which 3.11's
specializing interpreter made cheaper with no change to the I/O. Block reads: one
``read(4096)`` (a system call or a copy from the buffer, a new object) and
``n += len(block)`` per block. Whole-file reads: one read, sized by ``fstat``, and
(text) one decode. Line and block writes: a ``write`` method call a line or block, the
buffering, (text) encoding, and the system calls; whole writes: one encode or none
and one system call. Every line and block op has a control, ``<op>__control``
(``CONTROLS``): the same loop over the same lines or blocks in memory, or writing
to a ``Sink``, so the loop's share of a step can be set apart
(iomatrix.analysing.controls).

Every op of the study is in ``core``, the default selection (the other suites add a
handful each). Why each tells, as ratios of new to old time per call in the
all-suites reference report (reports/20261122T083756Z-vm.md):

- ``read_byLines_textMode``: text lines: 3.10 -> 3.11 0.66x, 3.11 -> 3.12 1.18x
- ``read_byLines_binaryMode``: binary lines: 3.11 -> 3.12 1.72x, 3.13 -> 3.14 0.61x
- ``read_byBlocks_textMode``: 4 KiB text blocks: 2.7 -> 3.6 2.03x, the study's regression
- ``read_byBlocks_binaryMode``: 4 KiB binary blocks: 3.13 -> 3.14 0.38x
- ``read_allAtOnce_textMode``: whole file as text: 2.7 -> 3.6 2.73x (decoding a new str)
- ``read_allAtOnce_binaryMode``: whole file as bytes: the study's baseline read
- ``read_byBlocks_binaryMode[large.bin]``: 4 KiB blocks of 12.6 MiB: 3.13 -> 3.14 0.41x
- ``read_allAtOnce_binaryMode[large.bin]``: one 12.6 MiB read: the large-buffer path
- ``write_byLines_textMode``: text lines: 3.7 -> 3.8 0.65x, 3.13 -> 3.14 0.66x
- ``write_byBlocks_textMode``: 4 KiB text blocks: 3.13 -> 3.14 0.43x
- ``write_allAtOnce_textMode``: one 25 MiB text write: encoding the whole str
- ``write_byLines_binaryMode``: binary lines: 3.13 -> 3.14 0.49x, 3.14 -> 3.15 0.77x
- ``write_byBlocks_binaryMode``: 4 KiB binary blocks: 3.13 -> 3.14 0.27x
- ``write_allAtOnce_binaryMode``: one 25 MiB binary write: the system-call floor
"""
from __future__ import division

import os

from _api import Fixture, Op, Sink, control_op, expect_equal, next_of
from _data import DeterministicBytes, ascii_text, write_bytes

TEXT_FILE = "large.txt"
TEXT_FILE_BYTES = 2935401           # the study's NEWS.txt x N
BINARY_FILE = "large.bin"
BINARY_FILE_BYTES = 13168640        # the study's MSI installer
WRITE_BYTES = 25 * 1024 * 1024      # each write test produces a 25 MiB file
BLOCK_SIZE = 4096
WRITE_LINE = "x" * 63 + "\n"        # 64 bytes; 409600 lines make 25 MiB
WRITE_BLOCK = ("y" * 4095 + "\n")
# The counting pass runs every op under valgrind, 20-50x slower than natively: there the
# files and writes are this many times smaller (2.8 MiB -> 358 KiB, 12.6 MiB -> 1.6 MiB,
# 25 MiB -> 3.1 MiB: still a whole number of the 4 KiB blocks and 64-byte lines written).
# Its counts are stored with the bytes per call, so per-MiB figures compare across sizes.
COUNT_DIVISOR = 8


def _divisor(counting):
    return COUNT_DIVISOR if counting else 1


def FIXTURE_BYTES(profile):
    return TEXT_FILE_BYTES + BINARY_FILE_BYTES


def scratch_bytes(profile):
    return WRITE_BYTES


def fixtures(profile, counting=False):
    divisor = _divisor(counting)

    def make_text(path):
        write_bytes(path, ascii_text(TEXT_FILE_BYTES // divisor, seed=2009).encode("ascii"))

    def make_binary(path):
        write_bytes(path, DeterministicBytes(1230).block(BINARY_FILE_BYTES // divisor))
    return [Fixture(TEXT_FILE, make_text), Fixture(BINARY_FILE, make_binary)]


def _read_ops(ctx, filename, suffix, modes):
    path = ctx.path(filename)
    size = ctx.expect(filename)["bytes"]
    open_ = ctx.open

    def by_lines(mode):
        def run():
            n = 0
            with open_(path, mode) as f:
                for line in f:
                    n += len(line)
            return n
        return run

    def by_blocks(mode):
        def run():
            n = 0
            with open_(path, mode) as f:
                while True:
                    block = f.read(BLOCK_SIZE)
                    if not block:
                        break
                    n += len(block)
            return n
        return run

    def all_at_once(mode):
        def run():
            with open_(path, mode) as f:
                return len(f.read())
        return run

    def verify(got):
        # The text fixture is ASCII with \n line ends: characters == bytes.
        expect_equal("%s characters read" % filename, got, size)

    # The native ceiling reads the same file with the same block size in C.
    native = {"byLines": None, "byBlocks": ("read", filename, BLOCK_SIZE),
              "allAtOnce": ("read", filename, 0)}
    controls = {"byLines": lines_control, "byBlocks": blocks_control}
    ops = []
    for kind, make in (("byLines", by_lines), ("byBlocks", by_blocks), ("allAtOnce", all_at_once)):
        for mode_name, mode in modes:
            if kind == "byLines" and suffix:
                continue  # the study read its binary file by blocks and at once only
            op = Op("read_%s_%sMode%s" % (kind, mode_name, suffix),
                    "read-%s" % mode_name, size, make(mode), verify,
                    evict=(filename,), native=native[kind])
            ops.append(op)
            if op.name in CONTROLS:
                ops.append(controls[kind](op, open_, path, mode))
    return ops


def _read_whole(open_, path, mode):
    """The file's content as ``open_(path, mode)`` returns it (setup, outside timing)."""
    with open_(path, mode) as f:
        return f.read()


def lines_control(op, open_, path, mode):
    """op's loop, ``for line in f: n += len(line)``, over a list of the same lines."""
    state = {}

    def setup():
        with open_(path, mode) as f:
            state["lines"] = list(f)

    def run():
        n = 0
        for line in state["lines"]:
            n += len(line)
        return n
    return control_op(op, run, setup=setup, teardown=state.clear)


def blocks_control(op, open_, path, mode):
    """op's loop of 4 KiB reads, each ``f.read(BLOCK_SIZE)`` replaced by the next of the
    same 4 KiB blocks, cut in setup (``next_of``; the last is the empty block that ends
    the loop)."""
    state = {}

    def setup():
        data = _read_whole(open_, path, mode)
        state["blocks"] = [data[i:i + BLOCK_SIZE] for i in range(0, len(data), BLOCK_SIZE)] \
            + [data[:0]]

    def run():
        read = next_of(state["blocks"])
        n = 0
        while True:
            block = read()
            if not block:
                break
            n += len(block)
        return n
    return control_op(op, run, setup=setup, teardown=state.clear)


def _write_ops(ctx):
    out_path = ctx.scratch_path("testIO.out")
    open_ = ctx.open
    write_bytes_ = WRITE_BYTES // _divisor(ctx.counting)
    lines = write_bytes_ // len(WRITE_LINE)
    blocks = write_bytes_ // len(WRITE_BLOCK)
    text_line, text_block = WRITE_LINE, WRITE_BLOCK
    if ctx.io_stack != "c" and not isinstance(text_line, type(u"")):
        # 2.x: the io stacks' text files take unicode; the builtin file object takes str
        text_line, text_block = text_line.decode("ascii"), text_block.decode("ascii")
    payload = {
        "text": (text_line, text_block),
        "binary": (WRITE_LINE.encode("ascii"), WRITE_BLOCK.encode("ascii")),
    }

    def by_lines(mode, line):
        def run():
            with open_(out_path, mode) as f:
                for _ in range(lines):
                    f.write(line)
        return run

    def by_blocks(mode, block):
        def run():
            with open_(out_path, mode) as f:
                for _ in range(blocks):
                    f.write(block)
        return run

    def all_at_once(mode, block):
        # The 25 MiB payload is built in setup, outside timing, and only by
        # the process that runs this op.
        data = []

        def setup():
            data.append(block * blocks)

        def run():
            with open_(out_path, mode) as f:
                f.write(data[0])
        return setup, run

    def verify(expected_tail):
        def check(_):
            expect_equal("bytes written to %s" % out_path, os.path.getsize(out_path),
                         write_bytes_)
            with open(out_path, "rb") as f:
                f.seek(-len(expected_tail), 2)
                expect_equal("tail of %s" % out_path, f.read(), expected_tail)
        return check

    def teardown():
        if os.path.exists(out_path):
            os.remove(out_path)

    def write_control(op, count, item):
        """op's loop, ``for _ in range(count): f.write(item)``, writing to a Sink: the loop
        and a C method call of one argument a write, no file."""
        sink = Sink()

        def run():
            write = sink.write
            calls = 0
            for calls in range(1, count + 1):
                write(item)
            return calls

        def check(calls):
            expect_equal("calls of the control of %s" % op.name, calls, count)
            expect_equal("item written by the control of %s" % op.name, sink.take(), item)
        return control_op(op, run, check)

    ops = []
    for mode_name, mode in (("text", "w"), ("binary", "wb")):
        line, block = payload[mode_name]
        tail = WRITE_BLOCK.encode("ascii")[-64:]
        whole_setup, whole_run = all_at_once(mode, block)
        for kind, setup, run in (("byLines", None, by_lines(mode, line)),
                                 ("byBlocks", None, by_blocks(mode, block)),
                                 ("allAtOnce", whole_setup, whole_run)):
            expected_tail = WRITE_LINE.encode("ascii") if kind == "byLines" else tail
            native = {"byLines": None, "byBlocks": ("write", WRITE_BYTES, len(WRITE_BLOCK)),
                      "allAtOnce": ("write", WRITE_BYTES, 0)}[kind]
            op = Op("write_%s_%sMode" % (kind, mode_name), "write-%s" % mode_name,
                    write_bytes_, run, verify(expected_tail), setup=setup,
                    teardown=teardown, native=native, outputs=(out_path,))
            ops.append(op)
            if op.name in CONTROLS:
                ops.append(write_control(op, lines if kind == "byLines" else blocks,
                                         line if kind == "byLines" else block))
    return ops


# This suite's ops in ``--suite core`` (the default run) and why each is there; the
# docstring says the same. iomatrix.measuring.selection reads this literal (never imports it).
CORE = {
    "read_byLines_textMode": "text lines: 3.10 -> 3.11 0.66x, 3.11 -> 3.12 1.18x",
    "read_byLines_binaryMode": "binary lines: 3.11 -> 3.12 1.72x, 3.13 -> 3.14 0.61x",
    "read_byBlocks_textMode": "4 KiB text blocks: 2.7 -> 3.6 2.03x, the study's regression",
    "read_byBlocks_binaryMode": "4 KiB binary blocks: 3.13 -> 3.14 0.38x",
    "read_allAtOnce_textMode": "whole file as text: 2.7 -> 3.6 2.73x (decoding a new str)",
    "read_allAtOnce_binaryMode": "whole file as bytes: the study's baseline read",
    "read_byBlocks_binaryMode[large.bin]": "4 KiB blocks of 12.6 MiB: 3.13 -> 3.14 0.41x",
    "read_allAtOnce_binaryMode[large.bin]": "one 12.6 MiB read: the large-buffer path",
    "write_byLines_textMode": "text lines: 3.7 -> 3.8 0.65x, 3.13 -> 3.14 0.66x",
    "write_byBlocks_textMode": "4 KiB text blocks: 3.13 -> 3.14 0.43x",
    "write_allAtOnce_textMode": "one 25 MiB text write: encoding the whole str",
    "write_byLines_binaryMode": "binary lines: 3.13 -> 3.14 0.49x, 3.14 -> 3.15 0.77x",
    "write_byBlocks_binaryMode": "4 KiB binary blocks: 3.13 -> 3.14 0.27x",
    "write_allAtOnce_binaryMode": "one 25 MiB binary write: the system-call floor",
}

# The ops with a control op ("<op>__control", _api.control_op): the op's Python loop over data
# in memory, timed beside it. iomatrix.measuring.selection reads this literal too: core takes
# the controls of its core ops.
CONTROLS = {
    "read_byLines_textMode": "for line in a list of the same lines: n += len(line)",
    "read_byLines_binaryMode": "for line in a list of the same lines: n += len(line)",
    "read_byBlocks_textMode": "the same 4 KiB blocks from a list: n += len(block)",
    "read_byBlocks_binaryMode": "the same 4 KiB blocks from a list: n += len(block)",
    "read_byBlocks_binaryMode[large.bin]": "the same 4 KiB blocks from a list: n += len(block)",
    "write_byLines_textMode": "the 64-byte line written to a Sink, 409,600 times",
    "write_byLines_binaryMode": "the 64-byte line written to a Sink, 409,600 times",
    "write_byBlocks_textMode": "the 4 KiB block written to a Sink, 6,400 times",
    "write_byBlocks_binaryMode": "the 4 KiB block written to a Sink, 6,400 times",
}


# How each op that reads or writes text on 3.x opens its file on 2.7, by op name or by
# category (an op's name wins): "open" (the builtin: on 2.x the C stdio file object, which
# reads and writes bytes, so its 2.7 -> 3.x step also times decoding), "io.open" or
# "codecs.open" (they decode as 3.x does) or "mmap". Here: On 2.x ``open()`` is the C stdio file object: its text mode reads and writes bytes (str).
# iomatrix.analysing.study reads this literal (never imports it); tests/test_controls.py
# checks it against what each op calls under 2.7.
TEXT_API_27 = {"read-text": "open", "write-text": "open"}


def ops(ctx):
    text_modes = (("text", "r"), ("binary", "rb"))
    return (_read_ops(ctx, TEXT_FILE, "", text_modes)
            + _read_ops(ctx, BINARY_FILE, "[large.bin]", (("binary", "rb"),))
            + _write_ops(ctx))
