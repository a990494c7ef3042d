"""Which releases a bisection spans, and which of them can be timed here (its points).

The releases between OLD and NEW come from CPython's release tables below (and the
builds at hand that the tables do not know yet); each is a point when a build of the
lineage's recipe is at hand or can be had (a tarball at hand, Debian's source pool,
python.org when it answers within seconds). ``plan`` turns the command line's OLD and NEW
into that range and its points; ``BisectError`` is its bad input (exit 2). The command
itself, the timing and the answer are in ``iomatrix.commands.bisect``.
"""
from __future__ import annotations

import dataclasses
import urllib.request

from iomatrix import cli, procs
from iomatrix.interpreters import discovery, provision as provisioning, sources

# Seconds python.org has to answer before it counts as unreachable (an offline machine
# must not wait on it; every build's download would wait as long again).
PYTHON_ORG_TIMEOUT = 4.0
PYTHON_ORG_PROBE = "https://www.python.org/ftp/python/"

# CPython's releases, as python.org lists them: per minor version (alphas, betas, release
# candidates) before X.Y.0, and the newest patch release known when this was written (a
# newer one named on the command line or at hand counts too).
PRE_RELEASES = {
    "2.7": (4, 2, 2), "3.0": (5, 3, 3), "3.1": (2, 1, 2), "3.2": (4, 2, 3), "3.3": (4, 2, 3),
    "3.4": (4, 3, 3), "3.5": (4, 4, 4), "3.6": (4, 4, 2), "3.7": (4, 5, 2), "3.8": (4, 4, 1),
    "3.9": (6, 5, 2), "3.10": (7, 4, 2), "3.11": (7, 5, 2), "3.12": (7, 4, 3),
    "3.13": (6, 4, 3), "3.14": (7, 4, 3), "3.15": (7, 4, 2),
}
NEWEST_PATCH = {
    "2.7": 18, "3.0": 1, "3.1": 5, "3.2": 6, "3.3": 7, "3.4": 10, "3.5": 10, "3.6": 15,
    "3.7": 17, "3.8": 20, "3.9": 25, "3.10": 19, "3.11": 14, "3.12": 12, "3.13": 15,
    "3.14": 7, "3.15": None,  # 3.15.0 not released: its candidates are the newest
}
# Debian's source pool (pool/main/p/python3.Y/ of apt's archive), as issue 33 found it:
# provisioning fetches these with --debian-source (sources.debian_fetch).
DEBIAN_POOL = {
    "3.13": ("3.13.5", "3.13.12", "3.13.14", "3.13.15"),
    "3.14": ("3.14.4", "3.14.5", "3.14.6", "3.14.7"),
    "3.15": ("3.15.0rc1", "3.15.0rc2"),
}


class BisectError(cli.BadInput):
    """Bad input: exit 2, nothing run or written."""


# -- the releases between OLD and NEW -----------------------------------------------------

def minor_of(version: str) -> str:
    return sources.parse_version(version).series


def key(version: str) -> tuple:
    return sources.parse_version(version).sort_key


def releases_of(minor: str, newest: str | None = None) -> list[str]:
    """Every release of ``minor`` known here (PRE_RELEASES, NEWEST_PATCH), plus ``newest``."""
    alphas, betas, candidates = PRE_RELEASES.get(minor, (0, 0, 0))
    out = [f"{minor}.0{kind}{n}" for kind, count in (("a", alphas), ("b", betas),
                                                      ("rc", candidates))
           for n in range(1, count + 1)]
    last = NEWEST_PATCH.get(minor)
    if last is not None:
        out += [f"{minor}.{patch}" for patch in range(0, last + 1)]
    if newest is not None and newest not in out:
        out.append(newest)
    return sorted(out, key=key)


def known_release(version: str) -> bool:
    return version in releases_of(minor_of(version))


def minors_between(old: str, new: str) -> list[str]:
    known = sorted(PRE_RELEASES, key=lambda m: tuple(map(int, m.split("."))))
    lo, hi = key(old)[:2], key(new)[:2]
    return [m for m in known if lo < tuple(map(int, m.split("."))) < hi]


def releases_between(old: str, new: str, extra=()) -> list[str]:
    """OLD, the releases between (see the module docstring) and NEW, in version order.
    ``extra``: versions at hand that the tables do not know (a newer patch)."""
    old_minor, new_minor = minor_of(old), minor_of(new)
    pool = set(releases_of(new_minor, new)) | {v for v in extra if minor_of(v) == new_minor}
    if old_minor == new_minor:
        pool |= set(releases_of(old_minor, old))
    else:
        # OLD's minor: only its pre-releases up to X.Y.0 (when OLD is one), not its patches.
        final = f"{old_minor}.0"
        pool |= {v for v in releases_of(old_minor, old) if key(v) <= key(final)} | {old}
        for minor in minors_between(old, new):
            pool |= set(releases_of(minor)) | {v for v in extra if minor_of(v) == minor}
    return sorted((v for v in pool if key(old) <= key(v) <= key(new)), key=key)


# -- the points: builds at hand and builds that can be had -------------------------------

@dataclasses.dataclass
class Point:
    version: str
    interp: discovery.Interpreter | None = None   # the build at hand
    source: str | None = None       # where a build can come from: "tarball at hand", ...
    missing: str | None = None      # why it cannot be timed: not obtainable, a failed build
    log_tail: str | None = None     # a failed build's log

    @property
    def label(self) -> str | None:
        return self.interp.label if self.interp else None


def plain_version(interp: discovery.Interpreter) -> str:
    return interp.version.rstrip("+")


def release_version(interp: discovery.Interpreter) -> str | None:
    """The release an interpreter reports (plain_version), when it is one in the form
    platform.python_version() gives (3.13.0, 3.15.0rc2); None for anything else it may
    say of itself ("3.13", a free-threaded or garbled version): such a build is no point."""
    version = plain_version(interp) if isinstance(interp.version, str) else ""
    try:
        parsed = sources.parse_version(version)
    except sources.UsageError:
        return None
    return None if parsed.free_threaded else version


def lineage_recipe(interp: discovery.Interpreter | None) -> provisioning.Recipe:
    recipe = provisioning.recipe_reading_as(interp.recipe) if interp else None
    return recipe or provisioning.RECIPES[provisioning.DEFAULT_RECIPE]


def builds_at_hand(interpreters, recipe: provisioning.Recipe) -> dict:
    """{version: Interpreter}: usable plain CPython release builds that read as ``recipe``."""
    found = {}
    for interp in sorted(interpreters, key=lambda i: (len(i.label), i.label)):
        if (interp.ok and interp.implementation == "cpython" and not interp.free_threaded
                and interp.source in ("pyenv", "provisioned")
                and provisioning.recipe_reading_as(interp.recipe) == recipe
                and release_version(interp) is not None):
            found.setdefault(release_version(interp), interp)
    return found


def find_build(interpreters, name: str):
    """The usable interpreter labelled ``name`` or of version ``name``; None."""
    for interp in interpreters:
        if interp.ok and interp.label == name:
            return interp
    same = [i for i in interpreters if i.ok and i.implementation == "cpython"
            and not i.free_threaded and plain_version(i) == name
            and i.source in ("pyenv", "provisioned")]
    return min(same, key=lambda i: len(i.label)) if same else None


def python_org_reachable() -> bool:
    if sources.offline():
        return False
    try:
        urllib.request.urlopen(urllib.request.Request(PYTHON_ORG_PROBE, method="HEAD"),
                               timeout=PYTHON_ORG_TIMEOUT).close()
        return True
    except (OSError, ValueError):
        return False


def source_of(version: str, online: bool) -> str | None:
    """Where a build of ``version`` can come from, or None."""
    tarballs = provisioning.cache_root() / "tarballs"
    if any((tarballs / name).is_file() for name in sources.parse_version(version).tarball_names):
        return "tarball at hand"
    if version in DEBIAN_POOL.get(minor_of(version), ()):
        return "Debian's pool"
    if online:
        return "python.org"
    return None


def build_in_progress(version: str, recipe: provisioning.Recipe) -> int | None:
    """The pid of a live build of ``version`` by ``recipe`` into the cache, or None: that
    build is not started twice (nor its staging directory touched)."""
    pythons = provisioning.cache_root() / "pythons"
    for partial in pythons.glob(f".{version}{recipe.suffix}.partial-*"):
        pid = partial.name.rsplit("-", 1)[-1]
        if pid.isdigit() and procs.pid_alive(int(pid)):
            return int(pid)
    return None


def resolve_release(interpreters, name: str, what: str) -> str:
    """OLD's or NEW's version: a label here or a known CPython release."""
    interp = find_build(interpreters, name)
    if interp is not None:
        version = release_version(interp)
        if version is None:
            raise BisectError(f"{what} {name!r}: the interpreter {interp.label} reports "
                              f"version {cli.one_line(repr(interp.version))[:60]}, not a "
                              "release in the form X.Y.Z (3.13.0, 3.15.0rc2); give a release "
                              "or another label")
        return version
    try:
        version = sources.parse_version(name)
    except sources.UsageError:
        version = None
    if version is None or version.free_threaded or not known_release(name):
        here = ", ".join(f"{i.label} ({release_version(i) or 'no release'})" for i in
                         sorted(interpreters, key=discovery.sort_key)
                         if i.ok and i.implementation == "cpython")
        minor = version.series if version is not None else None
        known = releases_of(minor) if minor in PRE_RELEASES else []
        valid = (f"{minor} releases: {known[0]} .. {known[-1]}" if known else
                 f"CPython releases {min(PRE_RELEASES)} .. {max(PRE_RELEASES, key=lambda m: tuple(map(int, m.split('.'))))}")
        raise BisectError(f"unknown release {name!r} for {what}: not a label here ({here}) "
                          f"and not a known release ({valid})")
    return name


# -- the plan: OLD and NEW, the range and its points ---------------------------------------

def plan(args, interpreters, log):
    """(old, new, recipe, every release in range, {version: Point} of obtainable ones,
    {version: why not}); BisectError for bad input."""
    old = resolve_release(interpreters, args.between[0], "OLD")
    new = resolve_release(interpreters, args.between[1], "NEW")
    if key(old) == key(new):
        raise BisectError(f"empty range: OLD and NEW are both {old}; give two releases, "
                          "older first")
    if key(old) > key(new):
        raise BisectError(f"OLD {old} is newer than NEW {new}; give them older first: "
                          f"--between {new} {old}")
    recipe = lineage_recipe(find_build(interpreters, new) or find_build(interpreters, old))
    at_hand = builds_at_hand(interpreters, recipe)
    extra = [v for v in at_hand if key(old) < key(v) < key(new)]
    everything = releases_between(old, new, extra)
    online = python_org_reachable()
    log(f"bisect: {len(everything)} releases from {old} to {new}; python.org "
        f"{'answers' if online else 'does not answer (offline)'}; recipe {recipe.name}")
    points, why = {}, {}
    for version in everything:
        if version in at_hand:
            points[version] = Point(version, interp=at_hand[version])
            continue
        source = source_of(version, online)
        building = build_in_progress(version, recipe) if source else None
        if building is not None:
            why[version] = f"being built by another process (pid {building}); not waited for"
        elif source is None:
            why[version] = ("not in Debian's pool; python.org unreachable" if not online else
                            "cannot be had")
        elif args.no_build:
            why[version] = f"can be built ({source}), not built: --no-build"
        else:
            points[version] = Point(version, source=source)
    for end, what in ((old, "OLD"), (new, "NEW")):
        if end not in points:
            raise BisectError(f"{what} {end} is not at hand and cannot be built here ({why[end]}); "
                              f"builds at hand of the {recipe.name} recipe: "
                              + ", ".join(sorted(at_hand, key=key)))
    return old, new, recipe, everything, points, why
