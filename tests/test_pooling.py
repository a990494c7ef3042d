"""Pooled numbers (iomatrix.analysing.pooling): the random-effects pool of runs' ratios, the
host's share, the leave-one-out check of agree, report --pool, and compressed run files."""
from __future__ import annotations

import dataclasses
import gzip
import json
import math
import shutil

import pytest

import agree as agree_command
import report
from iomatrix import stats
from iomatrix.analysing import analysis, counts, pooling
from iomatrix.storing import store
from conftest import ROOT
from test_agree import READ, WRITE, make_run


def comparison(ratio, half_width):
    """A ratio with a 95% interval of ± half_width on the log scale."""
    return stats.Comparison(ratio, ratio * math.exp(-half_width), ratio * math.exp(half_width),
                            True, 8, 8, paired=True)


def runs_of(ratios, half_width=0.02, boots=None):
    boots = boots or [f"boot{i}" for i in range(len(ratios))]
    return [pooling.RunCells(f"r{i}", boot, {"cell": comparison(r, half_width)},
                             {"cell": "slower" if r > 1.05 else "same"})
            for i, (r, boot) in enumerate(zip(ratios, boots))]


def test_the_standard_error_is_the_interval_width_over_2_z():
    assert pooling.se_of_interval(1 / math.e, math.e) == pytest.approx(1 / 1.959964, rel=1e-5)
    assert pooling.se_of_interval(2.0, 2.0) == pooling.MIN_SE   # a point: never a weight of 1/0


def test_runs_that_agree_pool_to_their_ratio_and_do_not_depend_on_the_host():
    cell = pooling.pool_cells(runs_of([1.5, 1.5, 1.5]), 0.05)["cell"]
    assert cell.estimate == pytest.approx(1.5)
    assert cell.tau == pytest.approx(0, abs=1e-9) and not cell.host_dependent
    assert cell.verdict == "slower" and (cell.held, cell.n, cell.boots) == (3, 3, 3)
    # the interval for a further run: the pooled mean's error and a typical run's own noise
    assert cell.low < 1.5 < cell.high and cell.mean_low < 1.5 < cell.mean_high
    assert cell.high / cell.low > cell.mean_high / cell.mean_low


def test_runs_far_apart_beyond_their_intervals_depend_on_the_host():
    ratios = [2.3, 2.7, 3.4, 2.5, 3.2]
    cell = pooling.pool_cells(runs_of(ratios, boots=["a", "a", "b", "c", "c"]), 0.05)["cell"]
    assert cell.host_dependent and cell.tau > cell.within_se and cell.i2 > 0.9
    assert cell.seen == (2.3, 3.4) and cell.boots == 3
    assert all(cell.holds(r) for r in ratios)        # the between-run variance is in it
    assert cell.high / cell.low > math.exp(4 * 1.96 * 0.02 / 1.96)


def test_a_run_without_an_interval_is_left_out_of_the_cell():
    runs = runs_of([1.2, 1.2])
    runs.append(pooling.RunCells("few", "x", {"cell": stats.Comparison(9.0, None, None, None,
                                                                       2, 2)}, {}))
    cell = pooling.pool_cells(runs, 0.05)["cell"]
    assert cell.n == 2 and "few" not in cell.runs and cell.estimate == pytest.approx(1.2)


def test_boot_of_is_the_boot_id_else_the_day():
    assert pooling.boot_of({"boot_id": "abc"}, "R") == "abc"
    assert pooling.boot_of({"started": "2026-11-24T14:08:34+00:00"}, "R") == "date 2026-11-24"
    assert pooling.boot_of({}, "R") == "run R"


def test_leave_one_out_holds_runs_of_one_spread_and_misses_an_outlier():
    runs = runs_of([1.50, 1.52, 1.48, 1.51, 1.49])
    found = pooling.leave_one_out(runs, 0.05, ["cell"])
    assert [p.left_out for p in found] == ["r0", "r1", "r2", "r3", "r4"]
    assert pooling.totals(found) == (5, 5)
    outlier = runs_of([1.50, 1.52, 1.48, 1.51, 3.0])
    found = pooling.leave_one_out(outlier, 0.05, ["cell"])
    assert not found[-1].held and found[-1].missed[0][1] == 3.0
    by_boot = pooling.leave_one_boot_out(runs_of([1.5, 1.5, 1.5], boots=["a", "a", "b"]),
                                         0.05, ["cell"])
    # boot a left out leaves one run (not a pool); boot b left out: a pool of two
    assert [p.left_out for p in by_boot] == ["r2 (boot b)"] and pooling.totals(by_boot) == (1, 1)
    assert pooling.leave_one_out(runs[:2], 0.05, ["cell"]) == []   # under three runs: nothing


def test_runs_of_one_boot_count_as_one_boot_not_as_many_runs():
    # six runs of one boot at 2.0, one run on each of two other boots at 3.0: pooled as
    # independent runs the six would pull the mean to 2.0 and their small spread would stand
    # for the host's; two levels pool the boots (2.0, 3.0, 3.0), and the boots' spread is in
    # the interval
    ratios = [2.0, 2.01, 1.99, 2.0, 2.02, 1.98, 3.0, 3.0]
    boots = ["a"] * 6 + ["b", "c"]
    cell = pooling.pool_cells(runs_of(ratios, boots=boots), 0.05)["cell"]
    assert cell.boots == 3 and cell.n == 8
    assert 2.4 < cell.estimate < 2.8                     # the boots weigh alike, not the runs
    assert cell.tau_boot > 0.1 > cell.tau_run
    assert cell.holds(2.0) and cell.holds(3.0)


def test_the_floor_is_what_the_pools_cross_boot_pairs_need():
    # two boots, 40 cells: in 38 the runs agree, in 2 (5%) they differ by 0.2 on the log scale
    # with SEs of 0.01: the 95th percentile of the SD each pair needs is the largest of the 38
    half = 0.01 * 1.959964
    cells_a = {f"c{i}": comparison(1.0, half) for i in range(40)}
    cells_b = {f"c{i}": comparison(math.exp(0.2) if i < 3 else 1.0, half) for i in range(40)}
    runs = [pooling.RunCells("a", "A", cells_a, {}), pooling.RunCells("b", "B", cells_b, {})]
    floor = pooling.boot_floor(runs, list(cells_a))
    need = math.sqrt(((0.2 / 1.959964) ** 2 - 2 * 0.01 ** 2) / 2)
    assert floor == pytest.approx(need)                 # 3 of 40 beyond: the 95th needs it
    runs[1].cells = {f"c{i}": comparison(math.exp(0.2) if i < 2 else 1.0, half)
                     for i in range(40)}
    assert pooling.boot_floor(runs, list(cells_a)) == 0.0   # 2 of 40: within the 5%
    # it sets the least between-boot SD of every cell of the pool
    runs[1].cells = cells_b
    pooled = pooling.pool_cells(runs, 0.05)
    assert pooled["c10"].tau == pytest.approx(need) and pooled["c10"].tau_boot > 0
    # a floor no run of the cell showed does not make it depend on the host
    assert pooled["c10"].tau_seen == 0 and not pooled["c10"].host_dependent
    # one boot, or too few values: no floor
    same_boot = [dataclasses.replace(run, boot="A") for run in runs]
    assert pooling.boot_floor(same_boot, list(cells_a)) == 0.0
    assert pooling.boot_floor(runs, ["c0", "c1"]) == 0.0


def test_the_pool_expects_a_noisier_run_by_its_own_noise():
    # three precise runs (SE 0.01) pooled; a further run sampled less (SE 0.1) lands 0.15 off:
    # beyond the printed interval (a rerun as noisy as the pool's runs), where a run with its
    # own noise is expected
    pooled = pooling.pool_cells(runs_of([1.5, 1.5, 1.5], half_width=0.0196), 0.05)["cell"]
    noisy = comparison(1.5 * math.exp(0.15), 0.196)
    assert not pooled.holds(noisy.ratio) and pooled.predicts(noisy)
    precise = comparison(1.5 * math.exp(0.15), 0.0196)
    assert not pooled.predicts(precise)
    left = pooling.RunCells("new", "z", {"cell": noisy}, {})
    found = pooling.predict(left, runs_of([1.5, 1.5, 1.5], half_width=0.0196), 0.05, ["cell"])
    assert (found.held, found.held_printed, found.cells) == (1, 0, 1)


# -- the rerun's prediction interval --------------------------------------------------------

def test_a_rerun_interval_of_equal_ses_is_the_normal_one_by_hand():
    # one variance: the mixture is N(mu, 0.01 + 0.03^2); its 97.5% point is 1.959964 SDs
    low, high = pooling.rerun_interval(0.5, 0.01, [0.03, 0.03, 0.03])
    reach = 1.959963985 * math.sqrt(0.01 + 0.03 ** 2)
    assert (low, high) == (pytest.approx(0.5 - reach), pytest.approx(0.5 + reach))
    low, high = pooling.rerun_interval(0.0, 0.0, [0.1], level=0.90)
    assert high == pytest.approx(1.644853627 * 0.1) and low == pytest.approx(-high)


def test_a_rerun_interval_is_the_mixtures_quantiles_as_scipy_has_them():
    # an equal-weights mixture of N(0, 1) and N(0, 3^2): its 97.5% point, solved by hand
    # (0.5 Φ(x) + 0.5 Φ(x / 3) = 0.975), is 4.9346; scipy's own Mixture (scipy >= 1.15)
    # gives the same for unequal SEs
    low, high = pooling.rerun_interval(0.0, 0.0, [1.0, 3.0])
    assert high == pytest.approx(4.934572563, rel=1e-8) and low == pytest.approx(-high)
    from scipy import stats as sps
    if not hasattr(sps, "Mixture"):
        pytest.skip("scipy before 1.15 has no Mixture")
    shared, ses, mu = 0.0004, [0.01, 0.02, 0.05, 0.09], math.log(2.47)
    mixture = sps.Mixture([sps.Normal(mu=mu, sigma=math.sqrt(shared + s * s)) for s in ses],
                          weights=[0.25] * 4)
    low, high = pooling.rerun_interval(mu, shared, ses)
    assert low == pytest.approx(float(mixture.icdf(0.025)), abs=1e-9)
    assert high == pytest.approx(float(mixture.icdf(0.975)), abs=1e-9)


def test_a_noisy_run_in_the_pool_widens_the_rerun_interval_beyond_the_median_se():
    # four runs at SE 0.01 and one at SE 0.1 (sampled less): the median SE says nothing of
    # the noisy run, the mixture gives it its 1 in 5 share of the tails
    ses = [0.01, 0.01, 0.01, 0.01, 0.1]
    low, high = pooling.rerun_interval(0.0, 0.0001, ses)
    median_only = 1.959964 * math.sqrt(0.0001 + 0.01 ** 2)
    assert high > 2 * median_only and high < 1.959964 * math.sqrt(0.0001 + 0.1 ** 2)


def test_a_pooled_cells_interval_is_the_rerun_interval_and_the_mean_interval_inside_it():
    half = [0.02, 0.02, 0.2]                   # the third run's interval ten times as wide
    runs = [pooling.RunCells(f"r{i}", "ab"[i % 2], {"cell": comparison(r, h)}, {})
            for i, (r, h) in enumerate(zip([1.5, 1.52, 1.45], half))]
    cell = pooling.pool_cells(runs, 0.05)["cell"]
    ses = [h / 1.959964 for h in half]
    low, high = pooling.rerun_interval(math.log(cell.estimate), cell.se_mean ** 2 + cell.tau ** 2,
                                       ses)
    assert (math.log(cell.low), math.log(cell.high)) == (pytest.approx(low), pytest.approx(high))
    assert cell.low < cell.mean_low < cell.estimate < cell.mean_high < cell.high
    assert cell.mean_high / cell.mean_low == pytest.approx(math.exp(2 * 1.959964 * cell.se_mean),
                                                           rel=1e-5)


@pytest.mark.parametrize("shared, ses", [(float("nan"), [0.1]), (0.0, []), (0.0, [0.0]),
                                         (0.0, [float("inf")]), (-1.0, [0.1])])
def test_a_rerun_interval_of_no_spread_or_a_broken_one_is_refused(shared, ses):
    with pytest.raises(ValueError, match="a rerun interval needs finite, positive spreads"):
        pooling.rerun_interval(0.0, shared, ses)


def test_the_stored_runs_pool_to_rerun_intervals_scipy_agrees_with(monkeypatch):
    """Three stored main commands of two boots (results/): every pooled cell's printed
    interval is the mixture's quantiles, recomputed apart with scipy's Mixture, and holds the
    pooled mean's."""
    from scipy import stats as sps
    # Loading a run classifies its findings, which resamples each finding's rounds
    # (stats.next_run_interval, 2000 replicates: three quarters of this test's 12 s of CPU).
    # The pooled intervals checked here use the cells' comparisons, not those resamples (they
    # only move a run's firm/borderline verdicts, which this test does not read): 50 do.
    monkeypatch.setattr(stats, "NEXT_RUN_REPLICATES", 50)
    names = ["20261124T140834Z-vm", "20261127T183426Z-vm", "20261127T184837Z-vm"]
    if not all((ROOT / "results" / name).is_dir() for name in names) \
            or not hasattr(sps, "Mixture"):
        pytest.skip("the stored runs, or scipy's Mixture, are not at hand")
    from iomatrix.commands import agreement
    runs = agreement.load_runs(names, ROOT / "results", 0.05)
    shared = sorted(set.intersection(*(set(run.cells) for run in runs)))[:40]
    pooled = pooling.pool_cells(agreement.pooled_runs(runs), 0.05, shared)
    assert len({run.boot for run in agreement.pooled_runs(runs)}) == 2
    for cell in pooled.values():
        if cell.n < 3:
            continue
        scale2 = cell.se_mean ** 2 + cell.tau ** 2
        parts = [sps.Normal(mu=math.log(cell.estimate),
                            sigma=math.sqrt(scale2 + pooling.se_of_interval(c.low, c.high) ** 2))
                 for c in cell.runs.values()]
        mixture = sps.Mixture(parts, weights=[1 / len(parts)] * len(parts))
        assert math.log(cell.high) == pytest.approx(float(mixture.icdf(0.975)), abs=1e-7)
        assert math.log(cell.low) == pytest.approx(float(mixture.icdf(0.025)), abs=1e-7)
        assert cell.low <= cell.mean_low <= cell.mean_high <= cell.high


def test_a_pooled_figure_carries_the_aa_caveat_of_any_pooled_run(tmp_path, capsys):
    # A's own twin flags nothing; C's twin reads 10% slower than its original: every pooled
    # figure of that op says so, on the main page, the pool page and in data.csv
    results = tmp_path / "results"
    make_run(results, "A", boot_id="boot-1")
    make_run(results, "B", {("3.13", READ): 1.55, ("3.13-aa", READ): 1.55}, boot_id="boot-1")
    make_run(results, "C", {("3.13", READ): 1.45, ("3.13-aa", READ): 1.6}, boot_id="boot-2")
    status, out = report_of(tmp_path, "--run-id", "A", "--pool", "B", "C")
    assert status == 0, capsys.readouterr().err
    text = out.read_text().replace("\u00a0", " ")
    assert "A/A flags this op" not in text                  # A's own twin flags nothing
    finding = [line for line in text.splitlines() if f"{READ}" in line and "pooled 1." in line]
    assert finding and all("*A/A flags it*<br>*in 1 of 3 runs*" in line for line in finding)
    assert not any("A/A flags it" in line for line in text.splitlines() if WRITE in line)
    pool_page = (out.parent / "pooled" / "pool.md").read_text().replace("\u00a0", " ")
    rows = [line for line in pool_page.splitlines() if line.startswith(f"| `{READ}`")]
    assert rows and all("*A/A flags it*<br>*in 1 of 3 runs*" in line for line in rows)
    csv = (out.parent / "pooled" / "data.csv").read_text().splitlines()
    assert any(line.startswith(f"pool,3.13,{READ},") and ",pooled_aa_flagged_runs,3.12,1,"
               in line for line in csv)
    assert any(line.startswith(f"pool,3.13,{WRITE},") and ",pooled_aa_flagged_runs,3.12,0,"
               in line for line in csv)


def three_runs(results, **fields):
    make_run(results, "A", boot_id="boot-1", **fields)
    make_run(results, "B", {("3.13", READ): 1.55, ("3.13-aa", READ): 1.55}, boot_id="boot-1",
             **fields)
    make_run(results, "C", {("3.13", READ): 1.45, ("3.13-aa", READ): 1.45}, boot_id="boot-2",
             **fields)


def test_agree_reports_leave_one_out_and_one_boot_out(tmp_path, capsys):
    results = tmp_path / "results"
    three_runs(results)
    out_json = tmp_path / "agree.json"
    status = agree_command.main(["A", "B", "C", "--results-dir", str(results),
                                 "--json", str(out_json)])
    out = capsys.readouterr().out
    assert status == 0
    assert "#### Does the pool predict a run it has not seen?" in out
    assert "**One run left out**: the pool expects its estimate in" in out
    assert "the printed interval holds it in" in out and "**The pool of all 3 runs**" in out
    assert "**One boot left out** (each in turn, 1 of the 2 boots: those with two runs" in out
    prediction = json.loads(out_json.read_text())["prediction"]
    assert [p["left_out"] for p in prediction["one_run_out"]] == ["A", "B", "C"]
    # boot-2 left out: A and B pooled, checked against C (boot-1 left out: one run remains)
    assert [p["left_out"] for p in prediction["one_boot_out"]] == ["C (boot boot-2)"]
    assert [p["cells"] for p in prediction["one_run_out"]] == [4, 4, 4]   # 2 ops x 2 steps
    assert all(0 <= p["held_printed"] <= p["cells"] for p in prediction["one_run_out"])
    assert prediction["median_width"] > 1 and prediction["boot_floor"] >= 0


def report_of(tmp_path, *argv, out_name="pooled.md"):
    out = tmp_path / "out" / out_name
    status = report.main(["--results-dir", str(tmp_path / "results"), "--out", str(out),
                          "--no-figures", *argv])
    return status, out


def test_a_pooled_report_quotes_the_pooled_figures(tmp_path, capsys):
    results = tmp_path / "results"
    three_runs(results, spec={"selection": "lutz2009"})
    make_run(results, "other", spec={"selection": "mmapio"}, started="2026-01-02T00:00:00+00:00")
    status, out = report_of(tmp_path, "--run-id", "A", "--pool")
    err = capsys.readouterr().err
    assert status == 0, err
    assert "pooled 3 runs on 2 boots: A, B, C" in err      # "other" is of another selection
    text = out.read_text().replace("\u00a0", " ")    # a finding's lines keep no-break spaces
    summary = text.split("\n\n")[1]
    assert summary.startswith("Pooled over 3 runs of this command on 2 boots, ")
    assert "## Over 3 runs on 2 boots" in text and "<br>held 3 of 3" in text
    pool_page = (out.parent / "pooled" / "pool.md").read_text()
    assert "`B` 1.55" in pool_page and "`C` 1.45" in pool_page
    csv = (out.parent / "pooled" / "data.csv").read_text().splitlines()
    pooled = [line for line in csv if line.startswith("pool,3.13,read_byLines_textMode,")]
    assert any(",pooled_rerun_to_previous_release,3.12,1.4" in line for line in pooled)
    assert any(",pooled_mean_to_previous_release,3.12,1.4" in line for line in pooled)
    assert any(",pooled_aa_flagged_runs,3.12,0," in line for line in pooled)
    # the rerun's interval and the mean's, each named, on the page
    assert "rerun [" in text and "mean [" in text and "a rerun's 95%:" in text
    assert any(",pooled_boots,3.12,2," in line for line in pooled)
    assert any(line.startswith("C,3.13,read_byLines_textMode,") and
               ",ratio_to_previous_release,3.12,1.44" in line for line in csv)
    # one run alone says so
    status, single = report_of(tmp_path, "--run-id", "A", out_name="single.md")
    assert status == 0 and "These figures are one run of one host (boot-1)" in \
        single.read_text()


def test_a_pool_of_another_profile_or_selection_is_refused_in_one_line(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", spec={"selection": "lutz2009"})
    make_run(results, "P", profile="smoke", spec={"selection": "lutz2009"})
    make_run(results, "S", spec={"selection": "mmapio"})
    for other, word in (("P", "profile 'smoke', not 'quick'"),
                        ("S", "selection 'mmapio', not 'lutz2009'")):
        status, out = report_of(tmp_path, "--run-id", "A", "--pool", other)
        err = capsys.readouterr().err
        assert status == 2 and word in err and f"run {other} is of another command" in err
        assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_an_unreadable_run_and_another_build_are_named_and_left_out(tmp_path, capsys):
    results = tmp_path / "results"
    three_runs(results)
    (results / "B" / "3.12.json").write_text('{"truncated": ')
    manifest = json.loads((results / "C" / "manifest.json").read_text())
    manifest["interpreters"]["3.13"]["version"] = "3.13.9"
    (results / "C" / "manifest.json").write_text(json.dumps(manifest))
    status, out = report_of(tmp_path, "--run-id", "A", "--pool", "B", "C", "nope")
    err = capsys.readouterr().err
    assert status == 0, err
    assert "left out run nope: not found" in err
    assert "left out run B (cannot be read: 3.12.json)" in err
    assert "left out run C's cells of 3.13 (another interpreter build" in err
    text = out.read_text()
    assert "Left out: run nope: not found; run B (cannot be read" in text
    pool_page = (out.parent / "pooled" / "pool.md").read_text()
    assert "3.12 → 3.13: `A`" in pool_page and "3.12 → 3.13: `A` 1.50 [" in pool_page
    assert "`C`" in pool_page.split("3.11 → 3.12:")[1].splitlines()[0]


def test_two_main_runs_with_pool_is_bad_input(tmp_path, capsys):
    make_run(tmp_path / "results", "A")
    status, _ = report_of(tmp_path, "--run-id", "A", "--run-id", "A", "--pool")
    assert status == 2 and "give one --run-id" in capsys.readouterr().err


# -- compressed runs ------------------------------------------------------------------------

def test_a_compressed_run_reads_as_the_plain_one(tmp_path):
    plain = make_run(tmp_path / "results", "A")
    (plain / "3.13.counters.json").write_text(json.dumps({"not": "counts"}))
    (plain / "3.13.counters.json").unlink()
    before = analysis.load_run(store.Run(tmp_path / "results", "A"))
    shutil.copytree(plain, tmp_path / "results" / "Z")
    run = store.Run(tmp_path / "results", "Z")
    done = store.compress_run(run)
    assert sorted(p.name for p in done) == ["3.11.json.gz", "3.12.json.gz", "3.13-aa.json.gz",
                                           "3.13.json.gz"]
    assert not list(run.path.glob("3.1*.json"))
    assert gzip.decompress((run.path / "3.11.json.gz").read_bytes()) == \
        (plain / "3.11.json").read_bytes()
    after = analysis.load_run(run)
    assert after.problems == [] and after.frame.equals(before.frame)
    assert run.series_file("3.12").name == "3.12.json.gz"
    assert store.Run(tmp_path / "results", "A").series_file("3.12").name == "3.12.json"
    # pyperf reads the compressed file itself
    import pyperf
    assert pyperf.BenchmarkSuite.load(str(run.path / "3.13.json.gz")).get_benchmark_names()


def test_a_damaged_compressed_file_is_named_like_a_damaged_plain_one(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A")
    run = store.Run(results, "A")
    store.compress_run(run)
    whole = (run.path / "3.11.json.gz").read_bytes()
    (run.path / "3.11.json.gz").write_bytes(whole[:len(whole) // 2])
    data = analysis.load_run(run)
    assert [name for name, _ in data.problems] == ["3.11.json.gz"]
    assert "not valid gzip, perhaps truncated" in data.problems[0][1]
    assert set(data.frame["series"]) == {"3.12", "3.13", "3.13-aa"}   # the rest is read
    (run.path / "3.11.json.gz").write_bytes(b"not gzip at all")
    status, _ = report_of(tmp_path, "--run-id", "A")
    err = capsys.readouterr().err
    assert status == 0 and "report: skipped A/3.11.json.gz:" in err
    # agree: a run with a file it cannot read is bad input, in one line
    make_run(results, "B")
    assert agree_command.main(["A", "B", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert "run A: cannot read 3.11.json.gz: " in err and len(err.splitlines()) == 1


def test_a_file_stored_both_ways_is_read_neither_way(tmp_path):
    # with other results in each (the same results, a stopped compress's leftover, are read
    # once: tests/test_disk_full.py)
    results = tmp_path / "results"
    make_run(results, "A")
    run = store.Run(results, "A")
    other = (run.path / "3.11.json").read_bytes().replace(b'"values"', b'"values" ', 1)
    (run.path / "3.11.json.gz").write_bytes(gzip.compress(other))
    data = analysis.load_run(run)
    assert [name for name, _ in data.problems] == ["3.11.json"]
    assert "stored both as 3.11.json and 3.11.json.gz" in data.problems[0][1]
    assert "3.11" not in set(data.frame["series"])


def test_a_decompression_bomb_is_refused(tmp_path):
    path = tmp_path / "3.11.json.gz"
    path.write_bytes(gzip.compress(b" " * 2_000_000))
    with pytest.raises(store.ResultFileError, match="larger than 1000000 bytes decompressed"):
        store.read_json(path, limit=1_000_000)


def test_the_committed_runs_are_compressed_and_read():
    """results/ keeps its runs' series and counters files compressed; the manifest plain."""
    runs = [run for run in store.list_runs(ROOT / "results")]
    if not runs:
        pytest.skip("no run in results/")
    for run in runs:
        assert not [p.name for p in run.series_files() if not store.is_gzip(p)], run.run_id
        assert not [p.name for p in store.counters_files(run.path)
                    if not store.is_gzip(p)], run.run_id
    newest = runs[-1]
    assert store.load_series(newest.series_file("3.13"))
    assert counts.load_counts(newest.path)


def test_compress_command_compresses_runs_and_refuses_bad_ones(tmp_path, capsys):
    import compress
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B")
    assert compress.main(["A", "nope", "--results-dir", str(results)]) == 2
    assert "run nope: no manifest.json" in capsys.readouterr().err
    assert not list((results / "A").glob("*.gz"))          # nothing touched before the check
    assert compress.main(["A", "--results-dir", str(results)]) == 0
    assert "A: 4 files compressed" in capsys.readouterr().out
    assert compress.main(["A", "--results-dir", str(results)]) == 0   # again: nothing to do
    assert "A: 0 files compressed" in capsys.readouterr().out
    (results / "B" / "3.11.json.gz").write_bytes(gzip.compress(b"{}"))
    assert compress.main(["B", "--results-dir", str(results)]) == 2
    err = capsys.readouterr().err
    assert "3.11.json stored both plain and compressed" in err and len(err.splitlines()) == 1
    (results / "B" / "3.11.json.gz").unlink()
    (results / "B" / ".parts").mkdir()
    assert compress.main(["B", "--results-dir", str(results)]) == 2
    assert "unmerged parts" in capsys.readouterr().err
    assert (results / "B" / "3.11.json").is_file()


def test_a_pool_of_one_run_is_bad_input(tmp_path, capsys):
    results = tmp_path / "results"
    make_run(results, "A", spec={"selection": "lutz2009"})
    status, out = report_of(tmp_path, "--run-id", "A", "--pool")
    err = capsys.readouterr().err
    assert status == 2 and "nothing to pool run A with (no other stored run" in err
    assert not out.exists()
    status, _ = report_of(tmp_path, "--run-id", "A", "--pool", "gone")
    assert status == 2 and "(left out: run gone: not found)" in capsys.readouterr().err


def test_an_op_whose_code_changed_is_not_pooled_across_the_change():
    # iobench's text read-modify-write changed its transform on 2026-11-27 (issue 41)
    op = "iobench_readmodify_text_utf8_lf_400KiB_4096units"
    assert pooling.revised_ops({op, "read_byLines_textMode"}, "20261126T040828Z-vm",
                               "20261127T155540Z-vm") == [op]
    assert pooling.revised_ops({op}, "20261128T000000Z-x", "20261127T155540Z-vm") == []
    assert pooling.revised_ops({op}, "20261125T231000Z-vm", "20261126T040828Z-vm") == []


def test_a_finished_session_compresses_its_merged_series_and_leaves_parts_alone(tmp_path):
    """store.compress_finished, which the matrix calls at the end of each finished session:
    merged series and counters compressed; a series still in parts (to be resumed) plain."""
    results = tmp_path / "results"
    make_run(results, "A")
    run = store.Run(results, "A")
    (run.path / "3.13.counters.json").write_text(json.dumps({"counts": 1}))
    run.parts_dir("3.12").mkdir(parents=True)          # 3.12 not merged yet
    done = store.compress_finished(run)
    assert sorted(p.name for p in done) == ["3.11.json.gz", "3.13-aa.json.gz",
                                           "3.13.counters.json.gz", "3.13.json.gz"]
    assert (run.path / "3.12.json").is_file() and (run.path / "manifest.json").is_file()
    assert store.compress_finished(run) == []           # again: nothing left to do
    assert store.read_json(run.series_file("3.13"))["benchmarks"]
