"""A small git history of real CPython sources: one commit per release tarball, in order,
each tagged as CPython tags its releases (v3.13.15, v3.14.7, v3.15.0rc2).

The commit bisect's real test (tests/test_bisect_commits.py) bisects over it: every commit is
a real CPython that builds and runs. Authors, dates and messages are fixed, so the same
tarballs always make the same commit hashes, and builds cached by hash are reused across the
test's runs.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from iomatrix.interpreters import sources

# The releases, oldest first: the tarballs of `nox -s provision` (Debian's orig tarballs).
RELEASES = ("3.13.15", "3.14.7", "3.15.0rc2")


def git(directory: Path, *args: str, date: str = "2026-01-01T00:00:00+00:00") -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "iomatrix test", "GIT_AUTHOR_EMAIL": "test@invalid",
           "GIT_COMMITTER_NAME": "iomatrix test", "GIT_COMMITTER_EMAIL": "test@invalid",
           "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull}
    return subprocess.run(["git", "-c", "core.autocrlf=false", "-c", "init.defaultBranch=main",
                           "-C", str(directory), *args], check=True, capture_output=True,
                          text=True, env=env).stdout


def find_tarballs(directories, fetch_into: Path | None = None) -> dict:
    """{release: tarball}: from the first of ``directories`` that holds one, else fetched
    into ``fetch_into`` as `nox -s provision --debian-source` fetches (apt's source pool);
    a release that cannot be had is left out."""
    found = {}
    for release in RELEASES:
        names = sources.parse_version(release).tarball_names
        for directory in directories:
            hit = next((Path(directory) / n for n in names if (Path(directory) / n).is_file()),
                       None)
            if hit is not None:
                found[release] = hit
                break
        else:
            if fetch_into is not None:
                try:
                    found[release] = sources.resolve_tarball(
                        sources.parse_version(release), fetch_into, debian_source=True,
                        say=lambda text: None).path
                except sources.ProvisionError:
                    pass
    return found


def make_history(directory: Path, tarballs: dict) -> dict:
    """A git repository at ``directory`` with one commit per release of ``tarballs`` (in
    RELEASES order) and its tag; {release: commit hash}. Made once: a directory that holds
    a finished history (its ``.done`` file) is read, not made again."""
    done = directory / ".git" / "iomatrix-history-done"
    if not done.is_file():
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        git(directory, "init", "-q")
        for n, release in enumerate(r for r in RELEASES if r in tarballs):
            for child in directory.iterdir():
                if child.name != ".git":
                    shutil.rmtree(child) if child.is_dir() and not child.is_symlink() \
                        else child.unlink()
            unpacked = directory.parent / f".unpack-{release}"
            shutil.rmtree(unpacked, ignore_errors=True)
            sources.extract(tarballs[release], unpacked)
            top = next(unpacked.iterdir())
            for child in top.iterdir():
                os.rename(child, directory / child.name)
            shutil.rmtree(unpacked)
            date = f"2026-01-0{n + 1}T00:00:00+00:00"
            git(directory, "add", "--all", "--force", ".")
            git(directory, "commit", "-q", "--no-verify", "-m", f"Python {release}", "-m",
                f"The sources of the release tarball {tarballs[release].name}.", date=date)
            git(directory, "tag", "-a", f"v{release}", "-m", f"Python {release}", date=date)
        done.write_text("\n")
    tags = git(directory, "tag", "--list")
    return {release: git(directory, "rev-parse", f"v{release}^{{commit}}").strip()
            for release in RELEASES if f"v{release}" in tags.split()}
