// Model shapes and the flat parameter arena's table of named views. Parameters,
// gradients and AdamW moments each live in one contiguous float buffer; the
// layout below says where each named tensor sits (same offsets in all four).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config/model_builder.h"

namespace mlk {

// The model builder's architectures (core/config/model_builder.h) with the
// task vocabulary's size: "dense-tiny", ... (model_preset_names()). Throws
// std::invalid_argument naming the allowed values for anything else.
ModelConfig model_preset(const std::string& name);

struct ParamSpec {
    std::string name;            // Hugging Face Qwen3 / Qwen3-MoE tensor name
    std::vector<int64_t> shape;  // shape as stored in the arena
    bool transposed = false;     // linear weight stored [in,out]; HF shape is the reverse
    int64_t offset = 0;          // in floats, into the arena
    int64_t numel = 0;
    std::vector<int64_t> hf_shape() const;
};

// [begin, end) floats of the arena.
struct ParamRange {
    int64_t begin = 0, end = 0;
};

struct ParamLayout {
    std::vector<ParamSpec> specs;
    int64_t total = 0;
    // Where each layer sits: its attention, norms and dense MLP or router
    // (`shared`, one run), then each expert's three projections. Outside the
    // layers: the embedding before them, the final norm and head after. A
    // backward maps a fresh gradient arena's pages by these (train_engine.h).
    struct Layer {
        ParamRange shared;
        std::vector<ParamRange> experts;  // [E], empty for a dense layer
        // The whole layer, its experts after its shared run: one span.
        ParamRange all() const { return {shared.begin, experts.empty() ? shared.end : experts.back().end}; }
    };
    std::vector<Layer> layers;
    const ParamSpec* find(const std::string& name) const;  // nullptr when absent
    // name -> index into specs: engines bind every tensor by name on each
    // weight load, and a deep MoE has thousands of them.
    std::unordered_map<std::string, size_t> index;
};

// Per layer: attention, norms, then a dense MLP (mlp.gate_proj/up_proj/
// down_proj) or, where cfg.is_moe_layer(l), a router (mlp.gate) and experts
// (mlp.experts.E.*), as Hugging Face Qwen3-MoE names them.
ParamLayout make_param_layout(const ModelConfig& cfg);

// The model a run's configuration asks for: architecture_of(c.model) with
// the task vocabulary's size.
ModelConfig model_config_of(const Config& c);

}  // namespace mlk
