"""The upstream issue text leads with the tested cause and the status per branch, its title
says the behaviour, and changelog text reads as on docs.python.org: reST roles as code, the
rest escaped (issue 43, item 6)."""
from __future__ import annotations

from iomatrix.commands import upstream
from iomatrix.reporting import rst
from test_status import OP, status_run


def test_roles_and_literals_render_as_code_and_nothing_else_acts():
    assert rst.render("Improve performance of :class:`io.BufferedReader` line iteration "
                      "by ~49%.") == \
        "Improve performance of `io.BufferedReader` line iteration by \\~49%."
    assert rst.render("Increase ``io.DEFAULT_BUFFER_SIZE`` and adjust :func:`open` and "
                      ":meth:`~io.BufferedReader.peek` (:pep:`3116`, :gh:`117151`)") == \
        ("Increase `io.DEFAULT_BUFFER_SIZE` and adjust `open()` and `peek()` (PEP 3116, "
         "gh-117151)")
    assert rst.render(":attr:`buffer size <xml.parsers.expat.xmlparser.buffer_size>`") == \
        "`buffer size`"
    # A role's target is untrusted too: a backtick-free target with markup stays text.
    hostile = rst.render("- :class:`x|y` <script>alert(1)</script> [a](javascript:b) **c**")
    assert hostile.startswith("\\- x\\|y &lt;script&gt;")
    assert "[a]" not in hostile and "**" not in hostile and "<script>" not in hostile
    # Cut on the source, never inside a role.
    assert rst.render("abc :class:`io.BufferedReader` tail", limit=8) == "abc …"


def test_the_issue_leads_with_the_tested_cause_and_each_branch(tmp_path, monkeypatch):
    run = status_run(tmp_path, monkeypatch)
    found = upstream.finding(run.results_dir, run.run_id, OP, "3.11.7", "3.12.1")
    text = upstream.issue_text(OP, "lutz2009", "3.11.7", "3.12.1", found, "repro.py", None, [])
    lines = text.splitlines()
    assert lines[0] == "# Reading a binary file by lines is 1.80x slower since 3.12.1 (than 3.11.7)"
    # No counts, no bisect, no ablation in this run: no cause is tested, and it says so.
    assert lines[2].startswith("**No cause tested:** no changelog entry passes the acceptance "
                               "rule")
    # the fix a later release lists is on the tracker already; then each branch, with its
    # lifecycle on the run's date (2026-01-01)
    assert lines[4].startswith("**Already on the tracker:** [gh-144380]")
    assert lines[6] == ("**Status per branch** (the newest patch at hand of each minor "
                        "version, against 3.11; each branch's lifecycle on the run's date): "
                        "3.12 (security fixes only, to 2028-10): has it (3.12.1: 1.80x; newest "
                        "not known here), will not get gh-144380; 3.13 (bugfix): fixed in "
                        "3.13.12 by gh-144380 (3.13.0 had it; 3.13.15: 1.00x); 3.14 (bugfix): "
                        "fixed in 3.14.3 by gh-144380 (the changelog's release; 3.14.7: 1.00x).")
    assert text.index("**Status per branch**") < text.index("## Builds")
