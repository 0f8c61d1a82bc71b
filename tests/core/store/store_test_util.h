// Shared by the run store's test files: a fresh directory per test, bit-exact
// comparison of doubles, raw sqlite3 access for hand-made files, and a step
// record holding every awkward double.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/store/store.h"

namespace mlk::store_test {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class StoreTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = fs::temp_directory_path() / ("mlk_store_test_" + std::to_string(getpid()) + "_" + info->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string file(const std::string& name) const { return (dir_ / name).string(); }
    fs::path dir_;
};

inline uint64_t bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}

// Bit-exact, except that every NaN equals every NaN.
inline void expect_same(double a, double b, const std::string& what = "") {
    if (std::isnan(a)) {
        EXPECT_TRUE(std::isnan(b)) << what;
        return;
    }
    EXPECT_EQ(bits(a), bits(b)) << what << ": " << a << " vs " << b;
}

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

// Raw sqlite3 helpers for hand-made files and checks outside the Store API.
struct Raw {
    sqlite3* db = nullptr;
    explicit Raw(const std::string& path) { EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK); }
    ~Raw() { sqlite3_close(db); }
    void exec(const std::string& sql) {
        char* err = nullptr;
        const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
        EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << " in " << sql;
        sqlite3_free(err);
    }
    std::string scalar(const std::string& sql) {
        sqlite3_stmt* s = nullptr;
        EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sql;
        std::string out;
        if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
            out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        sqlite3_finalize(s);
        return out;
    }
};

inline const std::vector<double> kWeird = {
    0.1,
    -0.0,
    0.0,
    1.0 / 3.0,
    -2.718281828459045,
    std::numeric_limits<double>::denorm_min(),
    -std::numeric_limits<double>::denorm_min(),
    std::numeric_limits<double>::min(),
    std::numeric_limits<double>::max(),
    std::numeric_limits<double>::lowest(),
    std::numeric_limits<double>::epsilon(),
    std::numeric_limits<double>::infinity(),
    -std::numeric_limits<double>::infinity(),
    std::numeric_limits<double>::quiet_NaN(),
    1e300,
    123456789.0,
};

inline StepRecord make_step(int64_t step, int n_metrics = 8, int n_tokens = 16) {
    StepRecord r;
    r.step = step;
    for (int i = 0; i < n_metrics; ++i) {
        std::string name = "m";
        name += std::to_string(i);  // (not "m" + ...: g++ 12 -Wrestrict false positive)
        r.metrics.emplace_back(name, kWeird[(i + step) % kWeird.size()] + (i == 3 ? step : 0));
    }
    for (int i = 0; i < n_tokens; ++i)
        r.token_samples.push_back(TokenSample{i, -0.25 * i - 1e-9 * step, -0.25 * i + 1e-7, i / 4, i % 4, 3 + i});
    for (double t : {1.1, 1.5, 2.0, 5.0, 10.0}) r.ft_curve.push_back(FtPoint{t, 1.0 / (t * (step + 1))});
    r.router_hist = {{0, 100 + step}, {1, 7}, {2, int64_t{1} << 40}};
    r.text_samples.push_back(TextSample{0, "12+7=", "19", 1.0, R"({"ids":[4,12,2]})"});
    r.text_samples.push_back(TextSample{1, "3+4=", "8\"'\n\xc3\xa9", -0.0, "{}"});
    return r;
}

}  // namespace mlk::store_test
