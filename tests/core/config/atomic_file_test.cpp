// write_file_atomically (core/config/atomic_file.h): a file is replaced whole
// or not at all. A producer that fails half-way and a write the file-size
// limit refuses both leave the old file as it was, with no temporary file
// beside it; a FIFO is written in place and stays a FIFO.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "core/config/atomic_file.h"
#include "tests/scratch.h"

using namespace mlk;
namespace fs = std::filesystem;

namespace {

fs::path dir() { return testing_scratch::scratch_dir("atomic_file"); }

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

int files_in(const fs::path& d) {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
    return n;
}

fs::path fresh(const std::string& name) {
    const fs::path d = dir() / name;
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

}  // namespace

TEST(AtomicFile, WritesANewFileAndReplacesAnOldOne) {
    const fs::path d = fresh("replace");
    const std::string path = (d / "report.html").string();
    write_file_atomically(path, "first");
    EXPECT_EQ(read_file(path), "first");
    write_file_atomically(path, "second, longer");
    EXPECT_EQ(read_file(path), "second, longer");
    EXPECT_EQ(files_in(d), 1);
}

TEST(AtomicFile, AProducerThatFailsHalfWayLeavesTheOldFile) {
    const fs::path d = fresh("producer");
    const std::string path = (d / "runs.csv").string();
    write_file_atomically(path, "last week's");
    const auto half_then_fail = [](const ByteSink& write) {
        write("step,reward\n", 12);
        throw std::runtime_error("the store went away");
    };
    EXPECT_THROW(
        {
            try {
                write_file_atomically(path, half_then_fail);
            } catch (const std::runtime_error& e) {
                EXPECT_STREQ(e.what(), "the store went away");
                throw;
            }
        },
        std::runtime_error);
    EXPECT_EQ(read_file(path), "last week's");
    EXPECT_EQ(files_in(d), 1) << "a temporary file was left behind";
}

TEST(AtomicFile, AWriteTheFileSizeLimitRefusesLeavesTheOldFile) {
    const fs::path d = fresh("limit");
    const std::string path = (d / "report.pdf").string();
    write_file_atomically(path, "last week's");
    rlimit old{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto old_handler = signal(SIGXFSZ, SIG_IGN);  // the write then fails with EFBIG
    rlimit small = old;
    small.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    std::string error;
    try {
        write_file_atomically(path, std::string(64 * 1024, 'x'));
    } catch (const std::runtime_error& e) {
        error = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    EXPECT_EQ(error.rfind("cannot write " + path + ": write: ", 0), 0u) << error;
    EXPECT_EQ(read_file(path), "last week's");
    EXPECT_EQ(files_in(d), 1) << "a temporary file was left behind";
}

TEST(AtomicFile, AFifoIsWrittenInPlace) {
    const fs::path d = fresh("fifo");
    const std::string path = (d / "pipe").string();
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    std::string got;
    std::thread reader([&] { got = read_file(path); });
    write_file_atomically(path, "through the pipe");
    reader.join();
    EXPECT_EQ(got, "through the pipe");
    EXPECT_TRUE(fs::is_fifo(path));
    EXPECT_EQ(files_in(d), 1);
}
