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
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from packaging.version import InvalidVersion, Version

from iomatrix.interpreters import cache, sources

FORMAT = 1                     # of the JSON cache beside a tarball
MAX_NEWS_BYTES = 32 << 20      # Misc/NEWS of 3.14.7 is 2.6 MB; a bigger member is not NEWS
SHORT_TIMEOUT = 10             # python.org, offline machines give up fast
GH_URL = "https://github.com/python/cpython/issues/{}"
BPO_URL = "https://bugs.python.org/issue{}"
DEBIAN_POOL = "http://deb.debian.org/debian/pool/main/p/{package}/{package}_{upstream}.orig.tar.xz"

Say = Callable[[str], None]


# -- the model ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    number: str          # "gh-117151" or "bpo-33671"
    url: str             # built from the number, never taken from the text
    release: str         # the release it entered, "3.14.0a6"
    date: str | None     # that release's date, "2025-03-14"
    section: str         # "Library", "Core and Builtins", ...
    text: str            # raw and unescaped: escape when rendering


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
        return cls([Release(r["version"], r["date"], [Entry(**e) for e in r["entries"]])
                    for r in data["releases"]], list(data["unparsed"]), data["source"],
                   data.get("version", ""))


# -- versions ----------------------------------------------------------------------------

PRE = {"alpha": "a", "beta": "b", "release candidate": "rc", "a": "a", "b": "b", "rc": "rc"}
HEADING_RE = re.compile(r"What's New in Python (.*?)\??\s*$", re.IGNORECASE)
HEADING_VERSION_RE = re.compile(
    r"(\d+\.\d+(?:\.\d+)?)\s*(?:(alpha|beta|release candidate|rc|a|b)\s*(\d+)|final)?\s*$",
    re.IGNORECASE)


def version_key(text: str) -> Version | None:
    """A version for ordering ("3.14.0a6" < "3.14.0" < "3.14.7"), None when it is none."""
    try:
        return Version(str(text))
    except InvalidVersion:
        return None


def heading_version(title: str) -> str | None:
    """ "3.14.0 alpha 6" -> "3.14.0a6", "3.13.15 final" -> "3.13.15", else None."""
    match = HEADING_VERSION_RE.fullmatch(title.strip())
    if match is None:
        return None
    release, kind, serial = match.groups()
    if release.count(".") == 1:
        release += ".0"
    return release + (PRE[kind.lower()] + serial if kind else "")


def branch(version: str) -> tuple:
    key = version_key(version)
    return key.release[:2] if key else ()


# -- parsing -----------------------------------------------------------------------------

NUMBER_RE = re.compile(r"^- (?:(gh|bpo)-(\d+)|Issue #(\d+))(?:\s*,\s*(?:gh|bpo)-\d+)*\s*:\s*")
DATE_RE = re.compile(r"^\*?Release date:\s*(\d{4}-\d{2}-\d{2})\s*\*?\s*$")


def url_of(number: str) -> str:
    kind, _, digits = number.partition("-")
    return (GH_URL if kind == "gh" else BPO_URL).format(int(digits))


def _underline(line: str, char: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= 3 and set(stripped) == {char}


def parse_news(text: str, source: str = "") -> Changelog:
    """The releases of a Misc/NEWS text, newest first; never raises on bad text: a heading
    that names no version, an entry without a gh-/bpo- number or outside any release is
    counted in ``unparsed`` (with where it stood and its first words)."""
    lines = str(text).splitlines()
    releases, unparsed = [], []
    release: Release | None = None
    skipping = None          # the title of a heading that did not parse: its entries go too
    section = ""
    entry: list | None = None

    def close_entry():
        nonlocal entry
        if entry is None:
            return
        body = " ".join(part.strip() for part in entry if part.strip())
        entry = None
        where = release.version if release else (f"under {skipping!r}" if skipping
                                                 else "before any release")
        match = NUMBER_RE.match(body)
        if release is None or match is None:
            unparsed.append(f"{where} {section or '(no section)'}: {body[:70]}")
            return
        kind, digits, issue = match.groups()
        number = f"{kind}-{int(digits)}" if kind else f"bpo-{int(issue)}"
        release.entries.append(Entry(number, url_of(number), release.version, release.date,
                                     section, body[match.end():]))

    k = 0
    while k < len(lines):
        line = lines[k]
        following = lines[k + 1] if k + 1 < len(lines) else ""
        heading = HEADING_RE.match(line.strip()) if not line.startswith((" ", "-")) else None
        if heading and _underline(following, "="):
            close_entry()
            version = heading_version(heading.group(1))
            if version is None or version_key(version) is None:
                unparsed.append(f"heading {line.strip()[:70]!r}: no version")
                release, skipping = None, line.strip()[:70]
            else:
                release, skipping = Release(version, None, []), None
                releases.append(release)
            section = ""
            k += 2
            continue
        if line.strip() and not line.startswith((" ", "-", "*")) and _underline(following, "-"):
            close_entry()
            section = line.strip()
            k += 2
            continue
        if _underline(line, "+") or _underline(line, "="):
            close_entry()
            k += 1
            continue
        date = DATE_RE.match(line.strip())
        if line.strip().lower().startswith(("*release date", "release date")):
            close_entry()
            if release is not None and date:
                release.date = date.group(1)
            elif release is not None and "X" not in line:
                unparsed.append(f"{release.version}: release date {line.strip()[:40]!r}")
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

def news_of_tarball(path) -> str | None:
    """``<top>/Misc/NEWS`` of a source tarball, read as a stream (nothing else is extracted);
    None when the tarball has none, cannot be read, or the member is implausibly large."""
    try:
        with tarfile.open(path, "r|*") as archive:
            for member in archive:
                parts = member.name.split("/")
                if len(parts) == 3 and parts[1:] == ["Misc", "NEWS"] and member.isfile():
                    if member.size > MAX_NEWS_BYTES:
                        return None
                    handle = archive.extractfile(member)
                    return handle.read(MAX_NEWS_BYTES).decode("utf-8", "replace") \
                        if handle else None
    except (OSError, tarfile.TarError, EOFError):
        return None
    return None


TARBALL_RE = re.compile(r"(?:Python-(?P<a>[0-9][0-9.a-z]*)\.tar\.xz"
                        r"|python\d+\.\d+_(?P<b>[0-9][0-9.~a-z]*)\.orig\.tar\.xz)")


def tarballs_dir() -> Path:
    return cache.cache_root() / "tarballs"


def tarball_version(name: str) -> str | None:
    """The version a cached tarball's name says: Python-3.15.0rc2.tar.xz or
    python3.15_3.15.0~rc2.orig.tar.xz -> "3.15.0rc2"."""
    match = TARBALL_RE.fullmatch(name)
    if match is None:
        return None
    version = (match["a"] or match["b"]).replace("~", "")
    return version if version_key(version) is not None else None


def cached_tarballs(directory: Path | None = None) -> dict:
    """{version: path} of the source tarballs in the cache's tarballs/ directory."""
    directory = Path(directory) if directory is not None else tarballs_dir()
    found = {}
    if directory.is_dir():
        for path in sorted(directory.iterdir()):
            version = tarball_version(path.name)
            if version and path.is_file():
                found.setdefault(version, path)
    return found


def _json_path(tarball: Path) -> Path:
    return tarball.with_name(tarball.name + ".news.json")


_LOADED: dict = {}     # (path, mtime) -> Changelog: one parse per tarball and process


def load_tarball_changelog(tarball: Path, say: Say = print) -> Changelog | None:
    """The parsed NEWS of a tarball, from its JSON beside it when that is newer than the
    tarball, else read and parsed (and the JSON written); None when it has no NEWS."""
    tarball = Path(tarball)
    try:
        key = (str(tarball), tarball.stat().st_mtime)
    except OSError:
        return None
    if key not in _LOADED:
        _LOADED[key] = _load_tarball_changelog(tarball, say)
    return _LOADED[key]


def _load_tarball_changelog(tarball: Path, say: Say) -> Changelog | None:
    cache = _json_path(tarball)
    try:
        if cache.is_file() and cache.stat().st_mtime >= tarball.stat().st_mtime:
            data = json.loads(cache.read_text())
            if data.get("format") == FORMAT:
                return Changelog.from_json(data)
    except (OSError, ValueError, KeyError, TypeError):
        pass                      # a damaged cache is read again from the tarball
    text = news_of_tarball(tarball)
    if text is None:
        say(f"{tarball.name}: no readable Misc/NEWS")
        return None
    log = parse_news(text, str(tarball))
    log.version = tarball_version(tarball.name) or ""
    if not log.releases:
        say(f"{tarball.name}: Misc/NEWS has no release section that parses")
        return None
    part = cache.with_name(cache.name + f".part-{os.getpid()}")
    try:
        part.write_text(json.dumps(log.to_json()))
        os.replace(part, cache)
    except OSError:
        part.unlink(missing_ok=True)    # a read-only cache: parse again next time
    return log


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
                  directory: Path | None = None) -> Changelog | None:
    """The changelog of exactly ``version``: its tarball in the cache (provisioned builds
    leave theirs there), else fetched into it (``fetch``); None, with the reason said, when
    none can be had."""
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
    return load_tarball_changelog(path, say)


def release_date_of(version: str, directory: Path | None = None) -> str | None:
    """A release's date from the changelogs at hand (cache only); None when none holds it
    (2.x, or a patch release whose branch's tarball is not at hand)."""
    found = covering_changelog(version, directory) if version else None
    return found.release_date(version) if found is not None else None


def covering_changelog(version: str, directory: Path | None = None,
                       say: Say = lambda text: None) -> Changelog | None:
    """From the cache only (no download): the changelog that holds most of ``version``'s
    history: its own tarball's, else the oldest later tarball of its branch, else the oldest
    tarball of a later minor (its main line only)."""
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
