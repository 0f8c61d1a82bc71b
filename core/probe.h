// One rollout batch and one training forward on it, with every mismatch
// metric between the two: the `probe` command, and the measurement half of
// each RL step.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config.h"
#include "core/metrics.h"
#include "core/rollout_engine.h"
#include "core/train_engine.h"

namespace mlk {

// Response tokens of a rollout in the flat layout of metrics.h, next to the
// training log-probs of the same tokens.
struct TokenView {
    std::vector<int> seq_offsets;            // S+1
    std::vector<float> lp_roll, lp_train;    // lp_roll per rollout.logprobs
    std::vector<float> lp_roll_processed, lp_roll_raw, entropy;
    std::vector<uint8_t> valid;
    std::vector<int32_t> token, pos, seq;    // for dumps and drill-down
};
TokenView gather_tokens(const RolloutResult& roll, const SeqBatch& batch, const TrainForward& train,
                        LogprobSource source);

// Router diff over every position the rollout routed (prompt and response
// tokens it fed to the model): rollout top-k vs the experts the training
// engine used, so R3 brings it to zero.
RouterDiff routing_diff(const RolloutResult& roll, const SeqBatch& batch, const TrainForward& train, int layers,
                        int k);

struct ProbeResult {
    ModelConfig model;
    RolloutResult roll;
    SeqBatch batch;
    TrainForward train;
    TokenView tokens;
    MismatchMetrics mismatch;
    RouterDiff router;  // empty for dense models
    bool bitwise_equal = false;  // every training log-prob equals its rollout log-prob bit for bit
};

// Prompts from the configured task (rl.prompts_per_step x rl.samples_per_prompt
// sequences), rollout with the rollout settings, training forward with the
// training settings (R3 when moe.routing_replay = R3).
ProbeResult run_probe(const Config& cfg, const std::vector<float>& params);

// The `probe --json` object (keys listed in the README).
nlohmann::json probe_summary_json(const ProbeResult& r);
// The `probe --dump` per-token document (format in the README).
nlohmann::json probe_dump_json(const ProbeResult& r);

}  // namespace mlk
