// Faults a real user meets, each through the CLI as a user would drive it:
// SIGTERM during the warm-up and between steps, SIGKILL, a full disk (a
// file-size limit), a second writer, a failed resume, a diverging run, a
// database moved between working directories, checkpoint retention and what
// a killed writer leaves behind. After each: the stored status is true, every
// committed step is there, and `resume` continues bit for bit.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "core/config/presets.h"
#include "core/metrics/catalogue.h"
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
// small batches, a checkpoint every two steps.
const std::string kRun =
    " --preset default --set base.sft_steps=300 --set rl.prompts_per_step=4"
    " --set rl.samples_per_prompt=2 --set run.checkpoint_every=2";
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

// Starts the CLI; file_limit > 0 caps the size of every file it writes (a
// full disk, as far as the process can tell: writes fail with EFBIG).
Child spawn(const std::string& args, const std::string& log, long file_limit = 0, const std::string& cwd = {}) {
    Child c;
    c.log = log;
    c.pid = fork();
    if (c.pid == 0) {
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
        if (file_limit > 0) {
            signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of death, as on a full disk
            rlimit r{(rlim_t)file_limit, (rlim_t)file_limit};
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

// The uninterrupted run of `steps` steps every faulted run must equal.
const std::map<int64_t, std::map<std::string, double>>& reference(int steps) {
    static std::map<int, std::map<int64_t, std::map<std::string, double>>> done;
    if (!done.count(steps)) {
        const std::string db = fresh("reference" + std::to_string(steps) + ".sqlite");
        const auto r =
            cli("run" + kRun + " --steps " + std::to_string(steps) + " --db " + db + " --cache-dir " + cache());
        EXPECT_EQ(r.code, 0) << r.out;
        done[steps] = metrics_of(db);
    }
    return done[steps];
}

void expect_contiguous(const std::string& db) {
    Store s = Store::open(db);
    const std::vector<int64_t> steps = s.steps(s.list_runs().front().id);
    for (size_t i = 0; i < steps.size(); ++i) EXPECT_EQ(steps[i], (int64_t)i) << "committed steps are contiguous";
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
    EXPECT_EQ(c.wait(), 0) << c.output();
    EXPECT_NE(c.output().find("stopped during the base-policy warm-up"), std::string::npos) << c.output();
    RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "stopped");
    EXPECT_EQ(info.steps, 0);

    const auto r = cli("resume " + run_id_of(db) + " --db " + db + " --cache-dir " + own_cache);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(only_run(db).status, "finished");
    EXPECT_EQ(metrics_of(db), reference(10));
}

// SIGTERM (a service manager) and SIGINT (Ctrl+C) both stop the run at a step
// boundary as "stopped", resumable to the uninterrupted run's every bit.
TEST_F(Fault, SigtermOrSigintBetweenStepsStopsAndResumeContinuesBitForBit) {
    for (int sig : {SIGTERM, SIGINT}) {
        SCOPED_TRACE(sig == SIGTERM ? "SIGTERM" : "SIGINT");
        const std::string db = fresh("step_signal_" + std::to_string(sig) + ".sqlite");
        Child c = spawn("run" + kRun + " --steps 40 --db " + db + " --cache-dir " + cache(), db + ".log");
        ASSERT_TRUE(wait_for([&] { return committed(db) >= 3; }));
        kill(c.pid, sig);
        EXPECT_EQ(c.wait(), 0) << c.output();
        RunInfo info = only_run(db);
        if (info.steps == 40) GTEST_SKIP() << "the run finished before the signal landed";
        EXPECT_EQ(info.status, "stopped");
        expect_contiguous(db);
        const auto r = cli("resume " + run_id_of(db) + " --db " + db);
        ASSERT_EQ(r.code, 0) << r.out;
        EXPECT_EQ(metrics_of(db), reference(40));
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
    expect_contiguous(db);
    const auto r = cli("resume " + run_id_of(db) + " --db " + db + " --steps 1");
    ASSERT_EQ(r.code, 0) << r.out;
    RunInfo after = only_run(db);
    EXPECT_EQ(after.status, "finished");
    expect_contiguous(db);
    // Steps after the last checkpoint were computed again: the whole run is
    // what an uninterrupted run of as many steps computes.
    EXPECT_EQ(metrics_of(db), reference(after.steps));
}

TEST_F(Fault, AFullDiskFailsTheRunWithTheRealErrorAndResumeContinues) {
    const std::string db = fresh("full.sqlite");
    // Enough for the database and a few checkpoints, not for the run's end.
    Child c = spawn("run" + kRun + " --steps 400 --db " + db + " --cache-dir " + cache(), db + ".log", 3 << 20);
    const int code = c.wait();
    const std::string out = c.output();
    ASSERT_EQ(code, 1) << out;
    // The first write that failed is named, by the store or by the
    // checkpoint writer, whichever hit the limit first.
    const std::regex full("disk is full|File too large");
    EXPECT_TRUE(std::regex_search(out, full)) << out;
    RunInfo info = only_run(db);
    EXPECT_EQ(info.status, "failed") << out;
    EXPECT_TRUE(std::regex_search(info.error, full)) << info.error;
    ASSERT_GT(info.steps, 2) << out;
    ASSERT_LT(info.steps, 400);
    expect_contiguous(db);

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
    EXPECT_EQ(metrics_of(db), reference(steps)) << "the steps before the fault and those after the resume";
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
    expect_contiguous(db);
}

TEST_F(Fault, ARunResumesFromAnyWorkingDirectory) {
    const fs::path here = scratch() / "cwd_a";
    fs::remove_all(here);
    fs::create_directories(here);
    Child c = spawn("run" + kRun + " --steps 6 --db rel.sqlite --cache-dir " + cache(), (here / "log").string(), 0,
                    here.string());
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

}  // namespace
