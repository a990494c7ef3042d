"""The candidate upstream changes of findings on the pages (analysing.changelog).

An entry's text comes from a tarball's Misc/NEWS and is untrusted: it reaches a page only
through ``excerpt`` (its reST roles and literals as code spans made by ``markup.code``,
everything else through ``markup.md``: no HTML, no link, no emphasis survives), and the
only link is the gh/bpo URL built from the entry's number's digits (``news.url_of``).
"""
from __future__ import annotations

import re

from iomatrix.analysing.changelog import Candidate, LaterFix, StepWhy, url_of
from iomatrix.analysing.evidence import NO_MATCH, UNTESTED, CauseTest, Verdict
from iomatrix.reporting.markdown import code, md

EXCERPT_CHARS = 110
SUITE_PAGE_TOP = 3

# reST as docs.python.org renders Misc/NEWS: ``literal`` and the roles of objects as code
# (":class:`io.BufferedReader`" -> `io.BufferedReader`, ":func:`open`" -> `open()`), the
# others as their words (":pep:`687`" -> PEP 687, ":gh:`1`" -> gh-1). A role's text is at
# most ROLE_CHARS (longer is left as written), and every quantifier is bounded, so a scan
# is linear in the text; excerpt reads at most EXCERPT_INPUT_CHARS of it.
ROLE_CHARS = 200
EXCERPT_INPUT_CHARS = 2_000
TOKEN_RE = re.compile(r"``(?P<literal>[^`]{1,%d})``"
                      r"|:(?:(?P<domain>[a-z]{1,8}):)?(?P<role>[a-z]{1,12}):`(?P<text>[^`]{0,%d})`"
                      % (ROLE_CHARS, ROLE_CHARS))
CODE_ROLES = {"class", "mod", "exc", "attr", "data", "const", "obj", "func", "meth", "type",
              "member", "macro", "var", "envvar", "keyword", "option", "program", "file",
              "samp", "kbd", "expr", "enum", "struct", "union", "enumerator"}
CALL_ROLES = {"func", "meth"}       # shown with "()", as Sphinx does
WORD_ROLES = {"pep": "PEP {}", "rfc": "RFC {}", "gh": "gh-{}", "issue": "bpo-{}",
              "cve": "CVE-{}", "cwe": "CWE-{}"}


def _role_text(role: str, text: str) -> tuple[str, bool]:
    """(what a role shows, whether as code)."""
    title, bracket, _ = text.partition("<")
    shown = title.strip() if bracket and title.strip() else text.strip()
    explicit = bool(bracket and title.strip())
    if not explicit and shown[:1] in "~!":
        tilde, shown = shown[0] == "~", shown[1:]
        if tilde:
            shown = shown.rsplit(".", 1)[-1]
    if role in WORD_ROLES:
        return WORD_ROLES[role].format(shown), False
    if role in CODE_ROLES:
        if role in CALL_ROLES and not explicit and shown and not shown.endswith(")"):
            shown += "()"
        return shown, True
    return shown, False             # :ref:, :term:, :doc:, an unknown role: its words


def pieces(text: str) -> list[tuple[str, bool]]:
    """(shown text, whether code) of an entry's text, its whitespace collapsed."""
    out, at = [], 0
    for match in TOKEN_RE.finditer(text):
        out.append((text[at:match.start()], False))
        if match["literal"] is not None:
            out.append((match["literal"], True))
        else:
            out.append(_role_text(match["role"], match["text"]))
        at = match.end()
    out.append((text[at:], False))
    # whitespace collapsed across pieces: runs of spaces and line breaks become one space
    collapsed, space = [], True
    for shown, is_code in out:
        shown = re.sub(r"\s+", " ", shown) if not is_code else " ".join(shown.split())
        if space:
            shown = shown.lstrip()
        if shown:
            collapsed.append((shown, is_code))
            space = shown.endswith(" ")
    if collapsed and not collapsed[-1][1]:
        collapsed[-1] = (collapsed[-1][0].rstrip(), False)
    return [(shown, is_code) for shown, is_code in collapsed if shown]


def _render(shown: str, is_code: bool) -> str:
    if is_code:
        return code(shown)
    # spaces kept outside md(), which would make a leading space an entity
    core = shown.strip()
    lead, trail = shown[:len(shown) - len(shown.lstrip())], shown[len(shown.rstrip()):]
    return lead + md(core) + trail if core else shown


def detail_text(detail: str) -> str:
    """A verdict's detail as the page shows it: the words it quotes from an entry (a role such
    as ``:mod:`io```) as docs.python.org renders them, the rest escaped (excerpt, uncut)."""
    detail = str(detail)
    return excerpt(detail, len(detail), read=len(detail))


def excerpt(text: str, limit: int = EXCERPT_CHARS, read: int = EXCERPT_INPUT_CHARS) -> str:
    """The entry's first words as docs.python.org shows them (roles and literals as code,
    reST markup gone), at most ``limit`` characters shown, cut at a word; escaped. Only the
    first ``read`` characters of ``text`` are read."""
    parts = pieces(str(text)[:read])
    shown = "".join(s for s, _ in parts)
    if len(shown) > limit:
        room = len(shown[:limit].rsplit(" ", 1)[0])
        kept, used = [], 0
        for s, is_code in parts:
            if used + len(s) <= room:
                kept.append((s, is_code))
            elif not is_code and room > used:
                kept.append((s[:room - used], False))
            used += len(s)
            if used >= room:
                break
        parts = [(s.rstrip(), c) if k == len(kept) - 1 else (s, c)
                 for k, (s, c) in enumerate(kept)]
        return "".join(_render(s, c) for s, c in parts) + " …"
    return "".join(_render(s, c) for s, c in parts)


def link(c: Candidate) -> str:
    """[gh-117151](https://github.com/python/cpython/issues/117151): both parts built from
    the number's digits (news.url_of), never from the text or a cache's URL; a number that
    is not gh-N or bpo-N (N of at most 7 digits) is shown as text, linked nowhere."""
    url = url_of(c.entry.number)
    return f"[{c.entry.number}]({url})" if url else md(c.entry.number)


def release_of(c: Candidate) -> str:
    return md(c.entry.release + (f", {c.entry.date}" if c.entry.date else ""))


def cause_link(cause: tuple) -> str:
    """A cause the project states (changelog.PY3_CAUSE): its own constant link."""
    title, url, _ = cause
    return f"[{md(title)}]({url})"


def test_cell(test: CauseTest | None) -> str:
    """The lines under a row's cause that say how it was tested (evidence.cause_test), in
    italics, short: "tested: ablation", "untested"; "against: its ablation" where an ablation
    did not reproduce the step; "mostly the loop (74%)" where its control's step is most of
    it. '' without a test (a control)."""
    if test is None:
        return ""
    lines = [f"tested: {test.by}" if test.tested else UNTESTED]
    if test.against:
        lines.append("not supported by")
        lines.append("its ablation")
    if test.loop_share is not None:
        lines.append("mostly the loop around")
        lines.append(f"the I/O ({test.loop_share:.0%}), not I/O")
    return "<br>" + "<br>".join(f"*{md(line)}*" for line in lines)


def test_words(verdict: Verdict, detail_said: bool = False) -> str:
    """How a finding's cause was tested, for the lists (escaped): the loop's share first (it
    reframes the rest), then "tested (ablation): ..." or "untested: ...", then what is
    against it; ``detail_said``: the test's words are the verdict's detail, already shown.
    '' without a test."""
    test = verdict.test
    if test is None:
        return ""
    said = [md(test.loop)] if test.loop else []
    if test.tested:
        said.append(f"tested ({md(test.by)})" + ("" if detail_said and test.words ==
                                                   verdict.detail else f": {md(test.words)}"))
    else:
        said.append(f"{UNTESTED}: {md(test.words)}")
    if test.against:
        said.append(f"against it: {md(test.against)}")
    elif verdict.ablation and verdict.evidence != "changelog + ablation" and \
            verdict.ablation != test.words:
        said.append(md(verdict.ablation))    # a confirmed or a failed ablation, as it is
    return "; ".join(said)


def verdict_cell(why: StepWhy, verdict: Verdict) -> str:
    """The main page's cell under the acceptance rule (analysing.evidence): the change it
    names, its release and its evidence class in italics, or that no entry matches; then how
    the cause was tested (test_cell)."""
    tested = test_cell(verdict.test)
    if verdict.cause is not None:
        return f"{cause_link(verdict.cause)}<br>*{md(verdict.evidence)}*" + tested
    if verdict.candidate is not None:
        c = verdict.candidate
        return f"{link(c)}<br>{md(c.entry.release)}<br>*{md(verdict.evidence)}*" + tested
    if why.note.startswith("no changelog"):
        return "no changelog" + tested
    return NO_MATCH + tested


def top_cell(why: StepWhy, verdict: Verdict | None = None) -> str:
    """The main page's cell: what the acceptance rule names (verdict_cell) when ``verdict``
    is given; else the top candidate and its release, or why there is none."""
    if verdict is not None:
        return verdict_cell(why, verdict)
    if why.cause is not None:
        return cause_link(why.cause)
    top = why.top
    if top is None:
        return "no changelog" if why.note.startswith("no changelog") else "none found"
    return f"{link(top)}<br>{md(top.entry.release)}"


def verdict_line(verdict: Verdict) -> str:
    """What the acceptance rule names for a finding, with its evidence, or that no entry
    matches and what the data shows; the ablation's result after it when one ran."""
    if verdict.cause is not None:
        said = (f"named: {cause_link(verdict.cause)} (*{md(verdict.evidence)}*): "
                f"{detail_text(verdict.detail)}")
    elif verdict.candidate is not None:
        c = verdict.candidate
        said = (f"named: {link(c)} ({release_of(c)}; *{md(verdict.evidence)}*): "
                f"{detail_text(verdict.detail)}")
    else:
        said = f"{NO_MATCH}: {md(verdict.shows)}"
    tested = test_words(verdict, detail_said=True)
    if tested:
        said += f"; {tested}"
    elif verdict.ablation and verdict.evidence != "changelog + ablation":
        said += f"; {md(verdict.ablation)}"
    return "- " + said


def candidate_lines(why: StepWhy, limit: int = SUITE_PAGE_TOP,
                    verdict: Verdict | None = None) -> list[str]:
    """A suite page's list under one finding: what the acceptance rule names (verdict_line,
    when ``verdict`` is given), then each candidate linked, with its release, date and a
    one-line excerpt; then where the entries come from."""
    if verdict is not None:
        first = [verdict_line(verdict)]
    else:
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


def named_causes(tops: list) -> list[str]:
    """``tops``: (row number, StepWhy, Verdict) of the main page's findings. The "Likely
    causes" section under the acceptance rule (analysing.evidence): one line per change it
    names (several rows first), with the evidence class and what agreed for each row; then
    the rows no entry matches, each with what its data shows; an ablation's result beside
    its row."""
    named, unmatched = {}, []
    for row, why, verdict in tops:
        if verdict.cause is not None:
            named.setdefault(verdict.cause[0], (verdict.cause, []))[1].append((row, verdict))
        elif verdict.candidate is not None:
            named.setdefault(verdict.candidate.entry.number,
                             (verdict.candidate, []))[1].append((row, verdict))
        elif not why.note.startswith("no changelog") or why.cause is not None \
                or verdict.ablation:    # an ablation's result is said beside its row anyway
            unmatched.append((row, verdict))
    if not named and not unmatched:
        return []
    lines = ["### Likely causes", "",
             "The upstream change each listed finding is owed to, named only when it passes "
             "the acceptance rule (docs/methodology.md, \"Why, and how sure\"): an entry of "
             "CPython's Misc/NEWS inside the step that speaks of the op's machinery, and that "
             "a bisect, the source of a function that moved, or an ablation agrees with; its "
             "evidence class in italics. Where none passes: \"no changelog entry matches\" "
             "and what the data shows. Then how each row's cause was tested (an ablation, a "
             "bisect, the changed source, the counts it predicts, repetition and a "
             "reproducer) or that it is untested (an API or a function matched alone), and "
             "an ablation that did not reproduce the step as evidence against what it "
             "tested. The suite pages list the ranked candidates.", ""]
    ordered = sorted(named.values(), key=lambda item: (-len(item[1]), item[1][0][0]))
    for top, rows in ordered:
        label = "rows" if len(rows) > 1 else "row"
        numbers = ", ".join(str(row) for row, _ in rows)
        if isinstance(top, tuple):    # a stated cause (changelog.PY3_CAUSE), premise checked
            decodes = [str(row) for row, v in rows if v.text_decodes]
            lines.append(f"- {cause_link(top)} (Python {md(top[2])}; *API*): {label} "
                         f"{numbers}: steps from 2.x whose 2.7 side times the builtin file "
                         "object, before Misc/NEWS begins (3.5.0a1); open() returns io objects"
                         + (f"; text mode decodes (rows {', '.join(decodes)})" if decodes
                            else ""))
            # each row's test: the counts, the text layer's ablation (measuring.knobs:
            # encoding, newline) against it where it did not reproduce the step
            lines += [f"  - #{row}: {test_words(verdict) or md(verdict.ablation)}"
                      for row, verdict in rows if verdict.test is not None or verdict.ablation]
            continue
        lines.append(f"- {link(top)} ({release_of(top)}): {label} {numbers}: "
                     f"{excerpt(top.entry.text)}")
        for row, verdict in rows:
            said = f"  - #{row} *{md(verdict.evidence)}*: {detail_text(verdict.detail)}"
            tested = test_words(verdict, detail_said=True)
            if tested:
                said += f"; {tested}"
            elif verdict.ablation and verdict.evidence != "changelog + ablation":
                said += f"; {md(verdict.ablation)}"
            lines.append(said)
    for row, verdict in sorted(unmatched, key=lambda item: item[0]):
        said = f"- #{row}: {NO_MATCH}: {md(verdict.shows)}"
        tested = test_words(verdict)
        if tested:
            said += f"; {tested}"
        elif verdict.ablation:
            said += f"; {md(verdict.ablation)}"
        lines.append(said)
    return lines + [""]
