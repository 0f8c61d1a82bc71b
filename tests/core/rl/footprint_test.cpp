// The footprint printed before a run: its parameter count is the layout's,
// its memory and time grow with what they are made of.
#include "core/rl/footprint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/config/config.h"
#include "core/engines/numerics.h"
#include "core/engines/train_engine.h"
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
        // The master and AdamW's two moments throughout; each phase beside
        // them, the larger counting.
        const double mb_per_float = 4.0 / (1024.0 * 1024.0);
        EXPECT_DOUBLE_EQ(f.state_mb, 3.0 * f.params * mb_per_float);
        EXPECT_GT(f.training_mb, f.params * mb_per_float) << "the gradients and more";
        EXPECT_GT(f.rollout_mb, 0.0);
        EXPECT_DOUBLE_EQ(f.memory_mb, f.state_mb + std::max(f.rollout_mb, f.training_mb));
        // fp32 training (the default) computes on the master weights; a
        // bf16 trainer casts one layer at a time into a buffer of its own.
        Config bf16 = c;
        bf16.train.precision = Dtype::bf16;
        const double cast_mb = model_footprint(bf16).training_mb - f.training_mb;
        EXPECT_DOUBLE_EQ(cast_mb, TrainEngine::cast_weight_floats(m, train_numerics(bf16)) * mb_per_float);
        EXPECT_GT(cast_mb, 0.0);
        EXPECT_LT(cast_mb, f.params * mb_per_float) << "a layer, not a copy of the model";
        // The rollout borrows the master: as it is (fp32), rounded in place
        // (bf16, 17 bits a weight kept) or cast in place (fp8, 3 bytes).
        Config roll = c;
        roll.rollout.precision = Dtype::f32;
        const double f32_mb = model_footprint(roll).rollout_mb;
        roll.rollout.precision = Dtype::bf16;
        EXPECT_NEAR(model_footprint(roll).rollout_mb - f32_mb, 17.0 / 8.0 * f.params / (1024.0 * 1024.0), 1e-9);
        roll.rollout.precision = Dtype::fp8_e4m3;
        EXPECT_NEAR(model_footprint(roll).rollout_mb - f32_mb, 3.0 * f.params / (1024.0 * 1024.0), 1e-9);
        EXPECT_TRUE(std::isfinite(f.est_step_ms) && f.est_step_ms > 0) << f.est_step_ms;
    }
}

TEST(Footprint, GrowsWithTheBatchAndTheModel) {
    Config c;
    const ModelFootprint base = model_footprint(c);
    c.rl.prompts_per_step *= 2;
    const ModelFootprint twice = model_footprint(c);
    EXPECT_EQ(twice.params, base.params);
    EXPECT_DOUBLE_EQ(twice.state_mb, base.state_mb);
    // What grows is the batch's: training less the gradients, the rollout
    // less the master's keeping.
    const double grads_mb = 4.0 * base.params / (1024.0 * 1024.0);
    EXPECT_GT(twice.training_mb - grads_mb, 1.9 * (base.training_mb - grads_mb));
    EXPECT_GT(twice.rollout_mb, base.rollout_mb);
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
    EXPECT_NE(text.find(" MiB,"), std::string::npos) << text;
    EXPECT_NE(text.find("per RL step"), std::string::npos) << text;
}
