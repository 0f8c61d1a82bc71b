// Depth up-scaling as the base-policy warm-up uses it: a shallow model grown
// into a deep one computes the shallow model's log-probs bit for bit, and its
// fresh layers still learn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "core/engines/numerics.h"
#include "core/engines/train_engine.h"
#include "core/model/model.h"
#include "core/model/vocab.h"
#include "tests/token_sequences.h"

using namespace mlk;

namespace {

ModelConfig with_layers(const std::string& preset, int layers, std::vector<int> mlp_only = {}) {
    ModelConfig m = model_preset(preset);
    m.num_layers = layers;
    m.mlp_only_layers = std::move(mlp_only);
    return m;
}

std::vector<float> initial(const ModelConfig& m, uint64_t seed) {
    const ParamLayout layout = make_param_layout(m);
    std::vector<float> p((size_t)layout.total);
    init_params(m, layout, p.data(), seed);
    return p;
}

// 12 sequences of 6 to 13 tokens drawn from `seed`.
SeqBatch batch_of(uint64_t seed) {
    const std::vector<std::vector<int32_t>> seqs = testdata::token_sequences(12, seed, 5, 8);
    return make_seq_batch(seqs, std::vector<int32_t>(seqs.size(), 1));
}

const float* tensor(const ModelConfig& m, const std::vector<float>& arena, const std::string& name) {
    const ParamLayout layout = make_param_layout(m);
    const ParamSpec* s = layout.find(name);
    EXPECT_NE(s, nullptr) << name;
    return s ? arena.data() + s->offset : nullptr;
}

bool all_zero(const float* p, int64_t n) {
    return std::all_of(p, p + n, [](float v) { return v == 0.0f; });
}

}  // namespace

TEST(DepthGrowth, ShallowLayersGoEvenlyAndKeepTheKindOfTheirPlace) {
    EXPECT_EQ(grown_layer_index(0, 2, 12), 0);
    EXPECT_EQ(grown_layer_index(1, 2, 12), 6);
    EXPECT_EQ(grown_layer_index(2, 3, 12), 8);
    EXPECT_EQ(grown_layer_index(1, 2, 5), 2);
    // Layer 3 of the deep MoE is dense: shallow layer 1 grows into it, so it is dense too.
    const ModelConfig deep = with_layers("moe-tiny", 6, {3});
    const ModelConfig shallow = shallow_model(deep, 2);
    EXPECT_EQ(shallow.num_layers, 2);
    EXPECT_TRUE(shallow.is_moe_layer(0));
    EXPECT_FALSE(shallow.is_moe_layer(1));
    EXPECT_EQ(shallow.size, "custom");
    EXPECT_EQ(shallow_model(model_preset("dense-deep"), 4).size, "small");  // dense-small's shape
    EXPECT_THROW(shallow_model(deep, 7), std::invalid_argument);
    EXPECT_THROW(shallow_model(deep, 0), std::invalid_argument);
}

// The fresh layers' output projections are zero, so each adds exact zeros to
// the residual stream: the grown model's log-probs are the shallow one's, in
// both kernel families, dense and MoE (with a dense layer among the MoE ones
// and an untied head).
TEST(DepthGrowth, GrownModelComputesTheShallowModelsLogProbsBitForBit) {
    for (const ModelConfig& deep : {with_layers("dense-tiny", 5), with_layers("moe-tiny", 4, {2})}) {
        SCOPED_TRACE(deep.preset_name() + " with " + std::to_string(deep.num_layers) + " layers");
        const ModelConfig shallow = shallow_model(deep, 2);
        const std::vector<float> small = initial(shallow, 5);
        std::vector<float> grown = initial(deep, 6);
        const std::vector<float> fresh = grown;
        grow_params(grown.data(), deep, make_param_layout(deep), small.data(), shallow, make_param_layout(shallow));

        // Copied where they grow to, zeroed output projections elsewhere, the
        // deep initialisation everywhere else.
        const int D = deep.hidden_size;
        for (int l = 0; l < deep.num_layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            const bool copied = l == 0 || l == grown_layer_index(1, 2, deep.num_layers);
            const int64_t attn = (int64_t)deep.num_heads * deep.head_dim * D;  // o_proj's size, and q_proj's
            const float* wq = tensor(deep, grown, p + "self_attn.q_proj.weight");
            const float* wo = tensor(deep, grown, p + "self_attn.o_proj.weight");
            if (copied) {
                const std::string sp = "model.layers." + std::to_string(l == 0 ? 0 : 1) + ".";
                EXPECT_EQ(std::memcmp(wo, tensor(shallow, small, sp + "self_attn.o_proj.weight"), attn * 4), 0) << l;
                continue;
            }
            EXPECT_TRUE(all_zero(wo, attn)) << l;
            EXPECT_EQ(std::memcmp(wq, tensor(deep, fresh, p + "self_attn.q_proj.weight"), attn * 4), 0) << l;
            if (deep.is_moe_layer(l))
                for (int e = 0; e < deep.num_experts; ++e)
                    EXPECT_TRUE(
                        all_zero(tensor(deep, grown, p + "mlp.experts." + std::to_string(e) + ".down_proj.weight"),
                                 (int64_t)deep.moe_intermediate_size * D))
                        << l << " expert " << e;
            else
                EXPECT_TRUE(
                    all_zero(tensor(deep, grown, p + "mlp.down_proj.weight"), (int64_t)deep.intermediate_size * D))
                    << l;
        }

        const SeqBatch batch = batch_of(7);
        for (Family family : {Family::fast, Family::batch_invariant}) {
            TrainEngine a(shallow), b(deep);
            const EngineNumerics f32 = EngineNumerics::simple(Dtype::f32);
            const std::vector<float> lp_small = a.forward(family, f32, small, batch, 1.0f, nullptr, false).logp;
            const std::vector<float> lp_grown = b.forward(family, f32, grown, batch, 1.0f, nullptr, false).logp;
            ASSERT_EQ(lp_small.size(), lp_grown.size());
            EXPECT_EQ(std::memcmp(lp_small.data(), lp_grown.data(), lp_small.size() * sizeof(float)), 0)
                << (family == Family::fast ? "fast" : "batch-invariant");
        }

        // The fresh layers learn: their output projections get gradients at
        // once (through them the rest of each fresh layer follows).
        TrainEngine train(deep);
        train.forward(Family::fast, EngineNumerics::simple(Dtype::f32), grown, batch, 1.0f, nullptr);
        std::vector<float> dlogp((size_t)batch.B * batch.T);
        for (size_t i = 0; i < dlogp.size(); ++i) dlogp[i] = (float)(hash_uniform(3, i) - 0.5);
        std::vector<float> grads((size_t)train.layout().total, 0.0f);
        train.backward(grads, dlogp);
        const float* g_wo = tensor(deep, grads, "model.layers.1.self_attn.o_proj.weight");
        EXPECT_FALSE(all_zero(g_wo, (int64_t)deep.num_heads * deep.head_dim * D));
    }
}
