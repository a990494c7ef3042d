"""Why: the upstream changes that may explain a release step, ranked from CPython's changelogs.

The changelogs themselves (``Misc/NEWS`` parsed, the model of its releases and entries, the
tarballs they come from, the release sections a step spans) are in ``news``; every name
there stays importable from here. Here is which entries may explain an op's step, and
the candidates of a run's release steps for the pages (``Why``).

Ranking (``candidates``): an entry is a candidate only if it matches at least one word of
the op's families (FAMILIES: op-name patterns to CPython components and words, each word
weighted by how specific it is). Its score is

    section weight (SECTION_WEIGHTS; sections outside it are never candidates)
    + the sum of the weights of the distinct family words it matches
    + PERF_BONUS if it speaks of speed or buffers (PERF_WORDS), and QUANTIFIED_BONUS more
      if it also gives a number ("by ~49%", "up to 3 times")
    - NOISE_PENALTY if it speaks of crashes, leaks, errors or platforms the runs do not
      use (NOISE_WORDS), at most once
    - OTHER_MODULE_PENALTY if the modules it names (":mod:`gzip`", ":class:`tempfile.X`")
      are all others than those the ops run through (OWN_MODULES)

with ties broken by release order (the earliest first: a change enters once, fixes follow).
One issue number is one candidate (its best-scoring entry). The text of an entry is raw and
untrusted: pages render it only through ``reporting.markdown.md`` and link only the gh/bpo
URL built from the number (``news.url_of``).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from iomatrix.measuring.selection import CONTROL_SUFFIX

# Misc/NEWS, its model and its sources live in news.py; their names stay importable from here,
# where the pages, the changelog command and the tests have always found them.
from iomatrix.analysing.news import (  # noqa: F401
    BPO_URL, DATE_RE, FORMAT, GH_URL, HEADING_RE, HEADING_VERSION_RE, ISSUE_RE,
    MAX_ENTRY_CHARS, MAX_NEWS_BYTES, NUMBER_RE, PRE, SHORT_TIMEOUT, TARBALL_RE, Changelog, Entry,
    Release, Say, branch, cached_tarballs, changelog_for, coverage_note, covering_changelog,
    heading_version, load_tarball_changelog, news_of_tarball, parse_news, release_date_of,
    releases_between, tarball_version, tarballs_dir, url_of, version_key, warn)


@dataclass(frozen=True)
class Candidate:
    entry: Entry
    score: float
    matched: tuple       # the family words that matched


# -- the map from ops to CPython's parts --------------------------------------------------

# (family, op pattern (re.search on the op name), {component: weight}). A component is one
# word or several alternatives ("a|b"), counted once however many of them an entry names (an
# entry listing BufferedReader, BufferedWriter and BufferedRandom names one component). A
# word is matched on the entry's text in lower case at a word start (so "mmap" matches
# "mmap.find", not "unmmap"); the weight says how specific it is: 4-5 names the very
# machinery, 2-3 a component, 1 a word many entries use. An op takes the components of
# every family its name matches (the larger weight where two give one component).
FAMILIES = [
    # The C and Python io stack: every op that goes through open(), its buffers and its raw
    # file; the buffer size decides the system calls a block or a seek+read makes. Turning
    # the module's types into heap types (PEP 687) changed which fast paths their type
    # checks take, hence "isolate".
    # manyfiles opens each of its files with open() in text mode: the io stack and its
    # text layer, as lutz2009's text modes (its TEXT_API_27).
    ("io stack", r"^(read_|write_|chunks_|iobench_|textio_|mmapio_.*_read|mmapio_slices_seek|"
                 r"copies_(read|readinto|manual)|manyfiles_)",
     {"default_buffer_size": 5, "st_blksize|blksize": 4, "buffer size": 3,
      "modules/_io|_io": 3, ":mod:`io`|io module": 4,
      "bufferedreader|bufferedwriter|bufferedrandom|buffered": 4, "fileio": 3,
      ":func:`open`|open()": 2.5, "buffering": 2.5, "readinto": 2, "rawiobase": 3,
      "_pyio": 1.5, "isolate|:pep:`687`|heap type": 3, "system call|syscall": 2}),
    # Seeks on a buffered file: seek() drops or keeps the buffer, tell() computes positions.
    ("seek", r"seek",
     {"seek": 2.5, "tell": 1.5, "lseek": 2.5, "small read": 3}),
    # Line iteration: for line in f goes through readline (C) and the eval loop's FOR_ITER.
    ("lines", r"(read_byLines|iterate_lines|read_lines|readline)",
     {"line iteration|iterating over lines|iterating over a file": 5,
      "readline": 3, "readlines": 2, "iternext|__next__": 3, "iterat": 1.5,
      "for_iter|specializ|eval loop": 1.5, "memchr": 2, "line": 1}),
    # Whole-file and block reads of growing results: the allocator's resize and arenas.
    ("allocator", r"(allAtOnce|read_64KiB|chunks_read|readmodify)",
     {"obmalloc|pymalloc|mimalloc": 3, "malloc|realloc|arena": 2, "_pybytes_resize": 3,
      "bytes object": 1.5, "memory allocat|preallocat": 2}),
    # Writes: flushing, the write buffer, writelines.
    ("writes", r"(^write_|_write|readmodify|copies_)",
     {"flush": 2, "write()": 1.5, "writelines": 2, "write buffer|write buffering": 3,
      "write": 1}),
    # The text layer: TextIOWrapper, decoders and encoders, newline translation.
    ("text", r"(textMode|^textio_|_text_|iobench_.*text|^manyfiles_)",
     {"textiowrapper": 4, "text layer": 3, "incrementaldecoder|incrementalnewlinedecoder": 3,
      "decoder|encoder": 2, "decode|encode": 1.5, "utf-8|utf8": 2, "ascii": 2,
      "latin-1|latin1": 2, "utf-16": 2, "codec": 2, "universal newline|newline": 2,
      "surrogateescape": 2, "unicode": 1}),
    # mmap: the module's find, slicing, seek and readline on the map.
    ("mmap", r"^mmapio_.*mmap|^mmapio_(find|regex|slices_mmap)",
     {"mmap": 4, "fastsearch|string-searching|string searching|two-way": 3,
      "find|rfind": 1.5, "slic": 1}),
    # bytes.find on read() data, the twin of mmap.find.
    ("bytes search", r"^mmapio_(find|regex)",
     {"bytes.find": 4, "fastsearch|string-searching|string searching|two-way": 3,
      "find|rfind": 1.5, "memchr": 2}),
    # shutil: copyfileobj's buffer (a read/write loop: no sendfile on any platform) ...
    ("shutil copyfileobj", r"^copies_copyfileobj",
     {"copyfileobj": 5, "shutil": 4, "buffer size": 3, "system call|syscall": 2,
      "copy": 1}),
    # ... and copyfile's fast paths (sendfile, copy_file_range).
    ("shutil copyfile", r"^copies_(copyfile(?!obj)|sendfile|copy_file_range)",
     {"copyfile": 4, "shutil": 4, "sendfile|copy_file_range|fast-copy": 4,
      "system call|syscall": 2, "copy": 1}),
    # os/posix: the raw calls behind many small files and the copies' loops.
    ("os", r"^(manyfiles_|copies_)",
     {"os.open|os.read|os.write|os.fstat|fstat": 2, "scandir": 2, "o_cloexec": 2,
      "isatty|ioctl": 2, "posix": 1.5, "stat": 1, "close": 1}),
    # Threads, asyncio and processes of the concurrent manyfiles ops.
    ("concurrency", r"^manyfiles_(?!read_seq|write_seq)",
     {"threadpoolexecutor|concurrent.futures": 3, "asyncio": 2,
      "to_thread|run_in_executor": 3, "multiprocessing": 2, "thread": 1.5, "fork": 1.5,
      "gil": 2}),
    # print and sys.stdout.
    ("print", r"print|stdout",
     {"print": 2, "sys.stdout": 3, "line_buffering|write_through": 3}),
]

SECTION_WEIGHTS = {"Library": 1.0, "Core and Builtins": 1.0, "Core_and_Builtins": 1.0,
                   "Performance": 1.5, "Security": 0.3, "C API": 0.3, "Build": 0.3}
PERF_WORDS = ("faster", "slower", "performance", "speed", "optimiz", "regression", "buffer")
PERF_BONUS = 1.0
# A measured speed change ("by ~49%", "up to 3 times", "2x faster"): about speed for sure.
# It starts only where a run of digits starts: from inside one, "150,000 digits and no %"
# was tried from each of them again (quadratic); it matches where the old form did.
QUANTIFIED_RE = re.compile(r"(?<![0-9])[0-9]+(?:\.[0-9]+)?\s*(?:%|x\b|times)")
QUANTIFIED_BONUS = 1.0
NOISE_WORDS = ("crash", "segfault", "leak", "refleak", "race", "deadlock", "error message",
               "raise", "raising", "exception", "deprecat", "windows", "macos", "free-threaded",
               "warning", "pickl", "docstring", "typo")
NOISE_PENALTY = 2.0
# The modules an op's work runs through; an entry whose named modules (":mod:`gzip`",
# ":class:`tempfile.X`") are all others is about another module's use of the io stack.
OWN_MODULES = {"io", "_io", "_pyio", "mmap", "shutil", "os", "posix", "codecs", "threading",
               "asyncio", "concurrent", "multiprocessing", "sys", "builtins", "unicode",
               "bytes", "str", "bytearray", "memoryview"}
# A module is named by :mod:`NAME` or as the first part of a dotted object
# (":class:`gzip.GzipFile`"); a bare class or function (":class:`TextIOWrapper`",
# ":meth:`read`") names no module: counted as one, it once sank gh-91526 ("Stop calling
# os.device_encoding() in :class:`TextIOWrapper`") below the op's own words.
OTHER_MODULE_RE = re.compile(r":mod:`[~!]?([a-z_][a-z0-9_]*)"
                             r"|:(?:class|func|meth|attr|data|exc):`[~!]?([a-z_][a-z0-9_]*)\.")
OTHER_MODULE_PENALTY = 2.0


def is_control(op: str) -> bool:
    """A control: the op's loop and payload over data in memory (measuring.selection), the
    code around the I/O. No family is its machinery and no I/O change is its cause."""
    return str(op).endswith(CONTROL_SUFFIX)


def words_for(op: str, suite: str = "") -> dict:
    """{word: weight} of every family ``op`` belongs to; {} for a control (is_control),
    whose step no I/O entry explains."""
    if is_control(op):
        return {}
    words = {}
    for _, pattern, family in FAMILIES:
        if re.search(pattern, op) or (suite and re.search(pattern, f"{suite}_")):
            for word, weight in family.items():
                words[word] = max(weight, words.get(word, 0))
    return words


@functools.lru_cache(maxsize=None)
def _word_re(words: str) -> re.Pattern:
    """One pattern for a component's alternatives ("a|b|c"), each at a word start."""
    return re.compile(r"(?<![a-z0-9])(?:" + "|".join(map(re.escape, words.split("|"))) + ")")


def _has(text: str, word: str) -> bool:
    return _word_re(word).search(text) is not None


def _matching(text: str, component: str) -> str | None:
    """The alternative of a component ("a|b|c") found first in ``text``."""
    match = _word_re(component).search(text)
    return match.group(0) if match else None


@functools.lru_cache(maxsize=None)
def _lower(text: str) -> str:
    return text.lower()


def score_entry(entry: Entry, words: dict) -> tuple[float, tuple]:
    """The ranking rule of the module docstring: (score, matched words); 0 when no word of
    the op's families matches or the section is not one a candidate comes from."""
    weight = SECTION_WEIGHTS.get(entry.section)
    if weight is None:
        return 0.0, ()
    text = _lower(entry.text)
    if not _word_re("|".join(words)).search(text):      # no component at all: the common case
        return 0.0, ()
    found = {component: word for component in words
             if (word := _matching(text, component)) is not None}
    if not found:
        return 0.0, ()
    matched = tuple(found.values())
    score = weight + sum(words[component] for component in found)
    if any(_has(text, word) for word in PERF_WORDS):
        score += PERF_BONUS
        if QUANTIFIED_RE.search(text):
            score += QUANTIFIED_BONUS
    if any(_has(text.replace("non-windows", ""), word) for word in NOISE_WORDS):
        score -= NOISE_PENALTY
    named = {name for found in OTHER_MODULE_RE.findall(text) for name in found
             if name and (not name.startswith("_") or name in OWN_MODULES)}
    named = {name for name in named if name not in ("open", "print", "len", "repr")}
    if named and not named & OWN_MODULES:
        score -= OTHER_MODULE_PENALTY
    return round(score, 2), matched


def _already_in(changelog: Changelog | None, old_version: str) -> frozenset:
    """(number, text) of the entries in sections at or before OLD: changes OLD had."""
    old = version_key(old_version)
    if changelog is None or old is None:
        return frozenset()
    # Kept on the changelog: a report asks for the same few (every entry of a branch's NEWS,
    # some 10 ms each) for every op family of every step.
    cache = changelog.__dict__.setdefault("_already_in", {})
    if old_version not in cache:
        cache[old_version] = frozenset((e.number, e.text[:80]) for r in changelog.releases
                                       if version_key(r.version) <= old for e in r.entries)
    return cache[old_version]


def candidates(changelog: Changelog, op: str, suite: str, old_version: str,
               new_version: str, limit: int = 5, before: Changelog | None = None) \
        -> list[Candidate]:
    """The entries of the releases in (OLD, NEW] that touch ``op``'s machinery, best first
    (the module docstring's rule); ``before``: a changelog of OLD's branch whose sections at
    or before OLD hold changes OLD already had (backports), which are left out."""
    words = words_for(op, suite)
    inside = releases_between(changelog, old_version, new_version)
    had = _already_in(changelog, old_version) | _already_in(before, old_version)
    order = {r.version: i for i, r in enumerate(reversed(inside))}   # oldest first
    best = {}
    for release in inside:
        for entry in release.entries:
            if (entry.number, entry.text[:80]) in had:
                continue
            score, matched = score_entry(entry, words)
            if score <= 0:
                continue
            kept = best.get(entry.number)
            if kept is None or (score, -order[entry.release]) > \
                    (kept.score, -order[kept.entry.release]):
                best[entry.number] = Candidate(entry, score, matched)
    ranked = sorted(best.values(), key=lambda c: (-c.score, order[c.entry.release],
                                                  c.entry.number))
    return ranked[:limit]


# -- a later change that may undo a step -------------------------------------------------

# An entry after a step that may undo it speaks of speed in one of these words (PERF_WORDS
# without "buffer" and "slower": a later entry about buffers, or one that reports a slowdown
# it caused, is no sign of a step undone).
LATER_FIX_WORDS = ("faster", "performance", "regression", "speed", "optimiz")


@dataclass(frozen=True)
class LaterFix:
    """An entry of a release after a step that the ranking rule matches for the op and that
    speaks of speed: ``candidate`` as it entered first (the earliest release), ``also`` the
    other releases whose sections list the same number (its backports and forward ports)."""
    candidate: Candidate
    also: tuple


def newest_changelogs(from_version: str, directory: Path | None = None,
                      say: Say = warn) -> list:
    """The changelog of the newest tarball at hand of every branch from ``from_version``'s
    on (cache only): together they hold every later release section the cache knows of
    (a branch's NEWS lists its own patch releases, not those of other branches)."""
    key = version_key(from_version)
    if key is None:
        return []
    newest = {}
    for version, path in cached_tarballs(directory).items():
        v = version_key(version)
        if v is not None and v.release[:2] >= key.release[:2]:
            if v.release[:2] not in newest or v > newest[v.release[:2]][0]:
                newest[v.release[:2]] = (v, path)
    logs = [load_tarball_changelog(path, say) for _, (_, path) in sorted(newest.items())]
    return [log for log in logs if log is not None]


@functools.lru_cache(maxsize=None)
def _speaks_of_speed(text: str) -> bool:
    """Whether an entry says one of LATER_FIX_WORDS. Once per entry's text: a report asks
    later_fixes for every op and step, each over every later section of every branch's
    changelog (tens of thousands of entries), and this check does not depend on the op."""
    return _word_re("|".join(LATER_FIX_WORDS)).search(_lower(text)) is not None


def later_speed_entries(changelogs: list, new_version: str) -> list:
    """(release, entry) of the sections after NEW in ``changelogs`` whose entries speak of
    speed (LATER_FIX_WORDS) and that NEW did not already have, in the order of the logs.
    The same for every op: Why.later_of walks every later section of every branch's
    changelog (tens of thousands of entries) once per NEW, not once per op family."""
    new = version_key(new_version)
    had = set()
    for log in changelogs:
        had |= _already_in(log, new_version)
    return [(release, entry) for log in changelogs for release in log.releases
            if version_key(release.version) > new for entry in release.entries
            if (entry.number, entry.text[:80]) not in had and _speaks_of_speed(entry.text)]


def later_fixes(changelogs: list, op: str, suite: str, new_version: str, limit: int = 2,
                entries: list | None = None) -> list[LaterFix]:
    """The entries of releases after NEW (any branch, NEW's own later patch releases
    included) that ``candidates``' rule scores above 0 for ``op`` and that say
    LATER_FIX_WORDS, best first (score, then the earliest release): changes that may undo
    the step, found by a stated rule, not a proof. Entries NEW already had (its own or an
    earlier section of any of ``changelogs``) are left out. ``entries``: later_speed_entries
    of the same changelogs and NEW, when the caller has them."""
    new = version_key(new_version)
    if new is None:
        return []
    words = words_for(op, suite)
    best, releases = {}, {}
    if entries is None:
        entries = later_speed_entries(changelogs, new_version)
    for release, entry in entries:
        score, matched = score_entry(entry, words)
        if score <= 0:
            continue
        releases.setdefault(entry.number, {})[version_key(release.version)] = release
        kept = best.get(entry.number)
        if kept is None or score > kept.score:
            best[entry.number] = Candidate(entry, score, matched)
    found = []
    for number, candidate in best.items():
        ordered = [releases[number][v] for v in sorted(releases[number])]
        first = ordered[0]
        if version_key(candidate.entry.release) != version_key(first.version):
            # the earliest release it entered: that section's own entry
            entry = next(e for e in first.entries if e.number == number)
            candidate = Candidate(entry, candidate.score, candidate.matched)
        found.append(LaterFix(candidate, tuple(r.version for r in ordered[1:])))
    found.sort(key=lambda fix: (-fix.candidate.score,
                                version_key(fix.candidate.entry.release),
                                fix.candidate.entry.number))
    return found[:limit]


# -- for the pages: the candidates of a run's release steps --------------------------------

# A step from 2.x to 3.x crosses Python 3.0's new io stack (PEP 3116: open() returns io
# objects, text mode decodes; rewritten in C for 3.1), which no entry of Misc/NEWS (from
# 3.5.0a1) names: such a step's likely cause is that, stated by the project.
PY3_CAUSE = ("Python 3's io stack (PEP 3116)", "https://peps.python.org/pep-3116/", "3.0")


@dataclass
class StepWhy:
    candidates: list           # Candidate, best first
    note: str                  # where they come from, or why there are none
    old_date: str | None = None
    new_date: str | None = None
    cause: tuple | None = None  # PY3_CAUSE for a step from 2.x, named before any entry
    # Whether a changelog of OLD's branch that reaches OLD was at hand, so that the backports
    # OLD already had are left out (candidates' ``before``); evidence.maybe_backported.
    old_known: bool = False

    @property
    def top(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None


def no_changelog_note(version: str) -> str:
    return (f"no changelog at hand for {version} (nox -s provision or "
            f"nox -s changelog -- {version} fetches one)")


class Why:
    """The candidates of release steps between labelled interpreters, from the cache only
    (no download: a report stays offline and fast). ``versions``: {label: exact version}."""

    def __init__(self, versions: dict, directory: Path | None = None, limit: int = 5):
        self.versions = {k: str(v) for k, v in versions.items() if v}
        self.directory = directory
        self.limit = limit
        self._logs = {}
        self._steps = {}
        self._newest = {}

    def changelog(self, version: str) -> Changelog | None:
        if version not in self._logs:
            self._logs[version] = covering_changelog(version, self.directory)
        return self._logs[version]

    def date(self, version: str | None) -> str | None:
        if not version:
            return None
        log = self.changelog(version)
        return log.release_date(version) if log else None

    def later_of(self, op: str, suite: str, b: str, limit: int = 2) -> list[LaterFix]:
        """The later changes that may undo a step to ``b`` (later_fixes), from the newest
        changelog at hand of each branch from ``b``'s on; [] without ``b``'s exact version."""
        new = self.versions.get(b)
        if not new or version_key(new) is None:
            return []
        key = (tuple(sorted(words_for(op, suite).items())), "later", b, limit)
        if key not in self._steps:
            if new not in self._newest:
                logs = newest_changelogs(new, self.directory)
                self._newest[new] = (logs, later_speed_entries(logs, new))
            logs, entries = self._newest[new]
            self._steps[key] = later_fixes(logs, op, suite, new, limit, entries)
        return self._steps[key]

    def of(self, op: str, suite: str, a: str, b: str) -> StepWhy:
        # Ops of the same families share their candidates on one step: computed once (a
        # control apart: it has no families and no stated cause).
        key = (tuple(sorted(words_for(op, suite).items())), is_control(op), a, b)
        if key not in self._steps:
            self._steps[key] = self._compute(op, suite, a, b)
        return self._steps[key]

    def _compute(self, op, suite, a, b) -> StepWhy:
        old, new = self.versions.get(a), self.versions.get(b)
        if not old or not new or version_key(old) is None or version_key(new) is None:
            return StepWhy([], "no changelog: a side's exact version is unknown")
        if version_key(old) >= version_key(new):
            return StepWhy([], f"no changelog: {old} is not older than {new}")
        log = self.changelog(new)
        if log is None:
            return StepWhy([], no_changelog_note(new), self.date(old))
        before = self.changelog(old) if version_key(old).major >= 3 else None
        found = candidates(log, op, suite, old, new, self.limit, before=before)
        # a control's step is the code around the I/O: never Python 3's io stack
        cause = PY3_CAUSE if version_key(old).major < 3 <= version_key(new).major and \
            not is_control(op) else None
        old_known = before is not None and branch(before.version or old) == branch(old) and \
            any(version_key(r.version) == version_key(old) for r in before.releases)
        return StepWhy(found, coverage_note(log, old, new), self.date(old),
                       log.release_date(new), cause, old_known)
