#include "core/store/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <thread>

using namespace mlk;
namespace fs = std::filesystem;

namespace {

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

uint64_t bits(double d) {
    uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return u;
}

// Bit-exact, except that every NaN equals every NaN.
void expect_same(double a, double b, const std::string& what = "") {
    if (std::isnan(a)) {
        EXPECT_TRUE(std::isnan(b)) << what;
        return;
    }
    EXPECT_EQ(bits(a), bits(b)) << what << ": " << a << " vs " << b;
}

std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
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

const std::vector<double> kWeird = {
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

StepRecord make_step(int64_t step, int n_metrics = 8, int n_tokens = 16) {
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

}  // namespace

TEST_F(StoreTest, CreatesSchemaInWalMode) {
    const auto path = file("runs.sqlite");
    { Store s = Store::open(path); }
    Raw raw(path);
    EXPECT_EQ(raw.scalar("PRAGMA user_version"), std::to_string(Store::schema_version()));
    EXPECT_EQ(raw.scalar("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw.scalar("PRAGMA application_id"), std::to_string(Store::kApplicationId));
    EXPECT_EQ(raw.scalar("PRAGMA integrity_check"), "ok");
    // Reopening an up-to-date store is a no-op.
    Store again = Store::open(path);
    EXPECT_TRUE(again.list_runs().empty());
}

TEST_F(StoreTest, RoundTripEveryTableExactly) {
    const auto path = file("runs.sqlite");
    Store s = Store::open(path);
    const uint64_t seed = std::numeric_limits<uint64_t>::max() - 3;
    const std::string cfg = R"({"task":"addition","lr":1e-5,"name":"ünï"})";
    const int64_t id = s.create_run("first run", "tiny-dense", cfg, seed);
    EXPECT_GT(id, 0);

    StepRecord rec;
    rec.step = 0;
    for (size_t i = 0; i < kWeird.size(); ++i) rec.metrics.emplace_back("w" + std::to_string(100 + i), kWeird[i]);
    rec.metrics.emplace_back("k3_kl", 0.0);
    for (int i = 0; i < 40; ++i) {
        const double a = kWeird[i % kWeird.size()], b = kWeird[(i * 7 + 3) % kWeird.size()];
        rec.token_samples.push_back(TokenSample{i, a, b, i / 10, i % 10, (i * 13) % 52});
    }
    for (size_t i = 0; i < kWeird.size(); ++i)
        if (!std::isnan(kWeird[i]) && !(kWeird[i] == 0.0 && std::signbit(kWeird[i])))  // t is a key
            rec.ft_curve.push_back(FtPoint{kWeird[i], kWeird[(i + 5) % kWeird.size()]});
    std::sort(rec.ft_curve.begin(), rec.ft_curve.end(), [](auto& x, auto& y) { return x.t < y.t; });
    rec.router_hist = {{0, 0}, {1, 5}, {2, std::numeric_limits<int64_t>::max()}, {-1, -3}};
    rec.text_samples = {
        TextSample{0, "12+7=", "19", 1.0, R"({"ids":[4,12,2],"lp_roll":[-0.1,-0.2],"flips":[0,1]})"},
        TextSample{1, "a|", std::string("x\0y", 3), std::numeric_limits<double>::quiet_NaN(), ""},
        TextSample{2, "\"quoted\" 'single' \xe2\x9c\x93", "-0", -0.0, "[]"},
        TextSample{3, "", "", -std::numeric_limits<double>::infinity(), "{}"},
    };
    s.append_step(id, rec);

    // A second connection reads it back.
    Store r = Store::open(path);
    auto info = r.run_info(id);
    ASSERT_TRUE(info);
    EXPECT_EQ(info->name, "first run");
    EXPECT_EQ(info->preset, "tiny-dense");
    EXPECT_EQ(info->config_json, cfg);
    EXPECT_EQ(info->seed, seed);
    EXPECT_EQ(info->status, "running");
    EXPECT_EQ(info->steps, 1);
    EXPECT_EQ(info->last_step, 0);
    EXPECT_FALSE(info->app_version.empty());
    EXPECT_EQ(info->notes, "");
    ASSERT_EQ(info->created.size(), 24u);  // 2025-01-31T12:00:00.123Z
    EXPECT_EQ(info->created[10], 'T');
    EXPECT_EQ(info->created.back(), 'Z');
    EXPECT_GE(info->updated, info->created);

    auto names = r.metric_names(id);
    ASSERT_EQ(names.size(), rec.metrics.size());
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    for (const auto& [name, value] : rec.metrics) {
        auto series = r.metric_series(id, name);
        ASSERT_EQ(series.size(), 1u) << name;
        EXPECT_EQ(series[0].first, 0);
        expect_same(series[0].second, value, name);
    }
    auto table = r.all_metrics(id);
    ASSERT_EQ(table.steps, std::vector<int64_t>{0});
    EXPECT_EQ(table.names, names);
    for (const auto& [name, value] : rec.metrics) {
        const auto col = std::find(table.names.begin(), table.names.end(), name) - table.names.begin();
        expect_same(table.values[0][col], value, name);
    }

    auto toks = r.token_samples(id, 0);
    ASSERT_EQ(toks.size(), rec.token_samples.size());
    for (size_t i = 0; i < toks.size(); ++i) {
        EXPECT_EQ(toks[i].idx, rec.token_samples[i].idx);
        EXPECT_EQ(toks[i].seq, rec.token_samples[i].seq);
        EXPECT_EQ(toks[i].pos, rec.token_samples[i].pos);
        EXPECT_EQ(toks[i].token, rec.token_samples[i].token);
        expect_same(toks[i].lp_roll, rec.token_samples[i].lp_roll, "lp_roll");
        expect_same(toks[i].lp_train, rec.token_samples[i].lp_train, "lp_train");
    }
    auto ft = r.ft_curve(id, 0);
    ASSERT_EQ(ft.size(), rec.ft_curve.size());
    for (size_t i = 0; i < ft.size(); ++i) {
        expect_same(ft[i].t, rec.ft_curve[i].t, "t");
        expect_same(ft[i].frac, rec.ft_curve[i].frac, "frac");
    }
    auto rh = r.router_hist(id, 0);
    auto want_rh = rec.router_hist;
    std::sort(want_rh.begin(), want_rh.end(), [](auto& a, auto& b) { return a.d < b.d; });
    EXPECT_EQ(rh, want_rh);
    auto ts = r.text_samples(id, 0);
    ASSERT_EQ(ts.size(), rec.text_samples.size());
    for (size_t i = 0; i < ts.size(); ++i) {
        EXPECT_EQ(ts[i].idx, rec.text_samples[i].idx);
        EXPECT_EQ(ts[i].prompt, rec.text_samples[i].prompt);
        EXPECT_EQ(ts[i].response, rec.text_samples[i].response);
        EXPECT_EQ(ts[i].tokens_json, rec.text_samples[i].tokens_json);
        expect_same(ts[i].reward, rec.text_samples[i].reward, "reward");
    }
    // Nothing for other steps or runs.
    EXPECT_TRUE(r.token_samples(id, 1).empty());
    EXPECT_TRUE(r.text_samples(id + 1, 0).empty());
    EXPECT_FALSE(r.run_info(id + 1));
}

TEST_F(StoreTest, AppendValidatesAndReplaces) {
    Store s = Store::open(file("runs.sqlite"));
    EXPECT_THROW(s.append_step(42, make_step(0)), StoreError);
    const int64_t id = s.create_run("r", "p", "{}", 1);
    StepRecord dup = make_step(0);
    dup.metrics.emplace_back("m1", 5.0);
    EXPECT_THROW(s.append_step(id, dup), StoreError);
    EXPECT_FALSE(s.last_step(id));  // the failed transaction left nothing
    EXPECT_TRUE(s.metric_names(id).empty());

    s.append_step(id, make_step(0));
    StepRecord again = make_step(0, 2, 3);
    again.metrics[0].second = 99.0;
    s.append_step(id, again);  // re-appending a step replaces all of its rows
    EXPECT_EQ(s.metric_names(id), (std::vector<std::string>{"m0", "m1"}));
    EXPECT_EQ(s.metric_series(id, "m0")[0].second, 99.0);
    EXPECT_EQ(s.token_samples(id, 0).size(), 3u);
    EXPECT_EQ(s.run_info(id)->steps, 1);

    // Token samples are thinned to the bound, evenly, first one kept.
    StepRecord big = make_step(1, 1, 10000);
    s.append_step(id, big);
    auto toks = s.token_samples(id, 1);
    ASSERT_EQ(toks.size(), Store::kMaxTokenSamples);
    EXPECT_EQ(toks.front().idx, 0);
    EXPECT_GT(toks.back().idx, 9990);
}

TEST_F(StoreTest, StepsSinceAndLastStep) {
    Store s = Store::open(file("runs.sqlite"));
    const int64_t id = s.create_run("r", "p", "{}", 1);
    const int64_t other = s.create_run("other", "p", "{}", 2);
    EXPECT_FALSE(s.last_step(id));
    EXPECT_TRUE(s.steps_since(id, -1).empty());
    const double before = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    for (int64_t k = 0; k < 10; ++k) s.append_step(id, make_step(k));
    s.append_step(other, make_step(100));
    const double after = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    EXPECT_EQ(s.last_step(id), 9);
    EXPECT_EQ(s.last_step(other), 100);
    auto all = s.steps_since(id, -1);
    ASSERT_EQ(all.size(), 10u);
    // Each step carries its commit time (ms resolution), in commit order.
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_GE(all[i].time, std::floor(before * 1000) / 1000);
        EXPECT_LE(all[i].time, after + 0.001);
        if (i > 0) EXPECT_GE(all[i].time, all[i - 1].time);
    }
    auto tail = s.steps_since(id, 6);
    ASSERT_EQ(tail.size(), 3u);
    for (size_t i = 0; i < tail.size(); ++i) {
        const StepRecord want = make_step(7 + static_cast<int64_t>(i));
        EXPECT_EQ(tail[i].step, want.step);
        ASSERT_EQ(tail[i].metrics.size(), want.metrics.size());
        for (size_t j = 0; j < want.metrics.size(); ++j) {
            EXPECT_EQ(tail[i].metrics[j].first, want.metrics[j].first);
            expect_same(tail[i].metrics[j].second, want.metrics[j].second);
        }
    }
    EXPECT_TRUE(s.steps_since(id, 9).empty());
    auto series = s.metric_series(id, "m3");
    ASSERT_EQ(series.size(), 10u);
    for (int64_t k = 0; k < 10; ++k) EXPECT_EQ(series[k].first, k);
    EXPECT_EQ(s.steps(id), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    auto t = s.all_metrics(id);
    EXPECT_EQ(t.steps.size(), 10u);
    EXPECT_EQ(t.names.size(), 8u);
}

TEST_F(StoreTest, AllMetricsFillsMissingWithNaN) {
    Store s = Store::open(file("runs.sqlite"));
    const int64_t id = s.create_run("r", "p", "{}", 1);
    StepRecord a;
    a.step = 0;
    a.metrics = {{"reward_mean", 0.5}};
    StepRecord b;
    b.step = 3;
    b.metrics = {{"grad_norm", 2.0}, {"reward_mean", 0.75}};
    s.append_step(id, a);
    s.append_step(id, b);
    auto t = s.all_metrics(id);
    EXPECT_EQ(t.steps, (std::vector<int64_t>{0, 3}));
    EXPECT_EQ(t.names, (std::vector<std::string>{"grad_norm", "reward_mean"}));
    EXPECT_TRUE(std::isnan(t.values[0][0]));
    EXPECT_EQ(t.values[0][1], 0.5);
    EXPECT_EQ(t.values[1][0], 2.0);
    EXPECT_EQ(t.values[1][1], 0.75);
}

TEST_F(StoreTest, RenameNotesStatusListDelete) {
    Store s = Store::open(file("runs.sqlite"));
    const int64_t a = s.create_run("alpha", "tiny-dense", "{}", 1);
    const int64_t b = s.create_run("beta", "tiny-moe", "{\"x\":1}", 2, RunStatus::paused);
    for (int64_t k = 0; k < 3; ++k) s.append_step(a, make_step(k));
    s.append_step(b, make_step(0));
    s.add_checkpoint(b, 0, "/tmp/b0.safetensors");
    s.add_checkpoint(a, 2, "/tmp/a2.safetensors");

    s.rename_run(a, "alpha renamed");
    s.set_notes(a, "TIS on, bf16 rollout");
    s.set_status(a, RunStatus::finished);
    EXPECT_THROW(s.rename_run(999, "x"), StoreError);
    EXPECT_THROW(s.set_status(999, RunStatus::failed), StoreError);

    auto runs = s.list_runs();
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].id, b);  // newest first
    EXPECT_EQ(runs[0].status, "paused");
    EXPECT_EQ(runs[0].preset, "tiny-moe");
    EXPECT_EQ(runs[0].steps, 1);
    EXPECT_EQ(runs[1].name, "alpha renamed");
    EXPECT_EQ(runs[1].status, "finished");
    EXPECT_EQ(runs[1].steps, 3);
    EXPECT_EQ(s.run_info(a)->notes, "TIS on, bf16 rollout");

    EXPECT_EQ(parse_run_status("stopped"), RunStatus::stopped);
    EXPECT_THROW(parse_run_status("zombie"), StoreError);

    s.delete_run(b);
    EXPECT_FALSE(s.run_info(b));
    EXPECT_EQ(s.list_runs().size(), 1u);
    // Every row of b is gone, a is untouched.
    Raw raw(s.path());
    for (const char* t :
         {"metrics", "token_samples", "ft_curves", "router_hist", "text_samples", "checkpoints", "steps"}) {
        EXPECT_EQ(raw.scalar(std::string("SELECT COUNT(*) FROM ") + t + " WHERE run_id = " + std::to_string(b)), "0")
            << t;
        EXPECT_NE(raw.scalar(std::string("SELECT COUNT(*) FROM ") + t + " WHERE run_id = " + std::to_string(a)), "0")
            << t;
    }
    s.delete_run(b);  // deleting again is a no-op
}

TEST_F(StoreTest, CheckpointsAndTruncateAfter) {
    Store s = Store::open(file("runs.sqlite"));
    const int64_t id = s.create_run("r", "p", "{}", 1);
    EXPECT_FALSE(s.last_checkpoint(id));
    for (int64_t k = 0; k < 10; ++k) s.append_step(id, make_step(k));
    s.add_checkpoint(id, 4, "ckpt/step4.safetensors");
    s.add_checkpoint(id, 8, "ckpt/step8.safetensors");
    auto last = s.last_checkpoint(id);
    ASSERT_TRUE(last);
    EXPECT_EQ(last->step, 8);
    EXPECT_EQ(last->path, "ckpt/step8.safetensors");
    EXPECT_EQ(s.checkpoints(id).size(), 2u);

    // Resume from step 4: everything after it goes, step 4 stays whole.
    s.truncate_after(id, 4);
    EXPECT_EQ(s.last_step(id), 4);
    EXPECT_EQ(s.last_checkpoint(id)->step, 4);
    EXPECT_EQ(s.metric_series(id, "m0").size(), 5u);
    EXPECT_TRUE(s.token_samples(id, 5).empty());
    EXPECT_TRUE(s.ft_curve(id, 9).empty());
    EXPECT_TRUE(s.router_hist(id, 7).empty());
    EXPECT_TRUE(s.text_samples(id, 6).empty());
    EXPECT_EQ(s.token_samples(id, 4).size(), 16u);
    EXPECT_EQ(s.ft_curve(id, 4).size(), 5u);
    EXPECT_EQ(s.router_hist(id, 4).size(), 3u);
    EXPECT_EQ(s.text_samples(id, 4).size(), 2u);
    EXPECT_EQ(s.run_info(id)->steps, 5);
    s.append_step(id, make_step(5));
    EXPECT_EQ(s.last_step(id), 5);
}

TEST_F(StoreTest, ReaderWhileWriterAppends) {
    const auto path = file("runs.sqlite");
    int64_t id;
    {
        Store s = Store::open(path);
        id = s.create_run("live", "p", "{}", 1);
    }
    constexpr int kSteps = 300, kMetrics = 12;
    std::atomic<bool> done{false};
    std::thread writer([&] {
        Store w = Store::open(path);
        for (int64_t k = 0; k < kSteps; ++k) w.append_step(id, make_step(k, kMetrics, 32));
        done = true;
    });
    Store r = Store::open(path);
    int64_t seen = -1;
    int polls = 0, batches = 0;
    while (true) {
        const bool finished = done.load();
        const auto fresh = r.steps_since(id, seen);
        batches += !fresh.empty();
        for (const auto& st : fresh) {
            EXPECT_EQ(st.step, seen + 1);  // in order, none skipped
            EXPECT_EQ(st.metrics.size(), static_cast<size_t>(kMetrics)) << "partial step " << st.step;
            EXPECT_EQ(r.token_samples(id, st.step).size(), 32u);
            seen = st.step;
        }
        ++polls;
        if (finished && seen == kSteps - 1) break;
        if (finished && polls > 100000) break;
    }
    writer.join();
    EXPECT_EQ(seen, kSteps - 1);
    EXPECT_GT(batches, 1);  // the reader really read while the writer wrote
    EXPECT_EQ(r.run_info(id)->steps, kSteps);
}

TEST_F(StoreTest, MigratesHandMadeV1File) {
    const auto path = file("v1.sqlite");
    {
        // The v1 schema exactly as release 1 wrote it.
        Raw raw(path);
        raw.exec(R"sql(
PRAGMA application_id = 1296845617;
CREATE TABLE runs(id INTEGER PRIMARY KEY, name TEXT NOT NULL, created TEXT NOT NULL, status TEXT NOT NULL,
  preset TEXT NOT NULL DEFAULT '', config_json TEXT NOT NULL DEFAULT '{}', seed INTEGER NOT NULL DEFAULT 0,
  app_version TEXT NOT NULL DEFAULT '', notes TEXT NOT NULL DEFAULT '');
CREATE TABLE metrics(run_id INTEGER NOT NULL, step INTEGER NOT NULL, name TEXT NOT NULL, value,
  PRIMARY KEY(run_id, step, name)) WITHOUT ROWID;
CREATE TABLE token_samples(run_id INTEGER NOT NULL, step INTEGER NOT NULL, idx INTEGER NOT NULL,
  lp_roll, lp_train, seq INTEGER NOT NULL, pos INTEGER NOT NULL, token INTEGER NOT NULL,
  PRIMARY KEY(run_id, step, idx)) WITHOUT ROWID;
CREATE TABLE ft_curves(run_id INTEGER NOT NULL, step INTEGER NOT NULL, t NOT NULL, frac,
  PRIMARY KEY(run_id, step, t)) WITHOUT ROWID;
CREATE TABLE router_hist(run_id INTEGER NOT NULL, step INTEGER NOT NULL, d INTEGER NOT NULL,
  count INTEGER NOT NULL, PRIMARY KEY(run_id, step, d)) WITHOUT ROWID;
CREATE TABLE text_samples(run_id INTEGER NOT NULL, step INTEGER NOT NULL, idx INTEGER NOT NULL,
  prompt TEXT NOT NULL, response TEXT NOT NULL, reward, tokens_json TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(run_id, step, idx)) WITHOUT ROWID;
CREATE TABLE checkpoints(run_id INTEGER NOT NULL, step INTEGER NOT NULL, path TEXT NOT NULL,
  created TEXT NOT NULL, PRIMARY KEY(run_id, step)) WITHOUT ROWID;
INSERT INTO runs VALUES(7, 'old run', '2024-06-01T10:00:00.000Z', 'finished', 'tiny-dense', '{}', -1, '0.0.9', 'n');
INSERT INTO metrics VALUES(7, 0, 'reward_mean', 0.25), (7, 0, 'k3_kl', NULL), (7, 1, 'reward_mean', 0.5),
  (7, 1, 'k3_kl', 1e-3), (7, 2, 'reward_mean', 0.75);
INSERT INTO ft_curves VALUES(7, 1, 2.0, 0.125);
INSERT INTO checkpoints VALUES(7, 1, 'ck/1.safetensors', '2024-06-01T10:01:00.000Z');
PRAGMA user_version = 1;
)sql");
    }
    {
        Store s = Store::open(path);
        auto info = s.run_info(7);
        ASSERT_TRUE(info);
        EXPECT_EQ(info->name, "old run");
        EXPECT_EQ(info->updated, "2024-06-01T10:00:00.000Z");  // backfilled from created
        EXPECT_EQ(info->seed, std::numeric_limits<uint64_t>::max());
        EXPECT_EQ(info->steps, 3);  // steps table backfilled from metrics
        EXPECT_EQ(info->last_step, 2);
        auto kl = s.metric_series(7, "k3_kl");
        ASSERT_EQ(kl.size(), 2u);
        EXPECT_TRUE(std::isnan(kl[0].second));
        EXPECT_EQ(kl[1].second, 1e-3);
        EXPECT_EQ(s.ft_curve(7, 1), (std::vector<FtPoint>{{2.0, 0.125}}));
        EXPECT_EQ(s.last_checkpoint(7)->path, "ck/1.safetensors");
        s.append_step(7, make_step(3));
        EXPECT_EQ(s.last_step(7), 3);
        EXPECT_EQ(s.list_runs().at(0).steps, 4);
        // v1 kept no step times: unknown, not a made-up one; new steps have theirs.
        const auto rows = s.steps_since(7, -1);
        ASSERT_EQ(rows.size(), 4u);
        EXPECT_TRUE(std::isnan(rows[0].time));
        EXPECT_TRUE(std::isnan(rows[2].time));
        EXPECT_GT(rows[3].time, 1.7e9);
    }
    Raw raw(path);
    EXPECT_EQ(raw.scalar("PRAGMA user_version"), std::to_string(Store::schema_version()));
    EXPECT_EQ(raw.scalar("PRAGMA integrity_check"), "ok");
    EXPECT_EQ(raw.scalar("SELECT COUNT(*) FROM sqlite_master WHERE name = 'metrics_by_name'"), "1");
}

TEST_F(StoreTest, RefusesGarbageAndLeavesItUntouched) {
    std::mt19937_64 rng(5);
    std::string garbage(8192, '\0');
    for (auto& c : garbage) c = static_cast<char>(rng());
    const std::vector<std::pair<std::string, std::string>> files = {
        {"garbage.sqlite", garbage},
        {"text.sqlite", "this is a text file, not a database\n"},
        {"short.sqlite", "SQLite"},
        {"header_only.sqlite", std::string("SQLite format 3\0", 16) + std::string(84, '\xff')},
    };
    for (const auto& [name, bytes] : files) {
        const auto path = file(name);
        write_bytes(path, bytes);
        try {
            Store::open(path);
            ADD_FAILURE() << name << " opened";
        } catch (const StoreError& e) {
            EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        }
        EXPECT_EQ(read_bytes(path), bytes) << name;
        EXPECT_FALSE(fs::exists(path + "-wal")) << name;
    }
    EXPECT_THROW(Store::open(dir_.string()), StoreError);                    // a directory
    EXPECT_THROW(Store::open(file("no/such/dir/runs.sqlite")), StoreError);  // missing parent
}

TEST_F(StoreTest, RefusesNewerSchemaAndForeignDatabases) {
    const auto newer = file("newer.sqlite");
    {
        Store s = Store::open(newer);
        s.create_run("r", "p", "{}", 1);
    }
    {
        Raw raw(newer);
        raw.exec("PRAGMA journal_mode=DELETE; PRAGMA user_version = " + std::to_string(Store::schema_version() + 1));
    }
    const std::string before = read_bytes(newer);
    try {
        Store::open(newer);
        ADD_FAILURE() << "newer schema opened";
    } catch (const StoreError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(newer), std::string::npos) << m;
        EXPECT_NE(m.find("newer"), std::string::npos) << m;
    }
    EXPECT_EQ(read_bytes(newer), before);

    const auto foreign = file("foreign.sqlite");
    {
        Raw raw(foreign);
        raw.exec("CREATE TABLE contacts(name TEXT); INSERT INTO contacts VALUES('x');");
    }
    const std::string fbefore = read_bytes(foreign);
    EXPECT_THROW(Store::open(foreign), StoreError);
    EXPECT_EQ(read_bytes(foreign), fbefore);

    // An empty file is an empty database and becomes a store.
    const auto empty = file("empty.sqlite");
    write_bytes(empty, "");
    EXPECT_NO_THROW(Store::open(empty));
}

// A child appends steps until it is SIGKILLed at a random moment; every step
// whose transaction committed must be complete and the file must be intact.
TEST_F(StoreTest, SurvivesSigkillMidAppend) {
    const auto path = file("crash.sqlite");
    int64_t id;
    {
        Store s = Store::open(path);
        id = s.create_run("crashy", "p", "{}", 1);
    }
    constexpr int kMetrics = 40, kTokens = 256;
    std::mt19937 rng(static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count()));
    int64_t committed_total = 0;
    for (int round = 0; round < 6; ++round) {
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            try {
                Store w = Store::open(path);
                auto last = w.last_step(id);
                for (int64_t k = last ? *last + 1 : 0;; ++k) w.append_step(id, make_step(k, kMetrics, kTokens));
            } catch (...) {
                _exit(3);
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(30 + rng() % 250));
        ASSERT_EQ(kill(pid, SIGKILL), 0);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with status " << WEXITSTATUS(status);

        {
            Raw raw(path);
            EXPECT_EQ(raw.scalar("PRAGMA integrity_check"), "ok");
        }
        Store s = Store::open(path);
        const auto steps = s.steps(id);
        for (size_t i = 0; i < steps.size(); ++i) ASSERT_EQ(steps[i], static_cast<int64_t>(i));
        const auto table = s.all_metrics(id);
        ASSERT_EQ(table.steps, steps);
        for (size_t i = 0; i < steps.size(); ++i) {
            const StepRecord want = make_step(steps[i], kMetrics, kTokens);
            ASSERT_EQ(table.names.size(), want.metrics.size());
            for (const auto& [name, value] : want.metrics) {
                const auto col = std::find(table.names.begin(), table.names.end(), name) - table.names.begin();
                expect_same(table.values[i][col], value, name);
            }
        }
        Raw raw(path);
        for (const auto& [t, per_step] : std::vector<std::pair<std::string, int>>{{"metrics", kMetrics},
                                                                                  {"token_samples", kTokens},
                                                                                  {"ft_curves", 5},
                                                                                  {"router_hist", 3},
                                                                                  {"text_samples", 2}}) {
            EXPECT_EQ(raw.scalar("SELECT COUNT(*) FROM (SELECT step, COUNT(*) c FROM " + t +
                                 " GROUP BY step HAVING c != " + std::to_string(per_step) + ")"),
                      "0")
                << t;
            EXPECT_EQ(raw.scalar("SELECT COUNT(DISTINCT step) FROM " + t), std::to_string(steps.size())) << t;
        }
        EXPECT_GE(static_cast<int64_t>(steps.size()), committed_total);  // nothing committed was lost
        committed_total = static_cast<int64_t>(steps.size());
    }
    EXPECT_GT(committed_total, 0);
}
