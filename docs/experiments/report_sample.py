"""Where a report's CPU time goes, sampled: every 5 ms of CPU the Python stack is recorded.

    .nox/report/bin/python docs/experiments/report_sample.py --run-id RUN --out DIR/x.md

The arguments are scripts/report.py's. At the end, the functions on the most samples (counted
once a sample however often they are on its stack), in seconds of CPU, go to stderr. A timer
of CPU time (ITIMER_PROF) holds on a loaded machine; cProfile's per-call overhead inflated the
call-heavy parts (the bootstrap's loop) about fourfold here.
"""
import atexit
import collections
import runpy
import signal
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent.parent / "scripts"
PERIOD = 0.005
samples = []


def record(signum, frame):
    stack = set()
    while frame is not None:
        stack.add((Path(frame.f_code.co_filename).name, frame.f_code.co_name))
        frame = frame.f_back
    samples.append(stack)


def show():
    signal.setitimer(signal.ITIMER_PROF, 0, 0)
    counted = collections.Counter(key for stack in samples for key in stack)
    print(f"{len(samples)} samples, {len(samples) * PERIOD:.1f} s of CPU", file=sys.stderr)
    for (name, function), n in counted.most_common(70):
        print(f"{n * PERIOD:7.2f} s {100 * n / len(samples):5.1f}% {name}:{function}",
              file=sys.stderr)


sys.argv = [str(SCRIPTS / "report.py"), *sys.argv[1:]]
sys.path.insert(0, str(SCRIPTS))
signal.signal(signal.SIGPROF, record)
signal.setitimer(signal.ITIMER_PROF, PERIOD, PERIOD)
atexit.register(show)
runpy.run_path(str(SCRIPTS / "report.py"), run_name="__main__")
