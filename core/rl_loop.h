// One RL experiment: each step samples prompts, rolls out with the rollout
// engine, scores, recomputes with the training engine, measures the mismatch,
// computes correction weights, runs the mini-steps, and persists the step in
// one store transaction (shared/DESIGN.md, "One RL step").
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/optim.h"
#include "core/rollout_engine.h"
#include "core/store.h"
#include "core/tasks.h"
#include "core/train_engine.h"

namespace mlk {

// Every per-step metric, in display order (the CSV columns after `step`).
const std::vector<std::string>& step_metric_names();

enum class Phase { warmup, rollout, recompute, training, saving };
const char* phase_name(Phase p);

class RlSession {
public:
    // params: the starting policy (base policy or a checkpoint). first_step:
    // the step to run next (0 for a new run). ckpt_root: where this run's
    // checkpoints go.
    RlSession(const Config& cfg, std::vector<float> params, Store* store, int64_t run_id, std::string ckpt_root,
              int64_t first_step = 0, AdamW optimizer = {});

    // Runs step next_step(), stores it, checkpoints when due; returns the record.
    StepRecord step(const std::function<void(Phase)>& on_phase = {});

    int64_t next_step() const { return next_step_; }
    const std::vector<float>& params() const { return params_; }
    const Config& config() const { return cfg_; }

    // Writes a checkpoint for the last completed step now (also done every
    // run.checkpoint_every steps).
    void checkpoint();

    static double metric(const StepRecord& r, const std::string& name);  // NaN when absent

private:
    Config cfg_;
    ModelConfig model_;
    ParamLayout layout_;
    std::unique_ptr<Task> task_;
    std::vector<float> params_, grads_;
    AdamW opt_;
    RolloutEngine rollout_;
    TrainEngine train_;
    Store* store_;
    int64_t run_id_;
    std::string ckpt_root_;
    int64_t next_step_;
};

// Where a run's checkpoints live next to its database: "<db>.ckpt/run-<id>".
std::string run_checkpoint_root(const std::string& db_path, int64_t run_id);

}  // namespace mlk
