// Verdicts on a whole run: did its reward collapse, did its training diverge?
// One set of rules (and the sentences that explain them) for every reader:
// reports, the CLI's `show` and the stability lab.
//
//  - collapse: m_i = mean of the finite reward_mean values of the 10 steps
//    ending at step i (windows with fewer than 5 finite values are skipped).
//    Collapse at the first i where max_{j<=i} m_j > 0.1 and
//    m_i < 0.5 * max_{j<=i} m_j. Not evaluated with fewer than 10 steps.
//  - divergence: the first step where grad_norm or k3_kl is NaN or infinite,
//    or where k3_kl exceeds 10x its early median (median of the finite k3_kl
//    of the first min(10, ceil(n/2)) steps, checked on the later steps;
//    skipped when that median is 0, as in a truly on-policy run).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/metrics/run_stats.h"

namespace mlk {

// The rules' constants, for readers that draw them (a threshold line, a window).
inline constexpr int kCollapseWindow = 10;         // steps per reward mean
inline constexpr int kCollapseMinFinite = 5;       // finite values a window needs
inline constexpr double kCollapseMinBest = 0.1;    // the best mean must exceed this first
inline constexpr double kCollapseDrop = 0.5;       // collapse below this share of the best mean
inline constexpr int kDivergenceEarlySteps = 10;   // at most this many steps make the early window
inline constexpr double kDivergenceK3Factor = 10;  // k3_kl above this multiple of its early median

struct Verdict {
    bool evaluated = false;  // enough data to decide
    bool detected = false;
    int64_t step = -1;   // first step at which the rule held
    std::string detail;  // one sentence: the evidence, or why it was not evaluated
};

// `reward_mean` as stored, ascending steps.
Verdict detect_collapse(std::span<const MetricPoint> reward_mean);
// `grad_norm` and `k3_kl` as stored, ascending steps; either may be empty.
Verdict detect_divergence(std::span<const MetricPoint> grad_norm, std::span<const MetricPoint> k3_kl);

// "yes: <detail>", "no: <detail>" or "not evaluated: <detail>".
std::string verdict_text(const Verdict& v);

// The rules in one or two sentences each, for notes under a verdict table.
const std::string& collapse_rule_text();
const std::string& divergence_rule_text();

}  // namespace mlk
