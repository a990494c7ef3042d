"""compare.py on small hand-made runs and files: exit statuses, significance, warnings."""
from __future__ import annotations

import json

import pytest

import compare
from iomatrix.commands import compare as compare_command
from iomatrix.storing import contract, store
from conftest import truncated_compressed, without_intervals, write_pyperf_file

READ, WRITE = "read_byLines_textMode", "write_byLines_textMode"


def make_run(results_dir, run_id, series: dict, **manifest_fields):
    """A run directory with a manifest and one pyperf file per series (as tests/test_report.py)."""
    run_dir = results_dir / run_id
    run_dir.mkdir(parents=True)
    manifest = {"run_id": run_id, "host": "testhost", "profile": "quick", "cache": "warm",
                "fixture_filesystem": {"type": "ext4", "mount": "/"}, "suites": ["lutz2009"],
                "io": ["c"], "started": "2026-01-01T00:00:00+00:00", "interpreters": {},
                **manifest_fields}
    for index, (label, benchmarks) in enumerate(series.items()):
        write_pyperf_file(run_dir / f"{label}.json", benchmarks)
        manifest["interpreters"][label] = {"label": label, "implementation": "cpython",
                                           "version_info": [3, index, 0], "status": "ok"}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return store.Run(results_dir, run_id)


def processes(base, factor=1.0, n=6, jitter=0.01, phase=0):
    """n processes of 3 values around base*factor; ``phase`` shifts the deterministic jitter."""
    return [[base * factor * (1 + jitter * (((i + phase) * 7 + j) % 5 - 2) / 2) for j in range(3)]
            for i in range(n)]


def two_runs(tmp_path, factor_read=1.0, factor_write=1.0, **b_manifest):
    results = tmp_path / "results"
    make_run(results, "A", {"3.13": {READ: processes(0.010), WRITE: processes(0.100)}})
    make_run(results, "B", {"3.13": {READ: processes(0.010, factor_read, phase=2),
                                     WRITE: processes(0.100, factor_write, phase=3)}},
             started="2026-01-02T00:00:00+00:00", **b_manifest)
    return results


def run_main(capsys, *argv):
    status = compare.main([str(a) for a in argv])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_no_change_exits_0(tmp_path, capsys):
    results = two_runs(tmp_path)
    status, out, err = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0, err
    assert "No significant regression above 5%." in out
    assert "#### Regressions" not in out
    assert "Warning" not in out
    assert "**geometric mean**" in out


def test_a_regression_above_the_threshold_exits_1_and_is_listed(tmp_path, capsys):
    results = two_runs(tmp_path, factor_read=1.5)
    out_file = tmp_path / "pr" / "comment.md"
    status, out, _ = run_main(capsys, results / "A", results / "B", "--out", out_file)
    assert out_file.read_text() == out  # the same markdown, written atomically
    out = without_intervals(out)
    assert status == 1
    assert "**1 significant regression above 5%.**" in out
    regressions = out.split("#### Regressions", 1)[1].split("<details", 1)[0]
    assert f"`{READ}`" in regressions and "**1.50 ▲**" in regressions
    assert WRITE not in regressions
    assert not list(out_file.parent.glob(".*partial*"))


def test_threshold_decides_what_fails(tmp_path, capsys):
    results = two_runs(tmp_path, factor_read=1.03)      # significant, but 3% slower
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    out = without_intervals(out)
    assert status == 0 and "1.03 ▲" in out and "**1.03 ▲**" not in out
    status, _, _ = run_main(capsys, "A", "B", "--results-dir", results, "--fail-above", "0.01")
    assert status == 1


def test_a_faster_op_is_not_a_regression(tmp_path, capsys):
    results = two_runs(tmp_path, factor_read=0.5)
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0 and "0.50 ▼" in without_intervals(out)


def test_two_files_of_one_run_are_compared_directly(tmp_path):
    results = tmp_path / "results"
    make_run(results, "R", {"3.12": {READ: processes(0.010)},
                            "3.13": {READ: processes(0.010, 2.0, phase=1)}})
    text, status = compare.compare(str(results / "R" / "3.12.json"),
                                   str(results / "R" / "3.13.json"), results)
    assert status == 1
    assert "Mann-Whitney U" in text and "`3.12` → `3.13`" in text


def test_every_common_series_gets_a_section_and_label_picks_one(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", {"3.12": {READ: processes(0.01)}, "3.13": {READ: processes(0.01)},
                            "2.7": {READ: processes(0.01)}})
    make_run(results, "B", {"3.12": {READ: processes(0.01, phase=1)},
                            "3.13": {READ: processes(0.01, 2.0, phase=1)}})
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 1
    assert "<code>3.12</code>" in out and "<code>3.13</code>" in out and "2.7" not in out
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results, "--label", "3.12")
    assert status == 0 and "<code>3.13</code>" not in out


def test_a_run_and_a_file(tmp_path, capsys):
    results = two_runs(tmp_path, factor_read=1.5)
    status, out, _ = run_main(capsys, "A", results / "B" / "3.13.json", "--results-dir", results)
    assert status == 1 and "`B/3.13.json`" in out


def test_differences_of_host_profile_cache_and_file_system_are_warned(tmp_path, capsys):
    results = two_runs(tmp_path, host="other", profile="full", cache="cold",
                       fixture_filesystem={"type": "tmpfs", "mount": "/tmp"})
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 0
    warning = next(line for line in out.splitlines() if line.startswith("> **Warning:**"))
    for part in ("profile (`quick` → `full`)", "page cache (`warm` → `cold`)",
                 "host (`testhost` → `other`)", "file system (`ext4 on /` → `tmpfs on /tmp`)"):
        assert part in warning


def test_missing_run_exits_2_naming_it(tmp_path, capsys):
    results = two_runs(tmp_path)
    status, out, err = run_main(capsys, "A", "nope", "--results-dir", results)
    assert status == 2 and out == ""
    assert "nope: no such run or result file" in err


def test_missing_label_exits_2_listing_the_labels(tmp_path, capsys):
    results = two_runs(tmp_path)
    status, _, err = run_main(capsys, "A", "B", "--results-dir", results, "--label", "3.99")
    assert status == 2 and "has no series '3.99'; it has: 3.13" in err


def test_no_op_in_common_exits_2(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", {"3.13": {READ: processes(0.01)}})
    make_run(results, "B", {"3.13": {WRITE: processes(0.01)}})
    status, _, err = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 2 and "have no op in common" in err and WRITE in err


def test_no_series_in_common_exits_2(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", {"3.12": {READ: processes(0.01)}})
    make_run(results, "B", {"3.13": {READ: processes(0.01)}})
    status, _, err = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 2 and "no series in common" in err


def test_truncated_json_exits_2_and_is_left_alone(tmp_path, capsys):
    results = two_runs(tmp_path)
    path = results / "B" / "3.13.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    status, _, err = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 2 and str(path) in err and "perhaps truncated" in err
    assert path.read_text() == text[: len(text) // 2]
    status, _, err = run_main(capsys, results / "A" / "3.13.json", path)
    assert status == 2 and "perhaps truncated" in err


@pytest.mark.parametrize("content, message", [
    (json.dumps({"tool": "asv", "results": {}}), "not a pyperf result file"),
    (json.dumps({"version": "1.0", "benchmarks": [{"metadata": {"name": "x"},
                                                  "runs": [{"values": [1.0]}]}]}),
     "not written by an iomatrix suite"),
])
def test_foreign_json_exits_2(tmp_path, capsys, content, message):
    results = two_runs(tmp_path)
    foreign = tmp_path / "other.json"
    foreign.write_text(content)
    status, _, err = run_main(capsys, results / "A" / "3.13.json", foreign)
    assert status == 2 and str(foreign) in err and message in err
    assert foreign.read_text() == content


def test_a_broken_series_is_ignored_when_label_picks_another(tmp_path, capsys):
    results = two_runs(tmp_path)
    (results / "B" / "2.7.json").write_text("{")
    assert run_main(capsys, "A", "B", "--results-dir", results)[0] == 2
    assert run_main(capsys, "A", "B", "--results-dir", results, "--label", "3.13")[0] == 0


def test_unknown_option_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        compare.main(["A", "B", "--bogus"])
    assert exc.value.code == 2
    assert "valid options: --allow-condition-change, --fail-above, --fail-on, --help, --json, --label, --out, --results-dir" in capsys.readouterr().err


def test_names_cannot_break_the_tables(tmp_path, capsys):
    results = tmp_path / "results"
    evil = "read|<b>x</b>"
    make_run(results, "A", {"3.13": {evil: processes(0.01)}})
    make_run(results, "B", {"3.13": {evil: processes(0.01, 2.0, phase=1)}})
    status, out, err = run_main(capsys, "A", "B", "--results-dir", results)
    # an op name is a name (the schema's rule): one with markup is refused, exit 2, one line
    assert status == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "op" in err


def test_long_comparisons_are_shortened_to_fit_a_comment(tmp_path, monkeypatch):
    results = tmp_path / "results"
    ops = [f"read_op_{i}" for i in range(40)]
    make_run(results, "A", {"3.13": {op: processes(0.01) for op in ops}})
    make_run(results, "B", {"3.13": {op: processes(0.01, 1.5 if i < 3 else 1.0, phase=1)
                                     for i, op in enumerate(ops)}})
    full, status = compare.compare("A", "B", results)
    assert status == 1 and "40 ops</summary>" in full and "`read_op_39`" in full
    monkeypatch.setattr(compare_command, "MAX_REGRESSION_ROWS", 2)
    monkeypatch.setattr(compare_command, "COMMENT_BUDGET", len(full) // 2)
    short, _ = compare.compare("A", "B", results)
    assert "the 3 significant changes of 40 ops" in short and "`read_op_39`" not in short
    assert "The 2 largest are listed; 1 more are in the tables below." in short
    monkeypatch.setattr(compare_command, "COMMENT_BUDGET", 100)
    shortest, status = compare.compare("A", "B", results)
    assert status == 1 and "per-op tables are left out" in shortest
    assert "#### Regressions" in shortest


def test_json_output_carries_every_interval(tmp_path, capsys):
    results = two_runs(tmp_path, factor_read=1.5)
    out_json = tmp_path / "pr" / "compare.json"
    status, _, _ = run_main(capsys, "A", "B", "--results-dir", results, "--json", out_json)
    assert status == 1
    data = json.loads(out_json.read_text())
    read = next(c for c in data["comparisons"] if c["op"] == READ)
    assert read["low"] <= read["ratio"] <= read["high"] and read["low"] > 1
    assert read["significant"] is True and read["regression"] is True
    assert "Hodges-Lehmann" in data["method"] and data["confidence"] == 0.95


def test_a_bad_fail_above_is_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        compare.main(["A", "B", "--fail-above", "-1"])
    assert exc.value.code == 2
    assert "--fail-above is a fraction" in capsys.readouterr().err


def _counters_file(path, instructions, reads):
    contract.atomic_write_json(str(path), {
        "iomatrix_counters_version": 1, "series": path.name.split(".counters")[0],
        "interpreter": {"implementation": "cpython"}, "calls": 1, "fixtures": "counting",
        "methods": {"instructions": "callgrind"}, "skipped": {},
        "ops": {"read_byLines_textMode": {"suite": "lutz2009", "bytes_per_call": 1 << 20,
                                          "calls": 1, "instructions": instructions,
                                          "syscalls": {"read": reads, "close": 1}}}})


def test_more_instructions_fail_the_gate_and_more_syscalls_are_listed(tmp_path, capsys):
    run = make_run(tmp_path, "R", {"3.0": {"read_byLines_textMode": processes(0.010)},
                                   "3.1": {"read_byLines_textMode": processes(0.010)}})
    _counters_file(run.path / "3.0.counters.json", 1_000_000, 4)
    _counters_file(run.path / "3.1.counters.json", 1_100_000, 91)
    status = compare.main([str(run.path / "3.0.json"), str(run.path / "3.1.json")])
    out = capsys.readouterr().out
    assert status == 1                      # no timing regression, but 10% more instructions
    assert "+10.00%" in out and "`read` calls per call 4 -> 91" in out
    _counters_file(run.path / "3.1.counters.json", 1_000_000, 4)
    assert compare.main([str(run.path / "3.0.json"), str(run.path / "3.1.json")]) == 0


@pytest.mark.parametrize("hostile", [-1, 2 ** 64, "lots"])
def test_a_hostile_syscall_bytes_value_is_bad_input_naming_the_field(tmp_path, capsys, hostile):
    """The bytes the system calls moved (issue 35) are bounded like every count: a negative,
    huge or non-number value stops compare with exit 2, one line naming the field."""
    run = make_run(tmp_path, "R", {"3.0": {"read_byLines_textMode": processes(0.010)},
                                   "3.1": {"read_byLines_textMode": processes(0.010)}})
    _counters_file(run.path / "3.0.counters.json", 1_000_000, 4)
    bad = run.path / "3.1.counters.json"
    _counters_file(bad, 1_000_000, 4)
    document = json.loads(bad.read_text())
    document["ops"]["read_byLines_textMode"]["syscall_bytes"] = {"read": hostile}
    bad.write_text(json.dumps(document))
    status, out, err = run_main(capsys, run.path / "3.0.json", run.path / "3.1.json")
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and str(bad) in err and "syscall_bytes.read" in err


# -- differences of method are stated first, not gated (issue 24) -------------------------

def runs_by_clock(tmp_path, clock_b: str, slower: float = 1.5, **b_manifest):
    """A timed by the CPU clock, B by ``clock_b`` and ``slower`` times slower."""
    results = tmp_path / "results"
    for run_id, clock, factor, extra in (("A", "cpu", 1.0, {}), ("B", clock_b, slower,
                                                                b_manifest)):
        run_dir = results / run_id
        run_dir.mkdir(parents=True)
        write_pyperf_file(run_dir / "3.13.json",
                          {READ: processes(0.010, factor), WRITE: processes(0.100, factor)},
                          {contract.KEY_CLOCK: clock})
        manifest = {"run_id": run_id, "started": f"2026-01-0{1 + (run_id == 'B')}T00:00:00",
                    "affinity": "one", "interpreters": {"3.13": {"version_info": [3, 13, 0]}},
                    **extra}
        (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return results


def test_a_wall_clock_run_against_a_cpu_clock_run_says_so_first_and_exits_0(tmp_path, capsys):
    results = runs_by_clock(tmp_path, "wall")
    status, out, err = run_main(capsys, "A", "B", "--results-dir", results, "--json",
                                tmp_path / "c.json")
    assert status == 0, err
    first_lines = "\n".join(out.splitlines()[:5])
    assert "different conditions" in first_lines and "clock: A cpu, B wall" in first_lines
    assert "no regression verdict" in first_lines
    document = json.loads((tmp_path / "c.json").read_text())
    assert document["gated"] is False
    assert document["condition_differences"] == ["clock: A cpu, B wall"]
    assert any(c["regression"] for c in document["comparisons"])  # the data says it, unjudged


def test_allow_condition_change_gates_and_still_states_them(tmp_path, capsys):
    results = runs_by_clock(tmp_path, "wall")
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results,
                              "--allow-condition-change")
    assert status == 1
    assert "clock: A cpu, B wall" in "\n".join(out.splitlines()[:5])
    assert "gated as usual" in out


@pytest.mark.parametrize("b_manifest, difference", [
    ({"affinity": "all"}, "CPU pinning: A one, B all"),
    ({"interpreters": {"3.13": {"version_info": [3, 13, 0], "recipe": "static-O3"}}}, None),
])
def test_pinning_and_recipe_differences_are_conditions(tmp_path, capsys, b_manifest,
                                                        difference):
    results = runs_by_clock(tmp_path, "cpu", **b_manifest)
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    if difference:
        assert status == 0 and difference in out
    else:  # a recipe only B records is not compared: nothing guessed, the gate applies
        assert status == 1 and "different conditions" not in out


def test_the_same_conditions_gate_as_before(tmp_path, capsys):
    results = runs_by_clock(tmp_path, "cpu")
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 1 and "different conditions" not in out


# -- classes from both sides' counts (issue 26) ---------------------------------------------

def counted_runs(tmp_path, instructions_b: int, **b_manifest):
    """Runs A and B of one series: B reads 1.5x slower, with ``instructions_b`` instructions
    per call against A's 1,000,000 and the same system calls."""
    results = two_runs(tmp_path, factor_read=1.5, **b_manifest)
    _counters_file(results / "A" / "3.13.counters.json", 1_000_000, 4)
    _counters_file(results / "B" / "3.13.counters.json", instructions_b, 4)
    return results


def classes(tmp_path, capsys, results) -> tuple[str, dict]:
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results,
                              "--json", tmp_path / "c.json")
    document = json.loads((tmp_path / "c.json").read_text())
    return out, document


def test_a_regression_whose_instructions_moved_is_confirmed_on_one_host(tmp_path, capsys):
    results = counted_runs(tmp_path, 1_030_000, boot_id="boot-1")
    manifest = json.loads((results / "A" / "manifest.json").read_text())
    (results / "A" / "manifest.json").write_text(json.dumps({**manifest, "boot_id": "boot-1"}))
    out, document = classes(tmp_path, capsys, results)
    read = next(c for c in document["comparisons"] if c["op"] == READ)
    assert read["regression"] and read["evidence"] == "confirmed"     # +3% beyond 2%
    assert document["counts_host"] == "one" and "| confirmed" in out
    assert "not known to come from one host" not in out


def test_counts_of_two_runs_not_known_to_share_a_host_need_a_larger_move(tmp_path, capsys):
    """+3% instructions: within what two hosts of one CPU model gave (3.5%), so time only."""
    out, document = classes(tmp_path, capsys, counted_runs(tmp_path, 1_030_000))
    read = next(c for c in document["comparisons"] if c["op"] == READ)
    assert read["evidence"] == "time only" and document["counts_host"] == "unknown"
    assert "**Counts not known to come from one host**" in out and "beyond 5%" in out


def test_counts_of_two_cpus_say_so_and_a_large_move_still_confirms(tmp_path, capsys):
    results = counted_runs(tmp_path, 1_200_000, cpu_flags="b" * 16)
    manifest = json.loads((results / "A" / "manifest.json").read_text())
    (results / "A" / "manifest.json").write_text(json.dumps({**manifest, "cpu_flags": "a" * 16}))
    out, document = classes(tmp_path, capsys, results)
    read = next(c for c in document["comparisons"] if c["op"] == READ)
    assert read["evidence"] == "confirmed" and document["counts_host"] == "two"
    assert "**Counts from two hosts** (the CPUs' feature flags differ)" in out


def test_without_counts_on_a_side_no_class_is_guessed(tmp_path, capsys):
    results = two_runs(tmp_path, factor_read=1.5)
    _counters_file(results / "A" / "3.13.counters.json", 1_000_000, 4)   # B has none
    out, document = classes(tmp_path, capsys, results)
    assert all(c["evidence"] is None for c in document["comparisons"])
    assert "Class, from both sides' counts" not in out and "| class" not in out


def test_fail_on_gates_only_the_regressions_of_the_named_classes(tmp_path, capsys):
    """B reads 1.5x slower with flat counts (time only): it fails the default gate, not
    --fail-on confirmed, and is still listed with its class."""
    results = counted_runs(tmp_path, 1_000_000)
    assert run_main(capsys, "A", "B", "--results-dir", results)[0] == 1
    status, out, _ = run_main(capsys, "A", "B", "--results-dir", results,
                              "--fail-on", "confirmed,memory", "--json", tmp_path / "c.json")
    assert status == 0 and "**0 of 1 significant regression above 5% fail the gate**" in out
    assert "| time only" in out
    document = json.loads((tmp_path / "c.json").read_text())
    read = next(c for c in document["comparisons"] if c["op"] == READ)
    assert read["regression"] and not read["fails_gate"]
    assert document["fail_on"] == ["confirmed", "memory"]
    assert run_main(capsys, "A", "B", "--results-dir", results, "--fail-on", "time only")[0] == 1


@pytest.mark.parametrize("given", ["confirmd", "any,typo", ","])
def test_an_unknown_class_is_exit_2_listing_the_valid_ones(tmp_path, capsys, given):
    with pytest.raises(SystemExit) as exc:
        compare.main(["A", "B", "--fail-on", given])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "valid: any, or one or more of confirmed, memory, time-only, unclassified" in err


def test_a_truncated_compressed_file_is_named_like_a_truncated_plain_one(tmp_path, capsys):
    """A run stored compressed (the matrix writes .json.gz): a damaged file is named, exit 2,
    one line, and left alone, as test_truncated_json_exits_2_and_is_left_alone's plain one."""
    results = two_runs(tmp_path)
    path, damaged = truncated_compressed(results / "B" / "3.13.json")
    status, _, err = run_main(capsys, "A", "B", "--results-dir", results)
    assert status == 2 and str(path) in err and "perhaps truncated" in err
    assert len(err.strip().splitlines()) == 1 and path.read_bytes() == damaged
    status, _, err = run_main(capsys, results / "A" / "3.13.json", path)
    assert status == 2 and "perhaps truncated" in err
