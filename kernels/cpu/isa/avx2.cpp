// AVX2 + FMA instantiation of isa/impl.inc (see isa/avx512.cpp for the
// linkage rules). Target: target("avx2,fma,f16c").
#if defined(__x86_64__) || defined(__i386__)
// GCC 12 reports false (maybe-)uninitialized warnings inside its own AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cpu/common.h"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace mlk::cpu {
namespace {
namespace avx2_impl {
#include "kernels/cpu/isa/simd_avx2.h"
#include "kernels/cpu/isa/impl.inc"
}  // namespace avx2_impl
}  // namespace

const IsaTable& avx2_table() {
    static const IsaTable t = avx2_impl::make_table("avx2");
    return t;
}
}  // namespace mlk::cpu

#pragma GCC pop_options

#endif  // x86
