"""The candidate upstream changes of findings on the pages (analysing.changelog).

An entry's text comes from a tarball's Misc/NEWS and is untrusted: it reaches a page only
through ``markdown.md`` (no HTML, no link, no emphasis survives), and the only link is the
gh/bpo URL that analysing.changelog builds from the entry's number.
"""
from __future__ import annotations

import re

from iomatrix.analysing.changelog import Candidate, LaterFix, StepWhy
from iomatrix.reporting.markdown import md

EXCERPT_CHARS = 110
SUITE_PAGE_TOP = 3


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The entry's first words, its reST roles and literals made plain, escaped."""
    plain = re.sub(r":pep:`(\d+)`", r"PEP \1", str(text))
    plain = re.sub(r":(?:func|meth):`[~!]?([^`<]*?)(?:\s*<[^`>]*>)?`", r"\1()", plain)
    plain = re.sub(r":[a-z]+:`[~!]?([^`<]*?)(?:\s*<[^`>]*>)?`", r"\1", plain)
    plain = plain.replace("``", "")
    plain = " ".join(plain.split())
    if len(plain) > limit:
        plain = plain[:limit].rsplit(" ", 1)[0] + " …"
    return md(plain)


def link(c: Candidate) -> str:
    """[gh-117151](https://github.com/python/cpython/issues/117151): both parts built from
    the number's digits, never from the text."""
    return f"[{c.entry.number}]({c.entry.url})"


def release_of(c: Candidate) -> str:
    return md(c.entry.release + (f", {c.entry.date}" if c.entry.date else ""))


def cause_link(cause: tuple) -> str:
    """A cause the project states (changelog.PY3_CAUSE): its own constant link."""
    title, url, _ = cause
    return f"[{md(title)}]({url})"


def top_cell(why: StepWhy) -> str:
    """The main page's cell: the top candidate and its release, or why there is none."""
    if why.cause is not None:
        return cause_link(why.cause)
    top = why.top
    if top is None:
        return "no changelog" if why.note.startswith("no changelog") else "none found"
    return f"{link(top)}<br>{md(top.entry.release)}"


def candidate_lines(why: StepWhy, limit: int = SUITE_PAGE_TOP) -> list[str]:
    """A suite page's list under one finding: each candidate linked, with its release,
    date and a one-line excerpt; then where the entries come from."""
    first = [f"- {cause_link(why.cause)}: a step from 2.x crosses Python 3.0's new io "
             "stack, which no entry of Misc/NEWS names; the entries below are of 3.5 on"] \
        if why.cause is not None else []
    if not why.candidates:
        return first + [f"- {md(why.note)}"]
    return first + [f"- {link(c)} ({release_of(c)}, {md(c.entry.section)}): {excerpt(c.entry.text)}"
            for c in why.candidates[:limit]] + [f"- *from {md(why.note)}*"]


def likely_causes(tops: list) -> list[str]:
    """``tops``: (row number, StepWhy) of the main page's findings. One line per entry that is
    the top candidate of some row, those of several rows first: one change, several rows."""
    by_number, missing = {}, {}
    for row, why in tops:
        if why.cause is not None:
            by_number.setdefault(why.cause[0], (why.cause, []))[1].append(row)
        elif why.top is not None:
            by_number.setdefault(why.top.entry.number, (why.top, []))[1].append(row)
        elif why.note.startswith("no changelog"):
            missing.setdefault(why.note, []).append(row)
    if not by_number and not missing:
        return []
    lines = ["### Likely causes", "",
             "The top candidate upstream change of each listed finding, from CPython's "
             "Misc/NEWS: the entries of the releases inside the step that name the op's "
             "machinery, ranked by the rule of analysing/changelog.py. A candidate to read, "
             "not a proof; the suite pages list three per finding.", ""]
    ordered = sorted(by_number.values(), key=lambda item: (-len(item[1]), item[1][0]))
    for top, rows in ordered:
        label = "rows" if len(rows) > 1 else "row"
        if isinstance(top, tuple):    # a stated cause (changelog.PY3_CAUSE)
            lines.append(f"- {cause_link(top)} (Python {md(top[2])}): {label} "
                         f"{', '.join(map(str, rows))}: steps from 2.x, before Misc/NEWS "
                         "begins (3.5.0a1); open() returns io objects and text mode decodes")
            continue
        lines.append(f"- {link(top)} ({release_of(top)}): {label} "
                     f"{', '.join(map(str, rows))}: {excerpt(top.entry.text)}")
    for note, rows in missing.items():
        label = "rows" if len(rows) > 1 else "row"
        lines.append(f"- {label} {', '.join(map(str, rows))}: {md(note)}")
    return lines + [""]


def later_text(fix: LaterFix, lineage: list[str], limit: int = EXCERPT_CHARS) -> str:
    """A later change that may undo a finding (changelog.later_fixes), in the words of the
    pages: linked from its number, its first release and date, the other releases that list
    it, an excerpt of up to ``limit`` characters; then ``lineage``: the later lineage steps of
    the op that move the other way with it as their top candidate, already in words."""
    c = fix.candidate
    also = f"; also {', '.join(md(version) for version in fix.also)}" if fix.also else ""
    said = f"later: {link(c)} ({release_of(c)}{also}): {excerpt(c.entry.text, limit)}"
    if lineage:
        said += f" ({'; '.join(lineage)})"
    return said


def later_line(fix: LaterFix, lineage: list[str]) -> str:
    """A suite page's list line for a later change (later_text)."""
    return "- " + later_text(fix, lineage)
