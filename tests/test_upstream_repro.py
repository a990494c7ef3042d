"""The upstream text carries all of it (issue 43, item 6): every op family of the core
selection has a reproducer template of about 20 lines (fixture inline, the I/O call timed
with timeit against its control, time and bytes per call, its result checked), each compiles
under 2.7 and 3.12 and runs for real on a tiny fixture; the issue text quotes the A/A twin's
verdict, names the known fixes, and says in one line when an op has no template."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from iomatrix.commands import issue_parts, reproducer, upstream
from iomatrix.measuring import selection
from conftest import need
from test_agree import READ, make_run

QUIET = dict(log=lambda *a: None)
# upstream names the candidates of its NEW release's changelog: none is downloaded here
# (conftest.no_changelog_download)
pytestmark = pytest.mark.usefixtures("no_changelog_download")
CORE_OPS = [op for ops in selection.core_ops().values() for op in ops]
# One op of each family beyond the core ones, so that every family's template is run too.
MORE_OPS = ["chunks_read_4KiB", "iobench_seek_binary_400KiB_1000units",
            "iobench_readmodify_binary_400KiB_20units", "textio_read_lines_utf8",
            "textio_write_lines_utf8"]
# A tiny fixture per run (--size): bytes, or files for manyfiles.
TINY = {"manyfiles": 4}


def tiny_size(op: str) -> str:
    return str(TINY.get(op.split("_")[0], 64 * 1024))


def test_every_core_op_family_has_a_template_of_about_20_lines():
    assert len(CORE_OPS) >= 20 and any(op.startswith("iobench_") for op in CORE_OPS)
    for op in CORE_OPS + MORE_OPS:
        template = reproducer.template_for(op)
        assert template is not None, op
        # About 20 lines: at most MAX_OP_LINES (32) non-blank lines of fixture, op, control
        # and check; the inline generators (a few lines each) and the shared driver aside.
        assert reproducer.op_lines(template) <= reproducer.MAX_OP_LINES == 32, op
        # The fixture's size and content are stated in the script.
        assert reproducer.fixture_words(template).startswith("SIZE = "), op
    families = {reproducer.family_of(op) for op in CORE_OPS}
    assert len(families) >= 10 and None not in families


def test_every_reproducer_compiles_under_2_7_and_3_12(machine_interpreters):
    pythons = [need(machine_interpreters, "2.7").executable,
               need(machine_interpreters, "3.12").executable]
    for op in CORE_OPS + MORE_OPS:
        source = reproducer.checked_reproducer(op, "3.13.15", "3.14.7", pythons)
        assert source.isascii() and "import timeit" in source
        imports = [line for line in source.splitlines()
                   if line.lstrip().startswith(("import ", "from "))]
        assert not any("iomatrix" in line or "_api" in line or "_data" in line
                       for line in imports)


@pytest.mark.parametrize("op", CORE_OPS + MORE_OPS)
def test_every_reproducer_runs_on_a_tiny_fixture_and_checks_its_result(tmp_path, op,
                                                                     machine_interpreters):
    python = need(machine_interpreters, "3.12").executable
    script = tmp_path / reproducer.script_name(op)
    script.write_text(reproducer.reproducer(op, "3.13.15", "3.14.7"))
    done = subprocess.run([python, str(script), "--size", tiny_size(op), "--repeat", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first, last = done.stdout.strip().splitlines()
    assert first.startswith("fixture: SIZE = ")
    # the time per call, and the bytes moved per call of the tiny fixture
    assert re.fullmatch(r"3\.12\.\d+: \d+\.\d{3} ms per call, .+; \d+ bytes moved per call",
                        last), last
    assert "the I/O alone" in last or "no control" in last


@pytest.mark.parametrize("op, wrong", [
    ("read_byLines_binaryMode", ("            n += len(piece)\n", "            n += 1\n")),
    ("write_byBlocks_binaryMode", ('for _ in range(s["count"]):\n            write(piece)',
                                   'for _ in range(s["count"] - 1):\n            write(piece)')),
    ("mmapio_slices_seek_read", ("            records.append(read(64))",
                                 "            records.append(read(63))")),
    ("iobench_readmodify_text_utf8_lf_400KiB_4096units", ("f.write(piece[::-1])",
                                                          "f.write(piece)")),
])
def test_a_fast_wrong_answer_fails(tmp_path, op, wrong):
    source = reproducer.reproducer(op, "3.13.15", "3.14.7")
    assert source.count(wrong[0]) == 1
    broken = source.replace(*wrong)
    script = tmp_path / "repro.py"
    script.write_text(broken)
    done = subprocess.run([sys.executable, str(script), "--size", "65536", "--repeat", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "AssertionError" in done.stderr


def test_the_reproducer_runs_under_2_7_and_a_3_x_in_rounds(tmp_path, machine_interpreters):
    old, new = need(machine_interpreters, "2.7"), need(machine_interpreters, "3.12")
    script = tmp_path / "repro.py"
    script.write_text(reproducer.reproducer("chunks_iterate_lines", "3.13.15", "3.14.7"))
    done = subprocess.run([sys.executable, str(script), old.executable, new.executable,
                           "--size", "65536", "--repeat", "1", "--rounds", "2"],
                          capture_output=True, text=True, check=True, timeout=300)
    lines = done.stdout.splitlines()
    assert sum(line.startswith("round ") for line in lines) == 4
    assert re.fullmatch(r"ratio NEW/OLD: \d+\.\d\d \(the I/O alone: -?\d+\.\d\d\)", lines[-1])


def test_an_op_without_a_template_says_so_in_one_line_of_the_issue(tmp_path, capsys):
    op = "textio_read_whole_utf8"        # a real op of the textio suite, no template
    assert reproducer.template_for(op) is None
    # a run that holds it: the finding is the issue; only the reproducer is missing
    make_run(tmp_path / "results", "R", {("3.13", op): 1.5, ("3.13-aa", op): 1.5}, ops=(op,))
    out_dir = tmp_path / "u"
    status = upstream.main([op, "--between", "3.12.0", "3.13.0", "--results-dir",
                            str(tmp_path / "results"), "--out-dir", str(out_dir)], **QUIET)
    assert status == 0
    assert [p.name for p in out_dir.iterdir()] == ["ISSUE.md"]
    text = (out_dir / "ISSUE.md").read_text()
    said = [line for line in text.splitlines() if "no reproducer template" in line]
    assert len(said) == 1 and said[0].startswith("No reproducer: ") and f"`{op}`" in said[0]
    assert "```python" not in text


def test_a_name_from_a_results_file_stays_data_in_the_no_template_line():
    line = reproducer.no_template_line("x<b>`y`</b>\n# z")
    assert "<b>" not in line and "\n" not in line


def finding_of(tmp_path, factors):
    results = tmp_path / "results"
    make_run(results, "R", factors)
    found = upstream.finding(results, "R", READ, "3.12.0", "3.13.0")
    an, f = upstream.analysis_of(found, READ)
    return found, an, f


def test_the_issue_quotes_the_a_a_twin_within_its_bound(tmp_path):
    found, an, f = finding_of(tmp_path, None)
    check = issue_parts.twin_check(an, f)
    assert check.series == "3.13-aa" and check.of == "3.13" and check.within
    text = upstream.issue_text(READ, "lutz2009", "3.12.0", "3.13.0", found, "repro.py", None, [])
    said = next(line for line in text.splitlines() if line.startswith("**Enough rounds?**"))
    assert "within its bound" in said and "`3.13-aa`" in said and "meets its target" in said
    assert issue_parts.repro_rounds(an, f, 3) == 3
    # the title by behaviour: what got slower, how much, since which release
    assert text.splitlines()[0] == "# Reading a text file by lines is 1.50x slower since 3.13.0 " \
        "(than 3.12.0)"


def test_a_twin_beyond_its_bound_is_said_with_the_rounds_needed(tmp_path):
    # the twin 1.2x its original on this op: it flags it, more than its bound
    found, an, f = finding_of(tmp_path, {("3.13-aa", READ): 1.5 * 1.2})
    check = issue_parts.twin_check(an, f)
    assert not check.within and check.rounds_needed > f.comparison.n_a
    said = issue_parts.twin_lines(an, f)[0]
    assert "**more than its bound**: it flags this op" in said
    assert f"would need about {check.rounds_needed} rounds" in said
    # the reproducer is then run with more rounds (at most MAX_REPRO_ROUNDS)
    assert issue_parts.repro_rounds(an, f, 3) == min(check.rounds_needed,
                                                      issue_parts.MAX_REPRO_ROUNDS)


def test_known_fixes_and_a_tested_lead(tmp_path, monkeypatch):
    from test_status import OP, status_run
    run = status_run(tmp_path, monkeypatch)
    found = upstream.finding(run.results_dir, run.run_id, OP, "3.11.7", "3.12.1")
    text = upstream.issue_text(OP, "lutz2009", "3.11.7", "3.12.1", found, "repro.py", None, [])
    # each branch's fix and how it is known; "not fixed" said with the branch's lifecycle
    assert "**Known fixes:** gh-144380 in 3.13.12 (3.13: between 3.13.0 and 3.13.14 at hand); " \
        "gh-144380 in 3.14.3 (3.14: the changelog's release; 3.14.7 at hand is 1.00x 3.11). " \
        "Not fixed in the newest patch at hand of 3.12 (security fixes only, to 2028-10: will " \
        "not get gh-144380)." in text
    assert "**Enough rounds?** This run has no A/A twin" in text
    # the reproducer's op part is in the text, fenced as Python
    assert "```python\nSIZE = 2935401" in text


def test_run_repro_and_no_run_repro_together_are_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        upstream.main(["chunks_read_64KiB", "--between", "3.13.15", "3.14.7", "--run-repro",
                       sys.executable, sys.executable, "--no-run-repro"], **QUIET)
    assert exited.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
