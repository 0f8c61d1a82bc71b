// Matmul forward/backward on the CPU.
#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/kernels.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/cpu/work.h"

namespace mlk {
namespace cpu {

namespace {
// tiles(m0, m1, n0, n1) over C rows [0,M) x cols [0,N): threads split rows at
// multiples of kRowQuantum and columns at multiples of 64, never the reduction.
template <class Tiles>
void run_tiles(int M, int N, int K, bool allow_threads, Tiles&& tiles) {
    if (M <= 0 || N <= 0) return;
    const double work = 2.0 * M * N * std::max(K, 1);
    const int nt = num_threads();
    if (!allow_threads || nt <= 1 || work < kParallelWork) {
        tiles(0, M, 0, N);
        return;
    }
    constexpr int kColBlock = 64;
    const int mb = (M + kRowQuantum - 1) / kRowQuantum;
    const int nb = (N + kColBlock - 1) / kColBlock;
    if (mb >= 2 * nt) {
        // row blocks only; a thread's blocks are contiguous, so it runs them as one range
        parallel_for(mb, [&](int b, int e) { tiles(b * kRowQuantum, std::min(M, e * kRowQuantum), 0, N); });
    } else {
        parallel_for(mb * nb, [&](int b, int e) {
            for (int t = b; t < e; ++t) {
                const int bi = t / nb, bj = t % nb;
                tiles(bi * kRowQuantum, std::min(M, (bi + 1) * kRowQuantum), bj * kColBlock,
                      std::min(N, (bj + 1) * kColBlock));
            }
        });
    }
}
}  // namespace

void run_gemm(const IsaTable& T, const GemmCall& g, int M, int N, bool allow_threads) {
    run_tiles(M, N, g.K, allow_threads, [&](int m0, int m1, int n0, int n1) { T.gemm(g, m0, m1, n0, n1); });
}

int fast_splitk_parts(int M, int K, int threads) {
    if (M > 8) return 1;
    const int cap = (M <= 4 ? 4 : 2) * std::max(threads, 1);
    return std::clamp(K / 16, 1, std::min(cap, kMaxSplitK));
}

int fast_kblock(int M) { return M >= 64 ? 256 : 64; }

namespace {
std::atomic<bool> g_gemm_packing{true};
}  // namespace

}  // namespace cpu

void set_gemm_packing(bool on) { cpu::g_gemm_packing.store(on, std::memory_order_relaxed); }
bool gemm_packing() { return cpu::g_gemm_packing.load(std::memory_order_relaxed); }

using namespace cpu;

// matmul_forward. out[M,N] = inp[M,K] @ w[K,N] (+ bias), rounded to ex.dtype.
// Reduction plan (what: the K products of one output; precision: fp32 FMA):
//  * batch_invariant: one FMA chain over k = 0..K-1 ascending starting at 0.0f,
//    then + bias[n], then rounded. Depends on nothing but K: vectorised along N,
//    tiled over M/N, any thread split and any ISA give the same bits (equals
//    ref::matmul_forward<float> bit for bit).
//  * fast, chosen by M (and K, thread count):
//    - M <= 8 (decode): split-K. S = clamp(K/16, 1, (M<=4 ? 4 : 2) * threads)
//      chunks [s*K/S, (s+1)*K/S), each a fresh chain from 0.0f; partials summed
//      by a pairwise tree ((P0+P1)+(P2+P3))..., then + bias, rounded.
//    - 8 < M < 64: K-blocked, blocks of 64 k: each block a fresh chain, added
//      left to right into the fp32 output ((b0 + b1) + b2)..., + bias, rounded.
//    - M >= 64 (training, prefill, wide decode): the same with blocks of 256,
//      a CPU BLAS's K panel; K <= 256 is then the one chain (the batch-invariant
//      bits), which costs nothing where most of the FLOPs are.
//    So the bits of a row depend on M (and, for M <= 8, on the thread count).
//  * ex.quant fp8: the input is first quantised (quantize_activations with
//    ex.quant_scale at ex.quant_granularity: a tensor scale depends on every
//    row of the call, as a dynamic per-tensor scale does) into a buffer; the
//    plans above then run on it.
void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, const float* bias, int M, int K,
                    int N) {
    if (M <= 0 || N <= 0) return;
    count_gemm('f', M, K, N);
    // This call's own: kept per thread, the buffer held its largest size
    // (a whole batch's rows) through every later phase.
    std::unique_ptr<float[]> quantised;
    if (is_fp8(ex.quant)) {
        quantised.reset(new float[(size_t)M * K]);
        quantize_activations(quantised.get(), nullptr, inp, M, K, ex.quant, ex.quant_scale, ex.quant_granularity);
        inp = quantised.get();
    }
    const IsaTable& T = isa_table();
    GemmCall g;
    g.A = inp;
    g.ars = K;
    g.acs = 1;
    g.B = w;
    g.ldb = N;
    g.C = out;
    g.ldc = N;
    g.K = std::max(K, 0);
    g.bias = bias;
    g.dt = ex.dtype;
    if (ex.family == Family::batch_invariant) {
        run_gemm(T, g, M, N, true);
        return;
    }
    const int S = fast_splitk_parts(M, g.K, num_threads());
    if (S <= 1) {
        g.kblock = fast_kblock(M);
        run_gemm(T, g, M, N, true);
        return;
    }
    // Split-K, tiled and threaded as any GEMM: each tile keeps its S partials
    // in registers and on the stack and sums them right away, so decode pays
    // about what one chain per output costs.
    run_tiles(M, N, g.K, true, [&](int m0, int m1, int n0, int n1) { T.gemm_splitk(g, S, m0, m1, n0, n1); });
}

// matmul_backward. Deterministic, independent of thread count (threads split
// disjoint outputs only):
//  * dinp[m,k]: one FMA chain over n = 0..N-1 ascending of dout[m,n]*w[k,n],
//    starting from the existing dinp[m,k] (from 0.0f when dinp_store is
//    overwrite; vectorised along k on a transposed copy of w).
//  * dw[k,n]: one FMA chain over m = 0..M-1 ascending of inp[m,k]*dout[m,n],
//    starting from the existing dw[k,n]; M is walked in blocks of 256 rows for
//    cache reuse, the chain carried through C (stays one chain).
//  * dbias[n]: dbias[n] + dout[0,n] + dout[1,n] + ... left to right.
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int M,
                     int K, int N, GradStore dinp_store) {
    if (M <= 0 || N <= 0 || K < 0) return;
    const IsaTable& T = isa_table();
    if (dinp && K > 0) count_gemm('d', M, K, N);
    if (dw && K > 0) count_gemm('w', M, K, N);
    if (dinp && K > 0) {
        thread_local std::vector<float> wt;
        if (wt.size() < (size_t)K * N) wt.resize((size_t)K * N);
        // wt[n*K + k] = w[k*N + n], its rows n in blocks of 16 on the pool:
        // on one thread the transpose (gathers) would be a serial stretch of every
        // small-M backward (3 % of a deep preset's warm-up, the other thread idle).
        // (wt is this thread's: the workers get its address, not their own copy)
        float* const wtp = wt.data();
        const int tb = (N + 15) / 16;
        parallel_for(
            tb,
            [&](int b, int e) {
                const int n0 = b * 16, n1 = std::min(N, e * 16);
                T.transpose(wtp + (int64_t)n0 * K, K, w + n0, N, K, n1 - n0);
            },
            tb > 1 && 8.0 * K * N >= kParallelWork && num_threads() > 1);
        GemmCall g;
        g.A = dout;
        g.ars = N;
        g.acs = 1;
        g.B = wt.data();
        g.ldb = K;
        g.C = dinp;
        g.ldc = K;
        g.K = N;
        g.init = dinp_store == GradStore::add ? GemmInit::carry : GemmInit::zero;
        run_gemm(T, g, M, K, true);
    }
    if (dw && K > 0) {
        constexpr int kMBlock = 256, kColBlock = 64;
        const int rb = (K + kRowQuantum - 1) / kRowQuantum;
        const int nb = (N + kColBlock - 1) / kColBlock;
        const double work = 2.0 * M * N * K;
        parallel_for(
            rb * nb,
            [&](int b, int e) {
                for (int m0 = 0; m0 < M; m0 += kMBlock) {
                    GemmCall g;
                    g.A = inp + (int64_t)m0 * K;
                    g.ars = 1;
                    g.acs = K;
                    g.B = dout + (int64_t)m0 * N;
                    g.ldb = N;
                    g.C = dw;
                    g.ldc = N;
                    g.K = std::min(kMBlock, M - m0);
                    g.init = GemmInit::carry;
                    for (int t = b; t < e; ++t) {
                        const int bi = t / nb, bj = t % nb;
                        T.gemm(g, bi * kRowQuantum, std::min(K, (bi + 1) * kRowQuantum), bj * kColBlock,
                               std::min(N, (bj + 1) * kColBlock));
                    }
                }
            },
            work >= kParallelWork && num_threads() > 1);
    }
    if (dbias)
        for (int m = 0; m < M; ++m) T.accumulate(dbias, dout + (int64_t)m * N, N);
}

}  // namespace mlk
