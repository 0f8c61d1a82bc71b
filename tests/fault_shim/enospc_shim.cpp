// A full disk for one file, for the fault tests: preloaded into a process
// (LD_PRELOAD), it makes the first write to the database MLK_ENOSPC_DB (or
// its -wal / -journal) that would end past MLK_ENOSPC_AT bytes fail with
// ENOSPC, as a file system with that much room would; the writes after it
// find room again (another process freed some). Every other file, the run's
// checkpoints among them, is written as usual (checkpoints on another file
// system). It wraps the calls SQLite's Unix VFS writes with.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

// Whether a write of n bytes at `end_offset - n` must fail: fd is the
// database, its WAL or its journal, and the file would end past the limit.
bool full(int fd, off_t end_offset) {
    static const char* db = std::getenv("MLK_ENOSPC_DB");
    static const long long at = db ? std::atoll(std::getenv("MLK_ENOSPC_AT") ? std::getenv("MLK_ENOSPC_AT") : "0") : 0;
    static bool failed_once = false;
    if (!db || failed_once || end_offset <= at) return false;
    char link[64], path[4096];
    std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return false;
    path[n] = '\0';
    const std::string p(path), d(db);
    failed_once = p == d || p == d + "-wal" || p == d + "-journal";
    return failed_once;
}

template <class F>
F next(const char* name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

ssize_t write(int fd, const void* buf, size_t n) {
    static auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
    const off_t at = lseek(fd, 0, SEEK_CUR);
    if (at >= 0 && full(fd, at + (off_t)n)) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, buf, n);
}

ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
    static auto real = next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
    if (full(fd, off + (off_t)n)) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
    static auto real = next<ssize_t (*)(int, const void*, size_t, off64_t)>("pwrite64");
    if (full(fd, (off_t)(off + (off64_t)n))) {
        errno = ENOSPC;
        return -1;
    }
    return real(fd, buf, n, off);
}

}  // extern "C"
