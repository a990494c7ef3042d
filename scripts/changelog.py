#!/usr/bin/env python3
"""Fetch and cache CPython's Misc/NEWS for given versions: ``nox -s changelog -- 3.12.1 3.14.7``.

    python scripts/changelog.py [--offline] VERSION [VERSION...]

For each VERSION: its source tarball from the cache's tarballs/ directory, else Debian's
pool (apt's downloader), else python.org (short timeout); its Misc/NEWS parsed and cached
as JSON beside the tarball, which the report then reads without any download. The work is
in ``iomatrix/analysing/changelog.py``.

Exit status: 0 every changelog at hand, 3 one could not be had (the command failed; each
says why; 1 is only ever a comparison's regression), 2 a VERSION that is not a version. A
tarball or cache that is damaged or hostile is named and skipped; any other failure is the
tool's own (exit 3, cli.main_guard), never 1.
"""
from __future__ import annotations

import sys

from iomatrix import cli
from iomatrix.analysing import changelog
from iomatrix.interpreters import sources


@cli.main_guard
def main(argv: list[str] | None = None) -> int:
    parser = cli.Parser(prog="nox -s changelog --", description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="+", metavar="VERSION", help="3.12.1, 3.15.0rc2, ...")
    parser.add_argument("--offline", action="store_true", help="the cache only: fetch nothing")
    args = parser.parse_args(argv)
    for version in args.versions:
        try:
            sources.parse_version(version)
        except sources.UsageError as exc:
            print(f"changelog: error: {cli.one_line(exc)}", file=sys.stderr)
            return cli.EXIT_BAD_INPUT
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


if __name__ == "__main__":
    sys.exit(main())
