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

enum class Dtype { f32, bf16, f16 };
// Names by value: the config and CLI spelling of each precision.
inline constexpr std::string_view kDtypeNames[] = {"fp32", "bf16", "fp16"};

inline std::string_view dtype_name(Dtype d) { return kDtypeNames[static_cast<int>(d)]; }

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

inline float round_to(float x, Dtype d) {
    switch (d) {
        case Dtype::f32: return x;
        case Dtype::bf16: return bf16_bits_to_f32(f32_to_bf16_bits(x));
        case Dtype::f16: return f16_bits_to_f32(f32_to_f16_bits(x));
    }
    return x;
}

// Rounds n floats in place (no-op for f32).
void round_buffer(float* x, size_t n, Dtype d);

}  // namespace mlk
