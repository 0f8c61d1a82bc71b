// The RL loop end to end: it learns, truly-on-policy stays exactly on policy,
// runs are deterministic, a SIGKILLed run loses no completed step and
// resumes, bad input is refused before anything is written, exports round-trip.
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "core/metrics/catalogue.h"
#include "core/store/export.h"
#include "core/config/presets.h"
#include "core/engines/machine.h"
#include "core/rl/run_controller.h"
#include "core/rl/session.h"
#include "kernels/cpu/features.h"
#include "tests/cli_runner.h"
#include "tests/scratch.h"

using namespace mlk;
using clitest::cli;
namespace fs = std::filesystem;

namespace {

// A folder of this process's own; the base-policy cache is shared
// (tests/scratch.h), so the warm-up is trained once.
fs::path scratch() {
    static fs::path dir = [] {
        setenv("MLK_CACHE_DIR", testing_scratch::shared_cache_dir().c_str(), 1);
        return testing_scratch::scratch_dir("rl_test");
    }();
    return dir;
}

std::string db_path(const std::string& name) { return testing_scratch::fresh_db(scratch(), name); }

Config small_config() {
    Config c;
    c.rl.prompts_per_step = 8;
    c.rl.samples_per_prompt = 4;
    return c;
}

std::vector<StepRecord> run_steps(Store& store, const Config& c, int steps, int64_t* run_id = nullptr) {
    RunController rc = RunController::create(store, c, "test", "test", testing_scratch::shared_cache_dir(), {}, steps);
    std::vector<StepRecord> out;
    while (!rc.done()) out.push_back(rc.step());
    rc.finish(RunStatus::finished);
    if (run_id) *run_id = rc.run_id();
    return out;
}

TEST(Rl, DenseTinyLearnsWithTheDefaults) {
    Store store = Store::open(db_path("learn"));
    Config c;  // dense-tiny, the default step count
    std::vector<StepRecord> steps = run_steps(store, c, 0);
    ASSERT_EQ((int)steps.size(), c.rl.steps);
    const double first = RlSession::metric(steps.front(), "reward_mean");
    double last10 = 0;
    for (size_t i = steps.size() - 10; i < steps.size(); ++i) last10 += RlSession::metric(steps[i], "reward_mean") / 10;
    EXPECT_GE(last10, first + 0.25) << "first step " << first << ", last 10 steps " << last10;
}

TEST(Rl, TrulyOnPolicyIsExactlyOnPolicyAtEveryStep) {
    Store store = Store::open(db_path("truly"));
    Config c = preset_config("truly-on-policy");
    c.rl.prompts_per_step = 8;
    c.rl.samples_per_prompt = 4;
    for (const StepRecord& r : run_steps(store, c, 20)) {
        EXPECT_EQ(RlSession::metric(r, "k3_kl"), 0.0) << "step " << r.step;
        EXPECT_EQ(RlSession::metric(r, "F@1.1"), 0.0) << "step " << r.step;
        EXPECT_EQ(RlSession::metric(r, "logp_abs_diff_max"), 0.0) << "step " << r.step;
    }
}

TEST(Rl, SameSeedSameMetricsBitForBit) {
    Store store = Store::open(db_path("determinism"));
    Config c = small_config();
    c.model.kind = ModelKind::moe;
    c.moe.routing_replay = RoutingReplay::R3;
    c.correction.is_level = IsLevel::token;
    c.rl.old_policy = OldPolicyMode::decoupled;
    c.rl.mini_steps = 2;
    auto a = run_steps(store, c, 4), b = run_steps(store, c, 4);
    ASSERT_EQ(a.size(), b.size());
    for (size_t s = 0; s < a.size(); ++s)
        for (size_t m = 0; m < a[s].metrics.size(); ++m) {
            if (metric_is_timing(a[s].metrics[m].first)) continue;
            uint64_t x, y;
            std::memcpy(&x, &a[s].metrics[m].second, 8);
            std::memcpy(&y, &b[s].metrics[m].second, 8);
            EXPECT_EQ(x, y) << a[s].metrics[m].first << " at step " << s;
        }
}

TEST(Rl, ResumeRecomputesTheSameSteps) {
    Store store = Store::open(db_path("resume"));
    Config c = small_config();
    c.run.checkpoint_every = 3;
    int64_t straight_id = 0, cut_id = 0;
    auto straight = run_steps(store, c, 8, &straight_id);
    run_steps(store, c, 5, &cut_id);  // checkpoints after steps 2 and 4 (0-based)
    RunController rc = RunController::resume(store, cut_id, {}, 3);
    ASSERT_EQ(rc.resumed_from().value(), 4);
    while (!rc.done()) rc.step();
    rc.finish(RunStatus::finished);
    for (int64_t step = 5; step < 8; ++step)
        for (const auto& [name, v] : straight[step].metrics) {
            if (metric_is_timing(name)) continue;
            auto series = store.metric_series(cut_id, name);
            ASSERT_EQ((int)series.size(), 8);
            EXPECT_EQ(series[step].second, v) << name << " at step " << step;
        }
}

// A run records where it was made (its timings, and on a GPU the fast
// family's bits, depend on it), and a run resumed on another machine says
// from which step that one made it; resumed where it last ran, it says
// nothing more.
TEST(Rl, ARunRecordsWhereItRanAndWhereItWasResumed) {
    Store store = Store::open(db_path("machine"));
    Config c = small_config();
    c.kernels.threads = 1;
    c.run.checkpoint_every = 1;
    int64_t id = 0;
    run_steps(store, c, 2, &id);
    const std::string here = machine_description(c);
    EXPECT_EQ(store.run_info(id)->machine, here);
    EXPECT_EQ(here.rfind(cpu_model_name() + ", SIMD " + cpu::isa_name(cpu::active_isa()) + ", 1 kernel thread", 0), 0u)
        << here;
    const auto resume_one_step = [&] {
        RunController rc = RunController::resume(store, id, {}, 1);
        const int64_t from = rc.resumed_from().value();
        while (!rc.done()) rc.step();
        rc.finish(RunStatus::finished);
        return from;
    };
    resume_one_step();
    EXPECT_EQ(store.run_info(id)->machine, here) << "resumed where it ran";
    const std::string elsewhere = "Another CPU, SIMD avx2, 8 kernel threads; rollout on CUDA: Some GPU";
    store.set_machine(id, elsewhere);
    const std::string expected = elsewhere + "; from step " + std::to_string(resume_one_step() + 1) + ": " + here;
    EXPECT_EQ(store.run_info(id)->machine, expected);
    resume_one_step();
    EXPECT_EQ(store.run_info(id)->machine, expected) << "resumed where it last ran";
    const auto shown = cli("show " + std::to_string(id) + " --db " + store.path());
    EXPECT_NE(shown.out.find("\n  ran on " + expected + "\n"), std::string::npos) << shown.out;
}

// A checkpoint changes nothing of the run it saves: the optimizer's moments
// are lent to the file writer, not copied, and must come back whole.
TEST(Rl, ACheckpointLeavesTheRunAsItWas) {
    Config c = small_config();
    c.run.checkpoint_every = 1000;
    c.task.partial_credit = true;  // rewards that differ at random weights: the steps train
    const ModelConfig m = model_config_of(c);
    const ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), (uint64_t)c.seed);
    const fs::path root = scratch() / "lent-moments";
    RlSession saved(c, params, nullptr, 1, root.string()), plain(c, params, nullptr, 1, root.string());
    for (int i = 0; i < 3; ++i) {
        saved.step();
        saved.checkpoint();
        plain.step();
    }
    ASSERT_TRUE(fs::exists(root / "step-2" / "optimizer.safetensors"));
    ASSERT_NE(0, std::memcmp(plain.params().data(), params.data(), layout.total * sizeof(float)));
    EXPECT_EQ(0, std::memcmp(saved.params().data(), plain.params().data(), layout.total * sizeof(float)))
        << "steps after a checkpoint must train as they would without it";
}

int integrity_ok(const std::string& path) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, nullptr);
    int ok = sqlite3_step(st) == SQLITE_ROW && std::string((const char*)sqlite3_column_text(st, 0)) == "ok";
    sqlite3_finalize(st);
    sqlite3_close(db);
    return ok;
}

TEST(Rl, SigkillLosesNoCompletedStepAndResumeContinues) {
    const std::string db = db_path("kill");
    const std::string cache = testing_scratch::shared_cache_dir();
    const std::string args = "run --preset default --db " + db + " --steps 120 --cache-dir " + cache +
                             " --set rl.prompts_per_step=8 --set rl.samples_per_prompt=4 --set run.checkpoint_every=4";
    // Warm the base-policy cache so the kill lands among RL steps.
    ASSERT_EQ(cli("run --preset default --db " + db_path("kill_warm") + " --steps 1 --cache-dir " + cache +
                  " --set rl.prompts_per_step=8 --set rl.samples_per_prompt=4")
                  .code,
              0);
    // The kill lands after a random number of committed steps (not after a
    // random delay: a fast moment of the machine could finish the run first).
    std::mt19937 rng((unsigned)std::random_device{}());
    const int64_t kill_after = std::uniform_int_distribution<int64_t>(2, 80)(rng);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        std::string cmd = std::string(MLK_CLI_PATH) + " " + args + " > /dev/null 2>&1";
        execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), (char*)nullptr);
        _exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    std::optional<Store> watcher;
    while (std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (!fs::exists(db)) continue;
        try {
            if (!watcher) watcher.emplace(Store::open(db));
            const auto runs = watcher->list_runs();
            if (!runs.empty() && watcher->last_step(runs[0].id).value_or(-1) >= kill_after) break;
        } catch (const StoreError&) {
            watcher.reset();  // the child is still creating the schema: look again
        }
    }
    watcher.reset();
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);

    ASSERT_TRUE(integrity_ok(db));
    Store store = Store::open(db);
    auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    const int64_t id = runs[0].id;
    ASSERT_EQ(runs[0].status, kInterruptedStatus) << "the kill must land mid-run; its writer is gone";
    std::vector<int64_t> steps = store.steps(id);
    for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i], (int64_t)i) << "completed steps are contiguous";
    for (int64_t s : steps) {
        std::vector<std::string> names;
        const std::vector<StoredStep> rows = store.steps_since(id, s - 1);
        for (auto& m : rows.front().metrics) names.push_back(m.first);
        EXPECT_EQ(order_metric_names(names), metric_names()) << "step " << s << " is complete";
    }
    auto ck = store.last_checkpoint(id);
    ASSERT_TRUE(ck.has_value());

    auto r = cli("resume " + std::to_string(id) + " --db " + db);
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string from =
        ck->step < 0 ? "from its base policy" : "from the checkpoint of step " + std::to_string(ck->step + 1);
    EXPECT_NE(r.out.find(from), std::string::npos) << r.out;
    EXPECT_EQ(store.steps(id).size(), 120u);
    EXPECT_EQ(store.run_info(id)->status, "finished");
    EXPECT_TRUE(integrity_ok(db));
}

TEST(Rl, BadInputExitsTwoAndWritesNothing) {
    const std::string db = db_path("bad");
    struct Case {
        std::string set, must_name, must_list;
    } cases[] = {
        {"correction.is_levl=token", "correction.is_levl", "correction.is_level"},
        {"rl.steps=many", "rl.steps", "integer"},
        {"correction.is_upper=-1", "correction.is_upper", "> 0"},
        {"correction.is_mode=cap", "correction.is_mode", "truncate, clip, mask"},
    };
    for (const auto& k : cases) {
        auto r = cli("run --preset default --db " + db + " --steps 2 --set " + k.set);
        EXPECT_EQ(r.code, 2) << k.set << ": " << r.out;
        EXPECT_NE(r.out.find(k.must_name), std::string::npos) << r.out;
        EXPECT_NE(r.out.find(k.must_list), std::string::npos) << r.out;
    }
    auto lower_upper = cli("run --preset verl-icepop --db " + db + " --set correction.is_lower=9");
    EXPECT_EQ(lower_upper.code, 2);
    EXPECT_NE(lower_upper.out.find("correction.is_lower"), std::string::npos) << lower_upper.out;
    EXPECT_NE(lower_upper.out.find("correction.is_upper"), std::string::npos) << lower_upper.out;
    EXPECT_FALSE(fs::exists(db)) << "nothing may be written on bad input";
}

TEST(Rl, ExportRoundTripsStoredMetricsExactly) {
    const std::string db = db_path("export");
    {
        Store store = Store::open(db);
        run_steps(store, small_config(), 3);
    }
    Store store = Store::open(db);
    const int64_t id = store.list_runs().front().id;
    MetricTable t = store.all_metrics(id);
    const fs::path csv = scratch() / "e.csv", json = scratch() / "e.json";
    ASSERT_EQ(cli("export " + std::to_string(id) + " --db " + db + " --format csv --out " + csv.string()).code, 0);
    ASSERT_EQ(cli("export " + std::to_string(id) + " --db " + db + " --format json --out " + json.string()).code, 0);

    std::ifstream in(json);
    auto j = nlohmann::json::parse(in);
    ASSERT_EQ(j["steps"].size(), t.steps.size());
    EXPECT_TRUE(j["run"].contains("config"));
    for (size_t s = 0; s < t.steps.size(); ++s)
        for (size_t n = 0; n < t.names.size(); ++n) {
            double v = parse_exported_number(j["steps"][s][t.names[n]]);
            EXPECT_TRUE(v == t.values[s][n] || (std::isnan(v) && std::isnan(t.values[s][n]))) << t.names[n];
        }

    std::ifstream cin(csv);
    std::string header, line;
    std::getline(cin, header);
    EXPECT_EQ(header.rfind("step,time,elapsed_s,reward_mean,", 0), 0u) << header;
    std::vector<std::string> cols;
    for (size_t p = 0, q; p <= header.size(); p = q + 1) {
        q = header.find(',', p);
        if (q == std::string::npos) q = header.size();
        cols.push_back(header.substr(p, q - p));
    }
    size_t rows = 0;
    while (std::getline(cin, line)) {
        std::vector<std::string> cells;
        for (size_t p = 0, q; p <= line.size(); p = q + 1) {
            q = line.find(',', p);
            if (q == std::string::npos) q = line.size();
            cells.push_back(line.substr(p, q - p));
        }
        ASSERT_EQ(cells.size(), cols.size());
        EXPECT_EQ(cells[1].size(), std::string("2026-12-08T02:33:41.123Z").size()) << cells[1];
        EXPECT_GE(std::strtod(cells[2].c_str(), nullptr), 0.0) << cells[2];
        for (size_t c = 3; c < cols.size(); ++c) {
            size_t n = std::find(t.names.begin(), t.names.end(), cols[c]) - t.names.begin();
            ASSERT_LT(n, t.names.size());
            double v = std::strtod(cells[c].c_str(), nullptr);
            double want = t.values[rows][n];
            EXPECT_TRUE(v == want || (std::isnan(v) && std::isnan(want))) << cols[c] << " " << cells[c];
        }
        ++rows;
    }
    EXPECT_EQ(rows, t.steps.size());
}

TEST(Rl, EveryPresetIsValidAndDescribed) {
    const std::set<std::string> required = {"miles-moe-tis2-mis-bn",
                                            "miles-moe-tis1.5-mis-bn",
                                            "miles-moe-tis1.5-mis",
                                            "miles-moe-tis1.5",
                                            "miles-dense-baseline",
                                            "miles-dense-token-is",
                                            "miles-dense-token-is-mis",
                                            "miles-dense-token-is-mis-bn",
                                            "swift-token-truncate",
                                            "swift-token-mask",
                                            "swift-sequence-truncate",
                                            "swift-sequence-mask",
                                            "verl-seq-mis",
                                            "verl-geo-rs",
                                            "verl-icepop",
                                            "verl-k3-rs",
                                            "r3-grpo",
                                            "r3-grpo-r3",
                                            "r3-tis",
                                            "r3-tis-r3",
                                            "r3-gspo",
                                            "r3-gspo-r3",
                                            "r3-grpo-8mini",
                                            "r3-grpo-8mini-r3",
                                            "r2-grpo-8mini",
                                            "batch-invariance-off",
                                            "batch-invariance-on",
                                            "truly-on-policy",
                                            "production-dense-deep",
                                            "production-moe-deep",
                                            "production-moe-deep-r3",
                                            "fp8-rollout-moe-deep",
                                            "fp8-unified-moe-deep",
                                            "fp8-kv-cache-dense-deep",
                                            "fp32-lm-head-dense-deep"};
    std::set<std::string> have;
    for (const Preset& p : presets()) {
        have.insert(p.name);
        EXPECT_FALSE(p.description.empty()) << p.name;
        EXPECT_NO_THROW(preset_config(p.name)) << p.name;
    }
    for (const auto& r : required) EXPECT_TRUE(have.count(r)) << r;
    auto listed = cli("presets");
    ASSERT_EQ(listed.code, 0);
    for (const auto& r : required) EXPECT_NE(listed.out.find(r), std::string::npos) << r;
    Config truly = preset_config("truly-on-policy");
    EXPECT_TRUE(truly.kernels.batch_invariant);
    EXPECT_EQ(truly.rollout.precision, truly.train.precision);
}

}  // namespace
