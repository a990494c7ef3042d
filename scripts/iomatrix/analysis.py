"""The run data model: one run (or one result file) as a table of worker processes.

``load_run`` reads a run directory into ``RunData`` (one row per worker
process, the files it could not read listed as problems, never raised);
``process_means`` gives each (series, op) its per-process means, the unit of
evidence of ``stats``; ``compare_all`` compares series with ``stats.compare``.
The report, compare and history all read runs through this module.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd

from iomatrix import native, phase, stats, store, study

COLUMNS = ["series", "op", "suite", "category", "bytes", "round", "io", "cache", "profile",
           "mean", "values", "mem_max_rss", "peak_rss"]


@dataclasses.dataclass
class RunData:
    run: store.Run | None
    manifest: dict
    frame: pd.DataFrame            # one row per worker process
    problems: list                 # (file, message) for files that could not be read
    machine_phase: phase.Phase | None = None  # the machine's speed while it ran

    @property
    def paired(self) -> bool:
        """A lockstep run: its series are compared round by round (stats.compare)."""
        return store.paired_rounds(self.manifest)


def load_run(run: store.Run) -> RunData:
    """Every series file of ``run``; a file that cannot be read is a problem, not an error."""
    manifest = run.read_manifest()
    rows, problems = [], []
    for path in run.series_files():
        try:
            series_rows = store.load_series(path)
        except (store.ResultFileError, OSError) as exc:
            problems.append((path.name, str(exc)))
            continue
        for row in series_rows:
            row["series"] = path.stem
        rows += series_rows
    machine_phase, phase_problems = phase.read_phase(run.path)
    return RunData(run, manifest, pd.DataFrame(rows, columns=COLUMNS), problems + phase_problems,
                   machine_phase)


def load_file(path: Path, run: store.Run | None, manifest: dict, series: str | None = None) \
        -> RunData:
    """One result file as a run of one series (named ``series``, default the file's stem).

    Raises store.ResultFileError (or OSError) when the file cannot be read.
    """
    rows = store.load_series(path)
    for row in rows:
        row["series"] = series or path.stem
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
    """{(series, op): {round: mean}}"""
    out: dict = {}
    for (series, op), group in frame.groupby(["series", "op"], sort=False):
        rounds = list(group["round"])
        if len(set(rounds)) < len(rounds):
            # Files written before rounds were recorded give every process round 0: keep
            # each process by its position rather than let them overwrite each other.
            rounds = list(range(len(rounds)))
        out[(series, op)] = dict(zip(rounds, group["mean"]))
    return out


def ordered_ops(data: RunData) -> list[str]:
    """Ops in suite order as the suites define them (first appearance in the results)."""
    frame = data.frame
    suite_rank = {s: i for i, s in enumerate(data.manifest.get("suites", []))}
    firsts = frame.drop_duplicates("op")[["op", "suite"]]
    suite_of = dict(zip(firsts["op"], firsts["suite"]))
    return sorted(firsts["op"], key=lambda op: (
        suite_rank.get(suite_of[op], 99), study.op_rank(op), op))


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


def _minor(info: dict, series: str) -> tuple | None:
    """(major, minor) from the manifest, else from a label such as ``3.13-debian``; None
    when neither says (an older run without interpreter metadata)."""
    if info.get("version_info"):
        return tuple(info["version_info"][:2])
    match = re.match(r"(?:pypy)?(\d+)\.(\d+)", series)
    return (int(match.group(1)), int(match.group(2))) if match else None


def lineage(data: RunData, order: list[str]) -> Lineage:
    """Split the run's series into the release lineage and the variants with their twins.

    The lineage is the plain CPython builds (default build, C io, not an A/A twin), one
    per minor version: the one labelled ``X.Y`` when there is one, else one not built by
    a distribution, else the first. Every other series is a variant of one kind.
    """
    plain: dict = {}
    for series in order:
        info = series_info(data, series)
        label, io_stack = store.split_series(series)
        if (info.get("implementation", "cpython") == "cpython" and io_stack == "c"
                and not info.get("free_threaded") and not info.get("aa_of")
                and not label.startswith("pypy") and _minor(info, series) is not None):
            plain.setdefault(_minor(info, series), []).append(series)
    releases = {}
    for minor, candidates in plain.items():
        exact = [s for s in candidates if s == ".".join(map(str, minor))]
        undistributed = [s for s in candidates
                         if series_info(data, s).get("source") not in ("debian", "system")]
        releases[minor] = (exact or undistributed or candidates)[0]
    chosen = sorted(releases.values(), key=lambda s: series_sort_key(data, s))
    variants = []
    for series in order:
        if series in chosen:
            continue
        info = series_info(data, series)
        label, io_stack = store.split_series(series)
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
        else:
            kind, twin = "build", releases.get(_minor(info, series))
        variants.append(Variant(kind, series, twin if twin in order else None))
    return Lineage(chosen, variants)


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
