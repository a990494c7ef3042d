"""How far apart in time the two values of a ratio may be: a fixed Python loop timed back to
back on one CPU, and the spread of the log ratio of two of its values by how many values
apart they were; and whether the two vCPUs' speeds move together.

Run: python3 docs/experiments/adjacent_values.py [SECONDS]   (any Python 3.8+; pins itself)
It prints, per lag, the standard deviation and the interquartile range / 1.35 of
log(v[i + lag] / v[i]), and the correlation of the loop's times on CPU 1 with a probe's on
CPU 0 taken at the same moments. Results of 2026-11-26: docs/experiments/log.md.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import time

LOOP = 400_000          # about 100 ms a value on the reference machine (a lockstep value)


def time_values(seconds, iterations, pause=0.0):
    """(wall time, ms) of the loop, back to back for ``seconds``."""
    values = []
    end = time.time() + seconds
    while time.time() < end:
        wall, start, total = time.time(), time.perf_counter(), 0
        for i in range(iterations):
            total += i
        values.append((wall, (time.perf_counter() - start) * 1e3))
        time.sleep(pause)
    return values


def spread_by_lag(ms):
    for lag in (1, 2, 4, 8, 16):
        logs = sorted(math.log(ms[i + lag] / ms[i]) for i in range(len(ms) - lag))
        iqr = (logs[3 * len(logs) // 4] - logs[len(logs) // 4]) / 1.35
        print(f"lag {lag:2}: sd {statistics.stdev(logs):.3f}  IQR/1.35 {iqr:.3f}")


def main():
    if sys.argv[1:2] == ["--probe"]:
        os.sched_setaffinity(0, {int(sys.argv[3])})
        json.dump(time_values(float(sys.argv[2]), LOOP // 4, pause=0.02), sys.stdout)
        return
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    os.sched_setaffinity(0, {1})
    ms = [v for _, v in time_values(seconds, LOOP)]
    q = sorted(ms)
    print(f"{len(ms)} values: median {statistics.median(ms):.1f} ms, 5th-95th percentile "
          f"{q[len(q) // 20]:.1f}-{q[-len(q) // 20]:.1f} ms")
    spread_by_lag(ms)
    probe = subprocess.Popen([sys.executable, __file__, "--probe", str(seconds / 3), "0"],
                             stdout=subprocess.PIPE)
    ours = time_values(seconds / 3, LOOP // 4, pause=0.0)
    theirs = json.loads(probe.communicate()[0])
    at = [t for t, _ in theirs]
    pairs = [(v, theirs[max(0, sum(1 for t in at if t <= wall) - 1)][1]) for wall, v in ours]
    print(f"CPU 1 against CPU 0 at the same moments: correlation "
          f"{statistics.correlation(*zip(*pairs)):+.2f} over {len(pairs)} values")


if __name__ == "__main__":
    main()
