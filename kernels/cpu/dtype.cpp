// Storage precisions: fp32 <-> fp8 conversion (bf16 and fp16 are inline in
// dtype.h, shared with the CUDA backend). All conversions round to nearest,
// ties to even, exactly as the hardware converters do.
#include "kernels/dtype.h"
#include "kernels/kernels.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/thread_pool.h"

namespace mlk {

namespace {
struct Fp8Format {
    int exp_bits, man_bits, bias;
    uint8_t max_finite;  // bits of the largest finite magnitude
};
Fp8Format fp8_format(Dtype fmt) {
    return fmt == Dtype::fp8_e4m3 ? Fp8Format{4, 3, 7, 0x7e} : Fp8Format{5, 2, 15, 0x7b};
}
}  // namespace

// The magnitude is rounded to the spacing of its binade in the format (the
// subnormals share the spacing of the smallest normal binade), ties to even,
// in exact integer arithmetic on the fp32 significand; a carry moves it into
// the next binade; past the largest finite value it saturates.
uint8_t f32_to_fp8_bits(float x, Dtype fmt) {
    const Fp8Format f = fp8_format(fmt);
    const uint32_t u = float_bits(x);
    const uint8_t sign = static_cast<uint8_t>((u >> 24) & 0x80u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return fmt == Dtype::fp8_e4m3 ? static_cast<uint8_t>(sign | 0x7f) : static_cast<uint8_t>(sign | 0x7e);
    if (a == 0x7f800000u)
        return fmt == Dtype::fp8_e4m3 ? static_cast<uint8_t>(sign | f.max_finite) : static_cast<uint8_t>(sign | 0x7c);
    if (a == 0) return sign;
    // |x| = sig * 2^(e - 150), sig a 24-bit integer (subnormal fp32: e = 1, no hidden bit)
    const int e = static_cast<int>(a >> 23);
    const uint64_t sig = (a & 0x7fffffu) | (e ? 0x800000u : 0u);
    const int e2 = (e ? e : 1) - 150;  // |x| = sig * 2^e2
    // Binade of |x| in the format: exponent E with 2^E <= |x| < 2^(E+1), at least the
    // smallest normal exponent (below it the spacing stays that of the subnormals).
    int E = 31 - __builtin_clz(static_cast<uint32_t>(sig)) + e2;
    const int emin = 1 - f.bias;
    if (E < emin) E = emin;
    const int step = E - f.man_bits;  // log2 of the spacing in this binade
    // q = |x| / 2^step rounded to nearest even, computed on the integer sig.
    const int shift = step - e2;  // sig >> shift
    uint64_t q;
    if (shift <= 0) {
        q = sig << (-shift);
    } else if (shift >= 40) {
        q = 0;  // far below half the smallest subnormal
    } else {
        q = sig >> shift;
        const uint64_t rem = sig & ((uint64_t(1) << shift) - 1), half = uint64_t(1) << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
    }
    // Back to fields: value = q * 2^step with q < 2^(man_bits+2) after a carry.
    int biased;
    uint32_t mant;
    if (E == emin && q < (uint64_t(1) << f.man_bits)) {
        biased = 0;  // subnormal (or zero)
        mant = static_cast<uint32_t>(q);
    } else {
        int EE = E;
        if (q >= (uint64_t(2) << f.man_bits)) {  // rounding carried into the next binade
            q >>= 1;
            ++EE;
        }
        biased = EE + f.bias;
        mant = static_cast<uint32_t>(q) & ((1u << f.man_bits) - 1u);
    }
    const uint32_t bits = (static_cast<uint32_t>(biased) << f.man_bits) | mant;
    if (bits > f.max_finite || biased >= (1 << f.exp_bits)) return static_cast<uint8_t>(sign | f.max_finite);
    return static_cast<uint8_t>(sign | bits);
}

float fp8_bits_to_f32(uint8_t b, Dtype fmt) {
    const Fp8Format f = fp8_format(fmt);
    const bool neg = b & 0x80u;
    const int biased = (b >> f.man_bits) & ((1 << f.exp_bits) - 1);
    const int mant = b & ((1 << f.man_bits) - 1);
    float v;
    if (fmt == Dtype::fp8_e4m3 && (b & 0x7f) == 0x7f) {
        v = std::numeric_limits<float>::quiet_NaN();
    } else if (fmt == Dtype::fp8_e5m2 && biased == 31) {
        v = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
    } else if (biased == 0) {
        v = std::ldexp(static_cast<float>(mant), 1 - f.bias - f.man_bits);
    } else {
        v = std::ldexp(static_cast<float>((1 << f.man_bits) | mant), biased - f.bias - f.man_bits);
    }
    return neg ? -v : v;
}

float fp8_scale(float amax, Dtype fmt, Fp8Scale kind, float floor) {
    if (!(amax >= 0.0f) || !std::isfinite(amax)) return 1.0f;
    if (kind == Fp8Scale::fp32) {
        const float s = std::max(amax / fp8_max(fmt), floor);
        return s > 0.0f ? s : 1.0f;
    }
    if (amax == 0.0f) return 1.0f;
    int e = 0;
    const float m = std::frexp(amax / fp8_max(fmt), &e);  // amax / max = m * 2^e, m in [0.5, 1)
    return std::ldexp(1.0f, m == 0.5f ? e - 1 : e);
}

float fp8_activation_floor(Dtype fmt, Fp8Scale kind, Fp8Granularity g) {
    if (kind != Fp8Scale::fp32) return 0.0f;
    switch (g) {
        case Fp8Granularity::channel: return 1.0f / (fp8_max(fmt) * 512.0f);
        case Fp8Granularity::block: return 1e-10f / fp8_max(fmt);
        case Fp8Granularity::tensor: return 0.0f;
    }
    return 0.0f;
}

namespace {
int blocks_of(int n) { return (n + kFp8Block - 1) / kFp8Block; }
}  // namespace

int64_t fp8_activation_scale_count(int M, int K, Fp8Granularity g) {
    if (M <= 0 || K <= 0) return 0;
    switch (g) {
        case Fp8Granularity::tensor: return 1;
        case Fp8Granularity::channel: return M;
        case Fp8Granularity::block: return (int64_t)M * blocks_of(K);
    }
    return 0;
}

int64_t fp8_weight_scale_count(int K, int N, Fp8Granularity g) {
    if (K <= 0 || N <= 0) return 0;
    switch (g) {
        case Fp8Granularity::tensor: return 1;
        case Fp8Granularity::channel: return N;
        case Fp8Granularity::block: return (int64_t)blocks_of(K) * blocks_of(N);
    }
    return 0;
}

// Rows (and a tensor's row maxima) are independent, and a maximum is exact in
// any order, so the split over threads changes no bit.
void quantize_activations(float* out, float* scales, const float* inp, int M, int K, Dtype fmt, Fp8Scale kind,
                          Fp8Granularity g) {
    if (M <= 0 || K <= 0) return;
    const cpu::IsaTable& T = cpu::isa_table();
    const float floor = fp8_activation_floor(fmt, kind, g);
    const bool threaded = (int64_t)M * K >= (1 << 15);
    float tensor_s = 1.0f;
    if (g == Fp8Granularity::tensor) {
        std::vector<float> row_amax(M);
        cpu::parallel_for(
            M,
            [&](int b, int e) {
                for (int m = b; m < e; ++m) row_amax[m] = T.fp8_amax(inp + (int64_t)m * K, K);
            },
            threaded);
        float amax = 0.0f;
        for (float a : row_amax) amax = a > amax ? a : amax;
        tensor_s = fp8_scale(amax, fmt, kind, floor);
        if (scales) scales[0] = tensor_s;
    }
    const int nb = g == Fp8Granularity::block ? blocks_of(K) : 1;
    const int len = g == Fp8Granularity::block ? kFp8Block : K;
    cpu::parallel_for(
        M,
        [&](int b, int e) {
            for (int m = b; m < e; ++m)
                for (int j = 0; j < nb; ++j) {
                    const int64_t at = (int64_t)m * K + (int64_t)j * len;
                    const int n = std::min(len, K - j * len);
                    float s = tensor_s;
                    if (g != Fp8Granularity::tensor) {
                        s = fp8_scale(T.fp8_amax(inp + at, n), fmt, kind, floor);
                        if (scales) scales[(int64_t)m * nb + j] = s;
                    }
                    T.fp8_scale_round(out + at, inp + at, s, fmt, n);
                }
        },
        threaded);
}

void quantize_weight(float* w, float* scales, int K, int N, Dtype fmt, Fp8Scale kind, Fp8Granularity g) {
    if (K <= 0 || N <= 0) return;
    const cpu::IsaTable& T = cpu::isa_table();
    if (g == Fp8Granularity::tensor) {
        const int64_t n = (int64_t)K * N;
        const float s = fp8_scale(T.fp8_amax(w, n), fmt, kind);
        if (scales) scales[0] = s;
        T.fp8_scale_round(w, w, s, fmt, n);
        return;
    }
    // Columns' maxima over a band of rows (all K for channel, 128 for block),
    // then one scale per column or per 128 columns, then the band in place.
    const int band = g == Fp8Granularity::block ? kFp8Block : K;
    const int nbn = blocks_of(N);
    std::vector<float> amax(N), s(N);
    for (int k0 = 0; k0 < K; k0 += band) {
        const int rows = std::min(band, K - k0);
        float* const wb = w + (int64_t)k0 * N;
        std::fill(amax.begin(), amax.end(), 0.0f);
        T.fp8_col_amax(amax.data(), wb, N, rows, 0, N);
        if (g == Fp8Granularity::channel) {
            for (int n = 0; n < N; ++n) {
                s[n] = fp8_scale(amax[n], fmt, kind);
                if (scales) scales[n] = s[n];
            }
        } else {
            for (int j = 0; j < nbn; ++j) {
                const int c0 = j * kFp8Block, c1 = std::min(N, c0 + kFp8Block);
                float a = 0.0f;
                for (int c = c0; c < c1; ++c) a = amax[c] > a ? amax[c] : a;
                const float sj = fp8_scale(a, fmt, kind);
                if (scales) scales[(int64_t)(k0 / kFp8Block) * nbn + j] = sj;
                std::fill(s.begin() + c0, s.begin() + c1, sj);
            }
        }
        T.fp8_scale_round_cols(wb, s.data(), N, rows, 0, N, fmt);
    }
}

namespace {
// Every code's value, by format: a lookup per value when reading a cache.
const float* fp8_values(Dtype fmt) {
    static const auto table = [] {
        std::vector<float> t(512);
        for (int c = 0; c < 256; ++c) {
            t[c] = fp8_bits_to_f32((uint8_t)c, Dtype::fp8_e4m3);
            t[256 + c] = fp8_bits_to_f32((uint8_t)c, Dtype::fp8_e5m2);
        }
        return t;
    }();
    return table.data() + (fmt == Dtype::fp8_e4m3 ? 0 : 256);
}
}  // namespace

// The scale as quantize_activations' per row; x / s one correctly rounded
// division (the kernels' multiply by an exact inverse is the same quotient),
// encoded by f32_to_fp8_bits, whose value is fp8_round's (dtype.h), so code *
// s has quantize_activations' bits.
void quantize_rows_fp8(uint8_t* codes, float* scales, float* out, const float* inp, int M, int K, Dtype fmt,
                       Fp8Scale kind) {
    const cpu::IsaTable& T = cpu::isa_table();
    const float floor = fp8_activation_floor(fmt, kind, Fp8Granularity::channel);
    const float* values = fp8_values(fmt);
    for (int m = 0; m < M; ++m) {
        const float* x = inp + (int64_t)m * K;
        uint8_t* c = codes + (int64_t)m * K;
        const float s = fp8_scale(T.fp8_amax(x, K), fmt, kind, floor);
        scales[m] = s;
        for (int k = 0; k < K; ++k) c[k] = f32_to_fp8_bits(x[k] / s, fmt);
        if (out)
            for (int k = 0; k < K; ++k) out[(int64_t)m * K + k] = values[c[k]] * s;
    }
}

void dequantize_fp8(float* out, const uint8_t* codes, float scale, int K, Dtype fmt) {
    const float* values = fp8_values(fmt);
    for (int k = 0; k < K; ++k) out[k] = values[codes[k]] * scale;
}

// Rows, and a row's positions, are independent: any thread split gives the same bits.
void store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd, Dtype fmt,
                  Fp8Scale kind) {
    const int64_t kv = (int64_t)Hkv * hd;
    cpu::parallel_for(
        M,
        [&](int b, int e) {
            for (int r = b; r < e; ++r)
                quantize_rows_fp8(codes + off[r], scales + off[r] / hd, x + r * kv, x + r * kv, Hkv, hd, fmt, kind);
        },
        (int64_t)M * kv >= (1 << 15));
}

void load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot, const int32_t* len,
                 int64_t cache_stride, int span, int Bq, int Hkv, int hd, Dtype fmt) {
    const int64_t kv = (int64_t)Hkv * hd;
    const int64_t rows = (int64_t)Bq * span;
    constexpr int kRowsPerTask = 64;
    cpu::parallel_for(
        (int)((rows + kRowsPerTask - 1) / kRowsPerTask),
        [&](int b, int e) {
            for (int64_t i = (int64_t)b * kRowsPerTask; i < std::min(rows, (int64_t)e * kRowsPerTask); ++i) {
                const int64_t q = i / span, t = i % span;
                if (t >= len[q]) continue;
                const int64_t at = slot[q] * cache_stride + t * kv;
                for (int h = 0; h < Hkv; ++h)
                    dequantize_fp8(out + i * kv + h * hd, codes + at + h * hd, scales[at / hd + h], hd, fmt);
            }
        },
        rows * kv >= (1 << 16));
}

void round_buffer(float* x, size_t n, Dtype d) {
    if (d != Dtype::f32) copy_rounded(x, x, n, d);
}

void copy_rounded(float* dst, const float* src, size_t n, Dtype d) {
    if (n == 0) return;
    const cpu::IsaTable& T = cpu::isa_table();
    constexpr int64_t kChunk = 1 << 16;
    const int64_t nn = static_cast<int64_t>(n);
    const int chunks = static_cast<int>((nn + kChunk - 1) / kChunk);
    cpu::parallel_for(
        chunks,
        [&](int b, int e) {
            const int64_t i0 = b * kChunk, i1 = std::min<int64_t>(nn, e * kChunk);
            T.copy_round(dst + i0, src + i0, d, i1 - i0);
        },
        nn >= 4 * kChunk);
}

}  // namespace mlk
