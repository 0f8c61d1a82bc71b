#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace mlk {

namespace {
// `arena` holds the parameters from offset `first` on.
float* view(const ParamLayout& L, float* arena, const std::string& name, int64_t first = 0) {
    const ParamSpec* s = L.find(name);
    if (!s) throw std::logic_error("parameter layout has no tensor " + name);
    if (s->offset < first) throw std::logic_error("tensor " + name + " lies before the arena's first parameter");
    return arena + (s->offset - first);
}
}  // namespace

LayerWeights bind_layer_weights(const ModelConfig& cfg, const ParamLayout& L, int l, float* a, int64_t first) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    LayerWeights lw{};
    lw.input_norm = view(L, a, p + "input_layernorm.weight", first);
    lw.wq = view(L, a, p + "self_attn.q_proj.weight", first);
    lw.wk = view(L, a, p + "self_attn.k_proj.weight", first);
    lw.wv = view(L, a, p + "self_attn.v_proj.weight", first);
    lw.wo = view(L, a, p + "self_attn.o_proj.weight", first);
    lw.q_norm = view(L, a, p + "self_attn.q_norm.weight", first);
    lw.k_norm = view(L, a, p + "self_attn.k_norm.weight", first);
    lw.post_norm = view(L, a, p + "post_attention_layernorm.weight", first);
    if (!cfg.is_moe_layer(l)) {
        lw.w_gate = view(L, a, p + "mlp.gate_proj.weight", first);
        lw.w_up = view(L, a, p + "mlp.up_proj.weight", first);
        lw.w_down = view(L, a, p + "mlp.down_proj.weight", first);
    } else {
        lw.router = view(L, a, p + "mlp.gate.weight", first);
        for (int e = 0; e < cfg.num_experts; ++e) {
            const std::string q = p + "mlp.experts." + std::to_string(e) + ".";
            lw.e_gate.push_back(view(L, a, q + "gate_proj.weight", first));
            lw.e_up.push_back(view(L, a, q + "up_proj.weight", first));
            lw.e_down.push_back(view(L, a, q + "down_proj.weight", first));
        }
    }
    return lw;
}

Weights bind_weights(const ModelConfig& cfg, const ParamLayout& L, float* a) {
    Weights w;
    w.embed = view(L, a, "model.embed_tokens.weight");
    w.final_norm = view(L, a, "model.norm.weight");
    w.lm_head = cfg.tie_word_embeddings ? nullptr : view(L, a, "lm_head.weight");
    for (int l = 0; l < cfg.num_layers; ++l) w.layers.push_back(bind_layer_weights(cfg, L, l, a, 0));
    return w;
}

ModelConfig shallow_model(const ModelConfig& deep, int layers) {
    if (layers < 1 || layers > deep.num_layers)
        throw std::invalid_argument("shallow_model: " + std::to_string(layers) + " layers for a model of " +
                                    std::to_string(deep.num_layers));
    ModelConfig m = deep;
    m.num_layers = layers;
    m.decoder_sparse_step = 1;
    m.mlp_only_layers.clear();
    for (int j = 0; j < layers; ++j)
        if (!deep.is_moe_layer(grown_layer_index(j, layers, deep.num_layers))) m.mlp_only_layers.push_back(j);
    m.size = matching_preset_size(m);
    return m;
}

int grown_layer_index(int j, int shallow_layers, int deep_layers) {
    return static_cast<int>(static_cast<int64_t>(j) * deep_layers / shallow_layers);
}

void grow_params(float* deep_arena, const ModelConfig& deep, const ParamLayout& deep_layout, const float* shallow_arena,
                 const ModelConfig& shallow, const ParamLayout& shallow_layout) {
    const auto copy = [&](const std::string& name) {
        const ParamSpec* from = shallow_layout.find(name);
        const ParamSpec* to = deep_layout.find(name);
        if (!from || !to || from->numel != to->numel) throw std::logic_error("grow_params: " + name + " differs");
        std::copy_n(shallow_arena + from->offset, from->numel, deep_arena + to->offset);
    };
    copy("model.embed_tokens.weight");
    copy("model.norm.weight");
    if (!deep.tie_word_embeddings) copy("lm_head.weight");
    std::vector<bool> grown(deep.num_layers, false);
    for (int j = 0; j < shallow.num_layers; ++j) {
        const int l = grown_layer_index(j, shallow.num_layers, deep.num_layers);
        const ParamRange from = shallow_layout.layers[j].all(), to = deep_layout.layers[l].all();
        if (from.end - from.begin != to.end - to.begin || shallow.is_moe_layer(j) != deep.is_moe_layer(l))
            throw std::logic_error("grow_params: shallow layer " + std::to_string(j) + " does not fit layer " +
                                   std::to_string(l));
        std::copy(shallow_arena + from.begin, shallow_arena + from.end, deep_arena + to.begin);
        grown[l] = true;
    }
    const Weights w = bind_weights(deep, deep_layout, deep_arena);
    const int64_t D = deep.hidden_size, attn = int64_t{deep.num_heads} * deep.head_dim;
    for (int l = 0; l < deep.num_layers; ++l) {
        if (grown[l]) continue;
        const LayerWeights& lw = w.layers[l];
        std::fill_n(lw.wo, attn * D, 0.0f);
        if (!deep.is_moe_layer(l)) std::fill_n(lw.w_down, int64_t{deep.intermediate_size} * D, 0.0f);
        for (float* down : lw.e_down) std::fill_n(down, int64_t{deep.moe_intermediate_size} * D, 0.0f);
    }
}

uint64_t hash_u64(uint64_t seed, uint64_t a, uint64_t b) {
    // splitmix64 over a mixed key: cheap, stateless, well distributed.
    uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (a + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^
                 (b + 0x85EBCA77C2B2AE63ull) * 0x94D049BB133111EBull;
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double hash_uniform(uint64_t seed, uint64_t a, uint64_t b) {
    return static_cast<double>(hash_u64(seed, a, b) >> 11) * 0x1.0p-53;
}

void init_params(const ModelConfig& cfg, const ParamLayout& L, float* arena, uint64_t seed) {
    (void)cfg;
    // Each tensor draws from its own stream, so the threads share the tensors
    // out and the bits are those of one thread: serial, the draws would be 2 %
    // of a deep preset's first run with the other thread idle.
    std::vector<double> cost(L.specs.size());
    for (size_t i = 0; i < L.specs.size(); ++i) cost[i] = (double)L.specs[i].numel;
    parallel_tasks((int)L.specs.size(), cost.data(), [&](int i) {
        const ParamSpec& s = L.specs[(size_t)i];
        float* p = arena + s.offset;
        if (s.shape.size() == 1) {  // RMSNorm weights
            for (int64_t j = 0; j < s.numel; ++j) p[j] = 1.0f;
            return;
        }
        // Per-tensor stream keyed by its index, so adding a tensor never
        // reshuffles the others.
        std::mt19937_64 rng(hash_u64(seed, 0x1417, (uint64_t)i));
        std::normal_distribution<double> nd(0.0, 1.0);
        // Embeddings at 2/sqrt(D): with the tied head, logits then have a
        // standard deviation near 2, a distribution neither flat nor one-hot.
        double std = 1.0 / std::sqrt(static_cast<double>(s.shape[0]));
        if (!s.transposed) std = 2.0 / std::sqrt(static_cast<double>(s.shape[1]));
        for (int64_t j = 0; j < s.numel; ++j) p[j] = static_cast<float>(nd(rng) * std);
    });
}

void tied_lm_head(std::vector<float>& out, const float* embed, int V, int D) {
    out.resize(static_cast<size_t>(V) * D);
    for (int v = 0; v < V; ++v)
        for (int d = 0; d < D; ++d) out[static_cast<size_t>(d) * V + v] = embed[static_cast<size_t>(v) * D + d];
}

}  // namespace mlk
