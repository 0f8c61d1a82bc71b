// Hand-computed checks of core/rl/correction (IS levels and modes, rejection,
// veto, batch normalisation, validation).
#include "core/rl/correction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlk {
namespace {

// Base batch (exact floats). lr = lp_old - lp_roll:
//   seq0: t0 lr = +1.0   (old -1.0,  roll -2.0)   e^1    = 2.718281828
//         t1 lr = -0.5   (old -1.5,  roll -1.0)   e^-.5  = 0.606530660
//         t2 lr = +0.25  (old -0.75, roll -1.0)   e^.25  = 1.284025417
//   seq1: t3 lr = -1.0   (old -2.0,  roll -1.0)   e^-1   = 0.367879441
//         t4 INVALID     (old -9.0,  roll -1.0)   lr -8 would trip any veto if counted
//         t5 lr = 0      (old -0.5,  roll -0.5)   1
//   seq2: t6 INVALID only (no valid token: skipped everywhere)
// seq0: sum 0.75 -> e^.75 = 2.117000017 ; mean .25 -> e^.25 = 1.284025417
// seq1: sum -1   -> e^-1  = 0.367879441 ; mean -.5 -> e^-.5 = 0.606530660
struct Base {
    std::vector<float> old_{-1.0f, -1.5f, -0.75f, -2.0f, -9.0f, -0.5f, -1.0f};
    std::vector<float> roll{-2.0f, -1.0f, -1.0f, -1.0f, -1.0f, -0.5f, -30.0f};
    std::vector<std::uint8_t> valid{1, 1, 1, 1, 0, 1, 0};
    std::vector<int> off{0, 3, 6, 7};
    CorrectionResult run(const CorrectionSettings& s) const { return compute_correction(s, old_, roll, valid, off); }
};

const double E1 = std::exp(1.0), EM05 = std::exp(-0.5), E025 = std::exp(0.25), EM1 = std::exp(-1.0),
             E075 = std::exp(0.75);

void expect_weights(const CorrectionResult& r, const std::vector<double>& w, const std::vector<std::uint8_t>& keep) {
    ASSERT_EQ(r.weights.size(), w.size());
    for (std::size_t t = 0; t < w.size(); ++t) {
        EXPECT_NEAR(r.weights[t], w[t], 1e-12) << "token " << t;
        EXPECT_EQ(r.keep[t], keep[t]) << "token " << t;
    }
}

TEST(Correction, OffIsMetricsOnly) {
    Base b;
    CorrectionSettings s;  // is_level off, rs off, veto off
    const auto r = b.run(s);
    expect_weights(r, {1, 1, 1, 1, 0, 1, 0}, {1, 1, 1, 1, 0, 1, 0});  // keep == valid
    EXPECT_EQ(r.stats.num_valid_tokens, 5u);
    EXPECT_EQ(r.stats.num_sequences, 2u);
    // stats from raw token ratios {e, e^-.5, e^.25, e^-1, 1}: sum 5.976717346
    EXPECT_NEAR(r.stats.is_weight_mean, 1.1953434692061726, 1e-12);
    EXPECT_NEAR(r.stats.is_weight_min, EM1, 1e-12);
    EXPECT_NEAR(r.stats.is_weight_max, E1, 1e-12);
    // ess = mean^2 / mean(w^2) = 1.428846 / (10.540992/5) = 0.6777568926
    EXPECT_NEAR(r.stats.ess, 0.6777568926277314, 1e-12);
    EXPECT_EQ(r.stats.truncated_high_fraction, 0.0);
    EXPECT_EQ(r.stats.kept_token_fraction, 1.0);
    EXPECT_NEAR(r.raw_weights[0], E1, 1e-12);
    EXPECT_EQ(r.raw_weights[4], 0.0);  // invalid token
}

TEST(Correction, TokenTruncate) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::token;
    s.is_mode = IsMode::truncate;
    s.is_upper = 2.0;
    s.is_lower = 0.5;  // ignored by truncate: e^-1 = 0.368 stays
    const auto r = b.run(s);
    // min(w, 2): {2, e^-.5, e^.25, e^-1, -, 1, -}
    expect_weights(r, {2, EM05, E025, EM1, 0, 1, 0}, {1, 1, 1, 1, 0, 1, 0});
    EXPECT_DOUBLE_EQ(r.stats.truncated_high_fraction, 1.0 / 5);
    EXPECT_EQ(r.stats.truncated_low_fraction, 0.0);
    // mean = (2 + .6065 + 1.2840 + .3679 + 1)/5 = 1.0516871035
    EXPECT_NEAR(r.stats.is_weight_mean, 1.0516871035143633, 1e-12);
    EXPECT_NEAR(r.stats.is_weight_max, 2.0, 1e-15);
    EXPECT_NEAR(r.stats.is_weight_min, EM1, 1e-15);
    EXPECT_NEAR(r.stats.ess, 0.7732492044496412, 1e-12);
    EXPECT_EQ(effective_is_lower(s), 0.0);
}

TEST(Correction, TokenClipDefaultLower) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::token;
    s.is_mode = IsMode::clip;
    s.is_upper = 2.0;  // is_lower 0 -> 1/2
    EXPECT_EQ(effective_is_lower(s), 0.5);
    const auto r = b.run(s);
    // clamp(w, .5, 2): e -> 2 (high), e^-1 -> .5 (low)
    expect_weights(r, {2, EM05, E025, 0.5, 0, 1, 0}, {1, 1, 1, 1, 0, 1, 0});
    EXPECT_DOUBLE_EQ(r.stats.truncated_high_fraction, 0.2);
    EXPECT_DOUBLE_EQ(r.stats.truncated_low_fraction, 0.2);
    EXPECT_NEAR(r.stats.is_weight_mean, 1.078111215280075, 1e-12);  // 5.3905560764/5
    EXPECT_NEAR(r.stats.ess, 0.7997713364199106, 1e-12);
}

TEST(Correction, TokenMaskIcePop) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::token;
    s.is_mode = IsMode::mask;
    s.is_upper = 2.0;  // bounds [0.5, 2]
    const auto r = b.run(s);
    // e (> 2) and e^-1 (< .5) dropped; the others keep their UNbounded w
    expect_weights(r, {0, EM05, E025, 0, 0, 1, 0}, {0, 1, 1, 0, 0, 1, 0});
    EXPECT_DOUBLE_EQ(r.stats.masked_fraction, 2.0 / 5);
    EXPECT_DOUBLE_EQ(r.stats.kept_token_fraction, 3.0 / 5);
    EXPECT_EQ(r.stats.num_kept_tokens, 3u);
    // stats over kept tokens {e^-.5, e^.25, 1}: mean 0.9635186921
    EXPECT_NEAR(r.stats.is_weight_mean, 0.9635186921334583, 1e-12);
    EXPECT_NEAR(r.stats.is_weight_min, EM05, 1e-12);
    EXPECT_NEAR(r.stats.is_weight_max, E025, 1e-12);
    EXPECT_NEAR(r.stats.ess, 0.9232593492772087, 1e-12);
    EXPECT_NEAR(r.raw_weights[0], E1, 1e-12);  // raw kept for the UI
}

TEST(Correction, SequenceTruncateUsesProduct) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::sequence;
    s.is_mode = IsMode::truncate;
    s.is_upper = 2.0;
    const auto r = b.run(s);
    // seq0 e^.75 = 2.117 -> 2 (3 tokens truncated); seq1 e^-1 broadcast
    expect_weights(r, {2, 2, 2, EM1, 0, EM1, 0}, {1, 1, 1, 1, 0, 1, 0});
    EXPECT_NEAR(r.raw_weights[1], E075, 1e-12);
    EXPECT_DOUBLE_EQ(r.stats.truncated_high_fraction, 3.0 / 5);
    EXPECT_NEAR(r.stats.is_weight_mean, 1.3471517764685772, 1e-12);  // (6 + 2e^-1)/5
}

TEST(Correction, SequenceClip) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::sequence;
    s.is_mode = IsMode::clip;
    s.is_upper = 2.0;  // [0.5, 2]
    const auto r = b.run(s);
    expect_weights(r, {2, 2, 2, 0.5, 0, 0.5, 0}, {1, 1, 1, 1, 0, 1, 0});
    EXPECT_DOUBLE_EQ(r.stats.truncated_high_fraction, 3.0 / 5);
    EXPECT_DOUBLE_EQ(r.stats.truncated_low_fraction, 2.0 / 5);
    EXPECT_NEAR(r.stats.is_weight_mean, 1.4, 1e-12);  // (6 + 1)/5
    EXPECT_NEAR(r.stats.ess, 0.784, 1e-12);           // 1.96 / ((12 + .5)/5)
}

TEST(Correction, GeometricMask) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::geometric;
    s.is_mode = IsMode::mask;
    s.is_lower = 0.7;
    s.is_upper = 1.5;
    const auto r = b.run(s);
    // seq0 e^.25 = 1.284 in [.7, 1.5] kept; seq1 e^-.5 = .607 < .7 masked
    expect_weights(r, {E025, E025, E025, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0});
    EXPECT_DOUBLE_EQ(r.stats.masked_fraction, 2.0 / 5);
    EXPECT_EQ(r.stats.num_kept_sequences, 1u);
    EXPECT_NEAR(r.stats.ess, 1.0, 1e-15);  // all kept weights equal
}

TEST(Correction, GeometricTruncateUsesMean) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::geometric;
    s.is_upper = 1.2;
    const auto r = b.run(s);
    // seq0 e^.25 = 1.284 -> 1.2 ; seq1 e^-.5
    expect_weights(r, {1.2, 1.2, 1.2, EM05, 0, EM05, 0}, {1, 1, 1, 1, 0, 1, 0});
}

TEST(Correction, BatchNormTokenLevel) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::token;
    s.is_upper = 2.0;
    s.batch_normalize = true;
    const auto r = b.run(s);
    const double m = 1.0516871035143633;  // mean after truncation (see TokenTruncate)
    EXPECT_NEAR(r.stats.batch_norm_factor, m, 1e-12);
    expect_weights(r, {2 / m, EM05 / m, E025 / m, EM1 / m, 0, 1 / m, 0}, {1, 1, 1, 1, 0, 1, 0});
    double sum = 0;
    for (double w : r.weights) sum += w;
    EXPECT_NEAR(sum / 5, 1.0, 1e-12);
    // stats are reported before normalisation
    EXPECT_NEAR(r.stats.is_weight_mean, m, 1e-12);
}

TEST(Correction, BatchNormSequenceLevelAveragesSequencesNotTokens) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::sequence;
    s.is_mode = IsMode::clip;
    s.is_upper = 2.0;
    s.batch_normalize = true;
    const auto r = b.run(s);
    // sequence weights 2 (3 tokens) and .5 (2 tokens): mean over SEQUENCES (2 + .5)/2 = 1.25
    // (a token-weighted mean would be (6 + 1)/5 = 1.4)
    EXPECT_NEAR(r.stats.batch_norm_factor, 1.25, 1e-15);
    expect_weights(r, {1.6, 1.6, 1.6, 0.4, 0, 0.4, 0}, {1, 1, 1, 1, 0, 1, 0});
}

TEST(Correction, BatchNormGeometricOverKeptSequencesOnly) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::geometric;
    s.is_mode = IsMode::mask;
    s.is_lower = 0.7;
    s.is_upper = 1.5;
    s.batch_normalize = true;  // allowed at geometric level (verl), refused by slime
    const auto r = b.run(s);
    // only seq0 (w = e^.25) kept -> factor e^.25, weights 1
    EXPECT_NEAR(r.stats.batch_norm_factor, E025, 1e-12);
    expect_weights(r, {1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0});
}

TEST(Correction, BatchNormIgnoredWhenLevelOff) {
    Base b;
    CorrectionSettings s;
    s.batch_normalize = true;
    const auto r = b.run(s);
    EXPECT_EQ(r.stats.batch_norm_factor, 1.0);
    expect_weights(r, {1, 1, 1, 1, 0, 1, 0}, {1, 1, 1, 1, 0, 1, 0});
}

TEST(Correction, RejectionTokenLevelWithoutIS) {
    Base b;
    CorrectionSettings s;
    s.rs_level = RsLevel::token;
    s.rs_upper = 2.0;  // rs_lower 0 -> 1/2
    EXPECT_EQ(effective_rs_lower(s), 0.5);
    const auto r = b.run(s);
    // e > 2 and e^-1 < .5 rejected; IS off -> kept weights 1
    expect_weights(r, {0, 1, 1, 0, 0, 1, 0}, {0, 1, 1, 0, 0, 1, 0});
    EXPECT_DOUBLE_EQ(r.stats.rejected_token_fraction, 2.0 / 5);
    // both sequences lost a token
    EXPECT_DOUBLE_EQ(r.stats.rejected_seq_fraction, 1.0);
    EXPECT_EQ(r.stats.masked_fraction, 0.0);
}

TEST(Correction, RejectionSequenceLevelSeqMIS) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::sequence;
    s.is_upper = 2.0;
    s.rs_level = RsLevel::sequence;
    s.rs_lower = 0.5;
    s.rs_upper = 2.5;
    const auto r = b.run(s);
    // seq0 e^.75 = 2.117 in [.5, 2.5]; seq1 e^-1 = .368 < .5 rejected
    // IS weights: seq0 truncated to 2
    expect_weights(r, {2, 2, 2, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0});
    EXPECT_DOUBLE_EQ(r.stats.rejected_token_fraction, 2.0 / 5);
    EXPECT_DOUBLE_EQ(r.stats.rejected_seq_fraction, 0.5);
    EXPECT_DOUBLE_EQ(r.stats.truncated_high_fraction, 3.0 / 5);
}

TEST(Correction, RejectionGeometricEverythingRejected) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::token;
    s.rs_level = RsLevel::geometric;
    s.rs_lower = 0.999;
    s.rs_upper = 1.001;  // Geo-RS: both e^.25 and e^-.5 are outside
    s.batch_normalize = true;
    const auto r = b.run(s);
    expect_weights(r, {0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0});
    EXPECT_EQ(r.stats.num_kept_tokens, 0u);
    EXPECT_EQ(r.stats.kept_token_fraction, 0.0);
    EXPECT_EQ(r.stats.is_weight_mean, 0.0);
    EXPECT_EQ(r.stats.ess, 0.0);
    EXPECT_EQ(r.stats.batch_norm_factor, 1.0);
    EXPECT_DOUBLE_EQ(r.stats.rejected_seq_fraction, 1.0);
    EXPECT_FALSE(std::isnan(r.stats.is_weight_min));
}

TEST(Correction, RejectionSeqMeanK3) {
    Base b;
    CorrectionSettings s;
    s.rs_level = RsLevel::seq_mean_k3;
    // K3 = e^lr - 1 - lr:
    //   seq0: (e-2) + (e^-.5-.5) + (e^.25-1.25) = .71828 + .10653 + .03403 -> mean 0.2862793016
    //   seq1: e^-1 + 0 -> mean 0.1839397206
    s.rs_upper = 0.2;
    s.rs_lower = 5.0;  // unused for seq_mean_k3, and not an error there
    auto r = b.run(s);
    expect_weights(r, {0, 0, 0, 1, 0, 1, 0}, {0, 0, 0, 1, 0, 1, 0});
    EXPECT_DOUBLE_EQ(r.stats.rejected_seq_fraction, 0.5);
    EXPECT_DOUBLE_EQ(r.stats.rejected_token_fraction, 3.0 / 5);
    s.rs_upper = 0.29;  // above both
    r = b.run(s);
    EXPECT_EQ(r.stats.num_kept_tokens, 5u);
    s.rs_upper = 0.28;  // between .2863 and .1839 ... seq0 rejected again
    r = b.run(s);
    EXPECT_EQ(r.stats.num_kept_tokens, 2u);
}

TEST(Correction, VetoRatio) {
    Base b;
    CorrectionSettings s;
    s.veto_threshold = 0.4;  // t3 e^-1 = .368 < .4 -> seq1 vetoed; t4 (e^-8) is invalid: ignored
    auto r = b.run(s);
    expect_weights(r, {1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0});
    EXPECT_DOUBLE_EQ(r.stats.vetoed_seq_fraction, 0.5);
    s.veto_threshold = 0.3;  // smallest valid ratio is .368: nothing vetoed
    r = b.run(s);
    EXPECT_EQ(r.stats.vetoed_seq_fraction, 0.0);
    EXPECT_EQ(r.stats.num_kept_tokens, 5u);
}

TEST(Correction, VetoOldProb) {
    Base b;
    CorrectionSettings s;
    s.veto_kind = VetoKind::old_prob;
    // exp(lp_old): t0 .368, t1 .223, t2 .472, t3 .135, t5 .607 (t4 e^-9 invalid)
    s.veto_threshold = 0.2;  // only t3 -> seq1
    auto r = b.run(s);
    expect_weights(r, {1, 1, 1, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0});
    s.veto_threshold = 0.25;  // t1 .223 too -> both sequences
    r = b.run(s);
    EXPECT_DOUBLE_EQ(r.stats.vetoed_seq_fraction, 1.0);
    EXPECT_EQ(r.stats.num_kept_tokens, 0u);
    // the ratio kind with the same threshold vetoes nothing in seq0 (min ratio .607)
    s.veto_kind = VetoKind::ratio;
    r = b.run(s);
    EXPECT_DOUBLE_EQ(r.stats.vetoed_seq_fraction, 0.0);
}

TEST(Correction, CombinedClipRsVetoBatchNorm) {
    Base b;
    CorrectionSettings s;
    s.is_level = IsLevel::token;
    s.is_mode = IsMode::clip;
    s.is_upper = 2.0;  // [.5, 2]
    s.rs_level = RsLevel::sequence;
    s.rs_lower = 0.3;
    s.rs_upper = 2.5;        // seq0 2.117 ok, seq1 .368 ok
    s.veto_threshold = 0.5;  // seq1: e^-1 < .5 -> vetoed
    s.batch_normalize = true;
    const auto r = b.run(s);
    // kept: seq0 with clipped w {2, e^-.5, e^.25}: mean 3.8905560764/3 = 1.2968520255
    const double m = 1.2968520254667915;
    EXPECT_NEAR(r.stats.is_weight_mean, m, 1e-12);
    expect_weights(r, {2 / m, EM05 / m, E025 / m, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0, 0});
    EXPECT_DOUBLE_EQ(r.stats.vetoed_seq_fraction, 0.5);
    EXPECT_EQ(r.stats.rejected_token_fraction, 0.0);
    // criteria are counted independently: t3 was clipped low although its sequence is vetoed
    EXPECT_DOUBLE_EQ(r.stats.truncated_low_fraction, 0.2);
    EXPECT_DOUBLE_EQ(r.stats.truncated_high_fraction, 0.2);
    EXPECT_NEAR(r.stats.ess, 0.8385923828909819, 1e-12);
}

TEST(Correction, HugeRatiosAreClampedAt20) {
    // seq0: lr = +30, +30 ; seq1: lr = -25
    std::vector<float> old_{-1.0f, -1.0f, -26.0f}, roll{-31.0f, -31.0f, -1.0f};
    std::vector<std::uint8_t> v{1, 1, 1};
    std::vector<int> off{0, 2, 3};
    CorrectionSettings s;  // off: raw token ratios exp(clamp20)
    auto r = compute_correction(s, old_, roll, v, off);
    EXPECT_NEAR(r.raw_weights[0], std::exp(20.0), 1e-6);
    EXPECT_NEAR(r.raw_weights[2], std::exp(-20.0), 1e-20);
    EXPECT_NEAR(r.stats.is_weight_max, std::exp(20.0), 1e-6);
    EXPECT_TRUE(std::isfinite(r.stats.ess));
    s.is_level = IsLevel::sequence;  // sum 60 -> clamp 20
    s.is_upper = 2.0;
    r = compute_correction(s, old_, roll, v, off);
    EXPECT_NEAR(r.raw_weights[1], std::exp(20.0), 1e-6);
    EXPECT_EQ(r.weights[0], 2.0);
    EXPECT_NEAR(r.weights[2], std::exp(-20.0), 1e-20);
}

TEST(Correction, NoValidTokensAtAll) {
    Base b;
    std::vector<std::uint8_t> none(b.valid.size(), 0);
    CorrectionSettings s;
    s.is_level = IsLevel::token;
    s.is_mode = IsMode::mask;
    s.rs_level = RsLevel::seq_mean_k3;
    s.rs_upper = 0.01;
    s.veto_threshold = 1e-4;
    s.batch_normalize = true;
    const auto r = compute_correction(s, b.old_, b.roll, none, b.off);
    for (std::size_t t = 0; t < none.size(); ++t) {
        EXPECT_EQ(r.weights[t], 0.0);
        EXPECT_EQ(r.keep[t], 0);
    }
    const auto& st = r.stats;
    for (double x : {st.is_weight_mean, st.is_weight_min, st.is_weight_max, st.ess, st.truncated_low_fraction,
                     st.truncated_high_fraction, st.masked_fraction, st.rejected_token_fraction,
                     st.rejected_seq_fraction, st.vetoed_seq_fraction, st.kept_token_fraction})
        EXPECT_EQ(x, 0.0);
    EXPECT_EQ(st.num_sequences, 0u);
}

TEST(Correction, ValidateNamesTheKey) {
    auto message = [](const CorrectionSettings& s) {
        try {
            validate(s);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    CorrectionSettings s;
    s.is_lower = 3.0;
    s.is_upper = 2.0;
    std::string m = message(s);
    EXPECT_NE(m.find("correction.is_lower"), std::string::npos) << m;
    EXPECT_NE(m.find("correction.is_upper"), std::string::npos) << m;
    // compute_correction validates too
    Base b;
    EXPECT_THROW(b.run(s), std::invalid_argument);

    s = {};
    s.rs_level = RsLevel::token;
    s.rs_lower = 1.5;
    s.rs_upper = 1.2;
    m = message(s);
    EXPECT_NE(m.find("correction.rs_lower"), std::string::npos) << m;

    s = {};
    s.is_upper = 0.0;
    EXPECT_NE(message(s).find("correction.is_upper"), std::string::npos);
    s = {};
    s.veto_threshold = -1.0;
    EXPECT_NE(message(s).find("correction.veto_threshold"), std::string::npos);
    s = {};
    s.veto_kind = VetoKind::old_prob;
    s.veto_threshold = 2.0;
    EXPECT_NE(message(s).find("correction.veto_threshold"), std::string::npos);
    s = {};
    s.is_lower = std::nan("");
    EXPECT_NE(message(s).find("correction.is_lower"), std::string::npos);
    s = {};
    s.is_lower = 2.0;  // == upper is fine
    EXPECT_EQ(message(s), "");
    EXPECT_EQ(message(CorrectionSettings{}), "");
}

}  // namespace
}  // namespace mlk
