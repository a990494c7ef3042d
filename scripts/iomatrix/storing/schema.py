"""One schema per stored document: what a run directory may hold, checked once on read.

Documents (each a model below, validated by ``check``):

- ``series``: ``<series>.json`` and ``native.json``, pyperf's JSON with iomatrix metadata;
- ``manifest``: ``manifest.json``, the run's facts and status, nested fields included;
- ``counters``: ``<series>.counters.json``, the counting pass (iomatrix.measuring.counters);
- ``phase sample``: one line of ``phase/<session>.tsv`` (iomatrix.measuring.phase);
- ``compare output``: what ``compare --json`` writes (checked before it is written);
- ``crosscheck``: ``crosscheck/*.json``, a crosscheck of the run (iomatrix.storing.crosschecks).

Why pydantic (v2): a model states a document's types, bounds and the meaning of each
field in one place, so the schema is the documentation and the validation at once (as
asv's ``asv/schema.py`` does), and a failure names the field. The rules: types are strict
(no "3" for 3, no true for 1), numbers finite (``allow_inf_nan=False``; the JSON reader
(store.parse_json) refuses NaN and Infinity before that) and within a plausible range, keys known
(``extra="forbid"``) wherever the document is ours. pyperf's own metadata keys are left
open (pyperf adds fields between versions); the ``iomatrix_`` ones are not.

Names: every op, suite, label and series name a document holds (as a value or as a key)
follows its rule, ``iomatrix.cli.name_problem`` (the command line checks the same rule):

    label    [A-Za-z0-9][A-Za-z0-9._-]*, at most 64 characters
    series   LABEL[+pyio][@ALLOCATOR][~KNOB=VALUE], at most 80 characters
    suite    [A-Za-z0-9_][A-Za-z0-9_.-]*, at most 80 characters
    op       [A-Za-z0-9_][A-Za-z0-9_.+\\[\\]-]*, at most 80 characters

and no label, series part or suite is a name the run directory uses for its own files
(``manifest``, ``native`` as a label, ``phase``, ``parts``, or ending in ``.counters``,
``.parts``, ``phase``, ``.json``, ``.partial``). So a name is never a path (no "/", no
leading "."), never markup (no "<", "`", "|", space or line break), and a page's file
name made from a suite can only be ``<suite>.md`` in the pages directory.

Plausible ranges: every number a page states has one, so a value out of range is a schema
error naming the field, and the report and history skip the file with that reason:

    a per-call time, a warm-up             1 ns to 1 hour (``Seconds``)
    a ratio of two such times              their quotient's range (``Ratio``)
    bytes one call reads or writes         0 to 64 GiB (``BytesPerCall``)
    peak RSS growth of a call              -1 TiB to 1 TiB; a process's max RSS up to 1 TiB
    page faults, context switches          0 to 10**8 per call (``PerValue``)
    instructions of one counted op         1 to 10**14 (0 would make every ratio infinite)
    syscalls of one kind, one op           0 to 10**9
    bytes syscalls of one kind moved       0 to 2**50 (``syscallbytes.MAX_SYSCALL_BYTES``)
    a load average                         0 to 10**5
    a phase probe's piece of work          1 us to 60 s (``PhaseSeconds``)
    sampling: target 0 to 1 (exclusive of 0), confidence 0 to 1 exclusive, rounds up to
    10**6, budget and timeout up to 10**7 s; other counts 0 to 10**15 (``Count``)

Before any JSON is parsed, its nesting is limited (``store.MAX_DEPTH``: ``json.loads``
recurses once per level, and 100,000 levels are a RecursionError).

A new field a writer adds must be added here, or every reader refuses the files that hold
it (the tests run real runs through these models, so that is seen at once). The strict
bases, the name rules and the bounded number types the models are made of are in
``fields`` (their names are importable from here too).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Annotated, Any, Literal, Optional

from pydantic import AfterValidator, Field, ValidationError, create_model, model_validator

# The strict bases, the name rules and the number bounds live in fields.py; their names stay
# importable from here.
from iomatrix.storing.fields import (  # noqa: F401
    MAX_SECONDS, MIN_SECONDS, RATIO_SLACK, Bytes, BytesPerCall, Count, Epoch, Fraction, Json,
    Label, LongSeconds, OpName, Open, Ours, PerValue, PhaseSeconds, ProcessBytes, Ratio, Round,
    RunId, Seconds, SeriesName, SuiteName, Text, VersionText)
from iomatrix.storing.syscallbytes import BYTE_SYSCALLS, MAX_SYSCALL_BYTES
from iomatrix.storing.profiles import Profile

MAX_ERROR_INPUT = 60   # characters of a bad value quoted in an error message
PLAIN_KEY = re.compile(r"[A-Za-z0-9_+\-\[\]]+(?:\.[0-9]+)*")  # shown as it is: 3.13, read


class SchemaError(ValueError):
    """A document that is not what its schema says; the message names the field."""


# -- series: pyperf JSON with iomatrix metadata ------------------------------------------

class Metadata(Open):
    """pyperf metadata at document, benchmark or run level; the iomatrix keys are typed."""
    name: Optional[OpName] = Field(None, description="the op")
    unit: Optional[str] = None
    loops: Optional[int] = Field(None, ge=1)
    inner_loops: Optional[int] = Field(None, ge=1)
    date: Optional[str] = None
    mem_max_rss: Optional[ProcessBytes] = None
    iomatrix_suite: Optional[SuiteName] = Field(None, description="the op's suite")
    iomatrix_category: Optional[str] = None
    iomatrix_bytes: Optional[BytesPerCall] = Field(None, description="bytes one call reads or "
                                                                     "writes")
    iomatrix_io: Optional[str] = Field(None, description="c, pyio or native")
    iomatrix_cache: Optional[str] = None
    iomatrix_profile: Optional[str] = None
    iomatrix_round: Optional[Round] = None
    iomatrix_allocator: Optional[str] = None
    iomatrix_allocator_env: Optional[str] = Field(
        None, description="the allocator variables the worker saw")
    iomatrix_earlier_ops: Optional[Count] = Field(
        None, description="ops the worker timed before this one")
    iomatrix_output: Optional[str] = None
    iomatrix_native: Optional[str] = Field(None, description="the C reference's command")
    # VmHWM after the call less VmRSS before it: a call that frees memory it found makes
    # it a little negative (stored runs hold -300 KiB)
    iomatrix_peak_rss: Optional[Annotated[int, Field(ge=-2 ** 40, le=2 ** 40)]] = Field(
        None, description="how far the resident set grew during one call, in bytes")
    iomatrix_peak_rss_method: Optional[str] = None
    iomatrix_cpu: Optional[str] = Field(None, description="the CPU(s) the worker ran on")
    iomatrix_knob: Optional[str] = Field(
        None, description="an ablation's knob and value, buffering=4096 (measuring.knobs)")
    iomatrix_run_id: Optional[RunId] = Field(
        None, description="the run a part was made for (store.seal_part)")
    iomatrix_series: Optional[SeriesName] = Field(
        None, description="the series a part was made for (store.seal_part)")
    iomatrix_clock: Optional[Literal["cpu", "wall"]] = None
    iomatrix_other_clock_per_value: Optional[Seconds] = None
    iomatrix_retakes_per_value: Optional[Annotated[float, Field(ge=0.0, le=1e6)]] = None
    iomatrix_started: Optional[Epoch] = None
    iomatrix_finished: Optional[Epoch] = None
    iomatrix_minflt_per_value: Optional[PerValue] = None
    iomatrix_majflt_per_value: Optional[PerValue] = None
    iomatrix_nvcsw_per_value: Optional[PerValue] = None
    iomatrix_nivcsw_per_value: Optional[PerValue] = None

    @model_validator(mode="after")
    def _no_unknown_iomatrix_keys(self):
        unknown = sorted(k for k in (self.model_extra or {}) if k.startswith("iomatrix_"))
        if unknown:
            raise ValueError(f"unknown iomatrix key(s) {', '.join(unknown)}")
        return self


def _warmup(pair: list) -> list:
    loops, value = pair
    if isinstance(loops, bool) or not isinstance(loops, int) or loops < 1:
        raise ValueError(f"a warm-up's loops must be a whole number of at least 1, not {loops!r}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not MIN_SECONDS <= value <= MAX_SECONDS:
        raise ValueError(f"a warm-up's time must be from 1 ns to 1 hour, not {value!r}")
    return pair


# pyperf writes a warm-up as the list [loops, seconds per loop]
Warmup = Annotated[list[int | float], Field(min_length=2, max_length=2), AfterValidator(_warmup)]


class PyperfRun(Ours):
    """One worker process: its warm-ups as [loops, seconds] and its timed values."""
    metadata: Optional[Metadata] = None
    warmups: list[Warmup] = []
    values: list[Seconds] = Field([], description="per-call times, already divided by loops")


class PyperfBenchmark(Ours):
    metadata: Optional[Metadata] = None
    runs: list[PyperfRun] = []


class Series(Ours):
    """A series file: pyperf's JSON format 1.0 (``python -m pyperf compare_to`` reads it)."""
    version: Literal["1.0"]
    metadata: Optional[Metadata] = None
    benchmarks: list[PyperfBenchmark]


# -- manifest --------------------------------------------------------------------------

class CounterEntry(Ours):
    """The counting pass of one series (iomatrix.measuring.counters)."""
    status: Text = None
    reason: Text = None
    file: Text = None
    counters: list[str] = []
    seconds: Optional[LongSeconds] = None
    skipped: dict[str, str] = {}
    failed_ops: dict[str, dict[str, str]] = {}
    from_cache: dict[str, list[OpName]] = Field(
        {}, description="counter: the ops whose counts came from the counts cache "
                        "(iomatrix.measuring.countcache), not counted in this run")
    recounted: dict[str, list[OpName]] = Field(
        {}, description="an A/A twin's: counter: the ops counted again in this run (the "
                        "others came from the counts cache; absent: every op counted)")


class SeriesStatus(Ours):
    """What the runner records of a series' files (record.record_series): its status,
    what is missing or failed; shared by the interpreters' entries and the C reference's."""
    status: Text = None
    planned_ops: list[OpName] = []
    missing: dict[OpName, Count] = {}
    results_file: Text = None
    skipped_ops: dict[str, str] = {}
    failed_ops: dict[str, str] = {}
    error_tail: Text = None


class InterpreterEntry(SeriesStatus):
    """One series of the run: what discovery found, the build, and the series' status."""
    label: Optional[Label] = None
    series: Optional[SeriesName] = None
    executable: Text = None
    source: Text = None
    error: Text = None
    version: VersionText = None
    version_info: Optional[list[Annotated[int, Field(ge=0, le=10_000)]]] = Field(
        None, max_length=5)
    implementation: Text = None
    sys_version: Text = None
    free_threaded: Optional[bool] = None
    gil_enabled: Optional[bool] = None
    debug: Optional[bool] = None
    shared: Optional[bool] = None
    linkage: Optional[Literal["shared", "static"]] = Field(
        None, description="libpython linked or not, read from the running binary's mappings; "
                          "None: unknown (older runs: `shared` then came from sysconfig)")
    optimized: Optional[bool] = None
    lto: Optional[bool] = None
    compiler: Text = None
    configure_args: Text = None
    sysconfig: Optional[dict[str, Optional[str | int]]] = Field(
        None, description="the raw build variables the probe read")
    opt: Text = Field(None, description="build fact: OPT")
    cflags: Text = Field(None, description="build fact: CFLAGS")
    pgo: Optional[bool] = None
    frame_pointers: Optional[bool] = None
    jit: Optional[bool] = None
    recipe: Text = Field(None, description="what of the build changes speed: shared-O3, ...")
    io: Text = None
    aa_of: Text = Field(None, description="the A/A twin's original")
    allocator: Text = Field(None, description="a further allocator condition's series: its "
                                              "allocator (the run's own otherwise)")
    allocator_of: Text = Field(None, description="the series it times again under it")
    ablation_of: Text = Field(None, description="an ablation's series: the series it times "
                                                "again with one knob set (measuring.knobs)")
    knob: Text = Field(None, description="an ablation's knob: buffering, copy_bufsize, "
                                         "encoding, newline (their values codes)")
    knob_value: Optional[Annotated[int, Field(ge=0, le=2 ** 40)]] = None
    pyperf_version: Text = None
    environment_notes: Text = None
    counters: Optional[CounterEntry] = None


class NativeBestOp(Ours):
    seconds: Seconds
    block: Annotated[int, Field(ge=1, le=2 ** 40)]


class NativeBest(Ours):
    """The machine's best: the C program in page-aligned blocks, fastest of ``repeat``."""
    ops: dict[OpName, NativeBestOp] = {}
    errors: dict[str, str] = {}
    repeat: Annotated[int, Field(ge=1)] = 1


class NativeEntry(SeriesStatus):
    """The C reference (iomatrix.measuring.native)."""
    tool: Text = None
    best: Optional[NativeBest] = None


class PhaseProbeEntry(Ours):
    status: str
    cpu: Optional[Annotated[int, Field(ge=0)]] = None
    file: Text = None
    interval_seconds: Optional[Annotated[float, Field(gt=0.0, le=3600.0)]] = None
    loop_iterations: Optional[Annotated[int, Field(ge=1)]] = None
    copy_bytes: Optional[Bytes] = None


# A run spec's value (iomatrix/measuring/spec.py RunSpec.to_manifest): scalars, lists of strings, and
# one nested object of strings ("conditions").
SpecValue = Optional[str | int | float | bool | list[str] | dict[str, str]]


class Sampling(Ours):
    """What iomatrix.measuring.sampling did (its ``summary``)."""
    target: Optional[Annotated[float, Field(gt=0.0, le=1.0)]] = None
    confidence: Optional[Annotated[float, Field(gt=0.0, lt=1.0)]] = None
    criterion: Text = None
    extra_rounds: Optional[Round] = None
    stopped_by: Text = None
    loose_ops: dict[OpName, Optional[Annotated[float, Field(ge=0.0, le=1e6)]]] = Field(
        {}, description="each loose op's widest half-width (0.015: 1.5%); null: none yet")
    borderline_steps: list[str] = []


class RunSpecRecord(Open):
    """A run spec (iomatrix/measuring/spec.py RunSpec.to_manifest): the numbers a page states
    are bounded; its other keys are values of SpecValue."""
    run_id: Text = None
    suites: Optional[list[SuiteName]] = None
    interpreters: Optional[list[Label]] = None
    seed: Optional[int] = None
    budget_seconds: Optional[LongSeconds] = None
    extra_seconds: Optional[LongSeconds] = None
    target: Optional[Annotated[float, Field(gt=0.0, le=1.0)]] = None
    timeout_seconds: Optional[Annotated[float, Field(gt=0.0, le=1e7)]] = None

    @model_validator(mode="after")
    def _plain_values(self):
        for key, value in (self.model_extra or {}).items():
            if not _spec_value(value):
                raise ValueError(f"spec field {key!r}: not a string, number, boolean, list of "
                                 "strings or object of strings")
        return self


def _spec_value(value) -> bool:
    if value is None or isinstance(value, (str, bool, int, float)):
        return True
    if isinstance(value, list):
        return all(isinstance(item, str) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
    return False


# A session's stages (iomatrix.measuring.stages.SESSION_STAGES, which this layer cannot
# import; tests/test_stages.py holds the two the same).
STAGE_NAMES = ("environments", "fixtures", "planned_rounds", "native", "extra_rounds", "merge",
               "counting")


class Session(Ours):
    """One command that worked on the run (a run can be resumed)."""
    started: Text = None
    finished: Text = None
    interrupted: Text = None
    argv: list[str] = []
    suites: list[str] = []
    io: list[str] = []
    seed: Optional[int] = None
    pid: Optional[Annotated[int, Field(ge=0)]] = None
    work_dir: Text = None
    resumed_parts: Optional[Count] = None
    phase_probe: Optional[PhaseProbeEntry] = None
    sampling: Optional[Sampling] = Field(None, description="iomatrix.measuring.sampling's summary")
    spec: Optional[RunSpecRecord] = Field(None, description="this session's run spec")
    stages: dict[Literal[STAGE_NAMES], LongSeconds] = Field(  # type: ignore[valid-type]
        {}, description="seconds per stage of the session (iomatrix.measuring.stages)")


class MachineState(Ours):
    time: Text = None
    load_average: Optional[list[Annotated[float, Field(ge=0.0, le=1e5)]]] = Field(
        None, max_length=3)
    affinity: Optional[list[Annotated[int, Field(ge=0)]]] = None
    cpu_governor: Text = None


class Order(Ours):
    method: str
    seed: Optional[int] = None


# The profile as the run recorded it (dataclasses.asdict of iomatrix.storing.profiles.Profile): one
# field per field of the dataclass, typed from it, so a setting added there is known here;
# all optional, since older runs lack the later ones.
_PROFILE_TYPES = {"int": Optional[Annotated[int, Field(ge=0, le=10_000_000)]], "str": Text,
                  "float": Optional[Annotated[float, Field(ge=0.0, le=1e7)]],
                  "bool": Optional[bool]}
ProfileSettings = create_model(
    "ProfileSettings", __base__=Ours,
    __doc__="iomatrix.storing.profiles.Profile as it was when the run was made.",
    **{field.name: (_PROFILE_TYPES[str(field.type)], None)
       for field in dataclasses.fields(Profile)})


class FileSystem(Ours):
    type: Text = None
    mount: Text = None
    device: Text = None


class CountingSummary(Ours):
    counters: list[str] = []
    calls: Optional[Count] = None
    seconds: Optional[LongSeconds] = None
    skipped: dict[str, str] = {}
    from_cache: Optional[Count] = Field(None, description="counts taken from the counts cache")


class Manifest(Ours):
    """``manifest.json``: where, how and what a run measured, and each series' status."""
    iomatrix_manifest_version: Optional[Annotated[int, Field(ge=1, le=1000)]] = None
    run_id: Text = None
    spec: Optional[RunSpecRecord] = Field(
        None, description="the run spec (iomatrix/measuring/spec.py) as the runner recorded it")
    host: Text = None
    os: Text = None
    system: Text = None
    cpu: Text = None
    cpu_flags: Text = Field(None, description="digest of the CPU's feature flags")
    boot_id: Text = Field(None, description="the kernel's id of the boot the run measured in")
    cpu_count: Optional[Annotated[int, Field(ge=1, le=1_000_000)]] = None
    memory_bytes: Optional[ProcessBytes] = None
    host_python: Text = None
    libc: Text = None
    profile: Text = None
    cache: Text = None
    allocator: Text = None
    allocator_twins: list[str] = Field([], description="further allocator conditions (series "
                                                       "<series>@<allocator>)")
    allocator_env_inherited: dict[str, str] = Field(
        {}, description="MALLOC_*/MIMALLOC_* variables the caller's environment set")
    output: Text = None
    clock: Text = None
    affinity: Text = None
    timing_cpus: Text = None
    values: Text = None
    fixture_page_cache: Text = None
    fixture_filesystem: Optional[FileSystem] = None
    profile_settings: Optional[ProfileSettings] = None
    suites: list[SuiteName] = []
    io: list[str] = []
    order: Optional[Order] = None
    started: Text = None
    finished: Text = None
    machine_state_start: Optional[MachineState] = None
    machine_state_end: Optional[MachineState] = None
    interpreters: dict[SeriesName, InterpreterEntry] = {}
    native: Optional[NativeEntry] = None
    counters: Optional[CountingSummary] = None
    sessions: list[Session] = []


# -- counters files ---------------------------------------------------------------------

# A counters file holds totals over ``calls`` (at most 10**6) counted calls.
CountedEvents = Annotated[int, Field(ge=0, le=10 ** 14)]


class Rusage(Ours):
    minflt: Optional[CountedEvents] = None
    majflt: Optional[CountedEvents] = None
    nvcsw: Optional[CountedEvents] = None
    nivcsw: Optional[CountedEvents] = None


class CountSize(Ours):
    """The size one count was made at (iomatrix.measuring.countsizes): the timed size, or
    scaled to it by its instructions per byte, counted and checked at two smaller sizes."""
    basis: Literal["timed", "scaled"]
    not_scaled: Text = None
    rule: Optional[Literal["instructions per byte"]] = None
    divisor: Optional[Annotated[float, Field(gt=0, le=1e9)]] = None
    checked_divisor: Optional[Annotated[float, Field(gt=0, le=1e9)]] = None
    per_byte: Optional[list[Annotated[float, Field(ge=0, le=1e12)]]] = Field(
        None, max_length=2)
    tolerance: Optional[Annotated[float, Field(ge=0, le=1)]] = None
    counted: Optional[list[Count]] = Field(None, max_length=2)
    counted_bytes: Optional[list[Count]] = Field(None, max_length=2)


class CountedOp(Ours):
    """One op's counts: totals over ``calls`` counted calls."""
    suite: Optional[SuiteName] = None
    bytes_per_call: BytesPerCall = 0
    calls: Annotated[int, Field(ge=1, le=1_000_000)] = 1
    syscalls: Optional[dict[str, Annotated[int, Field(ge=0, le=10 ** 9)]]] = None
    syscall_bytes: Optional[dict[Literal[BYTE_SYSCALLS],  # type: ignore[valid-type]
                                 Annotated[int, Field(ge=0, le=MAX_SYSCALL_BYTES)]]] = Field(
        None, description="bytes the byte-moving calls moved (their return values), totals "
                          "by name; older files lack it")
    rusage: Optional[Rusage] = None
    instructions: Optional[Annotated[int, Field(ge=1, le=10 ** 14)]] = None
    cache: Optional[dict[str, Count]] = Field(
        None, description="callgrind's simulated cache events (iomatrix.callgrind.EVENTS[1:])")
    functions: Optional[list[list[str | Count]]] = Field(
        None, description="[name, file, self instructions, calls] above a small share of "
        "the total and the most-entered (iomatrix.callgrind.kept_functions); files of before "
        "calls were kept have [name, file, self instructions]")
    call_edges: Optional[list[list[str | Count]]] = Field(
        None, description="[caller, callee, calls, inclusive instructions]: the heaviest "
        "callers of the heavy and kept functions (iomatrix.callgrind.kept_edges); files of "
        "before they were kept lack it")
    call_paths_unavailable: Text = Field(
        None, description="why callgrind's dump gave no functions or call edges (its body "
        "damaged or cut short; its header's totals stand)")
    count_size: dict[Literal["syscalls", "rusage", "instructions"], CountSize] = Field(
        {}, description="each counter's basis: at the timed size, or scaled (files of before "
        "counts were made at the timed size lack it: their counts are at the counting size)")
    from_cache: list[Literal["syscalls", "instructions"]] = Field(
        [], description="the counters whose counts were taken from the counts cache, not "
                        "counted in this run (older files lack it)")
    failed: dict[str, str] = {}


class CountedInterpreter(Ours):
    label: Optional[Label] = None
    executable: Text = None
    implementation: Text = None
    version: VersionText = None
    version_info: Optional[list[Annotated[int, Field(ge=0, le=10_000)]]] = Field(
        None, max_length=5)
    free_threaded: Optional[bool] = None
    source: Text = None
    aa_of: Text = None
    recipe: Text = None


class Counters(Ours):
    """``<series>.counters.json`` (format 1; iomatrix.measuring.counters describes each field)."""
    iomatrix_counters_version: Literal[1]
    series: Optional[SeriesName] = None
    interpreter: Optional[CountedInterpreter] = None
    calls: Optional[Count] = None
    fixtures: Text = None
    methods: dict[str, str] = {}
    skipped: dict[str, str] = {}
    ops: dict[OpName, CountedOp]


# -- phase files --------------------------------------------------------------------------

class PhaseSample(Ours):
    """One line of ``phase/<session>.tsv``: when, and the probe's two timed pieces of work."""
    wall_time: Epoch
    loop_seconds: PhaseSeconds
    copy_seconds: PhaseSeconds


# -- compare --json ---------------------------------------------------------------------

class PhaseSummary(Ours):
    samples: Count
    loop_median: PhaseSeconds
    loop_fastest: PhaseSeconds
    copy_median: PhaseSeconds
    copy_fastest: PhaseSeconds


class ComparedOp(Ours):
    series_a: SeriesName
    series_b: SeriesName
    op: OpName
    time_a: Seconds
    time_b: Seconds
    ratio: Ratio = Field(description="B's time over A's")
    low: Optional[Ratio] = Field(None, description="the interval; null: too few processes")
    high: Optional[Ratio] = None
    significant: Optional[bool] = None
    regression: bool
    processes_a: Count
    processes_b: Count
    evidence: Optional[Literal["confirmed", "memory", "time only", "counts only"]] = Field(
        None, description="the class from both sides' counts; null: no counts, nothing moved")
    fails_gate: bool = Field(False, description="a regression that fails the gate: of a "
                                                "--fail-on class, and the gate applied")


class CompareOutput(Ours):
    """What ``compare --json`` writes."""
    method: str
    paired: bool
    confidence: Annotated[float, Field(gt=0.0, lt=1.0)]
    fail_above: Fraction
    condition_differences: list[str] = Field(
        [], description="how the two sides were measured differently (clock, allocator, ...)")
    gated: bool = Field(True, description="false: conditions differ, no regression verdict")
    fail_on: Optional[list[Literal["confirmed", "memory", "time-only", "unclassified"]]] = Field(
        None, description="the classes whose regressions fail the gate; null: any")
    counts_host: Literal["one", "two", "unknown"] = Field(
        "one", description="whether both sides' counts come from one host (compare.counts_host)")
    machine_phase: dict[Literal["a", "b"], Optional[PhaseSummary]]
    comparisons: list[ComparedOp]


# -- a run's stored crosscheck (storing.crosschecks) ------------------------------------------

class CrosscheckRow(Ours):
    op: OpName
    plain_seconds: dict[Label, Optional[Seconds]] = Field(
        description="per label: the plain loop's median over fresh processes of the best call")
    plain_mean_seconds: Optional[dict[Label, Optional[Seconds]]] = Field(
        None, description="per label: the plain loop's median over fresh processes of the "
                          "mean of the settled calls, the harness's statistic (version 2)")
    harness_seconds: dict[Label, Optional[Seconds]] = Field(
        description="per label: the harness's median of per-process means")


# One call's time as a plain process measured it: getrusage's CPU time can be 0 for a call
# shorter than its resolution, which a call of the harness (Seconds) never is.
CallSeconds = Annotated[float, Field(ge=0.0, le=MAX_SECONDS)]
MAX_PLAIN_CALLS = 10 ** 4


class CrosscheckProcess(Ours):
    """One fresh process of the plain loop: every call, in order (None where the platform
    has no getrusage)."""
    op: OpName
    label: Label
    process: Count
    warmups: Count = Field(description="the calls the harness's warm-up rule counts")
    wall: Annotated[list[CallSeconds], Field(min_length=1, max_length=MAX_PLAIN_CALLS)]
    cpu: Annotated[list[Optional[CallSeconds]], Field(min_length=1, max_length=MAX_PLAIN_CALLS)]
    minflt: Annotated[list[Optional[Count]], Field(min_length=1, max_length=MAX_PLAIN_CALLS)]
    nivcsw: Annotated[list[Optional[Count]], Field(min_length=1, max_length=MAX_PLAIN_CALLS)]


class CrosscheckCondition(Ours):
    allocator: Literal["steady", "default", "fresh"]
    output: Literal["new", "overwrite"]
    cache: Literal["warm"]
    clock: Literal["cpu", "wall"]
    affinity: Literal["one", "all"]
    series: dict[Label, SeriesName] = Field(description="the harness series of each label")
    rows: list[CrosscheckRow] = Field(max_length=1000)
    differ: list[OpName] = Field(max_length=1000)
    plain_processes: Optional[list[CrosscheckProcess]] = Field(
        None, max_length=10 ** 5, description="every plain process's calls (version 2)")


class Crosscheck(Ours):
    """``RUN/crosscheck/*.json``: what ``nox -s crosscheck`` found for the run (B/A by a
    plain loop in fresh processes against the harness's)."""
    iomatrix_crosscheck_version: Literal[1, 2]
    made: Annotated[str, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$")]
    labels: Annotated[list[Label], Field(min_length=2, max_length=2)]
    calls: Annotated[int, Field(ge=1, le=10 ** 9)]
    processes: Annotated[int, Field(ge=1, le=10 ** 9)]
    threshold: Fraction
    seed: Optional[Count]
    conditions: Annotated[list[CrosscheckCondition], Field(min_length=1, max_length=3)]


# -- checking -------------------------------------------------------------------------------

MODELS = {"series": Series, "manifest": Manifest, "counters": Counters,
          "phase sample": PhaseSample, "compare output": CompareOutput,
          "crosscheck": Crosscheck}


BOUND_ERRORS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal",
                "finite_number"}


def describe_error(error: ValidationError) -> str:
    """The first problem, as 'field a.b[2].c: what is wrong (got ...)'; and how many more."""
    first = error.errors(include_url=False)[0]
    where = ""
    for part in first["loc"]:
        if not isinstance(part, int) and not PLAIN_KEY.fullmatch(part):
            part = repr(part)   # a key with a line break or a dot in it stays readable
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    shown = repr(first.get("input"))
    if len(shown) > MAX_ERROR_INPUT:
        shown = shown[:MAX_ERROR_INPUT] + "..."
    more = error.error_count() - 1
    text = f"field {where or '(the document)'}: {first['msg']}"
    # A number beyond its bounds is not echoed: the message states the bound, and a page
    # that lists the skipped file should not state 1e+300 as if it were measured.
    if first["type"] != "missing" and first["type"] not in BOUND_ERRORS:
        text += f" (got {shown})"
    return text + (f"; and {more} more problem(s)" if more > 0 else "")


# The keys that tell a document's kind, and what a file without them is called: a JSON
# file of another tool is named as such, not by its first missing field.
KIND_KEYS = {"series": (("version", "benchmarks"), "a pyperf result file"),
             "counters": (("iomatrix_counters_version", "ops"), "an iomatrix counters file"),
             "crosscheck": (("iomatrix_crosscheck_version",), "an iomatrix crosscheck file")}


def check(kind: str, data: Any) -> Any:
    """``data`` when it is a valid document of ``kind`` (a key of MODELS), else SchemaError
    naming the first bad field. The data is returned as it was read: the model checks it,
    the readers keep working on plain dicts and lists."""
    if not isinstance(data, dict):
        raise SchemaError(f"not a {kind}: a JSON object was expected, not "
                          f"{type(data).__name__}")
    keys, called = KIND_KEYS.get(kind, ((), ""))
    if any(key not in data for key in keys):
        raise SchemaError(f"not {called} (no {'/'.join(map(repr, keys))} keys)")
    try:
        MODELS[kind].model_validate(data)
    except ValidationError as exc:
        raise SchemaError(f"not a valid {kind}: {describe_error(exc)}") from None
    return data
