// Model shapes and the flat parameter arena's table of named views. Parameters,
// gradients and AdamW moments each live in one contiguous float buffer; the
// layout below says where each named tensor sits (same offsets in all four).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config/settings.h"

namespace mlk {

struct ModelConfig {
    ModelKind kind = ModelKind::dense;
    std::string size = "tiny";  // tiny | small: which preset the dimensions came from
    int vocab_size = 0;
    int hidden_size = 64;
    int num_layers = 2;
    int num_heads = 4;
    int num_kv_heads = 2;
    int head_dim = 16;
    int intermediate_size = 192;  // dense SwiGLU width
    int num_experts = 0;          // MoE only
    int num_experts_per_tok = 0;
    int moe_intermediate_size = 0;
    float rms_norm_eps = 1e-6f;
    float rope_theta = 10000.0f;
    int max_position_embeddings = 128;
    bool tie_word_embeddings = true;

    std::string preset_name() const;  // "dense-tiny", ...
};

// "dense-tiny", "moe-tiny", "dense-small", "moe-small". Throws
// std::invalid_argument naming the allowed values for anything else.
ModelConfig model_preset(const std::string& name);
const std::vector<std::string>& model_preset_names();

struct ParamSpec {
    std::string name;            // Hugging Face Qwen3 / Qwen3-MoE tensor name
    std::vector<int64_t> shape;  // shape as stored in the arena
    bool transposed = false;     // linear weight stored [in,out]; HF shape is the reverse
    int64_t offset = 0;          // in floats, into the arena
    int64_t numel = 0;
    std::vector<int64_t> hf_shape() const;
};

struct ParamLayout {
    std::vector<ParamSpec> specs;
    int64_t total = 0;
    const ParamSpec* find(const std::string& name) const;  // nullptr when absent
};

ParamLayout make_param_layout(const ModelConfig& cfg);

// The model a run's configuration asks for: model_preset("<kind>-<size>") with
// the task vocabulary's size.
ModelConfig model_config_of(const Config& c);

}  // namespace mlk
