"""Do two processes timing the same call one right after the other agree? (docs/methodology.md)

    python3 docs/experiments/same_cpu_pairs.py PYTHON FILE CALLS CPU_A,CPU_B

Starts two worker processes of PYTHON, pinned to CPU_A and CPU_B (taskset), that each
count the lines of FILE when told to, and times CALLS such pairs, A and B in a shuffled
order each time, by the CPU clock (getrusage). Prints the standard deviation of
log(b_i / a_i) for adjacent calls ("adjacent") and for calls half the run apart
("far"): if the machine's slow phases hit both processes alike, adjacent pairs agree
better than far ones. The worker runs under any Python from 2.7.
"""
import math
import random
import statistics
import subprocess
import sys

WORKER = r"""
import resource, sys
def cpu():
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime
def count_lines(path):
    n = 0
    with open(path) as f:
        for _ in f:
            n += 1
    return n
count_lines(sys.argv[1])
for _ in iter(sys.stdin.readline, ""):
    t0 = cpu()
    count_lines(sys.argv[1])
    sys.stdout.write("%r\n" % (cpu() - t0))
    sys.stdout.flush()
"""


def main():
    python, path, calls, cpus = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split(",")
    workers = [subprocess.Popen(["taskset", "-c", cpu, python, "-c", WORKER, path],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
               for cpu in cpus]

    def call(worker):
        worker.stdin.write("go\n")
        worker.stdin.flush()
        return float(worker.stdout.readline())

    a, b = [], []
    for _ in range(calls):
        order = [0, 1]
        random.shuffle(order)
        times = {}
        for i in order:
            times[i] = call(workers[i])
        a.append(times[0])
        b.append(times[1])
    adjacent = [math.log(y / x) for x, y in zip(a, b)]
    far = [math.log(b[(i + calls // 2) % calls] / a[i]) for i in range(calls)]
    print("CPUs %s: adjacent sd %.3f, far sd %.3f, A's median %.2f ms, max/min %.2f"
          % (",".join(cpus), statistics.stdev(adjacent), statistics.stdev(far),
             statistics.median(a) * 1e3, max(a) / min(a)))
    for worker in workers:
        worker.stdin.close()
        worker.wait()


if __name__ == "__main__":
    main()
