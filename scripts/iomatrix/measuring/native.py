"""The C reference: the same block reads, writes and copies done by a small C program.

It makes the same calls as the op (one unbuffered system call per block), so it is
a reference for the call pattern, not a ceiling: a buffered Python can beat it.
It is measured in the same run, in each round after the interpreters, and the report
shows its time beside theirs. The program (suites/native_ceiling.c; the file keeps
its historical name) is compiled into the run's work directory with the machine's
C compiler; without one the run goes on and the manifest and report say that the
reference is missing.

Its results are stored like an interpreter's, as ``native.json`` in pyperf's
JSON format (one run per worker process, with the same iomatrix metadata), so
the report reads them with the same code.
"""
from __future__ import annotations

import datetime as dt
import os
import platform
import shutil
import subprocess
from pathlib import Path

from iomatrix import procs
from iomatrix.storing import contract
from iomatrix.paths import SUITES_DIR

SERIES = "native"
# The C program's 1 MiB blocks (once called the machine's best; Python can beat it): the same
# files read, written and copied by the C program in page-aligned 1 MiB blocks, fastest of the
# profile's native_repeat. Measured once per session, after the planned rounds (before the
# extra rounds), so Python's throughput can be shown against what the machine does at best.
BEST_BLOCK = 1 << 20
SOURCE = SUITES_DIR / "native_ceiling.c"
COMPILE_TIMEOUT_SECONDS = 120


def build_tool(work_dir: Path) -> tuple[str | None, str]:
    """Compile the program; return (path, description) or (None, why it is missing)."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not compiler:
        return None, "no C compiler (cc, gcc or clang) on this machine: no native ceiling"
    tool = work_dir / "native_ceiling"
    try:
        proc = subprocess.run([compiler, "-O2", "-o", str(tool), str(SOURCE)], capture_output=True,
                              text=True, timeout=COMPILE_TIMEOUT_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"compiling {SOURCE.name} failed: {exc}"
    if proc.returncode != 0:
        return None, f"compiling {SOURCE.name} with {compiler} failed: {proc.stderr.strip()[-300:]}"
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    return str(tool), f"{SOURCE.name} built with {compiler} -O2 ({version.splitlines()[0] if version else '?'})"


def command(tool: str, spec: list, fixtures_dir: Path, scratch_dir: Path, repeat: int,
            cache: str = "warm") -> list[str]:
    kind = spec[0]
    cold = ["cold"] if cache == "cold" else []
    if kind == "read":
        return [tool, "read", str(fixtures_dir / spec[1]), str(spec[2]), str(repeat), *cold]
    if kind == "write":
        return [tool, "write", str(scratch_dir / f"native-{os.getpid()}.out"), str(spec[1]),
                str(spec[2]), str(repeat)]
    if kind == "copy":
        return [tool, "copy", str(fixtures_dir / spec[1]),
                str(scratch_dir / f"native-{os.getpid()}.copy"), str(spec[2]), str(repeat), *cold]
    raise ValueError(f"unknown native spec {spec!r}")


def run_batch(tool: str, op_info: dict, suite: str, round_index: int, ops: list[str], profile,
              cache: str, fixtures_dir: Path, scratch_dir: Path, output: Path,
              timeout: float) -> tuple[str | None, str | None]:
    """The native series' batch: the C program once per op, warm-ups plus values each.

    Writes one pyperf file with a run per op, like a worker; returns (op, error) when
    the program failed on an op, else (None, None).
    """
    benchmarks = []
    for op in ops:
        info = op_info[op]
        cmd = command(tool, info["native"], fixtures_dir, scratch_dir,
                      profile.warmups + profile.values, cache)
        try:
            proc = procs.run(cmd, timeout=timeout)
        except subprocess.TimeoutExpired:
            return op, f"timed out after {timeout:g} s (--timeout)"
        if proc.returncode != 0:
            return op, f"{procs.describe_exit(proc.returncode)}\n{procs.tail(proc.stderr)}"
        times = [float(line) for line in proc.stdout.split()]
        metadata = {contract.KEY_SUITE: suite, contract.KEY_CATEGORY: info["category"],
                    contract.KEY_BYTES: info["bytes"], contract.KEY_IO: "native",
                    contract.KEY_CACHE: cache, contract.KEY_PROFILE: profile.name,
                    contract.KEY_ROUND: round_index,
                    contract.KEY_NATIVE: " ".join(map(str, info["native"])),
                    "hostname": platform.node(), "python_implementation": "native"}
        run_meta = {"date": dt.datetime.now().isoformat(sep=" ")}
        warmups = [(1, t) for t in times[:profile.warmups]]
        benchmarks.append(contract.pyperf_benchmark(op, metadata, [(run_meta, warmups,
                                                                   times[profile.warmups:])]))
    contract.atomic_write_json(str(output), contract.pyperf_document(benchmarks))
    return None, None


def measure_best(tool: str, op_info: dict, fixtures_dir: Path, scratch_dir: Path, cache: str,
                 timeout: float, repeat: int) -> dict:
    """{op: {"seconds", "block"}}: the op's reads, writes or copy done in BEST_BLOCK
    page-aligned blocks, the fastest of ``repeat``; an op the program fails on is left out
    (with its error under "errors")."""
    best, errors = {}, {}
    for op, info in sorted(op_info.items()):
        kind, target = info["native"][0], info["native"][1]
        cmd = command(tool, [kind, target, BEST_BLOCK], fixtures_dir, scratch_dir, repeat, cache)
        try:
            proc = procs.run(cmd, timeout=timeout)
        except subprocess.TimeoutExpired:
            errors[op] = f"timed out after {timeout:g} s"
            continue
        if proc.returncode != 0:
            errors[op] = procs.tail(proc.stderr) or procs.describe_exit(proc.returncode)
            continue
        best[op] = {"seconds": min(float(line) for line in proc.stdout.split()),
                    "block": BEST_BLOCK}
    return {"ops": best, "errors": errors, "repeat": repeat}


def record_best(plan, manifest: dict, cache: str, fixtures_dir: Path, scratch_dir: Path,
                timeout: float, log, repeat: int) -> None:
    """The machine's best for the C reference's ops of this session (the fastest of
    ``repeat`` calls), into the manifest."""
    if plan is None or plan.kept or plan.tool is None or plan.error is not None:
        return
    manifest["native"]["best"] = measure_best(plan.tool, plan.op_info, fixtures_dir,
                                              scratch_dir, cache, timeout, repeat)
    log(f"iomatrix: the machine's best measured for {len(manifest['native']['best']['ops'])} "
        "ops (page-aligned 1 MiB blocks)")
