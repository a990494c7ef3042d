"""Do workers starting on the spare CPU slow the timed one? (docs/methodology.md, Lockstep rounds)

    python3 docs/experiments/start_ahead_interference.py PYTHON [--windows 16] [--seconds 5]

The matrix starts the next group's workers on the spare CPU while a group is timed on the
timing CPU (iomatrix.measuring.workers.start_ahead). This times a whole-file text read of a
2.8 MiB ASCII file (the lutz2009 op's size) by the CPU time of its thread, in a process pinned
to the highest CPU, in ``--windows`` windows of ``--seconds``; in every other window the
script starts workers' worth of interpreters on the other CPUs, one after the other (PYTHON
importing pyperf and the lutz2009 suite, as a worker does before it waits), and prints the
median call time of each window and the ratio of each window with start-ups to the window
before it. PYTHON: an interpreter with pyperf, for example .nox/iomatrix-envs/3.12/bin/python.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = os.path.join(HERE, "..", "..", "suites")
FILE_BYTES = 2_900_000   # the study's text file, about 2.8 MiB
TIMER = r"""
import sys, time
path, windows, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
for w in range(windows):
    sys.stdin.readline()                       # the parent says when a window starts
    calls, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.thread_time()
        with open(path) as f:
            data = f.read()
        calls.append(time.thread_time() - t0)
        assert len(data) == %d
    calls.sort()
    print(calls[len(calls) // 2], len(calls), flush=True)
""" % FILE_BYTES
WORKER_START = ("import sys; sys.path.insert(0, %r); import harness, pyperf, lutz2009"
                % os.path.abspath(SUITES))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("python")
    parser.add_argument("--windows", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    if args.windows < 2 or args.windows % 2:
        parser.error("--windows: an even number, at least 2")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        parser.error("needs two CPUs: one timed, one for the start-ups")
    timed, spare = {cpus[-1]}, set(cpus[:-1])
    directory = tempfile.mkdtemp(prefix="start_ahead-")
    path = os.path.join(directory, "text.txt")
    with open(path, "w") as f:
        f.write(("iomatrix start-ahead line of text, 48 bytes long\n" * (FILE_BYTES // 49 + 1))
                [:FILE_BYTES])
    timer = subprocess.Popen([sys.executable, "-c", TIMER, path, str(args.windows),
                              str(args.seconds)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    os.sched_setaffinity(timer.pid, timed)
    medians, starts = [], []
    try:
        for window in range(args.windows):
            timer.stdin.write("go\n")
            timer.stdin.flush()
            started = 0
            if window % 2:
                end = time.monotonic() + args.seconds
                while time.monotonic() < end:
                    worker = subprocess.Popen([args.python, "-c", WORKER_START])
                    os.sched_setaffinity(worker.pid, spare)
                    worker.wait()
                    started += 1
            median, calls = timer.stdout.readline().split()
            medians.append(float(median))
            starts.append(started)
            print("window %2d: %s, median call %.3f ms (%s calls)" % (
                window, "%3d start-ups" % started if started else "   quiet     ",
                float(median) * 1e3, calls))
    finally:
        timer.stdin.close()
        timer.wait()
        os.remove(path)
        os.rmdir(directory)
    ratios = [medians[i] / medians[i - 1] for i in range(1, len(medians), 2)]
    print("with start-ups / quiet window before: median %.3f (%.3f-%.3f), %d pairs" % (
        statistics.median(ratios), min(ratios), max(ratios), len(ratios)))


if __name__ == "__main__":
    main()
