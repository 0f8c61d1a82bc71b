// Internal to the CUDA backend: error checks, the calling thread's stream,
// cuBLAS handle and scratch memory, launch helpers. Included by the backend's
// own sources only (it includes the CUDA runtime).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/kernels.h"

namespace mlk::cuda::detail {

// Throw std::runtime_error("CUDA <what>: <message>") on failure.
void check(cudaError_t e, const char* what);
void check_cublas(cublasStatus_t s, const char* what);
// MLK_CUDA_PROFILE=1 in the environment: every launch, cuBLAS call and copy
// is waited for and its device time added to its name's total, and the
// totals are printed to stderr at exit (the waits cost the overlap of host
// and device: the totals say where device time goes, not how long a step is).
bool profiling();
void profile_mark(const char* what);       // after the launch, call or copy named `what`
void profile_host_span(const char* what);  // the host time since the last mark, named `what`
// After a launch: a bad configuration is reported here, a fault later.
inline void check_launch(const char* what) {
    check(cudaGetLastError(), what);
    if (profiling()) profile_mark(what);
}

cudaStream_t stream();    // the calling thread's (device.h: set_stream)
cublasHandle_t cublas();  // the calling thread's handle, bound to stream()

// The cuBLAS entry points the backend calls, from libcublas opened on first
// use (dlopen) rather than linked: loading cuBLAS and its cublasLt maps about
// 300 MB of relocated pages, which linked, every process of a CUDA build
// would pay (the CLI's `presets` 239 MB RSS, a dense-tiny run 290 MB against
// 75 without), whether or not it ever ran an engine on a GPU. Throws std::runtime_error
// naming the library where it cannot be opened.
struct CublasApi {
    cublasStatus_t (*create)(cublasHandle_t*);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*sgemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const float*,
                            const float*, int, const float*, int, const float*, float*, int);
    cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                              const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                              cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
};
const CublasApi& cublas_api();
const char* cublas_soname();  // the library cublas_api opens, e.g. "libcublas.so.13"
int sm_count();               // multiprocessors of the current device
size_t max_smem_optin();      // largest dynamic shared memory a block may opt in to
// Scratch device memory of at least `bytes`, the calling thread's; valid
// until its next call on this thread. Ops on one stream run in order, so an
// op may use it for its own kernels; growing waits for the stream first.
void* workspace(size_t bytes);

// The fast family's two GEMM plans (matmul.cu): by_batch, matmul_forward's
// choice, runs the skinny split-K kernel on small products (decode's batch
// sizes) and cuBLAS on large ones; the other two force one plan, for the
// bench that places the crossover (bench/cuda_gemm_bench.cpp). The
// batch-invariant family has one plan.
enum class FastGemm { by_batch, skinny, cublas };
FastGemm fast_gemm_plan(int M, int K, int N);  // by_batch's choice for [M,K] @ [K,N]
void matmul_forward_planned(const Exec& ex, float* out, const float* inp, const float* w, const float* bias, int M,
                            int K, int N, FastGemm plan);

// fp8 quantisation with the caller's scratch (elementwise.cu): `partial`,
// M + 1 device floats, is used by the tensor granularity only, so matmul can
// quantise into its workspace without a second workspace() call moving it.
void quantize_activations_with(float* out, float* scales, const float* inp, int M, int K, Dtype fmt, Fp8Scale kind,
                               Fp8Granularity g, float* partial);
// One scale over a tensor of rows [R,C] (R + 1 floats of partial scratch).
void quantize_tensor(float* out, float* scales, const float* inp, int64_t R, int C, Dtype fmt, Fp8Scale kind,
                     float floor, float* partial);

// Blocks of `threads` for n items (grid-stride loops cover the rest).
inline unsigned blocks_for(int64_t n, int threads) {
    const int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : (b > (1 << 22) ? (1 << 22) : b));
}

// Lets `kernel` use `bytes` of dynamic shared memory (past the 48 KiB default),
// or throws when the device has less.
void allow_smem(const void* kernel, size_t bytes, const char* what);

}  // namespace mlk::cuda::detail
