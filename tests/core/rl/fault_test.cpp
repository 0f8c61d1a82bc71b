// Faults a real user meets, each through the CLI as a user would drive it:
// SIGTERM during the warm-up and between steps, SIGKILL at any moment (the
// first 100 ms included), a file-size limit, a full disk under the database
// alone, a lock another process holds across a step, a second writer, a
// failed resume, a diverging run, a base-policy cache removed, a database
// moved or renamed with its checkpoints, checkpoint retention and what a
// killed writer leaves behind. After each: the stored status and the exit
// code are true, every committed step is there, and `resume` continues to
// the uninterrupted run's every bit (its metrics, timings aside, and its
// final weights), or is refused saying why.
#include <gtest/gtest.h>

#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/config/presets.h"
#include "core/metrics/catalogue.h"
#include "core/model/checkpoint.h"
#include "core/rl/run_controller.h"
#include "core/store/run_lock.h"
#include "core/store/store.h"
#include "tests/cli_runner.h"
#include "tests/scratch.h"

using namespace mlk;
using clitest::cli;
namespace fs = std::filesystem;

namespace {

fs::path scratch() { return testing_scratch::scratch_dir("fault_test"); }
std::string fresh(const std::string& name) { return testing_scratch::fresh_db(scratch(), name); }

// A small run: a short warm-up of its own (cached in the suite's folder),
// small batches, a checkpoint every two steps. Partial credit gives the
// samples of a prompt different rewards from the first step on, so every
// step moves the weights: a step applied twice, or one lost, shows in every
// metric after it.
const std::string kRun =
    " --preset default --set base.sft_steps=300 --set rl.prompts_per_step=4"
    " --set rl.samples_per_prompt=2 --set task.partial_credit=true --set run.checkpoint_every=2";
// The same run with no step checkpoint before its end: a failure at any step
// finds the base policy as the last checkpoint.
const std::string kRunWithoutStepCheckpoints =
    " --preset default --set base.sft_steps=300 --set rl.prompts_per_step=4"
    " --set rl.samples_per_prompt=2 --set task.partial_credit=true --set run.checkpoint_every=1000";
std::string cache() { return testing_scratch::shared_cache_dir(); }

struct Child {
    pid_t pid = -1;
    std::string log;  // stdout and stderr
    int wait() {
        int status = 0;
        waitpid(pid, &status, 0);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::string output() const {
        std::ifstream in(log);
        std::stringstream s;
        s << in.rdbuf();
        return s.str();
    }
};

// How a child is started: a cap on the size of every file it writes (as
// `ulimit -f` does: past it a write raises SIGXFSZ, which the CLI must turn
// into an error of its own), its working directory, and environment
// variables of its own.
struct SpawnOptions {
    long file_limit = 0;
    std::string cwd;
    std::vector<std::pair<std::string, std::string>> env;
};

// Starts the CLI with `args`, its stdout and stderr into `log`.
Child spawn(const std::string& args, const std::string& log, const SpawnOptions& o = {}) {
    Child c;
    c.log = log;
    c.pid = fork();
    if (c.pid == 0) {
        if (!o.cwd.empty() && chdir(o.cwd.c_str()) != 0) _exit(126);
        for (const auto& [k, v] : o.env) setenv(k.c_str(), v.c_str(), 1);
        if (o.file_limit > 0) {
            rlimit r{(rlim_t)o.file_limit, (rlim_t)o.file_limit};
            setrlimit(RLIMIT_FSIZE, &r);
        }
        const std::string cmd = "exec " + std::string(MLK_CLI_PATH) + " " + args + " > " + log + " 2>&1";
        execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
        _exit(127);
    }
    return c;
}

template <class Pred>
bool wait_for(Pred done, int seconds = 240) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
}

// Steps the run in `db` has committed, or -1 (no database or run yet).
int64_t committed(const std::string& db) {
    if (!fs::exists(db)) return -1;
    try {
        Store s = Store::open(db);
        const auto runs = s.list_runs();
        return runs.empty() ? -1 : s.last_step(runs.front().id).value_or(-1) + 1;
    } catch (const StoreError&) {
        return -1;  // the writer is still creating the schema
    }
}

void expect_contiguous_steps(const std::string& db) {
    Store s = Store::open(db);
    const std::vector<int64_t> steps = s.steps(s.list_runs().front().id);
    for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i], (int64_t)i) << "committed steps are contiguous";
}

RunInfo only_run(const std::string& db) {
    Store s = Store::open(db);
    const auto runs = s.list_runs();
    EXPECT_EQ(runs.size(), 1u);
    return *s.run_info(runs.front().id);
}

// Every metric but the timings of every step, keyed by step.
std::map<int64_t, std::map<std::string, double>> metrics_of(const std::string& db) {
    Store s = Store::open(db);
    const int64_t id = s.list_runs().front().id;
    std::map<int64_t, std::map<std::string, double>> out;
    for (const StoredStep& st : s.steps_since(id, -1))
        for (const auto& [name, v] : st.metrics)
            if (!metric_is_timing(name)) out[st.step][name] = v;
    return out;
}

// The weights of the run's newest checkpoint, as stored (a finished run's
// is its last step's).
std::vector<float> final_weights(const std::string& db) {
    Store s = Store::open(db);
    const auto ck = s.last_checkpoint(s.list_runs().front().id);
    if (!ck) return {};
    return load_checkpoint(ck->path).params;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

struct Outcome {
    std::map<int64_t, std::map<std::string, double>> metrics;
    std::vector<float> weights;
};

// The uninterrupted run of `steps` steps every faulted run must equal.
const Outcome& reference(int steps) {
    static std::map<int, Outcome> done;
    if (!done.count(steps)) {
        const std::string db = fresh("reference" + std::to_string(steps) + ".sqlite");
        const auto r =
            cli("run" + kRun + " --steps " + std::to_string(steps) + " --db " + db + " --cache-dir " + cache());
        EXPECT_EQ(r.code, 0) << r.out;
        done[steps] = {metrics_of(db), final_weights(db)};
    }
    return done[steps];
}

// The finished run in `db` is the uninterrupted run of as many steps: every
// metric but the timings, and the final weights, bit for bit.
void expect_uninterrupted(const std::string& db) {
    const RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "finished");
    expect_contiguous_steps(db);
    const Outcome& ref = reference((int)info.steps);
    const auto got = metrics_of(db);
    // Counted and named, not printed whole: a run's metrics are thousands of values.
    int differ = 0;
    std::string first;
    const auto same = [&](int64_t step, const std::string& name, double v) {
        const auto s = got.find(step);
        if (s == got.end()) return false;
        const auto g = s->second.find(name);
        return g != s->second.end() && std::memcmp(&g->second, &v, sizeof v) == 0;
    };
    for (const auto& [step, values] : ref.metrics)
        for (const auto& [name, v] : values)
            if (!same(step, name, v) && differ++ == 0) first = name + " at step " + std::to_string(step + 1);
    EXPECT_EQ(differ, 0) << "metric values that differ from the uninterrupted run's, the first " << first;
    EXPECT_EQ(got.size(), ref.metrics.size()) << "steps";
    EXPECT_TRUE(same_bits(final_weights(db), ref.weights)) << "the final weights";
}

std::string run_id_of(const std::string& db) { return std::to_string(only_run(db).id); }

class Fault : public ::testing::Test {
protected:
    static void SetUpTestSuite() { reference(10); }  // also warms the suite's base-policy cache
};

TEST_F(Fault, SigtermDuringTheWarmupStopsAndResumeWarmsUpAgain) {
    const std::string db = fresh("warmup_term.sqlite");
    const std::string own_cache = (scratch() / "cold_cache").string();
    fs::remove_all(own_cache);
    Child c = spawn("run" + kRun + " --steps 10 --db " + db + " --cache-dir " + own_cache, db + ".log");
    ASSERT_TRUE(wait_for([&] { return c.output().find("base policy: step 100/") != std::string::npos; })) << c.output();
    kill(c.pid, SIGTERM);
    EXPECT_EQ(c.wait(), 3) << "stopped: neither 0 (finished) nor 1 (failed)\n" << c.output();
    EXPECT_NE(c.output().find("stopped during the base-policy warm-up"), std::string::npos) << c.output();
    RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "stopped");
    EXPECT_EQ(info.steps, 0);

    const auto r = cli("resume " + run_id_of(db) + " --db " + db + " --cache-dir " + own_cache);
    ASSERT_EQ(r.code, 0) << r.out;
    expect_uninterrupted(db);
}

// SIGTERM (a service manager, a batch system's time limit), SIGINT (Ctrl+C)
// and SIGHUP (a closed terminal) stop the run at a step boundary as
// "stopped", with an exit code of its own, resumable to the uninterrupted
// run's every bit. The run is longer than any test waits, so the signal
// always lands before its end.
TEST_F(Fault, SigtermSigintOrSighupBetweenStepsStopsAndResumeContinuesBitForBit) {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
        SCOPED_TRACE(strsignal(sig));
        const std::string db = fresh("step_signal_" + std::to_string(sig) + ".sqlite");
        Child c = spawn("run" + kRun + " --steps 4000 --db " + db + " --cache-dir " + cache(), db + ".log");
        ASSERT_TRUE(wait_for([&] { return committed(db) >= 3; }));
        kill(c.pid, sig);
        EXPECT_EQ(c.wait(), 3) << c.output();
        RunInfo info = only_run(db);
        EXPECT_EQ(info.status, "stopped");
        expect_contiguous_steps(db);
        // finish(stopped) checkpointed the last step: resume goes on from it.
        const auto r = cli("resume " + run_id_of(db) + " --db " + db + " --steps 2");
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_NE(r.out.find("from the checkpoint of step " + std::to_string(info.steps)), std::string::npos) << r.out;
        EXPECT_EQ(only_run(db).steps, info.steps + 2);
        expect_uninterrupted(db);
    }
}

TEST_F(Fault, SigkillReadsInterruptedAndASecondWriterIsRefused) {
    const std::string db = fresh("kill.sqlite");
    Child c = spawn("run" + kRun + " --steps 400 --db " + db + " --cache-dir " + cache(), db + ".log");
    ASSERT_TRUE(wait_for([&] { return committed(db) >= 3; }));
    // While the writer lives: it reads running, and a resume is refused
    // without touching the run.
    EXPECT_EQ(only_run(db).status, "running");
    const auto refused = cli("resume " + run_id_of(db) + " --db " + db);
    EXPECT_EQ(refused.code, 1) << refused.out;
    EXPECT_NE(refused.out.find("being written by another process"), std::string::npos) << refused.out;
    EXPECT_EQ(only_run(db).status, "running");

    kill(c.pid, SIGKILL);
    c.wait();
    EXPECT_EQ(only_run(db).status, kInterruptedStatus);
    expect_contiguous_steps(db);
    const auto r = cli("resume " + run_id_of(db) + " --db " + db + " --steps 1");
    ASSERT_EQ(r.code, 0) << r.out;
    // Steps after the last checkpoint were computed again: the whole run is
    // what an uninterrupted run of as many steps computes.
    expect_uninterrupted(db);
}

// `ulimit -f`: past the limit a write raises SIGXFSZ, whose default action
// kills the process silently. The CLI fails the run instead, naming the
// error, and the run reads "failed", not "interrupted".
TEST_F(Fault, AFileSizeLimitFailsTheRunSayingSoAndResumeContinues) {
    const std::string db = fresh("full.sqlite");
    // Enough for the database and a few checkpoints, not for the run's end.
    SpawnOptions o;
    o.file_limit = 3 << 20;
    Child c = spawn("run" + kRun + " --steps 400 --db " + db + " --cache-dir " + cache(), db + ".log", o);
    const int code = c.wait();
    const std::string out = c.output();
    ASSERT_EQ(code, 1) << "exit 1, not death by SIGXFSZ (153)\n" << out;
    // The first write that failed is named, by the store or by the
    // checkpoint writer, whichever hit the limit first.
    EXPECT_NE(out.find("File too large"), std::string::npos) << out;
    RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "failed") << out;
    EXPECT_NE(info.error.find("File too large"), std::string::npos) << info.error;
    ASSERT_GT(info.steps, 2) << out;
    ASSERT_LT(info.steps, 400);
    expect_contiguous_steps(db);

    // With room again it continues from its last complete checkpoint, not
    // from the base policy, and computes what an uninterrupted run does.
    Store s = Store::open(db);
    const auto last = s.last_checkpoint(info.id);
    ASSERT_TRUE(last && last->step >= 1) << "a checkpoint before the failure";
    const int64_t steps = info.steps + 2;
    const auto r =
        cli("resume " + std::to_string(info.id) + " --db " + db + " --steps " + std::to_string(steps - last->step - 1));
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("from the checkpoint of step " + std::to_string(last->step + 1)), std::string::npos) << r.out;
    EXPECT_EQ(only_run(db).steps, steps);
    expect_uninterrupted(db);
}

// The run's own error is what a reader sees first; a rescue checkpoint that
// fails as well (the same full disk, say) is added to it, never put in its
// place.
TEST_F(Fault, AFailedRescueCheckpointDoesNotHideTheRealError) {
    const std::string db = fresh("rescue.sqlite");
    Store store = Store::open(db);
    Config c = preset_config("default");
    c.base.sft_steps = 300, c.rl.prompts_per_step = 4, c.rl.samples_per_prompt = 2;
    c.run.checkpoint_every = 1000;  // the rescue checkpoint is the only one
    RunController rc = RunController::create(store, c, "default", "rescue", cache(), {}, 5);
    rc.step();
    rc.step();
    // Its folder cannot be made: a file sits where the run's folder goes.
    const fs::path root = run_checkpoint_root(db, rc.run_id());
    fs::remove_all(root);
    fs::create_directories(root.parent_path());
    std::ofstream(root) << "in the way";
    rc.finish(RunStatus::failed, "the step's own error");
    const RunInfo info = *store.run_info(rc.run_id());
    EXPECT_EQ(info.status, "failed");
    EXPECT_EQ(info.error.rfind("the step's own error", 0), 0u) << info.error;
    EXPECT_NE(info.error.find("the rescue checkpoint failed too"), std::string::npos) << info.error;
    EXPECT_EQ(info.steps, 2);
}

TEST_F(Fault, AFailedResumeLeavesTheRunAsItWas) {
    const std::string db = fresh("bad_resume.sqlite");
    ASSERT_EQ(cli("run" + kRun + " --steps 4 --db " + db + " --cache-dir " + cache()).code, 0);
    Store s = Store::open(db);
    const int64_t id = s.list_runs().front().id;
    const auto ck = s.last_checkpoint(id);
    ASSERT_TRUE(ck && ck->step == 3);
    fs::resize_file(fs::path(ck->path) / "model.safetensors", 100);  // a damaged checkpoint
    const auto r = cli("resume " + std::to_string(id) + " --db " + db + " --steps 2");
    EXPECT_EQ(r.code, 1) << r.out;
    const RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "finished");
    EXPECT_EQ(info.steps, 4);
}

TEST_F(Fault, ADivergingRunStopsAsDivergedAndKeepsItsSteps) {
    const std::string db = fresh("diverge.sqlite");
    const auto r = cli("run" + kRun +
                       " --steps 60 --set optim.lr=1 --set optim.grad_clip=0 --set train.precision=fp16"
                       " --set rollout.precision=fp16 --db " +
                       db + " --cache-dir " + cache());
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("diverged at step"), std::string::npos) << r.out;
    const RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "diverged");
    EXPECT_NE(info.error.find("diverged at step " + std::to_string(info.steps)), std::string::npos) << info.error;
    EXPECT_LT(info.steps, 60);
    expect_contiguous_steps(db);
    // Resumed, it would compute the same steps and diverge again: refused
    // as a request that cannot succeed, with the run left as it was.
    const auto again = cli("resume " + run_id_of(db) + " --db " + db);
    EXPECT_EQ(again.code, 2) << again.out;
    EXPECT_NE(again.out.find("diverges again"), std::string::npos) << again.out;
    EXPECT_NE(again.out.find("diverged at step " + std::to_string(info.steps)), std::string::npos) << again.out;
    EXPECT_EQ(only_run(db).status, "diverged");
    EXPECT_EQ(only_run(db).steps, info.steps);
}

TEST_F(Fault, ARunResumesFromAnyWorkingDirectory) {
    const fs::path here = scratch() / "cwd_a";
    fs::remove_all(here);
    fs::create_directories(here);
    SpawnOptions o;
    o.cwd = here.string();
    Child c = spawn("run" + kRun + " --steps 6 --db rel.sqlite --cache-dir " + cache(), (here / "log").string(), o);
    ASSERT_EQ(c.wait(), 0) << c.output();
    const std::string db = (here / "rel.sqlite").string();
    // The folder moves whole: checkpoints are found next to the database.
    const fs::path moved = scratch() / "cwd_b";
    fs::remove_all(moved);
    fs::rename(here, moved);
    const std::string moved_db = (moved / "rel.sqlite").string();
    const auto r = cli("resume " + run_id_of(moved_db) + " --db " + moved_db + " --steps 2");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("from the checkpoint of step 6"), std::string::npos) << r.out;
}

TEST_F(Fault, RetentionKeepsTheNewestAndEveryMthAndResumeTidiesLeftovers) {
    const std::string db = fresh("retain.sqlite");
    ASSERT_EQ(cli("run" + kRun +
                  " --set run.checkpoint_every=1 --set run.keep_last=2 --set run.keep_every=5"
                  " --steps 12 --db " +
                  db + " --cache-dir " + cache())
                  .code,
              0);
    Store s = Store::open(db);
    const int64_t id = s.list_runs().front().id;
    std::vector<int64_t> kept;
    for (const Checkpoint& c : s.checkpoints(id)) kept.push_back(c.step);
    EXPECT_EQ(kept, (std::vector<int64_t>{-1, 4, 9, 10, 11}));
    const fs::path root = run_checkpoint_root(s.path(), id);
    std::set<std::string> on_disk;
    for (const auto& e : fs::directory_iterator(root))
        if (e.is_directory()) on_disk.insert(e.path().filename().string());
    EXPECT_EQ(on_disk, (std::set<std::string>{"step-4", "step-9", "step-10", "step-11"}));

    // What a killed writer leaves: a temporary file and a step folder the
    // store never listed. The next writer removes both.
    fs::create_directories(root / "step-12");
    std::ofstream(root / "step-12" / "model.safetensors.tmp.99.0").put('x');
    std::ofstream(root / "stray.tmp.5.1").put('x');
    ASSERT_EQ(cli("resume " + std::to_string(id) + " --db " + db + " --steps 1").code, 0);
    EXPECT_FALSE(fs::exists(root / "stray.tmp.5.1"));
    EXPECT_TRUE(fs::exists(root / "step-12" / "model.safetensors"));  // the resumed step's own checkpoint
    EXPECT_FALSE(fs::exists(root / "step-12" / "model.safetensors.tmp.99.0"));
}

// Another process holds the database's write lock across a step (a sqlite3
// shell in a transaction, a backup tool) for longer than the store waits.
// The step has updated the weights when its write fails: those weights
// belong to no stored step, so no checkpoint may be written of them, and
// the resume recomputes that step from the last checkpoint. The lock is
// taken just after a step without a checkpoint, so the write that fails is
// the next step's, after its update.
TEST_F(Fault, ALockHeldAcrossAStepFailsItAndResumeIsBitForBit) {
    const std::string db = fresh("locked.sqlite");
    Child c = spawn("run" + kRun + " --steps 4000 --db " + db + " --cache-dir " + cache(), db + ".log");
    ASSERT_TRUE(wait_for([&] { return committed(db) >= 3; })) << c.output();
    sqlite3* holder = nullptr;
    ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
    sqlite3_busy_timeout(holder, 60000);
    const auto count_steps = [&] {
        sqlite3_stmt* q = nullptr;
        sqlite3_prepare_v2(holder, "SELECT COUNT(*) FROM steps", -1, &q, nullptr);
        const int64_t n = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
        sqlite3_finalize(q);
        return n;
    };
    // Held with an odd number of committed steps: checkpoint_every=2 makes no
    // checkpoint after an odd step count, so the writer's next write is the
    // next step's own.
    int64_t held_at = -1;
    ASSERT_TRUE(wait_for([&] {
        if (sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) return false;
        const int64_t n = count_steps();
        if (n % 2 == 1) {
            held_at = n;
            return true;
        }
        sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
        return false;
    }));
    // The writer's step fails once the store stops waiting. Let go then, so
    // that the writer can record the failure.
    const fs::path root = run_checkpoint_root(db, only_run(db).id);
    const fs::path rescue = root / ("step-" + std::to_string(held_at - 1));
    EXPECT_TRUE(wait_for([&] {
        return c.output().find("failed; recording it") != std::string::npos || fs::exists(rescue);
    })) << c.output();
    sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(holder);
    EXPECT_EQ(c.wait(), 1) << c.output();
    EXPECT_NE(c.output().find("database is locked"), std::string::npos) << c.output();
    const RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "failed");
    EXPECT_EQ(info.steps, held_at) << "the failed step is not stored";
    Store s = Store::open(db);
    const auto last = s.last_checkpoint(info.id);
    ASSERT_TRUE(last);
    EXPECT_LT(last->step, held_at - 1) << "no checkpoint of weights no stored step holds";

    const auto r = cli("resume " + std::to_string(info.id) + " --db " + db + " --steps 3");
    ASSERT_EQ(r.code, 0) << r.out;
    expect_uninterrupted(db);
}

// A disk that fills up under the database while the checkpoints go to
// another file system (a preloaded shim: the first write to the database's
// files that would end past a limit fails with ENOSPC, and the space is
// there again after it, as when another process's temporary files come
// and go). The failed step's update is not checkpointed, though the rescue
// would now find room; resume is bit for bit. No step checkpoint comes
// before the failure, so whatever step fails, none lies at the last stored
// step already.
TEST_F(Fault, AFullDiskUnderTheDatabaseAloneFailsTheStepAndResumeIsBitForBit) {
    const std::string db = fresh("full_db.sqlite");
    SpawnOptions o;
    o.env = {{"LD_PRELOAD", MLK_ENOSPC_SHIM},
             {"MLK_ENOSPC_DB", db},
             {"MLK_ENOSPC_AT", std::to_string(3 << 20)},
             // The instrumented CLI (sanitizer build) must accept a library
             // loaded before its runtime.
             {"ASAN_OPTIONS",
              std::string(getenv("ASAN_OPTIONS") ? getenv("ASAN_OPTIONS") : "") + ":verify_asan_link_order=0"}};
    Child c = spawn("run" + kRunWithoutStepCheckpoints + " --steps 4000 --db " + db + " --cache-dir " + cache(),
                    db + ".log", o);
    EXPECT_EQ(c.wait(), 1) << c.output();
    const std::string out = c.output();
    EXPECT_NE(out.find("database or disk is full"), std::string::npos) << out;
    const RunInfo info = only_run(db);
    EXPECT_TRUE(info.status == "failed" || info.status == kInterruptedStatus) << info.status;
    ASSERT_GT(info.steps, 2) << out;
    expect_contiguous_steps(db);
    Store s = Store::open(db);
    const auto last = s.last_checkpoint(info.id);
    ASSERT_TRUE(last);
    EXPECT_LT(last->step, info.steps) << "no checkpoint past the stored steps";

    const auto r = cli("resume " + std::to_string(info.id) + " --db " + db + " --steps " +
                       std::to_string(info.steps + 2 - last->step - 1));
    ASSERT_EQ(r.code, 0) << r.out;
    expect_uninterrupted(db);
}

// A run killed after its warm-up but before its first step checkpoint
// resumes from its base policy, which lives in the shared cache. With the
// cache cleared since, resume warms the base policy up again (it is
// deterministic) instead of failing on the stored path.
TEST_F(Fault, AClearedBasePolicyCacheIsWarmedUpAgainOnResume) {
    const std::string db = fresh("cleared_cache.sqlite");
    const std::string own_cache = (scratch() / "cleared_cache").string();
    fs::remove_all(own_cache);
    Child c = spawn("run" + kRunWithoutStepCheckpoints + " --steps 4000 --db " + db + " --cache-dir " + own_cache,
                    db + ".log");
    ASSERT_TRUE(wait_for([&] { return committed(db) >= 2; })) << c.output();
    kill(c.pid, SIGKILL);
    c.wait();
    {
        Store s = Store::open(db);
        const auto ck = s.last_checkpoint(only_run(db).id);
        ASSERT_TRUE(ck && ck->step == -1) << "only the base policy";
    }
    fs::remove_all(own_cache);
    const auto r = cli("resume " + run_id_of(db) + " --db " + db + " --steps 5 --cache-dir " + own_cache);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("warming it up again"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("from its base policy"), std::string::npos) << r.out;
    expect_uninterrupted(db);
}

// A database renamed together with its checkpoint folder (runs.sqlite and
// runs.sqlite.ckpt to b.sqlite and b.sqlite.ckpt), and moved to another
// folder, resumes from its checkpoints there.
TEST_F(Fault, ADatabaseRenamedAndMovedWithItsCheckpointsResumesBitForBit) {
    const fs::path from_dir = scratch() / "rename_a", to_dir = scratch() / "rename_b";
    fs::remove_all(from_dir);
    fs::remove_all(to_dir);
    fs::create_directories(from_dir);
    fs::create_directories(to_dir);
    const std::string db = (from_dir / "runs.sqlite").string();
    Child c = spawn("run" + kRun + " --steps 4000 --db " + db + " --cache-dir " + cache(), db + ".log");
    ASSERT_TRUE(wait_for([&] { return committed(db) >= 5; })) << c.output();
    kill(c.pid, SIGTERM);
    EXPECT_EQ(c.wait(), 3) << c.output();
    const std::string moved = (to_dir / "b.sqlite").string();
    fs::rename(db, moved);
    fs::rename(db + ".ckpt", moved + ".ckpt");
    for (const char* suffix : {"-wal", "-shm"})
        if (fs::exists(db + suffix)) fs::rename(db + suffix, moved + suffix);
    const RunInfo info = only_run(moved);
    const auto r = cli("resume " + std::to_string(info.id) + " --db " + moved + " --steps 2");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("from the checkpoint of step " + std::to_string(info.steps)), std::string::npos) << r.out;
    expect_uninterrupted(moved);
}

// SIGKILL at random moments, the first 100 ms of a process included (while
// it creates the database, before its run exists, in the warm-up's cache
// load), then the same command again, or `resume` once the run exists,
// until the run is done: it equals the uninterrupted run, and nothing a
// killed writer left (a half-made database under its temporary name)
// outlives the next writer. MLK_FAULT_SEED replays a sequence.
TEST_F(Fault, SigkillAtRandomMomentsThenResumeIsBitForBit) {
    const uint64_t seed = getenv("MLK_FAULT_SEED") ? std::strtoull(getenv("MLK_FAULT_SEED"), nullptr, 10)
                                                   : (uint64_t)std::random_device{}();
    SCOPED_TRACE("MLK_FAULT_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    const fs::path dir = scratch() / "random_kills";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string db = (dir / "k.sqlite").string();
    const int steps = 8;
    for (int attempt = 0; attempt < 12; ++attempt) {
        const bool exists = committed(db) >= 0 && !Store::open(db).list_runs().empty();
        const std::string args =
            exists ? "resume " + run_id_of(db) + " --db " + db
                   : "run" + kRun + " --steps " + std::to_string(steps) + " --db " + db + " --cache-dir " + cache();
        Child c = spawn(args, (dir / ("log" + std::to_string(attempt))).string());
        // The first kills within 100 ms of the start; later ones anywhere in
        // the first second, where the steps are.
        const int max_ms = attempt < 6 ? 100 : 1000;
        std::this_thread::sleep_for(std::chrono::milliseconds(rng() % max_ms));
        kill(c.pid, SIGKILL);
        c.wait();
    }
    // Then let it finish.
    const bool exists = committed(db) >= 0 && !Store::open(db).list_runs().empty();
    const auto last =
        exists ? cli("resume " + run_id_of(db) + " --db " + db)
               : cli("run" + kRun + " --steps " + std::to_string(steps) + " --db " + db + " --cache-dir " + cache());
    ASSERT_EQ(last.code, 0) << last.out;
    expect_uninterrupted(db);
    for (const auto& e : fs::directory_iterator(dir))
        EXPECT_EQ(e.path().filename().string().find(".new."), std::string::npos) << e.path();
}

// What a writer killed while it created a database leaves beside it (the
// half-made file under "<name>.new.<pid>.<n>" and its -wal / -shm) is
// removed by the next writer; a live process's such file is its work in
// progress and stays.
TEST_F(Fault, AKilledCreatorsHalfMadeDatabaseIsRemovedByTheNextWriter) {
    const fs::path dir = scratch() / "half_made";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string db = (dir / "h.sqlite").string();
    pid_t dead = fork();
    if (dead == 0) _exit(0);
    waitpid(dead, nullptr, 0);
    const std::string dead_tmp = db + ".new." + std::to_string(dead) + ".0";
    const std::string live_tmp = db + ".new." + std::to_string(getpid()) + ".7";
    for (const std::string& f : {dead_tmp, dead_tmp + "-wal", dead_tmp + "-shm", live_tmp})
        std::ofstream(f) << "half made";
    ASSERT_EQ(cli("run" + kRun + " --steps 1 --db " + db + " --cache-dir " + cache()).code, 0);
    for (const std::string& f : {dead_tmp, dead_tmp + "-wal", dead_tmp + "-shm"}) EXPECT_FALSE(fs::exists(f)) << f;
    EXPECT_TRUE(fs::exists(live_tmp));
}

}  // namespace
