/* LD_PRELOAD shim for bench/host_crash.py: after each successful fsync/fdatasync of a regular file, append
 * "INODE SIZE" to $FSYNC_LOG, SIZE being the file's size just before the call (what the call is sure to have
 * put on disk). A host crash keeps each file up to its last such size and loses the rest (the page cache),
 * so the bench cuts the AOF there: the loss a power cut would cause, read from Redis's own fsyncs.
 * Build: gcc -O2 -shared -fPIC -o fsync_log.so fsync_log.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int log_fd = -2;

static void note(int fd, off_t size) {
    if (log_fd == -2) {
        const char *path = getenv("FSYNC_LOG");
        log_fd = path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    }
    if (log_fd < 0) return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return;
    char line[64];
    int n = snprintf(line, sizeof line, "%lu %lld\n", (unsigned long)st.st_ino, (long long)size);
    if (write(log_fd, line, n) < 0) return;
}

static int synced(int fd, int (*real)(int)) {
    struct stat st;
    off_t before = fstat(fd, &st) == 0 ? st.st_size : -1;  /* what this call is sure to cover */
    int rc = real(fd);
    if (rc == 0 && before >= 0) note(fd, before);
    return rc;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    return synced(fd, real);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    return synced(fd, real);
}
