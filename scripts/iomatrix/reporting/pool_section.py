"""What a report says about the runs behind its numbers: one run of one host, or a pool.

Without ``--pool`` a report is one run of one host, and it says so (``one_run_line``).
With a pool (``iomatrix.analysing.pooling.Pool``) the main page opens with the pooled
figures (``summary_sentence``), lists the pooled findings with each one's spread over the
runs and, where the host moves a cell more than a run's own noise, "depends on the host"
with the counts beside it as the host-free evidence (``section_pool``); apart from them, the
cells whose verdict depends on the CPU kind, each kind's figure beside it, and the time-only
steps seen on one CPU kind (never stated as firm); each finding's row gives its pooled
figure (``finding_note``), data.csv gets the pooled rows (``csv_rows``) and a page of its
own every run's ratio of every cell (``page_pool``).
"""
from __future__ import annotations

import io
import math

from iomatrix.analysing import counts, pooling
from iomatrix.analysing.comparisons import Analysis
from iomatrix.reporting import aa_caveat
from iomatrix.reporting.markdown import code, md, nowrap, table
from iomatrix.reporting.suite_pages import CSV_FIELDS, TextGuardedWriter

SHOWN = 10          # pooled findings on the main page (all on the pool page)
# The 2009 study's own comparison: the main page's row that every reader looks for.
STUDY_CELL = ("read_allAtOnce_textMode", "2.7", "3.6")


def one_run_line(data) -> str:
    boot = pooling.boot_of(data.manifest, data.run.run_id if data.run else "?")
    return (f"These figures are one run of one host ({md(boot)}): a run on another machine, "
            "or after a reboot, lands elsewhere by more than its interval in some cells. "
            "`nox -s report -- --pool` pools the stored runs of this command and says how far.")


def both_intervals(cell: pooling.PooledCell) -> str:
    """The pooled ratio, a rerun's 95% interval and the pooled mean's, each named: the one is
    where a reader's own run lands, the other how well the pool knows the mean."""
    return "<br>".join([nowrap(f"{cell.estimate:.2f}"),
                        nowrap(f"rerun [{cell.low:.2f}, {cell.high:.2f}]"),
                        nowrap(f"mean [{cell.mean_low:.2f}, {cell.mean_high:.2f}]")])


def spread_text(cell: pooling.PooledCell) -> str:
    low, high = cell.seen
    return f"{low:.2f} to {high:.2f} over {cell.n} run{'s' * (cell.n > 1)} on {cell.boots} " \
           f"boot{'s' * (cell.boots > 1)}"


def counts_text(counted, op: str, a: str, b: str) -> str:
    """The counts of a step (which do not depend on the host): instructions and system
    calls per call, before and after; empty where the step was not counted."""
    move = counts.count_move(counted, op, a, b) if counted else None
    if move is None:
        return ""
    parts = []
    if move.get("instructions") is not None:
        factor = 1 + move["instructions"]
        parts.append(f"instructions {move['instructions']:+.0%}" if 0.5 < factor < 2 else
                     f"instructions ×{factor:.2g}" if factor >= 2 else
                     f"instructions ÷{1 / factor:.2g}" if factor > 0 else "instructions: none")
    calls = move.get("syscalls") or []
    parts.append("system calls " + (", ".join(f"{md(name)} {x:g} → {y:g}"
                                              for name, x, y in calls[:2])
                                    if calls else "the same"))
    return "counts: " + ";<br>".join(parts)


def host_text(cell: pooling.PooledCell, counted) -> str:
    if not cell.host_dependent:
        return ""
    # on lines of their own: the column stays narrow (GitHub's 1,012 px)
    text = f"yes: {spread_text(cell)}"
    op, a, b = cell.key
    evidence = counts_text(counted, op, a, b)
    return text + (f"<br>{evidence}" if evidence else "")


def largest_first(cells) -> list:
    return sorted(cells, key=lambda cell: (-abs(math.log(cell.estimate)), cell.key))


def findings(pool: pooling.Pool) -> list:
    """The pooled findings the pages state, largest change first: not those whose verdict
    depends on the CPU, nor time-only ones seen on one CPU kind (``Pool.firm``)."""
    return largest_first(cell for cell in pool.cells.values() if pool.firm(cell))


def cpu_dependent(pool: pooling.Pool) -> list:
    """The cells whose verdict depends on the CPU kind, largest change on a kind first."""
    return sorted((cell for cell in pool.cells.values() if cell.depends_on_cpu),
                  key=lambda cell: (-max(abs(math.log(part.estimate))
                                         for part in cell.by_cpu.values()), cell.key))


def one_cpu_time_only(pool: pooling.Pool) -> list:
    """The pooled findings whose counts did not move, seen on one CPU kind: listed apart."""
    return largest_first(cell for cell in pool.cells.values() if pool.one_cpu_time_only(cell))


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def kinds_text(pool: pooling.Pool) -> str:
    """"on 4 boots of 2 CPU kinds (AMD EPYC: 12 runs, Intel Xeon: 1 run)" (runs whose
    manifest named no CPU are counted under "unknown CPU" there), or with one kind "on 3
    boots, all of one CPU kind (AMD EPYC)", or "on 3 boots" when that one kind is unknown.
    Plain text: the page escapes the summary whole."""
    boots = f"on {plural(pool.boots, 'boot')}"
    kinds = pool.cpus
    if len(kinds) == 1:
        kind = next(iter(kinds))
        return boots if kind == pooling.UNKNOWN_CPU else f"{boots}, all of one CPU kind ({kind})"
    return (f"{boots} of {len(kinds)} CPU kinds ("
            + ", ".join(f"{kind}: {plural(len(names), 'run')}"
                        for kind, names in kinds.items()) + ")")


def summary_sentence(pool: pooling.Pool) -> str:
    """The report's first sentence with a pool: the pooled figures."""
    found = findings(pool)
    hosted = [cell for cell in pool.cells.values() if cell.host_dependent]
    on_cpu, timed = cpu_dependent(pool), one_cpu_time_only(pool)
    runs = len(pool.runs)
    apart = []
    if on_cpu:
        apart.append(f"{plural(len(on_cpu), 'cell')} whose verdict depends on the CPU")
    if timed:
        apart.append(f"{plural(len(timed), 'time-only step')} seen on one CPU kind")
    text = (f"Pooled over {runs} runs of this command {kinds_text(pool)}, {len(found)} of "
            f"{len(pool.cells)} release steps of an op change significantly by more than "
            f"{pool.threshold:.0%}, {sum(cell.held == cell.n for cell in found)} of them in "
            f"every run" + (f" ({' and '.join(apart)}, listed apart)" if apart else "")
            + f", and {len(hosted)} {'cell depends' if len(hosted) == 1 else 'cells depend'} "
            "on the host")
    study = pool.cells.get(STUDY_CELL)
    if study is not None:
        op, a, b = STUDY_CELL
        text += (f"; the 2009 study's own comparison, {op} {a} → {b}, is {study.estimate:.2f} "
                 f"(a rerun on another boot: 95% within [{study.low:.2f}, {study.high:.2f}]; "
                 f"the pooled mean [{study.mean_low:.2f}, {study.mean_high:.2f}]; "
                 f"{spread_text(study)})")
    return text + "."


def finding_note(pool: pooling.Pool):
    """For the findings table: the pooled figure of a finding's cell, below its ratio."""
    def note(op: str, a: str, b: str) -> str:
        cell = pool.get(op, a, b)
        if cell is None or cell.n < 2:
            return ""
        # Lines no wider than the column's "[95% interval]": the findings table stays within
        # GitHub's 1,012 px column (nox -s preview -- --screenshot).
        return "<br>" + nowrap(f"pooled {cell.estimate:.2f}") + "<br>" + \
            nowrap("a rerun's 95%:") + "<br>" + \
            nowrap(f"[{cell.low:.2f}, {cell.high:.2f}]") + "<br>" + \
            nowrap(f"held {cell.held} of {cell.n}") + \
            ("<br>depends on<br>" + nowrap("the host") if cell.host_dependent else "") + \
            "".join(f"<br>{nowrap(line)}" for line in cpu_lines(pool, cell)) + \
            aa_caveat.pool_note(pool, op)
    return note


def cpu_lines(pool: pooling.Pool, cell: pooling.PooledCell, intervals: bool = False) -> list:
    """What a pooled figure says of the CPU kinds, in short lines: "depends on the CPU" with
    each kind's pooled ratio (and, with ``intervals``, its mean's 95% interval); "time only,
    seen on" the kinds, where the counts did not move."""
    lines = []
    if cell.depends_on_cpu:
        lines += ["depends on", "the CPU:"]
        for kind, part in cell.by_cpu.items():
            figure = f"{part.estimate:.2f}" + \
                (f" [{part.mean_low:.2f}, {part.mean_high:.2f}]" if intervals else "")
            lines.append(f"{md(kind)} {figure}")
    if pool.time_only(cell):
        lines += ["time only,", "seen on"] + \
            [md(kind) + "," * (i < len(cell.cpus) - 1) for i, kind in enumerate(cell.cpus)]
    return lines


def cpu_text(pool: pooling.Pool, cell: pooling.PooledCell) -> str:
    """The pooled tables' CPU column: the kinds the cell was seen on, or what cpu_lines
    says."""
    lines = cpu_lines(pool, cell, intervals=True)
    return "<br>".join(lines) if lines else "<br>".join(map(md, cell.cpus))


def pooled_row(cell: pooling.PooledCell, counted, pool: pooling.Pool) -> list:
    op, a, b = cell.key
    return [code(op), nowrap(f"{md(a)} → {md(b)}"),
            both_intervals(cell) + aa_caveat.pool_note(pool, op),
            f"{cell.seen[0]:.2f} to {cell.seen[1]:.2f}", f"{cell.held} of {cell.n}",
            host_text(cell, counted) or "no", cpu_text(pool, cell)]


HEADERS = ["op", "step", "pooled<br>95% intervals", "runs' ratios", "held in",
           "depends on the host", "CPU kinds"]
ALIGN = ["left", "left", "right", "right", "right", "left", "left"]


def unknown_cpu_line(pool: pooling.Pool) -> list[str]:
    """Said once on a page: the runs whose manifest names no CPU model, pooled as a kind of
    their own."""
    names = pool.cpus.get(pooling.UNKNOWN_CPU)
    if not names:
        return []
    return [f"{plural(len(names), 'run')} ({', '.join(map(code, names))}) name no CPU model in "
            f"{'their manifests' if len(names) > 1 else 'its manifest'}: pooled as one kind of "
            f"their own, \"{pooling.UNKNOWN_CPU}\", never with a known kind.", ""]


def apart_lines(pool: pooling.Pool, counted, heading: str) -> list[str]:
    """The cells listed apart from the pooled findings: those whose verdict depends on the
    CPU, and the time-only steps seen on one CPU kind."""
    lines = []
    on_cpu, timed = cpu_dependent(pool), one_cpu_time_only(pool)
    if on_cpu:
        lines += [f"{heading} Depends on the CPU ({len(on_cpu)})", "",
                  "A finding on one CPU kind that another kind's figure contradicts (its pooled "
                  "mean's 95% interval lies wholly on the other side of 1, or wholly within "
                  f"{pool.threshold:.0%}): each kind's pooled ratio with its mean's interval in "
                  "the last column. No pooled finding, whatever one kind's runs say.", "",
                  table([pooled_row(cell, counted, pool) for cell in on_cpu], HEADERS, ALIGN),
                  ""]
    if timed:
        kinds = "; ".join(dict.fromkeys(", ".join(map(md, cell.cpus)) for cell in timed))
        lines += [f"{heading} Time only, seen on one CPU kind ({len(timed)})", "",
                  "Pooled findings whose counts did not move (time only: the same instruction "
                  f"stream and system calls), seen on {kinds} only: the CPU may move such a "
                  "step as much as the release does, so none is stated as a finding until "
                  "another CPU kind shows it.", "",
                  table([pooled_row(cell, counted, pool) for cell in timed], HEADERS, ALIGN),
                  ""]
    return lines


def section_pool(pool: pooling.Pool, an: Analysis, link: str) -> list[str]:
    """The main page's pooled findings, largest change first; the study's row is added at
    the top when it is not among them."""
    counted = counts.load_counts(an.data.run.path) if an.data.run else []
    shown = findings(pool)[:SHOWN]
    study = pool.cells.get(STUDY_CELL)
    if study is not None and study not in shown:
        shown = [study] + shown
    lines = [f"## Over {len(pool.runs)} runs on {pool.boots} boot{'s' * (pool.boots > 1)}"
             + (f" of {len(pool.cpus)} CPU kinds" if len(pool.cpus) > 1 else ""), "",
             "Each cell's ratio pooled over the runs of this command (random effects, runs "
             "within boots, then boots: the spread beyond the runs' own intervals widens the "
             "intervals). Under it, *rerun*: the 95% interval your own run of the command, on "
             "another boot, is expected in (a prediction interval; its noise one of the pooled "
             "runs'), and *mean*: the 95% interval of the pooled mean, how well the runs "
             "know it, which a single run does not keep to; \"held in\" counts the runs whose "
             "own verdict is the pooled one, a verdict read on the rerun interval. A cell whose "
             "spread between runs is larger than a run's own noise depends on the host; its "
             "counts, which do not, are beside it; \"A/A flags it\": the A/A twin of that many "
             "pooled runs flags the op, and a bias of its size may be in the step. The CPU "
             "kind is a third level (runs within boots within CPU kinds): a cell whose verdict "
             "differs between kinds depends on the CPU, and a step whose counts did not move "
             "says the kinds it was seen on (\"time only, seen on\"); both are listed apart "
             "below when a finding rests on them. "
             "Method: docs/methodology.md, \"Pooled numbers\"; every cell and run: "
             f"[the pool page]({link}/pool.md).", ""]
    lines += unknown_cpu_line(pool)
    if pool.left_out:
        lines += ["Left out: " + "; ".join(md(text) for text in pool.left_out) + ".", ""]
    if shown:
        lines += [table([pooled_row(cell, counted, pool) for cell in shown], HEADERS, ALIGN),
                  ""]
    return lines + apart_lines(pool, counted, "###")


def page_pool(pool: pooling.Pool, an: Analysis, main_name: str) -> str:
    counted = counts.load_counts(an.data.run.path) if an.data.run else []
    lines = ["<!-- generated by scripts/report.py: do not edit, regenerate -->",
             f"# The pool: {len(pool.runs)} runs on {pool.boots} boots"
             + (f" of {len(pool.cpus)} CPU kinds" if len(pool.cpus) > 1 else ""), "",
             f"Back to the [main page](../{main_name}).", "",
             "Runs pooled: " + ", ".join(f"{code(run.name)} ({md(run.boot)}"
                                         + (f", {md(run.cpu)}" if run.cpu != pooling.UNKNOWN_CPU
                                            else "") + ")"
                                         for run in pool.runs) + ".", ""]
    lines += unknown_cpu_line(pool)
    if pool.left_out:
        lines += ["Left out: " + "; ".join(md(text) for text in pool.left_out) + ".", ""]
    lines += apart_lines(pool, counted, "##")
    cells = sorted(pool.cells.values(), key=lambda cell: cell.key)
    lines += ["## Every cell", "",
              "Per cell: the pooled ratio, the 95% interval of a rerun on another boot "
              "(*rerun*) and of the pooled mean (*mean*); docs/methodology.md, \"Pooled "
              "numbers\".", "",
              table([pooled_row(cell, counted, pool) for cell in cells], HEADERS, ALIGN), ""]
    lines += ["## Each run's ratio", "",
              "Per run and cell: the ratio and its 95% interval as that run's report has it "
              "(data.csv: ratio_to_previous_release rows of each run id).", ""]
    for cell in cells:
        op, a, b = cell.key
        runs = "; ".join(f"{code(name)} {c.ratio:.2f} [{c.low:.2f}, {c.high:.2f}]"
                         for name, c in cell.runs.items())
        lines.append(f"- {code(op)} {md(a)} → {md(b)}: {runs}")
    return "\n".join(lines + [""])


def csv_rows(pool: pooling.Pool, an: Analysis) -> str:
    """data.csv's rows of the pool (no header; appended to the report's own): every other
    run's release-step ratio under its own run id, then per cell the pooled ratio with the
    95% prediction interval of a reader's rerun on another boot (statistic
    pooled_rerun_to_previous_release, significant: the pooled verdict is a finding,
    processes: runs pooled), the same ratio with the 95% confidence interval of the pooled
    mean (pooled_mean_to_previous_release), the runs that hold its verdict
    (pooled_held_runs), its boots (pooled_boots), the between-run SD and the median of the
    runs' own SEs of the log ratio (pooled_tau, pooled_within_se), whether it depends on the
    host (pooled_depends_on_host: 1 or 0), how many pooled runs' A/A twins flag its op
    (pooled_aa_flagged_runs), how many CPU kinds it was seen on (pooled_cpu_kinds), whether
    its verdict depends on the CPU (pooled_depends_on_cpu) and whether it is a time-only
    finding seen on one CPU kind (pooled_time_only_one_cpu): 1 or 0. Their run_id is "pool"."""
    out = io.StringIO()
    writer = TextGuardedWriter(out)
    blank = [""] * (len(CSV_FIELDS) - 12)

    def row(run_id, op, b, statistic, a, value, low="", high="", significant="", n=""):
        writer.writerow([run_id, b, op, an.suite_of.get(op, ""), an.category_of.get(op, ""),
                         statistic, a, value, low, high, significant, n, *blank])
    for run in pool.runs[1:]:
        for (op, a, b), c in run.cells.items():
            if (op, a, b) in pool.cells:
                row(run.name, op, b, "ratio_to_previous_release", a, repr(c.ratio),
                    "" if c.low is None else repr(c.low), "" if c.high is None else repr(c.high),
                    "" if c.significant is None else str(c.significant).lower(), c.n_b)
    for (op, a, b), cell in sorted(pool.cells.items()):
        row("pool", op, b, "pooled_rerun_to_previous_release", a, repr(cell.estimate),
            repr(cell.low), repr(cell.high), str(cell.verdict != "same").lower(), cell.n)
        row("pool", op, b, "pooled_mean_to_previous_release", a, repr(cell.estimate),
            repr(cell.mean_low), repr(cell.mean_high), "", cell.n)
        for statistic, value in (("pooled_held_runs", cell.held), ("pooled_boots", cell.boots),
                                 ("pooled_tau", repr(cell.tau)),
                                 ("pooled_within_se", repr(cell.within_se)),
                                 ("pooled_depends_on_host", int(cell.host_dependent)),
                                 ("pooled_aa_flagged_runs",
                                  len(aa_caveat.pool_runs(pool, op))),
                                 ("pooled_cpu_kinds", len(cell.cpus)),
                                 ("pooled_depends_on_cpu", int(cell.depends_on_cpu)),
                                 ("pooled_time_only_one_cpu",
                                  int(pool.one_cpu_time_only(cell)))):
            row("pool", op, b, statistic, a, value, n=cell.n)
    return out.getvalue()
