"""Where a regression stands now (analysing.status): the newest patch at hand of each minor
version, the fix between two patches at hand named from the changelog of its branch, and a
branch whose newest patch is newer than the one at hand named unknown; on the main page's row,
the suite page and data.csv. The changelogs are the trimmed NEWS of tests/data (real entries)
in real tarballs of a cache of the test's own."""
from __future__ import annotations

import csv
import io
import json

from iomatrix.analysing import analysis, status
from iomatrix.reporting import pages
from test_changelog import TRIMMED, TRIMMED_313
from test_evidence import make_tarball
from test_report import make_run, processes

OP = "read_byLines_binaryMode"
VERSIONS = {"3.11": "3.11.7", "3.12": "3.12.1", "3.13": "3.13.0", "3.13.14": "3.13.14",
            "3.13.15": "3.13.15", "3.14": "3.14.7"}
# 3.11 -> 3.12 1.8x slower; 3.13.0 still 1.6x; 3.13.14 and 3.13.15 back at 3.11's time
# (gh-144380, 3.13.12, between them); 3.14.7 too.
FACTORS = {"3.11": 1.0, "3.12": 1.8, "3.13": 1.6, "3.13.14": 1.01, "3.13.15": 1.0, "3.14": 1.0}


def status_run(tmp_path, monkeypatch, newer_312: bool = False):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    tarballs = tmp_path / "cache" / "tarballs"
    tarballs.mkdir(parents=True)
    make_tarball(tarballs / "Python-3.13.15.tar.xz", "Python-3.13.15", {"Misc/NEWS": TRIMMED_313})
    make_tarball(tarballs / "Python-3.14.7.tar.xz", "Python-3.14.7", {"Misc/NEWS": TRIMMED})
    if newer_312:   # a newer 3.12 patch is known here than the run has
        make_tarball(tarballs / "Python-3.12.2.tar.xz", "Python-3.12.2", {"Misc/NEWS": ""})
    interpreters = {label: {"version": version, "recipe": "shared-O3", "source": "pyenv",
                            "version_info": [int(p) for p in version.split(".")]}
                    for label, version in VERSIONS.items()}
    return make_run(tmp_path, {label: {OP: processes(0.010, factor)}
                               for label, factor in FACTORS.items()}, interpreters=interpreters)


def regression(an):
    return next(f for f in an.findings() if f.op == OP and f.comparison.ratio > 1)


def test_each_branch_s_newest_patch_and_the_fix_between_two_patches(tmp_path, monkeypatch):
    data = analysis.load_run(status_run(tmp_path, monkeypatch))
    an = pages.analyse(data, None, 0.05)
    assert an.lin.releases == ["3.11", "3.12", "3.13.15", "3.14"]
    f = regression(an)
    assert (f.a, f.b) == ("3.11", "3.12")
    branches = {b.minor: b for b in status.status_of(an, f)}
    assert sorted(branches) == [(3, 12), (3, 13), (3, 14)]
    assert (branches[(3, 12)].state, branches[(3, 12)].newest_known) == (status.HAS, None)
    b313 = branches[(3, 13)]
    assert (b313.release, b313.state, b313.bracket, b313.change, b313.fixed_in) == \
        ("3.13.15", status.FIXED, ("3.13.0", "3.13.14"), "gh-144380", "3.13.12")
    assert b313.words() == "3.13: fixed in 3.13.12 by gh-144380 (3.13.0 had it; 3.13.15: 1.00x)"
    # 3.14 has no earlier patch at hand: the fix is the changelog's (gh-144380 is listed in
    # 3.14.3, and the bracket of 3.13 named it), the branch measured back against 3.12
    b314 = branches[(3, 14)]
    assert (b314.state, b314.change, b314.fixed_in, b314.from_changelog) == \
        (status.FIXED, "gh-144380", "3.14.3", True)
    # the run's date is 2026-01-01: 3.12 is security-only (PEP 602 from its .0, 2023-10-02)
    assert status.short_words(an, f) == \
        "3.12 has it, security-only, will not get gh-144380; 3.13 fixed in 3.13.12 by " \
        "gh-144380; 3.14 fixed in 3.14.3 by gh-144380"
    # A speed-up has no status: it is no regression.
    faster = [g for g in an.findings() if g.comparison.ratio < 1]
    assert faster and all(status.status_of(an, g) == [] for g in faster)

    built = pages.build_pages(data)
    assert "now: 3.12 has it, security-only, will not get gh-144380<br>3.13 fixed in 3.13.12 " \
        "by gh-144380<br>3.14 fixed in 3.14.3 by gh-144380" in built.main
    assert "the newest patch of 3.12 is not known here" in built.main
    assert "taken on the run's date from a table of each minor version's .0 date" in built.main
    assert "  - now: 3.12 (security fixes only, to 2028-10): has it (3.12.1: 1.80x; newest not " \
        "known here), will not get gh-144380; 3.13 (bugfix): fixed in 3.13.12 by gh-144380 " \
        "(3.13.0 had it; 3.13.15: 1.00x); 3.14 (bugfix): fixed in 3.14.3 by gh-144380 (the " \
        "changelog's release; 3.14.7: 1.00x)" \
        in "\n".join(built.suites.values())
    rows = list(csv.DictReader(io.StringIO(built.csv)))
    step = next(r for r in rows if r["statistic"] == "ratio_to_previous_release"
                and r["series"] == "3.12" and r["op"] == OP)
    assert step["status"] == "3.12 has it, security-only, will not get gh-144380; 3.13 fixed " \
        "in 3.13.12 by gh-144380; 3.14 fixed in 3.14.3 by gh-144380"
    now = {r["series"]: r for r in rows if r["statistic"] == "now_ratio_to_older"}
    assert {s: (r["against"], r["status"], r["candidate"], r["candidate_release"])
            for s, r in now.items()} == {
        "3.12": ("3.11", "has it", "", ""),
        "3.13.15": ("3.11", "fixed", "gh-144380", "3.13.12"),
        "3.14": ("3.11", "fixed", "gh-144380", "3.14.3")}
    assert all(r["status"] == "" for r in rows if r["statistic"] == "time_s")


def test_a_branch_whose_newest_patch_is_not_at_hand_is_unknown(tmp_path, monkeypatch):
    data = analysis.load_run(status_run(tmp_path, monkeypatch, newer_312=True))
    an = pages.analyse(data, None, 0.05)
    f = regression(an)
    b312 = status.status_of(an, f)[0]
    assert (b312.minor, b312.state, b312.newest_known) == ((3, 12), status.UNKNOWN, "3.12.2")
    assert b312.words() == "3.12: unknown (3.12.1, 1.80x, still has it; 3.12.2 not at hand)"
    assert status.short_words(an, f).startswith("3.12 unknown, security-only; 3.13 fixed in "
                                                "3.13.12")
    # Nothing the status reads is written or removed: the run's files are as they were.
    manifest = json.loads((data.run.path / "manifest.json").read_text())
    assert set(manifest["interpreters"]) == set(VERSIONS)
