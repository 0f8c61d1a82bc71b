// CUDA row kernels: RMSNorm, log-softmax, entropy, log-prob gather, the MoE
// router, and their backward.
//
// Batch-invariant family: the bi16 plan of the CPU (bodies.h), 8 rows x 16
// lanes per 128-thread block; a row's bits depend on nothing but the row.
// Fast family: the split follows the shape like a production row kernel:
// fewer rows than 4 x the multiprocessors -> a 256-thread block per row,
// else a warp per row; thread t of a row takes elements t, t+TPR, ...
// (fma / add in fp32), a butterfly warp reduction, then (block per row) the
// warps' results in warp order. CUDA's expf / logf / rsqrtf. Bits depend on
// M (through TPR) and on the device.
// The backward ops, logprob_gather and the router have the CPU's one plan in
// both families (bodies.h) and equal the CPU bit for bit.
#include "kernels/cuda/bodies.h"
#include "kernels/cuda/internal.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace mlk::cuda {

using detail::check_launch;
using detail::launch_elementwise;
using detail::stream;

namespace {

// ---- batch-invariant ---------------------------------------------------------------
__global__ void k_rmsnorm_bi(body::RmsnormArgs a) {
    __shared__ float sm[body::kRowSmem];
    body::rmsnorm_p1(a, blockIdx.x, threadIdx.x, sm);
    __syncthreads();
    body::rmsnorm_p2(a, blockIdx.x, threadIdx.x, sm);
}
__global__ void k_logsoftmax_bi(body::LogsoftmaxArgs a) {
    __shared__ float sm[body::kRowSmem];
    body::logsoftmax_p1(a, blockIdx.x, threadIdx.x, sm);
    __syncthreads();
    body::logsoftmax_p2(a, blockIdx.x, threadIdx.x, sm);
    __syncthreads();
    body::logsoftmax_p3(a, blockIdx.x, threadIdx.x, sm);
}
__global__ void k_entropy_bi(body::EntropyArgs a) {
    __shared__ float sm[body::kRowSmem];
    body::entropy_p1(a, blockIdx.x, threadIdx.x, sm);
    __syncthreads();
    body::entropy_p2(a, blockIdx.x, threadIdx.x, sm);
}
__global__ void k_rmsnorm_bwd(body::RmsnormBwdArgs a) {
    __shared__ float sm[body::kRowSmem];
    body::rmsnorm_bwd_p1(a, blockIdx.x, threadIdx.x, sm);
    __syncthreads();
    body::rmsnorm_bwd_p2(a, blockIdx.x, threadIdx.x, sm);
}
__global__ void k_logsoftmax_bwd(body::LogsoftmaxBwdArgs a) {
    __shared__ float sm[body::kRowSmem];
    body::logsoftmax_bwd_p1(a, blockIdx.x, threadIdx.x, sm);
    __syncthreads();
    body::logsoftmax_bwd_p2(a, blockIdx.x, threadIdx.x, sm);
}
unsigned row_blocks(int M) { return (unsigned)((M + body::kRowsPerBlock - 1) / body::kRowsPerBlock); }

// ---- fast ------------------------------------------------------------------------
constexpr int kFastThreads = 256;

// The row's reduction: the warp's butterfly, then (TPR 256) the 8 warps in order.
template <int TPR, bool MAX>
__device__ float row_reduce(float v, float* red) {
    v = MAX ? detail::warp_max(v) : detail::warp_sum(v);
    if constexpr (TPR == 32) {
        return v;
    } else {
        __syncthreads();  // red is free
        if ((threadIdx.x & 31) == 0) red[threadIdx.x / 32] = v;
        __syncthreads();
        float r = red[0];
        for (int i = 1; i < TPR / 32; ++i) r = MAX ? fmaxf(r, red[i]) : r + red[i];
        return r;
    }
}

struct FastRow {
    int row, t;
    bool ok;
};
template <int TPR>
__device__ FastRow fast_row(int M) {
    const int row = blockIdx.x * (kFastThreads / TPR) + threadIdx.x / TPR;
    return {row, (int)(threadIdx.x % TPR), row < M};
}

// ss = sum of fma(x, x); r = round(rsqrtf(ss / C + eps), stats);
// out = round(round(x*r, norm)*w)
template <int TPR>
__global__ void k_rmsnorm_fast(body::RmsnormArgs a) {
    __shared__ float red[kFastThreads / 32];
    const FastRow r = fast_row<TPR>(a.M);
    const float* x = a.inp + (int64_t)(r.ok ? r.row : 0) * a.C;
    float acc = 0.0f;
    if (r.ok)
        for (int j = r.t; j < a.C; j += TPR) acc = __fmaf_rn(x[j], x[j], acc);
    const float ss = row_reduce<TPR, false>(acc, red);
    if (!r.ok) return;
    const float rs = round_to(rsqrtf(ss / (float)a.C + a.eps), a.sdt);
    if (a.rstd && r.t == 0) a.rstd[r.row] = rs;
    float* o = a.out + (int64_t)r.row * a.C;
    for (int j = r.t; j < a.C; j += TPR) o[j] = round_to(round_to(x[j] * rs, a.ndt) * a.w[j], a.dt);
}

// mx = max(z*it); sum = sum expf(z*it - mx); lse = round(mx + logf(sum), stats)
template <int TPR>
__global__ void k_logsoftmax_fast(body::LogsoftmaxArgs a) {
    __shared__ float red[kFastThreads / 32];
    const FastRow r = fast_row<TPR>(a.M);
    const float* z = a.z + (int64_t)(r.ok ? r.row : 0) * a.V;
    float mx = body::neg_inf();
    if (r.ok)
        for (int j = r.t; j < a.V; j += TPR) mx = fmaxf(mx, z[j] * a.it);
    mx = row_reduce<TPR, true>(mx, red) + 0.0f;
    float acc = 0.0f;
    if (r.ok)
        for (int j = r.t; j < a.V; j += TPR) acc = acc + expf(z[j] * a.it - mx);
    const float sum = row_reduce<TPR, false>(acc, red);
    if (!r.ok) return;
    const float lse = round_to(mx + logf(sum), a.sdt);
    float* o = a.lp + (int64_t)r.row * a.V;
    for (int j = r.t; j < a.V; j += TPR) o[j] = round_to(z[j] * a.it - lse, a.dt);
}

// ent = -(sum of fma(expf(lp), max(lp, -FLT_MAX))), rounded to dtype
template <int TPR>
__global__ void k_entropy_fast(body::EntropyArgs a) {
    __shared__ float red[kFastThreads / 32];
    const FastRow r = fast_row<TPR>(a.M);
    const float* l = a.lp + (int64_t)(r.ok ? r.row : 0) * a.V;
    const float lo = bits_float(0xff7fffffu);
    float acc = 0.0f;
    if (r.ok)
        for (int j = r.t; j < a.V; j += TPR) acc = __fmaf_rn(expf(l[j]), body::max_gt(l[j], lo), acc);
    const float s = row_reduce<TPR, false>(acc, red);
    if (r.ok && r.t == 0) a.ent[r.row] = round_to(-s, a.dt);
}

// The fast family's rows per thread group: a block per row for few rows.
bool fast_block_per_row(int M) { return M < 4 * detail::sm_count(); }
unsigned fast_blocks(int M, int tpr) {
    const int per = kFastThreads / tpr;
    return (unsigned)((M + per - 1) / per);
}
// Launches the block-per-row or the warp-per-row instance by the shape.
template <class Args>
void launch_fast_rows(void (*per_block)(Args), void (*per_warp)(Args), int M, const Args& a, const char* what) {
    if (fast_block_per_row(M)) per_block<<<fast_blocks(M, kFastThreads), kFastThreads, 0, stream()>>>(a);
    else per_warp<<<fast_blocks(M, 32), kFastThreads, 0, stream()>>>(a);
    check_launch(what);
}

// ---- one row per thread --------------------------------------------------------------
struct GatherF {
    float* out;
    const float* lp;
    const int32_t* target;
    int V;
    __device__ void operator()(int64_t m) const { body::logprob_gather_at(out, lp, target, V, (int)m); }
};
struct TopkF {
    bool bi;
    Dtype dt;
    int32_t* ids;
    float* w;
    const float* z;
    int E, k;
    __device__ void operator()(int64_t m) const { body::router_topk_row(bi, dt, ids, w, z, E, k, (int)m); }
};
struct ReplayF {
    bool bi;
    Dtype dt;
    float* w;
    const float* z;
    const int32_t* ids;
    int E, k;
    __device__ void operator()(int64_t m) const { body::router_replay_row(bi, dt, w, z, ids, E, k, (int)m); }
};
struct RouterBwdF {
    float* dz;
    const float *dw, *w;
    const int32_t* ids;
    int E, k;
    __device__ void operator()(int64_t m) const { body::router_bwd_row(dz, dw, w, ids, E, k, (int)m); }
};
struct MoeCombineF {
    float* out;
    const float* const* rows;
    const float* w;
    int k, D;
    Dtype dt;
    __device__ void operator()(int64_t i) const { body::moe_combine_at(out, rows, w, k, D, dt, i); }
};
struct MoeCombineDyF {
    float* dy;
    const float *dout, *w;
    const int32_t* slots;
    int k, D;
    __device__ void operator()(int64_t i) const { body::moe_combine_bwd_dy_at(dy, dout, w, slots, k, D, i); }
};
struct MoeCombineDweightF {
    float* dweights;
    const float *dout, *y;
    const int32_t* slots;
    int k, D;
    __device__ void operator()(int64_t r) const {
        body::moe_combine_bwd_dweight_row(dweights, dout, y, slots, k, D, r);
    }
};
struct DweightF {
    float* dw;
    const float *dout, *inp, *rstd;
    int M, C;
    __device__ void operator()(int64_t c) const { body::rmsnorm_dweight_col(dw, dout, inp, rstd, M, C, (int)c); }
};

}  // namespace

// rmsnorm_forward. batch_invariant: ss = bi16 over c of fma(x, x, lane);
// r = round(1 / sqrt(ss / C + eps), stats) (IEEE division and square root);
// out = round(round(x * r, ex.norm) * w). fast: see the top of the file (rsqrtf).
void rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight, float eps, int M,
                     int C) {
    if (M <= 0 || C <= 0) return;
    const body::RmsnormArgs a{out, rstd, inp, weight, eps, M, C, ex.dtype, ex.stats, ex.norm};
    if (ex.family == Family::batch_invariant) {
        k_rmsnorm_bi<<<row_blocks(M), body::kRowThreads, 0, stream()>>>(a);
        check_launch("rmsnorm_forward");
    } else {
        launch_fast_rows(k_rmsnorm_fast<kFastThreads>, k_rmsnorm_fast<32>, M, a, "rmsnorm_forward (fast)");
    }
}

// rmsnorm_backward: per row dot = bi16 over c of fma(g*w, x, lane);
// dinp += (r*g)*w - ((r^3*dot)/C)*x (= when dinp_store is overwrite). dweight[c] += (g*x)*r over m ascending
// (a thread per column). The CPU's plan: the CPU's bits.
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int M, int C, GradStore dinp_store) {
    if (M <= 0 || C <= 0) return;
    if (dinp) {
        k_rmsnorm_bwd<<<row_blocks(M), body::kRowThreads, 0, stream()>>>(
            body::RmsnormBwdArgs{dinp, dout, inp, weight, rstd, M, C, dinp_store == GradStore::add});
        check_launch("rmsnorm_backward");
    }
    if (dweight) launch_elementwise(C, DweightF{dweight, dout, inp, rstd, M, C}, "rmsnorm_backward (dweight)");
}

// logsoftmax_forward. batch_invariant: mx = exact max of z*it (+0); sum = bi16
// over exp_s(z*it - mx); lse = round(mx + log_s(sum), stats); lp = round(z*it - lse).
// fast: see the top of the file.
void logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M, int V) {
    if (M <= 0 || V <= 0) return;
    const body::LogsoftmaxArgs a{lp, logits, inv_temp, M, V, ex.dtype, ex.stats};
    if (ex.family == Family::batch_invariant) {
        k_logsoftmax_bi<<<row_blocks(M), body::kRowThreads, 0, stream()>>>(a);
        check_launch("logsoftmax_forward");
    } else {
        launch_fast_rows(k_logsoftmax_fast<kFastThreads>, k_logsoftmax_fast<32>, M, a, "logsoftmax_forward (fast)");
    }
}

// logsoftmax_backward: s = bi16 sum of dlp; dlogits += it * (dlp - exp_s(lp) * s).
void logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M, int V) {
    if (M <= 0 || V <= 0) return;
    k_logsoftmax_bwd<<<row_blocks(M), body::kRowThreads, 0, stream()>>>(
        body::LogsoftmaxBwdArgs{dlogits, dlp, lp, inv_temp, M, V});
    check_launch("logsoftmax_backward");
}

void logprob_gather(float* out, const float* lp, const int32_t* target, int M, int V) {
    launch_elementwise(M, GatherF{out, lp, target, V}, "logprob_gather");
}

// entropy_forward. batch_invariant: ent = round(-(bi16 over fma(exp_s(lp),
// max(lp, -FLT_MAX), lane))). fast: see the top of the file.
void entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V) {
    if (M <= 0 || V <= 0) return;
    const body::EntropyArgs a{ent, lp, M, V, ex.dtype};
    if (ex.family == Family::batch_invariant) {
        k_entropy_bi<<<row_blocks(M), body::kRowThreads, 0, stream()>>>(a);
        check_launch("entropy_forward");
    } else {
        launch_fast_rows(k_entropy_fast<kFastThreads>, k_entropy_fast<32>, M, a, "entropy_forward (fast)");
    }
}

// Router: a thread per row running the CPU's code (bodies.h): top-k by
// repeated argmax, weights = softmax over the selected logits with exp_s, the
// sum bi16 (batch_invariant) or left to right (fast): the CPU's bits in both.
void router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E, int k) {
    if (M <= 0 || E <= 0 || k <= 0) return;
    launch_elementwise(M, TopkF{ex.family == Family::batch_invariant, ex.dtype, ids, weights, logits, E, k},
                       "router_topk_forward");
}
void router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids, int M, int E,
                           int k) {
    if (M <= 0 || E <= 0 || k <= 0) return;
    launch_elementwise(M, ReplayF{ex.family == Family::batch_invariant, ex.dtype, weights, logits, ids, E, k},
                       "router_replay_forward");
}
void router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids, int M, int E,
                     int k) {
    if (M <= 0 || k <= 0) return;
    launch_elementwise(M, RouterBwdF{dlogits, dweights, weights, ids, E, k}, "router_backward");
}

void moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights, int M, int k,
                         int D) {
    if (M <= 0 || D <= 0) return;
    launch_elementwise((int64_t)M * D, MoeCombineF{out, slot_rows, weights, k, D, ex.dtype}, "moe_combine_forward");
}
void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                          const int32_t* slots, int n, int k, int D) {
    if (n <= 0 || D <= 0) return;
    launch_elementwise((int64_t)n * D, MoeCombineDyF{dy, dout, weights, slots, k, D}, "moe_combine_backward dy");
    launch_elementwise(n, MoeCombineDweightF{dweights, dout, y, slots, k, D}, "moe_combine_backward dweights");
}

}  // namespace mlk::cuda
