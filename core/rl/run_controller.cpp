#include "core/rl/run_controller.h"

#include <cmath>
#include <filesystem>
#include <set>

#include "core/engines/machine.h"
#include "core/metrics/run_stats.h"
#include "core/model/checkpoint.h"

namespace mlk {

namespace {

namespace fs = std::filesystem;

// Removes what a killed or failed writer left in the run's checkpoint folder:
// temporary files of an interrupted write and step folders the store does not
// list (written but never committed, or dropped by a resume). Called with the
// writer lock held, so no live writer's files are touched.
void tidy_checkpoint_folder(Store& store, int64_t run_id, const std::string& root) {
    std::set<fs::path> listed;
    for (const Checkpoint& c : store.checkpoints(run_id)) listed.insert(fs::path(c.path).lexically_normal());
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
        const std::string name = e.path().filename().string();
        const bool temporary = name.find(".tmp.") != std::string::npos;
        const bool orphan = name.rfind("step-", 0) == 0 && !listed.count(e.path().lexically_normal());
        if (temporary || orphan) fs::remove_all(e.path(), ec);
    }
}

// The first of the step's loss, gradient norm and key metrics that is NaN/Inf.
std::string divergence_of(const StepRecord& rec) {
    for (const char* name : {"policy_loss", "grad_norm", "k3_kl", "reward_mean"}) {
        const double v = RlSession::metric(rec, name);
        if (!std::isfinite(v))
            return "diverged at step " + std::to_string(rec.step + 1) + ": " + name + " is " + value_text(v);
    }
    return {};
}

constexpr const char* kResumedOn = "; from step ";

// The machine a run's record names for its latest steps: the part after the
// last resumption, or the whole record.
std::string latest_machine(const std::string& record) {
    const size_t at = record.rfind(kResumedOn);
    if (at == std::string::npos) return record;
    const size_t colon = record.find(": ", at);
    return colon == std::string::npos ? record : record.substr(colon + 2);
}

}  // namespace

RunController RunController::create(Store& store, const Config& cfg_in, const std::string& preset,
                                    const std::string& name, const std::string& cache_dir, const RunCallbacks& cb,
                                    int64_t total_steps, const std::optional<SweepRun>& sweep_slot) {
    Config cfg = cfg_in;
    if (total_steps > 0) cfg.rl.steps = (int)total_steps;
    validate(cfg);
    check_devices(cfg);
    const std::string machine = machine_description(cfg);
    RunController rc;
    rc.store_ = &store;
    rc.cb_ = cb;
    rc.total_steps_ = cfg.rl.steps;
    rc.run_id_ = store.create_run(name, preset, config_to_json(cfg).dump(), (uint64_t)cfg.seed, RunStatus::running,
                                  sweep_slot, machine);
    try {
        rc.lock_.emplace(RunWriterLock::acquire(store.path(), rc.run_id_));
        rc.base_ = make_base_policy(cfg, cache_dir, cb.on_base, cb.cancel);
        // Step -1 is the base policy: a run resumed before its first
        // checkpoint restarts from here.
        store.add_checkpoint(rc.run_id_, -1, rc.base_.path);
        // The session owns the weights from here: a copy left behind would be
        // one more parameter arena in memory for the whole run.
        rc.session_ = std::make_unique<RlSession>(cfg, std::move(rc.base_.params), &store, rc.run_id_,
                                                  run_checkpoint_root(store.path(), rc.run_id_));
    } catch (const WarmupCancelled&) {
        store.set_status(rc.run_id_, RunStatus::stopped);
        throw StoppedInWarmup(rc.run_id_);
    } catch (const std::exception& e) {
        store.set_status(rc.run_id_, RunStatus::failed, e.what());
        throw;
    }
    return rc;
}

namespace {

// Why a step checkpoint does not hold what the store says it holds, or "".
// It must name the step it is filed under, that step must be stored (a
// checkpoint ahead of the stored steps holds an update no step recorded),
// and its optimizer must have taken exactly the updates of the steps up to
// it: a checkpoint written after a failed step's update, before that step
// was stored, carries one step's updates too many.
std::string checkpoint_disagreement(const LoadedCheckpoint& loaded, int64_t step, std::optional<int64_t> last_stored,
                                    const Config& cfg) {
    const std::string label = "the checkpoint of step " + std::to_string(step + 1);
    const nlohmann::json& meta = loaded.metadata;
    if (meta.is_object() && meta.contains("step") && meta["step"].is_number_integer() &&
        meta["step"].get<int64_t>() != step)
        return label + " names step " + std::to_string(meta["step"].get<int64_t>() + 1);
    if (!last_stored || *last_stored < step)
        return label + " is ahead of the stored steps (the last is " +
               (last_stored ? std::to_string(*last_stored + 1) : std::string("none")) + ")";
    const int64_t updates = (step + 1) * cfg.rl.mini_step_count();
    const int64_t held = loaded.optimizer ? loaded.optimizer->step : 0;
    if (held != updates)
        return label + " holds " + std::to_string(held) + " optimizer updates, not the " + std::to_string(updates) +
               " of its steps";
    return {};
}

}  // namespace

RunController RunController::resume(Store& store, int64_t run_id, const RunCallbacks& cb, int64_t more_steps,
                                    const std::string& cache_dir) {
    std::optional<RunInfo> info = store.run_info(run_id);
    if (!info) throw std::invalid_argument("run " + std::to_string(run_id) + " is not in " + store.path());
    // A diverged run is deterministic: resumed, it computes the same steps
    // and diverges at the same one.
    if (info->status == run_status_name(RunStatus::diverged))
        throw std::invalid_argument("run " + std::to_string(run_id) + " " + info->error +
                                    "; resuming recomputes the same steps and diverges again, so it is refused "
                                    "(start a new run with other settings: a lower optim.lr, optim.grad_clip, "
                                    "another precision)");
    // Everything that can fail comes before the first write to the store.
    RunWriterLock lock = RunWriterLock::acquire(store.path(), run_id);
    Config cfg = stored_config_from_json(nlohmann::json::parse(info->config_json));
    check_devices(cfg);
    const std::string machine = machine_description(cfg);
    RunController rc;
    rc.store_ = &store;
    rc.cb_ = cb;
    rc.run_id_ = run_id;
    AdamW opt;
    int64_t from = -1;
    bool have_weights = false;
    const std::optional<int64_t> last_stored = store.last_step(run_id);
    const std::vector<Checkpoint> cks = store.checkpoints(run_id);
    for (auto ck = cks.rbegin(); ck != cks.rend() && !have_weights; ++ck) {
        // The base policy lives in a shared cache that may have been
        // cleared: it is deterministic, so it is warmed up again below.
        if (ck->step < 0 && !std::filesystem::exists(ck->path)) {
            rc.notes_.push_back("the base policy's cached copy " + ck->path + " is gone; warming it up again");
            break;
        }
        LoadedCheckpoint loaded = load_checkpoint(ck->path);
        if (ck->step >= 0) {
            const std::string why = checkpoint_disagreement(loaded, ck->step, last_stored, cfg);
            if (!why.empty()) {
                rc.notes_.push_back(why + ": not used");
                continue;
            }
        }
        if (loaded.optimizer) {
            opt.step = loaded.optimizer->step;
            opt.m = std::move(loaded.optimizer->m);
            opt.v = std::move(loaded.optimizer->v);
        }
        from = ck->step;
        rc.base_.params = std::move(loaded.params);
        rc.base_.path = ck->path;
        rc.base_.from_cache = true;
        have_weights = true;
    }
    // Stopped during the warm-up, or its cached base policy is gone.
    if (!have_weights) rc.base_ = make_base_policy(cfg, cache_dir, cb.on_base, cb.cancel);
    rc.resumed_from_ = from;
    rc.total_steps_ = more_steps > 0 ? from + 1 + more_steps : cfg.rl.steps;
    rc.session_ = std::make_unique<RlSession>(cfg, std::move(rc.base_.params), &store, run_id,
                                              run_checkpoint_root(store.path(), run_id), from + 1, std::move(opt));
    if (from < 0) store.add_checkpoint(run_id, -1, rc.base_.path);
    store.truncate_after(run_id, from);
    tidy_checkpoint_folder(store, run_id, run_checkpoint_root(store.path(), run_id));
    store.set_status(run_id, RunStatus::running);
    // Resumed elsewhere: the record names where the steps from here on are made.
    if (info->machine.empty()) store.set_machine(run_id, machine);
    else if (latest_machine(info->machine) != machine)
        store.set_machine(run_id, info->machine + kResumedOn + std::to_string(from + 1) + ": " + machine);
    rc.lock_.emplace(std::move(lock));
    return rc;
}

StepRecord RunController::step() {
    StepRecord rec = session_->step(cb_.on_phase);
    divergence_ = divergence_of(rec);
    return rec;
}

void RunController::set_paused(bool paused) {
    store_->set_status(run_id_, paused ? RunStatus::paused : RunStatus::running);
}

void RunController::finish(RunStatus status, const std::string& error) {
    const auto checkpoint_last_step = [&] {
        std::optional<int64_t> last = store_->last_step(run_id_);
        std::optional<Checkpoint> ck = store_->last_checkpoint(run_id_);
        // A step that failed after its update leaves weights no stored step
        // holds: no rescue then, and resume recomputes from the last checkpoint.
        if (last && (!ck || ck->step < *last) && session_->at_committed_step()) session_->checkpoint();
    };
    if (status == RunStatus::failed) {
        std::string why = error;
        try {
            checkpoint_last_step();
        } catch (const std::exception& e) {
            why += std::string(" (the rescue checkpoint failed too: ") + e.what() + ")";
        }
        try {
            store_->set_status(run_id_, RunStatus::failed, why);
        } catch (const std::exception&) {
            // The store itself fails (disk full, locked): the released writer
            // lock still tells every reader the run is not running.
        }
        lock_.reset();
        return;
    }
    if (status != RunStatus::diverged) {
        try {
            checkpoint_last_step();
        } catch (const std::exception& e) {
            finish(RunStatus::failed, std::string("cannot save the last checkpoint: ") + e.what());
            throw;
        }
    }
    store_->set_status(run_id_, status, status == RunStatus::diverged ? divergence_ : error);
    lock_.reset();
}

}  // namespace mlk
