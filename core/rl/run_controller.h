// A run's life in the store: create it (base policy first), step it, resume
// it from its last checkpoint, close it with a status. The CLI and the
// workbench's worker thread both drive runs through this.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "core/rl/base_policy.h"
#include "core/rl/session.h"
#include "core/store/store.h"

namespace mlk {

struct RunCallbacks {
    std::function<void(const BaseProgress&)> on_base;  // warm-up progress
    std::function<void(Phase)> on_phase;               // phase changes within a step
    const std::atomic<bool>* cancel = nullptr;         // stops the warm-up early
};

class RunController {
public:
    // A new run: stores it (status running), prepares the base policy (cached),
    // and stands ready at step 0. total_steps overrides rl.steps when > 0.
    static RunController create(Store& store, const Config& cfg, const std::string& preset, const std::string& name,
                                const std::string& cache_dir, const RunCallbacks& cb, int64_t total_steps = 0);
    // An existing run from its last checkpoint: steps after it are dropped
    // and recomputed (deterministically: every random stream is keyed by
    // seed and step). more_steps > 0 extends the run by that many steps past
    // the checkpoint; otherwise it continues to rl.steps.
    static RunController resume(Store& store, int64_t run_id, const RunCallbacks& cb, int64_t more_steps = 0);

    int64_t run_id() const { return run_id_; }
    int64_t next_step() const { return session_->next_step(); }
    int64_t total_steps() const { return total_steps_; }
    bool done() const { return next_step() >= total_steps_; }
    // The step the run was resumed from (the checkpoint's), when resumed.
    std::optional<int64_t> resumed_from() const { return resumed_from_; }
    const BasePolicy& base() const { return base_; }
    const Config& config() const { return session_->config(); }

    StepRecord step();
    // A run held between steps reads "paused" in the store, and "running"
    // again when it goes on, so every reader (run browser, the CLI's `runs`)
    // tells a paused run from a stalled one. Changes nothing else.
    void set_paused(bool paused);
    // Checkpoints the last step and sets the final status.
    void finish(RunStatus status);

private:
    RunController() = default;
    Store* store_ = nullptr;
    int64_t run_id_ = 0;
    int64_t total_steps_ = 0;
    std::optional<int64_t> resumed_from_;
    BasePolicy base_;
    RunCallbacks cb_;
    std::unique_ptr<RlSession> session_;
};

}  // namespace mlk
