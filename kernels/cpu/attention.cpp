// Causal attention (prefill / training), its backward, and decode attention
// against a KV cache.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/kernels.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/work.h"

namespace mlk {
namespace cpu {

int fast_decode_splits(int len, int active_queries, int threads) {
    const int target = 16 * std::max(threads, 1);
    if (active_queries >= target) return 1;
    const int by_len = (len + 31) / 32;
    return std::clamp(std::min(by_len, target / std::max(active_queries, 1)), 1, 16);
}

namespace {
inline int round_up(int x, int m) { return (x + m - 1) / m * m; }

// C[T, N] += A[T, T] @ B[T, N] (= when init is zero), A read through strides
// (ars, acs) so a transpose is a stride swap; each output's FMA chain starts
// from C's value (or 0.0f) and runs over the triangle `tri` of A only (causal).
void accumulate(const IsaTable& I, float* C, int64_t ldc, const float* A, int64_t ars, int64_t acs, const float* B,
                int64_t ldb, int T, GemmTri tri, int N, GemmInit init) {
    GemmCall c;
    c.A = A;
    c.ars = ars;
    c.acs = acs;
    c.B = B;
    c.ldb = ldb;
    c.C = C;
    c.ldc = ldc;
    c.K = T;
    c.init = init;
    c.tri = tri;
    I.gemm(c, 0, T, 0, N);
}

float* scratch(std::vector<float>& v, size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
}
}  // namespace
}  // namespace cpu

using namespace cpu;

// attention_forward: per (b, h) and query t, keys j = 0..t.
// Reduction plan:
//  * scores s_j = (FMA chain over d = 0..D-1 ascending of q[d]*k_j[d], from
//    0.0f) * scale, scale = 1/sqrtf(D); max over j exact.
//  * batch_invariant: p_j = exp(s_j - max); sum = bi16 row plan over j (lane
//    j%16, fixed tree); o[d] = FMA chain over j ascending of p_j*v_j[d] from
//    0.0f; out = round(o / sum). This per-query plan (attn_bi_queries, which runs
//    a few queries side by side without changing any query's arithmetic) is the
//    one attention_decode uses too, so decode against a cache gives the prefill
//    bits for every position. Depends only on the query's length t+1.
//  * fast: blocked online softmax over key blocks of 128 (FlashAttention-2's
//    key tile at head sizes up to 64; a query of at most 128 keys is therefore
//    the batch-invariant plan): per block
//    m' = max(m, block max), alpha = exp(m - m'), l = l*alpha + tree(p of block,
//    key j in lane j%16),
//    o = o*alpha then FMA chain over the block's keys; out = round(o / l).
//  Rounding points (Exec): P is rounded to ex.probs before P.V, after the
//  normaliser summed it unrounded; the normaliser is rounded to ex.stats.
//  att (when non-null, saved for the backward) receives p_j * (1/sum) (fast:
//  exp(s_j - m_final) * (1/l)) in fp32, zeros for j > t.
//  Eager softmax (ex.eager_softmax): both families run the batch-invariant
//  plan (the full row's max and sum before any P.V), normalising first:
//  p_j = round(exp(s_j - max) / round(sum, ex.stats), ex.probs) (an fp32
//  division), o = FMA chain over j of p_j*v_j, out = round(o) with no division
//  afterwards; att as in the bi plan (impl_attention.inc).
// Threads split (b, h) pairs; nothing in a query depends on the split.
void attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k, const float* v, int B,
                       int T, int H, int Hkv, int D) {
    if (B <= 0 || T <= 0 || H <= 0 || D <= 0) return;
    const IsaTable& I = isa_table();
    const int group = H / Hkv;
    const float scale = 1.0f / std::sqrt((float)D);
    const int ldk = round_up(T, 64);
    const bool bi = ex.family == Family::batch_invariant || ex.eager_softmax;
    const double work = 4.0 * B * H * (double)T * T * D / 2;
    count_flops(2.0 * B * H * (double)T * (T + 1) * D);  // QK and PV over the causal triangle
    const size_t slot = bi ? (size_t)ldk + 64 : 2 * (size_t)ldk + 2 * (ldk / 16) + 64;
    parallel_for(
        B * H,
        [&](int b0, int b1) {
            thread_local std::vector<float> kt_buf, s_buf;
            thread_local std::vector<AttnQuery> qs;
            float* Kt = scratch(kt_buf, (size_t)D * ldk);
            float* s = scratch(s_buf, 8 * slot);
            qs.resize(T);
            int cur_b = -1, cur_hk = -1;
            for (int pair = b0; pair < b1; ++pair) {
                const int b = pair / H, h = pair % H, hk = h / group;
                const float* kb = k + ((int64_t)b * T * Hkv + hk) * D;
                if (b != cur_b || hk != cur_hk) {
                    I.transpose(Kt, ldk, kb, (int64_t)Hkv * D, T, D);
                    cur_b = b;
                    cur_hk = hk;
                }
                for (int t = 0; t < T; ++t) {
                    AttnQuery& a = qs[t];
                    a.Kt = Kt;
                    a.ldk = ldk;
                    a.v = v + ((int64_t)b * T * Hkv + hk) * D;
                    a.vstride = (int64_t)Hkv * D;
                    a.D = D;
                    a.scale = scale;
                    a.dt = ex.dtype;
                    a.pdt = ex.probs;
                    a.sdt = ex.stats;
                    a.eager = ex.eager_softmax;
                    a.scratch = s + (t % 8) * slot;  // distinct within any group of queries run together
                    a.q = q + (((int64_t)b * T + t) * H + h) * D;
                    a.out = out + (((int64_t)b * T + t) * H + h) * D;
                    a.len = t + 1;
                    a.att = att ? att + (((int64_t)b * H + h) * T + t) * T : nullptr;
                }
                if (bi) I.attn_bi_queries(qs.data(), T);
                else I.attn_fast_prefill_queries(qs.data(), T);
                if (att)
                    for (int t = 0; t < T; ++t) std::fill(qs[t].att + t + 1, qs[t].att + T, 0.0f);
            }
        },
        work >= kParallelWork && num_threads() > 1);
}

// attention_decode: one query per active sequence s at position len[s]-1.
//  * batch_invariant: exactly attn_bi_queries above (keys transposed from the
//    cache first), so the bits equal the prefill output for that position and
//    depend on nothing but len[s].
//  * fast: split-KV (flash-decoding). S = fast_decode_splits(len, Bq*H,
//    threads): 1 when the batch alone fills the threads, else up to 16, at most
//    one split per 32 keys. Scores: dot over d in 16 lanes (d -> lane d%16) +
//    tree, x scale (not the prefill's chain over d: decode and prefill differ). Chunk c (contiguous, a multiple of 16
//    keys): m_c = max, p = exp(s - m_c), l_c = interleave2 plan, o_c = FMA chain over its keys. Combined over c
//    ascending: w_c = exp(m_c - M), L = fma(l_c, w_c, L), O = fma(w_c, o_c, O); out = round(O / L). Bits depend on len,
//    Bq and the thread count.
//  * eager softmax (either family): the batch-invariant plan with eager's
//    normalisation (attention_forward), so decode equals prefill.
// Threads split (sequence, kv head) pairs (bi) or (sequence, head) pairs (fast).
void attention_decode(const Exec& ex, float* out, const float* q, const float* kcache, const float* vcache,
                      const int32_t* cache_slot, const int32_t* len, int64_t cache_stride, int Bq, int H, int Hkv,
                      int D) {
    if (Bq <= 0 || H <= 0 || D <= 0) return;
    const IsaTable& I = isa_table();
    const int group = H / Hkv;
    const float scale = 1.0f / std::sqrt((float)D);
    double work = 0;
    for (int s = 0; s < Bq; ++s) work += 4.0 * H * (double)len[s] * D;
    count_flops(work);
    const bool threaded = work >= kParallelWork && num_threads() > 1;
    // What the query of (sequence s, head h) reads and writes in either family.
    const auto decode_query = [&](int s, int h) {
        AttnQuery a;
        a.q = q + ((int64_t)s * H + h) * D;
        a.out = out + ((int64_t)s * H + h) * D;
        a.v = vcache + cache_slot[s] * cache_stride + (int64_t)(h / group) * D;
        a.vstride = (int64_t)Hkv * D;
        a.len = len[s];
        a.D = D;
        a.scale = scale;
        a.dt = ex.dtype;
        a.pdt = ex.probs;
        a.sdt = ex.stats;
        a.eager = ex.eager_softmax;
        return a;
    };
    if (ex.family == Family::batch_invariant || ex.eager_softmax) {
        parallel_for(
            Bq * Hkv,
            [&](int b0, int b1) {
                thread_local std::vector<float> kt_buf, s_buf;
                thread_local std::vector<AttnQuery> qs;
                qs.resize(group);
                for (int pair = b0; pair < b1; ++pair) {
                    const int s = pair / Hkv, hk = pair % Hkv;
                    const int L = len[s];
                    if (L <= 0) continue;
                    const int ldk = round_up(L, 64);
                    const size_t slot = (size_t)ldk + 64;
                    float* Kt = scratch(kt_buf, (size_t)D * ldk);
                    float* sc = scratch(s_buf, 8 * slot);
                    const float* kb = kcache + cache_slot[s] * cache_stride + (int64_t)hk * D;
                    I.transpose(Kt, ldk, kb, (int64_t)Hkv * D, L, D);
                    for (int i = 0; i < group; ++i) {
                        AttnQuery& a = qs[i];
                        a = decode_query(s, hk * group + i);
                        a.Kt = Kt;
                        a.ldk = ldk;
                        a.scratch = sc + (i % 8) * slot;
                    }
                    I.attn_bi_queries(qs.data(), group);
                }
            },
            threaded);
        return;
    }
    const int threads = num_threads();
    parallel_for(
        Bq * H,
        [&](int b0, int b1) {
            thread_local std::vector<float> s_buf;
            for (int pair = b0; pair < b1; ++pair) {
                const int s = pair / H, h = pair % H, hk = h / group;
                const int L = len[s];
                if (L <= 0) continue;
                AttnQuery a = decode_query(s, h);
                a.k = kcache + cache_slot[s] * cache_stride + (int64_t)hk * D;
                a.kstride = (int64_t)Hkv * D;
                a.nsplit = fast_decode_splits(L, Bq * H, threads);
                const int dpad = round_up(D, 16);
                a.scratch = scratch(s_buf, (size_t)round_up(L, 16) + 128 + (size_t)(a.nsplit + 1) * dpad + 64);
                I.attn_fast_decode_query(a);
            }
        },
        threaded);
}

// attention_backward (both families; uses the saved probabilities att).
// Per (b, h), with P = att (zeros above the diagonal enforced), scale = 1/sqrtf(D):
//  dP[t,j] = FMA chain over d ascending of dout[t,d]*v[j,d] (from 0.0f), j <= t
//  dot_t   = bi16 row plan over j <= t of P[t,j]*dP[t,j]
//  dS[t,j] = P[t,j] * (dP[t,j] - dot_t) * scale
//  dv[j,:] : FMA chain over t ascending of P[t,j]*dout[t,:]   } each chain starts
//  dq[t,:] : FMA chain over j ascending of dS[t,j]*k[j,:]     } from the existing
//  dk[j,:] : FMA chain over t ascending of dS[t,j]*q[t,:]     } gradient value
// Grouped-query heads h of one kv head add to dk/dv in ascending h (with
// store = overwrite the chains start from 0.0f instead, dk/dv's at the group's
// first head). Threads
// split (b, kv head) pairs, which own disjoint dq/dk/dv slices, so the result
// does not depend on the thread count.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att, const float* q,
                        const float* k, const float* v, int B, int T, int H, int Hkv, int D, GradStore store) {
    if (B <= 0 || T <= 0 || H <= 0 || D <= 0) return;
    const IsaTable& I = isa_table();
    const int group = H / Hkv;
    const bool add = store == GradStore::add;
    const float scale = 1.0f / std::sqrt((float)D);
    const int ldT = round_up(T, 64);
    const double work = 8.0 * B * H * (double)T * T * D / 2;
    count_flops(4.0 * B * H * (double)T * (T + 1) * D);  // dP, dV, dQ, dK over the causal triangle
    parallel_for(
        B * Hkv,
        [&](int b0, int b1) {
            thread_local std::vector<float> p_buf, ds_buf, vt_buf;
            float* P = scratch(p_buf, (size_t)T * T);
            float* DS = scratch(ds_buf, (size_t)T * T);
            float* Vt = scratch(vt_buf, (size_t)D * ldT);
            for (int pair = b0; pair < b1; ++pair) {
                const int b = pair / Hkv, hk = pair % Hkv;
                const float* kb = k + ((int64_t)b * T * Hkv + hk) * D;
                const float* vb = v + ((int64_t)b * T * Hkv + hk) * D;
                float* dkb = dk + ((int64_t)b * T * Hkv + hk) * D;
                float* dvb = dv + ((int64_t)b * T * Hkv + hk) * D;
                const int64_t kvs = (int64_t)Hkv * D, qs = (int64_t)H * D;
                I.transpose(Vt, ldT, vb, kvs, T, D);
                for (int h = hk * group; h < (hk + 1) * group; ++h) {
                    const float* qb = q + ((int64_t)b * T * H + h) * D;
                    const float* gb = dout + ((int64_t)b * T * H + h) * D;
                    float* dqb = dq + ((int64_t)b * T * H + h) * D;
                    const float* ab = att + ((int64_t)b * H + h) * T * T;
                    for (int t = 0; t < T; ++t) {
                        std::copy(ab + (int64_t)t * T, ab + (int64_t)t * T + t + 1, P + (int64_t)t * T);
                        std::fill(P + (int64_t)t * T + t + 1, P + (int64_t)(t + 1) * T, 0.0f);
                    }
                    GemmCall g;  // dP = dout @ V^T (lower triangle)
                    g.A = gb;
                    g.ars = qs;
                    g.acs = 1;
                    g.B = Vt;
                    g.ldb = ldT;
                    g.C = DS;
                    g.ldc = T;
                    g.K = D;
                    g.skip_upper_tiles = true;
                    I.gemm(g, 0, T, 0, T);
                    I.attn_bwd_ds_rows(DS, P, DS, T, scale, 0, T);
                    const GemmInit kv_init = add || h > hk * group ? GemmInit::carry : GemmInit::zero;
                    const GemmInit q_init = add ? GemmInit::carry : GemmInit::zero;
                    if (dv)
                        accumulate(I, dvb, kvs, P, 1, T, gb, qs, T, GemmTri::upper, D, kv_init);  // dv += P^T @ dout
                    if (dq) accumulate(I, dqb, qs, DS, T, 1, kb, kvs, T, GemmTri::lower, D, q_init);   // dq += dS @ K
                    if (dk) accumulate(I, dkb, kvs, DS, 1, T, qb, qs, T, GemmTri::upper, D, kv_init);  // dk += dS^T @ Q
                }
            }
        },
        work >= kParallelWork && num_threads() > 1);
}

}  // namespace mlk
