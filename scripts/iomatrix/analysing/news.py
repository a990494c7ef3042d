"""CPython's changelogs: ``Misc/NEWS`` parsed, and where a release's changelog comes from.

Every CPython source tarball carries ``Misc/NEWS``: one section per release ("What's New in
Python 3.14.0 alpha 6?", with its ``*Release date: 2025-03-14*``), one subsection per part
of CPython ("Library", "Core and Builtins", ...), one entry per change ("- gh-117151: ...",
older ones "- bpo-33671: ..."). A 3.x.y tarball's NEWS holds its own branch's patch releases
and the main line's alphas (up to the first beta, when the branch forks) of every minor back
to 3.5.0a1 (and 3.5.x/3.6.x patch sections, which were merged into the main line then).

Which entries a step OLD -> NEW can owe to: those of the release sections inside (OLD, NEW] in
version order (``releases_between``), read from the NEWS of NEW's own tarball when one is at
hand, else from a later tarball of NEW's branch, else from any later minor's tarball, which
covers NEW's main line only (X.Y.0a1 to X.Y.0b1; the coverage note says what is missing).
So a step 3.12.1 -> 3.13.15 spans 3.13.0a1 ... 3.13.0 ... 3.13.15. Fixes that were backported
to 3.12 after 3.12.1 appear in 3.13's sections and rightly count (3.12.1 lacks them); those
backported to 3.12.1 or earlier also appear in 3.13.0aN but were already in OLD: when a
changelog of OLD's branch is at hand, an entry whose number and text appear in a section at
or before OLD there is dropped (``changelog.candidates(..., before=...)``). A step from 2.7 crosses 3.0
to 3.4 (Python 3's new io stack), which NEWS does not cover (Misc/HISTORY does, without
numbers for most entries): the note says so.

Ranking the entries a step may owe to is ``changelog``'s (which re-exports these names).

Tarballs and the JSON cache beside them are untrusted input (docs/methodology.md, "When and
why"): the cache has one schema (``NewsCache``) and only the commands that fetch write it;
a link is built from a bounded issue number alone (``url_of``); every expression over NEWS
text is linear and reads lines and entries cut to a stated length; a tarball is read
through ``sources.read_member``, its headers bounded before tarfile reads what they announce.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Callable, Literal, Optional

from packaging.version import InvalidVersion, Version
from pydantic import Field, ValidationError, model_validator

from iomatrix import cli
from iomatrix.interpreters import cache, sources
from iomatrix.storing import store
from iomatrix.storing.fields import Ours

FORMAT = 1                     # of the JSON cache beside a tarball
MAX_NEWS_BYTES = 32 << 20      # Misc/NEWS of 3.14.7 is 2.6 MB; a bigger member is not NEWS
MAX_CACHE_BYTES = 64 << 20     # its JSON cache is about 1.5 times that
SHORT_TIMEOUT = 10             # python.org, offline machines give up fast
GH_URL = "https://github.com/python/cpython/issues/{}"
BPO_URL = "https://bugs.python.org/issue{}"
# NEWS text is untrusted (a tarball or cache anyone can put in the cache directory): every
# regular expression over it is linear, and what they read is cut to these lengths first.
# The longest real entry is ~3,000 characters, a heading or a date line under 60.
MAX_ENTRY_CHARS = 20_000       # an entry's text, cut there
MAX_LINE_CHARS = 200           # a heading, a section title or a date line: longer is none
MAX_UNPARSED = 10_000          # lines that did not parse, kept to name them
# An issue number: gh-N or bpo-N, N of at most 7 digits (gh is at 140,000 in 2025, bpo
# ended at 47,000); a longer "number" is not an issue and never a candidate.
MAX_ISSUE_DIGITS = 7
ISSUE_RE = re.compile(r"(gh|bpo)-([1-9][0-9]{0,%d})" % (MAX_ISSUE_DIGITS - 1))

Say = Callable[[str], None]


def warn(text: str) -> None:
    """One line on stderr: what a reading tool (report, compare) says of a changelog it
    could not use, a damaged cache or a tarball refused, and goes on without it."""
    print(cli.one_line(f"changelog: {text}"), file=sys.stderr)


# -- the model ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    number: str          # "gh-117151" or "bpo-33671": ISSUE_RE, digits bounded
    release: str         # the release it entered, "3.14.0a6"
    date: str | None     # that release's date, "2025-03-14"
    section: str         # "Library", "Core and Builtins", ...
    text: str            # raw and unescaped: escape when rendering

    @property
    def url(self) -> str:
        """The issue's page, built from the number's digits only ("" for no number)."""
        return url_of(self.number) or ""


@dataclass
class Release:
    version: str         # "3.14.0a6", "3.13.15"
    date: str | None
    entries: list


@dataclass
class Changelog:
    releases: list       # Release, newest first as in the file
    unparsed: list       # "3.6.0a1 Library: - Fix failure in ..." : what did not parse
    source: str          # the tarball or URL it came from
    version: str = ""    # the tarball's version, when known

    def release_date(self, version) -> str | None:
        key = version_key(str(version))
        for release in self.releases:
            if key is not None and version_key(release.version) == key:
                return release.date
        return None

    def to_json(self) -> dict:
        return {"format": FORMAT, "source": self.source, "version": self.version,
                "unparsed": self.unparsed,
                "releases": [{"version": r.version, "date": r.date,
                              "entries": [dataclasses.asdict(e) for e in r.entries]}
                             for r in self.releases]}

    @classmethod
    def from_json(cls, data: dict) -> "Changelog":
        """The changelog of a cache document; ValueError unless NewsCache validates it
        (an entry's number, version, date and lengths, its release's own)."""
        check_cache(data)
        return cls([Release(r["version"], r["date"],
                            [Entry(e["number"], e["release"], e["date"], e["section"], e["text"])
                             for e in r["entries"]])
                    for r in data["releases"]], list(data["unparsed"]), data["source"],
                   data.get("version", ""))


# -- the cache's schema ------------------------------------------------------------------

# The JSON beside a tarball is read like a run's files: untrusted, one schema (pydantic, as
# storing/schema.py), a document that fails it named in one line and parsed again from the
# tarball. Its URL fields (older versions wrote one per entry) are never read: a link is
# built from the number.
ReleaseVersion = Annotated[str, Field(pattern=r"^[0-9]{1,4}\.[0-9]{1,4}\.[0-9]{1,4}"
                                              r"((a|b|rc)[0-9]{1,3})?$", max_length=24)]
ReleaseDate = Optional[Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]]


class CachedEntry(Ours):
    number: Annotated[str, Field(pattern=f"^{ISSUE_RE.pattern}$")] = Field(
        description="gh-N or bpo-N, N of at most 7 digits")
    url: Optional[Annotated[str, Field(max_length=200)]] = Field(
        None, description="written by older versions; never read")
    release: ReleaseVersion
    date: ReleaseDate
    section: Annotated[str, Field(max_length=MAX_LINE_CHARS)]
    text: Annotated[str, Field(max_length=MAX_ENTRY_CHARS)]


class CachedRelease(Ours):
    version: ReleaseVersion
    date: ReleaseDate
    entries: list[CachedEntry]

    @model_validator(mode="after")
    def entries_are_its_own(self):
        if any(e.release != self.version or e.date != self.date for e in self.entries):
            raise ValueError(f"an entry of {self.version} names another release or date")
        return self


class NewsCache(Ours):
    """``<tarball>.news.json``: a tarball's Misc/NEWS parsed (Changelog.to_json)."""
    format: Literal[1]
    source: Annotated[str, Field(max_length=4096)]
    version: Annotated[str, Field(max_length=24)] = ""
    unparsed: Annotated[list[Annotated[str, Field(max_length=400)]],
                        Field(max_length=MAX_UNPARSED)]
    releases: list[CachedRelease]


def check_cache(data) -> None:
    """A ValueError naming the field (never its value) unless ``data`` is a NewsCache."""
    if not isinstance(data, dict):
        raise store.NotAResult(f"a JSON object was expected, not {type(data).__name__}")
    try:
        NewsCache.model_validate(data)
    except ValidationError as exc:
        # the field and the rule, not the value: a warning line never echoes what a
        # hostile cache holds
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(the document)"
        raise ValueError(f"field {where}: {first['msg']}") from None


# -- versions ----------------------------------------------------------------------------

PRE = {"alpha": "a", "beta": "b", "release candidate": "rc", "a": "a", "b": "b", "rc": "rc"}
# Over lines cut to MAX_LINE_CHARS; neither backtracks more than linearly (no two adjacent
# quantifiers that can take the same characters, as "(.*?)\s*$" could).
HEADING_RE = re.compile(r"What's New in Python (.*)", re.IGNORECASE)
HEADING_VERSION_RE = re.compile(
    r"([0-9]{1,4}\.[0-9]{1,4}(?:\.[0-9]{1,4})?)[ \t]*"
    r"(?:(alpha|beta|release candidate|rc|a|b)[ \t]*([0-9]{1,3})|final)?",
    re.IGNORECASE)


def version_key(text: str) -> Version | None:
    """A version for ordering ("3.14.0a6" < "3.14.0" < "3.14.7"), None when it is none."""
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def heading_version(title: str) -> str | None:
    """ "3.14.0 alpha 6" -> "3.14.0a6", "3.13.15 final" -> "3.13.15", else None."""
    match = HEADING_VERSION_RE.fullmatch(title.strip()[:MAX_LINE_CHARS].rstrip())
    if match is None:
        return None
    release, kind, serial = match.groups()
    if release.count(".") == 1:
        release += ".0"
    return release + (PRE[kind.lower()] + str(int(serial)) if kind else "")


def heading_title(line: str) -> str | None:
    """The title of a "What's New in Python 3.14.0 alpha 6?" line ("3.14.0 alpha 6"), None
    for another line (or one longer than MAX_LINE_CHARS, which no heading is)."""
    line = line.strip()
    if len(line) > MAX_LINE_CHARS:
        return None
    match = HEADING_RE.match(line)
    if match is None:
        return None
    title = match.group(1).rstrip()
    return title[:-1].rstrip() if title.endswith("?") else title


def branch(version: str) -> tuple:
    key = version_key(version)
    return key.release[:2] if key else ()


# -- parsing -----------------------------------------------------------------------------

# An entry's first words: "- gh-117151: ", "- gh-1, gh-2: ", "- Issue #33671: ". Digits
# bounded (MAX_ISSUE_DIGITS) and not followed by more; every part meets a fixed character
# before the next quantifier, so a failing match backtracks linearly at most.
NUMBER_RE = re.compile(r"- (?:(gh|bpo)-([0-9]{1,7})|Issue #([0-9]{1,7}))(?![0-9])"
                       r"(?:[ \t]*,[ \t]*(?:gh|bpo)-[0-9]{1,7}(?![0-9]))*[ \t]*:[ \t]*")
DATE_RE = re.compile(r"\*?Release date:[ \t]*([0-9]{4}-[0-9]{2}-[0-9]{2})[ \t]*\*?")


def url_of(number: str) -> str | None:
    """https://github.com/python/cpython/issues/N for gh-N, https://bugs.python.org/issueN
    for bpo-N: made of the digits only; None for what is not such a number."""
    match = ISSUE_RE.fullmatch(str(number))
    if match is None:
        return None
    return (GH_URL if match[1] == "gh" else BPO_URL).format(int(match[2]))


def _underline(line: str, char: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and set(stripped) == {char}


def parse_news(text: str, source: str = "") -> Changelog:
    """The releases of a Misc/NEWS text, newest first; never raises on bad text: a heading
    that names no version, an entry without a gh-/bpo- number or outside any release is
    counted in ``unparsed`` (with where it stood and its first words)."""
    lines = str(text).splitlines()
    releases: list = []
    unparsed: list = []
    release: Release | None = None
    skipping = None          # the title of a heading that did not parse: its entries go too
    section = ""
    entry: list | None = None

    def note(text: str):
        if len(unparsed) < MAX_UNPARSED:
            unparsed.append(text[:300])

    def close_entry():
        nonlocal entry
        if entry is None:
            return
        # cut first: every expression below reads at most MAX_ENTRY_CHARS
        body = " ".join(part.strip() for part in entry if part.strip())[:MAX_ENTRY_CHARS]
        entry = None
        where = release.version if release else (f"under {skipping!r}" if skipping
                                                 else "before any release")
        match = NUMBER_RE.match(body)
        if release is None or match is None:
            note(f"{where} {section or '(no section)'}: {body[:70]}")
            return
        kind, digits, issue = match.groups()
        number = f"{kind}-{int(digits)}" if kind else f"bpo-{int(issue)}"
        if url_of(number) is None:       # gh-0: not an issue
            note(f"{where} {section or '(no section)'}: {body[:70]}")
            return
        release.entries.append(Entry(number, release.version, release.date, section,
                                     body[match.end():]))

    k = 0
    while k < len(lines):
        line = lines[k]
        following = lines[k + 1] if k + 1 < len(lines) else ""
        title = heading_title(line) if not line.startswith((" ", "-")) else None
        if title is not None and _underline(following, "="):
            close_entry()
            version = heading_version(title)
            if version is None or version_key(version) is None:
                note(f"heading {line.strip()[:70]!r}: no version")
                release, skipping = None, line.strip()[:70]
            else:
                release, skipping = Release(version, None, []), None
                releases.append(release)
            section = ""
            k += 2
            continue
        if line.strip() and not line.startswith((" ", "-", "*")) and _underline(following, "-"):
            close_entry()
            section = line.strip()[:MAX_LINE_CHARS]
            k += 2
            continue
        if _underline(line, "+") or _underline(line, "="):
            close_entry()
            k += 1
            continue
        stripped = line.strip()
        if stripped.lower().startswith(("*release date", "release date")):
            close_entry()
            date = DATE_RE.fullmatch(stripped) if len(stripped) <= MAX_LINE_CHARS else None
            if release is not None and date:
                release.date = date.group(1)
            elif release is not None and "X" not in line:
                note(f"{release.version}: release date {stripped[:40]!r}")
            k += 1
            continue
        if line.startswith("- "):
            close_entry()
            entry = [line]
        elif entry is not None and (line.startswith(" ") or not line.strip()):
            entry.append(line)
        elif line.strip():
            close_entry()     # prose between entries ("There were no changes ...")
        k += 1
    close_entry()
    for r in releases:      # an entry's date is its release's, known once the section is read
        r.entries = [dataclasses.replace(e, date=r.date) for e in r.entries]
    return Changelog(releases, unparsed, source)


# -- where a changelog comes from ---------------------------------------------------------

def _is_news(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 3 and parts[1:] == ["Misc", "NEWS"]


def news_of_tarball(path, say: Say = lambda text: None) -> str | None:
    """``<top>/Misc/NEWS`` of a source tarball, read as a stream (nothing else is extracted),
    every header on the way held to sources.read_member's bounds (a member over 64 MiB, a
    long-name or pax header over 8 KiB, more than 1 GiB or 100,000 members before NEWS, a
    NEWS over MAX_NEWS_BYTES: refused from the header, before its data is read); None, with
    the reason said, when the tarball has none, cannot be read or is refused."""
    try:
        data = sources.read_member(Path(path), _is_news, MAX_NEWS_BYTES)
    except sources.TAR_ERRORS as exc:
        say(f"{Path(path).name}: no readable Misc/NEWS (refused: "
            f"{cli.one_line(str(exc))[:200] or type(exc).__name__})")
        return None
    if data is None:
        say(f"{Path(path).name}: no readable Misc/NEWS")
        return None
    return data.decode("utf-8", "replace")


TARBALL_RE = re.compile(r"(?:Python-(?P<a>[0-9][0-9.a-z]*)\.tar\.xz"
                        r"|python\d+\.\d+_(?P<b>[0-9][0-9.~a-z]*)\.orig\.tar\.xz)")


def tarballs_dir() -> Path:
    """The cache's tarballs/; cache.BadCache (exit 2) when it or the root is no directory."""
    return cache.cache_directory("tarballs")


def tarball_version(name: str) -> str | None:
    """The version a cached tarball's name says: Python-3.15.0rc2.tar.xz or
    python3.15_3.15.0~rc2.orig.tar.xz -> "3.15.0rc2"."""
    match = TARBALL_RE.fullmatch(name)
    if match is None:
        return None
    version = (match["a"] or match["b"]).replace("~", "")
    return version if version_key(version) is not None else None


def cached_tarballs(directory: Path | None = None) -> dict:
    """{version: path} of the source tarballs in the cache's tarballs/ directory (regular
    files, or links to one: a tarball the user put there); none, said once, when the cache
    is no directory or cannot be listed (the report and compare go on without)."""
    try:
        directory = Path(directory) if directory is not None else tarballs_dir()
        paths = sorted(directory.iterdir()) if directory.is_dir() else []
    except (cache.BadCache, OSError) as exc:
        _say_once(f"no changelog at hand: {getattr(exc, 'strerror', None) or exc}")
        return {}
    found = {}
    for path in paths:
        version = tarball_version(path.name)
        if version and path.is_file():
            found.setdefault(version, path)
    return found


@functools.lru_cache(maxsize=None)
def _say_once(text: str) -> None:
    warn(text)


def _json_path(tarball: Path) -> Path:
    return tarball.with_name(tarball.name + ".news.json")


_LOADED: dict = {}     # (path, mtime) -> [Changelog or None, whether the JSON holds it]


def load_tarball_changelog(tarball: Path, say: Say = print, write: bool = False) \
        -> Changelog | None:
    """The parsed NEWS of a tarball: from its JSON beside it when that is newer than the
    tarball and valid (NewsCache), else read and parsed from the tarball; None when it has
    none. A JSON that is damaged or foreign is named in one line and not used. Only with
    ``write`` (the changelog command, bisect: the commands that fetch) is the JSON written;
    the report and compare only read the cache. Once per tarball and process."""
    tarball = Path(tarball)
    try:
        key = (str(tarball), tarball.stat().st_mtime)
    except OSError:
        return None
    if key not in _LOADED:
        _LOADED[key] = list(_load_tarball_changelog(tarball, say))
    log, kept = _LOADED[key]
    if write and log is not None and not kept:
        _LOADED[key][1] = _write_cache(tarball, log)
    return log


def keep_parsed() -> int:
    """Write the JSON beside every tarball whose NEWS this process parsed from the tarball
    (load_tarball_changelog without ``write``); how many were written. The main command's
    changelog step calls it: it parses the tarballs the report will read (covering_changelog),
    and without the JSON the report parsed each again, a pass over its whole .tar.xz stream
    (2-3 s of CPU each here; 3.13.15's and 3.15.0rc2's in every main command)."""
    written = 0
    for key, state in _LOADED.items():
        log, kept = state
        if log is not None and not kept:
            state[1] = _write_cache(Path(key[0]), log)
            written += state[1]
    return written


def read_cache(path: Path) -> Changelog:
    """A tarball's JSON cache, read as every cache file (cache.read_json: a regular file of
    at most MAX_CACHE_BYTES, JSON nested at most store.MAX_DEPTH), valid NewsCache;
    ValueError (cache.BadCacheEntry among them) naming what is wrong otherwise."""
    data = cache.read_json(path, MAX_CACHE_BYTES)
    if data is None:
        raise ValueError("removed while it was read")
    return Changelog.from_json(data)


def _load_tarball_changelog(tarball: Path, say: Say) -> tuple:
    cache = _json_path(tarball)
    try:
        if cache.exists() and cache.stat().st_mtime >= tarball.stat().st_mtime:
            return read_cache(cache), True
    except (OSError, ValueError, RecursionError) as exc:  # named, then read from the tarball
        say(f"{cache.name}: not a valid changelog cache ({str(exc)[:200]}); "
            "read from the tarball instead")
    text = news_of_tarball(tarball, say)
    if text is None:
        return None, False
    log = parse_news(text, str(tarball))
    log.version = tarball_version(tarball.name) or ""
    if not log.releases:
        say(f"{tarball.name}: Misc/NEWS has no release section that parses")
        return None, False
    return log, False


def _write_cache(tarball: Path, log: Changelog) -> bool:
    """Write the JSON beside the tarball (a part file, then rename); False when it cannot
    be written (a read-only cache: parsed again next time)."""
    cache = _json_path(tarball)
    part = cache.with_name(cache.name + f".part-{os.getpid()}")
    try:
        part.write_text(json.dumps(log.to_json()))
        os.replace(part, cache)
        return True
    except OSError:
        part.unlink(missing_ok=True)
        return False


def _fetch(version: str, tarballs: Path, say: Say) -> Path | None:
    """Debian's pool (apt's downloader, its .dsc beside it for provision's checksum), then
    python.org with a short timeout; None (having said why) when neither has it."""
    try:
        wanted = sources.parse_version(version)
    except sources.UsageError as exc:
        say(str(exc))
        return None
    try:
        return sources.debian_fetch(wanted, tarballs, say)
    except sources.ProvisionError as exc:
        say(f"Debian's pool: {str(exc).splitlines()[0]}")
    try:
        return sources.download(wanted.official_url, tarballs / wanted.tarball_names[0], say,
                                timeout=SHORT_TIMEOUT)
    except sources.ProvisionError as exc:
        say(f"python.org: {str(exc).split('. ')[0]}")
    return None


def changelog_for(version: str, say: Say = print, fetch: bool = True,
                  directory: Path | None = None, write: bool = True) -> Changelog | None:
    """The changelog of exactly ``version``: its tarball in the cache (provisioned builds
    leave theirs there), else fetched into it (``fetch``), its parsed NEWS cached beside it
    (``write``); None, with the reason said, when none can be had."""
    directory = Path(directory) if directory is not None else tarballs_dir()
    key = version_key(version)
    if key is None:
        say(f"{version!r} is not a version")
        return None
    path = next((p for v, p in cached_tarballs(directory).items() if version_key(v) == key),
                None)
    if path is None and fetch:
        path = _fetch(version, directory, say)
    if path is None:
        say(f"no changelog for {version}: no tarball in {directory}"
            + ("" if fetch else " (not fetched)"))
        return None
    return load_tarball_changelog(path, say, write=write)


def release_date_of(version: str, directory: Path | None = None) -> str | None:
    """A release's date from the changelogs at hand (cache only); None when none holds it
    (2.x, or a patch release whose branch's tarball is not at hand)."""
    found = covering_changelog(version, directory) if version else None
    return found.release_date(version) if found is not None else None


def covering_changelog(version: str, directory: Path | None = None,
                       say: Say = warn) -> Changelog | None:
    """From the cache only (no download, nothing written): the changelog that holds most of
    ``version``'s history: its own tarball's, else the oldest later tarball of its branch,
    else the oldest tarball of a later minor (its main line only). What could not be read
    is said (``warn``: one line on stderr) and skipped."""
    key = version_key(version)
    if key is None:
        return None
    at_hand = sorted(((version_key(v), p) for v, p in cached_tarballs(directory).items()),
                     key=lambda item: item[0])
    same = [p for v, p in at_hand if v.release[:2] == key.release[:2] and v >= key]
    later = [p for v, p in at_hand if v.release[:2] > key.release[:2]]
    for path in same + later:
        log = load_tarball_changelog(path, say)
        if log is not None:
            return log
    return None


# -- ranges ------------------------------------------------------------------------------

def releases_between(changelog: Changelog, old_version: str, new_version: str) -> list:
    """The release sections with OLD < version <= NEW, newest first (as in the file)."""
    old, new = version_key(old_version), version_key(new_version)
    if old is None or new is None:
        return []
    return [r for r in changelog.releases if old < version_key(r.version) <= new]


def coverage_note(changelog: Changelog, old_version: str, new_version: str) -> str:
    """Which part of (OLD, NEW] the changelog holds, in words."""
    inside = releases_between(changelog, old_version, new_version)
    name = changelog.version or Path(changelog.source).name
    if not inside:
        return f"the changelog of {name} has no release between {old_version} and {new_version}"
    first, last = inside[-1].version, inside[0].version
    note = f"{len(inside)} release sections ({first} to {last}) of the changelog of {name}"
    if version_key(last) < version_key(new_version):
        note += (f"; the releases after {last} up to {new_version} are only in a "
                 f"{'.'.join(map(str, branch(new_version)))} tarball")
    if version_key(old_version) and version_key(old_version).major < 3:
        note += "; Python 3.0 to 3.4 (the new io stack) is not in Misc/NEWS"
    return note
