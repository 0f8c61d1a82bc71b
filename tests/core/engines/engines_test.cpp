// Rollout engine vs training engine: truly on-policy bitwise equality under
// batch-invariant kernels, real mismatch under the fast kernels, continuous
// batching, R3 replay, determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>

#include "core/model/model.h"
#include "core/config/config.h"
#include "core/engines/numerics.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "core/model/vocab.h"
#include "tests/model_params.h"
#include "tests/token_sequences.h"

using namespace mlk;

namespace {

// Ragged prompts: a packed prefill.
std::vector<std::vector<int32_t>> prompts(int n, uint64_t seed) { return testdata::token_sequences(n, seed, 3, 7); }

// The model's parameters as init_params draws them from `seed`.
std::vector<float> random_params(const ModelConfig& cfg, uint64_t seed) { return testdata::model_params(cfg, seed); }

struct Pair {
    RolloutResult roll;
    SeqBatch batch;
    TrainForward train;
};

Pair run_pair(const std::string& preset, Family fam, const EngineNumerics& roll_num, const EngineNumerics& train_num,
              float temp, bool r3, int max_batch = 0, int n = 24) {
    ModelConfig cfg = model_preset(preset);
    std::vector<float> params = random_params(cfg, 42);
    RolloutEngine roll(cfg);
    roll.load_weights(params, roll_num);
    SamplingParams sp;
    sp.temperature = temp;
    Pair p;
    p.roll = roll.generate(fam, prompts(n, 5), 12, sp, 1234, max_batch);
    roll.release_weights();  // the master back, as the RL step gives it before its recompute
    p.batch = to_seq_batch(p.roll);
    TrainEngine train(cfg);
    std::vector<std::vector<int32_t>> table;
    if (r3) table = replay_table(p.roll, p.batch.T, cfg.num_layers, cfg.num_experts_per_tok);
    p.train = train.forward(fam, train_num, params, p.batch, 1.0f / temp, r3 ? &table : nullptr);
    return p;
}

// Both engines with the simple profile of one precision each.
Pair run_pair(const std::string& preset, Family fam, Dtype roll_dt, Dtype train_dt, float temp, bool r3,
              int max_batch = 0, int n = 24) {
    return run_pair(preset, fam, EngineNumerics::simple(roll_dt), EngineNumerics::simple(train_dt), temp, r3, max_batch,
                    n);
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

namespace {

// A scripted environment: after the policy's 2nd and 7th sampled-or-forced
// response token it inserts a reply whose length and tokens depend on the
// sequence. Records every call.
struct ScriptedEnv {
    std::vector<std::pair<int, size_t>> calls;  // (sequence, response length)
    static std::vector<int32_t> reply(int seq, size_t at) {
        std::vector<int32_t> r;
        for (int j = 0; j < 1 + (seq + (int)at) % 4; ++j) r.push_back(Vocab::first_char + (seq * 7 + j) % 40);
        return r;
    }
    Environment fn() {
        return [this](int seq, std::span<const int32_t> resp) {
            calls.emplace_back(seq, resp.size());
            return resp.size() == 2 || resp.size() == 7 ? reply(seq, resp.size()) : std::vector<int32_t>{};
        };
    }
};

}  // namespace

TEST(Engines, EnvironmentTokensAreFedInsteadOfSampled) {
    ModelConfig cfg = model_preset("moe-tiny");
    std::vector<float> params = random_params(cfg, 42);
    RolloutEngine roll(cfg);
    roll.load_weights(params, EngineNumerics::simple(Dtype::f32));
    ScriptedEnv env;
    const int max_new = 16;
    const RolloutResult r = roll.generate(Family::fast, prompts(24, 5), max_new, SamplingParams{}, 99, 7, env.fn());
    size_t with_reply = 0;
    for (int i = 0; i < (int)r.sequences.size(); ++i) {
        const auto& s = r.sequences[i];
        const std::vector<int32_t> resp(s.tokens.begin() + s.prompt_len, s.tokens.end());
        ASSERT_EQ(s.env.size(), resp.size());
        ASSERT_EQ(s.lp_processed.size(), resp.size());
        // The expected mask: the reply right after the token that triggered
        // it, cut by max_new_tokens; a sampled eos ends the sequence.
        std::vector<uint8_t> want(resp.size(), 0);
        for (size_t at : {2u, 7u}) {
            if (resp.size() <= at) continue;
            // the trigger was a sampled token only if it was not forced itself
            if (want[at - 1]) continue;
            const auto rep = ScriptedEnv::reply(i, at);
            for (size_t j = 0; j < rep.size() && at + j < resp.size(); ++j) {
                want[at + j] = 1;
                EXPECT_EQ(resp[at + j], rep[j]) << "sequence " << i;
            }
            ++with_reply;
        }
        EXPECT_EQ(s.env, want) << "sequence " << i;
        EXPECT_EQ(s.sampled_tokens(), (int)std::count(want.begin(), want.end(), 0));
        EXPECT_LE((int)resp.size(), max_new);
        if (s.finished_by_eos) {
            EXPECT_EQ(s.env.back(), 0);
        }
        for (float lp : s.lp_processed) EXPECT_TRUE(std::isfinite(lp));
    }
    EXPECT_GT(with_reply, 24u);
    // The environment hears about sampled tokens only, never about its own.
    for (auto [seq, len] : env.calls) EXPECT_EQ(r.sequences[seq].env[len - 1], 0) << seq << " " << len;
}

TEST(Engines, TrulyOnPolicyWithEnvironmentTokens) {
    for (const char* preset : {"dense-tiny", "moe-tiny"})
        for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
            ModelConfig cfg = model_preset(preset);
            std::vector<float> params = random_params(cfg, 42);
            RolloutEngine roll(cfg);
            roll.load_weights(params, EngineNumerics::simple(dt));
            ScriptedEnv env;
            SamplingParams sp;
            sp.temperature = 0.7f;
            Pair p;
            p.roll = roll.generate(Family::batch_invariant, prompts(24, 5), 16, sp, 1234, 7, env.fn());
            roll.release_weights();  // the master back before the trainer reads it
            p.batch = to_seq_batch(p.roll);
            TrainEngine train(cfg);
            p.train = train.forward(Family::batch_invariant, EngineNumerics::simple(dt), params, p.batch, 1.0f / 0.7f,
                                    nullptr);
            size_t tokens = 0, equal = 0, forced = 0;
            each_response_token(p, [&](float a, float b) {
                ++tokens;
                equal += float_bits(a) == float_bits(b);
            });
            for (const auto& s : p.roll.sequences) forced += s.env.size() - (size_t)s.sampled_tokens();
            EXPECT_GT(forced, 24u);
            EXPECT_EQ(equal, tokens) << preset << " " << dtype_name(dt);
        }
}

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

// Every rounding point of a profile is real arithmetic that matters: changed
// on the rollout side alone it changes response log-probs; changed on both
// sides, batch-invariant kernels still give bitwise equality (the KV cache
// exists on the rollout side only, so it has no "both sides").
TEST(Engines, EachRoundingPointChangesBitsAndBothSidesStayBitwise) {
    const EngineNumerics base{Dtype::bf16, Dtype::f32, Dtype::bf16, Dtype::f32, Dtype::bf16, Dtype::bf16};
    struct Change {
        const char* point;
        void (*apply)(EngineNumerics&);
    };
    const Change changes[] = {
        {"matmul fp8_e4m3", [](EngineNumerics& n) { n.matmul = Dtype::fp8_e4m3; }},
        {"matmul fp8_e5m2", [](EngineNumerics& n) { n.matmul = Dtype::fp8_e5m2; }},
        {"matmul fp16", [](EngineNumerics& n) { n.matmul = n.kv_cache = Dtype::f16; }},
        {"residual bf16", [](EngineNumerics& n) { n.residual = Dtype::bf16; }},
        {"attention P fp32", [](EngineNumerics& n) { n.attn_probs = Dtype::f32; }},
        {"statistics bf16", [](EngineNumerics& n) { n.stats = Dtype::bf16; }},
        {"LM head fp32", [](EngineNumerics& n) { n.lm_head = Dtype::f32; }},
        {"KV cache fp8_e4m3", [](EngineNumerics& n) { n.kv_cache = Dtype::fp8_e4m3; }},
    };
    for (const char* preset : {"dense-tiny", "moe-tiny"}) {
        const auto differing = [](const Pair& p) {
            size_t differ = 0, tokens = 0;
            each_response_token(p, [&](float a, float b) {
                ++tokens;
                differ += float_bits(a) != float_bits(b);
            });
            EXPECT_GT(tokens, 100u);
            return differ;
        };
        ASSERT_EQ(differing(run_pair(preset, Family::batch_invariant, base, base, 1.0f, false, 7)), 0u) << preset;
        for (const Change& c : changes) {
            SCOPED_TRACE(std::string(preset) + ", " + c.point);
            EngineNumerics changed = base;
            c.apply(changed);
            EXPECT_GT(differing(run_pair(preset, Family::batch_invariant, changed, base, 1.0f, false, 7)), 0u)
                << "changed on the rollout side only";
            if (std::string(c.point).rfind("KV", 0) == 0) continue;  // the trainer keeps no KV cache
            EXPECT_GT(differing(run_pair(preset, Family::batch_invariant, base, changed, 1.0f, false, 7)), 0u)
                << "changed on the training side only";
            EXPECT_EQ(differing(run_pair(preset, Family::batch_invariant, changed, changed, 1.0f, false, 7)), 0u)
                << "changed on both sides";
        }
    }
}

// How settings resolve onto the profiles' table (core/config/profiles.h;
// the named profiles' values: profiles_test).
TEST(Engines, ProfilesResolveAsDocumented) {
    const Dtype f = Dtype::f32, b = Dtype::bf16;
    Config c;
    EXPECT_EQ(rollout_numerics(c), (EngineNumerics{b, b, f, f, b, b})) << "simple, rollout.precision bf16";
    EXPECT_EQ(train_numerics(c), (EngineNumerics{f, f, f, f, f, f})) << "simple, train.precision fp32";
    c.rollout.precision = Dtype::fp8_e4m3;
    EXPECT_EQ(rollout_numerics(c), (EngineNumerics{Dtype::fp8_e4m3, b, f, f, b, b})) << "fp8 GEMMs, bf16 storage";
    c.rollout.precision = Dtype::bf16;
    c.rollout.profile = NumericsProfile::sglang_fp8;
    c.train.profile = NumericsProfile::fp32_reference;
    EXPECT_EQ(train_numerics(c), (EngineNumerics{f, f, f, f, f, f}));
    // Overrides win over the profile; auto keeps it.
    c.rollout.lm_head_dtype = PointDtype::f32;
    c.rollout.kv_cache_dtype = PointDtype::fp8_e4m3;
    c.rollout.residual_dtype = PointDtype::f16;
    c.rollout.norm_dtype = PointDtype::bf16;
    c.rollout.attn_softmax = SoftmaxPoint::eager;
    c.rollout.fp8_scale = Fp8ScalePoint::pow2;
    c.rollout.fp8_granularity = Fp8GranularityPoint::block;
    EngineNumerics want{Dtype::fp8_e4m3, Dtype::f16, b, f, f, Dtype::fp8_e4m3};
    want.norm = b, want.eager_softmax = true, want.fp8_scale = Fp8Scale::pow2;
    want.fp8_granularity = Fp8Granularity::block;
    EXPECT_EQ(rollout_numerics(c), want);
    c.rollout.attn_probs_dtype = PointDtype::f32;
    c.rollout.stats_dtype = PointDtype::bf16;
    c.rollout.matmul_dtype = PointDtype::f16;
    c.rollout.fp8_granularity = Fp8GranularityPoint::auto_;
    want = EngineNumerics{Dtype::f16, Dtype::f16, f, b, f, Dtype::fp8_e4m3};
    want.norm = b, want.eager_softmax = true, want.fp8_scale = Fp8Scale::pow2;  // the KV cache's scales
    EXPECT_EQ(rollout_numerics(c), want);
    // The training side's points override the same way (fp32-reference above).
    c.train.matmul_dtype = PointDtype::fp8_e5m2;
    c.train.attn_probs_dtype = PointDtype::bf16;
    c.train.stats_dtype = PointDtype::bf16;
    c.train.residual_dtype = PointDtype::f16;
    c.train.lm_head_dtype = PointDtype::bf16;
    c.train.silu_dtype = PointDtype::bf16;
    c.train.rope_dtype = PointDtype::bf16;
    c.train.rope_cache_dtype = PointDtype::f16;
    // (An fp8 matmul keeps its activations in bf16, which the kv field follows.)
    want = EngineNumerics{Dtype::fp8_e5m2, Dtype::f16, b, b, b, b};
    want.silu = b, want.rope = b, want.rope_cache = Dtype::f16;
    EXPECT_EQ(train_numerics(c), want);
}

// Checkpointing (each layer's input kept, the layer recomputed in backward)
// and the selective recompute of the default path must give the gradients of
// the same forward bit for bit: dense and MoE, fast kernels at bf16 (shape-
// dependent plans, rounding points), MoE with R3's replay table, and top-4,
// where the order a token's expert input gradients are added in shows.
TEST(Engines, FullRecomputeGivesTheSameGradientBits) {
    ModelConfig top4 = model_preset("moe-tiny");
    top4.num_experts_per_tok = 4;
    for (const ModelConfig& cfg : {model_preset("dense-tiny"), model_preset("moe-tiny"), top4}) {
        SCOPED_TRACE(cfg.preset_name() + " top-" + std::to_string(cfg.num_experts_per_tok));
        std::vector<float> params = random_params(cfg, 42);
        RolloutEngine roll(cfg);
        roll.load_weights(params, EngineNumerics::simple(Dtype::bf16));
        const RolloutResult r = roll.generate(Family::fast, prompts(12, 5), 10, SamplingParams{}, 99);
        roll.release_weights();  // the master back before the trainer reads it
        const SeqBatch batch = to_seq_batch(r);
        // A replay table unlike the engine's own routes (distinct experts per
        // token, every other row left to the engine's top-k), so a recompute
        // that forgot the replay would route differently.
        const int k = cfg.num_experts_per_tok, E = std::max(cfg.num_experts, 1), M = batch.B * batch.T;
        std::vector<std::vector<int32_t>> table(cfg.moe_layers().size(), std::vector<int32_t>((size_t)M * k, -1));
        for (size_t l = 0; l < table.size(); ++l)
            for (int m = 0; m < M; m += 2)
                for (int j = 0; j < k; ++j) table[l][(size_t)m * k + j] = (m + 3 * j + (int)l) % E;
        std::vector<float> dlogp((size_t)batch.B * batch.T);
        for (size_t i = 0; i < dlogp.size(); ++i) dlogp[i] = (float)(hash_uniform(7, i) - 0.5);
        std::vector<std::vector<float>> grads;
        std::vector<std::vector<float>> logp;
        for (bool full : {false, true}) {
            TrainEngine train(cfg);
            train.force_full_recompute(full);
            const TrainForward& f = train.forward(Family::fast, EngineNumerics::simple(Dtype::bf16), params, batch,
                                                  1.0f, cfg.is_moe_layer(0) ? &table : nullptr);
            logp.push_back(f.logp);
            std::vector<float> g;
            train.backward(g, dlogp);
            grads.push_back(g);
        }
        ASSERT_EQ(grads[0].size(), grads[1].size());
        EXPECT_EQ(0, std::memcmp(logp[0].data(), logp[1].data(), logp[0].size() * sizeof(float)));
        EXPECT_EQ(0, std::memcmp(grads[0].data(), grads[1].data(), grads[0].size() * sizeof(float)));
        double norm = 0;
        for (float g : grads[0]) norm += (double)g * g;
        EXPECT_GT(norm, 0.0);
    }
}

// A second backward needs a second forward once the activations are released.
TEST(Engines, BackwardAfterReleaseIsRefused) {
    ModelConfig cfg = model_preset("dense-tiny");
    std::vector<float> params = random_params(cfg, 1);
    const SeqBatch batch = make_seq_batch({{Vocab::bos, Vocab::first_char, Vocab::first_char + 1}}, {1});
    TrainEngine train(cfg);
    train.forward(Family::fast, EngineNumerics::simple(Dtype::f32), params, batch, 1.0f, nullptr);
    std::vector<float> g, dlogp(3, 1.0f);
    train.backward(g, dlogp);
    train.release_activations();
    EXPECT_THROW(train.backward(g, dlogp), std::logic_error);
}

// A checkpointing forward frees each layer's input during its backward, so
// it serves one backward; and the gradient arena must be the model's size.
TEST(Engines, CheckpointedActivationsServeOneBackward) {
    ModelConfig cfg = model_preset("dense-tiny");
    std::vector<float> params = random_params(cfg, 1);
    const SeqBatch batch = make_seq_batch({{Vocab::bos, Vocab::first_char, Vocab::first_char + 1}}, {1});
    TrainEngine train(cfg);
    train.force_full_recompute(true);
    train.forward(Family::fast, EngineNumerics::simple(Dtype::f32), params, batch, 1.0f, nullptr);
    std::vector<float> dlogp(3, 1.0f), short_arena(train.layout().total - 1);
    EXPECT_THROW(train.backward(std::span<float>(short_arena), dlogp), std::invalid_argument);
    std::vector<float> g(train.layout().total, 0.0f);
    train.backward(std::span<float>(g), dlogp);
    EXPECT_TRUE(std::any_of(g.begin(), g.end(), [](float x) { return x != 0.0f; }));
    EXPECT_THROW(train.backward(g, dlogp), std::logic_error);
}

// A forward for log-probs only (probe, several mini-steps) keeps no
// activations and saves no attention probabilities. Its log-probs, entropies and
// routes must be the keeping forward's bits, in both families, dense and MoE
// (with a precision that casts the weights and one that computes on the
// master arena itself), and a backward after it is refused.
TEST(Engines, ForwardForLogprobsOnlyGivesTheSameBits) {
    for (const char* preset : {"dense-tiny", "moe-tiny"})
        for (Family fam : {Family::fast, Family::batch_invariant})
            for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
                SCOPED_TRACE(std::string(preset) + (fam == Family::fast ? " fast " : " bi ") +
                             std::string(dtype_name(dt)));
                ModelConfig cfg = model_preset(preset);
                std::vector<float> params = random_params(cfg, 11);
                RolloutEngine roll(cfg);
                roll.load_weights(params, EngineNumerics::simple(Dtype::bf16));
                // Long enough answers for a few full 16-key vectors of scores.
                const SeqBatch batch = to_seq_batch(roll.generate(fam, prompts(16, 3), 40, SamplingParams{}, 5));
                roll.release_weights();  // the master back before the trainers read it
                ASSERT_GT(batch.T, 32);
                TrainEngine keep(cfg), once(cfg);
                const TrainForward a = keep.forward(fam, EngineNumerics::simple(dt), params, batch, 1.0f, nullptr);
                const TrainForward b =
                    once.forward(fam, EngineNumerics::simple(dt), params, batch, 1.0f, nullptr, false);
                ASSERT_EQ(a.logp.size(), b.logp.size());
                EXPECT_EQ(std::memcmp(a.logp.data(), b.logp.data(), a.logp.size() * sizeof(float)), 0);
                EXPECT_EQ(std::memcmp(a.entropy.data(), b.entropy.data(), a.entropy.size() * sizeof(float)), 0);
                EXPECT_EQ(a.used_expert_ids, b.used_expert_ids);
                std::vector<float> g, dlogp(a.logp.size(), 1.0f);
                EXPECT_THROW(once.backward(g, dlogp), std::logic_error);
                keep.backward(g, dlogp);  // the keeping forward still trains
            }
}

// The RL step frees the rollout's weights after its rollout; a generate
// without weights is refused instead of reading freed memory. The engine
// borrows the master (as it is for fp32, rounded in place for bf16, copied for
// fp16) and gives it back, the same bits, when it releases the weights.
TEST(Engines, GenerateAfterReleasingTheWeightsIsRefusedAndTheMasterIsGivenBack) {
    const ModelConfig cfg = model_preset("dense-tiny");
    for (Dtype dt : {Dtype::f32, Dtype::bf16, Dtype::f16}) {
        SCOPED_TRACE(dtype_name(dt));
        RolloutEngine roll(cfg);
        const std::vector<float> original = random_params(cfg, 3);
        std::vector<float> params = original;
        roll.load_weights(params, EngineNumerics::simple(dt));
        const RolloutResult first = roll.generate(Family::fast, prompts(4, 1), 6, SamplingParams{}, 7);
        roll.release_weights();
        EXPECT_EQ(0, std::memcmp(params.data(), original.data(), original.size() * sizeof(float)));
        EXPECT_THROW(roll.generate(Family::fast, prompts(4, 1), 6, SamplingParams{}, 7), std::logic_error);
        roll.load_weights(params, EngineNumerics::simple(dt));
        const RolloutResult again = roll.generate(Family::fast, prompts(4, 1), 6, SamplingParams{}, 7);
        ASSERT_EQ(again.sequences.size(), first.sequences.size());
        for (size_t i = 0; i < first.sequences.size(); ++i)
            EXPECT_EQ(again.sequences[i].tokens, first.sequences[i].tokens) << "sequence " << i;
        roll.release_weights();
        {
            RolloutEngine ends_holding(cfg);  // its end gives the master back too
            ends_holding.load_weights(params, EngineNumerics::simple(dt));
        }
        EXPECT_EQ(0, std::memcmp(params.data(), original.data(), original.size() * sizeof(float)));
    }
}

// Rounded in place, the master holds the bits a bf16 copy would
// (copy_rounded), and restore gives every weight its old bits back: ties to
// even, a carry into the exponent, subnormals, signed zeros, the largest
// float rounding to infinity, infinities; over enough weights that the
// threads share them, and a count that is not a whole word of bits.
TEST(Engines, Bf16InPlaceRoundsAsTheCopyAndGivesTheBitsBack) {
    const uint32_t edges[] = {0x3f7fffffu, 0x3f808000u, 0x3f818000u, 0x3f807fffu, 0x00000001u, 0x00008000u,
                              0x00018000u, 0x807fffffu, 0x80000000u, 0x00000000u, 0x7f7fffffu, 0xff7fffffu,
                              0x7f800000u, 0xff800000u, 0xbf7fffffu, 0x4b7fffffu};
    std::mt19937 rng(11);
    std::uniform_int_distribution<uint32_t> any_bits;
    std::vector<float> original(700'001);
    for (size_t i = 0; i < original.size(); ++i) {
        uint32_t u = i < std::size(edges) ? edges[i] : any_bits(rng);
        if ((u & 0x7fffffffu) > 0x7f800000u) u = 0x3f800001u;
        std::memcpy(&original[i], &u, sizeof u);
    }
    std::vector<float> copy(original.size());
    copy_rounded(copy.data(), original.data(), original.size(), Dtype::bf16);
    std::vector<float> master = original;
    Bf16InPlace rounded;
    ASSERT_TRUE(rounded.round(master));
    EXPECT_TRUE(rounded.active());
    EXPECT_EQ(0, std::memcmp(master.data(), copy.data(), copy.size() * sizeof(float)));
    rounded.restore();
    EXPECT_FALSE(rounded.active());
    EXPECT_EQ(0, std::memcmp(master.data(), original.data(), original.size() * sizeof(float)));

    // A NaN's rounding does not keep its bits: refused, the master untouched.
    master[12345] = std::nanf("");
    const std::vector<float> with_nan = master;
    EXPECT_FALSE(rounded.round(master));
    EXPECT_FALSE(rounded.active());
    EXPECT_EQ(0, std::memcmp(master.data(), with_nan.data(), master.size() * sizeof(float)));
}

// Cast in place (fp8 W8A8 with either format, fp16), the master holds the
// bits of cast_params' copy, and restore gives every weight its old bits
// back, the ones kept whole too: weights the cast moves to zero or to
// infinity, a NaN, signed zeros; over enough weights that the threads share them.
TEST(Engines, CastInPlaceCastsAsTheCopyAndGivesTheBitsBack) {
    const ModelConfig cfg = model_preset("moe-small");
    const ParamLayout layout = make_param_layout(cfg);
    std::vector<float> original = random_params(cfg, 5);
    ASSERT_GT(original.size(), 4 * kFloatsPerPart);
    const float planted[] = {1e-30f, -1e-30f, 0.0f, -0.0f, 1e30f, std::nanf(""), 7e-6f, 3e-8f};
    // In a linear weight, which fp8 quantises (the embedding is rounded only).
    const int64_t q_proj = layout.find("model.layers.1.self_attn.q_proj.weight")->offset;
    for (size_t i = 0; i < std::size(planted); ++i) original[q_proj + 97 * i] = planted[i];
    EngineNumerics e4m3 = EngineNumerics::simple(Dtype::bf16), e5m2 = e4m3;
    e4m3.matmul = Dtype::fp8_e4m3;
    e5m2.matmul = Dtype::fp8_e5m2;
    for (const EngineNumerics& n : {e4m3, e5m2, EngineNumerics::simple(Dtype::f16)}) {
        SCOPED_TRACE(dtype_name(n.matmul));
        std::vector<float> copy(original.size());
        cast_params(copy, original, layout, n);
        std::vector<float> master = original;
        CastInPlace cast;
        cast.cast(master, layout, n);
        EXPECT_TRUE(cast.active());
        EXPECT_EQ(0, std::memcmp(master.data(), copy.data(), copy.size() * sizeof(float)));
        EXPECT_GE(cast.whole_weights(), 2u) << "1e-30 and 1e30 move further than 3 bytes hold";
        EXPECT_LT(cast.whole_weights(), original.size() / 1000);
        cast.restore();
        EXPECT_FALSE(cast.active());
        EXPECT_EQ(0, std::memcmp(master.data(), original.data(), original.size() * sizeof(float)));
    }
}
