"""Compare's two sides: what an argument names, its series read, and the comparison op by op.

A side is a run directory, a run id or one pyperf result file (``resolve``), read into
``Side.data`` (``load_side``); ``compare_sides`` compares the series ``pairs`` picks, op by
op, into ``Section``s of ``OpResult``s (paired round by round within one lockstep run).
``classify_by_counts`` gives each op its class from both sides' counts (``counts_host``:
whether they come from one host), and ``condition_differences`` says how the two sides were
measured differently. The comment, the gate and the JSON are compare.py's, which
re-exports these names.
"""
from __future__ import annotations

import dataclasses
import html
import os
from pathlib import Path

from iomatrix import cli, stats
from iomatrix.analysing import analysis, comparisons, counts
from iomatrix.measuring import native, phase
from iomatrix.storing import store
from iomatrix.reporting.markdown import code, names, visible


class CompareError(cli.BadInput):
    """Bad input: exit status 2, with a message that names the run or file."""


# -- the two sides -----------------------------------------------------------------

@dataclasses.dataclass
class Side:
    name: str                       # as given on the command line
    run: store.Run | None   # the run, or the run directory holding the file
    file: Path | None               # set when the side is one result file
    data: analysis.RunData | None = None

    @property
    def manifest(self) -> dict:
        return self.data.manifest if self.data else {}

    def labels(self) -> list[str]:
        return sorted(self.data.frame["series"].unique()) if self.data is not None else []


def run_of_directory(directory: Path) -> store.Run | None:
    """The run at ``directory`` (never through a symbolic link), or None when it is none."""
    directory = Path(os.path.abspath(directory))
    if directory.is_symlink():
        raise CompareError(f"{directory}: is a symbolic link; a run directory must be a real "
                           "directory (not followed)")
    if os.path.lexists(directory / store.MANIFEST) and \
            cli.NAME_PATTERN.fullmatch(directory.name) and \
            len(directory.name) <= cli.MAX_NAME_LENGTH:
        return store.Run(directory.parent, directory.name)
    return None


def resolve(arg: str, results_dir: Path) -> Side:
    """A run directory, a run id in ``results_dir`` or a result file; else CompareError."""
    path = Path(arg)
    if path.is_file() or path.is_symlink():   # a symlink is refused by name when read
        return Side(arg, run_of_directory(path.parent), path)
    if path.is_dir():
        run = run_of_directory(path)
        if run is None:
            raise CompareError(f"{arg}: a directory without {store.MANIFEST} is not a run")
        return Side(arg, run, None)
    if cli.NAME_PATTERN.fullmatch(arg):
        run = run_of_directory(Path(results_dir) / arg)
        if run is not None:
            return Side(arg, run, None)
    raise CompareError(f"{arg}: no such run or result file (looked for the file {arg}, the "
                       f"directory {arg} and the run {Path(results_dir) / arg})")


def read_manifest(run: store.Run | None) -> dict:
    if run is None:
        return {}
    try:
        return run.read_manifest()
    except store.ResultFileError as exc:
        raise CompareError(str(exc))


def load_side(side: Side, label: str | None = None) -> Side:
    """Read the series of a side into ``side.data`` (analysis.RunData); bad files are errors.

    A run with an unreadable file is bad input unless ``label`` picks a series
    that is not that file.
    """
    if side.file is not None:
        try:
            side.data = analysis.load_file(side.file, side.run, read_manifest(side.run))
        except (store.ResultFileError, OSError) as exc:
            raise CompareError(str(exc))
        if side.data.frame.empty:
            raise CompareError(f"{side.file}: no measured values in this file")
        return side
    read_manifest(side.run)  # a broken manifest is named before anything else
    try:
        side.data = analysis.load_run(side.run)
    except store.ResultFileError as exc:
        raise CompareError(str(exc))
    for name, message in side.data.problems:
        if phase.is_phase_file(name):
            continue  # the machine's phase is context: build_markdown names what was not read
        if label is None or series_of_file(name) == label:
            hint = "" if label else " (use --label to compare another series)"
            raise CompareError(f"{message}{hint}")
    if side.data.frame.empty:
        raise CompareError(f"{side.run.path}: no result files in this run")
    return side


def series_of_file(name: str) -> str:
    """The series a file of a run belongs to: ``3.13`` for 3.13.json and 3.13.counters.json."""
    name = name[:-len(store.GZ_SUFFIX)] if name.endswith(store.GZ_SUFFIX) else name
    for suffix in (store.COUNTERS_SUFFIX, ".json"):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def pairs(a: Side, b: Side, label: str | None) -> list[tuple[str, str]]:
    """(series in A, series in B) to compare."""
    if a.file is not None and b.file is not None:
        return [(a.labels()[0], b.labels()[0])]      # two files: whatever their names
    if a.file is None and b.file is None:
        if label is None:
            common = [s for s in a.labels() if s in b.labels() and s != native.SERIES]
            if not common:
                raise CompareError(f"{a.name} and {b.name} have no series in common "
                                   f"({a.name}: {', '.join(a.labels())}; "
                                   f"{b.name}: {', '.join(b.labels())})")
            return [(s, s) for s in common]
        return [(require(a, label), require(b, label))]
    # a run and a file: the file against the run's series of the same label
    file_side, run_side = (a, b) if a.file is not None else (b, a)
    file_label = file_side.labels()[0]
    wanted = require(run_side, label or file_label)
    return [(file_label, wanted)] if file_side is a else [(wanted, file_label)]


def require(side: Side, label: str) -> str:
    if label not in side.labels():
        raise CompareError(f"{side.name} has no series {label!r}; it has: "
                           f"{', '.join(side.labels()) or 'none'}")
    return label


# -- the comparison ----------------------------------------------------------------

@dataclasses.dataclass
class OpResult:
    op: str
    time_a: float
    time_b: float
    comparison: stats.Comparison
    evidence: str | None = None     # comparisons.EVIDENCE, or None: no counts, nothing moved

    def regression(self, fail_above: float) -> bool:
        return self.comparison.regression(fail_above)

    def gates(self, fail_above: float, fail_on: frozenset | None) -> bool:
        """A regression of a class that fails the gate (``--fail-on``; None: any class)."""
        return self.regression(fail_above) and (
            fail_on is None or (self.evidence or "unclassified").replace(" ", "-") in fail_on)


@dataclasses.dataclass
class Section:
    series_a: str
    series_b: str
    results: list[OpResult]
    only_a: list[str]
    only_b: list[str]
    paired: bool = False    # both series of one lockstep run: compared round by round

    @property
    def title(self) -> str:
        if self.series_a == self.series_b:
            return code(self.series_a)
        return f"{code(self.series_a)} → {code(self.series_b)}"

    @property
    def html_title(self) -> str:
        """The title inside <summary>, where markdown is not rendered."""
        names = dict.fromkeys([self.series_a, self.series_b])
        return " → ".join(f"<code>{html.escape(visible(n))}</code>" for n in names)

    def geometric_mean(self) -> float:
        return stats.geometric_mean(r.comparison.ratio for r in self.results)


def compare_series(a: Side, b: Side, series_a: str, series_b: str, means_a: dict,
                   means_b: dict) -> Section:
    """Every op of ``series_a`` in A against the same op of ``series_b`` in B."""
    ops_a = {op for (s, op) in means_a if s == series_a}
    ops_b = {op for (s, op) in means_b if s == series_b}
    order = list(dict.fromkeys(op for op in analysis.ordered_ops(a.data) + analysis.ordered_ops(b.data)
                               if op in ops_a | ops_b))
    paired = same_lockstep_run(a, b)
    results = []
    for op in order:
        if op in ops_a and op in ops_b:
            pa, pb = means_a[(series_a, op)], means_b[(series_b, op)]
            results.append(OpResult(op, stats.location(pa.values()), stats.location(pb.values()),
                                    stats.compare(pa, pb, paired=paired)))
    return Section(series_a, series_b, results, [op for op in order if op not in ops_b],
                   [op for op in order if op not in ops_a], paired)


def same_run(a: Side, b: Side) -> bool:
    """Both sides come from one run directory (measured in the same session or sessions)."""
    return a.run is not None and b.run is not None and a.run.path.resolve() == \
        b.run.path.resolve()


def same_lockstep_run(a: Side, b: Side) -> bool:
    """Both sides are series of one lockstep run: their rounds were measured side by side,
    so they are compared round by round. Different runs are compared unpaired."""
    return same_run(a, b) and a.data is not None and a.data.paired


def compare_sides(a: Side, b: Side, label: str | None = None) -> list[Section]:
    means_a, means_b = analysis.process_means(a.data.frame), analysis.process_means(b.data.frame)
    sections = [compare_series(a, b, sa, sb, means_a, means_b) for sa, sb in pairs(a, b, label)]
    if not any(s.results for s in sections):
        s = sections[0]
        raise CompareError(f"{a.name} and {b.name} have no op in common (series "
                           f"{s.series_a} → {s.series_b}: {a.name} has "
                           f"{names(s.only_a, str)}; {b.name} has "
                           f"{names(s.only_b, str)})")
    return sections


# -- classes: do the counts move with the timing? -------------------------------------

def counts_host(a: Side, b: Side) -> str:
    """"one" when both sides' counts come from one host (one run, or runs of one boot: the
    manifests' boot_id), "two" when the CPUs' flags differ, else "unknown" (runs made before
    boot_id was recorded, or runs of two boots)."""
    if same_run(a, b):
        return "one"
    boots = [side.manifest.get("boot_id") for side in (a, b)]
    if boots[0] is not None and boots[0] == boots[1]:
        return "one"
    flags = [side.manifest.get("cpu_flags") for side in (a, b)]
    return "two" if None not in flags and flags[0] != flags[1] else "unknown"


def classify_by_counts(a: Side, b: Side, count_sides: tuple | None, sections: list[Section],
                       threshold: float, host: str) -> None:
    """Give each op of ``sections`` its class from both sides' counts (``read_count_sides``;
    OpResult.evidence). Without counts on a side every class stays None: nothing guessed."""
    if count_sides is None or not all(count_sides):
        return
    rows_a, rows_b = count_sides
    move_above = counts.INSTRUCTIONS_MOVE if host == "one" else counts.CROSS_HOST_INSTRUCTIONS_MOVE
    for section in sections:
        # a file side holds one series, compared whatever its name (as compare_counts does)
        side_a = rows_a.get(section.series_a) or (next(iter(rows_a.values()))
                                                   if a.file is not None else [])
        side_b = rows_b.get(section.series_b) or (next(iter(rows_b.values()))
                                                   if b.file is not None else [])
        # indexed once for the section's ops (counts.CountRows), not once per op
        rows = counts.CountRows([{**r, "series": "A"} for r in side_a]
                                + [{**r, "series": "B"} for r in side_b])
        for result in section.results:
            move = counts.count_move(rows, result.op, "A", "B", move_above)
            result.evidence = comparisons.evidence_of(result.comparison, threshold, move)


def classes_lines(sections: list[Section], threshold: float, host: str) -> list[str]:
    """The classes' meanings and, for counts not known to come from one host, what that
    changes; [] when no op has a class."""
    if not any(r.evidence for s in sections for r in s.results):
        return []
    lines = [f"Class, from both sides' counts: *confirmed*: significant and beyond "
             f"{threshold:.0%}, and instructions or system calls moved the same way; *memory*: "
             "only the simulated caches' estimated cycles moved with it; *time only*: the counts "
             "did not move with it; *counts only*: the counts moved, the time did not decide; "
             "blank: no counts of the op on a side, or nothing moved.", ""]
    if host != "one":
        what = ("**Counts from two hosts** (the CPUs' feature flags differ)" if host == "two"
                else "**Counts not known to come from one host** (two runs that record no "
                     "shared boot of one kernel)")
        lines += [f"> {what}: an instruction change counts only "
                  f"beyond {counts.CROSS_HOST_INSTRUCTIONS_MOVE:.0%} here, not "
                  f"{counts.INSTRUCTIONS_MOVE:.0%}. The same interpreter and op counted on two "
                  "hosts of one CPU model string differed by up to 3.5% in instructions "
                  "(glibc picks its memcpy by the CPU).", ""]
    return lines


# -- conditions: how each side was measured ------------------------------------------

# (frame column, what the comment calls it): read from each process's own metadata.
ROW_CONDITIONS = (("clock", "clock"), ("allocator", "allocator"),
                  ("output", "output-file state"), ("cache", "page cache"),
                  ("profile", "profile"))


def side_conditions(side: Side, series: str) -> dict:
    """{condition: value} of one series of a side, for what the side records; a condition
    it does not record (an older run) is left out, never guessed."""
    frame = side.data.frame
    rows = frame[frame["series"] == series]
    found = {}
    for column, what in ROW_CONDITIONS:
        values = sorted({str(v) for v in rows[column] if isinstance(v, str) and v})
        if values:
            found[what] = ", ".join(values)
    manifest = side.manifest
    if isinstance(manifest.get("affinity"), str):
        found["CPU pinning"] = manifest["affinity"]
    recipe = (manifest.get("interpreters") or {}).get(series, {}).get("recipe")
    if recipe:
        found["build recipe"] = recipe
    return found


def condition_differences(a: Side, b: Side, sections: list) -> list[str]:
    """How the two sides were measured differently, one line per condition and series
    pair ("clock: A cpu, B wall"); a condition only one side records is not compared."""
    lines = []
    for s in sections:
        ca, cb = side_conditions(a, s.series_a), side_conditions(b, s.series_b)
        pair = s.series_a if s.series_a == s.series_b else f"{s.series_a} → {s.series_b}"
        which = "" if len(sections) == 1 else f" ({pair})"
        for what in ca:
            if what in cb and ca[what] != cb[what]:
                lines.append(f"{what}{which}: A {ca[what]}, B {cb[what]}")
    return lines
