"""A full disk and an interrupted write (issue 56, family 5): exit 3 in one line naming what
is kept, nothing half-written; a compress killed at any point leaves every series whole.

The disk fills for real: a small tmpfs (root mounts one; elsewhere these tests skip), or the
process's file-size limit (RLIMIT_FSIZE: a real EFBIG from the kernel, no root needed). The
kills are real SIGKILLs of scripts/compress.py while it works on a large run."""
from __future__ import annotations

import gzip
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iomatrix import cli
from iomatrix.analysing import analysis
from iomatrix.commands import release
from iomatrix.storing import store
from conftest import ROOT, need
from test_agree import READ, WRITE, make_run

SCRIPTS = ROOT / "scripts"
PAGE = 4096


@pytest.fixture
def tmpfs(tmp_path):
    """mount(name, size) -> a fresh tmpfs of ``size`` under tmp_path, unmounted at the end
    (skip where the tests cannot mount)."""
    mounted = []

    def mount(name: str, size: str) -> Path:
        point = tmp_path / name
        point.mkdir()
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                               str(point)], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()[:80]})")
        mounted.append(point)
        return point
    try:
        yield mount
    finally:
        for point in mounted:
            subprocess.run(["umount", "-l", str(point)], check=False)


def fill(directory: Path, leave_pages: int) -> None:
    """Fill ``directory``'s file system but for ``leave_pages`` pages."""
    stat = os.statvfs(directory)
    free = stat.f_bavail * stat.f_frsize
    (directory / "filler").write_bytes(b"\0" * max(0, free - leave_pages * PAGE))


def script(name: str, *argv, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / f"{name}.py"), *map(str, argv)],
                          capture_output=True, text=True, timeout=300, **options)


def one_error_line(done, status: int = cli.EXIT_INTERNAL_ERROR) -> str:
    """The command's one error line, checked: ``status``, no traceback."""
    assert done.returncode == status, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def contents(directory: Path) -> dict:
    """name -> bytes of every file under ``directory`` (hidden ones too)."""
    return {str(p.relative_to(directory)): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def series_bytes(run_dir: Path) -> dict:
    """series file name (plain) -> its content, whichever form it is stored in."""
    out = {}
    for path in run_dir.glob("*.json*"):
        if path.name == store.MANIFEST or path.name.startswith("."):
            continue
        data = path.read_bytes()
        out.setdefault(store.plain_name(path), set()).add(
            gzip.decompress(data) if store.is_gzip(path) else data)
    return out


# -- compress ------------------------------------------------------------------------

def test_compress_on_a_full_disk_is_exit_3_in_one_line_and_leaves_every_file_whole(tmpfs):
    disk = tmpfs("disk", "2m")
    results = disk / "results"
    make_run(results, "A", ops=tuple(f"{READ}{k}" for k in range(60)))
    before = series_bytes(results / "A")
    fill(disk, leave_pages=1)   # the lock file's page; no room for a compressed file
    done = script("compress", "A", "--results-dir", results)
    line = one_error_line(done)
    assert line.startswith("error: run A: cannot compress ") and "No space left" in line
    assert "nothing is lost" in line and "free space and compress again" in line
    run_dir = results / "A"
    assert not [p.name for p in run_dir.iterdir() if p.name.startswith(".")]   # no lock, partial
    assert "0 files compressed before it are complete" in line
    assert not list(run_dir.glob("*.gz")) and series_bytes(run_dir) == before
    (disk / "filler").unlink()
    done = script("compress", "A", "--results-dir", results)
    assert done.returncode == 0, done.stderr
    assert series_bytes(run_dir) == before
    assert [p.name for p in run_dir.glob("*.json")] == [store.MANIFEST]   # all compressed


def _limit_file_size(limit: int):
    def limit_it():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # EFBIG, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit_it


def test_compress_stopped_by_the_file_size_limit_is_exit_3_and_leaves_the_plain_files(tmp_path):
    """No root needed: a write beyond RLIMIT_FSIZE fails with EFBIG, as a full quota does."""
    results = tmp_path / "results"
    make_run(results, "A", ops=tuple(f"{READ}{k}" for k in range(40)))
    before = contents(results / "A")
    done = script("compress", "A", "--results-dir", results, preexec_fn=_limit_file_size(1000))
    line = one_error_line(done)
    assert "error: run A: cannot compress " in line and "File too large" in line
    assert contents(results / "A") == before   # every file as it was; nothing left beside


# -- compress killed -----------------------------------------------------------------

def big_run(results: Path) -> tuple[Path, dict, dict]:
    """A run of four series of about 0.65 MB each (a compress takes a while), its series'
    bytes and each series' number of rows as the report reads them."""
    ops = tuple(f"{op}{k}" for k in range(15) for op in (READ, WRITE))
    run_dir = make_run(results, "A", ops=ops)
    for path in run_dir.glob("*.json"):   # more processes per op: a larger file
        if path.name != store.MANIFEST:
            document = json.loads(path.read_text())
            for bench in document["benchmarks"]:
                bench["runs"] = bench["runs"] * 8
            path.write_text(json.dumps(document, indent=2))
    rows = analysis.load_run(store.Run(results, "A")).frame.groupby("series").size().to_dict()
    return run_dir, series_bytes(run_dir), rows


def kill_compress_when(results: Path, seen) -> set:
    """Start scripts/compress.py on run A and kill it (SIGKILL) as soon as ``seen(names)``
    holds for the run directory's names; the names at the kill (empty: it finished first)."""
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "compress.py"), "A",
                             "--results-dir", str(results)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while proc.poll() is None:
            names = set(os.listdir(results / "A"))
            if seen(names):
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return names
            time.sleep(0.0002)
        return set()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def assert_nothing_lost(results: Path, before: dict, rows: dict) -> None:
    """Every series reads whole, once, with no file named as unread; no damaged .json.gz."""
    run_dir = results / "A"
    for path in run_dir.glob("*.json.gz"):
        gzip.decompress(path.read_bytes())   # never a half file under the final name
    data = analysis.load_run(store.Run(results, "A"))
    assert data.problems == []
    assert data.frame.groupby("series").size().to_dict() == rows
    assert series_bytes(run_dir).keys() == before.keys()
    for name, forms in series_bytes(run_dir).items():
        assert forms == before[name], name


def both_forms(names: set) -> bool:
    return any(name.endswith(".json.gz") and name[:-3] in names for name in names)


def a_half_written_compressed_file(names: set) -> bool:
    return any(".json.gz.partial-" in name for name in names)


@pytest.mark.parametrize("seen", [both_forms, a_half_written_compressed_file])
def test_a_compress_killed_midway_loses_nothing_and_the_next_one_finishes(tmp_path, seen):
    results = tmp_path / "results"
    run_dir, before, rows = big_run(results)
    for attempt in range(5):   # the half-written file lives a few ms: wait for it again
        names = kill_compress_when(results, seen)
        if names:
            break
        for path in run_dir.glob("*.gz"):   # it finished first: start over
            path.with_name(store.plain_name(path)).write_bytes(gzip.decompress(path.read_bytes()))
            path.unlink()
    assert seen(names), "compress always finished before the state was seen"
    if seen is both_forms:   # a series left in both forms is read once, never refused
        # (compress may finish that series between the listing and the kill: the state is
        # read after the kill, not from the listing)
        assert store.twice_stored(sorted(run_dir.glob("*.json*"))) == []
    assert_nothing_lost(results, before, rows)   # the report's reading: no "Files not read"
    # the next compress finishes the job
    done = script("compress", "A", "--results-dir", results)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(
        [f"{name}.gz" for name in before] + [store.MANIFEST])
    assert_nothing_lost(results, before, rows)


def test_a_damaged_compressed_file_beside_its_plain_one_is_written_again(tmp_path):
    results = tmp_path / "results"
    run_dir = make_run(results, "A")
    plain = run_dir / "3.12.json"
    whole = gzip.compress(plain.read_bytes())
    (run_dir / "3.12.json.gz").write_bytes(whole[:len(whole) // 2])   # an older copy, cut
    data = analysis.load_run(store.Run(results, "A"))
    assert data.problems == [] and "3.12" in set(data.frame["series"])   # the plain one read
    expected = plain.read_bytes()
    done = script("compress", "A", "--results-dir", results)
    assert done.returncode == 0, done.stderr
    assert gzip.decompress((run_dir / "3.12.json.gz").read_bytes()) == expected
    assert not plain.exists()


# -- compare --------------------------------------------------------------------------

def test_compare_writes_its_outputs_together_or_neither_on_a_full_disk(tmp_path, tmpfs):
    results = tmp_path / "results"
    make_run(results, "A")
    make_run(results, "B", factors={("3.12", READ): 1.3})
    sizes = tmp_path / "sizes"
    done = script("compare", "A", "B", "--results-dir", results, "--out", sizes / "c.md",
                  "--json", sizes / "c.json")
    assert done.returncode in (0, 1), done.stderr
    json_pages = -(-(sizes / "c.json").stat().st_size // PAGE)
    disk = tmpfs("out", "1m")
    fill(disk, leave_pages=json_pages)   # room for the JSON, not for the comment beside it
    done = script("compare", "A", "B", "--results-dir", results, "--out", disk / "c.md",
                  "--json", disk / "c.json")
    line = one_error_line(done)
    assert line.startswith(f"error: --json {disk / 'c.json'}, --out {disk / 'c.md'}: "
                           "cannot write (No space left on device); nothing was changed")
    assert sorted(p.name for p in disk.iterdir()) == ["filler"]   # neither, nothing hidden


# -- release --------------------------------------------------------------------------

def test_a_refused_release_run_id_leaves_the_run_as_it_was(tmp_path, capsys,
                                                         machine_interpreters):
    """A --run-id of a run made with other options is refused before anything is written:
    no lock file is left in it (the lock is taken, and dropped, with the run as it was)."""
    need(machine_interpreters, "3.12")
    need(machine_interpreters, "3.13")
    results = tmp_path / "results"
    make_run(results, "R")
    before = contents(results)
    status = release.main(["3.13", "--against", "3.12", "--profile", "smoke", "--suite",
                           "lutz2009", "--results-dir", str(results), "--run-id", "R"],
                          log=lambda *a: None)
    err = capsys.readouterr().err
    assert status == cli.EXIT_BAD_INPUT, err
    assert "run R was made with another spec" in err
    assert contents(results) == before


def test_a_live_holder_of_a_run_keeps_its_lock_file(tmp_path):
    """The lock file lives while its lock is held: a second writer is refused and leaves it;
    the holder removes it when done."""
    run = store.Run(tmp_path, "R")
    with run.exclusive():
        assert (run.path / store.LOCK_FILE).read_text().startswith(f"pid {os.getpid()} ")
        with pytest.raises(store.RunInUseError, match=f"in use by pid {os.getpid()}"):
            with store.Run(tmp_path, "R").exclusive():
                pass   # flock locks per open file: a second open of it is refused here too
        assert (run.path / store.LOCK_FILE).exists()
    assert not os.path.lexists(tmp_path / "R")   # made for the lock only: removed


CONTENDER = """import os, sys
sys.path.insert(0, sys.argv[3])
from iomatrix.storing import store
taken = 0
while taken < int(sys.argv[2]):
    try:
        with store.Run(sys.argv[1], "R").exclusive() as run:
            inside = os.open(os.path.join(sys.argv[1], "inside"), os.O_CREAT | os.O_EXCL)
            os.close(inside)   # made only while no one else is inside
            os.remove(os.path.join(sys.argv[1], "inside"))
            taken += 1
    except store.RunInUseError:
        pass
"""


def test_the_lock_file_removed_on_release_never_lets_two_writers_in(tmp_path):
    """Four processes take and drop the run's lock 150 times each: the holder removes the lock
    file while it holds it, and whoever opened the removed file opens the new one."""
    procs = [subprocess.Popen([sys.executable, "-c", CONTENDER, str(tmp_path), "150",
                               str(SCRIPTS)], stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 4, errors
    assert not os.path.lexists(tmp_path / "R") or not os.listdir(tmp_path / "R")   # no lock left


def test_a_release_into_a_run_in_use_is_exit_3_naming_its_holder(tmp_path, capsys,
                                                                 machine_interpreters):
    """Another live process holds the run (as the matrix: exit 3); its lock file is its own,
    left as it is, and the run is not said to be this call's."""
    import fcntl
    need(machine_interpreters, "3.12")
    need(machine_interpreters, "3.13")
    run_dir = tmp_path / "results" / "R"
    run_dir.mkdir(parents=True)
    with open(run_dir / store.LOCK_FILE, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("pid 12345 on testhost\n")
        lock.flush()
        status = release.main(["3.13", "--against", "3.12", "--profile", "smoke", "--suite",
                               "lutz2009", "--results-dir", str(tmp_path / "results"),
                               "--run-id", "R"], log=lambda *a: None)
    err = capsys.readouterr().err
    assert status == cli.EXIT_INTERNAL_ERROR and len(err.strip().splitlines()) == 1, err
    assert "is in use by pid 12345 on testhost" in err and "kept" not in err
    assert contents(run_dir) == {store.LOCK_FILE: b"pid 12345 on testhost\n"}


def test_release_on_a_full_disk_is_exit_3_naming_the_kept_run(tmp_path, tmpfs, capsys,
                                                              machine_interpreters):
    need(machine_interpreters, "3.12")
    need(machine_interpreters, "3.13")
    disk = tmpfs("disk", "32k")   # the manifest fits, the merged series do not
    results = disk / "results"
    status = release.main(["3.13", "--against", "3.12", "--profile", "smoke", "--suite",
                           "lutz2009", "--results-dir", str(results), "--run-id", "R"],
                          log=lambda *a: None)
    err = capsys.readouterr().err
    assert status == cli.EXIT_INTERNAL_ERROR, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("release: error: the disk is full")
    assert f"kept in {results / 'R'}" in err and "--run-id R" in err
    assert "nothing" not in err
    run_dir = results / "R"
    assert (run_dir / store.MANIFEST).is_file()
    # what the store knows as a run to resume: its manifest, no lock held, nothing half-written
    assert not (run_dir / store.LOCK_FILE).exists()
    assert store.Run(results, "R").partial_files() == []
    manifest = json.loads((run_dir / store.MANIFEST).read_text())
    assert all(entry["status"] != "ok" for entry in manifest["interpreters"].values())
