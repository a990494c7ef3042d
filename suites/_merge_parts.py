"""Merge one-process pyperf result files into one pyperf JSON file, atomically.

Runs under the interpreter that produced the parts, with its own pyperf, so the
merged file is written by the same pyperf release as its runs (2.7 included).

    python _merge_parts.py OUTPUT PART [PART...]

OUTPUT must not exist: results are never overwritten. The file appears by a
rename, so a crash leaves either no file or a complete one.
"""
from __future__ import print_function

import os
import sys

import pyperf


def merge(output, parts):
    if os.path.exists(output):
        raise SystemExit("refusing to overwrite %s" % output)
    suite = None
    for part in parts:
        loaded = pyperf.BenchmarkSuite.load(part)
        if suite is None:
            suite = loaded
        else:
            suite.add_runs(loaded)
    partial = output + ".partial-%d" % os.getpid()
    try:
        suite.dump(partial)
        os.rename(partial, output)
    finally:
        if os.path.exists(partial):
            os.remove(partial)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    merge(sys.argv[1], sys.argv[2:])
