"""The CPU kind as a level of the pool (issue 58): runs within boots within CPU kinds, a cell
whose verdict differs between kinds labelled "depends on the CPU" with each kind's figure, a
time-only step seen on one kind listed apart, never stated as a finding, and agree's
leave-one-CPU-kind-out check; on stored runs made small (2.7 and 3.6 of three AMD EPYC runs
of two boots and the Intel Xeon run of 2026-12-05) and on hand-made ones."""
from __future__ import annotations

import json
import math
import re
import shutil

import pytest

import agree as agree_command
import report
from iomatrix import stats
from iomatrix.analysing import pooling
from conftest import ROOT
from test_agree import READ, make_run
from test_pooling import comparison

AMD = ["20261126T040828Z-vm", "20261127T183426Z-vm", "20261127T184837Z-vm"]   # two boots
INTEL = "20261205T050335Z-vm"
LABELS = ("2.7", "3.6", "3.7")
FIND_MMAP = ("mmapio_find_mmap", "2.7", "3.6")     # AMD 0.80 faster, Intel 1.12 slower
FIND_MMAP_37 = ("mmapio_find_mmap", "3.6", "3.7")  # AMD 1.25 slower, Intel 0.89: time only


def runs_on(ratios, cpus, boots=None, half_width=0.02):
    boots = boots or [f"boot{i}" for i in range(len(ratios))]
    return [pooling.RunCells(f"r{i}", boot, {"cell": comparison(r, half_width)},
                             {"cell": "faster" if r < 1 / 1.05 else
                              "slower" if r > 1.05 else "same"}, cpu=cpu)
            for i, (r, boot, cpu) in enumerate(zip(ratios, boots, cpus))]


@pytest.mark.parametrize("model, kind", [
    ("AMD EPYC", "AMD EPYC"),
    ("Intel(R) Xeon(R) Processor", "Intel Xeon"),
    ("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "Intel Xeon Platinum 8375C"),
    ("  AMD   EPYC 7763 64-Core Processor ", "AMD EPYC 7763 64-Core"),
    ("?", pooling.UNKNOWN_CPU), ("", pooling.UNKNOWN_CPU), (None, pooling.UNKNOWN_CPU),
    (42, pooling.UNKNOWN_CPU), ("CPU", pooling.UNKNOWN_CPU),
    ("x\n`y`" + "z" * 100, "x\\n`y`" + "z" * (pooling.MAX_CPU_NAME - 6)),
])
def test_the_cpu_kind_is_the_model_without_trademarks_else_unknown(model, kind):
    manifest = {} if model is None else {"cpu": model}
    assert pooling.cpu_of(manifest) == kind


def test_kinds_that_contradict_each_other_depend_on_the_cpu_with_each_kinds_figure():
    # AMD: four runs on two boots at 0.80; Intel: one run at 1.12. Each kind's own pool is a
    # finding one way; pooled together the kinds' spread is in the interval: no finding
    runs = runs_on([0.80, 0.81, 0.79, 0.80, 1.12], ["AMD EPYC"] * 4 + ["Intel Xeon"],
                   boots=["a", "a", "b", "b", "c"])
    cell = pooling.pool_cells(runs, 0.05)["cell"]
    assert cell.cpus == ("AMD EPYC", "Intel Xeon") and cell.depends_on_cpu
    assert cell.by_cpu["AMD EPYC"].verdict == "faster" and cell.by_cpu["AMD EPYC"].n == 4
    assert cell.by_cpu["Intel Xeon"].verdict == "slower"
    assert cell.by_cpu["AMD EPYC"].estimate == pytest.approx(0.80, abs=0.01)
    assert cell.tau_cpu > 0.1 and cell.verdict == "same" and cell.boots == 3
    # not the host's: within each kind the runs agree
    assert not cell.host_dependent
    # a kind within the threshold contradicts a finding as much as one the other way
    runs[-1].cells["cell"] = comparison(1.01, 0.02)
    assert pooling.pool_cells(runs, 0.05)["cell"].depends_on_cpu
    # kinds that agree, and a kind too noisy to tell, do not
    runs[-1].cells["cell"] = comparison(0.82, 0.02)
    agreeing = pooling.pool_cells(runs, 0.05)["cell"]
    assert not agreeing.depends_on_cpu and agreeing.verdict == "faster"
    runs[-1].cells["cell"] = comparison(1.0, 0.3)
    assert not pooling.pool_cells(runs, 0.05)["cell"].depends_on_cpu


def test_one_kind_pools_as_before_and_unknown_is_never_merged_with_a_known_kind():
    ratios, boots = [1.5, 1.52, 1.48], ["a", "a", "b"]
    one = pooling.pool_cells(runs_on(ratios, ["AMD EPYC"] * 3, boots), 0.05)["cell"]
    plain = pooling.pool_cells([pooling.RunCells(f"r{i}", b, {"cell": comparison(r, 0.02)},
                                                 {}) for i, (r, b) in
                                enumerate(zip(ratios, boots))], 0.05)["cell"]
    assert (one.estimate, one.low, one.high, one.by_cpu) == \
        (plain.estimate, plain.low, plain.high, {})
    assert plain.cpus == (pooling.UNKNOWN_CPU,)
    mixed = pooling.pool_cells(runs_on(ratios, ["AMD EPYC", pooling.UNKNOWN_CPU, "AMD EPYC"],
                                       boots), 0.05)["cell"]
    assert set(mixed.by_cpu) == {"AMD EPYC", pooling.UNKNOWN_CPU}
    assert mixed.known_cpus == ("AMD EPYC",)


def test_the_boot_floor_is_learned_within_a_kind():
    # two kinds 0.2 apart in 3 of 40 cells: a CPU's difference, not a boot's
    half = 0.01 * 1.959964
    a = {f"c{i}": comparison(1.0, half) for i in range(40)}
    b = {f"c{i}": comparison(math.exp(0.2) if i < 3 else 1.0, half) for i in range(40)}
    runs = [pooling.RunCells("a", "A", a, {}, cpu="AMD EPYC"),
            pooling.RunCells("b", "B", b, {}, cpu="Intel Xeon")]
    assert pooling.boot_floor(runs, list(a)) == 0.0
    runs[1].cpu = "AMD EPYC"
    assert pooling.boot_floor(runs, list(a)) > 0


def test_leave_one_cpu_kind_out_checks_each_kind_against_the_others_pool():
    runs = runs_on([1.5, 1.52, 1.48, 1.5, 2.5], ["AMD EPYC"] * 3 + ["Intel Xeon"] * 2,
                   boots=["a", "a", "b", "c", "d"])
    found = pooling.leave_one_cpu_out(runs, 0.05, ["cell"])
    # AMD left out: the two Intel runs pooled; Intel left out: the three AMD runs
    assert [p.left_out for p in found] == ["r0 (AMD EPYC)", "r1 (AMD EPYC)", "r2 (AMD EPYC)",
                                           "r3 (Intel Xeon)", "r4 (Intel Xeon)"]
    assert [len(p.pooled) for p in found] == [2, 2, 2, 3, 3]
    assert found[3].held == 1 and found[4].held == 0      # 2.5 is not where AMD's 1.5 is
    assert pooling.leave_one_cpu_out(runs[:4], 0.05, ["cell"])[-1].left_out == \
        "r3 (Intel Xeon)"
    assert pooling.leave_one_cpu_out(runs_on([1.5] * 3, ["x"] * 3), 0.05, ["cell"]) == []


# -- stored runs made small ------------------------------------------------------------------

def small_copy(results, run_id, labels=LABELS):
    """A stored run with only ``labels``' timings and counts: every op, two release steps."""
    source = ROOT / "results" / run_id
    target = results / run_id
    target.mkdir(parents=True)
    for label in labels:
        for suffix in (".json.gz", ".counters.json.gz"):
            if (source / f"{label}{suffix}").is_file():
                shutil.copy(source / f"{label}{suffix}", target / f"{label}{suffix}")
    shutil.copy(source / "native.json.gz", target / "native.json.gz")
    manifest = json.loads((source / "manifest.json").read_text())
    manifest["interpreters"] = {label: info for label, info in manifest["interpreters"].items()
                                if label in labels}
    (target / "manifest.json").write_text(json.dumps(manifest))
    return target


@pytest.fixture
def stored(tmp_path, monkeypatch):
    """The small copies, and fewer resamples of a finding's rounds (they set only a run's
    own firm/borderline class, which the pool does not read)."""
    if not all((ROOT / "results" / name).is_dir() for name in AMD + [INTEL]):
        pytest.skip("the stored runs are not at hand")
    monkeypatch.setattr(stats, "NEXT_RUN_REPLICATES", 50)
    results = tmp_path / "results"
    for name in AMD + [INTEL]:
        small_copy(results, name)
    return results


def rows(text, op, a, b) -> list:
    """The table rows of a cell in ``text``, each as its stripped columns."""
    found = []
    for line in text.splitlines():
        columns = [column.strip() for column in line.strip().strip("|").split("|")]
        if line.startswith("|") and columns[:2] == [f"`{op}`", f"{a} → {b}"]:
            found.append(columns)
    return found


def pooled_report(tmp_path, capsys, main, *others, name="pooled.md"):
    out = tmp_path / "out" / name
    status = report.main(["--results-dir", str(tmp_path / "results"), "--out", str(out),
                          "--no-figures", "--run-id", main, "--pool", *others])
    err = capsys.readouterr().err
    assert status == 0, err
    text = out.read_text().replace("\u00a0", " ")
    pool_page = (out.parent / out.stem / "pool.md").read_text().replace("\u00a0", " ")
    csv = (out.parent / out.stem / "data.csv").read_text().splitlines()
    return text, pool_page, csv


def test_the_stored_runs_of_two_cpu_kinds_say_which_cells_depend_on_the_cpu(
        stored, tmp_path, capsys):
    text, pool_page, csv = pooled_report(tmp_path, capsys, AMD[-1], *AMD[:-1], INTEL)
    summary = text.split("\n\n")[1]
    assert summary.startswith("Pooled over 4 runs of this command on 3 boots of 2 CPU kinds "
                              "(AMD EPYC: 3 runs, Intel Xeon: 1 run), ")
    assert "whose verdict depends on the CPU" in summary and "listed apart" in summary
    assert "## Over 4 runs on 3 boots of 2 CPU kinds" in text
    assert "### Depends on the CPU (" in text and "## Depends on the CPU (" in pool_page
    for cell in (FIND_MMAP, FIND_MMAP_37):
        found = rows(pool_page.split("## Every cell")[0], *cell)
        assert len(found) == 1 and found[0][-1].startswith("depends on<br>the CPU:<br>AMD EPYC ")
        assert "<br>Intel Xeon " in found[0][-1]
    # the main page's finding row says it below its pooled ratio
    row = [line for line in text.splitlines()
           if line.startswith("| ") and "`mmapio_find_mmap`" in line and "2.7 → 3.6" in line
           and "pooled " in line]
    assert row and "depends on<br>the CPU:<br>AMD EPYC 0.8" in row[0]
    # the pooled findings' table lists no cell that depends on the CPU
    assert not rows(text.split("## Over 4 runs")[1].split("### ")[0], *FIND_MMAP)
    pooled = [line for line in csv if line.startswith("pool,3.6,mmapio_find_mmap,")]
    assert any(",pooled_depends_on_cpu,2.7,1," in line for line in pooled)
    assert any(",pooled_cpu_kinds,2.7,2," in line for line in pooled)
    # every run's kind, named once in the list of runs
    assert f"`{INTEL}` (7721cb0f-18fa-49aa-b557-03f03248776f, Intel Xeon)" in pool_page
    # agree: one CPU kind left out, beside one boot left out
    status = agree_command.main([*AMD, INTEL, "--results-dir", str(stored),
                                 "--json", str(tmp_path / "agree.json")])
    out = capsys.readouterr().out
    assert status == 0
    assert "- **One CPU kind left out** (each in turn, 1 of the 2 kinds: Intel Xeon): the " \
        "pool of the other kinds' runs expects the estimate" in out
    assert re.search(r"Of the \d+ estimates it did not expect, \d+ lie in the \d+ cells the "
                     r"pool of all the runs labels \"depends on the CPU\"\.", out)
    prediction = json.loads((tmp_path / "agree.json").read_text())["prediction"]
    assert [p["left_out"] for p in prediction["one_cpu_out"]] == [f"{INTEL} (Intel Xeon)"]
    assert prediction["one_cpu_out"][0]["cells"] >= 40


def test_a_time_only_step_of_one_cpu_kind_is_listed_apart_never_as_a_finding(
        stored, tmp_path, capsys):
    text, pool_page, csv = pooled_report(tmp_path, capsys, AMD[-1], *AMD[:-1])
    summary = text.split("\n\n")[1]
    assert summary.startswith("Pooled over 3 runs of this command on 2 boots, all of one CPU "
                              "kind (AMD EPYC), ")
    assert "time-only step" in summary and "seen on one CPU kind" in summary
    apart = text.split("### Time only, seen on one CPU kind (")[1].split("\n## ")[0]
    assert "seen on AMD EPYC only" in apart
    found = rows(apart, *FIND_MMAP_37)
    assert found and found[0][-1] == "time only,<br>seen on<br>AMD EPYC"
    assert not rows(text.split("## Over 3 runs")[1].split("### ")[0], *FIND_MMAP_37)
    assert any(line.startswith("pool,3.7,mmapio_find_mmap,")
               and ",pooled_time_only_one_cpu,3.6,1," in line for line in csv)
    # with the Intel run, it is seen on two kinds, which contradict each other
    text, _, _ = pooled_report(tmp_path, capsys, AMD[-1], *AMD[:-1], INTEL, name="both.md")
    found = rows(text.split("### Depends on the CPU (")[1], *FIND_MMAP_37)
    assert found and found[0][-1].endswith("time only,<br>seen on<br>AMD EPYC,<br>Intel Xeon")


def test_runs_without_a_cpu_model_pool_as_unknown_said_once(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", boot_id="boot-1", cpu="AMD EPYC")
    make_run(results, "B", {("3.13", READ): 1.55, ("3.13-aa", READ): 1.55}, boot_id="boot-1",
             cpu="AMD EPYC")
    make_run(results, "C", {("3.13", READ): 1.45, ("3.13-aa", READ): 1.45}, boot_id="boot-2")
    make_run(results, "D", boot_id="boot-3", cpu="?")
    text, pool_page, _ = pooled_report(tmp_path, capsys, "A", "B", "C", "D")
    line = "2 runs (`C`, `D`) name no CPU model in their manifests: pooled as one kind of " \
        "their own, \"unknown CPU\", never with a known kind."
    assert text.count(line) == 1 and pool_page.count(line) == 1
    assert "of 2 CPU kinds (AMD EPYC: 2 runs, unknown CPU: 2 runs)" in text
    # a run of a page's single unknown kind: the pages say it once, the summary not at all
    for run_id in "AB":
        shutil.rmtree(results / run_id)
    text, _, _ = pooled_report(tmp_path, capsys, "C", "D", name="unknown.md")
    assert text.split("\n\n")[1].startswith("Pooled over 2 runs of this command on 2 boots, ")
    assert text.count("\"unknown CPU\"") == 1


def test_a_cpu_name_is_data_escaped_on_every_page(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", boot_id="boot-1", cpu="Evil|x*<i>")
    make_run(results, "B", {("3.13", READ): 1.0, ("3.13-aa", READ): 1.0}, boot_id="boot-2",
             cpu="Other")
    make_run(results, "C", {("3.13", READ): 1.0, ("3.13-aa", READ): 1.0}, boot_id="boot-3",
             cpu="Other")
    text, pool_page, _ = pooled_report(tmp_path, capsys, "A", "B", "C")
    for page in (text, pool_page):
        assert "<i>" not in page and "Evil\\|x\\*&lt;i&gt;" in page
    # A's 1.5 against the other kind's 1.0: the read step depends on the CPU
    assert "### Depends on the CPU (1)" in text
