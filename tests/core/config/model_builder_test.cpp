// The model builder: the model.* settings give exactly the preset
// architectures by default, change single dimensions otherwise, and refuse a
// model that cannot be built with a message naming the settings involved.
#include "core/config/model_builder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/config.h"

using namespace mlk;
using nlohmann::json;

namespace {

// The ConfigError of `j` (a dotted config), "" when it is accepted.
std::string error_of(const json& j) {
    try {
        config_from_json(j);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

void expect_error(const json& j, const std::vector<std::string>& parts) {
    const std::string msg = error_of(j);
    EXPECT_FALSE(msg.empty()) << j.dump() << " was accepted";
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

json moe(const std::string& size, json extra = json::object()) {
    extra["model.kind"] = "moe";
    extra["model.size"] = size;
    return extra;
}

}  // namespace

TEST(ModelBuilder, DefaultsGiveThePresetsExactly) {
    ASSERT_EQ(model_preset_names().size(), 6u);
    for (const auto& name : model_preset_names()) {
        SCOPED_TRACE(name);
        const ModelConfig p = preset_architecture(name);
        EXPECT_EQ(architecture_of(preset_settings(name)), p);
        EXPECT_EQ(p.preset_name(), name);
        EXPECT_EQ(matching_preset_size(p), p.size);
        EXPECT_TRUE(architecture_violations(p).empty());
        // Every layer of a preset MoE is MoE; a dense preset has none.
        EXPECT_EQ(p.num_moe_layers(), p.kind == ModelKind::moe ? p.num_layers : 0);
    }
    EXPECT_EQ(architecture_of(Config{}.model), preset_architecture("dense-tiny"));
    EXPECT_THROW(preset_architecture("moe-huge"), std::invalid_argument);
    // The deep MoE is the one where routes compound: many layers, many experts.
    const ModelConfig d = preset_architecture("moe-deep");
    EXPECT_GE(d.num_layers, 8);
    EXPECT_GE(d.num_experts, 32);
    EXPECT_GE(d.num_experts_per_tok, 4);
}

// The dimensions of the tiny and small presets, written out: stored runs,
// cached base policies and checkpoints depend on them.
TEST(ModelBuilder, EarlierPresetsKeepTheirDimensions) {
    struct Dims {
        const char* name;
        int hidden, layers, heads, kv, head_dim, inter, experts, top_k, expert_width;
        bool tied;
    };
    for (const Dims& d : {Dims{"dense-tiny", 64, 2, 4, 2, 16, 192, 0, 0, 0, true},
                          Dims{"moe-tiny", 64, 2, 4, 2, 16, 192, 8, 2, 64, false},
                          Dims{"dense-small", 128, 4, 8, 4, 16, 384, 0, 0, 0, true},
                          Dims{"moe-small", 128, 4, 8, 4, 16, 192, 16, 4, 96, false}}) {
        SCOPED_TRACE(d.name);
        const ModelConfig m = preset_architecture(d.name);
        EXPECT_EQ(m.hidden_size, d.hidden);
        EXPECT_EQ(m.num_layers, d.layers);
        EXPECT_EQ(m.num_heads, d.heads);
        EXPECT_EQ(m.num_kv_heads, d.kv);
        EXPECT_EQ(m.head_dim, d.head_dim);
        EXPECT_EQ(m.intermediate_size, d.inter);
        EXPECT_EQ(m.num_experts, d.experts);
        EXPECT_EQ(m.num_experts_per_tok, d.top_k);
        EXPECT_EQ(m.moe_intermediate_size, d.expert_width);
        EXPECT_EQ(m.tie_word_embeddings, d.tied);
        EXPECT_EQ(m.decoder_sparse_step, 1);
        EXPECT_TRUE(m.mlp_only_layers.empty());
        EXPECT_EQ(m.max_position_embeddings, 128);
        EXPECT_EQ(m.rms_norm_eps, 1e-6f);
        EXPECT_EQ(m.rope_theta, 10000.0f);
    }
}

TEST(ModelBuilder, SettingsChangeSingleDimensions) {
    Config c = config_from_json(moe("deep", {{"model.num_layers", 4},
                                             {"model.decoder_sparse_step", 2},
                                             {"model.mlp_only_layers", "1"},
                                             {"model.intermediate_size", 256},
                                             {"model.tie_word_embeddings", "true"}}));
    ModelConfig m = architecture_of(c.model);
    EXPECT_EQ(m.num_layers, 4);
    EXPECT_EQ(m.hidden_size, 128);  // untouched: the preset's
    EXPECT_EQ(m.num_experts, 48);
    EXPECT_EQ(m.intermediate_size, 256);
    EXPECT_TRUE(m.tie_word_embeddings);
    // (l + 1) % 2 == 0 -> layers 1 and 3; 1 is dense-only.
    EXPECT_EQ(m.moe_layers(), std::vector<int>({3}));
    EXPECT_FALSE(m.is_moe_layer(0));
    EXPECT_FALSE(m.is_moe_layer(1));
    EXPECT_TRUE(m.is_moe_layer(3));
    EXPECT_EQ(m.size, "custom");
    EXPECT_EQ(m.preset_name(), "moe-custom");

    // A dimension set to the preset's own value is still that preset.
    c = config_from_json(moe("deep", {{"model.num_layers", 12}, {"model.num_experts", 48}}));
    EXPECT_EQ(architecture_of(c.model).preset_name(), "moe-deep");

    // A dense model has no experts whatever the MoE settings say, and is told so.
    c = config_from_json({{"model.num_experts", 8}, {"model.mlp_only_layers", "0"}});
    EXPECT_EQ(architecture_of(c.model), preset_architecture("dense-tiny"));
    const auto w = config_warnings(c);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("model.num_experts, model.mlp_only_layers"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("model.kind=dense"), std::string::npos) << w[0];
}

TEST(ModelBuilder, BadDimensionsAreRefusedNamingTheKeys) {
    expect_error({{"model.num_heads", 6}, {"model.num_kv_heads", 4}},
                 {"model.num_heads (6)", "multiple of model.num_kv_heads (4)"});
    expect_error({{"model.head_dim", 15}}, {"model.head_dim (15)", "even", "RoPE"});
    expect_error(moe("tiny", {{"model.num_experts_per_tok", 9}}),
                 {"model.num_experts_per_tok (9)", "between 1 and model.num_experts (8)"});
    expect_error(moe("small", {{"model.num_experts", 2}}), {"model.num_experts_per_tok (4)", "model.num_experts (2)"});
    expect_error(moe("tiny", {{"model.mlp_only_layers", "0,2"}}),
                 {"model.mlp_only_layers", "layer 2 does not exist", "model.num_layers is 2"});
    expect_error(moe("tiny", {{"model.mlp_only_layers", "0,1"}}), {"model.kind=moe needs at least one MoE layer"});
    expect_error(moe("tiny", {{"model.decoder_sparse_step", 3}}),
                 {"model.kind=moe needs at least one MoE layer", "model.decoder_sparse_step (3)"});
    // Per-key ranges, and the product of the dimensions.
    expect_error({{"model.hidden_size", 4096}}, {"model.hidden_size", "[0, 2048]"});
    expect_error({{"model.num_layers", -1}}, {"model.num_layers", "[0, 64]"});
    expect_error({{"model.hidden_size", 2048}, {"model.num_layers", 64}, {"model.intermediate_size", 16384}},
                 {"parameters exceed the limit of " + std::to_string(kMaxParameters), "model.hidden_size"});
    expect_error({{"model.tie_word_embeddings", "yes"}}, {"model.tie_word_embeddings", "auto, true, false"});
    // Every error of a config at once.
    expect_error({{"model.head_dim", 15}, {"model.num_heads", 5}}, {"model.head_dim", "model.num_heads (5)"});
}

TEST(ModelBuilder, LayerListIsStrict) {
    for (const char* bad : {"1, 3", "01", "a", "1,,2", "2,1", "1,1", "-1", ",", "1,", " 1", "99999"}) {
        SCOPED_TRACE(bad);
        EXPECT_FALSE(parse_layer_list(bad).has_value());
        expect_error(moe("deep", {{"model.mlp_only_layers", bad}}), {"model.mlp_only_layers", "ascending"});
    }
    EXPECT_EQ(parse_layer_list(""), std::vector<int>{});
    EXPECT_EQ(parse_layer_list("0,3,11"), (std::vector<int>{0, 3, 11}));
    EXPECT_EQ(layer_list_text({0, 3, 11}), "0,3,11");
    expect_error(moe("deep", {{"model.mlp_only_layers", 3}}), {"model.mlp_only_layers", "expected text", "integer"});
    // --set takes the text as it is, quoted or not.
    Config c = config_from_json(moe("deep"));
    apply_set(c, "model.mlp_only_layers=0,11");
    EXPECT_EQ(c.model.mlp_only_layers, "0,11");
    apply_set(c, "model.mlp_only_layers=\"\"");
    EXPECT_EQ(c.model.mlp_only_layers, "");
    EXPECT_THROW(apply_set(c, "model.mlp_only_layers=0;1"), ConfigError);
}

TEST(ModelBuilder, LongestSequenceMustFitThePositions) {
    // addition, length 3: prompt "bos 123+456=" is 9 tokens, + 10 new tokens.
    EXPECT_EQ(error_of({{"model.max_position_embeddings", 19}}), "");
    expect_error({{"model.max_position_embeddings", 18}},
                 {"model.max_position_embeddings (18)", "19 tokens", "task.name=addition", "task.length=3",
                  "rollout.max_new_tokens"});
    // The warm-up's answer and eos can be longer than the rollout's budget.
    expect_error({{"model.max_position_embeddings", 20}, {"rollout.max_new_tokens", 1}, {"task.length", 8}},
                 {"model.max_position_embeddings (20)", "29 tokens", "warm-up"});
}

TEST(ModelBuilder, HuggingFaceNamesPointToOurKeys) {
    const std::vector<std::pair<std::string, std::string>> names = {
        {"hidden_size", "model.hidden_size"},
        {"num_hidden_layers", "model.num_layers"},
        {"num_attention_heads", "model.num_heads"},
        {"num_key_value_heads", "model.num_kv_heads"},
        {"head_dim", "model.head_dim"},
        {"intermediate_size", "model.intermediate_size"},
        {"num_experts", "model.num_experts"},
        {"num_experts_per_tok", "model.num_experts_per_tok"},
        {"moe_intermediate_size", "model.moe_intermediate_size"},
        {"decoder_sparse_step", "model.decoder_sparse_step"},
        {"mlp_only_layers", "model.mlp_only_layers"},
        {"tie_word_embeddings", "model.tie_word_embeddings"},
        {"max_position_embeddings", "model.max_position_embeddings"}};
    for (const auto& [hf, ours] : names) {
        const ConfigKey* k = find_config_key(ours);
        ASSERT_NE(k, nullptr) << ours;
        EXPECT_EQ(k->hf, hf);
        EXPECT_NE(k->tooltip().find("Hugging Face config.json: " + hf), std::string::npos) << ours;
        // Written as in a config.json, the answer names our key first.
        const std::string msg = error_of({{hf, 1}});
        const auto at = msg.find("did you mean: " + ours + " (Hugging Face config.json: " + hf + ")");
        EXPECT_NE(at, std::string::npos) << msg;
        EXPECT_EQ(k->section, "Model");
    }
}
