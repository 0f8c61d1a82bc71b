// Verdicts on a whole run: did its reward collapse, did its training
// diverge, did its mismatch blow up, did the R3 paper's early warnings fire?
// One set of rules (and the sentences that explain them) for every reader:
// reports, the CLI's `show` and `sweep`, the sweep table. The thresholds are
// settings (VerdictThresholds) with documented defaults, the same for every
// family; nothing here is tuned per preset.
//
// Every rule reads trailing window means: m_i = mean of the finite values of
// the `window` steps ending at step i (windows with fewer than `min_finite`
// finite values are skipped), so one noisy step decides nothing.
//
//  - collapse: the reward window mean falls below collapse_drop x its best
//    so far (after that best exceeded collapse_min_best) and does not
//    recover: it is still below at the run's last window. A fall that climbs
//    back above the line is a recovered dip, not a collapse. The verdict's
//    step is where the last, unrecovered fall began.
//  - divergence: the first step where grad_norm or k3_kl is NaN or infinite.
//  - mismatch blow-up: the k3_kl or F@2 window mean rises above
//    blowup_factor x its early level (the median of the finite values of the
//    first min(early_steps, ceil(n/2)) steps; skipped where that level is 0,
//    as in a truly on-policy run).
//  - early warnings (R3 paper: before a collapse F(t=2) rises above 0.1
//    while the gradient norm falls): the F@2 window mean above f2_warning,
//    and the grad_norm window mean below grad_fall x its highest window mean.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics/run_stats.h"

namespace mlk {

struct VerdictThresholds {
    int window = 10;                 // steps per window mean
    int min_finite = 5;              // finite values a window needs
    double collapse_min_best = 0.1;  // the best reward window mean must exceed this first
    double collapse_drop = 0.5;      // collapse below this share of the best window mean
    int early_steps = 10;            // at most this many first steps make the early level
    double blowup_factor = 10;       // k3_kl / F@2 window mean above this multiple of its early level
    double f2_warning = 0.1;         // F@2 window mean above this: the R3 paper's warning
    double grad_fall = 0.5;          // grad_norm window mean below this share of its highest window mean

    bool operator==(const VerdictThresholds&) const = default;
};

// The thresholds' keys ("window", "collapse_drop", ...) with their meaning,
// allowed range and default, for `--verdict key=value`, the GUI's editor and
// the README.
struct VerdictThresholdInfo {
    const char* key;
    const char* meaning;
    double min, max;  // inclusive
    bool integer;
};
const std::vector<VerdictThresholdInfo>& verdict_threshold_infos();
double verdict_threshold(const VerdictThresholds& t, const std::string& key);
// Sets one threshold from text; std::invalid_argument naming the key and the
// allowed keys or range on bad input.
void set_verdict_threshold(VerdictThresholds& t, const std::string& key, const std::string& value);
// "key=value" as `--verdict` takes it.
void set_verdict_option(VerdictThresholds& t, const std::string& key_eq_value);
nlohmann::json verdict_thresholds_json(const VerdictThresholds& t);
// Keys absent keep their defaults; unknown keys and bad values are refused.
VerdictThresholds verdict_thresholds_from_json(const nlohmann::json& j);

// Trailing window means (step at the window's end, mean of its finite
// values); windows with fewer than min_finite finite values are skipped.
std::vector<MetricPoint> window_means(std::span<const MetricPoint> s, const VerdictThresholds& t);

struct Verdict {
    bool evaluated = false;  // enough data to decide
    bool detected = false;
    int64_t step = -1;   // first step at which the rule held (collapse: where the unrecovered fall began)
    std::string detail;  // one sentence: the evidence, or why it was not evaluated
};

// `reward_mean` as stored, ascending steps. `recovered_dips` (optional)
// receives how many falls below the line climbed back.
Verdict detect_collapse(std::span<const MetricPoint> reward_mean, const VerdictThresholds& t = {},
                        int* recovered_dips = nullptr);
// `grad_norm` and `k3_kl` as stored, ascending steps; either may be empty.
Verdict detect_divergence(std::span<const MetricPoint> grad_norm, std::span<const MetricPoint> k3_kl);
// `name` names the series in the detail ("k3_kl", "F@2").
Verdict detect_blowup(std::span<const MetricPoint> series, const std::string& name, const VerdictThresholds& t = {});
Verdict detect_f2_warning(std::span<const MetricPoint> f_at_2, const VerdictThresholds& t = {});
Verdict detect_grad_fall(std::span<const MetricPoint> grad_norm, const VerdictThresholds& t = {});

// The series the verdicts read, as stored (any may be empty).
struct RunSeries {
    std::vector<MetricPoint> reward_mean, grad_norm, k3_kl, f_at_2;
};
inline constexpr const char* kVerdictMetrics[] = {"reward_mean", "grad_norm", "k3_kl", "F@2"};

struct RunVerdicts {
    Verdict collapse, divergence, blowup, f2_warning, grad_fall;
    int recovered_dips = 0;
};
// Every verdict of one run; `diverged_status`: the store says the run
// diverged (its loop stopped on a non-finite value), which counts as
// divergence at its last step even if the stored series are finite.
RunVerdicts judge_run(const RunSeries& s, const VerdictThresholds& t = {}, bool diverged_status = false);

// "yes: <detail>", "no: <detail>" or "not evaluated: <detail>".
std::string verdict_text(const Verdict& v);

// The rules in a sentence or two each, with the thresholds in force, for
// notes under a verdict table.
std::string collapse_rule_text(const VerdictThresholds& t = {});
std::string divergence_rule_text();
std::string blowup_rule_text(const VerdictThresholds& t = {});
std::string warning_rule_text(const VerdictThresholds& t = {});

}  // namespace mlk
