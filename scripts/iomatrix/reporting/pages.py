"""A run's report: a main page that answers first, one detail page per suite, and a tidy CSV.

The main page opens with the summary in words, then the findings (consecutive releases of
the lineage whose change is significant and beyond the threshold, largest first), the
release steps and their heatmap, and links to the suite pages, which hold the per-op
tables; geometric means, the A/A check and the variants against their twins follow in
collapsed sections. Tables made by ``markdown.wide_table`` are split at
``markdown.MAX_COLUMNS`` value columns (the suite pages' per-series tables at
``MAX_COLUMNS + 2``) so they read at GitHub's page width; those made by ``markdown.table``
are not split. ``build_merged_report`` puts the main pages of
runs on several hosts together. All are generated files: regenerate, never edit.

Here is the page's assembly (``build_pages``) and its smaller sections; the summary
paragraph is in ``summary``, the findings section in ``findings``, the figures in
``run_figures`` (their names are importable from here too).
"""
from __future__ import annotations

import dataclasses
import datetime
import math
from pathlib import Path

from iomatrix import stats
from iomatrix.analysing import changelog, counts
from iomatrix.measuring import native
from iomatrix.reporting import allocator_section, pool_section
from iomatrix.storing import store
from iomatrix.analysing.analysis import (VARIANT_KINDS, RunData, build_flag_differences, context,
                                         is_condition_twin, lineage_recipe_lines, ordered_ops,
                                         ordered_series, process_means, series_info,
                                         spanned_steps, step_recipe_note, with_all_conditions)
from iomatrix.analysing.comparisons import Analysis, analyse
from iomatrix.reporting.markdown import (FASTER, SLOWER, code, collapse_zero_tables,
                                         context_differences, details, demoted, fmt_ratio,
                                         fmt_time, fmt_value, md, nowrap, table, url, wide_table)
from iomatrix.reporting.sections import (column_title, left_out_sentence, section_aa,
                                         section_header, section_metadata, section_problems,
                                         section_run_facts, section_skipped,
                                         section_then_and_now, section_warnings)
from iomatrix.reporting.suite_pages import display_order, suite_page, tidy_csv
# The summary paragraph and the findings section live in modules of their own; their names
# stay importable from here, where callers and tests have always found them.
from iomatrix.reporting.summary import (  # noqa: F401
    CATEGORY_WORDS, MAX_CLAUSES, PATTERN_WORDS, STUDY_OP, Labeller, bytes_on_2x_note,
    counts_index, counts_phrase, factor_span, kind_phrase, magnitude, op_kind,
    open_regressions, summary_paragraph)
from iomatrix.reporting.findings import (  # noqa: F401
    USUAL_CLASSES, classes_sentence, finding_notes, op_link, recipe_note,
    section_counts_only, section_findings, time_cell, top_function)
from iomatrix.reporting.run_figures import draw_figures, steps_heatmap_ops  # noqa: F401

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
    others: dict = dataclasses.field(default_factory=dict)  # name -> page: counts, machine,
                                                            # allocator, pool
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


# -- the main page ---------------------------------------------------------------------

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
    notes += [f"- {nowrap(f'{md(a)} → {md(b)}')}: stands over {', '.join(code(s) for s in over)}, "
              "which the manifest lists as measured but whose data is left out (Files not "
              "read): not a step between consecutive releases of this run."
              for (a, b), over in spanned_steps(an.data, an.steps).items()]
    return ["## Release steps", "",
            "Each release of the lineage against the one before it (the previous-release base): "
            "geometric mean of the op ratios, and how many ops changed significantly; "
            "released: both sides' release dates from CPython's changelogs at hand (? where "
            "none at hand holds the release: 2.x, or a patch release whose branch's tarball "
            "is not in the cache). " + " ".join(lineage_recipe_lines(an.data, an.lin)), "",
            table(rows, ["step", "released", "ops", "geometric mean", SLOWER, FASTER,
                         f"regressions > {an.threshold:.0%}"]), ""] + notes + ([""] if notes else [])


def section_variants(an: Analysis, link: str | None) -> list[str]:
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
        lines = ["Each variant against its twin" + (f"; per-op tables are on the suite pages "
                 f"({link}/)." if link else "."), ""] + lines
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
                link_pages: bool = True, pool=None, analysed: Analysis | None = None) -> Pages:
    """The main page, the suite pages and the run's other pages (``pages_link/<name>.md``
    from the main page) and the CSV; with ``figures_dir``, also the PNGs, linked as
    ``figures_link/NAME`` from the main page (``../figures_link/NAME`` from the others).

    The main page is the answer (summary, findings, release steps, the heatmap); what
    supports it (counts, machine and interpreters) is on pages of its own, and the rest
    (geometric means, A/A, variants, conditions) in collapsed sections. With ``pool``
    (pooling.Pool) the summary, the findings and data.csv quote the pooled figures too
    (pool_section); without, the page says it is one run of one host. ``analysed``: the
    run's analyse() from an earlier call with the same baseline and threshold (report.py
    builds two copies of the pages; the findings' bootstrap and the changelog scores it keeps
    are then computed once)."""
    lines = section_header(data)
    order = ordered_series(data)
    if not order:
        lines += ["No results could be read from this run.", ""] + section_problems(data)
        lines += section_run_facts(data) + section_metadata(data, order)
        return Pages("\n".join(lines), {}, "")
    an = analysed if analysed is not None else analyse(data, baseline, threshold)
    if pool is not None:    # a step the same way in every pooled run: comparisons.REPEATS
        an.note_repetition(pool)
    shown = display_order(an)
    label = Labeller(data)
    # The summary leads with the release steps; the untouched allocator's effect is a
    # condition across versions, not one step's finding, so it has a clause of its own after.
    summary = summary_paragraph(an, label) if len(order) > 1 else ""
    untouched_clause = allocator_section.summary_clause(data, label)
    if untouched_clause:
        summary = f"{summary} {untouched_clause}." if summary else f"{untouched_clause}."
    if pool is not None:
        summary = pool_section.summary_sentence(pool) + (f" {summary}" if summary else "")
    # A series the manifest lists as measured whose data is not here is said in the answer
    # itself (and so on the first screen and in the terminal's "In words"), with the steps
    # that now stand over it: never a release gone from the lineage without a word.
    spanned = spanned_steps(data, an.steps)
    left_out = left_out_sentence(data, spanned)
    if left_out:
        summary = f"{summary} {left_out}" if summary else left_out
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
    lines += open_regressions(an, label) if len(order) > 1 else []    # before the pool
    if pool is not None:
        extra[extra_page_name("pool", an.suites)] = pool_section.page_pool(pool, an, main_name)
        lines += pool_section.section_pool(pool, an, pages_link)
    elif data.run is not None:
        lines += [pool_section.one_run_line(data), ""]
    # A main page shown without its pages (a merged report) links none of them: they are
    # not written beside it (and latest/ holds another run's).
    linked_pages = pages_link if link_pages else None
    lines += [scope_line(an, label, pages_link, extra if link_pages else {}), ""]
    lines += section_problems(data)
    if len(order) == 1:
        lines += [f"Only {code(order[0])} is in this run: there is nothing to compare, so "
                  f"there are no ratios; its times are on the suite pages.", ""]
    else:
        lines += section_findings(an, linked_pages, [f"{figures_link}/{n}" for n in strips],
                                  label, pool_section.finding_note(pool) if pool else None)
        lines += allocator_section.main_page_lines(data, label)
        if data.all_conditions is not None and "allocator" in extra and linked_pages:
            lines += [f"Every op under both conditions, with faults per call: "
                      f"[the allocator page]({linked_pages}/allocator.md).", ""]
        lines += section_steps(an, label)
        if "steps.png" in main_figures:
            lines += ["## Heatmap", "",
                      "Every release against the one before it, per op (red slower, blue "
                      f"faster; {SLOWER}/{FASTER}: significant).", "",
                      f"![ratio of each release step per op]({figures_link}/steps.png)", ""]
    lines += section_suite_links(an, linked_pages) if linked_pages else []
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
                         "pure-Python io)", demoted(section_variants(an, linked_pages)))
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
    csv_text = tidy_csv(an) + (pool_section.csv_rows(pool, an) if pool is not None else "")
    return Pages("\n".join(lines), suites, csv_text, extra, summary)


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
    # The runs' conditions as the manifests state them, each value escaped for the page
    # (context_differences); the hosts differ by design and are named above.
    differ = context_differences([{field: value for field, value in context(d.manifest).items()
                                   if field != "host"} for d in runs])
    if differ:
        lines += [f"> **Warning:** the runs differ in {'; '.join(differ)}; compare them with "
                  "care.", ""]
    lines += section_cross_host(runs)
    for data in runs:
        figures_dir = figures_root / data.run.run_id if figures_root else None
        text = build_report(data, baseline if baseline in ordered_series(data) else None,
                            threshold, figures_dir, f"figures/{data.run.run_id}")
        lines += [demote(text), ""]
    return "\n".join(lines)
