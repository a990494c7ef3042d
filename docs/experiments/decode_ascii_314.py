"""Isolated reproducer: UTF-8 decoding of ASCII, 3.13 against 3.14 (issue 57, item 2).

The main page's ``read_allAtOnce_textMode`` 3.13.15 -> 3.14 is slower in every pooled run
(held 12 of 12 on 3 boots) while its instructions fell by 23%: 3.13's ``unicode_decode_utf8``
copies ASCII in one pass (``ascii_decode``), 3.14's scans it first (``find_first_nonascii``)
and then copies it with ``memcpy`` (gh-126025's rewrite): fewer instructions, two passes over
the text. This script times that one call, nothing else: ``bytes.decode('utf-8')`` of ASCII
data of the op's size (the study's text file, 2,935,401 bytes), in fresh processes, a plain
loop, the interpreters alternating process by process.

    python3 docs/experiments/decode_ascii_314.py PYTHON_A PYTHON_B [--processes 10]

Each process decodes the data CALLS times after WARMUP calls and prints its calls' median in
microseconds; the script prints each interpreter's process medians, their median and the
ratio B / A. No timing is asserted anywhere; the figures go in the issue's closing note.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

SIZE = 2935401       # suites/lutz2009.py: TEXT_FILE_BYTES, the op's file
WARMUP = 5
CALLS = 40

# Runs in each fresh process (any Python 3): ASCII lines of printable characters, built
# deterministically, decoded CALLS times; the median call in microseconds.
CHILD = r"""
import random, sys, time
size, warmup, calls = map(int, sys.argv[1:4])
rng = random.Random(2009)
line = bytes(rng.randrange(32, 127) for _ in range(79)) + b"\n"
data = (line * (size // len(line) + 1))[:size]
assert max(data) < 128
decode = data.decode
for _ in range(warmup):
    decode("utf-8")
times = []
for _ in range(calls):
    t0 = time.perf_counter()
    decode("utf-8")
    times.append(time.perf_counter() - t0)
times.sort()
print("%.3f" % (times[len(times) // 2] * 1e6))
"""


def one_process(python: str) -> float:
    out = subprocess.run([python, "-I", "-c", CHILD, str(SIZE), str(WARMUP), str(CALLS)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip())


def version(python: str) -> str:
    return subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                          check=True, capture_output=True, text=True).stdout.strip()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", help="the older interpreter (3.13)")
    parser.add_argument("new", help="the newer interpreter (3.14)")
    parser.add_argument("--processes", type=int, default=10)
    args = parser.parse_args(argv)
    found = {args.old: [], args.new: []}
    for _ in range(args.processes):          # alternating: drift hits both alike
        for python in (args.old, args.new):
            found[python].append(one_process(python))
    medians = {}
    for python, values in found.items():
        medians[python] = statistics.median(values)
        print(f"{version(python)}: decode('utf-8') of {SIZE:,} ASCII bytes, median of "
              f"{len(values)} processes {medians[python]:.0f} us "
              f"(processes {min(values):.0f} to {max(values):.0f} us)")
    print(f"ratio new / old: {medians[args.new] / medians[args.old]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
