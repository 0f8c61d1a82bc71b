// The metric catalogue: what every per-step metric is, in one table. Its name
// (the stored key and CSV column), title, one-line meaning, formula, unit,
// which direction is better, what kind of quantity it is, its default axis,
// whether it is one of the key charts, and its group. The RL step fills a
// StepMetrics; to_named_values() walks the catalogue to make the stored
// record. Charts, the run browser, the metric summary, the CLI, exports and
// reports all read this table, so adding a metric is one row here, one field
// in StepMetrics and one assignment where it is computed.
#pragma once

#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/config/settings.h"

namespace mlk {

// Every per-step metric of an RL step. NaN until the step assigns it.
struct StepMetrics {
    static constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();
    // reward
    double reward_mean = kUnset, reward_std = kUnset, accuracy = kUnset, response_length = kUnset;
    // mismatch between the training and rollout log-probs of the sampled tokens
    double k3_kl = kUnset, kl = kUnset, logp_abs_diff_mean = kUnset, logp_abs_diff_max = kUnset;
    double f_1_1 = kUnset, f_1_5 = kUnset, f_2 = kUnset, f_5 = kUnset, f_10 = kUnset;
    double chi2_token = kUnset, chi2_seq = kUnset, tv_token = kUnset, tv_seq = kUnset;
    double training_ppl = kUnset, rollout_ppl = kUnset, log_ppl_diff = kUnset, log_ppl_abs_diff = kUnset;
    double ppl_ratio = kUnset;
    // by rollout-probability decade (kProbBucketEdges): p >= 0.1, 0.01, 1e-3, 1e-4, below
    double lowp_frac_e1 = kUnset, lowp_frac_e2 = kUnset, lowp_frac_e3 = kUnset, lowp_frac_e4 = kUnset;
    double lowp_frac_tail = kUnset;
    double lowp_count_e1 = kUnset, lowp_count_e2 = kUnset, lowp_count_e3 = kUnset, lowp_count_e4 = kUnset;
    double lowp_count_tail = kUnset;
    double lowp_abs_diff_e1 = kUnset, lowp_abs_diff_e2 = kUnset, lowp_abs_diff_e3 = kUnset;
    double lowp_abs_diff_e4 = kUnset, lowp_abs_diff_tail = kUnset;
    double lowp_k3_share_e1 = kUnset, lowp_k3_share_e2 = kUnset, lowp_k3_share_e3 = kUnset;
    double lowp_k3_share_e4 = kUnset, lowp_k3_share_tail = kUnset;
    // correction
    double ess = kUnset, is_weight_mean = kUnset, is_weight_min = kUnset, is_weight_max = kUnset;
    double truncated_fraction = kUnset, truncated_low_fraction = kUnset, masked_fraction = kUnset;
    double rejected_token_fraction = kUnset, rejected_seq_fraction = kUnset, vetoed_seq_fraction = kUnset;
    double kept_token_fraction = kUnset;
    // optimisation
    double entropy = kUnset, grad_norm = kUnset, policy_loss = kUnset, clip_fraction = kUnset, ppo_kl = kUnset;
    // routing (0 for dense models)
    double router_diff_router = kUnset, router_diff_token = kUnset, router_diff_sequence = kUnset;
    double router_diff_ministep = kUnset;
    double lr = kUnset;
    // speed
    double rollout_ms = kUnset, recompute_ms = kUnset, train_ms = kUnset, tokens_per_s = kUnset;
};

// The metrics of the rollout-probability buckets (core/metrics/mismatch.h,
// kProbBucketEdges), bucket by bucket: the RL step fills them and the
// drill-down draws them side by side. Each name is a catalogue row.
struct ProbBucketMetricNames {
    std::string_view count, frac, abs_diff, k3_share;
};
inline constexpr ProbBucketMetricNames kProbBucketMetrics[] = {
    {"lowp_count@1e-1", "lowp_frac@1e-1", "lowp_abs_diff@1e-1", "lowp_k3_share@1e-1"},
    {"lowp_count@1e-2", "lowp_frac@1e-2", "lowp_abs_diff@1e-2", "lowp_k3_share@1e-2"},
    {"lowp_count@1e-3", "lowp_frac@1e-3", "lowp_abs_diff@1e-3", "lowp_k3_share@1e-3"},
    {"lowp_count@1e-4", "lowp_frac@1e-4", "lowp_abs_diff@1e-4", "lowp_k3_share@1e-4"},
    {"lowp_count@0", "lowp_frac@0", "lowp_abs_diff@0", "lowp_k3_share@0"},
};

// Which way a metric should move; `none` for quantities that are neither good
// nor bad by themselves (a loss of a changing objective, a length, a time
// share). "Best" of a run follows it.
enum class Better { higher, lower, none };
// What a value is, for axes and formatting.
enum class MetricKind {
    fraction,    // in [0, 1]
    divergence,  // >= 0, 0 = the engines agree
    ratio,       // > 0, 1 = the engines agree
    entropy,     // nats, >= 0
    log_prob,    // a (signed) log-prob difference
    reward,      // task reward in [0, 1]
    length,      // tokens
    count,       // how many (tokens), >= 0
    loss,        // signed objective value
    norm,        // >= 0
    rate,        // a learning rate
    time_ms,     // milliseconds
    throughput,  // per second
};
enum class Axis { linear, log };

struct MetricInfo {
    std::string_view name;     // stored key, CSV column: "k3_kl"
    std::string_view title;    // chart title: "K3 KL (rollout ‖ train)"
    std::string_view meaning;  // one line for tooltips and the glossary
    std::string_view formula;  // r = lp_train - lp_roll, rho = exp(r), w an IS weight; "" for a plain measurement
    std::string_view unit;     // "" for dimensionless
    Better better;
    MetricKind kind;
    Axis axis;               // default y axis
    bool key_chart;          // shown by default in the workbench and in reports
    std::string_view group;  // Reward, Mismatch, Correction, Optimisation, Routing, Speed
    double StepMetrics::*field;
};

// The catalogue in display order (the CSV column order after `step`).
const std::vector<MetricInfo>& metric_catalogue();
const MetricInfo* find_metric(std::string_view name);  // nullptr when not a catalogue metric
// Names in catalogue order.
const std::vector<std::string>& metric_names();
// The key charts, in catalogue order.
std::vector<std::string> key_metric_names();
// `names` reordered: catalogue metrics first in catalogue order, then any other
// name (from an older or newer version) alphabetically. Duplicates kept once.
std::vector<std::string> order_metric_names(const std::vector<std::string>& names);
// Metrics whose values are never negative (fractions, divergences, ratios,
// norms, times ...): their axes start at 0 or go log.
bool metric_is_nonnegative(const MetricInfo& m);
// Is the metric a wall-clock measurement (differs from run to run by design)?
bool metric_is_timing(std::string_view name);

// (name, value) for every catalogue metric, in catalogue order.
std::vector<std::pair<std::string, double>> to_named_values(const StepMetrics& m);

// Names for enum_name() / enum_from_name() (core/config/settings.h).
template <>
struct EnumNames<Better> {
    static constexpr std::string_view names[] = {"higher", "lower", "none"};
};
template <>
struct EnumNames<MetricKind> {
    static constexpr std::string_view names[] = {"fraction", "divergence", "ratio",     "entropy", "log_prob",
                                                 "reward",   "length",     "count",     "loss",    "norm",
                                                 "rate",     "time_ms",    "throughput"};
};
template <>
struct EnumNames<Axis> {
    static constexpr std::string_view names[] = {"linear", "log"};
};

}  // namespace mlk
