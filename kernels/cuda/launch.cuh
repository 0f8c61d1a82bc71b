// Internal to the CUDA backend's .cu files: the one-index-per-thread launcher
// and the fast family's warp reductions.
#pragma once

#include <cstdint>

#include "kernels/cuda/internal.h"

namespace mlk::cuda::detail {

inline constexpr int kElementwiseThreads = 256;

// Grid-stride loop over [0, n) calling f(i). f is a functor (a device lambda
// would need --extended-lambda).
template <class F>
__global__ void k_elementwise(int64_t n, F f) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) f(i);
}
template <class F>
void launch_elementwise(int64_t n, F f, const char* what) {
    if (n <= 0) return;
    k_elementwise<<<blocks_for(n, kElementwiseThreads), kElementwiseThreads, 0, stream()>>>(n, f);
    check_launch(what);
}

// Fast family: butterfly reductions over a full warp (the order a production
// kernel uses; not the batch-invariant tree).
__device__ inline float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ inline float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

}  // namespace mlk::cuda::detail
