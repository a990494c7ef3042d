"""The profiles: how many processes, values and warm-ups a run takes.

Their names are the results contract's (``suites/_results.py``), where the
suites look up their fixture sizes per profile.
"""
from __future__ import annotations

import dataclasses

from iomatrix import contract


@dataclasses.dataclass(frozen=True)
class Profile:
    name: str
    rounds: int          # worker processes per op and interpreter
    values: int          # timed values per process
    warmups: int         # untimed warm-up values per process
    pypy_warmups: int    # PyPy's JIT needs more before its values are steady
    description: str


PROFILES = {
    # smoke proves that everything runs, not how fast: one process per suite, one value
    "smoke": Profile("smoke", 1, 1, 0, 0, "seconds per interpreter, one value per op; for tests"),
    "quick": Profile("quick", 10, 2, 1, 3, "the default: minutes for the whole machine"),
    "full": Profile("full", 40, 3, 1, 10, "pyperf's rigorous settings: 40 processes x 3 values"),
}
assert tuple(PROFILES) == contract.PROFILES
