"""The main command fetches the changelogs its report needs (iomatrix/commands/changelogs.py):
offline it waits for nothing but python.org's probe, says what it could not have, and never
leaves a partial file in the cache."""
from __future__ import annotations

import time

from iomatrix.analysing import news
from iomatrix.commands import changelogs
from test_changelog import TRIMMED, make_tarball


def without_apt(monkeypatch, tmp_path):
    """A machine without apt (PATH holds no apt-get): Debian's pool cannot be asked, as on an
    offline machine; python.org is said not to answer (gather's online=False)."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))


def test_offline_on_an_empty_cache_names_what_it_could_not_have(monkeypatch, tmp_path):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("IOMATRIX_OFFLINE")        # no python.org and no apt, not the flag
    without_apt(monkeypatch, tmp_path)
    said = []
    started = time.monotonic()
    missing = changelogs.gather(["3.6.15", "3.12.1", "2.7.18"], say=said.append, online=False)
    assert time.monotonic() - started < 30      # nothing waited on a network
    assert missing == {"3.6.15": "none", "3.12.1": "none"}          # 2.7: NEWS does not cover it
    line = changelogs.summary(missing)
    assert line.startswith("iomatrix: changelogs: none for 3.6.15, 3.12.1 (") and "\n" not in line
    assert "python.org does not answer" in said[0]
    assert any("needs apt-get" in text for text in said)
    tarballs = tmp_path / "cache" / "tarballs"
    assert not tarballs.exists() or not [p for p in tarballs.iterdir() if p.suffix != ".dsc"]


def test_a_later_tarball_at_hand_covers_older_main_lines_and_its_own_branch(monkeypatch,
                                                                           tmp_path):
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path))
    without_apt(monkeypatch, tmp_path)
    make_tarball(tmp_path / "tarballs" / "Python-3.14.7.tar.xz", "3.14.7", TRIMMED)
    missing = changelogs.gather(["3.14.5", "3.13.0"], say=lambda text: None, online=False)
    # 3.14.5: its branch's NEWS up to 3.14.7 holds it; 3.13.0: 3.14's holds 3.13's main line
    assert missing == {"3.13.0": "main line only"}
    assert "only a later minor's main-line sections for 3.13.0" in changelogs.summary(missing)
    assert changelogs.gather(["3.14.7"], say=lambda text: None, online=False) == {}
    assert news.covering_changelog("3.14.5").version == "3.14.7"


def test_the_pool_release_that_covers_a_version():
    assert changelogs.pool_release_for("3.13.0") == "3.13.15"
    assert changelogs.pool_release_for("3.12.1") is None
    assert changelogs.newest_pool_release() == "3.14.7"


def test_offline_asks_nothing_and_says_what_is_missing(monkeypatch, tmp_path):
    """IOMATRIX_OFFLINE (the matrix session's fetch=False): apt on PATH, yet nothing asked."""
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path))
    said = []
    assert changelogs.gather(["3.13.0"], say=said.append, fetch=False) == {"3.13.0": "none"}
    assert said == [] and not (tmp_path / "tarballs").exists()


def test_the_main_commands_step_runs_in_the_reports_environment_and_never_fails(tmp_path):
    # The matrix session queues `nox -s changelog -- --for-report VERSION...` before the report:
    # nox's own environment has no pydantic (the cache's schema), the report's has.
    import os
    import subprocess
    import sys
    from conftest import ROOT
    env = {**os.environ, "IOMATRIX_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "changelog.py"), "--for-report",
                           "--offline", "3.12.1", "3.6.15"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("iomatrix: changelogs: none for 3.6.15, 3.12.1 (")
    assert proc.stdout.count("\n") == 1
    assert not (tmp_path / "cache" / "tarballs").exists() or \
        not any((tmp_path / "cache" / "tarballs").iterdir())
    bad = subprocess.run([sys.executable, str(ROOT / "scripts" / "changelog.py"), "--for-report",
                          "3.x"], capture_output=True, text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "error" in bad.stderr


def test_the_main_commands_step_keeps_the_news_it_parsed_for_the_report(tmp_path):
    # The step parses the tarballs at hand that cover the run's releases; their NEWS is kept as
    # JSON beside them, so the report reads that and not the whole .tar.xz stream again.
    import os
    import subprocess
    import sys
    from conftest import ROOT
    tarball = tmp_path / "cache" / "tarballs" / "Python-3.14.7.tar.xz"
    make_tarball(tarball, "3.14.7", TRIMMED)
    before = tarball.read_bytes()
    env = {**os.environ, "IOMATRIX_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "changelog.py"), "--for-report",
                           "--offline", "3.14.5"], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    kept = tarball.with_name(tarball.name + ".news.json")
    assert kept.is_file() and tarball.read_bytes() == before
    assert news.read_cache(kept).version == "3.14.7"
    assert sorted(p.name for p in kept.parent.iterdir()) == [tarball.name, kept.name]
