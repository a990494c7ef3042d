# -*- coding: utf-8 -*-
"""textio: the text layer: codecs, newline handling, error handlers, print, in-memory baselines.

Stresses what ``open(..., encoding=...)`` adds on top of bytes:

- codecs: reading by lines, reading whole and writing by lines in ascii,
  utf-8 (multilingual: Latin, Greek, Cyrillic, CJK, emoji), latin-1, utf-16
  and utf-8-sig;
- newlines: a crlf file read with ``newline=None`` (translated) and
  ``newline=''`` (kept), an lf file with ``newline=''``, and writing lf text
  with ``newline='\\r\\n'``;
- ``errors='surrogateescape'`` on valid utf-8 (the handler is never called)
  and on utf-8 with invalid bytes, reading and writing them back;
- ``print(line, file=f)`` against ``f.write(line + "\\n")``;
- baselines without system calls: ``io.StringIO`` (no codec), a
  ``TextIOWrapper`` over ``io.BytesIO`` (codec and buffering), ``io.BytesIO``
  of encoded lines (buffering only), and bare ``bytes.decode``/``str.encode``,
  so a file op's time can be split into codec, buffering and system calls.

Files are ``ctx.io_module.open`` (``io.open`` on 2.7, whose builtin open has
no encoding; ``_pyio.open`` under ``--io pyio``); StringIO and BytesIO come
from the same module. Sizes: smoke 256 KiB, quick 2 MiB, full 32 MiB a file.
Written files must be byte-identical to the fixture they were decoded from
(crc32); reads verify characters, lines and the last line against a
``bytes.decode`` of the file made in setup.

What a call's time is made of. File reads by lines: ``open``, the buffered reads,
the decoder, the newline pass, a new str per line and the loop's ``count += 1;
last = line``; whole reads: one read and one decode. Writes by lines: a ``write``
(or ``print``, which calls ``write`` twice) per line, the encoder and the system
calls at each flush. The in-memory ops are the same work without files (their
names say which layer they keep). The ops in ``CONTROLS`` have a control
``<op>__control``: the same loop over the same lines in memory, or writing each
line to a ``Sink``.

In ``core``, the default selection (the 2009 study plus a handful of ops from each
suite), for what they showed as ratios of new to old time per call in the
all-suites reference report (reports/20261122T083756Z-vm.md):

- ``textio_decode_utf8``: the utf-8 codec alone (bytes.decode): 3.14t 0.77x of 3.14,
  PyPy 0.54x of 3.9
- ``textio_write_lines_ascii``: ascii text written by lines: 3.13 -> 3.14 0.52x
"""
from __future__ import division, print_function

import codecs
import os
import sys
import zlib

from _api import Fixture, Op, Sink, control_op, expect_equal, file_crc32
from _data import LATIN_WORDS, ascii_text, multilingual_text, write_bytes

PY2 = sys.version_info[0] == 2
EOL = u"\n"
KIB = 1024
MIB = 1024 * KIB
TEXT_BYTES = {"smoke": 256 * KIB, "quick": 2 * MIB, "full": 32 * MIB}
# Bytes one call should process at least: ops that run near memory speed repeat
# on the smaller files (inner_loops).
MIN_BYTES_PER_RUN = {"lines": 1 * MIB, "fast": 6 * MIB}
# The counting pass (suites/_counting.py) runs every op under valgrind, 20-50x slower than
# natively, and needs no call long enough to time: there the files are this many times smaller
# and every call makes one pass. Counts are stored with the bytes per call, so per-MiB figures
# compare across sizes.
COUNT_DIVISOR = 8


def _text_bytes(profile, counting=False):
    return TEXT_BYTES[profile] // (COUNT_DIVISOR if counting else 1)
INVALID_EVERY = 10          # every 10th line of the invalid file starts with stray bytes
INVALID_BYTES = b"\xff\x80"
SEED = 8859

# name -> (fixture, encoding); utf8 content is shared by utf8, utf16 and utf8sig.
CODECS = (
    ("ascii", "textio-ascii.txt", "ascii"),
    ("utf8", "textio-utf8.txt", "utf-8"),
    ("latin1", "textio-latin1.txt", "latin-1"),
    ("utf16", "textio-utf16.txt", "utf-16"),
    ("utf8sig", "textio-utf8sig.txt", "utf-8-sig"),
)
CRLF_FIXTURE = "textio-utf8-crlf.txt"
INVALID_FIXTURE = "textio-utf8-invalid.txt"
UTF8_FIXTURE = "textio-utf8.txt"


def FIXTURE_BYTES(profile):
    return (len(CODECS) + 2) * TEXT_BYTES[profile] + MIB


def scratch_bytes(profile):
    return 2 * TEXT_BYTES[profile]


def _multilingual(size, newline=u"\n", encoding="utf-8"):
    return multilingual_text(size, SEED, encoding, newline)


def fixtures(profile, counting=False):
    size = _text_bytes(profile, counting)

    def encoded(make_text, encoding):
        def make(path):
            write_bytes(path, make_text().encode(encoding))
        return make

    def invalid(path):
        lines = _multilingual(size).encode("utf-8").split(b"\n")
        for i in range(0, len(lines) - 1, INVALID_EVERY):
            lines[i] = INVALID_BYTES + lines[i]
        write_bytes(path, b"\n".join(lines))

    makers = {
        "ascii": encoded(lambda: ascii_text(size, seed=SEED), "ascii"),
        "utf8": encoded(lambda: _multilingual(size), "utf-8"),
        "latin1": encoded(lambda: multilingual_text(size, SEED, "latin-1", u"\n", LATIN_WORDS),
                          "latin-1"),
        "utf16": encoded(lambda: _multilingual(size, encoding="utf-16"), "utf-16"),
        "utf8sig": encoded(lambda: _multilingual(size), "utf-8-sig"),
    }
    out = [Fixture(fixture, makers[name]) for name, fixture, _ in CODECS]
    # the lf text with crlf line ends: writing the lf lines with newline="\r\n" must give this
    out.append(Fixture(CRLF_FIXTURE, encoded(lambda: _multilingual(size).replace(u"\n", u"\r\n"),
                                             "utf-8")))
    out.append(Fixture(INVALID_FIXTURE, invalid))
    return out


# -- references (setup, outside timing) -------------------------------------------------

def _read_raw(path):
    with open(path, "rb") as f:
        return f.read()


def decoded(path, encoding, errors="strict", newline=None):
    """The text a reader opened with these arguments must see, by bytes.decode."""
    text = _read_raw(path).decode(encoding, errors)
    if newline is None:
        text = text.replace(u"\r\n", u"\n").replace(u"\r", u"\n")
    return text


def facts(text):
    """Characters, lines and last line of ``text`` (lines end at "\n", with "\r\n" kept or not)."""
    lines = text.count(u"\n")
    if text and not text.endswith(u"\n"):
        lines += 1
    last_start = text.rfind(u"\n", 0, len(text) - 1) + 1
    return {"chars": len(text), "lines": lines, "last_line": text[last_start:]}


def lines_of(text):
    """``text`` cut after every "\\n", ends kept."""
    parts = text.split(u"\n")
    out = [part + u"\n" for part in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def crc_of(data):
    return zlib.crc32(data) & 0xFFFFFFFF


def surrogateescape_unavailable():
    try:
        codecs.lookup_error("surrogateescape")
    except LookupError:
        return "the surrogateescape error handler is new in Python 3.1"
    return None


# -- ops -------------------------------------------------------------------------------------

# This suite's ops in ``--suite core`` (the default run) and why each is there; the
# docstring says the same. iomatrix.measuring.selection reads this literal (never imports it).
CORE = {
    "textio_decode_utf8":
        "the utf-8 codec alone (bytes.decode): 3.14t 0.77x of 3.14, PyPy 0.54x of 3.9",
    "textio_write_lines_ascii": "ascii text written by lines: 3.13 -> 3.14 0.52x",
}

# The ops with a control op ("<op>__control", _api.control_op): the op's loop over the same lines
# in memory, timed beside it (reads: the lines from a list; writes: each line to a Sink, a C
# method of one argument as write is). iomatrix.measuring.selection reads this literal too:
# core takes the controls of its core ops.
CONTROLS = {
    "textio_read_lines_ascii": "for line in a list of the same lines",
    "textio_read_lines_utf8": "for line in a list of the same lines",
    "textio_write_lines_ascii": "each line written to a Sink",
    "textio_write_lines_utf8": "each line written to a Sink",
    "textio_print_lines_utf8": "print(line, end=EOL, file=a Sink) for each line",
}


# How each op that reads or writes text on 3.x opens its file on 2.7, by op name or by
# category (an op's name wins): "open" (the builtin: on 2.x the C stdio file object, which
# reads and writes bytes, so its 2.7 -> 3.x step also times decoding), "io.open" or
# "codecs.open" (they decode as 3.x does) or "mmap". Here: ``io.open`` on 2.7, which decodes as 3.x does; the in-memory ops open no file.
# iomatrix.analysing.study reads this literal (never imports it); tests/test_controls.py
# checks it against what each op calls under 2.7.
TEXT_API_27 = {"text-read": "io.open", "text-write": "io.open"}


def ops(ctx):
    size = _text_bytes(ctx.profile, ctx.counting)
    io = ctx.io_module
    io_open = io.open
    scratch = ctx.scratch_path("textio.out")
    line_passes = 1 if ctx.counting else max(1, MIN_BYTES_PER_RUN["lines"] // size)
    fast_passes = 1 if ctx.counting else max(1, MIN_BYTES_PER_RUN["fast"] // size)
    cold = ctx.cache == "cold"      # file reads: once per call, straight after the eviction
    out = []

    def add(name, category, fixture, passes, run, verify, setup=None, teardown=None,
            unavailable=None, reads=True):
        out.append(Op("textio_" + name, category, passes * (ctx.expect(fixture)["bytes"] or size), run,
                      verify, setup=setup, teardown=teardown,
                      inner_loops=passes if passes > 1 else None, unavailable=unavailable,
                      evict=(fixture,) if reads else (),
                      # --output-state applies to the file a write op makes; with several
                      # passes per call (small profiles), the later passes write over it.
                      outputs=() if reads else (scratch,)))

    def remove_scratch():
        if os.path.exists(scratch):
            os.remove(scratch)

    # -- reading files ---------------------------------------------------------------------
    def read_lines_op(name, fixture, encoding, errors="strict", newline=None, unavailable=None):
        path = ctx.path(fixture)
        ref = {}
        passes = 1 if cold else line_passes

        def setup():
            ref.update(facts(decoded(path, encoding, errors, newline)))

        def run():
            count = 0
            last = None
            for _ in range(passes):
                with io_open(path, "r", encoding=encoding, errors=errors, newline=newline) as f:
                    for line in f:
                        count += 1
                        last = line
            return count, last

        def verify(result):
            expect_equal("lines read from %s" % path, result[0], passes * ref["lines"])
            expect_equal("last line of %s" % path, result[1], ref["last_line"])
        add(name, "text-read", fixture, passes, run, verify, setup=setup, unavailable=unavailable)
        if out[-1].name not in CONTROLS:
            return
        lines = []

        def control_setup():
            setup()
            with io_open(path, "r", encoding=encoding, errors=errors, newline=newline) as f:
                lines[:] = list(f)

        def control_run():
            count = 0
            last = None
            for _ in range(passes):
                for line in lines:
                    count += 1
                    last = line
            return count, last

        def control_teardown():
            del lines[:]
        out.append(control_op(out[-1], control_run, setup=control_setup,
                              teardown=control_teardown))

    def read_whole_op(name, fixture, encoding, errors="strict", unavailable=None):
        path = ctx.path(fixture)
        ref = {}
        passes = 1 if cold else fast_passes

        def setup():
            text = decoded(path, encoding, errors)
            ref.update({"chars": len(text), "tail": text[-256:]})

        def run():
            total = 0
            text = None
            for _ in range(passes):
                with io_open(path, "r", encoding=encoding, errors=errors) as f:
                    text = f.read()
                total += len(text)
            return total, text[-256:]

        def verify(result):
            expect_equal("characters read from %s" % path, result[0], passes * ref["chars"])
            expect_equal("tail of %s" % path, result[1], ref["tail"])
        add(name, "text-read", fixture, passes, run, verify, setup=setup, unavailable=unavailable)

    # -- writing files -----------------------------------------------------------------------
    def write_op(name, fixture, encoding, source=None, source_encoding=None, errors="strict",
                 newline=None, use_print=False, unavailable=None):
        """Write the lines of ``source`` (default: ``fixture``); the output must equal ``fixture``."""
        path = ctx.path(fixture)
        source_path = ctx.path(source or fixture)
        state = {}
        passes = line_passes

        def setup():
            text = decoded(source_path, source_encoding or encoding, errors, newline="")
            lines = lines_of(text)
            if use_print:
                lines = [line[:-1] for line in lines]   # print adds the "\n"
            state["lines"] = lines
            state["crc"] = crc_of(_read_raw(path))

        if use_print:
            def write_all(f, lines):
                for line in lines:
                    print(line, end=EOL, file=f)
        else:
            def write_all(f, lines):
                write = f.write
                for line in lines:
                    write(line)

        def run():
            lines = state["lines"]
            for _ in range(passes):
                with io_open(scratch, "w", encoding=encoding, errors=errors,
                             newline=newline) as f:
                    write_all(f, lines)

        def verify(_):
            crc, got = file_crc32(scratch)
            expect_equal("size of %s" % scratch, got, os.path.getsize(path))
            expect_equal("crc32 of %s (should equal %s)" % (scratch, path), crc, state["crc"])

        def teardown():
            state.clear()
            remove_scratch()
        add(name, "text-write", fixture, passes, run, verify, setup=setup, teardown=teardown,
            unavailable=unavailable, reads=False)
        if out[-1].name not in CONTROLS:
            return
        sink = Sink()

        def control_run():
            lines = state["lines"]
            for _ in range(passes):
                write_all(sink, lines)
            return passes * len(lines)

        def control_verify(count):
            lines = state["lines"]
            expect_equal("lines written by the control of %s" % name, count,
                         passes * len(lines))
            expect_equal("last item written by the control of %s" % name, sink.take(),
                         EOL if use_print else lines[-1])
        out.append(control_op(out[-1], control_run, control_verify, setup=setup,
                              teardown=state.clear))

    for name, fixture, encoding in CODECS:
        read_lines_op("read_lines_" + name, fixture, encoding)
        read_whole_op("read_whole_" + name, fixture, encoding)
        write_op("write_lines_" + name, fixture, encoding)

    # newline=None translates "\r\n"; newline="" keeps it (and still splits lines there)
    read_lines_op("read_lines_utf8_crlf_newline_none", CRLF_FIXTURE, "utf-8")
    read_lines_op("read_lines_utf8_crlf_newline_empty", CRLF_FIXTURE, "utf-8", newline="")
    read_lines_op("read_lines_utf8_newline_empty", UTF8_FIXTURE, "utf-8", newline="")
    write_op("write_lines_utf8_newline_crlf", CRLF_FIXTURE, "utf-8", source=UTF8_FIXTURE,
             newline="\r\n")

    no_handler = surrogateescape_unavailable()
    read_whole_op("read_whole_utf8_surrogateescape", UTF8_FIXTURE, "utf-8",
                  errors="surrogateescape", unavailable=no_handler)
    read_whole_op("read_whole_utf8_invalid_surrogateescape", INVALID_FIXTURE, "utf-8",
                  errors="surrogateescape", unavailable=no_handler)
    read_lines_op("read_lines_utf8_invalid_surrogateescape", INVALID_FIXTURE, "utf-8",
                  errors="surrogateescape", unavailable=no_handler)
    write_op("write_lines_utf8_invalid_surrogateescape", INVALID_FIXTURE, "utf-8",
             errors="surrogateescape", unavailable=no_handler)

    write_op("print_lines_utf8", UTF8_FIXTURE, "utf-8", use_print=True)

    _memory_ops(ctx, io, add, line_passes, fast_passes)
    return out


def _memory_ops(ctx, io, add, line_passes, fast_passes):
    """In-memory baselines on the utf-8 fixture's text: no system calls."""
    path = ctx.path(UTF8_FIXTURE)
    state = {}

    def setup():
        raw = _read_raw(path)
        text = raw.decode("utf-8")
        state.update({"raw": raw, "text": text, "lines": lines_of(text),
                      "stripped": [line[:-1] for line in lines_of(text)],
                      "encoded_lines": [line.encode("utf-8") for line in lines_of(text)],
                      "facts": facts(text), "crc": crc_of(raw)})

    def teardown():
        state.clear()

    def op(name, passes, run, verify):
        add(name, "text-memory", UTF8_FIXTURE, passes, run, verify, setup=setup,
            teardown=teardown, reads=False)

    def verify_text(result):
        total, text = result
        expect_equal("characters written", total, len(state["text"]))
        expect_equal("text written", text, state["text"])

    def verify_bytes(result):
        total, crc = result
        expect_equal("bytes written", total, len(state["raw"]))
        expect_equal("crc32 of the bytes written", crc, state["crc"])

    def verify_lines(passes):
        def check(result):
            expect_equal("lines read", result[0], passes * state["facts"]["lines"])
            expect_equal("last line read", result[1], state["facts"]["last_line"])
        return check

    def stringio_write():
        value = None
        for _ in range(line_passes):
            f = io.StringIO()
            write = f.write
            for line in state["lines"]:
                write(line)
            value = f.getvalue()
        return len(value), value

    def stringio_print():
        value = None
        for _ in range(line_passes):
            f = io.StringIO()
            for line in state["stripped"]:
                print(line, end=EOL, file=f)
            value = f.getvalue()
        return len(value), value

    def stringio_read():
        count, last = 0, None
        for _ in range(line_passes):
            for line in io.StringIO(state["text"]):
                count += 1
                last = line
        return count, last

    def wrapper_write():
        value = None
        for _ in range(line_passes):
            buf = io.BytesIO()
            f = io.TextIOWrapper(buf, encoding="utf-8")
            write = f.write
            for line in state["lines"]:
                write(line)
            f.flush()
            value = buf.getvalue()
        return len(value), crc_of(value)

    def wrapper_read():
        count, last = 0, None
        for _ in range(line_passes):
            for line in io.TextIOWrapper(io.BytesIO(state["raw"]), encoding="utf-8"):
                count += 1
                last = line
        return count, last

    def bytesio_write():
        value = None
        for _ in range(line_passes):
            f = io.BytesIO()
            write = f.write
            for line in state["encoded_lines"]:
                write(line)
            value = f.getvalue()
        return len(value), crc_of(value)

    def bytesio_read():
        count, last = 0, None
        for _ in range(line_passes):
            for line in io.BytesIO(state["raw"]):
                count += 1
                last = line
        return count, last.decode("utf-8")

    def decode():
        text = None
        for _ in range(fast_passes):
            text = state["raw"].decode("utf-8")
        return len(text), text

    def encode():
        data = None
        for _ in range(fast_passes):
            data = state["text"].encode("utf-8")
        return len(data), crc_of(data)

    op("stringio_write_lines", line_passes, stringio_write, verify_text)
    op("stringio_print_lines", line_passes, stringio_print, verify_text)
    op("stringio_read_lines", line_passes, stringio_read, verify_lines(line_passes))
    op("textiowrapper_bytesio_write_lines_utf8", line_passes, wrapper_write, verify_bytes)
    op("textiowrapper_bytesio_read_lines_utf8", line_passes, wrapper_read, verify_lines(line_passes))
    op("bytesio_write_lines_utf8", line_passes, bytesio_write, verify_bytes)
    op("bytesio_read_lines_utf8", line_passes, bytesio_read, verify_lines(line_passes))
    op("decode_utf8", fast_passes, decode, verify_text)
    op("encode_utf8", fast_passes, encode, verify_bytes)
