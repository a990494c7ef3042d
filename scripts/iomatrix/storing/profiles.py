"""The profiles: how many processes, values and warm-ups a run takes.

Their names are the results contract's (``suites/_results.py``), where the
suites look up their fixture sizes per profile.
"""
from __future__ import annotations

import dataclasses

from iomatrix.storing import contract


@dataclasses.dataclass(frozen=True)
class Profile:
    name: str
    rounds: int          # worker processes per op and interpreter, at least
    max_rounds: int      # at most, with the extra rounds of loose ops (iomatrix.measuring.sampling)
    budget_seconds: int  # the timing pass stops adding extra rounds after this long
    values: int          # timed values per process
    warmups: int         # untimed warm-up values per process
    pypy_warmups: int    # PyPy's JIT needs more before its values are steady
    description: str
    # Rounds of the series timed again under a further allocator condition (spec
    # allocator_twins): one process per op, so a round costs a process start per op; 6 is
    # the fewest rounds whose paired interval can exclude 1 (Wilcoxon: 2/2**6 < 0.05).
    twin_rounds: int = 1
    # Extra rounds may go on this long after the planned rounds even where those used up
    # budget_seconds (a main command of 16 interpreters on a slow day). Without it the
    # main commands of 2026-11-25/26 took 0 extra rounds (68-92 steps left borderline),
    # where those of 2026-11-24 took 15-32: the host ran the planned rounds 2.5 times
    # slower, so sampling stopped just when the noise was largest.
    extra_seconds: int = 0
    # The C program's 1 MiB blocks are the fastest of this many calls (measuring.native):
    # 7 where a page shows them; 2 in smoke runs, which prove only that it runs (7 took
    # about 4.4 s of every test's smoke run, mostly waiting on the disk).
    native_repeat: int = 7


PROFILES = {
    # smoke proves that everything runs, not how fast: one process per suite, one value
    "smoke": Profile("smoke", rounds=1, max_rounds=1, budget_seconds=0, values=1, warmups=0,
                     pypy_warmups=0, twin_rounds=1, native_repeat=2,
                     description="seconds per interpreter, one value per op; for tests"),
    # 8 planned rounds of one value each, then extra rounds for the ops whose release steps are
    # still borderline (iomatrix.measuring.sampling) while the budget allows. One value, not
    # two: every estimate counts processes, and with 6 rounds (two values each, to fit the main
    # command's 10 minutes) one wild round of the 6 took a step's significance, so a firm
    # finding of one run was not a finding in the next (41 of 48 in every other run); with 8 a
    # round can go the other way and the step stay significant. The untouched allocator's
    # one-op series keep 6 rounds (twin_rounds). The extra rounds: until 300 s from the start
    # of the run, and at least 75 s after the planned rounds (450 and 150 before 2026-11-27:
    # the main command then took 11 min 42 s with its counts cached). Cut at 75 s, the extra
    # rounds of the reference run and of the next main command left 6 and 9 of 462 release-step
    # and A/A cells with another verdict than the whole 150 s gave, all of them borderline
    # either way, none reversed, the A/A twin flagging 0 of 25 ops
    # (docs/experiments/2026-11-27-main-speed.md).
    "quick": Profile("quick", rounds=8, max_rounds=60, budget_seconds=300, values=1, warmups=1,
                     pypy_warmups=3, twin_rounds=6, extra_seconds=75,
                     description="the default: minutes for the whole machine"),
    "full": Profile("full", rounds=40, max_rounds=160, budget_seconds=3600, values=3, warmups=1,
                    pypy_warmups=10, twin_rounds=20, extra_seconds=600,
                    description="pyperf's rigorous settings: 40 processes x 3 values, more "
                                "where noisy"),
}
assert tuple(PROFILES) == contract.PROFILES
