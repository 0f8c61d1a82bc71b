// The run store's connection as its source files share it (store.cpp for the
// queries, store_open.cpp for opening and migrating): the sqlite3 handle with
// its statement cache, a borrowed-statement helper and a transaction guard.
// Internal to core/store: store.h is the public face.
#pragma once

#include <sqlite3.h>
#include <sys/resource.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/store/store.h"

namespace mlk {

namespace store_detail {

// A store with no file ("" or ":memory:"): no -wal, no run locks, no
// checkpoint folder beside it.
inline bool in_memory(const std::string& path) { return path.empty() || path == ":memory:"; }

struct DbClose {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalize {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using DbPtr = std::unique_ptr<sqlite3, DbClose>;
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalize>;
}  // namespace store_detail

namespace store_detail {
// This process's connections, counted per file (device and inode). POSIX
// drops every fcntl lock a process holds on a file as soon as it closes any
// descriptor of that file, and SQLite's locks are such locks: reading the
// header through a descriptor of our own while a connection is open would
// let another process believe it is alone, checkpoint and reset the WAL
// under that connection (stale reads, "database disk image is malformed").
class ConnectionMark {
public:
    // Marks `path` (which exists) as open in this process. When no
    // connection of this process has it open yet, `check_first` runs first,
    // under the registry's lock, so no other thread opens the file meanwhile;
    // what it throws leaves no mark.
    ConnectionMark(const std::string& path, const std::function<void()>& check_first);
    ~ConnectionMark();
    ConnectionMark(const ConnectionMark&) = delete;
    ConnectionMark& operator=(const ConnectionMark&) = delete;

private:
    uint64_t dev_ = 0, ino_ = 0;
    bool marked_ = false;
};
}  // namespace store_detail

// ------------------------------------------------------------ connection ---

struct Store::Impl {
    std::string path;
    bool read_only = false;  // opened without write access (Store::open)
    bool immutable = false;  // read as a file nobody writes: no locks, no -shm (Store::open)
    // Before the handle: the mark goes only once the connection is closed.
    std::unique_ptr<store_detail::ConnectionMark> mark;
    store_detail::DbPtr db;  // declared before the cache: statements are finalised first
    std::unordered_map<std::string, store_detail::StmtPtr> cache;
    std::mutex mu;

    // SQLite's message, with the system's reason where an OS call failed:
    // "disk I/O error" alone does not tell a full disk from a bad one.
    std::string reason(const char* sqlite_message) const {
        if (!db) return "no connection";
        std::string msg = sqlite_message ? sqlite_message : sqlite3_errmsg(db.get());
        const int primary = sqlite3_extended_errcode(db.get()) & 0xff;
        const int sys = sqlite3_system_errno(db.get());
        if (sys != 0 && (primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN))
            msg += std::string(" (") + std::strerror(sys) + ")";
        else if (sqlite3_extended_errcode(db.get()) == SQLITE_IOERR_WRITE)
            // A short write sets no errno: the disk filled up or a file-size limit was reached.
            msg += short_write_reason();
        else if (read_only && primary == SQLITE_READONLY)
            msg += " (opened read-only: this user may not write the file or its folder)";
        return msg;
    }

    // Under a file-size limit (ulimit -f) a short write is that limit: say so
    // in the words of its errno, EFBIG.
    static std::string short_write_reason() {
        rlimit r{};
        if (getrlimit(RLIMIT_FSIZE, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
            return " (a write was cut short: " + std::string(std::strerror(EFBIG)) + ": this process may write " +
                   "files of at most " + std::to_string((unsigned long long)r.rlim_cur) + " bytes, `ulimit -f`)";
        return " (a write was cut short: the disk is full)";
    }

    [[noreturn]] void fail(const std::string& what) const {
        throw StoreError("run store " + path + ": " + what + ": " + reason(nullptr));
    }

    void exec(const char* sql) {
        char* err = nullptr;
        if (sqlite3_exec(db.get(), sql, nullptr, nullptr, &err) != SQLITE_OK) {
            std::string msg = reason(err);
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
        cache.emplace(sql, store_detail::StmtPtr(s));
        return s;
    }
};

namespace store_detail {

// Tables keyed by (run_id, step, ...) that belong to a step.
inline constexpr const char* kStepTables[] = {"metrics",      "token_samples", "ft_curves", "router_hist",
                                              "text_samples", "worst_tokens",  "steps"};

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

// Now as ISO-8601 UTC with milliseconds ("2026-01-02T03:04:05.678Z").
std::string now_iso();
// Milliseconds since the epoch in now_iso()'s format.
std::string iso_from_millis(int64_t ms);
// now_iso()'s format back to seconds since the epoch; NaN for '' or anything else.
double seconds_from_iso(const std::string& text);
int pragma_int(Store::Impl& impl, const char* sql);
// Throws StoreError naming the id when no run has it.
void require_run(Store::Impl& impl, int64_t run_id);
void insert_sweep_run(Store::Impl& impl, const SweepRun& r);  // inside the caller's transaction
// Sets the run's `updated` time to now.
void touch_run(Store::Impl& impl, int64_t run_id);
// Whether a writer has the store at `path` open in WAL mode: its -wal file
// exists from the writer's first open to the last connection's close.
bool wal_file_exists(const std::string& path);

}  // namespace store_detail
}  // namespace mlk
