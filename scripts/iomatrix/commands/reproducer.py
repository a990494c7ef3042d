"""The standalone reproducer of an op (``nox -s upstream`` writes it beside ISSUE.md).

``reproducer(op, old, new)`` is the source of a short script with no iomatrix import that
runs under 2.7 and every 3.x and shows a CPython developer the step in a few lines:

- it makes its fixture inline, in a few lines whose docstring states its size and content
  (where the bytes' exact content does not matter to the op: the same sizes and the same
  kind of bytes as the suite's fixture, not the suite's generator copied);
- it times the I/O call alone with ``timeit``: the op (``op``, the suite's calls and sizes)
  and, where the suite has a control op (``<op>__control``, analysing.controls), the same
  Python loop without the I/O (``control``), and states op - control as "the I/O alone";
- it prints the time per call and the bytes moved per call;
- it verifies what it read or wrote (``check``, on the untimed call before and the call
  after the timed ones): a fast wrong answer fails.

Each op family of the core selection (measuring.selection.core_ops) has a template
(``FAMILIES``: a pattern of op names and the function that makes the template of a name);
``template_for`` is None for an op without one. The part of a reproducer that is the op
(fixture, op, control, check) is at most ``MAX_OP_LINES`` non-blank lines, tested; the
driver around it (command line, rounds under two interpreters) is shared by every template.
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
from typing import Callable

from iomatrix import cli

KIB, MIB = 1024, 1024 * 1024
# The op's part of a reproducer (fixture, op, control, check), non-blank lines: "about 20".
MAX_OP_LINES = 32


@dataclasses.dataclass(frozen=True)
class Template:
    """One op's reproducer part. ``behaviour`` is what the op does in words (the issue's
    title: "Iterating a binary file by lines"); ``source`` defines SIZE, make_fixture(path),
    setup(path, scratch) -> dict with "bytes", op(s), control(s) or ``control = None``, and
    check(s, result); ``wall`` times by the wall clock (threads), else by CPU time."""
    behaviour: str
    source: str
    wall: bool = False


# -- inline fixtures: a few lines each, their docstring says what they make -----------------

SOME_BYTES = '''
def some_bytes(size):
    """The bytes 0, 1, ..., 255 over and over (a newline every 256 bytes)."""
    return bytes(bytearray(range(256)) * (size // 256 + 1))[:size]
'''

ASCII_LINES = '''
def ascii_lines(size):
    """ASCII lines of 1 to 10 words (4 to 59 bytes a line, 31 on average)."""
    words = "the python file read write buffer line text binary release".split()
    block = "".join(" ".join(words[:n]) + "\\n" for n in range(1, 11))
    return ((block * (size // len(block) + 1))[:size - 1] + "\\n").encode("ascii")
'''

# BMP characters only: a 2.7 build with 2-byte unicode splits astral ones in two.
MULTILINGUAL = '''
def multilingual(size):
    """UTF-8 lines of 1 to 12 Latin, Greek, Cyrillic and CJK words."""
    words = ("caf\\u00e9 na\\u00efve the \\u03b1\\u03c1\\u03c7\\u03b5\\u03af\\u03bf io "
             "\\u0444\\u0430\\u0439\\u043b \\u6587\\u4ef6 \\u30d5\\u30a1\\u30a4\\u30eb file "
             "\\ud30c\\uc77c \\u00fcber read").split()
    block = "".join(" ".join(words[:n]) + "\\n" for n in range(1, 13))
    return block * (size // len(block.encode("utf-8")) + 1)
'''

FILE_OF = '''
def make_fixture(path):
    with open(path, "wb") as f:
        f.write({maker}(SIZE))
'''

# A Sink, as the suites' write controls: a write method that keeps its argument.
SINK = '''
class Sink(object):
    def write(self, data):
        self.last = data
'''


def _src(*parts: str) -> str:
    return "\n\n\n".join(p.strip("\n") for p in parts if p) + "\n"


# -- lutz2009: read_/write_<byLines|byBlocks|allAtOnce>_<text|binary>Mode[ [large.bin]] -----

def lutz_template(op: str) -> Template | None:
    match = re.fullmatch(r"(read|write)_(byLines|byBlocks|allAtOnce)_(text|binary)Mode"
                         r"(\[large\.bin\])?", op)
    if match is None:
        return None
    action, kind, mode, large = match.groups()
    kind_words = {"byLines": "by lines", "byBlocks": "in 4 KiB blocks",
                  "allAtOnce": "all at once"}[kind]
    if action == "write":
        return None if large else _lutz_write(kind, mode, kind_words)
    if large and (mode != "binary" or kind == "byLines"):
        return None
    size, maker = (13168640, "some_bytes") if large else (2935401, "ascii_lines")
    opened = f'open(s["path"], "{"r" if mode == "text" else "rb"}")'
    if kind == "byLines":
        pieces, loop = "list(f)", ("        for piece in f:\n"
                                   "            n += len(piece)\n")
    elif kind == "byBlocks":
        pieces = "[data[i:i + 4096] for i in range(0, len(data), 4096)]"
        loop = ("        piece = f.read(4096)\n"
                "        while piece:\n"
                "            n, last = n + len(piece), piece\n"
                "            piece = f.read(4096)\n"
                "        piece = last\n")
    else:
        pieces, loop = "[data]", ("        piece = f.read()\n"
                                  "        n = len(piece)\n")
    control = ("def control(s):          # the same loop over the same pieces in memory\n"
               "    n = 0\n"
               "    for piece in s[\"pieces\"]:\n"
               "        n += len(piece)\n"
               "    return n, piece\n") if kind != "allAtOnce" else \
        "control = None          # one call: nothing but the read\n"
    source = _src(
        f"SIZE = {size}    # bytes: iomatrix's lutz2009 file",
        SOME_BYTES if large else ASCII_LINES, FILE_OF.format(maker=maker),
        f'''
def setup(path, scratch):
    s = {{"path": path}}
    with {opened.replace('s["path"]', "path")} as f:
        data = f.read()
        f.seek(0)
        s["pieces"] = {pieces}
    s["bytes"] = len(data)
    return s


def op(s):
    n = 0
    with {opened} as f:
{loop}    return n, piece
''', control, '''
def check(s, result):
    assert result == (s["bytes"], s["pieces"][-1]), "read %r units, not %r" % (
        result[0], s["bytes"])
''')
    what = "binary" if mode == "binary" else "text"
    large_words = " of 12.6 MiB" if large else ""
    return Template(f"Reading a {what} file{large_words} {kind_words}", source)


_WRITE_CONTROL = '''
def control(s):            # the same writes to a Sink: the loop without the file
    write, piece = Sink().write, s["piece"]
    for _ in range(s["count"]):
        write(piece)
'''


def _lutz_write(kind: str, mode: str, kind_words: str) -> Template:
    # str() makes the native string of each Python: bytes on 2.7, whose builtin file (the
    # study's) takes them in text mode too; text on 3.x.
    text = mode == "text"
    piece = {"byLines": '"x" * 63 + "\\n"', "byBlocks": '"y" * 4095 + "\\n"',
             "allAtOnce": '"z" * 4095 + "\\n"'}[kind]
    count = "SIZE // len(piece)" if kind != "allAtOnce" else "1"
    made = f"str({piece})" if text else f'({piece}).encode("ascii")'
    if kind == "allAtOnce":
        made += " * (SIZE // 4096)"
    control = "control = None             # one call: nothing but the write\n" \
        if kind == "allAtOnce" else _WRITE_CONTROL
    source = _src('''
SIZE = 25 * 1024 * 1024    # bytes written per call: iomatrix's lutz2009 write


def make_fixture(path):
    pass                   # no input: the op writes its own file
''', SINK, f'''
def setup(path, scratch):
    piece = {made}
    data = piece * ({count})
    raw = data if isinstance(data, bytes) else data.encode("ascii")
    return {{"out": scratch, "piece": piece, "count": ({count}), "bytes": len(raw),
            "crc": zlib.crc32(raw) & 0xFFFFFFFF}}


def op(s):
    with open(s["out"], "{"w" if text else "wb"}") as f:
        write, piece = f.write, s["piece"]
        for _ in range(s["count"]):
            write(piece)


{control}

def check(s, result):
    with open(s["out"], "rb") as f:
        data = f.read()
    ok = len(data) == s["bytes"] and zlib.crc32(data) & 0xFFFFFFFF == s["crc"]
    assert ok, "wrote %d bytes, or not the bytes given" % len(data)
''')
    return Template(f"Writing a {'text' if text else 'binary'} file {kind_words}", source)


# -- chunks: chunks_read_<size>, chunks_iterate_lines ------------------------------------

# A read size the chunks template takes: ASCII digits ([0-9], not \d, which takes Arabic-Indic
# and other digits that int() reads and a 2.7 source cannot hold), without a leading zero,
# 1 KiB to 1 GiB (the suite reads 4 KiB to 16 MiB).
MAX_READ_SIZE = 1024 * MIB
CHUNKS_FIXTURE = _src("SIZE = 48 * 1024 * 1024    # bytes: iomatrix's chunks file (quick profile)",
                      SOME_BYTES, FILE_OF.format(maker="some_bytes"))


def chunks_template(op: str) -> Template | None:
    match = re.fullmatch(r"chunks_read_([1-9][0-9]{0,6})(KiB|MiB)", op)
    if match is not None:
        size = int(match[1]) * (KIB if match[2] == "KiB" else MIB)
        if size > MAX_READ_SIZE:
            return None
        head, split = f"READ_SIZE = {size}", "[data[i:i + READ_SIZE] for i in " \
            "range(0, len(data), READ_SIZE)]"
        loop = ("        read = f.read\n"
                "        piece = read(READ_SIZE)\n"
                "        while piece:\n"
                "            n, last = n + len(piece), piece\n"
                "            piece = read(READ_SIZE)\n")
        behaviour = f"Reading a binary file in {match[1]} {match[2]} blocks"
    elif op == "chunks_iterate_lines":
        head, split = "", "list(io.BytesIO(data))"
        loop = ("        for last in f:\n"
                "            n += len(last)\n")
        behaviour = "Iterating a binary file by lines (a newline every 256 bytes)"
    else:
        return None
    source = _src(head, CHUNKS_FIXTURE, f'''
def setup(path, scratch):
    with open(path, "rb") as f:
        data = f.read()
    return {{"path": path, "bytes": len(data), "pieces": {split}}}


def op(s):
    n = 0
    with open(s["path"], "rb") as f:
{loop}    return n, last


def control(s):            # the same loop over the same pieces in memory
    n = 0
    for last in s["pieces"]:
        n += len(last)
    return n, last


def check(s, result):
    assert result == (s["bytes"], s["pieces"][-1]), "read %d bytes, not %d" % (
        result[0], s["bytes"])
''')
    return Template(behaviour, source)


# -- copies: copies_copyfileobj_default -----------------------------------------------------

COPYFILEOBJ = _src("SIZE = 32 * 1024 * 1024    # bytes: iomatrix's copies file (quick profile)",
                   SOME_BYTES, FILE_OF.format(maker="some_bytes"), '''
def setup(path, scratch):
    with open(path, "rb") as f:
        crc = zlib.crc32(f.read()) & 0xFFFFFFFF
    return {"path": path, "out": scratch, "bytes": SIZE, "crc": crc}


def op(s):                 # copied: SIZE bytes read and SIZE bytes written
    with open(s["path"], "rb") as fin:
        with open(s["out"], "wb") as fout:
            shutil.copyfileobj(fin, fout)   # its default length, as the suite


control = None             # one call: nothing but the copy


def check(s, result):
    with open(s["out"], "rb") as f:
        data = f.read()
    assert len(data) == SIZE and zlib.crc32(data) & 0xFFFFFFFF == s["crc"], "a bad copy"
''')


# -- mmapio: mmapio_slices_seek_read, mmapio_find_mmap -------------------------------------

MMAPIO_FIXTURE = _src('''
SIZE = 4 * 1024 * 1024     # bytes: iomatrix's mmapio file (quick profile)
NEEDLE = "iomatrix-needle: the only line like this one\\n".encode("ascii")
''', ASCII_LINES, '''
def make_fixture(path):    # the needle line after 90% of the text
    head = int(SIZE * 0.9)
    with open(path, "wb") as f:
        f.write(ascii_lines(head) + NEEDLE + ascii_lines(SIZE - head - len(NEEDLE)))
''')

SLICES_SEEK_READ = _src(MMAPIO_FIXTURE, '''
def setup(path, scratch):  # 20,000 records of 64 bytes at scattered offsets
    with open(path, "rb") as f:
        data = f.read()
    offsets = [(i * 7919 * 4099) % (len(data) - 64) for i in range(20000)]
    return {"path": path, "offsets": offsets, "bytes": 64 * len(offsets),
            "records": [data[i:i + 64] for i in offsets]}


def op(s):
    records = []
    with open(s["path"], "rb") as f:
        seek, read = f.seek, f.read
        for i in s["offsets"]:
            seek(i)
            records.append(read(64))
    return records


def control(s):            # the same records appended from a list, one per offset
    records, ready = [], iter(s["records"])
    for i in s["offsets"]:
        records.append(next(ready))
    return records


def check(s, result):
    assert result == s["records"], "a record read is not the file's bytes at its offset"
''')

FIND_MMAP = _src("import mmap", MMAPIO_FIXTURE, '''
def setup(path, scratch):  # the needle is found twice a call: 2 x 90% of the file scanned
    with open(path, "rb") as f:
        at = f.read().find(NEEDLE)
    return {"path": path, "at": at, "bytes": 2 * at}


def op(s):
    found = []
    for _ in range(2):
        with open(s["path"], "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                found.append(m.find(NEEDLE))
            finally:
                m.close()
    return found


control = None             # the call is mmap.find; open and map are a small part


def check(s, result):
    assert result == [s["at"], s["at"]], "found at %r, not %d" % (result, s["at"])
''')


# -- iobench: iobench_seek_<fmt>_<size>_1000units, iobench_readmodify_<fmt>_400KiB_<n>unit(s) --

IOBENCH_SIZES = {"20KiB": 20 * KIB, "400KiB": 400 * KIB, "10MiB": 10 * MIB}


def _iobench_fixture(fmt: str, size: int) -> str:
    if fmt == "binary":
        return _src(f"SIZE = {size}    # bytes: iomatrix's iobench file", SOME_BYTES,
                    FILE_OF.format(maker="some_bytes"))
    return _src(f"SIZE = {size}    # bytes, about: iomatrix's iobench text file", MULTILINGUAL,
                '''
def make_fixture(path):
    with open(path, "wb") as f:
        f.write(multilingual(SIZE).encode("utf-8"))
''')


def _opener(fmt: str, mode: str) -> str:
    # iobench opens text files with io.open (on 2.7 too) and binary ones with open
    return f'io.open(path, "{mode}", encoding="utf-8")' if fmt != "binary" else \
        f'open(path, "{mode}b")'


def iobench_template(op: str) -> Template | None:
    match = re.fullmatch(r"iobench_seek_(binary|text_utf8_lf)_(20KiB|400KiB|10MiB)_1000units",
                         op)
    if match is not None:
        fmt, label = match.groups()
        what = "binary" if fmt == "binary" else "UTF-8 text"
        return Template(f"Seeking in a {what} file", _src(_iobench_fixture(fmt, IOBENCH_SIZES[label]),
                                                          SINK, f'''
def setup(path, scratch):  # the file is opened once, as iobench does; a seek every 1000 units
    f = {_opener(fmt, "r")}
    return {{"f": f, "positions": list(range(0, os.path.getsize(path), 1000)), "bytes": 0}}


def op(s):                 # bytes per call: 0 (seeks move no data)
    seek = s["f"].seek
    for pos in s["positions"]:
        seek(pos)
    return s["f"].tell()


def control(s):            # each offset passed to a Sink
    write = Sink().write
    for pos in s["positions"]:
        write(pos)


def check(s, result):
    assert result == s["positions"][-1], "at %r after the seeks" % result
'''))
    match = re.fullmatch(r"iobench_readmodify_(binary|text_utf8_lf)_400KiB_(1unit|20units|"
                         r"4096units)", op)
    if match is None or (match[1] != "binary" and match[2] == "1unit"):
        return None
    fmt, units = match[1], int(match[2].rstrip("units").rstrip("unit") or 1)
    text = fmt != "binary"
    transform = "piece[::-1]" if text else "piece.translate(INVERT)"
    loop = ("        pos = f.tell()\n"
            "        piece = f.read(UNITS)\n"
            "        if not piece:\n"
            "            break\n"
            "        f.seek(pos)\n") if text else \
        ("        piece = f.read(UNITS)\n"
         "        if not piece:\n"
         "            break\n"
         "        f.seek(-len(piece), 1)\n")
    what = "UTF-8 text" if text else "binary"
    source = _src(_iobench_fixture(fmt, 400 * KIB), f"UNITS = {units}", "" if text else
                  "INVERT = bytes(bytearray(255 - i for i in range(256)))", f'''
def setup(path, scratch):  # the file stays open; each call rewrites every piece in place
    f = {_opener(fmt, "r+")}
    data = f.read()
    pieces = [data[i:i + UNITS] for i in range(0, len(data), UNITS)]
    after = (data, data[:0].join([{transform} for piece in pieces]))
    return {{"f": f, "bytes": 2 * len(data), "pieces": pieces, "calls": 0, "after": after}}


def op(s):                 # read UNITS, seek back, write them changed: 2 x the file a call
    f = s["f"]
    f.seek(0)
    while True:
{loop}        f.write({transform})
    f.flush()
    s["calls"] += 1


def control(s):            # the same change of the same pieces in memory, no file
    return [{transform} for piece in s["pieces"]]


def check(s, result):      # the file holds the original and the changed text by turns
    s["f"].seek(0)
    assert s["f"].read() == s["after"][s["calls"] % 2], "the file is not what was written"
''')
    return Template(f"Read-modify-write of a {what} file in {units}-unit pieces", source)


# -- manyfiles: manyfiles_read_<sequential|threads> -----------------------------------------

def manyfiles_template(op: str) -> Template | None:
    match = re.fullmatch(r"manyfiles_read_(sequential|threads)", op)
    if match is None:
        return None
    threads = match[1] == "threads"
    runner = ("def run(func, jobs):       # 8 threading.Thread workers, each takes every 8th job\n"
              "    results = [None] * len(jobs)\n"
              "    def work(k):\n"
              "        results[k::8] = [func(job) for job in jobs[k::8]]\n"
              "    workers = [threading.Thread(target=work, args=(k,)) for k in range(8)]\n"
              "    [w.start() for w in workers]\n"
              "    [w.join() for w in workers]\n"
              "    return results\n") if threads else \
        "def run(func, jobs):\n    return [func(job) for job in jobs]\n"
    source = _src("import threading" if threads else "", '''
SIZE = 100                 # files of 500 CSV rows of 10 numbers (iomatrix's quick profile)


def make_fixture(path):
    os.mkdir(path)
    rows = [",".join(str(r + j) for j in range(10)) for r in range(SIZE + 500)]
    for k in range(SIZE):
        with open(os.path.join(path, "%05d.csv" % k), "w") as f:
            f.write("\\n".join(rows[k:k + 500] + [""]))


def count(text):
    return len(text), text.count("\\n")


def slurp(name):
    with open(name, "r") as f:
        return f.read()
''', runner, '''
def setup(path, scratch):
    names = [os.path.join(path, n) for n in sorted(os.listdir(path))]
    texts = [slurp(n) for n in names]
    return {"names": names, "texts": texts, "bytes": sum(map(len, texts))}


def op(s):
    return run(lambda name: count(slurp(name)), s["names"])


def control(s):            # the same counting of each text in memory, in the same runner
    return run(count, s["texts"])


def check(s, result):
    assert result == [count(t) for t in s["texts"]], "a file's characters or lines differ"
''')
    return Template(f"Reading 100 small text files {'in 8 threads' if threads else 'one by one'}",
                    source, wall=True)


# -- textio: textio_<read|write>_lines_<ascii|utf8>, textio_decode_utf8 --------------------

def textio_template(op: str) -> Template | None:
    match = re.fullmatch(r"textio_(read|write)_lines_(ascii|utf8)|textio_decode_utf8", op)
    if match is None:
        return None
    codec = {"ascii": "ascii", "utf8": "utf-8", None: "utf-8"}[match[2]]
    text = ("def the_text():\n    return ascii_lines(SIZE).decode(\"ascii\")\n"
            if codec == "ascii" else "def the_text():\n    return multilingual(SIZE)\n")
    head = _src("SIZE = 2 * 1024 * 1024    # bytes, about: iomatrix's textio file (quick profile)",
                ASCII_LINES if codec == "ascii" else MULTILINGUAL, text, f'''
def make_fixture(path):
    with open(path, "wb") as f:
        f.write(the_text().encode("{codec}"))
''')
    if match[1] is None:
        return Template("Decoding UTF-8 (bytes.decode)", _src(head, '''
def setup(path, scratch):  # no file I/O: the codec alone, on the file's bytes in memory
    with open(path, "rb") as f:
        data = f.read()
    return {"data": data, "bytes": len(data), "text": the_text()}


def op(s):
    return s["data"].decode("utf-8")


control = None             # one call: the decode


def check(s, result):
    assert result == s["text"], "decoded text differs"
'''))
    if match[1] == "read":
        return Template(f"Reading {codec} text by lines", _src(head, f'''
def setup(path, scratch):
    with io.open(path, "r", encoding="{codec}") as f:
        lines = f.readlines()
    return {{"path": path, "lines": lines, "bytes": os.path.getsize(path)}}


def op(s):
    n = 0
    with io.open(s["path"], "r", encoding="{codec}") as f:
        for line in f:
            n += 1
    return n, line


def control(s):            # the same loop over the same lines in memory
    n = 0
    for line in s["lines"]:
        n += 1
    return n, line


def check(s, result):
    assert result == (len(s["lines"]), s["lines"][-1]), "read %d lines" % result[0]
'''))
    return Template(f"Writing {codec} text by lines", _src(head, SINK, f'''
def setup(path, scratch):
    with open(path, "rb") as f:
        data = f.read()
    return {{"out": scratch, "lines": data.decode("{codec}").splitlines(True),
            "bytes": len(data), "data": data}}


def op(s):
    with io.open(s["out"], "w", encoding="{codec}") as f:
        write = f.write
        for line in s["lines"]:
            write(line)


def control(s):            # each line written to a Sink
    write = Sink().write
    for line in s["lines"]:
        write(line)


def check(s, result):
    with open(s["out"], "rb") as f:
        assert f.read() == s["data"], "the file written is not the text given"
'''))


# -- the table of families --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Family:
    pattern: str                                  # how its names read, for messages and docs
    make: Callable[[str], "Template | None"]


FAMILIES = (
    Family("read_<byLines|byBlocks|allAtOnce>_<text|binary>Mode[ [large.bin]] (lutz2009)",
           lambda op: lutz_template(op) if op.startswith("read_") else None),
    Family("write_<byLines|byBlocks|allAtOnce>_<text|binary>Mode (lutz2009)",
           lambda op: lutz_template(op) if op.startswith("write_") else None),
    Family("chunks_read_<size>", lambda op: chunks_template(op) if op != "chunks_iterate_lines"
           else None),
    Family("chunks_iterate_lines", lambda op: chunks_template(op) if op == "chunks_iterate_lines"
           else None),
    Family("copies_copyfileobj_default", lambda op: Template(
        "Copying a binary file with shutil.copyfileobj", COPYFILEOBJ)
        if op == "copies_copyfileobj_default" else None),
    Family("mmapio_slices_seek_read", lambda op: Template(
        "Reading 64-byte records after a seek each", SLICES_SEEK_READ)
        if op == "mmapio_slices_seek_read" else None),
    Family("mmapio_find_mmap", lambda op: Template("mmap.find over a mapped file", FIND_MMAP)
           if op == "mmapio_find_mmap" else None),
    Family("iobench_seek_<binary|text_utf8_lf>_<size>_1000units",
           lambda op: iobench_template(op) if op.startswith("iobench_seek_") else None),
    Family("iobench_readmodify_<binary|text_utf8_lf>_400KiB_<n>units",
           lambda op: iobench_template(op) if op.startswith("iobench_readmodify_") else None),
    Family("manyfiles_read_<sequential|threads>", manyfiles_template),
    Family("textio_<read|write>_lines_<ascii|utf8>",
           lambda op: textio_template(op) if op != "textio_decode_utf8" else None),
    Family("textio_decode_utf8",
           lambda op: textio_template(op) if op == "textio_decode_utf8" else None),
)
# The families as one message names them (an op without a template).
TEMPLATED_FAMILIES = tuple(f.pattern for f in FAMILIES)


def template_for(op: str) -> Template | None:
    """The template of ``op``; None when no template makes it (an op that is no valid op
    name, cli.name_problem, never has one)."""
    if not isinstance(op, str) or cli.name_problem(op, "op") is not None:
        return None
    for family in FAMILIES:
        made = family.make(op)
        if made is not None:
            return made
    return None


def family_of(op: str) -> str | None:
    """The pattern of the family whose template makes ``op``."""
    if template_for(op) is None:
        return None
    return next(f.pattern for f in FAMILIES if f.make(op) is not None)


def no_template_line(op: str) -> str:
    """The issue text's one line for an op without a template (markdown; the op escaped)."""
    from iomatrix.markup import code
    return (f"No reproducer: iomatrix has no reproducer template for {code(op)} (the families "
            f"with one: {', '.join(code(p) for p in TEMPLATED_FAMILIES)}).")


# The inline fixture generators: a few lines each, shared by templates, not counted as the op's.
GENERATORS = (SOME_BYTES, ASCII_LINES, MULTILINGUAL)


def op_lines(template: Template) -> int:
    """The non-blank lines of a template's part: its fixture, op, control and check (the
    shared fixture generators of GENERATORS left out)."""
    source = template.source
    for generator in GENERATORS:
        source = source.replace(generator.strip("\n"), "")
    return sum(1 for line in source.splitlines() if line.strip())


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


# The shared driver: timeit per call (calls batched to 20 ms or more, the median of
# --repeat batches), the control likewise, the check before and after; and the alternation
# of two interpreters (child processes, ROUNDS rounds) for the ratio NEW/OLD.
DRIVER = '''
def per_call(func, repeat):
    """Median seconds per call of func over repeat batches of calls lasting 20 ms or more."""
    timer = timeit.Timer(func, timer=CLOCK)
    number = 1
    while number < 10 ** 6 and timer.timeit(number) < 0.02:
        number *= 4
    times = sorted(t / number for t in timer.repeat(repeat, number))
    return times[len(times) // 2]


def measure(repeat):
    directory = tempfile.mkdtemp(prefix="repro-")
    try:
        path = os.path.join(directory, "fixture")
        make_fixture(path)
        s = setup(path, os.path.join(directory, "out"))
        check(s, op(s))                       # untimed and verified: a wrong read fails here
        spent = per_call(lambda: op(s), repeat)
        check(s, op(s))                       # the same after the timed calls
        loop = per_call(lambda: control(s), repeat) if control else 0.0
        if "f" in s:                          # a file setup opened (iobench keeps it open)
            s["f"].close()
        return spent, loop, s["bytes"]
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def line(name, spent, loop, nbytes):
    alone = ("%.3f ms the I/O alone (minus %.3f ms of the same loop in memory)"
             % ((spent - loop) * 1e3, loop * 1e3)) if control else "no control: all of it I/O"
    return "%s: %.3f ms per call, %s; %d bytes moved per call" % (name, spent * 1e3, alone,
                                                                   nbytes)


def main(argv):
    global SIZE
    options = {"--repeat": 7, "--size": SIZE, "--rounds": ROUNDS}
    for flag in options:
        if flag in argv:
            at = argv.index(flag)
            options[flag] = int(argv[at + 1])
            argv = argv[:at] + argv[at + 2:]
    SIZE = options["--size"]
    if argv[:1] == ["--child"]:
        print("%s %r %r %r" % ((sys.version.split()[0],) + measure(options["--repeat"])))
        return 0
    if len(argv) not in (0, 2):
        print(__doc__)
        return 2
    print("fixture: %s" % FIXTURE)
    if not argv:
        print(line(sys.version.split()[0], *measure(options["--repeat"])))
        return 0
    got, name = {}, {}
    for round_index in range(options["--rounds"]):   # alternate: both see the same machine
        for python in argv:
            out = subprocess.check_output([python, os.path.abspath(__file__), "--child",
                                           "--repeat", str(options["--repeat"]),
                                           "--size", str(SIZE)])
            words = out.decode("ascii").split()[-4:]    # its version, then the numbers
            name[python] = words[0]
            spent, loop, nbytes = [float(x) for x in words[1:]]
            got.setdefault(python, []).append((spent, loop))
            print("round %d %s" % (round_index + 1, line(words[0], spent, loop, nbytes)))
    old, new = [sorted(got[p])[len(got[p]) // 2] for p in argv]   # the median rounds
    print("OLD " + line(name[argv[0]], old[0], old[1], nbytes))
    print("NEW " + line(name[argv[1]], new[0], new[1], nbytes))
    alone = (" (the I/O alone: %.2f)" % ((new[0] - new[1]) / (old[0] - old[1]))
             if control and old[0] > old[1] else "")
    print("ratio NEW/OLD: %.2f%s" % (new[0] / old[0], alone))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def fixture_words(template: Template) -> str:
    """What the fixture is, from the template's source: the SIZE line's comment and the
    docstring of the function that makes the bytes (ASCII: the template's own text)."""
    size = re.search(r"^SIZE = ([^#\n]+?)\s*#\s*(.*)$", template.source, re.M)
    made = re.findall(r'^    """(.+?)"""$', template.source, re.M)
    what = f"SIZE = {size[1]} {size[2]}" if size else "none"
    return what + (f"; {made[0]}" if made else "")


def reproducer(op: str, old: str, new: str) -> str:
    """The reproducer's source; ValueError for an op without a template or a release that
    is not one (nothing unvetted reaches the source)."""
    template = template_for(op)
    if template is None:
        raise ValueError(f"no reproducer template for op {cli.one_line(repr(op))[:60]}")
    for version in (old, new):
        if not isinstance(version, str) or not VERSION_TEXT.fullmatch(version):
            raise ValueError(f"{cli.one_line(repr(version))[:40]} is not a CPython release")
    name = script_name(op)
    fixture = fixture_words(template)
    clock = ("timeit.default_timer   # wall time: the op works in threads"
             if template.wall else
             'getattr(time, "process_time", None) or time.clock   # CPU time, as iomatrix')
    head = f'''"""Reproducer: {op}, {old} -> {new} (made by iomatrix's `nox -s upstream`).

{template.behaviour}. Standalone (Python 2.7 and every 3.x, no dependencies): it makes
its fixture in a temporary directory, checks what the op reads or writes, and times the
op with timeit: the time per call and the bytes moved per call, and where iomatrix has a
control for it, the same Python loop without the I/O, so the I/O alone is the difference.
Fixture: {fixture}.

    python {name}                        this interpreter
    python {name} OLD_PYTHON NEW_PYTHON  both, alternating in {{rounds}} rounds (--rounds N);
                                         the medians and the ratio NEW/OLD
    python {name} --size N --repeat 3    a smaller fixture, fewer timed batches
"""
from __future__ import division, print_function, unicode_literals

import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
import timeit
import zlib

CLOCK = {clock}
ROUNDS = 3
FIXTURE = {fixture!r}
'''.replace("{rounds}", "3")
    source = "\n".join([head, "# -- the op " + "-" * 78, "", template.source.strip("\n"), "",
                        "", "# -- the driver " + "-" * 74, DRIVER.rstrip("\n"), ""])
    source = re.sub(r"\n{4,}", "\n\n\n", source)
    if not source.isascii():
        raise ValueError("the reproducer's source is not ASCII, which 2.7 cannot read")
    return source
