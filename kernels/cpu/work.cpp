// Work accounting (kernels.h): per-thread counters, so a phase's figures are
// its own thread's even while another thread (the GUI's second run) computes.
#include "kernels/cpu/work.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
// GCC 12 reports false (maybe-)uninitialized warnings inside its AVX-512 headers.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#endif

#include "kernels/cpu/features.h"
#include "kernels/kernels.h"

namespace mlk {
namespace cpu {
namespace {

thread_local double tl_flops = 0;
thread_local GemmShapeLog* tl_shape_log = nullptr;

// ---- FMA peak: 12 independent chains per thread, enough to cover the FMA
// latency on every x86 core this runs on. The asm barrier keeps the compiler
// from folding the chains.
#define MLK_R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx512f,fma"))) float fma_loop_512(long iters) {
#define D5(i) __m512 a##i = _mm512_set1_ps(1.0f + (i)*1e-3f);
    MLK_R12(D5)
    const __m512 b = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it) {
#define F5(i) a##i = _mm512_fmadd_ps(a##i, b, c);
        MLK_R12(F5)
        __asm__ volatile("" : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3));
    }
    float s = 0;
#define S5(i) s += _mm512_reduce_add_ps(a##i);
    MLK_R12(S5)
    return s;
}
__attribute__((target("avx2,fma"))) float fma_loop_256(long iters) {
#define D2(i) __m256 a##i = _mm256_set1_ps(1.0f + (i)*1e-3f);
    MLK_R12(D2)
    const __m256 b = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
    for (long it = 0; it < iters; ++it) {
#define F2(i) a##i = _mm256_fmadd_ps(a##i, b, c);
        MLK_R12(F2)
        __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3));
    }
    float t[8], s = 0;
#define S2(i) _mm256_storeu_ps(t, a##i), s += t[0];
    MLK_R12(S2)
    return s;
}
#endif
float fma_loop_scalar(long iters) {
#define D1(i) float a##i = 1.0f + (i)*1e-3f;
    MLK_R12(D1)
    const float b = 0.9999999f, c = 1e-7f;
    for (long it = 0; it < iters; ++it) {
#define F1(i) a##i = std::fma(a##i, b, c);
        MLK_R12(F1)
    }
    float s = 0;
#define S1(i) s += a##i;
    MLK_R12(S1)
    return s;
}

}  // namespace

void count_flops(double flop) { tl_flops += flop; }

void count_gemm(char op, int M, int K, int N) {
    tl_flops += 2.0 * M * K * N;
    if (tl_shape_log) ++(*tl_shape_log)[GemmShape{op, M, K, N}];
}

GemmShapeLog* gemm_shape_log() { return tl_shape_log; }

}  // namespace cpu

double kernel_flop_count() { return cpu::tl_flops; }
void count_kernel_flops(double flop) { cpu::tl_flops += flop; }

void set_gemm_shape_log(GemmShapeLog* log) { cpu::tl_shape_log = log; }

double fma_peak_gflops(int threads) {
    using Clock = std::chrono::steady_clock;
    const cpu::Isa isa = cpu::active_isa();
    const int lanes = isa == cpu::Isa::avx512 ? 16 : isa == cpu::Isa::avx2 ? 8 : 1;
    const long iters = isa == cpu::Isa::scalar ? 2000000 : 10000000;
    threads = std::max(threads, 1);
    auto body = [&] {
        volatile float sink = 0;
#if defined(__x86_64__) || defined(__i386__)
        if (isa == cpu::Isa::avx512) sink = cpu::fma_loop_512(iters);
        else if (isa == cpu::Isa::avx2) sink = cpu::fma_loop_256(iters);
        else
#endif
            sink = cpu::fma_loop_scalar(iters);
        (void)sink;
    };
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
        const auto t0 = Clock::now();
        std::vector<std::thread> ts;
        for (int t = 1; t < threads; ++t) ts.emplace_back(body);
        body();
        for (auto& t : ts) t.join();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        best = std::max(best, threads * (double)iters * 12 * lanes * 2 / s * 1e-9);
    }
    return best;
}

}  // namespace mlk
