// A run's life in the store: create it (base policy first), step it, resume
// it from its last checkpoint, close it with a status. The CLI and the
// workbench's worker thread both drive runs through this.
//
// The stored status is always true: a controller holds the run's writer lock
// (core/store/run_lock.h) from create/resume to finish, so a run whose
// process died reads as interrupted, and a second writer is refused; a
// failed resume leaves the run as it was; a run stopped during the warm-up
// reads "stopped" and resumes by warming up again.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rl/base_policy.h"
#include "core/rl/session.h"
#include "core/store/run_lock.h"
#include "core/store/store.h"

namespace mlk {

// Thrown by RunController::create when the warm-up was cancelled: the run
// is stored as "stopped" and `resume` warms up again.
struct StoppedInWarmup : std::runtime_error {
    explicit StoppedInWarmup(int64_t id)
        : std::runtime_error("run " + std::to_string(id) + " stopped during the base-policy warm-up"), run_id(id) {}
    int64_t run_id;
};

struct RunCallbacks {
    std::function<void(const BaseProgress&)> on_base;  // warm-up progress
    std::function<void(Phase)> on_phase;               // phase changes within a step
    const std::atomic<bool>* cancel = nullptr;         // stops the warm-up early
};

class RunController {
public:
    // A new run: stores it (status running), prepares the base policy (cached),
    // and stands ready at step 0. total_steps overrides rl.steps when > 0.
    // sweep_slot (its run_id ignored) links the run to a sweep's slot in the
    // same transaction that stores it, so a kill at any moment leaves no run
    // that its sweep cannot find and resume.
    // A cancelled warm-up (cb.cancel) leaves the run "stopped" and throws
    // StoppedInWarmup; any other failure leaves it "failed" and rethrows.
    static RunController create(Store& store, const Config& cfg, const std::string& preset, const std::string& name,
                                const std::string& cache_dir, const RunCallbacks& cb, int64_t total_steps = 0,
                                const std::optional<SweepRun>& sweep_slot = std::nullopt);
    // An existing run from its last checkpoint that agrees with the store:
    // steps after it are dropped and recomputed (deterministically: every
    // random stream is keyed by seed and step). A checkpoint that names
    // another step, lies ahead of the stored steps, or holds another number
    // of optimizer updates than its steps made is passed over for the one
    // before it (notes() says which and why). more_steps > 0 extends the run
    // by that many steps past the checkpoint; otherwise it continues to
    // rl.steps. A run stopped before its base policy was ready, or whose
    // cached base policy is gone, warms up again (cache_dir). A diverged run
    // is refused (std::invalid_argument): it would diverge again. Nothing in
    // the store changes unless the resume succeeds.
    static RunController resume(Store& store, int64_t run_id, const RunCallbacks& cb, int64_t more_steps = 0,
                                const std::string& cache_dir = default_cache_dir());

    int64_t run_id() const { return run_id_; }
    int64_t next_step() const { return session_->next_step(); }
    int64_t total_steps() const { return total_steps_; }
    bool done() const { return next_step() >= total_steps_; }
    // The step the run was resumed from (the checkpoint's), when resumed.
    std::optional<int64_t> resumed_from() const { return resumed_from_; }
    // What a resume passed over or did again, one line each, for the user.
    const std::vector<std::string>& notes() const { return notes_; }
    // Where the run's weights came from (its params are the session's now).
    const BasePolicy& base() const { return base_; }
    const Config& config() const { return session_->config(); }

    // Runs and stores one step. A step whose loss, gradient norm or key
    // metric is NaN/Inf is stored and makes divergence() non-empty: stop and
    // finish(RunStatus::diverged).
    StepRecord step();
    const std::string& divergence() const { return divergence_; }
    // A run held between steps reads "paused" in the store, and "running"
    // again when it goes on, so every reader (run browser, the CLI's `runs`)
    // tells a paused run from a stalled one. Changes nothing else.
    void set_paused(bool paused);
    // Sets the final status and lets go of the run. finished / stopped /
    // paused first checkpoint the last step (a failure there fails the run
    // and throws). failed: a rescue checkpoint is tried, and its own failure
    // never hides `error`; finish(failed) does not throw. diverged: no
    // checkpoint of the diverged weights.
    void finish(RunStatus status, const std::string& error = {});

private:
    RunController() = default;
    Store* store_ = nullptr;
    int64_t run_id_ = 0;
    int64_t total_steps_ = 0;
    std::optional<int64_t> resumed_from_;
    BasePolicy base_;
    RunCallbacks cb_;
    std::unique_ptr<RlSession> session_;
    std::optional<RunWriterLock> lock_;
    std::string divergence_;
    std::vector<std::string> notes_;
};

}  // namespace mlk
