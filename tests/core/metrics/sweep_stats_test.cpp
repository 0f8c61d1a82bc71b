// A configuration's summary over seeds: verdict counts, reward figures, and
// the difference against the baseline with its bootstrap interval.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/metrics/sweep_stats.h"

using namespace mlk;

namespace {

using Series = std::vector<MetricPoint>;

// A reward curve: `high` until `fall_at` (never when < 0), then `low`.
RunSeries curve(int n, double high, int fall_at = -1, double low = 0.0) {
    RunSeries s;
    for (int i = 0; i < n; ++i) {
        s.reward_mean.push_back({i, fall_at >= 0 && i >= fall_at ? low : high});
        s.grad_norm.push_back({i, 1.0});
        s.k3_kl.push_back({i, 1e-3});
    }
    return s;
}

TEST(RunOutcome, RewardFiguresAreWindowMeans) {
    RunSeries s = curve(40, 0.8, 30, 0.2);
    s.reward_mean[5].second = 1.0;  // one lucky step does not make the best
    const RunOutcome o = run_outcome(s);
    EXPECT_DOUBLE_EQ(o.final_reward, 0.2);  // last 10 steps
    EXPECT_NEAR(o.best_reward, 0.82, 1e-12);
    EXPECT_NEAR(o.auc, (29 * 0.8 + 1.0 + 10 * 0.2) / 40, 1e-12);
    EXPECT_EQ(o.steps, 40);
    EXPECT_TRUE(o.verdicts.collapse.detected);
    // Shorter than a window: the best is the mean of what there is.
    const RunOutcome shorty = run_outcome(curve(3, 0.5));
    EXPECT_DOUBLE_EQ(shorty.best_reward, 0.5);
    EXPECT_FALSE(shorty.verdicts.collapse.evaluated);
}

TEST(Bootstrap, TheIntervalHoldsTheDifferenceAndNarrowsWithLessSpread) {
    const std::vector<double> a{0.1, 0.2, 0.15, 0.12, 0.18}, b{0.5, 0.6, 0.55, 0.52, 0.58};
    const Interval ci = bootstrap_mean_difference(a, b);
    EXPECT_LT(ci.lo, 0.4);
    EXPECT_GT(ci.hi, 0.4);
    EXPECT_GT(ci.lo, 0.3);  // clearly apart: the interval excludes 0 by far
    // The same means with ten times the spread: a wider interval that reaches across 0.
    const std::vector<double> wa{-0.4, 0.7, 0.15, -0.15, 0.45}, wb{0.0, 1.1, 0.55, 0.25, 0.85};
    const Interval wide = bootstrap_mean_difference(wa, wb);
    EXPECT_GT(wide.hi - wide.lo, 5 * (ci.hi - ci.lo));
    // Deterministic: the same numbers every time.
    const Interval again = bootstrap_mean_difference(a, b);
    EXPECT_EQ(again.lo, ci.lo);
    EXPECT_EQ(again.hi, ci.hi);
    // Identical single values: a zero-width interval at the difference.
    const std::vector<double> one{0.25}, two{0.75};
    const Interval point = bootstrap_mean_difference(one, two);
    EXPECT_EQ(point.lo, 0.5);
    EXPECT_EQ(point.hi, 0.5);
    // Non-finite values are left out; an empty group gives no interval.
    const std::vector<double> with_nan{0.25, NAN}, none{NAN};
    EXPECT_EQ(bootstrap_mean_difference(with_nan, two).lo, 0.5);
    EXPECT_TRUE(std::isnan(bootstrap_mean_difference(none, two).lo));
}

TEST(Bootstrap, TheMediansIntervalHoldsTheMedianAndIgnoresOneOutlier) {
    // Sixteen step-time ratios around 1.05, one of them a burst of the other tenant.
    std::vector<double> r{1.04, 1.06, 1.05, 1.03, 1.07, 1.05, 1.04, 1.06,
                          1.05, 1.02, 1.08, 1.05, 1.04, 1.06, 1.05, 3.0};
    const Interval ci = bootstrap_median(r);
    EXPECT_LE(ci.lo, median(r));
    EXPECT_GE(ci.hi, median(r));
    EXPECT_GT(ci.lo, 1.0);  // all but the burst above 1: the interval excludes 1
    EXPECT_LT(ci.hi, 1.1);  // and the burst does not drag it up, as it would a mean
    // Deterministic.
    const Interval again = bootstrap_median(r);
    EXPECT_EQ(again.lo, ci.lo);
    EXPECT_EQ(again.hi, ci.hi);
    // Ratios on both sides of 1: an interval across it.
    const std::vector<double> mixed{0.92, 1.08, 0.97, 1.05, 1.01, 0.95, 1.10, 0.99};
    const Interval across = bootstrap_median(mixed);
    EXPECT_LT(across.lo, 1.0);
    EXPECT_GT(across.hi, 1.0);
    // One value: a zero-width interval at it; non-finite values are left out.
    const std::vector<double> one{1.25, NAN}, none{NAN};
    EXPECT_EQ(bootstrap_median(one).lo, 1.25);
    EXPECT_EQ(bootstrap_median(one).hi, 1.25);
    EXPECT_TRUE(std::isnan(bootstrap_median(none).lo));
}

TEST(ConfigSummary, CountsVerdictsAndComparesAgainstTheBaseline) {
    // Baseline: 4 of 5 seeds collapse at step 30; corrected: all 5 hold at 0.6.
    std::vector<RunOutcome> uncorrected, corrected;
    for (int seed = 1; seed <= 5; ++seed) {
        uncorrected.push_back(run_outcome(curve(60, 0.6, seed == 3 ? -1 : 30 + seed)));
        corrected.push_back(run_outcome(curve(60, 0.55 + 0.01 * seed)));
    }
    const auto sums = summarize_configs({{"uncorrected", uncorrected}, {"mis", corrected}});
    ASSERT_EQ(sums.size(), 2u);
    const ConfigSummary &u = sums[0], &m = sums[1];
    EXPECT_TRUE(u.baseline);
    EXPECT_FALSE(m.baseline);
    EXPECT_EQ(u.collapsed, 4);
    EXPECT_EQ(m.collapsed, 0);
    EXPECT_EQ(u.runs.size(), 5u);
    EXPECT_EQ(u.median_collapse_step, (37 + 39) / 2.0);  // falls at 31, 32, 34, 35; each detected 5 steps in
    EXPECT_TRUE(std::isnan(m.median_collapse_step));
    EXPECT_NEAR(u.final_reward.mean, 0.6 / 5, 1e-12);
    EXPECT_NEAR(m.final_reward.mean, 0.58, 1e-12);
    EXPECT_NEAR(m.delta_final, 0.58 - 0.12, 1e-12);
    EXPECT_GT(m.delta_final_ci.lo, 0);  // the corrected one is better beyond seed noise
    EXPECT_LE(m.delta_final_ci.lo, m.delta_final);
    EXPECT_GE(m.delta_final_ci.hi, m.delta_final);
    EXPECT_TRUE(std::isnan(u.delta_final));
    // Another baseline: the deltas flip sign.
    const auto flipped = summarize_configs({{"uncorrected", uncorrected}, {"mis", corrected}}, 1);
    EXPECT_NEAR(flipped[0].delta_final, -(0.58 - 0.12), 1e-12);
    EXPECT_LT(flipped[0].delta_final_ci.hi, 0);
}

// The same final rewards in another seed order: the means differ in their
// last bit (0.1 + 0.2 + 0.3 against 0.3 + 0.2 + 0.1), the delta is 0, not
// "-5.55e-17".
TEST(ConfigSummary, ADifferenceWithinTheMeansRoundingIsZero) {
    const auto outcomes = [](std::vector<double> finals) {
        std::vector<RunOutcome> out;
        for (double f : finals) {
            RunOutcome o;
            o.status = "finished";
            o.final_reward = o.best_reward = o.auc = f;
            out.push_back(o);
        }
        return out;
    };
    const auto sums = summarize_configs(
        {{"a", outcomes({0.1, 0.2, 0.3})}, {"b", outcomes({0.3, 0.2, 0.1})}, {"c", outcomes({0.1, 0.2, 0.3 + 1e-9})}});
    ASSERT_EQ(sums.size(), 3u);
    ASSERT_NE(sums[0].final_reward.mean, sums[1].final_reward.mean);  // the premise: the last bit differs
    EXPECT_EQ(sums[1].delta_final, 0.0);
    EXPECT_EQ(sums[1].delta_auc, 0.0);
    EXPECT_NEAR(sums[2].delta_final, 1e-9 / 3, 1e-15);  // a real difference stays, however small
}

TEST(ConfigSummary, WarningLeadIsTheStepsFromTheFirstWarningToTheCollapse) {
    RunSeries s = curve(80, 0.6, 50, 0.0);
    for (int i = 0; i < 80; ++i) s.f_at_2.push_back({i, i < 30 ? 0.01 : 0.3});
    const RunOutcome o = run_outcome(s);
    ASSERT_TRUE(o.verdicts.collapse.detected);
    ASSERT_TRUE(o.verdicts.f2_warning.detected);
    EXPECT_TRUE(o.warned());
    const auto sums = summarize_configs({{"one", {o}}});
    EXPECT_EQ(sums[0].warned, 1);
    EXPECT_EQ(sums[0].median_warning_lead, (double)(o.verdicts.collapse.step - o.verdicts.f2_warning.step));
    EXPECT_GT(sums[0].median_warning_lead, 0);
}

}  // namespace
