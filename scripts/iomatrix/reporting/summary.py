"""The findings in words: the summary paragraph a reader can quote, and its pieces.

The main page opens with ``summary_paragraph`` (after the pooled figures' sentence in a
pooled report) and the report command prints it: the
findings grouped by release step, direction and kind of op (``op_kind``, ``kind_phrase``),
each group with the range of its ratios (``magnitude``) and what the counts say
(``counts_phrase``). ``Labeller`` shows an interpreter's exact version where its label
first appears on a page. Split from pages.py, which re-exports these names.
"""
from __future__ import annotations

import math
import re

from iomatrix.analysing import ablation, controls, counts, evidence, status, study
from iomatrix.analysing.analysis import RunData, series_info, timed_bytes
from iomatrix.analysing.comparisons import REPEATS, Analysis
from iomatrix.reporting.markdown import code, fmt_ratio, md, nowrap, table


class Labeller:
    """Interpreter labels as a page shows them: the exact version beside a label where it
    first appears ("3.14 (3.14.7)"), the label alone after that."""

    def __init__(self, data: RunData):
        self.data = data
        self.seen: set = set()

    def __call__(self, series: str, style=lambda text: text) -> str:
        version = series_info(self.data, series).get("version")
        first = series not in self.seen
        self.seen.add(series)
        if first and version and str(version) != series:
            return f"{style(series)} ({md(version) if style is code else version})"
        return style(series)


# The study's ops name what they do: read_byBlocks_binaryMode reads a binary file in blocks.
STUDY_OP = re.compile(r"^(read|write)_(byLines|byBlocks|allAtOnce)_(text|binary)Mode(\[.*\])?$")
PATTERN_WORDS = {"byLines": "line-by-line", "byBlocks": "block", "allAtOnce": "whole-file"}
MAX_CLAUSES = 5


def op_kind(op: str, category: str) -> tuple:
    """(group, verb, mode) of an op for the summary: the study's ops group by how they
    read or write (in blocks, line by line, the whole file), the others by category."""
    match = STUDY_OP.match(op)
    if match:
        return f"{match.group(2)}:{match.group(3)}", match.group(1), match.group(3)
    return f"category:{category}", None, None


CATEGORY_WORDS = {"read-text": "text reads", "read-binary": "binary reads",
                  "write-text": "text writes", "write-binary": "binary writes",
                  "copy": "file copies", "manyfiles": "many-small-files ops",
                  "mmap": "mmap and seek reads", "mmap-write": "mmap writes",
                  "text-read": "text reads", "text-write": "text writes",
                  "text-memory": "in-memory text ops"}


def kind_phrase(group: str, ops: list, verbs: set, modes: set) -> str:
    """'binary block reads and writes', 'line-by-line reads', 'mmapio_slices_seek_read',
    '4 mmap and seek reads (mmapio_slices_seek_read and 3 more)': ``ops`` largest first."""
    if group.startswith("category:"):
        names = list(dict.fromkeys(ops))
        if len(names) == 1:
            return names[0]
        category = group.split(":", 1)[1]
        return (f"{len(names)} {CATEGORY_WORDS.get(category, category + ' ops')} "
                f"({names[0]} and {len(names) - 1} more)")
    verb_words = " and ".join(v + "s" for v in ("read", "write") if v in verbs)
    mode = next(iter(modes)) + " " if len(modes) == 1 else ""
    return f"{mode}{PATTERN_WORDS[group.split(':')[0]]} {verb_words}"


def _amount(value: float) -> str:
    """3.2, 18, 2: a factor as a reader says it."""
    return f"{value:.0f}" if value >= 9.5 else f"{value:.1f}".removesuffix(".0")


def factor_span(factors: list) -> str:
    """'2 to 3.2 times' or '24 to 73%' (a range reaching 2 in times, else as the percentage
    it adds): the range of a group's factors, each >= 1."""
    low, high = min(factors), max(factors)
    if high >= 2:
        return (_amount(low) if _amount(low) == _amount(high)
                else f"{_amount(low)} to {_amount(high)}") + " times"
    low_pct, high_pct = round((low - 1) * 100), round((high - 1) * 100)
    return (f"{low_pct}" if low_pct == high_pct else f"{low_pct} to {high_pct}") + "%"


def magnitude(ratios: list) -> str:
    """'2 to 3.2 times faster', '24 to 73% slower': the range of a group's ratios."""
    slower = ratios[0] > 1
    return f"{factor_span([r if slower else 1 / r for r in ratios])} " + \
        ("slower" if slower else "faster")


def counts_phrase(counted: dict, ops: list, a: str, b: str, slower: bool) -> str:
    """What the counts of a group of ops say between ``a`` and ``b``: the system calls or the
    bytes they move when they all moved one way by half or more, or the instructions when
    they all moved one way by 5% or more (a count that moved with the time first), else that
    neither moved; '' when the counting pass did not count both sides."""
    moved = {}
    for counter in ("syscalls", "instructions", "syscall_bytes"):
        found = [(counted.get((a, op, counter)), counted.get((b, op, counter)))
                 for op in sorted(set(ops))]
        if found and all(isinstance(x, (int, float)) and isinstance(y, (int, float))
                         and x > 0 and y > 0 for x, y in found):
            moved[counter] = [y / x for x, y in found]
    phrases = []
    for counter, name, beyond in (("syscalls", "system calls", 1.5),
                                  ("instructions", "instructions", 1.05),
                                  ("syscall_bytes", "bytes moved by system calls", 1.5)):
        ratios = moved.get(counter)
        if ratios and (all(r <= 1 / beyond for r in ratios) or all(r >= beyond for r in ratios)):
            fewer = ratios[0] < 1
            phrases.append((fewer == slower, f"with {factor_span([1 / r if fewer else r for r in ratios])} "
                                             f"{'fewer' if fewer else 'more'} {name}"))
    if phrases:
        return sorted(phrases, key=lambda p: p[0])[0][1]     # False (moved with it) first
    if {"syscalls", "instructions"} <= set(moved) and \
            all(abs(r - 1) < 0.05 for rs in moved.values() for r in rs):
        return "with the same system calls and instructions (within 5%)"
    return ""


def counts_index(data: RunData) -> dict:
    """{(series, op, counter): count per call} of the counting pass; {} when it did not run."""
    if data.run is None:
        return {}
    return {(r["series"], r["op"], r["counter"]): r.get("per_call")
            for r in counts.load_counts(data.run.path)}


def summary_paragraph(an: Analysis, label: Labeller | None = None) -> str:
    """The findings in words, plain text (the main page opens with it; the report command
    prints it): grouped by release step, direction and kind of op, each group with the
    range of its ratios and what the counts say, the group with the largest change first."""
    label = label or Labeller(an.data)
    if len(an.lin.releases) < 2:
        return (f"This run has no release lineage ({len(an.lin.releases)} plain CPython "
                "release), so there are no release steps to summarise.")
    # I/O only: a control's own step and a step its control explains are the code around
    # the I/O (analysing.controls), not what the summary speaks of.
    findings = controls.io_findings(an)
    firm_known = any(getattr(f, "firmness", None) is not None for f in findings)
    quoted = [f for f in findings if not firm_known or getattr(f, "firmness", None) == "firm"]
    first, last = an.lin.releases[0], an.lin.releases[-1]
    if not quoted:
        return (f"From {label(first)} to {label(last)}, no release step changed an op "
                f"{'firmly ' if firm_known else ''}by more than {an.threshold:.0%} "
                f"({len(an.ops)} ops, {len(an.steps)} steps).")
    groups: dict = {}
    for f in quoted:
        group, verb, mode = op_kind(f.op, an.category_of.get(f.op, ""))
        key = (f.a, f.b, f.comparison.ratio > 1, group)
        entry = groups.setdefault(key, {"findings": [], "verbs": set(), "modes": set()})
        entry["findings"].append(f)
        entry["verbs"].add(verb)
        entry["modes"].add(mode)
    ranked = sorted(groups.items(), key=lambda kv: -max(abs(math.log(f.comparison.ratio))
                                                        for f in kv[1]["findings"]))
    counted = counts_index(an.data)
    clauses = []
    for (a, b, _, group), entry in ranked[:MAX_CLAUSES]:
        ops = [f.op for f in sorted(entry["findings"],
                                    key=lambda f: -abs(math.log(f.comparison.ratio)))]
        clause = (f"{label(b)} made {kind_phrase(group, ops, entry['verbs'], entry['modes'])} "
                  f"{magnitude([f.comparison.ratio for f in entry['findings']])} than "
                  f"{label(a)}")
        said = counts_phrase(counted, ops, a, b, entry["findings"][0].comparison.ratio > 1)
        if said:    # the counts' size, where the counting pass counted smaller files
            said += counting_size(an, ops, a, b)
        notes = {bytes_on_2x_note(an, op, a) for op in ops}
        if None not in notes:
            clause += f" ({'; '.join(sorted(notes))}: the 2009 study's comparison)"
        clauses.append(clause + (f", {said}" if said else ""))
    slower = sum(f.comparison.ratio > 1 for f in quoted)
    text = "; ".join(clauses) + ". "
    text = text[0].upper() + text[1:]
    text += (f"In all, {len(quoted)} {'firm ' if firm_known else ''}"
             f"change{'s' * (len(quoted) > 1)} beyond "
             f"{an.threshold:.0%} ({slower} slower, {len(quoted) - slower} faster) over "
             f"{len(an.steps)} release steps from {label(first)} to {label(last)} and "
             f"{len(an.ops)} ops.")
    quoted_ablation = ablation_sentence(an, quoted, label)
    return text + (f" {quoted_ablation}" if quoted_ablation else "")


def open_regressions(an: Analysis, label: Labeller) -> list[str]:
    """The first screen's short table: the regressions between 3.x releases (firm, or
    repeated in every pooled run: comparisons.REPEATS) still open in a maintained branch
    (status.branches_now: bugfix, security fixes only or pre-release, and neither fixed nor
    partly fixed there), each with its step, ratio, the maintained branches it is open in
    and the newer patch releases that fixed it or part of it; [] when there is none. The
    steps from 2.x (Python 3's io stack) are in the findings, not here: no branch will
    change them."""
    rows = []
    # every I/O slowdown, not only the findings' top MAX_FINDINGS: an open regression that
    # ranks eleventh by size is still open (3.14's ASCII decode, 1.35, once did)
    for f in (f for f in controls.io_findings(an) if f.comparison.ratio > 1):
        major = (series_info(an.data, f.a).get("version_info") or [0])[0]
        backed = getattr(f, "firmness", None) == "firm" or \
            getattr(f, "evidence", None) == REPEATS
        maintained = [row for row in status.branches_now(an, f) if row.lifecycle.maintained]
        still = [row for row in maintained if row.open]
        if major < 3 or not backed or not still:
            continue
        fixed = [f"{'.'.join(map(str, row.branch.minor))}: {row.branch.fixed_in} "
                 f"({row.branch.change})" for row in maintained if row.branch.change]
        rows.append([code(f.op), nowrap(md(f"{label(f.a)} → {label(f.b)}")),
                     nowrap(fmt_ratio(f.comparison, an.threshold, interval=False)),
                     md(regression_backing(an, f)),
                     "<br>".join(md(branch_words(row)) for row in still),
                     md("; ".join(fixed) if fixed else "no")])
    if not rows:
        return []
    return ["## Open regressions", "",
            "The slowdowns between 3.x releases, firm or the same way in every pooled "
            "run, that a maintained branch's newest patch at hand still has (its lifecycle on "
            "the run's date; \"now\" below the findings says how each is read), and the "
            "newer patch releases that fixed it, or part of it, in another branch.", "",
            table(rows, ["op", "step", "ratio", "backed by", "open in", "fixed in a newer patch"],
                  ["left", "left", "right", "left", "left", "left"]), ""]


def regression_backing(an: Analysis, f) -> str:
    """What an open regression rests on, in the words the pool and the finding's row use:
    "the counts" (they moved with the time), "memory behaviour" (estimated cycles did), or
    its repetition ("the same way in every run (12 of 12, 3 boots, 1 CPU kind: AMD EPYC
    only)"), which is not firm where it was seen on one CPU kind."""
    repeated = an.repeated_of(f)
    if repeated is not None:
        # with its isolated reproducer's figures where one ran (evidence.cause_test's words)
        test = evidence.verdict_for(an, f).test
        said = test.words if test is not None and test.by == evidence.REPEAT_TEST \
            else repeated.words()
        return said + ("" if repeated.may_be_firm else "; not firm")
    return {"confirmed": "the counts", "memory": "memory behaviour"}.get(
        getattr(f, "evidence", None), "its timing (not counted)")


def branch_words(row) -> str:
    """"3.12 (security fixes only): has it, will not get gh-144380", "3.14: has it", plain
    text: the branch, its lifecycle where it is not bugfix or pre-release, its state
    (status.BranchNow)."""
    minor = ".".join(map(str, row.branch.minor))
    phase = row.lifecycle.phase
    shown = "" if phase in (status.BUGFIX, status.PRERELEASE) else f" ({phase})"
    return f"{minor}{shown}: {row.state_words()}"


def ablation_sentence(an: Analysis, findings: list, label) -> str:
    """One ablation's result in words (analysing.ablation), the largest step's whose ablation
    ran, one that confirms first: "An ablation tests one: read_byBlocks_binaryMode's 3.13.15
    -> 3.14.7 (0.49) is confirmed by ablation: with a 4 KiB buffer ..."; '' without one."""
    ran = []
    for f in sorted(findings, key=lambda f: -abs(math.log(f.comparison.ratio))):
        result = ablation.outcome(an, f)
        if result is not None and not result.failed:
            ran.append((not result.reproduces, f, result))
    if not ran:
        return ""
    _, f, result = min(ran, key=lambda item: item[0])
    return (f"An ablation tests {'one' if len(ran) == 1 else f'{len(ran)} of them'}: "
            f"{f.op}'s {label(f.a)} → {label(f.b)} ({f.comparison.ratio:.2f}) is "
            f"{result.words}.")


def counting_size(an: Analysis, ops: list, a: str, b: str) -> str:
    """" (per call at 1/8 of the timed size)" where an older run's counting pass counted these
    ops on smaller fixtures than it timed them on (counts.counting_divisor); "" otherwise (a
    newer run's counts are per call at the timed size: its bytes per call and the timing's
    bytes per value need not be the same measure, so no divisor is made of them)."""
    nbytes = timed_bytes(an.data.frame)
    divisors = [d for op in dict.fromkeys(ops)
                if counts.counted_smaller(an.counted, op, (a, b))
                and (d := counts.counting_divisor(an.counted, op, (a, b), nbytes.get(op)))]
    if not divisors:
        return ""
    return f" (per call at {counts.fmt_divisor(divisors)} of the timed size)"


def bytes_on_2x_note(an: Analysis, op: str, older: str) -> str | None:
    """The note of a step from 2.x on an op that 2.x's builtin open() does in bytes
    (study.undecoded_on_2x: the API its suite declares the op uses on 2.7): the 2009 study's
    comparison, kept and labelled."""
    major = (series_info(an.data, older).get("version_info") or [0])[0]
    if major == 2 and study.undecoded_on_2x(an.suite_of.get(op, ""),
                                            an.category_of.get(op, ""), op):
        return study.bytes_on_2x_note(op, an.category_of.get(op, ""))
    return None
