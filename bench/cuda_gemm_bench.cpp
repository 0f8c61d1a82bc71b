// mismatch-lab-bench-cuda-gemm: where the fast family's skinny split-K GEMM
// and cuBLAS cross over on this GPU, at the model presets' GEMM shapes.
//
// Each figure is the time per call of a stream of back-to-back calls (the
// host enqueues, the device runs), as decode issues them: the larger of the
// host's cost per call and the device's. Columns: the fast family's two plans
// (matmul.cu: skinny, cuBLAS with its operand conversion and epilogue) and
// the batch-invariant kernel, in microseconds per call, then which plan
// matmul_forward picks at that M. Without a CUDA device it says so and exits 0.
//
// usage: mismatch-lab-bench-cuda-gemm [--quick]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "kernels/cuda/device.h"
#include "kernels/cuda/internal.h"
#include "kernels/cuda/ops.h"

using namespace mlk;
using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
    int K, N;
    const char* what;
};

// Microseconds per call over `reps` back-to-back calls (after 20 untimed).
double us_per_call(int reps, const std::function<void()>& call) {
    for (int i = 0; i < 20; ++i) call();
    cuda::synchronize();
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) call();
    cuda::synchronize();
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / reps;
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    if (cuda::device_count() == 0) {
        std::printf("no CUDA device: nothing to time\n");
        return 0;
    }
    std::printf("device: %s\n", cuda::device_description());
    const Shape shapes[] = {{128, 256, "q (small, deep)"},   {128, 128, "k / v, o"},
                            {128, 384, "dense gate / up"},   {384, 128, "dense down"},
                            {128, 64, "expert gate (deep)"}, {64, 128, "expert down (deep)"},
                            {1024, 1024, "a larger square"}};
    const int Ms[] = {1, 8, 32, 64, 128, 256, 512, 2048, 4864};  // 4864: dense-small's recompute
    const int reps = quick ? 200 : 2000;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (Dtype dt : {Dtype::bf16, Dtype::f32}) {
        std::printf("\nstorage %s, us per call: fast skinny | fast cuBLAS | batch-invariant | picked\n",
                    dt == Dtype::bf16 ? "bf16" : "fp32");
        for (const Shape& s : shapes) {
            const int maxM = Ms[sizeof(Ms) / sizeof(Ms[0]) - 1];
            std::vector<float> x((size_t)maxM * s.K), w((size_t)s.K * s.N);
            for (auto& v : x) v = round_to(u(rng), dt);
            for (auto& v : w) v = round_to(u(rng), dt);
            cuda::Buffer<float> dx(x), dw(w), dout((size_t)maxM * s.N);
            for (int M : Ms) {
                const auto run = [&](Family fam, cuda::detail::FastGemm plan) {
                    return us_per_call(reps, [&] {
                        cuda::detail::matmul_forward_planned({fam, dt}, dout.data(), dx.data(), dw.data(), nullptr, M,
                                                             s.K, s.N, plan);
                    });
                };
                const double sk = run(Family::fast, cuda::detail::FastGemm::skinny);
                const double cb = run(Family::fast, cuda::detail::FastGemm::cublas);
                const double bi = run(Family::batch_invariant, cuda::detail::FastGemm::by_batch);
                const bool skinny = cuda::detail::fast_gemm_plan(M, s.K, s.N) == cuda::detail::FastGemm::skinny;
                std::printf("  K %4d N %4d M %5d  %8.2f %8.2f %8.2f  %-6s  %s\n", s.K, s.N, M, sk, cb, bi,
                            skinny ? "skinny" : "cuBLAS", s.what);
            }
        }
    }
    return 0;
}
