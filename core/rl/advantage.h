// Advantage estimators over per-sequence rewards (outcome rewards).
//
// Sequences come in groups of `group_size` consecutive samples of the same
// prompt (rewards.size() must be a multiple of group_size). Advantages are per
// sequence; broadcast_to_tokens() spreads them over the response tokens.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/config/settings.h"

namespace mlk {

struct AdvantageSettings {
    AdvantageEstimator estimator = AdvantageEstimator::grpo;
    int group_size = 1;              // n samples per prompt
    bool grpo_std_normalize = true;  // GRPO: divide by (std + eps); false = Dr.GRPO style
    double eps = 1e-6;
};

// GRPO: A_i = (r_i - mean_g) / (std_g + eps), std_g the UNBIASED sample std
// (divide by n-1, as torch.std in verl's compute_grpo_outcome_advantage);
// without std normalisation A_i = r_i - mean_g. A group of size 1 uses
// mean 0, std 1 (verl's convention), so A = r / (1 + eps).
std::vector<double> grpo_advantages(std::span<const double> rewards, int group_size, bool std_normalize = true,
                                    double eps = 1e-6);

// RLOO: A_i = r_i - mean of the other n-1 rewards of the group
//           = n/(n-1) * (r_i - mean_g); a group of size 1 has baseline 0.
std::vector<double> rloo_advantages(std::span<const double> rewards, int group_size);

// REINFORCE with baseline: A_i = r_i - mean over the whole batch.
std::vector<double> reinforce_baseline_advantages(std::span<const double> rewards);

// Dispatches on settings.estimator. Throws std::invalid_argument for a
// group_size < 1 or not dividing rewards.size().
std::vector<double> compute_advantages(std::span<const double> rewards, const AdvantageSettings& settings);

// Per-token copy of per-sequence values: out[t] = seq_values[i] for t in sequence i.
std::vector<double> broadcast_to_tokens(std::span<const double> seq_values, std::span<const int> seq_offsets);

}  // namespace mlk
