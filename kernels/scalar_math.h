// exp and log as our own polynomials built only from IEEE single-precision
// operations (add, sub, mul, fma, round-to-integer, integer bit moves), so
// every backend that runs this code gets the same bits: the CPU's scalar path
// calls it, its AVX2 / AVX-512 paths do these exact steps per lane
// (cpu/isa/simd_*.h), and the CUDA backend calls it from device code (MLK_HD:
// __host__ __device__ under nvcc, with __fmaf_rn / rintf, which round exactly
// as __builtin_fmaf / __builtin_rintf do on the host). Cephes coefficients.
// exp flushes results below FLT_MIN to 0 (inputs < -87.3365).
//
// Also here: adamw_at, one element of the optimizer step, which the CPU's
// per-ISA loop and the CUDA backend's kernel both call.
#pragma once

#include <cstdint>

#include "kernels/dtype.h"
#include "kernels/kernels.h"

namespace mlk::fmath {

// fma, round-to-nearest-even, division and square root (float and double),
// correctly rounded on host and device: every exact operation a body uses.
MLK_HD inline float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
    return __fmaf_rn(a, b, c);
#else
    return __builtin_fmaf(a, b, c);
#endif
}
MLK_HD inline float rint_rn(float x) {
#if defined(__CUDA_ARCH__)
    return rintf(x);
#else
    return __builtin_rintf(x);
#endif
}
MLK_HD inline float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}
MLK_HD inline float sqrt_rn(float x) {
#if defined(__CUDA_ARCH__)
    return __fsqrt_rn(x);
#else
    return __builtin_sqrtf(x);
#endif
}
MLK_HD inline double dsqrt_rn(double x) {
#if defined(__CUDA_ARCH__)
    return __dsqrt_rn(x);
#else
    return __builtin_sqrt(x);
#endif
}

inline constexpr float kExpHi = 88.72283935546875f;   // above: +inf
inline constexpr float kExpLo = -87.33654022216797f;  // below: 0 (flush)
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kExpC1 = 0.693359375f;  // ln2 split (Cody-Waite)
inline constexpr float kExpC2 = -2.12194440e-4f;
inline constexpr float kExpP0 = 1.9875691500E-4f;
inline constexpr float kExpP1 = 1.3981999507E-3f;
inline constexpr float kExpP2 = 8.3334519073E-3f;
inline constexpr float kExpP3 = 4.1665795894E-2f;
inline constexpr float kExpP4 = 1.6666665459E-1f;
inline constexpr float kExpP5 = 5.0000001201E-1f;

MLK_HD inline float pow2i(int n) {  // 2^n for n in [-126, 127]
    return bits_float(static_cast<uint32_t>(n + 127) << 23);
}

// exp(x) with ~1 ulp error; the vector versions do these exact steps per lane.
MLK_HD inline float exp_s(float x) {
    if (x != x) return x;
    if (x > kExpHi) return bits_float(0x7f800000u);
    if (x < kExpLo) return 0.0f;
    float n = rint_rn(x * kLog2e);  // round to nearest even
    float r = fma_rn(n, -kExpC1, x);
    r = fma_rn(n, -kExpC2, r);
    float y = kExpP0;
    y = fma_rn(y, r, kExpP1);
    y = fma_rn(y, r, kExpP2);
    y = fma_rn(y, r, kExpP3);
    y = fma_rn(y, r, kExpP4);
    y = fma_rn(y, r, kExpP5);
    float z = r * r;
    y = fma_rn(y, z, r);
    y = y + 1.0f;
    int ni = static_cast<int>(n);
    int n1 = ni >> 1;  // arithmetic shift (floor)
    int n2 = ni - n1;
    return (y * pow2i(n1)) * pow2i(n2);
}

// log(x), Cephes logf with explicit fma; only ever evaluated as a scalar.
MLK_HD inline float log_s(float x) {
    if (x != x) return x;
    if (x < 0.0f) return bits_float(0x7fc00000u);
    if (x == 0.0f) return bits_float(0xff800000u);
    if (x == bits_float(0x7f800000u)) return x;
    uint32_t u = float_bits(x);
    int e;
    if ((u >> 23) == 0) {  // subnormal: scale up by 2^23 first
        const float xs = x * 8388608.0f;
        u = float_bits(xs);
        e = static_cast<int>(u >> 23) - 126 - 23;
    } else {
        e = static_cast<int>(u >> 23) - 126;
    }
    uint32_t mb = (u & 0x007fffffu) | 0x3f000000u;  // mantissa in [0.5, 1)
    const float m = bits_float(mb);
    float f;
    if (m < 0.707106781186547524f) {
        e -= 1;
        f = (m + m) - 1.0f;
    } else {
        f = m - 1.0f;
    }
    float z = f * f;
    float y = 7.0376836292E-2f;
    y = fma_rn(y, f, -1.1514610310E-1f);
    y = fma_rn(y, f, 1.1676998740E-1f);
    y = fma_rn(y, f, -1.2420140846E-1f);
    y = fma_rn(y, f, 1.4249322787E-1f);
    y = fma_rn(y, f, -1.6668057665E-1f);
    y = fma_rn(y, f, 2.0000714765E-1f);
    y = fma_rn(y, f, -2.4999993993E-1f);
    y = fma_rn(y, f, 3.3333331174E-1f);
    y = (y * f) * z;
    float fe = static_cast<float>(e);
    y = fma_rn(fe, -2.12194440e-4f, y);
    y = fma_rn(z, -0.5f, y);
    float r = f + y;
    r = fma_rn(fe, 0.693359375f, r);
    return r;
}

// One element of adamw_update, the order kernels.h states. Only IEEE double
// add, sub, mul, div and sqrt (round-to-nearest-even) and the conversions
// float -> double (exact) and double -> float (rounded to nearest even), so an
// x86 SIMD lane and a CUDA thread give the same bits, provided no multiply
// and add are contracted into an fma: the build's -ffp-contract=off (host)
// and -fmad=false (nvcc, which covers DFMA too). The CPU calls this in a plain
// loop that GCC vectorises per ISA (cpu/isa/impl_rows.inc: adamw); the loop
// invariants (1 - beta1, lr * weight_decay, ...) are hoisted by the compiler,
// and computing them once or per element gives the same values.
// kUnitBc1: s.bias_correction1 is exactly 1 (1 - beta1^t has rounded to 1,
// from about t = 350 at beta1 = 0.9), and mi / 1.0 is mi in every bit: the
// CPU then skips that division, a third of the element's divider time.
template <bool kUnitBc1 = false>
MLK_HD inline void adamw_at(float* p, float* m, float* v, const float* g, const AdamWStep& s, int64_t i) {
    const double gi = (double)g[i] * s.grad_scale;
    const double mi = s.beta1 * (double)m[i] + (1.0 - s.beta1) * gi;
    const double vi = s.beta2 * (double)v[i] + ((1.0 - s.beta2) * gi) * gi;
    m[i] = (float)mi;
    v[i] = (float)vi;
    double pi = p[i];
    pi -= (s.lr * s.weight_decay) * pi;
    const double m_hat = kUnitBc1 ? mi : mi / s.bias_correction1;
    pi -= (s.lr * m_hat) / (dsqrt_rn(vi / s.bias_correction2) + s.eps);
    p[i] = (float)pi;
}

}  // namespace mlk::fmath
