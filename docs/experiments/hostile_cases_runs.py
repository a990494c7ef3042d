"""Issue 56, families 4 and 7 of hostile_probe.py: one run counted twice, and scale.

``same-run-56``: a run is its manifest (its run id and content: store.run_identity), not its
directory's name. A copied run directory, a run id given twice, a run named by its id and by
its path: every tool that gathers runs (the pool, agree, a merged report, history) counts it
once and says so in one line naming the directories; it is bad input (exit 2) only where,
counted once, the runs are too few for what was asked (agree's second run, the pool's). A
directory whose name is not its manifest's run id is read under its name, said in a line.

``scale-56``: history and the pool over a store of many small runs (SCALE_RUNS, built the
way docs/experiments/many_runs.py builds 10,000) end within the probe's limit and say how far
they are on stderr ("read 600 of 2,000 runs ...") while they read.
"""
from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

SAME = "same-run-56"
SCALE = "scale-56"
COPY = "-copy"
SCALE_RUNS = 2_000          # history over them: about 10 s here; the pool reads fewer
POOL_RUNS = 300


def cases(probe) -> list:
    return same_run_cases(probe) + scale_cases(probe)


# -- one run counted twice ------------------------------------------------------------------

def one_command(probe, run_id: str):
    """A run whose manifest states its selection, as the automatic pool asks."""
    return probe.RunSpec(run_id=run_id, manifest={"spec": {"selection": "core"}})


def store_of(probe, tmp: Path, copies=(), renamed: str | None = None) -> Path:
    """Runs A and B of one command in ``tmp/results``; ``copies``: run ids copied to
    ``<id>-copy``; ``renamed``: run A's directory under that name instead (A absent)."""
    results = tmp / "results"
    for run_id in (probe.RUN_A, probe.RUN_B):
        probe.make_run(results, one_command(probe, run_id))
    for run_id in copies:
        shutil.copytree(results / run_id, results / (run_id + COPY))
    if renamed:
        (results / probe.RUN_A).rename(results / renamed)
    return results


def says(*texts, absent=()):
    """A check: stdout and stderr together hold every text and none of ``absent``."""
    def check(r):
        both = r.stdout + r.stderr
        missing = [text for text in texts if text not in both]
        if missing:
            return f"does not say {missing[0]!r}"
        shown = [text for text in absent if text in both]
        return f"says {shown[0]!r}" if shown else None
    return check


def page_says(rel: str, *texts, absent=()):
    """A check: the page written at ``rel`` holds every text and none of ``absent``."""
    def check(r):
        path = r.tmp / rel
        if not path.is_file():
            return f"{rel} not written"
        text = path.read_text()
        missing = [t for t in texts if t not in text]
        shown = [t for t in absent if t in text]
        return (f"{rel} does not say {missing[0]!r}" if missing else
                f"{rel} says {shown[0]!r}" if shown else None)
    return check


def both(*checks):
    def check(r):
        return next((problem for problem in (c(r) for c in checks) if problem), None)
    return check


def same_run_cases(probe) -> list:
    out = []
    add = out.append
    a, b = probe.RUN_A, probe.RUN_B
    copy = a + COPY
    line = f"{copy}: the same run as {a}"

    def case(name, argv_of, expect, copies=(a,), renamed=None):
        def setup(tmp):
            store_of(probe, tmp, copies, renamed)
            return argv_of(tmp), {}
        add(probe.Case(SAME, name, setup, expect))

    def report(*extra, run_ids=(b,)):
        return [probe.script("report"), "--results-dir", "results", "--out", "out/o.md",
                "--no-figures", *[arg for run_id in run_ids for arg in ("--run-id", run_id)],
                *extra]

    def agree(*runs):
        return [probe.script("agree"), *runs, "--results-dir", "results",
                "--json", "out/a.json"]

    def history():
        return [probe.script("history"), "3.13", "--results-dir", "results",
                "--out", "out/h.md"]

    case("report --pool: a copied run directory is pooled once, in one line",
         lambda tmp: report("--pool"),
         probe.clean(codes=(0,), check=says(line, "pooled 2 runs")))
    case("report --pool A A-copy: both named, pooled once",
         lambda tmp: report("--pool", a, copy),
         probe.clean(codes=(0,), check=says(line, "pooled 2 runs")))
    case("report --pool naming the main run itself: pooled once",
         lambda tmp: report("--pool", b, a),
         probe.clean(codes=(0,), check=says(f"{b}: the same run as {b}", "pooled 2 runs")),
         copies=())
    case("report --pool with only a copy of the main run: exit 2, nothing to pool",
         lambda tmp: report("--pool", copy, run_ids=(a,)), probe.REFUSED)
    case("report --run-id A --run-id A: the run's own report, not a merge of two",
         lambda tmp: report(run_ids=(a, a)),
         probe.clean(codes=(0,), check=both(says(f"{a}: the same run as {a}"),
                                            page_says("out/o.md", absent=("2 runs on",)))),
         copies=())
    case("report --run-id A, its copy and B: a merge of two runs",
         lambda tmp: report(run_ids=(a, copy, b)),
         probe.clean(codes=(0,), check=both(says(line), page_says(
             "out/o.md", "2 runs on 1 hosts", absent=("3 runs on",)))))
    case("agree A A-copy: one run, exit 2",
         lambda tmp: agree(a, copy), probe.REFUSED)
    case("agree A A: one run, exit 2",
         lambda tmp: agree(a, a), probe.REFUSED, copies=())
    case("agree A A-copy B: compared once, in one line",
         lambda tmp: agree(a, copy, b),
         probe.clean(codes=(0,), check=says(line, "1 pair of runs")))
    case("agree A, A by its path, B: compared once",
         lambda tmp: agree(a, str(Path("results") / a), b),
         probe.clean(codes=(0,), check=says(f"results/{a}: the same run as {a}",
                                            "1 pair of runs")), copies=())
    case("history: a copied run directory is one column, in one line",
         lambda tmp: history(),
         probe.clean(codes=(0,), check=both(says(line), page_says(
             "out/h.md", "#2 ", absent=("#3 ",)))))
    case("history: a run directory renamed (its manifest names another run) is said",
         lambda tmp: history(),
         probe.clean(codes=(0,), check=says(f"renamed: its manifest names run {a}")),
         copies=(), renamed="renamed")

    def hostile_id(tmp):
        results = store_of(probe, tmp, copies=())
        manifest = results / a / "manifest.json"
        manifest.write_text(manifest.read_text().replace(
            f'"run_id": "{a}"', '"run_id": "<img src=x onerror=alert(1)>\\u001b[31m"'))
        shutil.copytree(results / a, results / copy)
        return history(), {}
    add(probe.Case(SAME, "history: a copy whose manifest's run id is markup", hostile_id,
                   probe.clean(codes=(0, 2))))
    return out


# -- scale ------------------------------------------------------------------------------------

def many_runs_module():
    """docs/experiments/many_runs.py beside this file: the store of many small runs."""
    path = Path(__file__).with_name("many_runs.py")
    spec = importlib.util.spec_from_file_location("many_runs", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def progress_said(r):
    """A progress line on stderr while the runs were read."""
    return None if " of " in r.stderr and "read " in r.stderr else \
        "no progress line on stderr"


def scale_cases(probe) -> list:
    many = many_runs_module()

    def history_setup(tmp):
        many.make_runs(tmp / "results", SCALE_RUNS, copies=3, probe=probe)
        return [probe.script("history"), "3.13", "--results-dir", "results",
                "--out", "out/h.md"], {}

    def pool_setup(tmp):
        many.make_runs(tmp / "results", POOL_RUNS, copies=3, probe=probe)
        return [probe.script("report"), "--results-dir", "results", "--run-id",
                many.run_id_of(POOL_RUNS - 1), "--pool", "--out", "out/p.md",
                "--no-figures"], {}
    copies = "3 copied runs said"
    return [
        probe.Case(SCALE, f"history over {SCALE_RUNS:,} runs (3 of them copied): done, "
                          f"with progress, {copies}", history_setup,
                   probe.clean(codes=(0,), check=both(progress_said, says(
                       f"{many.run_id_of(2)}{COPY}: the same run as")))),
        probe.Case(SCALE, f"report --pool over {POOL_RUNS} runs (3 of them copied): done, "
                          f"with progress, {copies}", pool_setup,
                   probe.clean(codes=(0,), check=both(progress_said, says(
                       f"{many.run_id_of(2)}{COPY}: the same run as",
                       f"pooled {POOL_RUNS} runs")))),
    ]
