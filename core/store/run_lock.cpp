#include "core/store/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

namespace mlk {

namespace {

std::string lock_path(const std::string& db_path, int64_t run_id) {
    return run_checkpoint_root(db_path, run_id) + "/writer.lock";
}

std::string holder_pid(int fd) {
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    return n > 0 ? std::string(buf, (size_t)n) : std::string("?");
}

}  // namespace

std::string run_checkpoint_root(const std::string& db_path, int64_t run_id) {
    return db_path + ".ckpt/run-" + std::to_string(run_id);
}

RunWriterLock RunWriterLock::acquire(const std::string& db_path, int64_t run_id) {
    const std::string path = lock_path(db_path, run_id);
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    if (ec) throw std::runtime_error("cannot create " + run_checkpoint_root(db_path, run_id) + ": " + ec.message());
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    // A reader's probe (run_writer_alive) holds a shared lock for an instant:
    // retry for a moment before calling the run taken.
    for (int attempt = 0;; ++attempt) {
        if (::flock(fd, LOCK_EX | LOCK_NB) == 0) break;
        if (errno != EWOULDBLOCK || attempt == 40) {
            const int err = errno;
            const std::string pid = holder_pid(fd);
            ::close(fd);
            if (err != EWOULDBLOCK) throw std::runtime_error("cannot lock " + path + ": " + std::strerror(err));
            throw std::runtime_error("run " + std::to_string(run_id) + " is being written by another process (pid " +
                                     pid + "); stop it first");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const std::string pid = std::to_string(::getpid());
    const bool named = ::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) == (ssize_t)pid.size();
    (void)named;  // best effort: the pid only names the holder in a refusal
    return RunWriterLock(fd);
}

RunWriterLock::RunWriterLock(RunWriterLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
RunWriterLock& RunWriterLock::operator=(RunWriterLock&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = o.fd_;
        o.fd_ = -1;
    }
    return *this;
}
RunWriterLock::~RunWriterLock() {
    if (fd_ >= 0) ::close(fd_);  // releases the flock
}

bool run_writer_alive(const std::string& db_path, int64_t run_id) {
    const int fd = ::open(lock_path(db_path, run_id).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;  // never written by a process that locks
    const bool free = ::flock(fd, LOCK_SH | LOCK_NB) == 0;
    ::close(fd);
    return !free;
}

}  // namespace mlk
