// mismatch-lab-cli as a user runs it: every command's input is checked one
// way (args.h), bad input exits 2 with a message naming the option and what
// is allowed, a failure exits 1, and nothing slow starts before the input is
// known to be good. Plus the `metrics` catalogue and `show`'s statistics.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/engines/device.h"
#include "../../cli_runner.h"
#include "core/config/config.h"
#include "core/config/presets.h"
#include "core/metrics/catalogue.h"
#include "core/metrics/run_stats.h"
#include "core/store/store.h"
#include "kernels/cpu/features.h"

using namespace mlk;
using clitest::cli;
namespace fs = std::filesystem;

namespace {

// One scratch folder per process, with a store holding one synthetic run.
struct Fixture {
    fs::path dir;
    std::string db;
    int64_t run = 0;
    std::vector<double> k3, grad, reward;

    Fixture() {
        dir = fs::temp_directory_path() / ("mlk_cli_test_" + std::to_string(getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        db = (dir / "runs.sqlite").string();
        Store store = Store::open(db);
        Config c;
        c.rl.steps = 20;
        run = store.create_run("synthetic", "custom", config_to_json(c).dump(), 1, RunStatus::finished);
        for (int s = 0; s < 20; ++s) {
            // k3_kl and grad_norm are lowest at step 3 and highest at step 17:
            // "best" must be the lowest.
            k3.push_back(s == 3 ? 1e-6 : s == 17 ? 5e-2 : 1e-4 * (1 + s % 4));
            grad.push_back(s == 3 ? 0.01 : s == 17 ? 9.0 : 0.2 + 0.01 * s);
            reward.push_back(s == 11 ? 0.9 : 0.3 + 0.01 * s);
            StepRecord r;
            r.step = s;
            r.metrics = {{"reward_mean", reward.back()}, {"k3_kl", k3.back()}, {"grad_norm", grad.back()}};
            store.append_step(run, r);
        }
    }
    ~Fixture() { fs::remove_all(dir); }
};

Fixture& fx() {
    static Fixture f;
    return f;
}

std::string id() { return std::to_string(fx().run); }
std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}
std::string db() { return " --db " + fx().db; }

// A shell command line (an environment or a limit around the CLI), stdout and stderr together.
clitest::CliResult shell(const std::string& command) {
    FILE* p = popen((command + " 2>&1").c_str(), "r");
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    const int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

bool cli_has_reports() { return cli("report").out.find("unknown command") == std::string::npos; }

// Bad input: exit 2 and a message containing each of `words`.
void expect_usage(const std::string& args, std::initializer_list<const char*> words) {
    const auto r = cli(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    for (const char* w : words)
        EXPECT_NE(r.out.find(w), std::string::npos) << args << ": no '" << w << "' in\n" << r.out;
}

}  // namespace

TEST(CliInput, ExtraPositionalWordsAreRejected) {
    const fs::path p = fx().dir / "p.sqlite";
    // Must not silently run the default configuration.
    expect_usage("run moe-tiny --steps 1 --db " + p.string(), {"unexpected argument 'moe-tiny'", "--preset moe-tiny"});
    EXPECT_FALSE(fs::exists(p));
    expect_usage("runs" + db() + " extra", {"unexpected argument 'extra'"});
    expect_usage("presets extra", {"unexpected argument 'extra'", "no positional"});
    expect_usage("metrics extra", {"unexpected argument 'extra'"});
    expect_usage("show " + id() + " " + id() + db(), {"unexpected argument"});
    expect_usage("probe --preset dense-tiny rollout.precision=fp32", {"--set rollout.precision=fp32"});
}

// A numerics setting the others override is refused before anything runs,
// naming the key that decides instead.
TEST(CliInput, ASettingWithoutEffectIsRefusedNamingTheKeyToUse) {
    expect_usage(
        "probe --preset moe-deep --set rollout.profile=vllm-bf16 --set train.profile=fsdp-bf16 --set "
        "rollout.precision=fp8_e4m3",
        {"rollout.precision=fp8_e4m3 has no effect", "rollout.profile=vllm-bf16", "rollout.matmul_dtype"});
    expect_usage("probe --preset dense-tiny --set train.fp8_granularity=block",
                 {"train.fp8_granularity", "train.matmul_dtype"});
}

TEST(CliInput, UnknownOptionsAreRejectedWithTheAllowedOnes) {
    expect_usage("presets -x", {"unknown option -x", "--json"});
    expect_usage("runs" + db() + " --bogus", {"unknown option --bogus", "--db"});
    expect_usage("runs --db=" + fx().db, {"write --db VALUE"});
    expect_usage("show " + id() + db() + " --db " + fx().db, {"--db given twice"});
    expect_usage("export " + id() + db() + " --format xml --out x", {"--format", "csv, json"});
    expect_usage("frobnicate", {"unknown command 'frobnicate'", "usage:"});
}

TEST(CliInput, DbMustBeARealFilePath) {
    expect_usage("runs --db ''", {"--db", "empty"});
    expect_usage("runs --db :memory:", {"--db", ":memory:", "real file"});
    expect_usage("run --preset default --steps 1 --db ''", {"--db", "empty"});
    expect_usage("run --preset default --steps 1 --db :memory:", {"--db", "special name"});
    expect_usage("run --preset default --steps 1 --db " + fx().dir.string(), {"--db", "is a directory"});
    expect_usage("runs --db " + (fx().dir / "missing.sqlite").string(), {"--db", "does not exist"});
    expect_usage("runs", {"missing required option --db"});
    // A file that is not a run store.
    const fs::path junk = fx().dir / "junk.sqlite";
    std::ofstream(junk) << "not a database, just text that is long enough to have a header page..............";
    const auto r = cli("runs --db " + junk.string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--db"), std::string::npos) << r.out;
}

TEST(CliInput, StepsAreCheckedTheSameWayEverywhere) {
    const fs::path p = fx().dir / "steps.sqlite";
    for (const std::string& cmd :
         {"run --preset default --db " + p.string(), "resume " + id() + db(), std::string("bench")}) {
        expect_usage(cmd + " --steps -1", {"--steps", "[1, 100000]"});
        expect_usage(cmd + " --steps 0", {"--steps", "[1, 100000]"});
        expect_usage(cmd + " --steps 100001", {"--steps", "out of range"});
        expect_usage(cmd + " --steps 1.5", {"--steps", "not an integer"});
        expect_usage(cmd + " --steps ' 3'", {"--steps", "not an integer"});
    }
    EXPECT_FALSE(fs::exists(p));
}

TEST(CliInput, RunIdsArePlainPositiveIntegers) {
    for (const char* bad : {"' 1'", "+1", "01", "-1", "0", "1x", "abc", "99999999999999999999"})
        for (const std::string& cmd : {std::string("show ") + bad + db(), std::string("resume ") + bad + db(),
                                       std::string("export ") + bad + db() + " --format csv --out x.csv"})
            expect_usage(cmd, {"RUN", "not a run id", "positive integer"});
    expect_usage("show 999" + db(), {"RUN: run 999 is not in"});
    expect_usage("show" + db(), {"expected a RUN id"});
    EXPECT_EQ(cli("show " + id() + db()).code, 0);
}

TEST(CliInput, CacheDirNamingAFileIsRefusedBeforeAnyWarmUp) {
    const fs::path file = fx().dir / "cache-file";
    std::ofstream(file) << "x";
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = cli("run --preset default --steps 1 --db " + (fx().dir / "c.sqlite").string() + " --cache-dir " +
                       file.string());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--cache-dir"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("is a file"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("base policy"), std::string::npos) << r.out;
    EXPECT_LT(s, 10.0);
    EXPECT_FALSE(fs::exists(fx().dir / "c.sqlite"));
}

TEST(CliInput, CheckpointPathsAreChecked) {
    expect_usage("probe --preset dense-tiny --checkpoint " + (fx().dir / "no-such-ckpt").string(),
                 {"--checkpoint", "not a directory"});
    const fs::path file = fx().dir / "a-file";
    std::ofstream(file) << "x";
    expect_usage("checkpoint --preset dense-tiny --out " + file.string(), {"--out", "is a file"});
    // A directory without a checkpoint in it.
    expect_usage("probe --preset dense-tiny --checkpoint " + fx().dir.string(), {"--checkpoint"});
}

// A store this user may not write (a colleague's results, a course's shared
// folder): read commands work, commands that store runs are bad input before
// any warm-up. As nobody (setpriv) when the test runs as root, who may write
// anything.
TEST(CliInput, AReadOnlyStoreIsReadAndNeverWritten) {
    const fs::path shared = fx().dir / "shared", mine = fx().dir / "mine";
    fs::create_directories(shared);
    fs::create_directories(mine);
    fs::permissions(mine, fs::perms::all);  // the reader's own cache and output
    const std::string store = (shared / "runs.sqlite").string();
    fs::copy_file(fx().db, store, fs::copy_options::overwrite_existing);
    fs::permissions(store, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
    fs::permissions(shared, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
    const std::string as = geteuid() == 0 ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
    const auto reader = [&](const std::string& args) {
        const std::string cmd = as + MLK_CLI_PATH + " " + args + " 2>&1";
        FILE* p = popen(cmd.c_str(), "r");
        std::string out;
        char buf[4096];
        while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
        const int status = pclose(p);
        return clitest::CliResult{WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
    };
    auto r = reader("runs --db " + store);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("synthetic"), std::string::npos) << r.out;
    const std::string csv = (mine / "run.csv").string();
    r = reader("export " + id() + " --db " + store + " --format csv --out " + csv);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(fs::exists(csv));
    for (const std::string& cmd : {std::string("run --preset dense-tiny --steps 1"), "resume " + id() + " --steps 1"}) {
        r = reader(cmd + " --db " + store + " --cache-dir " + (mine / "cache").string());
        EXPECT_EQ(r.code, 2) << cmd << "\n" << r.out;
        EXPECT_NE(r.out.find("is read-only for this user"), std::string::npos) << cmd << "\n" << r.out;
        EXPECT_EQ(r.out.find("base policy"), std::string::npos) << cmd << "\n" << r.out;
    }
    EXPECT_EQ(read_file(store), read_file(fx().db));  // nothing written
    fs::permissions(shared, fs::perms::owner_all);
}

// A read command never writes: an empty file (made by `touch`, or a store
// some writer has not created yet) reads as a store without runs and stays
// empty, with no -wal or -shm left beside it.
TEST(CliInput, AReadCommandOnAnEmptyFileWritesNothing) {
    const std::string empty = (fx().dir / "empty.sqlite").string();
    std::ofstream(empty).close();
    auto r = cli("runs --db " + empty);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("status"), std::string::npos) << "the header, and no run\n" << r.out;
    r = cli("runs --json --db " + empty);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out, "[]\n");
    expect_usage("show 1 --db " + empty, {"run 1 is not in"});
    expect_usage("export 1 --db " + empty + " --format csv --out " + (fx().dir / "e.csv").string(), {"run 1"});
    EXPECT_EQ(fs::file_size(empty), 0u) << "nothing written into it";
    for (const char* suffix : {"-wal", "-shm", "-journal"}) EXPECT_FALSE(fs::exists(empty + suffix)) << suffix;
}

// A run's name is how lists, legends and reports tell it apart: an empty
// one is refused before the database is touched.
TEST(CliInput, AnEmptyRunNameIsRefused) {
    const std::string fresh_db = (fx().dir / "named.sqlite").string();
    for (const char* name : {"''", "' '"}) {
        expect_usage(std::string("run --preset dense-tiny --steps 1 --name ") + name + " --db " + fresh_db,
                     {"--name", "empty", "allowed"});
        EXPECT_FALSE(fs::exists(fresh_db)) << name;
    }
}

// A config that is not a regular file (a FIFO would block the CLI until a
// writer comes) is bad input, refused at once.
TEST(CliInput, AConfigThatIsNotARegularFileIsRefusedAtOnce) {
    const std::string fifo = (fx().dir / "config.fifo").string();
    fs::remove(fifo);
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    // Under `timeout`: a CLI that opened the FIFO would wait for a writer
    // forever, and fails this test instead of hanging it.
    const auto r = shell("timeout 120 " + std::string(MLK_CLI_PATH) + " probe --preset dense-tiny --config " + fifo);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("is a FIFO"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("allowed: a regular JSON file"), std::string::npos) << r.out;
    fs::remove(fifo);
}

TEST(CliExit, AFailedWriteIsAFailureWithAMessage) {
    if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
    auto r = cli("probe --preset dense-tiny --set rl.prompts_per_step=2 --dump /dev/full");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("cannot write /dev/full"), std::string::npos) << r.out;
    r = cli("export " + id() + db() + " --format csv --out /dev/full");
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_NE(r.out.find("cannot write /dev/full"), std::string::npos) << r.out;
    // An output directory where a file should go is bad input.
    expect_usage("export " + id() + db() + " --format csv --out " + fx().dir.string(), {"--out", "is a directory"});
}

// A report or export written again over the one a user already has, and
// failing on the way (a full disk; here the shell's file-size limit), keeps
// the old file whole and leaves no temporary file beside it. /dev/full
// above stays a device: what is not a regular file is written in place.
TEST(CliExit, AFailedWriteKeepsTheFileItWouldHaveReplaced) {
    const fs::path dir = fx().dir / "kept";
    fs::create_directories(dir);
    // A probe's dump (about 380 KB) in every build; reports where the CLI
    // has them (a build with the GUI libraries).
    std::vector<std::pair<std::string, std::string>> writes = {{"probe.json", "probe --preset dense-tiny --dump "}};
    if (cli_has_reports())
        for (const char* name : {"report.html", "report.pdf"})
            writes.emplace_back(name, "report " + id() + db() + " --out ");
    for (const auto& [name, command] : writes) {
        const std::string out = (dir / name).string();
        std::ofstream(out, std::ios::binary) << "last week's " << name;
        // ulimit -f 64: writes past 64 KB fail (EFBIG; the signal it would raise
        // ignored). The store's 32 KB index still opens.
        const auto [code, said] = shell("bash -c 'ulimit -f 64; trap \"\" XFSZ; exec " + std::string(MLK_CLI_PATH) +
                                        " " + command + out + "'");
        EXPECT_EQ(code, 1) << name << "\n" << said.substr(0, 400);
        EXPECT_NE(said.find("cannot write " + out), std::string::npos) << name << ": " << said.substr(0, 400);
        const std::string now = read_file(out);
        EXPECT_TRUE(now == "last week's " + name) << name << " was replaced: " << now.size() << " bytes now";
        for (const auto& e : fs::directory_iterator(dir))
            EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
    }
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
    // Without the limit the same export replaces the file.
    const std::string csv = (dir / "runs.csv").string();
    ASSERT_EQ(cli("export " + id() + db() + " --format csv --out " + csv).code, 0);
    EXPECT_EQ(read_file(csv).rfind("step,", 0), 0u) << read_file(csv).substr(0, 80);
}

// Outside a desktop session (a container, CI, su) Qt warns that
// XDG_RUNTIME_DIR is not set; a headless report has no use for it and keeps
// that warning out of its output.
TEST(CliReport, SaysWhatItWroteAndNothingElse) {
    if (!cli_has_reports()) GTEST_SKIP() << "this CLI has no report command (built without the GUI libraries)";
    const std::string out = (fx().dir / "quiet.html").string();
    const auto r =
        shell("env -u XDG_RUNTIME_DIR " + std::string(MLK_CLI_PATH) + " report " + id() + db() + " --out " + out);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out, "wrote " + out + " (1 run(s), 6 chart(s), 2 data file(s))\n");
}

TEST(CliMetrics, JsonIsTheCatalogue) {
    const auto r = cli("metrics --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), metric_catalogue().size());
    for (size_t i = 0; i < j.size(); ++i) {
        const MetricInfo& m = metric_catalogue()[i];
        const auto& o = j[i];
        EXPECT_EQ(o.size(), 10u);
        EXPECT_EQ(o["name"], std::string(m.name));
        EXPECT_EQ(o["title"], std::string(m.title));
        EXPECT_EQ(o["unit"], std::string(m.unit));
        EXPECT_EQ(o["better"], std::string(enum_name(m.better)));
        EXPECT_EQ(o["kind"], std::string(enum_name(m.kind)));
        EXPECT_EQ(o["axis"], std::string(enum_name(m.axis)));
        EXPECT_EQ(o["key_chart"], m.key_chart);
        EXPECT_EQ(o["group"], std::string(m.group));
        EXPECT_EQ(o["meaning"], std::string(m.meaning));
        EXPECT_EQ(o["formula"], std::string(m.formula));
    }
    const auto k3 = std::find_if(j.begin(), j.end(), [](const auto& o) { return o["name"] == "k3_kl"; });
    ASSERT_NE(k3, j.end());
    EXPECT_EQ((*k3)["better"], "lower");
    EXPECT_EQ((*k3)["axis"], "log");
    EXPECT_EQ((*k3)["key_chart"], true);
}

TEST(CliMetrics, TableHasEveryMetricWithItsFacts) {
    const auto r = cli("metrics");
    ASSERT_EQ(r.code, 0) << r.out;
    for (const auto& m : metric_catalogue()) {
        // The fact line starts with the name, then its direction, kind and axis.
        const std::regex line("(^|\\n)" + std::regex_replace(std::string(m.name), std::regex("[.@]"), "\\$&") + " +" +
                              std::string(enum_name(m.better)) + " +" + std::string(enum_name(m.kind)) + " +" +
                              std::string(enum_name(m.axis)) + " ");
        EXPECT_TRUE(std::regex_search(r.out, line)) << m.name;
        EXPECT_NE(r.out.find(std::string(m.meaning)), std::string::npos) << m.name;
    }
}

// `show` says which of a run's changed settings it did not read, as the
// report's "Settings without effect" does.
TEST(CliShow, SaysWhichChangedSettingsHadNoEffect) {
    const std::string path = (fx().dir / "no_effect.sqlite").string();
    int64_t bound = 0;
    {
        Store store = Store::open(path);
        Config c;
        c.correction.is_upper = 5;  // the defaults recompute the old policy: no correction acts
        bound = store.create_run("bound", "default", config_to_json(c).dump(), 1, RunStatus::finished);
    }
    const auto r = cli("show " + std::to_string(bound) + " --db " + path);
    ASSERT_EQ(r.code, 0) << r.out;
    const size_t config = r.out.find("configuration (differences from the defaults):");
    const size_t said = r.out.find(
        "\n  without effect: correction.is_upper=5.0 has no effect: rl.old_policy=recompute applies no correction");
    ASSERT_NE(said, std::string::npos) << r.out;
    EXPECT_LT(config, said) << r.out;
    EXPECT_LT(said, r.out.find("metrics:")) << r.out;
    EXPECT_EQ(cli("show " + id() + db()).out.find("without effect"), std::string::npos);
}

TEST(CliShow, BestFollowsTheMetricsDirection) {
    const auto r = cli("show " + id() + db());
    ASSERT_EQ(r.code, 0) << r.out;
    auto row = [&](const std::string& name) {
        std::istringstream in(r.out);
        for (std::string l; std::getline(in, l);) {
            std::istringstream w(l);
            std::vector<std::string> cols;
            for (std::string c; w >> c;) cols.push_back(c);
            if (!cols.empty() && cols[0] == name) return cols;
        }
        return std::vector<std::string>{};
    };
    // name first final best step mean NaN/Inf
    const auto k = row("k3_kl"), g = row("grad_norm"), rw = row("reward_mean");
    ASSERT_EQ(k.size(), 7u) << r.out;
    ASSERT_EQ(g.size(), 7u) << r.out;
    ASSERT_EQ(rw.size(), 7u) << r.out;
    EXPECT_EQ(k[3], value_text(1e-6));
    EXPECT_EQ(k[4], "3");
    EXPECT_EQ(g[3], value_text(0.01));
    EXPECT_EQ(g[4], "3");
    EXPECT_EQ(rw[3], value_text(0.9));
    EXPECT_EQ(rw[4], "11");
    std::vector<MetricPoint> series;
    for (int s = 0; s < 20; ++s) series.push_back({s, fx().k3[s]});
    const RunStats st = run_stats(series, "k3_kl");
    EXPECT_EQ(k[2], value_text(st.final_value));
    EXPECT_EQ(k[5], value_text(st.mean_last));
    EXPECT_NE(r.out.find("collapse:"), std::string::npos);
    EXPECT_NE(r.out.find("divergence:"), std::string::npos);
}

TEST(CliCommands, PresetsListEveryModelPresetAndEachIsAccepted) {
    auto r = cli("presets --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    std::vector<std::string> models;
    for (const auto& p : j)
        if (p["type"] == "model") models.push_back(p["name"]);
    EXPECT_EQ(models, (std::vector<std::string>{"dense-tiny", "moe-tiny", "dense-small", "moe-small", "dense-deep",
                                                "moe-deep"}));
    // Every RL preset carries its group, listed in the pickers' teaching order.
    std::vector<std::string> groups;
    size_t rl = 0;
    for (const auto& p : j) {
        if (p["type"] != "rl") continue;
        ++rl;
        const std::string g = p.at("group");
        if (groups.empty() || groups.back() != g) groups.push_back(g);
    }
    EXPECT_EQ(rl, mlk::presets().size());
    EXPECT_EQ(groups, mlk::preset_groups()) << "each group once, in order";
    r = cli("presets");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("moe-deep"), std::string::npos);
    EXPECT_NE(r.out.find("48 experts top-6"), std::string::npos) << r.out;
    // --preset takes them where it takes a model preset.
    const fs::path out = fx().dir / "deep-ckpt";
    r = cli("checkpoint --preset dense-deep --out " + out.string());
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(fs::exists(out / "config.json"));
    expect_usage("bench --preset moe-huge", {"--preset", "moe-deep"});
    // bench takes an RL preset too, with its model and numerics.
    r = cli("bench --preset truly-on-policy --steps 1 --set rl.prompts_per_step=2 --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto b = nlohmann::json::parse(r.out);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0]["preset"], "truly-on-policy");
    EXPECT_EQ(b[0]["params"], 102016) << "truly-on-policy is dense-tiny";
    EXPECT_EQ(b[0]["kernels"], "batch-invariant");
    // The work is what the kernels counted: every phase did some, the step is their sum,
    // and the rate and share of the peak follow from time and work.
    const double peak = b[0]["peak_gflops"].get<double>();
    EXPECT_GT(peak, 0.0);
    double sum = 0;
    for (const char* phase : {"rollout", "recompute", "train"}) {
        const auto& p = b[0][phase];
        EXPECT_GT(p["gflop"].get<double>(), 0.0) << phase;
        EXPECT_GT(p["ms"].get<double>(), 0.0) << phase;
        EXPECT_NEAR(p["gflops"].get<double>(), p["gflop"].get<double>() / (p["ms"].get<double>() * 1e-3),
                    1e-9 * p["gflops"].get<double>())
            << phase;
        EXPECT_NEAR(p["percent_of_peak"].get<double>(), 100 * p["gflops"].get<double>() / peak, 1e-9) << phase;
        sum += p["gflop"].get<double>();
    }
    EXPECT_NEAR(b[0]["step_gflop"].get<double>(), sum, 1e-12);
    EXPECT_NEAR(b[0]["percent_of_peak"].get<double>(),
                100 * b[0]["step_gflop"].get<double>() / (b[0]["step_ms"].get<double>() * 1e-3) / peak, 1e-9);
    // The training pass (backward only, the recompute's forward is reused) does about twice the
    // recompute's matmul work.
    EXPECT_NEAR(b[0]["train"]["gflop"].get<double>() / b[0]["recompute"]["gflop"].get<double>(), 2.0, 0.3);
    for (const char* phase : {"rollout", "recompute", "train"}) EXPECT_EQ(b[0][phase]["device"], "cpu") << phase;
    EXPECT_EQ(b[0]["rollout_device"], "cpu");
    EXPECT_EQ(b[0]["train_device"], "cpu");
    // --device names its values; cuda without a GPU stops before any preset runs, naming the key.
    r = cli("bench --preset dense-tiny --steps 1 --device gpu");
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.out.find("allowed values: cpu, cuda, both"), std::string::npos) << r.out;
    if (mlk::cuda_devices() == 0) {
        r = cli("bench --preset dense-tiny --steps 1 --device both");
        EXPECT_EQ(r.code, 2) << "a request this machine cannot carry out\n" << r.out;
        EXPECT_NE(r.out.find("rollout.device = cuda"), std::string::npos) << r.out;
        EXPECT_EQ(r.out.find("dense-tiny "), std::string::npos) << "no preset ran: " << r.out;
        // A run that asks for a GPU here is refused before its database exists.
        const std::string db = (fx().dir / "gpu.sqlite").string();
        r = cli("run --preset dense-tiny --steps 1 --set train.device=cuda --db " + db);
        EXPECT_EQ(r.code, 2) << r.out;
        EXPECT_NE(r.out.find("train.device = cuda"), std::string::npos) << r.out;
        EXPECT_FALSE(fs::exists(db));
    }
    // --kernels both: the two families of one preset, their steps interleaved, with
    // batch-invariant / fast per phase; the peak is the mean of samples taken around them.
    r = cli("bench --preset dense-tiny --steps 2 --set rl.prompts_per_step=2 --kernels both --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto k = nlohmann::json::parse(r.out);
    ASSERT_EQ(k.size(), 2u);
    EXPECT_EQ(k[0]["kernels"], "fast");
    EXPECT_EQ(k[1]["kernels"], "batch-invariant");
    EXPECT_EQ(k[0]["peak_gflops"], k[1]["peak_gflops"]) << "one set of samples for both families";
    EXPECT_LE(k[0]["peak_gflops_min"].get<double>(), k[0]["peak_gflops"].get<double>());
    EXPECT_GE(k[0]["peak_gflops_max"].get<double>(), k[0]["peak_gflops"].get<double>());
    for (const auto& e : k) {
        const auto& q = e["batch_invariant_over_fast"];
        EXPECT_NEAR(q["step"]["time"].get<double>(), k[1]["step_ms"].get<double>() / k[0]["step_ms"].get<double>(),
                    1e-12);
        for (const char* phase : {"rollout", "recompute", "train"})
            EXPECT_NEAR(q[phase]["time_per_gflop"].get<double>(),
                        (k[1][phase]["ms"].get<double>() / k[1][phase]["gflop"].get<double>()) /
                            (k[0][phase]["ms"].get<double>() / k[0][phase]["gflop"].get<double>()),
                        1e-12)
                << phase;
        for (const char* part : {"rollout", "recompute", "train", "step"}) {
            const double m = q[part]["paired_median_time_per_gflop"].get<double>();
            EXPECT_TRUE(std::isfinite(m) && m > 0) << part << " " << m;
            // Its bootstrap interval holds it.
            const auto& ci = q[part]["paired_median_interval"];
            ASSERT_EQ(ci.size(), 2u) << part;
            EXPECT_LE(ci[0].get<double>(), m) << part;
            EXPECT_GE(ci[1].get<double>(), m) << part;
        }
    }
    // With one pair of steps, the paired median is that pair's ratio: the
    // whole run's ratio of time per GFLOP.
    r = cli("bench --preset dense-tiny --steps 1 --set rl.prompts_per_step=2 --kernels both --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto one = nlohmann::json::parse(r.out)[0]["batch_invariant_over_fast"];
    for (const char* part : {"rollout", "recompute", "train", "step"}) {
        EXPECT_NEAR(one[part]["paired_median_time_per_gflop"].get<double>(), one[part]["time_per_gflop"].get<double>(),
                    1e-12)
            << part;
        // and one pair's interval is that point.
        EXPECT_EQ(one[part]["paired_median_interval"][0], one[part]["paired_median_time_per_gflop"]) << part;
        EXPECT_EQ(one[part]["paired_median_interval"][1], one[part]["paired_median_time_per_gflop"]) << part;
    }
    // --kernels same: two identical lanes of the config's family, interleaved
    // the same way; their second / first ratio is the noise floor of the
    // one above. Identical lanes do identical work.
    r =
        cli("bench --preset dense-tiny --steps 2 --set rl.prompts_per_step=2 --set kernels.batch_invariant=true "
            "--kernels same --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto same = nlohmann::json::parse(r.out);
    ASSERT_EQ(same.size(), 2u);
    EXPECT_EQ(same[0]["kernels"], "batch-invariant");
    EXPECT_EQ(same[1]["kernels"], "batch-invariant");
    EXPECT_EQ(same[0]["step_gflop"], same[1]["step_gflop"]);
    EXPECT_FALSE(same[0].contains("batch_invariant_over_fast"));
    EXPECT_NEAR(same[0]["second_over_first"]["step"]["time"].get<double>(),
                same[1]["step_ms"].get<double>() / same[0]["step_ms"].get<double>(), 1e-12);
    r = cli("bench --preset dense-tiny --steps 1 --kernels bi");
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.out.find("allowed values: fast, batch-invariant, both, same"), std::string::npos) << r.out;
    // --blas times OpenBLAS at the shapes each phase issued; an MoE model's
    // include expert batches of fewer rows than the hidden size.
    r = cli("bench --preset dense-tiny --preset moe-tiny --steps 1 --set rl.prompts_per_step=2 --blas --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto benched = nlohmann::json::parse(r.out);
    ASSERT_EQ(benched.size(), 2u);
    EXPECT_GT(benched[1]["openblas"]["train"]["gemm_shapes"].get<int>(), 0);
    const auto o = benched[0]["openblas"];
    // Never OpenBLAS's generic kernels on a CPU with AVX2 (Debian's 0.3.21
    // falls back to them on CPUs newer than itself), unless the user asked.
    const std::string chosen_by = o["core_chosen_by"];
    EXPECT_TRUE(chosen_by == "openblas" || chosen_by == "environment" || chosen_by == "bench") << chosen_by;
    if (chosen_by != "environment" && mlk::cpu::detected_isa() != mlk::cpu::Isa::scalar) {
        EXPECT_NE(o["core"].get<std::string>(), "Prescott");
    }
    if (chosen_by == "bench") {
        EXPECT_EQ(o["detected_core"].get<std::string>(), "Prescott");
    }
    for (const char* phase : {"rollout", "recompute", "train"}) {
        EXPECT_GT(o[phase]["gemm_shapes"].get<int>(), 0) << phase;
        EXPECT_GT(o[phase]["openblas_ms"].get<double>(), 0.0) << phase;
        EXPECT_GT(o[phase]["ours_ms"].get<double>(), 0.0) << phase;
    }
}

// A sweep run's name, longer than its column, would push the preset, status
// and date out of line: the name is last; the rest line up.
TEST(CliCommands, RunsListsTheNameLastWithTheOtherColumnsInLine) {
    const fs::path path = fx().dir / "names.sqlite";
    const std::string longName = "default is_level=sequence is_upper=5.0 old_policy=decoupled seed=2";
    {
        Store store = Store::open(path.string());
        const std::string cfg = config_to_json(Config{}).dump();
        store.create_run(longName, "default", cfg, 1, RunStatus::finished);
        store.create_run("short", "production-moe-deep-r3", cfg, 1, RunStatus::failed);
    }
    const auto r = cli("runs --db " + path.string());
    ASSERT_EQ(r.code, 0) << r.out;
    std::vector<std::string> lines;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_EQ(lines.size(), 3u) << r.out;
    const size_t name = lines[0].find("name"), created = lines[0].find("created");
    ASSERT_NE(name, std::string::npos) << lines[0];
    EXPECT_EQ(lines[0].size(), name + 4) << "the name is the last column";
    EXPECT_EQ(lines[1].substr(name), "short") << r.out;
    EXPECT_EQ(lines[2].substr(name), longName) << r.out;
    for (size_t i = 1; i < lines.size(); ++i)
        EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(lines[i][created]))) << r.out;
}

// `sweep --help` said "unknown option --help; allowed: ..." and exited 2.
TEST(CliCommands, ACommandsHelpIsItsUsage) {
    for (const char* args : {"sweep --help", "sweep --db x.sqlite -h", "runs --help"}) {
        const auto r = cli(args);
        EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
        EXPECT_EQ(r.out.find("unknown option"), std::string::npos) << r.out;
    }
    const std::string sweep = cli("sweep --help").out;
    EXPECT_NE(sweep.find("usage: mismatch-lab-cli sweep --db FILE [--preset P ...]"), std::string::npos) << sweep;
    EXPECT_NE(sweep.find("sweep --db FILE --family NAME"), std::string::npos) << sweep;  // its continuation
    EXPECT_NE(sweep.find("exit codes: 0 ok"), std::string::npos) << sweep;
    EXPECT_EQ(sweep.find("resume RUN"), std::string::npos) << "another command's line: " << sweep;
    const std::string runs = cli("runs --help").out;
    EXPECT_NE(runs.find("usage: mismatch-lab-cli runs --db FILE [--json]\n"), std::string::npos) << runs;
    EXPECT_EQ(runs.find("run --preset"), std::string::npos) << "`run` is not `runs`: " << runs;
}

TEST(CliCommands, ExistingBehaviourStillWorks) {
    auto r = cli("runs" + db() + " --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["id"], fx().run);
    const fs::path csv = fx().dir / "run.csv";
    r = cli("export " + id() + db() + " --format csv --out " + csv.string());
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_TRUE(fs::file_size(csv) > 0);
    r = cli("presets --json");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_FALSE(nlohmann::json::parse(r.out).empty());
    EXPECT_EQ(cli("--help").code, 0);
    EXPECT_EQ(cli("").code, 2);
}
