"""The changelogs a run's report needs, fetched by the main command before its report.

The report names each finding's candidate upstream changes from CPython's ``Misc/NEWS``,
read from the cache only (iomatrix.analysing.changelog.Why: a report stays offline and
fast). On a fresh machine that cache is empty, and every finding said "no changelog at
hand". So the matrix session, after the timing and before the report, asks for the
changelog of each CPython release of the run that none at hand covers with its own branch
(``covering_changelog``):

- python.org answering (a HEAD within ``bisect_points.PYTHON_ORG_TIMEOUT``): each release's
  own tarball (``news.changelog_for``: Debian's pool first, then python.org);
- else Debian's pool only (apt's configured sources, ``sources.debian_fetch``): for a minor
  version the pool has, its newest pool release at or after the run's (its branch's NEWS
  holds every patch release up to it); for the others, one tarball of a later minor, whose
  NEWS holds every older minor's main line up to its branch point (X.Y.0a1 .. X.Y.0b1).

Fetched tarballs and their parsed NEWS stay in the cache (``tarballs/``) for every later
run. What could not be had is said in one line; offline the only wait is python.org's probe.
"""
from __future__ import annotations

from typing import Callable

from iomatrix.analysing import news
from iomatrix.commands import bisect_points
from iomatrix.interpreters import sources

Say = Callable[[str], None]


def _branch_covered(version: str) -> bool:
    """A changelog at hand holds ``version``'s own branch up to it."""
    log = news.covering_changelog(version)
    return log is not None and news.branch(log.version or "") == news.branch(version)


def _covered(version: str) -> bool:
    return news.covering_changelog(version) is not None


def _key(version: str):
    return news.version_key(version)


def _debian_changelog(version: str, say: Say) -> bool:
    """Debian's orig tarball of ``version`` into the cache, its NEWS parsed; True when done."""
    try:
        path = sources.debian_fetch(sources.parse_version(version), news.tarballs_dir(), say)
    except (sources.ProvisionError, sources.UsageError) as exc:
        say(f"Debian's pool: {str(exc).splitlines()[0]}")
        return False
    return news.load_tarball_changelog(path, say) is not None


def pool_release_for(version: str) -> str | None:
    """The newest release of ``version``'s minor in Debian's pool that is not older than it."""
    minor = ".".join(version.split(".")[:2])
    found = [v for v in bisect_points.DEBIAN_POOL.get(minor, ()) if _key(v) >= _key(version)]
    return max(found, key=_key) if found else None


def newest_pool_release() -> str:
    return max((v for vs in bisect_points.DEBIAN_POOL.values() for v in vs
                if _key(v) is not None and not _key(v).is_prerelease), key=_key)


def gather(versions, say: Say = print, online: bool | None = None, fetch: bool = True) -> dict:
    """Fetch what the report needs for these CPython 3.x versions; {version: what is
    missing} for those whose own branch no changelog covers afterwards ("main line only" when
    a later minor's covers part of it, "none" when nothing does). ``say`` gets the details;
    the caller says the one line (``summary``). ``fetch`` False (``$IOMATRIX_OFFLINE``):
    nothing is asked of any network, only what is missing is said."""
    wanted = sorted({v for v in versions if _key(v) is not None and _key(v).major >= 3},
                    key=_key)
    missing = [v for v in wanted if not _branch_covered(v)]
    if not missing or not fetch:
        return {v: ("main line only" if _covered(v) else "none") for v in missing}
    if online is None:
        online = bisect_points.python_org_reachable()
    if online:
        for version in missing:
            news.changelog_for(version, say=say, fetch=True)
    else:
        say("python.org does not answer: changelogs from Debian's pool only")
        tried = set()
        for version in missing:
            if _branch_covered(version):
                continue
            pool = pool_release_for(version)
            if pool is None and not _covered(version):
                pool = newest_pool_release()
            if pool is not None and pool not in tried:
                tried.add(pool)
                _debian_changelog(pool, say)
    return {v: ("main line only" if _covered(v) else "none")
            for v in missing if not _branch_covered(v)}


def summary(missing: dict) -> str | None:
    """The one line the matrix session prints: None when every release is covered."""
    if not missing:
        return None
    none = [v for v, what in missing.items() if what == "none"]
    partial = [v for v, what in missing.items() if what != "none"]
    parts = []
    if none:
        parts.append(f"none for {', '.join(none)}")
    if partial:
        parts.append(f"only a later minor's main-line sections for {', '.join(partial)}")
    return ("iomatrix: changelogs: " + "; ".join(parts)
            + " (nox -s changelog -- VERSION fetches one where python.org or a deb-src "
              "entry can be had): the report names no candidate where none covers a step")
