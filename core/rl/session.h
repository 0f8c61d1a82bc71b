// One RL experiment: each step samples prompts, measures the rollout against
// the training recompute (core/rl/measure.h), scores the responses, computes
// correction weights, runs the mini-steps, and records the step in one store
// transaction.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/config/settings.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "core/metrics/catalogue.h"
#include "core/rl/correction.h"
#include "core/rl/measure.h"
#include "core/rl/optim.h"
#include "core/rl/policy_loss.h"
#include "core/rl/tasks.h"
#include "core/store/run_lock.h"
#include "core/store/store.h"

namespace mlk {

enum class Phase { warmup, rollout, recompute, training, saving };
const char* phase_name(Phase p);

class RlSession {
public:
    // params: the starting policy (base policy or a checkpoint). first_step:
    // the step to run next (0 for a new run). ckpt_root: where this run's
    // checkpoints go. store may be null (nothing is persisted).
    RlSession(const Config& cfg, std::vector<float> params, Store* store, int64_t run_id, std::string ckpt_root,
              int64_t first_step = 0, AdamW optimizer = {});

    // Runs step next_step(), stores it, checkpoints when due; returns the record.
    StepRecord step(const std::function<void(Phase)>& on_phase = {});

    int64_t next_step() const { return next_step_; }
    const std::vector<float>& params() const { return params_; }
    const Config& config() const { return cfg_; }
    // "cpu", or the rollout's device (rollout.device) by name.
    std::string rollout_device_name() const { return rollout_.device_name(); }
    std::string train_device_name() const { return train_.device_name(); }

    // Writes a checkpoint for the last completed step now (also done every
    // run.checkpoint_every steps), then deletes those run.keep_last and
    // run.keep_every do not keep. Throws std::logic_error when the weights
    // are ahead of that step (see at_committed_step).
    void checkpoint();
    // False from a step's first parameter update until that step is stored:
    // a step that failed in between (its store write, say) left weights and
    // optimizer moments that belong to no stored step, so no checkpoint may
    // be written of them; resume recomputes from the last checkpoint.
    bool at_committed_step() const { return !uncommitted_update_; }

    static double metric(const StepRecord& r, const std::string& name);  // NaN when absent

private:
    struct Scores {
        std::vector<double> rewards, exact, advantages;  // per sequence
        double mean_length = 0;                          // response tokens
    };
    struct TrainOutcome {
        double loss = 0, clip_fraction = 0, grad_norm = 0, ppo_kl = 0, lr = 0;  // means over mini-steps
        // Share of (response token, MoE layer) routes of the mini-steps after
        // the first that differ from the old-policy forward's; 0 without MoE.
        double ministep_flips = 0;
        double ms = 0;
    };
    std::vector<Prompt> sample_prompts(int64_t step) const;
    Scores score(const std::vector<Prompt>& prompts, const RolloutResult& roll) const;
    CorrectionSettings correction_settings() const;
    void prune_checkpoints();
    TrainOutcome train_policy(const Measurement& m, const Scores& scores, const CorrectionResult& corr);
    // Sequences [s0, s1) of the step, as one mini-step sees them.
    struct MiniStep {
        int index = 0, count = 1;  // mini-step index of count
        int s0 = 0, s1 = 0;        // sequences
        int t0 = 0, t1 = 0;        // their response tokens in the step's TokenView
        SeqBatch batch;
    };
    struct RouteCount {
        int64_t flipped = 0, unflipped = 0;  // valid (response token, MoE layer) pairs of mini-steps 2..n
    };
    const TrainForward& ministep_forward(const Measurement& m, const MiniStep& ms, RouteCount& routes);
    PolicyLossResult ministep_loss(const Measurement& m, const Scores& scores, const CorrectionResult& corr,
                                   const MiniStep& ms, const TrainForward& fwd) const;
    StepRecord record(int64_t step, const std::vector<Prompt>& prompts, const Measurement& m, const Scores& scores,
                      const CorrectionResult& corr, const TrainOutcome& trained, double step_ms) const;

    Config cfg_;
    ModelConfig model_;
    ParamLayout layout_;
    std::unique_ptr<Task> task_;
    std::vector<float> params_;
    PagedFloats grads_;  // a training phase's only
    AdamW opt_;
    RolloutEngine rollout_;
    TrainEngine train_;
    Store* store_;
    int64_t run_id_;
    std::string ckpt_root_;
    int64_t next_step_;
    bool uncommitted_update_ = false;
};

}  // namespace mlk
