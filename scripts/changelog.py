#!/usr/bin/env python3
"""Fetch and cache CPython's Misc/NEWS for given versions: ``nox -s changelog -- 3.12.1 3.14.7``.

    python scripts/changelog.py [--offline] VERSION [VERSION...]
    python scripts/changelog.py --for-report [--offline] VERSION [VERSION...]

For each VERSION: its source tarball from the cache's tarballs/ directory, else Debian's
pool (apt's downloader), else python.org (short timeout); its Misc/NEWS parsed and cached
as JSON beside the tarball, which the report then reads without any download. The work is
in ``iomatrix/analysing/changelog.py``.

``--for-report`` is the main command's step before its report (the matrix session queues it
with the run's CPython versions): it fetches what the report needs for them
(``iomatrix/commands/changelogs.py``: one later release's cumulative NEWS covers every
release up to its branch point), prints one line for what it could not have, and exits 0
whatever it could not have: the run is done and its report goes on without them.

Exit status: 0 every changelog at hand, 3 one could not be had (the command failed; each
says why; 1 is only ever a comparison's regression), 2 a VERSION that is not a release's
(a free-threaded build's ``3.14.7t`` has its release's changelog: give ``3.14.7``) or a
cache that is no directory (``IOMATRIX_CACHE`` a file or a symlink loop). A tarball or
cache entry that is damaged or hostile is named and skipped; any other failure is the
tool's own (exit 3, cli.main_guard), never 1.
"""
from __future__ import annotations

import sys

from iomatrix import cli
from iomatrix.analysing import changelog, csource, news
from iomatrix.commands import changelogs
from iomatrix.interpreters import sources


@cli.main_guard
def main(argv: list[str] | None = None) -> int:
    parser = cli.Parser(prog="nox -s changelog --", description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", metavar="VERSION", help="3.12.1, 3.15.0rc2, ...")
    parser.add_argument("--offline", action="store_true", help="the cache only: fetch nothing")
    parser.add_argument("--for-report", action="store_true",
                        help="the main command's step: fetch what its report needs for these "
                             "versions, say in one line what could not be had, exit 0")
    args = parser.parse_args(argv)
    for version in args.versions:
        release_version(version)
    if args.for_report:
        return for_report(args.versions, fetch=not args.offline)
    news.tarballs_dir()   # a cache that is no directory: exit 2 before anything is fetched
    missing = []
    for version in args.versions:
        log = changelog.changelog_for(
            version, say=lambda text, v=version: print(cli.terminal_text(f"[{v}] {text}")),
            fetch=not args.offline)
        if log is None:
            missing.append(version)
            continue
        entries = sum(len(r.entries) for r in log.releases)
        newest = log.releases[0]
        print(cli.one_line(
            f"[{version}] {len(log.releases)} release sections ({log.releases[-1].version} to "
            f"{newest.version}, {newest.date or 'no date'}), {entries} entries, "
            f"{len(log.unparsed)} that did not parse; from {log.source}"))
    if missing:
        print(f"changelog: none could be had for {', '.join(missing)}", file=sys.stderr)
        return cli.EXIT_INTERNAL_ERROR
    return 0


def release_version(text: str) -> str:
    """``text`` when it names a CPython release (3.14.7, 3.15.0rc2); BadInput (exit 2)
    otherwise, a free-threaded build's version (3.14.7t) saying which release to give."""
    try:
        version = sources.parse_version(text)
    except sources.UsageError:
        # (parse_version's own words offer a build's 3.14.7t, which is refused here)
        raise cli.BadInput(f"{cli.one_line(repr(text))} is not a release: expected X.Y.Z, "
                           "optionally with a pre-release (3.14.7, 3.15.0rc2)") from None
    if version.free_threaded:
        raise cli.BadInput(f"{text!r} is a free-threaded build's version; its changelog is "
                           f"its release's: give {version.release + version.pre}")
    return text


def for_report(versions: list[str], fetch: bool) -> int:
    """The main command's step: exit 0 whatever could not be had (one line says what)."""
    try:
        line = changelogs.summary(changelogs.gather(versions, say=lambda text: None,
                                                    fetch=fetch))
        # the NEWS parsed here, kept as JSON beside its tarball: the report reads that; and
        # the C files of the run's own tarballs, which it compares functions in
        news.keep_parsed()
        at_hand = {news.version_key(v): path for v, path in news.cached_tarballs().items()}
        for version in versions:
            if news.version_key(version) in at_hand:
                csource.keep_c_files(at_hand[news.version_key(version)])
    except Exception as exc:  # noqa: BLE001 - the run is done; its report goes on without them
        line = f"iomatrix: changelogs: not fetched ({cli.one_line(exc)})"
    print(cli.terminal_text(line or "iomatrix: changelogs: every release of the run is covered"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
