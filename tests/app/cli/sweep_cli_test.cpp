// `mismatch-lab-cli sweep` as a user runs it: bad input exits 2 and writes
// nothing, a killed sweep run again skips the runs that finished and ends
// with every configuration x seed finished once, and --json ends with one
// summary per configuration whose counts match the runs.
#include <gtest/gtest.h>

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/config/sweep.h"
#include "core/store/store.h"
#include "tests/cli_runner.h"
#include "tests/scratch.h"

using namespace mlk;
using clitest::cli;
namespace fs = std::filesystem;

namespace {

fs::path scratch() { return testing_scratch::scratch_dir("sweep_cli_test"); }
std::string fresh(const std::string& name) { return testing_scratch::fresh_db(scratch(), name); }
std::string cache() { return " --cache-dir " + testing_scratch::shared_cache_dir(); }

// Tiny runs: a short warm-up (cached), small batches, a checkpoint every step.
const std::string kTiny =
    " --grid base.sft_steps=300 --grid rl.prompts_per_step=4 --grid rl.samples_per_prompt=2"
    " --grid run.checkpoint_every=1";

int64_t count(const std::string& db, const char* sql) {
    sqlite3* h = nullptr;
    sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_stmt* s = nullptr;
    int64_t n = -1;
    if (sqlite3_prepare_v2(h, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    sqlite3_close(h);
    return n;
}

std::vector<nlohmann::json> json_lines(const std::string& out) {
    std::vector<nlohmann::json> v;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);)
        if (!line.empty() && line[0] == '{') v.push_back(nlohmann::json::parse(line));
    return v;
}

void expect_refused(const std::string& db, const std::string& args, const std::vector<const char*>& words) {
    const auto r = cli("sweep --db " + db + args + cache());
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    for (const char* w : words)
        EXPECT_NE(r.out.find(w), std::string::npos) << args << ": no '" << w << "' in\n" << r.out;
}

const std::vector<std::pair<std::string, std::vector<const char*>>> kBad = {
    {" --grid correction.is_uper=1.5,2", {"correction.is_uper", "correction.is_upper"}},
    {" --grid correction.is_level=tokn", {"correction.is_level", "sequence"}},
    {" --grid correction.is_upper=", {"correction.is_upper", "empty"}},
    {" --grid correction.is_upper=1.5 --grid correction.is_upper=2", {"correction.is_upper", "twice"}},
    {" --seeds 0", {"--seeds", "1000"}},
    {" --seeds 1001", {"--seeds", "1000"}},
    {" --preset nope", {"--preset", "miles-moe-tis1.5"}},
    {" --family nope", {"--family", "is-does-no-harm", "miles-moe"}},
    {" --verdict collapse_dop=0.3", {"--verdict", "collapse_dop", "collapse_drop"}},
    {" --verdict collapse_drop=2", {"--verdict", "collapse_drop", "from 0 to 1"}},
    {" --grid correction.is_upper=1.5,2 --baseline nope", {"--baseline", "nope", "is_upper=1.5"}},
};

}  // namespace

TEST(CliSweep, BadInputExits2AndCreatesNoDatabase) {
    const std::string db = fresh("bad-new");
    for (const auto& [args, words] : kBad) {
        expect_refused(db, args, words);
        EXPECT_FALSE(fs::exists(db)) << args;
    }
}

TEST(CliSweep, BadInputLeavesAnExistingDatabaseAsItWas) {
    const std::string db = fresh("bad-old");
    {
        Store s = Store::open(db);
        s.create_run("kept", "default", "{}", 1, RunStatus::finished);
    }
    for (const auto& [args, words] : kBad) {
        expect_refused(db, args, words);
        EXPECT_EQ(count(db, "SELECT COUNT(*) FROM runs"), 1) << args;
        EXPECT_EQ(count(db, "SELECT COUNT(*) FROM sweeps"), 0) << args;
    }
}

TEST(CliSweep, ListNamesTheFamiliesAndAFamilyRunsItsPresets) {
    const auto r = cli("sweep --list");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("miles-moe "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("is-does-no-harm "), std::string::npos) << r.out;
    const auto j = cli("sweep --list --json");
    EXPECT_EQ(nlohmann::json::parse(j.out).size(), sweep_families().size()) << j.out;
    EXPECT_NE(r.out.find("collapse-demo "), std::string::npos) << r.out;
    // A family with its seeds and steps overridden, with tiny batches so the check stays quick.
    const std::string db = fresh("family");
    const auto f = cli("sweep --db " + db + " --family is-does-no-harm --seeds 1 --steps 1 --json" + cache());
    ASSERT_EQ(f.code, 0) << f.out;
    const auto lines = json_lines(f.out);
    ASSERT_EQ(lines.size(), 5u) << f.out;
    std::set<std::string> presets;
    for (const auto& c : lines.back()["configs"]) presets.insert(c["preset"].get<std::string>());
    EXPECT_EQ(presets, (std::set<std::string>{"miles-dense-baseline", "miles-dense-token-is",
                                              "miles-dense-token-is-mis", "miles-dense-token-is-mis-bn"}));
}

// The defaults recompute the old policy: a grid over an IS bound runs, and
// says that its runs will be the same, and why.
TEST(CliSweep, AGridKeyNoConfigurationReadsIsWarnedAbout) {
    const std::string db = fresh("unread");
    const auto r = cli("sweep --db " + db + kTiny + " --grid correction.is_upper=2,5 --steps 1" + cache());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("warning: --grid correction.is_upper: no configuration of this sweep reads it"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("rl.old_policy=recompute applies no correction"), std::string::npos) << r.out;
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM runs WHERE status = 'finished'"), 2);
    const auto read = cli("sweep --db " + fresh("read") + kTiny +
                          " --grid rl.old_policy=decoupled --grid correction.is_level=token"
                          " --grid correction.is_upper=2,5 --steps 1" +
                          cache());
    ASSERT_EQ(read.code, 0) << read.out;
    EXPECT_EQ(read.out.find("warning:"), std::string::npos) << read.out;
}

TEST(CliSweep, AKilledSweepResumesAndSkipsFinishedRuns) {
    const std::string db = fresh("killed");
    const std::string args =
        "sweep --db " + db + kTiny + " --grid correction.is_upper=1.5,2 --steps 3 --seeds 3" + cache();
    const std::string log = db + ".log";
    const pid_t pid = fork();
    if (pid == 0) {
        const std::string cmd = "exec " + std::string(MLK_CLI_PATH) + " " + args + " > " + log + " 2>&1";
        execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
        _exit(127);
    }
    // Poll until the first run has finished, then kill the sweep mid-way.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
    bool one_finished = false;
    while (!one_finished && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        if (fs::exists(db)) one_finished = count(db, "SELECT COUNT(*) FROM runs WHERE status = 'finished'") > 0;
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(one_finished);
    std::map<int64_t, std::string> finished_before;  // id -> created
    {
        Store s = Store::open(db);
        for (const RunSummary& r : s.list_runs())
            if (r.status == "finished") finished_before[r.id] = r.created;
    }
    ASSERT_LT(finished_before.size(), 6u) << "the sweep ended before the kill; nothing left to resume";

    const auto again = cli(args);
    ASSERT_EQ(again.code, 0) << again.out;
    EXPECT_NE(again.out.find("skipped (finished before)"), std::string::npos) << again.out;
    EXPECT_NE(again.out.find("[6/6]"), std::string::npos) << again.out;

    Store s = Store::open(db);
    const auto runs = s.list_runs();
    EXPECT_EQ(runs.size(), 6u);  // no run twice
    for (const RunSummary& r : runs) {
        EXPECT_EQ(r.status, "finished") << r.id;
        EXPECT_EQ(r.steps, 3) << r.id;
        if (finished_before.count(r.id)) {
            EXPECT_EQ(r.created, finished_before[r.id]) << "run " << r.id << " was run again";
            EXPECT_EQ(count(db, ("SELECT COUNT(*) FROM steps WHERE run_id = " + std::to_string(r.id)).c_str()), 3);
        }
    }
    ASSERT_EQ(count(db, "SELECT COUNT(*) FROM sweeps"), 1);
    std::set<std::pair<std::string, int64_t>> slots;
    for (const SweepRun& r : s.sweep_runs(1)) {
        slots.insert({r.config_name, r.seed});
        EXPECT_NE(r.tags.find("seed=" + std::to_string(r.seed)), std::string::npos) << r.tags;
    }
    EXPECT_EQ(slots.size(), 6u);
}

TEST(CliSweep, JsonEndsWithOneSummaryPerConfigurationWithTheCountsRight) {
    const std::string db = fresh("json");
    const auto r =
        cli("sweep --db " + db + kTiny + " --grid correction.is_upper=1.5,5 --steps 2 --seeds 2 --json" + cache());
    ASSERT_EQ(r.code, 0) << r.out;
    const auto lines = json_lines(r.out);
    ASSERT_EQ(lines.size(), 5u) << r.out;
    std::map<std::string, int> runs, collapsed, diverged;
    std::map<std::string, std::vector<double>> finals;
    std::set<int64_t> ids;
    for (size_t i = 0; i < 4; ++i) {
        const auto& j = lines[i];
        EXPECT_EQ(j["status"], "finished") << j;
        EXPECT_EQ(j["done"], (int)i + 1);
        ids.insert(j["run_id"].get<int64_t>());
        const std::string c = j["config"];
        ++runs[c];
        collapsed[c] += j["collapsed"].get<bool>();
        diverged[c] += j["diverged"].get<bool>();
        finals[c].push_back(j["final_reward"].get<double>());
    }
    EXPECT_EQ(ids.size(), 4u);
    const auto& summary = lines.back();
    EXPECT_EQ(summary["sweep_id"], 1);
    ASSERT_EQ(summary["configs"].size(), 2u) << summary;
    for (const auto& c : summary["configs"]) {
        const std::string name = c["name"];
        EXPECT_EQ(c["runs"], runs[name]) << name;
        EXPECT_EQ(c["runs"], 2);
        EXPECT_EQ(c["collapsed"], collapsed[name]);
        EXPECT_EQ(c["diverged"], diverged[name]);
        EXPECT_NEAR(c["final_reward_mean"].get<double>(), (finals[name][0] + finals[name][1]) / 2, 1e-12);
        EXPECT_TRUE(c["settings"].contains("correction.is_upper")) << c;
    }
    EXPECT_EQ(summary["configs"][1]["settings"]["correction.is_upper"], 5.0);
    EXPECT_EQ(summary["baseline"], summary["configs"][0]["name"]);
    EXPECT_EQ(summary["configs"][0]["baseline"], true);
    EXPECT_NEAR(summary["configs"][1]["delta_final_reward"].get<double>(),
                summary["configs"][1]["final_reward_mean"].get<double>() -
                    summary["configs"][0]["final_reward_mean"].get<double>(),
                1e-12);

    // The stored sweep's table again, against the other baseline, with the
    // settings that tell its configurations apart; nothing runs.
    const std::string second = summary["configs"][1]["name"];
    const auto again = cli("sweep --db " + db + " --summary 1 --json --baseline '" + second + "'");
    ASSERT_EQ(again.code, 0) << again.out;
    const auto table = json_lines(again.out);
    ASSERT_EQ(table.size(), 1u) << again.out;
    EXPECT_EQ(table[0]["baseline"], second);
    EXPECT_EQ(table[0]["configs"][1]["baseline"], true);
    EXPECT_EQ(table[0]["configs"][0]["runs"], 2);
    EXPECT_EQ(table[0]["configs"][0]["final_reward_mean"], summary["configs"][0]["final_reward_mean"]);
    EXPECT_EQ(table[0]["configs"][1]["settings"]["correction.is_upper"], 5.0) << table[0];
    EXPECT_EQ(count(db, "SELECT COUNT(*) FROM runs"), 4);
    const auto unknown = cli("sweep --db " + db + " --summary 9");
    EXPECT_EQ(unknown.code, 2) << unknown.out;
    EXPECT_NE(unknown.out.find("sweep 9"), std::string::npos) << unknown.out;
}
