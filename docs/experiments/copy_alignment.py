"""How fast does read() copy a file into a buffer, by where the buffer starts in its page?

Usage: python3 docs/experiments/copy_alignment.py [FILE]   (default: a 2.8 MiB file it makes)

Reads FILE whole with os.readv into an anonymous page-aligned mapping, at offsets of 0 to
68 bytes past a page boundary and at a few offsets near its end, best of 5 calls each,
and prints the milliseconds per call. The page cache holds the file in whole pages, so
the offset is also how far the destination lies from the source modulo 4 KiB.

Measured here (AMD EPYC guest with FSRM, kernel 6.18): 0.13-0.30 ms at most offsets and
1.4-2.1 ms (up to 12x slower) at offsets 4 to 28, the kernel's copy to user memory being
slow when the destination is a few bytes past the source modulo 4 KiB. An interpreter
whose whole-file read buffer happens to land there reads the file several times slower in
every call of that process: where its allocator puts the buffer decides it, not the code.
(2.7's slow processes are not this: their buffer starts 1716 bytes into its page, in fast
and slow processes alike; docs/methodology.md.)
"""
import mmap
import os
import sys
import tempfile
import time

OFFSETS = list(range(0, 72, 4)) + list(range(4032, 4096, 8)) + [2048, 2049, 2050]


def best_read(fd, view, calls=5):
    best = float("inf")
    for _ in range(calls):
        os.lseek(fd, 0, os.SEEK_SET)
        started = time.perf_counter()
        got = os.readv(fd, [view])
        best = min(best, time.perf_counter() - started)
        if got != len(view):
            raise SystemExit("short read: %d of %d bytes" % (got, len(view)))
    return best


def main(path=None):
    if path is None:
        handle, path = tempfile.mkstemp(suffix=".txt")
        with os.fdopen(handle, "wb") as f:
            f.write((b"x" * 77 + b"\n") * (2935401 // 78))
    size = os.path.getsize(path)
    buffer = mmap.mmap(-1, size + 2 * mmap.PAGESIZE)
    memory = memoryview(buffer)
    fd = os.open(path, os.O_RDONLY)
    try:
        best_read(fd, memory[:size])  # the file into the page cache, the pages mapped
        cells = ["%d:%.2f" % (off, best_read(fd, memory[off:off + size]) * 1e3) for off in OFFSETS]
    finally:
        os.close(fd)
    print("offset past a page boundary: ms per whole read of %d bytes" % size)
    print(" ".join(cells))


if __name__ == "__main__":
    main(*sys.argv[1:2])
