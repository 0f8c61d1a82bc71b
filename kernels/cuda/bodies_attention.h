// The per-thread arithmetic of the CUDA backend's batch-invariant attention
// (prefill and decode: one plan) and of attention's backward (MLK_HD; see
// bodies.h for the rules and for how cuda_bodies_test runs it on the host).
//
// Batch-invariant attention, one query per 128-thread block (the CPU's
// per-query plan, kernels/cpu/attention.cpp):
//  P1  score s_j = (FMA chain over d ascending of q[d]*k_j[d] from +0) * scale
//      for the keys j < len (thread tid takes j = tid, tid+128, ...), kept in
//      shared memory; each thread's running max.
//  P2  max over the threads' maxima (exact) + 0; p_j = exp(s_j - max).
//  P3  the bi16 sum of p over j: lane l (threads 0..15) adds p_l, p_(l+16), ...
//  P4  div = round(tree16(lanes), stats); att_j = p_j * (1/div) (zeros up to
//      att_len); p_j rounded to probs (the P tile P.V reads; the normaliser
//      summed it unrounded).
//  P5  out[d] = round((FMA chain over j ascending of p_j*v_j[d] from +0) / div).
// Eager softmax (AttnCommon::eager, Exec::eager_softmax; PyTorch eager
// attention, softmax(s, fp32).to(probs) @ V): P4 saves att as above, then
// p_j = round(div_rn(p_j, div), probs) (the fp32 division by the stored
// normaliser, before the rounding); P5 out[d] = round(FMA chain over j of
// p_j*v_j[d] from +0) with no division. attention.cu runs eager queries of
// the fast family through these bodies too (the full row's max and sum
// first), as the CPU does.
// Decode maps block (s, h) to the same query struct with its KV-cache
// pointers, so decode equals prefill bit for bit at every position.
#pragma once

#include "kernels/cuda/bodies.h"

namespace mlk::cuda::body {

inline constexpr int kAttnThreads = 128;

// One query: its q/out rows, its keys and values (key j at k + j*kvstride),
// its length, and the att row it fills (att_len entries, zeros past len).
struct AttnQuery {
    const float* q;
    const float* k;
    const float* v;
    int64_t kvstride;
    int len;
    float* out;
    float* att;
    int att_len;
};
struct AttnCommon {
    int D;
    float scale;
    Dtype dt, pdt, sdt;
    bool eager = false;  // Exec::eager_softmax
};

// attention_forward: block = (b * H + h) * T + t.
struct AttnPrefillArgs {
    AttnCommon c;
    float* out;
    float* att;
    const float* q;
    const float* k;
    const float* v;
    int B, T, H, Hkv;
};
MLK_HD inline AttnQuery prefill_query(const AttnPrefillArgs& a, int64_t block) {
    const int D = a.c.D, T = a.T, H = a.H, Hkv = a.Hkv;
    const int t = (int)(block % T);
    const int64_t bh = block / T;
    const int h = (int)(bh % H), b = (int)(bh / H), hk = h / (H / Hkv);
    AttnQuery q;
    q.q = a.q + (((int64_t)b * T + t) * H + h) * D;
    q.out = a.out + (((int64_t)b * T + t) * H + h) * D;
    q.k = a.k + ((int64_t)b * T * Hkv + hk) * D;
    q.v = a.v + ((int64_t)b * T * Hkv + hk) * D;
    q.kvstride = (int64_t)Hkv * D;
    q.len = t + 1;
    q.att = a.att ? a.att + (bh * T + t) * T : nullptr;
    q.att_len = T;
    return q;
}

// attention_decode: block = s * H + h.
struct AttnDecodeArgs {
    AttnCommon c;
    float* out;
    const float* q;
    const float* kcache;
    const float* vcache;
    const int32_t* slot;
    const int32_t* len;
    int64_t cache_stride;
    int Bq, H, Hkv;
};
MLK_HD inline AttnQuery decode_query(const AttnDecodeArgs& a, int64_t block) {
    const int D = a.c.D, H = a.H, Hkv = a.Hkv;
    const int s = (int)(block / H), h = (int)(block % H), hk = h / (H / Hkv);
    AttnQuery q;
    q.q = a.q + ((int64_t)s * H + h) * D;
    q.out = a.out + ((int64_t)s * H + h) * D;
    q.k = a.kcache + a.slot[s] * a.cache_stride + (int64_t)hk * D;
    q.v = a.vcache + a.slot[s] * a.cache_stride + (int64_t)hk * D;
    q.kvstride = (int64_t)Hkv * D;
    q.len = a.len[s];
    q.att = nullptr;
    q.att_len = 0;
    return q;
}

// Shared memory of a block: p[cap] (cap >= the longest len), 16 lanes, one max per thread.
struct AttnSmem {
    float* p;
    float* lanes;
    float* red;
};
MLK_HD inline int attn_smem_floats(int cap) { return cap + kLanes + kAttnThreads; }
MLK_HD inline AttnSmem attn_smem(float* sm, int cap) { return {sm, sm + cap, sm + cap + kLanes}; }

// A query with len <= 0 does nothing (decode leaves its output as it was).
MLK_HD inline void attn_bi_p1(const AttnCommon& c, const AttnQuery& q, int tid, AttnSmem s) {
    if (q.len <= 0) return;
    float mx = neg_inf();
    for (int j = tid; j < q.len; j += kAttnThreads) {
        const float sc = chain(0.0f, q.q, 1, q.k + j * q.kvstride, 1, c.D) * c.scale;
        s.p[j] = sc;
        mx = max_gt(mx, sc);
    }
    s.red[tid] = mx;
}
MLK_HD inline void attn_bi_p2(const AttnCommon&, const AttnQuery& q, int tid, AttnSmem s) {
    if (q.len <= 0) return;
    float mx = neg_inf();
    for (int i = 0; i < kAttnThreads; ++i) mx = max_gt(mx, s.red[i]);
    mx = mx + 0.0f;
    for (int j = tid; j < q.len; j += kAttnThreads) s.p[j] = exp_s(s.p[j] - mx);
}
MLK_HD inline void attn_bi_p3(const AttnCommon&, const AttnQuery& q, int tid, AttnSmem s) {
    if (q.len <= 0 || tid >= kLanes) return;
    float acc = 0.0f;
    for (int j = tid; j < q.len; j += kLanes) acc = acc + s.p[j];
    s.lanes[tid] = acc;
}
MLK_HD inline void attn_bi_p4(const AttnCommon& c, const AttnQuery& q, int tid, AttnSmem s) {
    if (q.len <= 0) return;
    const float div = round_to(tree16(s.lanes), c.sdt);
    if (q.att) {
        const float rl = div_rn(1.0f, div);
        for (int j = tid; j < q.att_len; j += kAttnThreads) q.att[j] = j < q.len ? s.p[j] * rl : 0.0f;
    }
    if (c.eager)
        for (int j = tid; j < q.len; j += kAttnThreads) s.p[j] = round_to(div_rn(s.p[j], div), c.pdt);
    else if (c.pdt != Dtype::f32)
        for (int j = tid; j < q.len; j += kAttnThreads) s.p[j] = round_to(s.p[j], c.pdt);
}
MLK_HD inline void attn_bi_p5(const AttnCommon& c, const AttnQuery& q, int tid, AttnSmem s) {
    if (q.len <= 0) return;
    const float div = round_to(tree16(s.lanes), c.sdt);
    for (int d = tid; d < c.D; d += kAttnThreads) {
        const float o = chain(0.0f, s.p, 1, q.v + d, q.kvstride, q.len);
        q.out[d] = round_to(c.eager ? o : div_rn(o, div), c.dt);
    }
}

// ---- backward ------------------------------------------------------------------------
// The CPU's plan (kernels/cpu/attention.cpp), per (b, h) with P = att:
//  dP[t,j] = FMA chain over d of dout[t,d]*v[j,d] from +0 (j <= t)
//  dot_t   = bi16 over j <= t of fma(P[t,j], dP[t,j], lane)
//  dS[t,j] = (P[t,j] * (dP[t,j] - dot_t)) * scale for j <= t, 0 above
//  dq[t,:] += chain over j = 0..t of dS[t,j]*k[j,:] (every += is = when !add)
//  dk[j,:] += chain over the group's heads h ascending, then t = j..T-1, of dS_h[t,j]*q_h[t,:]
//  dv[j,:] += the same with P_h[t,j]*dout_h[t,:]
// Every chain starts from the gradient's value, or from +0 when !add. (The CPU's tiled chains also
// add the zero products of the masked triangle next to the diagonal; with
// finite inputs and gradients that start as anything but -0 that changes no
// bit, and the CPU's own ISA paths, whose tiles differ, rely on the same.)
struct AttnBwdArgs {
    float* dq;
    float* dk;
    float* dv;
    float* ds;  // scratch [B, H, T, T]: dP, then dS
    const float* dout;
    const float* att;
    const float* q;
    const float* k;
    const float* v;
    int B, T, H, Hkv, D;
    float scale;
    bool add;  // dq/dk/dv += ...; false: = ...
};
// dS rows: block = (b * H + h) * T + t, kAttnThreads threads; sm: 16 lanes.
MLK_HD inline void attn_bwd_ds_p1(const AttnBwdArgs& a, int64_t block, int tid) {
    const int T = a.T, H = a.H, D = a.D, t = (int)(block % T);
    const int64_t bh = block / T;
    const int h = (int)(bh % H), b = (int)(bh / H), hk = h / (H / a.Hkv);
    const float* g = a.dout + (((int64_t)b * T + t) * H + h) * D;
    const float* vb = a.v + ((int64_t)b * T * a.Hkv + hk) * D;
    float* dp = a.ds + block * T;
    for (int j = tid; j <= t; j += kAttnThreads) dp[j] = chain(0.0f, g, 1, vb + (int64_t)j * a.Hkv * D, 1, D);
}
MLK_HD inline void attn_bwd_ds_p2(const AttnBwdArgs& a, int64_t block, int tid, float* lanes) {
    if (tid >= kLanes) return;
    const int t = (int)(block % a.T);
    const float* p = a.att + block * a.T;
    const float* dp = a.ds + block * a.T;
    float acc = 0.0f;
    for (int j = tid; j <= t; j += kLanes) acc = fma_rn(p[j], dp[j], acc);
    lanes[tid] = acc;
}
MLK_HD inline void attn_bwd_ds_p3(const AttnBwdArgs& a, int64_t block, int tid, const float* lanes) {
    const int t = (int)(block % a.T);
    const float dot = tree16(lanes);
    const float* p = a.att + block * a.T;
    float* ds = a.ds + block * a.T;
    for (int j = tid; j < a.T; j += kAttnThreads) ds[j] = j <= t ? (p[j] * (ds[j] - dot)) * a.scale : 0.0f;
}
// dq, one element per index i over B*T*H*D (layout of q).
MLK_HD inline void attn_bwd_dq_at(const AttnBwdArgs& a, int64_t i) {
    const int T = a.T, H = a.H, D = a.D;
    const int d = (int)(i % D);
    const int64_t r = i / D;
    const int h = (int)(r % H), t = (int)((r / H) % T), b = (int)(r / ((int64_t)H * T)), hk = h / (H / a.Hkv);
    const float* ds = a.ds + (((int64_t)b * H + h) * T + t) * T;
    const float* kb = a.k + ((int64_t)b * T * a.Hkv + hk) * D + d;
    a.dq[i] = chain(a.add ? a.dq[i] : 0.0f, ds, 1, kb, (int64_t)a.Hkv * D, t + 1);
}
// dk and dv, one element per index i over B*T*Hkv*D (layout of k).
MLK_HD inline void attn_bwd_dkdv_at(const AttnBwdArgs& a, int64_t i) {
    const int T = a.T, H = a.H, Hkv = a.Hkv, D = a.D, group = H / Hkv;
    const int d = (int)(i % D);
    const int64_t r = i / D;
    const int hk = (int)(r % Hkv), j = (int)((r / Hkv) % T), b = (int)(r / ((int64_t)Hkv * T));
    const int64_t qs = (int64_t)H * D;
    if (a.dk) {
        float acc = a.add ? a.dk[i] : 0.0f;
        for (int h = hk * group; h < (hk + 1) * group; ++h) {
            const float* ds = a.ds + (((int64_t)b * H + h) * T + j) * T + j;  // dS_h[t=j, j], next t at +T
            const float* qh = a.q + (((int64_t)b * T + j) * H + h) * D + d;
            acc = chain(acc, ds, T, qh, qs, T - j);
        }
        a.dk[i] = acc;
    }
    if (a.dv) {
        float acc = a.add ? a.dv[i] : 0.0f;
        for (int h = hk * group; h < (hk + 1) * group; ++h) {
            const float* p = a.att + (((int64_t)b * H + h) * T + j) * T + j;
            const float* g = a.dout + (((int64_t)b * T + j) * H + h) * D + d;
            acc = chain(acc, p, T, g, qs, T - j);
        }
        a.dv[i] = acc;
    }
}

}  // namespace mlk::cuda::body
