// The verdict rules on hand-made curves: where they fire, where they must
// not (a recovered dip, a noisy plateau), and when there is too little data.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
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

TEST(Collapse, FiresWhenTheWindowMeanFallsBelowHalfItsBestAndStaysThere) {
    // 15 steps at 0.5, then zeros: the 10-step mean drops below 0.25 once 6 zeros are in (window 11..20).
    const Verdict v = detect_collapse(constant_then(30, 15, 0.5, 0.0));
    EXPECT_TRUE(v.evaluated);
    EXPECT_TRUE(v.detected);
    EXPECT_EQ(v.step, 20);
    EXPECT_EQ(verdict_text(v),
              "yes: from step 20 the reward 10-step mean stayed below 50% of its best 0.5 "
              "and did not recover (last 0 at step 29)");
}

TEST(Collapse, ARecoveredDipIsNotACollapse) {
    // 0.6, a dip to 0 for 15 steps, back to 0.6: the window falls below 0.3 and climbs back.
    Series s;
    for (int i = 0; i < 60; ++i) s.push_back({i, i >= 20 && i < 35 ? 0.0 : 0.6});
    int dips = -1;
    const Verdict v = detect_collapse(s, {}, &dips);
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_EQ(dips, 1);
    EXPECT_NE(v.detail.find("1 earlier fall(s) recovered"), std::string::npos) << v.detail;
    // The same curve cut off before the climb back is a collapse, from where the fall began.
    const Verdict cut = detect_collapse(std::span(s).first(36));
    EXPECT_TRUE(cut.detected);
    EXPECT_EQ(cut.step, 25);  // window 16..25 holds 6 zeros: mean 0.24 < 0.3
}

TEST(Collapse, AFallAfterARecoveryStartsAtTheLastFall) {
    Series s;
    for (int i = 0; i < 80; ++i) s.push_back({i, (i >= 20 && i < 35) || i >= 60 ? 0.0 : 0.6});
    int dips = 0;
    const Verdict v = detect_collapse(s, {}, &dips);
    EXPECT_TRUE(v.detected);
    EXPECT_EQ(v.step, 65);
    EXPECT_EQ(dips, 1);
}

TEST(Collapse, ANoisyPlateauIsNotACollapse) {
    // Bernoulli-like rewards around 0.5 (each step the mean of 16 samples of 0/1): the 10-step mean wanders
    // well inside [0.25, 0.75], never below half its best.
    std::mt19937 rng(7);
    std::bernoulli_distribution coin(0.5);
    Series s;
    for (int i = 0; i < 300; ++i) {
        int hits = 0;
        for (int k = 0; k < 16; ++k) hits += coin(rng);
        s.push_back({i, hits / 16.0});
    }
    const Verdict v = detect_collapse(s);
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected) << v.detail;
}

TEST(Collapse, ExactlyHalfIsNotACollapse) {
    // 0.5 then 0.25 forever: the mean reaches 0.25 = 50% of 0.5, never below it (all exact in binary).
    const Verdict v = detect_collapse(constant_then(40, 10, 0.5, 0.25));
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_EQ(v.step, -1);
    EXPECT_EQ(v.detail, "last reward 10-step mean 0.25, best 0.5 (ending at step 9)");
}

TEST(Collapse, NeedsABestAboveTheFloor) {
    const Verdict v = detect_collapse(constant_then(30, 15, 0.08, 0.0));
    EXPECT_TRUE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_EQ(v.detail, "the reward 10-step mean never exceeded 0.1 (best 0.08)");
}

TEST(Collapse, TheThresholdsAreSettings) {
    // The same fall to 0.3 of the best: a collapse at the default 50%, none at 25%.
    const Series s = constant_then(40, 15, 1.0, 0.3);
    EXPECT_TRUE(detect_collapse(s).detected);
    VerdictThresholds t;
    set_verdict_option(t, "collapse_drop=0.25");
    EXPECT_FALSE(detect_collapse(s, t).detected);
    // A 5-step window sees the fall sooner.
    VerdictThresholds w;
    set_verdict_threshold(w, "window", "5");
    set_verdict_threshold(w, "min_finite", "3");
    EXPECT_LT(detect_collapse(s, w).step, detect_collapse(s).step);
}

TEST(Collapse, TooFewStepsOrTooFewFiniteValuesAreNotEvaluated) {
    const Verdict short_run = detect_collapse(Series{{0, 0.5}, {1, 0.0}});
    EXPECT_FALSE(short_run.evaluated);
    EXPECT_FALSE(short_run.detected);
    EXPECT_EQ(verdict_text(short_run),
              "not evaluated: 2 reward value(s); the rule needs a 10-step mean with at least 5 finite values");

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

TEST(Divergence, ShortAndMissingSeries) {
    EXPECT_FALSE(detect_divergence({}, {}).evaluated);
    EXPECT_EQ(verdict_text(detect_divergence({}, {})), "not evaluated: neither grad_norm nor k3_kl is stored");
    const Series g{{0, 0.1}}, k{{0, 1e-4}};
    EXPECT_TRUE(detect_divergence(g, k).evaluated);
    EXPECT_FALSE(detect_divergence(g, k).detected);
    // Only grad_norm stored (an older run): still judged on it.
    const Series bad{{0, 0.1}, {1, kNaN}};
    EXPECT_EQ(detect_divergence(bad, {}).step, 1);
}

TEST(Divergence, AStoredDivergedStatusCountsAtTheLastStep) {
    RunSeries s;
    s.reward_mean = s.grad_norm = s.k3_kl = constant_then(12, 12, 0.1, 0.1);
    EXPECT_FALSE(judge_run(s).divergence.detected);
    const RunVerdicts v = judge_run(s, {}, true);
    EXPECT_TRUE(v.divergence.detected);
    EXPECT_EQ(v.divergence.step, 11);
}

TEST(Blowup, TheWindowMeanAboveTenTimesTheEarlyLevel) {
    // k3_kl at 1e-4 for 20 steps, then 2e-3 (20x): the 10-step mean passes 1e-3 once 5 high values are in
    // (steps 20..24).
    const Series k = constant_then(40, 20, 1e-4, 2e-3);
    const Verdict v = detect_blowup(k, "k3_kl");
    EXPECT_TRUE(v.evaluated);
    EXPECT_TRUE(v.detected);
    EXPECT_EQ(v.step, 24);
    EXPECT_EQ(v.detail, "at step 24 the k3_kl 10-step mean 0.00105 is 10.5x its early level 0.0001");
}

TEST(Blowup, OneSpikeIsNotABlowupButASustainedRiseIs) {
    Series k = constant_then(40, 40, 1e-4, 1e-4);
    k[25].second = 5e-3;  // 50x for one step: the window mean is 5.9e-4, under 10x
    EXPECT_FALSE(detect_blowup(k, "k3_kl").detected);
    // Exactly 10x sustained is not above (powers of two keep the means exact).
    EXPECT_FALSE(detect_blowup(constant_then(40, 20, 0x1p-10, 10 * 0x1p-10), "k3_kl").detected);
    EXPECT_TRUE(detect_blowup(constant_then(40, 20, 0x1p-10, 11 * 0x1p-10), "k3_kl").detected);
}

TEST(Blowup, ZeroEarlyLevelSkipsTheRatio) {
    // Truly on policy: K3 KL is exactly 0, so any later positive value would be "infinitely" larger.
    Series k = constant_then(40, 40, 0.0, 0.0);
    k[30].second = 1e-6;
    const Verdict v = detect_blowup(k, "k3_kl");
    EXPECT_FALSE(v.evaluated);
    EXPECT_FALSE(v.detected);
    EXPECT_NE(v.detail.find("no ratio to rise by"), std::string::npos) << v.detail;
}

TEST(Blowup, JudgeRunTakesTheEarlierOfK3AndF2) {
    RunSeries s;
    s.reward_mean = constant_then(60, 60, 0.5, 0.5);
    s.grad_norm = constant_then(60, 60, 1.0, 1.0);
    s.k3_kl = constant_then(60, 40, 1e-4, 1e-2);
    s.f_at_2 = constant_then(60, 30, 0.001, 0.1);
    const RunVerdicts v = judge_run(s);
    EXPECT_TRUE(v.blowup.detected);
    EXPECT_EQ(v.blowup.step, 30);  // F@2 at 100x from step 30; k3_kl only from step 40
    EXPECT_NE(v.blowup.detail.find("F@2"), std::string::npos) << v.blowup.detail;
    EXPECT_FALSE(v.collapse.detected);
}

TEST(Warnings, F2AboveTheR3ThresholdAndGradNormFalling) {
    // The R3 paper's picture: F@2 climbs past 0.1 while the gradient norm sinks, then the reward collapses.
    RunSeries s;
    for (int i = 0; i < 80; ++i) {
        s.f_at_2.push_back({i, i < 30 ? 0.02 : 0.2});
        s.grad_norm.push_back({i, i < 35 ? 1.0 : 0.2});
        s.reward_mean.push_back({i, i < 50 ? 0.6 : 0.05});
        s.k3_kl.push_back({i, 1e-3});
    }
    const RunVerdicts v = judge_run(s);
    EXPECT_TRUE(v.f2_warning.detected);
    EXPECT_EQ(v.f2_warning.step, 34);  // window 25..34: 5 x 0.02 + 5 x 0.2 = 0.11
    EXPECT_TRUE(v.grad_fall.detected);
    EXPECT_EQ(v.grad_fall.step, 41);  // window 32..41: 3 x 1 + 7 x 0.2 = 0.44 < 0.5
    EXPECT_TRUE(v.collapse.detected);
    EXPECT_LT(v.f2_warning.step, v.collapse.step);
    EXPECT_LT(v.grad_fall.step, v.collapse.step);
    // A steady run warns of nothing.
    RunSeries calm;
    calm.f_at_2 = constant_then(80, 80, 0.02, 0.02);
    calm.grad_norm = constant_then(80, 80, 1.0, 1.0);
    const RunVerdicts c = judge_run(calm);
    EXPECT_TRUE(c.f2_warning.evaluated);
    EXPECT_FALSE(c.f2_warning.detected);
    EXPECT_FALSE(c.grad_fall.detected);
}

TEST(Thresholds, BadKeysAndValuesAreRefusedNamingThem) {
    VerdictThresholds t;
    try {
        set_verdict_option(t, "colapse_drop=0.3");
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("'colapse_drop' is unknown; allowed: window, min_finite"),
                  std::string::npos)
            << e.what();
    }
    for (const char* bad : {"collapse_drop=1.5", "collapse_drop=x", "window=2.5", "window=", "f2_warning=nan"}) {
        try {
            set_verdict_option(t, bad);
            FAIL() << bad;
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("allowed:"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(set_verdict_option(t, "window"), std::invalid_argument);
    EXPECT_THROW(set_verdict_option(t, "min_finite=20"), std::invalid_argument);  // more than the window
    EXPECT_EQ(t, VerdictThresholds{});                                            // nothing half-applied
}

TEST(Thresholds, JsonRoundTripsAndRefusesUnknownKeys) {
    VerdictThresholds t;
    set_verdict_option(t, "blowup_factor=20");
    set_verdict_option(t, "early_steps=5");
    EXPECT_EQ(verdict_thresholds_from_json(verdict_thresholds_json(t)), t);
    EXPECT_EQ(verdict_threshold(t, "blowup_factor"), 20);
    EXPECT_THROW(verdict_thresholds_from_json({{"drop", 0.5}}), std::invalid_argument);
    EXPECT_THROW(verdict_thresholds_from_json({{"window", "10"}}), std::invalid_argument);
    EXPECT_EQ(verdict_threshold_infos().size(), verdict_thresholds_json(t).size());
}

TEST(Verdicts, RuleTextsNameTheThresholdsInForce) {
    EXPECT_NE(collapse_rule_text().find("10-step mean"), std::string::npos);
    EXPECT_NE(collapse_rule_text().find("50%"), std::string::npos);
    EXPECT_NE(collapse_rule_text().find("0.1"), std::string::npos);
    EXPECT_NE(blowup_rule_text().find("10\u00d7"), std::string::npos);
    EXPECT_NE(warning_rule_text().find("0.1"), std::string::npos);
    VerdictThresholds t;
    set_verdict_option(t, "collapse_drop=0.3");
    EXPECT_NE(collapse_rule_text(t).find("30%"), std::string::npos) << collapse_rule_text(t);
}

}  // namespace
