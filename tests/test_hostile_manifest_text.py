"""Every string a stored document holds is text on every page (issue 56, family 1).

Not field by field: the schemas of a run's documents (iomatrix.storing.schema: the manifest,
a series file's metadata, a counters file) are walked and every free-text field they define
(``Text``, lists and maps of strings, nested models) is filled with one hostile string, in
real runs written the way the hostile probe writes them (docs/experiments/hostile_probe.py
``make_run``; the walk is its family manifest-text's, hostile_cases_manifest_text.py). A field added to the schema later is
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
from pathlib import Path

import pytest

import report
from iomatrix.markup import visible
from iomatrix.storing import schema

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs" / "experiments"))
import hostile_probe as probe  # noqa: E402 - the probe's own run writer and checks
import hostile_cases_manifest_text as cases  # noqa: E402 - its fields of every document

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

def hostile_spec(run_id: str, text: str, keep=cases.STRUCTURE):
    """Three releases (3.14 slower: a finding) whose every free-text string is ``text``
    (the probe's family manifest-text: the schema walked, every stored document filled)."""
    return cases.hostile_spec(probe, run_id, text, keep)


def write_run(results: Path, spec) -> Path:
    run_dir = probe.make_run(results, spec)
    # a document the schema takes, as a hostile user's is: none of it is refused
    schema.check("manifest", json.loads((run_dir / "manifest.json").read_text()))
    for label in spec.labels:
        schema.check("counters", json.loads((run_dir / f"{label}.counters.json").read_text()))
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


@pytest.mark.parametrize("keep", [cases.STRUCTURE, set()], ids=["releases", "all-text"])
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
