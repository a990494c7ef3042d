"""The main page's findings section: the ranked tables of release steps and their notes.

``section_findings`` lists the largest significant changes between consecutive releases,
slower then faster, each row with its op (``op_link``), step, ratio, times
(``time_cell``) and, where there is something to say, its notes (``finding_notes``: the
classes, the counts, the function that moved, the untouched allocator, the recipe twin)
and the likely upstream change. ``section_counts_only`` lists the steps whose counts
moved while the time did not decide. Split from pages.py, which re-exports these names.
"""
from __future__ import annotations

from iomatrix import callgrind, stats
from iomatrix.analysing import callpaths, controls, counts, evidence, status
from iomatrix.analysing.analysis import timed_bytes
from iomatrix.analysing.comparisons import MAX_FINDINGS, Analysis, Finding
from iomatrix.reporting import aa_caveat, allocator_section, twin_verdicts
from iomatrix.reporting.markdown import (FASTER, SLOWER, code, code_lines, details, finite,
                                         fmt_ratio, fmt_throughput, fmt_time, fmt_value, md,
                                         nowrap, row_id, table, url)
from iomatrix.reporting.suite_pages import instructions_moved, later_shown, shared_share_line
from iomatrix.reporting.summary import Labeller, bytes_on_2x_note
from iomatrix.reporting.why import later_text, named_causes, test_cell, top_cell as why_cell


def time_cell(an: Analysis, f: Finding, nbytes_of: dict) -> str:
    """Both sides' time per call and, for an op that moves bytes, its throughput; where the
    bytes its system calls move differ from those it returns (``counts.moved_differs``),
    both, labelled ("returned", "moved by system calls")."""
    ta = stats.location(an.means[(f.a, f.op)].values())
    tb = stats.location(an.means[(f.b, f.op)].values())
    a_text, b_text = fmt_time(ta), fmt_time(tb)
    if a_text.split(" ")[-1] == b_text.split(" ")[-1]:       # one unit: say it once
        a_text = a_text.split(" ")[0]
    cell = nowrap(f"{a_text} → {b_text}")
    nbytes = nbytes_of.get(f.op)
    if finite(nbytes) and nbytes > 0:
        returned = f"{fmt_throughput(nbytes, ta)} → {fmt_throughput(nbytes, tb)} MB/s"
        ratios = [counts.moved_per_returned(an.counted, f.op, s) for s in (f.a, f.b)] \
            if an.counted else []
        if None not in ratios and counts.moved_differs(ratios):
            # The bytes the system calls moved per byte returned (counting pass) times the
            # throughput timed: what a buffer that reads ahead really reads, labelled apart.
            # A step needs both sides' bytes (a file counted before them has none).
            moved = [fmt_throughput(nbytes * r, t) for r, t in zip(ratios, (ta, tb))]
            # Three lines, not two: one line "moved by system calls 935 → 6,297 MB/s" took the
            # main page's findings table past GitHub's 1012 px column (nox -s preview).
            cell += "<br>" + nowrap(f"returned {returned}") + "<br>moved by system calls<br>" \
                + nowrap(f"{moved[0]} → {moved[1]} MB/s")
        else:
            cell += "<br>" + nowrap(returned)
    return cell


USUAL_CLASSES = ("confirmed", "firm")    # said once above a table, not in every row


def path_cell(graphs: dict, f: Finding) -> str | None:
    """The call path the finding's instructions changed on (analysing.callpaths): its
    functions, their change per call, how often the path was taken per call on each side
    where that moved (–: not among that side's kept edges, so under their share or not
    taken), and the build's share on a line of its own where it is at least half
    the path's; "call paths unavailable" where a side's edges cannot be used; None where they
    were never kept (a file of before) or no code function moved."""
    try:
        found = callpaths.step_paths(graphs, f.op, f.a, f.b)
    except callpaths.Unavailable as exc:
        return None if exc.absent else callpaths.UNAVAILABLE
    if not found.groups:
        return None
    top = found.groups[0]
    # the path may wrap between its functions; the figures never do
    lines = ["most in " + " → ".join(code(name) for name in top.path),
             nowrap(f"{fmt_value(top.change, '+,.0f', signed=True)}/call"
                    + (f" in {len(top.functions)} functions" if len(top.functions) > 1 else ""))]
    before, after = top.calls
    if before != after:
        taken = " → ".join("–" if n is None else fmt_value(n, ",.0f") for n in (before, after))
        lines.append(nowrap(f"taken {taken}/call"))
    if len(found.groups) > 1:
        lines.append(nowrap(f"and {len(found.groups) - 1} more "
                            f"path{'s' if len(found.groups) > 2 else ''}"))
    if found.build_change and abs(found.build_change) >= abs(top.change) / 2:
        lines.append(nowrap(f"build: {fmt_value(found.build_change, '+,.0f', signed=True)}/call"))
    return "<br>".join(lines)


def top_function(functions: dict, counted: list, f: Finding,
                 graphs: dict | None = None) -> str | None:
    """The function whose own instructions per call changed most in a finding whose
    instructions moved beyond the counts' threshold ("most in `memcpy` +1,234/call"), of the
    release's code: the build's costs (callgrind.build_only) are never the headline, and
    their change shows on a line of its own ("build: +3,745,841/call") where it is at least
    half the headline's."""
    move = counts.count_move(counted, f.op, f.a, f.b) if counted else None
    if not functions or not move or move["instructions"] is None or \
            abs(move["instructions"]) <= counts.INSTRUCTIONS_MOVE:
        return None
    # The call path that changed, where the counting pass kept call edges (callpaths).
    path = path_cell(graphs, f) if graphs else None
    if path is not None and path != callpaths.UNAVAILABLE:
        return path
    rows = counts.where_instructions_went(functions, f.op, f.a, f.b, top=None)
    # Never a cost of the build as the headline (callgrind.build_only: __tls_get_addr in a
    # shared libpython, the dynamic linker, PLT stubs): the function of the release's code
    # that changed most, and the build's functions' change on a line of its own.
    code_rows = [row for row in rows if not callgrind.build_only(row["name"])]
    if not code_rows:
        return callpaths.UNAVAILABLE if path else None
    top = code_rows[0]
    build = sum(row["change"] for row in rows if callgrind.build_only(row["name"]))
    # Matched by counts.canonical_function (renames, clones, libc's variants). A function kept on
    # one side only is not known to be absent on the other: only its top functions are kept.
    share = f"{callgrind.FUNCTION_SHARE:.1%}"
    only = f" ({md(f.a)}: under {share} or absent)" if top["a"] is None else \
        f" ({md(f.b)}: under {share} or absent)" if top["b"] is None else ""
    change = nowrap(f"{fmt_value(top['change'], '+,.0f', signed=True)}/call")
    # On lines of their own: one line of name, note and change took the main page's findings
    # table past GitHub's 1012 px column (nox -s preview).
    build_line = ""
    if abs(build) >= abs(top["change"]) / 2:    # where it bears on the headline
        build_line = "<br>" + nowrap(f"build: {fmt_value(build, '+,.0f', signed=True)}/call")
    return f"most in {code(top['name'])}<br>{change}" + (f"<br>{only.strip()}" if only else "") \
        + build_line + (f"<br>{callpaths.UNAVAILABLE}" if path else "")


def recipe_note(an: Analysis, f: Finding) -> str | None:
    """Whether the finding survives the recipe of a twin (Analysis.recipe_check), in words."""
    check = an.recipe_check(f)
    if check is None:
        return None
    older, newer, c, same_way = check
    verdict = "holds" if same_way else "does not hold"
    return nowrap(f"{md(older)} → {md(newer)}: {fmt_ratio(c, interval=False)}, {verdict}")


def finding_notes(f: Finding, counted: list, untouched_note: str | None = None,
                  where: str | None = None, bytes_note: str | None = None,
                  recipe_note: str | None = None, control_note: str | None = None,
                  aa_note: str | None = None) -> str:
    """What the counts say, after the finding's classes where they are not the usual ones
    (time only, counts only, borderline), whether its series splits into modes, and what
    the step is under glibc's untouched allocator where that differs."""
    tags = [getattr(f, name, None) for name in ("evidence", "firmness")]
    tags = [md(t) for t in tags if t and t not in USUAL_CLASSES]
    if getattr(f, "modes", None):
        tags.append("splits into modes")
    parts = [f"*{', '.join(nowrap(tag) for tag in tags)}*"] if tags else []
    if recipe_note:
        parts.append(f"*{recipe_note}*")
    if control_note:    # the loop without I/O (analysing.controls): first, it reframes the rest
        parts.insert(0, control_note)
    if aa_note:         # the A/A twin flags the op (reporting.aa_caveat): before anything else
        parts.insert(0, aa_note)
    if bytes_note:
        parts.append(f"*{md(bytes_note)}*")
    if untouched_note:
        parts += [f"*{nowrap(line)}*" for line in untouched_note.split("\n")]
    if counted is not None:
        # The largest syscall change and the instructions, each in one piece on a line of
        # its own ("`read` 91 → 4"), so the cell never wraps by itself.
        changed = counts.change_of(counted, f.op, f.a, f.b, max_syscalls=1)
        was_counted = counts.counted_series(counted, f.op) >= {f.a, f.b}
        parts += [nowrap(part) for part in changed.split("; ")] if changed \
            else unchanged_counts(counted, f) if was_counted else ["not counted"]
    if where:
        # a function's name may be long: this line may wrap (between words), the ratio
        # and counts above it never do
        parts.append(where)
    return "<br>".join(parts)


def unchanged_counts(counted: list, f: Finding) -> list[str]:
    """The cell's lines for a step whose counts did not move: all of them, or the system calls
    alone where the instructions were not compared (a side not counted under callgrind:
    PyPy, ``--counters`` without instructions, no valgrind), which the cell then says."""
    move = counts.count_move(counted, f.op, f.a, f.b)
    if move is not None and move["instructions"] is None:
        return [nowrap("system calls: no change"), nowrap("instructions not compared")]
    return ["counts: no change"]


def classes_sentence(listed: list, threshold: float) -> str:
    """How to read the rows' classes, said once and computed from the rows: which of the
    usual classes they have, and the markers that appear; '' when the analysis gives none."""
    evidence = [getattr(f, "evidence", None) for f in listed]
    firmness = [getattr(f, "firmness", None) for f in listed]
    said = []
    if any(evidence):
        said.append("confirmed by its counts (instructions or system calls moved the same "
                    "way)")
    if any(firmness):
        said.append(f"firm (its rounds, resampled, stay beyond {threshold:.0%} by the "
                    "A/A twin's reach, and its counts back it)")
    if not said:
        return ""
    meanings = {"memory": "instructions and system calls flat; the simulated cache misses "
                          "move its estimated cycles the same way",
                "repeats": "the counts did not move its way, and it held the same way in "
                           "every pooled run: a regression all the same (time per byte: "
                           "caches, memory), its test a reproducer of its own",
                "time only": "the counts did not move with it: may be code layout or the "
                             "host, and never firm",
                "counts only": "the counts moved, the time did not decide",
                "borderline": "its resampled rounds reach the threshold, or the counts do "
                              "not back it"}
    markers = [f"*{name}* ({meanings[name]})" for name in meanings
               if name in evidence + firmness]
    if any(getattr(f, "modes", None) for f in listed):
        markers.append("*splits into modes* (named below the table)")
    if not markers:
        return f"Every row is {' and '.join(said)}."
    return (f"A row is {' and '.join(said)} unless its last column says otherwise: "
            + ", ".join(markers) + ".")


def op_link(op: str, target: str | None, inline: bool = False) -> str:
    """An op linking to its row, its name on several lines where long (``code_lines``), so
    the column stays narrow (``inline``: on one line, in a sentence); ``target`` None (a main
    page shown without its suite pages, a merged report): the name alone."""
    name = code(op) if inline else code_lines(op)
    if target is None:
        return name
    return f"[{name}]({url(target)}#{row_id(op)})"


def suite_page(an: Analysis, op: str, link: str | None) -> str | None:
    """The suite page an op's row is on, under ``link``; None without suite pages."""
    return f"{link}/{an.suite_of[op]}.md" if link is not None else None


def section_findings(an: Analysis, link: str | None, strip_figures: list[str],
                     label: Labeller, pooled=None) -> list[str]:
    """``pooled``: (op, a, b) -> the text below a finding's ratio (pool_section.finding_note)."""
    lines = ["## Findings", ""]
    if len(an.lin.releases) < 2:
        kinds = sorted({v.kind for v in an.lin.variants})
        lines += [f"This run has no release lineage ({len(an.lin.releases)} plain CPython "
                  "release): there are no release steps to rank. "
                  + (f"Its variants ({', '.join(kinds)}) are compared with their twins below."
                     if kinds else ""), ""]
        return lines
    findings = an.findings()
    intro = len(lines)
    lines += [f"Changes between consecutive releases that are significant and beyond "
              f"{an.threshold:.0%} either way, largest first: new time over old with its 95% "
              f"interval (where the op has a control, the step without its loop first, the "
              f"op's own ratio below), {SLOWER}/{FASTER} significant, **bold** a regression; "
              "each op links to its row on its suite page; below each likely change, how it "
              "was tested (an ablation, a bisect, the changed source, the counts it predicts, "
              "repetition and a reproducer) or *untested*.", ""]
    untested = [c for c in an.step_cmp.values() if c.significant is None]
    if untested:
        fewest = min(min(c.n_a, c.n_b) for c in untested)
        lines += [f"{len(untested)} of {len(an.step_cmp)} step comparisons have too few worker "
                  f"processes for an interval (as few as {fewest} a side; at least "
                  f"{stats.min_processes_for_significance()} a side are needed at "
                  f"{stats.CONFIDENCE:.0%}): no finding can come from those, and their ratios "
                  "show [n/a].", ""]
    if not findings and len(untested) == len(an.step_cmp):
        return lines
    if not findings:
        return lines + [f"None: no step of the lineage changed an op significantly by more "
                        f"than {an.threshold:.0%}.", ""]
    # The I/O findings: neither a control's own step nor one its control explains
    # (analysing.controls); those stay on the suite pages and in data.csv, labelled.
    slower, faster = an.listed()
    control_steps = {id(f): controls.step(an, f.op, f.a, f.b) for f in slower + faster}
    counted = counts.load_counts(an.data.run.path) if an.data.run else []
    untouched = an.untouched_steps if an.data.all_conditions is not None else {}
    functions = an.functions
    with_notes = bool(counted) or bool(untouched) or any(control_steps.values()) or any(
        bytes_on_2x_note(an, f.op, f.a) or an.recipe_check(f) for f in slower + faster) or any(
        getattr(f, name, None) for f in slower + faster for name in ("evidence", "firmness", "modes")) \
        or any(aa_caveat.note(an, f.op) for f in slower + faster)
    nbytes_of = dict(zip(an.data.frame["op"], an.data.frame["bytes"]))
    rank = 0
    numbers = {}
    classes = classes_sentence(slower + faster, an.threshold)
    if classes:     # one paragraph with the sentence above it: the first screen is short
        lines[intro] += " " + classes
    why = {id(f): an.candidates_of(f) for f in slower + faster}    # candidate upstream changes
    # named only when the acceptance rule passes (analysing.evidence)
    verdicts = {id(f): evidence.verdict_for(an, f) for f in slower + faster}
    with_why = any(w.top is not None or w.cause is not None for w in why.values())
    for title, listed in (("Slower", slower), ("Faster", faster)):
        if not listed:
            continue
        rows = []
        for f in listed:
            rank += 1
            numbers[id(f)] = rank
            op_cell = op_link(f.op, suite_page(an, f.op, link))
            step = nowrap(f"{md(label(f.a))} → {md(label(f.b))}")
            if with_why:    # below the step it is about, not a column of its own (width)
                step += "<br>" + why_cell(why[id(f)], verdicts[id(f)])
            else:           # no change to name: its test says so all the same (untested)
                step += test_cell(verdicts[id(f)].test)
            now = status.short_words(an, f)    # where a regression stands now, a line a group
            if now:
                step += "<br>" + "<br>".join(md(part) for part in f"now: {now}".split("; "))
            rows.append([str(rank), op_cell, step,
                         ratio_cell(an, f, control_steps[id(f)])
                         + (pooled(f.op, f.a, f.b) if pooled else ""),
                         time_cell(an, f, nbytes_of)]
                        + ([finding_notes(f, counted if counted else None,
                                          allocator_section.finding_note(
                                              untouched, f.op, f.a, f.b, an.threshold),
                                          top_function(functions, counted, f,
                                                       an.call_graphs),
                                          bytes_on_2x_note(an, f.op, f.a),
                                          recipe_note(an, f),
                                          control_cell(control_steps[id(f)]),
                                          aa_caveat.note(an, f.op))]
                           if with_notes else []))
        # Each cell in lines as narrow as it reads well: with the likely change in a column
        # of its own and the interval beside the ratio, the table was 1,164 px wide in
        # GitHub's 1,012 px column (nox -s preview -- --screenshot).
        headers = ["#", "op", "step<br>likely change" if with_why else "step",
                   "ratio<br>" + nowrap("[95% interval]"), "time per call<br>throughput"]
        align = ["right", "left", "left", "right", "right"]
        if with_notes:
            headers, align = headers + ["counts per call"], align + ["left"]
        lines += [f"### {title}", "", table(rows, headers, align), ""]
    now_note = status.note(an, slower)
    if now_note:
        lines += [md(now_note), ""]
    if counted:     # which size the counts per call are at (counts.size_sentence)
        timed = timed_bytes(an.data.frame)
        said = counts.size_sentence(counted, [(f.op, f.a, f.b, timed.get(f.op))
                                              for f in slower + faster])
        lines += [said, ""] if said else []
    lines += twin_verdicts.section_twins(an)    # the recipe and free-threaded twins
    lines += named_causes([(numbers[id(f)], why[id(f)], verdicts[id(f)])
                           for f in slower + faster])
    lines += section_later_and_shared(an, [(numbers[id(f)], f) for f in slower + faster])
    lines += controls_paragraph(an, link)
    more = len(controls.io_findings(an)) - len(slower) - len(faster)
    if more:
        lines += [f"{more} more findings are on the suite pages (the largest "
                  f"{MAX_FINDINGS} each way are listed here): they are the marked cells of each "
                  "suite page's release-steps table.", ""]
    split = [f for f in slower + faster if getattr(f, "modes", None)]
    if split:
        lines += [f"{len(split)} of the {rank} listed findings "
                  f"{'comes' if len(split) == 1 else 'come'} from a series that splits into "
                  "modes, so its ratio stands for neither mode alone: "
                  + "; ".join(f"#{numbers[id(f)]} ({md(f.modes)})" for f in split) + ".", ""]
    lines += section_counts_only(an, link)
    if strip_figures:
        lines += details("Per-process values of the listed findings (figures)",
                         ["Each listed finding's per-process means, both sides, numbered as "
                          "above.", ""]
                         + [f"![per-process values of findings]({path})"
                            for path in strip_figures] + [""])
    return lines


def ratio_cell(an: Analysis, f: Finding, found) -> str:
    """The row's ratio: where the op has a control that may be subtracted (controls.step:
    faster than its op on both sides), the step without the loop first, the op's own ratio
    below it; else the op's ratio (the counts' cell says why nothing was subtracted)."""
    own = fmt_ratio(f.comparison, an.threshold, interval_below=True)
    if found is None or found.without is None or not found.subtracted:
        return own
    return (fmt_ratio(found.without, an.threshold, interval_below=True) + "<br>"
            + nowrap("without the loop;") + "<br>" + nowrap("the op's own:") + "<br>"
            + nowrap(fmt_ratio(f.comparison, interval=False)))


def control_cell(found) -> str | None:
    """The loop without I/O beside a finding (controls.sentence), on lines of their own so
    the cell stays narrow; None for an op without a control."""
    if found is None:
        return None
    text = md(controls.sentence(found))
    return "<br>".join(nowrap(part) for part in text.replace(", the loop", ",<br>the loop")
                       .replace(" (", "<br>(").split("<br>"))


def controls_paragraph(an: Analysis, link: str | None) -> list[str]:
    """How many findings are the code around the I/O (their control explains them) and
    are therefore not listed above, with where they are; [] when none."""
    apart = controls.set_apart(an)
    if not apart:
        return []
    named = "; ".join(f"{op_link(f.op, suite_page(an, f.op, link), inline=True)} "
                      f"{nowrap(f'{md(f.a)} → {md(f.b)}')}" for f in apart[:MAX_FINDINGS])
    more = f" and {len(apart) - MAX_FINDINGS} more" if len(apart) > MAX_FINDINGS else ""
    steps = "1 significant step is" if len(apart) == 1 else f"{len(apart)} significant steps are"
    return [f"{steps} {controls.AROUND}: the op's control (the "
            "same loop and payload over data in memory) moved by at least "
            f"{controls.EXPLAINED_SHARE:.0%} of the op's change and the op without it did "
            f"not (docs/methodology.md, Controls). Not listed above: {named}{more}; each is "
            "on its suite page, labelled, and in data.csv.", ""]


MAIN_PAGE_EXCERPT = 60    # characters of a later entry's text on the main page (the suite
                          # page gives why.EXCERPT_CHARS)


def later_and_shared(an: Analysis, f: Finding) -> str:
    """What the suite page says of finding ``f`` beyond its candidates, in its words and a
    little shorter (a shorter excerpt; not where the linkage was read): the later entries it
    shows (suite_pages.later_shown) and the shared build's share of its instruction change
    (suite_pages.shared_share_line); "" without changelogs or counts."""
    said = "; ".join(later_text(fix, undoing, MAIN_PAGE_EXCERPT)
                     for fix, undoing in later_shown(an, f))
    shared = shared_share_line(an, f.op, f.a, f.b, brief=True) \
        if instructions_moved(an, f) else None
    if shared:    # a sentence of its own, after an excerpt that may end in "." or "…"
        said = f"{said}{'' if said.endswith(('.', '…')) else '.'} {shared}" if said else shared
    return said


def section_later_and_shared(an: Analysis, numbered: list) -> list[str]:
    """``numbered``: (row number, Finding) of the listed findings. One line per row whose
    suite page names a later change or a shared build's share, as the suite page words them."""
    lines = []
    for number, f in numbered:
        said = later_and_shared(an, f)
        if said:
            lines.append(f"- #{number} {code(f.op)}, {nowrap(f'{md(f.a)} → {md(f.b)}')}: "
                         + said)
    if not lines:
        return []
    return ["### Later changes and the shared build", "",
            "For the listed rows, as their suite pages say it: \"later\", a change of a release "
            "after the step's newer side that the ranking rule matches and that speaks of "
            "speed, shown only where a later step of the lineage moves back with it as its "
            "top candidate (named beside it; a candidate for undoing the step, not a proof); "
            "and the share of the step's instruction change in functions only a shared "
            "libpython runs, where it is 5% or more.", ""] + lines + [""]


def section_counts_only(an: Analysis, link: str | None) -> list[str]:
    """Steps whose counts moved while their timing found nothing, when the analysis names
    them (``Analysis.counts_only``): a short collapsed table."""
    found = getattr(an, "counts_only", lambda: [])()
    if not found:
        return []
    counted = counts.load_counts(an.data.run.path) if an.data.run else []
    rows = [[op_link(f.op, suite_page(an, f.op, link)), nowrap(f"{md(f.a)} → {md(f.b)}"),
             nowrap(fmt_ratio(f.comparison, an.threshold)),
             "; ".join(nowrap(part) for part in
                       counts.change_of(counted, f.op, f.a, f.b, max_syscalls=1).split("; "))]
            for f in found[:MAX_FINDINGS]]
    more = f" (the {MAX_FINDINGS} largest of {len(found)})" if len(found) > MAX_FINDINGS else ""
    return details(f"Counts only: {len(found)} steps whose counts moved while the time did not "
                   "decide", [f"The counts moved beyond their own noise, the timing stayed "
                              f"within {an.threshold:.0%} or undecided{more}.", "",
                              table(rows, ["op", "step", nowrap("ratio [95% interval]"),
                                           "counts per call"],
                                    ["left", "left", "right", "left"]), ""])
