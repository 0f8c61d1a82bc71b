// Storage precisions and rounding. Every tensor lives in a float buffer; a
// bf16 or fp16 tensor holds only values representable in that format, rounded
// with round-to-nearest-even, exactly as a GPU stores them. Accumulation is
// always fp32. This makes precision mismatch real rounding, not noise.
//
// The rounding functions are MLK_HD: __host__ __device__ under nvcc, plain
// inline functions for the host compiler, so the CUDA backend rounds with
// this very code (kernels/cuda) and its bits equal the CPU's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__CUDACC__)
#define MLK_HD __host__ __device__
#else
#define MLK_HD
#endif

namespace mlk {

// fp8_e4m3 is OCP E4M3FN (bias 7, largest finite 448, no infinities, one NaN
// code per sign); fp8_e5m2 is OCP E5M2 (bias 15, largest finite 57344, IEEE
// infinities and NaNs). An fp8 value is only ever stored with a scale (see
// quantize_activations in kernels.h); round_to on its own rounds the unscaled value.
enum class Dtype { f32, bf16, f16, fp8_e4m3, fp8_e5m2 };
// Names by value: the config and CLI spelling of each precision.
inline constexpr std::string_view kDtypeNames[] = {"fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"};

inline std::string_view dtype_name(Dtype d) { return kDtypeNames[static_cast<int>(d)]; }
MLK_HD inline bool is_fp8(Dtype d) { return d == Dtype::fp8_e4m3 || d == Dtype::fp8_e5m2; }
// Largest finite value of an fp8 format (448 or 57344); 0 for the others.
MLK_HD inline float fp8_max(Dtype d) { return d == Dtype::fp8_e4m3 ? 448.0f : d == Dtype::fp8_e5m2 ? 57344.0f : 0.0f; }

MLK_HD inline uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(x);
#else
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
#endif
}
MLK_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
#endif
}

// fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
MLK_HD inline uint16_t f32_to_bf16_bits(float x) {
    uint32_t u = float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return static_cast<uint16_t>(u >> 16);
}
MLK_HD inline float bf16_bits_to_f32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// fp32 -> IEEE binary16 bits, round to nearest even (as F16C's vcvtps2ph and
// CUDA's __float2half_rn do). NaN -> quiet NaN keeping the top payload bits
// (as vcvtps2ph does), overflow (|x| >= 65520) -> inf, |x| < 2^-14 ->
// subnormal (gradual underflow, ties to even), tiny -> +-0.
MLK_HD inline uint16_t f32_to_f16_bits(float x) {
    const uint32_t u = float_bits(x);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (incl. inf)
    if (a >= 0x38800000u) {                                              // normal half
        uint32_t r = a + 0x0fffu + ((a >> 13) & 1u);
        r -= (127u - 15u) << 23;
        return static_cast<uint16_t>(sign | (r >> 13));
    }
    const uint32_t e = a >> 23;
    if (e < 102) return static_cast<uint16_t>(sign);    // < 2^-25: rounds to 0
    const uint32_t mant = (a & 0x7fffffu) | 0x800000u;  // value = mant * 2^(e-150)
    const uint32_t shift = 126u - e;                    // in units of 2^-24: mant >> shift
    uint32_t res = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u);
    const uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (res & 1u))) ++res;
    return static_cast<uint16_t>(sign | res);
}

MLK_HD inline float f16_bits_to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    const uint32_t m = h & 0x3ffu;
    if (e == 0) {
        // subnormal or zero: m * 2^-24, exact in fp32
        float v = static_cast<float>(m) * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

// fp32 -> fp8 bits (sign, exponent, mantissa), round to nearest even,
// saturating: a finite value beyond the largest finite one (and, for e4m3,
// an infinity) becomes that largest value with its sign, as the scaled
// quantisers of serving engines clamp before converting. NaN stays NaN
// (e5m2 keeps +-inf). Gradual underflow to subnormals.
uint8_t f32_to_fp8_bits(float x, Dtype fmt);
float fp8_bits_to_f32(uint8_t b, Dtype fmt);
// fp8_bits_to_f32(f32_to_fp8_bits(x)) without the bit fields, for the
// quantisers' inner loops (equal to it for every float; tested). Normal
// results: the fp32 significand rounded to the format's mantissa bits, ties
// to even, by the integer add bf16 rounding uses. Below the smallest normal
// the spacing is fixed (2^(emin - man)): adding and subtracting
// 2^(23 + emin - man) rounds to it, ties to even, in fp32 itself. Constants
// and plain comparisons only: no libm call in the inner loop.
template <bool E4M3>
MLK_HD inline float fp8_round_as(float x) {
    constexpr int kMan = E4M3 ? 3 : 2;
    constexpr float kMinNormal = E4M3 ? 0x1p-6f : 0x1p-14f;
    constexpr float kMax = E4M3 ? 448.0f : 57344.0f;
    constexpr float kSubnormalShift = E4M3 ? 0x1p14f : 0x1p7f;  // 2^(23 + emin - man)
    if (x != x) return x;
    const uint32_t sign = float_bits(x) & 0x80000000u;
    const float a = bits_float(float_bits(x) & 0x7fffffffu);
    float r;
    if (a >= kMinNormal) {
        if (a >= kMax) {
            r = (!E4M3 && a == bits_float(0x7f800000u)) ? a : kMax;  // e5m2 keeps inf; saturate the rest
        } else {
            constexpr int kShift = 23 - kMan;
            uint32_t u = float_bits(a);
            u += ((1u << (kShift - 1)) - 1u) + ((u >> kShift) & 1u);
            u &= ~((1u << kShift) - 1u);
            r = bits_float(u);
            if (r > kMax) r = kMax;  // e4m3: 464..480 would round to 480, which is NaN's code
        }
    } else {
        r = (a + kSubnormalShift) - kSubnormalShift;
    }
    return bits_float(float_bits(r) | sign);
}
MLK_HD inline float fp8_round(float x, Dtype fmt) {
    return fmt == Dtype::fp8_e4m3 ? fp8_round_as<true>(x) : fp8_round_as<false>(x);
}

MLK_HD inline float round_to(float x, Dtype d) {
    switch (d) {
        case Dtype::f32: return x;
        case Dtype::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(x));
        case Dtype::f16: return f16_bits_to_f32(f32_to_f16_bits(x));
        case Dtype::fp8_e4m3:
        case Dtype::fp8_e5m2: return fp8_round(x, d);
    }
    return x;
}

// Rounds n floats in place (no-op for f32).
void round_buffer(float* x, size_t n, Dtype d);
// dst[0..n) = src[0..n) rounded to d, in one pass (dst may equal src).
void copy_rounded(float* dst, const float* src, size_t n, Dtype d);

}  // namespace mlk
