"""history.py on three small runs: order by start time, ratio to the first run, figure, errors."""
from __future__ import annotations

import history
from conftest import truncated_compressed, without_intervals
from test_compare import READ, WRITE, make_run, processes

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def three_runs(tmp_path):
    """Run ids that sort differently from their start times; READ is 2x slower in the last."""
    results = tmp_path / "results"
    make_run(results, "z-first", {"3.13": {READ: processes(0.010), WRITE: processes(0.100)},
                                  "2.7": {READ: processes(0.005)}},
             started="2026-01-01T00:00:00+00:00")
    make_run(results, "a-second", {"3.13": {READ: processes(0.010, phase=1),
                                            WRITE: processes(0.100, phase=1)}},
             started="2026-02-01T00:00:00+00:00", host="otherhost")
    make_run(results, "m-third", {"3.13": {READ: processes(0.010, 2.0, phase=2),
                                           WRITE: processes(0.100, phase=2)}},
             started="2026-03-01T00:00:00+00:00")
    return results


def test_history_table_in_start_order_with_ratio_to_first(tmp_path, capsys):
    results = three_runs(tmp_path)
    out, figure = tmp_path / "h" / "history.md", tmp_path / "h" / "fig" / "history.png"
    assert history.main(["3.13", "--results-dir", str(results), "--out", str(out),
                         "--figure", str(figure)]) == 0
    text = capsys.readouterr().out
    assert out.read_text() == text
    header = next(line for line in text.splitlines() if line.startswith("| op"))
    assert header.index("#1 2026-01-01") < header.index("#2 2026-02-01") < \
        header.index("#3 2026-03-01")
    assert "otherhost" in header
    read_row = next(line for line in text.splitlines() if line.startswith(f"| `{READ}`"))
    assert "10 ms" in read_row and "20 ms" in read_row
    assert without_intervals(read_row).rstrip("| ").endswith("2.00 ▲")
    write_row = next(line for line in text.splitlines() if line.startswith(f"| `{WRITE}`"))
    assert "▲" not in write_row and "▼" not in write_row
    assert "**1.4" in text.split("**geometric mean**", 1)[1]   # of about 2.00 and 1.00
    runs = text.split("## Runs", 1)[1]
    assert runs.index("`z-first`") < runs.index("`a-second`") < runs.index("`m-third`")
    assert "host (`testhost` → `otherhost`)" in text   # the runs differ: warned
    assert figure.read_bytes().startswith(PNG_MAGIC)
    assert "](fig/history.png)" in text


def test_an_op_missing_in_a_run_is_a_dash(tmp_path, capsys):
    results = three_runs(tmp_path)
    make_run(results, "n-fourth", {"3.13": {WRITE: processes(0.100, phase=4)}},
             started="2026-04-01T00:00:00+00:00")
    assert history.main(["3.13", "--results-dir", str(results)]) == 0
    read_row = next(line for line in capsys.readouterr().out.splitlines()
                    if line.startswith(f"| `{READ}`"))
    assert "—" in read_row and "2.00 ▲" in without_intervals(read_row)   # newest run that has the op


def test_unknown_label_exits_2_listing_the_labels(tmp_path, capsys):
    results = three_runs(tmp_path)
    assert history.main(["3.99", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert "no run" in err and "'3.99'" in err and "labels there: 2.7, 3.13" in err


def test_no_runs_exits_2(tmp_path, capsys):
    assert history.main(["3.13", "--results-dir", str(tmp_path / "empty")]) == 2
    assert "no runs in" in capsys.readouterr().err


def test_an_unreadable_file_is_named_and_its_run_skipped(tmp_path, capsys):
    results = three_runs(tmp_path)
    broken = results / "a-second" / "3.13.json"
    broken.write_text('{"version": "1.0", "benchm')
    assert history.main(["3.13", "--results-dir", str(results)]) == 0
    captured = capsys.readouterr()
    assert str(broken) in captured.err and "perhaps truncated" in captured.err
    assert "Files not read" in captured.out and "#2 2026-03-01" in captured.out
    assert broken.exists()


def test_an_unreadable_compressed_file_is_named_like_a_plain_one(tmp_path, capsys):
    results = three_runs(tmp_path)
    broken, damaged = truncated_compressed(results / "a-second" / "3.13.json")
    assert history.main(["3.13", "--results-dir", str(results)]) == 0
    captured = capsys.readouterr()
    assert str(broken) in captured.err and "perhaps truncated" in captured.err
    assert "Files not read" in captured.out and "#2 2026-03-01" in captured.out
    assert broken.read_bytes() == damaged
