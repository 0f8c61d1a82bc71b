// The model builder: what the model.* settings make. Six named architectures
// (model.kind x model.size) give the defaults; every dimension setting that is
// not 0 / "auto" replaces its preset value. The rules an architecture must
// follow (grouped-query heads, RoPE pairs, top-k within the experts, at least
// one MoE layer for model.kind=moe, a parameter budget) live here too, so the
// config's validate() and the checkpoint loader refuse the same things.
//
// The vocabulary is the task's character vocabulary (core/model/vocab.h), so
// shapes built here carry vocab_size 0; core/model's model_preset() and
// model_config_of() fill it in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/settings.h"

namespace mlk {

struct ModelConfig {
    ModelKind kind = ModelKind::dense;
    std::string size = "tiny";  // tiny | small | deep: the preset the dimensions equal; "custom" when none
    int vocab_size = 0;
    int hidden_size = 64;
    int num_layers = 2;
    int num_heads = 4;
    int num_kv_heads = 2;
    int head_dim = 16;
    int intermediate_size = 192;  // dense SwiGLU width (dense layers of an MoE model too)
    int num_experts = 0;          // 0 for dense models
    int num_experts_per_tok = 0;
    int moe_intermediate_size = 0;
    // Hugging Face Qwen3-MoE: layer l is MoE iff num_experts > 0, l is not in
    // mlp_only_layers and (l + 1) % decoder_sparse_step == 0.
    int decoder_sparse_step = 1;
    std::vector<int> mlp_only_layers;  // ascending, no repeats
    float rms_norm_eps = 1e-6f;
    float rope_theta = 10000.0f;
    int max_position_embeddings = 128;
    bool tie_word_embeddings = true;

    bool is_moe_layer(int l) const;
    // The MoE layers in order. Every per-layer expert table (rollout expert
    // ids, the training engine's own and used ids, the R3 replay table) is
    // indexed by the position in this list, not by the layer: [num_moe_layers][...].
    std::vector<int> moe_layers() const;
    int num_moe_layers() const { return static_cast<int>(moe_layers().size()); }
    std::string preset_name() const;  // "dense-tiny", ..., "moe-custom"
    bool operator==(const ModelConfig&) const = default;
};

// "dense-tiny", "moe-tiny", "dense-small", "moe-small", "dense-deep", "moe-deep".
const std::vector<std::string>& model_preset_names();
// One of the names above (vocab_size 0). Throws std::invalid_argument naming
// the allowed values for anything else.
ModelConfig preset_architecture(std::string_view name);
// The model.* settings that select a preset: its kind and size, every
// dimension left at 0 / auto. Throws like preset_architecture().
ModelSettings preset_settings(std::string_view name);
// The architecture the model.* settings ask for (vocab_size 0), size set by
// matching_preset_size(). Assumes the settings passed their per-key checks.
ModelConfig architecture_of(const ModelSettings& s);
// The preset size ("tiny", ...) whose architecture equals `m` in every field
// the model uses (vocabulary aside), else "custom".
std::string matching_preset_size(const ModelConfig& m);

// One line for people: "moe, hidden 128, 12 layers, 8 heads (4 kv) x 16,
// 48 experts top-6 x 64, untied head, 128 positions" (dense layers of an MoE
// model and their width listed when there are any).
std::string architecture_text(const ModelConfig& m);

// Parameters of the model: embedding, per layer attention + norms + dense MLP
// or router and experts, final norm, untied LM head. Equal to
// make_param_layout(m).total (core/model/params.h); tested so.
int64_t parameter_count(const ModelConfig& m);
// A model above this cannot be trained on the machines the workbench is for:
// its parameters, gradients, AdamW moments and the engines' copies alone
// take 6 x 4 bytes each, 1.5 GB here.
inline constexpr int64_t kMaxParameters = int64_t{1} << 26;

// Broken rules of an architecture, one message each naming its settings
// (model.num_heads, ...) or, with hf_names, its Hugging Face config.json
// fields (num_attention_heads, ...). Empty when the model can be built.
std::vector<std::string> architecture_violations(const ModelConfig& m, bool hf_names = false);
// Everything validate() checks about the model: the model.mlp_only_layers
// text, the architecture's rules, and that the longest sequence of a run
// (prompt + response, or prompt + answer in the base-policy warm-up) fits
// model.max_position_embeddings.
std::vector<std::string> model_rule_violations(const Config& c);
// The depth of the shallow model the base-policy warm-up trains first and
// grows from (base.grow_from_layers, 0 resolved), or 0 when the warm-up
// trains the model directly: no SFT steps, or a first depth equal to the
// model's.
int base_growth_layers(const Config& c);
inline constexpr int kAutoGrowthMinLayers = 8;   // auto grows models at least this deep ...
inline constexpr int kAutoGrowthFromLayers = 2;  // ... from this many layers

// Legal settings without effect: the MoE dimensions of a dense model.
std::vector<std::string> model_warnings(const Config& c);

// model.mlp_only_layers as text: "" (none) or layer indices in ascending
// order separated by commas, no spaces, e.g. "0,3". nullopt with *error set
// (without the key) for anything else.
std::optional<std::vector<int>> parse_layer_list(std::string_view text, std::string* error = nullptr);
std::string layer_list_text(const std::vector<int>& layers);

// Longest prompt (bos included) and answer (eos excluded) of a task at a
// length; the prompt formats are core/rl/tasks.h's, whose tasks report these
// bounds from here.
struct TaskBounds {
    int prompt_tokens = 0;
    int answer_tokens = 0;
};
TaskBounds task_bounds(TaskName task, int length);

}  // namespace mlk
