"""The run spec: everything a matrix run is asked to do, as one frozen object.

It is built and validated once, from the command line (``RunSpec.from_args``) or
from plain values (``RunSpec.create``), passed whole to ``runner.run_matrix``, and
recorded in the run's manifest as ``manifest["spec"]`` (``to_manifest``: a JSON
object whose values are JSON scalars or lists of strings, and one nested object
``"conditions"`` of strings). Manifests made before the spec have no ``"spec"``.

A run is resumed (``--run-id`` again) only with the same spec, apart from the
fields in ``MAY_DIFFER_ON_RESUME``; ``resume_differences`` names the others.
"""
from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path

from iomatrix import cli
from iomatrix.interpreters import environments
from iomatrix.measuring import machine, sampling, selection, twincount
from iomatrix.storing import contract, store
from iomatrix.storing.countsfile import COUNTERS
from iomatrix.storing.profiles import PROFILES, Profile

AFFINITIES = ("one", "all")
CLOCK_CHOICES = ("auto", *contract.CLOCKS)
DEFAULT_TIMEOUT_SECONDS = 600.0
SEED_LIMIT = 2**32
# Fields of the recorded spec that a later session of the same run may change, and why:
# interpreters, aa, selection, suites, ops and io add series or ops to the run (a finished
# series is kept as it is); seed is drawn anew for each session (each session records its
# own); budget_seconds, extra_seconds, target and timeout_seconds say how long this session samples and
# waits, not what a value measures; work_dir, keep_fixtures, envs_dir and results_dir say
# where this session works (the run directory is the same one); counting and
# counted_suites: the counting pass resumes from its files and adds what is missing.
# Everything else (the profile and the conditions) decides what a value measures: a
# resumed run with other values there would mix two measurements in one series.
MAY_DIFFER_ON_RESUME = frozenset({
    "interpreters", "aa", "selection", "suites", "ops", "io", "seed", "budget_seconds",
    "extra_seconds",
    "target", "timeout_seconds", "work_dir", "keep_fixtures", "envs_dir", "results_dir",
    "counting", "counted_suites", "allocator_twins", "aa_recount"})
# The ops timed again under each further allocator condition (``allocator_twins``): those
# whose calls allocate and free buffers large enough for glibc's thresholds to matter, the
# study's whole-file, block and line ops and the chunked reads (docs/allocator.md). The
# other suites' ops keep small buffers or work in threads and processes.
ALLOCATOR_TWIN_SUITES = ("lutz2009", "chunks")
# Each further condition's series is "<series>@<allocator>" (3.13@default).
TWIN_SEPARATOR = "@"
# The profile's settings that decide what a value is (the rest only say how long to sample).
MEASURING_SETTINGS = ("rounds", "values", "warmups", "pypy_warmups")
# Conditions stated in the top-level manifest before the spec existed; runs made before a
# condition was stated were measured in a mix of states (every run states profile and cache).
LEGACY_CONDITION_KEYS = ("profile", "cache", "allocator", "output", "clock", "affinity")


class SpecError(cli.BadInput):
    """A run spec that cannot be built, or a resume that asks for another spec."""


@dataclasses.dataclass(frozen=True)
class Conditions:
    """The stated conditions every op of the run is measured in (see suites/_results.py)."""
    cache: str = "warm"
    allocator: str = "steady"
    output: str = "new"
    clock: str = "auto"  # "auto": CPU time where nothing waits for the disk (contract)
    affinity: str = "one"  # "one": every timed worker on the same CPU (machine.timing_cpus)

    def check(self) -> None:
        for name, valid in (("cache", contract.CACHE_MODES), ("allocator", contract.ALLOCATORS),
                            ("output", contract.OUTPUT_STATES), ("clock", CLOCK_CHOICES),
                            ("affinity", AFFINITIES)):
            value = getattr(self, name)
            if value not in valid:
                raise SpecError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What one session of a matrix run is asked to do; see the module docstring."""
    run_id: str
    results_dir: Path
    profile: Profile
    selection: str                  # --suite as given: "core", "all", "lutz2009,mmapio"
    suites: tuple[str, ...]         # the suites it touches
    ops: tuple[str, ...] | None     # the ops chosen in them; None: every op
    conditions: Conditions
    io_stacks: tuple[str, ...]
    interpreters: tuple[str, ...]   # the labels asked for (the A/A twin's original among them)
    aa: str | None                  # the label run a second time as "<aa>-aa"
    seed: int
    budget_seconds: float           # no extra round starts after this long
    extra_seconds: float            # ... unless within this long after the planned rounds
    target: float
    timeout_seconds: float
    counting: tuple[str, ...]       # the counters of the counting pass; () for none
    counted_suites: tuple[str, ...]  # the suites whose ops it counts
    work_dir: Path | None
    keep_fixtures: bool
    envs_dir: Path
    # Further allocator conditions: the lineage's releases are timed again under each,
    # for the ops of ALLOCATOR_TWIN_SUITES, as "<series>@<allocator>", one op per process.
    allocator_twins: tuple[str, ...] = ()
    keep_allocator_env: bool = False  # time under "default" with the caller's MALLOC_* set
    # How many of the A/A twin's ops the counting pass counts again (twincount), or "all".
    aa_recount: int | str = twincount.AA_RECOUNT

    @classmethod
    def create(cls, *, suites=selection.CORE, profile="quick", results_dir, run_id: str,
               io_stacks=("c",), cache="warm", allocator="steady", output="new",
               clock="auto", affinity="one", seed=None, work_dir=None, keep_fixtures=False,
               timeout=DEFAULT_TIMEOUT_SECONDS, envs_dir=environments.ENVS_DIR, aa=None,
               target=sampling.DEFAULT_TARGET, budget=None, counting=(), counted_suites=None,
               interpreters=(), keep_allocator_env=False,
               aa_recount=twincount.AA_RECOUNT) -> "RunSpec":
        """The one validating constructor. ``suites``: a --suite value or a list of suite
        names; ``profile``: a name or a Profile; ``counted_suites`` None: every suite."""
        if isinstance(profile, str):
            if profile not in PROFILES:
                raise SpecError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
            profile = PROFILES[profile]
        value = suites if isinstance(suites, str) else ",".join(suites)
        try:
            chosen_suites, ops = selection.resolve(value)
        except selection.SelectionError as exc:
            raise SpecError(str(exc))
        allocators = _checked_allocators(allocator, keep_allocator_env)
        conditions = Conditions(cache, allocators[0], output, clock, affinity)
        conditions.check()
        io_stacks = tuple(dict.fromkeys(io_stacks))
        unknown_io = [s for s in io_stacks if s not in contract.IO_STACKS]
        if unknown_io or not io_stacks:
            raise SpecError(f"unknown io stack(s) {', '.join(map(repr, unknown_io)) or 'none'}; "
                            f"valid: {', '.join(contract.IO_STACKS)}")
        unknown_counters = [c for c in counting if c not in COUNTERS]
        if unknown_counters:
            raise SpecError(f"unknown counter(s) {', '.join(map(repr, unknown_counters))}; "
                            f"valid: {', '.join(COUNTERS)}")
        if counted_suites is None:
            counted_suites = chosen_suites
        if not twincount.valid_recount(aa_recount):
            raise SpecError(f"--aa-recount {aa_recount!r}: the number of the A/A twin's ops "
                            f"to count again (1 to {twincount.MAX_RECOUNT}), or all")
        return cls(
            run_id=_checked_name(run_id, "run id"), results_dir=Path(results_dir),
            profile=profile, selection=value, suites=chosen_suites, ops=ops,
            conditions=conditions, io_stacks=io_stacks,
            interpreters=tuple(_checked_name(label, "label") for label in interpreters),
            aa=None if aa is None else _checked_name(aa, "--aa"),
            seed=_checked_seed(seed),
            budget_seconds=_checked_seconds(profile.budget_seconds if budget is None
                                            else budget, "budget", allow_zero=True),
            # a --budget given is the whole budget: no extra time beyond it
            extra_seconds=float(profile.extra_seconds if budget is None else 0),
            target=_checked_target(target),
            timeout_seconds=_checked_seconds(timeout, "timeout"),
            counting=tuple(counting),
            counted_suites=tuple(s for s in chosen_suites if s in counted_suites),
            work_dir=None if work_dir is None else Path(work_dir),
            keep_fixtures=bool(keep_fixtures), envs_dir=Path(envs_dir),
            allocator_twins=allocators[1:], keep_allocator_env=bool(keep_allocator_env),
            aa_recount=aa_recount)

    @classmethod
    def from_args(cls, args, *, interpreters=(), aa: str | None = None,
                  matrix: bool = False) -> "RunSpec":
        """The spec of a parsed bench or matrix command line (``bench.parser``).

        Without --counters, the matrix session counts beyond smoke, and counts only the
        suites that declare ``COUNT_DIVISOR`` (every suite today), the counting sizes at
        which the instructions of the ops in ``countsizes.SCALED`` are counted; a suite
        without it is counted only when --counters asks.
        """
        counting, counted = args.counters, None
        if counting is None:
            counting = COUNTERS if matrix and args.profile != "smoke" else ()
            counted = [s for s in selection.available_suites()
                       if selection.declared(s, "COUNT_DIVISOR")]
        return cls.create(
            suites=args.suite, profile=args.profile, results_dir=args.results_dir,
            run_id=args.run_id, io_stacks=args.io, cache=args.cache, allocator=args.allocator,
            output=args.output, clock=args.clock, affinity=args.affinity, seed=args.seed,
            work_dir=args.work_dir, keep_fixtures=args.keep_fixtures, timeout=args.timeout,
            aa=aa, target=args.target, budget=args.budget, counting=counting,
            counted_suites=counted, interpreters=interpreters,
            keep_allocator_env=getattr(args, "keep_allocator_env", False),
            aa_recount=getattr(args, "aa_recount", twincount.AA_RECOUNT))

    def with_run_id(self, run_id: str) -> "RunSpec":
        return dataclasses.replace(self, run_id=_checked_name(run_id, "run id"))

    @property
    def aa_twin(self) -> str | None:
        return f"{self.aa}-aa" if self.aa else None

    def chooses(self, suite: str, op: str) -> bool:
        return suite in self.suites and (self.ops is None or op in self.ops)

    def twin_series(self, series: str, allocator: str) -> str:
        return f"{series}{TWIN_SEPARATOR}{allocator}"

    def to_manifest(self) -> dict:
        """The spec as the manifest records it (see the module docstring)."""
        def path(p):
            return None if p is None else str(p)
        return {
            "run_id": self.run_id, "results_dir": path(self.results_dir),
            "profile": self.profile.name, "selection": self.selection,
            "suites": list(self.suites), "ops": None if self.ops is None else list(self.ops),
            "conditions": {k: str(v) for k, v in dataclasses.asdict(self.conditions).items()},
            "io": list(self.io_stacks), "interpreters": list(self.interpreters), "aa": self.aa,
            "seed": self.seed, "budget_seconds": self.budget_seconds,
            "extra_seconds": self.extra_seconds, "target": self.target,
            "timeout_seconds": self.timeout_seconds, "counting": list(self.counting),
            "counted_suites": list(self.counted_suites), "work_dir": path(self.work_dir),
            "keep_fixtures": self.keep_fixtures, "envs_dir": path(self.envs_dir),
            "allocator_twins": list(self.allocator_twins),
            "keep_allocator_env": self.keep_allocator_env,
            "aa_recount": self.aa_recount,
        }


def resume_differences(manifest: dict, spec: RunSpec) -> list[str]:
    """What ``spec`` asks differently from the run ``manifest`` records, as
    "field: stored -> asked"; [] when the run may be resumed with it."""
    stored = manifest.get("spec")
    if "spec" not in manifest:
        found = _legacy_differences(manifest, spec)
    elif not isinstance(stored, dict) or not isinstance(stored.get("conditions"), dict):
        return [f"spec: unreadable ({type(stored).__name__}) -> {spec.selection!r} run"]
    else:
        asked = spec.to_manifest()
        found = [_difference(key, stored.get(key), asked[key]) for key in asked
                 if key not in MAY_DIFFER_ON_RESUME and key != "conditions"
                 and stored.get(key) != asked[key]]
        found += [_difference(f"conditions.{key}", stored["conditions"].get(key), value)
                  for key, value in asked["conditions"].items()
                  if stored["conditions"].get(key) != value]
    settings = manifest.get("profile_settings")
    settings = settings if isinstance(settings, dict) else {}
    found += [_difference(f"profile {key}", settings.get(key), getattr(spec.profile, key))
              for key in MEASURING_SETTINGS
              if key in settings and settings[key] != getattr(spec.profile, key)]
    # How values and fixtures are made is the code's, not an option; still, a run made
    # before a change of method is not continued with the new one.
    method = {"values": store.SETTLED_VALUES, "fixture_page_cache": contract.FIXTURE_READ_BACK}
    found += [_difference(key, manifest.get(key, "unstated"), value)
              for key, value in method.items() if manifest.get(key, "unstated") != value]
    return found


def _legacy_differences(manifest: dict, spec: RunSpec) -> list[str]:
    """A manifest made before the spec: its conditions are top-level keys."""
    asked = {"profile": spec.profile.name, **dataclasses.asdict(spec.conditions)}
    found = []
    for key in LEGACY_CONDITION_KEYS:
        recorded = manifest.get(key, None if key in ("profile", "cache") else "unstated")
        if recorded != asked[key]:
            found.append(_difference(key, recorded, asked[key]))
    return found


def _difference(field: str, stored, asked) -> str:
    return f"{field}: {stored!r} -> {asked!r}"


def _checked_name(value, what: str) -> str:
    try:
        return cli.checked_name(value, what)
    except cli.BadInput as exc:
        raise SpecError(str(exc))


def _checked_allocators(value, keep_inherited: bool) -> tuple[str, ...]:
    """``--allocator``: one condition, or several ("steady,default"): the first is the run's,
    each further one times the allocator-sensitive ops again (``allocator_twins``).

    Under "default" the allocator must be glibc's own: allocator variables in the caller's
    environment are refused, named, unless ``keep_inherited`` (the workers refuse them too).
    """
    names = [n.strip() for n in value.split(",")] if isinstance(value, str) else list(value)
    unknown = [n for n in names if n not in contract.ALLOCATORS]
    if unknown or not names:
        raise SpecError(f"unknown allocator {', '.join(map(repr, unknown)) or repr(value)}; "
                        f"valid: {', '.join(contract.ALLOCATORS)}")
    if len(set(names)) != len(names):
        raise SpecError(f"allocator {','.join(names)!r} names a condition twice")
    inherited = machine.inherited_allocator_variables()
    if "default" in names and inherited and not keep_inherited:
        raise SpecError("--allocator default times glibc's own allocator, but this environment "
                        "sets " + ", ".join(f"{k}={v}" for k, v in sorted(inherited.items()))
                        + "; unset them, or pass --keep-allocator-env to time with them")
    return tuple(names)


def _checked_seed(seed) -> int:
    if seed is None:
        return random.SystemRandom().randrange(SEED_LIMIT)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEED_LIMIT:
        raise SpecError(f"seed {seed!r}: a whole number from 0 to {SEED_LIMIT - 1}")
    return seed


def _checked_seconds(value, what: str, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise SpecError(f"{what} {value!r}: seconds, a finite number "
                        f"{'of 0 or more' if allow_zero else 'above 0'}")
    return float(value)


def _checked_target(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            not 0 < value < cli.MAX_THRESHOLD:
        raise SpecError(f"target {value!r}: a fraction above 0 and below "
                        f"{cli.MAX_THRESHOLD:g}")
    return float(value)
