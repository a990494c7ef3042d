"""bisect --cpython-repo: down to the commit, over git histories of the tests' own.

The slow test builds real CPython commits: a history made of three release tarballs
(tests/release_history.py), bisected with real builds and a real lockstep run. The fast ones
build stand-in trees whose ``make install`` puts a real interpreter of this machine in place
(with its own copy of its libpython, as a shared build of the lineage recipe has), so that the
search, the skips, the answer and the exit codes run for real in seconds per build.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from iomatrix.commands import bisect, bisect_commits, bisect_points
from iomatrix.interpreters import cache as provision_cache, commit_build
from conftest import need
from iomatrix.markup import md
import release_history

QUIET = dict(log=lambda *a: None)
# The user's tarballs, read (never written) by the slow test: captured at import, before
# conftest gives every test an empty cache of its own.
USER_TARBALLS = provision_cache.cache_root() / "tarballs"


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setattr(bisect_points, "python_org_reachable", lambda: False)


def tree(directory):
    return sorted(p.relative_to(directory) for p in directory.rglob("*"))


def clone_state(repo: Path) -> dict:
    """What must not change in a user's clone: its status, HEAD, refs and index."""
    def git(*args):
        return release_history.git(repo, *args)
    index = repo / ".git" / "index"
    return {"status": git("status", "--porcelain", "--ignored"), "head": git("rev-parse", "HEAD"),
            "symbolic": git("symbolic-ref", "-q", "HEAD"), "refs": git("for-each-ref"),
            "index": index.read_bytes() if index.exists() else None,
            "worktrees": git("worktree", "list", "--porcelain")}


# -- stand-in commits: a real interpreter of this machine, installed by a fake build -----------

CONFIGURE = """#!/bin/sh
# A stand-in for CPython's configure: the prefix for the Makefile; a tree holding BROKEN
# fails here, as a commit that does not build.
if [ -e BROKEN ]; then echo "configure: error: this commit is broken on purpose" >&2; exit 1; fi
for arg in "$@"; do case "$arg" in --prefix=*) echo "PREFIX = ${arg#--prefix=}" > config.mk ;; esac; done
"""
MAKEFILE = """include config.mk
all:
\t@echo built
install:
\tmkdir -p $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib
\tcp "$$(cat real-lib)" $(DESTDIR)$(PREFIX)/lib/
\tprintf '#!/bin/sh\\nLD_LIBRARY_PATH=%s/lib exec %s "$$@"\\n' "$(PREFIX)" "$$(cat real-python)" > $(DESTDIR)$(PREFIX)/bin/python3
\tchmod 755 $(DESTDIR)$(PREFIX)/bin/python3
"""


def real_parts(interp) -> tuple[str, str]:
    """(the interpreter's binary, its libpython), for a stand-in build."""
    prefix = Path(os.path.realpath(interp.executable)).parent.parent
    lib = next(prefix.glob("lib/libpython3*.so.1.0"), None)
    if lib is None:
        pytest.skip(f"{interp.label} has no shared libpython to stand in for a lineage build")
    return os.path.realpath(interp.executable), str(lib)


def stand_in_history(directory: Path, commits: list) -> list[str]:
    """A git repository of stand-in trees: ``commits`` is [(interp or None for a broken
    tree, message, tag or None, {extra path: text})]; the commits' hashes."""
    directory.mkdir(parents=True)
    release_history.git(directory, "init", "-q")
    shas = []
    for n, (interp, message, tag, extra) in enumerate(commits):
        (directory / "configure").write_text(CONFIGURE)
        (directory / "configure").chmod(0o755)
        (directory / "Makefile").write_text(MAKEFILE)
        if interp is None:
            (directory / "BROKEN").write_text("\n")
        else:
            (directory / "BROKEN").unlink(missing_ok=True)
            python, lib = real_parts(interp)
            (directory / "real-python").write_text(python)
            (directory / "real-lib").write_text(lib)
        for path, text in extra.items():
            (directory / path).parent.mkdir(parents=True, exist_ok=True)
            (directory / path).write_text(text)
        date = f"2026-01-01T00:00:{n:02d}+00:00"
        release_history.git(directory, "add", "--all", ".")
        release_history.git(directory, "commit", "-q", "--allow-empty", "-m", message, date=date)
        if tag:
            release_history.git(directory, "tag", "-a", tag, "-m", tag, date=date)
        shas.append(release_history.git(directory, "rev-parse", "HEAD").strip())
    return shas


NEWS = """+++++++++++
Python News
+++++++++++

What's New in Python 3.11.7 final?
==================================

*Release date: 2023-12-04*

Library
-------

- bpo-46848: For performance, use the optimized string-searching
  implementations from :meth:`~bytes.find` and :meth:`~bytes.rfind` for
  :meth:`~mmap.find`.

- gh-1: An entry no commit here names.
"""
HOSTILE = "bpo-46848: mmap.find uses <script>alert(1)</script> | `fastsearch` [x](javascript:y) (#31625)"


@pytest.fixture
def old_new(machine_interpreters):
    return need(machine_interpreters, "3.10"), need(machine_interpreters, "3.11")


def run(repo, tmp_path, *more, between=("3.10.13", "3.11.7"), op="mmapio_find_mmap"):
    return bisect_commits.main([op, "--between", *between, "--cpython-repo", str(repo), "--profile",
                        "smoke", "--counters", "off", "--results-dir", str(tmp_path / "results"),
                        "--run-id", "c", *more], **QUIET)


def test_a_commit_that_does_not_build_is_skipped_and_the_first_commit_named(
        tmp_path, capsys, old_new):
    """mmap.find moved to fastsearch in 3.11 (bpo-46848): the stand-in commit that swaps
    3.10.13 for 3.11.7 is named, with its issue, PR and changelog entries; the broken commit
    the search met first is skipped and listed; the clone is as it was."""
    old, new = old_new
    repo = tmp_path / "cpython"
    shas = stand_in_history(repo, [
        (old, "Python 3.10.13", "v3.10.13", {}),
        (old, "gh-2: a change that changes nothing", None, {}),
        (None, "gh-3: a change that does not build", None, {}),
        (old, "gh-4: another change that changes nothing", None, {}),
        (new, HOSTILE + "\n\nThe body names GH-31626 too.", None,
         {"Misc/NEWS.d/next/Library/2022-02-27-bpo-46848.aaaa.rst":
          "For performance, :meth:`~mmap.find` uses fastsearch.\n"}),
        (new, "Python 3.11.7", "v3.11.7", {"Misc/NEWS": NEWS}),
    ])
    before = clone_state(repo)
    status = run(repo, tmp_path)
    out, err = capsys.readouterr()
    assert status == 0, err
    assert clone_state(repo) == before
    assert f"**The op moves first in commit `{shas[4]}`: {md(HOSTILE)}**" in out
    assert "<script>" not in out
    assert "[x](javascript" not in out
    assert "[bpo-46848](https://bugs.python.org/issue46848)" in out
    assert "[#31625](https://github.com/python/cpython/pull/31625)" in out
    assert "[#31626]" in out
    assert "added by the commit (Misc/NEWS.d/next/Library/" in out
    assert "bpo-46848 (3.11.7, Library): For performance, use the optimized" in out
    assert "gh-1:" not in out
    assert f"- `{shas[2][:10]}` gh-3: a change that does not build: its build failed in " \
           "configure (log: commits/logs/" in out
    assert "The commit before it, on v3.10.13's side: " \
           f"`{shas[3][:10]}` gh-4: another change" in out
    assert str(tmp_path) not in out
    answer = tmp_path / "results" / "c-1" / "bisect.md"
    assert answer.read_text() in out
    failed = provision_cache.cache_root() / "commits" / f"{shas[2]}.failed"
    assert json.loads(failed.read_text())["stage"] == "configure"
    # a second bisect reuses every build: none is made again, the failed one not retried
    logs = set((provision_cache.cache_root() / "commits" / "logs").iterdir())
    assert run(repo, tmp_path, "--run-id", "d") == 0
    assert set((provision_cache.cache_root() / "commits" / "logs").iterdir()) == logs
    assert clone_state(repo) == before


def test_skipped_commits_that_leave_a_range_are_exit_3_with_the_range(tmp_path, capsys,
                                                                     old_new):
    old, new = old_new
    repo = tmp_path / "cpython"
    shas = stand_in_history(repo, [
        (old, "Python 3.10.13", "v3.10.13", {}),
        (None, "gh-3: a change that does not build", None, {}),
        (new, "Python 3.11.7", "v3.11.7", {}),
    ])
    before = clone_state(repo)
    assert run(repo, tmp_path) == 3
    out = capsys.readouterr().out
    assert "**Not narrowed to one commit: the change lies in the 2 commits after v3.10.13 " \
           f"up to `{shas[2][:10]}`; 1 of them could not be judged.**" in out
    assert f"- `{shas[1][:10]}` gh-3: a change that does not build: its build failed" in out
    assert clone_state(repo) == before


def test_an_end_that_does_not_build_is_exit_3(tmp_path, capsys, old_new):
    old, _ = old_new
    repo = tmp_path / "cpython"
    stand_in_history(repo, [(old, "Python 3.10.13", "v3.10.13", {}),
                            (None, "Python 3.11.7", "v3.11.7", {})])
    assert run(repo, tmp_path) == 3
    err = capsys.readouterr().err
    assert "bisect: v3.11.7 (" in err and "cannot be judged against: its build failed" in err
    assert not (tmp_path / "results").exists()


# -- bad input: one line, exit 2, nothing written ----------------------------------------------

@pytest.fixture
def small_repo(tmp_path):
    repo = tmp_path / "cpython"
    stand_in_history(repo, [(None, "Python 3.10.13", "v3.10.13", {}),
                            (None, "a change", None, {}),
                            (None, "Python 3.11.7", "v3.11.7", {})])
    return repo


@pytest.mark.parametrize("case, message", [
    ("plain directory", "not a git repository"),
    ("inside a repository", "not a git repository"),
    ("no such directory", "not a directory"),
    ("missing tag", "no tag v3.11.8 for NEW"),
    ("reversed", "no commits from v3.11.7 to v3.10.13"),
    ("same", "empty range"),
    ("bad op", "unknown op 'no_such_op'"),
    ("bad tag text", "NEW"),
])
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, small_repo, case,
                                                         message, machine_interpreters):
    need(machine_interpreters, "3.11")
    plain = tmp_path / "plain"
    plain.mkdir()
    repo, between, op = small_repo, ("3.10.13", "3.11.7"), "mmapio_find_mmap"
    if case == "plain directory":
        repo = plain
    elif case == "inside a repository":
        repo = small_repo / "sub"
        repo.mkdir()
    elif case == "no such directory":
        repo = tmp_path / "nothing"
    elif case == "missing tag":
        between = ("3.10.13", "3.11.8")
    elif case == "reversed":
        between = ("3.11.7", "3.10.13")
    elif case == "same":
        between = ("3.10.13", "v3.10.13")
    elif case == "bad op":
        op = "no_such_op"
    elif case == "bad tag text":
        between = ("3.10.13", "3.11.7\n--help")
    before = tree(tmp_path)
    state = clone_state(small_repo)
    status = run(repo, tmp_path, between=between, op=op)
    err = capsys.readouterr().err
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1, err
    assert tree(tmp_path) == before
    assert clone_state(small_repo) == state
    assert not (provision_cache.cache_root() / "commits").exists()


def test_the_numbers_of_a_message():
    issues, prs = bisect_commits.numbers_in(
        "[3.14] gh-117151: Increase io.DEFAULT_BUFFER_SIZE (GH-118144) (#118200)\n\n"
        "bpo-33671 and gh-117151 again; not gh-0, not xgh-5, not gh-12345678")
    assert issues == ["gh-117151", "bpo-33671"]
    assert prs == ["118144", "118200"]


# -- the real thing: CPython commits made of release tarballs, built and timed ----------------

@pytest.fixture
def release_repo(request, tmp_path):
    """The history 3.13.15 -> 3.14.7 -> 3.15.0rc2 and a cache for its builds, both kept in
    pytest's own cache directory (``.pytest_cache/d/commit-bisect``) so that a later run of
    this test reuses its builds; never the user's iomatrix cache."""
    base = Path(request.config.cache.mkdir("commit-bisect"))
    tarballs = release_history.find_tarballs([base / "iomatrix-cache" / "tarballs",
                                              USER_TARBALLS], fetch_into=base / "iomatrix-cache")
    missing = [r for r in release_history.RELEASES if r not in tarballs]
    if missing:
        pytest.skip(f"no tarball of {', '.join(missing)} in the iomatrix cache and none can be "
                    "fetched from Debian's source pool (apt-get source) here")
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler to build CPython with")
    shas = release_history.make_history(base / "cpython", tarballs)
    return base, shas


@pytest.mark.slow
def test_the_3_14_buffer_change_is_bisected_to_the_3_14_7_commit(release_repo, tmp_path,
                                                                  capsys, monkeypatch):
    """3.14 raised the default buffer size (gh-117151): seek + read(64) on a mapped file's
    slices moved 5x from 3.13.15 to 3.14. Between v3.13.15 and v3.15.0rc2, the commit that
    carries it is 3.14.7's: built (or reused), timed against both ends, named."""
    base, shas = release_repo
    monkeypatch.setenv("IOMATRIX_CACHE", str(base / "iomatrix-cache"))
    repo = base / "cpython"
    before = clone_state(repo)
    started = time.monotonic()
    status = bisect_commits.main(["mmapio_slices_seek_read", "--between", "3.13.15", "3.15.0rc2",
                          "--cpython-repo", str(repo), "--profile", "smoke", "--counters", "off",
                          "--jobs", "2", "--results-dir", str(tmp_path / "results"),
                          "--run-id", "real"], **QUIET)
    out, err = capsys.readouterr()
    print(f"commit bisect: {time.monotonic() - started:.0f} s", file=sys.stderr)
    assert status == 0, err[-3000:]
    assert f"**The op moves first in commit `{shas['3.14.7']}`: Python 3.14.7**" in out
    assert "The commit before it, on v3.13.15's side: v3.13.15 itself." in out
    assert clone_state(repo) == before
    for release in release_history.RELEASES:
        assert commit_build.read_commit_build(
            shas[release], provision_cache.RECIPES["lineage"]) is not None


def test_a_build_another_process_is_making_is_waited_for_not_made_twice(tmp_path, old_new):
    """Two bisects sharing a cache: the second waits while the first's staging directory
    names a live process, then builds (or reuses) once that process is gone."""
    old, _ = old_new
    repo = tmp_path / "cpython"
    sha = stand_in_history(repo, [(old, "Python 3.10.13", "v3.10.13", {})])[0]
    recipe = provision_cache.RECIPES["lineage"]
    commits = commit_build.commits_dir()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    reaper = threading.Thread(target=other.wait)   # reaped when it ends: no zombie stays "live"
    reaper.start()
    partial = commits / f".{sha}.partial-{other.pid}"
    partial.mkdir(parents=True)
    said = []
    try:
        prefix = commit_build.build_commit(commit_build.open_repo(repo), sha, recipe,
                                           say=said.append)
    finally:
        other.kill()
        reaper.join()
    assert said[0] == f"waiting for process {other.pid}, which is building {sha[:10]} into " \
                      "the cache"
    assert commit_build.read_commit_build(sha, recipe)["commit"] == sha
    assert prefix == commits / sha
    assert not partial.exists()   # the dead process's staging directory, removed
