// Internal to the CPU backend: the pieces shared by the public entry points
// (cpu/*.cpp) and the per-ISA implementations (cpu/isa/*.cpp, which include
// isa/impl.inc once per instruction set).
//
// Bit-reproducibility rules that every ISA path follows:
//  * Every arithmetic step is an IEEE-754 single-precision operation with
//    round-to-nearest-even: add, sub, mul, div, sqrt, fma (explicit; the build
//    uses -ffp-contract=off), min/max of non-NaN values, round-to-integer.
//    A lane of a vector computes exactly what the scalar code computes.
//  * exp and log are our own polynomial implementations (exp_s / log_s in
//    kernels/scalar_math.h, Cephes coefficients) built only from those
//    operations, so the scalar fallback, AVX2, AVX-512 and the CUDA backend
//    (which calls the same header from device code) give the same bits.
//    exp flushes results below FLT_MIN to 0 (inputs < -87.3365).
//  * The batch-invariant row reduction ("bi16"): element j of a row goes to
//    lane j % 16, lanes accumulate in ascending j, then a fixed pairwise tree
//    (lane i += lane i+8; i += i+4; i += i+2; i += i+1) gives lane 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "kernels/dtype.h"
#include "kernels/kernels.h"
#include "kernels/scalar_math.h"

namespace mlk::cpu {

// ---- portable scalar exp / log (kernels/scalar_math.h, shared with CUDA) ---
using fmath::exp_s;
using fmath::kExpC1;
using fmath::kExpC2;
using fmath::kExpHi;
using fmath::kExpLo;
using fmath::kExpP0;
using fmath::kExpP1;
using fmath::kExpP2;
using fmath::kExpP3;
using fmath::kExpP4;
using fmath::kExpP5;
using fmath::kLog2e;
using fmath::log_s;
using fmath::pow2i;

// ---- row reduction plans ------------------------------------------------------
// bi16: batch-invariant plan (see top of file).
// fast_interleave2: two 16-lane accumulators, element j -> accumulator (j/16)%2,
//   lane j%16; acc0 + acc1 lane-wise, then the bi16 tree. Used for many rows.
// fast_chunk32: the row is cut into contiguous chunks of 32 elements; each
//   chunk is reduced with 16 lanes + the tree; the chunk results are added left
//   to right. Used for few rows (decode-sized batches).
enum class Plan : int { bi16 = 0, fast_interleave2 = 1, fast_chunk32 = 2 };

// The fast family picks the plan from the batch size and the thread count,
// like a library that splits rows across threads when there are few of them.
inline Plan fast_row_plan(int rows, int threads) {
    return rows < 8 * threads ? Plan::fast_chunk32 : Plan::fast_interleave2;
}

// ---- GEMM description ------------------------------------------------------
// C[i, n] (+)= sum_k A(i, k) * B[k, n], with A(i, k) = A[i*ars + k*acs],
// B row k at B + k*ldb, C row i at C + i*ldc. Every C element is one FMA chain
// over k ascending, vectorised along n.
enum class GemmInit : int {
    zero = 0,   // chain starts at 0.0f, C = chain
    carry = 1,  // chain starts at the current C value (accumulate / continue a chain)
};
enum class GemmTri : int {
    none = 0,
    upper = 1,  // A(i, k) == 0 for k < i: a row tile starting at i0 chains k in [i0, K)
    lower = 2,  // A(i, k) == 0 for k > i: a row tile ending at i1 chains k in [0, min(K, i1))
};
struct GemmCall {
    const float* A = nullptr;
    int64_t ars = 0, acs = 1;
    const float* B = nullptr;
    int64_t ldb = 0;
    float* C = nullptr;
    int64_t ldc = 0;
    int K = 0;
    GemmInit init = GemmInit::zero;
    // > 0: K-blocked accumulation (fast family): each block of kblock k values is
    // a fresh chain from 0.0f and is added to C ((b0 + b1) + b2 ...). 0: one chain.
    int kblock = 0;
    GemmTri tri = GemmTri::none;
    bool skip_upper_tiles = false;  // skip tiles whose columns all exceed their rows (causal scores)
    const float* bias = nullptr;    // epilogue: C = chain + bias[n]
    Dtype dt = Dtype::f32;          // epilogue: round to dt
};

// Most parts a split-K GEMM sums (fast family, M <= 8).
inline constexpr int kMaxSplitK = 32;

// Row splits for threads happen at multiples of this, so that row tiles (of
// every ISA's height: 6, 4, 1 rows) start at the same rows whatever the
// thread count.
inline constexpr int kRowQuantum = 48;

// Bytes of A's rows one GEMM sweep keeps in cache while B's column panels pass
// them: a quarter of a Zen 4/5 core's 1 MB L2 (half of older cores' 512 KB),
// leaving room for B's panel and C.
inline constexpr int64_t kGemmRowBytes = 256 << 10;

// ---- attention per-query arguments ---------------------------------------------
struct AttnQuery {
    const float* q = nullptr;   // [D]
    const float* Kt = nullptr;  // transposed keys [D][ldk], ldk a multiple of 64, zero padded
    int ldk = 0;
    const float* k = nullptr;  // untransposed keys: key j at k + j*kstride (fast decode)
    int64_t kstride = 0;
    const float* v = nullptr;  // value j at v + j*vstride
    int64_t vstride = 0;
    int len = 0;  // keys 0..len-1
    int D = 0;
    float scale = 1.0f;
    float* out = nullptr;  // [D], rounded to dt
    Dtype dt = Dtype::f32;
    Dtype pdt = Dtype::f32;    // P rounded to this before P.V (Exec::probs)
    Dtype sdt = Dtype::f32;    // the softmax normaliser rounded to this (Exec::stats)
    bool eager = false;        // P normalised before probs and P.V (Exec::eager_softmax; bi plan only)
    float* att = nullptr;      // optional [len] probabilities
    float* scratch = nullptr;  // own scratch: >= ldk (bi) / 2*ldk + 2*(ldk/16) + 1 (fast prefill) floats
    int nsplit = 1;            // fast decode: number of KV splits
};

// ---- the per-ISA table -------------------------------------------------------
struct IsaTable {
    const char* name;
    void (*gemm)(const GemmCall& g, int m0, int m1, int n0, int n1);
    // Split-K GEMM rows m0..m1, columns n0..n1: C = round(pairwise tree over
    // s < S of the fresh chain over k in [s*K/S, (s+1)*K/S), + bias), S <= kMaxSplitK.
    void (*gemm_splitk)(const GemmCall& g, int S, int m0, int m1, int n0, int n1);
    float (*row_sum)(Plan plan, const float* x, int64_t n);
    // sdt: the storage precision of 1/rms (Exec::stats); ndt: x * (1/rms) is
    // rounded to it before the weight multiply (Exec::norm).
    void (*rmsnorm_rows)(Plan plan, float* out, float* rstd, const float* inp, const float* w, float eps, int C,
                         Dtype dt, Dtype sdt, Dtype ndt, int m0, int m1);
    void (*rmsnorm_bwd_rows)(float* dinp, const float* dout, const float* inp, const float* w, const float* rstd, int C,
                             bool add, int m0, int m1);
    void (*rmsnorm_bwd_dweight)(float* dw, const float* dout, const float* inp, const float* rstd, int M, int C, int c0,
                                int c1);
    // sdt: the storage precision of the log-sum-exp (Exec::stats).
    void (*logsoftmax_rows)(Plan plan, float* lp, const float* z, float inv_temp, int V, Dtype dt, Dtype sdt, int m0,
                            int m1);
    void (*logsoftmax_bwd_rows)(float* dz, const float* dlp, const float* lp, float inv_temp, int V, int m0, int m1);
    void (*entropy_rows)(Plan plan, float* ent, const float* lp, int V, Dtype dt, int m0, int m1);
    // sdt: silu(g) is rounded to it before it multiplies u (Exec::silu).
    void (*swiglu)(float* out, const float* g, const float* u, Dtype dt, Dtype sdt, int64_t i0, int64_t i1);
    void (*swiglu_bwd)(float* dg, float* du, const float* dout, const float* g, const float* u, bool add, int64_t i0,
                       int64_t i1);
    void (*add_round)(float* y, const float* x, Dtype dt, int64_t i0, int64_t i1);
    void (*copy_round)(float* dst, const float* src, Dtype dt, int64_t n);  // dst may equal src
    // The pieces kernels.h's fp8 quantisers are made of (cpu/dtype.cpp):
    // the largest |x[i]| of n floats (0 for none; a NaN never wins); per
    // column c in [c0, c1) of rows 0..rows-1 of x[., ld], amax[c] = the larger
    // of amax[c] and those |x|; out = round_fp8(x / s) * s for n floats (out
    // may be x); the same in place over rows 0..rows-1 of w[., ld], columns
    // c0..c1, with column c's scale s[c].
    float (*fp8_amax)(const float* x, int64_t n);
    void (*fp8_col_amax)(float* amax, const float* x, int64_t ld, int rows, int c0, int c1);
    void (*fp8_scale_round)(float* out, const float* x, float s, Dtype fmt, int64_t n);
    void (*fp8_scale_round_cols)(float* w, const float* s, int64_t ld, int rows, int c0, int c1, Dtype fmt);
    void (*accumulate)(float* dst, const float* src, int64_t n);  // dst += src
    // rows m0..m1 of moe_combine_forward's out[M,D]
    void (*moe_combine_rows)(float* out, const float* const* slot_rows, const float* w, int k, int D, Dtype dt, int m0,
                             int m1);
    // moe_combine_backward (kernels.h), whole
    void (*moe_combine_bwd)(float* dy, float* dweights, const float* dout, const float* y, const float* w,
                            const int32_t* slots, int n, int k, int D);
    void (*adamw)(float* p, float* m, float* v, const float* g, const AdamWStep& s, int64_t i0, int64_t i1);
    double (*sum_squares)(const float* x, int64_t n);  // kernels.h
    // Router rows m0..m1 (rows.cpp states the plan): without `replay`, each
    // row's top-k into ids[m*k..] and their weights; with it, the weights
    // over replay[m*k..] (ids unused).
    void (*router_rows)(int32_t* ids, float* weights, const float* logits, const int32_t* replay, bool bi, Dtype dt,
                        int E, int k, int m0, int m1);
    // x rows m0..m1 of [M,H,D]; cs[m] -> cos[D/2] followed by sin[D/2]; the
    // forward's cos/sin rounded to ct (Exec::rope_cache), its products and
    // sums to pt (Exec::rope).
    void (*rope_rows)(float* x, const float* const* cs, int H, int D, Dtype dt, Dtype pt, Dtype ct, bool inverse,
                      int m0, int m1);
    // dst[c*ldd + r] = src[r*stride + c] for r < rows, c < cols; dst columns rows..ldd-1 zeroed.
    void (*transpose)(float* dst, int ldd, const float* src, int64_t stride, int rows, int cols);
    // n queries sharing Kt/ldk/v/vstride/D/scale (each its own q/len/out/att/scratch);
    // every query gets exactly the bits of the single-query plan.
    void (*attn_bi_queries)(const AttnQuery* qs, int n);
    void (*attn_fast_prefill_queries)(const AttnQuery* qs, int n);
    void (*attn_fast_decode_query)(const AttnQuery& a);
    // Attention backward row step: for rows t0..t1 of one (b, h):
    // dot_t = bi16 sum_j<=t P[t,j]*dP[t,j]; DS[t,j] = P*(dP - dot)*scale (j<=t), 0 above.
    void (*attn_bwd_ds_rows)(float* DS, const float* P, const float* dP, int T, float scale, int t0, int t1);
};

const IsaTable& isa_table();
const IsaTable& scalar_table();
const IsaTable& avx2_table();
const IsaTable& avx512_table();

}  // namespace mlk::cpu
