// The stability lab's statistics: one run's outcome (its verdicts and reward
// figures) and a configuration's summary over its seeds, compared against a
// baseline configuration with a bootstrap interval. Pure: the store reader
// is core/store/sweep_summary.h. Every reader (CLI `sweep`, the sweep table,
// the sweep report) takes its numbers from here.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/metrics/run_stats.h"
#include "core/metrics/verdicts.h"

namespace mlk {

struct RunOutcome {
    int64_t run_id = 0;
    int64_t seed = 0;
    std::string status;  // as the store reads it ("finished", "interrupted", ...)
    int64_t steps = 0;   // reward values stored
    // Reward figures, each over windows so one lucky step decides nothing:
    double final_reward = RunStats::kNone;  // mean reward of the last `window` steps
    double best_reward = RunStats::kNone;   // highest `window`-step mean
    double auc = RunStats::kNone;           // area under the reward curve per step: the mean reward over all steps
    RunVerdicts verdicts;
    bool warned() const { return verdicts.f2_warning.detected || verdicts.grad_fall.detected; }
};

RunOutcome run_outcome(const RunSeries& s, const VerdictThresholds& t = {}, bool diverged_status = false);

// The median of v's finite values; RunStats::kNone when it has none.
double median(std::vector<double> v);

// A percentile bootstrap interval of mean(b) - mean(a): each group's finite
// values resampled with replacement `resamples` times. Deterministic (a fixed
// generator seed), so a report shows the same interval every time. NaN
// bounds when either group has no finite value.
struct Interval {
    double lo = RunStats::kNone, hi = RunStats::kNone;
};
inline constexpr int kBootstrapResamples = 4000;
inline constexpr double kBootstrapLevel = 0.95;
Interval bootstrap_mean_difference(std::span<const double> a, std::span<const double> b,
                                   int resamples = kBootstrapResamples, double level = kBootstrapLevel);

// A percentile bootstrap interval of the median of v's finite values (each
// resample as many draws with replacement as v has), deterministic the same
// way; NaN bounds when v has no finite value. It treats the values as
// independent draws: for the bench's paired step ratios, which a machine's
// slow drift correlates, it is an approximation.
Interval bootstrap_median(std::span<const double> v, int resamples = kBootstrapResamples,
                          double level = kBootstrapLevel);

// The interval excludes 0: the difference is more than seed noise.
bool interval_excludes_zero(const Interval& ci);

// The summary's figures as text, one way for the CLI, the sweep table and
// the sweep report (each through value_text); "" where undefined, for the
// caller's own dash. `plus_minus`: "±", or "+-" where only ASCII will do.
// "0.512 ± 0.12" (the sd over seeds; "0.512" with one seed).
std::string spread_text(const Spread& s, const std::string& plus_minus);
// "+0.21 [+0.12, +0.30]" (the interval only where it is defined).
std::string delta_text(double delta, const Interval& ci);

struct ConfigSummary {
    std::string name;
    std::vector<RunOutcome> runs;  // by seed
    int collapsed = 0, diverged = 0, blown_up = 0, warned = 0, recovered_dips = 0;
    Spread final_reward, best_reward, auc;
    double median_collapse_step = RunStats::kNone;  // over the collapsed runs
    // Over the collapsed runs with a warning: steps from the first warning to
    // the collapse (positive: the warning came first).
    double median_warning_lead = RunStats::kNone;
    // Against the baseline configuration (NaN for the baseline itself).
    bool baseline = false;
    double delta_final = RunStats::kNone, delta_auc = RunStats::kNone;
    Interval delta_final_ci, delta_auc_ci;
};

// Summaries in the given order; `baseline` indexes `configs` (the first, by
// convention the uncorrected one).
std::vector<ConfigSummary> summarize_configs(std::vector<std::pair<std::string, std::vector<RunOutcome>>> configs,
                                             size_t baseline = 0);

}  // namespace mlk
