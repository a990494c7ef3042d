"""copies: streaming one large file to another, and how much memory each way holds.

Stresses the copy paths a program can choose: a manual ``read``/``write``
loop with 4 KiB, 64 KiB and 1 MiB buffers, a ``readinto`` loop that reuses one
1 MiB buffer, ``shutil.copyfileobj`` (default and 1 MiB buffers),
``shutil.copyfile`` (which itself uses ``os.sendfile`` on Linux since 3.8),
``os.sendfile`` and ``os.copy_file_range`` loops (data never enters user
space), and ``read()`` of the whole file followed by one ``write``.

The source is random binary. Sizes: smoke 4 MiB, quick 32 MiB, full 256 MiB. The
destination is a scratch file, rewritten every call. Verify compares the
destination's size and crc32 with the fixture's.

Peak memory: every op here is made with ``track_peak_rss=True``, so the
harness runs one untimed call first in each worker process and records how far
the resident set grew during it as metadata ``iomatrix_peak_rss`` (see
``harness.peak_rss_delta``). pyperf's --track-memory is not used: its thread
changes the timings.

What a call's time is made of: ``open`` of both files, then per buffer a read (a
system call and a copy into a new object, or into the reused buffer for
``readinto``) and a write (a system call), or per chunk one ``sendfile`` or
``copy_file_range`` call (no copy through user space); the Python loop runs once per
buffer, a few hundred to a few thousand times a call, a small share beside the
copies, so these ops have no control.

In ``core``, the default selection (the 2009 study plus a handful of ops from each
suite), for what they showed as ratios of new to old time per call in the
all-suites reference report (reports/20261122T083756Z-vm.md):

- ``copies_copyfileobj_default``: shutil.copyfileobj, the usual stream copy:
  3.7 -> 3.8 0.62x
"""
from __future__ import division

import errno
import os
import shutil
import sys

from _api import Fixture, Op, SkipOp, expect_equal, file_crc32
from _data import DeterministicBytes, write_bytes

KIB = 1024
MIB = 1024 * KIB
FIXTURE = "copies.bin"
FILE_BYTES = {"smoke": 4 * MIB, "quick": 32 * MIB, "full": 256 * MIB}
LOOP_BUFFERS = (4 * KIB, 64 * KIB, 1 * MIB)
READINTO_BUFFER = 1 * MIB
COPYFILEOBJ_BUFFER = 1 * MIB
SENDFILE_CHUNK = 64 * MIB          # per system call; the kernel may move less
MIN_BYTES_PER_RUN = 16 * MIB       # the smoke file is copied several times per call
# The counting pass (suites/_counting.py) runs every op under valgrind, 20-50x slower than
# natively, and needs no call long enough to time: there the files are this many times smaller
# and every call makes one pass. Counts are stored with the bytes per call, so per-MiB figures
# compare across sizes.
COUNT_DIVISOR = 8


def _file_bytes(profile, counting=False):
    return FILE_BYTES[profile] // (COUNT_DIVISOR if counting else 1)


def FIXTURE_BYTES(profile):
    return FILE_BYTES[profile]


def scratch_bytes(profile):
    return FILE_BYTES[profile]


def fixtures(profile, counting=False):
    def make(path):
        write_bytes(path, DeterministicBytes(2012).block(_file_bytes(profile, counting)))
    return [Fixture(FIXTURE, make)]


def size_label(n):
    if n >= MIB:
        return "%dMiB" % (n // MIB)
    return "%dKiB" % (n // KIB)


# -- ops ----------------------------------------------------------------------------------

def _fd_copier(syscall):
    """A copy loop around os.sendfile or os.copy_file_range (fd to fd, no user buffer)."""
    if syscall == "sendfile":
        def step(src, dst, offset):
            return os.sendfile(dst, src, offset, SENDFILE_CHUNK)
    else:
        def step(src, dst, offset):
            return os.copy_file_range(src, dst, SENDFILE_CHUNK, offset, offset)

    def copy(src_file, dst_file):
        src, dst = src_file.fileno(), dst_file.fileno()
        offset = 0
        while True:
            sent = step(src, dst, offset)
            if sent == 0:
                break
            offset += sent
        return offset
    return copy


def _unavailable(what):
    if what == "sendfile":
        if not hasattr(os, "sendfile"):
            return "this os module has no sendfile (new in Python 3.3)"
        if not sys.platform.startswith("linux"):
            return "os.sendfile to a regular file needs Linux"
    if what == "copy_file_range":
        if not hasattr(os, "copy_file_range"):
            return "this os module has no copy_file_range (CPython 3.8+ on Linux has it)"
    return None


# This suite's ops in ``--suite core`` (the default run) and why each is there; the
# docstring says the same. iomatrix.measuring.selection reads this literal (never imports it).
CORE = {
    "copies_copyfileobj_default": "shutil.copyfileobj, the usual stream copy: 3.7 -> 3.8 0.62x",
}


# How each op that reads or writes text on 3.x opens its file on 2.7, by op name or by
# category (an op's name wins): "open" (the builtin: on 2.x the C stdio file object, which
# reads and writes bytes, so its 2.7 -> 3.x step also times decoding), "io.open" or
# "codecs.open" (they decode as 3.x does) or "mmap". Here: binary files only.
# iomatrix.analysing.study reads this literal (never imports it); tests/test_controls.py
# checks it against what each op calls under 2.7.
TEXT_API_27 = {}


def ops(ctx):
    src = ctx.path(FIXTURE)
    dst = ctx.scratch_path("copies.out")
    facts = ctx.expect(FIXTURE)
    file_bytes = _file_bytes(ctx.profile, ctx.counting)
    passes = 1 if ctx.cache == "cold" or ctx.counting else \
        max(1, MIN_BYTES_PER_RUN // file_bytes)
    open_ = ctx.open

    def loop(size):
        def copy(fin, fout):
            read, write = fin.read, fout.write
            while True:
                block = read(size)
                if not block:
                    break
                write(block)
        return copy

    def readinto_loop(fin, fout):
        buf = bytearray(READINTO_BUFFER)
        view = memoryview(buf)
        into, write = fin.readinto, fout.write
        while True:
            n = into(buf)
            if not n:
                break
            write(view[:n])

    def copyfileobj(length):
        def copy(fin, fout):
            if length is None:
                shutil.copyfileobj(fin, fout)
            else:
                shutil.copyfileobj(fin, fout, length)
        return copy

    def read_all(fin, fout):
        fout.write(fin.read())

    def streams(copy):
        """Open both files (ctx.open, binary), copy, close: once per pass."""
        def run():
            for _ in range(passes):
                with open_(src, "rb") as fin:
                    with open_(dst, "wb") as fout:
                        copy(fin, fout)
        return run

    def copyfile():
        for _ in range(passes):
            shutil.copyfile(src, dst)

    def verify(_):
        crc, size = file_crc32(dst)
        expect_equal("bytes copied to %s" % dst, size, facts["bytes"])
        expect_equal("crc32 of %s" % dst, crc, facts["crc32"])

    def teardown():
        if os.path.exists(dst):
            os.remove(dst)

    def check_copy_file_range():
        # Some file systems (and old kernels) refuse it; fail loudly, not later in the timing.
        with open(src, "rb") as fin:
            with open(dst, "wb") as fout:
                try:
                    os.copy_file_range(fin.fileno(), fout.fileno(), 1, 0, 0)
                except OSError as exc:
                    if exc.errno in (errno.ENOSYS, errno.EXDEV, errno.EOPNOTSUPP, errno.EINVAL):
                        raise SkipOp("os.copy_file_range fails here: %s" % exc)
                    raise

    # (name, run, setup, unavailable, block of the native ceiling's read/write copy or None)
    methods = []
    for size in LOOP_BUFFERS:
        methods.append(("loop_%s" % size_label(size), streams(loop(size)), None, None, size))
    methods += [
        ("readinto_loop_%s" % size_label(READINTO_BUFFER), streams(readinto_loop), None, None,
         READINTO_BUFFER),
        # the default buffer differs between versions (16 KiB before 3.8, then 64 KiB)
        ("copyfileobj_default", streams(copyfileobj(None)), None, None, None),
        ("copyfileobj_%s" % size_label(COPYFILEOBJ_BUFFER),
         streams(copyfileobj(COPYFILEOBJ_BUFFER)), None, None, COPYFILEOBJ_BUFFER),
        ("shutil_copyfile", copyfile, None, None, None),
        ("os_sendfile", streams(_fd_copier("sendfile")), None, _unavailable("sendfile"), None),
        ("os_copy_file_range", streams(_fd_copier("copy_file_range")), check_copy_file_range,
         _unavailable("copy_file_range"), None),
        ("read_all_write", streams(read_all), None, None, 0),
    ]
    out = []
    for name, run, setup, unavailable, block in methods:
        op = Op("copies_" + name, "copy", passes * file_bytes, run, verify,
                setup=setup, teardown=teardown, inner_loops=passes if passes > 1 else None,
                unavailable=unavailable, evict=(FIXTURE,),
                native=None if block is None else ("copy", FIXTURE, block),
                track_peak_rss=True,
                # --output-state applies to the destination; with several passes per call
                # (the smoke profile), the later passes write over it.
                outputs=(dst,))
        out.append(op)
    return out
