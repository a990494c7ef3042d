"""Does a finding's "most in" path hold over the whole op? (docs/experiments/2026-11-27-callpaths.md)

    python3 docs/experiments/callpaths_check.py --results-dir RESULTS --run-id RUN \\
        --out DIR OP:OLD:NEW [OP:OLD:NEW ...] [--page PAGE.md] [--recount | --reuse OUT]

For each finding (an op and the two series of its step), two measurements of where the
step's instructions went, each grouped by call path with the build's functions set apart
(iomatrix.analysing.callpaths):

- the page's: the "most in" line of the finding's row on the main page PAGE.md (a report
  of the run). ``--recount`` first copies the results directory to DIR/results and counts
  the findings' ops again there with the counting pass of this tree (its window, its
  fixtures 1/COUNT_DIVISOR of the timed size; now with call edges), then regenerates the
  page from that copy into DIR/page (``scripts/report.py --pool``, run with the Python this
  script runs under, which needs the report's packages: the ``report`` session's venv);
- the whole op's: a fresh worker process of each interpreter (the suite's harness, as the
  counting pass starts it) timing one call of the op after its warm-up, at the timed size
  (the run's profile's own fixtures), under callgrind with instrumentation on from the
  start (no switch, no fresh frame: every frame seen), the window cut by the worker's
  markers (``--dump-before=getppid``).

Prints a markdown table: finding, the page's path, the whole op's path, whether they are the
same (the same functions in the same order). A callgrind file that cannot be read makes
that finding's whole-op path "call paths unavailable"; the others go on. Writes only under
DIR; the results directory given is read, never changed.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from iomatrix import callgrind, procs  # noqa: E402
from iomatrix.analysing import callpaths  # noqa: E402
from iomatrix.measuring import counters, counttools  # noqa: E402
from iomatrix.measuring.spec import Conditions  # noqa: E402
from iomatrix.reporting.markdown import row_id  # noqa: E402
from iomatrix.storing import store  # noqa: E402

TIMEOUT = 1800


def finding(text: str) -> tuple:
    op, a, b = text.split(":")
    return op, a, b


def suite_of(document: dict, op: str) -> str:
    return document["ops"][op]["suite"]


def recount(results: Path, run_id: str, out: Path, wanted: list, log=print) -> Path:
    """Copies ``results`` to OUT/results and counts the wanted (series, op) again there with
    this tree's counting pass (instructions only); returns the copy's results directory."""
    copy = out / "results"
    shutil.copytree(results, copy)
    run = store.Run(copy, run_id)
    manifest = store.read_json(run.path / store.MANIFEST, store.MAX_MANIFEST_BYTES,
                               kind="manifest")
    which = ("instructions",)
    work = out / "work"
    problems = counttools.tool_problems(which, work)
    if problems:
        raise SystemExit(f"callpaths_check: {problems['instructions']}")
    methods = counttools.methods(which)
    by_series = {}
    for series, op in wanted:
        by_series.setdefault(series, set()).add(op)
    suites, jobs = set(), []
    for slot, (series, ops) in enumerate(sorted(by_series.items())):
        path = run.counters_file(series)
        document = counters.read_document(path)
        if document["methods"].get("instructions") != methods["instructions"]:
            raise SystemExit(f"callpaths_check: {series} was counted another way "
                             f"({document['methods'].get('instructions')!r})")
        listed = []
        for op in sorted(ops):
            entry = document["ops"][op]
            for key in ("instructions", "cache", "functions", "call_edges"):
                entry.pop(key, None)
            listed.append((entry["suite"], op))
            suites.add(entry["suite"])
        store.write_json_document(path, document)
        info = dict(manifest["interpreters"][series])
        jobs.append((slot, counters.Series(series, info, manifest["io"][0], listed)))
    fixtures = work / "fixtures"
    counters.make_fixtures(sorted(suites), manifest["profile"], fixtures)
    conditions = Conditions(allocator=manifest["allocator"], output=manifest["output"])

    def one(job):
        slot, series = job
        entry = counters.count_series(run, series, which, {}, fixtures, work, manifest["profile"],
                                      conditions, TIMEOUT, methods, slot, log)
        log(f"callpaths_check: recounted {series.series}: {entry['status']}")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(one, jobs))
    return copy


def regenerate(results: Path, run_id: str, out: Path) -> Path:
    page = out / "page" / "latest.md"
    proc = procs.run([sys.executable, str(ROOT / "scripts" / "report.py"), "--results-dir",
                      str(results), "--run-id", run_id, "--out", str(page), "--pool",
                      "--no-figures"], timeout=3600)
    if proc.returncode != 0:
        raise SystemExit("callpaths_check: the report failed: " + procs.tail(proc.stderr, 3))
    return page


CELL_PATH = re.compile(r"most in (.*?)(?:<br>|\|)")


def page_path(page_text: str, op: str, a: str, b: str) -> list | None:
    """The names of the "most in" line of the finding's row (its op's anchor and its step);
    None when the row is not on the page or names nothing."""
    anchor = f"#{row_id(op)})"
    for line in page_text.replace("\u00a0", " ").splitlines():   # nowrap's spaces
        if anchor in line and f"{a} → {b}" in line:
            found = CELL_PATH.search(line)
            if not found:
                return None
            said = found.group(1)
            if "`" not in said:
                return [said.strip()]
            return [name.replace("\\", "") for name in re.findall(r"`([^`]*)`", said)]
    return None


def make_timed_fixtures(suites, profile: str, directory: Path) -> None:
    proc = procs.run([sys.executable, str(counters.HARNESS), "--make-fixtures",
                      ",".join(sorted(suites)), profile, str(directory)], timeout=3600,
                     env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    if proc.returncode != 0:
        raise SystemExit("callpaths_check: cannot make the timed fixtures: "
                         + procs.tail(proc.stderr or proc.stdout, 3))


def whole_op(python: str, suite: str, op: str, fixtures: Path, work: Path, manifest: dict) \
        -> tuple:
    """(1, kept functions, kept call edges) of one call of ``op`` at the timed size, in a
    fresh worker under callgrind instrumented from the start; raises callpaths.Unavailable
    when callgrind's file cannot be read."""
    scratch = work / "scratch"
    scratch.mkdir(parents=True)
    cmd = counttools.tool_prefix("valgrind", switch=False) + counters.worker_command(
        python, suite, [op], Path(os.path.relpath(fixtures, scratch)), Path("."),
        Path("..", "counts.jsonl"), manifest["profile"], manifest["io"][0], manifest["output"],
        0, switch=False)
    (work / "tmp").mkdir()
    env = counters.worker_environment(manifest["allocator"], work / "tmp")
    proc = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT)
    dumps = counttools.callgrind_dumps(work)
    if proc.returncode != 0 or len(dumps) < 2:
        raise callpaths.Unavailable(f"the worker failed or dumped no window "
                                    f"({proc.returncode}, {len(dumps)} dumps)")
    return read_window(dumps[1])


def read_window(dump: Path) -> tuple:
    try:
        profile = callgrind.read_profile(dump)
    except (OSError, callgrind.CallgrindFormatError) as exc:
        raise callpaths.Unavailable(f"callgrind's file cannot be read: {exc}") from None
    if not profile["complete"]:
        raise callpaths.Unavailable("callgrind's file ends before its totals line (cut short)")
    kept = callgrind.kept_functions(profile)
    return 1, kept, callgrind.kept_edges(profile, kept)


def whole_op_path(sides: dict, op: str, a: str, b: str) -> tuple:
    """(path names or None, note) of a finding over the whole op."""
    if isinstance(sides.get(a), Exception) or isinstance(sides.get(b), Exception):
        return None, callpaths.UNAVAILABLE
    try:
        found = callpaths.explain(sides[a], sides[b])
    except callpaths.Unavailable:
        return None, callpaths.UNAVAILABLE
    if not found.groups:
        return None, "no code function moved"
    top = found.groups[0]
    return top.path, (f"{top.change:+,.0f}/call; build {found.build_change:+,.0f}/call")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="callpaths_check.py")
    parser.add_argument("--results-dir", type=Path, required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--page", type=Path, default=None)
    parser.add_argument("--recount", action="store_true")
    parser.add_argument("--reuse", type=Path, default=None,
                        help="an earlier --out of this script: its recounted copy and its "
                             "whole-op dumps are read again (the analysis re-run, nothing "
                             "counted)")
    parser.add_argument("findings", nargs="+", type=finding)
    args = parser.parse_args(argv)
    if args.out.exists() and any(args.out.iterdir()):
        print(f"callpaths_check: {args.out} is not empty; nothing written", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    run = store.Run(args.results_dir, args.run_id)
    manifest = store.read_json(run.path / store.MANIFEST, store.MAX_MANIFEST_BYTES,
                               kind="manifest")
    wanted = sorted({(s, op) for op, a, b in args.findings for s in (a, b)})
    page = args.page
    if args.recount:
        copy = recount(args.results_dir, args.run_id, args.out, wanted)
        page = regenerate(copy, args.run_id, args.out)
    elif args.reuse and page is None:
        page = regenerate(args.reuse / "results", args.run_id, args.out)
    page_text = page.read_text(encoding="utf-8") if page else ""
    suites = {}
    for series, op in wanted:
        document = counters.read_document(run.counters_file(series))
        suites[(series, op)] = suite_of(document, op)
    fixtures = args.out / "timed-fixtures"
    if not args.reuse:
        make_timed_fixtures(set(suites.values()), manifest["profile"], fixtures)

    def one(key):
        series, op = key
        work = args.out / "whole-op" / f"{series}-{op}"
        try:
            if args.reuse:
                dumps = counttools.callgrind_dumps(args.reuse / "whole-op" / f"{series}-{op}")
                if len(dumps) < 2:
                    raise callpaths.Unavailable("no window dump")
                return key, read_window(dumps[1])
            return key, whole_op(manifest["interpreters"][series]["executable"], suites[key], op,
                                 fixtures, work, manifest)
        except (callpaths.Unavailable, subprocess.TimeoutExpired) as exc:
            print(f"callpaths_check: {series} {op}: {exc}", file=sys.stderr)
            return key, callpaths.Unavailable(str(exc))
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        profiles = dict(pool.map(one, wanted))
    rows = ["| finding | the page's path | callgrind, whole op | same? |", "|:--|:--|:--|:--|"]
    same = 0
    for op, a, b in args.findings:
        said = page_path(page_text, op, a, b)
        whole, note = whole_op_path({a: profiles[(a, op)], b: profiles[(b, op)]}, op, a, b)
        agree = said is not None and said == whole
        same += agree
        shown = " → ".join(f"`{n}`" for n in said) if said else "(not on the page)"
        shown_whole = " → ".join(f"`{n}`" for n in whole) if whole else note
        rows.append(f"| `{op}` {a} → {b} | {shown} | {shown_whole}"
                    + (f" ({note})" if whole else "") + f" | {'yes' if agree else 'no'} |")
    print("\n".join(rows))
    print(f"\n{same} of {len(args.findings)} the same path")
    return 0


if __name__ == "__main__":
    sys.exit(main())
