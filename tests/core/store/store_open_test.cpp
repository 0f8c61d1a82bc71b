// Opening a run store: migrations of older files, refusing files that are
// not a run store without touching them, and surviving a SIGKILL mid-append.
#include "core/store/store.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <random>

#include "tests/core/store/store_test_util.h"

using namespace mlk;
using namespace mlk::store_test;

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
        // A relative path is read as relative to the database's folder.
        EXPECT_EQ(s.last_checkpoint(7)->path, (fs::path(path).parent_path() / "ck/1.safetensors").string());
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
            // SQLite doubts the file, and the message says so.
            if (name == "header_only.sqlite") {
                EXPECT_NE(std::string(e.what()).find("(is it a Mismatch Lab run store?)"), std::string::npos)
                    << e.what();
            }
        }
        EXPECT_EQ(read_bytes(path), bytes) << name;
        EXPECT_FALSE(fs::exists(path + "-wal")) << name;
    }
    EXPECT_THROW(Store::open(dir_.string()), StoreError);                    // a directory
    EXPECT_THROW(Store::open(file("no/such/dir/runs.sqlite")), StoreError);  // missing parent
}

// A healthy store that cannot be opened for a reason outside it (here the
// file-size limit stops SQLite making its 32 KB -shm index) says that
// reason and casts no doubt on the file; it opens once the limit is gone.
TEST_F(StoreTest, AHealthyStoreThatCannotOpenIsNotCalledForeign) {
    const auto path = file("healthy.sqlite");
    {
        Store s = Store::open(path);
        s.create_run("kept", "default", "{}", 1, RunStatus::finished);
    }
    rlimit old{};
    ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
    const auto old_handler = signal(SIGXFSZ, SIG_IGN);
    rlimit small = old;
    small.rlim_cur = 4096;
    ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
    std::string error;
    try {
        Store::open(path);
    } catch (const StoreError& e) {
        error = e.what();
    }
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
    ASSERT_FALSE(error.empty()) << "opened under a 4 KB file-size limit";
    EXPECT_NE(error.find("File too large"), std::string::npos) << error;
    EXPECT_EQ(error.find("is it a Mismatch Lab run store"), std::string::npos) << error;
    Store again = Store::open(path);
    EXPECT_EQ(again.list_runs().size(), 1u);
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

// Processes that open a file nobody has created yet, all at once (a CLI run
// and the workbench, two sweep workers): each gets a working store, none
// sees a half-made schema or a lock it gives up on.
TEST_F(StoreTest, ConcurrentOpensOfANewFileAllSucceed) {
    int failures = 0;
    for (int round = 0; round < 40; ++round) {
        const std::string path = file("new" + std::to_string(round) + ".sqlite");
        std::vector<pid_t> children;
        for (int k = 0; k < 6; ++k) {
            const pid_t pid = fork();
            ASSERT_GE(pid, 0);
            if (pid == 0) {
                try {
                    Store s = Store::open(path);
                    if (k % 2 == 0) s.create_run("r", "p", "{}", 1);
                    s.list_runs();
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "round %d, opener %d: %s\n", round, k, e.what());
                    _exit(1);
                }
                _exit(0);
            }
            children.push_back(pid);
        }
        for (pid_t pid : children) {
            int status = 0;
            waitpid(pid, &status, 0);
            failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        EXPECT_EQ(Store::open(path).list_runs().size(), 3u) << "round " << round;
    }
    EXPECT_EQ(failures, 0);
    for (const auto& e : fs::directory_iterator(dir_))
        EXPECT_EQ(e.path().string().find(".new."), std::string::npos) << "left behind: " << e.path();
}

namespace {
// Whether some other process holds a lock on SQLite's shared-lock bytes of
// `path`, as seen from a child process (F_GETLK never reports our own).
bool another_process_reads(const std::string& path) {
    const pid_t pid = fork();
    if (pid == 0) {
        const int fd = ::open(path.c_str(), O_RDWR);
        struct flock fl {};
        fl.l_type = F_WRLCK;
        fl.l_whence = SEEK_SET;
        fl.l_start = 0x40000000 + 2;  // SQLite's PENDING_BYTE + 2: the SHARED range
        fl.l_len = 510;
        const bool held = fd >= 0 && ::fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK;
        _exit(held ? 1 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}
}  // namespace

// A WAL connection holds a SHARED lock on the database file for its life:
// it is how a closing process learns it is not the last one and leaves the
// WAL alone. POSIX drops a process's locks on a file when any descriptor of
// that file closes, so a second open in the same process (the workbench's
// worker beside its browser) must not read the file through one of its own.
TEST_F(StoreTest, ASecondConnectionKeepsTheFirstOnesLocks) {
    const std::string path = file("runs.sqlite");
    Store browser = Store::open(path);
    browser.list_runs();
    ASSERT_TRUE(another_process_reads(path)) << "the SHARED lock this test watches";
    { Store worker = Store::open(path); }
    EXPECT_TRUE(another_process_reads(path)) << "the second open dropped the first connection's lock";
    browser.list_runs();
    EXPECT_TRUE(another_process_reads(path));
}

// What a v4 file holds: none of v5's table and v6's column.
constexpr const char* kBackToV4 =
    "ALTER TABLE runs DROP COLUMN machine; DROP TABLE worst_tokens; PRAGMA user_version = 4;";

// Schema v6 added where each run was made: a v5 file's runs say nothing,
// and a run's record can be set and read back after the migration.
TEST_F(StoreTest, MachineRoundTripAndAV5FileOpens) {
    const auto path = file("v5.sqlite");
    int64_t id = 0;
    {
        Store s = Store::open(path);
        id = s.create_run("before v6", "", "{}", 1);
        s.set_machine(id, "set before the file went back to v5");
    }
    Raw(path).exec("ALTER TABLE runs DROP COLUMN machine; PRAGMA user_version = 5;");
    Store s = Store::open(path);
    EXPECT_EQ(s.run_info(id)->machine, "") << "a run from before v6 names no machine";
    s.set_machine(id, "Some CPU, SIMD avx2, 4 kernel threads");
    EXPECT_EQ(s.run_info(id)->machine, "Some CPU, SIMD avx2, 4 kernel threads");
    EXPECT_EQ(Raw(path).scalar("PRAGMA user_version"), std::to_string(Store::schema_version()));
}

// Schema v5 added the worst_tokens table ("why this token?"): a v4 file
// opens, its steps simply have none, and new steps keep theirs, written,
// replaced, truncated and deleted with the rest of the step.
TEST_F(StoreTest, WorstTokensRoundTripAndAV4FileOpens) {
    const auto path = file("v4.sqlite");
    int64_t id = 0;
    {
        Store s = Store::open(path);
        id = s.create_run("before v5", "", "{}", 1);
        s.append_step(id, make_step(0));
    }
    {
        // What the previous release left: everything but the v5 table.
        Raw raw(path);
        raw.exec(kBackToV4);
    }
    Store s = Store::open(path);
    EXPECT_EQ(s.worst_tokens(id, 0), "") << "a step from before v5 has none";
    const std::string doc = R"({"tokens":[{"seq":3,"pos":1,"lp_roll":-0.5}],"kernels":"fast"})";
    StepRecord rec = make_step(1);
    rec.worst_tokens_json = doc;
    s.append_step(id, rec);
    EXPECT_EQ(s.worst_tokens(id, 1), doc);
    rec.worst_tokens_json = "{}";
    s.append_step(id, rec);  // the step written again replaces its document
    EXPECT_EQ(s.worst_tokens(id, 1), "{}");
    rec.worst_tokens_json.clear();
    s.append_step(id, rec);
    EXPECT_EQ(s.worst_tokens(id, 1), "") << "no document, no row";
    rec = make_step(2);
    rec.worst_tokens_json = doc;
    s.append_step(id, rec);
    s.truncate_after(id, 1);
    EXPECT_EQ(s.worst_tokens(id, 2), "");
    s.append_step(id, rec);
    s.delete_run(id);
    Raw raw(path);
    EXPECT_EQ(raw.scalar("PRAGMA user_version"), std::to_string(Store::schema_version()));
    EXPECT_EQ(raw.scalar("SELECT COUNT(*) FROM worst_tokens"), "0") << "deleted with its run";
}

namespace {

// Runs `check` in a child process as a user who may not write the test's
// files (nobody when the test runs as root, who may write anything) and
// returns its exit status: 0 when every check held, else the failed check's
// number (its reason on stderr).
int as_reader(const std::function<int()>& check) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
        int rc = 91;
        try {
            rc = check();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "as_reader: %s\n", e.what());
        }
        _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void set_mode(const fs::path& p, fs::perms mode) { fs::permissions(p, mode, fs::perm_options::replace); }

}  // namespace

// A run store this user may not write (a colleague's results, a course's
// shared folder) is read, not refused as "not a run store": alone and while
// its owner writes it. Writing it fails saying why, and an older schema,
// whose migration would write, is refused and left as it was.
TEST_F(StoreTest, AStoreThisUserMayNotWriteIsReadOnly) {
    using fs::perms;
    const auto path = file("shared.sqlite"), old = file("old.sqlite");
    int64_t id = 0;
    {
        Store s = Store::open(path);
        id = s.create_run("theirs", "default", "{}", 3, RunStatus::finished);
        s.append_step(id, make_step(0));
        Store o = Store::open(old);
        o.create_run("older", "", "{}", 1);
    }
    Raw(old).exec(kBackToV4);
    const std::string old_bytes = read_bytes(old);
    const auto lock_down = [&] {
        for (const auto& f : fs::directory_iterator(dir_))
            set_mode(f.path(), perms::owner_read | perms::group_read | perms::others_read);
        set_mode(dir_, perms::owner_read | perms::owner_exec | perms::group_read | perms::group_exec |
                           perms::others_read | perms::others_exec);
    };
    const auto open_up = [&] {
        set_mode(dir_,
                 perms::owner_all | perms::group_read | perms::group_exec | perms::others_read | perms::others_exec);
        for (const auto& f : fs::directory_iterator(dir_)) set_mode(f.path(), perms::owner_read | perms::owner_write);
    };
    const auto steps_seen = [&](size_t expected) {
        return [&, expected] {
            Store s = Store::open(path);
            if (!s.read_only()) return 1;
            if (s.list_runs().size() != 1 || s.steps(id).size() != expected) return 2;
            try {
                s.create_run("mine", "", "{}", 1);
                return 3;
            } catch (const StoreError& e) {
                if (std::string(e.what()).find("read-only") == std::string::npos) return 4;
            }
            try {
                Store::open(old);
                return 5;
            } catch (const StoreError& e) {
                if (std::string(e.what()).find("older than this build's") == std::string::npos) return 6;
            }
            return 0;
        };
    };

    lock_down();  // nobody has the files open: no -wal, no -shm, and the reader cannot make them
    EXPECT_EQ(as_reader(steps_seen(1)), 0);
    EXPECT_EQ(read_bytes(old), old_bytes);

    open_up();
    {
        Store owner = Store::open(path);  // its owner writes on, beside the reader
        owner.append_step(id, make_step(1));
        lock_down();
        owner.append_step(id, make_step(2));
        EXPECT_EQ(as_reader(steps_seen(3)), 0);
    }
    open_up();
}

// A reader of a store nobody wrote when it opened (read as immutable: this
// user cannot make the -shm file) must not go on reading it unchanged once
// its owner starts writing: data_version says so, and opening it again shows
// the new steps.
TEST_F(StoreTest, AReadOnlyReaderNoticesAWriterThatStartsLater) {
    using fs::perms;
    const auto path = file("shared.sqlite");
    int64_t id = 0;
    {
        Store s = Store::open(path);
        id = s.create_run("theirs", "default", "{}", 3, RunStatus::finished);
        s.append_step(id, make_step(0));
    }
    set_mode(path, perms::owner_read | perms::group_read | perms::others_read);
    set_mode(dir_, perms::owner_read | perms::owner_exec | perms::group_read | perms::group_exec | perms::others_read |
                       perms::others_exec);
    int opened[2], written[2];
    ASSERT_EQ(pipe(opened), 0);
    ASSERT_EQ(pipe(written), 0);
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
        close(opened[0]);
        close(written[1]);
        int rc = 0;
        char c = 0;
        try {
            if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
            Store s = Store::open(path);
            const int64_t v = s.data_version();
            if (!s.read_only() || s.steps(id).size() != 1 || s.data_version() != v) rc = 1;
            if (write(opened[1], "o", 1) != 1 || read(written[0], &c, 1) != 1) rc = 2;
            try {
                s.data_version();
                rc = rc ? rc : 3;  // the writer went unnoticed
            } catch (const StoreError& e) {
                if (std::string(e.what()).find("started writing") == std::string::npos) rc = rc ? rc : 4;
            }
            if (Store::open(path).steps(id).size() != 2) rc = rc ? rc : 5;
            if (write(opened[1], "d", 1) != 1) rc = rc ? rc : 6;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "reader: %s\n", e.what());
            rc = 91;
        }
        _exit(rc);
    }
    close(opened[1]);  // a reader that dies closes its end: the reads below end instead of hanging
    close(written[0]);
    char c = 0;
    ASSERT_EQ(read(opened[0], &c, 1), 1);
    // The owner writes (a user who is not root needs the folder back for the -wal file).
    set_mode(dir_, perms::owner_all | perms::group_read | perms::group_exec | perms::others_read | perms::others_exec);
    set_mode(path, perms::owner_read | perms::owner_write | perms::group_read | perms::others_read);
    {
        Store owner = Store::open(path);
        owner.append_step(id, make_step(1));
        ASSERT_EQ(write(written[1], "w", 1), 1);
        ASSERT_EQ(read(opened[0], &c, 1), 1);  // the reader is done while the writer is still open
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    close(opened[0]);
    close(written[1]);
}
