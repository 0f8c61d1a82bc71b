// Row-reduction kernels: RMSNorm, log-softmax, entropy and the MoE router.
// Row plans (see cpu/common.h):
//   bi16              element j -> lane j%16, lanes accumulate ascending j, tree
//                     (i += i+8, i+4, i+2, i+1). Depends only on the row length.
//   fast_interleave2  two 16-lane accumulators alternating every 16 elements,
//                     added lane-wise, then the tree (many rows).
//   fast_chunk32      contiguous chunks of 32 elements, each 16 lanes + tree,
//                     chunk sums added left to right (few rows).
// The fast family picks fast_chunk32 when rows < 8 * num_threads(), else
// fast_interleave2, so its bits depend on the batch size and the thread count.
// Max is exact. exp/log are the portable exp_s/log_s (vectorised identically).
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace mlk {

using namespace cpu;

namespace {

Plan plan_for(const Exec& ex, int rows) {
    return ex.family == Family::batch_invariant ? Plan::bi16 : fast_row_plan(rows, num_threads());
}

template <class F>
void for_rows(int M, double work_per_row, F&& f) {
    parallel_for(M, f, M > 1 && M * work_per_row >= kParallelWork && num_threads() > 1);
}

// An RMSNorm row's work in the units of kParallelWork (GEMM flops): a row
// costs about 0.27 ns per element plus 9 ns (its reduction tree, square root
// and division), far more than 4 flops per element say, which would keep the
// q/k norms (rows of 16) and the norms of a few hundred rows on one thread. One
// thread against two, Zen 5: M = 448 C = 128 15 against 9 us, M = 3584 C = 16 43-51
// against 23 us, M = 256 C = 128 9.5 against 6.5 us; M = 64 C = 128 (2 us)
// stays on one.
inline double rmsnorm_row_work(int C) { return 30.0 * C + 200.0; }

}  // namespace

// rmsnorm_forward: ss = sum_c x_c^2 as fma(x, x, lane) under the row plan
// (bi16 / fast by M and threads); r = round(1 / sqrtf(ss / C + eps), ex.stats);
// out = round(round(x * r, ex.norm) * w) (ex.norm f32: round((x * r) * w)).
// rstd = r.
void rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight, float eps, int M,
                     int C) {
    if (M <= 0 || C <= 0) return;
    const IsaTable& I = isa_table();
    const Plan plan = plan_for(ex, M);
    for_rows(M, rmsnorm_row_work(C), [&](int m0, int m1) {
        I.rmsnorm_rows(plan, out, rstd, inp, weight, eps, C, ex.dtype, ex.stats, ex.norm, m0, m1);
    });
}

// rmsnorm_backward: per row, dot = bi16 over c of fma(g*w, x); dinp += (r*g)*w -
// (r^3*dot/C)*x (= when dinp_store is overwrite). dweight[c] += (g*x)*r over m ascending (from the existing
// value). Threads split rows (dinp) and then columns (dweight).
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int M, int C, GradStore dinp_store) {
    if (M <= 0 || C <= 0) return;
    const IsaTable& I = isa_table();
    const bool add = dinp_store == GradStore::add;
    if (dinp)
        for_rows(M, rmsnorm_row_work(C),
                 [&](int m0, int m1) { I.rmsnorm_bwd_rows(dinp, dout, inp, weight, rstd, C, add, m0, m1); });
    if (dweight) {
        const int nb = (C + 63) / 64;
        parallel_for(
            nb,
            [&](int b, int e) { I.rmsnorm_bwd_dweight(dweight, dout, inp, rstd, M, C, b * 64, std::min(C, e * 64)); },
            nb > 1 && 3.0 * M * C >= kParallelWork && num_threads() > 1);
    }
}

// logsoftmax_forward: zs = z * inv_temp; mx = exact max; sum = row plan over
// exp(zs - mx); lse = round(mx + log(sum), ex.stats); lp = round(zs - lse).
void logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M, int V) {
    if (M <= 0 || V <= 0) return;
    const IsaTable& I = isa_table();
    const Plan plan = plan_for(ex, M);
    for_rows(M, 20.0 * V,
             [&](int m0, int m1) { I.logsoftmax_rows(plan, lp, logits, inv_temp, V, ex.dtype, ex.stats, m0, m1); });
}

// logsoftmax_backward: s = bi16 sum of dlp over the row; dlogits += inv_temp *
// (dlp - exp(lp) * s).
void logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M, int V) {
    if (M <= 0 || V <= 0) return;
    const IsaTable& I = isa_table();
    for_rows(M, 20.0 * V, [&](int m0, int m1) { I.logsoftmax_bwd_rows(dlogits, dlp, lp, inv_temp, V, m0, m1); });
}

void logprob_gather(float* out, const float* lp, const int32_t* target, int M, int V) {
    for (int m = 0; m < M; ++m) {
        const int32_t t = target[m];
        out[m] = (t >= 0 && t < V) ? lp[(int64_t)m * V + t] : std::numeric_limits<float>::quiet_NaN();
    }
}

// entropy_forward: ent = -(row plan over fma(exp(lp), max(lp, -FLT_MAX), lane)),
// rounded to ex.dtype. A -inf log-prob contributes 0.
void entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V) {
    if (M <= 0 || V <= 0) return;
    const IsaTable& I = isa_table();
    const Plan plan = plan_for(ex, M);
    for_rows(M, 20.0 * V, [&](int m0, int m1) { I.entropy_rows(plan, ent, lp, V, ex.dtype, m0, m1); });
}

// ---- router ---------------------------------------------------------------------
// Top-k: repeated argmax with strict '>' (ties keep the lower expert id), exact.
// Weights: mx = max of the selected logits (exact); e_j = exp(z_j - mx); sum over
// the k selected values in selection order: bi16 (batch_invariant) or left to
// right (fast); w_j = round(e_j / sum). Per row, so neither family depends on M.
// A router row's work in kParallelWork's units (rmsnorm_row_work's scale,
// about 110 a nanosecond): a row of moe-deep's (E = 48, k = 6) takes 110-130
// ns on AVX-512, 230 on the scalar path (Zen 4, one thread). Counted as 4 E
// (192 units, under 2 ns), the warm-up's 448-row batches would run on one thread.
inline double router_row_work(int E, int k) { return 2000.0 * k + 10.0 * E; }

void router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E, int k) {
    if (M <= 0 || E <= 0 || k <= 0) return;
    const IsaTable& I = isa_table();
    const bool bi = ex.family == Family::batch_invariant;
    for_rows(M, router_row_work(E, k),
             [&](int m0, int m1) { I.router_rows(ids, weights, logits, nullptr, bi, ex.dtype, E, k, m0, m1); });
}

void router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids, int M, int E,
                           int k) {
    if (M <= 0 || E <= 0 || k <= 0) return;
    const IsaTable& I = isa_table();
    const bool bi = ex.family == Family::batch_invariant;
    for_rows(M, router_row_work(0, k),
             [&](int m0, int m1) { I.router_rows(nullptr, weights, logits, ids, bi, ex.dtype, E, k, m0, m1); });
}

void moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights, int M, int k,
                         int D) {
    if (M <= 0 || D <= 0) return;
    const IsaTable& I = isa_table();
    for_rows(M, 2.0 * k * D,
             [&](int m0, int m1) { I.moe_combine_rows(out, slot_rows, weights, k, D, ex.dtype, m0, m1); });
}

void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                          const int32_t* slots, int n, int k, int D) {
    if (n <= 0 || D <= 0) return;
    isa_table().moe_combine_bwd(dy, dweights, dout, y, weights, slots, n, k, D);
}

// router_backward: dot = w_0 g_0 + w_1 g_1 + ... left to right (products rounded,
// no fma); dlogits[id_j] += w_j * (g_j - dot) in j order.
void router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids, int M, int E,
                     int k) {
    for (int m = 0; m < M; ++m) {
        const float* w = weights + (int64_t)m * k;
        const float* g = dweights + (int64_t)m * k;
        const int32_t* id = ids + (int64_t)m * k;
        float dot = 0.0f;
        for (int j = 0; j < k; ++j) dot = dot + w[j] * g[j];
        for (int j = 0; j < k; ++j) dlogits[(int64_t)m * E + id[j]] += w[j] * (g[j] - dot);
    }
}

}  // namespace mlk
