"""How steady are the machine's own ratios between two fixed workloads? (docs/methodology.md)

    python3 docs/experiments/machine_floor.py run OUT.tsv [--seconds 420] [--cpu 1]
    python3 docs/experiments/machine_floor.py compare A.tsv B.tsv [C.tsv ...]

`run` times eight fixed workloads in one process pinned to one CPU, round after round for
`--seconds`: each round takes them in a shuffled order, and each workload gets one untimed
call and then one value of as many calls as last about 5 ms, by the CPU time of the thread.
The workloads are the pieces the lutz2009 ops are made of: a Python loop, decoding the
study-sized text, reading it whole through `io.TextIOWrapper` (decoding and newline
translation, what Python 3's text read does), copying it (what a binary or Python 2 read
does), copying 12.6 MiB, `os.preadv` of the text from the page cache (the kernel's copy),
splitting it into lines (many small objects), and its CRC-32. The copies go between
fixed page-aligned buffers, the same addresses all run long. Every call checks its result.

`compare` takes the runs' files and, for every pair of workloads, the ratio in each run
paired by round like iomatrix's (exp of the plain median of the per-round log ratios;
iomatrix takes their Hodges-Lehmann estimate), then prints what
`repro.py` prints for interpreters: the median, 90th percentile and maximum of
|log(ratio_i / ratio_j)| between runs, and the pairs that moved most.

Nothing here changes between runs but the machine: the same code, the same bytes, one
process, no process start, no other interpreter. Ratios of two interpreters on one op
(one decoding, one copying, say) cannot be steadier between runs than these.
"""
import argparse
import io
import itertools
import math
import mmap
import os
import random
import statistics
import sys
import tempfile
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "suites"))
import _data  # noqa: E402  (the suites' deterministic text)

TEXT_BYTES = 2935401          # the study's text file
LARGE_BYTES = 12 * 1024 * 1024 + 629146   # about the 12.6 MiB large.bin
VALUE_SECONDS = 0.005
WORKLOADS = ("loop", "decode", "text_read", "copy", "copy_large", "read", "split_lines", "crc32")
HEADER = "# iomatrix machine floor 2: round\tworkload\tcalls\tseconds_per_call\twall"


def page_aligned(data):
    """A buffer of anonymous memory (page-aligned) holding ``data``: every copy of a run goes
    to and from the same addresses, so no allocator decides where a copy lands (a copy's
    speed here depends on the destination's offset in its page: copy_alignment.py)."""
    buffer = mmap.mmap(-1, len(data))
    buffer[:] = data
    return buffer


def make_workloads(directory):
    text = _data.ascii_text(TEXT_BYTES, seed=2009).encode("ascii")
    assert len(text) == TEXT_BYTES
    decoded = text.decode("ascii")
    lines = decoded.count("\n")
    crc = zlib.crc32(text)
    source, target = page_aligned(text), page_aligned(bytes(TEXT_BYTES))
    large = (b"0123456789abcdef" * (LARGE_BYTES // 16 + 1))[:LARGE_BYTES]
    large_source, large_target = page_aligned(large), page_aligned(bytes(LARGE_BYTES))
    path = os.path.join(directory, "text.txt")
    with open(path, "wb") as f:
        f.write(text)
    fd = os.open(path, os.O_RDONLY)
    os.pread(fd, TEXT_BYTES, 0)   # in the page cache from here on

    def copied(into, what, copy):
        """Clear both ends of ``into``, copy, and check both ends arrived."""
        into[0:1] = into[-1:] = b"\0"
        copy()
        assert into[0:1] == what[0:1] and into[-1:] == what[-1:]

    def loop():
        s = 0
        for i in range(20000):
            s += i
        assert s == 199990000

    def decode():
        assert len(text.decode("utf-8")) == TEXT_BYTES

    def text_read():
        assert len(io.TextIOWrapper(io.BytesIO(text), encoding="utf-8").read()) == TEXT_BYTES

    def copy_text():
        target[:] = source

    def copy_large_buffer():
        large_target[:] = large_source

    def read_text():
        assert os.preadv(fd, [target], 0) == TEXT_BYTES

    def copy():
        copied(target, text, copy_text)

    def copy_large():
        copied(large_target, large, copy_large_buffer)

    def read():
        copied(target, text, read_text)

    def split_lines():
        assert len(decoded.splitlines()) == lines

    def crc32():
        assert zlib.crc32(text) == crc

    workloads = {f.__name__: f for f in (loop, decode, text_read, copy, copy_large, read, split_lines, crc32)}
    assert tuple(workloads) == WORKLOADS
    return workloads


def calls_per_value(func):
    func()
    t0 = time.thread_time()
    func()
    one = max(time.thread_time() - t0, 1e-6)
    return max(1, int(round(VALUE_SECONDS / one)))


def run(args):
    try:
        out = open(args.out, "x")
    except FileExistsError:
        sys.exit("%s exists; give a new file" % args.out)
    os.sched_setaffinity(0, {args.cpu})
    with tempfile.TemporaryDirectory() as directory, out:
        workloads = make_workloads(directory)
        calls = {name: calls_per_value(f) for name, f in workloads.items()}
        out.write(HEADER + "\n")
        deadline = time.monotonic() + args.seconds
        round_no = 0
        while time.monotonic() < deadline:
            order = sorted(workloads)
            random.shuffle(order)
            for name in order:
                func, n = workloads[name], calls[name]
                func()
                t0 = time.thread_time()
                for _ in range(n):
                    func()
                out.write("%d\t%s\t%d\t%.9f\t%.3f\n" % (round_no, name, n, (time.thread_time() - t0) / n,
                                                      time.time()))
            round_no += 1
        print("%s: %d rounds on CPU %d" % (args.out, round_no, args.cpu))


def load(path):
    rounds = {}
    with open(path) as f:
        if f.readline().rstrip("\n") != HEADER:
            sys.exit("%s: not a machine-floor file (first line is not %r)" % (path, HEADER))
        for line in f:
            round_no, name, _, seconds, _ = line.rstrip("\n").split("\t")
            rounds.setdefault(int(round_no), {})[name] = float(seconds)
    # A run stopped mid-round leaves that round short of workloads; it is left out.
    complete = [r for r in rounds.values() if sorted(r) == sorted(WORKLOADS)]
    if not complete:
        sys.exit("%s: no complete round" % path)
    return complete


def compare(args):
    runs = [load(p) for p in args.files]
    names = sorted(runs[0][0])
    ratio = {}
    for i, rounds in enumerate(runs):
        for a, b in itertools.combinations(names, 2):
            ratio[i, a, b] = math.exp(statistics.median(math.log(r[a] / r[b]) for r in rounds))
    for i, rounds in enumerate(runs):
        print("%s: %d rounds; median ms per call: %s" % (args.files[i], len(rounds), ", ".join(
            "%s %.3f" % (n, 1000 * statistics.median(r[n] for r in rounds)) for n in names)))
    pairs = list(itertools.combinations(names, 2))
    diffs = sorted(abs(math.log(ratio[i, a, b] / ratio[j, a, b]))
                   for a, b in pairs for i, j in itertools.combinations(range(len(runs)), 2))
    print("workload pairs: %d, run pairs: %d" % (len(pairs), len(runs) * (len(runs) - 1) // 2))
    print("|log(ratio_i/ratio_j)|: median %.3f, p90 %.3f, max %.3f"
          % (diffs[len(diffs) // 2], diffs[int(0.9 * len(diffs))], diffs[-1]))

    def spread(pair):
        values = [ratio[i, pair[0], pair[1]] for i in range(len(runs))]
        return max(values) / min(values)
    print("moved most (pair: ratio in each run):")
    for a, b in sorted(pairs, key=spread, reverse=True)[:8]:
        print("  %-24s %s" % ("%s/%s" % (a, b), " ".join("%.3f" % ratio[i, a, b] for i in range(len(runs)))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--seconds", type=float, default=420)
    r.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    c = sub.add_parser("compare")
    c.add_argument("files", nargs="+")
    args = parser.parse_args()
    if args.command == "run":
        run(args)
    elif len(args.files) < 2:
        sys.exit("give at least two runs' files")
    else:
        compare(args)


if __name__ == "__main__":
    main()
