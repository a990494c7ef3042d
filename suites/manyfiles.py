"""manyfiles: generating and saving many small CSV files, one by one and concurrently.

Stresses the per-file costs (create, open, write, close) and how well each
concurrency tool overlaps them with the CPU work of making the data: every
file is rows of numbers turned into text (``",".join(str(...))``), as in the
"save thousands of files" tutorials. Writes run sequentially, with plain
``threading`` workers, a ``ThreadPoolExecutor``, a fork ``multiprocessing.Pool``,
a ``ProcessPoolExecutor`` (fork), and asyncio with a semaphore whose
coroutines make the data on the event loop and hand the blocking write to a
thread (``run_in_executor`` with a thread pool, or ``asyncio.to_thread``).
The files are then read back sequentially and with threads.

Sizes: smoke 50 files of 200 rows, quick 100 files of 500 rows, full 2000
files of 1000 rows (10 numbers a row, ~40-60 bytes a row). Pools are created
inside the timed call, as a program would. Write ops verify every file's
crc32 and then delete the files, so every call creates new ones; read ops
verify the total bytes and lines. Unavailable: concurrent.futures and asyncio
on 2.7, ``asyncio.to_thread`` before 3.9, fork pools where ``os.fork`` is missing.

The async code is compiled from a string at setup time: ``async def`` is a
syntax error on 2.7, which must still import this module.

What a call's time is made of. Writes: per file, making the text (``str()`` and
``",".join`` of 10 numbers a row: most of the CPU time), ``open``, one ``write`` and
``close`` (create, write and close system calls), and the cost of the concurrency
tool (threads, pools, the event loop). Reads: per file, ``open``, ``read`` (decoding
the whole file), ``len`` and ``count("\n")`` over the decoded text, and ``close``,
in the chosen runner. The read ops listed in ``CONTROLS`` have a control
``<op>__control``: the same jobs in the same runner, each counting a text already
in memory, so what is the runner's and the counting's is timed apart from the files.

In ``core``, the default selection (the 2009 study plus a handful of ops from each
suite), for what they showed as ratios of new to old time per call in the
all-suites reference report (reports/20261122T083756Z-vm.md):

- ``manyfiles_read_sequential``: many small files, one by one: 3.13 -> 3.14 0.74x; 3.14t
  1.36x of 3.14
- ``manyfiles_read_threads``: the same in threads: 2.7 -> 3.6 1.82x; 3.14t 0.67x of 3.14
"""
from __future__ import division

import os
import shutil
import sys
import threading
import zlib

from _api import Op, builtin_open_for, control_op, expect_equal

PY2 = sys.version_info[0] == 2
if PY2:
    import Queue as queue
else:
    import queue

PROFILES = {
    # files, rows per file
    "smoke": (50, 200),
    "quick": (100, 500),
    "full": (2000, 1000),
}
VALUES_PER_ROW = 10
# The counting pass (suites/_counting.py) runs every op under valgrind, 20-50x slower than
# natively: there the ops make and read this many times fewer files (of as many rows). Threads
# are counted with the process: strace -f follows them, callgrind counts every thread.
COUNT_DIVISOR = 4
# Every op of the suite is timed by the wall clock: the concurrent ones work in threads and
# child processes, whose CPU time the worker's own would add up or miss, and the sequential
# ones use the same clock so that the suite's ops compare with each other.
WALL = "wall"
THREADS = 8
PROCESSES = 4
ASYNC_LIMIT = 50          # semaphore: files being made or written at once


def fixtures(profile, counting=False):
    return []     # the files are the work: written in scratch by the ops themselves


def scratch_bytes(profile):
    files, rows = PROFILES[profile]
    return files * rows * 8 * VALUES_PER_ROW


# -- the work of one file ----------------------------------------------------------

def csv_text(identifier, rows):
    """Rows of numbers, unique to ``identifier``: str on 3.x and (bytes) str on 2.7."""
    lines = []
    for i in range(rows):
        lines.append(",".join([str(identifier + i + j) for j in range(VALUES_PER_ROW)]))
    lines.append("")
    return "\n".join(lines)


def csv_texts(files, rows):
    """csv_text(identifier, rows) of every identifier below ``files``, made from shared rows:
    row i of file k is row i - 1 of file k + 1, so the files are windows over one list of
    files + rows rows. The read ops' setup writes their files with it (hundreds of times
    faster than a file at a time, and outside the timed calls); the write ops make each
    file with csv_text inside their timed calls, as a program would."""
    lines = [",".join([str(r + j) for j in range(VALUES_PER_ROW)]) for r in range(files + rows)]
    return ["\n".join(lines[k:k + rows] + [""]) for k in range(files)]


def _digits_below(n):
    """Total decimal digits of the numbers 0 .. n-1."""
    total = n
    power = 10
    while power < n:
        total += n - power
        power *= 10
    return total


def csv_bytes(files, rows):
    """Total size of the files csv_text makes, by arithmetic (no generation)."""
    digits = 0
    for identifier in range(files):
        for j in range(VALUES_PER_ROW):
            digits += _digits_below(identifier + j + rows) - _digits_below(identifier + j)
    return digits + files * rows * VALUES_PER_ROW   # commas and newlines: 10 a row


def file_name(directory, identifier):
    return os.path.join(directory, "data-%05d.csv" % identifier)


def save_csv(job):
    """Make and save one file: job = (directory, identifier, rows, io_stack). Returns its size."""
    directory, identifier, rows, io_stack = job
    data = csv_text(identifier, rows)
    write_file(file_name(directory, identifier), data, io_stack)
    return len(data)


def write_file(path, data, io_stack):
    if PY2 and io_stack == "pyio":
        data = data.decode("ascii")     # _pyio's text files take unicode on 2.7
    with builtin_open_for(io_stack)(path, "w") as f:
        f.write(data)


def read_csv(job):
    """Read one file back: job = (path, io_stack). Returns (characters, lines)."""
    path, io_stack = job
    with builtin_open_for(io_stack)(path, "r") as f:
        data = f.read()
    return len(data), data.count("\n")


def count_csv(data):
    """read_csv's work on a text already in memory (the read ops' controls)."""
    return len(data), data.count("\n")


# -- ways to run many jobs -------------------------------------------------------------

def run_sequential(func, jobs):
    return [func(job) for job in jobs]


def run_threads(func, jobs, workers=THREADS):
    """A pool made of threading.Thread and a queue: available on every version."""
    todo = queue.Queue()
    for index, job in enumerate(jobs):
        todo.put((index, job))
    results = [None] * len(jobs)
    errors = []

    def worker():
        while True:
            try:
                index, job = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[index] = func(job)
            except BaseException as exc:   # re-raised in the caller
                errors.append(exc)
                return

    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return results


def run_thread_pool_executor(func, jobs, workers=THREADS):
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(func, jobs))


def _fork_context():
    import multiprocessing
    if hasattr(multiprocessing, "get_context"):
        return multiprocessing.get_context("fork")
    return multiprocessing       # 2.7: fork is the only start method on POSIX


def run_process_pool(func, jobs, workers=PROCESSES):
    pool = _fork_context().Pool(workers)
    try:
        results = pool.map(func, jobs, max(1, len(jobs) // (4 * workers)))
    finally:
        pool.close()
        pool.join()
    return results


def run_process_pool_executor(func, jobs, workers=PROCESSES):
    from concurrent.futures import ProcessPoolExecutor
    if sys.version_info >= (3, 7):
        pool = ProcessPoolExecutor(workers, mp_context=_fork_context())
    else:
        pool = ProcessPoolExecutor(workers)    # 3.6: the default context, fork on Linux
    with pool:
        return list(pool.map(func, jobs, chunksize=max(1, len(jobs) // (4 * workers))))


_ASYNC_SOURCE = '''
import asyncio
from concurrent.futures import ThreadPoolExecutor


async def _save_all(jobs, limit, workers, use_to_thread):
    semaphore = asyncio.Semaphore(limit)
    if hasattr(asyncio, "get_running_loop"):
        loop = asyncio.get_running_loop()
    else:
        loop = asyncio.get_event_loop()          # 3.6
    executor = None if use_to_thread else ThreadPoolExecutor(workers)

    async def one(job):
        directory, identifier, rows, io_stack = job
        async with semaphore:
            data = csv_text(identifier, rows)          # CPU work, on the event loop
            path = file_name(directory, identifier)
            if use_to_thread:
                await asyncio.to_thread(write_file, path, data, io_stack)
            else:
                await loop.run_in_executor(executor, write_file, path, data, io_stack)
            return len(data)
    try:
        return await asyncio.gather(*[one(job) for job in jobs])
    finally:
        if executor is not None:
            executor.shutdown()


def run_asyncio(jobs, limit, workers, use_to_thread):
    coro = _save_all(jobs, limit, workers, use_to_thread)
    if hasattr(asyncio, "run"):
        return asyncio.run(coro)
    loop = asyncio.new_event_loop()          # 3.6
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
'''
_async_namespace = {}


def async_runner():
    """run_asyncio(jobs, limit, workers, use_to_thread), compiled on first use (3.x only)."""
    if not _async_namespace:
        _async_namespace.update({"csv_text": csv_text, "file_name": file_name,
                                 "write_file": write_file})
        exec(compile(_ASYNC_SOURCE, "<manyfiles asyncio>", "exec"), _async_namespace)
    return _async_namespace["run_asyncio"]


# -- availability ------------------------------------------------------------------------

def _unavailable(needs):
    version = sys.version_info[:2]
    if needs in ("asyncio", "to_thread") and version < (3, 6):
        return "asyncio with async/await is not in the %d.%d standard library" % version
    if needs == "to_thread" and version < (3, 9):
        return "asyncio.to_thread is new in Python 3.9"
    if needs in ("futures", "asyncio", "fork+futures") and version < (3, 2):
        return "concurrent.futures is not in the %d.%d standard library" % version
    if needs in ("fork", "fork+futures") and not hasattr(os, "fork"):
        return "multiprocessing with fork needs os.fork"
    return None


# -- ops ------------------------------------------------------------------------------------

# This suite's ops in ``--suite core`` (the default run) and why each is there; the
# docstring says the same. iomatrix.measuring.selection reads this literal (never imports it).
CORE = {
    "manyfiles_read_sequential":
        "many small files, one by one: 3.13 -> 3.14 0.74x; 3.14t 1.36x of 3.14",
    "manyfiles_read_threads": "the same in threads: 2.7 -> 3.6 1.82x; 3.14t 0.67x of 3.14",
}

# The ops with a control op ("<op>__control", _api.control_op): the same jobs, run the same way,
# each counting the lines of a text already in memory (no open, no read). iomatrix.measuring.
# selection reads this literal too: core takes the controls of its core ops.
CONTROLS = {
    "manyfiles_read_sequential": "len and count(\"\\n\") of each file's text in memory",
    "manyfiles_read_threads": "the same in the same threads",
    "manyfiles_read_thread_pool_executor": "the same in the same thread pool",
}


# How each op that reads or writes text on 3.x opens its file on 2.7, by op name or by
# category (an op's name wins): "open" (the builtin: on 2.x the C stdio file object, which
# reads and writes bytes, so its 2.7 -> 3.x step also times decoding), "io.open" or
# "codecs.open" (they decode as 3.x does) or "mmap". Here: the builtin ``open`` in text mode, as scripts do: bytes (str) on 2.x.
# iomatrix.analysing.study reads this literal (never imports it); tests/test_controls.py
# checks it against what each op calls under 2.7.
TEXT_API_27 = {"manyfiles": "open"}


def ops(ctx):
    files, rows = PROFILES[ctx.profile]
    if ctx.counting:
        files = max(1, files // COUNT_DIVISOR)
    directory = ctx.scratch_path("manyfiles")
    io_stack = ctx.io_stack
    jobs = [(directory, identifier, rows, io_stack) for identifier in range(files)]
    expected = {}

    def expected_files():
        """name -> (size, crc32) of every file, computed once in setup."""
        if not expected:
            for identifier in range(files):
                data = csv_text(identifier, rows).encode("ascii")
                expected[file_name(directory, identifier)] = (len(data),
                                                              zlib.crc32(data) & 0xFFFFFFFF)
        return expected

    def make_directory():
        if not os.path.isdir(directory):
            os.makedirs(directory)

    def remove_directory():
        if os.path.isdir(directory):
            shutil.rmtree(directory)

    def verify_written(sizes):
        want = expected_files()
        expect_equal("files reported written in %s" % directory, len(sizes), files)
        expect_equal("bytes reported written in %s" % directory, sum(sizes), nbytes)
        expect_equal("files in %s" % directory, len(os.listdir(directory)), files)
        for path in sorted(want):
            with open(path, "rb") as f:
                data = f.read()
            expect_equal("size and crc32 of %s" % path,
                         (len(data), zlib.crc32(data) & 0xFFFFFFFF), want[path])
            os.remove(path)   # the next call creates the files anew

    def writer(runner):
        def run():
            return runner(save_csv, jobs)
        return run

    def asyncio_writer(use_to_thread):
        def run():
            return async_runner()(jobs, ASYNC_LIMIT, THREADS, use_to_thread)
        return run

    def write_setup_for(use_async):
        def setup():
            expected_files()   # what verify_written compares with: made outside the timed calls
            make_directory()
            if use_async:
                async_runner()   # compile outside the timed region
        return setup

    nbytes = csv_bytes(files, rows)
    out = []
    for name, run, needs in (
            ("sequential", writer(run_sequential), None),
            ("threads", writer(run_threads), None),
            ("thread_pool_executor", writer(run_thread_pool_executor), "futures"),
            ("process_pool", writer(run_process_pool), "fork"),
            ("process_pool_executor", writer(run_process_pool_executor), "fork+futures"),
            ("asyncio_run_in_executor", asyncio_writer(False), "asyncio"),
            ("asyncio_to_thread", asyncio_writer(True), "to_thread")):
        out.append(Op("manyfiles_write_" + name, "manyfiles", nbytes, run, verify_written,
                      clock=WALL, setup=write_setup_for(name.startswith("asyncio")), teardown=remove_directory,
                      unavailable=_unavailable(needs) if needs else None))

    read_jobs = [(file_name(directory, identifier), io_stack) for identifier in range(files)]

    def read_setup():
        make_directory()
        sizes = []
        for identifier, data in enumerate(csv_texts(files, rows)):
            write_file(file_name(directory, identifier), data, io_stack)
            sizes.append(len(data))
        expect_equal("bytes written for the read ops", sum(sizes), nbytes)

    def reader(runner):
        def run():
            results = runner(read_csv, read_jobs)
            return sum(r[0] for r in results), sum(r[1] for r in results), len(results)
        return run

    def verify_read(result):
        expect_equal("characters, lines and files read from %s" % directory, result,
                     (nbytes, files * rows, files))

    texts = []      # the files' texts in memory, for the controls

    def control_setup():
        made = csv_texts(files, rows)
        if PY2 and io_stack == "pyio":
            made = [data.decode("ascii") for data in made]   # what _pyio's read returns
        texts[:] = made

    def control_teardown():
        del texts[:]

    def control(runner):
        def run():
            results = runner(count_csv, texts)
            return sum(r[0] for r in results), sum(r[1] for r in results), len(results)
        return run

    for name, runner, needs in (
            ("sequential", run_sequential, None),
            ("threads", run_threads, None),
            ("thread_pool_executor", run_thread_pool_executor, "futures")):
        op = Op("manyfiles_read_" + name, "manyfiles", nbytes, reader(runner), verify_read,
                clock=WALL, setup=read_setup, teardown=remove_directory,
                unavailable=_unavailable(needs) if needs else None)
        out.append(op)
        if op.name in CONTROLS:
            out.append(control_op(op, control(runner), setup=control_setup,
                                  teardown=control_teardown))
    return out
