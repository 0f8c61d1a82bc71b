// The footprint printed before a run: its parameter count is the layout's,
// its memory and time grow with what they are made of.
#include "core/rl/footprint.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/config/config.h"
#include "core/model/params.h"

using namespace mlk;
using nlohmann::json;

namespace {

Config model_config(const json& model) {
    json j = json::object();
    for (auto it = model.begin(); it != model.end(); ++it) j["model." + it.key()] = it.value();
    return config_from_json(j);
}

}  // namespace

TEST(Footprint, ParameterCountIsTheLayoutsTotal) {
    std::vector<Config> configs;
    for (const auto& name : model_preset_names()) {
        const ModelSettings s = preset_settings(name);
        configs.push_back(model_config({{"kind", enum_name(s.kind)}, {"size", enum_name(s.size)}}));
    }
    configs.push_back(model_config({{"kind", "moe"},
                                    {"size", "deep"},
                                    {"num_layers", 6},
                                    {"decoder_sparse_step", 2},
                                    {"mlp_only_layers", "0,5"},
                                    {"tie_word_embeddings", "true"}}));
    configs.push_back(model_config({{"hidden_size", 96}, {"num_heads", 6}, {"num_kv_heads", 3}, {"head_dim", 10}}));
    for (const Config& c : configs) {
        const ModelConfig m = model_config_of(c);
        SCOPED_TRACE(architecture_text(m));
        const ModelFootprint f = model_footprint(c);
        EXPECT_EQ(f.params, make_param_layout(m).total);
        EXPECT_EQ(parameter_count(m), make_param_layout(m).total);
        // A dense model uses every parameter per token; an MoE only its top-k.
        if (m.num_moe_layers() == 0) EXPECT_EQ(f.active_params, f.params);
        else EXPECT_LT(f.active_params, f.params);
        // fp32 training (the default) computes on the master weights: 4
        // floats per parameter at once (the gradients and the rollout's copy
        // take turns); a bf16 trainer keeps a cast copy too.
        EXPECT_DOUBLE_EQ(f.weights_mb, 16.0 * f.params / (1024.0 * 1024.0));
        Config bf16 = c;
        bf16.train.precision = Dtype::bf16;
        EXPECT_DOUBLE_EQ(model_footprint(bf16).weights_mb, 20.0 * f.params / (1024.0 * 1024.0));
        EXPECT_GT(f.activations_mb, 0.0);
        EXPECT_DOUBLE_EQ(f.memory_mb, f.weights_mb + f.activations_mb);
        EXPECT_TRUE(std::isfinite(f.est_step_ms) && f.est_step_ms > 0) << f.est_step_ms;
    }
}

TEST(Footprint, GrowsWithTheBatchAndTheModel) {
    Config c;
    const ModelFootprint base = model_footprint(c);
    c.rl.prompts_per_step *= 2;
    const ModelFootprint twice = model_footprint(c);
    EXPECT_EQ(twice.params, base.params);
    EXPECT_DOUBLE_EQ(twice.weights_mb, base.weights_mb);
    EXPECT_GT(twice.activations_mb, 1.9 * base.activations_mb);
    EXPECT_DOUBLE_EQ(twice.step_gflop, 2 * base.step_gflop);
    // The estimate divides the work by one rate measured once per process.
    EXPECT_DOUBLE_EQ(twice.est_step_ms / base.est_step_ms, 2.0);
    EXPECT_DOUBLE_EQ(base.est_step_ms, base.step_gflop / rl_step_gflops() * 1e3);

    const ModelFootprint deep = model_footprint(model_config({{"kind", "moe"}, {"size", "deep"}}));
    const ModelFootprint tiny = model_footprint(model_config({{"kind", "moe"}, {"size", "tiny"}}));
    EXPECT_GT(deep.params, 20 * tiny.params);
    EXPECT_GT(deep.step_gflop, 10 * tiny.step_gflop);
    const std::string text = footprint_text(deep);
    EXPECT_NE(text.find("14.8M parameters"), std::string::npos) << text;
    EXPECT_NE(text.find(" MB"), std::string::npos) << text;
    EXPECT_NE(text.find("per RL step"), std::string::npos) << text;
}
