"""The system calls whose bytes the counting pass sums (``syscall_bytes`` of a counters file).

Names only, no imports: the counting pass (``iomatrix.measuring.counttools``), the counters
file's reader (``countsfile``) and its schema (``schema``) all use them.
"""

# The system calls whose non-negative return value is the number of bytes they moved: the
# counting pass sums it per op as "syscall_bytes" (strace's output, measuring.counttools).
BYTE_SYSCALLS = ("read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev",
                 "pwritev", "pwritev2", "sendfile", "sendfile64", "copy_file_range", "splice")
# What the byte-moving calls of one op's counted calls moved at most: 1 PiB, far above any
# fixture (the largest is some MiB), so a value above it is a damaged file, not a count.
MAX_SYSCALL_BYTES = 2 ** 50
