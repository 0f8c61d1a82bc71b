// Storage precisions: fp32 <-> fp16 conversion (bf16 is inline in
// dtype.h). All conversions round to nearest, ties to even, exactly as the
// hardware converters (F16C vcvtps2ph with RNE, used by the SIMD paths) do.
#include "kernels/dtype.h"

#include <algorithm>

#include "kernels/cpu/common.h"
#include "kernels/cpu/thread_pool.h"

namespace mlk {

// IEEE binary32 -> binary16, round to nearest even. NaN -> quiet NaN keeping the
// top payload bits (as vcvtps2ph does), overflow (|x| >= 65520) -> inf,
// |x| < 2^-14 -> subnormal (gradual underflow, ties to even), tiny -> +-0.
uint16_t f32_to_f16_bits(float x) {
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

float f16_bits_to_f32(uint16_t h) {
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

void round_buffer(float* x, size_t n, Dtype d) {
    if (d == Dtype::f32 || n == 0) return;
    const cpu::IsaTable& T = cpu::isa_table();
    constexpr int64_t kChunk = 1 << 16;
    const int64_t nn = static_cast<int64_t>(n);
    const int chunks = static_cast<int>((nn + kChunk - 1) / kChunk);
    cpu::parallel_for(
        chunks,
        [&](int b, int e) {
            const int64_t i0 = b * kChunk, i1 = std::min<int64_t>(nn, e * kChunk);
            T.copy_round(x + i0, x + i0, d, i1 - i0);
        },
        nn >= 4 * kChunk);
}

}  // namespace mlk
