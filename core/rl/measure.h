// The measurement half of an RL step, shared by `probe` and RlSession: roll
// out a batch with the rollout engine, recompute it with the training engine
// (R3 replays the rollout's routes), and measure the mismatch between the two.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/config/settings.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "core/metrics/mismatch.h"
#include "core/rl/worst_tokens.h"

namespace mlk {

// Response tokens of a rollout in the flat layout of core/metrics/mismatch.h,
// next to the training log-probs of the same tokens. valid = 0 where the
// environment of a multi-turn task wrote the token (RolloutSequence::env):
// every consumer of this view (mismatch metrics, correction, policy loss)
// thereby skips tool output.
struct TokenView {
    std::vector<int> seq_offsets;          // S+1
    std::vector<float> lp_roll, lp_train;  // lp_roll per rollout.logprobs
    std::vector<float> lp_roll_processed, lp_roll_raw, entropy;
    std::vector<uint8_t> valid;
    std::vector<int32_t> token, pos, seq;  // for dumps and drill-down
};
TokenView gather_tokens(const RolloutResult& roll, const SeqBatch& batch, const TrainForward& train,
                        LogprobSource source);

// Router diff over the response tokens, the population every other mismatch
// metric counts (TokenView order, valid mask and sequences): token t's entry
// compares the routes of the forward that produced its log-prob, position
// pos[t] - 1 (for the first response token the last prompt position, routed
// in prefill), rollout top-k vs the experts the training engine used, so R3
// brings it to zero. Earlier prompt positions and the final token (which
// predicts nothing) do not count. moe_layers = ModelConfig::num_moe_layers():
// dense layers have no router and count for nothing.
RouterDiff routing_diff(const RolloutResult& roll, const SeqBatch& batch, const TrainForward& train,
                        const TokenView& tokens, int moe_layers, int k);
// The same router diff between two routing tables of the training engine's
// layout ([moe_layers][B*T*k], T = the batch's padded length), over the
// tokens [t0, t1) of `tokens`, whose sequences start at s0 in the tables
// (a mini-step's slice): e.g. a mini-step's forward against the old-policy one.
RouterDiff table_routing_diff(const std::vector<std::vector<int32_t>>& a, const std::vector<std::vector<int32_t>>& b,
                              int T, int k, const TokenView& tokens, int t0, int t1, int s0);

struct Measurement {
    RolloutResult roll;
    SeqBatch batch;                            // the rollout as the trainer sees it
    std::vector<std::vector<int32_t>> replay;  // R3 table, [num_moe_layers][B*T*k]; empty without R3
    TrainForward train;                        // the recompute (the "old" policy)
    TokenView tokens;
    MismatchMetrics mismatch;
    RouterDiff router;           // over the MoE layers; empty for dense models
    bool bitwise_equal = false;  // every training log-prob equals its rollout log-prob bit for bit
    WorstTokens worst;           // the K largest |delta log p| tokens, explained (worst_tokens.h)
    double rollout_ms = 0, recompute_ms = 0;
};

enum class MeasurePhase { rollout, recompute };

// inputs: one prompt per sequence. sample_seed keys the sampler. The rollout
// engine gets `params` cast to rollout.precision, borrowing them for the
// rollout (RolloutEngine::load_weights), and gives them back, the same bits,
// before the recompute or a throw leaves; the training engine
// computes in train.precision. With for_backward the training engine keeps
// the recompute's activations, so a backward may follow directly; without
// (a probe, a step trained in several mini-steps) it keeps none
// (TrainEngine::forward), with the same log-probs. environment: a
// multi-turn task's (task_environment() in core/rl/tasks.h), or empty.
Measurement measure(const Config& cfg, RolloutEngine& rollout, TrainEngine& train, std::vector<float>& params,
                    const std::vector<std::vector<int32_t>>& inputs, uint64_t sample_seed, bool for_backward,
                    const std::function<void(MeasurePhase)>& on_phase = {}, const Environment& environment = {});

// The kernel family the configuration asks for.
Family kernel_family(const Config& cfg);

}  // namespace mlk
