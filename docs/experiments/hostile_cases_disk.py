"""Issue 56, family 5: a full disk and an interrupted write (loaded by hostile_probe.py).

A full disk is real: a small tmpfs mounted in the case's directory (as root; unmounted when
the probe ends), else the command runs under a file-size limit (RLIMIT_FSIZE, a real EFBIG
from the kernel on a large write). What a killed compress leaves (a series stored plain and
compressed, a damaged or half-written ``.json.gz``) is built as it lies on disk;
tests/test_disk_full.py kills compress for real. The contract: a full disk is exit 3, one
error line naming what is kept, nothing half-written and no output half-changed; a refusal
(exit 2) writes nothing, not even a lock file.
"""
from __future__ import annotations

import atexit
import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

FAMILY = "disk-56"
PAGE = 4096
# Run as ``python -c LIMITED SCRIPT ARGS...`` where no tmpfs can be mounted: the command
# under a file-size limit, SIGXFSZ ignored so that a write beyond it fails with EFBIG.
LIMITED = """import os, resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
if sys.argv[2] == "-m":
    sys.argv = sys.argv[3:]
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
else:
    sys.argv = sys.argv[2:]
    sys.path.insert(0, os.path.dirname(sys.argv[0]))   # as python SCRIPT puts it first
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _unmount_later(point: Path) -> None:
    def unmount():
        subprocess.run(["umount", "-l", str(point)], capture_output=True)
        # the case's directory, which run_case could not remove for the mount (--keep: kept)
        if point.parent.is_dir() and [p.name for p in point.parent.iterdir()] == [point.name]:
            shutil.rmtree(point.parent, ignore_errors=True)
    atexit.register(unmount)


def small_disk(tmp: Path, size: str, limit_pages: int = 1):
    """(the directory ``tmp/disk``, a function that wraps a command's argv): a tmpfs of
    ``size``, or, where none can be mounted, a plain directory and a file-size limit of
    ``limit_pages`` pages for the command."""
    disk = tmp / "disk"
    disk.mkdir()
    if os.geteuid() == 0 and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)],
            capture_output=True).returncode == 0:
        _unmount_later(disk)
        return disk, lambda argv: argv
    return disk, lambda argv: ["-c", LIMITED, str(limit_pages * PAGE), *argv]


def fill(disk: Path, leave_pages: int) -> None:
    """Fill the tmpfs ``disk`` but for ``leave_pages`` pages (nothing where it is none)."""
    if os.path.ismount(disk):
        stat = os.statvfs(disk)
        free = stat.f_bavail * stat.f_frsize
        (disk / "filler").write_bytes(b"\0" * max(0, free - leave_pages * PAGE))


def warm_probes(tmp: Path, scripts: Path) -> None:
    """Discovery run once with the case's caches (hostile_probe.run_case's), so that the
    command's own discovery finds its interpreters' probes there and writes none."""
    subprocess.run([sys.executable, "-m", "iomatrix.interpreters.discovery"], cwd=tmp,
                   capture_output=True, timeout=300,
                   env={**os.environ, "PYTHONPATH": str(scripts),
                        "IOMATRIX_CACHE": str(tmp / "cache"),
                        "IOMATRIX_PROBE_CACHE": str(tmp / "probes.json")})


def one_line_naming(*needles: str):
    """A check: one error line on stderr, holding each of ``needles``."""
    def check(r):
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        if len(lines) != 1:
            return f"{len(lines)} lines on stderr, not one: {r.stderr[-200:]!r}"
        missing = [n for n in needles if n not in lines[0]]
        return f"the error line does not say {missing}: {lines[0][:200]!r}" if missing else None
    return check


def nothing_half_written(top: Path) -> str | None:
    """A half-written file, a lock file left, or a compressed file that does not decode."""
    for path in top.rglob("*") if top.exists() else ():
        if ".partial-" in path.name or path.name == ".lock":
            return f"left {path.relative_to(top.parent)}"
        if path.name.endswith(".json.gz"):
            try:
                gzip.decompress(path.read_bytes())
            except (OSError, EOFError) as exc:
                return f"{path.name}: a half-written compressed file ({exc})"
    return None


def all_of(*checks):
    def check(r):
        return next((p for p in (c(r) for c in checks) if p), None)
    return check


def stored(run_dir: Path) -> dict:
    """series file (plain name) -> its bytes, whichever form holds them (both: a set)."""
    out = {}
    for path in sorted(run_dir.glob("*.json*")):
        if path.name != "manifest.json":
            data = path.read_bytes()
            out.setdefault(path.name.removesuffix(".gz"), set()).add(
                gzip.decompress(data) if path.name.endswith(".gz") else data)
    return out


def cases(probe) -> list:
    Case, RunSpec, make_run, script = probe.Case, probe.RunSpec, probe.make_run, probe.script
    RUN_A, RUN_B, clean, REFUSED = probe.RUN_A, probe.RUN_B, probe.clean, probe.REFUSED
    out = []
    add = out.append
    many_ops = tuple(f"read_byLines_textMode{k}" for k in range(40))

    # -- a full disk -----------------------------------------------------------------
    def release_full(tmp):
        warm_probes(tmp, probe.SCRIPTS)
        disk, wrap = small_disk(tmp, "32k")   # the manifest fits, the merged series do not
        return wrap(["-m", "iomatrix.commands.release", "3.13", "--against", "3.12",
                     "--profile", "smoke", "--suite", "lutz2009", "--results-dir",
                     str(disk / "results"), "--run-id", "R"]), \
            {"PYTHONPATH": str(probe.SCRIPTS)}
    add(Case(FAMILY, "release on a full disk: exit 3 naming the run it keeps", release_full,
             clean(codes=(3,), allowed=("disk",), forbidden=("nothing written",),
                   check=all_of(one_line_naming("release: error: ", "kept in",
                                                "--run-id R"),
                                lambda r: nothing_half_written(r.tmp / "disk")))))

    def compress_full(tmp):
        disk, wrap = small_disk(tmp, "1m")
        make_run(disk / "results", RunSpec(ops=many_ops))
        fill(disk, leave_pages=1)   # the lock's page, no room for a compressed file
        return wrap([script("compress"), RUN_A, "--results-dir", str(disk / "results")]), {}
    add(Case(FAMILY, "compress on a full disk: exit 3, one line, every file plain and whole",
             compress_full,
             clean(codes=(3,), allowed=(), check=all_of(
                 one_line_naming("error: run ", "cannot compress", "nothing is lost"),
                 lambda r: nothing_half_written(r.tmp / "disk")))))

    def compress_limited(tmp):
        make_run(tmp / "results", RunSpec(ops=many_ops))
        return ["-c", LIMITED, "200", script("compress"), RUN_A, "--results-dir",
                "results"], {}
    add(Case(FAMILY, "compress under a file-size limit (EFBIG): exit 3, one line, nothing "
                     "changed", compress_limited,
             clean(codes=(3,), allowed=(), check=one_line_naming("cannot compress",
                                                                 "File too large"))))

    def compare_full(tmp):
        make_run(tmp / "results", RunSpec())
        make_run(tmp / "results", RunSpec(run_id=RUN_B, speed={"3.13": 1.3}))
        disk, wrap = small_disk(tmp, "1m")
        fill(disk, leave_pages=1)   # the JSON (3 kB) fits, the comment beside it does not
        return wrap([script("compare"), RUN_A, RUN_B, "--results-dir", "results", "--out",
                     str(disk / "c.md"), "--json", str(disk / "c.json")]), {}
    add(Case(FAMILY, "compare --json and --out on a full disk: neither written",
             compare_full,
             clean(codes=(3,), allowed=(), check=all_of(
                 one_line_naming("--json ", "--out ", "nothing was changed"),
                 lambda r: nothing_half_written(r.tmp / "disk")))))

    # -- what a killed compress leaves ---------------------------------------------------
    def killed(state):
        """Run A as a compress killed in ``state`` left it: "same" (3.12 renamed in, its plain
        file not yet removed), "damaged" (a cut .json.gz beside its plain file), "partial"
        (a half-written compressed file under its hidden name)."""
        def build(tmp):
            run_dir = make_run(tmp / "results", RunSpec())
            plain = run_dir / "3.12.json"
            whole = gzip.compress(plain.read_bytes(), 9, mtime=0)
            if state == "same":
                (run_dir / "3.12.json.gz").write_bytes(whole)
            elif state == "damaged":
                (run_dir / "3.12.json.gz").write_bytes(whole[:len(whole) // 2])
            else:
                (run_dir / ".3.12.json.gz.partial-99999").write_bytes(whole[:len(whole) // 2])
            return run_dir
        return build

    def finished(r):
        """compress finished the job: every series compressed, holding one content."""
        run_dir = r.tmp / "results" / RUN_A
        if [p.name for p in run_dir.glob("*.json")] != ["manifest.json"] or \
                any(len(forms) != 1 for forms in stored(run_dir).values()):
            return f"not finished: {sorted(p.name for p in run_dir.iterdir())}"
        return nothing_half_written(run_dir)
    for state in ("same", "damaged", "partial"):
        add(Case(FAMILY, f"compress after a kill left 3.12 {state}: it finishes the job",
                 lambda tmp, state=state: (killed(state)(tmp), (
                     [script("compress"), RUN_A, "--results-dir", "results"], {}))[1],
                 clean(codes=(0,), allowed=(f"results/{RUN_A}",), check=finished)))

    def reads_every_series(r):
        page = (r.tmp / "out" / "o.md").read_text()
        if "Files not read" in page:
            return "the report names a file as not read"
        return None if "3.12" in page and "3.13" in page else "a series is missing"
    for state in ("same", "damaged"):
        add(Case(FAMILY, f"report on a run a killed compress left ({state}): nothing lost",
                 lambda tmp, state=state: (killed(state)(tmp), (probe.report_argv(), {}))[1],
                 clean(codes=(0,), check=reads_every_series)))

    def other_results(tmp):
        run_dir = make_run(tmp / "results", RunSpec())
        other = (run_dir / "3.12.json").read_bytes().replace(b'"values"', b'"values" ', 1)
        (run_dir / "3.12.json.gz").write_bytes(gzip.compress(other))
        return [script("compress"), RUN_A, "--results-dir", "results"], {}
    add(Case(FAMILY, "compress: 3.12 stored both ways with other results in each (refused)",
             other_results, REFUSED))

    # -- a refusal writes nothing, not even the run's lock file --------------------------
    add(Case(FAMILY, "release --run-id of a run made with other options (no .lock left)",
             probe.with_run(lambda tmp: ["-m", "iomatrix.commands.release", "3.13", "--against",
                                         "3.12", "--profile", "smoke", "--suite", "lutz2009",
                                         "--results-dir", "results", "--run-id", RUN_A],
                            env={"PYTHONPATH": str(probe.SCRIPTS)},
                            also=lambda tmp: warm_probes(tmp, probe.SCRIPTS)), REFUSED))
    return out
