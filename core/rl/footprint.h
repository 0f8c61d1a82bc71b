// What a configuration will cost before anything slow runs: the model's
// parameter count, the memory of one RL session and an estimated time per RL
// step, for the CLI to print before a run or probe and the config form to
// show while a model is being built.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/settings.h"

namespace mlk {

// Memory in MiB (2^20 bytes), as the text below prints it.
struct ModelFootprint {
    int64_t params = 0;         // = make_param_layout(model).total
    int64_t active_params = 0;  // used per token: an MoE layer counts its router and top-k experts only
    // Held through every phase: the fp32 master and AdamW's two moments.
    double state_mb = 0;
    // The rollout beside them: what its engine keeps to give the master back
    // (RolloutEngine::borrowed_bytes_per_param), its KV cache and one layer
    // of its prefill over every prompt.
    double rollout_mb = 0;
    // Training beside them: the gradients, the trainer's cast layer (unless
    // it computes on the master), the forward's kept activations for the
    // largest mini-step at the longest sequences, the logits, log-probs and
    // their gradients.
    double training_mb = 0;
    // state_mb plus the larger phase, which frees its memory for the other
    // (short-lived buffers and the allocator's overhead left out). Against
    // the peak RSS of a 3-step `run` less that of `presets` (6.4 MiB) it
    // reads from 0.80x (long-addition-scratchpad, whose long sequences'
    // backward buffers it leaves out) to 1.22x (moe-small); dense-tiny
    // 0.97x, dense-small 1.12x, moe-deep 1.16x, r3-grpo-8mini 1.19x. The
    // sum of both phases would read 1.34x on moe-deep.
    double memory_mb = 0;
    // Floating-point work of one RL step at the longest sequences: 2 x active
    // params x tokens each for the rollout and the recompute, 6 x for the
    // training pass (plus 2 x for each extra mini-step's own forward).
    double step_gflop = 0;
    double est_step_ms = 0;  // step_gflop over rl_step_gflops()
};

ModelFootprint model_footprint(const Config& c);

// The rate one RL step reaches on this machine, GFLOP/s: a short matmul
// micro-benchmark on the fast kernels (training-like shape, the current
// thread count), measured once per process (about 20 ms), times
// kStepEfficiency. Measured rather than a constant because the machines this
// runs on differ by 10x and a shared VM's second core comes and goes.
double rl_step_gflops();
// The fraction of the matmul rate a whole RL step reaches: decode steps with
// a handful of rows, attention, norms, sampling, the MoE gather/scatter and
// the optimizer run below it, small models far below. `bench --steps 3` on
// the 2-core development machine (quiet; benchmark 192 GFLOP/s) gives
// 0.25 (moe-tiny), 0.33 (dense-tiny, moe-deep), 0.41 (moe-small), 0.56
// (dense-small) and 0.60 (dense-deep). One value for all puts the estimate
// between about 0.6x and 1.5x the measured step: enough to tell 0.1 s from
// 3 s before a run, not a benchmark.
inline constexpr double kStepEfficiency = 0.4;

// "14.8M parameters (2.4M active per token), about 312 MiB, about 1.8 s per RL step".
std::string footprint_text(const ModelFootprint& f);

}  // namespace mlk
