"""The native ceiling: the same block reads, writes and copies done by a small C program.

The report shows each interpreter's throughput on those ops as a percentage of
this ceiling, measured in the same run, interleaved with the interpreters. The
program (suites/native_ceiling.c) is compiled into the run's work directory
with the machine's C compiler; without one the run goes on and the manifest
and report say that the ceiling is missing.

Its results are stored like an interpreter's, as ``native.json`` in pyperf's
JSON format (one run per worker process, with the same iomatrix metadata), so
the report reads them with the same code.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

SERIES = "native"
SOURCE = Path(__file__).resolve().parent.parent / "suites" / "native_ceiling.c"
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


def write_part(output: Path, ops: list) -> None:
    """One batch's result in pyperf's JSON format: ops is [(op, metadata, warmups, values)]."""
    benchmarks = [{
        "metadata": {"name": op, "loops": 1, "unit": "second", "hostname": platform.node(),
                     "python_implementation": "native", **metadata},
        "runs": [{"metadata": {"date": _now()}, "warmups": [[1, w] for w in warmups],
                  "values": values}]} for op, metadata, warmups, values in ops]
    output.write_text(json.dumps({"version": "1.0", "metadata": {}, "benchmarks": benchmarks}))


def merge_parts(parts: list[Path], output: Path) -> None:
    """Concatenate one-run parts into one pyperf file (runs of the same op together)."""
    by_op: dict = {}
    for part in parts:
        for bench in json.loads(part.read_text())["benchmarks"]:
            name = bench["metadata"]["name"]
            if name not in by_op:
                by_op[name] = {"metadata": {k: v for k, v in bench["metadata"].items()
                                            if k != "iomatrix_round"}, "runs": []}
            run = bench["runs"][0]
            run["metadata"]["iomatrix_round"] = bench["metadata"]["iomatrix_round"]
            by_op[name]["runs"].append(run)
    if output.exists():
        raise FileExistsError(f"refusing to overwrite {output}")
    partial = output.with_name(f".{output.name}.partial-{os.getpid()}")
    partial.write_text(json.dumps({"version": "1.0", "metadata": {},
                                   "benchmarks": list(by_op.values())}))
    os.replace(partial, output)


def _now() -> str:
    import datetime as dt
    return dt.datetime.now().isoformat(sep=" ")
