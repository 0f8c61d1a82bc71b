// Hand-computed checks of core/metrics (mismatch metrics, F(t), router diff).
#include "core/metrics/mismatch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace mlk {
namespace {

// Three sequences; every log-prob is exact in float.
//   seq0 = t0..t2, seq1 = t3..t4 (t3 invalid), seq2 = t5 (invalid only: skipped)
//   t   lp_train  lp_roll   r = train - roll
//   t0   -1.0     -1.5      0.5
//   t1   -2.0     -1.0     -1.0
//   t2   -0.5     -0.5      0
//   t3  -10.0     -1.0     -9    (invalid, must be ignored)
//   t4   -1.25    -1.0     -0.25
//   t5   -3.0     -0.25    -2.75 (invalid)
struct Batch {
    std::vector<float> tr{-1.0f, -2.0f, -0.5f, -10.0f, -1.25f, -3.0f};
    std::vector<float> ro{-1.5f, -1.0f, -0.5f, -1.0f, -1.0f, -0.25f};
    std::vector<std::uint8_t> valid{1, 1, 1, 0, 1, 0};
    std::vector<int> off{0, 3, 5, 6};
};

TEST(Metrics, TokenLevelByHand) {
    Batch b;
    const auto m = mismatch_metrics(b.tr, b.ro, b.valid, b.off);
    EXPECT_EQ(m.num_valid_tokens, 4u);
    // valid r = {0.5, -1, 0, -0.25}
    // k3 = [(e^.5-1.5) + (e^-1-1+1) + 0 + (e^-.25-.75)] / 4
    //    = [0.1487212707 + 0.3678794412 + 0 + 0.0288007831] / 4 = 0.1363503737
    EXPECT_NEAR(m.k3_kl, 0.13635037373574385, 1e-12);
    // k1 = mean(roll - train) = -(0.5 - 1 + 0 - 0.25)/4 = 0.1875
    EXPECT_DOUBLE_EQ(m.kl, 0.1875);
    // |r| = {0.5, 1, 0, 0.25}: mean 1.75/4 = 0.4375, max 1
    EXPECT_DOUBLE_EQ(m.logp_abs_diff_mean, 0.4375);
    EXPECT_DOUBLE_EQ(m.logp_abs_diff_max, 1.0);
    // chi2_token = (e^1 + e^-2 + e^0 + e^-.5)/4 - 1 = 4.4601477714/4 - 1 = 0.1150369429
    EXPECT_NEAR(m.chi2_token, 0.11503694285207278, 1e-12);
    // ln 1.1 = .0953, ln 1.5 = .405, ln 2 = .693, ln 5 = 1.609, ln 10 = 2.303
    // |r| above: t=1.1 -> {.5, 1, .25} 3/4; 1.5 -> {.5, 1} 2/4; 2 -> {1} 1/4; 5, 10 -> 0
    EXPECT_DOUBLE_EQ(m.f_1_1, 0.75);
    EXPECT_DOUBLE_EQ(m.f_1_5, 0.5);
    EXPECT_DOUBLE_EQ(m.f_2, 0.25);
    EXPECT_DOUBLE_EQ(m.f_5, 0.0);
    EXPECT_DOUBLE_EQ(m.f_10, 0.0);
}

TEST(Metrics, SequenceLevelByHand) {
    Batch b;
    const auto m = mismatch_metrics(b.tr, b.ro, b.valid, b.off);
    // seq2 has no valid token: skipped, 2 sequences count.
    EXPECT_EQ(m.num_sequences, 2u);
    // seq0: sum r = -0.5, mean r = -1/6, mean train = -3.5/3, mean roll = -1
    // seq1: sum r = -0.25 (= mean), mean train = -1.25, mean roll = -1
    // chi2_seq (sum, verl) = (e^-1 + e^-.5)/2 - 1 = -0.5127949496
    EXPECT_NEAR(m.chi2_seq_sum, -0.5127949495579621, 1e-12);
    EXPECT_NEAR(m.chi2_seq, m.chi2_seq_sum, 0.0);  // default flavour = sum
    // geometric (ms-swift) = (e^(2*-1/6) + e^(2*-.25))/2 - 1 = -0.3384690149
    EXPECT_NEAR(m.chi2_seq_geometric, -0.3384690148567886, 1e-12);
    // training_ppl = (e^(3.5/3) + e^1.25)/2 = 3.3508067503 ; rollout_ppl = (e + e)/2
    EXPECT_NEAR(m.training_ppl, 3.3508067503077013, 1e-12);
    EXPECT_NEAR(m.rollout_ppl, std::exp(1.0), 1e-12);
    EXPECT_NEAR(m.training_log_ppl, 29.0 / 24.0, 1e-12);  // (7/6 + 5/4)/2
    EXPECT_NEAR(m.rollout_log_ppl, 1.0, 1e-12);
    // log_ppl_diff per seq = mean roll - mean train: seq0 -1 + 7/6 = 1/6, seq1 0.25
    EXPECT_NEAR(m.log_ppl_diff, (1.0 / 6.0 + 0.25) / 2.0, 1e-12);  // 5/24
    EXPECT_NEAR(m.log_ppl_abs_diff, 5.0 / 24.0, 1e-12);
    EXPECT_NEAR(m.log_ppl_diff_max, 0.25, 1e-12);
    EXPECT_NEAR(m.log_ppl_diff_min, 1.0 / 6.0, 1e-12);
    // ppl_ratio = (e^(1/6) + e^.25)/2 = 1.2326929148
    EXPECT_NEAR(m.ppl_ratio, 1.2326929147766936, 1e-12);

    MetricsOptions geo;
    geo.chi2_seq_kind = Chi2SeqKind::geometric;
    const auto g = mismatch_metrics(b.tr, b.ro, b.valid, b.off, geo);
    EXPECT_NEAR(g.chi2_seq, -0.3384690148567886, 1e-12);
}

TEST(Metrics, NegativeLogPplDiffSignAndMinMax) {
    // one sequence where training assigns HIGHER probability: diff < 0
    std::vector<float> tr{-0.5f, -0.5f}, ro{-1.0f, -1.0f};
    std::vector<std::uint8_t> v{1, 1};
    std::vector<int> off{0, 1, 2};
    const auto m = mismatch_metrics(tr, ro, v, off);
    EXPECT_DOUBLE_EQ(m.log_ppl_diff, -0.5);
    EXPECT_DOUBLE_EQ(m.log_ppl_abs_diff, 0.5);
    EXPECT_DOUBLE_EQ(m.log_ppl_diff_max, -0.5);
    EXPECT_DOUBLE_EQ(m.log_ppl_diff_min, -0.5);
    EXPECT_DOUBLE_EQ(m.kl, -0.5);  // k1 may be negative, k3 may not
    EXPECT_GT(m.k3_kl, 0.0);
}

TEST(Metrics, FCurveGridAndValues) {
    Batch b;
    const auto m = mismatch_metrics(b.tr, b.ro, b.valid, b.off);
    ASSERT_EQ(m.f_grid.size(), 64u);
    ASSERT_EQ(m.f_curve.size(), 64u);
    EXPECT_DOUBLE_EQ(m.f_grid.front(), 1.0001);
    EXPECT_DOUBLE_EQ(m.f_grid.back(), 1e4);
    // log-spaced in (t - 1): constant ratio between consecutive (t - 1)
    const double q = (m.f_grid[1] - 1.0) / (m.f_grid[0] - 1.0);
    EXPECT_NEAR((m.f_grid[40] - 1.0) / (m.f_grid[39] - 1.0), q, 1e-9);
    EXPECT_NEAR(q, std::pow(9999e4, 1.0 / 63.0), 1e-6);  // (1e4-1)/1e-4 = 9.999e7 over 63 steps
    // t = 1.0001: ln t ~ 1e-4, tokens with |r| > 1e-4 are 3 of 4
    EXPECT_DOUBLE_EQ(m.f_curve.front(), 0.75);
    EXPECT_DOUBLE_EQ(m.f_curve.back(), 0.0);
    for (std::size_t i = 1; i < m.f_curve.size(); ++i) EXPECT_LE(m.f_curve[i], m.f_curve[i - 1]);
    // consistent with the free-threshold function, strict inequality at |r| = ln t
    const std::vector<double> ts{std::exp(0.25) * 1.001, std::exp(0.5) * 0.999, 1.0};
    const auto f = extreme_token_fraction(b.tr, b.ro, b.valid, ts);
    EXPECT_DOUBLE_EQ(f[0], 0.5);   // |r| > 0.251: {0.5, 1}
    EXPECT_DOUBLE_EQ(f[1], 0.5);   // |r| > 0.4995: {0.5, 1}
    EXPECT_DOUBLE_EQ(f[2], 0.75);  // |r| > 0: three nonzero
    for (std::size_t i = 0; i < m.f_grid.size(); i += 7) {
        const std::vector<double> one{m.f_grid[i]};
        EXPECT_DOUBLE_EQ(extreme_token_fraction(b.tr, b.ro, b.valid, one)[0], m.f_curve[i]);
    }
}

TEST(Metrics, IdenticalLogProbsGiveExactZeros) {
    std::vector<float> lp{-0.1f, -2.5f, -7.0f, -0.001f};
    std::vector<std::uint8_t> v{1, 1, 1, 1};
    std::vector<int> off{0, 2, 4};
    const auto m = mismatch_metrics(lp, lp, v, off);
    EXPECT_EQ(m.k3_kl, 0.0);
    EXPECT_EQ(m.kl, 0.0);
    EXPECT_EQ(m.chi2_token, 0.0);
    EXPECT_EQ(m.chi2_seq, 0.0);
    EXPECT_EQ(m.logp_abs_diff_max, 0.0);
    EXPECT_EQ(m.log_ppl_diff, 0.0);
    EXPECT_EQ(m.ppl_ratio, 1.0);
    EXPECT_EQ(m.f_curve.front(), 0.0);
}

TEST(Metrics, K3StrictlyPositiveForTinyDifferences) {
    // one ulp at -1: r ~ 5.96e-8, K3 ~ r^2/2 ~ 1.78e-15 (naive exp(r)-1-r can round to 0 or < 0)
    std::vector<float> tr{-1.0f}, ro{std::nextafter(-1.0f, 0.0f)};
    std::vector<std::uint8_t> v{1};
    std::vector<int> off{0, 1};
    const auto m = mismatch_metrics(tr, ro, v, off);
    const double r = double(tr[0]) - double(ro[0]);
    EXPECT_GT(m.k3_kl, 0.0);
    EXPECT_NEAR(m.k3_kl, 0.5 * r * r, 1e-6 * 0.5 * r * r);
    // denormal floats: r = 1e-40, K3 = 5e-81 > 0
    std::vector<float> tr2{-1e-40f}, ro2{-2e-40f};
    const auto m2 = mismatch_metrics(tr2, ro2, v, off);
    EXPECT_GT(m2.k3_kl, 0.0);
    // the series/expm1 switch at |r| = 1e-4 is continuous and accurate
    for (double x : {1e-10, 0.99999e-4, 1.00001e-4, -0.99999e-4, -1.00001e-4, 0.3, -2.0}) {
        const double ref = x * x / 2 + x * x * x / 6 + x * x * x * x / 24;  // accurate for |x| <= 1e-4
        if (std::fabs(x) < 1e-3) EXPECT_NEAR(k3_from_log_ratio(x), ref, 1e-9 * ref) << x;
        else EXPECT_NEAR(k3_from_log_ratio(x), std::exp(x) - 1 - x, 1e-14) << x;
    }
    EXPECT_EQ(k3_from_log_ratio(0.0), 0.0);
}

TEST(Metrics, HugeRatiosClampedInChi2NotInK3) {
    // r = 30 on one token, -30 on another (one sequence each)
    std::vector<float> tr{-1.0f, -31.0f}, ro{-31.0f, -1.0f};
    std::vector<std::uint8_t> v{1, 1};
    std::vector<int> off{0, 1, 2};
    const auto m = mismatch_metrics(tr, ro, v, off);
    // chi2_token = (e^40 + e^-40)/2 - 1 (clamp20 then doubled)
    EXPECT_NEAR(m.chi2_token, (std::exp(40.0) + std::exp(-40.0)) / 2 - 1, 1e-9 * std::exp(40.0));
    EXPECT_NEAR(m.chi2_seq_sum, (std::exp(40.0) + std::exp(-40.0)) / 2 - 1, 1e-9 * std::exp(40.0));
    // K3 unclamped: [(e^30 - 31) + (e^-30 + 29)] / 2
    EXPECT_NEAR(m.k3_kl, (std::exp(30.0) - 31 + std::exp(-30.0) + 29) / 2, 1e-9 * std::exp(30.0));
    EXPECT_DOUBLE_EQ(m.f_10, 1.0);
    EXPECT_TRUE(std::isfinite(m.ppl_ratio));
}

TEST(Metrics, NoValidTokensIsAllZerosNeverNaN) {
    std::vector<float> tr{-1.0f, -2.0f, -3.0f}, ro{-2.0f, -1.0f, -3.5f};
    std::vector<std::uint8_t> v{0, 0, 0};
    std::vector<int> off{0, 2, 3};
    const auto m = mismatch_metrics(tr, ro, v, off);
    EXPECT_EQ(m.num_valid_tokens, 0u);
    EXPECT_EQ(m.num_sequences, 0u);
    for (double x : {m.k3_kl, m.kl, m.logp_abs_diff_mean, m.logp_abs_diff_max, m.chi2_token, m.chi2_seq,
                     m.chi2_seq_geometric, m.training_ppl, m.rollout_ppl, m.log_ppl_diff, m.log_ppl_abs_diff,
                     m.log_ppl_diff_max, m.log_ppl_diff_min, m.ppl_ratio, m.f_1_1, m.f_2, m.f_10})
        EXPECT_EQ(x, 0.0);
    ASSERT_EQ(m.f_curve.size(), 64u);
    for (double x : m.f_curve) EXPECT_EQ(x, 0.0);
    // empty batch (S = 0)
    std::vector<float> none;
    std::vector<std::uint8_t> nv;
    std::vector<int> off0{0};
    const auto e = mismatch_metrics(none, none, nv, off0);
    EXPECT_EQ(e.k3_kl, 0.0);
    EXPECT_EQ(e.num_sequences, 0u);
}

TEST(Metrics, EmptyValidMaskMeansAllValid) {
    Batch b;
    std::vector<std::uint8_t> all(b.tr.size(), 1), none;
    const auto a = mismatch_metrics(b.tr, b.ro, all, b.off);
    const auto c = mismatch_metrics(b.tr, b.ro, none, b.off);
    EXPECT_EQ(a.k3_kl, c.k3_kl);
    EXPECT_EQ(a.num_valid_tokens, 6u);
    EXPECT_EQ(c.num_sequences, 3u);
}

TEST(Metrics, BadLayoutThrows) {
    Batch b;
    std::vector<int> bad_end{0, 3, 5};  // ends at 5, 6 tokens
    EXPECT_THROW(mismatch_metrics(b.tr, b.ro, b.valid, bad_end), std::invalid_argument);
    std::vector<int> decreasing{0, 4, 3, 6};
    EXPECT_THROW(mismatch_metrics(b.tr, b.ro, b.valid, decreasing), std::invalid_argument);
    std::vector<int> empty;
    EXPECT_THROW(mismatch_metrics(b.tr, b.ro, b.valid, empty), std::invalid_argument);
    std::vector<float> short_ro{-1.0f};
    EXPECT_THROW(mismatch_metrics(b.tr, short_ro, b.valid, b.off), std::invalid_argument);
    std::vector<std::uint8_t> short_valid{1, 1};
    EXPECT_THROW(mismatch_metrics(b.tr, b.ro, short_valid, b.off), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// Rollout-probability buckets and TV: two sequences, one token per bucket
// (two in the top one) and an invalid tail token that must not count.
//   t   lp_roll  p_roll     bucket        lp_train  r
//   t0   -0.5    0.607      [0.1, 1]       -0.5      0
//   t1   -1.0    0.368      [0.1, 1]       -1.25    -0.25
//   t2   -3.0    0.0498     [0.01, 0.1)    -2.5      0.5     (end of seq0)
//   t3   -5.0    6.74e-3    [1e-3, 0.01)   -6.0     -1
//   t4   -8.0    3.35e-4    [1e-4, 1e-3)   -6.0      2
//   t5  -12.0    6.1e-6     < 1e-4        -11.0      1
//   t6  -13.0    2.3e-6     < 1e-4        -20.0     -7      (invalid)
struct BucketBatch {
    std::vector<float> tr{-0.5f, -1.25f, -2.5f, -6.0f, -6.0f, -11.0f, -20.0f};
    std::vector<float> ro{-0.5f, -1.0f, -3.0f, -5.0f, -8.0f, -12.0f, -13.0f};
    std::vector<std::uint8_t> valid{1, 1, 1, 1, 1, 1, 0};
    std::vector<int> off{0, 3, 7};
};

TEST(Metrics, ProbabilityBucketsByHand) {
    BucketBatch b;
    const auto m = mismatch_metrics(b.tr, b.ro, b.valid, b.off);
    const std::size_t counts[kProbBuckets] = {2, 1, 1, 1, 1};
    const double abs_diff[kProbBuckets] = {0.125, 0.5, 1.0, 2.0, 1.0};
    // K3 term per bucket: exp(r) - 1 - r summed over its tokens.
    const double k3[kProbBuckets] = {std::exp(-0.25) - 0.75, std::exp(0.5) - 1.5, std::exp(-1.0), std::exp(2.0) - 3.0,
                                     std::exp(1.0) - 2.0};
    double total = 0;
    for (double k : k3) total += k;
    double frac_sum = 0, share_sum = 0;
    for (int i = 0; i < kProbBuckets; ++i) {
        EXPECT_EQ(m.buckets[i].count, counts[i]) << "bucket " << i;
        EXPECT_DOUBLE_EQ(m.buckets[i].frac, counts[i] / 6.0) << "bucket " << i;
        EXPECT_DOUBLE_EQ(m.buckets[i].abs_diff_mean, abs_diff[i]) << "bucket " << i;
        EXPECT_NEAR(m.buckets[i].k3_share, k3[i] / total, 1e-12) << "bucket " << i;
        frac_sum += m.buckets[i].frac;
        share_sum += m.buckets[i].k3_share;
    }
    EXPECT_NEAR(frac_sum, 1.0, 1e-15);
    EXPECT_NEAR(share_sum, 1.0, 1e-12);
    // The single r = 2 token of [1e-4, 1e-3) carries most of the KL: the tail effect the buckets exist to show.
    EXPECT_GT(m.buckets[3].k3_share, 0.75);
    // Decade edges: p = exp(-2.30) = 0.1003 is in the top bucket, exp(-2.31) = 0.0993 is not.
    EXPECT_EQ(prob_bucket(-2.30f), 0);
    EXPECT_EQ(prob_bucket(-2.31f), 1);
    EXPECT_EQ(prob_bucket(0.0f), 0);
    EXPECT_EQ(prob_bucket(-9.20f), 3);  // 1.01e-4
    EXPECT_EQ(prob_bucket(-9.22f), 4);  // 0.99e-4
    EXPECT_EQ(prob_bucket(-std::numeric_limits<float>::infinity()), 4);
}

TEST(Metrics, ProbabilityBucketsWithoutMismatchAreZeroSharesNotNaN) {
    BucketBatch b;
    const auto m = mismatch_metrics(b.ro, b.ro, b.valid, b.off);
    for (int i = 0; i < kProbBuckets; ++i) {
        EXPECT_EQ(m.buckets[i].k3_share, 0.0) << "0/0 is 0";
        EXPECT_EQ(m.buckets[i].abs_diff_mean, 0.0);
    }
    EXPECT_DOUBLE_EQ(m.buckets[0].frac, 2.0 / 6.0);
    EXPECT_EQ(m.tv_token, 0.0);
    EXPECT_EQ(m.tv_seq, 0.0);
    // No valid token: every bucket empty.
    const auto none = mismatch_metrics(b.tr, b.ro, std::vector<std::uint8_t>(7, 0), b.off);
    for (int i = 0; i < kProbBuckets; ++i) EXPECT_EQ(none.buckets[i].count, 0u);
    EXPECT_EQ(none.buckets[0].frac, 0.0);
}

TEST(Metrics, TotalVariationByHand) {
    BucketBatch b;
    const auto m = mismatch_metrics(b.tr, b.ro, b.valid, b.off);
    // 0.5 |1 - e^r| for r = 0, -0.25, 0.5, -1, 2, 1 (t6 invalid)
    const double tv = 0.5 * (0.0 + (1 - std::exp(-0.25)) + (std::exp(0.5) - 1) + (1 - std::exp(-1.0)) +
                             (std::exp(2.0) - 1) + (std::exp(1.0) - 1));
    EXPECT_NEAR(m.tv_token, tv / 6.0, 1e-12);
    // Sequence ratios: seq0 sum r = 0.25, seq1 = -1 + 2 + 1 = 2 (t6 invalid).
    EXPECT_NEAR(m.tv_seq, 0.5 * ((std::exp(0.25) - 1) + (std::exp(2.0) - 1)) / 2.0, 1e-12);
}

// Tokens drawn from pi_roll in exact proportion (y0 twice, y1, y2 once each:
// pi_roll = {1/2, 1/4, 1/4}) against pi_train = {1/4, 1/4, 1/2}: the token
// mean equals the true TV, 0.5 (|1/2 - 1/4| + 0 + |1/4 - 1/2|) = 1/4.
TEST(Metrics, TotalVariationTokenMeanIsTheDistributionsTv) {
    const float h = std::log(0.5f), q = std::log(0.25f);
    const std::vector<float> roll{h, h, q, q}, train{q, q, q, h};
    const std::vector<int> off{0, 4};
    const auto m = mismatch_metrics(train, roll, {}, off);
    EXPECT_NEAR(m.tv_token, 0.25, 1e-7);
}

// Router diff: 5 tokens, 2 MoE layers, top-2.
//   seq0 = t0,t1 ; seq1 = t2,t3 (t3 invalid) ; seq2 = t4 (invalid only)
//   token layer  rollout  train   d
//   t0    L0     {1,2}    {2,1}   0   (order inside top-k does not matter)
//   t0    L1     {3,4}    {3,5}   1
//   t1    L0     {1,2}    {3,4}   2
//   t1    L1     {0,1}    {0,1}   0
//   t2    L0     {5,6}    {5,6}   0
//   t2    L1     {7,0}    {0,7}   0
//   t3    L0/L1  {1,2}    {3,4}   2, 2   (invalid)
//   t4    L0     {1,2}    {1,3}   1      (invalid)
//   t4    L1     {1,2}    {1,2}   0
TEST(RouterDiff, ThreeLevelsByHand) {
    std::vector<std::int32_t> ro{1,        2, 3, 4, /*t1*/ 1, 2, 0, 1, /*t2*/ 5, 6, 7, 0,
                                 /*t3*/ 1, 2, 1, 2, /*t4*/ 1, 2, 1, 2};
    std::vector<std::int32_t> tr{2,        1, 3, 5, /*t1*/ 3, 4, 0, 1, /*t2*/ 5, 6, 0, 7,
                                 /*t3*/ 3, 4, 3, 4, /*t4*/ 1, 3, 1, 2};
    std::vector<std::uint8_t> v{1, 1, 1, 0, 0};
    std::vector<int> off{0, 2, 4, 5};
    const auto rd = router_diff(ro, tr, v, 5, 2, 2, off);
    EXPECT_EQ(rd.num_valid_tokens, 3u);
    EXPECT_EQ(rd.num_sequences, 2u);
    // valid (token, layer) d: {0,1,2,0,0,0} -> 2 of 6 differ
    EXPECT_DOUBLE_EQ(rd.router_level, 2.0 / 6.0);
    EXPECT_EQ(rd.histogram, (std::vector<std::uint64_t>{4, 1, 1}));
    // per-token sums (valid): t0 1, t1 2, t2 0 -> 2 of 3 tokens differ
    EXPECT_DOUBLE_EQ(rd.token_level, 2.0 / 3.0);
    EXPECT_EQ(rd.token_histogram, (std::vector<std::uint64_t>{1, 1, 1, 0, 0}));
    EXPECT_DOUBLE_EQ(rd.mean_diff_per_token, 1.0);  // (1+2+0)/3
    // every token gets its sum (invalid ones too, for the UI)
    EXPECT_EQ(rd.per_token_sum, (std::vector<int>{1, 2, 0, 4, 1}));
    // seq0 mean (1+2)/2 = 1.5, seq1 (t2 only) 0, seq2 skipped -> (1.5 + 0)/2 = 0.75
    EXPECT_EQ(rd.per_sequence_mean, (std::vector<double>{1.5, 0.0, 0.0}));
    EXPECT_DOUBLE_EQ(rd.sequence_level, 0.75);
}

TEST(RouterDiff, IdenticalRoutesAndEdgeCases) {
    std::vector<std::int32_t> ids{0, 1, 2, 3, 4, 5};  // 3 tokens, 1 layer, k = 2
    std::vector<std::uint8_t> v{1, 1, 1};
    std::vector<int> off{0, 3};
    const auto same = router_diff(ids, ids, v, 3, 1, 2, off);
    EXPECT_EQ(same.router_level, 0.0);
    EXPECT_EQ(same.token_level, 0.0);
    EXPECT_EQ(same.sequence_level, 0.0);
    EXPECT_EQ(same.histogram, (std::vector<std::uint64_t>{3, 0, 0}));
    // no valid token: zeros, no NaN
    std::vector<std::uint8_t> none{0, 0, 0};
    std::vector<std::int32_t> other{9, 8, 7, 6, 5, 4};
    const auto z = router_diff(ids, other, none, 3, 1, 2, off);
    EXPECT_EQ(z.router_level, 0.0);
    EXPECT_EQ(z.token_level, 0.0);
    EXPECT_EQ(z.sequence_level, 0.0);
    // {0,1} vs {9,8}: 2 ; {2,3} vs {7,6}: 2 ; {4,5} vs {5,4}: 0
    EXPECT_EQ(z.per_token_sum, (std::vector<int>{2, 2, 0}));
}

TEST(RouterDiff, SizeMismatchThrows) {
    std::vector<std::int32_t> ids{0, 1, 2, 3};
    std::vector<std::uint8_t> v{1, 1};
    std::vector<int> off{0, 2};
    EXPECT_THROW(router_diff(ids, ids, v, 2, 2, 2, off), std::invalid_argument);  // needs 8
    EXPECT_NO_THROW(router_diff(ids, ids, v, 2, 1, 2, off));
}

}  // namespace
}  // namespace mlk
