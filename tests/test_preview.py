"""The report's pages as GitHub renders them: built from a small real run (pyperf files and
counters files of the stored format, the report's own pipeline), rendered with markdown-it-py
(iomatrix.reporting.preview), and checked against the layout rules: every table fits GitHub's 1012 px
column, no ratio, step or unit can wrap inside a cell, no table of only zeros, every link
lands on an id of its target page, variants after the lineage. Chromium is not needed here;
``nox -s preview -- --screenshot`` measures the real layout."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

import pytest

import report
from iomatrix.analysing import analysis, counts
from iomatrix.reporting import markdown, pages, preview
from iomatrix.storing import store
from test_pages import READ, WRITE, lineage_run

# A conservative width of a character of GitHub's 16 px font, and a cell's padding and border.
CHAR_PX, CELL_PX, COLUMN_PX = 8.5, 27, 1012
LINEAGE = ["3.12", "3.13", "3.14"]
VARIANTS = ["3.13-debian", "3.14t", "3.14-aa", "3.14+pyio", "pypy3.13"]


class Tables(HTMLParser):
    """The tables of a rendered page: rows of cells, each cell's text (``<br>`` as a line
    break) and the ids and links anywhere on the page."""

    def __init__(self):
        super().__init__()
        self.tables, self.ids, self.links = [], set(), []
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append("\n")

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parsed(html_text: str) -> Tables:
    found = Tables()
    found.feed(html_text)
    return found


def write_counters(run: store.Run) -> None:
    """A counters file per series in the stored format: syscalls that change between
    releases, instructions, and minor page faults that are 0 everywhere."""
    for index, label in enumerate(LINEAGE + ["3.13-debian", "3.14t", "3.14-aa"]):
        index = LINEAGE.index("3.14") if label == "3.14-aa" else index   # counted the same
        ops = {op: {"suite": "lutz2009", "calls": 1, "bytes_per_call": 1_000_000,
                    "instructions": 1_000_000 + 50_000 * index,
                    "rusage": {"minflt": 0, "majflt": 0, "nvcsw": 0, "nivcsw": 0},
                    "syscalls": {"read": 2 if label.startswith("3.14") else 10, "openat": 1}}
               for op in (READ, WRITE)}
        document = {"iomatrix_counters_version": counts.FORMAT_VERSION, "series": label,
                    "calls": 1, "fixtures": "counting", "skipped": {},
                    "interpreter": {"label": label, "implementation": "cpython",
                                    "version_info": [3, int(label[2:4]), 0],
                                    "free_threaded": label == "3.14t", "source": "pyenv",
                                    "aa_of": "3.14" if label == "3.14-aa" else None,
                                    "version": f"3.{label[2:4]}.0", "executable": "python3"},
                    "methods": {"syscalls": "strace", "rusage": "getrusage",
                                "instructions": "callgrind"},
                    "ops": ops}
        (run.path / f"{label}{store.COUNTERS_SUFFIX}").write_text(json.dumps(document))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{page path: (markdown, parsed HTML)} of a report written by scripts/report.py."""
    root = tmp_path_factory.mktemp("preview")
    run = lineage_run(root / "results")
    write_counters(run)
    out = root / "reports" / "latest.md"
    assert report.main(["--results-dir", str(root / "results"), "--run-id", run.run_id,
                        "--out", str(out), "--no-figures"]) == 0
    found = {}
    for path in [out, *sorted((root / "reports" / "latest").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(root / "reports").as_posix()
        found[name] = (text, parsed(preview.render_markdown(text)))
    return found


def test_the_report_has_its_pages(rendered):
    assert set(rendered) == {"latest.md", "latest/lutz2009.md", "latest/counts.md",
                             "latest/machine.md"}


def min_width_px(table) -> float:
    """The narrowest a browser can lay the table out: each column as wide as its widest piece
    that cannot wrap (pieces split at ordinary spaces and line breaks; a no-break space
    joins)."""
    columns = max(len(row) for row in table)
    widest = [0] * columns
    for row in table:
        for k, cell in enumerate(row):
            pieces = re.split(r"[ \n]", cell)
            widest[k] = max(widest[k], max(len(p) for p in pieces))
    return sum(chars * CHAR_PX + CELL_PX for chars in widest)


def test_every_table_fits_githubs_column(rendered):
    for name, (_, page) in rendered.items():
        for table in page.tables:
            assert min_width_px(table) <= COLUMN_PX, (name, table[0])


# A number and what belongs to it, with an ordinary space between: where a line can break.
BREAKABLE = [re.compile(p) for p in (
    r"\d \[",                      # 1.32 [1.25, 1.40]
    r", \d",                       # [1.25, 1.40]
    r"[\d\]] [▲▼]",                # 1.40] ▲
    r"\S → |\S →$| → \S",          # 3.13 → 3.14, 91 → 4
    r"\d (?:s|ms|us|ns|MB/s|GiB|MiB|KiB)\b",  # 1.2 ms
)]


def test_no_ratio_step_or_unit_can_wrap_inside_a_cell(rendered):
    for name, (_, page) in rendered.items():
        for table in page.tables:
            for row in table[1:]:
                for cell in row:
                    for line in cell.split("\n"):
                        for pattern in BREAKABLE:
                            assert not pattern.search(line), (name, cell)


NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+(?:%|/\d+)?$")   # 1,234  -5.2%  0.000%  14/14


def test_no_table_of_only_zeros(rendered):
    """A table whose values are all 0 is one line saying so (the minor page faults here)."""
    for name, (text, page) in rendered.items():
        for table in page.tables:
            headers = table[0]
            values = [cell for row in table[1:] for k, cell in enumerate(row)
                      if k > 0 and headers[k] not in markdown.DESCRIBING_COLUMNS
                      and NUMBER.match(cell)]
            # (one 0 among facts, "sessions 0", is a fact, not a table of zeros)
            assert len(values) < 2 or any(float(re.sub(r"[,%]|/.*", "", v)) != 0
                                          for v in values), (name, headers)
    counted = rendered["latest/counts.md"][0]
    assert "0 everywhere" in counted and "### Minor page faults per call" in counted
    assert "### System calls per call" in counted and "| 11 | 11 | 3 |" in counted


def test_every_link_lands_on_an_id_of_its_page(rendered):
    checked = 0
    for name, (_, page) in rendered.items():
        for href in page.links:
            if re.match(r"^[a-z]+:", href):
                continue
            target, _, fragment = href.partition("#")
            if target and not target.endswith(".md"):
                continue        # the CSV and figures: files, not pages
            path = PurePosixPath(name).parent / target if target else PurePosixPath(name)
            resolved = str(PurePosixPath(*[p for p in path.parts if p != "."]))
            resolved = re.sub(r"[^/]+/\.\./", "", resolved)
            assert resolved in rendered, (name, href)
            if fragment:
                assert fragment in rendered[resolved][1].ids, (name, href)
            checked += 1
    assert checked > 5
    main = rendered["latest.md"][0]
    assert f"latest/lutz2009.md#{markdown.row_id(READ)}" in main


def series_in(header: str) -> str | None:
    name = header.replace("(free-threaded)", "").strip()
    return name if name in LINEAGE + VARIANTS else None


def test_variant_columns_come_after_the_lineage(rendered):
    seen_tables = 0
    for name, (_, page) in rendered.items():
        for table in page.tables:
            columns = [series_in(h) for h in table[0]]
            kinds = [s in LINEAGE for s in columns if s]
            if True in kinds and False in kinds:
                seen_tables += 1
                assert kinds == sorted(kinds, reverse=True), (name, table[0])
    assert seen_tables >= 3


def test_labels_show_their_version_where_they_first_appear(rendered):
    main = rendered["latest.md"][0]
    first = main.index("3.14")
    assert main[first:].startswith("3.14 (3.14.0)")


def test_the_main_page_opens_with_the_summary_and_puts_the_rest_behind(rendered):
    main = rendered["latest.md"][0]
    body = main.split("\n", 2)[2].lstrip()
    assert body.startswith("3.14 (3.14.0) made")          # the summary paragraph first
    assert main.index("## Findings") < main.index("## Release steps") < \
        main.index("## More about this run")
    for section in ("### Geometric means", "### A/A check", "### How this run was measured"):
        assert main.index(section) > main.index("<details>")
    assert "## Machine" not in main and "## Machine" in rendered["latest/machine.md"][0]
    machine = rendered["latest/machine.md"][1].tables[0]
    assert machine[0] == ["property", "value"]              # no empty header row
    assert "{" not in rendered["latest/machine.md"][0]       # the profile is not a dict


def test_a_split_series_is_said_in_its_row_only_when_it_splits(tmp_path, monkeypatch):
    """Whether a finding's series splits into modes is read from the finding (its ``modes``,
    issue 26), never a fixed sentence: said in its row and below the table, and nothing at
    all when no finding splits."""
    data = analysis.load_run(lineage_run(tmp_path))
    an = pages.analyse(data, None, 0.05)
    found = an.findings()
    for f in found:
        f.modes = None
    text = "\n".join(pages.section_findings(an, "latest", [], pages.Labeller(data)))
    assert "modes" not in text and "these do not" not in text
    found[0].modes = "3.14: 3 of 6 processes 2.0x slower"
    monkeypatch.setattr(an, "findings", lambda: found)
    text = "\n".join(pages.section_findings(an, "latest", [], pages.Labeller(data)))
    row = next(line for line in text.splitlines() if line.startswith("|") and "| 1 |" in
               line.replace(" ", "").replace("|1|", "| 1 |"))
    assert "splits" in row and "modes" in row
    assert "#1 (3.14: 3 of 6 processes 2.0x slower)" in text


def test_preview_writes_html_outside_results_and_reports(tmp_path, capsys):
    run = lineage_run(tmp_path / "results")
    out = tmp_path / "preview"
    assert preview.main(["--results-dir", str(tmp_path / "results"), "--run-id", run.run_id,
                         "--out", str(out)]) == 0
    html_text = (out / "latest.html").read_text()
    assert "max-width: 1012px" in html_text and "<table" in html_text
    assert 'href="latest/lutz2009.html#op-' in html_text      # links go to the previews
    assert (out / "latest" / "lutz2009.html").is_file()
    assert not list((tmp_path / "results").rglob("*.html"))    # nothing beside the run
    # a page given by path: rendered with the pages beside it
    assert preview.main([str(out / "latest.md"), "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "latest" / "lutz2009.html").is_file()


@pytest.mark.parametrize("argv, message", [
    (["--out", "{results}/x"], "where runs and published reports are kept"),
    (["--run-id", "nope"], "no run nope"),
    (["{results}/T/manifest.json"], "not a markdown file"),
    (["{page}", "--run-id", "T"], "either PAGE.md or --run-id"),
])
def test_bad_input_is_exit_2_with_one_line(tmp_path, capsys, argv, message):
    lineage_run(tmp_path / "results")
    page = tmp_path / "page.md"
    page.write_text("# a page\n")
    argv = [a.format(results=tmp_path / "results", page=page) for a in argv]
    before = sorted(p.name for p in (tmp_path / "results" / "T").iterdir())
    assert preview.main(["--results-dir", str(tmp_path / "results")] + argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert sorted(p.name for p in (tmp_path / "results" / "T").iterdir()) == before


def test_screenshot_without_chromium_is_a_clear_error(tmp_path, capsys, monkeypatch):
    lineage_run(tmp_path / "results")
    monkeypatch.setattr(preview, "CHROMIUM", tmp_path / "no-chromium")
    assert preview.main(["--results-dir", str(tmp_path / "results"), "--out",
                         str(tmp_path / "p"), "--screenshot"]) == 2
    err = capsys.readouterr().err
    assert "needs Debian's chromium" in err and "nothing was written" in err
    assert not (tmp_path / "p").exists()   # the message says so: nothing was written


def test_a_long_op_name_takes_two_lines_not_the_columns_width():
    long_op = "iobench_readmodify_text_utf8_lf_400KiB_4096units"
    cell = pages.op_link(long_op, "latest/iobench.md")
    assert cell.endswith(f"(latest/iobench.md#{markdown.row_id(long_op)})")
    assert markdown.visible_text(cell).replace(" ", "") == long_op
    assert markdown.min_content_chars(cell) <= markdown.OP_LINE
    fixture = pages.op_link("read_byBlocks_binaryMode[large.bin]", "x.md")
    assert "`read_byBlocks`<br>`_binaryMode`<br>`[large.bin]`" in fixture
    assert pages.op_link("read_byLines_textMode", "x.md") == \
        "[`read_byLines_textMode`](x.md#op-read_bylines_textmode)"
    # the main page's allocator table and the counts tables have a column per release:
    # their names take lines of 16 characters
    assert markdown.code_lines("read_allAtOnce_textMode", markdown.NARROW_OP_LINE) == \
        "`read_allAtOnce`<br>`_textMode`"
    assert markdown.code_lines("mmapio_find_mmap", markdown.NARROW_OP_LINE) == "`mmapio_find_mmap`"


def test_a_wide_table_is_described_column_by_column():
    """What --screenshot prints of a table wider than the column: each column's width and its
    widest line, so the one to narrow is plain (the measuring script gives them)."""
    found = preview.Measure(height=1800, column=1012, wrapped=[], first_screen=[], wide=[
        {"table": 0, "heading": "Slower", "width": 1164,
         "columns": [["op", 217, 190.4, "read_byBlocks_textMode"], ["#", 45, 18, "10"]]},
        {"table": 3, "heading": "Older", "width": 1100}])     # measured before the columns
    text = "\n".join(preview.describe(Path("latest.html"), found))
    assert 'table wider than the column: #0 under "Slower" (1164 px)' in text
    assert "column 'op': 217 px, its widest line 'read_byBlocks_textMode' (190 px)" in text
    assert 'table wider than the column: #3 under "Older" (1100 px)' in text
