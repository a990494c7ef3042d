"""The suite API: what a suite module defines and what its ops may use.

A suite is a module in ``suites/`` (not starting with ``_``, not ``harness.py``)
that defines:

    fixtures(profile) -> list of Fixture   files made once per run, outside timing
    ops(ctx)          -> list of Op        the timed operations
    FIXTURE_BYTES(profile), scratch_bytes(profile)   (optional) disk it needs
    CONTROLS          (optional) {op: what its control times}: the ops that have a
                      control op (``control_op``), as a literal the host reads

A control is an op of its own, named ``<op>__control`` (CONTROL_SUFFIX): the op's
Python loop and payload over data already in memory (the same lines from a list,
the same blocks from a list made in setup, the same transform on a string), with
no file and no system call. It is timed in the same lockstep rounds and counted in
the same pass as every op, and verified like every op; the host sets a release step
of the op beside its control's (iomatrix.analysing.controls).

Suites import from this module and from ``_data`` (the data generators), never
from each other. Like every file here it runs under every interpreter of the
matrix, from Python 2.7 on: the common subset of 2.7 and 3.x only.
"""
from __future__ import division, print_function

import importlib
import json
import os
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES_MANIFEST = "fixtures.json"
CRC_CHUNK = 1 << 20
# An op's control op is named after it: "<op>__control" (see the module docstring).
CONTROL_SUFFIX = "__control"
CONTROL_CATEGORY = "control"
# Machinery, not suites: the entry point and every _private module.
NOT_SUITES = ("harness.py",)


class VerificationError(AssertionError):
    """An operation read or wrote something other than what the fixture says."""


class SkipOp(Exception):
    """Raised by an op's setup when this interpreter lacks what the op needs."""


class Fixture(object):
    """A file made once per run; ``make(path)`` writes it deterministically."""

    def __init__(self, name, make):
        self.name = name
        self.make = make


class Op(object):
    """One timed operation.

    ``run()`` does the operation once and returns what ``verify(result)``
    checks, outside the timed region. ``nbytes`` is the bytes one call
    processes (for throughput). ``inner_loops`` says how many repetitions one
    ``run()`` contains, so pyperf reports the time of one repetition.
    ``unavailable`` is ``None`` or the reason this interpreter cannot run it.
    ``evict`` lists fixture names whose pages the cold-cache mode drops before
    every call. ``native`` describes the same work for the native ceiling
    (suites/native_ceiling.c): ``("read", fixture, block)``,
    ``("write", nbytes, block)`` or ``("copy", fixture, block)``; block 0 is
    the whole file in one call. ``track_peak_rss`` asks the harness to measure
    how much memory one call holds (``iomatrix_peak_rss``), in an untimed first
    call of each worker process. ``outputs`` lists the files one call
    creates; the harness puts them in the state ``ctx.output`` names before
    every timed call (removed for "new"; left from the previous call for
    "overwrite"), outside the timed region. ``control_of`` names the op whose
    control this op is (``control_op``), None for every other op.
    """

    def __init__(self, name, category, nbytes, run, verify, setup=None,
                 teardown=None, inner_loops=None, unavailable=None, evict=(), native=None,
                 track_peak_rss=False, outputs=(), clock=None, control_of=None):
        self.name = name
        self.category = category
        self.nbytes = int(nbytes)
        self.run = run
        self.verify = verify
        self.setup = setup
        self.teardown = teardown
        self.inner_loops = inner_loops
        self.unavailable = unavailable
        self.evict = tuple(evict)
        self.native = native
        self.track_peak_rss = track_peak_rss
        self.outputs = tuple(outputs)
        self.clock = clock  # "wall" for work in other threads or processes; None: the run's
        self.control_of = control_of

    @property
    def bytes_per_value(self):
        """Bytes behind one pyperf value: pyperf divides a call's time by inner_loops."""
        return self.nbytes // (self.inner_loops or 1)


def control_op(op, run, verify=None, setup=None, teardown=None):
    """The control of ``op``: ``run`` does op's loop and payload over data in memory
    (``setup`` puts it there, outside timing; ``teardown`` frees it). It processes the
    bytes op does, as many times a call (inner_loops), on op's clock, and is unavailable
    where op is; ``verify`` defaults to op's own check (the control returns what op does).
    No fixture is evicted and no file is written: a control does no I/O."""
    return Op(op.name + CONTROL_SUFFIX, CONTROL_CATEGORY, op.nbytes, run, verify or op.verify,
              setup=setup, teardown=teardown, inner_loops=op.inner_loops,
              unavailable=op.unavailable, clock=op.clock, control_of=op.name)


def next_of(items):
    """A C callable of no argument that returns the next of ``items`` (a list iterator's
    ``__next__``; ``next`` on 2.7): a control's stand-in for ``f.read(n)``, over the same
    pieces made in setup, the last of them the empty block that ends the op's loop. The
    pieces are made outside timing, so what ``read`` does (the system call, the copy, the
    new object) is all on the op's side."""
    it = iter(items)
    return getattr(it, "__next__", None) or it.next


class Sink(object):
    """Where a write op's control writes: keeps the last item and counts the calls outside
    the loop (``write`` is a C method of one argument, as a file's write is; the count and
    the item are read after the call, outside timing)."""

    def __init__(self):
        import collections
        self.last = collections.deque(maxlen=1)
        self.write = self.last.append

    def take(self):
        """The last item written since the previous take (None: nothing)."""
        item = self.last[0] if self.last else None
        self.last.clear()
        return item


def expect_equal(what, got, expected):
    """Raise VerificationError unless got == expected."""
    if got != expected:
        raise VerificationError("%s: got %r, expected %r" % (what, got, expected))


def file_blocks(path):
    """The bytes of a file in 1 MiB blocks (for checks outside any timed region)."""
    with open(path, "rb") as f:
        while True:
            block = f.read(CRC_CHUNK)
            if not block:
                return
            yield block


def file_crc32(path):
    """(crc32, size) of a file, read in 1 MiB blocks."""
    crc = 0
    size = 0
    for block in file_blocks(path):
        size += len(block)
        crc = zlib.crc32(block, crc)
    return crc & 0xFFFFFFFF, size


def load_suite(name):
    """Import suites/<name>.py; a clear error names the valid suites."""
    if name not in available_suites():
        raise SystemExit("unknown suite %r; valid suites: %s"
                         % (name, ", ".join(available_suites())))
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    return importlib.import_module(name)


def count_divisor_factor(suite, manifest):
    """Make ``suite``'s counting sizes ``manifest["count_factor"]`` times smaller again.

    The counting pass counts an op whose timed call is too long for valgrind at two sizes
    below the timed one, COUNT_DIVISOR and twice it, to check that its instructions grow
    with the bytes (iomatrix.measuring.countsizes): fixtures.json records the factor, and
    the suite's COUNT_DIVISOR (read where its sizes are computed) is set from it."""
    if not hasattr(suite, "COUNT_DIVISOR"):
        return suite
    if not hasattr(suite, "_BASE_COUNT_DIVISOR"):
        suite._BASE_COUNT_DIVISOR = suite.COUNT_DIVISOR
    suite.COUNT_DIVISOR = suite._BASE_COUNT_DIVISOR * int((manifest or {}).get("count_factor", 1))
    return suite


def available_suites():
    names = []
    for entry in sorted(os.listdir(HERE)):
        # harness.py and _private.py files are machinery, every other module is a suite
        if entry.endswith(".py") and not entry.startswith("_") and entry not in NOT_SUITES:
            names.append(entry[:-3])
    return names


class Context(object):
    """What an op may use: fixture paths and facts, a scratch dir, the io stack.

    ``cache`` and ``output`` are the run's stated conditions (see _results.py).
    ``counting`` is true when the fixtures were made at the counting pass's smaller
    sizes (``fixtures.json`` says so): a suite with ``COUNT_DIVISOR`` then makes its
    files and writes that many times smaller (see iomatrix.measuring.countsizes).
    """

    def __init__(self, fixtures_dir, scratch_dir, profile="quick", io_stack="c",
                 cache="warm", manifest=None, output="new"):
        self.fixtures_dir = fixtures_dir
        self.scratch = scratch_dir
        self.profile = profile
        self.io_stack = io_stack
        self.cache = cache
        self.output = output
        self.clock = None   # set by the worker: "cpu", "wall" or None (the conditions' default)
        self.manifest = manifest or {"files": {}}
        self.counting = bool(self.manifest.get("counting", False))
        self.open = builtin_open_for(io_stack)
        self.io_module = io_module_for(io_stack)
        self.knob = None    # (name, value) of an ablation (set_knob); None: the defaults

    def set_knob(self, name, value):
        """Time the ops with one default set otherwise: an ablation (the host's
        scripts/iomatrix/measuring/knobs.py). Called before the suite's ``ops(ctx)``, which
        take ``ctx.open`` and ``ctx.io_module`` when they are built.

        ``buffering``: every file an op opens through them gets ``buffering=VALUE`` (unless
        the op gives its own); ``copy_bufsize``: shutil.copyfileobj's default length;
        ``encoding`` and ``newline``: every file opened in text mode gets
        ``encoding=TEXT_ENCODINGS[VALUE]`` or ``newline=NEWLINES[VALUE]`` (unless the op gives
        its own; 3.x's open and io.open only: 2.x's file object has neither)."""
        if name == "buffering":
            self.open = with_buffering(self.open, value)
            self.io_module = ModuleWithBuffering(self.io_module, value)
        elif name == "copy_bufsize":
            set_copy_bufsize(value)
        elif name in TEXT_KNOBS:
            keyword, values = TEXT_KNOBS[name]
            if value not in values:
                raise ValueError("knob %s: unknown value %r; known: %s"
                                 % (name, value, ", ".join(map(str, sorted(values)))))
            self.open = with_text_setting(self.open, keyword, values[value])
            self.io_module = ModuleWithBuffering(self.io_module, None,
                                                 with_text_setting(self.io_module.open,
                                                                   keyword, values[value]))
        else:
            raise ValueError("unknown knob %r; known: %s" % (name, ", ".join(KNOBS)))
        self.knob = (name, value)

    def path(self, name):
        return os.path.join(self.fixtures_dir, name)

    def expect(self, name):
        """The recorded facts of fixture ``name``: bytes, crc32, lines."""
        try:
            return self.manifest["files"][name]
        except KeyError:
            return {"bytes": 0, "crc32": 0, "lines": 0}

    def scratch_path(self, name):
        return os.path.join(self.scratch, "%d-%s" % (os.getpid(), name))

    def check_fixture(self, name):
        """Fail loudly when the fixture changed since it was made (outside timing)."""
        facts = self.manifest["files"].get(name)
        if facts is None:
            raise VerificationError("fixture %s is not in %s" % (name, FIXTURES_MANIFEST))
        crc, size = file_crc32(self.path(name))
        if (crc, size) != (facts["crc32"], facts["bytes"]):
            raise VerificationError(
                "fixture %s is corrupted: %d bytes crc32 %08x, expected %d bytes crc32 %08x"
                % (self.path(name), size, crc, facts["bytes"], facts["crc32"]))


# The text layer's knobs take a code (a knob's value is a whole number on the command line
# and in a series name): the same codes as the host's scripts/iomatrix/measuring/knobs.py.
TEXT_ENCODINGS = {1: "utf-8", 2: "latin-1"}
NEWLINES = {1: None, 2: ""}     # 1: universal newlines (3.x's default), 2: no translation
TEXT_KNOBS = {"encoding": ("encoding", TEXT_ENCODINGS), "newline": ("newline", NEWLINES)}
KNOBS = ("buffering", "copy_bufsize", "encoding", "newline")


def with_text_setting(open_, keyword, value):
    """``open_`` that passes ``keyword=value`` to a text-mode open where the caller gives
    none (a binary open takes neither)."""
    def opener(file, mode="r", *args, **kwargs):
        if "b" not in mode and not args:
            kwargs.setdefault(keyword, value)
        return open_(file, mode, *args, **kwargs)
    return opener


def with_buffering(open_, value):
    """``open_`` that passes ``buffering=value`` where the caller gives none."""
    def opener(file, mode="r", *args, **kwargs):
        if not args:
            kwargs.setdefault("buffering", value)
        return open_(file, mode, *args, **kwargs)
    return opener


class ModuleWithBuffering(object):
    """The io module as the ops see it (``ctx.io_module``), its ``open`` with_buffering."""

    def __init__(self, module, value, opener=None):
        self._module = module
        self.open = opener if opener is not None else with_buffering(module.open, value)

    def __getattr__(self, name):
        return getattr(self._module, name)


def set_copy_bufsize(value):
    """shutil.copyfileobj's default length: COPY_BUFSIZE from 3.8 (read on each call whose
    length is 0, the default), the function's own default argument before."""
    import shutil
    if hasattr(shutil, "COPY_BUFSIZE"):
        shutil.COPY_BUFSIZE = value
    else:
        shutil.copyfileobj.__defaults__ = (value,)


def builtin_open_for(io_stack):
    """``open`` as the study used it, or the pure-Python io stack's open."""
    if io_stack == "pyio":
        import _pyio
        return _pyio.open
    return open


def io_module_for(io_stack):
    if io_stack == "pyio":
        import _pyio
        return _pyio
    import io
    return io


def prepare_untimed(op, ctx, checked):
    """What every worker does before an op's first call: SkipOp when the op is unavailable
    here, each fixture it reads checked once per process (which also reads it once: the
    warm cache; ``checked`` holds the names done), then the op's setup."""
    if op.unavailable:
        raise SkipOp(op.unavailable)
    for name in op.evict:
        if name not in checked:
            ctx.check_fixture(name)
            checked.add(name)
    if op.setup is not None:
        op.setup()


def prepare_outputs(op, output_state, call):
    """Put the op's output files in the stated state before a timed call (the timing
    worker's and the counting pass's: both import it from here, below them both)."""
    if not op.outputs:
        return
    if output_state == "new":
        for path in op.outputs:
            if os.path.exists(path):
                os.remove(path)
    elif not all(os.path.exists(path) for path in op.outputs):
        op.verify(call())  # "overwrite": there must be a previous output to write over


def load_context(fixtures_dir, scratch_dir, profile, io_stack, cache, output="new"):
    manifest_path = os.path.join(fixtures_dir, FIXTURES_MANIFEST)
    with open(manifest_path) as f:
        manifest = json.load(f)
    return Context(fixtures_dir, scratch_dir, profile, io_stack, cache, manifest, output)
