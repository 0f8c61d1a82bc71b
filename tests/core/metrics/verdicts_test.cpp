// The collapse and divergence rules: where they fire, where they must not, and
// when there is too little data to say.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/metrics/verdicts.h"

using namespace mlk;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
using Series = std::vector<MetricPoint>;

Series constant_then(int n, int switch_at, double before, double after) {
    Series s;
    for (int i = 0; i < n; ++i) s.push_back({i, i < switch_at ? before : after});
    return s;
}

TEST(Collapse, FiresWhenTheWindowMeanFallsBelowHalfItsBest) {
    // 15 steps at 0.5, then zeros: the 10-step mean drops below 0.25 once 6 zeros are in (window 11..20).
    const Verdict v = detect_collapse(constant_then(30, 15, 0.5, 0.0));
    EXPECT_TRUE(v.evaluated);
    EXPECT_TRUE(v.detected);
    EXPECT_EQ(v.step, 20);
    EXPECT_EQ(verdict_text(v),
              "yes: at step 20 the 10-step reward mean 0.2 fell below 50% of its best 0.5 "
              "(10 steps ending at step 9)");
}

TEST(Collapse, ExactlyHalfIsNotACollapse) {
    // 0.5 then 0.25 forever: the mean reaches 0.25 = 50% of 0.5, never below it (all exact in binary).
    const Verdict v = detect_collapse(constant_then(40, 10, 0.5, 0.25));
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_EQ(v.step, -1);
    EXPECT_EQ(v.detail, "last 10-step reward mean 0.25, best 0.5 (ending at step 9)");
}

TEST(Collapse, NeedsABestAboveTheFloor) {
    const Verdict v = detect_collapse(constant_then(30, 15, 0.08, 0.0));
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_EQ(v.detail, "the 10-step reward mean never exceeded 0.1 (best 0.08)");
}

TEST(Collapse, TooFewStepsOrTooFewFiniteValuesAreNotEvaluated) {
    const Verdict short_run = detect_collapse(Series{{0, 0.5}, {1, 0.0}});
    EXPECT_FALSE(short_run.evaluated);
    EXPECT_FALSE(short_run.detected);
    EXPECT_EQ(verdict_text(short_run), "not evaluated: 2 reward value(s), the rule needs at least 10 steps");

    Series mostly_nan;
    for (int i = 0; i < 20; ++i) mostly_nan.push_back({i, i % 3 == 0 ? 0.5 : kNaN});  // at most 4 finite per window
    const Verdict v = detect_collapse(mostly_nan);
    EXPECT_FALSE(v.evaluated);
    EXPECT_NE(v.detail.find("at least 5 finite"), std::string::npos) << v.detail;
}

TEST(Collapse, NonFiniteRewardsAreSkippedNotAveraged) {
    // A NaN and an Inf inside a steady run: the window means stay 0.5, no collapse.
    Series s = constant_then(30, 30, 0.5, 0.5);
    s[12].second = kNaN;
    s[18].second = kInf;
    EXPECT_FALSE(detect_collapse(s).detected);
    EXPECT_TRUE(detect_collapse(s).evaluated);
}

TEST(Collapse, StepsAreTheStoredOnesNotIndices) {
    // A resumed run may start at step 100: the verdict names stored steps.
    Series s;
    for (int i = 0; i < 30; ++i) s.push_back({100 + 2 * i, i < 15 ? 0.5 : 0.0});
    EXPECT_EQ(detect_collapse(s).step, 140);
}

TEST(Divergence, ANonFiniteGradNormOrKlIsDivergenceAtItsStep) {
    Series g, k;
    for (int s = 0; s < 20; ++s) {
        g.push_back({s, s == 7 ? kNaN : 0.1});
        k.push_back({s, s == 9 ? -kInf : 1e-4});
    }
    Verdict v = detect_divergence(g, k);
    EXPECT_TRUE(v.detected);
    EXPECT_EQ(v.step, 7);
    EXPECT_EQ(verdict_text(v), "yes: at step 7 grad_norm is NaN");
    g[7].second = 0.1;
    v = detect_divergence(g, k);
    EXPECT_EQ(v.step, 9);
    EXPECT_EQ(v.detail, "at step 9 k3_kl is -inf");
}

TEST(Divergence, KlAboveTenTimesItsEarlyMedian) {
    Series g = constant_then(20, 20, 0.1, 0.1), k = constant_then(20, 20, 1e-4, 1e-4);
    k[15].second = 2e-3;  // 20x
    Verdict v = detect_divergence(g, k);
    EXPECT_TRUE(v.detected);
    EXPECT_EQ(v.step, 15);
    EXPECT_EQ(v.detail, "at step 15 k3_kl 0.002 is 20x its early median 0.0001 (steps 0\u20139)");
    k[15].second = 1e-3;  // exactly 10x: not above
    v = detect_divergence(g, k);
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_EQ(v.detail, "grad_norm and k3_kl finite throughout; k3_kl stayed within 10x its early median 0.0001");
}

TEST(Divergence, TheEarlierOfTheTwoRulesWins) {
    Series g = constant_then(20, 20, 0.1, 0.1), k = constant_then(20, 20, 1e-4, 1e-4);
    k[12].second = 5e-3;
    g[16].second = kInf;
    EXPECT_EQ(detect_divergence(g, k).step, 12);
    g[11].second = kInf;
    EXPECT_EQ(detect_divergence(g, k).step, 11);
}

TEST(Divergence, ZeroEarlyMedianSkipsTheRatioTest) {
    // Truly on policy: K3 KL is exactly 0, so any later positive value would be "infinitely" larger.
    Series g = constant_then(20, 20, 0.1, 0.1), k = constant_then(20, 20, 0.0, 0.0);
    k[15].second = 1e-6;
    const Verdict v = detect_divergence(g, k);
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_EQ(v.detail, "grad_norm and k3_kl finite throughout; k3_kl ratio test skipped (early median 0)");
}

TEST(Divergence, ShortAndMissingSeries) {
    EXPECT_FALSE(detect_divergence({}, {}).evaluated);
    EXPECT_EQ(verdict_text(detect_divergence({}, {})), "not evaluated: neither grad_norm nor k3_kl is stored");
    // One k3_kl value: the early window is all there is.
    const Series g{{0, 0.1}}, k{{0, 1e-4}};
    const Verdict v = detect_divergence(g, k);
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_NE(v.detail.find("needs steps after the early window"), std::string::npos) << v.detail;
    // Only grad_norm stored (an older run): still judged on it.
    const Series bad{{0, 0.1}, {1, kNaN}};
    EXPECT_EQ(detect_divergence(bad, {}).step, 1);
}

TEST(Verdicts, RuleTextsNameTheThresholds) {
    EXPECT_NE(collapse_rule_text().find("10 steps"), std::string::npos);
    EXPECT_NE(collapse_rule_text().find("50%"), std::string::npos);
    EXPECT_NE(collapse_rule_text().find("0.1"), std::string::npos);
    EXPECT_NE(divergence_rule_text().find("10\u00d7"), std::string::npos);
}

}  // namespace
