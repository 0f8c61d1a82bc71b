#include "core/rl/run_controller.h"

#include "core/model/checkpoint.h"

namespace mlk {

RunController RunController::create(Store& store, const Config& cfg_in, const std::string& preset,
                                    const std::string& name, const std::string& cache_dir, const RunCallbacks& cb,
                                    int64_t total_steps) {
    Config cfg = cfg_in;
    if (total_steps > 0) cfg.rl.steps = (int)total_steps;
    validate(cfg);
    RunController rc;
    rc.store_ = &store;
    rc.cb_ = cb;
    rc.total_steps_ = cfg.rl.steps;
    rc.run_id_ = store.create_run(name, preset, config_to_json(cfg).dump(), (uint64_t)cfg.seed);
    try {
        rc.base_ = make_base_policy(cfg, cache_dir, cb.on_base, cb.cancel);
        // Step -1 is the base policy: a run resumed before its first
        // checkpoint restarts from here.
        store.add_checkpoint(rc.run_id_, -1, rc.base_.path);
        rc.session_ = std::make_unique<RlSession>(cfg, rc.base_.params, &store, rc.run_id_,
                                                  run_checkpoint_root(store.path(), rc.run_id_));
    } catch (...) {
        store.set_status(rc.run_id_, RunStatus::failed);
        throw;
    }
    return rc;
}

RunController RunController::resume(Store& store, int64_t run_id, const RunCallbacks& cb, int64_t more_steps) {
    std::optional<RunInfo> info = store.run_info(run_id);
    if (!info) throw std::invalid_argument("run " + std::to_string(run_id) + " is not in " + store.path());
    Config cfg = config_from_json(nlohmann::json::parse(info->config_json));
    std::optional<Checkpoint> ck = store.last_checkpoint(run_id);
    if (!ck) throw std::runtime_error("run " + std::to_string(run_id) + " has no checkpoint to resume from");
    LoadedCheckpoint loaded = load_checkpoint(ck->path);
    AdamW opt;
    if (loaded.optimizer) {
        opt.step = loaded.optimizer->step;
        opt.m = std::move(loaded.optimizer->m);
        opt.v = std::move(loaded.optimizer->v);
    }
    store.truncate_after(run_id, ck->step);
    RunController rc;
    rc.store_ = &store;
    rc.cb_ = cb;
    rc.run_id_ = run_id;
    rc.resumed_from_ = ck->step;
    rc.total_steps_ = more_steps > 0 ? ck->step + 1 + more_steps : cfg.rl.steps;
    rc.base_.params = loaded.params;
    rc.base_.path = ck->path;
    rc.base_.from_cache = true;
    store.set_status(run_id, RunStatus::running);
    rc.session_ = std::make_unique<RlSession>(cfg, std::move(loaded.params), &store, run_id,
                                              run_checkpoint_root(store.path(), run_id), ck->step + 1, std::move(opt));
    return rc;
}

StepRecord RunController::step() { return session_->step(cb_.on_phase); }

void RunController::set_paused(bool paused) {
    store_->set_status(run_id_, paused ? RunStatus::paused : RunStatus::running);
}

void RunController::finish(RunStatus status) {
    std::optional<int64_t> last = store_->last_step(run_id_);
    std::optional<Checkpoint> ck = store_->last_checkpoint(run_id_);
    if (last && (!ck || ck->step < *last)) session_->checkpoint();
    store_->set_status(run_id_, status);
}

}  // namespace mlk
