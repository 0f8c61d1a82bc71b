// "Why this token?": each step keeps its K response tokens of largest
// |lp_train - lp_roll| with what explains them, so a spike in F(t) or K3 KL
// can be traced to tokens rather than to a fixed sample that may miss them.
// Per token: both log-probs, the most likely alternatives under each engine,
// every MoE layer's experts on both sides (a flip is an expert in one list
// and not the other), and the path it went through (the rows of the forward
// that computed it; the step's rounding points, kernel family, routing replay).
//
// Captured inside the measurement pass (core/rl/measure.h), where the
// training forward's full log-prob rows and both routing tables still exist;
// only the K tokens' rows are read. Stored as one bounded JSON document per
// step (Store: worst_tokens table; about 200 bytes + 60 per MoE layer per
// token), read back by the drill-down.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engines/rollout_engine.h"

namespace mlk {

struct Config;
struct Measurement;
class TrainEngine;

inline constexpr int kWorstTokens = 16;

// One engine's rounding points (numerics.h), as dtype names.
struct RoundingPointNames {
    std::string matmul, residual, attn_probs, stats, lm_head, kv_cache;  // kv_cache: rollout only ("" for training)
    // RMSNorm before its weight, SiLU, RoPE cache and arithmetic, "online" or
    // "eager" softmax ("" in a step stored before these points existed).
    std::string norm, silu, rope_cache, rope, softmax;
    bool operator==(const RoundingPointNames&) const = default;
};

struct WorstToken {
    int32_t seq = 0;    // sequence in the batch
    int32_t pos = 0;    // position in the response (as TokenSample::pos)
    int32_t token = 0;  // token id
    std::string text;   // Vocab::token_text
    float lp_roll = 0, lp_train = 0;
    int32_t flips = 0;  // router flips summed over MoE layers (RouterDiff::per_token_sum); 0 dense
    // The most likely tokens at this position, most likely first
    // (kTopAlternatives each): the rollout's distribution at the temperature
    // before top-k/top-p, and the training recompute's.
    std::vector<TokenAlternative> alt_roll, alt_train;
    // [MoE layer][k] experts that routed the position that predicted this
    // token (as routing_diff compares them): the rollout's top-k and the
    // experts the training engine used (the rollout's own under R3).
    std::vector<std::vector<int32_t>> experts_roll, experts_train;
    int32_t rollout_rows = 0;  // M of the rollout forward that computed it
    bool prefill = false;      // that forward was the prompt's prefill (the first response token)
    bool operator==(const WorstToken&) const = default;
};

// A step's worst tokens, largest |delta log p| first, and the path every
// token of the step went through.
struct WorstTokens {
    std::vector<WorstToken> tokens;
    std::vector<int32_t> moe_layers;  // model layer of each MoE layer of experts_*
    RoundingPointNames rollout, train;
    std::string kernels;         // "fast" or "batch-invariant"
    std::string routing_replay;  // "off", "R2", "R3"
    int32_t train_rows = 0;      // M of the training recompute (B * padded length)
    bool operator==(const WorstTokens&) const = default;
};

// The valid (policy-sampled) response tokens of the step with the K largest
// |lp_train - lp_roll|, as indices into m.tokens, largest first (a NaN
// difference ranks first; ties to the lower index).
std::vector<size_t> worst_token_indices(const Measurement& m, int K = kWorstTokens);

// Fills WorstTokens from the measurement; `train` must still hold the
// recompute's forward (before any mini-step forward).
WorstTokens capture_worst_tokens(const Config& cfg, const Measurement& m, const TrainEngine& train,
                                 int K = kWorstTokens);

// The stored form (one JSON object) and back. parse throws
// std::invalid_argument on text that is not such an object; "" gives an
// empty WorstTokens (a step stored without them).
std::string worst_tokens_json(const WorstTokens& w);
WorstTokens parse_worst_tokens(const std::string& json);

}  // namespace mlk
