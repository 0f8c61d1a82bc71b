// AVX-512 instantiation of isa/impl.inc. Everything in the target region
// lives in an anonymous namespace (internal linkage), so no AVX-512 code can be
// picked by the linker for a function that other translation units call; the
// table is only used after cpu/features.cpp has checked the CPU at run time.
// (`#pragma GCC target` gives every function in the region the attribute
// target("avx512f,avx512bw,avx512vl,fma,f16c").)
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
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")

namespace mlk::cpu {
namespace {
namespace avx512_impl {
#include "kernels/cpu/isa/simd_avx512.h"
#include "kernels/cpu/isa/impl.inc"
}  // namespace avx512_impl
}  // namespace

const IsaTable& avx512_table() {
    static const IsaTable t = avx512_impl::make_table("avx512");
    return t;
}
}  // namespace mlk::cpu

#pragma GCC pop_options

#endif  // x86
