"""How far the harness stands from a plain loop under glibc's untouched allocator.

The main page's allocator clause and section (allocator_section) say what the untouched
condition costs as the harness times it. Whether that is what an ordinary program sees is
``nox -s crosscheck``'s question: the same ops under the same condition timed by a plain
loop in fresh processes (iomatrix.commands.crosscheck), stored in the run it checked
(``RUN/crosscheck/``, storing.crosschecks). Here the newest stored crosscheck of the
untouched condition is put in words (the whole-file text read's gap, for the summary) and
in a table (the gap per op, for the section); a run without one says it was not
crosschecked. The gap is taken like for like: the plain loop's mean of settled calls
against the harness's means (a crosscheck stored before it kept that mean, version 1, has
the best call only, and the page says that is what it quotes); the best call is shown
beside it. Every name in a stored crosscheck is checked by the schema on read, and
printed through the page's escapes.
"""
from __future__ import annotations

import math

from iomatrix import stats
from iomatrix.analysing.analysis import RunData
from iomatrix.reporting.markdown import code, md, nowrap, table
from iomatrix.storing import crosschecks

# The op the summary's allocator clause speaks of: the study's whole-file text read, the op
# the untouched allocator moves most (docs/allocator.md).
TEXT_READ = "read_allAtOnce_textMode"
# Within this the words are "within N%", the bar issue 42 set; beyond, "N% above/below".
WITHIN = 0.10
NOT_CROSSCHECKED = "not crosschecked against a plain loop"


def newest(data: RunData) -> tuple[dict | None, dict | None, list]:
    """(the newest stored crosscheck of the untouched condition, that condition, the
    problems of stored files not used); (None, None, []) for a report without a run."""
    if data.run is None:
        return None, None, []
    return crosschecks.newest_untouched(data.run.path)


def standing(gap: float) -> str:
    """The harness's ratio against a plain loop's in words: 'within 5%', '29% above'."""
    off = 1 / gap - 1     # gap = plain / harness; off: how far the harness's ratio is
    percent = abs(off) * 100
    if abs(off) <= WITHIN:
        return f"within {max(1, math.ceil(percent - 1e-9))}%"
    return f"{percent:.0f}% {'above' if off > 0 else 'below'}"


def summary_words(data: RunData) -> str:
    """The summary's words on the crosscheck: the whole-file text read's B/A by the harness
    against a plain loop's in fresh processes, and when; or 'not crosschecked ...'."""
    document, condition, _ = newest(data)
    if condition is None:
        return NOT_CROSSCHECKED
    labels = document["labels"]
    side = crosschecks.like_for_like(document)
    row = next((r for r in condition["rows"] if r["op"] == TEXT_READ), None)
    gap = crosschecks.gap(row, labels, side) if row else None
    when = f"crosscheck of {crosschecks.made_date(document)}"
    if gap is None:
        return f"its {when} did not time {TEXT_READ} under both interpreters"
    a, b = labels
    words = standing(gap)
    statistic = ("each the mean of its settled calls, as the harness's" if side == "plain_mean"
                 else f"the best of {document['calls']} calls")
    return (f"timed that way, {TEXT_READ}'s {b}/{a} stands {words}"
            f"{' of' if words.startswith('within') else ''} a plain loop's in fresh processes "
            f"({statistic}; {when})")


def main_page_lines(data: RunData) -> list[str]:
    """The section's paragraph: the gap per op of the newest stored crosscheck of the
    untouched condition, or a line saying there is none (and how to make one)."""
    document, condition, problems = newest(data)
    unread = [f"{code(name)} ({md(why)})" for name, why in problems]
    unread_line = ([f"Stored crosschecks not used: {'; '.join(unread)}.", ""]
                   if unread else [])
    if condition is None:
        return [f"**Against a plain loop:** {NOT_CROSSCHECKED} under glibc untouched "
                "(`nox -s crosscheck -- --run-dir RUN` times the study's ops with a plain "
                "loop in fresh processes and stores its result in the run).", ""] + unread_line
    a, b = document["labels"]
    side = crosschecks.like_for_like(document)
    if side == "plain":   # version 1: the best call is all it kept
        return _best_only_lines(document, condition) + unread_line
    rows, gaps = [], []
    for row in condition["rows"]:
        plain = crosschecks.ratio(row, side, [a, b])
        best = crosschecks.ratio(row, "plain", [a, b])
        harness = crosschecks.ratio(row, "harness", [a, b])
        gap = crosschecks.gap(row, [a, b], side)
        if gap is not None:
            gaps.append(gap)
        rows.append([code(row["op"]), _num(plain), _num(best), _num(harness), _num(gap),
                     nowrap(standing(gap)) if gap is not None else "—"])
    if gaps:
        rows.append(["**geometric mean**", "", "", "", f"{stats.geometric_mean(gaps):.2f}",
                     ""])
    return [f"**Against a plain loop** (`nox -s crosscheck` of "
            f"{crosschecks.made_date(document)}): {md(b)}/{md(a)} under glibc untouched by a "
            f"plain loop (each op alone in a fresh process, {document['calls']} calls in each "
            f"of {_processes(document['processes'])}) and by this run's harness. Like for "
            "like, the plain loop's figure is the mean of each process's settled calls (after "
            "the harness's warm-up rule; the median over processes), as the harness's is the "
            "mean of the calls it timed: a program's time is the sum of its calls. plain ÷ "
            "harness is taken on it, and is 1 where the harness times what a plain program "
            "sees. The best call is shown too: a lower bound, which on an op whose calls vary "
            "picks the lucky one.",
            "",
            table(rows, ["op", "plain loop (mean)", "plain loop (best)", "harness",
                         "plain ÷ harness", "harness stands"],
                  ["left", "right", "right", "right", "right", "left"]), ""] + unread_line


def _best_only_lines(document: dict, condition: dict) -> list[str]:
    """The table of a crosscheck stored before the mean of settled calls was kept (version
    1): the best call against the harness's means, said as such."""
    a, b = document["labels"]
    rows, gaps = [], []
    for row in condition["rows"]:
        plain = crosschecks.ratio(row, "plain", [a, b])
        harness = crosschecks.ratio(row, "harness", [a, b])
        gap = crosschecks.gap(row, [a, b], "plain")
        if gap is not None:
            gaps.append(gap)
        rows.append([code(row["op"]), _num(plain), _num(harness), _num(gap),
                     nowrap(standing(gap)) if gap is not None else "—"])
    if gaps:
        rows.append(["**geometric mean**", "", "", f"{stats.geometric_mean(gaps):.2f}", ""])
    return [f"**Against a plain loop** (`nox -s crosscheck` of "
            f"{crosschecks.made_date(document)}): {md(b)}/{md(a)} under glibc untouched by a "
            f"plain loop (each op alone in a fresh process, the best of {document['calls']} "
            f"calls, the median of {_processes(document['processes'])}) and by this run's "
            "harness; plain ÷ harness is 1 where the harness times what a plain program sees. "
            "This crosscheck kept the best call only, a lower bound set against the "
            "harness's means; a new one (`nox -s crosscheck`) sets the mean of settled calls "
            "against them.",
            "",
            table(rows, ["op", "plain loop", "harness", "plain ÷ harness", "harness stands"],
                  ["left", "right", "right", "right", "left"]), ""]


def _num(value) -> str:
    return "—" if not value else f"{value:.2f}"


def _processes(count: int) -> str:
    return "1 process" if count == 1 else f"{count} processes"
