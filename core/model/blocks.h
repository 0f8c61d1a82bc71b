// Transformer blocks shared by the rollout engine and the training engine:
// the attention input projections (q/k/v, per-head RMSNorm, RoPE) and the
// dense SwiGLU / MoE feed-forward, each with its saved activations.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/buffers.h"
#include "core/model/model.h"

namespace mlk {

// q/k/v for M rows at positions pos[M]; q[M,H*hd], k/v[M,Hkv*hd] come out
// normalised and rotated, ready for attention.
struct QkvActs {
    ActBuffer q_pre, k_pre;    // [M,H*hd], [M,Hkv*hd] before q/k norm
    ActBuffer rstd_q, rstd_k;  // [M*H], [M*Hkv]
    ActBuffer q, k, v;
};
void qkv_forward(const Exec& ex, QkvActs& a, const float* ln, const int32_t* pos, int M, const LayerWeights& w,
                 const ModelConfig& cfg);
// q and k (with rstd_q, rstd_k) from q_pre and k_pre: Qwen3's per-head RMSNorm
// and RoPE, the second half of qkv_forward. Deterministic, so the training
// engine recomputes them in backward rather than keeping them.
void qk_norm_rope(const Exec& ex, QkvActs& a, const int32_t* pos, int M, const LayerWeights& w, const ModelConfig& cfg);
// dln[M,D] += ... (= with GradStore::overwrite), weight gradients into gw.
// dq/dk are consumed (overwritten).
void qkv_backward(float* dln, LayerWeights& gw, float* dq, float* dk, const float* dv, const QkvActs& a,
                  const float* ln, const int32_t* pos, int M, const LayerWeights& w, const ModelConfig& cfg,
                  GradStore dln_store = GradStore::add);

struct DenseMlpActs {
    ActBuffer gate, up, act;  // [M,F]
};
// out[M,D] = down(swiglu(gate(x), up(x))). out = nullptr: gate, up and act
// only, what the backward reads (a checkpointed layer's recompute).
void dense_mlp_forward(const Exec& ex, DenseMlpActs& a, float* out, const float* x, int M, const LayerWeights& w,
                       const ModelConfig& cfg);
// dx[M,D] += ... (= with GradStore::overwrite), weight gradients into gw.
void dense_mlp_backward(float* dx, LayerWeights& gw, const float* dout, const DenseMlpActs& a, const float* x, int M,
                        const LayerWeights& w, const ModelConfig& cfg, GradStore dx_store = GradStore::add);

struct MoeActs {
    std::vector<float> router_logits;  // [M,E]
    std::vector<int32_t> own_ids;      // [M,k] this engine's own top-k
    std::vector<float> own_weights;    // [M,k]
    std::vector<int32_t> ids;          // [M,k] experts used (own, or replayed)
    std::vector<float> weights;        // [M,k] gate weights used
    struct Expert {
        std::vector<int32_t> rows;  // (m*k + slot) for every token routed here, token order
        size_t first = 0;           // its first row in the stacked buffers below
    };
    std::vector<Expert> experts;
    // Every expert's rows stacked in expert order, expert e's Me rows from
    // experts[e].first: one buffer per activation, sized to the layer's M*k
    // rows. (A buffer per expert kept its largest size over every layer and
    // call: moe-deep's outputs held 41 MB for at most 14 MB of rows.)
    ActBuffer x, gate, up, act, y;  // [M*k, D], [M*k, Fm] x3, [M*k, D]
};
// What moe_forward keeps of each expert's activations. The bits of what it
// computes are the same in every mode.
enum class MoeKeep {
    all,     // x, gate, up, act and y: for moe_backward (or moe_recompute_inputs)
    output,  // y only, which the combine reads: no backward reads this layer's experts
    routes,  // the routing only (ids, weights, each expert's rows); no expert runs and
             // `out` is not written: for moe_backward_recomputing, which writes the
             // input gradients into y
};
// replay_ids[M,k] (R3): experts to use where replay_ids[m*k] >= 0; the gate
// weights are a softmax over *this* engine's logits of those experts.
void moe_forward(const Exec& ex, MoeActs& a, float* out, const float* x, int M, const LayerWeights& w,
                 const ModelConfig& cfg, const int32_t* replay_ids, MoeKeep keep = MoeKeep::all);
// Each expert's gathered input rows x and SwiGLU output act, recomputed from
// the layer input and the kept gate/up (the same bits moe_forward made).
void moe_recompute_inputs(const Exec& ex, MoeActs& a, const float* x, const ModelConfig& cfg);
// One token's slots j = 0..k-1 (experts ids[j], distinct) in ascending
// expert order into order[k]: the order its expert input gradients are added
// in, by every engine (the order of one loop over the experts, so its bits).
void slots_by_expert(int* order, const int32_t* ids, int k);
// dx[M,D] = d(loss)/dx (overwritten), weight gradients added into gw.
// Consumes a.y (overwritten with the experts' input gradients).
void moe_backward(float* dx, LayerWeights& gw, const float* dout, MoeActs& a, const float* x, int M,
                  const LayerWeights& w, const ModelConfig& cfg);
// The same from a routing only (moe_forward with MoeKeep::routes): each
// expert's forward runs again in its thread's scratch right before its
// backward, as moe_forward ran it (same bits), so a layer never holds every
// expert's activations at once (a checkpointed moe-deep layer: 123 MB).
void moe_backward_recomputing(const Exec& ex, float* dx, LayerWeights& gw, const float* dout, MoeActs& a,
                              const float* x, int M, const LayerWeights& w, const ModelConfig& cfg);

}  // namespace mlk
