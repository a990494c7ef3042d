"""Each CPython branch's place in the release cycle on a day: bugfix, security fixes only,
end of life, pre-release or lifecycle unknown, from a table of each minor version's .0 date
and PEP 602's rule (``lifecycle_of``). analysing.status says it of each branch of a
regression; analysing.evidence asks it whether a later patch of NEW's branch can be a backport
OLD already had (a branch that takes security fixes only carries no other change)."""
from __future__ import annotations

import datetime
from dataclasses import dataclass

# A branch's place in the release cycle (lifecycle_of)
BUGFIX, SECURITY, END_OF_LIFE, PRERELEASE, LIFECYCLE_UNKNOWN = (
    "bugfix", "security fixes only", "end of life", "pre-release", "lifecycle unknown")


# The .0 release date of each minor version, from the release schedule PEPs (PEP 373 for
# 2.7, 494 for 3.6, 537 for 3.7, 569 for 3.8, 596 for 3.9, 619 for 3.10, 664 for 3.11, 693
# for 3.12, 719 for 3.13, 745 for 3.14) and python.org's release pages. None: a branch with
# no .0 when the table was written (3.15: PEP 790 schedules it; a schedule is not a release).
# No network here: a newer branch is added by hand when its .0 is out.
FIRST_RELEASES = {
    (2, 7): datetime.date(2010, 7, 3),
    (3, 6): datetime.date(2016, 12, 23),
    (3, 7): datetime.date(2018, 6, 27),
    (3, 8): datetime.date(2019, 10, 14),
    (3, 9): datetime.date(2020, 10, 5),
    (3, 10): datetime.date(2021, 10, 4),
    (3, 11): datetime.date(2022, 10, 24),
    (3, 12): datetime.date(2023, 10, 2),
    (3, 13): datetime.date(2024, 10, 7),
    (3, 14): datetime.date(2025, 10, 7),
    (3, 15): None,
}
# PEP 602 (as amended for 3.13 on): bugfix releases for 2 years after the .0, then security
# fixes only, source releases, until 5 years after it. Before 3.13 the bugfix phase was 18
# months (3.12.10, April 2025, was 3.12's last bugfix release).
BUGFIX_MONTHS, BUGFIX_MONTHS_BEFORE_3_13, SUPPORT_YEARS = 24, 18, 5


# 2.7's end was its own (PEP 373): 2020-01-01, bugfix releases up to it.
END_OF_LIFE_DATES = {(2, 7): datetime.date(2020, 1, 1)}


def bugfix_months(minor: tuple) -> int:
    return BUGFIX_MONTHS if tuple(minor) >= (3, 13) else BUGFIX_MONTHS_BEFORE_3_13


def _years_after(day: datetime.date, years: int) -> datetime.date:
    return _months_after(day, 12 * years)


def _months_after(day: datetime.date, months: int) -> datetime.date:
    year, month = divmod(day.month - 1 + months, 12)
    for last in (day.day, 30, 29, 28):      # 31 August + 6 months: 28 February
        try:
            return day.replace(year=day.year + year, month=month + 1, day=last)
        except ValueError:
            continue
    raise AssertionError("every month has a 28th")


@dataclass(frozen=True)
class Lifecycle:
    """A minor version's place in the release cycle on a day (``lifecycle_of``)."""
    minor: tuple
    phase: str                      # BUGFIX, SECURITY, END_OF_LIFE, PRERELEASE, LIFECYCLE_UNKNOWN
    on: datetime.date | None        # the day it is taken on (the run's)
    end: datetime.date | None = None    # its end of life (from the table)

    @property
    def maintained(self) -> bool:
        """Whether the branch still gets releases with fixes (bugfix, security or coming)."""
        return self.phase in (BUGFIX, SECURITY, PRERELEASE)

    @property
    def gets_bugfixes(self) -> bool:
        return self.phase in (BUGFIX, PRERELEASE)

    def words(self) -> str:
        """"bugfix", "security fixes only, to 2028-10", "end of life since 2025-10",
        "pre-release", "lifecycle unknown", plain text."""
        if self.phase == SECURITY and self.end:
            return f"{SECURITY}, to {self.end:%Y-%m}"
        if self.phase == END_OF_LIFE and self.end:
            return f"{END_OF_LIFE} since {self.end:%Y-%m}"
        return self.phase


def lifecycle_of(minor: tuple, on: datetime.date | None, prerelease: bool = False) \
        -> Lifecycle:
    """``minor``'s phase on day ``on`` by FIRST_RELEASES and PEP 602's rule; a minor version
    the table does not hold, or no day, is LIFECYCLE_UNKNOWN (never guessed); one the table
    holds without a .0 is PRERELEASE when ``prerelease`` (its newest version at hand is a
    pre-release), else unknown (its .0 may be out)."""
    minor = tuple(minor)[:2]
    if on is None or minor not in FIRST_RELEASES:
        return Lifecycle(minor, LIFECYCLE_UNKNOWN, on)
    first = FIRST_RELEASES[minor]
    if first is None:
        return Lifecycle(minor, PRERELEASE if prerelease else LIFECYCLE_UNKNOWN, on)
    end = END_OF_LIFE_DATES.get(minor) or _years_after(first, SUPPORT_YEARS)
    bugfix_end = END_OF_LIFE_DATES.get(minor) or _months_after(first, bugfix_months(minor))
    if on < first:
        phase = PRERELEASE
    elif on < bugfix_end:
        phase = BUGFIX
    elif on < end:
        phase = SECURITY
    else:
        phase = END_OF_LIFE
    return Lifecycle(minor, phase, on, end)


def lifecycle_note() -> str:
    """What the lifecycle table is, for a page (plain text)."""
    newest = max(m for m, first in FIRST_RELEASES.items() if first is not None)
    return ("a branch's lifecycle (bugfix, security fixes only, end of life, pre-release) is "
            "taken on the run's date from a table of each minor version's .0 date (2.7 to "
            f"{'.'.join(map(str, newest))}, from the release schedule PEPs) and PEP 602's "
            "rule: bugfix releases for 2 years after the .0 (18 months before 3.13), security "
            f"fixes only until {SUPPORT_YEARS} years after it (2.7: to 2020-01-01, PEP 373); a "
            "branch the table lacks is \"lifecycle unknown\"")
