"""Each branch's place in CPython's release cycle (analysing.status.lifecycle_of): the table of
.0 dates and PEP 602's rule on the run's date; a branch the table lacks is "lifecycle
unknown", never guessed. With a regression's status (branches_now): "3.12 ... will not get
gh-144380". The run and the changelog cache are those of test_status (real entries of
CPython's NEWS, trimmed, in real tarballs)."""
from __future__ import annotations

import datetime

import pytest

from iomatrix.analysing import analysis, status
from iomatrix.reporting import pages
from test_status import regression, status_run

DAY = datetime.date(2026, 11, 27)


@pytest.mark.parametrize("minor, on, prerelease, phase, words", [
    ((3, 9), DAY, False, status.END_OF_LIFE, "end of life since 2025-10"),
    ((3, 10), DAY, False, status.END_OF_LIFE, "end of life since 2026-10"),
    ((3, 12), DAY, False, status.SECURITY, "security fixes only, to 2028-10"),
    # 2 years after 3.13.0 (2024-10-07): security-only by the rule
    ((3, 13), DAY, False, status.SECURITY, "security fixes only, to 2029-10"),
    ((3, 13), datetime.date(2026, 10, 6), False, status.BUGFIX, "bugfix"),
    ((3, 14), DAY, False, status.BUGFIX, "bugfix"),
    ((3, 15), DAY, True, status.PRERELEASE, "pre-release"),
    # the table has no .0 of 3.15: a final 3.15 at hand may be out of the table's knowledge
    ((3, 15), DAY, False, status.LIFECYCLE_UNKNOWN, "lifecycle unknown"),
    ((3, 16), DAY, True, status.LIFECYCLE_UNKNOWN, "lifecycle unknown"),
    ((4, 0), DAY, False, status.LIFECYCLE_UNKNOWN, "lifecycle unknown"),
    ((2, 7), DAY, False, status.END_OF_LIFE, "end of life since 2020-01"),
    ((2, 7), datetime.date(2019, 12, 31), False, status.BUGFIX, "bugfix"),
    ((3, 14), datetime.date(2025, 5, 1), False, status.PRERELEASE, "pre-release"),
    ((3, 12), None, False, status.LIFECYCLE_UNKNOWN, "lifecycle unknown"),
])
def test_the_phase_of_a_branch_on_a_day(minor, on, prerelease, phase, words):
    life = status.lifecycle_of(minor, on, prerelease)
    assert (life.phase, life.words()) == (phase, words)
    assert life.maintained == (phase in (status.BUGFIX, status.SECURITY, status.PRERELEASE))


def test_the_rule_s_boundaries_are_the_day_itself():
    first = status.FIRST_RELEASES[(3, 12)]
    assert status.lifecycle_of((3, 12), first, False).phase == status.BUGFIX
    # before 3.13 bugfix releases for 18 months (3.12: to 2025-04-02), from 3.13 on for 2 years
    assert status.lifecycle_of((3, 12), datetime.date(2025, 4, 1), False).phase == status.BUGFIX
    assert status.lifecycle_of((3, 12), datetime.date(2025, 4, 2), False).phase == \
        status.SECURITY
    assert status.lifecycle_of((3, 13), datetime.date(2026, 10, 6), False).phase == status.BUGFIX
    assert status.lifecycle_of((3, 13), datetime.date(2026, 10, 7), False).phase == \
        status.SECURITY
    assert status._months_after(datetime.date(2023, 8, 31), 6) == datetime.date(2024, 2, 29)
    assert status.lifecycle_of((3, 12), datetime.date(2028, 10, 2), False).phase == \
        status.END_OF_LIFE


def test_branches_now_say_which_branch_will_not_get_the_fix(tmp_path, monkeypatch):
    data = analysis.load_run(status_run(tmp_path, monkeypatch))
    an = pages.analyse(data, None, 0.05)
    f = regression(an)
    assert status.run_date(an) == datetime.date(2026, 1, 1)
    rows = {row.branch.minor: row for row in status.branches_now(an, f)}
    assert [row.words() for row in rows.values()] == [
        "3.12: security fixes only, to 2028-10; has it, will not get gh-144380",
        "3.13: bugfix; fixed in 3.13.12 by gh-144380",
        "3.14: bugfix; fixed in 3.14.3 by gh-144380"]
    assert rows[(3, 12)].open and not rows[(3, 13)].open
    assert all(row.lifecycle.maintained for row in rows.values())
    # the page says what the table is
    assert "a table of each minor version's .0 date (2.7 to 3.14" in status.note(an, [f])


def test_a_run_without_a_date_has_no_lifecycle_and_guesses_none(tmp_path, monkeypatch):
    run = status_run(tmp_path, monkeypatch)
    manifest_path = run.path / "manifest.json"
    manifest_path.write_text(manifest_path.read_text().replace(
        '"started": "2026-01-01T00:00:00+00:00"', '"started": "<b>soon</b>"'))
    an = pages.analyse(analysis.load_run(run), None, 0.05)
    f = regression(an)
    assert status.run_date(an) is None     # the run id "T" has no date either
    assert {row.lifecycle.phase for row in status.branches_now(an, f)} == \
        {status.LIFECYCLE_UNKNOWN}
    assert status.short_words(an, f).startswith("3.12 has it, lifecycle unknown;")
