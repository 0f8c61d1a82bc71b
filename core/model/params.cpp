#include "core/model/params.h"

#include "core/model/vocab.h"

namespace mlk {

ModelConfig model_preset(const std::string& name) {
    ModelConfig c = preset_architecture(name);
    c.vocab_size = Vocab::size();
    return c;
}

std::vector<int64_t> ParamSpec::hf_shape() const {
    if (!transposed) return shape;
    return {shape[1], shape[0]};
}

const ParamSpec* ParamLayout::find(const std::string& name) const {
    const auto it = index.find(name);
    return it == index.end() ? nullptr : &specs[it->second];
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
        L.index.emplace(s.name, L.specs.size());
        L.specs.push_back(std::move(s));
    };
    // linear(name, in, out): stored [in,out], HF [out,in].
    auto linear = [&](const std::string& name, int64_t in, int64_t out) { add(name, {in, out}, true); };
    const int64_t D = c.hidden_size, hd = c.head_dim;
    add("model.embed_tokens.weight", {c.vocab_size, D}, false);
    for (int l = 0; l < c.num_layers; ++l) {
        std::string p = "model.layers." + std::to_string(l) + ".";
        ParamLayout::Layer& layer = L.layers.emplace_back();
        layer.shared.begin = L.total;
        add(p + "input_layernorm.weight", {D}, false);
        linear(p + "self_attn.q_proj.weight", D, c.num_heads * hd);
        linear(p + "self_attn.k_proj.weight", D, c.num_kv_heads * hd);
        linear(p + "self_attn.v_proj.weight", D, c.num_kv_heads * hd);
        linear(p + "self_attn.o_proj.weight", c.num_heads * hd, D);
        add(p + "self_attn.q_norm.weight", {hd}, false);
        add(p + "self_attn.k_norm.weight", {hd}, false);
        add(p + "post_attention_layernorm.weight", {D}, false);
        if (!c.is_moe_layer(l)) {
            linear(p + "mlp.gate_proj.weight", D, c.intermediate_size);
            linear(p + "mlp.up_proj.weight", D, c.intermediate_size);
            linear(p + "mlp.down_proj.weight", c.intermediate_size, D);
            layer.shared.end = L.total;
        } else {
            linear(p + "mlp.gate.weight", D, c.num_experts);
            layer.shared.end = L.total;
            for (int e = 0; e < c.num_experts; ++e) {
                std::string q = p + "mlp.experts." + std::to_string(e) + ".";
                const int64_t begin = L.total;
                linear(q + "gate_proj.weight", D, c.moe_intermediate_size);
                linear(q + "up_proj.weight", D, c.moe_intermediate_size);
                linear(q + "down_proj.weight", c.moe_intermediate_size, D);
                layer.experts.push_back({begin, L.total});
            }
        }
    }
    add("model.norm.weight", {D}, false);
    if (!c.tie_word_embeddings) linear("lm_head.weight", D, c.vocab_size);
    return L;
}

ModelConfig model_config_of(const Config& c) {
    ModelConfig m = architecture_of(c.model);
    m.vocab_size = Vocab::size();
    return m;
}

}  // namespace mlk
