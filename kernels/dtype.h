// Storage precisions and rounding. Every tensor lives in a float buffer; a
// bf16 or fp16 tensor holds only values representable in that format, rounded
// with round-to-nearest-even, exactly as a GPU stores them. Accumulation is
// always fp32. This makes precision mismatch real rounding, not noise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace mlk {

// fp8_e4m3 is OCP E4M3FN (bias 7, largest finite 448, no infinities, one NaN
// code per sign); fp8_e5m2 is OCP E5M2 (bias 15, largest finite 57344, IEEE
// infinities and NaNs). An fp8 value is only ever stored with a scale (see
// quantize_rows in kernels.h); round_to on its own rounds the unscaled value.
enum class Dtype { f32, bf16, f16, fp8_e4m3, fp8_e5m2 };
// Names by value: the config and CLI spelling of each precision.
inline constexpr std::string_view kDtypeNames[] = {"fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2"};

inline std::string_view dtype_name(Dtype d) { return kDtypeNames[static_cast<int>(d)]; }
inline bool is_fp8(Dtype d) { return d == Dtype::fp8_e4m3 || d == Dtype::fp8_e5m2; }
// Largest finite value of an fp8 format (448 or 57344); 0 for the others.
inline float fp8_max(Dtype d) { return d == Dtype::fp8_e4m3 ? 448.0f : d == Dtype::fp8_e5m2 ? 57344.0f : 0.0f; }

inline uint32_t float_bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}
inline float bits_float(uint32_t u) {
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
}

// fp32 -> bf16 bits, round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16_bits(float x) {
    uint32_t u = float_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_f32(uint16_t h) { return bits_float(static_cast<uint32_t>(h) << 16); }

// fp32 -> IEEE binary16 bits, round to nearest even, overflow to inf,
// gradual underflow to subnormals.
uint16_t f32_to_f16_bits(float x);
float f16_bits_to_f32(uint16_t h);

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
inline float fp8_round_as(float x) {
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
inline float fp8_round(float x, Dtype fmt) {
    return fmt == Dtype::fp8_e4m3 ? fp8_round_as<true>(x) : fp8_round_as<false>(x);
}

inline float round_to(float x, Dtype d) {
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

}  // namespace mlk
