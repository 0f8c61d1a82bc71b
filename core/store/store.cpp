// The run store's queries (store.h): runs, steps, drill-down samples and
// checkpoints. Opening and migrations: store_open.cpp.
#include "core/store/store.h"

#include <filesystem>
#include <set>

#include "core/store/run_lock.h"
#include "core/store/store_db.h"

#ifndef MLK_VERSION
#define MLK_VERSION "unknown"
#endif

namespace mlk {

using namespace store_detail;

// ------------------------------------------------------------------ runs ---

int64_t Store::create_run(const std::string& name, const std::string& preset, const std::string& config_json,
                          uint64_t seed, RunStatus status, const std::optional<SweepRun>& sweep_slot,
                          const std::string& machine) {
    std::lock_guard lock(impl_->mu);
    Transaction tx(*impl_, true);
    const std::string now = now_iso();
    {
        Query q(*impl_,
                "INSERT INTO runs(name, created, status, preset, config_json, seed, app_version, notes, updated, "
                "machine) VALUES(?, ?, ?, ?, ?, ?, ?, '', ?, ?)");
        q.bind(1, name)
            .bind(2, now)
            .bind(3, run_status_name(status))
            .bind(4, preset)
            .bind(5, config_json)
            .bind(6, static_cast<int64_t>(seed))
            .bind(7, MLK_VERSION)
            .bind(8, now)
            .bind(9, machine)
            .run();
    }
    const int64_t id = sqlite3_last_insert_rowid(impl_->db.get());
    if (sweep_slot) {
        SweepRun link = *sweep_slot;
        link.run_id = id;
        insert_sweep_run(*impl_, link);
    }
    tx.commit();
    return id;
}

namespace {
// A run stored as running or paused whose writer holds no lock any more was
// interrupted (killed, crashed): readers are told so. (In-memory stores have
// one process, which is the writer.)
std::string reader_status(const std::string& db_path, int64_t run_id, const std::string& stored) {
    if (!run_status_live(stored) || in_memory(db_path) || run_writer_alive(db_path, run_id)) return stored;
    return kInterruptedStatus;
}

void update_run_field(Store::Impl& impl, const char* sql, int64_t run_id, const std::string& value) {
    Transaction tx(impl, true);
    require_run(impl, run_id);
    Query q(impl, sql);
    q.bind(1, value).bind(2, now_iso()).bind(3, run_id).run();
    tx.commit();
}
}  // namespace

void Store::set_status(int64_t run_id, RunStatus status, const std::string& error) {
    std::lock_guard lock(impl_->mu);
    const auto write = [&] {
        Transaction tx(*impl_, true);
        require_run(*impl_, run_id);
        Query q(*impl_, "UPDATE runs SET status = ?, error = ?, updated = ? WHERE id = ?");
        q.bind(1, run_status_name(status)).bind(2, error).bind(3, now_iso()).bind(4, run_id).run();
        tx.commit();
    };
    try {
        write();
    } catch (const StoreError&) {
        // The status that says why a run ended matters most when the disk is
        // full: move the write-ahead log into the database, which frees its
        // space, and try once more.
        if (in_memory(path_)) throw;
        try {
            impl_->exec("PRAGMA wal_checkpoint(TRUNCATE)");
        } catch (const StoreError&) {
        }
        write();
    }
}

bool Store::read_only() const { return impl_->read_only; }

int64_t Store::data_version() {
    std::lock_guard lock(impl_->mu);
    // A file read as immutable (open(): nobody wrote it then) shows no
    // writer's commits, and a writer's checkpoint could change pages under
    // it: once a writer has made the -wal file, this connection is done.
    if (impl_->immutable && store_detail::wal_file_exists(impl_->path))
        throw StoreError("run store " + impl_->path +
                         ": another process has started writing it; open it again to follow its writes");
    return pragma_int(*impl_, "PRAGMA data_version");
}

void Store::rename_run(int64_t run_id, const std::string& name) {
    std::lock_guard lock(impl_->mu);
    update_run_field(*impl_, "UPDATE runs SET name = ?, updated = ? WHERE id = ?", run_id, name);
}

void Store::set_notes(int64_t run_id, const std::string& notes) {
    std::lock_guard lock(impl_->mu);
    update_run_field(*impl_, "UPDATE runs SET notes = ?, updated = ? WHERE id = ?", run_id, notes);
}

void Store::set_machine(int64_t run_id, const std::string& machine) {
    std::lock_guard lock(impl_->mu);
    update_run_field(*impl_, "UPDATE runs SET machine = ?, updated = ? WHERE id = ?", run_id, machine);
}

void Store::delete_run(int64_t run_id) {
    // A run some process is writing is refused: its writer's next step would
    // fail on a run that is gone. Holding the run's lock while its rows go
    // keeps a `resume` from starting meanwhile; its checkpoint folder then
    // goes too (a base policy in the shared cache is not the run's and stays).
    std::optional<RunWriterLock> writer;
    if (!in_memory(path_) && !impl_->read_only && run_info(run_id)) {
        const std::string refused = "run store " + path_ + ": run " + std::to_string(run_id) + " cannot be deleted: ";
        // The probe answers at once; acquire() waits a moment for readers' probes.
        if (run_writer_alive(path_, run_id)) throw StoreError(refused + "it is being written; stop it first");
        try {
            writer.emplace(RunWriterLock::acquire(path_, run_id));
        } catch (const std::runtime_error& e) {
            throw StoreError(refused + e.what());
        }
    }
    delete_rows(run_id);
    if (writer) {
        std::error_code ec;
        std::filesystem::remove_all(run_checkpoint_root(path_, run_id), ec);
    }
}

void Store::delete_rows(int64_t run_id) {
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
        Query q(*impl_, "DELETE FROM sweep_runs WHERE run_id = ?");
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
        r.status = reader_status(path_, r.id, r.status);
        out.push_back(std::move(r));
    }
    return out;
}

std::optional<RunInfo> Store::run_info(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_,
            "SELECT r.id, r.name, r.created, r.status, r.preset, r.config_json, r.seed, r.app_version, "
            "r.notes, r.updated, (SELECT COUNT(*) FROM steps s WHERE s.run_id = r.id), "
            "(SELECT MAX(step) FROM steps s WHERE s.run_id = r.id), r.error, r.machine FROM runs r WHERE r.id = ?");
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
    r.error = q.text(12);
    r.machine = q.text(13);
    r.status = reader_status(path_, r.id, r.status);
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
    if (!rec.worst_tokens_json.empty()) {
        Query q(im, "INSERT INTO worst_tokens(run_id, step, json) VALUES(?, ?, ?)");
        q.bind(1, run_id).bind(2, rec.step).bind(3, rec.worst_tokens_json).run();
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

std::vector<std::pair<std::string, double>> Store::step_metrics(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT name, value FROM metrics WHERE run_id = ? AND step = ? ORDER BY name");
    q.bind(1, run_id).bind(2, step);
    std::vector<std::pair<std::string, double>> out;
    while (q.row()) out.emplace_back(q.text(0), q.real(1));
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
        t.times.push_back(r.time);
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

std::string Store::worst_tokens(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT json FROM worst_tokens WHERE run_id = ? AND step = ?");
    q.bind(1, run_id).bind(2, step);
    return q.row() ? q.text(0) : std::string();
}

// ----------------------------------------------------------- checkpoints ---

namespace {
namespace fs = std::filesystem;
// A checkpoint below the database's folder is stored relative to it.
std::string stored_checkpoint_path(const std::string& db_path, const std::string& path) {
    if (in_memory(db_path)) return path;
    const fs::path folder = fs::path(db_path).parent_path();
    const fs::path abs = fs::absolute(path).lexically_normal();
    const fs::path rel = abs.lexically_relative(folder);
    if (rel.empty() || *rel.begin() == "..") return abs.string();
    return rel.string();
}
// Relative paths are relative to the database's folder. A run's checkpoints
// lie in "<db file name>.ckpt/" beside it, and the part from that folder on
// is what counts: files written before paths were stored relative to the
// database held paths relative to the writer's working directory (such as
// "sub/runs.sqlite.ckpt/run-1/step-3" for `--db sub/runs.sqlite`), and a
// database renamed together with its folder (runs.sqlite and
// runs.sqlite.ckpt to b.sqlite and b.sqlite.ckpt) still names the old one.
std::string resolved_checkpoint_path(const std::string& db_path, const std::string& stored) {
    const fs::path p(stored);
    if (p.is_absolute() || in_memory(db_path)) return stored;
    const fs::path folder = fs::path(db_path).parent_path();
    const fs::path own = fs::path(db_path).filename().string() + ".ckpt";
    fs::path below;  // the part below the first "*.ckpt" folder
    bool in_ckpt = false;
    for (const fs::path& part : p) {
        if (in_ckpt) below /= part;
        else in_ckpt = part.extension() == ".ckpt";
    }
    if (!in_ckpt) return (folder / p).lexically_normal().string();
    const fs::path ours = (folder / own / below).lexically_normal();
    std::error_code ec;
    // The old name stays valid while its folder is there and ours is not
    // (the database renamed without its folder).
    const fs::path as_stored = (folder / p).lexically_normal();
    if (!fs::exists(ours, ec) && fs::exists(as_stored, ec)) return as_stored.string();
    return ours.string();
}
}  // namespace

void Store::add_checkpoint(int64_t run_id, int64_t step, const std::string& path) {
    std::lock_guard lock(impl_->mu);
    Transaction tx(*impl_, true);
    require_run(*impl_, run_id);
    Query q(*impl_, "INSERT OR REPLACE INTO checkpoints(run_id, step, path, created) VALUES(?, ?, ?, ?)");
    q.bind(1, run_id).bind(2, step).bind(3, stored_checkpoint_path(path_, path)).bind(4, now_iso()).run();
    touch_run(*impl_, run_id);
    tx.commit();
}

void Store::remove_checkpoint(int64_t run_id, int64_t step) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "DELETE FROM checkpoints WHERE run_id = ? AND step = ?");
    q.bind(1, run_id).bind(2, step).run();
}

std::optional<Checkpoint> Store::last_checkpoint(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT step, path, created FROM checkpoints WHERE run_id = ? ORDER BY step DESC LIMIT 1");
    q.bind(1, run_id);
    if (!q.row()) return std::nullopt;
    return Checkpoint{q.i64(0), resolved_checkpoint_path(path_, q.text(1)), q.text(2)};
}

std::vector<Checkpoint> Store::checkpoints(int64_t run_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT step, path, created FROM checkpoints WHERE run_id = ? ORDER BY step");
    q.bind(1, run_id);
    std::vector<Checkpoint> out;
    while (q.row()) out.push_back(Checkpoint{q.i64(0), resolved_checkpoint_path(path_, q.text(1)), q.text(2)});
    return out;
}

}  // namespace mlk
