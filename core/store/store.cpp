#include "core/store/store.h"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <set>
#include <unordered_map>

#ifndef MLK_VERSION
#define MLK_VERSION "unknown"
#endif

namespace mlk {

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
  status TEXT NOT NULL,             -- running|paused|finished|failed|stopped
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

static_assert(Store::kApplicationId == 1296845617, "kSchemaV1 spells the application id out");

const std::vector<Migration>& migrations() {
    static const std::vector<Migration> m = {
        {1, kSchemaV1},
        {2, kSchemaV2},
    };
    return m;
}

// Tables keyed by (run_id, step, ...) that belong to a step.
constexpr const char* kStepTables[] = {"metrics", "token_samples", "ft_curves", "router_hist", "text_samples", "steps"};

std::string now_iso() {
    using namespace std::chrono;
    const int64_t ms = duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm t{};
    gmtime_r(&secs, &t);
    char buf[80];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                  t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

// now_iso()'s format back to seconds since the epoch; NaN for '' or anything else.
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

struct DbClose {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalize {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using DbPtr = std::unique_ptr<sqlite3, DbClose>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalize>;

}  // namespace

// ------------------------------------------------------------ connection ---

struct Store::Impl {
    std::string path;
    DbPtr db;  // declared before the cache: statements are finalised first
    std::unordered_map<std::string, StmtPtr> cache;
    std::mutex mu;

    [[noreturn]] void fail(const std::string& what) const {
        throw StoreError("run store " + path + ": " + what + ": " + (db ? sqlite3_errmsg(db.get()) : "no connection"));
    }

    void exec(const char* sql) {
        char* err = nullptr;
        if (sqlite3_exec(db.get(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
            std::string msg = err ? err : sqlite3_errmsg(db.get());
            sqlite3_free(err);
            throw StoreError("run store " + path + ": " + msg);
        }
    }

    sqlite3_stmt* prepare(const char* sql) {
        auto it = cache.find(sql);
        if (it != cache.end()) return it->second.get();
        sqlite3_stmt* s = nullptr;
        if (sqlite3_prepare_v3(db.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK)
            fail(std::string("cannot prepare \"") + sql + "\"");
        cache.emplace(sql, StmtPtr(s));
        return s;
    }
};

namespace {

// A cached statement borrowed for one use; reset and unbound on scope exit.
class Query {
public:
    Query(Store::Impl& impl, const char* sql) : impl_(impl), s_(impl.prepare(sql)) {}
    ~Query() {
        sqlite3_reset(s_);
        sqlite3_clear_bindings(s_);
    }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;

    Query& bind(int i, int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
    Query& bind(int i, int32_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
    Query& bind(int i, double v) {
        return check(std::isnan(v) ? sqlite3_bind_null(s_, i) : sqlite3_bind_double(s_, i, v));
    }
    Query& bind(int i, const std::string& v) {
        return check(sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    }
    Query& bind(int i, const char* v) { return bind(i, std::string(v)); }

    // True while a row is available.
    bool row() {
        const int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW) return true;
        if (rc == SQLITE_DONE) return false;
        impl_.fail(std::string("\"") + sqlite3_sql(s_) + "\" failed");
    }
    void run() {
        while (row()) {
        }
    }

    int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
    double real(int c) const {
        if (sqlite3_column_type(s_, c) == SQLITE_NULL) return std::numeric_limits<double>::quiet_NaN();
        return sqlite3_column_double(s_, c);
    }
    bool is_null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
    std::string text(int c) const {
        const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
        return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, c))) : std::string();
    }

private:
    Query& check(int rc) {
        if (rc != SQLITE_OK) impl_.fail("cannot bind a parameter");
        return *this;
    }
    Store::Impl& impl_;
    sqlite3_stmt* s_;
};

// BEGIN IMMEDIATE (write) or BEGIN (read snapshot); rolls back unless committed.
class Transaction {
public:
    Transaction(Store::Impl& impl, bool write) : impl_(impl) { impl_.exec(write ? "BEGIN IMMEDIATE" : "BEGIN"); }
    ~Transaction() {
        if (!done_) sqlite3_exec(impl_.db.get(), "ROLLBACK", nullptr, nullptr, nullptr);
    }
    void commit() {
        impl_.exec("COMMIT");
        done_ = true;
    }

private:
    Store::Impl& impl_;
    bool done_ = false;
};

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

void touch_run(Store::Impl& impl, int64_t run_id) {
    Query q(impl, "UPDATE runs SET updated = ? WHERE id = ?");
    q.bind(1, now_iso()).bind(2, run_id).run();
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

// -------------------------------------------------------------- statuses ---

const char* run_status_name(RunStatus s) {
    switch (s) {
        case RunStatus::running: return "running";
        case RunStatus::paused: return "paused";
        case RunStatus::finished: return "finished";
        case RunStatus::failed: return "failed";
        case RunStatus::stopped: return "stopped";
    }
    return "unknown";
}

RunStatus parse_run_status(const std::string& s) {
    for (RunStatus r :
         {RunStatus::running, RunStatus::paused, RunStatus::finished, RunStatus::failed, RunStatus::stopped})
        if (s == run_status_name(r)) return r;
    throw StoreError("unknown run status '" + s + "' (allowed: running, paused, finished, failed, stopped)");
}

// ------------------------------------------------------------------ open ---

int Store::schema_version() { return migrations().back().version; }

Store::Store(std::unique_ptr<Impl> impl, std::string path) : impl_(std::move(impl)), path_(std::move(path)) {}
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
Store::~Store() = default;

Store Store::open(const std::string& path) {
    const bool memory = path.empty() || path == ":memory:";
    if (!memory) check_header(path);

    auto impl = std::make_unique<Impl>();
    impl->path = path;
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    impl->db.reset(raw);
    if (rc != SQLITE_OK) impl->fail("cannot open");
    sqlite3_extended_result_codes(raw, 1);
    sqlite3_busy_timeout(raw, 10000);

    // Read-only checks first: a refused file is never written to.
    int version = 0, app_id = 0, objects = 0;
    try {
        version = pragma_int(*impl, "PRAGMA user_version");
        app_id = pragma_int(*impl, "PRAGMA application_id");
        objects = pragma_int(*impl, "SELECT COUNT(*) FROM sqlite_master");
    } catch (const StoreError& e) {
        throw StoreError(std::string(e.what()) + " (is it a Mismatch Lab run store?)");
    }
    if (version > schema_version())
        throw StoreError("run store " + path + ": schema version " + std::to_string(version) +
                         " is newer than this build of Mismatch Lab understands (" + std::to_string(schema_version()) +
                         "); file left unchanged");
    if ((version > 0 && app_id != kApplicationId) || (version == 0 && objects > 0))
        throw StoreError("run store " + path +
                         ": a SQLite database but not a Mismatch Lab run store; file left unchanged");

    if (!memory) {
        Query q(*impl, "PRAGMA journal_mode=WAL");
        if (!q.row() || q.text(0) != "wal") impl->fail("cannot switch to WAL journal mode");
    }
    impl->exec("PRAGMA synchronous=NORMAL");

    for (const Migration& m : migrations()) {
        if (m.version <= version) continue;
        Transaction tx(*impl, true);
        // Another process may have migrated between our read and our lock.
        const int now = pragma_int(*impl, "PRAGMA user_version");
        if (now >= m.version) {
            version = now;
            continue;
        }
        impl->exec(m.sql);
        impl->exec(("PRAGMA user_version = " + std::to_string(m.version)).c_str());
        tx.commit();
        version = m.version;
    }
    impl->cache.clear();  // statements prepared against the old schema
    return Store(std::move(impl), path);
}

// ------------------------------------------------------------------ runs ---

int64_t Store::create_run(const std::string& name, const std::string& preset, const std::string& config_json,
                          uint64_t seed, RunStatus status) {
    std::lock_guard lock(impl_->mu);
    const std::string now = now_iso();
    Query q(*impl_,
            "INSERT INTO runs(name, created, status, preset, config_json, seed, app_version, notes, updated) "
            "VALUES(?, ?, ?, ?, ?, ?, ?, '', ?)");
    q.bind(1, name)
        .bind(2, now)
        .bind(3, run_status_name(status))
        .bind(4, preset)
        .bind(5, config_json)
        .bind(6, static_cast<int64_t>(seed))
        .bind(7, MLK_VERSION)
        .bind(8, now)
        .run();
    return sqlite3_last_insert_rowid(impl_->db.get());
}

namespace {
void update_run_field(Store::Impl& impl, const char* sql, int64_t run_id, const std::string& value) {
    Transaction tx(impl, true);
    require_run(impl, run_id);
    Query q(impl, sql);
    q.bind(1, value).bind(2, now_iso()).bind(3, run_id).run();
    tx.commit();
}
}  // namespace

void Store::set_status(int64_t run_id, RunStatus status) {
    std::lock_guard lock(impl_->mu);
    update_run_field(*impl_, "UPDATE runs SET status = ?, updated = ? WHERE id = ?", run_id, run_status_name(status));
}

void Store::rename_run(int64_t run_id, const std::string& name) {
    std::lock_guard lock(impl_->mu);
    update_run_field(*impl_, "UPDATE runs SET name = ?, updated = ? WHERE id = ?", run_id, name);
}

void Store::set_notes(int64_t run_id, const std::string& notes) {
    std::lock_guard lock(impl_->mu);
    update_run_field(*impl_, "UPDATE runs SET notes = ?, updated = ? WHERE id = ?", run_id, notes);
}

void Store::delete_run(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Transaction tx(*impl_, true);
    for (const char* table : kStepTables) {
        const std::string sql = std::string("DELETE FROM ") + table + " WHERE run_id = ?";
        Query q(*impl_, sql.c_str());
        q.bind(1, run_id).run();
    }
    {
        Query q(*impl_, "DELETE FROM checkpoints WHERE run_id = ?");
        q.bind(1, run_id).run();
    }
    {
        Query q(*impl_, "DELETE FROM runs WHERE id = ?");
        q.bind(1, run_id).run();
    }
    tx.commit();
}

std::vector<RunSummary> Store::list_runs() {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_,
            "SELECT r.id, r.name, r.preset, r.status, r.created, r.updated, "
            "(SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id) FROM runs r ORDER BY r.id DESC");
    std::vector<RunSummary> out;
    while (q.row()) {
        RunSummary r;
        r.id = q.i64(0);
        r.name = q.text(1);
        r.preset = q.text(2);
        r.status = q.text(3);
        r.created = q.text(4);
        r.updated = q.text(5);
        r.steps = q.i64(6);
        out.push_back(std::move(r));
    }
    return out;
}

std::optional<RunInfo> Store::run_info(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_,
            "SELECT r.id, r.name, r.created, r.status, r.preset, r.config_json, r.seed, r.app_version, "
            "r.notes, r.updated, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id), "
            "(SELECT MAX(step) FROM steps s WHERE s.run_id = r.id) FROM runs r WHERE r.id = ?");
    q.bind(1, run_id);
    if (!q.row()) return std::nullopt;
    RunInfo r;
    r.id = q.i64(0);
    r.name = q.text(1);
    r.created = q.text(2);
    r.status = q.text(3);
    r.preset = q.text(4);
    r.config_json = q.text(5);
    r.seed = static_cast<uint64_t>(q.i64(6));
    r.app_version = q.text(7);
    r.notes = q.text(8);
    r.updated = q.text(9);
    r.steps = q.i64(10);
    if (!q.is_null(11)) r.last_step = q.i64(11);
    return r;
}

// ----------------------------------------------------------------- steps ---

void Store::append_step(int64_t run_id, const StepRecord& rec) {
    std::lock_guard lock(impl_->mu);
    Impl& im = *impl_;
    Transaction tx(im, true);
    require_run(im, run_id);
    for (const char* table : kStepTables) {
        const std::string sql = std::string("DELETE FROM ") + table + " WHERE run_id = ? AND step = ?";
        Query q(im, sql.c_str());
        q.bind(1, run_id).bind(2, rec.step).run();
    }
    const std::string now = now_iso();
    {
        Query q(im, "INSERT INTO steps(run_id, step, time) VALUES(?, ?, ?)");
        q.bind(1, run_id).bind(2, rec.step).bind(3, now).run();
    }
    for (const auto& [name, value] : rec.metrics) {
        Query q(im, "INSERT INTO metrics(run_id, step, name, value) VALUES(?, ?, ?, ?)");
        q.bind(1, run_id).bind(2, rec.step).bind(3, name).bind(4, value);
        try {
            q.run();
        } catch (const StoreError& e) {
            throw StoreError(std::string(e.what()) + " (metric '" + name + "' twice in step " +
                             std::to_string(rec.step) + "?)");
        }
    }
    {
        const size_t n = rec.token_samples.size();
        const size_t keep = std::min(n, kMaxTokenSamples);
        for (size_t k = 0; k < keep; ++k) {
            const TokenSample& t = rec.token_samples[n <= kMaxTokenSamples ? k : k * n / keep];
            Query q(im,
                    "INSERT INTO token_samples(run_id, step, idx, lp_roll, lp_train, seq, pos, token) "
                    "VALUES(?, ?, ?, ?, ?, ?, ?, ?)");
            q.bind(1, run_id)
                .bind(2, rec.step)
                .bind(3, t.idx)
                .bind(4, t.lp_roll)
                .bind(5, t.lp_train)
                .bind(6, t.seq)
                .bind(7, t.pos)
                .bind(8, t.token)
                .run();
        }
    }
    for (const FtPoint& p : rec.ft_curve) {
        Query q(im, "INSERT INTO ft_curves(run_id, step, t, frac) VALUES(?, ?, ?, ?)");
        q.bind(1, run_id).bind(2, rec.step).bind(3, p.t).bind(4, p.frac).run();
    }
    for (const RouterBin& b : rec.router_hist) {
        Query q(im, "INSERT INTO router_hist(run_id, step, d, count) VALUES(?, ?, ?, ?)");
        q.bind(1, run_id).bind(2, rec.step).bind(3, b.d).bind(4, b.count).run();
    }
    for (const TextSample& t : rec.text_samples) {
        Query q(im,
                "INSERT INTO text_samples(run_id, step, idx, prompt, response, reward, tokens_json) "
                "VALUES(?, ?, ?, ?, ?, ?, ?)");
        q.bind(1, run_id)
            .bind(2, rec.step)
            .bind(3, t.idx)
            .bind(4, t.prompt)
            .bind(5, t.response)
            .bind(6, t.reward)
            .bind(7, t.tokens_json)
            .run();
    }
    {
        Query q(im, "UPDATE runs SET updated = ? WHERE id = ?");
        q.bind(1, now).bind(2, run_id).run();
    }
    tx.commit();
}

std::optional<int64_t> Store::last_step(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT MAX(step) FROM steps WHERE run_id = ?");
    q.bind(1, run_id);
    if (!q.row() || q.is_null(0)) return std::nullopt;
    return q.i64(0);
}

std::vector<int64_t> Store::steps(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT step FROM steps WHERE run_id = ? ORDER BY step");
    q.bind(1, run_id);
    std::vector<int64_t> out;
    while (q.row()) out.push_back(q.i64(0));
    return out;
}

std::vector<std::string> Store::metric_names(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT DISTINCT name FROM metrics WHERE run_id = ? ORDER BY name");
    q.bind(1, run_id);
    std::vector<std::string> out;
    while (q.row()) out.push_back(q.text(0));
    return out;
}

std::vector<std::pair<int64_t, double>> Store::metric_series(int64_t run_id, const std::string& name) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT step, value FROM metrics WHERE run_id = ? AND name = ? ORDER BY step");
    q.bind(1, run_id).bind(2, name);
    std::vector<std::pair<int64_t, double>> out;
    while (q.row()) out.emplace_back(q.i64(0), q.real(1));
    return out;
}

std::vector<StoredStep> Store::steps_since(int64_t run_id, int64_t after_step) {
    std::lock_guard lock(impl_->mu);
    // One statement = one snapshot: a step committed meanwhile is either
    // entirely in the result or entirely absent.
    Query q(*impl_,
            "SELECT m.step, m.name, m.value, s.time FROM metrics m "
            "LEFT JOIN steps s ON s.run_id = m.run_id AND s.step = m.step "
            "WHERE m.run_id = ? AND m.step > ? ORDER BY m.step, m.name");
    q.bind(1, run_id).bind(2, after_step);
    std::vector<StoredStep> out;
    while (q.row()) {
        const int64_t step = q.i64(0);
        if (out.empty() || out.back().step != step)
            out.push_back(StoredStep{
                step, {}, q.is_null(3) ? std::numeric_limits<double>::quiet_NaN() : seconds_from_iso(q.text(3))});
        out.back().metrics.emplace_back(q.text(1), q.real(2));
    }
    return out;
}

MetricTable Store::all_metrics(int64_t run_id) {
    const auto rows = steps_since(run_id, std::numeric_limits<int64_t>::min());
    MetricTable t;
    std::set<std::string> names;
    for (const auto& r : rows)
        for (const auto& m : r.metrics) names.insert(m.first);
    t.names.assign(names.begin(), names.end());
    std::unordered_map<std::string, size_t> col;
    for (size_t i = 0; i < t.names.size(); ++i) col[t.names[i]] = i;
    for (const auto& r : rows) {
        t.steps.push_back(r.step);
        std::vector<double> v(t.names.size(), std::numeric_limits<double>::quiet_NaN());
        for (const auto& m : r.metrics) v[col[m.first]] = m.second;
        t.values.push_back(std::move(v));
    }
    return t;
}

void Store::truncate_after(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Transaction tx(*impl_, true);
    require_run(*impl_, run_id);
    for (const char* table : kStepTables) {
        const std::string sql = std::string("DELETE FROM ") + table + " WHERE run_id = ? AND step > ?";
        Query q(*impl_, sql.c_str());
        q.bind(1, run_id).bind(2, step).run();
    }
    {
        Query q(*impl_, "DELETE FROM checkpoints WHERE run_id = ? AND step > ?");
        q.bind(1, run_id).bind(2, step).run();
    }
    touch_run(*impl_, run_id);
    tx.commit();
}

// ------------------------------------------------------------ drill-down ---

std::vector<TokenSample> Store::token_samples(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_,
            "SELECT idx, lp_roll, lp_train, seq, pos, token FROM token_samples "
            "WHERE run_id = ? AND step = ? ORDER BY idx");
    q.bind(1, run_id).bind(2, step);
    std::vector<TokenSample> out;
    while (q.row())
        out.push_back(TokenSample{static_cast<int32_t>(q.i64(0)), q.real(1), q.real(2), static_cast<int32_t>(q.i64(3)),
                                  static_cast<int32_t>(q.i64(4)), static_cast<int32_t>(q.i64(5))});
    return out;
}

std::vector<FtPoint> Store::ft_curve(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT t, frac FROM ft_curves WHERE run_id = ? AND step = ? ORDER BY t");
    q.bind(1, run_id).bind(2, step);
    std::vector<FtPoint> out;
    while (q.row()) out.push_back(FtPoint{q.real(0), q.real(1)});
    return out;
}

std::vector<RouterBin> Store::router_hist(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT d, count FROM router_hist WHERE run_id = ? AND step = ? ORDER BY d");
    q.bind(1, run_id).bind(2, step);
    std::vector<RouterBin> out;
    while (q.row()) out.push_back(RouterBin{static_cast<int32_t>(q.i64(0)), q.i64(1)});
    return out;
}

std::vector<TextSample> Store::text_samples(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_,
            "SELECT idx, prompt, response, reward, tokens_json FROM text_samples "
            "WHERE run_id = ? AND step = ? ORDER BY idx");
    q.bind(1, run_id).bind(2, step);
    std::vector<TextSample> out;
    while (q.row())
        out.push_back(TextSample{static_cast<int32_t>(q.i64(0)), q.text(1), q.text(2), q.real(3), q.text(4)});
    return out;
}

// ----------------------------------------------------------- checkpoints ---

void Store::add_checkpoint(int64_t run_id, int64_t step, const std::string& path) {
    std::lock_guard lock(impl_->mu);
    Transaction tx(*impl_, true);
    require_run(*impl_, run_id);
    Query q(*impl_, "INSERT OR REPLACE INTO checkpoints(run_id, step, path, created) VALUES(?, ?, ?, ?)");
    q.bind(1, run_id).bind(2, step).bind(3, path).bind(4, now_iso()).run();
    touch_run(*impl_, run_id);
    tx.commit();
}

std::optional<Checkpoint> Store::last_checkpoint(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT step, path, created FROM checkpoints WHERE run_id = ? ORDER BY step DESC LIMIT 1");
    q.bind(1, run_id);
    if (!q.row()) return std::nullopt;
    return Checkpoint{q.i64(0), q.text(1), q.text(2)};
}

std::vector<Checkpoint> Store::checkpoints(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT step, path, created FROM checkpoints WHERE run_id = ? ORDER BY step");
    q.bind(1, run_id);
    std::vector<Checkpoint> out;
    while (q.row()) out.push_back(Checkpoint{q.i64(0), q.text(1), q.text(2)});
    return out;
}

}  // namespace mlk
