"""A finding, made ready for CPython's tracker: a standalone reproducer and an issue text.

    nox -s upstream -- OP --between OLD NEW [--run-id RUN] [--results-dir DIR] [--out-dir DIR]

Writes, beside the run and never over anything (default reports/upstream/OP-OLD-NEW/):

- ``repro_<op>.py``: a short script with no iomatrix import that runs under 2.7 and every
  3.x, makes the suite's fixture itself (same size and bytes: the generator of
  suites/_data.py is copied into it), and times the op with the suite's calls and sizes
  (min and median of many repetitions). ``python repro_OP.py OLD_PYTHON NEW_PYTHON`` runs
  itself under both, alternating, and prints each time and the ratio NEW/OLD.
- ``ISSUE.md``: the finding with its interval and counts from RUN (default: the newest run
  holding the op under both releases), both builds' facts from its manifest, the machine,
  the reproducer's usage and output (when --run-repro gives two interpreters) and the
  candidate changelog entries.

The reproducer is made from a small table of op templates (TEMPLATES); an op without one
is bad input (exit 2, naming the ops that have one). The templates and the reproducer's
source are in ``iomatrix.commands.reproducer`` (its names are importable from here too);
here are the finding read from a run, the issue text and the command.
"""
from __future__ import annotations

import platform
import re
import subprocess
import sys
from pathlib import Path

from iomatrix import cli
from iomatrix.commands import bisect, release
from iomatrix.paths import REPORTS_DIR, RESULTS_DIR
from iomatrix.storing import store
# The reproducer's templates and source are made in reproducer.py; the names stay importable
# from here, where the tests use them.
from iomatrix.commands.reproducer import (  # noqa: F401
    DRIVER, KIB, MIB, TEMPLATED_FAMILIES, TEMPLATES, chunks_template, data_source,
    lutz_template, reproducer, template_for)


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
                    row["counter"] in ("syscalls", "instructions")
                    or row["counter"].startswith("syscall:")):
                per_call.setdefault(row["series"], {})[row["counter"]] = row["per_call"]
        return {"run": run, "manifest": manifest, "old": a, "new": b,
                "comparison": comparison, "counts": per_call, "data": data}
    if run_id:
        raise cli.BadInput(f"run {run_id} in {results_dir} holds no {op} under both {old} and "
                           f"{new}")
    return None


def counts_lines(found: dict) -> list[str]:
    lines = []
    a, b = found["counts"].get(found["old"], {}), found["counts"].get(found["new"], {})
    for counter in sorted(set(a) | set(b), key=lambda c: (c != "syscalls", c != "instructions", c)):
        before, after = a.get(counter), b.get(counter)
        if before == after and counter.startswith("syscall:"):
            continue
        name = f"`{counter[8:]}` calls" if counter.startswith("syscall:") else counter
        lines.append(f"| {name} | {before if before is None else f'{before:,.1f}'} | "
                     f"{after if after is None else f'{after:,.1f}'} |")
    return (["| per call | before | after |", "|:--|--:|--:|"] + lines) if lines else \
        ["Counts: not counted in this run."]


def cause_and_status(found: dict, op: str) -> list[str]:
    """The lines the issue leads with (issue 43): the cause the acceptance rule names, with the
    evidence that passed and the ablation's result (analysing.evidence, analysing.ablation),
    or that none was tested and what the data shows; then where it stands in each branch's
    newest patch at hand (analysing.status). Markdown; every changelog word escaped."""
    from iomatrix.analysing import evidence, status
    from iomatrix.analysing.comparisons import Finding, analyse
    from iomatrix.reporting import rst
    from iomatrix.reporting.markdown import md
    data = found.get("data")
    if data is None or op not in set(data.frame["op"]):
        return []
    from iomatrix import stats
    an = analyse(data, None, stats.FINDING_THRESHOLD)
    f = Finding(op, found["old"], found["new"], found["comparison"])
    verdict = evidence.verdict_for(an, f)
    if verdict.candidate is not None:
        entry = verdict.candidate.entry
        cause = (f"**Tested cause:** [{md(entry.number)}]({md(entry.url)}) ({md(entry.release)}): "
                 f"{rst.render(entry.text, 300)} — *{md(verdict.evidence)}*: "
                 f"{md(verdict.detail)}")
    elif verdict.cause is not None:
        cause = (f"**Stated cause:** [{md(verdict.cause[0])}]({verdict.cause[1]}) "
                 f"(*{md(verdict.evidence)}*): {md(verdict.detail)}")
    else:
        cause = (f"**No cause tested:** no changelog entry passes the acceptance rule (an "
                 f"entry that speaks of the op's machinery, and that a bisect, the source of "
                 f"a function that moved or an ablation agrees with); {md(verdict.shows)}")
    if verdict.ablation and verdict.evidence != evidence.ABLATION:
        cause += f". Ablation: {md(verdict.ablation)}"
    lines = [cause + ("" if cause.endswith(".") else "."), ""]
    now = status.status_words(an, f)
    if now:
        lines += [f"**Status per branch** (the newest patch at hand of each minor version, "
                  f"against {md(f.a)}): {md(now)}.", ""]
    return lines


def title_of(op: str, old: str, new: str, found: dict | None) -> str:
    """The issue's title by behaviour: what got slower, by how much, since which release."""
    if found is None:
        return f"# {op}: {old} -> {new}"
    ratio = found["comparison"].ratio
    how = f"{ratio:.2f}x slower" if ratio > 1 else f"{1 / ratio:.2f}x faster"
    return f"# {op} is {how} since {new} (than {old})"


def issue_text(op, suite, old, new, found, repro_name, repro_output, cands) -> str:
    from iomatrix.reporting.markdown import fmt_ratio
    lines = [title_of(op, old, new, found), ""]
    if found is not None:
        lines += cause_and_status(found, op)
    if found is None:
        lines += ["No stored run holds this op under both releases: run "
                  f"`nox -s bisect -- {op} --between {old} {new}` first.", ""]
    else:
        c = found["comparison"]
        direction = "slower" if c.ratio > 1 else "faster"
        lines += [f"`{op}` (iomatrix suite `{suite}`) takes **{c.ratio:.2f} times** the time "
                  f"under {new} that it takes under {old} ({direction}): "
                  f"{fmt_ratio(c)} (new time / old time, 95% interval, {c.n_a} "
                  f"{'rounds, paired' if c.paired else 'processes'}; run "
                  f"`{found['run'].run_id}`).", ""]
        lines += counts_lines(found) + [""]
        manifest = found["manifest"]
        lines += ["## Builds", ""] + release.builds_table(manifest, found["old"], found["new"])
        entries = manifest.get("interpreters", {})
        lines += ["", "Built: " + "; ".join(
            f"{label}: {entries.get(label, {}).get('sys_version', 'unknown')}"
            for label in (found["old"], found["new"])), ""]
        lines += ["## Machine", "", f"{release.machine_line(manifest)}; kernel "
                  f"{platform.release()} (this machine, {platform.machine()}).", ""]
    lines += ["## Reproducer", "", f"`{repro_name}` (beside this file; no dependencies, Python "
              "2.7 and 3.x) makes the benchmark's file and times the op as iomatrix does:", "",
              "```console", f"$ python {repro_name} /path/to/python{old} /path/to/python{new}",
              *(repro_output.strip().splitlines() if repro_output else
                ["(not run here: give --run-repro OLD_PYTHON NEW_PYTHON)"]), "```", "",
              "## Candidate upstream changes", ""] + cands
    return "\n".join(lines) + "\n"


def parser() -> cli.Parser:
    p = cli.Parser(prog="nox -s upstream --",
                   description="A standalone reproducer and an issue text for a finding.")
    p.add_argument("op", metavar="OP")
    p.add_argument("--between", nargs=2, metavar=("OLD", "NEW"), required=True,
                   help="the finding's two releases (3.13.15 3.14.7)")
    p.add_argument("--run-id", type=cli.run_id, default=None,
                   help="the run the finding is read from (default: the newest holding it)")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--out-dir", type=Path, default=None,
                   help="default: reports/upstream/OP-OLD-NEW/ (must not exist)")
    p.add_argument("--run-repro", nargs=2, metavar=("OLD_PYTHON", "NEW_PYTHON"), default=None,
                   help="run the reproducer under these two interpreters and put its output "
                        "into ISSUE.md")
    p.add_argument("--repeat", type=cli.positive_int, default=20,
                   help="calls per process when --run-repro runs it (default: %(default)s)")
    return p


@cli.main_guard
def main(argv, log=None) -> int:
    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    args = parser().parse_args(argv)
    if template_for(args.op) is None:
        raise cli.BadInput(f"no reproducer template for op {args.op!r}; ops with one: "
                           + ", ".join(sorted(TEMPLATES)) + ", " + ", ".join(TEMPLATED_FAMILIES))
    old, new = args.between
    for version in (old, new):
        if not bisect.sources.VERSION_RE.fullmatch(version) or not bisect.known_release(version):
            raise cli.BadInput(f"unknown release {version!r}: give CPython versions such as "
                               "3.13.15 3.14.7")
    if bisect.key(old) >= bisect.key(new):
        raise cli.BadInput(f"OLD {old} is not older than NEW {new}")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", args.op)
    out_dir = args.out_dir or REPORTS_DIR / "upstream" / f"{safe}-{old}-{new}"
    if out_dir.exists():
        raise cli.BadInput(f"{out_dir}: exists; nothing is written over (give --out-dir)")
    store.check_output(out_dir / "ISSUE.md", "--out-dir")
    found = finding(args.results_dir, args.run_id, args.op, old, new)
    suite = next((s for s in ("lutz2009", "chunks", "copies", "mmapio")
                  if args.op.startswith(s) or s == "lutz2009" and args.op[:5] in ("read_", "write")),
                 "?")
    out_dir.mkdir(parents=True)
    repro_name = f"repro_{safe}.py"
    repro_path = out_dir / repro_name
    store.atomic_write_text(repro_path, reproducer(args.op, old, new), overwrite=False)
    log(f"upstream: wrote {repro_path}")
    output = None
    if args.run_repro:
        command = [sys.executable, str(repro_path), *args.run_repro, "--repeat", str(args.repeat)]
        log("upstream: " + " ".join(command))
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        log(output.rstrip())
    cands = bisect.candidate_lines(args.op, suite, old, new, log)
    text = issue_text(args.op, suite, old, new, found, repro_name, output, cands)
    store.atomic_write_text(out_dir / "ISSUE.md", text, overwrite=False)
    log(f"upstream: wrote {out_dir / 'ISSUE.md'}")
    print(text)
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
