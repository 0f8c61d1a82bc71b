// Policy-gradient losses over flat token arrays, with the analytic gradient
// dloss/dlp_theta per token that the model backward consumes.
//
// Layout as in core/metrics/mismatch.h: N concatenated response tokens, seq_offsets of
// size S+1. `keep` (from compute_correction, or the valid mask) selects the
// tokens that count: a dropped token contributes nothing to the loss, gets a 0
// gradient and is NOT counted in any denominator. Weights w (IS weights, no
// gradient) multiply each token's loss.
//
//   PPO:       ratio_t = exp(clamp20(lp_theta_t - lp_anchor_t))
//              loss_t  = -w_t * min(ratio_t*A, clip(ratio_t, 1-eps_low, 1+eps_high)*A)
//   GSPO:      s_i = exp(clamp20(mean_{kept t in i}(lp_theta_t - lp_anchor_t)))
//              loss_t  = -w_t * min(s_i*A_i, clip(s_i, 1-gspo_eps_low, 1+gspo_eps_high)*A_i)
//              for every kept t of sequence i; the gradient flows through the
//              mean into every kept token of the sequence.
//   REINFORCE: loss_t  = -w_t * A * lp_theta_t
//
// Aggregation of the per-token losses:
//   token_mean:            L = sum_{kept t} loss_t / N_kept
//   seq_mean_token_mean:   L = mean over sequences with >= 1 kept token of
//                              (sum_{kept t in i} loss_t / n_kept_i)
// With GSPO, w = 1 and seq_mean_token_mean this is exactly the GSPO paper's
// sequence objective. Nothing kept: loss 0, gradient 0, stats 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "core/config/settings.h"

namespace mlk {

struct PolicyLossSettings {
    PolicyLossType type = PolicyLossType::ppo;
    double eps_low = 0.2;  // clip-higher (R3 paper): eps_low 0.2, eps_high 0.27
    double eps_high = 0.2;
    double gspo_eps_low = 3e-4;
    double gspo_eps_high = 4e-4;
    LossAggregation aggregation = LossAggregation::token_mean;
};

struct PolicyLossResult {
    double loss = 0;
    std::vector<double> grad;   // dloss/dlp_theta per token (0 where not kept)
    std::vector<double> ratio;  // per token: PPO/REINFORCE the token ratio, GSPO s_i; 0 where not kept
    std::size_t num_kept_tokens = 0;
    std::size_t num_sequences = 0;  // sequences with >= 1 kept token
    // Share of kept tokens whose clipped term is the active one (strictly smaller
    // objective, so the token gets no gradient): verl's pg_clipfrac. GSPO counts
    // every kept token of a clipped sequence. 0 for REINFORCE.
    double clip_fraction = 0;
    double clip_low_fraction = 0;   // ... of which ratio < 1 - eps_low (A < 0)
    double clip_high_fraction = 0;  // ... of which ratio > 1 + eps_high (A > 0)
    // Over kept tokens, of `ratio` above.
    double ratio_mean = 0, ratio_min = 0, ratio_max = 0;
    double ppo_kl = 0;  // mean over kept tokens of (lp_anchor - lp_theta)
};

// seq_advantages: one value per sequence (size S), broadcast to its tokens.
// weights: per token, or empty for all 1. keep: per token, or empty for all kept.
// Throws std::invalid_argument on inconsistent sizes or negative eps.
PolicyLossResult policy_loss(const PolicyLossSettings& settings, std::span<const float> lp_theta,
                             std::span<const float> lp_anchor, std::span<const double> seq_advantages,
                             std::span<const double> weights, std::span<const std::uint8_t> keep,
                             std::span<const int> seq_offsets);

}  // namespace mlk
