"""A run of many ops, to time the report on it (issue 34 item 6: work bounded by the input).

    python3 docs/experiments/many_ops.py [--ops 20000] [--series 3.12,3.13,3.14]
                                         [--rounds 3] [--values 1] [--out /tmp/many-ops]
                                         [--counters] [--allocator-twins]

Writes ``OUT/results/<run-id>/`` (default run id ``20260101T000000Z-manyops``): a manifest
and one pyperf-format series file per label, every benchmark with the metadata the
matrix writes (suite, category, bytes, io, cache, profile, allocator, output, clock,
round, peak RSS, minor faults), each file written through the results
contract, as tests/conftest.py's ``write_pyperf_file`` and tests/test_fuzz.py's
``make_run`` build runs; with ``--counters``, a counters file per series too. The store's reader (its schema included) reads every file
before this script ends, so a file the schema refuses stops it with the error.

The defaults give 20,000 ops in 3 series, 78 MB of JSON: the case issue 34 timed. Then:

    /usr/bin/time -v python3 scripts/report.py --results-dir OUT/results \\
        --run-id 20260101T000000Z-manyops --out /tmp/x/report.md --no-figures

(with an interpreter that has the report's extras, e.g. .nox/tests/bin/python).
"""
from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from iomatrix.storing import contract, countsfile, store  # noqa: E402

RUN_ID = "20260101T000000Z-manyops"
SUITE = "lutz2009"
# The op names the suites use are verb_what_how: keep that shape, numbered.
KINDS = (("read", "read-text"), ("write", "write-text"), ("read", "read-binary"),
         ("write", "write-binary"))


def op_names(count: int) -> list[tuple[str, str]]:
    """(op, category) pairs: ``read_n00042_textMode`` and so on."""
    out = []
    for k in range(count):
        verb, category = KINDS[k % len(KINDS)]
        mode = "textMode" if category.endswith("text") else "binaryMode"
        out.append((f"{verb}_n{k:05d}_{mode}", category))
    return out


def series_document(label: str, minor: int, ops, rounds: int, values: int,
                    rng: random.Random, allocator: str = "steady") -> dict:
    """One series file: every op, ``rounds`` processes of ``values`` values each."""
    benchmarks = []
    # Each release a few percent apart, so that the report has findings to list; glibc's
    # untouched allocator a little slower again.
    speed = (1.0 + 0.02 * (minor - 12)) * (1.03 if allocator == "default" else 1.0)
    for op, category in ops:
        base = 1e-4 * (1 + (zlib.crc32(op.encode()) % 97) / 97) * speed
        runs = []
        for round_index in range(rounds):
            run_values = [base * (1 + rng.gauss(0, 0.01)) for _ in range(values)]
            run_meta = {"date": "2026-01-01 00:00:00", contract.KEY_ROUND: round_index,
                        contract.KEY_PEAK_RSS: 20_000_000 + 4096 * round_index,
                        contract.KEY_MINFLT: 1.5}
            runs.append((run_meta, [(1, run_values[0])], run_values))
        metadata = {contract.KEY_SUITE: SUITE, contract.KEY_CATEGORY: category,
                    contract.KEY_BYTES: 1_000_000, contract.KEY_IO: "c",
                    contract.KEY_CACHE: "warm", contract.KEY_PROFILE: "quick",
                    contract.KEY_ALLOCATOR: allocator, contract.KEY_OUTPUT: "new",
                    contract.KEY_CLOCK: "cpu"}
        benchmarks.append(contract.pyperf_benchmark(op, metadata, runs))
    return contract.pyperf_document(benchmarks, {"hostname": "manyops"})


def counters_document(label: str, minor: int, ops) -> dict:
    """The counting pass's file of one series (tests/test_fuzz.py's ``counters_document``):
    every op with its system calls, instructions and rusage; each release counts a few more
    instructions, and every fourth op one more ``read``, so the report has steps to name."""
    entries = {}
    for k, (op, _) in enumerate(ops):
        reads = 4 + (minor - 12 if k % 4 == 0 else 0)
        entries[op] = {"suite": SUITE, "bytes_per_call": 100_000, "calls": 1,
                       "syscalls": {"read": reads, "openat": 1, "close": 1},
                       "instructions": 50_000 + 1_000 * (minor - 12) + k,
                       "rusage": {"minflt": 2, "majflt": 0, "nvcsw": 0, "nivcsw": 1}}
    return {"iomatrix_counters_version": 1, "series": label, "calls": 1,
            "interpreter": {"label": label, "implementation": "cpython",
                            "version_info": [3, minor, 0]},
            "methods": {"syscalls": "strace", "instructions": "callgrind"}, "skipped": {},
            "ops": entries}


def manifest(labels: list[str], twins: bool) -> dict:
    interpreters = {label: {"label": label, "implementation": "cpython",
                            "version_info": [3, int(label.split(".")[1]), 0],
                            "status": "ok", "version": f"{label}.0", "recipe": "shared-O3"}
                    for label in labels}
    if twins:  # as the runner names a further condition's series (runner.allocator_twins)
        for label in labels:
            interpreters[f"{label}@default"] = {**interpreters[label], "label": label,
                                                "allocator": "default", "allocator_of": label}
    return {"run_id": RUN_ID, "host": "manyops", "profile": "quick", "cache": "warm",
            "allocator": "steady", "output": "new", "clock": "auto", "affinity": "one",
            "suites": [SUITE], "io": ["c"], "cpu_count": 2,
            "started": "2026-01-01T00:00:00+00:00", "interpreters": interpreters,
            **({"allocator_twins": ["default"]} if twins else {})}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--series", default="3.12,3.13,3.14")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--values", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/many-ops"))
    parser.add_argument("--allocator-twins", action="store_true",
                        help="also each series under glibc's untouched allocator "
                             "(<label>@default.json), for the allocator section")
    parser.add_argument("--counters", action="store_true",
                        help="also a counters file per series (the counting pass's)")
    args = parser.parse_args(argv)
    labels = args.series.split(",")
    run_dir = args.out / "results" / RUN_ID
    run_dir.mkdir(parents=True, exist_ok=False)
    ops = op_names(args.ops)
    rng = random.Random(34)
    total = 0
    series = [(label, "steady") for label in labels]
    series += [(f"{label}@default", "default") for label in labels] if args.allocator_twins \
        else []
    for name, allocator in series:
        path = run_dir / f"{name}.json"
        minor = int(name.split("@")[0].split(".")[1])
        contract.atomic_write_json(str(path), series_document(
            name, minor, ops, args.rounds, args.values, rng, allocator))
        total += path.stat().st_size
    for label in labels if args.counters else []:
        contract.atomic_write_json(str(run_dir / f"{label}{store.COUNTERS_SUFFIX}"),
                                   counters_document(label, int(label.split(".")[1]), ops))
    contract.atomic_write_json(str(run_dir / store.MANIFEST),
                               manifest(labels, args.allocator_twins))
    started = time.perf_counter()
    for name, _ in series:  # the readers the report uses, schema and all: refuse or read
        store.load_series(run_dir / f"{name}.json")
    for label in labels if args.counters else []:
        countsfile.read_document(run_dir / f"{label}{store.COUNTERS_SUFFIX}")
    print(f"many_ops: {args.ops} ops x {len(series)} series, {total / 1e6:.0f} MB of JSON "
          f"in {run_dir} (read back in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
