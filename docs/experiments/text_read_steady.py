"""Why is 3.8's whole-file text read slower than 3.7's and 3.9's under `steady`? (methodology)

    python3 docs/experiments/text_read_steady.py [--python PATH ...] [--processes 3]
                                                 [--calls 30] [--cpu 1] [--file FILE]

Defaults: the pyenv builds of 3.7, 3.8 and 3.9 (`pyenv root`), the lutz2009 text fixture made
with `suites/harness.py --make-fixtures lutz2009 quick` in a temporary directory.

Prints four tables:

1. Fresh processes of each interpreter, pinned to --cpu, under the `steady` environment
   (suites/_results.py ALLOCATOR_ENVIRONMENT) and with glibc untouched (`default`), each with
   no padding and with a 2000-byte malloc'd block kept alive before the first read (which
   shifts where the heap hands out the large blocks). In each: 5 untimed calls, then the
   median ms of --calls calls of `open(FILE).read()` (the op), and of the same thing in two
   phases: `open(FILE, "rb").read()` (FileIO.readall: the kernel's copy into a new bytes)
   and `.decode("utf-8")` of those bytes (a new str), with the addresses of the bytes' and
   the str's data modulo 4096 (id + 32 for bytes, id + 48 for a compact ASCII str; the
   steady heap alternates between two placements, hence two values).
2. Where each interpreter's libpython placed `ascii_decode` (nm): the text read decodes the
   whole file in one call of it (checked with gdb: PyUnicode_DecodeUTF8Stateful ->
   ascii_decode(size 2935401) for 3.7, 3.8 and 3.9), and its 8-byte copy loop is the hot
   loop. The loop is bytes 160..183 of the function: the table says where that falls in its
   64-byte line.
3. The same machine code (ascii_decode copied byte for byte out of the first interpreter's
   libpython that has it, here 3.8) put into executable memory at offsets 0..56 of a 64-byte
   line and called through ctypes on the fixture's bytes: same instructions, same data, only
   the code's address moves. (Its unaligned-start path calls memcpy through a PLT slot that
   does not survive the copy; the sources here are 8-byte aligned and ASCII, so it is never
   taken.)
4. That code at a fast and at the slow placement, with the destination 0..4088 bytes past the
   source modulo 4096 (4K aliasing between the loads and the stores).

Measured here (2-vCPU KVM guest, AMD EPYC with FSRM, kernel 6.18, glibc 2.36), 2026-11-24,
four runs of this script (24 processes per interpreter and condition; 7 s a run):

- steady, medians of the per-process medians: op 0.300 ms (3.7), 0.378 (3.8), 0.300 (3.9):
  3.8/3.7 1.26, 3.9/3.8 0.79. Read phase 0.143, 0.140, 0.144 ms; decode phase 0.115, 0.200,
  0.115 ms. 3.8's decode was 0.200-0.205 in every process, at both paddings and at every
  placement of the bytes and the str; 3.7's and 3.9's 0.114-0.115, except in a few processes
  that ran in the same few seconds and were slow in both phases (0.19 / 0.18 ms: a phase of
  the machine; the first run took the cells in blocks, hence round by round now).
- default: op 2.35, 2.44, 2.33 ms (3.8/3.7 1.04, 3.9/3.8 0.96), decode phase 1.14, 1.13,
  1.25 ms: the new str's pages are faulted in every call, and 0.085 ms is within the
  per-process spread (1.0-1.6 ms) there.
- ascii_decode is the same machine code in 3.6-3.9; it starts at 0 mod 64 in 3.7 and 3.9 (copy
  loop in bytes 32..55 of a line) and at 16 mod 64 in 3.8 (bytes 48..71: across a 64-byte
  line).
- The copied code: 0.116-0.117 ms at every offset where the loop stays inside one 64-byte
  line, 0.200 ms at both where it crosses one (+16, +24), three passes alike; crossing a
  32-byte boundary (+48, +56) costs nothing. With the data at exactly the offsets the
  processes had (table 5): 0.114-0.115 ms with the code at 0, 0.200 at 16, for 3.7's, 3.8's
  and 3.9's placements alike.
- 4K aliasing: at the fast code placement, destination 0-128 bytes past the source (mod 4096)
  0.123-0.131 ms against 0.115, 8 bytes before it 0.122; at the slow placement 0.200
  throughout. The processes had their str 1360 bytes before their bytes (mod 4096) every time.
"""
import argparse
import ctypes
import glob
import json
import mmap
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = os.path.join(HERE, "..", "..", "suites")
LOOP = (160, 184)   # ascii_decode's aligned copy loop: bytes [160, 184) of the function
FUNCTION_BYTES = 242
PADS = (0, 2000)


# --- the child: runs under the interpreter being measured (3.7+ syntax only) ---

def child(path, calls, cpu, pad):
    if cpu >= 0:
        os.sched_setaffinity(0, {cpu})
    keep = bytes(pad) if pad else None   # a malloc'd block before the large ones (>512 bytes)
    clock = time.perf_counter

    def text():
        with open(path, "r") as f:
            return f.read()

    def split():
        t0 = clock()
        with open(path, "rb") as f:
            b = f.read()
        t1 = clock()
        s = b.decode("utf-8")
        return s, b, t1 - t0, clock() - t1

    for _ in range(5):
        text()
        split()
    op, read, decode, str_at, bytes_at, split_str_at = [], [], [], set(), set(), set()
    for _ in range(calls):
        t = clock()
        s = text()
        op.append(clock() - t)
        str_at.add((id(s) + 48) % 4096)
        del s
    for _ in range(calls):
        s, b, r, d = split()
        read.append(r)
        decode.append(d)
        bytes_at.add((id(b) + 32) % 4096)
        split_str_at.add((id(s) + 48) % 4096)
        del s, b

    def median_ms(values):
        return sorted(values)[len(values) // 2] * 1e3

    import sysconfig
    lib = os.path.join(sysconfig.get_config_var("LIBDIR") or "",
                       sysconfig.get_config_var("INSTSONAME") or "")
    print(json.dumps({"version": sys.version.split()[0], "op": median_ms(op),
                      "read": median_ms(read), "decode": median_ms(decode),
                      "str_at": sorted(str_at), "bytes_at": sorted(bytes_at),
                      "split_str_at": sorted(split_str_at), "keep": keep is not None,
                      "libpython": lib}))


# --- the parent ---

def default_pythons():
    try:
        root = subprocess.check_output(["pyenv", "root"]).decode().strip()
    except (OSError, subprocess.CalledProcessError):
        root = os.path.expanduser("~/.pyenv")
    found = []
    for minor in ("3.7", "3.8", "3.9"):
        found += sorted(glob.glob(os.path.join(root, "versions", minor + ".*", "bin",
                                               "python" + minor)))[-1:]
    return found


def make_fixture(directory):
    subprocess.check_call([sys.executable, os.path.join(SUITES, "harness.py"),
                           "--make-fixtures", "lutz2009", "quick", directory],
                          stdout=subprocess.DEVNULL)
    return os.path.join(directory, "large.txt")


def environments():
    sys.path.insert(0, SUITES)
    from _results import ALLOCATOR_ENVIRONMENT, allocator_variables  # noqa: E402
    clean = {k: v for k, v in os.environ.items() if k not in allocator_variables(os.environ)}
    return {name: dict(clean, **extra) for name, extra in
            (("steady", ALLOCATOR_ENVIRONMENT["steady"]), ("default", {}))}


def function_offset(lib):
    """ascii_decode's address in the library file (.text file offsets equal addresses)."""
    try:
        out = subprocess.check_output(["nm", lib], stderr=subprocess.DEVNULL).decode()
    except (OSError, subprocess.CalledProcessError):
        return None
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == "ascii_decode":
            return int(parts[0], 16)
    return None


def loop_cell(start):
    first = (start + LOOP[0]) % 64
    last = first + LOOP[1] - LOOP[0] - 1
    return "%d..%d%s" % (first, last, " (crosses a 64-byte line)" if last >= 64 else "")


class Placed:
    """ascii_decode's machine code copied into executable memory; called through ctypes."""
    kind = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

    def __init__(self, code):
        self.code = code
        self.memory = mmap.mmap(-1, 4 * mmap.PAGESIZE,
                                prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        self.base = ctypes.addressof(ctypes.c_char.from_buffer(self.memory))

    def at(self, offset):
        self.memory.seek(0)
        self.memory.write(b"\xcc" * len(self.memory))   # int3 around it
        self.memory.seek(2 * mmap.PAGESIZE + offset)
        self.memory.write(self.code)
        return self.kind(self.base + 2 * mmap.PAGESIZE + offset)


def time_call(function, src, size, dst, calls=41):
    for _ in range(5):
        if function(src, src + size, dst) != size:
            raise SystemExit("ascii_decode stopped early: the file is not ASCII")
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        function(src, src + size, dst)
        times.append(time.perf_counter() - started)
    return sorted(times)[calls // 2] * 1e3


def page_buffer(size):
    memory = mmap.mmap(-1, size + 2 * mmap.PAGESIZE)
    return memory, ctypes.addressof(ctypes.c_char.from_buffer(memory))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--python", action="append", help="interpreter (repeat); default 3.7-3.9")
    p.add_argument("--processes", type=int, default=3, help="fresh processes per cell")
    p.add_argument("--calls", type=int, default=30)
    p.add_argument("--cpu", type=int, default=1, help="CPU to pin to (-1: none)")
    p.add_argument("--file", help="the text file (default: the lutz2009 fixture, made)")
    p.add_argument("--child", nargs=3, metavar=("FILE", "CALLS", "PAD"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args.child[0], int(args.child[1]), args.cpu, int(args.child[2]))

    pythons = args.python or default_pythons()
    if not pythons:
        raise SystemExit("no interpreters: pass --python")
    scratch = tempfile.TemporaryDirectory()
    path = args.file or make_fixture(scratch.name)
    data = open(path, "rb").read()
    envs = environments()

    print("1. fresh processes on CPU %d, %d calls each, median ms; data addresses mod 4096"
          % (args.cpu, args.calls))
    print("| allocator | python | pad | op text read | read phase | decode phase "
          "| bytes data | str data (op) | str data (split) |")
    print("|---|---|---|---|---|---|---|---|---|")
    libs = {}
    rows = {}
    placements = {}   # (bytes data, str data) mod 4096 seen under steady: {versions}
    # Round by round, every cell once a round: a phase of the machine hits all cells alike.
    for _ in range(args.processes):
        for condition, env in envs.items():
            for python in pythons:
                for pad in PADS:
                    out = subprocess.check_output(
                        [python, os.path.abspath(__file__), "--cpu", str(args.cpu),
                         "--child", path, str(args.calls), str(pad)], env=env)
                    r = json.loads(out.decode())
                    libs[r["version"]] = r["libpython"]
                    if condition == "steady":
                        for pair in zip(r["bytes_at"], r["split_str_at"]):
                            placements.setdefault(pair, set()).add(r["version"])
                    rows.setdefault((condition, python, pad), []).append(
                        "| %s | %s | %d | %.3f | %.3f | %.3f | %s | %s | %s |" % (
                            condition, r["version"], pad, r["op"], r["read"], r["decode"],
                            "/".join(map(str, r["bytes_at"])), "/".join(map(str, r["str_at"])),
                            "/".join(map(str, r["split_str_at"]))))
    for cell in rows.values():
        print("\n".join(cell))

    print("\n2. ascii_decode in each libpython (nm)")
    print("| python | address | mod 64 | copy loop's bytes in its 64-byte line | code |")
    print("|---|---|---|---|---|")
    code = None
    reference = None
    for version, lib in libs.items():
        start = function_offset(lib) if os.path.exists(lib) else None
        if start is None:
            print("| %s | not found (%s) | | | |" % (version, lib))
            continue
        with open(lib, "rb") as f:
            f.seek(start)
            body = f.read(FUNCTION_BYTES)
        loop = body[136:184]
        if reference is None:
            reference = loop
        if code is None or version.startswith("3.8"):
            code, code_from = body, version
        print("| %s | %#x | %d | %s | %s |" % (version, start, start % 64, loop_cell(start),
                                              "same as first" if loop == reference else
                                              "differs"))
    if code is None:
        return

    if args.cpu >= 0:
        os.sched_setaffinity(0, {args.cpu})
    placed = Placed(code)
    size = len(data)
    src_memory, src_base = page_buffer(size)
    dst_memory, dst_base = page_buffer(size)
    src = src_base + 48                       # as a bytes' data: 16 past a 32-byte header
    ctypes.memmove(src, data, size)
    dst = dst_base + 48 + 1360                # the real processes' distance (table 1)

    print("\n3. %s's ascii_decode copied to executable memory, decoding the file (%d bytes): "
          "median ms" % (code_from, size))
    print("| function at mod 64 | copy loop's bytes | ms, pass by pass |")
    print("|---|---|---|")
    offsets = range(0, 64, 8)
    passes = {offset: [] for offset in offsets}
    for _ in range(3):   # three passes over the offsets: a phase of the machine shows as such
        for offset in offsets:
            passes[offset].append(time_call(placed.at(offset), src, size, dst))
    for offset in offsets:
        print("| %d | %s | %s |" % (offset, loop_cell(offset),
                                    " ".join("%.3f" % t for t in passes[offset])))

    print("\n4. destination this many bytes past the source, mod 4096 (4K aliasing): median ms")
    distances = (0, 8, 16, 32, 64, 128, 512, 1360, 2048, 4032, 4088)
    print("| function at mod 64 | " + " | ".join(map(str, distances)) + " |")
    print("|---" * (len(distances) + 1) + "|")
    for offset in (0, 16):
        function = placed.at(offset)
        cells = [time_call(function, src, size, dst_base + (48 + d) % 4096, calls=21)
                 for d in distances]
        print("| %d | " % offset + " | ".join("%.3f" % c for c in cells) + " |")

    print("\n5. the data placements the processes of table 1 had (bytes data, str data mod 4096), "
          "with the code at a fast and at the slow placement: median ms")
    print("| bytes data | str data | seen in | function at 0 | function at 16 |")
    print("|---|---|---|---|---|")
    for (at_bytes, at_str), versions in sorted(placements.items()):
        ctypes.memmove(src_base + at_bytes, data, size)
        cells = [time_call(placed.at(offset), src_base + at_bytes, size, dst_base + at_str,
                           calls=21) for offset in (0, 16)]
        print("| %d | %d | %s | %.3f | %.3f |" % (at_bytes, at_str, ", ".join(sorted(versions)),
                                                  cells[0], cells[1]))
    del src_memory, dst_memory


if __name__ == "__main__":
    main()
