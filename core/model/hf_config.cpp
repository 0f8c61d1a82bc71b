// config.json as Hugging Face transformers writes it for Qwen3 (dense) and
// Qwen3-MoE, and back: every dimension of ModelConfig, so reading what
// hf_config_json wrote gives the same ModelConfig.
#include <algorithm>
#include <charconv>
#include <string>

#include "core/config/number_text.h"
#include "core/model/checkpoint.h"

namespace mlk {

using nlohmann::json;

namespace {

// Shortest decimal that reads back as the same float, as a JSON number.
json float_json(float f) {
    std::string text;
    for (int p = 1; p <= 9; ++p) {
        text = general_text(f, p);
        float back = 0;
        std::from_chars(text.data(), text.data() + text.size(), back);
        if (back == f) break;
    }
    return json::parse(text);
}

}  // namespace

json hf_config_json(const ModelConfig& c) {
    const bool moe = c.kind == ModelKind::moe;
    json j = {
        {"architectures", {moe ? "Qwen3MoeForCausalLM" : "Qwen3ForCausalLM"}},
        {"model_type", moe ? "qwen3_moe" : "qwen3"},
        {"vocab_size", c.vocab_size},
        {"hidden_size", c.hidden_size},
        {"intermediate_size", c.intermediate_size},
        {"num_hidden_layers", c.num_layers},
        {"num_attention_heads", c.num_heads},
        {"num_key_value_heads", c.num_kv_heads},
        {"head_dim", c.head_dim},
        {"rms_norm_eps", float_json(c.rms_norm_eps)},
        {"rope_theta", float_json(c.rope_theta)},
        {"rope_scaling", nullptr},
        {"max_position_embeddings", c.max_position_embeddings},
        {"tie_word_embeddings", c.tie_word_embeddings},
        {"hidden_act", "silu"},
        {"attention_bias", false},
        {"attention_dropout", 0.0},
        {"use_sliding_window", false},
        {"sliding_window", nullptr},
        {"use_cache", true},
        {"torch_dtype", "float32"},
        {"pad_token_id", 0},
        {"bos_token_id", 1},
        {"eos_token_id", 2},
    };
    if (moe) {
        j["num_experts"] = c.num_experts;
        j["num_experts_per_tok"] = c.num_experts_per_tok;
        j["moe_intermediate_size"] = c.moe_intermediate_size;
        j["norm_topk_prob"] = true;
        j["decoder_sparse_step"] = c.decoder_sparse_step;
        j["mlp_only_layers"] = c.mlp_only_layers;
        j["output_router_logits"] = false;
    }
    return j;
}

ModelConfig model_config_from_hf(const json& j) {
    if (!j.is_object()) checkpoint_fail("config.json: expected a JSON object");
    auto int_value = [](const char* key, const json& v) -> int {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > (1ll << 31) - 1)
            checkpoint_fail(std::string("config.json: field ") + key + " must be a non-negative integer, got " +
                            v.dump());
        return v.get<int>();
    };
    auto get_int = [&](const char* key) -> int {
        if (!j.contains(key)) checkpoint_fail(std::string("config.json: missing field ") + key);
        return int_value(key, j[key]);
    };
    auto get_num = [&](const char* key, double def) -> double {
        if (!j.contains(key)) return def;
        const json& v = j[key];
        if (!v.is_number())
            checkpoint_fail(std::string("config.json: field ") + key + " must be a number, got " + v.dump());
        return v.get<double>();
    };
    if (!j.contains("model_type") || !j["model_type"].is_string())
        checkpoint_fail("config.json: missing field model_type");
    const std::string type = j["model_type"].get<std::string>();
    ModelConfig c;
    if (type == "qwen3") c.kind = ModelKind::dense;
    else if (type == "qwen3_moe") c.kind = ModelKind::moe;
    else checkpoint_fail("config.json: model_type \"" + type + "\" is not supported (supported: qwen3, qwen3_moe)");

    c.vocab_size = get_int("vocab_size");
    c.hidden_size = get_int("hidden_size");
    c.num_layers = get_int("num_hidden_layers");
    c.num_heads = get_int("num_attention_heads");
    c.num_kv_heads = j.contains("num_key_value_heads") ? get_int("num_key_value_heads") : c.num_heads;
    if (c.num_heads == 0) checkpoint_fail("config.json: field num_attention_heads must be positive");
    c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null() ? get_int("head_dim") : c.hidden_size / c.num_heads;
    c.intermediate_size = get_int("intermediate_size");
    c.rms_norm_eps = static_cast<float>(get_num("rms_norm_eps", 1e-6));
    c.rope_theta = static_cast<float>(get_num("rope_theta", 10000.0));
    c.max_position_embeddings = get_int("max_position_embeddings");
    if (j.contains("tie_word_embeddings")) {
        if (!j["tie_word_embeddings"].is_boolean())
            checkpoint_fail("config.json: field tie_word_embeddings must be true/false");
        c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
    } else {
        c.tie_word_embeddings = false;  // transformers' Qwen3 default
    }
    if (j.contains("attention_bias") && j["attention_bias"] == true)
        checkpoint_fail("config.json: attention_bias=true is not supported");
    if (j.contains("hidden_act") && j["hidden_act"] != "silu")
        checkpoint_fail("config.json: hidden_act " + j["hidden_act"].dump() + " is not supported (supported: silu)");
    if (c.kind == ModelKind::moe) {
        c.num_experts = get_int("num_experts");
        c.num_experts_per_tok = get_int("num_experts_per_tok");
        c.moe_intermediate_size = get_int("moe_intermediate_size");
        // transformers' Qwen3-MoE defaults: every layer sparse, none dense-only.
        if (j.contains("decoder_sparse_step")) c.decoder_sparse_step = get_int("decoder_sparse_step");
        if (j.contains("mlp_only_layers")) {
            const json& v = j["mlp_only_layers"];
            if (!v.is_array())
                checkpoint_fail("config.json: field mlp_only_layers must be a list of layer indices, got " + v.dump());
            for (const json& l : v) c.mlp_only_layers.push_back(int_value("mlp_only_layers", l));
            // A set in transformers (`layer_idx not in mlp_only_layers`): one spelling here.
            std::sort(c.mlp_only_layers.begin(), c.mlp_only_layers.end());
            c.mlp_only_layers.erase(std::unique(c.mlp_only_layers.begin(), c.mlp_only_layers.end()),
                                    c.mlp_only_layers.end());
        }
        if (j.contains("norm_topk_prob") && j["norm_topk_prob"] != true)
            checkpoint_fail(
                "config.json: norm_topk_prob=false is not supported (the gate softmax is taken over the "
                "selected experts)");
    }
    // The same rules a configuration's model.* settings must follow.
    if (const auto bad = architecture_violations(c, true); !bad.empty()) {
        std::string msg = "config.json: ";
        for (size_t i = 0; i < bad.size(); ++i) msg += (i ? "; " : "") + bad[i];
        checkpoint_fail(msg);
    }
    c.size = matching_preset_size(c);
    return c;
}

}  // namespace mlk
