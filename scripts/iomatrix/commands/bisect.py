"""When did a change arrive? Time one op under every release between two builds.

    nox -s bisect -- OP --between OLD NEW [--profile smoke|quick] [--results-dir DIR]
                        [--run-id ID] [--no-build] [--counters on|off]
                        [--cpython-repo PATH [--jobs N]]

With ``--cpython-repo PATH`` (a git clone of CPython) the bisect goes down to the commit:
iomatrix.commands.bisect_commits (and docs/bisect.md) say how; its ``main`` is the command
line's entry and calls this module's without that option. Without it:

OLD and NEW are CPython releases (``3.13.15``, ``3.15.0rc2``) or labels of this machine
(``3.9``: pyenv's 3.9.18). The releases between them are taken in version order:
patch releases and pre-releases of one minor version, or across minors (3.13.15 ..
3.14.7 is 3.13.15 < 3.14.0a1 < ... < 3.14.0 < 3.14.1 < ... < 3.14.7; a minor between
them brings every release of it; OLD's own later patches are left out across minors: they are
backports beside the path, not on it). Of these, the points are the builds at hand (pyenv's,
and the iomatrix cache's provisioned builds) of the lineage's recipe (NEW's build's, else
OLD's, else ``lineage``), and those that can be built by that recipe (a tarball at hand,
Debian's source pool, python.org when it answers within seconds); a build in the cache is
reused, never rebuilt. Up to ``TIME_ALL`` points are all timed, in one lockstep run with an A/A
twin of OLD and the counting pass; more are bisected: OLD, NEW and the middle point in one run,
then the half whose step moved more in OLD -> NEW's direction, until two timed points are
adjacent.

The answer (markdown, on stdout and in ``--out``: by default reports/<run id>.md, or bisect.md
in the run's directory for another results directory): the step where the change appears (the
adjacent step with the largest significant move in OLD -> NEW's direction), every timed step's
ratio with its interval and counts per call, what could not be narrowed and why, and the
candidate upstream changes (iomatrix.analysing.changelog, when present).

Exit status: 0 done; 2 bad input (an unknown op or release, an empty range, OLD newer
than NEW; nothing is run or written); 3 a build failed (its log's tail on stderr; every
other point is timed and the answer names the missing one) or an internal error.

Here are the command, the timing and the answer; the releases in range and the points
that can be had are found in ``iomatrix.commands.bisect_points`` (its names are
importable from here too).
"""
from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import time
from pathlib import Path

from iomatrix import cli, procs
from iomatrix.interpreters import discovery, environments, provision as provisioning, sources
from iomatrix.measuring import runner
from iomatrix.measuring.spec import RunSpec
from iomatrix.paths import REPO_ROOT, REPORTS_DIR, RESULTS_DIR
from iomatrix.storing import outputs, store
from iomatrix.storing.countsfile import COUNTERS
# The releases between OLD and NEW and the points that can be timed are found in
# bisect_points.py; the names stay importable from here, where upstream and the tests use them.
from iomatrix.commands.bisect_points import (  # noqa: F401
    DEBIAN_POOL, NEWEST_PATCH, PRE_RELEASES, PYTHON_ORG_PROBE, PYTHON_ORG_TIMEOUT, BisectError,
    Point, builds_at_hand, build_in_progress, find_build, key, known_release, lineage_recipe,
    minor_of, minors_between, plain_version, plan, python_org_reachable, releases_between,
    releases_of, resolve_release, source_of)

# Up to this many points are all timed in one run; more are bisected.
TIME_ALL = 6


def parser() -> cli.Parser:
    p = cli.Parser(prog="nox -s bisect --",
                   description="Find the release where an op's time changed between two builds; with "
                               "--cpython-repo, the commit.",
                   epilog="With --cpython-repo: exit 0 the commit is named (commits that did "
                          "not build are skipped and listed); 2 bad input (not a git "
                          "repository, a missing tag v3.13.15, an unknown op); 3 OLD's or "
                          "NEW's commit does not build, or skipped commits leave a range.")
    p.add_argument("op", metavar="OP", help="an op name (nox -s matrix -- --suite all --list)")
    p.add_argument("--between", nargs=2, metavar=("OLD", "NEW"), required=True,
                   help="two releases or labels here, older first (3.13.15 3.14.7)")
    p.add_argument("--profile", default="quick", choices=("smoke", "quick"))
    p.add_argument("--results-dir", type=cli.results_dir, default=RESULTS_DIR)
    p.add_argument("--run-id", type=cli.run_id, default=None,
                   help="default: bisect-OP-OLD-NEW-<UTC time>")
    p.add_argument("--no-build", action="store_true",
                   help="time the builds at hand only; the answer names what could be built")
    p.add_argument("--counters", choices=("on", "off"), default="on",
                   help="the counting pass (syscalls and instructions per call); default on")
    p.add_argument("--cpython-repo", type=Path, default=None, metavar="PATH",
                   help="a git clone of CPython holding OLD's and NEW's tags (v3.13.15): "
                        "bisect the commits between them down to the first one where OP "
                        "moves, each built by the lineage's recipe into the iomatrix cache "
                        "(ccache when installed; a build is reused, never redone); the clone "
                        "is only read. See docs/bisect.md")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                   help="make -jN of a commit's build (default: this machine's cores)")
    p.add_argument("--out", type=Path, default=None,
                   help="the answer's file (default: reports/<run id>.md for the default "
                        "results dir, else bisect.md in the run's directory); never overwritten")
    return p


def list_valid_ops(interp, profile: str, log) -> dict:
    """{op: suite} of every suite, as ``interp`` lists them."""
    env = environments.ensure_environment(interp, log=log)
    from iomatrix.measuring import selection
    rows = runner.list_ops(env, selection.available_suites(), "c", profile)
    return {row["op"]: row["suite"] for row in rows}


# -- building -------------------------------------------------------------------------------

def build_point(point: Point, recipe: provisioning.Recipe, log) -> None:
    """Build ``point`` by ``recipe`` (a build in the cache is reused); on failure, the
    point says why and keeps its log's tail."""
    say = lambda text: log(f"bisect: [{point.version}] {text}")  # noqa: E731
    try:
        provisioning.build(point.version, recipe=recipe.name,
                           debian_source=point.source == "Debian's pool", say=say)
    except sources.ProvisionError as exc:
        point.missing = f"its build failed ({cli.one_line(str(exc))[:300]})"
        log_path = getattr(exc, "log", None)
        if log_path is not None and Path(log_path).is_file():
            point.log_tail = procs.tail(Path(log_path).read_text(errors="replace"), 25)
        else:
            point.log_tail = str(exc)
        return
    point.interp = find_build(discovery.discover(), point.version)
    if point.interp is None:
        point.missing = "built, but discovery does not find it"


# -- timing -----------------------------------------------------------------------------------

def time_points(interpreters, points: list[Point], op: str, suite: str, args, run_id: str,
                log) -> Path:
    """One lockstep run of ``op`` under every point, with an A/A twin of the first and
    the counting pass; the run's directory."""
    labels = [p.label for p in points]
    spec = RunSpec.create(suites=[suite], profile=args.profile, results_dir=args.results_dir,
                          run_id=run_id, aa=labels[0], interpreters=labels,
                          counting=COUNTERS if args.counters == "on" else (),
                          counted_suites=[suite])
    spec = dataclasses.replace(spec, ops=(op,))
    selected = [p.interp for p in points]
    first = selected[0]
    selected.append(discovery.Interpreter(spec.aa_twin, first.executable, "aa", first.info,
                                          first.error))
    log(f"bisect: timing {op} under {', '.join(f'{p.label} ({p.version})' for p in points)} "
        f"and an A/A twin of {labels[0]}, run {run_id}")
    runner.run_matrix(selected, spec, log=log)
    return Path(args.results_dir) / run_id


@dataclasses.dataclass
class Step:
    before: Point
    after: Point
    comparison: object          # stats.Comparison or None
    run_id: str
    gap: list[str]              # releases between the two that were not timed


def measure_steps(run_dir: Path, points: list[Point], op: str, run_id: str) -> tuple:
    """(adjacent steps, OLD -> NEW's comparison, the A/A comparison, {label: counts})."""
    from iomatrix import stats
    from iomatrix.analysing import analysis, counts
    data = analysis.load_run(store.Run(run_dir.parent, run_dir.name))
    means = analysis.process_means(data.frame)

    def compare(a: str, b: str):
        if (a, op) not in means or (b, op) not in means:
            return None
        return stats.compare(means[(a, op)], means[(b, op)], paired=True)
    steps = [Step(a, b, compare(a.label, b.label), run_id, [])
             for a, b in zip(points, points[1:])]
    overall = compare(points[0].label, points[-1].label)
    aa = compare(points[0].label, f"{points[0].label}-aa")
    per_call = {}
    for row in counts.load_counts(run_dir):
        if row["op"] == op and row["counter"] in ("syscalls", "instructions"):
            per_call.setdefault(row["series"], {})[row["counter"]] = row["per_call"]
    return steps, overall, aa, per_call


def move(comparison, direction: float) -> float:
    """How far a step moved in ``direction`` (+1 slower, -1 faster), as a log ratio."""
    if comparison is None or comparison.ratio <= 0:
        return -math.inf
    return direction * math.log(comparison.ratio)


def the_step(steps: list[Step], direction: float) -> tuple:
    """(the step where the change appears, whether it is significant)."""
    timed = [s for s in steps if s.comparison is not None]
    if not timed:
        return None, False
    significant = [s for s in timed if s.comparison.significant and move(s.comparison, direction) > 0]
    chosen = max(significant or timed, key=lambda s: move(s.comparison, direction))
    return chosen, bool(significant)


# -- the answer ---------------------------------------------------------------------------

def candidate_lines(op: str, suite: str, old: str, new: str, say=lambda text: None) -> list[str]:
    """The changelog's candidate entries for the change, as markdown list lines, as a reader
    reads them on docs.python.org: the entry and the words it matched (roles included)
    rendered by reporting.rst, never as escaped reST source (the bisect answer's and the
    upstream issue's list)."""
    try:
        from iomatrix.analysing import changelog
    except ImportError:
        return ["candidates: the changelog module is not available"]
    from iomatrix.reporting import rst    # roles as docs.python.org shows them, escaped
    from iomatrix.reporting.markdown import code, md
    log = changelog.changelog_for(new, say)
    if log is None:
        return [f"candidates: no changelog of {md(new)} at hand"]
    found = changelog.candidates(log, op, suite, old, new, limit=5)
    if not found:
        return [f"candidates: no changelog entry between {md(old)} and {md(new)} matches "
                f"{code(op)}'s machinery"]
    lines = []
    for candidate in found:
        entry = candidate.entry
        link = f"[{md(entry.number)}]({md(entry.url)})" if entry.url else md(entry.number)
        lines.append(f"- {link} ({md(entry.release)}, {md(entry.section)}; score "
                     f"{candidate.score:g}, matched {rst.render(', '.join(map(str, candidate.matched)), 200)}): "
                     f"{rst.render(entry.text, 400)}")
    return lines


def gap_text(step: Step, why: dict) -> str:
    """"3.14.0a1 .. 3.14.3 (not in Debian's pool; python.org unreachable)": the releases
    between a step's two points, grouped by why each was not timed."""
    if not step.gap:
        return ""
    groups: dict = {}
    for version in step.gap:
        groups.setdefault(why.get(version, "not timed"), []).append(version)
    parts = []
    for reason, versions in groups.items():
        names = ", ".join(versions) if len(versions) <= 4 else \
            f"{versions[0]} .. {versions[-1]} ({len(versions)} releases)"
        parts.append(f"{names}: {reason}")
    span = step.gap[0] if len(step.gap) == 1 else f"{step.gap[0]} .. {step.gap[-1]}"
    if len(groups) == 1:
        return f"{span} ({next(iter(groups))})"
    return f"{span} ({'; '.join(parts)})"


def counts_cell(per_call: dict, label: str) -> str:
    found = per_call.get(label, {})
    parts = []
    if "syscalls" in found:
        parts.append(f"{found['syscalls']:,.1f} syscalls")
    if "instructions" in found:
        parts.append(f"{found['instructions']:,.0f} instructions")
    return ", ".join(parts) or "not counted"


def answer_text(op: str, old: str, new: str, steps: list[Step], overall, aa, per_call: dict,
                why: dict, points: list[Point], note: str, cands: list[str], args) -> str:
    from iomatrix.reporting.markdown import code, fmt_ratio, md
    direction = 1.0 if overall is None or overall.ratio >= 1 else -1.0
    chosen, significant = the_step(steps, direction)
    lines = [f"## Bisect: {code(op)} between {old} and {new}", ""]
    if overall is not None:
        lines.append(f"{old} -> {new}: {fmt_ratio(overall)} ({'slower' if direction > 0 else 'faster'}; "
                     f"new time / old time, {args.profile} profile).")
    if chosen is None:
        lines.append("**No step could be timed.**")
    else:
        where = f"between {chosen.before.version} and {chosen.after.version}"
        verdict = "the change appears" if significant else \
            "no step moved significantly; the largest move in that direction is"
        lines.append(f"**{verdict[0].upper() + verdict[1:]} {where}: {fmt_ratio(chosen.comparison)}**"
                     + (f", first in {chosen.after.version}" if significant and not chosen.gap
                        else ""))
        if chosen.comparison.low is None:
            lines.append(f"No intervals: {chosen.comparison.n_a} round(s) cannot test "
                         "significance (the quick profile's 8 can).")
        if chosen.gap:
            lines.append(f"Not narrowed further: between {chosen.before.version} and "
                         f"{chosen.after.version} no build of {gap_text(chosen, why)}.")
    lines += ["", note, "", "| step | ratio [95% interval] | rounds | counts per call (before -> after) | "
              "not timed between |", "|:--|--:|--:|:--|:--|"]
    for step in steps:
        c = step.comparison
        lines.append(f"| {step.before.version} -> {step.after.version} | {fmt_ratio(c)} | "
                     f"{c.n_a if c else 0} | {counts_cell(per_call, step.before.label)} -> "
                     f"{counts_cell(per_call, step.after.label)} | {gap_text(step, why) or '—'} |")
    if aa is not None:
        lines += ["", f"A/A check ({points[0].label} against itself in the same run): {fmt_ratio(aa)}."]
    missing = [p for p in points if p.missing]
    if missing:
        lines += ["", "Missing points:"] + [f"- {p.version}: {md(p.missing)}" for p in missing]
    lines += ["", "Candidate upstream changes:", ""] + cands
    if chosen is not None:
        lines += ["", f"A reproducer and an issue text for this step: `nox -s upstream -- {op} "
                  f"--between {chosen.before.version} {chosen.after.version}`"]
    return "\n".join(lines) + "\n"


def default_run_id(op: str, old: str, new: str) -> str:
    """bisect-OP-OLD-NEW-<UTC time>, of the characters a run id may hold: an op's own
    brackets and plus signs (``read_byBlocks_binaryMode[large.bin]``) become '-', so a
    valid op never makes an invalid run id; cut to leave room for a bisection's -N."""
    stamp = store.default_run_id().split("-")[0]
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", f"bisect-{op}-{old}-{new}")
    text = re.sub(r"-{2,}", "-", text)[:cli.MAX_NAME_LENGTH - 3 - len(stamp) - 1].strip("-.")
    return cli.checked_name(f"{text}-{stamp}", "run id")


def check_answer_path(out: Path) -> None:
    """The answer's file: a new file (never written over) in a place that takes it, outside
    a run's results; refused (exit 2) before anything is built or timed."""
    if os.path.lexists(out):
        raise BisectError(f"--out {out}: exists; an answer is never written over (give "
                          "--run-id or another --out)")
    outputs.check_link_name(out, "--out")
    outputs.check_outputs([out], "--out")


def answer_path(args, run_id: str) -> Path:
    if args.out is not None:
        return args.out
    if Path(args.results_dir).resolve() == RESULTS_DIR.resolve():
        return REPORTS_DIR / f"{run_id}.md"
    return Path(args.results_dir) / run_id / "bisect.md"


# -- the command ----------------------------------------------------------------------------

def ensure_built(chosen: list[Point], recipe, log) -> None:
    for point in chosen:
        if point.interp is None and point.missing is None:
            log(f"bisect: building {point.version} ({point.source}, {recipe.name} recipe)")
            build_point(point, recipe, log)


def run_points(interpreters, chosen: list[Point], op, suite, args, run_id, everything, why, log):
    """Time the points of ``chosen`` that are built; their steps, with every release between
    two timed points that was not timed as the step's gap."""
    timed = [p for p in chosen if p.interp is not None]
    run_dir = time_points(interpreters, timed, op, suite, args, run_id, log)
    steps, overall, aa, per_call = measure_steps(run_dir, timed, op, run_id)
    for step in steps:
        step.gap = [v for v in everything
                    if key(step.before.version) < key(v) < key(step.after.version)]
        for v in step.gap:
            why.setdefault(v, "not timed (bisection)")
    return steps, overall, aa, per_call


def run_place(run_id: str, results_dir) -> str:
    """Where the answer's run is, as the answer says it: a path relative to the repository
    (``results/<run>``) when it is inside it, else the run id alone. The answer is committed
    and read on other machines: an absolute path would name this machine's directories."""
    try:
        place = (Path(results_dir).resolve() / run_id).relative_to(REPO_ROOT)
    except ValueError:
        return f"run `{run_id}`"
    return f"run `{run_id}` in `{place.as_posix()}`"


@cli.main_guard
def main(argv, log=None) -> int:
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    args = parser().parse_args(argv)
    if args.jobs < 1:
        raise BisectError("--jobs must be at least 1")
    if args.cpython_repo is not None:
        # Down to the commit is iomatrix.commands.bisect_commits.main, which calls this one
        # without it (the command line, scripts/bisect_releases.py, starts there).
        raise BisectError("--cpython-repo is the commit bisect: iomatrix.commands."
                          "bisect_commits.main (nox -s bisect) runs it")
    started = time.monotonic()
    cli.checked(args.op, "op", "OP")   # a name, before anything is looked up
    if args.out is not None:   # before anything is looked up, built or timed
        check_answer_path(args.out)
    interpreters = discovery.discover()
    old, new, recipe, everything, points, why = plan(args, interpreters, log)
    ends = [points[old].interp, points[new].interp]
    lister = next((i for i in ends if i is not None), None) or \
        next(iter(builds_at_hand(interpreters, recipe).values()))
    ops = list_valid_ops(lister, args.profile, log)
    if args.op not in ops:
        raise BisectError(f"unknown op {args.op!r}; valid: {', '.join(sorted(ops))}")
    suite = ops[args.op]
    run_id = args.run_id or default_run_id(args.op, old, new)
    order = [points[v] for v in everything if v in points]
    # A bisection's runs are RUN-1, RUN-2, ...: its answer goes beside the first. Its place
    # is checked now, before anything is built or timed: an answer is never lost to it.
    out = answer_path(args, run_id if len(order) <= TIME_ALL else f"{run_id}-1")
    check_answer_path(out)
    outputs.check_writable(Path(args.results_dir), f"--results-dir {args.results_dir}")
    # A bisection makes new runs: one that exists is refused now, not once its lock is taken
    # (a refusal leaves no lock file and no directory behind).
    runs = [run_id] if len(order) <= TIME_ALL else \
        [f"{run_id}-{k}" for k in range(1, len(order) + 1)]
    for run in runs:
        if os.path.lexists(Path(args.results_dir) / run):
            raise BisectError(f"run {run} exists in {args.results_dir}; a bisection makes new "
                              "runs: give another --run-id")
    if len(order) <= TIME_ALL:
        ensure_built(order, recipe, log)
        steps, overall, aa, per_call = run_points(interpreters, order, args.op, suite, args,
                                                  run_id, everything, why, log)
        note = (f"All {len(order)} points that could be had were timed in one lockstep run "
                f"(`{run_id}`).")
    else:
        steps, overall, aa, per_call, note = bisect_search(interpreters, order, args, suite,
                                                           run_id, everything, why, recipe, log)
    for point in order:
        if point.missing:
            why[point.version] = point.missing
    # The candidates of the step where the change appears: the changelog of its newer side,
    # the releases after its older one (the whole range when no step could be timed).
    direction = 1.0 if overall is None or overall.ratio >= 1 else -1.0
    chosen, _ = the_step(steps, direction)
    cands = candidate_lines(args.op, suite, chosen.before.version if chosen else old,
                            chosen.after.version if chosen else new, log)
    text = answer_text(args.op, old, new, steps, overall, aa, per_call, why, order, note, cands,
                       args)
    text += (f"\nWall time: {time.monotonic() - started:.0f} s; "
             f"{run_place(run_id, args.results_dir)}.\n")
    print(cli.terminal_text(text))   # first: whatever happens to the file, it is not lost
    try:
        outputs.write_outputs({out: text}, "--out", replaceable=lambda path: False)
    except cli.BadInput as exc:
        raise cli.BadInput(f"{exc} (the answer is printed above)") from None
    log(cli.terminal_text(f"bisect: wrote {out}"))
    failed = [p for p in order if p.log_tail]
    for point in failed:  # on stderr whatever the log function: exit 3 shows why
        print(f"bisect: the build of {point.version} failed; its log's tail:\n{point.log_tail}",
              file=sys.stderr)
    return cli.EXIT_INTERNAL_ERROR if failed else cli.EXIT_OK


def bisect_search(interpreters, order: list[Point], args, suite, run_id, everything, why,
                  recipe, log):
    """Binary search over ``order``: each pass times lo, mid and hi in one lockstep run and
    keeps the half whose step moved more in OLD -> NEW's direction."""
    lo, hi = 0, len(order) - 1
    all_steps, direction, overall, aa, per_call = [], None, None, None, {}
    passes = 0
    built_before = sum(1 for p in order if p.interp is not None)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        chosen = [order[lo], order[mid], order[hi]]
        ensure_built(chosen, recipe, log)
        if order[mid].interp is None:  # a failed build: drop the point, try its neighbour
            del order[mid]
            hi -= 1
            continue
        passes += 1
        steps, whole, twin, counted = run_points(interpreters, chosen, args.op, suite, args,
                                                 f"{run_id}-{passes}",
                                                 everything, why, log)
        per_call.update({f"{label}": c for label, c in counted.items()})
        if direction is None:
            overall, aa = whole, twin
            direction = 1.0 if whole is None or whole.ratio >= 1 else -1.0
        lower, upper = steps
        all_steps = [s for s in all_steps if not (key(order[lo].version) <= key(s.before.version)
                                                  and key(s.after.version) <= key(order[hi].version))]
        all_steps += [lower, upper]
        if move(lower.comparison, direction) >= move(upper.comparison, direction):
            hi = mid
        else:
            lo = mid
    all_steps.sort(key=lambda s: key(s.before.version))
    built = sum(1 for p in order if p.interp is not None) - built_before
    timed = len({p.version for s in all_steps for p in (s.before, s.after)})
    note = (f"{len(order)} points could be had: bisected in {passes} lockstep runs "
            f"(`{run_id}-1` ..), {timed} timed, {built} built for it.")
    return all_steps, overall, aa, per_call, note


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
