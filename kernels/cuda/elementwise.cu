// CUDA: the family-free ops (SwiGLU, embedding, residual add, rounding, RoPE,
// fp8 quantisation, the AdamW step). No reductions (quantisation's amax is an
// exact max), so both families run the same kernels, and every one is the
// CPU's arithmetic through bodies.h: bit for bit the CPU's outputs.
#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cuda/bodies.h"
#include "kernels/cuda/bodies_fp8.h"
#include "kernels/cuda/internal.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace mlk::cuda {

using detail::check_launch;
using detail::launch_elementwise;
using detail::stream;

namespace {

// The functors (lambdas in __global__ arguments would need --extended-lambda).
struct SwigluF {
    float* out;
    const float *g, *u;
    Dtype dt, silu;
    __device__ void operator()(int64_t i) const { body::swiglu_at(out, g, u, dt, silu, i); }
};
struct SwigluBwdF {
    float *dg, *du;
    const float *dout, *g, *u;
    bool add;
    __device__ void operator()(int64_t i) const { body::swiglu_bwd_at(dg, du, dout, g, u, add, i); }
};
struct AddF {
    float* y;
    const float* x;
    Dtype dt;
    __device__ void operator()(int64_t i) const { body::add_round_at(y, x, dt, i); }
};
struct RoundF {
    float* x;
    Dtype dt;
    __device__ void operator()(int64_t i) const { body::round_at(x, dt, i); }
};
struct EmbeddingF {
    float* out;
    const int32_t* tok;
    const float* table;
    int C;
    Dtype dt;
    __device__ void operator()(int64_t i) const { body::embedding_at(out, tok, table, C, dt, i); }
};
struct EmbeddingBwdF {
    float* dtable;
    const float* dout;
    const int32_t* tok;
    int M, C;
    __device__ void operator()(int64_t c) const { body::embedding_bwd_col(dtable, dout, tok, M, C, (int)c); }
};
// A copy, no arithmetic: no body to share with the CPU.
struct CopyRowsF {
    float* dst;
    const int64_t* dst_off;
    const float* src;
    const int64_t* src_off;
    int C;
    __device__ void operator()(int64_t i) const {
        const int64_t r = i / C, c = i % C;
        dst[(dst_off ? dst_off[r] : r * C) + c] = src[(src_off ? src_off[r] : r * C) + c];
    }
};
struct RopeF {
    body::RopeArgs a;
    __device__ void operator()(int64_t i) const { body::rope_at(a, i); }
};
struct AdamwF {
    float *p, *m, *v;
    const float* g;
    AdamWStep s;  // by value: a kernel argument
    __device__ void operator()(int64_t i) const { body::adamw_at(p, m, v, g, s, i); }
};
struct QuantizeColF {
    float *w, *scales;
    int K, N;
    Dtype fmt;
    Fp8Scale kind;
    __device__ void operator()(int64_t n) const { body::quantize_col(w, scales, K, N, fmt, kind, (int)n); }
};
struct QuantizeTensorF {
    float* out;
    const float* inp;
    const float* s;
    Dtype fmt;
    __device__ void operator()(int64_t i) const { body::quantize_tensor_at(out, inp, s, fmt, i); }
};

// fp8 block kernels: a 128-thread block per segment / row / weight block,
// grid-striding over them (every thread of a block takes the same ones).
__global__ void k_quantize_segs(float* out, float* scales, const float* inp, int K, int len, int64_t nseg, Dtype fmt,
                                Fp8Scale kind, float floor) {
    __shared__ float sm[body::kQuantThreads];
    for (int64_t seg = blockIdx.x; seg < nseg; seg += gridDim.x) {
        body::quantize_seg_p1(inp, K, len, seg, threadIdx.x, sm);
        __syncthreads();
        body::quantize_seg_p2(out, scales, inp, K, len, fmt, kind, floor, seg, threadIdx.x, sm);
        __syncthreads();
    }
}
__global__ void k_row_amax(float* partial, const float* inp, int C, int64_t R) {
    __shared__ float sm[body::kQuantThreads];
    for (int64_t r = blockIdx.x; r < R; r += gridDim.x) {
        body::quantize_seg_p1(inp, C, C, r, threadIdx.x, sm);
        __syncthreads();
        body::row_amax_p2(partial, r, threadIdx.x, sm);
        __syncthreads();
    }
}
__global__ void k_tensor_scale(float* s, float* scales, const float* partial, int64_t R, Dtype fmt, Fp8Scale kind,
                               float floor) {
    __shared__ float sm[body::kQuantThreads];
    body::amax_p1(partial, R, threadIdx.x, sm);
    __syncthreads();
    body::tensor_scale_p2(s, scales, fmt, kind, floor, threadIdx.x, sm);
}
__global__ void k_store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int Hkv, int hd,
                               int64_t nseg, Dtype fmt, Fp8Scale kind) {
    __shared__ float sm[body::kQuantThreads];
    for (int64_t seg = blockIdx.x; seg < nseg; seg += gridDim.x) {
        body::amax_p1(x + seg * hd, hd, threadIdx.x, sm);
        __syncthreads();
        body::store_kv_p2(codes, scales, off, x, Hkv, hd, fmt, kind, seg, threadIdx.x, sm);
        __syncthreads();
    }
}
struct LoadKvF {
    float* out;
    const uint8_t* codes;
    const float* scales;
    const int32_t *slot, *len;
    int64_t cache_stride;
    int span, kv, hd;
    Dtype fmt;
    __device__ void operator()(int64_t i) const {
        body::load_kv_at(out, codes, scales, slot, len, cache_stride, span, kv, hd, fmt, i);
    }
};
__global__ void k_quantize_wblocks(float* w, float* scales, int K, int N, int64_t nblocks, Dtype fmt, Fp8Scale kind) {
    __shared__ float sm[body::kQuantThreads];
    for (int64_t b = blockIdx.x; b < nblocks; b += gridDim.x) {
        body::quantize_wblock_p1(w, K, N, b, threadIdx.x, sm);
        __syncthreads();
        body::quantize_wblock_p2(w, scales, K, N, fmt, kind, b, threadIdx.x, sm);
        __syncthreads();
    }
}

// ---- RoPE position tables -------------------------------------------------------
// Rows of cos/sin per position made on the host by the CPU's expression
// (body::rope_cs_row: double angles, the host libm), uploaded once per
// (device, D, theta) and grown by doubling; earlier tables stay allocated
// (a kernel still queued may read them). Negative positions (unusual) get a
// table of this call's rows instead.
struct RopeTable {
    int device = 0, D = 0;
    uint32_t theta_bits = 0;
    int npos = 0;
    float* rows = nullptr;
};

const float* rope_table(int D, float theta, int need) {
    static std::mutex mu;
    static std::vector<RopeTable> tables;
    int dev = 0;
    detail::check(cudaGetDevice(&dev), "cudaGetDevice");
    std::lock_guard<std::mutex> lk(mu);
    RopeTable* slot = nullptr;
    for (auto& t : tables)
        if (t.device == dev && t.D == D && t.theta_bits == float_bits(theta)) {
            if (t.npos >= need) return t.rows;
            slot = &t;
            break;
        }
    int np = std::max(256, slot ? slot->npos * 2 : 0);
    while (np < need) np *= 2;
    std::vector<float> host((size_t)np * D, 0.0f);
    for (int p = 0; p < np; ++p) body::rope_cs_row(host.data() + (size_t)p * D, p, D, theta);
    RopeTable t{dev, D, float_bits(theta), np, static_cast<float*>(device_malloc(host.size() * sizeof(float)))};
    copy_to_device(t.rows, host.data(), host.size() * sizeof(float));
    if (slot) *slot = t;  // (the old rows stay allocated, see above)
    else tables.push_back(t);
    return t.rows;
}

void rope_apply(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dt, Dtype pt, Dtype ct,
                bool inverse) {
    if (M <= 0 || H <= 0 || D < 2) return;
    std::vector<int32_t> hpos(M);
    copy_to_host(hpos.data(), pos, (size_t)M * sizeof(int32_t));
    const int maxp = *std::max_element(hpos.begin(), hpos.end());
    const bool negative = *std::min_element(hpos.begin(), hpos.end()) < 0;
    const float* table;
    if (!negative) {
        table = rope_table(D, theta, maxp + 1);
    } else {
        std::vector<float> rows((size_t)M * D, 0.0f);
        for (int m = 0; m < M; ++m) body::rope_cs_row(rows.data() + (size_t)m * D, hpos[m], D, theta);
        float* ws = static_cast<float*>(detail::workspace(rows.size() * sizeof(float)));
        copy_to_device(ws, rows.data(), rows.size() * sizeof(float));
        table = ws;
    }
    const body::RopeArgs a{x, pos, table, negative, M, H, D, inverse ? Dtype::f32 : dt, inverse,
                           inverse ? Dtype::f32 : pt, inverse ? Dtype::f32 : ct};
    launch_elementwise((int64_t)M * H * (D / 2), RopeF{a}, "rope");
}

}  // namespace

// swiglu_forward: out = round(round(g / (1 + exp(0 - g)), ex.silu) * up); exp_s (scalar_math.h).
void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n) {
    launch_elementwise(n, SwigluF{out, gate, up, ex.dtype, ex.silu}, "swiglu_forward");
}

// swiglu_backward: the CPU's expression per element (bodies.h).
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t n,
                     GradStore store) {
    launch_elementwise(n, SwigluBwdF{dgate, dup, dout, gate, up, store == GradStore::add}, "swiglu_backward");
}

void embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C, Dtype dtype) {
    if (M <= 0 || C <= 0) return;
    launch_elementwise((int64_t)M * C, EmbeddingF{out, tok, table, C, dtype}, "embedding_forward");
}

// embedding_backward: one thread per column adds the rows m = 0..M-1 in order
// (no atomics: a token seen twice accumulates in row order, as the CPU).
void embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C) {
    if (M <= 0 || C <= 0) return;
    launch_elementwise(C, EmbeddingBwdF{dtable, dout, tok, M, C}, "embedding_backward");
}

void copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M, int C) {
    if (M <= 0 || C <= 0) return;
    launch_elementwise((int64_t)M * C, CopyRowsF{dst, dst_off, src, src_off, C}, "copy_rows");
}

void add_inplace(float* y, const float* x, int64_t n, Dtype dtype) {
    launch_elementwise(n, AddF{y, x, dtype}, "add_inplace");
}

// adamw_update: a thread per parameter (grid-stride), the CPU's element code
// in double (fmath::adamw_at through bodies.h); no reduction, so the split
// changes nothing.
void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n, const AdamWStep& s) {
    launch_elementwise(n, AdamwF{params, m, v, grads, s}, "adamw_update");
}

void round_buffer(float* x, size_t n, Dtype d) {
    if (d == Dtype::f32) return;
    launch_elementwise((int64_t)n, RoundF{x, d}, "round_buffer");
}

// rope_forward / rope_backward: the CPU's rotation per pair with the CPU's
// cos/sin bits (a host-made table). The positions are read back to the host
// first (the call waits for the stream). point, cache: Exec::rope,
// Exec::rope_cache (bodies.h rope_at).
void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype, Dtype point,
                  Dtype cache) {
    rope_apply(x, pos, M, H, D, theta, dtype, point, cache, false);
}
void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta) {
    rope_apply(dx, pos, M, H, D, theta, Dtype::f32, Dtype::f32, Dtype::f32, true);
}

// One scale over a tensor of rows [R,C]: each row's largest |x| into
// partial[R] (a block per row), one block reduces them to partial[R] (the
// scale), then a thread per value quantises (out may be inp).
void detail::quantize_tensor(float* out, float* scales, const float* inp, int64_t R, int C, Dtype fmt, Fp8Scale kind,
                             float floor, float* partial) {
    if (R <= 0 || C <= 0) return;
    k_row_amax<<<blocks_for(R, 1), body::kQuantThreads, 0, stream()>>>(partial, inp, C, R);
    check_launch("quantize (row maxima)");
    k_tensor_scale<<<1, body::kQuantThreads, 0, stream()>>>(partial + R, scales, partial, R, fmt, kind, floor);
    check_launch("quantize (tensor scale)");
    launch_elementwise(R * C, QuantizeTensorF{out, inp, partial + R, fmt}, "quantize (tensor)");
}

void detail::quantize_activations_with(float* out, float* scales, const float* inp, int M, int K, Dtype fmt,
                                       Fp8Scale kind, Fp8Granularity g, float* partial) {
    if (M <= 0 || K <= 0) return;
    const float floor = body::fp8_floor_of(fmt, kind, g);
    if (g == Fp8Granularity::tensor) return quantize_tensor(out, scales, inp, M, K, fmt, kind, floor, partial);
    const int len = g == Fp8Granularity::block ? kFp8Block : K;
    const int64_t nseg = (int64_t)M * ((K + len - 1) / len);
    k_quantize_segs<<<blocks_for(nseg, 1), body::kQuantThreads, 0, stream()>>>(out, scales, inp, K, len, nseg, fmt,
                                                                               kind, floor);
    check_launch("quantize_activations");
}

// quantize_activations: a 128-thread block per row (channel) or per 1x128
// slice (block): exact amax, the scale (bodies.h: fp8_scale_of), x / s
// rounded to fp8 and multiplied back; tensor: detail::quantize_tensor, its
// M + 1 floats of scratch the workspace's.
void quantize_activations(float* out, float* scales, const float* inp, int M, int K, Dtype fmt, Fp8Scale kind,
                          Fp8Granularity g) {
    if (M <= 0 || K <= 0) return;
    float* partial =
        g == Fp8Granularity::tensor ? static_cast<float*>(detail::workspace(((size_t)M + 1) * sizeof(float))) : nullptr;
    detail::quantize_activations_with(out, scales, inp, M, K, fmt, kind, g, partial);
}

// store_kv_fp8: a 128-thread block per (row, KV head), as the activations'
// per-row quantiser, writing codes and scales at the row's offset.
void store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd, Dtype fmt,
                  Fp8Scale kind) {
    const int64_t nseg = (int64_t)M * Hkv;
    if (nseg <= 0 || hd <= 0) return;
    k_store_kv_fp8<<<detail::blocks_for(nseg, 1), body::kQuantThreads, 0, stream()>>>(codes, scales, off, x, Hkv, hd,
                                                                                      nseg, fmt, kind);
    check_launch("store_kv_fp8");
}

// load_kv_fp8: a thread per value of out.
void load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot, const int32_t* len,
                 int64_t cache_stride, int span, int Bq, int Hkv, int hd, Dtype fmt) {
    const int kv = Hkv * hd;
    launch_elementwise((int64_t)Bq * span * kv, LoadKvF{out, codes, scales, slot, len, cache_stride, span, kv, hd, fmt},
                       "load_kv_fp8");
}

// quantize_weight, in place: channel a thread per column; block a 128-thread
// block per 128x128 block, a thread per column; tensor detail::quantize_tensor
// over the K rows.
void quantize_weight(float* w, float* scales, int K, int N, Dtype fmt, Fp8Scale kind, Fp8Granularity g) {
    if (K <= 0 || N <= 0) return;
    switch (g) {
        case Fp8Granularity::channel:
            launch_elementwise(N, QuantizeColF{w, scales, K, N, fmt, kind}, "quantize_weight");
            return;
        case Fp8Granularity::block: {
            const int64_t nb = (int64_t)((K + kFp8Block - 1) / kFp8Block) * ((N + kFp8Block - 1) / kFp8Block);
            k_quantize_wblocks<<<detail::blocks_for(nb, 1), body::kQuantThreads, 0, stream()>>>(w, scales, K, N, nb,
                                                                                                fmt, kind);
            check_launch("quantize_weight");
            return;
        }
        case Fp8Granularity::tensor: {
            float* partial = static_cast<float*>(detail::workspace(((size_t)K + 1) * sizeof(float)));
            detail::quantize_tensor(w, scales, w, K, N, fmt, kind, 0.0f, partial);
            return;
        }
    }
}

}  // namespace mlk::cuda
