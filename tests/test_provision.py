"""Tests for provisioning (scripts/iomatrix/interpreters/provision.py and sources.py, its command line
scripts/provision.py).

Most tests build tests/fake_cpython/Python-9.9.9, a tree whose configure and
Makefile only write a shell-script python3, so the whole bookkeeping (cache
layout, iomatrix-build.json, cleanup, logs) runs in well under a second. One
slow test builds a real CPython tarball from the user's tarballs/ directory.
Every test works in its own IOMATRIX_CACHE under tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "provision.py"
FAKE_TREE = Path(__file__).resolve().parent / "fake_cpython" / "Python-9.9.9"
BUILD_INFO_KEYS = {
    "version", "python_version", "free_threaded", "configure_args", "recipe", "optimized",
    "tarball", "sha256", "build_seconds", "built_at", "log",
}
OFFLINE_URL = "http://127.0.0.1:9/x.tar.xz"  # nothing listens on the discard port

from iomatrix.interpreters import build_stages, provision, sources


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("IOMATRIX_CACHE", str(root))
    for name in ("FAKE_CPYTHON_FAIL", "FAKE_CPYTHON_MAKE_SLEEP", "FAKE_CPYTHON_MISSING"):
        monkeypatch.delenv(name, raising=False)
    return root


def make_tarball(dest: Path, top: str = "Python-9.9.9") -> Path:
    """Pack the fake tree as dest, with top as its top directory."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(dest, "w:xz") as tar:
        tar.add(FAKE_TREE, arcname=top)
    return dest


@pytest.fixture
def fake_tarball(tmp_path):
    return make_tarball(tmp_path / "src" / "Python-9.9.9.tar.xz")


def snapshot(root: Path) -> list[str]:
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def pythons_entries(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "pythons").iterdir())


# --- versions -------------------------------------------------------------

@pytest.mark.parametrize(
    "text, release, pre, free_threaded, debian",
    [
        ("3.14.7", "3.14.7", "", False, "3.14.7"),
        ("3.14.7t", "3.14.7", "", True, "3.14.7"),
        ("3.15.0rc2", "3.15.0", "rc2", False, "3.15.0~rc2"),
        ("3.15.0b1t", "3.15.0", "b1", True, "3.15.0~b1"),
    ],
)
def test_parse_version(text, release, pre, free_threaded, debian):
    version = sources.parse_version(text)
    assert (version.release, version.pre, version.free_threaded) == (release, pre, free_threaded)
    assert version.debian_upstream == debian
    assert version.tarball_names[1] == f"python{version.series}_{debian}.orig.tar.xz"


def test_version_order():
    texts = ["3.14.10", "3.15.0", "3.14.7t", "3.15.0rc2", "3.14.7", "3.15.0a1", "3.15.0b3"]
    ordered = sorted(texts, key=lambda t: sources.parse_version(t).sort_key)
    assert ordered == ["3.14.7", "3.14.7t", "3.14.10", "3.15.0a1", "3.15.0b3", "3.15.0rc2", "3.15.0"]


def test_official_url():
    assert sources.parse_version("3.14.7t").official_url == (
        "https://www.python.org/ftp/python/3.14.7/Python-3.14.7.tar.xz"
    )
    assert sources.parse_version("3.15.0rc2").official_url == (
        "https://www.python.org/ftp/python/3.15.0/Python-3.15.0rc2.tar.xz"
    )


@pytest.mark.parametrize("text", ["3.x", "banana", "3.14", "3.14.7tt", "3.14.7-t", "", "3.14.7rc",
                                  "\u0663.\u0661\u0664.\u0667", "3.14.\u0667"])
def test_invalid_version_is_a_usage_error(cache, capsys, text):
    with pytest.raises(sources.UsageError, match="is not a version"):
        sources.parse_version(text)
    assert provision.main([text]) == 2
    assert "is not a version" in capsys.readouterr().err
    assert not cache.exists()


def test_cache_root(monkeypatch, tmp_path):
    monkeypatch.delenv("IOMATRIX_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert provision.cache_root() == tmp_path / "xdg" / "iomatrix"
    monkeypatch.setenv("IOMATRIX_CACHE", str(tmp_path / "mine"))
    assert provision.cache_root() == tmp_path / "mine"


# --- builds with the fake tree ---------------------------------------------

def test_build_layout_and_build_info(cache, fake_tarball, capsys):
    prefix = provision.build("9.9.9", tarball=fake_tarball, jobs=1)
    assert prefix == cache / "pythons" / "9.9.9"
    assert pythons_entries(cache) == ["9.9.9", "logs"]

    info = json.loads((prefix / "iomatrix-build.json").read_text())
    assert BUILD_INFO_KEYS <= info.keys()
    assert info["version"] == "9.9.9"
    assert info["python_version"] == "9.9.9"
    assert info["free_threaded"] is False
    assert info["optimized"] is False
    # The lineage recipe, by default: pyenv's shared libpython, found through an rpath.
    assert info["recipe"] == "lineage"
    assert info["configure_args"] == [f"--prefix={prefix}", "--enable-shared",
                                      f"LDFLAGS=-Wl,-rpath,{prefix / 'lib'}"]
    assert info["tarball"] == str(fake_tarball)
    assert info["sha256"] == sources.sha256_of(fake_tarball)
    assert info["build_seconds"] >= 0
    assert info["built_at"].endswith("+00:00")
    assert info["missing_modules"] == []
    log = Path(info["log"])
    assert log.parent == cache / "pythons" / "logs" and log.exists()
    assert "=== make ===" in log.read_text()

    # Installed with --prefix of the final directory: runs from there.
    python3 = prefix / "bin" / "python3"
    assert os.readlink(python3) == "python9.9"
    out = subprocess.run([python3, "-V"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "Python 9.9.9"

    (build,) = provision.list_builds()
    assert build["prefix"] == str(prefix) and build["python"] == str(python3)
    assert build["version"] == "9.9.9"
    assert provision.list_builds(cache) == [build]

    out = capsys.readouterr().out
    for stage in ("unpack", "configure", "make", "install"):
        assert f"{stage} done" in out
    assert str(log) in out


def test_missing_modules_are_recorded(cache, fake_tarball, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CPYTHON_MISSING", "_dbm                  _decimal              _gdbm")
    prefix = provision.build("9.9.9", tarball=fake_tarball)
    info = json.loads((prefix / "iomatrix-build.json").read_text())
    assert info["missing_modules"] == ["_dbm", "_decimal", "_gdbm"]
    assert "warning: built without _dbm, _decimal, _gdbm" in capsys.readouterr().out


def test_free_threaded_and_optimized_configure_args(cache, fake_tarball):
    prefix = provision.build("9.9.9t", tarball=fake_tarball, optimized=True, jobs=1)
    info = json.loads((prefix / "iomatrix-build.json").read_text())
    assert info["free_threaded"] is True and info["optimized"] is True
    assert info["recipe"] == "release" and prefix.name == "9.9.9t-pgo"
    assert info["configure_args"] == [
        f"--prefix={prefix}", "--disable-gil", "--enable-optimizations", "--with-lto",
    ]
    assert os.readlink(prefix / "bin" / "python3") == "python9.9t"  # added by provision


def test_one_version_under_every_recipe_side_by_side(cache, fake_tarball, capsys):
    for recipe in ("static", "release", "lineage"):
        assert provision.main(["9.9.9", "--tarball", str(fake_tarball), "--recipe", recipe]) == 0
    assert pythons_entries(cache) == ["9.9.9", "9.9.9-pgo", "9.9.9-static", "logs"]
    builds = provision.list_builds()
    assert [(Path(b["prefix"]).name, b["recipe"]) for b in builds] == [
        ("9.9.9", "lineage"), ("9.9.9-pgo", "release"), ("9.9.9-static", "static")]
    static = json.loads((cache / "pythons" / "9.9.9-static" / "iomatrix-build.json").read_text())
    assert static["configure_args"] == [f"--prefix={cache / 'pythons' / '9.9.9-static'}"]
    assert sorted(log.name.split("-2")[0] for log in (cache / "pythons" / "logs").iterdir()) == [
        "9.9.9", "9.9.9-pgo", "9.9.9-static"]


def test_unknown_recipe_lists_the_known_ones(cache, fake_tarball, capsys):
    assert provision.main(["9.9.9", "--tarball", str(fake_tarball), "--recipe", "fast"]) == 2
    err = capsys.readouterr().err
    assert "unknown recipe 'fast'; known recipes: lineage (" in err
    assert "release (" in err and "static (" in err
    assert not cache.exists()


def test_optimized_is_the_release_recipe_and_contradicts_another(cache, fake_tarball, capsys):
    argv = ["9.9.9", "--tarball", str(fake_tarball), "--optimized"]
    assert provision.main(argv + ["--recipe", "static"]) == 2
    assert "contradicts --recipe static" in capsys.readouterr().err
    assert provision.main(argv) == 0
    assert pythons_entries(cache) == ["9.9.9-pgo", "logs"]


def test_a_build_from_before_recipes_is_not_taken_for_the_lineages(cache, fake_tarball):
    old = cache / "pythons" / "9.9.9"
    old.mkdir(parents=True)
    (old / "iomatrix-build.json").write_text(json.dumps(
        {"version": "9.9.9", "configure_args": [f"--prefix={old}"], "optimized": False}))
    with pytest.raises(provision.ProvisionError, match=(
            r"holds a static build of 9.9.9 .*move it to .*pythons/9.9.9-static to keep it")):
        provision.build("9.9.9", tarball=fake_tarball)
    assert provision.list_builds()[0]["recipe"] == "static"  # it still counts as what it is
    assert pythons_entries(cache) == ["9.9.9"]  # refused before anything was written


def test_a_build_that_does_not_start_in_place_is_taken_out(cache, tmp_path, capsys):
    # A python that runs from the staging directory only, as a shared build whose rpath
    # were wrong would: it is not left installed.
    tree = tmp_path / "tree" / "Python-9.9.9"
    import shutil
    shutil.copytree(FAKE_TREE, tree)
    script = (tree / "python.in").read_text()
    (tree / "python.in").write_text(script.replace(
        '#!/bin/sh\n', '#!/bin/sh\ncase "$0" in *.partial-*) ;; *) '
        'echo "error while loading shared libraries: libpython9.9.so.1.0" >&2; exit 127;; esac\n', 1))
    tarball = tmp_path / "Python-9.9.9.tar.xz"
    with tarfile.open(tarball, "w:xz") as tar:
        tar.add(tree, arcname="Python-9.9.9")
    assert provision.main(["9.9.9", "--tarball", str(tarball)]) == 3
    err = capsys.readouterr().err
    (log,) = (cache / "pythons" / "logs").iterdir()
    assert "check in place failed" in err and "libpython9.9.so.1.0" in err and str(log) in err
    assert pythons_entries(cache) == ["logs"]


def test_second_build_does_nothing(cache, fake_tarball, capsys):
    prefix = provision.build("9.9.9", tarball=fake_tarball)
    before = {p: p.stat().st_mtime_ns for p in prefix.rglob("*")}
    logs = snapshot(cache / "pythons" / "logs")
    capsys.readouterr()

    assert provision.main(["9.9.9", "--tarball", str(fake_tarball)]) == 0
    assert f"9.9.9 already built at {prefix}" in capsys.readouterr().out
    assert {p: p.stat().st_mtime_ns for p in prefix.rglob("*")} == before
    assert snapshot(cache / "pythons" / "logs") == logs


def test_tarball_found_in_tarballs_dir(cache):
    make_tarball(cache / "tarballs" / "Python-9.9.9.tar.xz")
    prefix = provision.build("9.9.9")
    info = json.loads((prefix / "iomatrix-build.json").read_text())
    assert info["tarball"] == str(cache / "tarballs" / "Python-9.9.9.tar.xz")


def test_debian_orig_tarball_name_and_dsc_checksum(cache):
    # 9.9.9rc1 is Debian's 9.9.9~rc1; the .dsc beside it vouches for it.
    tarball = make_tarball(cache / "tarballs" / "python9.9_9.9.9~rc1.orig.tar.xz", "Python-9.9.9rc1")
    digest = sources.sha256_of(tarball)
    dsc = cache / "tarballs" / "python9.9_9.9.9~rc1-1.dsc"
    dsc.write_text(f"Format: 3.0 (quilt)\nChecksums-Sha256:\n {digest} 123 {tarball.name}\nFiles:\n")
    prefix = provision.build("9.9.9rc1")
    info = json.loads((prefix / "iomatrix-build.json").read_text())
    assert info["python_version"] == "9.9.9rc1" and info["sha256"] == digest


def test_dsc_checksum_mismatch(cache):
    tarball = make_tarball(cache / "tarballs" / "python9.9_9.9.9.orig.tar.xz")
    wrong = "0" * 64
    dsc = cache / "tarballs" / "python9.9_9.9.9-1.dsc"
    dsc.write_text(f"Checksums-Sha256:\n {wrong} 123 {tarball.name}\n")
    before = snapshot(cache)
    with pytest.raises(provision.ProvisionError, match=f"expected sha256 {wrong}.*{dsc.name}"):
        provision.build("9.9.9")
    assert snapshot(cache) == before


def test_checksum_mismatch_names_both_digests(cache, fake_tarball, capsys):
    wrong = "ab" * 32
    actual = sources.sha256_of(fake_tarball)
    assert provision.main(["9.9.9", "--tarball", str(fake_tarball), "--sha256", wrong]) == 2
    err = capsys.readouterr().err
    assert wrong in err and actual in err
    assert not cache.exists()
    # The right digest builds.
    assert provision.main(["9.9.9", "--tarball", str(fake_tarball), "--sha256", actual.upper()]) == 0


def test_corrupt_tarball(cache, tmp_path, capsys):
    bad = tmp_path / "Python-9.9.9.tar.xz"
    bad.write_bytes(b"this is not an xz stream\n" * 100)
    assert provision.main(["9.9.9", "--tarball", str(bad)]) == 2
    assert "not a readable source tarball" in capsys.readouterr().err
    assert not cache.exists()


def test_truncated_tarball(cache, fake_tarball, tmp_path):
    cut = tmp_path / "cut.tar.xz"
    data = fake_tarball.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(provision.ProvisionError, match="not a readable source tarball"):
        provision.build("9.9.9", tarball=cut)
    assert not cache.exists()


def test_tarball_that_is_not_cpython(cache, tmp_path):
    other = tmp_path / "other.tar.xz"
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "README").write_text("hi\n")
    with tarfile.open(other, "w:xz") as tar:
        tar.add(tmp_path / "proj", arcname="proj")
    with pytest.raises(provision.ProvisionError, match="no proj/configure"):
        provision.build("9.9.9", tarball=other)
    assert not cache.exists()


def test_wrong_version_in_tarball(cache, fake_tarball):
    # The fake reports the version in its directory name: 9.9.9, not 9.9.8.
    with pytest.raises(provision.ProvisionError, match="built Python 9.9.9, not 9.9.8"):
        provision.build("9.9.8", tarball=fake_tarball)
    assert pythons_entries(cache) == ["logs"]


@pytest.mark.parametrize("stage", ["configure", "make", "install"])
def test_failed_stage_leaves_only_the_log(cache, fake_tarball, monkeypatch, capsys, stage):
    monkeypatch.setenv("FAKE_CPYTHON_FAIL", stage)
    assert provision.main(["9.9.9", "--tarball", str(fake_tarball)]) == 3
    err = capsys.readouterr().err
    (log,) = (cache / "pythons" / "logs").iterdir()
    assert f"{stage} failed" in err and str(log) in err
    assert f"fake {stage}: failing on purpose" in log.read_text()
    assert pythons_entries(cache) == ["logs"]
    assert provision.list_builds() == []
    # The cause fixed, the next run builds.
    monkeypatch.delenv("FAKE_CPYTHON_FAIL")
    assert provision.main(["9.9.9", "--tarball", str(fake_tarball)]) == 0
    assert pythons_entries(cache) == ["9.9.9", "logs"]


def test_heartbeat_during_make(cache, fake_tarball, monkeypatch):
    monkeypatch.setattr(build_stages, "HEARTBEAT_SECONDS", 0.1)
    monkeypatch.setenv("FAKE_CPYTHON_MAKE_SLEEP", "0.5")
    lines = []
    provision.build("9.9.9", tarball=fake_tarball, say=lines.append)
    beats = [line for line in lines if line.startswith("make: still running")]
    assert beats and "log: " in beats[0]


def test_interrupt_during_make(cache, fake_tarball, monkeypatch):
    monkeypatch.setattr(build_stages, "HEARTBEAT_SECONDS", 0.1)
    monkeypatch.setenv("FAKE_CPYTHON_MAKE_SLEEP", "30")
    lines = []

    def say(text):
        lines.append(text)
        if "still running" in text:
            raise KeyboardInterrupt

    begun = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        provision.build("9.9.9", tarball=fake_tarball, say=say)
    assert time.monotonic() - begun < 15  # make and its sleep were stopped
    (log,) = (cache / "pythons" / "logs").iterdir()
    assert "interrupted" in lines[-1] and str(log) in lines[-1]
    assert pythons_entries(cache) == ["logs"]


def test_stale_partial_is_removed(cache, fake_tarball):
    dead = cache / "pythons" / ".9.9.9.partial-999999999"
    (dead / "src").mkdir(parents=True)
    provision.build("9.9.9", tarball=fake_tarball)
    assert pythons_entries(cache) == ["9.9.9", "logs"]


def test_partial_of_a_live_build_is_left_alone(cache, fake_tarball, monkeypatch):
    # pid 4242 belongs to another user: kill(pid, 0) fails with EPERM, so it is alive.
    live = cache / "pythons" / ".9.9.9.partial-4242"
    (live / "src").mkdir(parents=True)
    real_kill = os.kill

    def kill(pid, sig):
        if pid == 4242:
            raise PermissionError(1, "Operation not permitted")
        return real_kill(pid, sig)

    monkeypatch.setattr(os, "kill", kill)
    lines = []
    provision.build("9.9.9", tarball=fake_tarball, say=lines.append)
    assert (live / "src").is_dir()
    assert f"leaving {live}: its build (pid 4242) is still running" in lines


def test_stale_partial_with_an_impossible_pid_is_removed(cache, fake_tarball):
    dead = cache / "pythons" / ".9.9.9.partial-99999999999999999999"
    dead.mkdir(parents=True)
    provision.build("9.9.9", tarball=fake_tarball)
    assert pythons_entries(cache) == ["9.9.9", "logs"]


def test_existing_directory_without_build_info(cache, fake_tarball):
    (cache / "pythons" / "9.9.9").mkdir(parents=True)
    with pytest.raises(provision.ProvisionError, match="holds no iomatrix-build.json"):
        provision.build("9.9.9", tarball=fake_tarball)


def test_list_builds_ignores_partial_and_broken(cache, fake_tarball):
    provision.build("9.9.9", tarball=fake_tarball)
    (cache / "pythons" / ".9.9.9t.partial-1").mkdir()
    (cache / "pythons" / "9.9.8").mkdir()
    (cache / "pythons" / "9.9.8" / "iomatrix-build.json").write_text("{not json")
    provision.build("9.9.10", tarball=make_tarball(cache.parent / "Python-9.9.10.tar.xz", "Python-9.9.10"))
    assert [b["version"] for b in provision.list_builds()] == ["9.9.9", "9.9.10"]
    assert provision.list_builds(cache / "nowhere") == []


# --- downloads -------------------------------------------------------------

def test_offline_download_fails_fast(cache, capsys, monkeypatch):
    monkeypatch.delenv("IOMATRIX_OFFLINE")        # a network that does not answer, not the flag
    begun = time.monotonic()
    assert provision.main(["9.9.9", "--url", OFFLINE_URL]) == 3
    assert time.monotonic() - begun < sources.DOWNLOAD_TIMEOUT
    err = capsys.readouterr().err
    assert f"download of {OFFLINE_URL} failed" in err and "--tarball" in err
    assert not cache.exists()


def test_default_url_when_nothing_in_tarballs(cache, monkeypatch):
    urls = []

    def fake_download(url, dest, say, timeout=sources.DOWNLOAD_TIMEOUT):
        urls.append(url)
        raise sources.ProvisionError(f"download of {url} failed: offline")

    monkeypatch.setattr(sources, "download", fake_download)
    with pytest.raises(provision.ProvisionError, match="offline"):
        provision.build("3.15.0rc2t")
    assert urls == ["https://www.python.org/ftp/python/3.15.0/Python-3.15.0rc2.tar.xz"]


# --- command line ----------------------------------------------------------

@pytest.mark.parametrize(
    "argv, message",
    [
        (["9.9.9", "9.9.8", "--tarball", "x.tar.xz"], "--tarball applies to one VERSION"),
        (["9.9.9", "--sha256", "xyz"], "is not a sha256"),
        (["9.9.9", "--tarball", "/no/such/file.tar.xz"], "no such file"),
        (["9.9.9", "--jobs", "0"], "--jobs must be at least 1"),
    ],
)
def test_usage_errors(cache, capsys, argv, message):
    assert provision.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not cache.exists()


def test_help_mentions_online_route():
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--help"], capture_output=True, text=True, check=True
    )
    assert "uv python install" in proc.stdout and "--download-python always" in proc.stdout
    assert "--download-python always" in provision.__doc__


def test_runs_as_a_script(cache, fake_tarball):
    proc = subprocess.run(
        [sys.executable, SCRIPT, "--tarball", str(fake_tarball), "9.9.9"],
        capture_output=True, text=True, env=dict(os.environ, IOMATRIX_CACHE=str(cache)),
    )
    assert proc.returncode == 0, proc.stderr
    assert "built 9.9.9" in proc.stdout


# --- uv --------------------------------------------------------------------

def fake_uv(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    uv = bin_dir / "uv"
    uv.write_text(f"#!/bin/sh\n{body}\n")
    uv.chmod(0o755)


def test_uv_missing(cache, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert provision.main(["--uv", "3.14.7"]) == 3
    assert "uv is not installed" in capsys.readouterr().err


def test_uv_offline(cache, tmp_path, monkeypatch, capsys):
    fake_uv(tmp_path / "bin", 'echo "error: failed to lookup address information" >&2; exit 1')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin")
    assert provision.main(["--uv", "3.14.7t"]) == 3
    err = capsys.readouterr().err
    assert "uv python install 3.14.7t failed" in err and "lookup address" in err


def test_uv_hanging_times_out(tmp_path, monkeypatch):
    fake_uv(tmp_path / "bin", "sleep 30")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin")
    begun = time.monotonic()
    with pytest.raises(provision.ProvisionError, match="gave no result within 0.5s"):
        provision.uv_install([sources.parse_version("3.14.7")], timeout=0.5)
    assert time.monotonic() - begun < 15


def test_uv_passes_version_and_fast_fail_settings(tmp_path, monkeypatch, capsys):
    fake_uv(tmp_path / "bin", 'echo "uv $* timeout=$UV_HTTP_TIMEOUT retries=$UV_HTTP_RETRIES"')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin:/bin")
    monkeypatch.delenv("UV_HTTP_TIMEOUT", raising=False)
    monkeypatch.delenv("UV_HTTP_RETRIES", raising=False)
    assert provision.main(["--uv", "3.14.7t"]) == 0
    assert "uv python install 3.14.7t timeout=15 retries=0" in capsys.readouterr().out


# --- a real build ----------------------------------------------------------

def smallest_real_tarball() -> Path | None:
    # The user's real cache is only read here, never written.
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    tarballs = Path(xdg) / "iomatrix" / "tarballs"
    found = [p for p in tarballs.glob("*.tar.xz") if not p.name.startswith(".")]
    return min(found, key=lambda p: p.stat().st_size) if found else None


@pytest.mark.slow
def test_real_build(cache):
    tarball = smallest_real_tarball()
    if tarball is None:
        pytest.skip("no CPython tarball in ~/.cache/iomatrix/tarballs (see scripts/provision.py)")
    version = sources.inspect_tarball(tarball).removeprefix("Python-")
    prefix = provision.build(version, tarball=tarball)
    info = json.loads((prefix / "iomatrix-build.json").read_text())
    assert info["python_version"] == version
    out = subprocess.run(
        [prefix / "bin" / "python3", "-c", "import platform, ssl, sqlite3, lzma; print(platform.python_version())"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert out.strip() == version
    # The lineage recipe: read back as pyenv's builds read (shared-O3; -fp from 3.15 on, by
    # CPython's default), on the build's own libpython.
    from iomatrix.interpreters import discovery
    python3 = str(prefix / "bin" / "python3")
    facts = discovery.build_facts(discovery.probe(python3), "provisioned")
    assert facts["recipe"] in ("shared-O3", "shared-O3-fp")
    ldd = subprocess.run(["ldd", python3], capture_output=True, text=True, check=True).stdout
    assert f"{prefix}/lib/libpython" in ldd


def test_the_provision_session_passes_on_the_exit_status(cache):
    from conftest import run_nox
    done = run_nox("-s", "provision", "--", "9.9.9", "--recipe", "fast",
                   env=dict(os.environ, IOMATRIX_CACHE=str(cache)))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "unknown recipe 'fast'; known recipes: lineage" in done.stderr
    assert not cache.exists()


# --- hostile tarballs: refused before anything is extracted -------------------

def hostile_tarball(path: Path, member: tarfile.TarInfo, data: bytes = b"") -> Path:
    """A tarball of the fake tree plus one hostile member."""
    import io
    with tarfile.open(path, "w:gz") as tar:
        tar.add(FAKE_TREE, arcname="Python-9.9.9")
        tar.addfile(member, io.BytesIO(data) if member.isreg() else None)
    return path


def member(name: str, kind=tarfile.REGTYPE, **fields) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for key, value in fields.items():
        setattr(info, key, value)
    return info


@pytest.mark.parametrize("hostile, says", [
    (member("Python-9.9.9/evil", tarfile.SYMTYPE, linkname="/etc/passwd"), "is a symbolic link"),
    (member("Python-9.9.9/ln", tarfile.LNKTYPE, linkname="/etc/passwd"), "is a hard link"),
    (member("Python-9.9.9/dev", tarfile.CHRTYPE, devmajor=1, devminor=3), "is a device"),
    (member("Python-9.9.9/fifo", tarfile.FIFOTYPE), "is a fifo"),
    (member("/tmp/iomatrix-abs"), "unsafe path"),
    (member("Python-9.9.9/../../escape"), "unsafe path"),
])
def test_a_hostile_member_is_refused_before_extraction(cache, tmp_path, capsys, hostile, says):
    tarball = hostile_tarball(tmp_path / "hostile.tar.gz", hostile)
    assert provision.main(["9.9.9", "--tarball", str(tarball)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert says in err and repr(hostile.name) in err and "refused before extraction" in err
    assert not cache.exists()   # nothing unpacked, nothing built
    assert not (tmp_path / "escape").exists() and not Path("/tmp/iomatrix-abs").exists()


def test_a_3_gib_member_is_refused_from_its_header(cache, tmp_path, capsys):
    # Only the header of the 3 GiB member is written: it is refused from the header, before
    # a byte of its data would be read (there is none to read).
    tarball = tmp_path / "big.tar"
    with tarfile.open(tarball, "w") as tar:
        tar.add(FAKE_TREE, arcname="Python-9.9.9")
    big = member("Python-9.9.9/huge", size=3 << 30)
    # Strip tarfile's end-of-archive blocks and padding, then append the big header.
    body = tarball.read_bytes().rstrip(b"\0")
    body += b"\0" * (-len(body) % 512)
    tarball.write_bytes(body + big.tobuf(tarfile.GNU_FORMAT) + b"\0" * 512)
    assert provision.main(["9.9.9", "--tarball", str(tarball)]) == 2
    err = capsys.readouterr().err
    assert "'Python-9.9.9/huge' is 3,221,225,472 bytes; at most 64 MiB a member" in err
    assert not cache.exists()


def test_members_over_the_total_are_refused(cache, fake_tarball, monkeypatch, capsys):
    monkeypatch.setattr(sources, "MAX_TOTAL_BYTES", 1000)
    assert provision.main(["9.9.9", "--tarball", str(fake_tarball)]) == 2
    assert "add up to more than" in capsys.readouterr().err
    assert not cache.exists()


def test_extraction_checks_members_again(tmp_path, fake_tarball):
    # The second read (extraction) applies the same checks: a tarball swapped for a hostile
    # one after inspection is stopped at its hostile member.
    hostile = hostile_tarball(tmp_path / "h.tar.gz", member("Python-9.9.9/l", tarfile.SYMTYPE,
                                                            linkname="/"))
    with pytest.raises(sources.BadTarball, match="symbolic link"):
        sources.extract(hostile, tmp_path / "out")
    assert not (tmp_path / "out" / "Python-9.9.9" / "l").exists()
    sources.extract(fake_tarball, tmp_path / "ok")
    assert (tmp_path / "ok" / "Python-9.9.9" / "configure").is_file()


# --- --newest: the newest release of each minor version ------------------------

from iomatrix.interpreters import discovery, newest  # noqa: E402


def cpython(label, version, free_threaded=False):
    return discovery.Interpreter(label, f"/x/{label}", "pyenv", {
        "version": version, "implementation": "cpython", "free_threaded": free_threaded})


POOL_LISTING = """<a href="python3.14_3.14.4-1.dsc">python3.14_3.14.4-1.dsc</a>
<a href="python3.14_3.14.4.orig.tar.xz">python3.14_3.14.4.orig.tar.xz</a>
<a href="python3.14_3.14.7.orig.tar.xz">python3.14_3.14.7.orig.tar.xz</a>
<a href="python3.14_3.14.0~rc3.orig.tar.xz">python3.14_3.14.0~rc3.orig.tar.xz</a>"""


def test_newest_plan_builds_what_is_missing_and_names_what_cannot_be_had(tmp_path, monkeypatch):
    tarballs = tmp_path / "tarballs"
    tarballs.mkdir()
    (tarballs / "python3.13_3.13.15.orig.tar.xz").write_bytes(b"")
    (tarballs / "Python-3.13.14.tar.xz").write_bytes(b"")
    listings = {"python3.14/": POOL_LISTING}
    monkeypatch.setattr(newest, "_fetch", lambda url: next(
        (text for key, text in listings.items() if url.endswith(key)), None))
    monkeypatch.setattr(newest, "offers_in_apt", lambda series: [])
    here = [cpython("3.12", "3.12.1"), cpython("3.13", "3.13.0")]
    steps, notes = newest.plan(here, tarballs, free_threaded=True, online=False)
    described = [step.describe() for step in steps]
    assert "3.13: build 3.13.15 (from the cache's tarballs/)" in described
    assert "3.13: build 3.13.15t (from the cache's tarballs/)" in described
    assert "3.14: build 3.14.7 (from Debian's pool)" in described
    assert "3.15: could not obtain a release (no source offers one)" in described
    assert not any(step.series == "3.12" for step in steps)   # nothing offers a 3.12
    assert any("python3.15/" in note for note in notes)


def test_newest_plan_leaves_what_is_here(tmp_path, monkeypatch):
    monkeypatch.setattr(newest, "_fetch", lambda url: None)
    monkeypatch.setattr(newest, "offers_in_apt", lambda series: [])
    tarballs = tmp_path / "tarballs"
    tarballs.mkdir()
    (tarballs / "python3.15_3.15.0~rc2.orig.tar.xz").write_bytes(b"")
    here = [cpython("3.15", "3.15.0rc2"), cpython("3.14", "3.14.7")]
    steps, _ = newest.plan(here, tarballs, online=False)
    assert [s.action for s in steps if s.series == "3.15"] == ["have"]
    assert newest.parse_python_org_listing('<a href="3.14.7/">3.14.7/</a><a href="2.7.18/">'
                                           ) == ["3.14.7"]


def test_newest_list_prints_the_plan_and_builds_nothing(cache, monkeypatch, capsys):
    step = newest.Step("3.14", "build", sources.parse_version("3.14.7"), "Debian's pool")
    monkeypatch.setattr(newest, "default_plan", lambda free_threaded, twins: (
        [step, newest.Step("3.15", "none", note="no source offers one")], ["python.org is not "
                                                                           "reachable"]))
    assert provision.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "3.14: would build 3.14.7 (from Debian's pool)" in out
    assert "could not obtain: 3.15" in out
    assert not cache.exists()
    assert provision.main(["3.14.7", "--newest"]) == 2


def test_offline_means_no_network_door_opens(tmp_path, monkeypatch):
    """IOMATRIX_OFFLINE: every fetch (python.org, Debian's pool, apt's downloader, the
    newest-release probes, a changelog) is refused with the reason, and nothing is written."""
    from iomatrix.analysing import news
    from iomatrix.commands import bisect_points
    from iomatrix.interpreters import newest, sources
    monkeypatch.setenv("IOMATRIX_OFFLINE", "1")
    assert sources.offline()
    with pytest.raises(sources.ProvisionError, match="IOMATRIX_OFFLINE is set"):
        sources.download("https://www.python.org/ftp/python/3.14.7/Python-3.14.7.tgz",
                         tmp_path / "t" / "x.tgz", say=lambda text: None)
    with pytest.raises(sources.ProvisionError, match="IOMATRIX_OFFLINE is set"):
        sources.debian_fetch(sources.parse_version("3.14.7"), tmp_path / "t", say=lambda t: None)
    assert "IOMATRIX_OFFLINE" in sources._apt_helper_fetch("http://deb.invalid/x", tmp_path / "y",
                                                           say=lambda text: None)
    assert not bisect_points.python_org_reachable()
    assert newest._fetch(newest.PYTHON_ORG) is None
    said = []
    assert news.changelog_for("3.9.99", say=said.append, directory=tmp_path / "t") is None
    assert any("IOMATRIX_OFFLINE" in line for line in said)
    assert not (tmp_path / "t").exists() and not (tmp_path / "y").exists()
    monkeypatch.setenv("IOMATRIX_OFFLINE", "0")
    assert not sources.offline()
