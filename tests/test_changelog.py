"""Why: CPython's Misc/NEWS parsed (a trimmed real copy and a damaged one), release ranges
across minors and patch levels, the candidates of known findings, the cache, and a damaged
entry's text escaped on a rendered page."""
from __future__ import annotations

import csv
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
        "3.13.15", "3.13.14", "3.13.12", "3.13.0", "3.13.0a1"]
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
    # Without counts, a bisect or an ablation nothing agrees with the candidate: the acceptance
    # rule (analysing.evidence) names none on the main page; the suite page lists it, escaped.
    assert "### Likely causes" in built.main
    # in the findings table the verdict sits below the step it is about, not in a column
    # of its own (the table then fits GitHub's column)
    main = built.main.replace("\u00a0", " ")
    assert re.search(r"\| step<br>likely change +\|", main)
    # (then its cause's test, none here, and where it stands now: analysing.status)
    assert re.search(r"\| 3\.13[^|]* → 3\.14[^|]*<br>no changelog entry matches"
                     r"<br>\*untested\*(<br>now: [^|]*)? +\|", main)
    assert "[gh-117151](https://github.com/python/cpython/issues/117151)" in \
        "\n".join(built.suites.values())
    suite = "\n".join(built.suites.values())
    assert "## Candidate upstream changes" in suite and "gh-999999" in suite
    for raw in ("<script>", "<img", "| table |", "breaker **bold**"):
        assert raw not in everything, raw
    # No link but the ones built from numbers: every "](" of the entry's text is escaped.
    assert not re.search(r"(?<!\\)\]\((?:javascript|http://evil)", everything)
    assert "&lt;script&gt;" in suite
    rows = [row for row in csv.DictReader(io.StringIO(built.csv))
            if row["statistic"] == "ratio_to_previous_release"]
    # no candidate, cause_evidence "none", the status (analysing.status), no A/A caveat
    # (the run's A/A twin flags nothing)
    assert rows
    assert [rows[0][k] for k in ("candidate", "candidate_release", "cause_evidence", "status",
                                 "aa_caveat", "cause_test")] == \
        ["", "", "none", "3.14 has it", "", "untested"]
    # a step that is only "counts only" says no test
    assert all(row["cause_test"] == "" for row in rows if row["evidence"] == "counts only")


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
    # as docs.python.org shows it: literals and roles of objects as code, :pep: as words
    assert out.startswith("Increase `io.DEFAULT_BUFFER_SIZE` and adjust `open()` by applying "
                          "PEP 687")
    assert "<b>" not in out and "\\[a\\](javascript:b)" in out and out.endswith("…")


def regression_run(results):
    """A run in which read_byBlocks_binaryMode takes twice as long under 3.14.7 as 3.13.0."""
    import test_compare
    op = "read_byBlocks_binaryMode"
    run = test_compare.make_run(results, "R", {
        "3.13": {op: test_compare.processes(0.010)},
        "3.14": {op: test_compare.processes(0.010, 2.0, phase=1)}})
    manifest = json.loads((run.path / "manifest.json").read_text())
    manifest["interpreters"]["3.13"]["version"] = "3.13.0"
    manifest["interpreters"]["3.14"]["version"] = "3.14.7"
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    return run


def test_compare_names_the_likely_change_of_a_regression_when_both_versions_are_known(
        tmp_path, monkeypatch):
    from iomatrix.commands import compare
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    make_tarball(tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz", "3.14.7", TRIMMED)
    results = tmp_path / "results"
    run = regression_run(results)
    text, status = compare.compare(str(run.path / "3.13.json"), str(run.path / "3.14.json"),
                                   results)
    assert status == 1
    assert "likely change" in text
    assert "[gh-117151](https://github.com/python/cpython/issues/117151)" in text


# -- later changes that may undo a step (changelog.later_fixes) ----------------------------

def test_a_later_change_is_found_in_every_branch_after_the_step_and_named_at_its_first():
    log313, log314 = changelog.parse_news(TRIMMED_313), changelog.parse_news(TRIMMED)
    fixes = changelog.later_fixes([log313, log314], "read_byLines_binaryMode", "lutz2009",
                                  "3.12.1")
    first = fixes[0]
    assert first.candidate.entry.number == "gh-144380"
    assert (first.candidate.entry.release, first.candidate.entry.date) == ("3.13.12",
                                                                          "2026-02-03")
    assert first.also == ("3.14.3",)
    # A release that already had it, or a step past it: not later.
    assert "gh-144380" not in [f.candidate.entry.number for f in changelog.later_fixes(
        [log313, log314], "read_byLines_binaryMode", "lutz2009", "3.13.12")]
    # Only entries that speak of speed: the same entry without its speed words is not one.
    plain = changelog.parse_news(TRIMMED_313.replace("Improve performance of", "Change"))
    assert "gh-144380" not in [f.candidate.entry.number for f in changelog.later_fixes(
        [plain], "read_byLines_binaryMode", "lutz2009", "3.12.1")]
    # An op the entry does not touch: no later fix from it.
    assert "gh-144380" not in [f.candidate.entry.number for f in changelog.later_fixes(
        [log313, log314], "copies_copyfile_default", "copies", "3.12.1")]


def test_the_newest_changelog_of_each_branch_is_read(tmp_path):
    for version, news in (("3.13.14", TRIMMED_313), ("3.13.15", TRIMMED_313),
                          ("3.14.7", TRIMMED), ("3.11.7", TRIMMED)):
        make_tarball(tmp_path / f"Python-{version}.tar.xz", version, news)
    logs = changelog.newest_changelogs("3.12.1", tmp_path)
    assert [log.version for log in logs] == ["3.13.15", "3.14.7"]
    assert changelog.newest_changelogs("banana", tmp_path) == []


def later_fix_run(tmp_path, monkeypatch, news_313, linkage=("shared", "shared"), newest=1.2):
    """3.11 -> 3.12 -> 3.13 of read_byLines_binaryMode: slower, then faster again (3.13's
    time ``newest``, 3.12's 1.7), with the changelogs of 3.13.15 (``news_313``) and 3.14.7 in
    the cache and counters files."""
    from iomatrix.storing import countsfile, store
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    make_tarball(tmp_path / "cache" / "tarballs" / "Python-3.13.15.tar.xz", "3.13.15", news_313)
    make_tarball(tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz", "3.14.7", TRIMMED)
    op = "read_byLines_binaryMode"
    versions = {"3.11": "3.11.7", "3.12": "3.12.1", "3.13": "3.13.15"}
    interpreters = {label: {"version": version,
                            "version_info": [int(p) for p in version.split(".")]}
                    for label, version in versions.items()}
    for label, kind in zip(("3.11", "3.12"), linkage):
        if kind:
            interpreters[label]["linkage"] = kind
    run = make_run(tmp_path, {"3.11": {op: processes(0.010, 1.0)},
                              "3.12": {op: processes(0.010, 1.7)},
                              "3.13": {op: processes(0.010, newest)}}, interpreters=interpreters)
    readline = ["_io__Buffered_readline", "Modules/_io/bufferedio.c", 300_000, 8_000]
    functions = {
        "3.11": [["_PyEval_EvalFrameDefault", "Python/ceval.c", 2_000_000, 0],
                 ["_buffered_readline", "Modules/_io/bufferedio.c", 600_000, 8_000]]
        + [[f"helper{i}", "x.c", 1000, 100] for i in range(40)],
        "3.12": [["_PyEval_EvalFrameDefault", "Python/ceval.c", 2_300_000, 0],
                 ["__tls_get_addr", "elf/tls_get_addr.S", 800_000, 74_000],
                 ["_buffered_readline", "Modules/_io/bufferedio.c", 620_000, 8_000], readline]
        + [[f"helper{i}", "x.c", 1000, 100] for i in range(40)],
        "3.13": [["_PyEval_EvalFrameDefault", "Python/ceval.c", 2_300_000, 0], readline],
    }
    for series, kept in functions.items():
        total = sum(entry[2] for entry in kept) + 1_000_000
        (run.path / f"{series}{store.COUNTERS_SUFFIX}").write_text(json.dumps({
            "iomatrix_counters_version": countsfile.FORMAT_VERSION, "series": series,
            "ops": {op: {"suite": "lutz2009", "calls": 1, "bytes_per_call": 1000,
                         "syscalls": {"read": 3}, "instructions": total,
                         "functions": kept}}}))
    return run


def test_a_later_fix_and_the_lineage_step_it_undoes_reach_the_suite_page(tmp_path,
                                                                         monkeypatch):
    run = later_fix_run(tmp_path, monkeypatch, TRIMMED_313)
    page = "\n".join(pages.build_pages(analysis.load_run(run)).suites.values())
    line = next(line for line in page.splitlines() if "later: [gh-144380]" in line)
    assert "(https://github.com/python/cpython/issues/144380) (3.13.12, 2026-02-03; " \
        "also 3.14.3): Improve performance of `io.BufferedReader` line iteration" in line
    assert "the lineage's 3.12 → 3.13 step is 0.71 with it as its top candidate" in line
    assert "found by that rule, not a proof" in page


def test_a_later_entry_with_markup_stays_text(tmp_path, monkeypatch):
    hostile = TRIMMED_313.replace(
        "- gh-144380: Improve performance of :class:`io.BufferedReader` line\n"
        "  iteration by ~49%.",
        "- gh-144380: Improve performance of line iteration <script>alert(1)</script>\n"
        "  [click](javascript:alert(1)) **bold** | table | by ~49%.")
    run = later_fix_run(tmp_path, monkeypatch, hostile)
    page = "\n".join(pages.build_pages(analysis.load_run(run)).suites.values())
    line = next(line for line in page.splitlines() if "later: [gh-144380]" in line)
    for raw in ("<script>", "**bold**", "| table |"):
        assert raw not in line, raw
    assert not re.search(r"(?<!\\)\]\(javascript", line)
    assert "&lt;script&gt;" in line
    # the only link is the one built from the number
    assert re.findall(r"(?<!\\)\]\(([^)]*)\)", line) == [
        "https://github.com/python/cpython/issues/144380"]
