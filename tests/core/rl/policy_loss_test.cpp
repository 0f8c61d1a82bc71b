// Hand-computed values and finite-difference gradients of core/rl/policy_loss,
// the advantage estimators of core/rl/advantage, and the optimizer's gradient norm.
#include "core/rl/policy_loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/rl/advantage.h"
#include "core/rl/optim.h"
#include "kernels/kernels.h"

namespace mlk {
namespace {

// Two sequences; lp_anchor = -1 everywhere, d = lp_theta - lp_anchor (all exact in float):
//   seq0 (A = +1): t0 d = +0.5   ratio e^.5  = 1.648721271  w 1
//                  t1 d = -0.5   ratio e^-.5 = 0.606530660  w 0.5
//                  t2 d = +0.125 ratio e^.125= 1.133148453  w 2
//   seq1 (A = -2): t3 d = -0.5   ratio 0.606530660          w 1
//                  t4 d = +0.5   ratio 1.648721271          w 1.5
//                  t5 DROPPED (keep 0), d = +3, w 7: must change nothing
struct Batch {
    std::vector<float> theta{-0.5f, -1.5f, -0.875f, -1.5f, -0.5f, 2.0f};
    std::vector<float> anchor{-1.0f, -1.0f, -1.0f, -1.0f, -1.0f, -1.0f};
    std::vector<double> adv{1.0, -2.0};
    std::vector<double> w{1.0, 0.5, 2.0, 1.0, 1.5, 7.0};
    std::vector<std::uint8_t> keep{1, 1, 1, 1, 1, 0};
    std::vector<int> off{0, 3, 6};
    PolicyLossResult run(const PolicyLossSettings& s, const std::vector<float>& th) const {
        return policy_loss(s, th, anchor, adv, w, keep, off);
    }
    PolicyLossResult run(const PolicyLossSettings& s) const { return run(s, theta); }
};

// Central differences with h = 2^-8: lp_theta +- h stays exact in float, so the
// only error is the O(h^2) truncation (all test points are away from kinks).
void expect_fd_gradient(const Batch& b, const PolicyLossSettings& s, double tol = 2e-5, double h = 1.0 / 256.0) {
    const auto base = b.run(s);
    for (std::size_t t = 0; t < b.theta.size(); ++t) {
        auto p = b.theta, m = b.theta;
        p[t] = static_cast<float>(p[t] + h);
        m[t] = static_cast<float>(m[t] - h);
        ASSERT_EQ(double(p[t]) - double(b.theta[t]), h);
        const double fd = (b.run(s, p).loss - b.run(s, m).loss) / (2 * h);
        EXPECT_NEAR(base.grad[t], fd, tol * std::max(1.0, std::fabs(fd))) << "token " << t;
    }
}

PolicyLossSettings ppo(LossAggregation agg) {
    PolicyLossSettings s;
    s.type = PolicyLossType::ppo;
    s.eps_low = 0.2;
    s.eps_high = 0.28;  // clip range [0.8, 1.28]
    s.aggregation = agg;
    return s;
}

TEST(PolicyLoss, PpoTokenMeanByHand) {
    Batch b;
    const auto r = b.run(ppo(LossAggregation::token_mean));
    // t0 A>0, ratio 1.6487 > 1.28: min(1.6487, 1.28) = 1.28 clipped   -> loss -1*1.28
    // t1 A>0, ratio .6065 < .8: min(.6065, .8) = .6065 unclipped      -> loss -.5*.6065
    // t2 inside                                                       -> loss -2*1.1331
    // t3 A<0, ratio .6065: min(-1.2131, .8*-2 = -1.6) = -1.6 clipped  -> loss +1.6
    // t4 A<0, ratio 1.6487: min(-3.2974, -2.56) = -3.2974 unclipped   -> loss +1.5*3.2974
    // sum = -1.28 - .30327 - 2.26630 + 1.6 + 4.94616 = 2.69660; / 5 kept = 0.5393203152
    EXPECT_NEAR(r.loss, 0.539320315222083, 1e-12);
    EXPECT_EQ(r.num_kept_tokens, 5u);
    // grad = -w*A*ratio/5 on unclipped, 0 on clipped and dropped
    const std::vector<double> g{0.0, -0.06065306597126334, -0.45325938122673054, 0.0, 0.989232762420077, 0.0};
    for (std::size_t t = 0; t < g.size(); ++t) EXPECT_NEAR(r.grad[t], g[t], 1e-12) << t;
    // clipped: t0 (high), t3 (low) -> 2/5
    EXPECT_DOUBLE_EQ(r.clip_fraction, 0.4);
    EXPECT_DOUBLE_EQ(r.clip_high_fraction, 0.2);
    EXPECT_DOUBLE_EQ(r.clip_low_fraction, 0.2);
    // ratio stats over kept: mean (2*1.6487 + 2*.6065 + 1.1331)/5 = 1.1287304628
    EXPECT_NEAR(r.ratio_mean, 1.1287304627784698, 1e-12);
    EXPECT_NEAR(r.ratio_min, std::exp(-0.5), 1e-12);
    EXPECT_NEAR(r.ratio_max, std::exp(0.5), 1e-12);
    EXPECT_EQ(r.ratio[5], 0.0);
    // ppo_kl = mean(-d) = -(.5 - .5 + .125 - .5 + .5)/5 = -0.025
    EXPECT_NEAR(r.ppo_kl, -0.025, 1e-12);
    expect_fd_gradient(b, ppo(LossAggregation::token_mean));
}

TEST(PolicyLoss, PpoSeqMeanTokenMeanByHand) {
    Batch b;
    const auto r = b.run(ppo(LossAggregation::seq_mean_token_mean));
    // seq0: (-1.28 - .30327 - 2.26630)/3 kept ; seq1: (1.6 + 4.94616)/2 kept (t5 not counted)
    // (-1.28313/...): -3.84956/6 + 6.54616/4 = -.64159 + 1.63654 = 0.9949472470
    EXPECT_NEAR(r.loss, 0.9949472470267681, 1e-12);
    EXPECT_NEAR(r.grad[1], -0.050544221642719454, 1e-12);  // -.5*.6065/6
    EXPECT_NEAR(r.grad[2], -0.37771615102227546, 1e-12);   // -2*1.1331/6
    EXPECT_NEAR(r.grad[4], 1.2365409530250961, 1e-12);     // 1.5*2*1.6487/4
    EXPECT_EQ(r.grad[0], 0.0);
    EXPECT_EQ(r.grad[5], 0.0);
    expect_fd_gradient(b, ppo(LossAggregation::seq_mean_token_mean));
}

TEST(PolicyLoss, DroppedTokensNotInDenominator) {
    // The same batch with t5 physically removed gives the same loss and gradient.
    Batch b;
    std::vector<float> th(b.theta.begin(), b.theta.begin() + 5), an(b.anchor.begin(), b.anchor.begin() + 5);
    std::vector<double> w(b.w.begin(), b.w.begin() + 5);
    std::vector<std::uint8_t> keep(5, 1);
    std::vector<int> off{0, 3, 5};
    for (auto agg : {LossAggregation::token_mean, LossAggregation::seq_mean_token_mean}) {
        for (auto type : {PolicyLossType::ppo, PolicyLossType::gspo, PolicyLossType::reinforce}) {
            auto s = ppo(agg);
            s.type = type;
            s.gspo_eps_low = s.gspo_eps_high = 0.3;
            const auto full = b.run(s);
            const auto compact = policy_loss(s, th, an, b.adv, w, keep, off);
            EXPECT_NEAR(full.loss, compact.loss, 1e-14);
            for (std::size_t t = 0; t < 5; ++t) EXPECT_NEAR(full.grad[t], compact.grad[t], 1e-14);
        }
    }
}

TEST(PolicyLoss, GspoByHandAndFiniteDifferences) {
    Batch b;
    PolicyLossSettings s;
    s.type = PolicyLossType::gspo;
    s.gspo_eps_low = 0.2;
    s.gspo_eps_high = 0.28;  // wide range: both sequences unclipped
    s.aggregation = LossAggregation::token_mean;
    auto r = b.run(s);
    // seq0: mean d = (.5 - .5 + .125)/3 = .041667 -> s0 = e^.041667 = 1.0425469052, A = 1
    //       sum w = 3.5 ; seq1: mean d = 0 -> s1 = 1, A = -2, sum w = 2.5
    // token-mean: L = (1/5) * [-3.5 * s0 + -2.5 * (-2)] = (5 - 3.6489)/5 = 0.2702171664
    EXPECT_NEAR(r.loss, 0.270217166367006, 1e-12);
    // grad through the mean: seq0 tokens -(1/5)*3.5*s0/3 ; seq1 tokens -(1/5)*2.5*(-2)*1/2
    for (int t = 0; t < 3; ++t) EXPECT_NEAR(r.grad[t], -0.2432609445443313, 1e-12);
    EXPECT_NEAR(r.grad[3], 0.5, 1e-12);
    EXPECT_NEAR(r.grad[4], 0.5, 1e-12);
    EXPECT_EQ(r.grad[5], 0.0);
    EXPECT_NEAR(r.ratio[1], 1.0425469051899914, 1e-12);  // sequence ratio broadcast
    EXPECT_EQ(r.clip_fraction, 0.0);
    expect_fd_gradient(b, s);

    s.aggregation = LossAggregation::seq_mean_token_mean;
    r = b.run(s);
    // (1/6)*(-3.5*s0) + (1/4)*(5) = -.60815 + 1.25 = 0.6418476386
    EXPECT_NEAR(r.loss, 0.6418476386391717, 1e-12);
    EXPECT_NEAR(r.grad[0], -0.20271745378694275, 1e-12);  // -(1/6)*3.5*s0/3
    EXPECT_NEAR(r.grad[3], 0.625, 1e-12);                 // (1/4)*2.5*2/2
    expect_fd_gradient(b, s);

    // w = 1 and seq-mean-token-mean is the GSPO paper's mean_i -min(s_i A_i, clip(s_i) A_i)
    const auto r1 = policy_loss(s, b.theta, b.anchor, b.adv, {}, b.keep, b.off);
    EXPECT_NEAR(r1.loss, (-1.0425469051899914 + 2.0) / 2, 1e-12);
}

TEST(PolicyLoss, GspoTinyClipRange) {
    Batch b;
    PolicyLossSettings s;
    s.type = PolicyLossType::gspo;  // default range [1 - 3e-4, 1 + 4e-4]
    const auto r = b.run(s);
    // seq0 s0 = 1.0425 > 1.0004 with A > 0: clipped, no gradient; seq1 s1 = 1 inside
    EXPECT_DOUBLE_EQ(r.clip_fraction, 3.0 / 5);
    EXPECT_DOUBLE_EQ(r.clip_high_fraction, 3.0 / 5);
    for (int t = 0; t < 3; ++t) EXPECT_EQ(r.grad[t], 0.0);
    EXPECT_NEAR(r.grad[3], 0.5, 1e-12);
    // L = (1/5)*[-3.5*1.0004 + 5]
    EXPECT_NEAR(r.loss, (-3.5 * 1.0004 + 5.0) / 5.0, 1e-12);
    // h = 2^-14 moves s1 by ~3e-5, staying inside the tiny clip range (2^-8 would cross it)
    expect_fd_gradient(b, s, 2e-5, 1.0 / 16384.0);
}

TEST(PolicyLoss, ReinforceByHand) {
    Batch b;
    PolicyLossSettings s;
    s.type = PolicyLossType::reinforce;
    auto r = b.run(s);
    // -A*w*lp: t0 -(1)(1)(-.5) = .5 ; t1 -(1)(.5)(-1.5) = .75 ; t2 -(1)(2)(-.875) = 1.75
    //          t3 -(-2)(1)(-1.5) = -3 ; t4 -(-2)(1.5)(-.5) = -1.5  -> sum -1.5, /5 = -0.3
    EXPECT_NEAR(r.loss, -0.3, 1e-12);
    const std::vector<double> g{-0.2, -0.1, -0.4, 0.4, 0.6, 0.0};  // -A*w/5
    for (std::size_t t = 0; t < g.size(); ++t) EXPECT_NEAR(r.grad[t], g[t], 1e-12) << t;
    EXPECT_EQ(r.clip_fraction, 0.0);
    expect_fd_gradient(b, s);
    s.aggregation = LossAggregation::seq_mean_token_mean;
    r = b.run(s);
    EXPECT_NEAR(r.loss, 3.0 / 6 - 4.5 / 4, 1e-12);  // (0.5+0.75+1.75)/(3*2) + (-4.5)/(2*2)
    expect_fd_gradient(b, s);
}

TEST(PolicyLoss, HugeLogRatioClampedAndNothingKept) {
    // d = 25 with A < 0: unclipped term -e^20 selected, ratio clamped: finite loss, 0 grad
    std::vector<float> th{24.0f}, an{-1.0f};
    std::vector<double> adv{-1.0};
    std::vector<int> off{0, 1};
    PolicyLossSettings s;
    const auto r = policy_loss(s, th, an, adv, {}, {}, off);
    EXPECT_NEAR(r.loss, std::exp(20.0), 1e-6);
    EXPECT_EQ(r.grad[0], 0.0);
    // nothing kept: zeros, no NaN
    std::vector<std::uint8_t> none{0};
    const auto z = policy_loss(s, th, an, adv, {}, none, off);
    EXPECT_EQ(z.loss, 0.0);
    EXPECT_EQ(z.grad[0], 0.0);
    EXPECT_EQ(z.clip_fraction, 0.0);
    EXPECT_EQ(z.ratio_mean, 0.0);
    EXPECT_EQ(z.num_kept_tokens, 0u);
}

TEST(PolicyLoss, BadInputsThrow) {
    Batch b;
    PolicyLossSettings s;
    std::vector<double> adv3{1, 2, 3};
    EXPECT_THROW(policy_loss(s, b.theta, b.anchor, adv3, b.w, b.keep, b.off), std::invalid_argument);
    std::vector<double> w2{1, 1};
    EXPECT_THROW(policy_loss(s, b.theta, b.anchor, b.adv, w2, b.keep, b.off), std::invalid_argument);
    s.eps_low = -0.1;
    EXPECT_THROW(b.run(s), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Advantages. Rewards {1, 0, 0, 1 | 2, 2, 2, 2}, groups of n = 4.

TEST(Advantage, GrpoByHand) {
    const std::vector<double> r{1, 0, 0, 1, 2, 2, 2, 2};
    const auto a = grpo_advantages(r, 4);
    // group 0: mean .5, unbiased std sqrt((4 * .25)/3) = sqrt(1/3) = .5773502692
    //   A = +-.5 / (.5773502692 + 1e-6) = +-0.8660239...
    const double g0 = 0.5 / (std::sqrt(1.0 / 3.0) + 1e-6);
    EXPECT_NEAR(a[0], g0, 1e-12);
    EXPECT_NEAR(a[1], -g0, 1e-12);
    EXPECT_NEAR(a[2], -g0, 1e-12);
    EXPECT_NEAR(a[3], g0, 1e-12);
    EXPECT_NEAR(g0, 0.866024, 1e-5);  // population std (0.5) would give ~1.0
    // group 1: all equal -> 0 / (0 + eps) = 0
    for (int i = 4; i < 8; ++i) EXPECT_EQ(a[i], 0.0);
    // without std normalisation: r - mean
    const auto c = grpo_advantages(r, 4, false);
    EXPECT_EQ(c, (std::vector<double>{0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0}));
    // group of one: verl's mean 0, std 1 -> r / (1 + eps)
    const auto one = grpo_advantages(std::vector<double>{3.0}, 1);
    EXPECT_NEAR(one[0], 3.0 / (1.0 + 1e-6), 1e-15);
}

TEST(Advantage, RlooByHand) {
    const std::vector<double> r{1, 0, 0, 1, 2, 2, 2, 2};
    const auto a = rloo_advantages(r, 4);
    // r0 = 1: others (0+0+1)/3 = 1/3 -> 2/3 ; r1 = 0: others (1+0+1)/3 -> -2/3
    EXPECT_NEAR(a[0], 2.0 / 3, 1e-15);
    EXPECT_NEAR(a[1], -2.0 / 3, 1e-15);
    EXPECT_NEAR(a[2], -2.0 / 3, 1e-15);
    EXPECT_NEAR(a[3], 2.0 / 3, 1e-15);
    for (int i = 4; i < 8; ++i) EXPECT_EQ(a[i], 0.0);
    // group of 3: {3, 0, 0}: 3 - 0 = 3 ; 0 - (3+0)/2 = -1.5
    const auto b = rloo_advantages(std::vector<double>{3, 0, 0}, 3);
    EXPECT_EQ(b, (std::vector<double>{3.0, -1.5, -1.5}));
}

TEST(Advantage, ReinforceBaselineAndDispatch) {
    const std::vector<double> r{1, 0, 0, 1, 2, 2, 2, 2};
    // batch mean 10/8 = 1.25
    const auto a = reinforce_baseline_advantages(r);
    EXPECT_EQ(a, (std::vector<double>{-0.25, -1.25, -1.25, -0.25, 0.75, 0.75, 0.75, 0.75}));
    AdvantageSettings s;
    s.estimator = AdvantageEstimator::rloo;
    s.group_size = 4;
    EXPECT_EQ(compute_advantages(r, s), rloo_advantages(r, 4));
    s.estimator = AdvantageEstimator::reinforce_baseline;
    EXPECT_EQ(compute_advantages(r, s), a);
    s.estimator = AdvantageEstimator::grpo;
    s.group_size = 3;  // 8 not a multiple of 3
    EXPECT_THROW(compute_advantages(r, s), std::invalid_argument);
    s.group_size = 0;
    EXPECT_THROW(compute_advantages(r, s), std::invalid_argument);
}

TEST(Advantage, BroadcastToTokens) {
    const std::vector<double> a{1.5, -2.0, 7.0};
    const std::vector<int> off{0, 2, 2, 5};  // middle sequence empty
    const auto t = broadcast_to_tokens(a, off);
    EXPECT_EQ(t, (std::vector<double>{1.5, 1.5, 7.0, 7.0, 7.0}));
    const std::vector<int> bad{0, 2};
    EXPECT_THROW(broadcast_to_tokens(a, bad), std::invalid_argument);
}

// The gradient norm's blocked double sum: close to the exact norm, and the
// same bits on one thread and on two (its order follows the arena's size only).
// Sizes: below one block, a block and a tail, many blocks.
TEST(AdamW, GradNormIsExactEnoughAndIndependentOfThreads) {
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 0.01f);
    for (size_t n : {size_t{13}, size_t{16384 + 5}, size_t{1000003}}) {
        SCOPED_TRACE(n);
        std::vector<float> g(n);
        for (float& x : g) x = dist(rng);
        long double exact = 0;
        for (float x : g) exact += (long double)x * x;
        set_num_threads(1);
        const double one = AdamW::grad_norm(g);
        set_num_threads(2);
        const double two = AdamW::grad_norm(g);
        set_num_threads(0);
        EXPECT_NEAR(one, std::sqrt((double)exact), 1e-12 * std::sqrt((double)exact));
        EXPECT_EQ(std::memcmp(&one, &two, sizeof one), 0);
    }
    // A NaN anywhere is the norm's NaN (the update then skips).
    std::vector<float> g(40000, 1.0f);
    g[39999] = std::nanf("");
    EXPECT_TRUE(std::isnan(AdamW::grad_norm(g)));
}

// A gradient arena of another size is refused before anything moves.
TEST(AdamW, RefusesGradientsOfAnotherSize) {
    AdamW opt;
    std::vector<float> params(10, 1.0f), grads(9, 0.5f);
    try {
        opt.update(params, grads, AdamWSettings{}, 1e-3);
        FAIL() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("9 gradients for 10 parameters"), std::string::npos) << e.what();
    }
    EXPECT_EQ(opt.step, 0);
    EXPECT_EQ(params, std::vector<float>(10, 1.0f));
}

}  // namespace
}  // namespace mlk
