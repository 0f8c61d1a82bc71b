// Qwen3-style dense and Qwen3-MoE-style decoders on the kernels/ op set.
// Parameters, gradients and AdamW moments each live in one flat arena laid
// out by ParamLayout; `Weights` is the table of named views into any of them.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/model/buffers.h"
#include "core/model/params.h"
#include "kernels/kernels.h"

namespace mlk {

// Named views into one arena (parameters, gradients, a rounded copy ...).
struct LayerWeights {
    float* input_norm;                         // [D]
    float* wq;                                 // [D, H*hd]
    float* wk;                                 // [D, Hkv*hd]
    float* wv;                                 // [D, Hkv*hd]
    float* wo;                                 // [H*hd, D]
    float* q_norm;                             // [hd]
    float* k_norm;                             // [hd]
    float* post_norm;                          // [D]
    float* w_gate;                             // dense layer [D, F]
    float* w_up;                               // dense layer [D, F]
    float* w_down;                             // dense layer [F, D]
    float* router;                             // MoE layer (cfg.is_moe_layer) [D, E]
    std::vector<float*> e_gate, e_up, e_down;  // MoE layer, per expert [D,Fm], [D,Fm], [Fm,D]
};

struct Weights {
    float* embed;  // [V, D]
    std::vector<LayerWeights> layers;
    float* final_norm;  // [D]
    float* lm_head;     // [D, V]; nullptr when tied to embed
};

Weights bind_weights(const ModelConfig& cfg, const ParamLayout& layout, float* arena);
// Layer l's views into `arena`, which holds the parameters from offset
// `first` on: the whole arena (0), or a copy of the layer alone
// (layout.layers[l].all().begin).
LayerWeights bind_layer_weights(const ModelConfig& cfg, const ParamLayout& layout, int l, float* arena, int64_t first);

// Deterministic initialisation from a seed: RMSNorm weights 1, embeddings
// N(0, 4/D), linear weights N(0, 1/fan_in), so a tiny random model has
// non-trivial logits and router preferences.
void init_params(const ModelConfig& cfg, const ParamLayout& layout, float* arena, uint64_t seed);

// Depth up-scaling, as the base-policy warm-up grows a shallow model into a
// deep one. shallow_model: `deep` with `layers` layers, each of the kind
// (dense or MoE) of the deep layer it grows into. grown_layer_index: where
// shallow layer j of n goes among L, spread evenly (j * L / n).
ModelConfig shallow_model(const ModelConfig& deep, int layers);
int grown_layer_index(int j, int shallow_layers, int deep_layers);
// deep_arena = the shallow model grown: its embedding, final norm, head and
// layers copied to their grown places; every other layer keeps the deep
// arena's values (its own initialisation) but for zeroed output projections
// (o_proj, and down_proj of the dense MLP or of every expert). Those layers
// then add exact zeros to the residual stream, so the grown model computes
// the shallow one's log-probs bit for bit until it trains.
void grow_params(float* deep_arena, const ModelConfig& deep, const ParamLayout& deep_layout, const float* shallow_arena,
                 const ModelConfig& shallow, const ParamLayout& shallow_layout);

// lm_head as [D,V] for the tied case: a transposed copy of the embedding.
void tied_lm_head(std::vector<float>& out, const float* embed, int V, int D);

// Counter-based random numbers: the same (seed, a, b) always gives the same
// value, whatever the batch composition or thread count.
uint64_t hash_u64(uint64_t seed, uint64_t a, uint64_t b = 0);
double hash_uniform(uint64_t seed, uint64_t a, uint64_t b = 0);  // [0, 1)

}  // namespace mlk
