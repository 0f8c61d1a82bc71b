// Whole-model checks: the engines' float forward against a double-precision
// reference, and the hand-written backward against that reference's finite
// differences, dense and MoE (router and expert weights included).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/config/config.h"
#include "core/model/model.h"
#include "core/engines/train_engine.h"
#include "core/model/vocab.h"
#include "tests/core/model/model_ref.h"

using namespace mlk;

namespace {

struct Case {
    const char* preset;
};

SeqBatch random_batch(int B, int T, uint64_t seed) {
    SeqBatch b;
    b.B = B;
    b.T = T;
    std::mt19937 rng((unsigned)seed);
    std::uniform_int_distribution<int> tok(Vocab::first_char, Vocab::size() - 1);
    for (int i = 0; i < B * T; ++i) b.tokens.push_back(i % T == 0 ? Vocab::bos : tok(rng));
    b.lengths.assign(B, T);
    b.prompt_lens.assign(B, 3);
    return b;
}

std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// A model preset, or "moe-mixed": moe-tiny built with three layers, the
// middle one dense (model.mlp_only_layers), so MoE and dense layers alternate
// and the second MoE layer is layer 2.
ModelConfig test_model(const std::string& name) {
    if (name != "moe-mixed") return model_preset(name);
    const ModelConfig m = model_config_of(
        config_from_json({{"model.kind", "moe"}, {"model.num_layers", 3}, {"model.mlp_only_layers", "1"}}));
    EXPECT_EQ(m.moe_layers(), std::vector<int>({0, 2}));
    return m;
}

class ModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ModelTest, ForwardMatchesDoubleReference) {
    ModelConfig cfg = test_model(GetParam());
    ParamLayout layout = make_param_layout(cfg);
    std::vector<float> params(layout.total);
    init_params(cfg, layout, params.data(), 7);
    SeqBatch batch = random_batch(3, 14, 11);

    std::vector<std::vector<int32_t>> routes;
    auto ref =
        reftest::ref_model_logp(cfg, to_double(params), batch.tokens, batch.B, batch.T, 1.0 / 0.8, &routes, false);
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        TrainEngine eng(cfg);
        // The reference's own routes, replayed, so a near-tie cannot pick a
        // different expert and hide a real forward error.
        const auto& out = eng.forward(fam, EngineNumerics::simple(Dtype::f32), params, batch, 1.0f / 0.8f,
                                      cfg.kind == ModelKind::moe ? &routes : nullptr);
        double worst = 0;
        for (int b = 0; b < batch.B; ++b)
            for (int t = 1; t < batch.T; ++t) {
                size_t i = (size_t)b * batch.T + t;
                worst = std::max(worst, std::fabs(out.logp[i] - ref[i]));
            }
        EXPECT_LT(worst, 2e-4) << GetParam() << " family " << (int)fam;
        if (cfg.kind == ModelKind::moe) {
            // Without replay the engine's own top-k agrees with the reference almost everywhere.
            size_t same = 0, total = 0;
            for (size_t l = 0; l < routes.size(); ++l)
                for (size_t i = 0; i < routes[l].size(); ++i, ++total) same += out.own_expert_ids[l][i] == routes[l][i];
            EXPECT_GT((double)same / total, 0.97);
        }
    }
}

// A model, its initial weights, a batch, and the loss gradient the backward
// checks feed: loss = sum_t c_t * logp_t with fixed random c (what the RL loss
// feeds back).
struct BackwardCase {
    ModelConfig cfg;
    ParamLayout layout;
    std::vector<float> params;
    SeqBatch batch;
    std::vector<float> c;
    std::mt19937 rng{99};  // c's generator, after c: the finite-difference probes draw on from here
};
BackwardCase backward_case(const char* name) {
    BackwardCase k;
    k.cfg = test_model(name);
    k.layout = make_param_layout(k.cfg);
    k.params.resize(k.layout.total);
    init_params(k.cfg, k.layout, k.params.data(), 3);
    k.batch = random_batch(2, 10, 5);
    std::normal_distribution<double> nd;
    k.c.resize(k.batch.tokens.size());
    for (auto& x : k.c) x = (float)nd(k.rng);
    for (int b = 0; b < k.batch.B; ++b) k.c[(size_t)b * k.batch.T] = 0;
    return k;
}

TEST_P(ModelTest, BackwardMatchesFiniteDifferences) {
    BackwardCase k = backward_case(GetParam());
    const ModelConfig& cfg = k.cfg;
    const ParamLayout& layout = k.layout;
    const std::vector<float>& params = k.params;
    const SeqBatch& batch = k.batch;
    const std::vector<float>& c = k.c;
    std::mt19937& rng = k.rng;
    const double inv_temp = 1.0;

    std::vector<std::vector<int32_t>> routes;
    std::vector<double> P = to_double(params);
    reftest::ref_model_logp(cfg, P, batch.tokens, batch.B, batch.T, inv_temp, &routes, false);
    auto loss_at = [&](const std::vector<double>& p) {
        auto lp = reftest::ref_model_logp(cfg, p, batch.tokens, batch.B, batch.T, inv_temp, &routes, true);
        double s = 0;
        for (size_t i = 0; i < lp.size(); ++i) s += c[i] * lp[i];
        return s;
    };

    TrainEngine eng(cfg);
    eng.forward(Family::fast, EngineNumerics::simple(Dtype::f32), params, batch, (float)inv_temp,
                cfg.kind == ModelKind::moe ? &routes : nullptr);
    std::vector<float> grads(layout.total, 0.0f);
    eng.backward(grads, c);

    // Three entries of every tensor: every op's backward is on some path. A
    // check where both sides are ~0 proves nothing, so count the ones where
    // the finite difference is clearly non-zero.
    int informative = 0, nonzero_tensors = 0;
    for (const ParamSpec& s : layout.specs) {
        bool any_nonzero = false;
        for (int64_t j = 0; j < s.numel; ++j) any_nonzero |= grads[s.offset + j] != 0.0f;
        nonzero_tensors += any_nonzero;
        std::uniform_int_distribution<int64_t> pick(0, s.numel - 1);
        for (int r = 0; r < 3; ++r) {
            int64_t i = s.offset + pick(rng);
            const double h = 1e-5;
            std::vector<double> pp = P, pm = P;
            pp[i] += h;
            pm[i] -= h;
            double fd = (loss_at(pp) - loss_at(pm)) / (2 * h);
            double tol = 2e-3 * std::max(1.0, std::fabs(fd));
            EXPECT_NEAR(grads[i], fd, tol) << s.name << " [" << (i - s.offset) << "]";
            informative += std::fabs(fd) > 1e-3;
        }
    }
    EXPECT_GE(informative, (int)layout.specs.size()) << "of " << 3 * layout.specs.size() << " checks";
    // Every tensor used by this batch receives gradient; in a MoE an expert
    // no token chose legitimately gets none, so require most.
    EXPECT_GE(nonzero_tensors, (int)layout.specs.size() * 3 / 4);
    if (cfg.kind == ModelKind::moe) {
        const ParamSpec* router = layout.find("model.layers.0.mlp.gate.weight");
        double norm = 0;
        for (int64_t j = 0; j < router->numel; ++j) norm += std::fabs(grads[router->offset + j]);
        EXPECT_GT(norm, 0.0) << "the router must receive gradient";
    }
}

// The engine's backward over every layer kind, in both families, without the
// double reference: every gradient finite, and most tensors receive some.
TEST_P(ModelTest, BackwardGivesFiniteGradients) {
    const BackwardCase k = backward_case(GetParam());
    const ParamLayout& layout = k.layout;
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        TrainEngine eng(k.cfg);
        eng.forward(fam, EngineNumerics::simple(Dtype::f32), k.params, k.batch, 1.0f, nullptr);
        std::vector<float> grads(layout.total, 0.0f);
        eng.backward(grads, k.c);
        int nonzero_tensors = 0;
        for (const ParamSpec& sp : layout.specs) {
            bool any_nonzero = false, all_finite = true;
            for (int64_t j = 0; j < sp.numel; ++j) {
                any_nonzero |= grads[sp.offset + j] != 0.0f;
                all_finite &= std::isfinite(grads[sp.offset + j]);
            }
            EXPECT_TRUE(all_finite) << sp.name;
            nonzero_tensors += any_nonzero;
        }
        EXPECT_GE(nonzero_tensors, (int)layout.specs.size() * 3 / 4) << "family " << (int)fam;
    }
}

INSTANTIATE_TEST_SUITE_P(Presets, ModelTest, ::testing::Values("dense-tiny", "moe-tiny", "moe-mixed"));

TEST(ModelLayout, HuggingFaceNamesAndShapes) {
    ModelConfig moe = model_preset("moe-tiny");
    ParamLayout L = make_param_layout(moe);
    const ParamSpec* down = L.find("model.layers.0.mlp.experts.3.down_proj.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->hf_shape(), (std::vector<int64_t>{moe.hidden_size, moe.moe_intermediate_size}));
    const ParamSpec* gate = L.find("model.layers.1.mlp.gate.weight");
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate->hf_shape(), (std::vector<int64_t>{moe.num_experts, moe.hidden_size}));
    EXPECT_NE(L.find("lm_head.weight"), nullptr);
    ParamLayout dense = make_param_layout(model_preset("dense-tiny"));
    EXPECT_EQ(dense.find("lm_head.weight"), nullptr) << "dense-tiny ties its LM head to the embedding";
    EXPECT_NE(dense.find("model.layers.0.self_attn.q_norm.weight"), nullptr);
    EXPECT_THROW(model_preset("dense-huge"), std::invalid_argument);
}

// The layout's layer ranges cover exactly each layer's tensors, by name: the
// shared run from its input norm through its dense MLP or router, then each
// expert's three projections; the embedding before them, the head after.
TEST(ModelLayout, LayerRangesHoldEachLayersTensors) {
    for (const char* preset : {"moe-tiny", "dense-tiny"}) {
        const ModelConfig cfg = model_preset(preset);
        const ParamLayout L = make_param_layout(cfg);
        ASSERT_EQ((int)L.layers.size(), cfg.num_layers) << preset;
        for (const ParamSpec& p : L.specs) {
            int in_layer = -1, in_expert = -1;
            for (int l = 0; l < cfg.num_layers; ++l) {
                const ParamLayout::Layer& layer = L.layers[l];
                if (p.offset >= layer.shared.begin && p.offset + p.numel <= layer.shared.end) in_layer = l;
                for (size_t e = 0; e < layer.experts.size(); ++e)
                    if (p.offset >= layer.experts[e].begin && p.offset + p.numel <= layer.experts[e].end)
                        in_layer = l, in_expert = (int)e;
            }
            const std::string layer_prefix = "model.layers." + std::to_string(in_layer) + ".";
            if (p.name.rfind("model.layers.", 0) != 0) {
                EXPECT_EQ(in_layer, -1) << p.name;
            } else if (in_expert < 0) {
                EXPECT_EQ(p.name.rfind(layer_prefix, 0), 0u) << p.name;
            } else {
                EXPECT_EQ(p.name.rfind(layer_prefix + "mlp.experts." + std::to_string(in_expert) + ".", 0), 0u)
                    << p.name;
            }
            if (p.name.find(".mlp.experts.") != std::string::npos) {
                EXPECT_GE(in_expert, 0) << p.name;
            }
        }
        for (int l = 0; l < cfg.num_layers; ++l)
            EXPECT_EQ((int)L.layers[l].experts.size(), cfg.is_moe_layer(l) ? cfg.num_experts : 0) << preset << " " << l;
    }
}

TEST(Model, ConfigOfARun) {
    Config c;
    ModelConfig m = model_config_of(c);
    EXPECT_EQ(m.preset_name(), "dense-tiny");
    EXPECT_EQ(m.vocab_size, Vocab::size());
    c.model.kind = ModelKind::moe;
    c.model.size = ModelSize::small;
    m = model_config_of(c);
    EXPECT_EQ(m.preset_name(), "moe-small");
    EXPECT_EQ(m.num_experts, 16);
    EXPECT_EQ(m.vocab_size, Vocab::size());
}

}  // namespace

// The initial weights are the same bits whatever the thread count (the
// threads share the tensors out; each tensor draws from its own stream keyed
// by its index), and a tensor's first draw is that stream's.
TEST(Model, InitParamsIsTheSameOnOneThreadAndTwo) {
    const ModelConfig cfg = model_preset("moe-small");
    const ParamLayout layout = make_param_layout(cfg);
    std::vector<float> one(layout.total), two(layout.total);
    set_num_threads(1);
    init_params(cfg, layout, one.data(), 5);
    set_num_threads(2);
    init_params(cfg, layout, two.data(), 5);
    set_num_threads(0);
    EXPECT_EQ(std::memcmp(one.data(), two.data(), one.size() * sizeof(float)), 0);
    for (size_t i = 0; i < layout.specs.size(); ++i) {
        const ParamSpec& s = layout.specs[i];
        if (s.shape.size() == 1) continue;
        std::mt19937_64 rng(hash_u64(5, 0x1417, i));
        std::normal_distribution<double> nd(0.0, 1.0);
        const double std = s.transposed ? 1.0 / std::sqrt((double)s.shape[0]) : 2.0 / std::sqrt((double)s.shape[1]);
        EXPECT_EQ(one[(size_t)s.offset], (float)(nd(rng) * std)) << s.name;
    }
}
