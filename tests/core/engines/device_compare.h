// The engines on a device (core/engines/device_model.h) against the CPU
// engines: the same rollout (tokens, log-probs, alternatives, experts) and
// the same training-engine log-probs. Shared by the host-device suite (every
// build) and the CUDA suite (label gpu).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <type_traits>
#include <vector>

#include "core/engines/device_model.h"
#include "core/engines/numerics.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "core/model/model.h"
#include "core/model/vocab.h"
#include "tests/bits.h"
#include "tests/token_sequences.h"

namespace mlk::testdata {

// A parameterised test's name: "moe_tiny_fast", "dense_small_bf16" (gtest
// names allow letters, digits and '_').
template <class P>
std::string case_name(const ::testing::TestParamInfo<std::tuple<const char*, P>>& info) {
    std::string name = std::get<0>(info.param);
    if constexpr (std::is_same_v<P, Family>) name += std::get<1>(info.param) == Family::fast ? "_fast" : "_bi";
    else name += "_" + std::string(dtype_name(std::get<1>(info.param)));
    for (char& ch : name)
        if (!std::isalnum((unsigned char)ch)) ch = '_';
    return name;
}

inline std::vector<std::vector<int32_t>> ragged_prompts(int n, uint64_t seed) {
    return testdata::token_sequences(n, seed, 3, 7);
}

inline std::vector<float> initial_params(const ModelConfig& cfg, uint64_t seed) {
    const ParamLayout layout = make_param_layout(cfg);
    std::vector<float> params(layout.total);
    init_params(cfg, layout, params.data(), seed);
    return params;
}

struct RolloutCase {
    std::string preset;
    Family family;
    EngineNumerics numerics;
    float temperature = 1.0f;
    int max_batch = 0;  // 0 = all at once; smaller: continuous batching
};

inline RolloutResult rollout_on(const RolloutCase& c, const DeviceOps* device) {
    const ModelConfig cfg = model_preset(c.preset);
    std::vector<float> params = initial_params(cfg, 42);  // outlives the engine that borrows it
    RolloutEngine roll(cfg, device);
    roll.load_weights(params, c.numerics);
    SamplingParams sp;
    sp.temperature = c.temperature;
    // Two generates: the second reuses the engine's buffers and cache.
    roll.generate(c.family, ragged_prompts(5, 9), 4, sp, 77, 0);
    return roll.generate(c.family, ragged_prompts(20, 5), 12, sp, 1234, c.max_batch);
}

// How many response tokens' log-probs differ in their bits; every sequence
// must have the same tokens for the comparison to mean anything.
inline size_t rollout_lp_diffs(const RolloutResult& a, const RolloutResult& b, size_t* tokens) {
    size_t diff = 0;
    *tokens = 0;
    for (size_t i = 0; i < a.sequences.size(); ++i) {
        const auto &x = a.sequences[i], &y = b.sequences[i];
        const size_t n = std::min(x.lp_raw.size(), y.lp_raw.size());
        for (size_t j = 0; j < n; ++j) {
            ++*tokens;
            diff += float_bits(x.lp_raw[j]) != float_bits(y.lp_raw[j]);
        }
    }
    return diff;
}

inline void expect_same_rollout(const RolloutResult& cpu, const RolloutResult& dev) {
    ASSERT_EQ(cpu.sequences.size(), dev.sequences.size());
    EXPECT_EQ(cpu.decode_batch_sizes, dev.decode_batch_sizes);
    EXPECT_EQ(cpu.prefill_calls, dev.prefill_calls);
    for (size_t i = 0; i < cpu.sequences.size(); ++i) {
        const RolloutSequence &a = cpu.sequences[i], &b = dev.sequences[i];
        ASSERT_EQ(a.tokens, b.tokens) << "sequence " << i;
        EXPECT_TRUE(bits_equal(b.lp_processed, a.lp_processed)) << "sequence " << i << " lp_processed";
        EXPECT_TRUE(bits_equal(b.lp_raw, a.lp_raw)) << "sequence " << i << " lp_raw";
        EXPECT_EQ(a.top, b.top) << "sequence " << i;
        EXPECT_EQ(a.rows, b.rows) << "sequence " << i;
        EXPECT_EQ(a.expert_ids, b.expert_ids) << "sequence " << i;
        EXPECT_EQ(a.finished_by_eos, b.finished_by_eos) << "sequence " << i;
    }
}

struct SequenceForward {
    TrainForward out;
    std::vector<float> lp_rows;
};

// The training engine's log-prob forward over a rollout's sequences, on the
// CPU engine (device == nullptr) or a device; with R3 the rollout's routes replayed.
inline SequenceForward sequence_forward_on(const std::string& preset, Family family, const EngineNumerics& numerics,
                                           bool r3, const DeviceOps* device) {
    const ModelConfig cfg = model_preset(preset);
    const std::vector<float> params = initial_params(cfg, 42);
    RolloutCase rc{preset, Family::batch_invariant, EngineNumerics::simple(Dtype::f32), 1.0f, 6};
    const RolloutResult roll = rollout_on(rc, nullptr);
    const SeqBatch batch = to_seq_batch(roll);
    std::vector<std::vector<int32_t>> table;
    if (r3) table = replay_table(roll, batch.T, cfg.num_moe_layers(), cfg.num_experts_per_tok);
    const float inv_temp = 1.0f / 0.8f;
    SequenceForward f;
    if (!device) {
        TrainEngine train(cfg);
        f.out = train.forward(family, numerics, params, batch, inv_temp, r3 ? &table : nullptr, false);
        const size_t V = cfg.vocab_size;
        for (int b = 0; b < batch.B; ++b)
            for (int t = 0; t < batch.T; ++t) {
                const float* row = train.logprob_row(b, t);
                f.lp_rows.insert(f.lp_rows.end(), row, row + V);
            }
    } else {
        DeviceModel model(cfg, *device);
        model.load_weights(params, numerics);
        model.sequence_forward(family, batch, inv_temp, r3 ? &table : nullptr, f.out, f.lp_rows);
    }
    return f;
}

inline void expect_same_sequence_forward(const SequenceForward& cpu, const SequenceForward& dev) {
    EXPECT_TRUE(bits_equal(dev.out.logp, cpu.out.logp)) << "log-probs";
    EXPECT_TRUE(bits_equal(dev.out.entropy, cpu.out.entropy)) << "entropies";
    EXPECT_TRUE(bits_equal(dev.lp_rows, cpu.lp_rows)) << "log-prob rows";
    EXPECT_EQ(dev.out.own_expert_ids, cpu.out.own_expert_ids);
    EXPECT_EQ(dev.out.used_expert_ids, cpu.out.used_expert_ids);
}

struct Trained {
    std::vector<float> logp, grads, lp_rows;
};

// The training engine on the CPU (device == nullptr) or a device: a forward
// for backward over a rollout's batch and its backward, then a second one over
// the first half of the batch (a mini-step) adding into the same gradients.
inline Trained train_on(const std::string& preset, Family family, const EngineNumerics& numerics, bool r3,
                        const DeviceOps* device) {
    const ModelConfig cfg = model_preset(preset);
    const std::vector<float> params = initial_params(cfg, 42);
    const RolloutResult roll =
        rollout_on({preset, Family::batch_invariant, EngineNumerics::simple(Dtype::f32), 1.0f, 6}, nullptr);
    const SeqBatch batch = to_seq_batch(roll);
    const SeqBatch half = sub_batch(batch, 0, batch.B / 2);
    std::vector<std::vector<int32_t>> table, half_table;
    if (r3) {
        table = replay_table(roll, batch.T, cfg.num_moe_layers(), cfg.num_experts_per_tok);
        for (const auto& layer : table)
            half_table.emplace_back(layer.begin(), layer.begin() + (size_t)half.B * half.T * cfg.num_experts_per_tok);
    }
    // A loss gradient on the response tokens, different at every position.
    const auto dlogp_of = [](const SeqBatch& b) {
        std::vector<float> d((size_t)b.B * b.T, 0.0f);
        for (int s = 0; s < b.B; ++s)
            for (int t = b.prompt_lens[s]; t < b.lengths[s]; ++t)
                d[(size_t)s * b.T + t] = (float)(hash_uniform(3, s, t) - 0.5);
        return d;
    };
    TrainEngine train(cfg, device);
    Trained out;
    out.logp = train.forward(family, numerics, params, batch, 1.0f / 0.8f, r3 ? &table : nullptr, true).logp;
    const size_t V = cfg.vocab_size;
    for (int b = 0; b < batch.B; ++b)
        for (int t = 0; t < batch.T; ++t) {
            const float* row = train.logprob_row(b, t);
            out.lp_rows.insert(out.lp_rows.end(), row, row + V);
        }
    train.backward(out.grads, dlogp_of(batch));
    train.forward(family, numerics, params, half, 1.0f / 0.8f, r3 ? &half_table : nullptr, true);
    train.backward(out.grads, dlogp_of(half));
    return out;
}

inline void expect_same_training(const Trained& cpu, const Trained& dev) {
    EXPECT_TRUE(bits_equal(dev.logp, cpu.logp)) << "log-probs";
    EXPECT_TRUE(bits_equal(dev.lp_rows, cpu.lp_rows)) << "log-prob rows";
    EXPECT_TRUE(bits_equal(dev.grads, cpu.grads)) << "gradients";
    size_t nonzero = 0;
    for (float g : cpu.grads) nonzero += g != 0.0f;
    EXPECT_GT(nonzero, cpu.grads.size() / 2) << "a backward that reached most parameters";
}

}  // namespace mlk::testdata
