"""A run's report: a main page that answers first, one detail page per suite, and a tidy CSV.

The main page opens with the findings (consecutive releases of the lineage whose
change is significant and beyond the threshold, largest first), then geometric
means, the variants against their twins, and links to the suite pages, which
hold the per-op tables. Tables have at most ``markdown.MAX_COLUMNS`` value columns, so
they read at GitHub's page width. ``build_merged_report`` puts the main pages of
runs on several hosts together. All are generated files: regenerate, never edit.
"""
from __future__ import annotations

import dataclasses
import datetime
import html
import math
import re
from pathlib import Path

import pandas as pd

from iomatrix import callgrind, stats
from iomatrix.analysing import changelog, counts, study
from iomatrix.measuring import native
from iomatrix.reporting import allocator_section
from iomatrix.storing import store
from iomatrix.analysing.analysis import (VARIANT_KINDS, RunData, build_flag_differences, ordered_ops,
                                         is_condition_twin, lineage_recipe_lines, ordered_series,
                                         process_means, series_info,
                                         step_recipe_note, with_all_conditions)
from iomatrix.analysing.comparisons import MAX_FINDINGS, Analysis, Finding, analyse
from iomatrix.reporting.markdown import (FASTER, SLOWER, code, collapse_zero_tables, finite,
                                         fmt_ratio, fmt_throughput, fmt_time, fmt_value, md,
                                         names, nowrap, row_id, table, url, wide_table)
from iomatrix.reporting.sections import (column_title, section_aa, section_header, section_metadata,
                                         section_problems, section_run_facts, section_skipped,
                                         section_then_and_now, section_warnings)
from iomatrix.reporting.suite_pages import display_order, suite_page, tidy_csv
from iomatrix.reporting.why import likely_causes, top_cell as why_cell

DEFAULT_THRESHOLD = stats.FINDING_THRESHOLD
TOP_PER_VARIANT = 5       # largest significant changes listed per variant on the main page
# Two releases of a step further apart than this hold years of both branches' changes: said.
FAR_APART_DAYS = 548
FAR_APART_PATCHES = 6


@dataclasses.dataclass
class Pages:
    main: str
    suites: dict          # suite -> markdown of its detail page
    csv: str              # the tidy table: one row per run, series, op and statistic
    others: dict = dataclasses.field(default_factory=dict)  # name -> page: counts, machine
    summary: str = ""     # the findings in words, plain text (summary_paragraph)


# -- shared pieces ---------------------------------------------------------------------

def geomean_cell(comparisons) -> str:
    ratios = [c.ratio for c in comparisons]
    return f"{stats.geometric_mean(ratios):.2f}" if ratios else "—"


def timer_notes(data: RunData) -> list[str]:
    """What times each interpreter: pyperf under Python 2 has no perf_counter."""
    notes = []
    for series, info in sorted(data.manifest.get("interpreters", {}).items()):
        if (info.get("version_info") or [3])[0] == 2 and info.get("pyperf_version") \
                and not is_condition_twin(data.manifest, series):
            notes.append(f"{code(series)} runs pyperf {md(info['pyperf_version'])}, which under "
                         "Python 2 times with `time.time()` (wall-clock time of the day) instead "
                         "of `time.perf_counter()`: its times are coarser and follow clock "
                         "adjustments.")
    return notes


# -- words: the summary a reader can quote -----------------------------------------------

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
    """What the counts of a group of ops say between ``a`` and ``b``: the system calls when
    they all moved one way by half or more, or the instructions when they all moved one way
    by 5% or more (a count that moved with the time first), else that neither moved; ''
    when the counting pass did not count both sides."""
    moved = {}
    for counter in ("syscalls", "instructions"):
        found = [(counted.get((a, op, counter)), counted.get((b, op, counter)))
                 for op in sorted(set(ops))]
        if found and all(isinstance(x, (int, float)) and isinstance(y, (int, float))
                         and x > 0 and y > 0 for x, y in found):
            moved[counter] = [y / x for x, y in found]
    phrases = []
    for counter, name, beyond in (("syscalls", "system calls", 1.5),
                                  ("instructions", "instructions", 1.05)):
        ratios = moved.get(counter)
        if ratios and (all(r <= 1 / beyond for r in ratios) or all(r >= beyond for r in ratios)):
            fewer = ratios[0] < 1
            phrases.append((fewer == slower, f"with {factor_span([1 / r if fewer else r for r in ratios])} "
                                             f"{'fewer' if fewer else 'more'} {name}"))
    if phrases:
        return sorted(phrases, key=lambda p: p[0])[0][1]     # False (moved with it) first
    if len(moved) == 2 and all(abs(r - 1) < 0.05 for rs in moved.values() for r in rs):
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
    range of its ratios and what the counts say, largest groups first."""
    label = label or Labeller(an.data)
    if len(an.lin.releases) < 2:
        return (f"This run has no release lineage ({len(an.lin.releases)} plain CPython "
                "release), so there are no release steps to summarise.")
    findings = an.findings()
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
    return text


# -- the main page ---------------------------------------------------------------------

def details(summary: str, body: list[str]) -> list[str]:
    """A collapsed section (GitHub shows its summary line only until it is opened)."""
    if not body:
        return []
    return ["<details>", f"<summary>{html.escape(summary)}</summary>", ""] + body + \
        ["</details>", ""]


def demoted(lines: list[str]) -> list[str]:
    """A section's headings one level down, for a section inside a collapsed one."""
    return ["#" + line if line.startswith("#") else line for line in lines]


def time_cell(an: Analysis, f: Finding, nbytes_of: dict) -> str:
    """Both sides' time per call and, for an op that moves bytes, its throughput."""
    ta = stats.location(an.means[(f.a, f.op)].values())
    tb = stats.location(an.means[(f.b, f.op)].values())
    a_text, b_text = fmt_time(ta), fmt_time(tb)
    if a_text.split(" ")[-1] == b_text.split(" ")[-1]:       # one unit: say it once
        a_text = a_text.split(" ")[0]
    cell = nowrap(f"{a_text} → {b_text}")
    nbytes = nbytes_of.get(f.op)
    if finite(nbytes) and nbytes > 0:
        cell += "<br>" + nowrap(f"{fmt_throughput(nbytes, ta)} → {fmt_throughput(nbytes, tb)} MB/s")
    return cell


USUAL_CLASSES = ("confirmed", "firm")    # said once above a table, not in every row


def top_function(functions: dict, counted: list, f: Finding) -> str | None:
    """The function whose own instructions per call changed most in a finding whose
    instructions moved beyond the counts' threshold ("most in `memcpy` +1,234/call")."""
    move = counts.count_move(counted, f.op, f.a, f.b) if counted else None
    if not functions or not move or move["instructions"] is None or \
            abs(move["instructions"]) <= counts.INSTRUCTIONS_MOVE:
        return None
    rows = counts.where_instructions_went(functions, f.op, f.a, f.b, top=1)
    if not rows:
        return None
    top = rows[0]
    # Matched by counts.canonical_function (renames, clones, libc's variants). A function kept on
    # one side only is not known to be absent on the other: only its top functions are kept.
    share = f"{callgrind.FUNCTION_SHARE:.1%}"
    only = f" ({md(f.a)}: under {share} or absent)" if top["a"] is None else \
        f" ({md(f.b)}: under {share} or absent)" if top["b"] is None else ""
    change = nowrap(f"{fmt_value(top['change'], '+,.0f', signed=True)}/call")
    return f"most in {code(top['name'])}{only} {change}"


def bytes_on_2x_note(an: Analysis, op: str, older: str) -> str | None:
    """The note of a step from 2.x on an op that 2.x's builtin open() does in bytes
    (study.undecoded_on_2x): the 2009 study's comparison, kept and labelled."""
    major = (series_info(an.data, older).get("version_info") or [0])[0]
    if major == 2 and study.undecoded_on_2x(an.suite_of.get(op, ""),
                                            an.category_of.get(op, "")):
        return study.bytes_on_2x_note(op, an.category_of.get(op, ""))
    return None


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
                  recipe_note: str | None = None) -> str:
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
    if bytes_note:
        parts.append(f"*{md(bytes_note)}*")
    if untouched_note:
        parts.append(f"*{nowrap(untouched_note)}*")
    if counted is not None:
        # The largest syscall change and the instructions, each in one piece on a line of
        # its own ("`read` 91 → 4"), so the cell never wraps by itself.
        changed = counts.change_of(counted, f.op, f.a, f.b, max_syscalls=1)
        was_counted = counts.counted_series(counted, f.op) >= {f.a, f.b}
        parts += [nowrap(part) for part in changed.split("; ")] if changed \
            else ["counts: no change"] if was_counted else ["not counted"]
    if where:
        # a function's name may be long: this line may wrap (between words), the ratio
        # and counts above it never do
        parts.append(where)
    return "<br>".join(parts)


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


OP_LINE = 22      # characters of an op name on one line of a findings table


def op_link(op: str, target: str) -> str:
    """An op linking to its row. A long name goes on several lines, so the column stays
    narrow: at its fixture (``read_byBlocks_binaryMode``, then ``[large.bin]``), and at the
    last ``_`` within OP_LINE characters of each line."""
    name, bracket, fixture = op.partition("[")
    parts, rest = [], name
    while len(rest) > OP_LINE and rest.rfind("_", 1, OP_LINE) > 0:
        cut = rest.rfind("_", 1, OP_LINE)
        parts.append(rest[:cut])
        rest = rest[cut:]
    parts.append(rest)
    if bracket:
        parts.append(bracket + fixture)
    return f"[{'<br>'.join(code(part) for part in parts)}]({url(target)}#{row_id(op)})"


def section_findings(an: Analysis, link: str, strip_figures: list[str],
                     label: Labeller) -> list[str]:
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
              f"interval, {SLOWER}/{FASTER} significant, **bold** a regression; each op links "
              "to its row on its suite page.", ""]
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
    slower, faster = an.listed()
    counted = counts.load_counts(an.data.run.path) if an.data.run else []
    untouched = allocator_section.untouched_steps(an.data) \
        if an.data.all_conditions is not None else {}
    functions = an.functions
    with_notes = bool(counted) or bool(untouched) or any(
        bytes_on_2x_note(an, f.op, f.a) or an.recipe_check(f) for f in slower + faster) or any(
        getattr(f, name, None) for f in slower + faster for name in ("evidence", "firmness", "modes"))
    nbytes_of = dict(zip(an.data.frame["op"], an.data.frame["bytes"]))
    rank = 0
    numbers = {}
    classes = classes_sentence(slower + faster, an.threshold)
    if classes:     # one paragraph with the sentence above it: the first screen is short
        lines[intro] += " " + classes
    why = {id(f): an.candidates_of(f) for f in slower + faster}    # candidate upstream changes
    with_why = any(w.top is not None for w in why.values())
    for title, listed in (("Slower", slower), ("Faster", faster)):
        if not listed:
            continue
        rows = []
        for f in listed:
            rank += 1
            numbers[id(f)] = rank
            suite = an.suite_of[f.op]
            op_cell = op_link(f.op, f"{link}/{suite}.md")
            step = nowrap(f"{md(label(f.a))} → {md(label(f.b))}")
            rows.append([str(rank), op_cell, step, nowrap(fmt_ratio(f.comparison, an.threshold)),
                         time_cell(an, f, nbytes_of)]
                        + ([finding_notes(f, counted if counted else None,
                                          allocator_section.finding_note(
                                              untouched, f.op, f.a, f.b, an.threshold),
                                          top_function(functions, counted, f),
                                          bytes_on_2x_note(an, f.op, f.a),
                                          recipe_note(an, f))]
                           if with_notes else [])
                        + ([why_cell(why[id(f)])] if with_why else []))
        headers = ["#", "op", "step", nowrap("ratio [95% interval]"),
                   "time per call<br>throughput"]
        align = ["right", "left", "left", "right", "right"]
        if with_notes:
            headers, align = headers + ["counts per call"], align + ["left"]
        if with_why:
            headers, align = headers + ["likely change"], align + ["left"]
        lines += [f"### {title}", "", table(rows, headers, align), ""]
    checked = [(f, an.recipe_check(f)) for f in findings]
    checked = [(f, check) for f, check in checked if check is not None]
    if checked:
        held = sum(check[3] for _, check in checked)
        twins = sorted({s for _, check in checked for s in check[:2]} - {f.a for f, _ in checked}
                       - {f.b for f, _ in checked})
        lines += [f"The lineage is built by one recipe ({md(an.lin.recipe or 'unknown')}); "
                  f"{len(checked)} findings have a side built by another recipe too "
                  f"({names(twins)}): {held} of them hold with that side replaced by it "
                  "(significant and beyond the threshold the same way), "
                  f"{len(checked) - held} do not. Their rows say which.", ""]
    lines += likely_causes([(numbers[id(f)], why[id(f)]) for f in slower + faster])
    more = len(findings) - len(slower) - len(faster)
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


def section_counts_only(an: Analysis, link: str) -> list[str]:
    """Steps whose counts moved while their timing found nothing, when the analysis names
    them (``Analysis.counts_only``): a short collapsed table."""
    found = getattr(an, "counts_only", lambda: [])()
    if not found:
        return []
    counted = counts.load_counts(an.data.run.path) if an.data.run else []
    rows = [[op_link(f.op, f"{link}/{an.suite_of[f.op]}.md"), nowrap(f"{md(f.a)} → {md(f.b)}"),
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


def section_geomeans(an: Analysis) -> list[str]:
    """Geometric means against the oldest release, overall and per category, one row a series."""
    others = [s for s in display_order(an) if s != an.oldest]
    if not others:
        return []
    categories = sorted({an.category_of[op] for op in an.ops})

    def of(series, category=None):
        return [c for (op, s), c in an.oldest_cmp.items()
                if s == series and (category is None or an.category_of[op] == category)]
    rows = [(column_title(an.data, s), s) for s in others]
    columns = [("ops", lambda s: str(len(of(s)))), ("all ops", lambda s: geomean_cell(of(s)))]
    columns += [(md(cat), lambda s, cat=cat: geomean_cell(of(s, cat))) for cat in categories]
    return [f"## Geometric means against {code(an.oldest)}", "",
            f"Each series' ratios to {code(an.oldest)}, geometric mean over the ops it ran "
            "(the ops column counts them; a series that ran fewer ops is a mean over those). "
            "—: no op of that category.", ""] + wide_table(rows, columns, "series")


def section_steps(an: Analysis, label: Labeller) -> list[str]:
    if not an.steps:
        return []
    rows = []
    dates = {s: changelog.release_date_of(series_info(an.data, s).get("version") or "")
             for step in an.steps for s in step}
    gaps = []
    for a, b in an.steps:
        step = nowrap(f"{md(label(a))} → {md(label(b))}")
        if dates[a] and dates[b]:
            days = (datetime.date.fromisoformat(dates[b])
                    - datetime.date.fromisoformat(dates[a])).days
            if days > FAR_APART_DAYS:
                gaps.append(f"- {step}: released {dates[a]} and {dates[b]}, "
                            f"{days / 365.25:.1f} years apart: the step holds what both "
                            "branches changed in that time (backported fixes too), not only "
                            "what the newer minor version brought.")
            continue
        # Without both dates, the patch levels say it: 3.12.1 -> 3.13.15 holds the fixes of
        # fourteen patch releases of 3.13 beside what 3.13.0 brought.
        levels = [(series_info(an.data, s).get("version_info") or [0, 0, 0])[2:3] for s in (a, b)]
        if all(levels) and levels[1][0] - levels[0][0] >= FAR_APART_PATCHES:
            versions = [md(series_info(an.data, s).get("version") or s) for s in (a, b)]
            gaps.append(f"- {step}: patch levels {levels[0][0]} and {levels[1][0]} "
                        f"({versions[0]} → {versions[1]}; no changelog at hand dates both): "
                        "the step holds the newer branch's patch releases of fixes too, not "
                        "only what its first release brought.")
    for a, b in an.steps:
        cs = [c for (op, x, y), c in an.step_cmp.items() if (x, y) == (a, b)]
        released = nowrap(f"{dates[a] or '?'} → {dates[b] or '?'}")
        rows.append([nowrap(f"{md(label(a))} → {md(label(b))}"), released, str(len(cs)),
                     geomean_cell(cs),
                     str(sum(bool(c.significant) and c.ratio > 1 for c in cs)),
                     str(sum(bool(c.significant) and c.ratio < 1 for c in cs)),
                     str(sum(c.regression(an.threshold) for c in cs))])
    # Which builds stand for the releases, and the steps whose two builds differ in more
    # than the release (analysis.lineage): said where the steps are.
    notes = [f"- {nowrap(f'{md(a)} → {md(b)}')}: {note}" for a, b in an.steps
             if (note := step_recipe_note(an.lin, a, b))] + gaps
    return ["## Release steps", "",
            "Each release of the lineage against the one before it (the previous-release base): "
            "geometric mean of the op ratios, and how many ops changed significantly; "
            "released: both sides' release dates from CPython's changelogs at hand (? where "
            "none at hand holds the release: 2.x, or a patch release whose branch's tarball "
            "is not in the cache). " + " ".join(lineage_recipe_lines(an.data, an.lin)), "",
            table(rows, ["step", "released", "ops", "geometric mean", SLOWER, FASTER,
                         f"regressions > {an.threshold:.0%}"]), ""] + notes + ([""] if notes else [])


def section_variants(an: Analysis, link: str) -> list[str]:
    lines = []
    for kind, title in VARIANT_KINDS.items():
        variants = [v for v in an.lin.variants if v.kind == kind]
        if not variants or kind == "aa":     # the A/A check has its own section
            continue
        lines += [f"## {title}", ""]
        for v in variants:
            if v.twin is None:
                lines += [f"- {code(v.series)}: no twin in this run, so it is only compared with "
                          f"{code(an.oldest)} (geometric means above).", ""]
                continue
            cs = {op: c for (op, s), c in an.twin_cmp.items() if s == v.series}
            slower = sum(bool(c.significant) and c.ratio > 1 for c in cs.values())
            faster = sum(bool(c.significant) and c.ratio < 1 for c in cs.values())
            lines += [f"### {code(v.series)} against {code(v.twin)}", "",
                      f"{len(cs)} ops, geometric mean {geomean_cell(cs.values())}; "
                      f"{slower} significantly slower, {faster} significantly faster.", ""]
            if kind == "build":
                only_mine, only_theirs = build_flag_differences(an.data, v.series, v.twin)
                if only_mine or only_theirs:
                    lines += [f"Build flags only {code(v.series)} has: "
                              f"{', '.join(code(f) for f in only_mine) or 'none'}; only "
                              f"{code(v.twin)} has: "
                              f"{', '.join(code(f) for f in only_theirs) or 'none'}.", ""]
            top = sorted((c for c in cs.items() if c[1].significant),
                         key=lambda oc: -abs(math.log(oc[1].ratio)))[:TOP_PER_VARIANT]
            if top:
                lines += [table([[code(op), nowrap(fmt_ratio(c, an.threshold))]
                                 for op, c in top],
                                ["largest significant changes", "ratio [95% interval]"]), ""]
    if lines:
        lines = [f"Each variant against its twin; per-op tables are on the suite pages "
                 f"({link}/).", ""] + lines
    return lines


def section_baseline(an: Analysis) -> list[str]:
    if not an.baseline:
        return []
    rows = []
    for s in an.order:
        cs = [c for (op, x), c in an.baseline_cmp.items() if x == s]
        if cs:
            rows.append([column_title(an.data, s), str(len(cs)), geomean_cell(cs)])
    return [f"## Against the chosen baseline {code(an.baseline)}", "",
            table(rows, ["series", "ops", "geometric mean"]), ""]


def section_native_summary(an: Analysis) -> list[str]:
    info = an.data.manifest.get("native")
    if not info:
        return []
    measured = [op for op in an.ops if (native.SERIES, op) in an.means]
    if info.get("status") != "ok" and not measured:
        return ["## C reference", "", f"Not measured: {md(info.get('tool', 'unknown reason'))}.",
                ""]
    lines = ["## C reference", "",
             f"A C program ({md(info.get('tool', ''))}) repeats {len(measured)} block reads, "
             "writes and copies in the same run with the same call pattern: one unbuffered "
             "system call per block. It is a reference for that pattern, not a limit: Python "
             "buffers, and can be faster. Per-op tables are on the suite pages.", ""]
    return lines + section_machines_best(an, info.get("best"))


def section_machines_best(an: Analysis, best) -> list[str]:
    """Python's speed as a share of the C program's 1 MiB blocks (the same files read, written and
    copied by the C program in page-aligned 1 MiB blocks, measured in the same run)."""
    if not isinstance(best, dict) or not isinstance(best.get("ops"), dict):
        return ["The C program's 1 MiB blocks were not measured in this run "
                "(runs made before it was).", ""]
    ops = [op for op in an.ops if op in best["ops"]]
    series = [s for s in an.lin.releases if any((s, op) in an.means for op in ops)]
    if not ops or not series:
        return []

    def share(op):
        def cell(s):
            python = an.means.get((s, op))
            if not python:
                return "–"
            return fmt_value(best['ops'][op]['seconds'] / stats.location(python.values()), ".0%")
        return cell
    rows = [(code(op), op) for op in ops]
    columns = [("best (C, 1 MiB blocks)",
                lambda op: nowrap(fmt_time(best["ops"][op]["seconds"])))]
    columns += [(code(s), lambda op, s=s: share(op)(s)) for s in series]
    return (["### Against the C program's 1 MiB blocks", "",
             "The same files read, written and copied by the C program in page-aligned 1 MiB "
             f"blocks, the fastest of {best.get('repeat', '?')} calls, measured in this run "
             "after the timed work; each release's speed as a share of it (100%: as fast as "
             "the C program; above 100%: faster, which Python's buffering and the page cache "
             "can be: it is a reference, not a ceiling).", ""]
            + wide_table(rows, columns))


def section_suite_links(an: Analysis, link: str) -> list[str]:
    rows = [[f"[{md(suite)}]({url(f'{link}/{suite}.md')})",
             str(sum(an.suite_of[op] == suite for op in an.ops)),
             str(sum(an.suite_of[f.op] == suite for f in an.findings()))] for suite in an.suites]
    return ["## Suite pages", "",
            "Every op's ratios with intervals, times, throughput, noise and the figures, one "
            f"page per suite; the full data as a tidy CSV: [{link}/data.csv]({link}/data.csv).",
            "", table(rows, ["suite", "ops", "findings"]), ""]


# -- figures -----------------------------------------------------------------------------

def steps_heatmap_ops(an: Analysis) -> list:
    """The ops of the main page's heatmap of release steps: every op when they fit in one
    screen's heatmap, else those with the largest significant step changes."""
    from iomatrix.reporting import figures
    if len(an.ops) <= figures.MAX_HEATMAP_ROWS:
        return list(an.ops)
    largest: dict = {}
    for (op, _, _), c in an.step_cmp.items():
        if c.significant:
            largest[op] = max(largest.get(op, 0.0), abs(math.log(c.ratio)))
    chosen = sorted(largest, key=lambda op: -largest[op])[:figures.MAX_HEATMAP_ROWS]
    return [op for op in an.ops if op in chosen]


def draw_figures(an: Analysis, figures_dir: Path, draw: bool) -> tuple[dict, list, list]:
    """Heatmaps per suite (split so none is taller than a screen), the lineage trend, the strip
    plots of the findings, the chunk curve. Returns ({suite: [names]}, [main names],
    [strip names]); with ``draw`` False only the names (the PNGs exist already)."""
    from iomatrix.reporting import figures
    others = [s for s in an.order if s != an.oldest]
    heatmaps: dict = {}
    for suite in an.suites:
        suite_ops = [op for op in an.ops if an.suite_of[op] == suite]
        # As few parts as keep each under the row limit, of even size (33 ops: 17 + 16).
        size = math.ceil(len(suite_ops) / math.ceil(len(suite_ops) / figures.MAX_HEATMAP_ROWS))
        parts = [suite_ops[i:i + size] for i in range(0, len(suite_ops), size)]
        for k, part in enumerate(parts, 1):
            ratios, significant = figures.ratio_frames(an.oldest_cmp, part, others)
            measured = ratios.columns[ratios.notna().any()]
            if not len(measured):
                continue
            name = f"heatmap-{suite}-{k}.png" if len(parts) > 1 else f"heatmap-{suite}.png"
            if draw:
                figures.heatmap(ratios[measured], significant[measured], figures_dir / name,
                                f"{suite}{f' ({k}/{len(parts)})' if len(parts) > 1 else ''}: "
                                f"time against {an.oldest}")
            heatmaps.setdefault(suite, []).append(name)
    main = []
    if len(an.lin.releases) >= 2:
        ops = steps_heatmap_ops(an)
        if ops:
            titles = {(a, b): f"{a} → {b}" for a, b in an.steps}
            ratios = pd.DataFrame([[getattr(an.step_cmp.get((op, a, b)), "ratio", math.nan)
                                    for a, b in an.steps] for op in ops],
                                  index=ops, columns=list(titles.values()))
            significant = pd.DataFrame([[bool(getattr(an.step_cmp.get((op, a, b)),
                                                      "significant", False))
                                         for a, b in an.steps] for op in ops],
                                       index=ops, columns=list(titles.values()))
            if draw:
                figures.heatmap(ratios, significant, figures_dir / "steps.png",
                                "Each release against the one before it")
            main.append("steps.png")
        categories = sorted({an.category_of[op] for op in an.ops})
        geomeans = figures.category_geomeans(an.oldest_cmp, an.category_of, categories,
                                             an.lin.releases[1:])
        if draw:
            figures.category_trend(geomeans, figures_dir / "categories.png",
                                   f"Geometric mean per category along the lineage, against "
                                   f"{an.oldest}")
        main.append("categories.png")
    chunk_series = an.lin.releases + [native.SERIES]
    if (figures.chunk_curve(an.data.frame[an.data.frame["series"].isin(chunk_series)],
                            figures_dir / "chunks.png", order=chunk_series) if draw
            else (figures_dir / "chunks.png").exists()):
        main.append("chunks.png")
    strips = []
    findings = [f for listed in an.listed() for f in listed]
    for k in range(0, len(findings), figures.STRIPS_PER_FIGURE):
        panels = [{"title": f"#{n} {f.op}\n{f.a} → {f.b}: {f.comparison.ratio:.2f}×",
                   "a": f.a, "b": f.b, "a_values": list(an.means[(f.a, f.op)].values()),
                   "b_values": list(an.means[(f.b, f.op)].values())}
                  for n, f in enumerate(findings[k:k + figures.STRIPS_PER_FIGURE], k + 1)]
        name = f"findings-{k // figures.STRIPS_PER_FIGURE + 1}.png"
        if draw:
            figures.strips(panels, figures_dir / name, "Per-process means of the findings")
        strips.append(name)
    return heatmaps, main, strips


# -- the report ----------------------------------------------------------------------------

def scope_line(an: Analysis, label: Labeller, link: str, extra: dict) -> str:
    """Which releases and variants ran (each with its exact version), where, and where the
    rest of the report is."""
    m = an.data.manifest
    legend = Labeller(an.data)        # a legend: every label with its version, here
    for series in display_order(an):
        label.seen.add(series)
    parts = []
    if an.lin.releases:
        parts.append(f"Releases {' → '.join(md(legend(s)) for s in an.lin.releases)}")
    if an.lin.variants:
        parts.append("variants " + ", ".join(md(legend(v.series)) for v in an.lin.variants))
    pages_links = [f"[{title}]({link}/{name}.md)" for name, title in
                   (("counts", "counts by op"), ("machine", "machine and interpreters"))
                   if name in extra]
    where = (f"{len(an.ops)} ops of {len(an.suites)} suite{'s' * (len(an.suites) > 1)}, host "
             f"**{md(m.get('host', '?'))}**, started {md(m.get('started', '?'))}.")
    return "; ".join(parts) + (". " if parts else "") + where + \
        (f" More: {', '.join(pages_links)}, and the suite pages below." if pages_links else "")


def page_counts(data: RunData, main_name: str, order: list) -> str | None:
    """The counting pass on a page of its own: counts by op and interpreter, how exact they
    are, the biggest changes; None for a run that did not count (``--counters off``)."""
    rows, skipped = counts.load_counts(data.run.path), counts.skipped_counts(data.run.path)
    if not rows and not skipped:
        return None
    lines = ["<!-- generated by scripts/report.py: do not edit, regenerate -->",
             f"# Counts: run {md(data.run.run_id)}", "",
             f"Back to the [main page](../{main_name}).", ""]
    section = counts.markdown_section(rows, skipped, order=order,
                                      heading="## System calls, page faults, instructions")
    return "\n".join(lines + collapse_zero_tables(section))


def page_machine(data: RunData, order: list, main_name: str) -> str:
    lines = ["<!-- generated by scripts/report.py: do not edit, regenerate -->",
             f"# Machine and interpreters: run {md(data.run.run_id if data.run else '?')}", "",
             f"Back to the [main page](../{main_name}).", ""]
    return "\n".join(lines + section_metadata(data, order))


def extra_page_name(name: str, suites) -> str:
    """A page of the run beside the suite pages, renamed if a suite has that name."""
    return name if name not in suites else f"run-{name}"


def build_pages(data: RunData, baseline: str | None = None,
                threshold: float = DEFAULT_THRESHOLD, figures_dir: Path | None = None,
                figures_link: str = "figures", pages_link: str = "latest",
                main_name: str = "latest.md", draw: bool = True,
                link_pages: bool = True) -> Pages:
    """The main page, the suite pages and the run's other pages (``pages_link/<name>.md``
    from the main page) and the CSV; with ``figures_dir``, also the PNGs, linked as
    ``figures_link/NAME`` from the main page (``../figures_link/NAME`` from the others).

    The main page is the answer (summary, findings, release steps, the heatmap); what
    supports it (counts, machine and interpreters) is on pages of its own, and the rest
    (geometric means, A/A, variants, conditions) in collapsed sections."""
    lines = section_header(data)
    order = ordered_series(data)
    if not order:
        lines += ["No results could be read from this run.", ""] + section_problems(data)
        lines += section_run_facts(data) + section_metadata(data, order)
        return Pages("\n".join(lines), {}, "")
    an = analyse(data, baseline, threshold)
    shown = display_order(an)
    label = Labeller(data)
    # The summary leads with the release steps; the untouched allocator's effect is a
    # condition across versions, not one step's finding, so it has a clause of its own after.
    summary = summary_paragraph(an, label) if len(order) > 1 else ""
    untouched_clause = allocator_section.summary_clause(data, label)
    if untouched_clause:
        summary = f"{summary} {untouched_clause}." if summary else f"{untouched_clause}."
    extra = {}
    if data.run is not None:
        counted = page_counts(data, main_name, shown)
        if counted:
            extra[extra_page_name("counts", an.suites)] = counted
        extra[extra_page_name("machine", an.suites)] = page_machine(data, shown, main_name)
        if data.all_conditions is not None:
            extra[extra_page_name("allocator", an.suites)] = "\n".join([
                "<!-- generated by scripts/report.py: do not edit, regenerate -->",
                f"# The allocator: run {md(data.run.run_id)}", "",
                f"Back to the [main page](../{main_name}).", "",
                allocator_section.allocator_section(with_all_conditions(data))])
    heatmaps, main_figures, strips = ({}, [], []) if figures_dir is None else \
        draw_figures(an, figures_dir, draw)
    if summary:
        lines += [md(summary), ""]
    # A main page shown without its pages (a merged report) links none of them.
    lines += [scope_line(an, label, pages_link, extra if link_pages else {}), ""]
    lines += section_problems(data)
    if len(order) == 1:
        lines += [f"Only {code(order[0])} is in this run: there is nothing to compare, so "
                  f"there are no ratios; its times are on the suite pages.", ""]
    else:
        lines += section_findings(an, pages_link, [f"{figures_link}/{n}" for n in strips],
                                  label)
        lines += allocator_section.main_page_lines(data, label)
        if data.all_conditions is not None and "allocator" in extra:
            lines += [f"Every op under both conditions, with faults per call: "
                      f"[the allocator page]({pages_link}/allocator.md).", ""]
        lines += section_steps(an, label)
        if "steps.png" in main_figures:
            lines += ["## Heatmap", "",
                      "Every release against the one before it, per op (red slower, blue "
                      f"faster; {SLOWER}/{FASTER}: significant).", "",
                      f"![ratio of each release step per op]({figures_link}/steps.png)", ""]
    lines += section_suite_links(an, pages_link)
    lines += ["## More about this run", ""]
    notes = timer_notes(data)
    lines += details("How this run was measured: conditions, machine phase, timers",
                     demoted(section_run_facts(data)) + [stats.method_sentence(data.paired), ""]
                     + [f"- {note}" for note in notes] + ([""] if notes else []))
    warnings = section_warnings(data)
    lines += details(f"Warnings ({sum(w.startswith('- ') for w in warnings)})",
                     demoted(warnings))
    if len(order) > 1:
        lines += details("Geometric means against the oldest release",
                         demoted(section_geomeans(an)))
        lines += details("Against the chosen baseline", demoted(section_baseline(an)))
        lines += details("A/A check: one interpreter against itself",
                         demoted(section_aa(data, an.ops, an.means)))
        lines += details("Variants against their twins (free-threaded, other builds, PyPy, "
                         "pure-Python io)", demoted(section_variants(an, pages_link)))
        figure_lines = []
        titles = {"categories.png": "geometric mean per category along the lineage",
                  "chunks.png": "throughput by chunk size along the lineage"}
        for name in main_figures:
            if name in titles:
                figure_lines.append(f"![{titles[name]}]({figures_link}/{name})")
        lines += details("Figures: categories and chunk sizes along the lineage",
                         ["### Figures", ""] + figure_lines + [""] if figure_lines else [])
        lines += details("Then and now: the 2009 study's ratios beside today's",
                         demoted(section_then_and_now(data, an.means, shown, an.oldest,
                                                         an.lin.releases)))
    lines += details("C reference and its 1 MiB blocks", demoted(section_native_summary(an)))
    lines += details("Skipped ops", demoted(section_skipped(data, shown)))
    if data.run is None:
        lines += section_metadata(data, shown)
    suites = {suite: suite_page(an, suite, main_name,
                                [f"../{figures_link}/{n}" for n in heatmaps.get(suite, [])])
              for suite in an.suites}
    return Pages("\n".join(lines), suites, tidy_csv(an), extra, summary)


def build_report(data: RunData, baseline: str | None = None,
                 threshold: float = DEFAULT_THRESHOLD, figures_dir: Path | None = None,
                 figures_link: str = "figures") -> str:
    """The main page alone, without links to the run's other pages (see build_pages)."""
    return build_pages(data, baseline, threshold, figures_dir, figures_link,
                       link_pages=False).main


def demote(text: str) -> str:
    """One heading level down, so a run's report becomes a section of a merged one."""
    return "\n".join("#" + line if line.startswith("#") else line for line in text.splitlines()
                     if not line.startswith("<!-- generated"))


def section_cross_host(runs: list[RunData]) -> list[str]:
    """Each label that ran on several hosts: its time per op on each, and the ratio."""
    lines = []
    labels: dict = {}
    for data in runs:
        for series in ordered_series(data):
            if not series.endswith(store.PYIO_SUFFIX):
                labels.setdefault(series, []).append(data)
    for label, found in labels.items():
        if len(found) < 2:
            continue
        per_run = [process_means(d.frame) for d in found]
        shared = [op for op in ordered_ops(found[0])
                  if all((label, op) in means for means in per_run)]
        if not shared:
            continue
        rows, ratios = [], {i: [] for i in range(1, len(found))}
        for op in shared:
            row = [code(op), nowrap(fmt_time(stats.location(per_run[0][(label, op)].values())))]
            for i in range(1, len(found)):
                comparison = stats.compare(per_run[0][(label, op)], per_run[i][(label, op)])
                ratios[i].append(comparison.ratio)
                row += [nowrap(fmt_time(stats.location(per_run[i][(label, op)].values()))),
                        nowrap(fmt_ratio(comparison))]
            rows.append(row)
        rows.append(["**geometric mean**", ""] + [cell for i in range(1, len(found)) for cell in
                                                    ("", f"**{stats.geometric_mean(ratios[i]):.2f}**")])
        headers = ["op", md(host_title(found[0]))]
        for data in found[1:]:
            headers += [md(host_title(data)), f"ratio to {md(found[0].manifest.get('host', '?'))}"]
        lines += [f"### {code(label)} on {len(found)} hosts", "", table(rows, headers), ""]
    if not lines:
        return ["## Across hosts", "", "No interpreter label ran on more than one host.", ""]
    return ["## Across hosts", "",
            "The same interpreter label on each host: time per op, and the ratio to the "
            f"first host. {stats.METHOD} Hosts differ in more than their Python, so these "
            "ratios describe machines, not releases.", ""] + lines


def host_title(data: RunData) -> str:
    m = data.manifest
    return f"{m.get('host', '?')} ({m.get('system', '?')}, run {data.run.run_id})"


def build_merged_report(runs: list[RunData], missing: list[str], baseline, threshold,
                        figures_root: Path | None) -> str:
    hosts = sorted({d.manifest.get("host", "?") for d in runs})
    lines = [f"<!-- generated by scripts/report.py from {len(runs)} runs: do not edit, "
             "regenerate -->",
             f"# iomatrix report: {len(runs)} runs on {len(hosts)} hosts", "",
             "Runs: " + ", ".join(f"{md(host_title(d))}" for d in runs) + ".", ""]
    if missing:
        lines += ["Not found, skipped: " + ", ".join(md(m) for m in missing) + ".", ""]
    contexts = {(d.manifest.get("profile"), d.manifest.get("cache"),
                 (d.manifest.get("fixture_filesystem") or {}).get("type")) for d in runs}
    if len(contexts) > 1:
        lines += ["> **Warning:** the runs differ in profile, page-cache mode or file system "
                  f"({'; '.join(', '.join(map(str, c)) for c in sorted(contexts, key=str))}); "
                  "compare them with care.", ""]
    lines += section_cross_host(runs)
    for data in runs:
        figures_dir = figures_root / data.run.run_id if figures_root else None
        text = build_report(data, baseline if baseline in ordered_series(data) else None,
                            threshold, figures_dir, f"figures/{data.run.run_id}")
        lines += [demote(text), ""]
    return "\n".join(lines)
