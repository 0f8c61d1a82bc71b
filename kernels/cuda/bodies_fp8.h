// The CUDA backend's fp8 bodies (kernels/cuda/bodies.h's rules): the
// quantisers of matmul inputs and weights at every scale kind and granularity
// (kernels.h Fp8Scale, Fp8Granularity), and the KV cache's one-byte codes.
// cuda_bodies_test runs them host-side against the CPU kernels' bits.
#pragma once

#include "kernels/cuda/bodies.h"
#include "kernels/kernels.h"

namespace mlk::cuda::body {

// ---- fp8 quantisation ------------------------------------------------------------
// fp8_scale of kernels.h (frexpf / ldexpf are exact on host and device).
MLK_HD inline float fp8_scale_of(float amax, Dtype fmt, Fp8Scale kind, float floor) {
    if (!(amax >= 0.0f) || !(amax <= bits_float(0x7f7fffffu))) return 1.0f;
    if (kind == Fp8Scale::fp32) {
        const float q = div_rn(amax, fp8_max(fmt));
        const float s = q < floor ? floor : q;
        return s > 0.0f ? s : 1.0f;
    }
    if (amax == 0.0f) return 1.0f;
    int e = 0;
    const float m = frexpf(div_rn(amax, fp8_max(fmt)), &e);
    return ldexpf(1.0f, m == 0.5f ? e - 1 : e);
}
// fp8_activation_floor of kernels.h (vLLM's minimum scales: see there).
MLK_HD inline float fp8_floor_of(Dtype fmt, Fp8Scale kind, Fp8Granularity g) {
    if (kind != Fp8Scale::fp32) return 0.0f;
    if (g == Fp8Granularity::channel) return div_rn(1.0f, fp8_max(fmt) * 512.0f);
    if (g == Fp8Granularity::block) return div_rn(1e-10f, fp8_max(fmt));
    return 0.0f;
}
// x / s: the multiply by 1 / s where that inverse is exact and normal (a
// power of two s in [2^-126, 2^126]: the same correctly rounded quotient),
// else the division; as the CPU.
MLK_HD inline float scale_divide(float x, float s) {
    const bool exact = (float_bits(s) & 0x007fffffu) == 0 && s >= 0x1p-126f && s <= 0x1p126f;
    return exact ? x * div_rn(1.0f, s) : div_rn(x, s);
}
// One value as stored: round_fp8(x / s) * s.
MLK_HD inline float fp8_quant(float x, float s, Dtype fmt) { return fp8_round(scale_divide(x, s), fmt) * s; }
MLK_HD inline float magnitude(float x) { return x < 0 ? -x : x; }

// Block kernels of 128 threads (a max is exact: any order; NaN never wins).
inline constexpr int kQuantThreads = 128;
// Phase 1 of a block: this thread's part of the largest |x[i]|, i < n -> sm[tid].
MLK_HD inline void amax_p1(const float* x, int64_t n, int tid, float* sm) {
    float amax = 0.0f;
    for (int64_t i = tid; i < n; i += kQuantThreads) {
        const float a = magnitude(x[i]);
        amax = a > amax ? a : amax;
    }
    sm[tid] = amax;
}
// Phase 2: the block's largest |x| from sm.
MLK_HD inline float amax_of(const float* sm) {
    float amax = 0.0f;
    for (int i = 0; i < kQuantThreads; ++i) amax = sm[i] > amax ? sm[i] : amax;
    return amax;
}
// Activations [M,K] in segments of len values along K (channel: len = K, a
// row; block: len = kFp8Block, the last one of a row shorter), a block per
// segment seg = m * ceil(K/len) + j. The segment's values and its length:
MLK_HD inline int64_t act_seg(int K, int len, int64_t seg, int* n) {
    const int nseg = (K + len - 1) / len;
    const int64_t m = seg / nseg;
    const int j = (int)(seg % nseg);
    *n = K - j * len < len ? K - j * len : len;
    return m * K + (int64_t)j * len;
}
MLK_HD inline void quantize_seg_p1(const float* inp, int K, int len, int64_t seg, int tid, float* sm) {
    int n = 0;
    const int64_t at = act_seg(K, len, seg, &n);
    amax_p1(inp + at, n, tid, sm);
}
// Phase 2: the segment's scale (into scales[seg] when non-null) and its
// quantised values (out may be inp).
MLK_HD inline void quantize_seg_p2(float* out, float* scales, const float* inp, int K, int len, Dtype fmt,
                                   Fp8Scale kind, float floor, int64_t seg, int tid, const float* sm) {
    const float s = fp8_scale_of(amax_of(sm), fmt, kind, floor);
    if (scales && tid == 0) scales[seg] = s;
    int n = 0;
    const int64_t at = act_seg(K, len, seg, &n);
    for (int k = tid; k < n; k += kQuantThreads) out[at + k] = fp8_quant(inp[at + k], s, fmt);
}
// A tensor of rows [R,C] (activations [M,K], or a weight [K,N]): a block per
// row leaves its largest |x| in partial[r] (phase 1 is quantize_seg_p1 with
// len = C), then one block reduces the partials to the scale s[0] (and
// scales[0] when non-null), then every value is quantised with it.
MLK_HD inline void row_amax_p2(float* partial, int64_t r, int tid, const float* sm) {
    if (tid == 0) partial[r] = amax_of(sm);
}
MLK_HD inline void tensor_scale_p2(float* s, float* scales, Dtype fmt, Fp8Scale kind, float floor, int tid,
                                   const float* sm) {
    if (tid != 0) return;
    s[0] = fp8_scale_of(amax_of(sm), fmt, kind, floor);
    if (scales) scales[0] = s[0];
}
MLK_HD inline void quantize_tensor_at(float* out, const float* inp, const float* s, Dtype fmt, int64_t i) {
    out[i] = fp8_quant(inp[i], s[0], fmt);
}
// Weight w[K,N] per output column n, in place (a thread per column).
MLK_HD inline void quantize_col(float* w, float* scales, int K, int N, Dtype fmt, Fp8Scale kind, int n) {
    float amax = 0.0f;
    for (int k = 0; k < K; ++k) {
        const float a = magnitude(w[(int64_t)k * N + n]);
        amax = a > amax ? a : amax;
    }
    const float s = fp8_scale_of(amax, fmt, kind, 0.0f);
    if (scales) scales[n] = s;
    for (int k = 0; k < K; ++k) {
        float& v = w[(int64_t)k * N + n];
        v = fp8_quant(v, s, fmt);
    }
}
// Weight w[K,N] per 128x128 block, in place: a block of kQuantThreads
// (= kFp8Block) threads per weight block b = kb * ceil(N/128) + nb, thread t
// on column nb * 128 + t (none past N) over the block's rows.
static_assert(kQuantThreads == kFp8Block, "a thread per column of a weight block");
MLK_HD inline void quantize_wblock_p1(const float* w, int K, int N, int64_t b, int tid, float* sm) {
    const int nbn = (N + kFp8Block - 1) / kFp8Block;
    const int k0 = (int)(b / nbn) * kFp8Block, n = (int)(b % nbn) * kFp8Block + tid;
    const int k1 = K - k0 < kFp8Block ? K : k0 + kFp8Block;
    float amax = 0.0f;
    if (n < N)
        for (int k = k0; k < k1; ++k) {
            const float a = magnitude(w[(int64_t)k * N + n]);
            amax = a > amax ? a : amax;
        }
    sm[tid] = amax;
}
MLK_HD inline void quantize_wblock_p2(float* w, float* scales, int K, int N, Dtype fmt, Fp8Scale kind, int64_t b,
                                      int tid, const float* sm) {
    const int nbn = (N + kFp8Block - 1) / kFp8Block;
    const int k0 = (int)(b / nbn) * kFp8Block, n = (int)(b % nbn) * kFp8Block + tid;
    const int k1 = K - k0 < kFp8Block ? K : k0 + kFp8Block;
    const float s = fp8_scale_of(amax_of(sm), fmt, kind, 0.0f);
    if (scales && tid == 0) scales[b] = s;
    if (n < N)
        for (int k = k0; k < k1; ++k) {
            float& v = w[(int64_t)k * N + n];
            v = fp8_quant(v, s, fmt);
        }
}

// ---- fp8 KV cache as bytes --------------------------------------------------------
// The bits of an fp8 value v (one fp8_round gave: on the grid, within range,
// e5m2's infinities, NaN) as f32_to_fp8_bits writes them: sign, exponent,
// mantissa, read off v's own fields.
MLK_HD inline uint8_t fp8_code_of(float v, Dtype fmt) {
    const bool e4 = fmt == Dtype::fp8_e4m3;
    const uint32_t u = float_bits(v), a = u & 0x7fffffffu;
    const uint32_t sign = (u >> 24) & 0x80u;
    const int man = e4 ? 3 : 2, bias = e4 ? 7 : 15;
    if (a > 0x7f800000u) return (uint8_t)(sign | (e4 ? 0x7fu : 0x7eu));
    if (a == 0x7f800000u) return (uint8_t)(sign | 0x7cu);  // e5m2 only: e4m3 saturates
    const int e = (int)(a >> 23) - 127;                    // v = 1.f * 2^e (v is a normal float)
    if (a == 0) return (uint8_t)sign;
    if (e >= 1 - bias) return (uint8_t)(sign | (uint32_t)(e + bias) << man | ((a >> (23 - man)) & ((1u << man) - 1u)));
    // subnormal: |v| = m * 2^(1 - bias - man), m < 2^man
    const float m = bits_float(a) * (e4 ? 0x1p9f : 0x1p16f);
    return (uint8_t)(sign | (uint32_t)m);
}
// An fp8 code's value (fp8_bits_to_f32).
MLK_HD inline float fp8_value_of(uint8_t c, Dtype fmt) {
    const bool e4 = fmt == Dtype::fp8_e4m3;
    const int man = e4 ? 3 : 2, bias = e4 ? 7 : 15, emax = e4 ? 15 : 31;
    const uint32_t sign = (uint32_t)(c & 0x80u) << 24;
    const int e = (c & 0x7f) >> man, m = c & ((1 << man) - 1);
    float v;
    if (e4 && (c & 0x7f) == 0x7f) v = quiet_nan();
    else if (!e4 && e == emax) v = m ? quiet_nan() : bits_float(0x7f800000u);
    else if (e == 0) v = (float)m * (e4 ? 0x1p-9f : 0x1p-16f);
    else v = bits_float((uint32_t)(e - bias + 127) << 23 | (uint32_t)m << (23 - man));
    return bits_float(float_bits(v) | sign);
}
// store_kv_fp8 of kernels.h: a 128-thread block per (row, KV head) pair
// seg = r * Hkv + h of x[M, Hkv*hd]; phase 1 is amax_p1 over x + seg * hd.
MLK_HD inline void store_kv_p2(uint8_t* codes, float* scales, const int64_t* off, float* x, int Hkv, int hd, Dtype fmt,
                               Fp8Scale kind, int64_t seg, int tid, const float* sm) {
    const float s = fp8_scale_of(amax_of(sm), fmt, kind, fp8_floor_of(fmt, kind, Fp8Granularity::channel));
    const int64_t r = seg / Hkv, h = seg % Hkv, at = off[r] + h * hd;
    if (tid == 0) scales[at / hd] = s;
    float* v = x + seg * hd;
    for (int k = tid; k < hd; k += kQuantThreads) {
        const float y = fp8_round(scale_divide(v[k], s), fmt);
        codes[at + k] = fp8_code_of(y, fmt);
        v[k] = y * s;
    }
}
// load_kv_fp8 of kernels.h, a thread per value i of out[Bq, span, Hkv*hd].
MLK_HD inline void load_kv_at(float* out, const uint8_t* codes, const float* scales, const int32_t* slot,
                              const int32_t* len, int64_t cache_stride, int span, int kv, int hd, Dtype fmt,
                              int64_t i) {
    const int64_t row = i / kv, b = row / span, t = row % span;
    if (t >= len[b]) return;
    const int64_t at = slot[b] * cache_stride + t * kv + i % kv;
    out[i] = fp8_value_of(codes[at], fmt) * scales[at / hd];
}

}  // namespace mlk::cuda::body
