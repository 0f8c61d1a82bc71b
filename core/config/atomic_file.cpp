#include "core/config/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace mlk {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string temp_name(const std::string& path) {
    static std::atomic<uint64_t> counter{0};
    return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// The rename is only durable once the directory entry is.
void fsync_dir(const std::filesystem::path& dir) {
    const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)::fsync(fd);
        ::close(fd);
    }
}

bool replaceable(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode);
}

// Writes everything `produce` hands over to `fd`; "cannot write PATH: write: ..." on failure.
void write_all(int fd, const std::string& path, const std::function<void(const ByteSink&)>& produce) {
    produce([&](const void* bytes, size_t n) {
        const char* p = static_cast<const char*>(bytes);
        while (n > 0) {
            const ssize_t w = ::write(fd, p, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                throw std::runtime_error("cannot write " + path + ": write: " + errno_text());
            }
            p += w;
            n -= static_cast<size_t>(w);
        }
    });
}

void write_in_place(const std::string& path, const std::function<void(const ByteSink&)>& produce) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error("cannot write " + path + ": " + errno_text());
    try {
        write_all(fd, path, produce);
    } catch (...) {
        ::close(fd);
        throw;
    }
    if (::close(fd) != 0) throw std::runtime_error("cannot write " + path + ": close: " + errno_text());
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(const ByteSink&)>& produce) {
    if (!replaceable(path)) return write_in_place(path, produce);
    const std::string tmp = temp_name(path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        throw std::runtime_error("cannot write " + path + ": " + errno_text());  // the folder refuses a new file
    const auto fail = [&](const std::string& what) {
        const std::string e = errno_text();
        ::close(fd);
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot write " + path + ": " + what + ": " + e);
    };
    try {
        write_all(fd, path, produce);
    } catch (...) {
        ::close(fd);
        ::unlink(tmp.c_str());
        throw;
    }
    if (::fsync(fd) != 0) fail("fsync");
    if (::close(fd) != 0) {
        const std::string e = errno_text();
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot write " + path + ": close: " + e);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string e = errno_text();
        ::unlink(tmp.c_str());
        throw std::runtime_error("cannot write " + path + ": rename: " + e);
    }
    fsync_dir(std::filesystem::path(path).parent_path());
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
    write_file_atomically(path, [&](const ByteSink& write) { write(bytes.data(), bytes.size()); });
}

}  // namespace mlk
