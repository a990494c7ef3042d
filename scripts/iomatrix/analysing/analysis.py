"""The run data model: one run (or one result file) as a table of worker processes.

``load_run`` reads a run directory into ``RunData`` (one row per worker
process, the files it could not read listed as problems, never raised);
``process_means`` gives each (series, op) its per-process means, the unit of
evidence of ``stats``; ``compare_all`` compares series with ``stats.compare``.
The report, compare and history all read runs through this module.
"""
from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pandas as pd

from iomatrix import stats
from iomatrix.analysing import counts, study
from iomatrix.markup import code, md
from iomatrix.measuring import knobs, native, phase, selection
from iomatrix.storing import store

COLUMNS = ["series", "op", "suite", "category", "bytes", "round", "io", "cache", "profile",
           "mean", "values", "mem_max_rss", "peak_rss", "clock", "allocator", "output",
           "minflt"]  # minor faults per call (allocator_section)


@dataclasses.dataclass
class RunData:
    run: store.Run | None
    manifest: dict
    frame: pd.DataFrame            # one row per worker process
    problems: list                 # (file, message) for files that could not be read
    machine_phase: phase.Phase | None = None  # the machine's speed while it ran
    # Every series, those of further allocator conditions ("3.13@default") included; ``frame``
    # holds the run's own condition only, which every table but the allocator's is about.
    all_conditions: pd.DataFrame | None = None
    # The ablations' processes (measuring.knobs): each under its release's own series, its op
    # named "OP~KNOB=VALUE" (analysing.ablation reads them); None when the run has none.
    ablations: pd.DataFrame | None = None
    # series -> (its data file, why): series the manifest lists as written (WRITTEN_STATUSES)
    # that the run's data lacks, their file missing, unreadable or refused (left_out_series)
    left_out: dict = dataclasses.field(default_factory=dict)

    @property
    def paired(self) -> bool:
        """A lockstep run: its series are compared round by round (stats.compare)."""
        return store.paired_rounds(self.manifest)


def load_run(run: store.Run) -> RunData:
    """Every series file of ``run``; a file that cannot be read (the manifest, a series,
    a counters or phase file) is a problem, named, not an error."""
    manifest, problems = run.read_manifest_or_problem()
    problems += counts.unreadable_files(run.path)
    rows = []
    files = run.series_files()
    twice = store.twice_stored(files)
    for name in twice:
        problems.append((name, f"stored both as {name} and {name}{store.GZ_SUFFIX}; neither "
                               "is read (which one is the run's is not known)"))
    for path in files:
        if store.plain_name(path) in twice:
            continue
        try:
            series_rows = store.load_series(path)
        except (store.ResultFileError, OSError) as exc:
            problems.append((path.name, str(exc)))
            continue
        for row in series_rows:
            row["series"] = store.series_of(path)
        rows += series_rows
    left_out = left_out_series(run, manifest, {row["series"] for row in rows}, problems)
    named = {store.plain_name(name) for name, _ in problems}
    # a file gone is a problem as an unreadable one is, its message in the same form
    problems += [(name, f"{run.path / name}: {why}") for name, why in left_out.values()
                 if store.plain_name(name) not in named]
    machine_phase, phase_problems = phase.read_phase(run.path)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    ablated = frame["series"].map(lambda series: is_ablation(manifest, series)).astype(bool)
    ablations = ablation_rows(manifest, frame[ablated]) if ablated.any() else None
    frame = frame[~ablated].reset_index(drop=True)
    twins = frame["series"].map(lambda series: is_condition_twin(manifest, series)).astype(bool)
    return RunData(run, manifest, frame[~twins].reset_index(drop=True), problems + phase_problems,
                   machine_phase, all_conditions=frame if twins.any() else None,
                   ablations=ablations, left_out=left_out)


# A series' status in the manifest when the runner wrote its data file (measuring.planning
# series_status; "partial" in older runs): its file is then expected in the run.
WRITTEN_STATUSES = ("ok", "incomplete", "partial")


def written_status(manifest: dict, series: str) -> str | None:
    """The series' status where the manifest lists it as written (WRITTEN_STATUSES: its
    file is expected in the run), else None."""
    entry = (manifest.get("interpreters") or {}).get(series)
    status = entry.get("status") if isinstance(entry, dict) else None
    return status if status in WRITTEN_STATUSES else None


def missing_words(series: str, status: str) -> str:
    return (f"missing, deleted or moved after the run; the manifest lists series {series} as "
            f"written, status {status}")


def left_out_series(run: store.Run, manifest: dict, read: set, problems: list) -> dict:
    """{series: (file, why)} for each series the manifest lists as written whose data is not
    in ``read`` (the series rows were read for): its file missing (deleted after the run
    ended), or named in ``problems`` (unreadable, damaged, stored twice), or holding no
    timed value. Each is named on the pages, never left out without a word."""
    said = dict(problems)
    entries = {series: entry for series, entry in (manifest.get("interpreters") or {}).items()
               if isinstance(entry, dict)}
    if isinstance(manifest.get("native"), dict):
        entries[native.SERIES] = manifest["native"]
    out = {}
    for series, entry in sorted(entries.items()):
        status = entry.get("status")
        if status not in WRITTEN_STATUSES or series in read:
            continue
        path = run.series_file(series)
        name = path.name
        known = name if name in said else store.plain_name(path)
        if known in said:
            # the file is named beside it: not the machine's path to it again
            why = store.without_path(said[known], run.path / known)
        elif not os.path.lexists(path):
            why = missing_words(series, status)
        else:
            why = "holds no timed value"
        out[series] = (name, why)
    return out


def spanned_steps(data: RunData, steps) -> dict:
    """{(a, b): [left-out series]}: each release step that stands over a series the manifest
    lists as written but whose data is left out (RunData.left_out) and which would have
    been a release of the lineage between a and b. Without it, 3.12 → 3.14 reads as a step
    between consecutive releases of the run; it is not."""
    if not data.left_out:
        return {}
    present = ordered_series(data)
    whole = lineage(data, sorted(set(present) | set(data.left_out),
                                 key=lambda s: series_sort_key(data, s))).releases
    out = {}
    for a, b in steps:
        if a in whole and b in whole:
            between = whole[whole.index(a) + 1:whole.index(b)]
            spanned = [s for s in between if s in data.left_out]
            if spanned:
                out[(a, b)] = spanned
    return out


def is_condition_twin(manifest: dict, series: str) -> bool:
    """A series timed again under a further allocator condition (runner: allocator_twins),
    or with one knob set (an ablation's): the same build measured another way."""
    info = manifest.get("interpreters", {}).get(series, {})
    return bool(info.get("allocator_of")) or "@" in series or is_ablation(manifest, series)


def is_ablation(manifest: dict, series: str) -> bool:
    """An ablation's series ("3.14.7~buffering=4096", measuring.knobs)."""
    info = manifest.get("interpreters", {}).get(series, {})
    return bool(info.get("ablation_of")) or knobs.SEPARATOR in series


def ablation_rows(manifest: dict, frame: pd.DataFrame) -> pd.DataFrame:
    """The ablations' rows under the series they time again, their ops "OP~KNOB=VALUE"."""
    frame = frame.copy()
    for index, series in zip(frame.index, frame["series"]):
        info = manifest.get("interpreters", {}).get(series, {})
        split = knobs.split_ablation(series)
        base = info.get("ablation_of") or (split[0] if split else series)
        knob = info.get("knob") or (split[1] if split else "knob")
        value = info.get("knob_value") if info.get("knob_value") is not None else \
            (split[2] if split else 0)
        frame.at[index, "series"] = base
        frame.at[index, "op"] = knobs.ablation_op(frame.at[index, "op"], knob, value)
    return frame.reset_index(drop=True)


def with_all_conditions(data: RunData) -> RunData:
    """``data`` whose frame holds every condition's series (for the allocator section)."""
    if data.all_conditions is None:
        return data
    return dataclasses.replace(data, frame=data.all_conditions)


def load_file(path: Path, run: store.Run | None, manifest: dict, series: str | None = None) \
        -> RunData:
    """One result file as a run of one series (named ``series``, default the file's stem).

    Raises store.ResultFileError (or OSError) when the file cannot be read.
    """
    rows = store.load_series(path)
    for row in rows:
        row["series"] = series or store.series_of(path)
    machine_phase, problems = phase.read_phase(run.path) if run is not None else (None, [])
    return RunData(run, manifest, pd.DataFrame(rows, columns=COLUMNS), problems, machine_phase)


# -- series and ops in order ---------------------------------------------------------

def series_info(data: RunData, series: str) -> dict:
    return data.manifest.get("interpreters", {}).get(series, {})


def series_sort_key(data: RunData, series: str):
    info = series_info(data, series)
    version = info.get("version_info") or _minor(info, series) or (99,)
    return store.series_order_key(series, info.get("implementation", "cpython"), version,
                                  info.get("free_threaded"))


def ordered_series(data: RunData) -> list[str]:
    """The interpreters' series in version order (the native reference has its own section)."""
    present = set(data.frame["series"].unique()) - {native.SERIES}
    return sorted(present, key=lambda s: series_sort_key(data, s))


def default_baseline(data: RunData, order: list[str]) -> str | None:
    for series in order:
        info = series_info(data, series)
        if info.get("implementation", "cpython") == "cpython" and not series.endswith("+pyio") \
                and not info.get("aa_of"):
            return series
    return order[0] if order else None


def process_means(frame: pd.DataFrame) -> dict:
    """{(series, op): {round: mean}}

    Read row by row from the columns, not by ``frame.groupby``: a report asks for these
    a few hundred times and pandas' group iteration made that most of its time (37 s of
    a 50 s report of the reference run)."""
    # .tolist(): the same Python values as iterating the columns, without pandas' per-item cost
    return round_means(zip(frame["series"].tolist(), frame["op"].tolist(),
                           frame["round"].tolist(), frame["mean"].tolist()))


def round_means(processes) -> dict:
    """{(series, op): {round: mean}} from (series, op, round, mean) per process (history
    reads one series of thousands of runs this way, without a table per run)."""
    rows: dict = {}
    for series, op, round_index, mean in processes:
        rows.setdefault((series, op), []).append((round_index, mean))
    out: dict = {}
    for key, pairs in rows.items():
        rounds = [r for r, _ in pairs]
        if len(set(rounds)) < len(rounds):
            # Files written before rounds were recorded give every process round 0: keep
            # each process by its position rather than let them overwrite each other.
            rounds = list(range(len(rounds)))
        out[key] = dict(zip(rounds, (m for _, m in pairs)))
    return out


def cell_values(frame: pd.DataFrame, column: str) -> dict:
    """{(series, op): [the column's values that are not null, one per process]}, from one
    pass over the table (not a filter per series and op: quadratic in ops)."""
    out: dict = {}
    if column not in frame:
        return out
    present = frame[["series", "op", column]].dropna(subset=[column])
    for series, op, value in zip(present["series"].tolist(), present["op"].tolist(),
                                 present[column].tolist()):
        out.setdefault((series, op), []).append(value)
    return out


def ordered_ops(data: RunData) -> list[str]:
    """Ops by the manifest's suite order, within a suite the 2009 study's order
    (``study.ORDER``) and then by name; an op's control (``<op>__control``) right after it."""
    firsts = data.frame.drop_duplicates("op")[["op", "suite"]]
    return op_order(dict(zip(firsts["op"], firsts["suite"])), data.manifest.get("suites", []))


def op_order(suite_of: dict, suites) -> list[str]:
    """The ops of ``suite_of`` ({op: its suite}) in ``ordered_ops``' order, ``suites`` the
    manifest's."""
    suite_rank = {s: i for i, s in enumerate(suites if isinstance(suites, list) else [])}

    def key(op):
        suffix = selection.CONTROL_SUFFIX
        of = op[:-len(suffix)] if op.endswith(suffix) else op
        return (suite_rank.get(suite_of[op], 99), study.op_rank(of), of, op != of)
    return sorted(suite_of, key=key)


def python_ops(frame: pd.DataFrame) -> set:
    """The ops some interpreter timed (not the native reference alone), from one pass over
    the table: filtering the table once per op made a report quadratic in ops (issue 34:
    20,000 ops took minutes)."""
    return set(frame.loc[frame["series"] != native.SERIES, "op"])


def timed_bytes(frame: pd.DataFrame) -> dict:
    """{op: the bytes one timed call of it processes}, from the interpreters' rows (the native
    reference's rows of an op may record none), the largest where they differ."""
    python = frame[frame["series"] != native.SERIES]
    out: dict = {}
    for op, nbytes in zip(python["op"], python["bytes"]):
        if nbytes == nbytes and nbytes is not None:     # not NaN
            out[op] = max(out.get(op, 0), nbytes)
    return out


def compare_all(means: dict, ops: list[str], base: str, others: list[str],
                paired: bool = False) -> dict:
    """{(op, series): Comparison} of every series against ``base``; ``paired``: round by
    round (a lockstep run, ``RunData.paired``)."""
    out = {}
    for op in ops:
        if (base, op) not in means:
            continue
        for series in others:
            if series != base and (series, op) in means:
                out[(op, series)] = stats.compare(means[(base, op)], means[(series, op)],
                                                  paired=paired)
    return out


# -- what a run was measured under -----------------------------------------------------

CONTEXT_FIELDS = (("profile", "profile"), ("cache", "page cache"), ("host", "host"),
                  ("fixture_filesystem", "file system"))


def context(manifest: dict, frame: pd.DataFrame | None = None) -> dict:
    """profile, cache, host and file system of a run; the files' own metadata without a manifest."""
    out = {}
    for field, _ in CONTEXT_FIELDS:
        value = manifest.get(field)
        if field == "fixture_filesystem" and isinstance(value, dict):
            value = f"{value.get('type', '?')} on {value.get('mount', '?')}"
        if value is None and frame is not None and field in ("profile", "cache") \
                and field in frame and len(frame):
            values = sorted(set(frame[field].dropna()) - {""})
            value = ", ".join(values) or None
        if value is not None:
            out[field] = str(value)
    return out


# -- lineages and variants -------------------------------------------------------------

# The kinds of twin comparison, in the order the report shows them.
VARIANT_KINDS = {
    "free-threaded": "Free-threaded builds against the default build of the same version",
    "recipe": "The same release built by another recipe against the lineage's build of it: "
              "how much the recipe alone moves each op",
    "patch": "Other patch releases of a minor version against the lineage's release of it",
    "build": "Other builds of a version against the plain build (same version, another "
             "builder or other build flags)",
    "pypy": "PyPy against the CPython of its language version",
    "pyio": "The pure-Python io stack (`_pyio`) against the C io of the same interpreter",
    "aa": "A/A twins: the same interpreter run twice",
    "unknown": "Series whose version the run's manifest does not give (an older run)",
}


@dataclasses.dataclass
class Variant:
    kind: str            # a key of VARIANT_KINDS
    series: str
    twin: str | None     # the series it is compared with; None: no twin in this run


@dataclasses.dataclass
class Lineage:
    releases: list[str]          # plain CPython builds, one per minor version, oldest first
    variants: list[Variant]
    # The recipe the lineage is built by (comparable_recipe); None when the run records
    # no recipes (a run from before build facts: its steps may mix recipes).
    recipe: str | None = None
    # (a, b) -> "shared-O3 → static-O3" (page text: the recipes escaped): steps between
    # builds of two recipes. Not findings: they measure the build as much as the release.
    recipe_differs: dict = dataclasses.field(default_factory=dict)
    # (a, b) -> a note on a step that stays a finding (a default the release changed), page text.
    step_notes: dict = dataclasses.field(default_factory=dict)
    # chosen release -> the other plain builds of its minor version, which it was chosen over
    passed_over: dict = dataclasses.field(default_factory=dict)


def _minor(info: dict, series: str) -> tuple | None:
    """(major, minor) from the manifest, else from a label such as ``3.13-debian``; None
    when neither says (an older run without interpreter metadata)."""
    if info.get("version_info"):
        return tuple(info["version_info"][:2])
    match = re.match(r"(?:pypy)?(\d+)\.(\d+)", series)
    return (int(match.group(1)), int(match.group(2))) if match else None


DISTRIBUTION_SOURCES = ("debian", "system")
# CPython's configure keeps frame pointers by default from 3.15 on (gh-149202); a build
# opts out with --without-frame-pointers.
FRAME_POINTERS_DEFAULT_FROM = (3, 15)
FRAME_POINTERS_NOTE = ("{b} keeps frame pointers by CPython's own default from 3.15 on "
                       "(gh-149202; `--without-frame-pointers` opts out): part of the release, "
                       "not of the recipe")


def frame_pointers_by_default(info: dict) -> bool:
    """The build's frame pointers come from CPython's configure, not from its builder."""
    args = info.get("configure_args") or ""
    return (bool(info.get("frame_pointers"))
            and tuple(info.get("version_info") or (0,))[:2] >= FRAME_POINTERS_DEFAULT_FROM
            and "--without-frame-pointers" not in args and "omit-frame-pointer" not in args)


def comparable_recipe(info: dict) -> str | None:
    """The recipe as its builder chose it: the manifest's recipe without the frame
    pointers that CPython's configure adds by default (the lineage recipe builds 3.15 as
    "shared-O3-fp" and 3.14 as "shared-O3": one recipe, two releases' defaults)."""
    recipe = info.get("recipe")
    if recipe and frame_pointers_by_default(info):
        recipe = "-".join(part for part in recipe.split("-") if part != "fp")
    return recipe


def _release_key(info: dict) -> tuple:
    """Newest patch release last; a pre-release (3.15.0rc2) before its release."""
    final = re.fullmatch(r"[0-9.]+\+?", info.get("version", "")) is not None
    return (tuple(info.get("version_info") or ()), final)


def _choose_release(data: RunData, minor: tuple, candidates: list[str],
                    recipe: str | None) -> str:
    """The lineage's release of a minor version: the newest patch release built by the
    lineage's recipe; without one (or without recipes), the build labelled ``X.Y``, else
    one not built by a distribution, else the first."""
    same_recipe = [s for s in candidates if recipe is not None
                   and comparable_recipe(series_info(data, s)) == recipe]
    if same_recipe:
        return max(same_recipe, key=lambda s: (_release_key(series_info(data, s)),
                                               -candidates.index(s)))
    exact = [s for s in candidates if s == ".".join(map(str, minor))]
    undistributed = [s for s in candidates
                     if series_info(data, s).get("source") not in DISTRIBUTION_SOURCES]
    return (exact or undistributed or candidates)[0]


def _lineage_recipe(data: RunData, plain: dict) -> str | None:
    """The recipe most of the run's plain, undistributed CPython builds share (the oldest
    one's on a tie); None when none of them records a recipe."""
    recipes = [comparable_recipe(series_info(data, s))
               for candidates in plain.values() for s in candidates
               if series_info(data, s).get("source") not in DISTRIBUTION_SOURCES]
    recipes = [r for r in recipes if r]
    if not recipes:
        return None
    return max(dict.fromkeys(recipes), key=recipes.count)  # first seen wins a tie


def lineage(data: RunData, order: list[str]) -> Lineage:
    """Split the run's series into the release lineage and the variants with their twins.

    The lineage is the plain CPython builds (default build, C io, not an A/A twin), one
    per minor version: the newest patch release built by the lineage's recipe (the
    recipe most plain builds share), so that a step between two releases is not a step
    between two build scripts. A minor version without a build of that recipe keeps the
    old choice (the build labelled ``X.Y``, else one not built by a distribution) and
    its steps are listed in ``recipe_differs``. Every other series is a variant of one
    kind: the same release under another recipe is a ``recipe`` twin, another patch
    release of the minor version a ``patch`` twin.
    """
    # A further allocator condition's series (3.13@default) is the same build measured another
    # way: neither a release nor a variant (allocator_section compares the conditions).
    order = [series for series in order if not is_condition_twin(data.manifest, series)]
    plain: dict = {}
    for series in order:
        info = series_info(data, series)
        label, io_stack = store.split_series(series)
        if (info.get("implementation", "cpython") == "cpython" and io_stack == "c"
                and not info.get("free_threaded") and not info.get("aa_of")
                and not label.startswith("pypy") and _minor(info, series) is not None):
            plain.setdefault(_minor(info, series), []).append(series)
    recipe = _lineage_recipe(data, plain)
    releases = {minor: _choose_release(data, minor, candidates, recipe)
                for minor, candidates in plain.items()}
    chosen = sorted(releases.values(), key=lambda s: series_sort_key(data, s))
    passed_over = {releases[minor]: [s for s in candidates if s != releases[minor]]
                   for minor, candidates in plain.items() if len(candidates) > 1}
    recipe_differs, step_notes = {}, {}
    for a, b in zip(chosen, chosen[1:]):
        info_a, info_b = series_info(data, a), series_info(data, b)
        recipe_a, recipe_b = comparable_recipe(info_a), comparable_recipe(info_b)
        if recipe_a and recipe_b and recipe_a != recipe_b:
            recipe_differs[(a, b)] = f"{md(info_a['recipe'])} → {md(info_b['recipe'])}"
        elif frame_pointers_by_default(info_b) and not frame_pointers_by_default(info_a):
            step_notes[(a, b)] = FRAME_POINTERS_NOTE.format(b=code(b))
    variants = []
    for series in order:
        if series in chosen:
            continue
        info = series_info(data, series)
        label, io_stack = store.split_series(series)
        release = releases.get(_minor(info, series))
        plain_build = series in plain.get(_minor(info, series), [])
        if info.get("aa_of"):
            kind, twin = "aa", store.series_name(info["aa_of"], io_stack)
        elif _minor(info, series) is None and io_stack == "c":
            kind, twin = "unknown", None
        elif io_stack == "pyio":
            kind, twin = "pyio", label
        elif info.get("implementation", "cpython") != "cpython" or label.startswith("pypy"):
            kind, twin = "pypy", releases.get(_minor(info, series))
        elif info.get("free_threaded"):
            kind, twin = "free-threaded", releases.get(_minor(info, series))
        elif (plain_build and info.get("source") not in DISTRIBUTION_SOURCES
              and info.get("recipe") and series_info(data, release).get("recipe")):
            same_release = info.get("version") == series_info(data, release).get("version")
            kind, twin = ("recipe" if same_release else "patch"), release
        else:
            kind, twin = "build", releases.get(_minor(info, series))
        variants.append(Variant(kind, series, twin if twin in order else None))
    return Lineage(chosen, variants, recipe, recipe_differs, step_notes, passed_over)


def step_recipe_note(lin: Lineage, a: str, b: str) -> str | None:
    """What the pages say beside the step a → b: "build differs: shared-O3 → static-O3"
    for a step between two recipes (kept out of the findings), a release's changed
    default (frame pointers in 3.15), or None."""
    if (a, b) in lin.recipe_differs:
        return f"build differs: {lin.recipe_differs[(a, b)]}"
    return lin.step_notes.get((a, b))


def lineage_recipe_lines(data: RunData, lin: Lineage) -> list[str]:
    """Sentences for a report's lineage: its recipe, which builds it chose over which, and
    the steps that are between two recipes; for a run without recipes, that it may mix."""
    if lin.recipe is None:
        return ["This run records no build recipes (it predates build facts): its lineage "
                "steps may mix builds made by different recipes."]
    # Recipes and versions are the manifest's strings: page text through code() and md().
    lines = [f"The lineage is built by one recipe, {code(lin.recipe)}: per minor version, the "
             "newest patch release built that way."]
    for release, others in lin.passed_over.items():
        if release in lin.releases:
            info = series_info(data, release)
            lines.append(f"{code(release)} ({md(info.get('version', '?'))}, "
                         f"{md(info.get('recipe') or 'recipe unknown')}) "
                         f"stands for its minor version, not "
                         + ", ".join(f"{code(s)} ({md(series_info(data, s).get('recipe') or '?')})"
                                     for s in others) + ".")
    for (a, b), change in lin.recipe_differs.items():
        lines.append(f"The step {code(a)} → {code(b)} is between two recipes ({change}): it is "
                     "shown apart and is not a finding.")
    return lines


def build_flag_differences(data: RunData, series: str, twin: str) -> tuple[list, list]:
    """Configure arguments only ``series`` has and only ``twin`` has (paths left out)."""
    import shlex

    def flags(name):
        text = series_info(data, name).get("configure_args") or ""
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        # Install paths differ between any two builds and say nothing about speed.
        return {w for w in words if not w.startswith(("--prefix", "--libdir", "LDFLAGS=-Wl,-rpath",
                                                      "--with-ensurepip", "PKG_CONFIG"))}
    mine, theirs = flags(series), flags(twin)
    return sorted(mine - theirs), sorted(theirs - mine)
