// The store's sweeps: what `mismatch-lab-cli sweep` and the workbench's
// queue need to find a sweep again and tell which of its runs exist, and what
// the run browser groups by.
#include <nlohmann/json.hpp>

#include "core/store/store_db.h"

namespace mlk {

using namespace store_detail;

int64_t Store::open_sweep(const std::string& spec_hash, const std::string& spec_json) {
    std::lock_guard lock(impl_->mu);
    Transaction tx(*impl_, true);
    {
        Query q(*impl_, "INSERT OR IGNORE INTO sweeps(spec_hash, spec_json, created) VALUES(?, ?, ?)");
        q.bind(1, spec_hash).bind(2, spec_json).bind(3, now_iso()).run();
    }
    Query q(*impl_, "SELECT id FROM sweeps WHERE spec_hash = ?");
    q.bind(1, spec_hash);
    if (!q.row()) impl_->fail("the sweep just written is missing");
    const int64_t id = q.i64(0);
    while (q.row()) {
    }
    tx.commit();
    return id;
}

std::optional<int64_t> Store::find_sweep(const std::string& spec_hash) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT id FROM sweeps WHERE spec_hash = ?");
    q.bind(1, spec_hash);
    if (!q.row()) return std::nullopt;
    return q.i64(0);
}

std::optional<std::string> Store::sweep_spec_json(int64_t sweep_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT spec_json FROM sweeps WHERE id = ?");
    q.bind(1, sweep_id);
    if (!q.row()) return std::nullopt;
    return q.text(0);
}

void store_detail::insert_sweep_run(Store::Impl& impl, const SweepRun& r) {
    Query q(impl, "INSERT OR REPLACE INTO sweep_runs(sweep_id, run_id, config_name, seed, tags) VALUES(?, ?, ?, ?, ?)");
    q.bind(1, r.sweep_id).bind(2, r.run_id).bind(3, r.config_name).bind(4, r.seed).bind(5, r.tags).run();
}

void Store::add_sweep_run(const SweepRun& r) {
    std::lock_guard lock(impl_->mu);
    Transaction tx(*impl_, true);
    require_run(*impl_, r.run_id);
    insert_sweep_run(*impl_, r);
    tx.commit();
}

std::vector<SweepRun> Store::sweep_runs(int64_t sweep_id) {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_,
            "SELECT sweep_id, run_id, config_name, seed, tags FROM sweep_runs WHERE sweep_id = ? ORDER BY run_id");
    q.bind(1, sweep_id);
    std::vector<SweepRun> out;
    while (q.row()) out.push_back({q.i64(0), q.i64(1), q.text(2), q.i64(3), q.text(4)});
    return out;
}

std::vector<SweepInfo> Store::list_sweeps() {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT id, spec_hash, spec_json, created FROM sweeps ORDER BY id");
    std::vector<SweepInfo> out;
    while (q.row()) out.push_back({q.i64(0), q.text(1), q.text(2), q.text(3)});
    return out;
}

std::vector<SweepRun> Store::all_sweep_runs() {
    std::lock_guard lock(impl_->mu);
    Query q(*impl_, "SELECT sweep_id, run_id, config_name, seed, tags FROM sweep_runs ORDER BY sweep_id, run_id");
    std::vector<SweepRun> out;
    while (q.row()) out.push_back({q.i64(0), q.i64(1), q.text(2), q.i64(3), q.text(4)});
    return out;
}

bool run_status_live(const std::string& status) {
    return status == run_status_name(RunStatus::running) || status == run_status_name(RunStatus::paused);
}

std::string sweep_run_tags(const std::string& config_name, int64_t seed) {
    return nlohmann::json::array({config_name, "seed=" + std::to_string(seed)}).dump();
}

bool sweep_slot_ended(const std::string& status) {
    return status == run_status_name(RunStatus::finished) || status == run_status_name(RunStatus::diverged);
}

}  // namespace mlk
