// CUDA matmul forward / backward.
#include <cstdint>

#include "kernels/cuda/bodies.h"
#include "kernels/cuda/internal.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/ops.h"

namespace mlk::cuda {

using detail::check_cublas;
using detail::launch_elementwise;

namespace {

struct MatmulBiF {
    float* out;
    const float *inp, *w, *bias;
    int K, N;
    Dtype dt;
    __device__ void operator()(int64_t i) const {
        body::matmul_bi_at(out, inp, w, bias, K, N, dt, (int)(i / N), (int)(i % N));
    }
};
struct DinpF {
    float* dinp;
    const float *dout, *w;
    int K, N;
    bool add;
    __device__ void operator()(int64_t i) const {
        body::matmul_dinp_at(dinp, dout, w, K, N, add, (int)(i / K), (int)(i % K));
    }
};
struct DwF {
    float* dw;
    const float *inp, *dout;
    int M, K, N;
    __device__ void operator()(int64_t i) const {
        body::matmul_dw_at(dw, inp, dout, M, K, N, (int)(i / N), (int)(i % N));
    }
};
struct DbiasF {
    float* dbias;
    const float* dout;
    int M, N;
    __device__ void operator()(int64_t n) const { body::matmul_dbias_at(dbias, dout, M, N, (int)n); }
};
// out = round(out + bias[n], dt): the fast family's epilogue after cuBLAS.
struct EpilogueF {
    float* out;
    const float* bias;
    int N;
    Dtype dt;
    __device__ void operator()(int64_t i) const {
        float v = out[i];
        if (bias) v = v + bias[i % N];
        out[i] = round_to(v, dt);
    }
};
// 16-bit copies of both operands for cuBLAS (bf16 / IEEE half bits, round to
// nearest even), in one launch: at decode's sizes a launch costs more than
// its work.
struct To16F {
    uint16_t *a16, *w16;
    const float *a, *w;
    int64_t a_n;  // a's elements; w's follow in the index space
    bool bf16;
    __device__ uint16_t bits(float x) const { return bf16 ? f32_to_bf16_bits(x) : f32_to_f16_bits(x); }
    __device__ void operator()(int64_t i) const {
        if (i < a_n) a16[i] = bits(a[i]);
        else w16[i - a_n] = bits(w[i - a_n]);
    }
};

size_t align_up(size_t bytes) { return (bytes + 255) / 256 * 256; }

// out[M,N] = inp[M,K] @ w[K,N] in cuBLAS's column-major terms: out^T[N,M] =
// w^T[N,K] @ inp^T[K,M], w^T being w read column-major with ld N.
void gemm_fast(const Exec& ex, float* out, const float* inp, const float* w, int M, int K, int N, void* scratch) {
    cublasHandle_t h = detail::cublas();
    const float one = 1.0f, zero = 0.0f;
    if (ex.dtype != Dtype::bf16 && ex.dtype != Dtype::f16) {
        check_cublas(
            detail::cublas_api().sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, w, N, inp, K, &zero, out, N),
            "cublasSgemm");
        if (detail::profiling()) detail::profile_mark("cublasSgemm");
        return;
    }
    const bool bf = ex.dtype == Dtype::bf16;
    uint16_t* a16 = static_cast<uint16_t*>(scratch);
    uint16_t* w16 = reinterpret_cast<uint16_t*>(static_cast<char*>(scratch) + align_up((size_t)M * K * 2));
    launch_elementwise((int64_t)M * K + (int64_t)K * N, To16F{a16, w16, inp, w, (int64_t)M * K, bf},
                       "matmul_forward (16-bit operands)");
    const cudaDataType_t t = bf ? CUDA_R_16BF : CUDA_R_16F;
    check_cublas(detail::cublas_api().gemm_ex(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, w16, t, N, a16, t, K, &zero,
                                              out, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmEx");
    if (detail::profiling()) detail::profile_mark("cublasGemmEx");
}

}  // namespace

// matmul_forward. out[M,N] = inp[M,K] @ w[K,N] (+ bias), rounded to ex.dtype.
//  * batch_invariant: a thread per output: one FMA chain over k = 0..K-1
//    ascending from +0, + bias[n], rounded (bodies.h): the CPU's plan, the
//    CPU's bits, whatever M.
//  * fast: cuBLAS with its own heuristics per shape (algorithm, split-K,
//    tiles: its bits depend on M). fp32 storage: cublasSgemm in its default
//    math mode (full fp32, no TF32 unless NVIDIA_TF32_OVERRIDE says so).
//    bf16 / fp16 storage: both operands converted to 16 bits (RNE; activations
//    are already representable, weights are rounded as a 16-bit engine stores
//    them) and cublasGemmEx on tensor cores with fp32 accumulation
//    (CUBLAS_COMPUTE_32F), fp32 output. Then + bias, rounded (an epilogue kernel).
//  * ex.quant fp8: the input rows are first quantised (quantize_rows) into
//    scratch; the plans above then run on it (fp8 values are exact in 16 bits).
void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, const float* bias, int M, int K,
                    int N) {
    if (M <= 0 || N <= 0) return;
    K = K < 0 ? 0 : K;
    const bool narrow = ex.family == Family::fast && K > 0 && (ex.dtype == Dtype::bf16 || ex.dtype == Dtype::f16);
    const size_t qbytes = is_fp8(ex.quant) ? align_up((size_t)M * K * sizeof(float)) : 0;
    const size_t nbytes = narrow ? align_up((size_t)M * K * 2) + align_up((size_t)K * N * 2) : 0;
    char* scratch = (qbytes + nbytes) ? static_cast<char*>(detail::workspace(qbytes + nbytes)) : nullptr;
    if (qbytes) {
        float* q = reinterpret_cast<float*>(scratch);
        cuda::quantize_rows(q, nullptr, inp, M, K, ex.quant);
        inp = q;
    }
    if (ex.family == Family::batch_invariant) {
        launch_elementwise((int64_t)M * N, MatmulBiF{out, inp, w, bias, K, N, ex.dtype}, "matmul_forward");
        return;
    }
    if (K == 0) memset_device(out, 0, (size_t)M * N * sizeof(float));
    else gemm_fast(ex, out, inp, w, M, K, N, scratch + qbytes);
    if (bias || ex.dtype != Dtype::f32)
        launch_elementwise((int64_t)M * N, EpilogueF{out, bias, N, ex.dtype}, "matmul_forward (epilogue)");
}

// matmul_backward, the CPU's orders (one thread per output, no atomics), so
// the CPU's bits:
//  * dinp[m,k]: FMA chain over n ascending of dout[m,n]*w[k,n] from dinp[m,k]
//    (from 0.0f when dinp_store is overwrite).
//  * dw[k,n]: FMA chain over m ascending of inp[m,k]*dout[m,n] from dw[k,n].
//  * dbias[n]: dbias[n] + dout[0,n] + dout[1,n] + ... left to right.
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int M,
                     int K, int N, GradStore dinp_store) {
    if (M <= 0 || N <= 0 || K < 0) return;
    const bool add = dinp_store == GradStore::add;
    if (dinp && K > 0) launch_elementwise((int64_t)M * K, DinpF{dinp, dout, w, K, N, add}, "matmul_backward (dinp)");
    if (dw && K > 0) launch_elementwise((int64_t)K * N, DwF{dw, inp, dout, M, K, N}, "matmul_backward (dw)");
    if (dbias) launch_elementwise(N, DbiasF{dbias, dout, M, N}, "matmul_backward (dbias)");
}

}  // namespace mlk::cuda
