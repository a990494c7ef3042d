"""upstream's issue text checks the tracker and each branch before it says "not fixed"
(issue 57): a later changelog entry that is the same change (a measured bracket of another
branch named it) is said as already on the tracker and as the fix of the branches whose
releases list it; a security-only branch "will not get" it; the title names the release
that brought the change; the counts carry the bytes the system calls moved; the reproducer
runs by default under the builds of both releases found here, else ISSUE.md says "not run
here". The run and changelog cache are test_status's (real NEWS entries, trimmed, in real
tarballs)."""
from __future__ import annotations

import re

import pytest

from iomatrix.commands import issue_parts, upstream
from test_changelog import TRIMMED, TRIMMED_313
from test_evidence import make_tarball
from test_status import status_run

QUIET = dict(log=lambda *a: None)
pytestmark = pytest.mark.usefixtures("no_changelog_download")
OP = "read_byLines_binaryMode"


def draft(tmp_path, *extra) -> str:
    out = tmp_path.parent / f"{tmp_path.name}-issue"    # outside the results store
    assert upstream.main([OP, "--between", "3.11.7", "3.12.1", "--results-dir", str(tmp_path),
                          "--out-dir", str(out), *extra], **QUIET) == 0
    return (out / "ISSUE.md").read_text()


def test_a_fix_on_the_tracker_is_found_and_no_branch_with_it_is_called_not_fixed(
        tmp_path, monkeypatch):
    status_run(tmp_path, monkeypatch)
    issue = draft(tmp_path, "--no-run-repro")
    assert "**Already on the tracker:** [gh-144380](https://github.com/python/cpython/issues/" \
        "144380) (in 3.13.12, 3.14.3)" in issue
    assert "it is not a new issue" in issue
    # the run's 3.14.7 is back at 3.11's time and the 3.14 changelog lists the fix in 3.14.3
    assert "3.14 (bugfix): fixed in 3.14.3 by gh-144380 (the changelog's release" in issue
    assert "Not fixed in the newest patch at hand of 3.12 (security fixes only, to 2028-10: " \
        "will not get gh-144380)." in issue
    known = next(line for line in issue.splitlines() if line.startswith("**Known fixes:**"))
    assert "3.14 (" not in known.split("Not fixed")[1]
    assert "*Lifecycle:* a branch's lifecycle" in issue
    assert "**Reproducer not run here**: --no-run-repro was given." in issue
    # the cause named is only "tested" where cause_test says how; the title then says the
    # release measured, not the untested entry's
    lead = issue.splitlines()[0]
    cause = next(line for line in issue.splitlines() if "cause" in line.split(":**")[0])
    assert not cause.startswith("**Tested cause:**")       # never without how it was tested
    if not cause.startswith("**Tested cause ("):
        assert lead.endswith("since 3.12.1 (than 3.11.7)")


def test_a_changelog_entry_s_markup_is_data_in_the_issue(tmp_path, monkeypatch):
    status_run(tmp_path, monkeypatch)
    for version, news in (("3.13.15", TRIMMED_313), ("3.14.7", TRIMMED)):
        hostile = news.replace(
            "Improve performance of :class:`io.BufferedReader` line",
            "Improve performance of :class:`io.BufferedReader` line <script>alert(1)</script> "
            "[x](javascript:alert(1)) # heading", 1)
        assert hostile != news
        make_tarball(tmp_path / "cache" / "tarballs" / f"Python-{version}.tar.xz",
                     f"Python-{version}", {"Misc/NEWS": hostile})
    issue = draft(tmp_path, "--no-run-repro")
    tracker = next(line for line in issue.splitlines() if "Already on the tracker" in line)
    assert "<script>" not in issue and not re.search(r"(?<!\\)\]\(javascript", issue)
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\[x\\](javascript:alert(1))" in tracker


def test_the_title_names_the_release_that_brought_the_change():
    assert issue_parts.title("Reading 64-byte records", "op", "3.13.15", "3.14.7", 4.14,
                             "3.14.0a6") == \
        "# Reading 64-byte records is 4.14x slower since 3.14.0a6 (measured 3.13.15 -> 3.14.7)"
    assert issue_parts.title(None, "op", "3.13.15", "3.14.7", 4.14, None) == \
        "# op is 4.14x slower since 3.14.7 (than 3.13.15)"


def test_the_counts_carry_the_bytes_the_system_calls_moved():
    found = {"old": "a", "new": "b", "counts": {
        "a": {"syscalls": 40007.0, "syscall_bytes": 82e6, "syscall_bytes:read": 82e6,
              "syscall_bytes:<b>x": 1.0},
        "b": {"syscalls": 40005.0, "syscall_bytes": 2.6e9, "syscall_bytes:read": 2.6e9,
              "syscall_bytes:<b>x": 1.0}}}
    lines = upstream.counts_lines(found)
    assert "| bytes moved by system calls | 82 MB | 2.6 GB |" in lines
    assert "| `read` bytes | 82 MB | 2.6 GB |" in lines
    assert not any("<b>" in line for line in lines)


def test_the_reproducer_runs_by_default_under_both_builds_found_here(tmp_path, monkeypatch):
    old, new = upstream.builds_of(upstream.interpreters_here(), "3.11.7", "3.12.1")
    if old is None or new is None:
        pytest.skip("no pyenv or provisioned build of 3.11.7 and 3.12.1 here")
    status_run(tmp_path, monkeypatch)
    issue = draft(tmp_path, "--repeat", "1")
    assert "**Reproducer run here** under 3.11.7 (`3.11`, pyenv) and 3.12.1 (`3.12`, " \
        "pyenv), 3 rounds of 1 timed batch, alternating; its own output:" in issue
    assert "ratio NEW/OLD: " in issue and "round 1 3.11.7: " in issue
