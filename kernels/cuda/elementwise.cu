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
    Dtype dt;
    __device__ void operator()(int64_t i) const { body::swiglu_at(out, g, u, dt, i); }
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
    float *w, *scale;
    int K, N;
    Dtype fmt;
    __device__ void operator()(int64_t n) const { body::quantize_col(w, scale, K, N, fmt, (int)n); }
};

__global__ void k_quantize_rows(float* out, float* scale, const float* inp, int K, Dtype fmt) {
    __shared__ float sm[body::kQuantThreads];
    body::quantize_row_p1(inp, K, blockIdx.x, threadIdx.x, sm);
    __syncthreads();
    body::quantize_row_p2(out, scale, inp, K, fmt, blockIdx.x, threadIdx.x, sm);
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

void rope_apply(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dt, bool inverse) {
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
    const body::RopeArgs a{x, pos, table, negative, M, H, D, inverse ? Dtype::f32 : dt, inverse};
    launch_elementwise((int64_t)M * H * (D / 2), RopeF{a}, "rope");
}

}  // namespace

// swiglu_forward: out = round((g / (1 + exp(0 - g))) * up); exp_s (scalar_math.h).
void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n) {
    launch_elementwise(n, SwigluF{out, gate, up, ex.dtype}, "swiglu_forward");
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
// first (the call waits for the stream).
void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype) {
    rope_apply(x, pos, M, H, D, theta, dtype, false);
}
void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta) {
    rope_apply(dx, pos, M, H, D, theta, Dtype::f32, true);
}

// quantize_rows: a 128-thread block per row: exact amax, the power-of-two
// scale (fp8_scale), x / s rounded to fp8 and multiplied back (bodies.h).
void quantize_rows(float* out, float* scale, const float* inp, int M, int K, Dtype fmt) {
    if (M <= 0) return;
    k_quantize_rows<<<M, body::kQuantThreads, 0, stream()>>>(out, scale, inp, K, fmt);
    check_launch("quantize_rows");
}

// quantize_cols: a thread per column, in place.
void quantize_cols(float* w, float* scale, int K, int N, Dtype fmt) {
    if (N <= 0) return;
    launch_elementwise(N, QuantizeColF{w, scale, K, N, fmt}, "quantize_cols");
}

}  // namespace mlk::cuda
