// CUDA matmul forward / backward.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "kernels/cuda/bodies.h"
#include "kernels/cuda/bodies_fp8.h"
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

// ---- the fast family's skinny GEMM -------------------------------------------------------
// At decode's batch sizes these models' GEMMs are a few MFLOP, and a cuBLAS
// call with its operand conversion and bias-and-round epilogue is three
// device calls whose cost exceeds the arithmetic (moe-deep decodes 48
// experts x 3 GEMMs x 12 layers per token). Production engines run such
// GEMMs through a split-K kernel of their own; so does this family: one
// launch, fp32 FMA on the operands as given (as the CPU's fast family: a
// 16-bit engine's weights and activations are already representable), bias
// and rounding in the same kernel.
//
// A block is one warp wide (a column per lane) and `split` warps deep over
// kSkinnyRows rows: warp s chains k over its slice of K in ascending order,
// loading 8 k ahead of the adds, then each output adds its slices' partial
// sums in slice order. The split is chosen per shape to fill the device
// (skinny_split), so, like cuBLAS's split-K, the bits depend on M, K, N and
// the device's size.
constexpr int kSkinnyRows = 8;
constexpr int kSkinnyMaxSplit = 16;
constexpr int kSkinnyAhead = 8;  // k loaded before their adds; a slice is a multiple of it
// The GEMMs it runs (FastGemm::by_batch): up to 2^28 multiply-adds, every
// GEMM of the model presets (the largest, dense-small's recompute, 4864 rows
// by 128 by 384, is 2^27.8); cuBLAS above. A step on the GPU is bound by the
// host's time between calls, tens of microseconds, so a kernel whose device
// time stays under that costs nothing more, and a cuBLAS call's host work
// (and at 16 bits its two extra launches) does. On an H200, with cuBLAS
// from 2^25 the fast family's recompute takes 3-7 % longer than the
// batch-invariant one's on dense-tiny, dense-small and dense-deep; with
// this kernel on every preset GEMM, no phase of any preset is slower.
// Up to 2^28 the kernel takes at most about 50 us (a 1024 x 1024 weight at
// 256 rows, 2^28: 43 us, cuBLAS 15-20); past it, its time outgrows what the
// host's time hides (at 512 rows: 131 us, cuBLAS 15-33).
constexpr int64_t kSkinnyMaxMacs = int64_t(1) << 28;
constexpr int kSkinnyMaxM = 65535 * kSkinnyRows;  // the grid's y dimension

template <bool kVec4>
__global__ void k_matmul_skinny(float* out, const float* inp, const float* w, const float* bias, int M, int K, int N,
                                int slice, Dtype dt) {
    __shared__ float part[kSkinnyMaxSplit][kSkinnyRows][32];
    const int lane = threadIdx.x, s = threadIdx.y, split = blockDim.y;
    const int n = blockIdx.x * 32 + lane;
    const int m0 = blockIdx.y * kSkinnyRows;
    const int rows = min(kSkinnyRows, M - m0);
    const int k0 = min(K, s * slice), k1 = min(K, k0 + slice);
    const float* wc = w + min(n, N - 1);  // lanes past N load a valid column and write nothing
    const float* x[kSkinnyRows];          // rows past M repeat the last (computed, not written)
#pragma unroll
    for (int r = 0; r < kSkinnyRows; ++r) x[r] = inp + (int64_t)(m0 + min(r, rows - 1)) * K;
    float acc[kSkinnyRows];
#pragma unroll
    for (int r = 0; r < kSkinnyRows; ++r) acc[r] = 0.0f;
    int k = k0;
    for (; k + kSkinnyAhead <= k1; k += kSkinnyAhead) {
        float wv[kSkinnyAhead];
#pragma unroll
        for (int u = 0; u < kSkinnyAhead; ++u) wv[u] = wc[(int64_t)(k + u) * N];
#pragma unroll
        for (int r = 0; r < kSkinnyRows; ++r) {
            float xv[kSkinnyAhead];
            if constexpr (kVec4) {  // 16-byte loads (K a multiple of 4, rows aligned)
                const float4 lo = *reinterpret_cast<const float4*>(x[r] + k);
                const float4 hi = *reinterpret_cast<const float4*>(x[r] + k + 4);
                xv[0] = lo.x, xv[1] = lo.y, xv[2] = lo.z, xv[3] = lo.w;
                xv[4] = hi.x, xv[5] = hi.y, xv[6] = hi.z, xv[7] = hi.w;
            } else {
#pragma unroll
                for (int u = 0; u < kSkinnyAhead; ++u) xv[u] = x[r][k + u];
            }
#pragma unroll
            for (int u = 0; u < kSkinnyAhead; ++u) acc[r] = __fmaf_rn(xv[u], wv[u], acc[r]);
        }
    }
    for (; k < k1; ++k) {
        const float wv = wc[(int64_t)k * N];
#pragma unroll
        for (int r = 0; r < kSkinnyRows; ++r) acc[r] = __fmaf_rn(x[r][k], wv, acc[r]);
    }
#pragma unroll
    for (int r = 0; r < kSkinnyRows; ++r) part[s][r][lane] = acc[r];
    __syncthreads();
    if (n >= N) return;
    for (int r = s; r < rows; r += split) {
        float v = part[0][r][lane];
        for (int j = 1; j < split; ++j) v = v + part[j][r][lane];
        if (bias) v = v + bias[n];
        out[(int64_t)(m0 + r) * N + n] = round_to(v, dt);
    }
}

// Warps per block: doubled while the grid stays under 16 warps per
// multiprocessor and each slice keeps 2 x kSkinnyAhead k.
int skinny_split(int M, int K, int N) {
    const int64_t blocks = (int64_t)((N + 31) / 32) * ((M + kSkinnyRows - 1) / kSkinnyRows);
    const int64_t want_warps = (int64_t)detail::sm_count() * 16;
    int split = 1;
    while (split < kSkinnyMaxSplit && blocks * split * 2 <= want_warps && K / (split * 2) >= 2 * kSkinnyAhead)
        split *= 2;
    return split;
}

void gemm_skinny(const Exec& ex, float* out, const float* inp, const float* w, const float* bias, int M, int K, int N) {
    if (M > kSkinnyMaxM)
        throw std::invalid_argument("matmul_forward (skinny): M = " + std::to_string(M) + " rows, at most " +
                                    std::to_string(kSkinnyMaxM));
    const int split = skinny_split(M, K, N);
    const int slice = ((K + split - 1) / split + kSkinnyAhead - 1) / kSkinnyAhead * kSkinnyAhead;
    const dim3 grid((unsigned)((N + 31) / 32), (unsigned)((M + kSkinnyRows - 1) / kSkinnyRows)), block(32, split);
    const bool vec4 = K % 4 == 0 && reinterpret_cast<uintptr_t>(inp) % 16 == 0;
    if (vec4) k_matmul_skinny<true><<<grid, block, 0, detail::stream()>>>(out, inp, w, bias, M, K, N, slice, ex.dtype);
    else k_matmul_skinny<false><<<grid, block, 0, detail::stream()>>>(out, inp, w, bias, M, K, N, slice, ex.dtype);
    detail::check_launch("matmul_forward (skinny)");
}

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
//  * fast, up to kSkinnyMaxMacs multiply-adds (every GEMM of the model
//    presets): the skinny split-K kernel above, one launch, fp32
//    FMA on the operands as given, then + bias, rounded.
//  * fast, larger: cuBLAS with its own heuristics per shape (algorithm,
//    split-K, tiles: its bits depend on M). fp32 storage: cublasSgemm in its
//    default math mode (full fp32, no TF32 unless NVIDIA_TF32_OVERRIDE says
//    so). bf16 / fp16 storage: both operands converted to 16 bits (RNE;
//    activations are already representable, weights are rounded as a 16-bit
//    engine stores them) and cublasGemmEx on tensor cores with fp32
//    accumulation (CUBLAS_COMPUTE_32F), fp32 output. Then + bias, rounded (an
//    epilogue kernel).
//  * ex.quant fp8: the input is first quantised (quantize_activations with
//    ex.quant_scale at ex.quant_granularity) into scratch; the plans above
//    then run on it (fp8 values are exact in 16 bits; with fp32 scales the
//    dequantised values q * s are not, and the 16-bit conversion rounds them).
void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, const float* bias, int M, int K,
                    int N) {
    detail::matmul_forward_planned(ex, out, inp, w, bias, M, K, N, detail::FastGemm::by_batch);
}

detail::FastGemm detail::fast_gemm_plan(int M, int K, int N) {
    return (int64_t)M * K * N <= kSkinnyMaxMacs && M <= kSkinnyMaxM ? FastGemm::skinny : FastGemm::cublas;
}

void detail::matmul_forward_planned(const Exec& ex, float* out, const float* inp, const float* w, const float* bias,
                                    int M, int K, int N, FastGemm plan) {
    if (M <= 0 || N <= 0) return;
    K = K < 0 ? 0 : K;
    if (plan == FastGemm::by_batch) plan = fast_gemm_plan(M, K, N);
    const bool library = ex.family == Family::fast && plan == FastGemm::cublas;
    const bool narrow = library && K > 0 && (ex.dtype == Dtype::bf16 || ex.dtype == Dtype::f16);
    // fp8: the quantised input, then (tensor scales) M + 1 floats of row maxima and the scale.
    const size_t pbytes = is_fp8(ex.quant) && ex.quant_granularity == Fp8Granularity::tensor
                              ? align_up(((size_t)M + 1) * sizeof(float))
                              : 0;
    const size_t qbytes = is_fp8(ex.quant) ? align_up((size_t)M * K * sizeof(float)) + pbytes : 0;
    const size_t nbytes = narrow ? align_up((size_t)M * K * 2) + align_up((size_t)K * N * 2) : 0;
    char* scratch = (qbytes + nbytes) ? static_cast<char*>(detail::workspace(qbytes + nbytes)) : nullptr;
    if (qbytes) {
        float* q = reinterpret_cast<float*>(scratch);
        float* partial = pbytes ? reinterpret_cast<float*>(scratch + qbytes - pbytes) : nullptr;
        detail::quantize_activations_with(q, nullptr, inp, M, K, ex.quant, ex.quant_scale, ex.quant_granularity,
                                          partial);
        inp = q;
    }
    if (ex.family == Family::batch_invariant) {
        launch_elementwise((int64_t)M * N, MatmulBiF{out, inp, w, bias, K, N, ex.dtype}, "matmul_forward");
        return;
    }
    if (!library) {
        gemm_skinny(ex, out, inp, w, bias, M, K, N);
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
