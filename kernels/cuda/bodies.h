// The per-thread arithmetic of the CUDA backend's batch-invariant kernels and
// of its family-free ops (elementwise, embedding, RoPE, router, fp8
// quantisation, the AdamW step, every backward op): MLK_HD functions
// (__host__ __device__ under nvcc, plain inline C++ for the host compiler).
// A __global__ kernel in cuda/*.cu only maps its thread to one of these;
// cuda_bodies_test runs the same functions in a host-side grid loop (blocks x
// threads, one phase at a time, a phase boundary being the kernel's
// __syncthreads) and requires the CPU kernels' bits, on every CPU ISA path,
// without a GPU.
//
// Bit-exactness rules (the CPU's, kernels/cpu/common.h): only IEEE fp32
// operations with round-to-nearest-even; every fused multiply-add explicit
// (fma_rn = __fmaf_rn / __builtin_fmaf), nvcc runs with -fmad=false; division
// and square root correctly rounded (div_rn / sqrt_rn); exp and log are
// kernels/scalar_math.h's exp_s / log_s, the CPU's own code; rounding to a
// storage precision is dtype.h's round_to. Max is exact, so its order is free
// (NaN aside: NaN inputs give NaN outputs on both sides, not necessarily
// with the same NaN bits). The AdamW step is the one double-precision body
// (IEEE double add/mul/div/sqrt, the same rules; -fmad=false also stops DFMA).
//
// The batch-invariant row plan (bi16, as the CPU's): element j of a row goes
// to lane j % 16, each lane accumulates its elements in ascending j from +0,
// then the fixed tree l[i] += l[i+8], l[i+4], l[i+2], l[i+1] gives the sum. On
// the device a row is 16 threads (one per lane) of a 128-thread block (8 rows
// per block); the lanes meet in shared memory and every thread of the row
// evaluates the same tree.
#pragma once

#include <math.h>

#include <cmath>
#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/scalar_math.h"

namespace mlk::cuda::body {

using fmath::adamw_at;
using fmath::div_rn;
using fmath::exp_s;
using fmath::fma_rn;
using fmath::log_s;
using fmath::sqrt_rn;

inline constexpr int kLanes = 16;
inline constexpr int kRowThreads = 128;  // threads of a row-kernel block
inline constexpr int kRowsPerBlock = kRowThreads / kLanes;
// Shared floats of a row-kernel block: per-lane maxima, then per-lane sums.
inline constexpr int kRowSmem = 2 * kRowThreads;

MLK_HD inline float neg_inf() { return bits_float(0xff800000u); }
MLK_HD inline float quiet_nan() { return bits_float(0x7fc00000u); }
MLK_HD inline float max_gt(float a, float b) { return a > b ? a : b; }  // the CPU's V::max

// The bi16 tree over 16 lane values.
MLK_HD inline float tree16(const float* lanes) {
    float t[kLanes];
    for (int i = 0; i < kLanes; ++i) t[i] = lanes[i];
    for (int s = kLanes / 2; s > 0; s >>= 1)
        for (int i = 0; i < s; ++i) t[i] = t[i] + t[i + s];
    return t[0];
}

// A chain over a long stride (a column over rows, a row of a GEMM) loads its
// next kAhead terms before it adds them: the terms do not depend on the sum,
// and a loop that loads each term after the last add runs at one memory
// latency per term on the GPU (rmsnorm's dweight over 12k rows: 1.1 ms per
// call on an H100). The adds, and so the bits, are the plain loop's. 32
// ahead is slower on an H200: the weight gradient's GEMM takes 288 us per
// call against 126 with 8, its registers cutting the threads in flight,
// while rmsnorm's dweight gains only 1.08 -> 0.98 ms.
inline constexpr int kAhead = 8;

// One FMA chain: acc = fma(a[i*as], b[i*bs], acc) for i = 0..n-1 ascending.
MLK_HD inline float chain(float acc, const float* a, int64_t as, const float* b, int64_t bs, int n) {
    int i = 0;
    for (; i + kAhead <= n; i += kAhead) {
        float x[kAhead], y[kAhead];
        for (int u = 0; u < kAhead; ++u) {
            x[u] = a[(int64_t)(i + u) * as];
            y[u] = b[(int64_t)(i + u) * bs];
        }
        for (int u = 0; u < kAhead; ++u) acc = fma_rn(x[u], y[u], acc);
    }
    for (; i < n; ++i) acc = fma_rn(a[(int64_t)i * as], b[(int64_t)i * bs], acc);
    return acc;
}

// ---- elementwise (one index per thread) --------------------------------------
MLK_HD inline void add_round_at(float* y, const float* x, Dtype dt, int64_t i) { y[i] = round_to(y[i] + x[i], dt); }
MLK_HD inline void round_at(float* x, Dtype dt, int64_t i) { x[i] = round_to(x[i], dt); }

// out = round(round(g / (1 + exp(0 - g)), silu) * up, dt) (silu: Exec::silu;
// f32 rounds nothing)
MLK_HD inline void swiglu_at(float* out, const float* g, const float* u, Dtype dt, Dtype silu, int64_t i) {
    const float gv = g[i];
    const float s = div_rn(gv, 1.0f + exp_s(0.0f - gv));
    out[i] = round_to(round_to(s, silu) * u[i], dt);
}
// sig = 1/(1+exp(0-g)); dup += (dout*g)*sig; dgate += ((dout*up)*sig)*(1 + g*(1-sig))
// (= rather than += when !add)
MLK_HD inline void swiglu_bwd_at(float* dg, float* du, const float* dout, const float* g, const float* u, bool add,
                                 int64_t i) {
    const float gv = g[i], uv = u[i], d = dout[i];
    const float sig = div_rn(1.0f, 1.0f + exp_s(0.0f - gv));
    const float tu = (d * gv) * sig, tg = ((d * uv) * sig) * (1.0f + gv * (1.0f - sig));
    du[i] = add ? du[i] + tu : tu;
    dg[i] = add ? dg[i] + tg : tg;
}

// AdamW, one parameter per index: adamw_at (kernels/scalar_math.h) is the very
// function the CPU's per-ISA loop calls, p, m, v and g at index i:
//   g' = g*grad_scale; m' = b1*m + (1-b1)*g'; v' = b2*v + ((1-b2)*g')*g';
//   p -= (lr*wd)*p; p -= (lr*(m'/bc1)) / (sqrt(v'/bc2) + eps)   (all in double)

// i over M*C: out[m, c] = round(table[tok[m], c])
MLK_HD inline void embedding_at(float* out, const int32_t* tok, const float* table, int C, Dtype dt, int64_t i) {
    const int64_t m = i / C, c = i % C;
    out[i] = round_to(table[(int64_t)tok[m] * C + c], dt);
}
// Column c of dtable: dtable[tok[m], c] += dout[m, c] for m = 0..M-1 in order.
MLK_HD inline void embedding_bwd_col(float* dtable, const float* dout, const int32_t* tok, int M, int C, int c) {
    for (int m = 0; m < M; ++m) dtable[(int64_t)tok[m] * C + c] += dout[(int64_t)m * C + c];
}

// RoPE's cos/sin row for position p (host code): angle(p, i) = p *
// theta^(-2i/D) in double, cos and sin cast to float. The CPU's expression
// (kernels/cpu/elementwise.cpp) with the same libm, so the same bits; the
// CUDA backend uploads these rows (a device has its own cos/sin).
inline void rope_cs_row(float* row, int64_t p, int D, float theta) {
    const int half = D / 2;
    for (int i = 0; i < half; ++i) {
        const double a = (double)p * std::pow((double)theta, -2.0 * i / D);
        row[i] = (float)std::cos(a);
        row[half + i] = (float)std::sin(a);
    }
}

// RoPE, one rotated pair per index i over M*H*(D/2). The row of cos/sin for
// row m is table + pos[m]*D (a position table) or table + m*D (per_row: a
// table made for this call). Products rounded separately, no fma. The
// forward with a narrow cache ct (Exec::rope_cache) or arithmetic pt
// (Exec::rope): c and s rounded to ct, each product and the sum or
// difference to pt, then to dt (the CPU's rope_rows).
struct RopeArgs {
    float* x;
    const int32_t* pos;
    const float* table;  // rows of D floats: cos[D/2] then sin[D/2]
    bool per_row;
    int M, H, D;
    Dtype dt;
    bool inverse;
    Dtype pt = Dtype::f32;
    Dtype ct = Dtype::f32;
};
MLK_HD inline void rope_at(const RopeArgs& a, int64_t i) {
    const int half = a.D / 2;
    const int ii = (int)(i % half);
    const int64_t mh = i / half;
    const int64_t m = mh / a.H;
    const float* cs = a.table + (a.per_row ? m : (int64_t)a.pos[m]) * a.D;
    const float c = cs[ii], s = cs[half + ii];
    float* v = a.x + mh * a.D;
    const float x1 = v[ii], x2 = v[half + ii];
    if (!a.inverse && (a.pt != Dtype::f32 || a.ct != Dtype::f32)) {
        const Dtype pt = a.pt;
        const float cr = round_to(c, a.ct), sr = round_to(s, a.ct);
        v[ii] = round_to(round_to(round_to(x1 * cr, pt) - round_to(x2 * sr, pt), pt), a.dt);
        v[half + ii] = round_to(round_to(round_to(x2 * cr, pt) + round_to(x1 * sr, pt), pt), a.dt);
    } else if (!a.inverse) {
        v[ii] = round_to(x1 * c - x2 * s, a.dt);
        v[half + ii] = round_to(x2 * c + x1 * s, a.dt);
    } else {
        v[ii] = x1 * c + x2 * s;
        v[half + ii] = x2 * c - x1 * s;
    }
}

// ---- matmul ------------------------------------------------------------------------
// Batch-invariant forward, one output per thread: one FMA chain over k
// ascending from +0, then + bias[n], then rounded (the CPU's plan).
MLK_HD inline void matmul_bi_at(float* out, const float* inp, const float* w, const float* bias, int K, int N, Dtype dt,
                                int m, int n) {
    float acc = chain(0.0f, inp + (int64_t)m * K, 1, w + n, N, K);
    if (bias) acc = acc + bias[n];
    out[(int64_t)m * N + n] = round_to(acc, dt);
}
// Backward, the CPU's orders: dinp[m,k] chains n ascending from its value
// (from 0.0f when !add); dw[k,n] chains m ascending from its value; dbias[n]
// adds m ascending.
MLK_HD inline void matmul_dinp_at(float* dinp, const float* dout, const float* w, int K, int N, bool add, int m,
                                  int k) {
    float& d = dinp[(int64_t)m * K + k];
    d = chain(add ? d : 0.0f, dout + (int64_t)m * N, 1, w + (int64_t)k * N, 1, N);
}
MLK_HD inline void matmul_dw_at(float* dw, const float* inp, const float* dout, int M, int K, int N, int k, int n) {
    float& d = dw[(int64_t)k * N + n];
    d = chain(d, inp + k, K, dout + n, N, M);
}
MLK_HD inline void matmul_dbias_at(float* dbias, const float* dout, int M, int N, int n) {
    float acc = dbias[n];
    int m = 0;
    for (; m + kAhead <= M; m += kAhead) {  // loads ahead of the adds (chain)
        float d[kAhead];
        for (int u = 0; u < kAhead; ++u) d[u] = dout[(int64_t)(m + u) * N + n];
        for (int u = 0; u < kAhead; ++u) acc = acc + d[u];
    }
    for (; m < M; ++m) acc = acc + dout[(int64_t)m * N + n];
    dbias[n] = acc;
}

// ---- batch-invariant row kernels: 8 rows x 16 lanes per 128-thread block ----------
struct RowThread {
    int row, lane, base;  // base: the row's first thread in the block
};
MLK_HD inline RowThread row_thread(int block, int tid) {
    return {block * kRowsPerBlock + tid / kLanes, tid % kLanes, tid - tid % kLanes};
}

struct RmsnormArgs {
    float* out;
    float* rstd;
    const float* inp;
    const float* w;
    float eps;
    int M, C;
    Dtype dt, sdt;
    Dtype ndt = Dtype::f32;  // x * r rounded to it before the weight multiply (Exec::norm)
};
// ss lanes: fma(x, x, lane)
MLK_HD inline void rmsnorm_p1(const RmsnormArgs& a, int block, int tid, float* sm) {
    const RowThread r = row_thread(block, tid);
    float acc = 0.0f;
    if (r.row < a.M) {
        const float* x = a.inp + (int64_t)r.row * a.C;
        for (int j = r.lane; j < a.C; j += kLanes) acc = fma_rn(x[j], x[j], acc);
    }
    sm[kRowThreads + tid] = acc;
}
// r = round(1 / sqrt(ss / C + eps), sdt); out = round(round(x * r, ndt) * w, dt)
MLK_HD inline void rmsnorm_p2(const RmsnormArgs& a, int block, int tid, const float* sm) {
    const RowThread r = row_thread(block, tid);
    if (r.row >= a.M) return;
    const float ss = tree16(sm + kRowThreads + r.base);
    const float rs = round_to(div_rn(1.0f, sqrt_rn(div_rn(ss, (float)a.C) + a.eps)), a.sdt);
    if (a.rstd && r.lane == 0) a.rstd[r.row] = rs;
    const float* x = a.inp + (int64_t)r.row * a.C;
    float* o = a.out + (int64_t)r.row * a.C;
    for (int j = r.lane; j < a.C; j += kLanes) o[j] = round_to(round_to(x[j] * rs, a.ndt) * a.w[j], a.dt);
}

struct LogsoftmaxArgs {
    float* lp;
    const float* z;
    float it;
    int M, V;
    Dtype dt, sdt;
};
// lane maxima of z * it
MLK_HD inline void logsoftmax_p1(const LogsoftmaxArgs& a, int block, int tid, float* sm) {
    const RowThread r = row_thread(block, tid);
    float mx = neg_inf();
    if (r.row < a.M) {
        const float* z = a.z + (int64_t)r.row * a.V;
        for (int j = r.lane; j < a.V; j += kLanes) mx = max_gt(mx, z[j] * a.it);
    }
    sm[tid] = mx;
}
MLK_HD inline float row_max(const float* sm, const RowThread& r) {
    float mx = neg_inf();
    for (int i = 0; i < kLanes; ++i) mx = max_gt(mx, sm[r.base + i]);
    return mx + 0.0f;  // -0 -> +0, as the CPU
}
// sum lanes of exp(z * it - max)
MLK_HD inline void logsoftmax_p2(const LogsoftmaxArgs& a, int block, int tid, float* sm) {
    const RowThread r = row_thread(block, tid);
    float acc = 0.0f;
    if (r.row < a.M) {
        const float mx = row_max(sm, r);
        const float* z = a.z + (int64_t)r.row * a.V;
        for (int j = r.lane; j < a.V; j += kLanes) acc = acc + exp_s(z[j] * a.it - mx);
    }
    sm[kRowThreads + tid] = acc;
}
// lse = round(max + log(sum), sdt); lp = round(z * it - lse, dt)
MLK_HD inline void logsoftmax_p3(const LogsoftmaxArgs& a, int block, int tid, const float* sm) {
    const RowThread r = row_thread(block, tid);
    if (r.row >= a.M) return;
    const float lse = round_to(row_max(sm, r) + log_s(tree16(sm + kRowThreads + r.base)), a.sdt);
    const float* z = a.z + (int64_t)r.row * a.V;
    float* o = a.lp + (int64_t)r.row * a.V;
    for (int j = r.lane; j < a.V; j += kLanes) o[j] = round_to(z[j] * a.it - lse, a.dt);
}

struct EntropyArgs {
    float* ent;
    const float* lp;
    int M, V;
    Dtype dt;
};
// lanes of fma(exp(lp), max(lp, -FLT_MAX), lane): a -inf log-prob adds 0
MLK_HD inline void entropy_p1(const EntropyArgs& a, int block, int tid, float* sm) {
    const RowThread r = row_thread(block, tid);
    float acc = 0.0f;
    if (r.row < a.M) {
        const float* l = a.lp + (int64_t)r.row * a.V;
        const float lo = bits_float(0xff7fffffu);
        for (int j = r.lane; j < a.V; j += kLanes) acc = fma_rn(exp_s(l[j]), max_gt(l[j], lo), acc);
    }
    sm[kRowThreads + tid] = acc;
}
MLK_HD inline void entropy_p2(const EntropyArgs& a, int block, int tid, const float* sm) {
    const RowThread r = row_thread(block, tid);
    if (r.row < a.M && r.lane == 0) a.ent[r.row] = round_to(-tree16(sm + kRowThreads + r.base), a.dt);
}

// out[m] = lp[m, target[m]], NaN for a target outside [0, V).
MLK_HD inline void logprob_gather_at(float* out, const float* lp, const int32_t* target, int V, int m) {
    const int32_t t = target[m];
    out[m] = (t >= 0 && t < V) ? lp[(int64_t)m * V + t] : quiet_nan();
}

// ---- row backward ----------------------------------------------------------------
struct RmsnormBwdArgs {
    float* dinp;
    const float* dout;
    const float* inp;
    const float* w;
    const float* rstd;
    int M, C;
    bool add;  // dinp += ...; false: dinp = ...
};
// dot lanes: fma(g * w, x, lane)
MLK_HD inline void rmsnorm_bwd_p1(const RmsnormBwdArgs& a, int block, int tid, float* sm) {
    const RowThread r = row_thread(block, tid);
    float acc = 0.0f;
    if (r.row < a.M) {
        const float* x = a.inp + (int64_t)r.row * a.C;
        const float* g = a.dout + (int64_t)r.row * a.C;
        for (int j = r.lane; j < a.C; j += kLanes) acc = fma_rn(g[j] * a.w[j], x[j], acc);
    }
    sm[kRowThreads + tid] = acc;
}
// dinp += (r * g) * w - ((r^3 * dot) / C) * x (= when !a.add)
MLK_HD inline void rmsnorm_bwd_p2(const RmsnormBwdArgs& a, int block, int tid, const float* sm) {
    const RowThread r = row_thread(block, tid);
    if (r.row >= a.M) return;
    const float dot = tree16(sm + kRowThreads + r.base);
    const float rs = a.rstd[r.row];
    const float coef = div_rn(((rs * rs) * rs) * dot, (float)a.C);
    const float* x = a.inp + (int64_t)r.row * a.C;
    const float* g = a.dout + (int64_t)r.row * a.C;
    float* di = a.dinp + (int64_t)r.row * a.C;
    for (int j = r.lane; j < a.C; j += kLanes) {
        const float t = (rs * g[j]) * a.w[j] - coef * x[j];
        di[j] = a.add ? di[j] + t : t;
    }
}
// dweight[c] += (g * x) * r over m ascending, from its value.
MLK_HD inline void rmsnorm_dweight_col(float* dw, const float* dout, const float* inp, const float* rstd, int M, int C,
                                       int c) {
    float acc = dw[c];
    int m = 0;
    for (; m + kAhead <= M; m += kAhead) {  // loads ahead of the adds (chain)
        float g[kAhead], x[kAhead], r[kAhead];
        for (int u = 0; u < kAhead; ++u) {
            g[u] = dout[(int64_t)(m + u) * C + c];
            x[u] = inp[(int64_t)(m + u) * C + c];
            r[u] = rstd[m + u];
        }
        for (int u = 0; u < kAhead; ++u) acc = acc + (g[u] * x[u]) * r[u];
    }
    for (; m < M; ++m) acc = acc + (dout[(int64_t)m * C + c] * inp[(int64_t)m * C + c]) * rstd[m];
    dw[c] = acc;
}

struct LogsoftmaxBwdArgs {
    float* dz;
    const float* dlp;
    const float* lp;
    float it;
    int M, V;
};
MLK_HD inline void logsoftmax_bwd_p1(const LogsoftmaxBwdArgs& a, int block, int tid, float* sm) {
    const RowThread r = row_thread(block, tid);
    float acc = 0.0f;
    if (r.row < a.M) {
        const float* g = a.dlp + (int64_t)r.row * a.V;
        for (int j = r.lane; j < a.V; j += kLanes) acc = acc + g[j];
    }
    sm[kRowThreads + tid] = acc;
}
// dz += it * (dlp - exp(lp) * sum(dlp))
MLK_HD inline void logsoftmax_bwd_p2(const LogsoftmaxBwdArgs& a, int block, int tid, const float* sm) {
    const RowThread r = row_thread(block, tid);
    if (r.row >= a.M) return;
    const float s = tree16(sm + kRowThreads + r.base);
    const float* g = a.dlp + (int64_t)r.row * a.V;
    const float* l = a.lp + (int64_t)r.row * a.V;
    float* d = a.dz + (int64_t)r.row * a.V;
    for (int j = r.lane; j < a.V; j += kLanes) d[j] = d[j] + a.it * (g[j] - exp_s(l[j]) * s);
}

// ---- MoE router (one row per thread; the CPU's code) -----------------------------------
// Weights over the k selected logits: mx = max (std::max's order), e_j =
// exp(z_j - mx), sum in selection order by bi16 (batch_invariant) or left to
// right (fast), w_j = round(e_j / sum).
MLK_HD inline void router_weights(bool bi, Dtype dt, float* wout, const float* z, const int32_t* id, int k) {
    float mx = neg_inf();
    for (int j = 0; j < k; ++j) mx = mx < z[id[j]] ? z[id[j]] : mx;
    mx = mx + 0.0f;
    float sum = 0.0f;
    if (bi) {
        float l[kLanes] = {};
        for (int j = 0; j < k; ++j) l[j % kLanes] = l[j % kLanes] + exp_s(z[id[j]] - mx);
        sum = tree16(l);
    } else {
        for (int j = 0; j < k; ++j) sum = sum + exp_s(z[id[j]] - mx);
    }
    for (int j = 0; j < k; ++j) wout[j] = round_to(div_rn(exp_s(z[id[j]] - mx), sum), dt);
}
MLK_HD inline bool router_taken(const int32_t* id, int j, int e) {
    for (int i = 0; i < j; ++i)
        if (id[i] == e) return true;
    return false;
}
// Top-k by repeated argmax with strict '>' (ties: lower id); k > E repeats 0.
MLK_HD inline void router_topk_row(bool bi, Dtype dt, int32_t* ids, float* weights, const float* logits, int E, int k,
                                   int m) {
    const float* z = logits + (int64_t)m * E;
    int32_t* id = ids + (int64_t)m * k;
    for (int j = 0; j < k; ++j) {
        int best = 0;
        for (int e = 0; e < E; ++e)
            if (!router_taken(id, j, e)) {
                best = e;
                break;
            }
        for (int e = 0; e < E; ++e)
            if (!router_taken(id, j, e) && z[e] > z[best]) best = e;
        id[j] = best;
    }
    router_weights(bi, dt, weights + (int64_t)m * k, z, id, k);
}
MLK_HD inline void router_replay_row(bool bi, Dtype dt, float* weights, const float* logits, const int32_t* ids, int E,
                                     int k, int m) {
    router_weights(bi, dt, weights + (int64_t)m * k, logits + (int64_t)m * E, ids + (int64_t)m * k, k);
}
// dot = sum_j w_j g_j left to right (products rounded); dlogits[id_j] += w_j (g_j - dot).
MLK_HD inline void router_bwd_row(float* dlogits, const float* dweights, const float* weights, const int32_t* ids,
                                  int E, int k, int m) {
    const float* w = weights + (int64_t)m * k;
    const float* g = dweights + (int64_t)m * k;
    const int32_t* id = ids + (int64_t)m * k;
    float dot = 0.0f;
    for (int j = 0; j < k; ++j) dot = dot + w[j] * g[j];
    for (int j = 0; j < k; ++j) dlogits[(int64_t)m * E + id[j]] += w[j] * (g[j] - dot);
}

// The MoE combine, element i = m*D + d of out[M,D]: one fp32 FMA chain over
// token m's k slots in slot order from +0, then rounded (the CPU's plan in
// both families).
MLK_HD inline void moe_combine_at(float* out, const float* const* slot_rows, const float* w, int k, int D, Dtype dt,
                                  int64_t i) {
    const int64_t m = i / D, d = i % D;
    float acc = 0.0f;
    for (int j = 0; j < k; ++j) acc = fma_rn(w[m * k + j], slot_rows[m * k + j][d], acc);
    out[i] = round_to(acc, dt);
}
// Its backward for one expert's slots: element i = r*D + d of dy[n,D] is one
// fp32 product; slot row r's gate-weight gradient is one double chain over d
// ascending (each float product is exact in double).
MLK_HD inline void moe_combine_bwd_dy_at(float* dy, const float* dout, const float* w, const int32_t* slots, int k,
                                         int D, int64_t i) {
    const int64_t r = i / D, d = i % D;
    dy[i] = w[slots[r]] * dout[(int64_t)(slots[r] / k) * D + d];
}
MLK_HD inline void moe_combine_bwd_dweight_row(float* dweights, const float* dout, const float* y, const int32_t* slots,
                                               int k, int D, int64_t r) {
    const float* g = dout + (int64_t)(slots[r] / k) * D;
    double dot = 0.0;
    for (int d = 0; d < D; ++d) dot = dot + (double)g[d] * (double)y[r * D + d];
    dweights[slots[r]] = (float)dot;
}

}  // namespace mlk::cuda::body
