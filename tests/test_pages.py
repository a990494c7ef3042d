"""The report's pages on small real runs: findings first, lineage and variants, pages that fit,
the CSV beside the main page, and bad input as exit 2."""
from __future__ import annotations

import csv
import io

import pytest

import report
from iomatrix.analysing import analysis
from iomatrix.reporting import markdown, pages, suite_pages
from conftest import all_pages
from test_report import make_run, processes

READ, WRITE = "read_byLines_textMode", "write_byLines_textMode"


def cpython(minor, **extra):
    return {"implementation": "cpython", "version_info": [3, minor, 0],
            "version": f"3.{minor}.0", "source": "pyenv", **extra}


def lineage_run(tmp_path):
    """Three releases, 3.14 slower on READ; a free-threaded, a Debian, a PyPy, a pyio and an
    A/A series, each a variant of one release."""
    series = {
        "3.12": {READ: processes(0.010, 1.0), WRITE: processes(0.100, 1.0)},
        "3.13": {READ: processes(0.010, 1.0), WRITE: processes(0.100, 1.0)},
        "3.14": {READ: processes(0.010, 1.5), WRITE: processes(0.100, 1.0)},
        "3.14t": {READ: processes(0.010, 2.0), WRITE: processes(0.100, 1.0)},
        "3.13-debian": {READ: processes(0.010, 0.8), WRITE: processes(0.100, 1.0)},
        "pypy3.13": {READ: processes(0.010, 0.5), WRITE: processes(0.100, 1.0)},
        "3.14+pyio": {READ: processes(0.010, 6.0)},
        "3.14-aa": {READ: processes(0.010, 1.5), WRITE: processes(0.100, 1.0)},
    }
    interpreters = {
        "3.12": cpython(12), "3.13": cpython(13, configure_args="'--prefix=/a' '--enable-shared'"),
        "3.14": cpython(14), "3.14t": cpython(14, free_threaded=True),
        "3.13-debian": cpython(13, source="debian",
                               configure_args="'--prefix=/usr' '--enable-shared' '--with-lto'"),
        "pypy3.13": {**cpython(13), "implementation": "pypy"},
        "3.14+pyio": cpython(14), "3.14-aa": cpython(14, aa_of="3.14", source="aa"),
    }
    return make_run(tmp_path, series, interpreters=interpreters)


def test_the_lineage_is_the_plain_releases_and_every_other_series_has_its_twin(tmp_path):
    data = analysis.load_run(lineage_run(tmp_path))
    lin = analysis.lineage(data, analysis.ordered_series(data))
    assert lin.releases == ["3.12", "3.13", "3.14"]
    twins = {v.series: (v.kind, v.twin) for v in lin.variants}
    assert twins == {"3.14t": ("free-threaded", "3.14"), "3.13-debian": ("build", "3.13"),
                     "pypy3.13": ("pypy", "3.13"), "3.14+pyio": ("pyio", "3.14"),
                     "3.14-aa": ("aa", "3.14")}


def test_findings_come_first_and_follow_the_lineage(tmp_path):
    built = pages.build_pages(analysis.load_run(lineage_run(tmp_path)))
    main = built.main.replace(markdown.NBSP, " ")
    assert main.index("## Findings") < main.index("## Geometric means")
    findings = main.split("## Findings", 1)[1].split("\n## ", 1)[0]
    assert "3.13 → 3.14" in findings and f"`{READ}`" in findings
    assert "**1.50 ▲<br>[" in findings            # the ratio, its interval below, a regression
    # the op links to its own row on the suite page, which carries that id
    assert f"(latest/lutz2009.md#op-{READ.lower()})" in findings
    assert f'<a id="op-{READ.lower()}"></a>' in built.suites["lutz2009"]
    # both sides' time per call and throughput beside the ratio (1,000,000 bytes a call)
    assert "9.99 → 15 ms<br>100 → 67 MB/s" in findings
    # variants are not steps; the twins' paragraph below the tables checks the findings
    # with the free-threaded twin in place (tests/test_twins.py)
    steps, twins = findings.split("**The twins.**")
    assert "3.14t" not in steps and "pypy" not in findings
    assert "findings on a step with `3.14` hold in the free-threaded build" in twins
    assert "Build flags only `3.13-debian` has: `--with-lto`" in main
    assert "### `3.14t` against `3.14`" in main and "### `pypy3.13` against `3.13`" in main
    assert "## A/A check: `3.14` against itself" in main
    assert "nan" not in all_pages(analysis.load_run(lineage_run(tmp_path / "again")))
    assert set(built.suites) == {"lutz2009"}


def test_a_main_page_shown_without_its_pages_links_none_of_them(tmp_path):
    """A merged report writes each run's main page alone: an op names its row, the variants
    and the suite pages are not links to pages it does not write (latest/ is another run's)."""
    data = analysis.load_run(lineage_run(tmp_path))
    alone = pages.build_report(data).replace(markdown.NBSP, " ")
    assert "3.13 → 3.14" in alone and f"`{READ}`" in alone
    assert "](latest/" not in alone and ".md)" not in alone and "(latest/)" not in alone
    assert "## Suite pages" not in alone
    with_pages = pages.build_pages(data).main
    assert f"(latest/lutz2009.md#op-{READ.lower()})" in with_pages
    assert "## Suite pages" in with_pages


def test_the_csv_is_tidy_with_interval_bounds(tmp_path):
    data = analysis.load_run(lineage_run(tmp_path))
    built = pages.build_pages(data)
    rows = list(csv.DictReader(io.StringIO(built.csv)))
    assert set(rows[0]) == set(suite_pages.CSV_FIELDS)
    step = next(r for r in rows if r["statistic"] == "ratio_to_previous_release"
                and r["series"] == "3.14" and r["op"] == READ)
    assert step["against"] == "3.13"
    assert float(step["low"]) <= float(step["value"]) <= float(step["high"])
    assert step["significant"] == "true"
    assert {r["statistic"] for r in rows} >= {"time_s", "ratio_to_oldest", "ratio_to_twin"}
    # the classes of a release step (tests/test_findings.py checks them on a lockstep run);
    # this run is not paired, so no firmness; rows that are no release step leave them blank
    assert step["evidence"] == step["firmness"] == step["resampled_low"] == ""
    # (a finding's control rows carry the control's verdict as its evidence: test_controls.py)
    assert all(r["firmness"] == r["evidence"] == "" for r in rows
               if r["statistic"] not in ("ratio_to_previous_release", "control_share",
                                         "without_control_ratio"))


def test_a_run_of_variants_only_says_it_has_no_lineage(tmp_path):
    run = make_run(tmp_path, {"3.14": {READ: processes(0.010, 1.0)},
                              "3.14t": {READ: processes(0.010, 1.2)}},
                   interpreters={"3.14": cpython(14), "3.14t": cpython(14, free_threaded=True)})
    text = all_pages(analysis.load_run(run))
    assert "This run has no release lineage" in text
    assert "### `3.14t` against `3.14`" in text
    assert "nan" not in text and "## Release steps" not in text


def test_too_few_processes_say_so_instead_of_an_interval(tmp_path):
    run = make_run(tmp_path, {"3.12": {READ: processes(0.010, 1.0, n=2)},
                              "3.13": {READ: processes(0.010, 2.0, n=2)}},
                   interpreters={"3.12": cpython(12), "3.13": cpython(13)})
    data = analysis.load_run(run)
    assert "too few worker processes for an interval" in pages.build_report(data)
    assert "2.00 [n/a]" in all_pages(data)


def test_pages_and_csv_are_written_next_to_the_main_page_only(tmp_path, capsys):
    lineage_run(tmp_path / "results")
    out = tmp_path / "reports" / "page.md"
    assert report.main(["--results-dir", str(tmp_path / "results"), "--run-id", "T",
                        "--out", str(out), "--no-figures"]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                     if p.is_file() and "results" not in p.parts)
    # the pages, and the marker that makes the directory the report's own (storing/outputs.py)
    assert written == ["reports/page.md", "reports/page/.iomatrix-output",
                       "reports/page/data.csv", "reports/page/lutz2009.md",
                       "reports/page/machine.md"]
    assert "(page/lutz2009.md)" in out.read_text() and "(page/machine.md)" in out.read_text()
    assert "(../page.md)" in (tmp_path / "reports" / "page" / "machine.md").read_text()
    assert "(../page.md)" in (tmp_path / "reports" / "page" / "lutz2009.md").read_text()


@pytest.mark.parametrize("argv, message", [
    (["--threshold", "-0.1"], "a threshold is a fraction above 0"),
    (["--threshold", "lots"], "is not a number"),
    (["--baseline", "9.9"], "unknown baseline '9.9'; valid: 3.12, 3.13"),
    (["--run-id", "../x"], "run id '../x'"),
])
def test_bad_input_is_exit_2_with_a_clear_message(tmp_path, capsys, argv, message):
    lineage_run(tmp_path / "results")
    argv = ["--results-dir", str(tmp_path / "results"), "--out", str(tmp_path / "r.md"),
            "--no-figures"] + argv
    try:
        status = report.main(argv)
    except SystemExit as exc:     # argparse's own errors
        status = exc.code
    assert status == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.md").exists()      # nothing written


def test_the_main_page_of_a_wide_run_keeps_its_tables_narrow(tmp_path):
    many = {f"3.{minor}": {READ: processes(0.010, 1 + minor / 100)} for minor in range(4, 16)}
    run = make_run(tmp_path, many,
                   interpreters={f"3.{m}": cpython(m) for m in range(4, 16)})
    built = pages.build_pages(analysis.load_run(run))
    for text in [built.main, *built.suites.values()]:
        for line in text.splitlines():
            if line.startswith("|"):
                assert line.count("|") - 1 <= markdown.MAX_COLUMNS + 3, line


def test_an_older_run_without_rounds_or_interpreter_metadata_stays_readable(tmp_path):
    """Files without iomatrix_round and a manifest without interpreters: every process is
    kept, versions come from the labels, and the lineage still forms."""
    import json
    run = make_run(tmp_path, {"3.9": {READ: processes(0.010, 1.0)},
                              "3.10": {READ: processes(0.010, 2.0)}})
    for name in ("3.9.json", "3.10.json"):
        path = run.path / name
        document = json.loads(path.read_text())
        for bench in document["benchmarks"]:
            for one in bench["runs"]:
                one["metadata"].pop("iomatrix_round", None)
        path.write_text(json.dumps(document))
    manifest = json.loads((run.path / "manifest.json").read_text())
    del manifest["interpreters"]
    (run.path / "manifest.json").write_text(json.dumps(manifest))
    data = analysis.load_run(run)
    means = analysis.process_means(data.frame)
    assert len(means[("3.9", READ)]) == 6                 # no process lost
    assert analysis.lineage(data, analysis.ordered_series(data)).releases == ["3.9", "3.10"]
    main = pages.build_report(data).replace(markdown.NBSP, " ")
    assert "3.9 → 3.10" in main and "**2.00 ▲<br>[1.99, 2.01]**" in main and "nan" not in main


def test_the_summary_says_the_findings_in_words_and_report_prints_it(tmp_path, capsys):
    """The main page opens with the findings grouped by step and kind of op, with the range
    of their ratios and each label's exact version where it first appears; the report
    command prints the same paragraph last."""
    lineage_run(tmp_path / "results")
    out = tmp_path / "reports" / "page.md"
    assert report.main(["--results-dir", str(tmp_path / "results"), "--run-id", "T",
                        "--out", str(out), "--no-figures"]) == 0
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert printed.startswith("In words: 3.14 (3.14.0) made text line-by-line reads 50% "
                              "slower than 3.13 (3.13.0)")
    summary = printed.removeprefix("In words: ")
    assert "In all, 1 " in summary and "change beyond 5% (1 slower, 0 faster)" in summary
    assert out.read_text().split("\n", 3)[3].startswith(summary)


def test_summary_ranges_and_counts_in_words():
    assert pages.magnitude([0.31, 0.32, 0.40]) == "2.5 to 3.2 times faster"
    assert pages.magnitude([1.24, 1.73]) == "24 to 73% slower"
    assert pages.magnitude([1.24]) == "24% slower"
    assert pages.magnitude([0.9, 0.48]) == "1.1 to 2.1 times faster"
    assert pages.kind_phrase("byBlocks:binary", ["a", "b"], {"read", "write"}, {"binary"}) == \
        "binary block reads and writes"
    assert pages.kind_phrase("category:mmap", ["mmapio_slices_seek_read"], {None}, {None}) == \
        "mmapio_slices_seek_read"
    counted = {(s, op, "syscalls"): n for s, n in (("3.13", 97), ("3.14", 9)) for op in "ab"}
    counted.update({(s, op, "instructions"): n for s, n in (("3.13", 1e6), ("3.14", 0.5e6))
                    for op in "ab"})
    assert pages.counts_phrase(counted, ["a", "b"], "3.13", "3.14", slower=False) == \
        "with 11 times fewer system calls"
    assert pages.counts_phrase({}, ["a"], "3.13", "3.14", slower=False) == ""


def test_the_main_page_shows_the_heatmap_of_release_steps(tmp_path):
    data = analysis.load_run(lineage_run(tmp_path / "results"))
    built = pages.build_pages(data, figures_dir=tmp_path / "figures", figures_link="figures")
    assert (tmp_path / "figures" / "steps.png").stat().st_size > 1000
    main = built.main
    assert main.index("## Release steps") < main.index("## Heatmap") < \
        main.index("](figures/steps.png)") < main.index("## More about this run")
    # the suite page's heatmap comes before its tables
    suite = built.suites["lutz2009"]
    assert suite.index("## Heatmap") < suite.index("## Release steps")
