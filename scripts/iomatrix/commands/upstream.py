"""A finding, made ready for CPython's tracker: a standalone reproducer and an issue text.

    nox -s upstream -- OP --between OLD NEW [--run-id RUN] [--results-dir DIR] [--out-dir DIR]
                      [--run-repro OLD_PYTHON NEW_PYTHON | --no-run-repro] [--repeat N]

Writes, beside the run and never over anything (default reports/upstream/OP-OLD-NEW/):

- ``repro_<op>.py``: a short script with no iomatrix import that runs under 2.7 and every
  3.x, makes its fixture inline (the suite's size, the same kind of bytes), checks what the
  op reads or writes, and times the op with timeit against its control (the same Python loop
  without the I/O): time and bytes moved per call. ``python repro_OP.py OLD_PYTHON
  NEW_PYTHON`` runs itself under both, alternating, and prints each time and the ratio NEW/OLD.
- ``ISSUE.md``: titled by behaviour (what got slower, by how much, since the release that
  brought the change: the tested cause's changelog release, else NEW). It leads with the
  tested cause (or says none was tested); then a later changelog entry that is the same change
  as the step, said as already on the tracker (then the text adds the measurement, it is not
  a new issue); the status per branch with each branch's lifecycle on the run's date
  (analysing.status: PEP 602 from a table of .0 dates, "lifecycle unknown" for a branch the
  table lacks); the known fixes, "not fixed" said only of a branch whose newest patch at hand
  still has it; the moved functions read in each branch's newest source at hand; the A/A
  twin's verdict on the rounds (commands.issue_parts). Then the finding with its interval
  and its counts per call (system calls, instructions, the bytes the system calls moved, in
  all and per call name) from RUN (default: the newest run holding the op under both
  releases), both builds' facts from its manifest, the machine, the reproducer's op part,
  its usage and its output, and the candidate changelog entries.

The reproducer runs by default under the builds of OLD and NEW that discovery finds here
(``--run-repro`` names two interpreters instead, each checked first to run as a Python;
``--no-run-repro`` leaves it out); where it does not run, ISSUE.md says why. It is made from
the op templates of ``iomatrix.commands.reproducer`` (every op family of the core selection
has one); an op without one is said in one line of ISSUE.md, and only ISSUE.md is written;
an op without one that no stored run holds leaves nothing to write (exit 2). Here are the
finding read from a run, the issue text and the command.
"""
from __future__ import annotations

import math
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from iomatrix import cli
from iomatrix.commands import bisect, release
from iomatrix.paths import REPORTS_DIR, RESULTS_DIR
from iomatrix.storing import outputs, store
# The reproducer's templates and source are made in reproducer.py; the names stay importable
# from here, where the tests use them.
from iomatrix.commands import issue_parts
from iomatrix.commands.reproducer import (  # noqa: F401
    DRIVER, KIB, MIB, TEMPLATED_FAMILIES, ReproducerError, checked_reproducer, chunks_template,
    lutz_template, no_template_line, reproducer, script_name, template_for)


# -- the finding, from a run ----------------------------------------------------------------

def series_of(manifest: dict, version: str) -> str | None:
    """The plain series of ``version`` in a run (not a twin, not another condition)."""
    found = [name for name, entry in manifest.get("interpreters", {}).items()
             if isinstance(entry, dict) and str(entry.get("version", "")).rstrip("+") == version
             and entry.get("implementation") == "cpython" and not entry.get("free_threaded")
             and not entry.get("aa_of") and not entry.get("allocator_of") and "@" not in name]
    return min(found, key=len) if found else None


def finding(results_dir: Path, run_id: str | None, op: str, old: str, new: str) -> dict | None:
    """{run, manifest, old, new (series), comparison, counts} from the run that holds the op
    under both releases (``run_id``, else the newest such run); None when none does."""
    from iomatrix import stats
    from iomatrix.analysing import analysis, counts
    runs = [store.Run(results_dir, run_id)] if run_id else \
        sorted(store.list_runs(results_dir), key=lambda r: r.path.stat().st_mtime, reverse=True)
    for run in runs:
        try:
            manifest = run.read_manifest()
        except (cli.BadInput, OSError):
            continue
        a, b = series_of(manifest, old), series_of(manifest, new)
        if a is None or b is None:
            continue
        data = analysis.load_run(run)
        means = analysis.process_means(data.frame)
        if (a, op) not in means or (b, op) not in means:
            continue
        comparison = stats.compare(means[(a, op)], means[(b, op)], paired=data.paired)
        per_call = {}
        for row in counts.load_counts(run.path):
            if row["op"] == op and row["series"] in (a, b) and (
                    row["counter"] in ("syscalls", "instructions", "syscall_bytes")
                    or row["counter"].startswith(("syscall:", "syscall_bytes:"))):
                per_call.setdefault(row["series"], {})[row["counter"]] = row["per_call"]
        return {"run": run, "manifest": manifest, "old": a, "new": b,
                "comparison": comparison, "counts": per_call, "data": data}
    if run_id:
        raise cli.BadInput(f"run {run_id} in {results_dir} holds no {op} under both {old} and "
                           f"{new}")
    return None


def _per_call(value) -> str:
    """A count per call as the table states it: a finite number, else "—"."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "—"
    return f"{value:,.1f}"


def _bytes(value) -> str:
    """Bytes per call as the pages say them ("82 MB"), else "—"."""
    from iomatrix.analysing.counts import fmt_bytes
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "—"
    return fmt_bytes(value)


def counts_lines(found: dict) -> list[str]:
    """The counts per call of both sides: system calls, instructions, the bytes the system
    calls moved (in all and per call name, as the main page's "`read` bytes 82 MB → 2.6 GB"),
    and the calls whose number changed; a row per counter, names escaped."""
    from iomatrix.markup import code, md
    lines = []
    a, b = found["counts"].get(found["old"], {}), found["counts"].get(found["new"], {})
    order = {"syscalls": 0, "instructions": 1, "syscall_bytes": 2}
    for counter in sorted(set(a) | set(b), key=lambda c: (order.get(c, 3), c)):
        before, after = a.get(counter), b.get(counter)
        if before == after and counter.startswith(("syscall:", "syscall_bytes:")):
            continue
        if counter == "syscall_bytes":
            lines.append(f"| bytes moved by system calls | {_bytes(before)} | {_bytes(after)} |")
        elif counter.startswith("syscall_bytes:"):
            lines.append(f"| {code(counter[14:])} bytes | {_bytes(before)} | {_bytes(after)} |")
        else:
            name = f"{code(counter[8:])} calls" if counter.startswith("syscall:") else md(counter)
            lines.append(f"| {name} | {_per_call(before)} | {_per_call(after)} |")
    return (["| per call | before | after |", "|:--|--:|--:|"] + lines) if lines else \
        ["Counts: not counted in this run."]


def cause_and_status(found: dict, op: str) -> list[str]:
    """The lines the issue leads with (issue 43): the cause the acceptance rule names, with the
    evidence that passed and the ablation's result (analysing.evidence, analysing.ablation),
    or that none was tested and what the data shows; then where it stands in each branch's
    newest patch at hand (analysing.status). Markdown; every changelog word escaped."""
    from iomatrix.analysing import evidence, status
    from iomatrix.reporting import rst, why
    from iomatrix.reporting.markdown import md
    analysed = analysis_of(found, op)
    if analysed is None:
        return []
    an, f = analysed
    verdict = evidence.verdict_for(an, f)
    if verdict.candidate is not None:
        entry = verdict.candidate.entry
        # The detail quotes the entry's words (its roles too): rendered as the entry is.
        # "Tested" only where cause_test says how (an ablation, a bisect, the source, a
        # counter, repetition with a reproducer): a function of the entry that moved is not
        tested = verdict.test is not None and verdict.test.tested
        label = f"Tested cause ({md(verdict.test.by)})" if tested else \
            "Likely cause, untested"
        cause = (f"**{label}:** {why.link(verdict.candidate)} ({md(entry.release)}): "
                 f"{rst.render(entry.text, 300)} — *{md(verdict.evidence)}*: "
                 f"{rst.render(verdict.detail)}")
    elif verdict.cause is not None:
        cause = (f"**Stated cause:** {why.cause_link(verdict.cause)} "
                 f"(*{md(verdict.evidence)}*): {md(verdict.detail)}")
    else:
        cause = (f"**No cause tested:** no changelog entry passes the acceptance rule (an "
                 f"entry that speaks of the op's machinery, and that a bisect, the source of "
                 f"a function that moved or an ablation agrees with); {md(verdict.shows)}")
    if verdict.ablation and verdict.evidence != evidence.ABLATION:
        cause += f". Ablation: {md(verdict.ablation)}"
    lines = [cause + ("" if cause.endswith(".") else "."), ""]
    lines += issue_parts.known_issue_lines(an, f)
    now = status.status_words(an, f)
    if now:
        lines += [f"**Status per branch** (the newest patch at hand of each minor version, "
                  f"against {md(f.a)}; each branch's lifecycle on the run's date): "
                  f"{md(now)}.", ""]
    fixes = issue_parts.fixes_line(an, f)
    if fixes:
        lines += [fixes, ""]
    lines += issue_parts.source_lines(an, f)
    if now:
        lines += [f"*Lifecycle:* {md(status.lifecycle_note())}.", ""]
    return lines + issue_parts.twin_lines(an, f)


def analysis_of(found: dict, op: str):
    """(Analysis of the finding's run, the Finding), made once per finding; None when the
    finding carries no run data with the op."""
    if "analysed" not in found:
        from iomatrix import stats
        from iomatrix.analysing.comparisons import Finding, analyse
        data = found.get("data")
        if data is None or op not in set(data.frame["op"]):
            found["analysed"] = None
        else:
            an = analyse(data, None, stats.FINDING_THRESHOLD)
            found["analysed"] = (an, Finding(op, found["old"], found["new"],
                                             found["comparison"]))
    return found["analysed"]


def title_of(op: str, old: str, new: str, found: dict | None) -> str:
    """The issue's title by behaviour: what got slower (the op's reproducer template says it
    in words; the op's name where it has none), by how much, since which release."""
    template = template_for(op)
    analysed = analysis_of(found, op) if found is not None else None
    since = issue_parts.release_of_change(*analysed, new)[0] if analysed else None
    return issue_parts.title(template.behaviour if template else None, op, old, new,
                             found["comparison"].ratio if found is not None else None, since)


def fence_for(text: str) -> str:
    """A code fence longer than any run of backticks in ``text``: the text cannot close it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def issue_text(op, suite, old, new, found, repro_name, repro_output, cands,
               ran_under: str | None = None) -> str:
    """ISSUE.md: held to the pages' rules. Every string from a run's files (the manifest's
    builds and machine, the counters' names) or from a process's output is escaped
    (markup.md, markup.code) or fenced with its control characters shown escaped, so none is
    live HTML, a heading or a terminal escape; the op and the releases were vetted."""
    from iomatrix.markup import code, md
    from iomatrix.reporting.markdown import fmt_ratio
    lines = [title_of(op, old, new, found), ""]
    if found is not None:
        lines += cause_and_status(found, op)
    if found is None:
        lines += ["No stored run holds this op under both releases: run "
                  f"{code(f'nox -s bisect -- {op} --between {old} {new}')} first.", ""]
    else:
        c = found["comparison"]
        direction = "slower" if c.ratio > 1 else "faster"
        lines += [f"{code(op)} (iomatrix suite {code(suite)}) takes **{c.ratio:.2f} times** the "
                  f"time under {md(new)} that it takes under {md(old)} ({direction}): "
                  f"{fmt_ratio(c)} (new time / old time, 95% interval, {c.n_a} "
                  f"{'rounds, paired' if c.paired else 'processes'}; run "
                  f"{code(found['run'].run_id)}).", ""]
        lines += counts_lines(found) + [""]
        manifest = found["manifest"]
        lines += ["## Builds", ""] + release.builds_table(manifest, found["old"], found["new"])
        entries = manifest.get("interpreters", {})
        lines += ["", "Built: " + "; ".join(
            f"{code(label)}: {md(entries.get(label, {}).get('sys_version') or 'unknown')}"
            for label in (found["old"], found["new"])), ""]
        lines += ["## Machine", "", f"{md(release.machine_line(manifest))}; kernel "
                  f"{md(platform.release())} (this machine, {md(platform.machine())}).", ""]
    lines += ["## Reproducer", ""] + reproducer_lines(op, old, new, repro_name, repro_output,
                                                      ran_under)
    lines += ["## Candidate upstream changes", ""] + cands
    return "\n".join(lines) + "\n"


def reproducer_lines(op, old, new, repro_name, repro_output, ran_under=None) -> list[str]:
    """The reproducer's section: what it does, its op part (the fixture, the timed call, its
    control and check, fenced), how to run it and its own output with the interpreters it
    ran under (``ran_under``, markdown), or "reproducer not run here" and why; one line for
    an op without a template."""
    from iomatrix.markup import code, visible
    template = template_for(op)
    if template is None:
        return [no_template_line(op), ""]
    output = [visible(line) for line in repro_output.strip().splitlines()] if repro_output \
        else []
    usage = f"$ python {repro_name} /path/to/python{old} /path/to/python{new}"
    fence = fence_for("\n".join(output))
    part = template.source.strip("\n")
    part_fence = fence_for(part)
    return [f"{code(repro_name)} (beside this file; no dependencies, Python 2.7 and 3.x) "
            "makes its fixture inline, checks what the op reads or writes, and times the op "
            "with `timeit`, per call and against its control (the same Python loop without "
            "the I/O), with the bytes moved per call. Its op part:", "",
            f"{part_fence}python", part, part_fence, "",
            *(["**Reproducer run here** under " + (ran_under or "the two interpreters "
                                                     "given") + ", alternating; its own "
               "output:", "", f"{fence}console", usage, *output, fence, ""] if output else
              ["**Reproducer not run here**: " + (ran_under or "no build of both releases "
               "at hand") + ". To run it under the two releases, alternating:", "",
               f"{fence}console", usage, fence, ""])]


def parser() -> cli.Parser:
    p = cli.Parser(prog="nox -s upstream --",
                   description="A standalone reproducer and an issue text for a finding.")
    p.add_argument("op", metavar="OP")
    p.add_argument("--between", nargs=2, metavar=("OLD", "NEW"), required=True,
                   help="the finding's two releases (3.13.15 3.14.7)")
    p.add_argument("--run-id", type=cli.run_id, default=None,
                   help="the run the finding is read from (default: the newest holding it)")
    p.add_argument("--results-dir", type=cli.results_dir, default=RESULTS_DIR)
    p.add_argument("--out-dir", type=Path, default=None,
                   help="default: reports/upstream/OP-OLD-NEW/ (must not exist)")
    # one or the other: given both, which one a user meant is not for the tool to guess
    repro = p.add_mutually_exclusive_group()
    repro.add_argument("--run-repro", nargs=2, metavar=("OLD_PYTHON", "NEW_PYTHON"),
                       default=None, help="run the reproducer under these two interpreters "
                                          "and put its output into ISSUE.md")
    repro.add_argument("--no-run-repro", action="store_true",
                       help="do not run the reproducer (by default it runs under the builds "
                            "of OLD and NEW found here, when both are)")
    p.add_argument("--repeat", type=cli.positive_int, default=20,
                   help="the reproducer's timed batches per interpreter and round, where it "
                        "runs (default: %(default)s)")
    return p


def check_out_dir(out_dir: Path, results_dir: Path) -> None:
    """Refuse an --out-dir that exists (or is a link), lies in the results store or in a run
    directory (links followed), or where nothing can be written (under a file, a read-only
    file system, no permission: storing.outputs.check_writable makes and removes a hidden
    file there): BadInput naming it, before anything is compiled or timed. The files are
    then written all or none by storing.outputs.write_outputs."""
    shown = cli.one_line(out_dir)
    if os.path.lexists(out_dir):
        raise cli.BadInput(f"--out-dir {shown}: exists; nothing is written over (give "
                           "another --out-dir)")
    store_dirs = {Path(os.path.abspath(d)) for d in (results_dir, RESULTS_DIR)}
    store_dirs |= {d.resolve() for d in store_dirs}
    for where in outputs.where_written(out_dir):
        if any(d == where or d in where.parents for d in store_dirs):
            raise cli.BadInput(f"--out-dir {shown}: lies in the results store; a run's "
                               "results are never written over or added to")
    run_dir = outputs.run_directory_of(out_dir / "ISSUE.md")
    if run_dir is not None:
        raise cli.BadInput(f"--out-dir {shown}: lies in the run directory "
                           f"{cli.one_line(run_dir)}; a run's results are never added to")
    outputs.check_writable(out_dir, f"--out-dir {shown}")


def check_run_repro(pythons) -> None:
    """--run-repro's interpreters, each run once with discovery's probe (its answer not
    kept): one that does not run, or does not answer as a Python does (/bin/false), is bad
    input named in one line, before anything is compiled, timed or written."""
    from iomatrix.interpreters import probing
    for python in pythons or ():
        try:
            probing.probe(python)
        except RuntimeError as exc:
            raise cli.BadInput(f"--run-repro {exc}") from None


def interpreters_here() -> list:
    """The interpreters discovery finds here (BadInput for a bad declaration)."""
    from iomatrix.interpreters import discovery
    try:
        return discovery.discover(warn=lambda message: None)
    except discovery.DiscoveryError as exc:
        raise cli.BadInput(str(exc)) from None


def builds_of(interpreters, old: str, new: str) -> list:
    """[OLD's build, NEW's build] found here (bisect_points.find_build: pyenv or provisioned,
    plain CPython), None for one not found."""
    from iomatrix.commands import bisect_points
    return [bisect_points.find_build(interpreters, version) for version in (old, new)]


def compile_targets(old: str, new: str, run_repro, interpreters=None) -> list[str]:
    """The interpreters a reproducer must compile under: --run-repro's, the builds of OLD and
    NEW discovery finds here, the oldest CPython here (the reproducer promises 2.7), and
    this one. Only interpreters found or named here run: never a path read from a run."""
    from iomatrix.interpreters import discovery
    targets = list(run_repro or [])
    if interpreters is None:
        interpreters = interpreters_here()
    for interp in builds_of(interpreters, old, new):
        if interp is not None:
            targets.append(interp.executable)
    cpythons = [i for i in interpreters if i.ok and i.implementation == "cpython"]
    if cpythons:
        targets.append(min(cpythons, key=discovery.sort_key).executable)
    return list(dict.fromkeys([*targets, sys.executable]))


# Rounds of the reproducer (run by default; alternating OLD and NEW), unless the run's A/A
# twin says the step needs more (issue_parts.repro_rounds).
REPRO_ROUNDS = 3


def suite_of(op: str) -> str:
    """The suite of an op by its name: the prefix of a suite's ops, else the study's."""
    from iomatrix.measuring import selection
    prefix = op.split("_", 1)[0]
    return prefix if prefix in selection.available_suites() else selection.STUDY_SUITE


def run_reproducer(source: str, name: str, pythons, repeat: int, log,
                   rounds: int = REPRO_ROUNDS) -> str:
    """The reproducer's output when run under ``pythons`` (OLD, NEW), from a temporary
    directory (the output directory is written only when everything is made);
    ReproducerError with its last line when it fails."""
    with tempfile.TemporaryDirectory(prefix="iomatrix-repro-") as tmp:
        path = Path(tmp) / name
        path.write_text(source, encoding="ascii")
        command = [sys.executable, str(path), *pythons, "--repeat", str(repeat),
                   "--rounds", str(rounds)]
        log(cli.terminal_text("upstream: " + " ".join(command)))
        done = subprocess.run(command, capture_output=True, text=True, errors="replace")
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ReproducerError(f"the reproducer failed under {' and '.join(pythons)} (exit "
                              f"{done.returncode}): {tail[0]}; nothing written")
    log(cli.terminal_text(done.stdout.rstrip()))
    return done.stdout


def repro_pythons(args, interpreters, old: str, new: str, rounds: int) -> tuple:
    """(the two interpreters the reproducer runs under or None, what ISSUE.md says of them):
    --run-repro's; else, unless --no-run-repro, the builds of OLD and NEW found here; else
    None and why it is not run. Named by version and label, never by path."""
    from iomatrix.markup import code, md
    runs = f"{rounds} rounds of {args.repeat} timed batch{'es' * (args.repeat != 1)}"
    if args.run_repro:
        return args.run_repro, f"the two interpreters given (--run-repro), {runs}"
    if args.no_run_repro:
        return None, "--no-run-repro was given"
    found = builds_of(interpreters, old, new)
    if None in found:
        missing = " and ".join(v for v, i in zip((old, new), found) if i is None)
        return None, (f"no build of {md(missing)} here (nox -s provision -- {md(missing)} "
                      "builds one; or give --run-repro OLD_PYTHON NEW_PYTHON)")
    return [i.executable for i in found], " and ".join(
        f"{md(i.version)} ({code(i.label)}, {md(i.source)})" for i in found) + f", {runs}"


@cli.main_guard
def main(argv, log=None) -> int:
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    args = parser().parse_args(argv)
    cli.checked(args.op, "op", "OP")   # a name, vetted before it reaches any file
    check_run_repro(args.run_repro)
    old, new = args.between
    for version in (old, new):
        if not bisect.sources.VERSION_RE.fullmatch(version) or not bisect.known_release(version):
            raise cli.BadInput(f"unknown release {cli.one_line(repr(version))}: give CPython "
                               "versions such as 3.13.15 3.14.7")
    if bisect.key(old) >= bisect.key(new):
        raise cli.BadInput(f"OLD {old} is not older than NEW {new}")
    repro_name = script_name(args.op)
    out_dir = args.out_dir or REPORTS_DIR / "upstream" / f"{repro_name[6:-3]}-{old}-{new}"
    # Every destination and input check before anything runs or is written.
    check_out_dir(out_dir, args.results_dir)
    found = finding(args.results_dir, args.run_id, args.op, old, new)
    if found is None and template_for(args.op) is None:
        # Neither a finding nor a reproducer: an issue text of "no run, no reproducer" helps
        # nobody, so nothing is fetched (the changelog's candidates) or written.
        raise cli.BadInput(f"no stored run in {cli.one_line(args.results_dir)} holds "
                           f"{args.op} under both {old} and {new}, and no reproducer "
                           f"template makes it (families with one: "
                           f"{', '.join(TEMPLATED_FAMILIES)}): nothing to write")
    suite = suite_of(args.op)
    source = output = ran_under = None
    if template_for(args.op) is None:
        # Not an error: the issue text says so in one line, and only ISSUE.md is written.
        log(cli.terminal_text(f"upstream: no reproducer template for {args.op}; families "
                              "with one: " + ", ".join(TEMPLATED_FAMILIES)))
    else:
        analysed = analysis_of(found, args.op) if found is not None else None
        rounds = issue_parts.repro_rounds(analysed[0], analysed[1], REPRO_ROUNDS) \
            if analysed else REPRO_ROUNDS
        interpreters = interpreters_here()
        pythons, ran_under = repro_pythons(args, interpreters, old, new, rounds)
        try:
            source = checked_reproducer(args.op, old, new,
                                        compile_targets(old, new, args.run_repro, interpreters))
            output = run_reproducer(source, repro_name, pythons, args.repeat, log,
                                    rounds) if pythons else None
        except ReproducerError as exc:
            print(f"error: {cli.one_line(exc)}", file=sys.stderr)
            return cli.EXIT_INTERNAL_ERROR
    cands = bisect.candidate_lines(args.op, suite, old, new, log)
    text = issue_text(args.op, suite, old, new, found, repro_name, output, cands, ran_under)
    # all files or none, the directories made removed again on failure: a place that
    # refuses them is exit 2, a full disk exit 3 (outputs.write_failure)
    files = {out_dir / "ISSUE.md": text}
    if source is not None:
        files[out_dir / repro_name] = source
    outputs.write_outputs(files, "--out-dir")
    log(cli.terminal_text("upstream: wrote " + " and ".join(str(p) for p in files)))
    print(cli.terminal_text(text))
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
