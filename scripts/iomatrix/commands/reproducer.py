"""The standalone reproducer of an op (``nox -s upstream`` writes it beside ISSUE.md).

``reproducer(op, old, new)`` is the source of a short script with no iomatrix import that
runs under 2.7 and every 3.x, makes the suite's fixture itself (same size and bytes: the
generator of suites/_data.py is copied into it), and times the op with the suite's calls
and sizes. It is made from a small table of op templates (``TEMPLATES`` and the op families
of ``template_for``); ``template_for`` is None for an op without one.
"""
from __future__ import annotations

import ast
import re
import subprocess

from iomatrix import cli
from iomatrix.paths import SUITES_DIR

KIB, MIB = 1024, 1024 * 1024

# -- the op templates: each is (fixture, timed body), Python 2.7 and 3.x alike ---------------
# A fixture maker is the source of ``make_file(path)``; a body is the source of
# ``setup(path, scratch)`` returning the state, and ``run(state)`` doing one call of the op.

MMAPIO_FIXTURE = '''
FILE_BYTES = 4 * 1024 * 1024      # suites/mmapio.py, quick profile
NEEDLE = b"iomatrix-needle: the only line like this one\\n"
RECORDS, RECORD_BYTES = 20000, 64


def make_file(path):
    head = int(FILE_BYTES * 0.9)
    body = (ascii_text(head, seed=2020).encode("ascii") + NEEDLE
            + ascii_text(FILE_BYTES - head - len(NEEDLE), seed=2021).encode("ascii"))
    with open(path, "wb") as f:
        f.write(body)


def record_offsets(size):
    span = max(1, size - RECORD_BYTES)
    return [(i * 7919 * 4099) % span for i in range(RECORDS)]
'''

SLICES_SEEK_READ = '''
def setup(path, scratch):
    return path, record_offsets(FILE_BYTES)


def run(state):
    path, offsets = state
    records = []
    with open(path, "rb") as f:
        seek, read = f.seek, f.read
        for i in offsets:
            seek(i)
            records.append(read(RECORD_BYTES))
    return records
'''

FIND_MMAP = '''
import mmap


def setup(path, scratch):
    return path


def run(path):
    # the suite does this twice per call on its 4 MiB file (8 MiB a call)
    found = []
    for _ in range(2):
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                found.append(m.find(NEEDLE))
            finally:
                m.close()
    return found
'''

LUTZ_FIXTURE = '''
TEXT_FILE_BYTES = 2935401          # suites/lutz2009.py: the study's NEWS.txt x N
BINARY_FILE_BYTES = 13168640       # the study's MSI installer
BLOCK_SIZE = 4096


def make_file(path):
    if FILE_KIND == "text":
        data = ascii_text(TEXT_FILE_BYTES, seed=2009).encode("ascii")
    else:
        data = DeterministicBytes(1230).block(BINARY_FILE_BYTES)
    with open(path, "wb") as f:
        f.write(data)
'''

LUTZ_READ = '''
def setup(path, scratch):
    return path


def run(path):
    n = 0
    with open(path, MODE) as f:
        if KIND == "byLines":
            for line in f:
                n += len(line)
        elif KIND == "byBlocks":
            while True:
                block = f.read(BLOCK_SIZE)
                if not block:
                    break
                n += len(block)
        else:
            n = len(f.read())
    return n
'''

LUTZ_WRITE_FIXTURE = '''
WRITE_BYTES = 25 * 1024 * 1024     # suites/lutz2009.py: each write makes a 25 MiB file
WRITE_LINE = "x" * 63 + "\\n"
WRITE_BLOCK = "y" * 4095 + "\\n"


def make_file(path):
    pass  # the write ops make their own output
'''

LUTZ_WRITE = '''
def setup(path, scratch):
    line, block = WRITE_LINE, WRITE_BLOCK
    if "b" in MODE:
        line, block = line.encode("ascii"), block.encode("ascii")
    blocks = WRITE_BYTES // len(WRITE_BLOCK)
    return scratch, line, block, WRITE_BYTES // len(WRITE_LINE), blocks, block * blocks


def run(state):
    out, line, block, lines, blocks, whole = state
    with open(out, MODE) as f:
        if KIND == "byLines":
            for _ in range(lines):
                f.write(line)
        elif KIND == "byBlocks":
            for _ in range(blocks):
                f.write(block)
        else:
            f.write(whole)
'''

CHUNKS_FIXTURE = '''
FILE_BYTES = 48 * 1024 * 1024      # suites/chunks.py, quick profile


def make_file(path):
    with open(path, "wb") as f:
        f.write(DeterministicBytes(2023).block(FILE_BYTES))
'''

CHUNKS_READ = '''
def setup(path, scratch):
    return path


def run(path):
    total = 0
    with open(path, "rb") as f:
        read = f.read
        block = read(READ_SIZE)
        while block:
            total += len(block)
            block = read(READ_SIZE)
    return total
'''

COPIES_FIXTURE = '''
FILE_BYTES = 32 * 1024 * 1024      # suites/copies.py, quick profile


def make_file(path):
    with open(path, "wb") as f:
        f.write(DeterministicBytes(2012).block(FILE_BYTES))
'''

COPYFILEOBJ = '''
import shutil


def setup(path, scratch):
    return path, scratch


def run(state):
    src, dst = state
    with open(src, "rb") as fin:
        with open(dst, "wb") as fout:
            shutil.copyfileobj(fin, fout)   # its default buffer, as the suite
'''


def lutz_template(op: str):
    match = re.fullmatch(r"(read|write)_(byLines|byBlocks|allAtOnce)_(text|binary)Mode"
                         r"(\[large\.bin\])?", op)
    if match is None:
        return None
    action, kind, mode, large = match.groups()
    if action == "write":
        if large:
            return None
        return (f'KIND, MODE = "{kind}", "{"w" if mode == "text" else "wb"}"\n'
                + LUTZ_WRITE_FIXTURE, LUTZ_WRITE)
    if large and (mode != "binary" or kind == "byLines"):
        return None
    return (f'KIND, MODE, FILE_KIND = "{kind}", "{"r" if mode == "text" else "rb"}", '
            f'"{"binary" if large else "text"}"\n' + LUTZ_FIXTURE, LUTZ_READ)


# A read size the chunks template takes: ASCII digits ([0-9], not \d, which takes Arabic-Indic
# and other digits that int() reads and a 2.7 source cannot hold), without a leading zero,
# 1 KiB to 1 GiB (the suite reads 4 KiB to 16 MiB).
MAX_READ_SIZE = 1024 * MIB


def chunks_template(op: str):
    match = re.fullmatch(r"chunks_read_([1-9][0-9]{0,6})(KiB|MiB)", op)
    if match is None:
        return None
    size = int(match[1]) * (KIB if match[2] == "KiB" else MIB)
    if size > MAX_READ_SIZE:
        return None
    return f"READ_SIZE = {size}\n" + CHUNKS_FIXTURE, CHUNKS_READ


TEMPLATES = {
    "mmapio_slices_seek_read": lambda op: (MMAPIO_FIXTURE, SLICES_SEEK_READ),
    "mmapio_find_mmap": lambda op: (MMAPIO_FIXTURE, FIND_MMAP),
    "copies_copyfileobj_default": lambda op: (COPIES_FIXTURE, COPYFILEOBJ),
}
TEMPLATED_FAMILIES = ("read_/write_<byLines|byBlocks|allAtOnce>_<text|binary>Mode (lutz2009)",
                      "chunks_read_<size>")


def template_for(op: str):
    """(fixture source, body source) of ``op``; None when no template makes it (an op that
    is no valid op name, cli.name_problem, never has one)."""
    if not isinstance(op, str) or cli.name_problem(op, "op") is not None:
        return None
    if op in TEMPLATES:
        return TEMPLATES[op](op)
    return lutz_template(op) or chunks_template(op)


def script_name(op: str) -> str:
    """The reproducer's file name: ``repro_<op>.py``, the op's brackets as underscores."""
    return "repro_" + re.sub(r"[^A-Za-z0-9._-]+", "_", op) + ".py"


class ReproducerError(Exception):
    """The reproducer made here does not compile under a target interpreter (a bug of a
    template: exit 3, nothing written)."""


# A reproducer is made of vetted names only: an op a template matched (an ASCII name,
# cli.name_problem, with bounded numbers), two releases of sources.VERSION_RE (ASCII
# digits). What it becomes is checked too: ASCII (a 2.7 source without a coding line holds
# nothing else), then compiled by each interpreter it is for, in a subprocess of that
# interpreter, before it is written.
VERSION_TEXT = re.compile(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,4}(?:(?:a|b|rc)[0-9]{1,3})?")
COMPILE_CHECK = ("import sys; source = getattr(sys.stdin, 'buffer', sys.stdin).read(); "
                 "compile(source, 'repro.py', 'exec')")
COMPILE_TIMEOUT = 60


def compile_problem(source: str, python: str) -> str | None:
    """Why ``python`` cannot compile ``source`` (one line), or None when it compiles it."""
    try:
        # -E -S: the interpreter alone, no site-packages or environment; nothing is written
        # (compile() makes no .pyc)
        done = subprocess.run([python, "-E", "-S", "-c", COMPILE_CHECK],
                              input=source.encode("ascii"), capture_output=True,
                              timeout=COMPILE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return f"{python} did not compile it within {COMPILE_TIMEOUT} s"
    except OSError as exc:
        return f"{python} cannot run: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
    return f"{python} (exit {done.returncode}): {tail[0]}"


def checked_reproducer(op: str, old: str, new: str, pythons) -> str:
    """``reproducer(op, old, new)`` once it compiles under every interpreter of ``pythons``;
    ReproducerError naming the first that refuses it."""
    source = reproducer(op, old, new)
    for python in dict.fromkeys(pythons):
        problem = compile_problem(source, python)
        if problem is not None:
            raise ReproducerError(f"the reproducer of {op} does not compile under "
                                  f"{cli.one_line(problem)}; nothing written (please report)")
    return source


def data_source() -> str:
    """suites/_data.py's DeterministicBytes, WORDS and ascii_text, copied: the fixture's bytes."""
    text = (SUITES_DIR / "_data.py").read_text(encoding="utf-8")
    tree = ast.parse(text)
    wanted = {"DeterministicBytes", "WORDS", "ascii_text"}
    parts = []
    for node in tree.body:
        names = {getattr(node, "name", None)} | {
            t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)}
        if names & wanted:
            parts.append(ast.get_source_segment(text, node))
    return "\n\n\n".join(parts)


DRIVER = '''
def time_it(repeat):
    directory = tempfile.mkdtemp(prefix="repro-")
    try:
        path = os.path.join(directory, "fixture")
        make_file(path)
        state = setup(path, os.path.join(directory, "scratch.out"))
        run(state)                       # a warm-up call, untimed
        times = []
        for _ in range(repeat):
            start = clock()
            run(state)
            times.append(clock() - start)
        times.sort()
        return times[0], times[len(times) // 2]
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def main(argv):
    repeat = 20
    if "--repeat" in argv:
        at = argv.index("--repeat")
        repeat = int(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    if argv[:1] == ["--child"]:
        best, median = time_it(repeat)
        print("%r %r" % (best, median))
        return 0
    if len(argv) not in (0, 2):
        print(__doc__)
        return 2
    if not argv:
        best, median = time_it(repeat)
        print("%s: min %.6f s, median %.6f s per call (%d calls)"
              % (sys.version.split()[0], best, median, repeat))
        return 0
    medians = {}
    for round_index in range(ROUNDS):          # alternate, so both see the same machine
        for python in argv:
            out = subprocess.check_output([python, os.path.abspath(__file__), "--child",
                                           "--repeat", str(repeat)])
            best, median = [float(x) for x in out.decode("ascii").split()[-2:]]
            medians.setdefault(python, []).append(median)
            print("round %d %s: min %.6f s, median %.6f s" % (round_index + 1, python, best,
                                                              median))
    old, new = [sorted(medians[p])[len(medians[p]) // 2] for p in argv]
    print("OLD %s: %.6f s per call" % (argv[0], old))
    print("NEW %s: %.6f s per call" % (argv[1], new))
    print("ratio NEW/OLD: %.2f" % (new / old))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def reproducer(op: str, old: str, new: str) -> str:
    """The reproducer's source; ValueError for an op without a template or a release that
    is not one (nothing unvetted reaches the source)."""
    made = template_for(op)
    if made is None:
        raise ValueError(f"no reproducer template for op {cli.one_line(repr(op))[:60]}")
    for version in (old, new):
        if not isinstance(version, str) or not VERSION_TEXT.fullmatch(version):
            raise ValueError(f"{cli.one_line(repr(version))[:40]} is not a CPython release")
    fixture, body = made
    name = script_name(op)
    head = f'''"""Reproducer: {op}, {old} -> {new} (made by iomatrix's `nox -s upstream`).

Standalone (Python 2.7 and every 3.x, no dependencies). It writes the benchmark's file
into a temporary directory, with the same size and bytes as iomatrix's fixture, then
times the op: the same calls and sizes as iomatrix's suite, one warm-up call, then
--repeat calls (default 20), reporting the min and median CPU time per call (user +
system: what iomatrix measures with the file in the page cache).

    python {name}                       this interpreter's time per call
    python {name} OLD_PYTHON NEW_PYTHON both, alternating {{rounds}} times; the ratio NEW/OLD
    python {name} OLD NEW --repeat 5    fewer calls per process
"""
from __future__ import division, print_function

import os
import shutil
import subprocess
import sys
import tempfile
import time

# CPU time of this process, as iomatrix times a warm-cache op (its --clock auto): on a
# shared machine wall time also counts the time other processes held the CPU.
clock = getattr(time, "process_time", None) or time.clock
ROUNDS = 3
'''.replace("{rounds}", "3")
    source = "\n".join([head, data_source(), "", fixture.strip("\n"), "", body.strip("\n"), "",
                        DRIVER.strip("\n"), ""]).replace("\n\n\n\n", "\n\n\n")
    if not source.isascii():
        raise ValueError("the reproducer's source is not ASCII, which 2.7 cannot read")
    return source
