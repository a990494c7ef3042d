"""Issue 56's families 1 and 3 for the hostile probe (hostile_probe.py loads this module).

manifest-text: every free-text string of a stored run (the manifest's, a series file's
metadata, a counters file's) is text on every page: the main page, the merged report of
several hosts (``--run-id`` twice), the pooled report, the suite, machine and counts pages,
data.csv and the terminal. The fields are not listed by hand: the schema
(iomatrix.storing.schema) is walked and each free-text field it defines gets the string.

missing-data: a series the manifest lists as measured (status ok) whose data file is gone
(deleted, truncated, stored twice with other results) is named with its file and why in
the answer on the first screen, and the release step that now stands over it says so; a
run with one gone is left out of a pool, refused by agree, by name.
"""
from __future__ import annotations

import gzip
import typing

RUN_C, RUN_P = "20260103T000000Z-c", "20260104T000000Z-p"
LABELS = ("3.12", "3.13", "3.14")
# Fields whose value names another series, a file, the run itself (its id) or a kind the
# report acts on: a hostile value there changes what is read (other families' cases), it
# is not text to show.
NOT_TEXT = {"aa_of", "allocator_of", "ablation_of", "knob", "file", "results_file", "run_id"}
# Lists of names the run is made of (its suites, io stacks, the command line).
NAME_LISTS = {"io", "suites", "argv"}
# Parts built apart (hostile_spec): each interpreter entry, the session, a counters file's ops.
APART = {"interpreters", "sessions", "ops", "phase_probe"}
# Fields that decide what a series is (a CPython release that was measured): kept as written
# by default, so that the lineage, its steps and findings are drawn and state the other
# fields (a case may make them hostile too).
STRUCTURE = {"implementation", "status"}


def schema():
    from iomatrix.storing import fields, schema as module   # scripts/ on the path: cases()
    return module, fields


def text_fields(model, text: str, keep=STRUCTURE) -> dict:
    """Every free-text field of ``model`` and the models it nests (a string, a list or map
    of strings) set to ``text``, but those in ``keep``."""
    _, fields = schema()
    out: dict = {}
    for name, field in model.model_fields.items():
        if name in NOT_TEXT | APART | set(keep):
            continue
        annotation = field.annotation
        held = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Union \
            else ()
        nested = next((c for c in (annotation, *held) if isinstance(c, type)
                       and issubclass(c, fields.Ours)), None)
        if annotation == fields.Text:
            out[name] = text
        elif annotation == dict[str, str]:
            out[name] = {text: text}
        elif annotation == list[str] and name not in NAME_LISTS:
            out[name] = [text]
        elif nested is not None and text_fields(nested, text, keep):
            out[name] = text_fields(nested, text, keep)
    return out


def hostile_spec(probe, run_id: str, text: str, keep=STRUCTURE):
    """Three releases (3.14 slower: a finding) whose every free-text string is ``text``: the
    manifest's top level, each interpreter entry, the session and the C reference's entry,
    the series files' metadata, the counters files and each of their ops."""
    module, _ = schema()
    top = text_fields(module.Manifest, text, keep)
    for key in ("machine_state_start", "machine_state_end"):
        top.setdefault(key, {})["load_average"] = [0.1, 0.1, 0.1]
    top["order"] = {"method": text, "seed": 1}
    # the C reference stated, though not measured (a measured one would need its file)
    top["native"] = {**text_fields(module.NativeEntry, text, keep),
                     "status": "failed" if "status" in keep else text}
    entry = text_fields(module.InterpreterEntry, text, keep)
    entry.pop("counters", None)
    counted = text_fields(module.Counters, text, keep)
    counted_op = text_fields(module.CountedOp, text, keep)

    def counters(label):
        document = probe.counters_doc(label)
        document.update({k: v for k, v in counted.items() if k != "interpreter"})
        document["interpreter"].update(counted.get("interpreter", {}))
        for op in document["ops"].values():
            op.update(counted_op)
        return document
    return probe.RunSpec(run_id=run_id, labels=LABELS, speed={"3.14": 1.5}, manifest=top,
                         interpreter=entry, session=text_fields(module.Session, text, keep),
                         bench_meta=text_fields(module.Metadata, text, keep),
                         counters=counters)


def merged_argv(probe, *run_ids):
    return [probe.script("report"), "--results-dir", "results",
            *[a for run_id in run_ids for a in ("--run-id", run_id)], "--out", "out/m.md",
            "--no-figures"]


def manifest_text_cases(probe) -> list:
    out = []
    add = out.append
    family = "manifest-text"
    for short, text in probe.MARKUP:
        # the case: the file system and cache of one run, merged with a plain one
        def conditions(tmp, text=text):
            probe.make_run(tmp / "results", probe.RunSpec(manifest={
                "fixture_filesystem": {"type": text, "mount": text}, "cache": text}))
            probe.make_run(tmp / "results", probe.RunSpec(run_id=probe.RUN_B))
            return merged_argv(probe, probe.RUN_A, probe.RUN_B), {}
        add(probe.Case(family, f"merged report: file system and cache: {short}", conditions,
                       probe.clean(codes=(0,), check=says("out/m.md", "differ in"))))

        # every free-text field of three stored documents, on every page of each report
        def every_field(tmp, text=text):
            probe.make_run(tmp / "results", hostile_spec(probe, probe.RUN_A, text))
            probe.make_run(tmp / "results", hostile_spec(probe, probe.RUN_B, text + " b"))
            probe.make_run(tmp / "results", probe.RunSpec(run_id=RUN_C))
            return merged_argv(probe, probe.RUN_A, probe.RUN_B, RUN_C), {}
        add(probe.Case(family, f"merged report: every free-text field: {short}", every_field,
                       probe.clean(codes=(0,), check=read_whole("out/m.md"))))
        add(probe.Case(family, f"report: every free-text field: {short}",
                       probe.with_run(lambda tmp: probe.report_argv(),
                                      lambda text=text: hostile_spec(probe, probe.RUN_A, text)),
                       probe.clean(codes=(0,), check=read_whole("out/o.md"))))

        def pooled(tmp, text=text):
            probe.make_run(tmp / "results", hostile_spec(probe, probe.RUN_A, text))
            probe.make_run(tmp / "results", hostile_spec(probe, RUN_P, text))
            return probe.report_argv()[:-1] + ["--no-figures", "--pool", RUN_P], {}
        add(probe.Case(family, f"pooled report: every free-text field: {short}", pooled,
                       probe.clean(codes=(0,), check=read_whole("out/o.md"))))
    # a figure states a series file's category in its legend: text there too (matplotlib
    # reads a $ as mathtext, and a bad one stopped the report)
    for short, text in (("mathtext", "a$x^$b \\frac{$"), ("ansi", probe.MARKUP[6][1])):
        add(probe.Case(family, f"report with figures: a category of {short}",
                       probe.with_run(lambda tmp: probe.report_argv()[:-1],
                                      lambda text=text: probe.RunSpec(
                                          labels=LABELS, bench_meta={"iomatrix_category": text})),
                       probe.clean(codes=(0,), check=drawn(
                           f"out/figures/{probe.RUN_A}/categories.png"))))
    return out


def drawn(rel: str):
    return lambda r: None if (r.tmp / rel).is_file() else f"no {rel} drawn"


def says(rel: str, *words):
    def check(r):
        text = (r.tmp / rel).read_text(encoding="utf-8") if (r.tmp / rel).exists() else ""
        missing = [w for w in words if w not in text]
        return f"{rel} does not say {missing}" if r.rc == 0 and missing else None
    return check


def read_whole(rel: str):
    """Every file of the hostile run was read (else the case proves nothing)."""
    def check(r):
        text = (r.tmp / rel).read_text(encoding="utf-8") if (r.tmp / rel).exists() else ""
        return f"{rel} left files out" if "Files not read" in text else None
    return check


# -- family 3: a series' data file gone while the manifest says it was measured ------------

def damaged(probe, how, run_id=None):
    """A setup step: run A's (or ``run_id``'s) 3.13.json damaged ``how``."""
    def harm(tmp):
        path = tmp / "results" / (run_id or probe.RUN_A) / "3.13.json"
        if how == "deleted":
            path.unlink()
        elif how == "truncated":
            path.write_text(path.read_text()[:200])
        elif how == "stored twice":
            path.with_name(path.name + ".gz").write_bytes(gzip.compress(
                path.read_text().replace("0.01", "0.02").encode()))
        elif how == "compressed, then deleted":
            path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
            path.unlink()
            path.with_name(path.name + ".gz").unlink()
    return harm


def names_it(rel: str = "out/o.md", run_section: str | None = None):
    """The answer (the page's first paragraph, or the run's own in a merged report) names
    3.13, its file, and the step that stands over it."""
    def check(r):
        text = (r.tmp / rel).read_text(encoding="utf-8")
        if run_section:
            text = text.split(f"# iomatrix report: run {run_section}", 1)[-1]
        answer = text.split("\n\n")[1] if not run_section else text
        wanted = ("Left out: 3.13 (3.13.json", "stands over 3.13")
        missing = [w for w in wanted if w not in answer]
        if missing:
            return f"the answer does not say {missing}: {answer[:200]!r}"
        if "In words:" in r.stdout and "Left out: 3.13" not in r.stdout.split("In words:")[1]:
            return "the terminal's In words does not say 3.13 is left out"
        return None
    return check


def three(probe, run_id=None):
    return lambda: probe.RunSpec(run_id=run_id or probe.RUN_A, labels=LABELS,
                                 speed={"3.14": 3.7})


def missing_data_cases(probe) -> list:
    out = []
    add = out.append
    family = "missing-data"
    for how in ("deleted", "truncated", "stored twice", "compressed, then deleted"):
        add(probe.Case(family, f"report: 3.13.json {how}, its manifest says ok",
                       probe.with_run(lambda tmp: probe.report_argv(), three(probe),
                                      also=damaged(probe, how)),
                       probe.clean(codes=(0,), check=names_it())))

    def two_runs(tmp):
        probe.make_run(tmp / "results", three(probe, probe.RUN_B)())
    add(probe.Case(family, "merged report: one run's 3.13.json deleted",
                   probe.with_run(lambda tmp: merged_argv(probe, probe.RUN_A, probe.RUN_B),
                                  three(probe), also=lambda tmp: (two_runs(tmp), damaged(
                                      probe, "deleted")(tmp))),
                   probe.clean(codes=(0,), check=names_it("out/m.md", probe.RUN_A))))
    add(probe.Case(family, "report: every series file deleted",
                   probe.with_run(lambda tmp: probe.report_argv(), three(probe),
                                  also=lambda tmp: [(tmp / "results" / probe.RUN_A
                                                     / f"{label}.json").unlink()
                                                    for label in LABELS]),
                   probe.clean(codes=(0,), check=says("out/o.md", "`3.12.json`: missing",
                                                      "`3.14.json`: missing"))))
    # a pool or agreement over a run with a release gone: left out, by name (nothing else
    # to pool or compare with: refused)
    add(probe.Case(family, "report --pool: the other run's 3.13.json deleted",
                   probe.with_run(lambda tmp: probe.report_argv() + ["--pool", probe.RUN_B],
                                  three(probe), also=lambda tmp: (two_runs(tmp), damaged(
                                      probe, "deleted", probe.RUN_B)(tmp))),
                   probe.Expect("REFUSED", check=lambda r: None if "3.13.json" in r.stderr
                                else "the pool does not name 3.13.json")))
    add(probe.Case(family, "agree: one run's 3.13.json deleted",
                   probe.with_run(lambda tmp: [probe.script("agree"), probe.RUN_A, probe.RUN_B,
                                               "--results-dir", "results"], three(probe),
                                  also=lambda tmp: (two_runs(tmp), damaged(
                                      probe, "deleted", probe.RUN_B)(tmp))),
                   probe.Expect("REFUSED", check=lambda r: None if "3.13.json" in r.stderr
                                else "agree does not name 3.13.json")))
    return out


def cases(probe) -> list:
    probe.contract()          # puts scripts/ on the path, for the schema
    return manifest_text_cases(probe) + missing_data_cases(probe)
