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

float fp8_scale(float amax, Dtype fmt) {
    if (!(amax > 0.0f) || !std::isfinite(amax)) return 1.0f;
    int e = 0;
    const float m = std::frexp(amax / fp8_max(fmt), &e);  // amax / max = m * 2^e, m in [0.5, 1)
    return std::ldexp(1.0f, m == 0.5f ? e - 1 : e);
}

void quantize_rows(float* out, float* scale, const float* inp, int M, int K, Dtype fmt) {
    // Rows are independent, so the split over threads changes no bit.
    const cpu::IsaTable& T = cpu::isa_table();
    cpu::parallel_for(
        M, [&](int b, int e) { T.fp8_quantize_rows(out, scale, inp, fmt, b, e, K); }, (int64_t)M * K >= (1 << 15));
}

void quantize_cols(float* w, float* scale, int K, int N, Dtype fmt) {
    cpu::isa_table().fp8_quantize_cols(w, scale, K, N, fmt);
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
