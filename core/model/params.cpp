#include "core/model/params.h"

#include <stdexcept>

#include "core/model/vocab.h"

namespace mlk {

std::string ModelConfig::preset_name() const { return std::string(kind == ModelKind::moe ? "moe-" : "dense-") + size; }

const std::vector<std::string>& model_preset_names() {
    static const std::vector<std::string> names = {"dense-tiny", "moe-tiny", "dense-small", "moe-small"};
    return names;
}

ModelConfig model_preset(const std::string& name) {
    ModelConfig c;
    c.vocab_size = Vocab::size();
    if (name == "dense-tiny") {
        c.kind = ModelKind::dense;
        c.size = "tiny";
    } else if (name == "moe-tiny") {
        c.kind = ModelKind::moe;
        c.size = "tiny";
        c.num_experts = 8;
        c.num_experts_per_tok = 2;
        c.moe_intermediate_size = 64;
        c.tie_word_embeddings = false;
    } else if (name == "dense-small") {
        c.kind = ModelKind::dense;
        c.size = "small";
        c.hidden_size = 128;
        c.num_layers = 4;
        c.num_heads = 8;
        c.num_kv_heads = 4;
        c.intermediate_size = 384;
    } else if (name == "moe-small") {
        c.kind = ModelKind::moe;
        c.size = "small";
        c.hidden_size = 128;
        c.num_layers = 4;
        c.num_heads = 8;
        c.num_kv_heads = 4;
        c.num_experts = 16;
        c.num_experts_per_tok = 4;
        c.moe_intermediate_size = 96;
        c.tie_word_embeddings = false;
    } else {
        throw std::invalid_argument("model preset '" + name +
                                    "' is unknown; allowed: dense-tiny, moe-tiny, dense-small, moe-small");
    }
    return c;
}

std::vector<int64_t> ParamSpec::hf_shape() const {
    if (!transposed) return shape;
    return {shape[1], shape[0]};
}

const ParamSpec* ParamLayout::find(const std::string& name) const {
    for (const auto& s : specs)
        if (s.name == name) return &s;
    return nullptr;
}

ParamLayout make_param_layout(const ModelConfig& c) {
    ParamLayout L;
    auto add = [&](std::string name, std::vector<int64_t> shape, bool transposed) {
        ParamSpec s;
        s.name = std::move(name);
        s.shape = std::move(shape);
        s.transposed = transposed;
        s.numel = 1;
        for (auto d : s.shape) s.numel *= d;
        s.offset = L.total;
        L.total += s.numel;
        L.specs.push_back(std::move(s));
    };
    // linear(name, in, out): stored [in,out], HF [out,in].
    auto linear = [&](const std::string& name, int64_t in, int64_t out) { add(name, {in, out}, true); };
    const int64_t D = c.hidden_size, hd = c.head_dim;
    add("model.embed_tokens.weight", {c.vocab_size, D}, false);
    for (int l = 0; l < c.num_layers; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        add(p + "input_layernorm.weight", {D}, false);
        linear(p + "self_attn.q_proj.weight", D, c.num_heads * hd);
        linear(p + "self_attn.k_proj.weight", D, c.num_kv_heads * hd);
        linear(p + "self_attn.v_proj.weight", D, c.num_kv_heads * hd);
        linear(p + "self_attn.o_proj.weight", c.num_heads * hd, D);
        add(p + "self_attn.q_norm.weight", {hd}, false);
        add(p + "self_attn.k_norm.weight", {hd}, false);
        add(p + "post_attention_layernorm.weight", {D}, false);
        if (c.kind == ModelKind::dense) {
            linear(p + "mlp.gate_proj.weight", D, c.intermediate_size);
            linear(p + "mlp.up_proj.weight", D, c.intermediate_size);
            linear(p + "mlp.down_proj.weight", c.intermediate_size, D);
        } else {
            linear(p + "mlp.gate.weight", D, c.num_experts);
            for (int e = 0; e < c.num_experts; ++e) {
                std::string q = p + "mlp.experts." + std::to_string(e) + ".";
                linear(q + "gate_proj.weight", D, c.moe_intermediate_size);
                linear(q + "up_proj.weight", D, c.moe_intermediate_size);
                linear(q + "down_proj.weight", c.moe_intermediate_size, D);
            }
        }
    }
    add("model.norm.weight", {D}, false);
    if (!c.tie_word_embeddings) linear("lm_head.weight", D, c.vocab_size);
    return L;
}

ModelConfig model_config_of(const Config& c) {
    ModelConfig m = model_preset(std::string(enum_name(c.model.kind)) + "-" + std::string(enum_name(c.model.size)));
    m.vocab_size = Vocab::size();
    return m;
}

}  // namespace mlk
