"""Why: CPython's Misc/NEWS parsed (a trimmed real copy and a damaged one), release ranges
across minors and patch levels, the candidates of known findings, the cache, and a damaged
entry's text escaped on a rendered page."""
from __future__ import annotations

import io
import json
import re
import tarfile
from pathlib import Path

import pytest

import changelog as changelog_script
from iomatrix import cli
from iomatrix.analysing import analysis, changelog
from iomatrix.reporting import pages, why
from test_report import make_run, processes

DATA = Path(__file__).parent / "data"
TRIMMED = (DATA / "NEWS-trimmed").read_text()
TRIMMED_313 = (DATA / "NEWS-trimmed-3.13").read_text()
DAMAGED = (DATA / "NEWS-damaged").read_text()


def numbers(found):
    return [c.entry.number for c in found]


def test_a_real_news_parses_into_releases_with_dates_and_numbered_entries():
    log = changelog.parse_news(TRIMMED, "NEWS-trimmed")
    assert [r.version for r in log.releases] == [
        "3.14.3", "3.14.0a6", "3.14.0a1", "3.13.0a1", "3.12.0b1", "3.11.0a6", "3.8.0a3",
        "3.8.0a1", "3.7.0", "3.6.6", "3.6.0a1"]
    assert log.release_date("3.14.0a6") == "2025-03-14"
    assert log.release_date("3.7.0") == "2018-06-27"
    assert log.release_date("3.99.0") is None
    entry = next(e for r in log.releases for e in r.entries if e.number == "gh-117151"
                 and e.release == "3.14.0a6")
    assert entry.url == "https://github.com/python/cpython/issues/117151"
    assert entry.section == "Library" and entry.date == "2025-03-14"
    assert entry.text.startswith("Increase ``io.DEFAULT_BUFFER_SIZE`` from 8k to 128k")
    assert "Patch by Romain Morotti." in entry.text      # continuation lines joined
    old = next(e for r in log.releases for e in r.entries if e.number == "bpo-33671")
    assert old.url == "https://bugs.python.org/issue33671" and old.release == "3.8.0a1"
    assert log.unparsed == []


def test_headings_map_to_versions():
    assert changelog.heading_version("3.14.0 alpha 6") == "3.14.0a6"
    assert changelog.heading_version("3.15.0 release candidate 2") == "3.15.0rc2"
    assert changelog.heading_version("3.13.15 final") == "3.13.15"
    assert changelog.heading_version("3.4.6rc1") == "3.4.6rc1"
    assert changelog.heading_version("banana") is None


def test_releases_between_spans_main_line_and_patch_levels():
    log = changelog.parse_news(TRIMMED)
    assert [r.version for r in changelog.releases_between(log, "3.13.15", "3.14.7")] == [
        "3.14.3", "3.14.0a6", "3.14.0a1"]
    # Across minors: the main line's alphas of every minor in between.
    assert [r.version for r in changelog.releases_between(log, "3.7.16", "3.8.18")] == [
        "3.8.0a3", "3.8.0a1"]
    assert [r.version for r in changelog.releases_between(log, "3.6.0", "3.7.0")] == [
        "3.7.0", "3.6.6"]
    assert changelog.releases_between(log, "3.14.3", "3.14.3") == []
    assert changelog.releases_between(log, "banana", "3.14.3") == []
    log313 = changelog.parse_news(TRIMMED_313)
    # 3.12.1 -> 3.13.15: 3.13's main line and its patch releases, not 3.12.0b1.
    assert [r.version for r in changelog.releases_between(log313, "3.12.1", "3.13.15")] == [
        "3.13.15", "3.13.14", "3.13.0", "3.13.0a1"]
    note = changelog.coverage_note(log, "3.7.16", "3.8.18")
    assert "3.8.0a1 to 3.8.0a3" in note and "only in a 3.8 tarball" in note


@pytest.mark.parametrize("op, old, new, expected, top", [
    ("mmapio_slices_seek_read", "3.13.15", "3.14.7", "gh-117151", 3),
    ("read_byBlocks_binaryMode", "3.13.15", "3.14.7", "gh-117151", 1),
    ("chunks_iterate_lines", "3.13.0", "3.14.7", "gh-144380", 1),
    ("copies_copyfileobj_default", "3.7.16", "3.8.18", "bpo-36103", 1),
    ("copies_copyfileobj_default", "3.7.16", "3.8.18", "bpo-33671", 3),
    ("mmapio_find_mmap", "3.10.13", "3.11.7", "bpo-46848", 1),
    ("read_byLines_binaryMode", "3.11.7", "3.12.1", "gh-101819", 1),
])
def test_known_findings_have_their_change_among_the_top_candidates(op, old, new, expected, top):
    log = changelog.parse_news(TRIMMED)
    found = changelog.candidates(log, op, "", old, new)
    assert expected in numbers(found)[:top], [(c.entry.number, c.score) for c in found]
    assert all(c.matched for c in found)


def test_entries_outside_the_step_or_already_in_the_old_release_are_left_out():
    log = changelog.parse_news(TRIMMED)
    # gh-117151 entered 3.14: not a candidate of a step inside 3.13.
    assert "gh-117151" not in numbers(changelog.candidates(
        log, "mmapio_slices_seek_read", "", "3.13.0", "3.13.15"))
    # An entry also in a section at or before OLD of OLD's branch was a backport OLD had.
    before = changelog.parse_news(TRIMMED.replace("What's New in Python 3.14.0 alpha 6?",
                                                  "What's New in Python 3.13.2 final?"))
    assert "gh-117151" not in numbers(changelog.candidates(
        log, "read_byBlocks_binaryMode", "", "3.13.15", "3.14.7", before=before)) or \
        all(c.entry.release != "3.14.0a6" for c in changelog.candidates(
            log, "read_byBlocks_binaryMode", "", "3.13.15", "3.14.7", before=before))


def test_a_damaged_news_is_counted_and_named_never_raised():
    log = changelog.parse_news(DAMAGED, "damaged")
    assert [r.version for r in log.releases] == ["3.14.0a6", "3.14.0a4"]
    assert log.release_date("3.14.0a4") is None
    text = "\n".join(log.unparsed)
    assert len(log.unparsed) == 5
    assert "without an issue number" in text                    # an entry without a number
    assert "banana split" in text and "gh-888888" in text       # a heading with no version
    assert "someday" in text                                    # a date that is no date
    assert "gh-777777" in text                                  # a number without its colon
    for junk in ("", "\x00\x01", "- gh-1: an entry before any release", "=" * 40,
                 "What's New in Python 3.14.0 alpha 6?\n"):
        changelog.parse_news(junk)                               # never raises


def make_tarball(path: Path, version: str, news: str | None):
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:xz") as archive:
        members = {f"Python-{version}/README.rst": "readme"}
        if news is not None:
            members[f"Python-{version}/Misc/NEWS"] = news
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_the_cache_is_read_from_tarballs_and_the_parsed_news_kept_beside_them(tmp_path,
                                                                             monkeypatch):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path))
    make_tarball(tmp_path / "tarballs" / "python3.14_3.14.7.orig.tar.xz", "3.14.7", TRIMMED)
    make_tarball(tmp_path / "tarballs" / "Python-3.13.15.tar.xz", "3.13.15", None)
    assert changelog.news_of_tarball(tmp_path / "tarballs" / "Python-3.13.15.tar.xz") is None
    said = []
    log = changelog.changelog_for("3.14.7", say=said.append, fetch=False)
    assert log is not None and log.version == "3.14.7"
    cached = json.loads((tmp_path / "tarballs" / "python3.14_3.14.7.orig.tar.xz.news.json")
                        .read_text())
    assert cached["format"] == changelog.FORMAT and len(cached["releases"]) == 11
    assert changelog.changelog_for("3.13.15", say=said.append, fetch=False) is None
    assert any("no readable Misc/NEWS" in s for s in said)
    assert changelog.changelog_for("3.12.1", say=said.append, fetch=False) is None
    assert any("no changelog for 3.12.1" in s for s in said)
    # A later minor's tarball covers an older one's main line; the report uses it.
    assert changelog.covering_changelog("3.8.18").version == "3.14.7"
    assert changelog.covering_changelog("3.15.0rc2") is None
    step = changelog.Why({"a": "3.15.0rc1", "b": "3.15.0rc2"}).of("read_byLines_textMode",
                                                                 "lutz2009", "a", "b")
    assert step.candidates == [] and "nox -s changelog -- 3.15.0rc2" in step.note


def test_the_changelog_command_says_what_it_could_not_have(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path))
    make_tarball(tmp_path / "tarballs" / "Python-3.14.7.tar.xz", "3.14.7", TRIMMED)
    assert changelog_script.main(["3.14.7", "--offline"]) == 0
    assert "11 release sections" in capsys.readouterr().out
    assert changelog_script.main(["3.12.1", "--offline"]) == cli.EXIT_INTERNAL_ERROR
    assert "none could be had for 3.12.1" in capsys.readouterr().err
    assert changelog_script.main(["3.x"]) == 2


def test_candidates_reach_the_pages_escaped(tmp_path, monkeypatch):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    make_tarball(tmp_path / "cache" / "tarballs" / "Python-3.14.0a6.tar.xz", "3.14.0a6",
                 DAMAGED)
    op = "mmapio_slices_seek_read"
    run = make_run(tmp_path, {"3.13": {op: processes(0.010, 1.0)},
                              "3.14": {op: processes(0.010, 4.0)}},
                   interpreters={"3.13": {"version_info": [3, 13, 0], "version": "3.13.0"},
                                 "3.14": {"version_info": [3, 14, 0], "version": "3.14.0a6"}})
    built = pages.build_pages(analysis.load_run(run))
    everything = "\n".join([built.main, built.csv, *built.suites.values()])
    assert "[gh-117151](https://github.com/python/cpython/issues/117151)" in built.main
    assert "### Likely causes" in built.main
    suite = "\n".join(built.suites.values())
    assert "## Candidate upstream changes" in suite and "gh-999999" in suite
    for raw in ("<script>", "<img", "| table |", "breaker **bold**"):
        assert raw not in everything, raw
    # No link but the ones built from numbers: every "](" of the entry's text is escaped.
    assert not re.search(r"(?<!\\)\]\((?:javascript|http://evil)", everything)
    assert "&lt;script&gt;" in suite
    rows = [line for line in built.csv.splitlines() if "ratio_to_previous_release" in line]
    assert rows and rows[0].endswith(",gh-117151,3.14.0a6")


def test_a_step_from_2_names_python_3s_io_stack_and_no_changelog_says_so():
    assert why.top_cell(changelog.StepWhy([], "x", cause=changelog.PY3_CAUSE)) == \
        "[Python 3's io stack (PEP 3116)](https://peps.python.org/pep-3116/)"
    missing = changelog.StepWhy([], changelog.no_changelog_note("3.12.1"))
    assert why.top_cell(missing) == "no changelog"
    lines = why.likely_causes([(4, missing), (6, missing)])
    assert any("rows 4, 6: no changelog at hand for 3.12.1" in line for line in lines)


def test_an_excerpt_is_plain_short_and_escaped():
    text = ("Increase ``io.DEFAULT_BUFFER_SIZE`` and adjust :func:`open` by applying "
            ":pep:`687` <b>x</b> [a](javascript:b) " + "word " * 40)
    out = why.excerpt(text, limit=110)
    assert out.startswith("Increase io.DEFAULT\\_BUFFER\\_SIZE and adjust open() by applying PEP 687")
    assert "<b>" not in out and "\\[a\\](javascript:b)" in out and out.endswith("…")


def test_compare_names_the_likely_change_of_a_regression_when_both_versions_are_known(
        tmp_path, monkeypatch):
    import test_compare
    from iomatrix.commands import compare
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    make_tarball(tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz", "3.14.7", TRIMMED)
    results = tmp_path / "results"
    op = "read_byBlocks_binaryMode"
    run = test_compare.make_run(results, "R", {
        "3.13": {op: test_compare.processes(0.010)},
        "3.14": {op: test_compare.processes(0.010, 2.0, phase=1)}})
    manifest = json.loads((run.path / "manifest.json").read_text())
    manifest["interpreters"]["3.13"]["version"] = "3.13.0"
    manifest["interpreters"]["3.14"]["version"] = "3.14.7"
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    text, status = compare.compare(str(run.path / "3.13.json"), str(run.path / "3.14.json"),
                                   results)
    assert status == 1
    assert "likely change" in text
    assert "[gh-117151](https://github.com/python/cpython/issues/117151)" in text
