// Rollout correction: importance-sampling weights, rejection (RS), veto and
// batch normalisation.
//
// Same flat layout as core/metrics/mismatch.h (concatenated tokens, seq_offsets of size
// S+1, uint8 valid mask). Weights carry no gradient: they are plain numbers the
// policy loss multiplies in. The batch keeps its shape: dropping a token means
// keep[t] = 0 (and weights[t] = 0), never removing it.
//
// Pipeline, for lr_t = lp_old_t - lp_roll_t over valid tokens:
//   1. IS level  token:     w_t = exp(clamp20(lr_t))
//                sequence:  w_i = exp(clamp20(sum_t lr_t))   broadcast to seq i
//                geometric: w_i = exp(clamp20(mean_t lr_t))  broadcast to seq i
//                off:       metrics only, weights 1 (stats still from token ratios)
//   2. IS mode   truncate:  w = min(w, U)            (is_lower ignored)
//                clip:      w = clamp(w, L, U)
//                mask:      w unchanged, drop (keep = 0) what lies outside [L, U] (IcePop)
//   3. RS        at its own level with [rs_lower, rs_upper]: drop outside;
//                seq_mean_k3: drop sequence i if mean_t(rho - 1 - log rho) > rs_upper
//                (rho = exp(clamp20(lr_t)); rs_lower unused)
//   4. veto      ratio:    drop sequence i if any valid token has exp(lr_t) < threshold
//                old_prob: drop sequence i if any valid token has exp(lp_old_t) < threshold
//   5. batch normalise (is_level != off): divide by the mean weight over kept
//                valid tokens (token level) or over kept sequences (sequence and
//                geometric levels; verl allows geometric, slime refuses it: we allow).
//   RS and veto work whatever the IS level (e.g. verl's Geo-RS / K3-RS presets
//   use rejection without IS). Pure metrics-only = is_level off, rs_level off,
//   veto_threshold 0: then weights are 1 and keep == valid.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/settings.h"

namespace mlk {

// Throws std::invalid_argument listing every correction_rule_violations()
// message (each names the keys involved).
void validate(const CorrectionSettings& s);

struct CorrectionStats {
    std::size_t num_valid_tokens = 0;
    std::size_t num_kept_tokens = 0;
    std::size_t num_sequences = 0;       // sequences with >= 1 valid token
    std::size_t num_kept_sequences = 0;  // sequences with >= 1 kept token
    // Over kept valid tokens, after bounds and BEFORE batch normalisation (so the
    // mean shows the real drift; with is_level off: the raw token ratios
    // exp(clamp20(lr_t))). 0 when nothing is kept.
    double is_weight_mean = 0, is_weight_min = 0, is_weight_max = 0;
    double ess = 0;                // 1 / mean((w / mean w)^2) over the same tokens, in (0, 1]
    double batch_norm_factor = 1;  // the mean weights were divided by (1 when off)
    // Each fraction is the share of valid tokens (or of sequences with a valid
    // token) that the criterion alone hits; criteria overlap freely.
    double truncated_low_fraction = 0;   // clip: w < L
    double truncated_high_fraction = 0;  // truncate / clip: w > U
    double masked_fraction = 0;          // mask mode: w outside [L, U]
    double rejected_token_fraction = 0;  // RS
    double rejected_seq_fraction = 0;    // sequences with >= 1 token rejected by RS
    double vetoed_seq_fraction = 0;      // sequences vetoed
    double kept_token_fraction = 0;      // num_kept_tokens / num_valid_tokens (0 if none)
};

struct CorrectionResult {
    std::vector<double> weights;      // per token; 0 where keep == 0
    std::vector<std::uint8_t> keep;   // per token; subset of valid
    std::vector<double> raw_weights;  // per token level ratio before bounds (0 for invalid tokens)
    CorrectionStats stats;
};

// lp_old: training recompute (decoupled) or current policy without grad
// (bypass); lp_roll: rollout log-probs. Calls validate(settings).
CorrectionResult compute_correction(const CorrectionSettings& settings, std::span<const float> lp_old,
                                    std::span<const float> lp_roll, std::span<const std::uint8_t> valid,
                                    std::span<const int> seq_offsets);

}  // namespace mlk
