"""Fixtures and the machine around an op: making fixture files, the page cache, memory.

Runs on the host (``harness.py --make-fixtures``, under the host's Python) and in
the workers (every Python from 2.7), so it is written in the common subset.
"""
from __future__ import division, print_function

import os
import sys

from _api import FIXTURES_MANIFEST, count_divisor_factor, file_blocks, file_crc32, load_suite
from _results import FIXTURE_READ_BACK, atomic_write_json, partial_path


def count_newlines(path):
    return sum(block.count(b"\n") for block in file_blocks(path))



# -- making fixtures -----------------------------------------------------------

def make_fixtures(suite_names, profile, directory, counting=False):
    """Make every fixture the suites need in ``directory`` and describe them in fixtures.json.

    ``counting``: the counting pass's fixtures; a suite that defines
    ``COUNT_DIVISOR`` makes them smaller (``fixtures(profile, counting=True)``),
    and fixtures.json records it so the ops size their writes to match. A whole number
    ``counting`` above 1 makes them that many times smaller again (``count_factor``: the
    second size at which the counting pass checks that instructions grow with the bytes).

    Returns the manifest dict. Files are written under temporary names and
    renamed, so an interrupted call never leaves a file that looks complete.
    Raises OSError (with the directory named) when it cannot write.
    """
    if not os.path.isdir(directory):
        os.makedirs(directory)
    manifest = {"profile": profile, "counting": bool(counting), "files": {}}
    if counting and int(counting) > 1:
        manifest["count_factor"] = int(counting)
    # One state for the run, stated even when the suites have no fixture files.
    evict, manifest["page_cache"] = read_back_evictor()
    for suite_name in suite_names:
        suite = count_divisor_factor(load_suite(suite_name), manifest)
        if counting and hasattr(suite, "COUNT_DIVISOR"):
            made = suite.fixtures(profile, counting=True)
        else:
            made = suite.fixtures(profile)
        for fixture in made:
            if fixture.name in manifest["files"]:
                continue  # shared between suites, made once
            path = os.path.join(directory, fixture.name)
            partial = partial_path(path)
            try:
                fixture.make(partial)
                os.rename(partial, path)
            except BaseException:
                if os.path.exists(partial):
                    os.remove(partial)
                raise
            if evict is not None:
                evict(path)
            crc, size = file_crc32(path)  # also reads the file back into the page cache
            manifest["files"][fixture.name] = {
                "bytes": size, "crc32": crc, "lines": count_newlines(path)}
    atomic_write_json(os.path.join(directory, FIXTURES_MANIFEST), manifest)
    return manifest


def planned_fixture_bytes(suite_names, profile):
    """Upper bound of disk the suites need: fixtures plus what ops write at once."""
    total = 0
    for suite_name in suite_names:
        suite = load_suite(suite_name)
        sizes = getattr(suite, "FIXTURE_BYTES", None)
        if sizes is not None:
            total += sizes(profile)
        scratch = getattr(suite, "scratch_bytes", None)
        if scratch is not None:
            total += scratch(profile)
    return total



# -- cold page cache ------------------------------------------------------------

POSIX_FADV_DONTNEED = 4  # Linux value; used only through ctypes on 2.7


def _libc_fadvise():
    import ctypes
    import ctypes.util
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    fadvise = libc.posix_fadvise
    fadvise.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_int]
    return fadvise


# How a fixture's pages come into the page cache is part of the warm condition. Pages
# left by writing the file and pages read back from disk are copied out at different
# speeds: 3.13 reading the study's files whole, alternating processes between a file
# just written and the same bytes dropped from the cache and read back, took 18-20%
# (12.6 MiB) and 27-30% (2.8 MiB) less time on the written one, in four trials each.
# Written pages are what ordinary programs seldom read, and they do not stay: whatever
# drops them (reclaim, another run's eviction) brings them back the read way. So every
# fixture is dropped after it is written and read back: the state a file read earlier
# in the day is in.


def read_back_evictor():
    """(a function that drops a file's pages from the page cache, so that the next read
    brings them back from disk, or None where that is impossible; the page-cache state
    of the fixtures, as fixtures.json records it)."""
    try:
        return cold_cache_evictor(), FIXTURE_READ_BACK
    except (RuntimeError, OSError, AttributeError) as exc:
        return None, "as written (cannot drop pages here: %s)" % exc


def cold_cache_evictor():
    """A function(path) that drops a file's pages from the page cache.

    Uses os.posix_fadvise (3.3+) or libc's through ctypes (2.7, PyPy); raises
    RuntimeError when neither exists, so a cold run can never silently be warm.
    """
    if hasattr(os, "posix_fadvise"):
        def advise(fd):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    elif sys.platform.startswith("linux"):
        fadvise = _libc_fadvise()

        def advise(fd):
            rc = fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)
            if rc != 0:
                raise OSError(rc, os.strerror(rc))
    else:
        raise RuntimeError("--cache cold needs posix_fadvise, which %s lacks" % sys.platform)

    def evict(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)  # dirty pages are not dropped; write them out first
            advise(fd)
        finally:
            os.close(fd)
    return evict



# -- memory ----------------------------------------------------------------------

def _status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def _reset_peak_rss():
    """Reset VmHWM to the current RSS (Linux 4.0+); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except (IOError, OSError):
        return False


def peak_rss_delta(func):
    """Call ``func()`` once; return (its result, bytes the peak RSS grew by, method).

    On Linux the peak is reset before the call, so the number is how much
    memory the call itself held at its worst, whatever the process did before.
    Elsewhere it is the growth of ru_maxrss: exact in a fresh process (the
    op's first call), an underestimate after a bigger earlier peak.
    """
    if sys.platform.startswith("linux") and _reset_peak_rss():
        before = _status_kib("VmRSS")
        result = func()
        return result, (_status_kib("VmHWM") - before) * 1024, "VmHWM"
    import resource
    scale = 1 if sys.platform == "darwin" else 1024   # bytes on macOS, KiB elsewhere
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = func()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return result, (after - before) * scale, "ru_maxrss"
