"""The newest releases this machine lacks and can obtain: ``nox -s provision`` with no
VERSION (or ``--newest``); ``--list`` prints the plan without building.

For each minor version from the oldest 3.x the machine has on, the newest release any
source offers (pre-releases count where a minor has no final release yet: 3.15.0rc2):

- the cache's ``tarballs/`` (``Python-X.tar.xz`` and Debian's ``python3.Y_X.orig.tar.xz``);
- apt's source index (``apt-cache showsrc python3.Y``: what the deb-src entries list);
- the Debian pool of each archive apt's own entries name (``sources.debian_mirrors``: no
  mirror is written here): its directory listing where the mirror serves one, else each
  candidate orig tarball asked for by name (HEAD requests through apt's proxy; see
  ``probe_pool``);
- python.org's ``/ftp/python/`` listing, when the machine is online.

A release the machine has (any CPython of that version, of the kind asked for) is left
alone; one already built in the cache is reused by ``provision.build``, never rebuilt.
A minor version above the newest the machine has that no source offers is named as
one that could not be obtained.

Beside the newest release of the newest stable minor version (3.14.7 while 3.15 has only
release candidates) the plan puts its twins (``TWIN_KINDS``, left out with ``--no-twins``):
its free-threaded build (3.14.7t) and its PGO+LTO build (3.14.7-pgo, the ``release``
recipe), each reused where the cache or the machine already has it.
"""
from __future__ import annotations

import dataclasses
import re
import tempfile
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iomatrix.interpreters import cache, discovery, sources
from iomatrix.interpreters.sources import Version, parse_version

PYTHON_ORG = "https://www.python.org/ftp/python/"
LISTING_TIMEOUT = 10
# The free-threaded build exists from 3.13 on.
FREE_THREADED_SINCE = (3, 13)
# The twins of the newest release of the newest stable minor version, planned beside its
# plain (lineage) build unless --no-twins: (kind, free-threaded, recipe). The shipped
# kind of build (python.org's and distributions' PGO+LTO, static) and the free-threaded
# one, so the report can say whether a release step's finding holds in them.
TWIN_KINDS = (("free-threaded", True, cache.DEFAULT_RECIPE), ("PGO+LTO", False, "release"))

_ORIG_RE = re.compile(r"python(?P<series>3\.[0-9]+)_(?P<upstream>[0-9.]+(?:~(?:a|b|rc)[0-9]+)?)"
                      r"\.orig\.tar\.xz")
_OFFICIAL_RE = re.compile(r"Python-(?P<version>[0-9]+\.[0-9]+\.[0-9]+(?:(?:a|b|rc)[0-9]+)?)"
                          r"\.tar\.xz")
_DIR_RE = re.compile(r'href="(?P<release>3\.[0-9]+\.[0-9]+)/"')


@dataclasses.dataclass
class Offer:
    version: Version
    where: str  # "the cache's tarballs/", "apt's deb-src index", "Debian's pool", "python.org"


@dataclasses.dataclass
class Step:
    series: str
    action: str  # "build", "have", "none"
    version: Version | None = None
    where: str = ""
    note: str = ""
    recipe: str = cache.DEFAULT_RECIPE  # a key of cache.RECIPES
    twin: str = ""  # a twin's kind (TWIN_KINDS) of the plain build of its release; "" if plain

    @property
    def name(self) -> str:
        """The build's cache directory and label: 3.14.7, 3.14.7t, 3.14.7-pgo."""
        return f"{self.version}{cache.RECIPES[self.recipe].suffix}" if self.version else ""

    def describe(self) -> str:
        what = (f"the {self.twin} twin of {self.version.release}{self.version.pre}, "
                if self.twin else "")
        if self.action == "build":
            return f"{self.series}: build {self.name} ({what}from {self.where}){self.note}"
        if self.action == "have":
            return f"{self.series}: {self.name} is here already ({what}{self.note})"
        return f"{self.series}: could not obtain a release ({self.note})"


def from_debian_upstream(text: str) -> Version | None:
    """3.15.0~rc2 -> 3.15.0rc2; None for what is not a CPython release."""
    try:
        return parse_version(text.replace("~", ""))
    except sources.UsageError:
        return None


def offers_in_tarballs(tarballs: Path) -> list[Offer]:
    found = []
    for path in sorted(tarballs.glob("*.tar.xz")) if tarballs.is_dir() else []:
        official, orig = _OFFICIAL_RE.fullmatch(path.name), _ORIG_RE.fullmatch(path.name)
        version = (parse_version(official["version"]) if official
                   else from_debian_upstream(orig["upstream"]) if orig else None)
        if version is not None:
            found.append(Offer(version, "the cache's tarballs/"))
    return found


def offers_in_apt(series: str) -> list[Offer]:
    try:
        listed = sources._apt_source_versions(f"python{series}")
    except sources.ProvisionError:
        return []
    versions = (from_debian_upstream(sources._upstream_of(v)) for v in listed)
    return [Offer(v, "apt's deb-src index") for v in versions if v is not None]


def parse_pool_listing(html: str, series: str) -> list[Version]:
    versions = (from_debian_upstream(m["upstream"]) for m in _ORIG_RE.finditer(html)
                if m["series"] == series)
    return [v for v in versions if v is not None]


def parse_python_org_listing(html: str) -> list[str]:
    """The release directories of python.org's /ftp/python/ listing (3.14.7, ...)."""
    return sorted({m["release"] for m in _DIR_RE.finditer(html)})


def _fetch(url: str) -> str | None:
    """A listing's text, or None (offline, no listing served); apt's downloader for
    Debian's mirror (it honours apt's proxy settings), urllib for python.org."""
    if sources.offline():
        return None
    if url.startswith(PYTHON_ORG):
        try:
            with urllib.request.urlopen(url, timeout=LISTING_TIMEOUT) as response:
                return response.read(1 << 22).decode("utf-8", "replace")
        except (OSError, ValueError):
            return None
    if not sources.APT_HELPER.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        dest = Path(tmp) / "listing.html"
        error = sources._apt_helper_fetch(url, dest, say=lambda text: None)
        return None if error else dest.read_text(errors="replace")[: 1 << 22]


# Where the mirror serves no directory listing (Debian's own CDN does not), the pool is asked
# for each candidate's orig tarball by name with a HEAD request (a few hundred bytes each):
# every patch release up to MAX_PATCH and the pre-releases of X.Y.0. The pool keeps some
# patch releases and not others (python3.13: 3.13.5, .12, .14, .15), so none is skipped.
MAX_PATCH = 40
PRE_RELEASES = [f"a{n}" for n in range(1, 8)] + [f"b{n}" for n in range(1, 5)] + \
    [f"rc{n}" for n in range(1, 4)]
HEAD_TIMEOUT = 5


def _pool_has(url: str) -> bool | None:
    """True/False for a 200/404 answer; None when the mirror cannot be reached. Asked the
    way apt's downloader asks (sources.apt_opener: apt's proxy)."""
    try:
        request = urllib.request.Request(url, method="HEAD")
        with sources.apt_opener(url).open(request, timeout=HEAD_TIMEOUT) as response:
            return response.status == 200
    except urllib.error.HTTPError as exc:
        return False if exc.code in (403, 404, 410) else None
    except (OSError, ValueError):
        return None


def probe_pool(series: str, mirror: str) -> list[Version] | None:
    """The releases of ``series`` whose orig tarball the pool of ``mirror`` (an archive URI
    ending in "/") holds, asked by name; None when the mirror cannot be reached."""
    package = f"python{series}"
    upstreams = [f"{series}.{n}" for n in range(MAX_PATCH + 1)] + \
        [f"{series}.0~{pre}" for pre in PRE_RELEASES]
    urls = [f"{mirror}pool/main/p/{package}/{package}_{u}.orig.tar.xz" for u in upstreams]
    if _pool_has(urls[0]) is None and _pool_has(urls[-1]) is None:
        return None
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(_pool_has, urls))
    return [v for u, found in zip(upstreams, answers) if found
            for v in [from_debian_upstream(u)] if v is not None]


def offers_in_pool(series: str, notes: list[str], probe: bool = True,
                   mirrors: list[str] | None = None) -> list[Offer]:
    """The releases of ``series`` in the pool of the first archive apt names that answers
    (sources.debian_mirrors, or ``mirrors`` as it gave them); a note when none does."""
    package = f"python{series}"
    where = f"pool/main/p/{package}/"
    if mirrors is None:
        mirrors = sources.debian_mirrors()
    for mirror in mirrors:
        html = _fetch(mirror + where)
        if html is not None:
            return [Offer(v, "Debian's pool") for v in parse_pool_listing(html, series)]
        found = probe_pool(series, mirror) if probe else None
        if found is not None:
            return [Offer(v, "Debian's pool") for v in found]
    notes.append(f"Debian's pool cannot be reached ({where} of "
                 + (f"{len(mirrors)} archive(s) apt lists)" if mirrors else
                    "no archive: apt lists no deb or deb-src entry)"))
    return []


def offers_on_python_org(minors: set[str], notes: list[str]) -> list[Offer]:
    html = _fetch(PYTHON_ORG)
    if html is None:
        notes.append("python.org is not reachable (offline?)")
        return []
    offers = []
    releases = parse_python_org_listing(html)
    for series in sorted(minors):
        newest = max((r for r in releases if r.startswith(series + ".")),
                     key=lambda r: parse_version(r).sort_key, default=None)
        listing = _fetch(f"{PYTHON_ORG}{newest}/") if newest else None
        for match in _OFFICIAL_RE.finditer(listing or ""):
            offers.append(Offer(parse_version(match["version"]), "python.org"))
    return offers


# The plan asks apt (one apt-cache process) about every minor version from the oldest here to
# two above the newest: at most this many, the newest ones (3.6 .. 3.15 are ten). A version
# is the interpreter's own word, checked by the probe to be bounded (minor 0 to 99), and one
# strange interpreter must not cost a hundred processes.
MAX_PLANNED_MINORS = 16


def machine_versions(interpreters) -> set[tuple[str, bool]]:
    """(python_version, free-threaded) of every usable CPython discovery finds whose version
    is a release's (3.13.0, 3.15.0rc2; discovery's probe has checked its form and bounds),
    but for the cache's builds by another recipe than the lineage's (a 3.14.7-pgo twin is
    not the plain 3.14.7 it is a twin of)."""
    def other_recipe(i) -> bool:
        recipe = cache.recipe_reading_as(i.recipe)
        return recipe is not None and recipe.name != cache.DEFAULT_RECIPE
    return {(i.version, i.free_threaded) for i in interpreters
            if i.ok and i.implementation == "cpython" and isinstance(i.version, str)
            and sources.VERSION_RE.fullmatch(i.version.rstrip("+")) and not other_recipe(i)}


def _minor(series: str) -> tuple[int, int]:
    major, minor = series.split(".")
    return int(major), int(minor)


def plan(interpreters, tarballs: Path, free_threaded: bool = False, online: bool = True,
         twins: bool = False, builds: list[dict] | None = None) -> tuple[list[Step], list[str]]:
    """The steps that bring every minor version up to its newest obtainable release; with
    ``twins``, the twins of the newest stable release beside it (``with_twins``; ``builds``:
    the cache's, cache.list_builds, reused where they are)."""
    builds = builds or []
    have = machine_versions(interpreters)
    minors_here = sorted({_minor(".".join(v.split(".")[:2])) for v, _ in have
                          if v.startswith("3.")})
    if not minors_here:
        minors_here = [(3, 13)]
    oldest, newest = minors_here[0], minors_here[-1]
    notes: list[str] = []
    # The minors above the newest here that a source may offer: two further ones.
    first = max(oldest[1], newest[1] + 3 - MAX_PLANNED_MINORS)
    if first > oldest[1]:
        notes.append(f"planned the newest {MAX_PLANNED_MINORS} minor versions only "
                     f"(3.{first} .. 3.{newest[1] + 2}); the machine has 3.{oldest[1]} too")
    wanted = {f"3.{m}" for m in range(first, newest[1] + 3)}
    offers = offers_in_tarballs(tarballs)
    mirrors = None   # apt's archives, asked once for every minor version's pool (an apt-get)
    for series in sorted(wanted, key=_minor):
        offers += offers_in_apt(series)
        if _minor(series) >= newest:  # the pool keeps current minors only
            if mirrors is None:
                mirrors = sources.debian_mirrors()
            offers += offers_in_pool(series, notes, probe=online, mirrors=mirrors)
    if online:
        offers += offers_on_python_org(wanted, notes)
    steps = []
    for series in sorted(wanted, key=_minor):
        mine = [o for o in offers if o.version.series == series and not o.version.free_threaded]
        if not mine:
            if _minor(series) > newest:
                steps.append(Step(series, "none", note="no source offers one"))
            continue
        best = max(mine, key=lambda o: o.version.sort_key)
        here = [parse_version(v) for v, ft in have if not ft and v.startswith(series + ".")
                and sources.VERSION_RE.fullmatch(v)]
        newest_here = max(here, key=lambda v: v.sort_key, default=None)
        if newest_here is not None and newest_here.sort_key > best.version.sort_key:
            steps.append(Step(series, "have", newest_here,
                              note=f"newer than any offered: {best.version} from {best.where}"))
            continue
        kinds = [False] + ([True] if free_threaded and _minor(series) >= FREE_THREADED_SINCE
                           else [])
        for ft in kinds:
            version = parse_version(best.version.text + ("t" if ft else ""))
            if (version.python_version, ft) in have:
                steps.append(Step(series, "have", version, best.where, note="found by discovery"))
            else:
                steps.append(Step(series, "build", version, best.where))
    if twins:
        steps = with_twins(steps, interpreters, builds, notes)
    return steps, list(dict.fromkeys(notes))


def newest_stable(steps: list[Step]) -> Step | None:
    """The plain step of the newest minor version whose release is final (3.14.7 while
    3.15 has only 3.15.0rc2), built or here already; None when there is none."""
    final = [s for s in steps if s.action in ("build", "have") and not s.twin
             and s.version is not None and not s.version.pre and not s.version.free_threaded]
    return max(final, key=lambda s: s.version.sort_key, default=None)


def _twin_here(interpreters, builds: list[dict], version: Version, recipe: str) -> str | None:
    """Where a build of ``version`` by ``recipe`` already is (the cache's build, or an
    interpreter discovery found that reads as that recipe), or None."""
    for build in builds:
        if build.get("python_version") == version.python_version and \
                bool(build.get("free_threaded")) == version.free_threaded and \
                build.get("recipe") == recipe:
            return f"in the cache: {Path(build['prefix']).name}"
    for i in interpreters:
        if i.ok and i.implementation == "cpython" and i.version == version.python_version \
                and i.free_threaded == version.free_threaded \
                and getattr(cache.recipe_reading_as(i.recipe), "name", None) == recipe:
            return f"found by discovery: {i.label}"
    return None


def with_twins(steps: list[Step], interpreters, builds: list[dict], notes: list[str]
               ) -> list[Step]:
    """``steps`` with the twins (TWIN_KINDS) of the newest stable release after its plain
    step: each one "have" where the cache or the machine holds it, else "build" from the
    same source as the plain build."""
    plain = newest_stable(steps)
    if plain is None:
        return steps
    if not plain.where:  # here already, newer than any release a source offers
        notes.append(f"no twins of {plain.version}: no source offers its tarball")
        return steps
    twins = []
    for kind, ft, recipe in TWIN_KINDS:
        version = parse_version(plain.version.release + plain.version.pre + ("t" if ft else ""))
        if any(s.version == version and s.recipe == recipe for s in steps):
            # --free-threaded planned it already: mark it a twin where it stands.
            steps = [dataclasses.replace(s, twin=kind) if s.version == version
                     and s.recipe == recipe else s for s in steps]
            continue
        here = _twin_here(interpreters, builds, version, recipe)
        twins.append(Step(plain.series, "have", version, note=here, recipe=recipe, twin=kind)
                     if here else
                     Step(plain.series, "build", version, plain.where, recipe=recipe, twin=kind))
    at = steps.index(plain) + 1
    while at < len(steps) and steps[at].series == plain.series:
        at += 1
    return steps[:at] + twins + steps[at:]


def default_plan(free_threaded: bool = False, twins: bool = True
                 ) -> tuple[list[Step], list[str]]:
    interpreters = discovery.discover()
    root = cache.cache_root()
    return plan(interpreters, root / "tarballs", free_threaded, twins=twins,
                builds=cache.list_builds(root))
