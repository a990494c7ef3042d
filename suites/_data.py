# -*- coding: utf-8 -*-
"""Deterministic data for fixtures and payloads: the same bytes under every Python.

``random`` changed its algorithms between 2.7 and 3.x; fixtures must be
byte-identical wherever and whenever they are made, so a small LCG makes them.
"""
from __future__ import division, print_function


class DeterministicBytes(object):
    """A tiny linear congruential generator, identical under every Python.

    ``random`` changed its algorithms between 2.7 and 3.x; fixtures must be
    byte-identical wherever and whenever they are made.
    """

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def next(self):
        self.state = (self.state * 1103515245 + 12345) & 0x7FFFFFFF
        return self.state >> 8

    def choice(self, seq):
        return seq[self.next() % len(seq)]

    def block(self, size):
        """``size`` pseudo-random bytes (cheap: repeats a 64 KiB random pool at shifting offsets)."""
        state = self.state
        pool = bytearray(65536 + 4096)
        for i in range(len(pool)):    # self.next() & 0xFF, inlined (see ascii_text)
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            pool[i] = (state >> 8) & 0xFF
        self.state = state
        out = bytearray()
        while len(out) < size:
            start = self.next() % 4096
            out += pool[start:start + 65536]
        return bytes(out[:size])


WORDS = ("the", "python", "file", "read", "write", "buffer", "line", "text",
         "binary", "release", "fixed", "issue", "module", "stream", "codec",
         "unicode", "io", "bytes", "version", "performance", "regression",
         "interpreter", "object", "call", "slow", "fast", "open", "close",
         "seek", "tell", "newline", "encoding", "decode", "patch", "bug", "a",
         "of", "to", "in", "and", "is", "for", "with", "on", "now", "when")


def ascii_text(size, seed, max_words=14):
    """Deterministic English-like ASCII lines, like a NEWS file, ``size`` bytes long.

    The generator's step (DeterministicBytes.next) is written out in the loop: a method call
    per number made this most of a fixture set's making (0.6 of 0.77 s under cProfile for
    lutz2009's smoke files; the quick profile's are 8 times larger). The numbers and the bytes
    are the same (tests/test_data.py checks them against the methods under 2.7 and 3.x)."""
    state = DeterministicBytes(seed).state
    words = WORDS
    nwords = len(words)
    out = []
    total = 0
    while total < size:
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        picked = []
        for _ in range(1 + (state >> 8) % max_words):
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            picked.append(words[(state >> 8) % nwords])
        line = " ".join(picked)
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        if (state >> 8) % 5 == 0:
            state = (state * 1103515245 + 12345) & 0x7FFFFFFF
            line = "- Issue #%d: %s." % (1000 + (state >> 8) % 9000, line)
        line += "\n"
        out.append(line)
        total += len(line)
    text = "".join(out)[:size]
    # The file ends with a complete line so line counts are unambiguous.
    return text[:-1] + "\n"


LATIN_WORDS = (u"file", u"read", u"write", u"buffer", u"line", u"text", u"python",
               u"café", u"naïve", u"façade", u"über", u"straße", u"señor", u"søster",
               u"crème", u"déjà", u"garçon", u"Ångström", u"año", u"être", u"the",
               u"of", u"and", u"to", u"io", u"is")
GREEK_WORDS = (u"αρχείο", u"ανάγνωση", u"γραμμή", u"κείμενο", u"ταχύτητα", u"και")
CYRILLIC_WORDS = (u"файл", u"чтение", u"запись", u"строка", u"буфер", u"текст", u"и")
CJK_WORDS = (u"文件", u"读取", u"写入", u"缓冲区", u"文本", u"ファイル", u"読み込み", u"파일")
EMOJI_WORDS = (u"🐍", u"📁", u"⚡", u"✅", u"🚀")
MULTILINGUAL_WORDS = LATIN_WORDS + GREEK_WORDS + CYRILLIC_WORDS + CJK_WORDS + EMOJI_WORDS
LINE_POOL = 4096          # distinct lines drawn once; the file picks among them
MAX_WORDS_PER_LINE = 12

# The codec that gives an encoded line's length without a byte order mark.
MEASURE_CODEC = {"utf-16": "utf-16-le", "utf-8-sig": "utf-8"}


def multilingual_text(nbytes, seed, encoding="utf-8", newline=u"\n", words=None):
    """Deterministic lines of words from several scripts: about ``nbytes`` once encoded.

    Returns text (unicode) made of complete lines ending with ``newline``; the
    encoded size is ``nbytes`` or up to one line more (plus any BOM). ``words``
    defaults to Latin, Greek, Cyrillic, CJK and emoji; pass LATIN_WORDS for
    latin-1.
    """
    words = words or MULTILINGUAL_WORDS
    measure = MEASURE_CODEC.get(encoding, encoding)
    rng = DeterministicBytes(seed)
    pool = []
    for _ in range(LINE_POOL):
        count = 1 + rng.next() % MAX_WORDS_PER_LINE
        line = u" ".join(rng.choice(words) for _ in range(count)) + newline
        pool.append((line, len(line.encode(measure))))
    out = []
    total = 0
    while total < nbytes:
        line, size = pool[rng.next() % LINE_POOL]
        out.append(line)
        total += size
    return u"".join(out)


def encoding_words(encoding):
    return LATIN_WORDS if encoding == "latin-1" else MULTILINGUAL_WORDS



def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)
