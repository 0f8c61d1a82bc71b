// Opening a run store: refusing files that are not one, and the ordered schema
// migrations that bring an older file up to date. Also the small helpers of
// store_db.h.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "core/store/store_db.h"

namespace mlk {

using namespace store_detail;

namespace {

// ---------------------------------------------------------------- schema ---
//
// Ordered migrations; migration N brings user_version from N-1 to N and runs
// in its own transaction. To change the schema append one line, e.g.
//   {3, "ALTER TABLE runs ADD COLUMN tags TEXT NOT NULL DEFAULT '';"},
// Never edit a released migration: files in the wild already ran it.
//
// Columns holding doubles are declared without a type (BLOB affinity, values
// kept exactly as bound): a REAL column would store -0.0 as the integer 0 and
// give back +0.0. NaN is bound as NULL (SQLite has no NaN) and read back as NaN.
struct Migration {
    int version;
    const char* sql;
};

constexpr const char* kSchemaV1 = R"sql(
PRAGMA application_id = 1296845617;
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  created TEXT NOT NULL,            -- ISO-8601 UTC
  status TEXT NOT NULL,             -- running|paused|finished|failed|stopped (|diverged, v3)
  preset TEXT NOT NULL DEFAULT '',
  config_json TEXT NOT NULL DEFAULT '{}',
  seed INTEGER NOT NULL DEFAULT 0,  -- uint64 stored as its int64 bit pattern
  app_version TEXT NOT NULL DEFAULT '',
  notes TEXT NOT NULL DEFAULT '');
CREATE TABLE metrics(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, name TEXT NOT NULL,
  value /* double; NULL = NaN */,
  PRIMARY KEY(run_id, step, name)) WITHOUT ROWID;
CREATE TABLE token_samples(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, idx INTEGER NOT NULL,
  lp_roll /* double */, lp_train /* double */,
  seq INTEGER NOT NULL, pos INTEGER NOT NULL, token INTEGER NOT NULL,
  PRIMARY KEY(run_id, step, idx)) WITHOUT ROWID;
CREATE TABLE ft_curves(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, t /* double */ NOT NULL, frac /* double */,
  PRIMARY KEY(run_id, step, t)) WITHOUT ROWID;
CREATE TABLE router_hist(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, d INTEGER NOT NULL, count INTEGER NOT NULL,
  PRIMARY KEY(run_id, step, d)) WITHOUT ROWID;
CREATE TABLE text_samples(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, idx INTEGER NOT NULL,
  prompt TEXT NOT NULL, response TEXT NOT NULL, reward /* double */,
  tokens_json TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(run_id, step, idx)) WITHOUT ROWID;
CREATE TABLE checkpoints(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL, path TEXT NOT NULL, created TEXT NOT NULL,
  PRIMARY KEY(run_id, step)) WITHOUT ROWID;
)sql";

// v2: runs.updated, a steps table (one row per committed step: cheap step
// counts and the commit time of each step) and an index for metric series.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE runs ADD COLUMN updated TEXT NOT NULL DEFAULT '';
UPDATE runs SET updated = created;
CREATE TABLE steps(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL,
  time TEXT NOT NULL,               -- ISO-8601 UTC commit time; '' when migrated from v1
  PRIMARY KEY(run_id, step)) WITHOUT ROWID;
INSERT INTO steps(run_id, step, time) SELECT DISTINCT run_id, step, '' FROM metrics;
CREATE INDEX metrics_by_name ON metrics(run_id, name, step);
)sql";

// v3: why a run failed or diverged, next to its status.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE runs ADD COLUMN error TEXT NOT NULL DEFAULT '';
)sql";

// v4: sweeps (one row per normalised sweep spec, found again by its hash)
// and the runs each holds. Tables of their own, so the runs table and every
// reader of it stay as they were.
constexpr const char* kSchemaV4 = R"sql(
CREATE TABLE sweeps(
  id INTEGER PRIMARY KEY,
  spec_hash TEXT NOT NULL UNIQUE,
  spec_json TEXT NOT NULL,
  created TEXT NOT NULL);
CREATE TABLE sweep_runs(
  sweep_id INTEGER NOT NULL, run_id INTEGER NOT NULL,
  config_name TEXT NOT NULL, seed INTEGER NOT NULL,
  tags TEXT NOT NULL DEFAULT '',   -- JSON array of strings
  PRIMARY KEY(sweep_id, config_name, seed)) WITHOUT ROWID;
CREATE INDEX sweep_runs_by_run ON sweep_runs(run_id);
)sql";

// v5: each step's worst-mismatch tokens for "why this token?", one bounded
// JSON document per step (core/rl/worst_tokens.h): a table of its own, so a
// step of an older file simply has none.
constexpr const char* kSchemaV5 = R"sql(
CREATE TABLE worst_tokens(
  run_id INTEGER NOT NULL, step INTEGER NOT NULL,
  json TEXT NOT NULL,
  PRIMARY KEY(run_id, step)) WITHOUT ROWID;
)sql";

// v6: where each run was made (core/engines/machine.h): its timings, and on a
// GPU the fast family's bits, depend on it.
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE runs ADD COLUMN machine TEXT NOT NULL DEFAULT '';
)sql";

static_assert(Store::kApplicationId == 1296845617, "kSchemaV1 spells the application id out");

const std::vector<Migration>& migrations() {
    static const std::vector<Migration> m = {
        {1, kSchemaV1}, {2, kSchemaV2}, {3, kSchemaV3}, {4, kSchemaV4}, {5, kSchemaV5}, {6, kSchemaV6},
    };
    return m;
}

// Refuses, without writing anything, a file that is not a SQLite database.
void check_header(const std::string& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const auto st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return;  // created by open()
    if (!fs::is_regular_file(st)) throw StoreError("run store " + path + ": not a regular file");
    const auto size = fs::file_size(path, ec);
    if (ec) throw StoreError("run store " + path + ": cannot read the file size: " + ec.message());
    if (size == 0) return;  // an empty file is an empty database
    static constexpr char kMagic[16] = {'S', 'Q', 'L', 'i', 't', 'e', ' ', 'f',
                                        'o', 'r', 'm', 'a', 't', ' ', '3', '\0'};
    char head[16] = {};
    std::ifstream in(path, std::ios::binary);
    if (!in) throw StoreError("run store " + path + ": cannot open the file for reading");
    in.read(head, sizeof head);
    if (in.gcount() != static_cast<std::streamsize>(sizeof head) || std::memcmp(head, kMagic, sizeof head) != 0)
        throw StoreError("run store " + path + ": not a SQLite database (file left unchanged)");
}

}  // namespace

namespace store_detail {

namespace {
std::mutex open_files_mu;
std::map<std::pair<uint64_t, uint64_t>, int> open_files;
}  // namespace

ConnectionMark::ConnectionMark(const std::string& path, const std::function<void()>& check_first) {
    std::lock_guard lock(open_files_mu);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        check_first();  // names what is wrong with the path
        return;
    }
    dev_ = (uint64_t)st.st_dev, ino_ = (uint64_t)st.st_ino;
    int& count = open_files[{dev_, ino_}];
    if (count == 0) {
        try {
            check_first();
        } catch (...) {
            open_files.erase({dev_, ino_});
            throw;
        }
    }
    ++count;
    marked_ = true;
}

ConnectionMark::~ConnectionMark() {
    if (!marked_) return;
    std::lock_guard lock(open_files_mu);
    if (--open_files[{dev_, ino_}] == 0) open_files.erase({dev_, ino_});
}

std::string now_iso() {
    using namespace std::chrono;
    return iso_from_millis(duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

std::string iso_from_millis(int64_t ms) {
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm t{};
    gmtime_r(&secs, &t);
    char buf[80];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                  t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

double seconds_from_iso(const std::string& text) {
    std::tm t{};
    int millis = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &t.tm_year, &t.tm_mon, &t.tm_mday, &t.tm_hour,
                    &t.tm_min, &t.tm_sec, &millis) != 7)
        return std::numeric_limits<double>::quiet_NaN();
    t.tm_year -= 1900;
    t.tm_mon -= 1;
    return static_cast<double>(timegm(&t)) + millis / 1000.0;
}

int pragma_int(Store::Impl& impl, const char* sql) {
    Query q(impl, sql);
    if (!q.row()) impl.fail(std::string(sql) + " returned nothing");
    return static_cast<int>(q.i64(0));
}

void require_run(Store::Impl& impl, int64_t run_id) {
    Query q(impl, "SELECT 1 FROM runs WHERE id = ?");
    q.bind(1, run_id);
    if (!q.row()) throw StoreError("run store " + impl.path + ": no run with id " + std::to_string(run_id));
}

bool wal_file_exists(const std::string& path) {
    std::error_code ec;
    return std::filesystem::exists(path + "-wal", ec);
}

void touch_run(Store::Impl& impl, int64_t run_id) {
    Query q(impl, "UPDATE runs SET updated = ? WHERE id = ?");
    q.bind(1, now_iso()).bind(2, run_id).run();
}

}  // namespace store_detail

// -------------------------------------------------------------- statuses ---

const char* run_status_name(RunStatus s) {
    switch (s) {
        case RunStatus::running: return "running";
        case RunStatus::paused: return "paused";
        case RunStatus::finished: return "finished";
        case RunStatus::failed: return "failed";
        case RunStatus::stopped: return "stopped";
        case RunStatus::diverged: return "diverged";
    }
    return "unknown";
}

RunStatus parse_run_status(const std::string& s) {
    for (RunStatus r : {RunStatus::running, RunStatus::paused, RunStatus::finished, RunStatus::failed,
                        RunStatus::stopped, RunStatus::diverged})
        if (s == run_status_name(r)) return r;
    throw StoreError("unknown run status '" + s + "' (allowed: running, paused, finished, failed, stopped, diverged)");
}

// ------------------------------------------------------------------ open ---

int Store::schema_version() { return migrations().back().version; }

Store::Store(std::unique_ptr<Impl> impl, std::string path) : impl_(std::move(impl)), path_(std::move(path)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

namespace {

using Clock = std::chrono::steady_clock;

// Runs `attempt` until it succeeds, retrying while another connection holds
// a lock it needs (SQLite does not call the busy handler for every such
// case, e.g. a journal-mode change), for at most 10 s.
template <class F>
auto retry_while_locked(Store::Impl& impl, F attempt) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (int wait_ms = 1;; wait_ms = std::min(2 * wait_ms, 100)) {
        try {
            return attempt();
        } catch (const StoreError&) {
            const int code = sqlite3_errcode(impl.db.get()) & 0xff;
            if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || Clock::now() > deadline) throw;
            sqlite3_exec(impl.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);  // if a read was open
            std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
        }
    }
}

// How a connection opens the file: to write; to read beside writers (WAL's
// reader still needs the -shm file, made by whoever opens first); or, when
// no writer has the file open and this user cannot make that file, as an
// immutable file (SQLite then takes no locks and reads no -shm).
enum class Access { read_write, read_only, immutable };

// Whether this user may write the store: the file, and the folder where WAL
// mode makes its -wal and -shm files.
bool may_write(const std::string& path) {
    const std::filesystem::path p = std::filesystem::absolute(path);
    return ::access(path.c_str(), W_OK) == 0 && ::access(p.parent_path().c_str(), W_OK) == 0;
}

// A file: URI for `path` (absolute, reserved bytes percent-encoded).
std::string file_uri(const std::string& path, Access access) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string uri = "file:";
    for (unsigned char c : std::filesystem::absolute(path).string()) {
        if (std::isalnum(c) || c == '/' || c == '-' || c == '.' || c == '_' || c == '~') {
            uri += static_cast<char>(c);
        } else {
            uri += '%';
            uri += kHex[c >> 4];
            uri += kHex[c & 15];
        }
    }
    return uri + (access == Access::immutable ? "?immutable=1" : "?mode=ro");
}

std::unique_ptr<Store::Impl> connect(const std::string& path, Access access = Access::read_write) {
    auto impl = std::make_unique<Store::Impl>();
    impl->path = path;
    impl->read_only = access != Access::read_write;
    impl->immutable = access == Access::immutable;
    sqlite3* raw = nullptr;
    const int rc =
        impl->read_only
            ? sqlite3_open_v2(file_uri(path, access).c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr)
            : sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    impl->db.reset(raw);
    if (rc != SQLITE_OK) impl->fail("cannot open");
    sqlite3_extended_result_codes(raw, 1);
    sqlite3_busy_timeout(raw, 10000);
    return impl;
}

struct Header {
    int version = 0, app_id = 0, objects = 0;
};

// The three facts in one read transaction: read one by one, they could
// straddle another process's schema creation (no version yet, tables already).
Header read_header(Store::Impl& impl) {
    return retry_while_locked(impl, [&] {
        Transaction tx(impl, false);
        Header h;
        h.version = pragma_int(impl, "PRAGMA user_version");
        h.app_id = pragma_int(impl, "PRAGMA application_id");
        h.objects = pragma_int(impl, "SELECT COUNT(*) FROM sqlite_master");
        tx.commit();
        return h;
    });
}

// WAL lets readers go on beside the writer. The mode is stored in the file:
// switching a file that is already WAL would only contend for its lock.
void use_wal(Store::Impl& impl) {
    const auto mode = [&](const char* sql) {
        Query q(impl, sql);
        return q.row() ? q.text(0) : std::string();
    };
    if (retry_while_locked(impl, [&] { return mode("PRAGMA journal_mode"); }) == "wal") return;
    if (retry_while_locked(impl, [&] { return mode("PRAGMA journal_mode=WAL"); }) != "wal")
        impl.fail("cannot switch to WAL journal mode");
}

// Brings the file from `version` to the newest schema, one migration per
// transaction; another process may migrate at the same time.
void migrate(Store::Impl& impl, int version) {
    for (const Migration& m : migrations()) {
        if (m.version <= version) continue;
        Transaction tx(impl, true);
        const int now = pragma_int(impl, "PRAGMA user_version");
        if (now >= m.version) {
            version = now;
            continue;
        }
        impl.exec(m.sql);
        impl.exec(("PRAGMA user_version = " + std::to_string(m.version)).c_str());
        tx.commit();
        version = m.version;
    }
    impl.cache.clear();  // statements prepared against the old schema
}

// What a writer killed while building a new store (create_whole) left: a
// "<name>.new.<pid>.<n>" file and its -wal / -shm, whose process is gone. A
// live process's file is its work in progress and stays.
void remove_abandoned_new_files(const std::string& path) {
    namespace fs = std::filesystem;
    const fs::path target(path);
    const std::string prefix = target.filename().string() + ".new.";
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(folder, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) != 0) continue;
        const std::string rest = name.substr(prefix.size());  // "<pid>.<n>[-wal|-shm|-journal]"
        const size_t dot = rest.find('.');
        if (dot == 0 || dot == std::string::npos || rest.find_first_not_of("0123456789") != dot) continue;
        const long pid = std::strtol(rest.substr(0, dot).c_str(), nullptr, 10);
        if (pid <= 0 || (::kill((pid_t)pid, 0) != 0 && errno == ESRCH)) fs::remove(e.path(), ec);
    }
}

// A new run store appears whole: built under a temporary name beside `path`
// and linked into place only if nothing is there yet, so no other process
// ever opens it half made. False when another process got there first or
// the file system cannot link (the caller then opens the file in place).
bool create_whole(const std::string& path) {
    static std::atomic<int> counter{0};
    const std::string tmp = path + ".new." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    const auto remove_tmp = [&] {
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((tmp + suffix).c_str());
    };
    try {
        auto impl = connect(tmp);
        use_wal(*impl);
        migrate(*impl, 0);
    } catch (...) {
        remove_tmp();
        throw;
    }
    const bool linked = ::link(tmp.c_str(), path.c_str()) == 0;
    remove_tmp();
    return linked;
}

// The doubt about the file itself, added only where SQLite doubts it: a full
// disk or a file-size limit says nothing about what the file is.
std::string with_doubt(const std::string& message) {
    const bool foreign = message.find(sqlite3_errstr(SQLITE_NOTADB)) != std::string::npos ||
                         message.find(sqlite3_errstr(SQLITE_CORRUPT)) != std::string::npos;
    return foreign ? message + " (is it a Mismatch Lab run store?)" : message;
}

}  // namespace

Store Store::open(const std::string& path, Intent intent) {
    const bool memory = in_memory(path);
    std::unique_ptr<store_detail::ConnectionMark> mark;
    if (!memory) {
        std::error_code ec;
        if (intent == Intent::write) remove_abandoned_new_files(path);
        if (!std::filesystem::exists(path, ec) && !ec) {
            if (intent == Intent::read) throw StoreError("run store " + path + ": no such file");
            create_whole(path);
        }
        // A file this process already has open passed the check then.
        mark = std::make_unique<store_detail::ConnectionMark>(path, [&] { check_header(path); });
    }
    const bool read_only = !memory && !may_write(path);
    auto impl = connect(path, read_only ? Access::read_only : Access::read_write);

    // Read-only checks first: a refused file is never written to.
    Header h;
    try {
        h = read_header(*impl);
    } catch (const StoreError& e) {
        if (!read_only) throw StoreError(with_doubt(e.what()));
        if (wal_file_exists(path))
            throw StoreError(std::string(e.what()) + " (another process writes this file and this user may not " +
                             "write its folder, where SQLite keeps what readers share: read a copy)");
        // Nobody writes it (a writer would have made the -wal file) and this
        // user cannot make the -shm file WAL's readers share: read it as it
        // stands.
        impl = connect(path, Access::immutable);
        try {
            h = read_header(*impl);
        } catch (const StoreError& again) {
            throw StoreError(with_doubt(again.what()));
        }
    }
    impl->mark = std::move(mark);
    if (h.version > schema_version())
        throw StoreError("run store " + path + ": schema version " + std::to_string(h.version) +
                         " is newer than this build of Mismatch Lab understands (" + std::to_string(schema_version()) +
                         "); file left unchanged");
    if ((h.version > 0 && h.app_id != kApplicationId) || (h.version == 0 && h.objects > 0))
        throw StoreError("run store " + path +
                         ": a SQLite database but not a Mismatch Lab run store; file left unchanged");

    // An empty file (no schema yet: made by `touch`, or a store a writer has
    // not yet created) holds no runs; reading it writes nothing into it.
    if (intent == Intent::read && h.version == 0 && h.objects == 0) {
        auto empty = connect(":memory:");
        migrate(*empty, 0);
        empty->exec("PRAGMA query_only = 1");
        empty->read_only = true;
        return Store(std::move(empty), std::filesystem::absolute(path).lexically_normal().string());
    }
    if (read_only) {
        if (h.version < schema_version())
            throw StoreError("run store " + path + ": schema version " + std::to_string(h.version) +
                             ", older than this build's (" + std::to_string(schema_version()) +
                             "); bringing it up to date writes to it, and this user may not write the file or its "
                             "folder; file left unchanged");
        return Store(std::move(impl), std::filesystem::absolute(path).lexically_normal().string());
    }
    if (!memory) use_wal(*impl);
    impl->exec("PRAGMA synchronous=NORMAL");
    migrate(*impl, h.version);
    return Store(std::move(impl), memory ? path : std::filesystem::absolute(path).lexically_normal().string());
}

}  // namespace mlk
