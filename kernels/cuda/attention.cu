// CUDA attention: causal prefill, decode against a KV cache, backward.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cuda/bodies_attention.h"
#include "kernels/cuda/internal.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace mlk::cuda {

using detail::check_launch;
using detail::launch_elementwise;
using detail::stream;

namespace {

// ---- batch-invariant: one query per block, the phases of bodies_attention.h ----
__device__ void attn_bi_block(const body::AttnCommon& c, const body::AttnQuery& q, float* sm, int cap) {
    if (q.len > cap) __trap();  // a length past the cache capacity (cache_stride / (Hkv*D))
    const body::AttnSmem s = body::attn_smem(sm, cap);
    body::attn_bi_p1(c, q, threadIdx.x, s);
    __syncthreads();
    body::attn_bi_p2(c, q, threadIdx.x, s);
    __syncthreads();
    body::attn_bi_p3(c, q, threadIdx.x, s);
    __syncthreads();
    body::attn_bi_p4(c, q, threadIdx.x, s);
    __syncthreads();
    body::attn_bi_p5(c, q, threadIdx.x, s);
}
__global__ void k_attn_bi_prefill(body::AttnPrefillArgs a, int cap) {
    extern __shared__ float sm[];
    attn_bi_block(a.c, body::prefill_query(a, blockIdx.x), sm, cap);
}
__global__ void k_attn_bi_decode(body::AttnDecodeArgs a, int cap) {
    extern __shared__ float sm[];
    attn_bi_block(a.c, body::decode_query(a, blockIdx.x), sm, cap);
}
size_t bi_smem_bytes(int cap) { return (size_t)body::attn_smem_floats(cap) * sizeof(float); }

// ---- fast prefill: tiled online softmax --------------------------------------------
// A block of 4 warps takes 4 consecutive queries of one (b, h), a warp each
// (a prompt of 20 tokens is 5 blocks per head, not 2: rollout prefills one
// prompt per call, and a warp's queries run one after another). Which warp
// takes a query does not change its arithmetic. Keys and values are staged
// in shared memory 32 at a time; lane j scores key j of the tile against a
// query (FMA chain over d), the warp's butterfly gives the tile max and sum:
// m' = max(m, tile max), alpha = expf(m - m'), l = l*alpha + sum(p),
// o = o*alpha + sum_j p_j v_j (p rounded to probs first; lane l owns
// d = l, l+32, ... up to 8 of them).
// out = round(o / round(l, stats)); att (when asked) = expf(s - m) / l.
constexpr int kFpQ = 4, kFpQW = 1, kFpKeys = 32, kFpMaxDL = 8, kFpThreads = 128;
constexpr int kFpMaxD = 32 * kFpMaxDL;

struct FastPrefillArgs {
    float* out;
    float* att;
    const float *q, *k, *v;
    int B, T, H, Hkv, D;
    float scale;
    Dtype dt, pdt, sdt;
};
size_t fast_prefill_smem(int D) { return (size_t)(kFpQ * D + kFpKeys * (D + 1) + kFpKeys * D) * sizeof(float); }

__global__ void k_attn_fast_prefill(FastPrefillArgs a) {
    extern __shared__ float sm[];
    const int D = a.D, Dp = D + 1, T = a.T, H = a.H;
    float* Qs = sm;
    float* Ks = Qs + kFpQ * D;
    float* Vs = Ks + kFpKeys * Dp;
    const int ntq = (T + kFpQ - 1) / kFpQ;
    const int qt = blockIdx.x % ntq, bh = blockIdx.x / ntq, h = bh % H, b = bh / H, hk = h / (H / a.Hkv);
    const int t0 = qt * kFpQ, tend = min(T, t0 + kFpQ);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int64_t qs = (int64_t)H * D, kvs = (int64_t)a.Hkv * D;
    const float* qb = a.q + ((int64_t)b * T * H + h) * D;
    const float* kb = a.k + ((int64_t)b * T * a.Hkv + hk) * D;
    const float* vb = a.v + ((int64_t)b * T * a.Hkv + hk) * D;
    for (int i = threadIdx.x; i < kFpQ * D; i += blockDim.x) {
        const int t = t0 + i / D;
        Qs[i] = t < T ? qb[t * qs + i % D] : 0.0f;
    }
    float m[kFpQW], l[kFpQW], o[kFpQW][kFpMaxDL];
#pragma unroll
    for (int u = 0; u < kFpQW; ++u) {
        m[u] = body::neg_inf();
        l[u] = 0.0f;
#pragma unroll
        for (int i = 0; i < kFpMaxDL; ++i) o[u][i] = 0.0f;
    }
    for (int kt0 = 0; kt0 < tend; kt0 += kFpKeys) {
        __syncthreads();  // the previous tile is consumed
        for (int i = threadIdx.x; i < kFpKeys * D; i += blockDim.x) {
            const int jj = i / D, d = i % D, j = kt0 + jj;
            Ks[jj * Dp + d] = j < T ? kb[j * kvs + d] : 0.0f;
            Vs[jj * D + d] = j < T ? vb[j * kvs + d] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int u = 0; u < kFpQW; ++u) {
            const int ql = warp * kFpQW + u, t = t0 + ql;
            if (t >= T || kt0 > t) continue;  // (uniform over the warp)
            const bool valid = kt0 + lane <= t;
            float s = body::neg_inf();
            if (valid) {
                float acc = 0.0f;
                for (int d = 0; d < D; ++d) acc = __fmaf_rn(Qs[ql * D + d], Ks[lane * Dp + d], acc);
                s = acc * a.scale;
            }
            const float mn = fmaxf(m[u], detail::warp_max(s));
            const float alpha = expf(m[u] - mn);
            const float p = valid ? expf(s - mn) : 0.0f;
            l[u] = l[u] * alpha + detail::warp_sum(p);
            const float pr = round_to(p, a.pdt);
#pragma unroll
            for (int i = 0; i < kFpMaxDL; ++i) o[u][i] = o[u][i] * alpha;
            const int nk = min(kFpKeys, t - kt0 + 1);
            for (int jj = 0; jj < nk; ++jj) {
                const float pj = __shfl_sync(0xffffffffu, pr, jj);
#pragma unroll
                for (int i = 0; i < kFpMaxDL; ++i)
                    if (lane + 32 * i < D) o[u][i] = __fmaf_rn(pj, Vs[jj * D + lane + 32 * i], o[u][i]);
            }
            m[u] = mn;
        }
    }
#pragma unroll
    for (int u = 0; u < kFpQW; ++u) {
        const int ql = warp * kFpQW + u, t = t0 + ql;
        if (t >= T) continue;
        const float lr = round_to(l[u], a.sdt);
        float* out = a.out + (((int64_t)b * T + t) * H + h) * D;
#pragma unroll
        for (int i = 0; i < kFpMaxDL; ++i)
            if (lane + 32 * i < D) out[lane + 32 * i] = round_to(o[u][i] / lr, a.dt);
        if (a.att) {
            const float rl = 1.0f / lr;
            float* att = a.att + (((int64_t)b * H + h) * T + t) * T;
            for (int j = lane; j < T; j += 32) {
                float val = 0.0f;
                if (j <= t) {  // the same chain as the tile pass, so the same score bits
                    float acc = 0.0f;
                    for (int d = 0; d < D; ++d) acc = __fmaf_rn(Qs[ql * D + d], kb[j * kvs + d], acc);
                    val = expf(acc * a.scale - m[u]) * rl;
                }
                att[j] = val;
            }
        }
    }
}

// ---- fast decode: split-KV (flash-decoding) ----------------------------------------
// Splits of sequence s: n = min(ceil(len/64), smax) with smax = clamp(2 x SMs /
// (Bq*H), 1, 32) (more splits when the batch alone cannot fill the device),
// at least ceil(len/2048); chunk = ceil(len/n) rounded up to 16 keys. A block
// per (s, h, split): scores (FMA chain over d) in shared memory, m_c = max,
// p = expf(s - m_c), l_c = block sum of the unrounded p, o_c = FMA chain over
// the chunk's keys of round(p, probs)*v. A block per (s, h) combines the
// splits in order: w_c = expf(m_c - M), L = fma(l_c, w_c, L), O = fma(w_c, o_c, O);
// out = round(O / round(L, stats)). Bits depend on len and Bq. When no
// sequence is split (gridy 1: a full batch at these lengths) the splits
// kernel does the combine's arithmetic itself, with the same bits.
constexpr int kDecThreads = 128, kDecChunkMax = 2048, kDecMinKeys = 64;

struct FastDecodeArgs {
    float* out;
    float* part;  // [Bq*H][gridy][2 + D]: m, l, o
    const float *q, *kc, *vc;
    const int32_t *slot, *len;
    int64_t cache_stride;
    int Bq, H, Hkv, D;
    float scale;
    Dtype dt, pdt, sdt;
    int smax, gridy;
};
struct DecodeSplit {
    int ns, chunk;
};
__device__ DecodeSplit decode_split(int L, int smax, int gridy) {
    int n = min((L + kDecMinKeys - 1) / kDecMinKeys, smax);
    n = min(max(max(n, (L + kDecChunkMax - 1) / kDecChunkMax), 1), gridy);
    const int chunk = ((L + n - 1) / n + 15) / 16 * 16;
    return {(L + chunk - 1) / chunk, chunk};
}
// Block reduction: the warps' butterflies, then the 4 warps in order.
template <bool MAX>
__device__ float block_reduce(float v, float* red) {
    v = MAX ? detail::warp_max(v) : detail::warp_sum(v);
    __syncthreads();
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float r = red[0];
    for (int i = 1; i < kDecThreads / 32; ++i) r = MAX ? fmaxf(r, red[i]) : r + red[i];
    return r;
}

__global__ void k_attn_fast_decode_part(FastDecodeArgs a) {
    __shared__ float sc[kDecChunkMax];
    __shared__ float red[kDecThreads / 32];
    const int sh = blockIdx.x, c = blockIdx.y, s = sh / a.H, h = sh % a.H, hk = h / (a.H / a.Hkv), D = a.D;
    const int L = a.len[s];
    if (L <= 0) return;
    const DecodeSplit sp = decode_split(L, a.smax, a.gridy);
    if (c >= sp.ns) return;
    const int c0 = c * sp.chunk, nk = min(L, c0 + sp.chunk) - c0;
    if (nk > kDecChunkMax) __trap();  // a length past the cache capacity
    const float* q = a.q + ((int64_t)s * a.H + h) * D;
    const int64_t kvs = (int64_t)a.Hkv * D;
    const float* kb = a.kc + a.slot[s] * a.cache_stride + (int64_t)hk * D + c0 * kvs;
    const float* vb = a.vc + a.slot[s] * a.cache_stride + (int64_t)hk * D + c0 * kvs;
    float mx = body::neg_inf();
    for (int j = threadIdx.x; j < nk; j += kDecThreads) {
        float acc = 0.0f;
        for (int d = 0; d < D; ++d) acc = __fmaf_rn(q[d], kb[j * kvs + d], acc);
        sc[j] = acc * a.scale;
        mx = fmaxf(mx, sc[j]);
    }
    mx = block_reduce<true>(mx, red);
    float lsum = 0.0f;
    for (int j = threadIdx.x; j < nk; j += kDecThreads) {
        const float p = expf(sc[j] - mx);
        lsum = lsum + p;
        sc[j] = round_to(p, a.pdt);
    }
    lsum = block_reduce<false>(lsum, red);  // (its barriers also publish sc)
    float* part = a.part + ((int64_t)sh * a.gridy + c) * (D + 2);
    if (threadIdx.x == 0 && a.gridy > 1) part[0] = mx, part[1] = lsum;
    for (int d = threadIdx.x; d < D; d += kDecThreads) {
        float acc = 0.0f;
        for (int j = 0; j < nk; ++j) acc = __fmaf_rn(sc[j], vb[j * kvs + d], acc);
        if (a.gridy > 1) {
            part[2 + d] = acc;
        } else {  // one split: the combine's arithmetic with w = expf(0) = 1, here (one launch fewer)
            const float O = __fmaf_rn(1.0f, acc, 0.0f), lr = round_to(__fmaf_rn(lsum, 1.0f, 0.0f), a.sdt);
            a.out[(int64_t)sh * D + d] = round_to(O / lr, a.dt);
        }
    }
}

__global__ void k_attn_fast_decode_combine(FastDecodeArgs a) {
    const int sh = blockIdx.x, s = sh / a.H, D = a.D;
    const int L = a.len[s];
    if (L <= 0) return;
    const DecodeSplit sp = decode_split(L, a.smax, a.gridy);
    const float* part = a.part + (int64_t)sh * a.gridy * (D + 2);
    float Mx = body::neg_inf();
    for (int c = 0; c < sp.ns; ++c) Mx = fmaxf(Mx, part[c * (D + 2)]);
    float Ls = 0.0f;
    for (int c = 0; c < sp.ns; ++c) Ls = __fmaf_rn(part[c * (D + 2) + 1], expf(part[c * (D + 2)] - Mx), Ls);
    const float lr = round_to(Ls, a.sdt);
    for (int d = threadIdx.x; d < D; d += kDecThreads) {
        float O = 0.0f;
        for (int c = 0; c < sp.ns; ++c) O = __fmaf_rn(expf(part[c * (D + 2)] - Mx), part[c * (D + 2) + 2 + d], O);
        a.out[(int64_t)sh * D + d] = round_to(O / lr, a.dt);
    }
}

// The longest length a decode call may see: the cache's capacity, or (a
// cache_stride that does not say) the longest len, read back.
int decode_capacity(const int32_t* len, int64_t cache_stride, int Bq, int Hkv, int D) {
    const int64_t tmax = cache_stride / ((int64_t)Hkv * D);
    if (tmax > 0) return (int)tmax;
    std::vector<int32_t> h(Bq);
    copy_to_host(h.data(), len, (size_t)Bq * sizeof(int32_t));
    return std::max(1, *std::max_element(h.begin(), h.end()));
}

// ---- backward ---------------------------------------------------------------------
__global__ void k_attn_bwd_ds(body::AttnBwdArgs a) {
    __shared__ float lanes[body::kLanes];
    body::attn_bwd_ds_p1(a, blockIdx.x, threadIdx.x);
    __syncthreads();
    body::attn_bwd_ds_p2(a, blockIdx.x, threadIdx.x, lanes);
    __syncthreads();
    body::attn_bwd_ds_p3(a, blockIdx.x, threadIdx.x, lanes);
}
struct DqF {
    body::AttnBwdArgs a;
    __device__ void operator()(int64_t i) const { body::attn_bwd_dq_at(a, i); }
};
struct DkDvF {
    body::AttnBwdArgs a;
    __device__ void operator()(int64_t i) const { body::attn_bwd_dkdv_at(a, i); }
};

}  // namespace

// attention_forward. Scale 1/sqrtf(D).
//  * batch_invariant: a 128-thread block per query (b, h, t) runs the CPU's
//    per-query plan (bodies_attention.h: score chains, exact max, exp_s, the
//    bi16 sum of P, P.V chains over j ascending), so the CPU's bits, and the
//    bits of attention_decode at the same position.
//  * fast: tiled online softmax (above), CUDA's expf; D > 256 takes the
//    batch-invariant kernel.
//  * eager softmax (ex.eager_softmax, either family): the batch-invariant
//    kernel, normalising P before it is rounded and P.V (bodies_attention.h),
//    so the CPU's bits.
// Rounding points as the CPU: P to ex.probs before P.V, the normaliser to
// ex.stats; att (non-null) gets p_j / normaliser in fp32, zeros for j > t.
void attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k, const float* v, int B,
                       int T, int H, int Hkv, int D) {
    if (B <= 0 || T <= 0 || H <= 0 || D <= 0) return;
    const float scale = 1.0f / std::sqrt((float)D);
    if (ex.family == Family::fast && D <= kFpMaxD && !ex.eager_softmax) {
        const size_t bytes = fast_prefill_smem(D);
        detail::allow_smem((const void*)k_attn_fast_prefill, bytes, "attention_forward (fast)");
        const FastPrefillArgs a{out, att, q, k, v, B, T, H, Hkv, D, scale, ex.dtype, ex.probs, ex.stats};
        k_attn_fast_prefill<<<(unsigned)((int64_t)B * H * ((T + kFpQ - 1) / kFpQ)), kFpThreads, bytes, stream()>>>(a);
        check_launch("attention_forward (fast)");
        return;
    }
    const body::AttnPrefillArgs a{
        {D, scale, ex.dtype, ex.probs, ex.stats, ex.eager_softmax}, out, att, q, k, v, B, T, H, Hkv};
    const size_t bytes = bi_smem_bytes(T);
    detail::allow_smem((const void*)k_attn_bi_prefill, bytes, "attention_forward");
    k_attn_bi_prefill<<<(unsigned)((int64_t)B * H * T), body::kAttnThreads, bytes, stream()>>>(a, T);
    check_launch("attention_forward");
}

// attention_decode.
//  * batch_invariant: a block per (sequence, head) runs the prefill plan on
//    the cache's keys (bodies_attention.h), so the bits equal the prefill
//    output at that position and depend on nothing but len[s].
//  * fast: split-KV (above). Bits depend on len, Bq and the device.
//  * eager softmax (either family): the batch-invariant kernel (as prefill).
// A sequence with len <= 0 leaves its output as it was.
void attention_decode(const Exec& ex, float* out, const float* q, const float* kcache, const float* vcache,
                      const int32_t* slot, const int32_t* len, int64_t cache_stride, int Bq, int H, int Hkv, int D) {
    if (Bq <= 0 || H <= 0 || D <= 0) return;
    const float scale = 1.0f / std::sqrt((float)D);
    const int cap = decode_capacity(len, cache_stride, Bq, Hkv, D);
    if (ex.family == Family::batch_invariant || ex.eager_softmax) {
        const body::AttnDecodeArgs a{{D, scale, ex.dtype, ex.probs, ex.stats, ex.eager_softmax},
                                     out,
                                     q,
                                     kcache,
                                     vcache,
                                     slot,
                                     len,
                                     cache_stride,
                                     Bq,
                                     H,
                                     Hkv};
        const size_t bytes = bi_smem_bytes(cap);
        detail::allow_smem((const void*)k_attn_bi_decode, bytes, "attention_decode");
        k_attn_bi_decode<<<(unsigned)(Bq * H), body::kAttnThreads, bytes, stream()>>>(a, cap);
        check_launch("attention_decode");
        return;
    }
    const int smax = std::clamp(2 * detail::sm_count() / std::max(Bq * H, 1), 1, 32);
    const int gridy =
        std::max({std::min(smax, (cap + kDecMinKeys - 1) / kDecMinKeys), (cap + kDecChunkMax - 1) / kDecChunkMax, 1});
    float* part = static_cast<float*>(detail::workspace((size_t)Bq * H * gridy * (D + 2) * sizeof(float)));
    const FastDecodeArgs a{out, part, q, kcache, vcache,   slot,     len,      cache_stride, Bq,
                           H,   Hkv,  D, scale,  ex.dtype, ex.probs, ex.stats, smax,         gridy};
    k_attn_fast_decode_part<<<dim3((unsigned)(Bq * H), (unsigned)gridy), kDecThreads, 0, stream()>>>(a);
    check_launch("attention_decode (fast, splits)");
    if (gridy == 1) return;  // the splits kernel wrote the output
    k_attn_fast_decode_combine<<<(unsigned)(Bq * H), kDecThreads, 0, stream()>>>(a);
    check_launch("attention_decode (fast, combine)");
}

// attention_backward (both families), the CPU's plan (bodies_attention.h): a
// block per (b, h, t) computes dP and dS rows into scratch, then a thread per
// dq element and per dk/dv element runs its FMA chain (heads of a kv head in
// ascending order). No atomics: the CPU's bits.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att, const float* q,
                        const float* k, const float* v, int B, int T, int H, int Hkv, int D, GradStore store) {
    if (B <= 0 || T <= 0 || H <= 0 || D <= 0) return;
    float* ds = static_cast<float*>(detail::workspace((size_t)B * H * T * T * sizeof(float)));
    const body::AttnBwdArgs a{
        dq, dk, dv, ds, dout, att, q, k, v, B, T, H, Hkv, D, 1.0f / std::sqrt((float)D), store == GradStore::add};
    k_attn_bwd_ds<<<(unsigned)((int64_t)B * H * T), body::kAttnThreads, 0, stream()>>>(a);
    check_launch("attention_backward (dS)");
    if (dq) launch_elementwise((int64_t)B * T * H * D, DqF{a}, "attention_backward (dq)");
    if (dk || dv) launch_elementwise((int64_t)B * T * Hkv * D, DkDvF{a}, "attention_backward (dk, dv)");
}

}  // namespace mlk::cuda
