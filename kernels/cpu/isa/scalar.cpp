// Portable instantiation of isa/impl.inc: 16 "lanes" of plain floats,
// fma = fmaf. The reference for what the SIMD paths compute bit for bit.
// GCC 12 cannot see that mk_splitk's tree_sum reads only the S partials its
// loop wrote, and warns as inlining changes (as in avx2.cpp and avx512.cpp).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/cpu/common.h"

namespace mlk::cpu {
namespace {
namespace scalar_impl {
#include "kernels/cpu/isa/simd_scalar.h"
#include "kernels/cpu/isa/impl.inc"
}  // namespace scalar_impl
}  // namespace

const IsaTable& scalar_table() {
    static const IsaTable t = scalar_impl::make_table("scalar");
    return t;
}
}  // namespace mlk::cpu
