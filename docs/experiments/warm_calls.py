"""Why 2.7's whole-file read gets faster over calls 3-7 of a fresh process (issue 42).

    python warm_calls.py FILE [CALLS] [between]      between: none | sleep | evict

One fresh process reads FILE whole CALLS times (default 12) with the builtin open()
(text mode: bytes under 2.x, str under 3.x) and prints, per call, the CPU time in ms
(getrusage: user + system), the minor page faults and the involuntary context switches.
Between two calls it does nothing (``none``), sleeps 50 ms (``sleep``: the CPU is left to
other work), or copies a 32 MiB buffer once (``evict``: no sleep, no system call, the same
allocator state, only the CPU caches refilled with other data). ``os.getppid()`` marks each
call, so ``strace -f -e trace=memory,getppid`` splits the memory calls by call.

Runs under 2.7 and 3.x; pin it to one CPU (``taskset -c 1``) as the harness does.
"""
from __future__ import print_function

import json
import os
import resource
import sys
import time


def main():
    path = sys.argv[1]
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    between = sys.argv[3] if len(sys.argv) > 3 else "none"
    junk = bytearray(32 << 20) if between == "evict" else None
    rows = []
    for _ in range(calls):
        if between == "sleep":
            time.sleep(0.05)
        elif between == "evict":
            junk[:] = junk[1:] + junk[:1]
        os.getppid()  # the marker strace sees
        before = resource.getrusage(resource.RUSAGE_SELF)
        with open(path, "r") as f:
            data = f.read()
        after = resource.getrusage(resource.RUSAGE_SELF)
        del data
        rows.append([round((after.ru_utime + after.ru_stime
                            - before.ru_utime - before.ru_stime) * 1e3, 3),
                     after.ru_minflt - before.ru_minflt, after.ru_nivcsw - before.ru_nivcsw])
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
