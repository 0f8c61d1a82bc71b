// mismatch-lab-bench-kernels: throughput of the CPU kernels on the model's
// shapes, as GFLOP/s and as a fraction of this CPU's measured FP32 peak.
//
// The peak comes from an FMA-throughput microbenchmark (12 independent FMA
// chains per thread on the widest vector unit in use, 1 thread and all
// threads). GEMM rows: forward for both families at decode (M=8) and training
// (M=1024) sizes, then backward (dinp + dw + dbias) at M=1024.
//
// usage: mismatch-lab-bench-kernels [--threads N] [--isa scalar|avx2|avx512] [--quick] [--pack-ab]
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/features.h"
#include "kernels/kernels.h"

using namespace mlk;
using Clock = std::chrono::steady_clock;

namespace {

double g_min_time = 0.08;  // seconds of repetitions per measurement

// Seconds per call: best of 5 batches, each batch repeated to >= g_min_time/5.
double time_call(const std::function<void()>& f) {
    f();  // warm up (tables, scratch, pool)
    auto t0 = Clock::now();
    f();
    double one = std::chrono::duration<double>(Clock::now() - t0).count();
    const int reps = std::max(1, (int)std::ceil(g_min_time / 5 / std::max(one, 1e-9)));
    double best = 1e30;
    for (int b = 0; b < 5; ++b) {
        auto s = Clock::now();
        for (int r = 0; r < reps; ++r) f();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - s).count() / reps);
    }
    return best;
}

std::vector<float> randv(size_t n, uint32_t seed) {
    std::mt19937 g(seed);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = d(g);
    return v;
}

// --pack-ab: the GEMMs at a deep preset's shapes (hidden 128, MLP 384; a
// recompute's 4864 rows, a decode step's 180) with B's panels packed and in
// place, the two interleaved call by call so that a burst of another tenant
// moves both: best time of each over the rounds, and their ratio.
void pack_ab() {
    struct Shape {
        char op;  // f: forward, d: input gradient, w: weight gradient
        int M, K, N;
    };
    const Shape shapes[] = {{'f', 4864, 128, 384}, {'f', 4864, 384, 128}, {'f', 4864, 128, 128},
                            {'f', 180, 128, 384},  {'f', 180, 384, 128},  {'d', 4864, 128, 384},
                            {'d', 4864, 384, 128}, {'w', 4864, 128, 384}, {'w', 4864, 384, 128}};
    std::printf("GEMM with B packed / in place, batch-invariant, best of 40 interleaved rounds\n");
    std::printf("%-2s %5s %4s %4s | %-10s %-10s | %s\n", "op", "M", "K", "N", "packed ms", "in place", "ratio");
    const Exec ex{Family::batch_invariant, Dtype::f32};
    for (const Shape& s : shapes) {
        auto a = randv((size_t)s.M * s.K, 1), w = randv((size_t)s.K * s.N, 2), dout = randv((size_t)s.M * s.N, 3);
        std::vector<float> out((size_t)s.M * std::max(s.N, s.K)), dw((size_t)s.K * s.N);
        const auto call = [&] {
            if (s.op == 'f') matmul_forward(ex, out.data(), a.data(), w.data(), nullptr, s.M, s.K, s.N);
            else if (s.op == 'd')
                matmul_backward(out.data(), nullptr, nullptr, dout.data(), a.data(), w.data(), s.M, s.K, s.N);
            else matmul_backward(nullptr, dw.data(), nullptr, dout.data(), a.data(), w.data(), s.M, s.K, s.N);
        };
        double best[2] = {1e30, 1e30};
        for (int round = 0; round < 40; ++round)
            for (int packed = 1; packed >= 0; --packed) {
                set_gemm_packing(packed);
                call();
                const auto t0 = Clock::now();
                call();
                best[packed] = std::min(best[packed], std::chrono::duration<double>(Clock::now() - t0).count());
            }
        set_gemm_packing(true);
        std::printf("%-2c %5d %4d %4d | %10.3f %10.3f | %.2f\n", s.op, s.M, s.K, s.N, best[1] * 1e3, best[0] * 1e3,
                    best[1] / best[0]);
    }
}

}  // namespace

int main(int argc, char** argv) {
    int threads = 0;
    bool ab = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = std::atoi(argv[++i]);
        } else if (!std::strcmp(argv[i], "--isa") && i + 1 < argc) {
            const char* s = argv[++i];
            cpu::force_isa(!std::strcmp(s, "scalar") ? cpu::Isa::scalar
                           : !std::strcmp(s, "avx2") ? cpu::Isa::avx2
                                                     : cpu::Isa::avx512);
        } else if (!std::strcmp(argv[i], "--quick")) {
            g_min_time = 0.02;
        } else if (!std::strcmp(argv[i], "--pack-ab")) {
            ab = true;
        } else {
            std::printf("usage: %s [--threads N] [--isa scalar|avx2|avx512] [--quick] [--pack-ab]\n", argv[0]);
            return 2;
        }
    }
    set_num_threads(threads);
    const int T = num_threads();
    const cpu::Isa isa = cpu::active_isa();
    std::printf("mismatch-lab kernels bench: ISA %s (detected %s), %d threads\n\n", cpu::isa_name(isa),
                cpu::isa_name(cpu::detected_isa()), T);
    if (ab) {
        pack_ab();
        return 0;
    }

    const double peak1 = fma_peak_gflops(1);
    const double peakT = fma_peak_gflops(T);
    std::printf("FP32 FMA peak (%s, 12 independent chains/thread): 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s\n\n",
                cpu::isa_name(isa), peak1, T, peakT);

    const int shapes[][2] = {{64, 64},   {64, 32},   {64, 192}, {192, 64}, {64, 52},  {128, 128},
                             {128, 384}, {384, 128}, {128, 52}, {64, 8},   {128, 16}, {96, 128}};
    std::printf("matmul forward  out[M,N] = inp[M,K] @ w[K,N] + bias   (GFLOP/s, %% of %d-thread peak)\n", T);
    std::printf("%-10s | %-22s %-22s | %-22s %-22s\n", "K x N", "M=8 fast", "M=8 batch-inv", "M=1024 fast",
                "M=1024 batch-inv");
    double sum_pct[4] = {0, 0, 0, 0};
    int nshapes = 0;
    for (auto s : shapes) {
        const int K = s[0], N = s[1];
        auto w = randv((size_t)K * N, 1), b = randv(N, 2);
        std::printf("%4d x %-3d |", K, N);
        int col = 0;
        for (int M : {8, 1024}) {
            auto x = randv((size_t)M * K, 3);
            std::vector<float> out((size_t)M * N);
            for (Family fam : {Family::fast, Family::batch_invariant}) {
                const Exec ex{fam, Dtype::f32};
                const double t =
                    time_call([&] { matmul_forward(ex, out.data(), x.data(), w.data(), b.data(), M, K, N); });
                const double gf = 2.0 * M * N * K / t * 1e-9;
                std::printf(" %7.1f (%4.1f%%) %6.2fus%s", gf, 100 * gf / peakT, t * 1e6, col == 1 ? " |" : "");
                sum_pct[col++] += 100 * gf / peakT;
            }
        }
        ++nshapes;
        std::printf("\n");
    }
    std::printf("%-10s |", "mean %peak");
    for (int c = 0; c < 4; ++c) std::printf("        %5.1f%%         %s", sum_pct[c] / nshapes, c == 1 ? " |" : "");
    std::printf("\n\n");

    std::printf("matmul backward M=1024 (dinp + dw + dbias; 4*M*K*N flop)\n");
    std::printf("%-10s | %-12s %-10s %-8s\n", "K x N", "GFLOP/s", "% peak", "time");
    double bsum = 0;
    for (auto s : shapes) {
        const int K = s[0], N = s[1], M = 1024;
        auto w = randv((size_t)K * N, 1), x = randv((size_t)M * K, 3), g = randv((size_t)M * N, 4);
        std::vector<float> dx((size_t)M * K), dw((size_t)K * N), db(N);
        const double t =
            time_call([&] { matmul_backward(dx.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), M, K, N); });
        const double gf = 4.0 * M * N * K / t * 1e-9;
        bsum += 100 * gf / peakT;
        std::printf("%4d x %-3d | %10.1f %8.1f%% %8.1fus\n", K, N, gf, 100 * gf / peakT, t * 1e6);
    }
    std::printf("%-10s | %19.1f%%\n\n", "mean", bsum / nshapes);

    // The training phase's own M (dense-small: 256 sequences of 19 tokens),
    // input and weight gradients apart: they run different loops (dw reduces
    // over M, in 256-row blocks carried through C).
    std::printf("matmul backward M=4864, dinp and dw apart (2*M*K*N flop each)\n");
    std::printf("%-10s | %-21s | %-21s\n", "K x N", "dinp GFLOP/s  % peak", "dw GFLOP/s    % peak");
    for (auto s : {std::array<int, 2>{128, 384}, {384, 128}, {128, 128}, {128, 64}}) {
        const int K = s[0], N = s[1], M = 4864;
        auto w = randv((size_t)K * N, 1), x = randv((size_t)M * K, 3), g = randv((size_t)M * N, 4);
        std::vector<float> dx((size_t)M * K), dw((size_t)K * N);
        const double td =
            time_call([&] { matmul_backward(dx.data(), nullptr, nullptr, g.data(), x.data(), w.data(), M, K, N); });
        const double tw =
            time_call([&] { matmul_backward(nullptr, dw.data(), nullptr, g.data(), x.data(), w.data(), M, K, N); });
        const double fl = 2.0 * M * N * K * 1e-9;
        std::printf("%4d x %-3d | %10.1f %8.1f%% | %10.1f %8.1f%%\n", K, N, fl / td, 100 * fl / td / peakT, fl / tw,
                    100 * fl / tw / peakT);
    }
    std::printf("\n");

    // Other kernels at model sizes (time per call).
    std::printf("other kernels (time per call, fast / batch-invariant)\n");
    {
        const int B = 8, Tq = 128, H = 4, Hkv = 2, D = 16;
        const size_t nq = (size_t)B * Tq * H * D, nk = (size_t)B * Tq * Hkv * D;
        auto q = randv(nq, 5), k = randv(nk, 6), v = randv(nk, 7), go = randv(nq, 8);
        std::vector<float> out(nq), att((size_t)B * H * Tq * Tq), dq(nq), dk(nk), dv(nk);
        double t[2];
        const double fl = 4.0 * B * H * (double)Tq * (Tq + 1) / 2 * D;
        // With the probabilities saved for a backward, then without (the
        // rollout's prefill and a log-probs-only recompute).
        for (float* saved : {att.data(), (float*)nullptr}) {
            for (int f = 0; f < 2; ++f) {
                const Exec ex{f ? Family::batch_invariant : Family::fast, Dtype::f32};
                t[f] = time_call(
                    [&] { attention_forward(ex, out.data(), saved, q.data(), k.data(), v.data(), B, Tq, H, Hkv, D); });
            }
            if (saved) std::printf("  attention prefill B=%d T=%d H=%d/%d D=%d : ", B, Tq, H, Hkv, D);
            else std::printf("  attention prefill, no saved probs     : ");
            std::printf("%8.1fus / %8.1fus  (%.1f / %.1f GFLOP/s)\n", t[0] * 1e6, t[1] * 1e6, fl / t[0] * 1e-9,
                        fl / t[1] * 1e-9);
        }
        const double tb = time_call([&] {
            attention_backward(dq.data(), dk.data(), dv.data(), go.data(), att.data(), q.data(), k.data(), v.data(), B,
                               Tq, H, Hkv, D);
        });
        std::printf("  attention backward (same shape)      : %8.1fus  (%.1f GFLOP/s)\n", tb * 1e6, 2 * fl / tb * 1e-9);
        const int Bq = 64, L = 128;
        std::vector<int32_t> slot(Bq), len(Bq, L);
        for (int s = 0; s < Bq; ++s) slot[s] = s % B;
        std::vector<float> qd((size_t)Bq * H * D), od(qd.size());
        for (int f = 0; f < 2; ++f) {
            const Exec ex{f ? Family::batch_invariant : Family::fast, Dtype::f32};
            t[f] = time_call([&] {
                attention_decode(ex, od.data(), qd.data(), k.data(), v.data(), slot.data(), len.data(),
                                 (int64_t)Tq * Hkv * D, Bq, H, Hkv, D);
            });
        }
        std::printf("  attention decode Bq=%d len=%d          : %8.1fus / %8.1fus\n", Bq, L, t[0] * 1e6, t[1] * 1e6);
    }
    {
        const int M = 1024, C = 128, V = 52;
        auto x = randv((size_t)M * C, 9), w = randv(C, 10), z = randv((size_t)M * V, 11);
        std::vector<float> y((size_t)M * C), rs(M), lp((size_t)M * V), ent(M);
        double t[2], u[2];
        for (int f = 0; f < 2; ++f) {
            const Exec ex{f ? Family::batch_invariant : Family::fast, Dtype::f32};
            t[f] = time_call([&] { rmsnorm_forward(ex, y.data(), rs.data(), x.data(), w.data(), 1e-6f, M, C); });
            u[f] = time_call([&] {
                logsoftmax_forward(ex, lp.data(), z.data(), 1.0f, M, V);
                entropy_forward(ex, ent.data(), lp.data(), M, V);
            });
        }
        std::printf("  rmsnorm M=%d C=%d                  : %8.1fus / %8.1fus\n", M, C, t[0] * 1e6, t[1] * 1e6);
        std::printf("  log_softmax+entropy M=%d V=%d       : %8.1fus / %8.1fus\n", M, V, u[0] * 1e6, u[1] * 1e6);
    }
    {
        // One family; bound by the double divisions, of which the first
        // moment's is skipped once its bias correction has rounded to 1.
        const int64_t n = 2578688;  // moe-small's parameter arena
        auto p = randv(n, 12), m = randv(n, 13), v = randv(n, 14), g = randv(n, 15);
        for (float& x : v) x = std::abs(x);
        double t[2];
        for (int i = 0; i < 2; ++i) {
            const double step = i ? 400 : 3;
            AdamWStep s;
            s.bias_correction1 = 1.0 - std::pow(s.beta1, step), s.bias_correction2 = 1.0 - std::pow(s.beta2, step);
            t[i] = time_call([&] { adamw_update(p.data(), m.data(), v.data(), g.data(), n, s); });
        }
        std::printf("  adamw n=%lld, step 3 / step 400       : %8.1fus / %8.1fus\n", (long long)n, t[0] * 1e6,
                    t[1] * 1e6);
    }
    return 0;
}
