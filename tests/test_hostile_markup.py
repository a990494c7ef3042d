"""Markup stays text: every hostile name and string the probe used, written into a real small
run the way an attacker would, rendered by the report, the compare comment and the preview.

A name (op, suite, label, series file) may be refused by the schema with a message (exit 2)
or rendered escaped; a string that is not a name (host, CPU, ``sampling.stopped_by``, skip
reasons, error tails, syscall names, callgrind function names) must be rendered escaped. In
every case: no live tag, no ``on...`` attribute, no file: or javascript: URL, every table
keeps its column count, no ANSI escape reaches a page or the terminal, and data.csv holds no
formula.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import compare as compare_script
import report
from iomatrix import cli
from iomatrix.analysing import counts
from iomatrix.markup import code, md, visible
from iomatrix.reporting import markdown, preview, suite_pages
from iomatrix.storing import contract
from conftest import write_pyperf_file

READ, WRITE = "read_byLines_textMode", "write_byLines_textMode"

# The probe's hostile strings.
HOSTILE = [
    "x\n```\n# heading\n```",
    "back`tick``s",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "![](file:///etc/passwd)",
    "\x1b[31mred\x1b[0m",
    '=HYPERLINK("http://x")',
    "a|b||c",
    "<!-- open",
    "<iframe src=//x>",
    "rtl\u202eevil\u200b",
]


class Page(HTMLParser):
    """The tags, attributes, tables and text of a rendered page."""

    def __init__(self):
        super().__init__()
        self.tags, self.tables, self.text = [], [], []
        self._cell = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append(0)
        elif tag in ("td", "th") and self.tables:
            self.tables[-1][-1] += 1

    def handle_data(self, data):
        self.text.append(data)


def parse(html_text: str) -> Page:
    page = Page()
    page.feed(html_text)
    page.close()
    return page


def assert_inert(html_text: str, where: str) -> Page:
    """No element or attribute that runs, loads or frames anything."""
    page = parse(html_text)
    for tag, attrs in page.tags:
        assert tag not in ("script", "iframe", "object", "embed", "form", "svg", "math",
                           "style", "link", "meta") or where.endswith("(page shell)"), \
            (where, tag, attrs)
        for name, value in attrs.items():
            assert not name.lower().startswith("on"), (where, tag, attrs)
            if name in ("src", "href") and value:
                assert not re.match(r"(?i)\s*(file|javascript|data|vbscript):", value), \
                    (where, tag, attrs)
                if name == "src":
                    assert not value.startswith(("/", "\\")) and ":" not in value, \
                        (where, tag, attrs)
    for table in page.tables:
        assert len(set(table)) == 1, (where, table)     # every row as many cells as the head
    return page


def body_of(html_text: str) -> str:
    """The rendered article of a preview page (its shell has a <style>, our own)."""
    return html_text.split('<article class="markdown-body">', 1)[-1]


def assert_tables_keep_columns(markdown_text: str, where: str) -> None:
    """Every pipe table of the markdown: each row as many cells as its header."""
    lines = markdown_text.splitlines()
    k = 0
    while k < len(lines):
        if lines[k].startswith("|") and k + 1 < len(lines) and re.match(r"^\|[:\- |]+\|$",
                                                                       lines[k + 1]):
            width = len(markdown.table_cells(lines[k]))
            end = k + 2
            while end < len(lines) and lines[end].startswith("|"):
                assert len(markdown.table_cells(lines[end])) == width, (where, lines[end])
                end += 1
            k = end
        else:
            k += 1


def assert_no_raw_control(text: str, where: str) -> None:
    assert "\x1b" not in text and "\u202e" not in text and "\u200b" not in text, where


# -- the escaping functions themselves -------------------------------------------------------

@pytest.mark.parametrize("name", HOSTILE)
def test_md_and_code_make_one_inert_piece_of_text(name):
    for escaped in (md(name), code(name)):
        assert "\n" not in escaped and "\r" not in escaped and "\x1b" not in escaped
        for context in (f"| {escaped} | 1 |", f"{escaped} and more"):
            text = f"| a | b |\n|---|---|\n{context}\n" if context.startswith("|") else context
            html_text = preview.render_markdown(text)
            page = assert_inert(html_text, name)
            shown = "".join(page.text)
            # what a reader sees is the string itself (line breaks as spaces, controls escaped)
            assert visible(name) in shown, (name, escaped, shown)


def test_code_is_one_span_or_escaped_text():
    assert code("read_byLines_textMode") == "`read_byLines_textMode`"
    assert code("a`b").count("`") == 1 and "\\`" in code("a`b")
    assert md("1. x") == "1\\. x" and md("3.12") == "3.12" and md("# x") == "\\# x"


def test_the_formatters_never_print_inf_nan_or_an_impossible_negative():
    assert markdown.fmt_time(float("inf")) == markdown.fmt_time(float("nan")) == "—"
    assert markdown.fmt_time(-1.0) == "—" and markdown.fmt_time(2e-3) == "2 ms"
    assert markdown.fmt_number(float("-inf")) == "—" and markdown.fmt_number(-0.5) == "-0.50"
    assert markdown.fmt_throughput(2 ** 50, 0.0) == "—"
    assert markdown.fmt_throughput(-5, 1.0) == "—"
    assert markdown.fmt_throughput(1e6, 1.0) == "1"
    assert markdown.fmt_value(-2 ** 50 / 2 ** 20, ".1f") == "—"
    assert markdown.fmt_value(float("inf"), "+.1%", signed=True) == "—"

    class Inf:
        ratio, low, high, significant = float("inf"), 1.0, float("inf"), True
    assert markdown.fmt_ratio(Inf()) == "—"


def test_csv_text_cells_starting_a_formula_are_text_and_numbers_stay_numbers():
    out = io.StringIO()
    writer = suite_pages.TextGuardedWriter(out)
    row = ["R", "=cmd|' /C calc'!A0", '=HYPERLINK("http://x")', "+s", "@c", "time_s", "-a",
           "-0.5", "", "", "", 3, "", "", "", "", ""]
    writer.writerow(row)
    cells = next(csv.reader(io.StringIO(out.getvalue())))
    assert cells[1].startswith("'=") and cells[2].startswith("'=") and cells[3] == "'+s"
    assert cells[4] == "'@c" and cells[6] == "'-a"
    assert cells[7] == "-0.5"           # the value column: a number stays a number


# -- a real run, written by an attacker ----------------------------------------------------------

def hostile_run(results: Path, run_id: str, names: bool) -> Path:
    """A run of two series. With ``names``, the op, suite and label names are hostile;
    always, the manifest's strings, skip reasons, error tails and counts' names are."""
    run_dir = results / run_id
    run_dir.mkdir(parents=True)
    ops = [READ, WRITE] + (HOSTILE if names else [])
    labels = ["3.12", "3.13"] + (["3.13 `<b onclick=x>`|y\n#", "=HYPERLINK(1)"] if names else [])
    suite = "lutz2009\n```\n<script>alert(1)</script>" if names else "lutz2009"
    manifest = {"run_id": run_id, "host": HOSTILE[3] + HOSTILE[6],
                "cpu": HOSTILE[2] + " | " + HOSTILE[4], "cpu_count": 2,
                "os": HOSTILE[0], "profile": "quick", "cache": "warm",
                "suites": ["lutz2009"], "io": ["c"], "started": "2026-01-01T00:00:00+00:00",
                "sessions": [{"pid": 1, "started": "x",
                              "sampling": {"target": 0.015, "stopped_by": HOSTILE[2] + HOSTILE[0],
                                           "loose_ops": {READ: 0.2}}}],
                "interpreters": {}}
    for index, label in enumerate(labels):
        factor = 1.0 + 0.5 * index
        benchmarks = {op: [[0.01 * factor * (1 + 0.001 * i)] * 2 for i in range(8)]
                      for op in ops}
        write_pyperf_file(run_dir / f"{label}.json", benchmarks,
                          {contract.KEY_SUITE: suite} if names else None)
        manifest["interpreters"][label] = {
            "label": label, "implementation": "cpython", "version_info": [3, 12 + index, 0],
            "version": f"3.{12 + index}.0", "status": "partial" if index else "ok",
            "executable": HOSTILE[5], "error_tail": HOSTILE[3] + "\n" + HOSTILE[1],
            "failed_ops": {"chunks_read_64KiB": HOSTILE[4]},
            "skipped_ops": {"mmap_slices": HOSTILE[2] + HOSTILE[8]}}
        counters = {"iomatrix_counters_version": counts.FORMAT_VERSION, "series": label, "calls": 1,
                    "fixtures": "counting", "skipped": {"instructions": HOSTILE[3]},
                    "interpreter": {"label": label, "implementation": "cpython",
                                    "version_info": [3, 12 + index, 0], "free_threaded": False,
                                    "source": "pyenv", "aa_of": None,
                                    "version": f"3.{12 + index}.0", "executable": HOSTILE[5]},
                    "methods": {"syscalls": "strace", "rusage": "getrusage",
                                "instructions": HOSTILE[4]},
                    "ops": {op: {"suite": suite, "calls": 1, "bytes_per_call": 1000,
                                 "instructions": 1000 * (1 + index),
                                 "rusage": {"minflt": 1, "majflt": 0, "nvcsw": 0, "nivcsw": 0},
                                 "syscalls": {"read": 2 + 9 * index,
                                              "<img src=x onerror=alert(2)>": 1 + index,
                                              "\x1b[31mopen": 1}}
                            for op in ops}}
        (run_dir / f"{label}.counters.json").write_text(json.dumps(counters))
    contract.atomic_write_json(str(run_dir / "manifest.json"), manifest)
    return run_dir


def run_tool(module, *args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code_ = module.main([str(a) for a in args])
        except SystemExit as exc:
            code_ = exc.code
    return code_, out.getvalue(), err.getvalue()


def check_pages(directory: Path, where: str) -> str:
    """Every markdown page under ``directory``: inert once rendered, tables whole, no raw
    control characters; returns their rendered text, joined."""
    shown = []
    pages = sorted(directory.rglob("*.md"))
    assert pages, where
    for path in pages:
        text = path.read_text(encoding="utf-8")
        assert_no_raw_control(text, str(path))
        assert_tables_keep_columns(text, str(path))
        page = assert_inert(preview.render_markdown(text), str(path))
        shown.append("".join(page.text))
    return "\n".join(shown)


@pytest.mark.parametrize("names", [False, True], ids=["hostile-strings", "hostile-names"])
def test_a_hostile_run_renders_as_text_or_is_refused(tmp_path, names):
    results = tmp_path / "results"
    hostile_run(results, "H", names)
    out = tmp_path / "reports" / "latest.md"
    status, stdout, stderr = run_tool(report, "--results-dir", results, "--run-id", "H",
                                      "--out", out, "--no-figures")
    assert_no_raw_control(stdout + stderr, "report's terminal output")
    if names and status == 2:         # the schema refused a name: one line that says which
        assert len(stderr.strip().splitlines()) == 1 and "error" in stderr
        return
    assert status == 0, stderr
    shown = check_pages(tmp_path / "reports", "report")
    if names and "No results could be read from this run" in shown:
        # the schema refused the names: every series skipped and named, nothing rendered
        assert "Files not read" in shown
        return
    # strings that are not names are shown, escaped, as written
    for string in (HOSTILE[2] + HOSTILE[0], HOSTILE[3] + HOSTILE[6], HOSTILE[4],
                   HOSTILE[2] + HOSTILE[8]):
        assert visible(string) in shown.replace("\u00a0", " "), string
    assert "<img src=x onerror=alert(2)>" in shown           # a syscall's name, as text
    csv_path = tmp_path / "reports" / "latest" / "data.csv"
    if csv_path.exists():
        for row in csv.reader(csv_path.open(encoding="utf-8")):
            for field, cell in zip(suite_pages.CSV_FIELDS, row):
                if field in suite_pages.TEXT_FIELDS:
                    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row

    # the compare comment between the run's first two series
    comment = tmp_path / "comment.md"
    files = sorted(p for p in (results / "H").glob("*.json")
                   if not p.name.endswith(".counters.json") and p.name != "manifest.json")
    status, stdout, stderr = run_tool(compare_script, files[0], files[-1], "--results-dir",
                                      results, "--out", comment)
    assert_no_raw_control(stdout + stderr, "compare's terminal output")
    assert status in (0, 1), stderr
    text = comment.read_text(encoding="utf-8")
    assert_no_raw_control(text, "comment")
    assert_tables_keep_columns(text, "comment")
    assert_inert(preview.render_markdown(text), "comment")

    # the preview of the run, as HTML files
    preview_dir = tmp_path / "preview"
    status, stdout, stderr = run_tool(preview, "--results-dir", results, "--run-id", "H",
                                      "--out", preview_dir)
    assert status == 0, stderr
    assert_no_raw_control(stdout + stderr, "preview's terminal output")
    for page in sorted(preview_dir.rglob("*.html")):
        assert_inert(body_of(page.read_text(encoding="utf-8")), str(page))


def test_the_preview_loads_nothing_outside_its_pages_and_follows_no_link(tmp_path):
    pages_dir = tmp_path / "reports"
    (pages_dir / "latest").mkdir(parents=True)
    (pages_dir / "figures").mkdir()
    (pages_dir / "figures" / "ok.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    outside = tmp_path / "secret.png"
    outside.write_bytes(b"\x89PNG\r\n\x1a\n")
    (pages_dir / "figures" / "link.png").symlink_to(outside)
    (pages_dir / "latest.md").write_text(
        "# t\n\n![ok](figures/ok.png) ![up](../secret.png) ![abs](" + str(outside) + ") "
        "![link](figures/link.png) ![file](file:///etc/passwd) <img src=figures/ok.png>\n"
        "<details open><summary>s</summary>\n\n<script>alert(1)</script>\n\n</details>\n",
        encoding="utf-8")
    out = tmp_path / "preview"
    status, _, stderr = run_tool(preview, pages_dir / "latest.md", "--out", out,
                                 "--results-dir", tmp_path / "results")
    assert status == 0, stderr
    body = body_of((out / "latest.html").read_text(encoding="utf-8"))
    page = assert_inert(body, "preview")
    images = [attrs["src"] for tag, attrs in page.tags if tag == "img"]
    assert images == ["figures/ok.png"]             # the one image inside the pages' tree
    assert (out / "figures" / "ok.png").exists() and not (out / "secret.png").exists()
    assert [tag for tag, _ in page.tags if tag in ("details", "summary")] == ["details",
                                                                               "summary"]
    assert "<script>alert(1)</script>" in "".join(page.text)

    # a symlinked page, given or beside the main page, is refused before anything is written
    (pages_dir / "latest" / "x.md").symlink_to(Path("/etc/hostname"))
    status, _, stderr = run_tool(preview, pages_dir / "latest.md", "--out", tmp_path / "p2",
                                 "--results-dir", tmp_path / "results")
    assert status == cli.EXIT_BAD_INPUT and "symbolic link" in stderr
    assert not (tmp_path / "p2" / "latest.html").exists()
    (pages_dir / "latest" / "x.md").unlink()
    (tmp_path / "linked.md").symlink_to(pages_dir / "latest.md")
    status, _, stderr = run_tool(preview, tmp_path / "linked.md", "--out", tmp_path / "p3",
                                 "--results-dir", tmp_path / "results")
    assert status == cli.EXIT_BAD_INPUT and "symbolic link" in stderr


def test_terminal_text_strips_control_characters():
    shown = cli.terminal_text("op \x1b[31mred\x1b[0m\nnext\rline \u202e")
    assert "\x1b" not in shown and "\r" not in shown and "\u202e" not in shown
    assert shown.splitlines()[0] == "op \\x1b[31mred\\x1b[0m"
