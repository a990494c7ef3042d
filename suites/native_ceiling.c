/* The native ceiling: the same block reads, writes and copies as the Python ops, in C.
 *
 *   native_ceiling read  PATH BLOCK REPEAT [cold]
 *   native_ceiling write PATH BYTES BLOCK REPEAT
 *   native_ceiling copy  SRC DST BLOCK REPEAT [cold]
 *
 * "cold" drops the source file from the page cache before every repetition,
 * as the Python ops do under --cache cold.
 * Prints one line per repetition: the seconds from open() to close(), as the
 * Python ops time it. A block of 0 means "the whole file in one call". Exits
 * non-zero, with a message, when the bytes read or written are not the
 * expected count, so a fast wrong answer cannot pass here either.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, const char *path) {
    fprintf(stderr, "native_ceiling: %s %s: %s\n", what, path, strerror(errno));
    exit(1);
}

/* Page-aligned: measured here, a read() into a malloc'd (16-byte aligned) buffer of 256 KiB
 * or more ran 4x slower than into an aligned one, which would make a bad ceiling. */
static char *aligned_buffer(size_t size, const char *what) {
    void *buf = NULL;
    if (posix_memalign(&buf, 4096, size) != 0 || !buf) die("posix_memalign", what);
    return buf;
}

static long long file_size(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) die("stat", path);
    return (long long)st.st_size;
}

static void evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) die("open", path);
    fsync(fd);
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (rc != 0) { errno = rc; die("posix_fadvise", path); }
    close(fd);
}

static long long read_all(int fd, char *buf, size_t block, const char *path) {
    long long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, block);
        if (n < 0) die("read", path);
        if (n == 0) return total;
        total += n;
    }
}

static void write_all(int fd, const char *buf, size_t n, const char *path) {
    while (n > 0) {
        ssize_t w = write(fd, buf, n);
        if (w < 0) die("write", path);
        buf += w;
        n -= (size_t)w;
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: native_ceiling read PATH BLOCK REPEAT | write PATH BYTES BLOCK "
                        "REPEAT | copy SRC DST BLOCK REPEAT\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "read") == 0) {
        const char *path = argv[2];
        long long size = file_size(path);
        size_t block = (size_t)atoll(argv[3]);
        if (block == 0) block = (size_t)size + 1;
        int repeat = atoi(argv[4]);
        int cold = argc > 5 && strcmp(argv[5], "cold") == 0;
        char *buf = aligned_buffer(block, path);
        for (int i = 0; i < repeat; i++) {
            if (cold) evict(path);
            double t0 = now();
            int fd = open(path, O_RDONLY);
            if (fd < 0) die("open", path);
            long long got = read_all(fd, buf, block, path);
            close(fd);
            double t1 = now();
            if (got != size) { fprintf(stderr, "native_ceiling: read %lld of %lld bytes\n", got, size); return 1; }
            printf("%.9f\n", t1 - t0);
        }
        return 0;
    }
    if (strcmp(mode, "write") == 0 && argc >= 6) {
        const char *path = argv[2];
        long long bytes = atoll(argv[3]);
        size_t block = (size_t)atoll(argv[4]);
        if (block == 0) block = (size_t)bytes;
        int repeat = atoi(argv[5]);
        char *buf = aligned_buffer(block, path);
        memset(buf, 'y', block);
        for (int i = 0; i < repeat; i++) {
            double t0 = now();
            int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0) die("open", path);
            for (long long done = 0; done < bytes; done += (long long)block) {
                size_t n = (size_t)(bytes - done < (long long)block ? bytes - done : (long long)block);
                write_all(fd, buf, n, path);
            }
            close(fd);
            double t1 = now();
            if (file_size(path) != bytes) { fprintf(stderr, "native_ceiling: wrote a short file\n"); return 1; }
            printf("%.9f\n", t1 - t0);
        }
        unlink(path);
        return 0;
    }
    if (strcmp(mode, "copy") == 0 && argc >= 6) {
        const char *src = argv[2], *dst = argv[3];
        long long size = file_size(src);
        size_t block = (size_t)atoll(argv[4]);
        if (block == 0) block = (size_t)size + 1;
        int repeat = atoi(argv[5]);
        int cold = argc > 6 && strcmp(argv[6], "cold") == 0;
        char *buf = aligned_buffer(block, src);
        for (int i = 0; i < repeat; i++) {
            if (cold) evict(src);
            double t0 = now();
            int in = open(src, O_RDONLY);
            if (in < 0) die("open", src);
            int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (out < 0) die("open", dst);
            for (;;) {
                ssize_t n = read(in, buf, block);
                if (n < 0) die("read", src);
                if (n == 0) break;
                write_all(out, buf, (size_t)n, dst);
            }
            close(in);
            close(out);
            double t1 = now();
            if (file_size(dst) != size) { fprintf(stderr, "native_ceiling: short copy\n"); return 1; }
            printf("%.9f\n", t1 - t0);
        }
        unlink(dst);
        return 0;
    }
    fprintf(stderr, "native_ceiling: unknown mode %s\n", mode);
    return 2;
}
