// The base policy: a supervised warm-up that brings a fresh model to partial
// competence on the task (like a base model before RL), cached as a
// checkpoint keyed by everything that shapes it, so a second run starts at once.
#pragma once

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/engines/train_engine.h"
#include "core/rl/tasks.h"

namespace mlk {

struct BaseProgress {
    int step = 0, total = 0;
    double loss = 0;
    double eval_reward = -1;  // -1 until the first evaluation
    int layers = 0;           // depth of the model in training: below model_layers while a shallow one grows
    int model_layers = 0;
};

struct BasePolicy {
    std::vector<float> params;
    double eval_reward = 0;     // mean reward on the held-out set when it was made
    int sft_steps = 0;          // steps it took
    int grown_from_layers = 0;  // depth of the shallow model it grew from; 0 = trained directly
    int shallow_steps = 0;      // of sft_steps, those of the shallow model
    bool from_cache = false;
    std::string path;  // the cached checkpoint directory
};

// Thrown by make_base_policy when `cancel` is set during the warm-up.
struct WarmupCancelled : std::runtime_error {
    WarmupCancelled() : std::runtime_error("base-policy warm-up cancelled") {}
};

// $MLK_CACHE_DIR, else $XDG_CACHE_HOME/mismatch-lab, else ~/.cache/mismatch-lab.
std::string default_cache_dir();

// Directory name of the cached base policy for this configuration.
std::string base_policy_key(const Config& cfg);

// Loads the cached base policy or trains it: next-token cross-entropy on the
// task's reference answers, AdamW (base.lr), batches of base.batch_size,
// evaluated every 25 steps on the held-out set; stops at base.sft_steps or as
// soon as the held-out reward reaches base.target_reward. When
// base_growth_layers(cfg) is k > 0, a k-layer model trains so first (leaving
// base.grow_steps of the budget), grows into the full one (grow_params) and
// the full one trains on at base.grow_lr, for base.grow_steps steps and then
// until the target again. cancel may be null; when it is set the warm-up
// throws WarmupCancelled.
BasePolicy make_base_policy(const Config& cfg, const std::string& cache_dir,
                            const std::function<void(const BaseProgress&)>& progress,
                            const std::atomic<bool>* cancel = nullptr);

// One warm-up batch: `batch_size` training demonstrations (prompt + target)
// from step `step` of the stream, and which positions are targets of the
// cross-entropy: the response tokens the policy writes, not the prompt, the
// padding or a multi-turn environment's replies (context, as in RL).
struct SftBatch {
    SeqBatch batch;
    std::vector<uint8_t> target;  // [B*T]
    int targets = 0;              // positions with target 1
};
SftBatch sft_batch(const Task& task, uint64_t stream, int step, int batch_size);

// Mean reward of `params` on the first n prompts of the held-out set,
// sampled as the rollout engine would (rollout settings, one sample each).
// The rollout engine borrows params and gives them back, the same bits.
double evaluate_policy(const Config& cfg, std::vector<float>& params, const Task& task, int n);
// The same for model m (a shallow stage of the warm-up) instead of cfg's.
double evaluate_policy(const Config& cfg, const ModelConfig& m, std::vector<float>& params, const Task& task, int n);

}  // namespace mlk
