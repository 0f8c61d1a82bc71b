// The run store's queries: every table round-trips bit for bit, appends
// validate and replace, readers see a writer's committed steps.
#include "core/store/store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <sstream>
#include <thread>

#include "core/store/export.h"
#include "core/store/run_lock.h"
#include "tests/core/store/store_test_util.h"

using namespace mlk;
using namespace mlk::store_test;

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
    // Its writer is alive: without the lock a "running" run reads "interrupted".
    const RunWriterLock writing = RunWriterLock::acquire(s.path(), id);

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

    // One step's metrics, as the drill-down reads them.
    const auto one = r.step_metrics(id, 0);
    ASSERT_EQ(one.size(), rec.metrics.size());
    for (size_t i = 0; i < one.size(); ++i) {
        EXPECT_EQ(one[i].first, names[i]);
        const auto want = std::find_if(rec.metrics.begin(), rec.metrics.end(),
                                       [&](const auto& m) { return m.first == one[i].first; });
        expect_same(one[i].second, want->second, one[i].first);
    }
    EXPECT_TRUE(r.step_metrics(id, 1).empty());

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

// Several runs in one CSV say which is which by name too, and every row when
// it was stored and how long after the run's creation (W&B's _timestamp and
// _runtime), as tools that plot against wall-clock time expect.
TEST_F(StoreTest, ACsvOfSeveralRunsNamesThemAndTimesEveryStep) {
    Store s = Store::open(file("csv.sqlite"));
    const int64_t a = s.create_run("fp8, bypass", "default", "{}", 1);
    const int64_t b = s.create_run("on policy", "default", "{}", 2);
    for (int64_t id : {a, b})
        for (int step = 0; step < 2; ++step) {
            StepRecord rec;
            rec.step = step;
            rec.metrics = {{"reward_mean", 0.5}};
            s.append_step(id, rec);
        }
    const std::string csv = export_csv(s, {a, b});
    std::istringstream in(csv);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "run_id,run_name,step,time,elapsed_s,reward_mean");
    std::vector<std::string> rows;
    while (std::getline(in, line)) rows.push_back(line);
    ASSERT_EQ(rows.size(), 4u);
    EXPECT_EQ(rows[0].rfind(std::to_string(a) + ",\"fp8, bypass\",0,", 0), 0u) << rows[0];
    EXPECT_EQ(rows[3].rfind(std::to_string(b) + ",on policy,1,", 0), 0u) << rows[3];
    for (const std::string& r : rows) {
        // time: ISO-8601 UTC to the millisecond; elapsed_s: non-negative seconds
        const size_t z = r.find("Z,");
        ASSERT_NE(z, std::string::npos) << r;
        EXPECT_EQ(r[z - 4], '.') << r;
        EXPECT_GE(std::stod(r.substr(z + 2)), 0.0) << r;
        EXPECT_NE(r.find(",0.5"), std::string::npos) << r;
    }
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
        if (i > 0) {
            EXPECT_GE(all[i].time, all[i - 1].time);
        }
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

    // b's writer is alive (it holds the run's writer lock): b reads as stored.
    std::optional<RunWriterLock> writing_b(RunWriterLock::acquire(s.path(), b));
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

    writing_b.reset();  // b's writer ends: b may be deleted now
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

// A run a process is writing cannot be deleted under it (its next step
// would fail on a run that is gone); once nobody writes it, it goes with its
// checkpoint folder, and another run's folder stays.
TEST_F(StoreTest, DeletingARunRefusesALiveWriterAndTakesItsCheckpoints) {
    const std::string path = file("runs.sqlite");
    Store s = Store::open(path);
    const int64_t a = s.create_run("kept", "default", "{}", 1, RunStatus::finished);
    const int64_t b = s.create_run("written", "default", "{}", 2);
    for (int64_t id : {a, b}) {
        fs::create_directories(run_checkpoint_root(path, id) + "/step-9");
        write_bytes(run_checkpoint_root(path, id) + "/step-9/model.safetensors", "weights");
    }
    {
        // The writer's lock, as a run's process holds it (another lock in
        // this process conflicts as another process's does).
        RunWriterLock writer = RunWriterLock::acquire(path, b);
        try {
            s.delete_run(b);
            ADD_FAILURE() << "a run being written was deleted";
        } catch (const StoreError& e) {
            EXPECT_NE(std::string(e.what()).find("run " + std::to_string(b) + " cannot be deleted"), std::string::npos)
                << e.what();
            EXPECT_NE(std::string(e.what()).find("stop it first"), std::string::npos) << e.what();
        }
        EXPECT_TRUE(s.run_info(b));
        EXPECT_TRUE(fs::exists(run_checkpoint_root(path, b) + "/step-9/model.safetensors"));
    }
    s.delete_run(b);
    EXPECT_FALSE(s.run_info(b));
    EXPECT_FALSE(fs::exists(run_checkpoint_root(path, b)));
    EXPECT_EQ(read_bytes(run_checkpoint_root(path, a) + "/step-9/model.safetensors"), "weights");
    s.delete_run(b);  // again: a no-op, and no folder made for it
    EXPECT_FALSE(fs::exists(run_checkpoint_root(path, b)));
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
    // Outside the database's folder: stored and given back absolute.
    EXPECT_EQ(last->path, fs::absolute("ckpt/step8.safetensors").lexically_normal().string());
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

// A running or paused run reads as interrupted once no process holds its
// writer lock; the lock refuses a second writer; the error of a failed run
// is stored with its status and cleared by the next status.
TEST_F(StoreTest, LiveStatusFollowsTheWriterLockAndErrorsAreStored) {
    Store s = Store::open(file("runs.sqlite"));
    const int64_t id = s.create_run("r", "p", "{}", 1);
    EXPECT_EQ(s.run_info(id)->status, kInterruptedStatus);
    EXPECT_FALSE(run_writer_alive(s.path(), id));
    {
        RunWriterLock lock = RunWriterLock::acquire(s.path(), id);
        EXPECT_TRUE(run_writer_alive(s.path(), id));
        EXPECT_EQ(s.run_info(id)->status, "running");
        EXPECT_EQ(s.list_runs().front().status, "running");
        try {
            RunWriterLock::acquire(s.path(), id);
            ADD_FAILURE() << "a second writer was let in";
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find("pid " + std::to_string(getpid())), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(s.run_info(id)->status, kInterruptedStatus);
    s.set_status(id, RunStatus::failed, "disk full");
    EXPECT_EQ(s.run_info(id)->status, "failed");
    EXPECT_EQ(s.run_info(id)->error, "disk full");
    s.set_status(id, RunStatus::diverged, "diverged at step 3: k3_kl is NaN");
    EXPECT_EQ(parse_run_status(s.run_info(id)->status), RunStatus::diverged);
    s.set_status(id, RunStatus::finished);
    EXPECT_EQ(s.run_info(id)->error, "");
}

// Checkpoints below the database's folder are stored relative to it and come
// back absolute, so the folder can move and a run resume from anywhere.
TEST_F(StoreTest, CheckpointPathsAreRelativeToTheDatabase) {
    const std::string db = file("runs.sqlite");
    const int64_t id = [&] {
        Store s = Store::open(db);
        const int64_t id = s.create_run("r", "p", "{}", 1);
        s.add_checkpoint(id, 0, run_checkpoint_root(s.path(), id) + "/step-0");
        s.add_checkpoint(id, -1, "/elsewhere/cache/base-abc");
        return id;
    }();
    {
        Raw raw(db);
        EXPECT_EQ(raw.scalar("SELECT path FROM checkpoints WHERE step = 0"), "runs.sqlite.ckpt/run-1/step-0");
        EXPECT_EQ(raw.scalar("SELECT path FROM checkpoints WHERE step = -1"), "/elsewhere/cache/base-abc");
        // As an older build stored it for `--db sub/runs.sqlite`: relative to its working directory.
        raw.exec("INSERT INTO checkpoints VALUES(1, 1, 'sub/runs.sqlite.ckpt/run-1/step-1', '')");
    }
    const fs::path moved = dir_ / "moved";
    fs::create_directories(moved);
    fs::rename(db, moved / "runs.sqlite");
    // Opened through a relative path from another working directory.
    const fs::path cwd = fs::current_path();
    fs::current_path(dir_);
    Store s = Store::open("moved/runs.sqlite");
    fs::current_path(cwd);
    EXPECT_EQ(s.path(), (moved / "runs.sqlite").string());
    const std::vector<Checkpoint> all = s.checkpoints(id);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].path, "/elsewhere/cache/base-abc");
    EXPECT_EQ(all[1].path, (moved / "runs.sqlite.ckpt/run-1/step-0").string());
    EXPECT_EQ(all[2].path, (moved / "runs.sqlite.ckpt/run-1/step-1").string());
    EXPECT_EQ(s.last_checkpoint(id)->path, all[2].path);
}

TEST_F(StoreTest, SweepsAreFoundByHashAndTheirRunsLinkedOnce) {
    Store s = Store::open(file("sweeps.sqlite"));
    EXPECT_FALSE(s.find_sweep("abc"));
    const int64_t id = s.open_sweep("abc", "{\"seeds\":2}");
    EXPECT_EQ(s.open_sweep("abc", "{\"seeds\":2}"), id);  // found again, not a second row
    EXPECT_EQ(s.find_sweep("abc"), id);
    EXPECT_NE(s.open_sweep("def", "{}"), id);
    const int64_t a = s.create_run("a", "default", "{}", 1), b = s.create_run("b", "default", "{}", 2);
    s.add_sweep_run({id, a, "default", 1, "[\"default\",\"seed=1\"]"});
    s.add_sweep_run({id, b, "default", 2, "[\"default\",\"seed=2\"]"});
    // A slot run anew (its run was deleted) points at the new run only; this
    // one is linked as it is stored, in one transaction (a kill between the
    // two writes would leave a run its sweep cannot find).
    const int64_t c = s.create_run("c", "default", "{}", 2, RunStatus::running,
                                   SweepRun{id, 0, "default", 2, "[\"default\",\"seed=2\"]"});
    auto runs = s.sweep_runs(id);
    ASSERT_EQ(runs.size(), 2u);
    EXPECT_EQ(runs[0].run_id, a);
    EXPECT_EQ(runs[1].run_id, c);
    EXPECT_EQ(runs[1].tags, "[\"default\",\"seed=2\"]");
    EXPECT_THROW(s.add_sweep_run({id, 999, "default", 3, ""}), StoreError);
    s.delete_run(a);
    runs = s.sweep_runs(id);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].run_id, c);
    // The runs list is as it always was.
    EXPECT_EQ(s.list_runs().size(), 2u);
    // Every sweep, by id, as stored (the GUI's sweep picker lists these).
    const std::vector<SweepInfo> all = s.list_sweeps();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].id, id);
    EXPECT_EQ(all[0].spec_hash, "abc");
    EXPECT_EQ(all[0].spec_json, "{\"seeds\":2}");
    EXPECT_EQ(all[1].spec_hash, "def");
    EXPECT_FALSE(all[1].created.empty());
}

TEST_F(StoreTest, SweepsAndEveryRunsSlotAreListed) {
    Store s = Store::open(file("sweep_list.sqlite"));
    EXPECT_TRUE(s.list_sweeps().empty());
    EXPECT_TRUE(s.all_sweep_runs().empty());
    const int64_t one = s.open_sweep("h1", "{\"seeds\":2}"), two = s.open_sweep("h2", "{\"seeds\":1}");
    const int64_t loose = s.create_run("loose", "default", "{}", 1);
    const int64_t a = s.create_run("a", "default", "{}", 1, RunStatus::running, SweepRun{two, 0, "x", 1, "[]"});
    const int64_t b = s.create_run("b", "default", "{}", 1, RunStatus::running, SweepRun{one, 0, "y", 1, "[]"});
    const int64_t c = s.create_run("c", "default", "{}", 2, RunStatus::running, SweepRun{one, 0, "y", 2, "[]"});
    const auto sweeps = s.list_sweeps();
    ASSERT_EQ(sweeps.size(), 2u);
    EXPECT_EQ(sweeps[0].id, one);
    EXPECT_EQ(sweeps[0].spec_hash, "h1");
    EXPECT_EQ(sweeps[0].spec_json, "{\"seeds\":2}");
    EXPECT_FALSE(sweeps[0].created.empty());
    EXPECT_EQ(sweeps[1].id, two);
    const auto links = s.all_sweep_runs();
    ASSERT_EQ(links.size(), 3u);  // the loose run is in none
    EXPECT_EQ(links[0].sweep_id, one);
    EXPECT_EQ(links[0].run_id, b);
    EXPECT_EQ(links[1].run_id, c);
    EXPECT_EQ(links[1].seed, 2);
    EXPECT_EQ(links[2].sweep_id, two);
    EXPECT_EQ(links[2].run_id, a);
    for (const auto& l : links) EXPECT_NE(l.run_id, loose);
    EXPECT_TRUE(sweep_slot_ended("finished"));
    EXPECT_TRUE(sweep_slot_ended("diverged"));
    for (const char* st : {"running", "paused", "stopped", "failed", "interrupted"}) EXPECT_FALSE(sweep_slot_ended(st));
}
