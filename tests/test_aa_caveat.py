"""A finding on an op the run's A/A twin flags carries that caveat in its row: the main
page's findings table and data.csv's aa_caveat column (iomatrix.reporting.aa_caveat)."""
from __future__ import annotations

import csv
import io

import report
from test_agree import READ, WRITE, make_run


def report_of(tmp_path, run_id):
    out = tmp_path / "out" / f"{run_id}.md"
    status = report.main(["--results-dir", str(tmp_path / "results"), "--out", str(out),
                          "--no-figures", "--run-id", run_id])
    return status, out


def finding_rows(out, run_id):
    rows = list(csv.DictReader(io.StringIO((out.parent / run_id / "data.csv").read_text())))
    return [row for row in rows if row["statistic"] == "ratio_to_previous_release"
            and row["firmness"]]


def test_a_finding_on_an_op_the_aa_twin_flags_says_so(tmp_path, capsys):
    results = tmp_path / "results"
    # the twin reads 6% slower than its original: flagged on READ, whose 3.12 -> 3.13 step
    # (1.5x) is a finding; WRITE is not flagged
    make_run(results, "A", {("3.13-aa", READ): 1.5 * 1.06, ("3.12", WRITE): 0.7})
    status, out = report_of(tmp_path, "A")
    assert status == 0, capsys.readouterr().err
    page = out.read_text()
    findings = page.split("## Findings")[1].split("\n## ")[0]
    read_row = next(line for line in findings.splitlines() if f"op-{READ.lower()}" in line)
    assert "*A/A flags this op:*<br>`3.13-aa`: 1.06 [" in read_row.replace("\u00a0", " ")
    write_rows = [line for line in findings.splitlines() if f"op-{WRITE.lower()}" in line]
    assert write_rows and not any("A/A flags" in line for line in write_rows)
    rows = {(row["op"], row["against"]): row for row in finding_rows(out, "A")}
    assert rows[(READ, "3.12")]["aa_caveat"].startswith("3.13-aa/3.13 1.059 [")
    assert rows[(WRITE, "3.11")]["aa_caveat"] == ""


def test_no_caveat_where_the_twin_flags_nothing(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "B")
    status, out = report_of(tmp_path, "B")
    assert status == 0, capsys.readouterr().err
    assert "A/A flags this op" not in out.read_text()
    rows = finding_rows(out, "B")
    assert rows and all(row["aa_caveat"] == "" for row in rows)
