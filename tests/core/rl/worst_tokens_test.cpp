// "Why this token?" (core/rl/worst_tokens.h) on a real measurement: an MoE
// model from random weights, an FP8 rollout against a bf16 trainer with the
// fast kernels, so log-probs and routes really differ. What is kept must be
// the step's K largest |delta log p| tokens, each with alternatives that
// agree with its own log-probs, one route per MoE layer and the flips the
// router diff counted; and the step's scatter sample must include them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>

#include "core/config/config.h"
#include "core/model/params.h"
#include "core/rl/probe.h"
#include "core/rl/session.h"

using namespace mlk;

namespace {

Config fp8_moe() {
    Config c = config_from_json(nlohmann::json::parse(R"({
        "model": {"kind": "moe"},
        "rollout": {"profile": "sglang-fp8", "kv_cache_dtype": "fp8_e4m3"},
        "train": {"profile": "megatron-bf16"},
        "rl": {"prompts_per_step": 8, "samples_per_prompt": 4}})"));
    validate(c);
    return c;
}

struct Measured {
    Config cfg = fp8_moe();
    ModelConfig model = model_config_of(cfg);
    RolloutEngine rollout{model};
    TrainEngine train{model};
    std::vector<float> params = probe_initial_params(cfg);
    Measurement m;
    Measured() {
        std::vector<std::vector<int32_t>> inputs;
        for (int i = 0; i < 32; ++i) inputs.push_back({1, 3 + i % 10, 13 + i % 7, 3 + i % 5});
        m = measure(cfg, rollout, train, params, inputs, 7, false);
    }
};

double gap(float a, float b) { return std::abs((double)a - (double)b); }

TEST(WorstTokens, AreTheKLargestDeltaLogpTokensOfARealStep) {
    Measured x;
    const TokenView& tv = x.m.tokens;
    const WorstTokens& w = x.m.worst;
    ASSERT_EQ((int)w.tokens.size(), kWorstTokens);
    // Independently: every valid token's |delta log p|, sorted.
    std::vector<double> all;
    for (size_t t = 0; t < tv.valid.size(); ++t)
        if (tv.valid[t]) all.push_back(gap(tv.lp_train[t], tv.lp_roll[t]));
    std::sort(all.rbegin(), all.rend());
    ASSERT_GT(all[0], 0.0) << "an FP8 rollout against a bf16 trainer must differ somewhere";
    std::set<std::pair<int, int>> seen;
    for (size_t r = 0; r < w.tokens.size(); ++r) {
        const WorstToken& t = w.tokens[r];
        EXPECT_EQ(gap(t.lp_train, t.lp_roll), all[r]) << "rank " << r;
        EXPECT_TRUE(seen.insert({t.seq, t.pos}).second) << "each token once";
        // The token it names is that token of the measurement.
        const int at = tv.seq_offsets[t.seq] + t.pos;
        ASSERT_LT(at, tv.seq_offsets[t.seq + 1]);
        EXPECT_EQ(tv.token[at], t.token);
        EXPECT_EQ(tv.lp_roll[at], t.lp_roll);
        EXPECT_EQ(tv.lp_train[at], t.lp_train);
        EXPECT_TRUE(tv.valid[at]);
    }
}

TEST(WorstTokens, AlternativesAreSortedAndAgreeWithTheTokensLogprobs) {
    Measured x;
    for (const WorstToken& t : x.m.worst.tokens) {
        for (const auto* alts : {&t.alt_roll, &t.alt_train}) {
            const bool roll = alts == &t.alt_roll;
            const float own = roll ? t.lp_roll : t.lp_train;
            ASSERT_EQ((int)alts->size(), kTopAlternatives);
            double mass = 0;
            bool found = false;
            for (size_t a = 0; a < alts->size(); ++a) {
                if (a) {
                    EXPECT_GE((*alts)[a - 1].lp, (*alts)[a].lp) << "most likely first";
                }
                EXPECT_LE((*alts)[a].lp, 0.0f);
                mass += std::exp((double)(*alts)[a].lp);
                if ((*alts)[a].token == t.token) {
                    found = true;
                    // Default sampling (no top-k/top-p, processed log-probs):
                    // the same distribution, so the same float.
                    EXPECT_EQ((*alts)[a].lp, own) << (roll ? "rollout" : "training");
                }
            }
            EXPECT_LE(mass, 1.0 + 1e-5);
            if (!found) {
                EXPECT_LE(own, alts->back().lp) << "a token outside the top list is less likely than all of it";
            }
        }
    }
}

TEST(WorstTokens, RoutesHaveEveryMoeLayerAndTheirFlipsAreTheRouterDiffs) {
    Measured x;
    const int Lm = x.model.num_moe_layers(), k = x.model.num_experts_per_tok;
    ASSERT_GT(Lm, 0);
    const WorstTokens& w = x.m.worst;
    EXPECT_EQ((int)w.moe_layers.size(), Lm);
    int flipped_tokens = 0;
    for (const WorstToken& t : w.tokens) {
        ASSERT_EQ((int)t.experts_roll.size(), Lm);
        ASSERT_EQ((int)t.experts_train.size(), Lm);
        int missing = 0;  // rollout experts the trainer did not use, over layers
        for (int l = 0; l < Lm; ++l) {
            ASSERT_EQ((int)t.experts_roll[l].size(), k);
            ASSERT_EQ((int)t.experts_train[l].size(), k);
            const std::set<int32_t> used(t.experts_train[l].begin(), t.experts_train[l].end());
            for (int32_t e : t.experts_roll[l]) missing += used.count(e) ? 0 : 1;
        }
        const int at = x.m.tokens.seq_offsets[t.seq] + t.pos;
        EXPECT_EQ(missing, x.m.router.per_token_sum[at]);
        EXPECT_EQ(t.flips, missing);
        flipped_tokens += missing > 0;
        EXPECT_GT(t.rollout_rows, 0);
        EXPECT_EQ(t.prefill, t.pos == 0);
    }
    EXPECT_EQ(w.kernels, "fast");
    EXPECT_EQ(w.routing_replay, "off");
    EXPECT_EQ(w.rollout.matmul, "fp8_e4m3");
    EXPECT_EQ(w.rollout.kv_cache, "fp8_e4m3");
    EXPECT_EQ(w.train.matmul, "bf16");
    EXPECT_EQ(w.train_rows, x.m.batch.B * x.m.batch.T);
    std::cout << "[ info ] worst tokens with router flips: " << flipped_tokens << " of " << w.tokens.size() << "\n";
}

TEST(WorstTokens, StoredFormRoundTripsAndStaysBounded) {
    Measured x;
    const std::string j = worst_tokens_json(x.m.worst);
    EXPECT_EQ(parse_worst_tokens(j), x.m.worst);
    EXPECT_TRUE(parse_worst_tokens("").tokens.empty()) << "a step stored without worst tokens";
    EXPECT_THROW(parse_worst_tokens("[1, 2]"), std::invalid_argument);
    EXPECT_THROW(parse_worst_tokens("{\"tokens\": 3"), std::invalid_argument);
    WorstTokens odd = x.m.worst;
    odd.tokens[0].lp_train = std::numeric_limits<float>::quiet_NaN();
    odd.tokens[1].alt_roll[4].lp = -std::numeric_limits<float>::infinity();
    const WorstTokens back = parse_worst_tokens(worst_tokens_json(odd));
    EXPECT_TRUE(std::isnan(back.tokens[0].lp_train));
    EXPECT_EQ(back.tokens[1].alt_roll[4].lp, -std::numeric_limits<float>::infinity());
    std::cout << "[ info ] stored bytes per step (moe-tiny, " << x.model.num_moe_layers()
              << " MoE layers, K = " << kWorstTokens << "): " << j.size() << "\n";
    EXPECT_LT(j.size(), 16u * 1024u);
}

TEST(WorstTokens, ASessionStepStoresThemAndItsScatterSampleHoldsThem) {
    Config c = fp8_moe();
    c.rollout.max_new_tokens = 40;  // over 1024 response tokens: the scatter sample is strided
    c.rl.prompts_per_step = 16;
    c.rl.samples_per_prompt = 4;
    validate(c);
    RlSession session(c, probe_initial_params(c), nullptr, 1, "/nonexistent-checkpoints");
    const StepRecord rec = session.step();
    const WorstTokens w = parse_worst_tokens(rec.worst_tokens_json);
    ASSERT_EQ((int)w.tokens.size(), kWorstTokens);
    for (const WorstToken& t : w.tokens) {
        const auto it = std::find_if(rec.token_samples.begin(), rec.token_samples.end(),
                                     [&](const TokenSample& s) { return s.seq == t.seq && s.pos == t.pos; });
        ASSERT_NE(it, rec.token_samples.end()) << "worst token seq " << t.seq << " pos " << t.pos << " not drawn";
        EXPECT_EQ(it->lp_roll, (double)t.lp_roll);
        EXPECT_EQ(it->lp_train, (double)t.lp_train);
        EXPECT_EQ(it->token, t.token);
    }
    double max_sampled = 0;
    for (const TokenSample& s : rec.token_samples)
        max_sampled = std::max(max_sampled, std::abs(s.lp_train - s.lp_roll));
    EXPECT_EQ(max_sampled, gap(w.tokens[0].lp_train, w.tokens[0].lp_roll))
        << "the scatter's outlier is the worst token";
    EXPECT_EQ(max_sampled, RlSession::metric(rec, "logp_abs_diff_max"));
    for (size_t i = 0; i < rec.token_samples.size(); ++i) EXPECT_EQ(rec.token_samples[i].idx, (int32_t)i);
}

}  // namespace
