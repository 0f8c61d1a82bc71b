#include "core/rl/advantage.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace mlk {

namespace {

void check_groups(std::size_t n, int group_size, const char* who) {
    if (group_size < 1) throw std::invalid_argument(std::string(who) + ": group_size must be >= 1");
    if (n % static_cast<std::size_t>(group_size) != 0)
        throw std::invalid_argument(std::string(who) + ": number of rewards (" + std::to_string(n) +
                                    ") is not a multiple of group_size (" + std::to_string(group_size) + ")");
}

}  // namespace

std::vector<double> grpo_advantages(std::span<const double> rewards, int group_size, bool std_normalize, double eps) {
    check_groups(rewards.size(), group_size, "grpo_advantages");
    const std::size_t g = static_cast<std::size_t>(group_size);
    std::vector<double> out(rewards.size());
    for (std::size_t b = 0; b < rewards.size(); b += g) {
        double mean = 0.0, sd = 1.0;
        if (g > 1) {
            for (std::size_t j = 0; j < g; ++j) mean += rewards[b + j];
            mean /= static_cast<double>(g);
            double ss = 0.0;
            for (std::size_t j = 0; j < g; ++j) ss += (rewards[b + j] - mean) * (rewards[b + j] - mean);
            sd = std::sqrt(ss / static_cast<double>(g - 1));
        }
        for (std::size_t j = 0; j < g; ++j) {
            const double c = rewards[b + j] - mean;
            out[b + j] = std_normalize ? c / (sd + eps) : c;
        }
    }
    return out;
}

std::vector<double> rloo_advantages(std::span<const double> rewards, int group_size) {
    check_groups(rewards.size(), group_size, "rloo_advantages");
    const std::size_t g = static_cast<std::size_t>(group_size);
    std::vector<double> out(rewards.size());
    for (std::size_t b = 0; b < rewards.size(); b += g) {
        double sum = 0.0;
        for (std::size_t j = 0; j < g; ++j) sum += rewards[b + j];
        for (std::size_t j = 0; j < g; ++j) {
            const double base = g > 1 ? (sum - rewards[b + j]) / static_cast<double>(g - 1) : 0.0;
            out[b + j] = rewards[b + j] - base;
        }
    }
    return out;
}

std::vector<double> reinforce_baseline_advantages(std::span<const double> rewards) {
    std::vector<double> out(rewards.size());
    if (rewards.empty()) return out;
    double mean = 0.0;
    for (double r : rewards) mean += r;
    mean /= static_cast<double>(rewards.size());
    for (std::size_t i = 0; i < rewards.size(); ++i) out[i] = rewards[i] - mean;
    return out;
}

std::vector<double> compute_advantages(std::span<const double> rewards, const AdvantageSettings& s) {
    switch (s.estimator) {
        case AdvantageEstimator::grpo: return grpo_advantages(rewards, s.group_size, s.grpo_std_normalize, s.eps);
        case AdvantageEstimator::rloo: return rloo_advantages(rewards, s.group_size);
        case AdvantageEstimator::reinforce_baseline:
            check_groups(rewards.size(), s.group_size, "compute_advantages");
            return reinforce_baseline_advantages(rewards);
    }
    throw std::invalid_argument("compute_advantages: unknown estimator");
}

std::vector<double> broadcast_to_tokens(std::span<const double> seq_values, std::span<const int> seq_offsets) {
    if (seq_offsets.size() != seq_values.size() + 1)
        throw std::invalid_argument("broadcast_to_tokens: seq_offsets must have S+1 entries");
    if (seq_offsets.empty()) return {};
    std::vector<double> out(static_cast<std::size_t>(std::max(0, seq_offsets.back())), 0.0);
    for (std::size_t i = 0; i < seq_values.size(); ++i) {
        if (seq_offsets[i + 1] < seq_offsets[i] || seq_offsets[i] < 0 || seq_offsets[i + 1] > seq_offsets.back())
            throw std::invalid_argument("broadcast_to_tokens: seq_offsets must be non-decreasing from 0");
        for (int t = seq_offsets[i]; t < seq_offsets[i + 1]; ++t) out[static_cast<std::size_t>(t)] = seq_values[i];
    }
    return out;
}

}  // namespace mlk
