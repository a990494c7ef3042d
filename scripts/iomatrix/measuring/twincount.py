"""Which ops the A/A twin counts again; the rest of its system calls, and its instructions,
come from the counts cache.

The A/A twin (``--aa``: the same interpreter binary run a second time as ``<label>-aa``) is
there to show how exactly counts repeat. Counting all its ops again cost the main command
~40 s of its 46 s of counting with every other series cached (strace and valgrind over 42
ops, 2026-11-27), and a whole series (~45 s of CPU) on a fresh machine. So the twin counts
again the system calls of a sample of ``AA_RECOUNT`` ops, drawn from the session's seed (the
manifest's ``seed``): successive runs check different ops and, over runs, every op. Its other
ops' system calls, and the instructions of every op, are its original's, taken from the counts
cache (the same binary: the same key), and are no evidence of repeating; the report compares
only what was counted again (``iomatrix.analysing.counts.aa_exactness``). Rusage is always
counted: it is never cached. An op neither sampled nor in the cache is counted (never a hole).

Why not the sample's instructions: an op's instructions depend on what ran before it in its
worker process (every op of the series, suite by suite). ``write_byBlocks_textMode`` of 3.13,
counted by callgrind after the 26 ops before it: 22,929,048 (its original: 22,929,985);
after lutz2009's 17 only: 23,562,473 (+2.8%); alone: 23,045,763 (+0.5%) (2026-11-27). Six
sampled ops counted in a process of their own differed from their originals by up to 2.2%,
against at most 0.06% for a twin counting every op, so such a count is not an A/A check; and
counting a sampled op after everything that runs before it costs about the whole pass.
System calls do not depend on it: six sampled ops' were all equal to their originals'.

``--aa-recount all`` (the matrix and main command) counts every op again, as before.
"""
from __future__ import annotations

import argparse
import random

# Six ops of the main command's 42. What the twin's sample costs is mostly fixed: one strace
# worker's start-up (about 1.3 s) and the rusage pass over every op (1-1.5 s); six ops add
# about 1.5 s under strace (the twin's counting took 3.2 s against 34.0 s for every op and
# counter, 3.13, the smoke fixtures, this 2-core VM, 2026-11-27); each further op adds about
# 0.3 s at the quick profile's sizes (strace: 14.5 s for 42 ops). With six, each op is
# checked in one run of 7 on average; system calls repeat exactly, so six ops show a
# difference where there is one.
AA_RECOUNT = 6
ALL = "all"
MAX_RECOUNT = 100_000


def valid_recount(value) -> bool:
    """An ``--aa-recount`` value: ``all``, or an int from 1 to MAX_RECOUNT."""
    return value == ALL or (type(value) is int and 1 <= value <= MAX_RECOUNT)


def parse_aa_recount(value: str) -> int | str:
    """``--aa-recount``: ``all``, or how many of the twin's ops to count again (1 or more)."""
    value = value.strip()
    parsed = int(value) if value.isdigit() else value
    if not valid_recount(parsed):
        raise argparse.ArgumentTypeError(
            f"{value!r}: the number of the A/A twin's ops to count again (1 to {MAX_RECOUNT}), "
            f"or {ALL}")
    return parsed


def recount_of(counter: str, sample: frozenset) -> frozenset:
    """The ops of ``sample`` whose ``counter`` the twin counts again: the system calls only
    (the module docstring says why not the instructions)."""
    return sample if counter == "syscalls" else frozenset()


def sample(ops, seed: int, recount) -> frozenset | None:
    """The ops of ``ops`` (names) the twin counts again: ``recount`` of them drawn from
    ``seed``; None for every op (``all``, or as many as there are)."""
    names = sorted(set(ops))
    if recount == ALL or recount >= len(names):
        return None
    # random.Random of an int is the same sequence in every process and Python 3 version.
    return frozenset(random.Random(seed).sample(names, recount))
