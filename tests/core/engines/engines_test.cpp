// Rollout engine vs training engine: truly on-policy bitwise equality under
// batch-invariant kernels, real mismatch under the fast kernels, continuous
// batching, R3 replay, determinism.
#include <gtest/gtest.h>

#include <cstring>

#include "core/model/model.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "core/model/vocab.h"

using namespace mlk;

namespace {

std::vector<std::vector<int32_t>> prompts(int n, uint64_t seed) {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n; ++i) {
        std::vector<int32_t> p{Vocab::bos};
        int len = 3 + (int)(hash_u64(seed, i) % 7);  // ragged prompts: packed prefill
        for (int t = 0; t < len; ++t) p.push_back(Vocab::first_char + (int)(hash_u64(seed, i, t + 1) % 40));
        out.push_back(p);
    }
    return out;
}

struct Pair {
    RolloutResult roll;
    SeqBatch batch;
    TrainForward train;
};

Pair run_pair(const std::string& preset, Family fam, Dtype roll_dt, Dtype train_dt, float temp, bool r3,
              int max_batch = 0, int n = 24) {
    ModelConfig cfg = model_preset(preset);
    ParamLayout layout = make_param_layout(cfg);
    std::vector<float> params(layout.total);
    init_params(cfg, layout, params.data(), 42);
    RolloutEngine roll(cfg);
    roll.load_weights(params, roll_dt);
    SamplingParams sp;
    sp.temperature = temp;
    Pair p;
    p.roll = roll.generate(fam, prompts(n, 5), 12, sp, 1234, max_batch);
    p.batch = to_seq_batch(p.roll);
    TrainEngine train(cfg);
    std::vector<std::vector<int32_t>> table;
    if (r3) table = replay_table(p.roll, p.batch.T, cfg.num_layers, cfg.num_experts_per_tok);
    p.train = train.forward(Exec{fam, train_dt}, params, p.batch, 1.0f / temp, r3 ? &table : nullptr);
    return p;
}

// Calls f(rollout lp, training lp) for every response token.
template <class F>
void each_response_token(const Pair& p, F f) {
    for (int i = 0; i < p.batch.B; ++i) {
        const auto& s = p.roll.sequences[i];
        for (size_t j = 0; j < s.lp_processed.size(); ++j)
            f(s.lp_processed[j], p.train.logp[(size_t)i * p.batch.T + s.prompt_len + j]);
    }
}

class TrulyOnPolicy : public ::testing::TestWithParam<std::tuple<const char*, Dtype>> {};

TEST_P(TrulyOnPolicy, TrainingLogprobsEqualRolloutBitwise) {
    auto [preset, dt] = GetParam();
    for (float temp : {1.0f, 0.7f}) {
        Pair p = run_pair(preset, Family::batch_invariant, dt, dt, temp, false, /*max_batch=*/7);
        size_t tokens = 0, equal = 0;
        each_response_token(p, [&](float a, float b) {
            ++tokens;
            equal += float_bits(a) == float_bits(b);
        });
        EXPECT_GT(tokens, 100u);
        EXPECT_EQ(equal, tokens) << preset << " " << dtype_name(dt) << " T=" << temp;
        // MoE: the training engine's own routes are the rollout's, exactly.
        if (p.roll.sequences[0].expert_ids.size()) {
            const int k = model_preset(preset).num_experts_per_tok;
            size_t diff = 0;
            for (size_t l = 0; l < p.train.own_expert_ids.size(); ++l)
                for (int i = 0; i < p.batch.B; ++i) {
                    const auto& ids = p.roll.sequences[i].expert_ids[l];
                    for (size_t x = 0; x + k <= ids.size(); ++x)
                        if (ids[x] >= 0) diff += ids[x] != p.train.own_expert_ids[l][(size_t)i * p.batch.T * k + x];
                }
            EXPECT_EQ(diff, 0u);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Engines, TrulyOnPolicy,
                         ::testing::Combine(::testing::Values("dense-tiny", "moe-tiny"),
                                            ::testing::Values(Dtype::f32, Dtype::bf16)));

TEST(Engines, FastKernelsAndBf16RolloutMismatch) {
    for (const char* preset : {"dense-tiny", "moe-tiny"}) {
        Pair p = run_pair(preset, Family::fast, Dtype::bf16, Dtype::f32, 1.0f, false);
        size_t differ = 0, tokens = 0;
        each_response_token(p, [&](float a, float b) {
            ++tokens;
            differ += a != b;
        });
        EXPECT_GT(differ, tokens / 2) << preset << ": bf16 rollout must disagree with fp32 training";
    }
}

TEST(Engines, FastKernelsAloneMismatchAtEqualPrecision) {
    // Same weights, same fp32: only the reduction order differs (decode
    // split-K / split-KV vs prefill blocking), and that is enough.
    Pair p = run_pair("dense-tiny", Family::fast, Dtype::f32, Dtype::f32, 1.0f, false);
    size_t differ = 0;
    each_response_token(p, [&](float a, float b) { differ += a != b; });
    EXPECT_GT(differ, 0u);
}

TEST(Engines, R3ReplaysRolloutRoutes) {
    Pair p = run_pair("moe-tiny", Family::fast, Dtype::bf16, Dtype::f32, 1.0f, true);
    // With replay, the training forward uses the rollout's experts; its own
    // top-k (reported for router-diff metrics) may still differ.
    Pair q = run_pair("moe-tiny", Family::fast, Dtype::bf16, Dtype::f32, 1.0f, false);
    double k3_r3 = 0, k3_plain = 0;
    each_response_token(p, [&](float roll, float train) {
        double r = (double)train - roll;
        k3_r3 += std::exp(r) - 1 - r;
    });
    each_response_token(q, [&](float roll, float train) {
        double r = (double)train - roll;
        k3_plain += std::exp(r) - 1 - r;
    });
    EXPECT_LT(k3_r3, k3_plain) << "R3 must lower the K3 KL of a MoE";
}

TEST(Engines, ContinuousBatchingChangesDecodeBatch) {
    Pair p = run_pair("dense-tiny", Family::fast, Dtype::f32, Dtype::f32, 1.0f, false, /*max_batch=*/8, 24);
    const auto& m = p.roll.decode_batch_sizes;
    ASSERT_FALSE(m.empty());
    EXPECT_LE(*std::max_element(m.begin(), m.end()), 8);
    EXPECT_NE(*std::min_element(m.begin(), m.end()), *std::max_element(m.begin(), m.end()));
    EXPECT_GT(p.roll.prefill_calls, 1) << "waiting sequences are admitted as others finish";
}

TEST(Engines, DeterministicRunAfterRun) {
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        Pair a = run_pair("moe-tiny", fam, Dtype::bf16, Dtype::f32, 1.0f, false);
        Pair b = run_pair("moe-tiny", fam, Dtype::bf16, Dtype::f32, 1.0f, false);
        ASSERT_EQ(a.batch.tokens, b.batch.tokens);
        EXPECT_EQ(0, std::memcmp(a.train.logp.data(), b.train.logp.data(), a.train.logp.size() * sizeof(float)));
        for (size_t i = 0; i < a.roll.sequences.size(); ++i) {
            EXPECT_EQ(a.roll.sequences[i].lp_processed, b.roll.sequences[i].lp_processed);
            EXPECT_EQ(a.roll.sequences[i].expert_ids, b.roll.sequences[i].expert_ids);
        }
    }
}

TEST(Engines, SampledSequencesDoNotDependOnBatchUnderBatchInvariance) {
    // A sequence samples with its own counter-based stream and BI kernels,
    // so admitting 3 or all 24 at once yields the same text.
    Pair a = run_pair("dense-tiny", Family::batch_invariant, Dtype::bf16, Dtype::bf16, 1.0f, false, 3);
    Pair b = run_pair("dense-tiny", Family::batch_invariant, Dtype::bf16, Dtype::bf16, 1.0f, false, 0);
    for (size_t i = 0; i < a.roll.sequences.size(); ++i)
        EXPECT_EQ(a.roll.sequences[i].tokens, b.roll.sequences[i].tokens);
}

}  // namespace
