"""The suite page's "Where the instructions went" for a step (issue 35): calls per call on
both sides, the functions entered on one side only in words, the share of the step in
functions only a shared libpython runs with both sides' linkage, and counters files of before
calls were kept (three-element entries) read as calls unknown."""
from __future__ import annotations

import csv
import io
import json
import shutil

import pytest

from iomatrix import callgrind
from iomatrix.analysing import analysis, counts
from iomatrix.reporting import pages
from iomatrix.storing import store
from test_changelog import TRIMMED_313, later_fix_run

OP = "read_byLines_binaryMode"


def section(run) -> list[str]:
    page = "\n".join(pages.build_pages(analysis.load_run(run)).suites.values())
    lines = page.replace("\u00a0", " ").splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.startswith(f"### `{OP}`, 3.11 → 3.12: instructions +"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("#")),
               len(lines))
    return lines[start:end]


def test_calls_per_call_the_path_entered_on_one_side_and_the_shared_share(tmp_path,
                                                                          monkeypatch):
    lines = section(later_fix_run(tmp_path, monkeypatch, TRIMMED_313))
    text = "\n".join(lines)
    assert "3.11 calls per call" in lines[2] and "3.12 calls per call" in lines[2]
    tls = next(line for line in lines if line.startswith("| `__tls_get_addr`"))
    assert "≤ 100" in tls and "74,000" in tls       # at most the 30th most-entered of 3.11
    assert ("Entered under 3.12, under 3.11 at most 100 times a call (none of them is among "
            "3.11's 30 most-entered functions): `__tls_get_addr` (74,000 times a call; own "
            "instructions +800K a call); `_io__Buffered_readline` (8,000 times a call; own "
            "instructions +300K a call): a path 3.11 does not take (or not as often). Their own "
            "instructions in all: +1.1M a call, 77% of the change.") in text
    assert ("Of +1.42M instructions a call, +800K (56%) are `__tls_get_addr`, which only a "
            "shared libpython runs; both sides are shared builds") in text


def test_a_side_without_its_linkage_is_named_and_nothing_guessed(tmp_path, monkeypatch):
    text = "\n".join(section(later_fix_run(tmp_path, monkeypatch, TRIMMED_313,
                                           linkage=(None, "shared"))))
    assert "the run did not record the linkage of `3.11`" in text
    assert "whether they are shared builds is not known" in text
    assert "both sides are shared builds" not in text


def test_old_counters_files_without_calls_read_as_calls_unknown(tmp_path, monkeypatch):
    run = later_fix_run(tmp_path, monkeypatch, TRIMMED_313)
    for series in ("3.11", "3.12"):
        path = run.path / f"{series}{store.COUNTERS_SUFFIX}"
        document = json.loads(path.read_text())
        entry = document["ops"][OP]
        entry["functions"] = [row[:3] for row in entry["functions"]]
        path.write_text(json.dumps(document))
    functions = counts.load_functions(run.path)
    assert not counts.calls_known(functions, OP, "3.11")
    assert counts.entered_one_side(functions, OP, "3.11", "3.12") is None
    rows = counts.where_instructions_went(functions, OP, "3.11", "3.12", entered=3)
    assert rows and all(r["calls_a"] is None and r["calls_b"] is None for r in rows)
    text = "\n".join(section(run))
    assert "Calls per call unknown for `3.11` and `3.12`: their counters files were" in text
    assert "Entered under" not in text and "≤" not in text


def test_one_side_with_calls_and_one_without_says_nothing_of_what_was_not_entered():
    new = [["f", "f.c", 100, 5], ["g", "g.c", 50, 3000]]
    old = [["f", "f.c", 100]]
    assert callgrind.entered_bound(old) is None and callgrind.entered_bound(new) == 0
    assert callgrind.entered_one_side(old, new, 1, 1) == []
    assert callgrind.entered_one_side([["f", "f.c", 100, 5]], new, 1, 1) == [
        {"name": "g", "side": "b", "calls": 3000.0, "bound": 0.0}]


# -- the main page and data.csv carry what the suite page says (issue 35, item 5) ----------

STEP_311_312 = f"- #1 `{OP}`, 3.11 → 3.12: "


def csv_rows(text: str, statistic: str) -> list[dict]:
    return [row for row in csv.DictReader(io.StringIO(text)) if row["statistic"] == statistic]


def test_the_main_page_and_data_csv_carry_the_later_change_and_the_shared_share(tmp_path,
                                                                                 monkeypatch):
    built = pages.build_pages(analysis.load_run(later_fix_run(tmp_path, monkeypatch,
                                                              TRIMMED_313)))
    main = built.main.replace("\u00a0", " ")
    assert "### Later changes and the shared build" in main
    line = next(line for line in main.splitlines() if line.startswith(STEP_311_312))
    # In the suite page's words (a shorter excerpt): its later line, its shared-build sentence.
    suite = "\n".join(built.suites.values()).replace("\u00a0", " ")
    later = next(line for line in suite.splitlines() if "later: [gh-144380]" in line)
    said = "later: [gh-144380](https://github.com/python/cpython/issues/144380) (3.13.12, " \
        "2026-02-03; also 3.14.3): Improve performance of `io.BufferedReader` line iteration by"
    assert said in later and said + " …" in line
    lineage = "(the lineage's 3.12 → 3.13 step is 0.71 with it as its top candidate)"
    assert lineage in later and lineage in line
    shared = ("Of +1.42M instructions a call, +800K (56%) are `__tls_get_addr`, which only a "
              "shared libpython runs; both sides are shared builds")
    assert shared in suite and line.endswith(f"{lineage}. {shared}.")
    # data.csv: the later change, one row per release that lists it, and the share's numbers.
    later_rows = [row for row in csv_rows(built.csv, "later_change") if row["series"] == "3.12"]
    assert [(row["against"], row["value"], row["candidate"], row["candidate_release"])
            for row in later_rows] == [("3.11", "1", "gh-144380", "3.13.12"),
                                       ("3.11", "1", "gh-144380", "3.14.3")]
    numbers = {statistic: [float(row["value"]) for row in csv_rows(built.csv, statistic)
                           if (row["series"], row["against"], row["op"]) == ("3.12", "3.11", OP)]
               for statistic in ("instructions_change_per_call", "shared_only_change_per_call",
                                 "shared_only_share")}
    assert numbers["instructions_change_per_call"] == [1_420_000]
    assert numbers["shared_only_change_per_call"] == [800_000]
    assert numbers["shared_only_share"] == [pytest.approx(800_000 / 1_420_000)]


def test_a_later_entry_no_later_step_undoes_is_not_shown(tmp_path, monkeypatch):
    """3.12 -> 3.13 as slow as 3.12: the changelog's later entry matches the op, but no later
    step of the lineage moves back with it as its top candidate, so no page names it."""
    built = pages.build_pages(analysis.load_run(later_fix_run(tmp_path, monkeypatch,
                                                              TRIMMED_313, newest=1.7)))
    assert "gh-144380" not in built.main
    assert all("later: " not in page for page in built.suites.values())
    assert not csv_rows(built.csv, "later_change")


def test_a_later_entry_with_markup_stays_text_on_the_main_page(tmp_path, monkeypatch):
    hostile = TRIMMED_313.replace(
        "- gh-144380: Improve performance of :class:`io.BufferedReader` line\n"
        "  iteration by ~49%.",
        "- gh-144380: Improve performance of line iteration <script>alert(1)</script>\n"
        "  [click](javascript:alert(1)) **bold** | table | by ~49%.")
    main = pages.build_pages(analysis.load_run(later_fix_run(tmp_path, monkeypatch,
                                                             hostile))).main
    line = next(line for line in main.splitlines() if "later: [gh-144380]" in line)
    for raw in ("<script>", "**bold**", "| table |", "[click](javascript"):
        assert raw not in line, raw


@pytest.mark.parametrize("without", ["changelogs", "counts", "both"])
def test_a_run_without_counts_or_changelogs_gets_no_such_line_and_no_row(tmp_path, monkeypatch,
                                                                         without):
    run = later_fix_run(tmp_path, monkeypatch, TRIMMED_313)
    if without in ("changelogs", "both"):
        shutil.rmtree(tmp_path / "cache" / "tarballs")
    if without in ("counts", "both"):
        for path in run.path.glob(f"*{store.COUNTERS_SUFFIX}"):
            path.unlink()
    built = pages.build_pages(analysis.load_run(run))
    main = built.main.replace("\u00a0", " ")
    line = next((line for line in main.splitlines() if line.startswith(STEP_311_312)), "")
    later = [row for row in csv.DictReader(io.StringIO(built.csv))
             if row["statistic"] == "later_change"]
    shared = [row for row in csv.DictReader(io.StringIO(built.csv))
              if row["statistic"].startswith("shared_only")
              or row["statistic"] == "instructions_change_per_call"]
    assert ("later:" in line) == bool(later) == (without == "counts")
    assert ("only a shared libpython runs" in line) == bool(shared) == (without == "changelogs")
    if without == "both":
        assert "### Later changes and the shared build" not in main


def test_the_main_page_says_the_linkage_of_each_side_or_that_it_is_not_known(tmp_path,
                                                                              monkeypatch):
    for kinds, said in ((("static", "shared"), "`3.11` is static, `3.12` shared."),
                        ((None, "shared"), "the run did not record the linkage of `3.11`")):
        run = later_fix_run(tmp_path / str(kinds[0]), monkeypatch, TRIMMED_313, linkage=kinds)
        main = pages.build_pages(analysis.load_run(run)).main.replace("\u00a0", " ")
        line = next(line for line in main.splitlines() if line.startswith(STEP_311_312))
        assert said in line and "both sides are shared builds" not in line
