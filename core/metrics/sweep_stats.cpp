#include "core/metrics/sweep_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace mlk {

namespace {

std::vector<double> finite_of(std::span<const double> v) {
    std::vector<double> out;
    for (double x : v)
        if (std::isfinite(x)) out.push_back(x);
    return out;
}

double mean_of(std::span<const double> v) { return spread(v).mean; }

// a.mean - b.mean, and 0 where that is within the rounding of the two means
// (each a sum of n doubles divided by n): seeds of two configurations with
// the same final rewards in another order read "-5.55e-17" for "no
// difference".
double mean_difference(const Spread& a, const Spread& b) {
    const double d = a.mean - b.mean;
    const double scale = std::max(std::abs(a.mean), std::abs(b.mean));
    const double rounding = 2.0 * (std::max(a.n, b.n) + 1) * std::numeric_limits<double>::epsilon() * scale;
    return std::abs(d) <= rounding ? 0.0 : d;
}

// The percentile interval at `level` of a bootstrap's resampled statistics.
Interval percentile_interval(std::vector<double> stats, double level) {
    std::sort(stats.begin(), stats.end());
    const double tail = (1 - level) / 2;
    auto at = [&](double q) {
        const size_t i = std::min(stats.size() - 1, (size_t)std::floor(q * (stats.size() - 1) + 0.5));
        return stats[i];
    };
    return {at(tail), at(1 - tail)};
}

// Every bootstrap draws from this seed: a report shows the same interval every time.
constexpr uint64_t kBootstrapSeed = 0x5eed5eedULL;

}  // namespace

double median(std::vector<double> v) {
    v = finite_of(v);
    if (v.empty()) return RunStats::kNone;
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

bool interval_excludes_zero(const Interval& ci) {
    return std::isfinite(ci.lo) && std::isfinite(ci.hi) && (ci.lo > 0 || ci.hi < 0);
}

std::string spread_text(const Spread& s, const std::string& plus_minus) {
    if (s.n == 0 || !std::isfinite(s.mean)) return {};
    if (s.n < 2 || !std::isfinite(s.std)) return value_text(s.mean, 3);
    return value_text(s.mean, 3) + " " + plus_minus + " " + value_text(s.std, 2);
}

std::string delta_text(double d, const Interval& ci) {
    if (!std::isfinite(d)) return {};
    const auto signed_text = [](double v) { return (v >= 0 ? "+" : "") + value_text(v, 3); };
    std::string t = signed_text(d);
    if (std::isfinite(ci.lo) && std::isfinite(ci.hi)) t += " [" + signed_text(ci.lo) + ", " + signed_text(ci.hi) + "]";
    return t;
}

RunOutcome run_outcome(const RunSeries& s, const VerdictThresholds& t, bool diverged_status) {
    RunOutcome o;
    o.verdicts = judge_run(s, t, diverged_status);
    o.steps = (int64_t)s.reward_mean.size();
    const RunStats st = run_stats(s.reward_mean, Better::higher, t.window);
    o.final_reward = st.mean_last;
    std::vector<double> all;
    for (const auto& p : s.reward_mean) all.push_back(p.second);
    o.auc = mean_of(all);
    // The best window mean, with the verdicts' windows; a run shorter than
    // one window: the mean of what there is.
    double best = -INFINITY;
    for (const auto& [step, m] : window_means(s.reward_mean, t)) best = std::max(best, m);
    if (s.reward_mean.size() < (size_t)t.window) best = o.auc;
    if (std::isfinite(best)) o.best_reward = best;
    return o;
}

Interval bootstrap_mean_difference(std::span<const double> a_in, std::span<const double> b_in, int resamples,
                                   double level) {
    const std::vector<double> a = finite_of(a_in), b = finite_of(b_in);
    if (a.empty() || b.empty() || resamples < 1) return {};
    std::mt19937_64 rng(kBootstrapSeed);
    std::uniform_int_distribution<size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
    std::vector<double> diffs(resamples);
    for (double& d : diffs) {
        double sa = 0, sb = 0;
        for (size_t i = 0; i < a.size(); ++i) sa += a[pick_a(rng)];
        for (size_t i = 0; i < b.size(); ++i) sb += b[pick_b(rng)];
        d = sb / b.size() - sa / a.size();
    }
    return percentile_interval(std::move(diffs), level);
}

Interval bootstrap_median(std::span<const double> v_in, int resamples, double level) {
    const std::vector<double> v = finite_of(v_in);
    if (v.empty() || resamples < 1) return {};
    std::mt19937_64 rng(kBootstrapSeed);
    std::uniform_int_distribution<size_t> pick(0, v.size() - 1);
    std::vector<double> medians(resamples), draw(v.size());
    for (double& m : medians) {
        for (double& x : draw) x = v[pick(rng)];
        m = median(draw);
    }
    return percentile_interval(std::move(medians), level);
}

std::vector<ConfigSummary> summarize_configs(std::vector<std::pair<std::string, std::vector<RunOutcome>>> configs,
                                             size_t baseline) {
    std::vector<ConfigSummary> out;
    auto column = [](const std::vector<RunOutcome>& runs, double RunOutcome::*f) {
        std::vector<double> v;
        for (const auto& r : runs) v.push_back(r.*f);
        return v;
    };
    for (auto& [name, runs] : configs) {
        ConfigSummary c;
        c.name = name;
        c.runs = std::move(runs);
        std::vector<double> collapse_steps, leads;
        for (const RunOutcome& r : c.runs) {
            const RunVerdicts& v = r.verdicts;
            c.collapsed += v.collapse.detected;
            c.diverged += v.divergence.detected;
            c.blown_up += v.blowup.detected;
            c.warned += r.warned();
            c.recovered_dips += v.recovered_dips;
            if (!v.collapse.detected) continue;
            collapse_steps.push_back((double)v.collapse.step);
            int64_t first_warning = INT64_MAX;
            for (const Verdict* w : {&v.f2_warning, &v.grad_fall})
                if (w->detected) first_warning = std::min(first_warning, w->step);
            if (first_warning != INT64_MAX) leads.push_back((double)(v.collapse.step - first_warning));
        }
        c.final_reward = spread(column(c.runs, &RunOutcome::final_reward));
        c.best_reward = spread(column(c.runs, &RunOutcome::best_reward));
        c.auc = spread(column(c.runs, &RunOutcome::auc));
        c.median_collapse_step = median(collapse_steps);
        c.median_warning_lead = median(leads);
        out.push_back(std::move(c));
    }
    if (baseline < out.size()) {
        const ConfigSummary& base = out[baseline];
        const std::vector<double> base_final = column(base.runs, &RunOutcome::final_reward),
                                  base_auc = column(base.runs, &RunOutcome::auc);
        for (size_t i = 0; i < out.size(); ++i) {
            ConfigSummary& c = out[i];
            if (i == baseline) {
                c.baseline = true;
                continue;
            }
            const std::vector<double> f = column(c.runs, &RunOutcome::final_reward),
                                      a = column(c.runs, &RunOutcome::auc);
            c.delta_final = mean_difference(c.final_reward, base.final_reward);
            c.delta_auc = mean_difference(c.auc, base.auc);
            c.delta_final_ci = bootstrap_mean_difference(base_final, f);
            c.delta_auc_ci = bootstrap_mean_difference(base_auc, a);
        }
    }
    return out;
}

}  // namespace mlk
