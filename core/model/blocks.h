// Transformer blocks shared by the rollout engine and the training engine:
// the attention input projections (q/k/v, per-head RMSNorm, RoPE) and the
// dense SwiGLU / MoE feed-forward, each with its saved activations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "core/model/model.h"

namespace mlk {

// An allocator whose resize() leaves new elements unset. The activation
// buffers below are resized and then written whole by the kernel that fills
// them, so zeroing them first was pure cost: 5% of an MoE step's samples
// (perf: memset under moe_forward, plus the page faults it took first).
template <class T>
struct UnsetAllocator : std::allocator<T> {
    using std::allocator<T>::allocator;
    template <class U>
    struct rebind {
        using other = UnsetAllocator<U>;
    };
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};
// Activations that a kernel overwrites in full after every resize. A resize
// past the capacity therefore drops the old contents instead of copying them
// across (std::vector copies element by element under a custom allocator:
// 1.6% of a moe-small step in perf, from the experts' buffers).
struct ActBuffer : std::vector<float, UnsetAllocator<float>> {
    using std::vector<float, UnsetAllocator<float>>::vector;
    void resize(size_t n) {
        if (n > capacity()) clear();
        std::vector<float, UnsetAllocator<float>>::resize(n);
    }
};

// fn(begin, end) over parts of [0, n) on the pool's threads, at least
// min_part items each (a single call inline when n is smaller than two parts):
// for the memory-bound fills and copies between kernels, which on the calling
// thread alone left the other thread idle (perf, two threads: memset 3.8 % of
// a dense-small step's samples, all on the calling thread).
void for_parts(size_t n, size_t min_part, const std::function<void(size_t, size_t)>& fn);
// 1 MB: below a few such parts a second thread's wake-up costs more than it saves.
inline constexpr size_t kFloatsPerPart = size_t{1} << 18;
// p[0..n) = 0, in parts.
void zero_floats(float* p, size_t n);
// dst[0..n) = src[0..n), in parts.
void copy_floats(float* dst, const float* src, size_t n);

// dst = src without the element-by-element copy an ActBuffer's assignment
// makes through its allocator.
inline void copy_into(ActBuffer& dst, const ActBuffer& src) {
    dst.resize(src.size());
    copy_floats(dst.data(), src.data(), src.size());
}

// Gradient scratch of n zeros, for kernels that add into their output. Where
// the first kernel can write it whole (GradStore::overwrite), an ActBuffer
// spares the zeroing.
struct GradBuffer : ActBuffer {
    explicit GradBuffer(size_t n);
};

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
        std::vector<int32_t> rows;      // (m*k + slot) for every token routed here, token order
        ActBuffer x, gate, up, act, y;  // [Me,D], [Me,Fm] x3, [Me,D]
    };
    std::vector<Expert> experts;
};
// replay_ids[M,k] (R3): experts to use where replay_ids[m*k] >= 0; the gate
// weights are a softmax over *this* engine's logits of those experts.
void moe_forward(const Exec& ex, MoeActs& a, float* out, const float* x, int M, const LayerWeights& w,
                 const ModelConfig& cfg, const int32_t* replay_ids);
// Each expert's gathered input rows x and SwiGLU output act, recomputed from
// the layer input and the kept gate/up (the same bits moe_forward made).
void moe_recompute_inputs(const Exec& ex, MoeActs& a, const float* x, const ModelConfig& cfg);
// dx[M,D] += ... (= with GradStore::overwrite), weight gradients into gw.
// Consumes a.experts[].y (overwritten with the experts' input gradients).
void moe_backward(float* dx, LayerWeights& gw, const float* dout, MoeActs& a, const float* x, int M,
                  const LayerWeights& w, const ModelConfig& cfg, GradStore dx_store = GradStore::add);

}  // namespace mlk
