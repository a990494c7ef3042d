"""Every string a stored document holds is text on every page (issue 56, family 1).

Not field by field: the manifest's schema (iomatrix.storing.schema.Manifest) is walked and
every free-text field it defines (``Text``, lists and maps of strings, nested models) is
filled with one hostile string, in real runs written the way the hostile probe writes them
(docs/experiments/hostile_probe.py ``make_run``). A field added to the schema later is
covered without a change here. Each run is then reported as a user would: alone (main page,
suite pages, machine and counts pages, data.csv, the terminal), merged with other runs of
other hosts (``--run-id`` twice), and pooled (``--pool``); every page is rendered with
markdown-it as GitHub would (the probe's ``text_problems``: no live tag or handler, no
javascript: or file: link, no injected heading, no control character, no CSV formula).
"""
from __future__ import annotations

import contextlib
import html
import io
import json
import re
import sys
import typing
from pathlib import Path

import pytest

import report
from iomatrix.markup import visible
from iomatrix.storing import schema
from iomatrix.storing.fields import Ours, Text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "experiments"))
import hostile_probe as probe  # noqa: E402 - the probe's own run writer and checks

HOSTILE = {
    "onerror": "<img src=x onerror=alert(1)>",
    "script": "<script>alert(1)</script>",
    "ansi": "\x1b[31mevil\x1b[0m",
    "fence": "x\n```\n# injected\n```",
    "backtick": "a`<img src=x onerror=alert(1)>`b",
    "link": "[click](javascript:alert(1))",
    "formula": '=HYPERLINK("http://evil.example","x")',
    "mathtext": "a$x^$b \\frac{$",
}

# Fields whose value names another series, a file, the run itself (its id) or a kind the
# report acts on: a hostile value there is refused or changes what is read (other
# families), not text to show.
NOT_TEXT = {"aa_of", "allocator_of", "ablation_of", "knob", "file", "results_file", "run_id"}
# Fields that decide what a series is (a CPython release that completed); kept as written
# for the first pass, so that the lineage, its steps and findings are drawn and state the
# other fields, and hostile too in the second.
STRUCTURE = {"implementation", "status"}


def is_text(annotation) -> bool:
    return annotation == Text


def model_of(annotation):
    """The pydantic model an Optional[Model] or Model annotation holds, else None."""
    held = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Union else ()
    for candidate in (annotation, *held):
        if isinstance(candidate, type) and issubclass(candidate, Ours):
            return candidate
    return None


def hostile_fields(model, text: str, keep: set) -> dict:
    """Every free-text field of ``model`` (and of the models it nests) set to ``text``."""
    out: dict = {}
    for name, field in model.model_fields.items():
        if name in NOT_TEXT or name in keep:
            continue
        annotation = field.annotation
        if is_text(annotation):
            out[name] = text
        elif annotation == dict[str, str]:
            out[name] = {text: text}
        elif annotation == list[str] and name not in ("io", "suites", "argv"):
            out[name] = [text]
        elif model_of(annotation) is not None and name not in ("interpreters", "sessions",
                                                                "ops"):
            nested = hostile_fields(model_of(annotation), text, keep)
            if nested:
                out[name] = nested
    return out


def merged(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(base[key], value) if isinstance(value, dict) and isinstance(
            base.get(key), dict) else value
    return out


def hostile_spec(run_id: str, text: str, keep=STRUCTURE, labels=("3.12", "3.13", "3.14")):
    """A run of three releases (3.14 slower: a finding) whose manifest's every free-text
    field is ``text``: its top level, each interpreter entry, its session, its C reference."""
    top = hostile_fields(schema.Manifest, text, keep)
    entry = hostile_fields(schema.InterpreterEntry, text, keep)
    entry.pop("counters", None)
    session = hostile_fields(schema.Session, text, keep)
    session.pop("phase_probe", None)
    for key in ("machine_state_start", "machine_state_end"):
        top.setdefault(key, {})["load_average"] = [0.1, 0.1, 0.1]
    top["order"] = {"method": text, "seed": 1}
    top["native"] = {"status": "failed" if "status" in keep else text, "tool": text,
                     "error_tail": text}
    # the series files' metadata and the counters files: documents of the run as well
    bench_meta = hostile_fields(schema.Metadata, text, keep)
    counted = hostile_fields(schema.Counters, text, keep)
    counted_op = hostile_fields(schema.CountedOp, text, keep)

    def counters(label):
        document = merged(probe.counters_doc(label), counted)
        for entry in document["ops"].values():
            entry.update(counted_op)
        return document
    return probe.RunSpec(run_id=run_id, labels=labels, speed={"3.14": 1.5}, manifest=top,
                         interpreter=entry, session=session, bench_meta=bench_meta,
                         counters=counters)


def write_run(results: Path, spec) -> Path:
    run_dir = probe.make_run(results, spec)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for label in spec.labels:         # the interpreter entries' own fields, as make_run left
        manifest["interpreters"][label] = merged(manifest["interpreters"][label],
                                                 spec.interpreter)
    schema.check("manifest", manifest)   # a document the schema takes, as a hostile user's is
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return run_dir


def run_report(*args) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = report.main([str(a) for a in args])
        except SystemExit as exc:
            status = exc.code
    return status, out.getvalue()


def problems_of(directory: Path, terminal: str) -> list[str]:
    """The probe's verdict on every page, CSV and the terminal output."""
    found = probe.text_problems("terminal", terminal, "terminal")
    for path in sorted(directory.rglob("*")):
        kind = {".md": "md", ".csv": "csv"}.get(path.suffix)
        if kind and path.is_file():
            found += probe.text_problems(str(path.relative_to(directory)),
                                         path.read_text(encoding="utf-8"), kind)
    return found


@pytest.mark.parametrize("keep", [STRUCTURE, set()], ids=["releases", "all-text"])
@pytest.mark.parametrize("name", HOSTILE)
def test_every_manifest_string_is_text_on_every_page(tmp_path, name, keep):
    results, out = tmp_path / "results", tmp_path / "out"
    text = HOSTILE[name]
    write_run(results, hostile_spec(probe.RUN_A, text, keep))
    write_run(results, hostile_spec(probe.RUN_B, text + " b", keep))
    write_run(results, probe.RunSpec(run_id="20260103T000000Z-c", labels=("3.12", "3.13")))
    write_run(results, hostile_spec("20260104T000000Z-p", text, keep))   # one command's
    pages = {
        "one run": ("--run-id", probe.RUN_A, "--out", out / "one" / "o.md"),
        "merged": ("--run-id", probe.RUN_A, "--run-id", probe.RUN_B, "--run-id",
                   "20260103T000000Z-c", "--out", out / "merged" / "m.md"),
        "pooled": ("--run-id", probe.RUN_A, "--pool", "20260104T000000Z-p", "--out",
                   out / "pooled" / "p.md"),
    }
    found = []
    for title, args in pages.items():
        status, terminal = run_report("--results-dir", results, "--no-figures", *args)
        assert status == 0, (title, terminal)
        found += [f"{title}: {p}" for p in problems_of(args[-1].parent, terminal)]
    assert not found, "\n".join(found)
    # not vacuous: every file of the run was read, and the strings are shown as written
    main = (out / "one" / "o.md").read_text(encoding="utf-8")
    assert "Files not read" not in main
    shown = shown_text(main + (out / "one" / "o" / "machine.md").read_text(encoding="utf-8"))
    assert visible(text) in shown
    assert visible(text + " b") in shown_text((out / "merged" / "m.md").read_text("utf-8"))


def shown_text(page: str) -> str:
    """What a reader of the rendered page sees, as text."""
    return html.unescape(re.sub(r"<[^>]+>", "", probe.render_markdown(page))).replace(
        "\u00a0", " ")


@pytest.mark.parametrize("name", ["mathtext", "ansi"])
def test_every_string_is_text_in_the_figures(tmp_path, name):
    """A figure states a series file's category in its legend: matplotlib would read its $
    as mathtext (a bad one stopped the report with a traceback) and draw an ESC as a
    missing glyph, warning with the escape on the terminal."""
    results, out = tmp_path / "results", tmp_path / "out" / "o.md"
    write_run(results, hostile_spec(probe.RUN_A, HOSTILE[name]))
    status, terminal = run_report("--results-dir", results, "--run-id", probe.RUN_A, "--out",
                                  out)
    assert status == 0, terminal
    assert (out.parent / "figures" / probe.RUN_A / "categories.png").is_file()
    assert not problems_of(out.parent, terminal)
