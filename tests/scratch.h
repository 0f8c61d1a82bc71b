// Scratch folders for suites that run the CLI and write run stores. CTest runs
// each test in a process of its own, two at a time, and another checkout on
// the same machine may run the same suite: every process gets its own folder,
// removed when it exits. The base-policy cache is shared per user (a warm-up
// trained once serves all; its files are written by rename), as two CLI runs
// on one machine share theirs.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace mlk::testing_scratch {

namespace fs = std::filesystem;

// <tmp>/mlk_<suite>_<pid>, fresh, removed at exit.
inline fs::path scratch_dir(const std::string& suite) {
    static fs::path dir;
    if (dir.empty()) {
        dir = fs::temp_directory_path() / ("mlk_" + suite + "_" + std::to_string(getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(dir, ec);
        });
    }
    return dir;
}

// The per-user base-policy cache shared by every test process.
inline std::string shared_cache_dir() {
    return (fs::temp_directory_path() / ("mlk_test_cache_uid" + std::to_string(getuid()))).string();
}

// A database path in `dir` with nothing left of an earlier one: a stale
// -wal beside a new file would be replayed into it (corrupting it), and a
// stale checkpoint folder would be found by the new run.
inline std::string fresh_db(const fs::path& dir, const std::string& name) {
    const fs::path p = dir / (name.find('.') == std::string::npos ? name + ".sqlite" : name);
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(p.string() + suffix);
    fs::remove_all(p.string() + ".ckpt");
    return p.string();
}

}  // namespace mlk::testing_scratch
