#include "app/cli/bench_blas.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <vector>

#include <cblas.h>

namespace mlk::cli {

namespace {

// Milliseconds per call: one call to warm up, then the best of repeated
// batches lasting about 2 ms in all (shapes run thousands of times a step, so
// the caches are warm there too).
double ms_per_call(const std::function<void()>& f) {
    using Clock = std::chrono::steady_clock;
    f();
    const auto t0 = Clock::now();
    f();
    const double one = std::max(std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), 1e-4);
    const int reps = std::clamp((int)std::ceil(0.5 / one), 1, 1000);
    double best = one;
    for (int batch = 0; batch < 4; ++batch) {
        const auto s = Clock::now();
        for (int r = 0; r < reps; ++r) f();
        best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - s).count() / reps);
    }
    return best;
}

}  // namespace

GemmComparison compare_with_openblas(const GemmShapeLog& log, Family family, int steps) {
    GemmComparison out;
    out.shapes = log.size();
    openblas_set_num_threads(num_threads());
    const Exec ex{family, Dtype::f32, Dtype::f32, Dtype::f32, Dtype::f32};
    std::vector<float> a, b, c;
    for (const auto& [s, calls] : log) {
        const double per_step = (double)calls / steps;
        out.gflop += 2.0 * s.M * s.K * s.N * per_step * 1e-9;
        a.assign((size_t)s.M * s.K, 0.5f);   // inp[M,K]
        b.assign((size_t)s.K * s.N, 0.25f);  // w[K,N]
        c.assign((size_t)std::max<int64_t>((int64_t)s.M * s.N, (int64_t)s.M * s.K), 0.0f);
        std::vector<float> dw((size_t)s.K * s.N, 0.0f);
        double ours = 0, theirs = 0;
        if (s.op == 'f') {  // out[M,N] = inp[M,K] @ w[K,N]
            ours = ms_per_call([&] { matmul_forward(ex, c.data(), a.data(), b.data(), nullptr, s.M, s.K, s.N); });
            theirs = ms_per_call([&] {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.M, s.N, s.K, 1.0f, a.data(), s.K, b.data(),
                            s.N, 0.0f, c.data(), s.N);
            });
        } else if (s.op == 'd') {  // dinp[M,K] += dout[M,N] @ w[K,N]^T; c holds dout
            std::vector<float> dout((size_t)s.M * s.N, 0.5f);
            ours = ms_per_call(
                [&] { matmul_backward(c.data(), nullptr, nullptr, dout.data(), a.data(), b.data(), s.M, s.K, s.N); });
            theirs = ms_per_call([&] {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.M, s.K, s.N, 1.0f, dout.data(), s.N, b.data(),
                            s.N, 1.0f, c.data(), s.K);
            });
        } else {  // 'w': dw[K,N] += inp[M,K]^T @ dout[M,N]
            std::vector<float> dout((size_t)s.M * s.N, 0.5f);
            ours = ms_per_call(
                [&] { matmul_backward(nullptr, dw.data(), nullptr, dout.data(), a.data(), b.data(), s.M, s.K, s.N); });
            theirs = ms_per_call([&] {
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.K, s.N, s.M, 1.0f, a.data(), s.K, dout.data(),
                            s.N, 1.0f, dw.data(), s.N);
            });
        }
        out.ours_ms += ours * per_step;
        out.openblas_ms += theirs * per_step;
    }
    return out;
}

}  // namespace mlk::cli
