"""Which upstream change a finding is owed to, named only when evidence agrees (issue 43).

``changelog.candidates`` ranks the Misc/NEWS entries of a step's releases that speak of the
op's machinery (its components and words). Speaking of the machinery is not enough to name an
entry as the likely change: by that alone the reference run named a unittest fix beside a
line-iteration speed-up and the io module's isolation beside a ``str.translate`` slowdown.
Here is the acceptance rule. A candidate is named only when at least one more piece of
evidence agrees (``judge``; docs/methodology.md, "Why, and how sure"):

- **bisect** (``changelog + bisect``): a bisect of the op (``nox -s bisect``; its runs
  beside this one in the results directory) places the change in the step between two
  timed releases whose newer one is the release that carries the entry (the first release
  whose changelog section lists it, or a later patch release listing its backport). A bisect
  left "not narrowed further" across several releases places no entry.
- **source** (``changelog + source`` or ``changelog + function``): one of the functions
  whose own instructions moved most, in the step's direction (MOVED_SHARE of the change or
  more; CPython's own C files only), lives in a source file the entry's text names: the
  file, its module (FILE_WORDS: ``Modules/_io/`` is the io module, ``bufferedreader``, ...)
  or the function itself. ``changelog + source`` when the tarballs of both sides are at
  hand and show that function's source changed (``csource``); ``changelog + function``
  when they are not at hand (not compared). A function whose source is the same on both
  sides places no entry.
- **ablation** (``changelog + ablation``): the op timed with the entry's knob set back
  reproduces the step (``ablation``; the entry speaks of the knob).

The candidates are taken best first by the ranking rule; the first that passes is named. When
none passes, nothing is named: the page says "no changelog entry matches" and what the data
does show (the functions that moved, the release range).

A control (``OP__control``: the op's loop and payload over data in memory, the code around
the I/O) is never given an I/O cause: no entry and no stated cause; its verdict says so and
what the data shows.

A cause the project states rather than finds (``changelog.PY3_CAUSE``: Python 3's io stack)
is stated only where its premise holds: the step is from 2.x, and the op's 2.7 side does
not already use the io module (IO_MODULE_ON_2X; the same C io stack on both sides would
make it no cause at all); "text mode decodes" is added only for text ops. Its class is
``API``: the suite's declared 2.7 API differs, which the op's own data shows.

Naming is not testing: ``cause_test`` says how the named cause was tested (an ablation that
reproduced the step, a bisect, the changed source, a discriminating counter, repetition and a
reproducer) or that it is untested, an ablation that did not reproduce the step as evidence
against it, and where the step is mostly its control's loop (the section below).
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from iomatrix import stats
from iomatrix.analysing import counts, csource, lifecycle
from iomatrix.analysing.changelog import (Candidate, PY3_CAUSE, StepWhy, _word_re,
                                          cached_tarballs, is_control, version_key)

# -- the evidence classes, as pages and data.csv name them --------------------------------

BISECT, SOURCE, FUNCTION, ABLATION, API = ("changelog + bisect", "changelog + source",
                                           "changelog + function", "changelog + ablation",
                                           "API")
NONE = "none"      # no candidate passed: the page says "no changelog entry matches"
NO_MATCH = "no changelog entry matches"
# A control's step (the op's loop and payload over data in memory) is never given an I/O cause.
CONTROL_SHOWS = "the code around the I/O (a control), not I/O: no I/O change is its cause"

# -- which API an op's 2.7 side uses ------------------------------------------------------

# The ops whose 2.7 side already goes through the io module (io.open: the same C io stack as
# 3.x), by suite: the op-name pattern (re.search) of those that do. textio opens every file
# with ctx.io_module.open (io.open on 2.7); iobench its text files (binary: ctx.open, the
# builtin file object); mmapio its text reads. Every other suite times the builtin open(),
# which on 2.x is the C stdio file object. Derived here from the suites' code until the
# suites declare it per op (issue 43: a per-op attribute of which API the 2.7 side uses).
IO_MODULE_ON_2X = {"textio": r".", "iobench": r"_text_", "mmapio": r"_text$"}


def io_module_on_2x(suite: str, op: str) -> bool:
    pattern = IO_MODULE_ON_2X.get(suite)
    return pattern is not None and re.search(pattern, op) is not None


def text_op(category: str, op: str) -> bool:
    """Whether the op reads or writes text (its category: read-text, write-text,
    text-memory, text-write; manyfiles reads text), not bytes or a map."""
    return "text" in str(category) or category == "manyfiles" or "textMode" in op


# -- source files and the words of an entry that name them --------------------------------

# (path pattern in CPython's tree, the words of an entry that name it). A word is matched
# in lower case at a word start, as changelog's family words are ("io." matches
# "io.DEFAULT_BUFFER_SIZE", not "audio."). A file no pattern matches is named only by its
# own name or by a function's.
FILE_WORDS = [
    (r"^Modules/_io/", "io module|io extension|:mod:`io`|io.|_io|_pyio|bufferedreader|"
                       "bufferedwriter|bufferedrandom|bufferediobase|textiowrapper|fileio|"
                       "rawiobase|bytesio|stringio|:func:`open`|open()|default_buffer_size"),
    (r"^Modules/mmapmodule\.c", "mmap"),
    (r"^Objects/stringlib/|^Objects/unicodeobject\.c", "unicode|utf-8|utf8|ascii|latin-1|"
                                                      "latin1|decoder|encoder|decoding|"
                                                      "encoding|fastsearch|string-searching|"
                                                      ":class:`str`|str.|str objects"),
    (r"^Objects/bytesobject\.c|^Objects/bytes_methods\.c|^Objects/bytearrayobject\.c",
     "bytes.|bytearray|:class:`bytes`|bytes objects|fastsearch|string-searching"),
    (r"^Modules/posixmodule\.c", ":mod:`os`|os.|posix"),
    (r"^Objects/memoryobject\.c", "memoryview"),
]
# Files whose functions run under every op and move with anything the Python code does (the
# eval loop, the allocator, dict and attribute lookups, calls): a function of theirs that
# moved tells where the time went, not which change moved it, and places no entry.
GENERIC_FILES = (r"^Python/ceval|^Python/bytecodes\.c|^Python/generated_cases|"
                 r"^Python/specialize\.c|^Objects/obmalloc\.c|^Objects/mimalloc/|"
                 r"^Objects/dictobject\.c|^Objects/object\.c|^Objects/call\.c|"
                 r"^Objects/typeobject\.c|^Objects/longobject\.c|^Python/errors\.c")
# Functions of other files that every op runs, as GENERIC_FILES' are: the interned names of C
# code's attribute and method lookups (_Py_IDENTIFIER, gone in 3.11) and str equality and
# hashing under every dict lookup. Their move is the interpreter's, not the op's machinery's:
# _PyUnicode_FromId (3.10 only) once named an isatty entry for 3.11's faster file opens.
GENERIC_FUNCTIONS = (r"^(_PyUnicode_FromId|_PyUnicode_EQ|_PyUnicode_Equal|unicode_eq|"
                     r"unicode_hash|unicode_compare_eq|PyUnicode_InternInPlace|"
                     r"_PyUnicode_InternInPlace|intern_common)$")
# A function kept on both sides counts as moved only where its own cost per entry changed by
# this much: one whose cost per entry stayed and whose entries changed was called more or
# less often, so what changed is its caller (its file places no entry; its caller, if it
# moved too, does).
PER_ENTRY_MOVE = 0.10
# A function counts as moved when its change is this share of the op's whole change of
# instructions, or more, and goes the step's way (a step 1.85x slower: functions that grew).
MOVED_SHARE = 0.02
MOVED_TOP = 12


def words_for_file(path: str) -> str:
    """The words of an entry that name ``path``'s module (FILE_WORDS), '' for none."""
    return "|".join(words for pattern, words in FILE_WORDS if re.search(pattern, path))


def names_source(text: str, path: str, names) -> str | None:
    """What in an entry's text names the file ``path`` or one of the functions ``names``
    (the word found), or None."""
    lower = str(text).lower()
    base = os.path.basename(path).lower()
    for word in [base] + [csource.bare_name(n).lower() for n in names if len(n) > 3]:
        if word and word in lower:
            return word
    words = words_for_file(path)
    if words:
        found = _file_word_re(words).search(lower)
        if found:
            return found.group(0)
    return None


@functools.lru_cache(maxsize=None)
def _file_word_re(words: str) -> re.Pattern:
    """A file's words (FILE_WORDS) at the start of a word that is not the tail of an
    identifier: "encoding" names the codecs in "the encoding", not in
    "os.device_encoding" (whose "_" the ranking's word start allows)."""
    return re.compile(r"(?<![a-z0-9_])(?:" + "|".join(map(re.escape, words.split("|"))) + ")")


@dataclass(frozen=True)
class Moved:
    """A function whose own instructions per call moved in a finding's step."""
    name: str
    path: str            # in CPython's tree: Modules/_io/bufferedio.c
    names: tuple         # as callgrind gave them, both sides
    a: float | None      # instructions per call of the op (None: not kept on that side)
    b: float | None
    calls_a: float | None   # times entered per call of the op
    calls_b: float | None
    changed: bool | None = None   # its source changed (tarballs of both sides), None: not compared
    share: float | None = None    # its change over the sum of the changes of every function
                                  # that moved the step's way (the instructions it added or
                                  # saved): what a discriminating counter reads

    def per_entry(self, side: str) -> float | None:
        value, calls = (self.a, self.calls_a) if side == "a" else (self.b, self.calls_b)
        return value / calls if value is not None and calls else None

    def words(self) -> str:
        """"buffered_iternext: 20 → 37 instructions an entry (7,862 entries a call); its
        source changed (Modules/_io/bufferedio.c)", plain text."""
        ea, eb = self.per_entry("a"), self.per_entry("b")
        if ea is not None and eb is not None:
            said = f"{self.name}: {ea:,.0f} → {eb:,.0f} instructions an entry"
            said += f" ({self.calls_b:,.0f} entries a call)" if self.calls_b else ""
        else:
            said = (f"{self.name}: {fmt_count(self.a)} → {fmt_count(self.b)} "
                    "instructions a call")
        source = {True: "its source changed", False: "its source is the same",
                  None: "source not compared"}[self.changed]
        return f"{said}; {source} ({self.path})"


def fmt_count(value) -> str:
    return "below what the counts keep" if value is None else f"{value:,.0f}"


def moved_functions(functions: dict, counted: list, op: str, a: str, b: str,
                    ratio: float, tarballs: tuple | None = None) -> list[Moved]:
    """The functions of CPython's tree whose own instructions per call moved most in the
    step's direction (MOVED_SHARE of the whole change or more, at most MOVED_TOP); [] when
    the op's instructions did not move beyond the counts' threshold (a step that moved
    system calls or the time alone has no function to show). ``tarballs``: (A's, B's)
    source tarballs, to say whether each function's source changed."""
    move = counts.count_move(counted, op, a, b) if counted else None
    if not functions or not move or move["instructions"] is None or \
            abs(move["instructions"]) <= counts.INSTRUCTIONS_MOVE:
        return []
    rows = counts.where_instructions_went(functions, op, a, b, top=None)
    total = sum(abs(r["change"]) for r in rows)
    sign = 1 if ratio > 1 else -1
    same_way = sum(r["change"] for r in rows if r["change"] * sign > 0)
    found = []
    for r in rows:
        path = csource.tree_path(r["file"])
        if path is None or not total or r["change"] * sign <= 0 or \
                abs(r["change"]) < MOVED_SHARE * total or re.search(GENERIC_FILES, path) \
                or re.search(GENERIC_FUNCTIONS, csource.bare_name(r["name"])):
            continue
        if r["a"] and r["b"] and r["calls_a"] and r["calls_b"]:
            ea, eb = r["a"] / r["calls_a"], r["b"] / r["calls_b"]
            if abs(eb - ea) < PER_ENTRY_MOVE * ea:
                continue
        names = tuple(dict.fromkeys([r["name"], *r["names"]["a"], *r["names"]["b"]]))
        changed = csource.function_changed(*tarballs, path, names) if tarballs else None
        found.append(Moved(r["name"], path, names, r["a"], r["b"], r["calls_a"], r["calls_b"],
                           changed, r["change"] / same_way))
        if len(found) >= MOVED_TOP:
            break
    return found


# -- bisects ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Placed:
    """Where a bisect of the op placed a step's change: between the timed releases
    ``before`` and ``after`` (exact versions), from run ``run_id``."""
    before: str
    after: str
    ratio: float
    run_id: str


def bisect_of(results_dir: Path | None, op: str, old: str, new: str, ratio: float) \
        -> Placed | None:
    """The step a bisect run of ``op`` (results_dir/bisect-OP-*) places the change in:
    the adjacent timed releases inside [OLD, NEW] whose step moved most in the finding's
    direction, significantly; None without such a run."""
    if results_dir is None or not Path(results_dir).is_dir():
        return None
    from iomatrix.analysing import analysis
    from iomatrix.storing import store
    lo, hi = version_key(old), version_key(new)
    if lo is None or hi is None:
        return None
    best = None
    prefix = f"bisect-{op}-"
    for run_dir in sorted(Path(results_dir).iterdir()):
        if not run_dir.name.startswith(prefix) or not (run_dir / "manifest.json").is_file():
            continue
        try:
            data = analysis.load_run(store.Run(run_dir.parent, run_dir.name))
        except Exception:          # a damaged bisect run places nothing; the report goes on
            continue
        means = analysis.process_means(data.frame)
        timed = []
        for series, info in data.manifest.get("interpreters", {}).items():
            version = version_key(str(info.get("version", "")))
            if version is not None and lo <= version <= hi and (series, op) in means \
                    and not info.get("aa_of"):
                timed.append((version, series))
        timed.sort()
        for (va, sa), (vb, sb) in zip(timed, timed[1:]):
            c = stats.compare(means[(sa, op)], means[(sb, op)], paired=True)
            if not c.significant or (c.ratio - 1) * (ratio - 1) <= 0:
                continue
            if best is None or abs(c.ratio - 1) > abs(best.ratio - 1):
                best = Placed(str(va), str(vb), c.ratio, run_dir.name)
    return best


def bisect_carries(placed: Placed | None, candidate: Candidate, changelogs: list) -> bool:
    """Whether the bisect's step ends at a release that carries the entry: its first release,
    or a release whose section in one of ``changelogs`` lists the same number."""
    if placed is None:
        return False
    after = version_key(placed.after)
    if version_key(candidate.entry.release) == after:
        return True
    return any(version_key(r.version) == after and
               any(e.number == candidate.entry.number for e in r.entries)
               for log in changelogs for r in log.releases)


# -- the verdict --------------------------------------------------------------------------

# -- the cause's test (issue 57) -----------------------------------------------------------

# Naming a change is not testing it. A named cause is *tested* by an ablation that reproduced
# the step, a bisect that placed it, the source of a function that moved (changed between
# both sides' tarballs), or a discriminating counter: the counts move where the cause says
# they must (COUNTER_SHARE of the step's instruction change, its way, in the functions the
# cause predicts: COUNTERS). A match of words alone is *untested* and says so: the API
# difference of a stated cause (PEP 3116), a function the entry names whose source was not
# compared. An ablation that did not reproduce the step is evidence against what it tested,
# said as such (``CauseTest.against``), never beside the cause as its support. A step that
# repeats in every pooled run while its counts do not move its way (comparisons.REPEATS) is
# tested by that repetition and an isolated reproducer that ran (REPRODUCERS).
ABLATION_TEST, BISECT_TEST, SOURCE_TEST, COUNTER_TEST, REPEAT_TEST = (
    "ablation", "bisect", "source", "counter", "repetition + reproducer")
UNTESTED = "untested"
COUNTER_SHARE = 0.25
# A row whose control's step is at least this share of the op's (controls.step's share, the
# same way) is mostly the loop around the I/O: its cause is that loop, not I/O.
LOOP_SHARE = 0.5
# The parts of the stated cause (changelog.PY3_CAUSE) and the functions each predicts the
# step's instructions grow in: (path in CPython's tree, function name), both re.search.
COUNTERS = {
    "text mode decodes": (r"^Objects/unicodeobject\.c|^Objects/stringlib/|"
                          r"^Modules/(clinic/)?_codecsmodule\.c|^Python/codecs\.c",
                          r"(?i)decode|encode|codec"),    # a write encodes
    "the io stack": (r"^Modules/_io/", r"."),
}


@dataclass(frozen=True)
class Reproducer:
    """A standalone script that times one step's mechanism alone, and what its run said."""
    op: str              # re.fullmatch on the op
    old: str             # the step's minor versions ("3.13", "3.14")
    new: str
    script: str          # in the repository
    mechanism: str       # what it times, plain text
    measured: str        # what its run said (commands and figures: the dated note); "" not run


# The reproducers that ran. read_allAtOnce_textMode 3.13.15 -> 3.14: slower in every pooled run
# while its instructions fell by 23% (3.14's UTF-8 decoder scans ASCII with
# find_first_nonascii, then copies it with memcpy: two passes where 3.13 made one).
REPRODUCERS = (
    Reproducer(r"read_allAtOnce_textMode", "3.13", "3.14", "docs/experiments/decode_ascii_314.py",
               "bytes.decode('utf-8') of 2,935,401 ASCII bytes, fresh processes",
               "3.13.15 212 us, 3.14.7 455 us, 2.15x (medians of 10 processes each, "
               "2026-12-05; docs/experiments/2026-12-05-cause-tests.md)"),
)


def reproducer_of(op: str, old: str, new: str) -> Reproducer | None:
    """The reproducer of ``op``'s step between exact versions OLD and NEW, or None."""
    keys = [version_key(v) for v in (old, new)]
    if None in keys:
        return None
    minors = [".".join(map(str, k.release[:2])) for k in keys]
    return next((r for r in REPRODUCERS if re.fullmatch(r.op, op) and
                 [r.old, r.new] == minors), None)


@dataclass(frozen=True)
class CauseTest:
    """How a finding's named cause was tested, or that it was not."""
    by: str              # ABLATION_TEST ... REPEAT_TEST, or UNTESTED
    words: str           # what tested it, or why it is untested (plain text)
    against: str = ""    # an ablation that did not reproduce the step: against what it tested
    loop_share: float | None = None   # its control's share of the step, LOOP_SHARE or more

    @property
    def tested(self) -> bool:
        return self.by != UNTESTED

    @property
    def loop(self) -> str:
        """Where the step is mostly its control's loop: that, in words; '' otherwise."""
        if self.loop_share is None:
            return ""
        return (f"{self.loop_share:.0%} of the change is its control's step: the loop around "
                "the I/O, not I/O")


def counter_words(verdict, moved: list) -> str | None:
    """The parts of a stated cause the counts bear out (COUNTERS: COUNTER_SHARE or more of
    the step's instruction change, its way, in the functions the part predicts), in words;
    None when none does."""
    said = []
    for part, (path, name) in COUNTERS.items():
        if part == "text mode decodes" and not verdict.text_decodes:
            continue
        hits = [m for m in moved if m.share is not None and re.search(path, m.path)
                and re.search(name, m.name)]
        share = sum(abs(m.share) for m in hits)
        if share >= COUNTER_SHARE:
            said.append(f"{part}: {share:.0%} of the step's instruction change its way in "
                        + ", ".join(m.name for m in hits[:3]) + (" …" if len(hits) > 3 else ""))
    return "the counts bear it out (" + "; ".join(said) + ")" if said else None


def cause_test(verdict, ablation=None, repeated=None, loop_share: float | None = None,
               reproducer: Reproducer | None = None) -> CauseTest:
    """The test of ``verdict``'s cause (the rule above). ``ablation``: the step's
    ablation.Outcome or None; ``repeated``: comparisons.Repeated where the step is
    REPEATS, else None; ``loop_share``: its control's share of the step (controls.step);
    ``reproducer``: reproducer_of the step."""
    against = ""
    if ablation is not None and not ablation.failed and not ablation.reproduces:
        # every knob's result, each said against what it tested
        against = ablation.words.replace("not reproduced by the ablation",
                                         "not supported by the ablation")
    loop = loop_share if loop_share is not None and loop_share >= LOOP_SHARE else None
    found = functools.partial(CauseTest, against=against, loop_share=loop)
    if verdict.evidence == ABLATION:
        return found(ABLATION_TEST, verdict.detail)
    if verdict.evidence == BISECT:
        return found(BISECT_TEST, verdict.detail)
    if verdict.evidence == SOURCE:
        return found(SOURCE_TEST, verdict.detail)
    if ablation is not None and ablation.reproduces and verdict.cause is not None and \
            ablation.knob.entry in verdict.cause[0]:
        return found(ABLATION_TEST, ablation.words)
    if repeated is not None:
        said = repeated.words()
        if reproducer is not None and reproducer.measured:
            return found(REPEAT_TEST, f"{said}; alone ({reproducer.script}: "
                                      f"{reproducer.mechanism}): {reproducer.measured}")
        return found(UNTESTED, f"{said}; no isolated reproducer has run")
    if verdict.cause is not None:
        counted = counter_words(verdict, verdict.moved)
        if counted:
            return found(COUNTER_TEST, counted)
        return found(UNTESTED, "the API differs (the suite's declared 2.7 API), and the "
                               "counts do not place the step in the io stack or a decoder")
    if verdict.evidence == FUNCTION:
        return found(UNTESTED, "a function the entry names moved; its source was not compared")
    return found(UNTESTED, "no change named")


@dataclass
class Verdict:
    """What a page names as a finding's likely change, and on what evidence."""
    candidate: Candidate | None = None   # the entry that passed the rule
    cause: tuple | None = None           # a stated cause (PY3_CAUSE), its premise checked
    evidence: str = NONE                 # BISECT, SOURCE, FUNCTION, ABLATION, API or NONE
    detail: str = ""                     # what agreed, in words (plain text)
    shows: str = ""                      # without a named change: what the data shows
    moved: list = field(default_factory=list)   # Moved, the step's functions
    ablation: str = ""                   # the ablation's result beside the finding, if run
    text_decodes: bool = False           # with PY3_CAUSE: the op is a text op
    test: CauseTest | None = None        # how the cause was tested (cause_test)

    @property
    def named(self) -> bool:
        return self.candidate is not None or self.cause is not None


def judge(why: StepWhy, *, suite: str, op: str, category: str, old: str, new: str,
          moved: list, placed: Placed | None = None, ablation=None,
          changelogs: list = (), uncompared: str | None = None, repeated=None,
          loop_share: float | None = None) -> Verdict:
    """The acceptance rule of the module docstring, and the named cause's test
    (cause_test). ``why``: the step's ranked candidates; ``old``/``new``: the sides' exact
    versions; ``moved``: moved_functions; ``placed``: bisect_of; ``ablation``: the
    ablation's outcome (analysing.ablation.Outcome) or None; ``changelogs``: those whose
    sections tell backports (bisect_carries); ``uncompared``: why the step's instructions
    were not compared (instructions_uncompared), or None; ``repeated``, ``loop_share``:
    cause_test's."""
    verdict = named(why, suite=suite, op=op, category=category, old=old, new=new, moved=moved,
                    placed=placed, ablation=ablation, changelogs=changelogs,
                    uncompared=uncompared)
    if not is_control(op):
        verdict.test = cause_test(verdict, ablation, repeated, loop_share,
                                  reproducer_of(op, old, new))
    return verdict


def named(why: StepWhy, *, suite: str, op: str, category: str, old: str, new: str,
          moved: list, placed: Placed | None = None, ablation=None,
          changelogs: list = (), uncompared: str | None = None) -> Verdict:
    """What the acceptance rule names (judge's arguments)."""
    verdict = Verdict(moved=moved)
    if ablation is not None:
        verdict.ablation = ablation.words
    if is_control(op):
        # the code around the I/O (the op's loop over data in memory): no I/O change, no
        # stated io-stack cause, is its cause; what moved is said as for any step
        verdict.shows = (f"{CONTROL_SHOWS}; "
                         + shows(moved, old, new, placed, dataclasses.replace(why, cause=None),
                                 uncompared))
        return verdict
    if why.cause is not None and not io_module_on_2x(suite, op):
        verdict.cause, verdict.evidence = why.cause, API
        verdict.text_decodes = text_op(category, op)
        verdict.detail = ("2.7 times the builtin file object here, 3.x the io stack"
                          + ("; 3.x's text mode decodes" if verdict.text_decodes else ""))
        return verdict
    for candidate in why.candidates:
        text = candidate.entry.text
        if bisect_carries(placed, candidate, changelogs):
            verdict.candidate, verdict.evidence = candidate, BISECT
            verdict.detail = (f"a bisect places the change between {placed.before} and "
                              f"{placed.after} ({placed.ratio:.2f}; run {placed.run_id})")
            return verdict
        # A function names where a change is, not when it came: where releases of the step
        # are outside the changelogs (a step from 2.x: 3.0 to 3.4) or the entry may already
        # be in OLD (a later patch release of NEW's branch, which the maintained branch of
        # OLD may have had as a backport: OLD's changelog is not at hand to tell), only a
        # bisect or an ablation places it.
        by_function = why.cause is None and not maybe_backported(candidate, old, new, why)
        for m in (moved if by_function else []):
            if m.changed is False:
                continue
            word = names_source(text, m.path, m.names)
            if word is not None:
                verdict.candidate = candidate
                verdict.evidence = SOURCE if m.changed else FUNCTION
                verdict.detail = f"{m.words()}; the entry names it ({word!r})"
                return verdict
        if ablation is not None and ablation.reproduces and ablation.speaks_of(text):
            verdict.candidate, verdict.evidence = candidate, ABLATION
            verdict.detail = ablation.words
            return verdict
    verdict.shows = shows(moved, old, new, placed, why, uncompared)
    return verdict


def maybe_backported(candidate: Candidate, old: str, new: str, why: StepWhy) -> bool:
    """Whether the entry entered in a patch release of NEW's branch (3.14.3) while OLD is of
    an older branch and OLD's own changelog was not at hand to leave its backports out
    (changelog.candidates' ``before``): it may already be in OLD."""
    entered, lo, hi = (version_key(v) for v in (candidate.entry.release, old, new))
    if entered is None or lo is None or hi is None:
        return False
    return entered.release[:2] == hi.release[:2] and len(entered.release) > 2 and \
        entered.release[2] > 0 and lo.release[:2] < hi.release[:2] and not why.old_known \
        and not past_bugfixes(candidate.entry, lo.release[:2])


def past_bugfixes(entry, minor: tuple) -> bool:
    """Whether ``entry`` came out when ``minor``'s branch no longer took bugfix releases
    (security fixes only, or its end: lifecycle_of on the entry's release date) and
    is no security fix: no release of that branch carries it (PEP 602), so it cannot be a
    backport already in OLD. gh-144380 (3.13.12, 2026-02-03, Library) is not in any 3.12.x:
    3.12 has had security fixes only since 2025-04."""
    if entry.section == "Security" or not entry.date:
        return False
    try:
        day = datetime.date.fromisoformat(entry.date)
    except ValueError:
        return False
    return lifecycle.lifecycle_of(minor, day).phase in (lifecycle.SECURITY,
                                                         lifecycle.END_OF_LIFE)


def shows(moved: list, old: str, new: str, placed: Placed | None, why: StepWhy,
          uncompared: str | None = None) -> str:
    """What the data shows where no entry passed: the release range (a bisect's, narrower),
    the functions that moved, or why none can be named (``uncompared``)."""
    if placed is not None:
        said = f"the change is between {placed.before} and {placed.after} (bisect)"
    elif old and new:
        said = f"the change is between {old} and {new}"
    else:
        said = "the sides' exact versions are unknown"
    if why.cause is not None:
        said += " (Misc/NEWS begins at 3.5.0a1; the 2.7 side uses the io module too)"
    if moved:
        said += "; moved most: " + "; ".join(m.words() for m in moved[:3])
    elif uncompared:
        said += f"; no function named ({uncompared})"
    else:
        said += "; no function's instructions moved beyond the counts' threshold"
    return said


def instructions_uncompared(counted: list, op: str, a: str, b: str) -> str | None:
    """Why ``op``'s instructions were not compared across the step ``a`` -> ``b`` (not
    counted on a side: PyPy, a run with ``--counters`` without instructions, no valgrind;
    counted by different methods), or None when they were."""
    move = counts.count_move(counted, op, a, b) if counted else None
    if move is None:
        return "the op was not counted on both sides"
    if move["instructions"] is None:
        return move["note"] or "its instructions were not compared"
    return None


# -- from a report's analysis -------------------------------------------------------------

def source_tarballs(old: str, new: str, directory: Path | None = None) -> tuple | None:
    """(OLD's, NEW's) source tarballs in the cache, None unless both are at hand."""
    at_hand = {version_key(v): p for v, p in cached_tarballs(directory).items()}
    a, b = at_hand.get(version_key(old)), at_hand.get(version_key(new))
    return (a, b) if a is not None and b is not None else None


def verdict_for(an, f) -> Verdict:
    """The verdict of finding ``f`` of Analysis ``an`` (computed once per finding)."""
    cache = an.__dict__.setdefault("_verdicts", {})
    key = (f.op, f.a, f.b)
    if key not in cache:
        cache[key] = _verdict(an, f)
    return cache[key]


def _verdict(an, f) -> Verdict:
    from iomatrix.analysing import ablation as ablations, controls
    from iomatrix.analysing.analysis import series_info
    old = series_info(an.data, f.a).get("version") or ""
    new = series_info(an.data, f.b).get("version") or ""
    why = an.candidates_of(f)
    tarballs = source_tarballs(old, new, an.why.directory) if old and new else None
    moved = moved_functions(an.functions, an.counted, f.op, f.a, f.b, f.comparison.ratio,
                            tarballs)
    uncompared = instructions_uncompared(an.counted, f.op, f.a, f.b)
    results_dir = an.data.run.path.parent if an.data.run else None
    placed = bisect_of(results_dir, f.op, old, new, f.comparison.ratio) if old and new else None
    logs = [log for log in (an.why.changelog(new),) if log is not None] if new else []
    control = controls.step(an, f.op, f.a, f.b)
    share = control.share if control is not None and control.verdict != controls.MISSING \
        and control.subtracted else None
    return judge(why, suite=an.suite_of.get(f.op, ""), op=f.op,
                 category=an.category_of.get(f.op, ""), old=old, new=new, moved=moved,
                 placed=placed, ablation=ablations.outcome(an, f), changelogs=logs,
                 uncompared=uncompared, repeated=an.repeated_of(f), loop_share=share)
