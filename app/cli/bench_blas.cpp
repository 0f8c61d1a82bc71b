#include "app/cli/bench_blas.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cblas.h>  // declarations only: the library is opened at run time
#include <dlfcn.h>
#include <unistd.h>

#include "kernels/cpu/features.h"

namespace mlk::cli {

namespace {

// OpenBLAS is opened when `bench --blas` first needs it, not linked: linked,
// it loaded and started its thread in every CLI process, 3.2 MB of resident
// memory (VmRSS of an empty C program 1.1 MB, linked to it 4.4 MB), a
// percent of the MoE deep presets' peak for a library only `bench --blas`
// calls.
struct Openblas {
    decltype(&cblas_sgemm) sgemm = nullptr;
    decltype(&openblas_get_corename) corename = nullptr;
    decltype(&openblas_set_num_threads) set_num_threads = nullptr;
};

const Openblas& openblas_library() {
    static const Openblas lib = [] {
        void* h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
        if (!h) h = dlopen(MLK_OPENBLAS_LIBDIR "/libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
        if (!h)
            throw std::runtime_error(std::string("bench --blas: cannot open OpenBLAS (libopenblas.so.0): ") +
                                     dlerror() +
                                     "; install it (Debian 12: apt install libopenblas0; packaging/install-deps.sh "
                                     "does for a source build)");
        const auto symbol = [h](const char* name) {
            void* f = dlsym(h, name);
            if (!f) throw std::runtime_error(std::string("bench --blas: OpenBLAS has no ") + name);
            return f;
        };
        Openblas o;
        o.sgemm = reinterpret_cast<decltype(o.sgemm)>(symbol("cblas_sgemm"));
        o.corename = reinterpret_cast<decltype(o.corename)>(symbol("openblas_get_corename"));
        o.set_num_threads = reinterpret_cast<decltype(o.set_num_threads)>(symbol("openblas_set_num_threads"));
        return o;
    }();
    return lib;
}

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

// Debian 12's OpenBLAS names its generic x86-64 kernels so.
constexpr const char* kGenericCore = "Prescott";
// Set on re-execution: the core OpenBLAS's own detection had chosen.
constexpr const char* kDetectedVar = "MLK_OPENBLAS_DETECTED_CORE";

// After a call OpenBLAS's worker thread spins before it sleeps (measured: a
// whole core busy for about 0.12 s after a two-thread call). On a machine with
// as many cores as threads it takes that core from whatever runs next: our
// kernels, timed shape by shape right after OpenBLAS's calls, run up to 3.2
// times slower (weight gradient, M = 4864, K = 384, N = 128). So each library
// is timed in a pass of its own, and the bench waits this long after
// OpenBLAS's pass.
constexpr auto kOpenblasSpin = std::chrono::milliseconds(250);

// One GEMM of the log on fixed operands, by our kernels or by OpenBLAS.
// Built for each timing and dropped after it: an MoE preset's log holds
// hundreds of shapes (one per expert batch size), too many to hold at once.
struct ShapeCall {
    GemmShape s;
    std::vector<float> a, b, c, dout;
    explicit ShapeCall(const GemmShape& shape)
        : s(shape),
          a((size_t)s.M * s.K, 0.5f),                                                               // inp[M,K]
          b((size_t)s.K * s.N, 0.25f),                                                              // w[K,N]
          c((size_t)std::max({(int64_t)s.M * s.N, (int64_t)s.M * s.K, (int64_t)s.K * s.N}), 0.0f),  // out, dinp or dw
          dout(s.op == 'f' ? 0 : (size_t)s.M * s.N, 0.5f) {}
    void ours(const Exec& ex) {
        if (s.op == 'f')  // out[M,N] = inp[M,K] @ w[K,N]
            matmul_forward(ex, c.data(), a.data(), b.data(), nullptr, s.M, s.K, s.N);
        else if (s.op == 'd')  // dinp[M,K] += dout[M,N] @ w[K,N]^T
            matmul_backward(c.data(), nullptr, nullptr, dout.data(), a.data(), b.data(), s.M, s.K, s.N);
        else  // 'w': dw[K,N] += inp[M,K]^T @ dout[M,N]
            matmul_backward(nullptr, c.data(), nullptr, dout.data(), a.data(), b.data(), s.M, s.K, s.N);
    }
    void openblas() {
        const auto cblas_sgemm = openblas_library().sgemm;
        if (s.op == 'f')
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.M, s.N, s.K, 1.0f, a.data(), s.K, b.data(), s.N,
                        0.0f, c.data(), s.N);
        else if (s.op == 'd')
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s.M, s.K, s.N, 1.0f, dout.data(), s.N, b.data(), s.N,
                        1.0f, c.data(), s.K);
        else
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.K, s.N, s.M, 1.0f, a.data(), s.K, dout.data(), s.N,
                        1.0f, c.data(), s.N);
    }
};

}  // namespace

void use_openblas_kernels_for_this_cpu(const std::vector<std::string>& args) {
    if (std::getenv("OPENBLAS_CORETYPE")) return;
    const char* detected = openblas_library().corename();
    if (!detected || std::strcmp(detected, kGenericCore) != 0) return;
    const cpu::Isa isa = cpu::detected_isa();
    if (isa == cpu::Isa::scalar) return;
    setenv("OPENBLAS_CORETYPE", isa == cpu::Isa::avx512 ? "SkylakeX" : "Haswell", 1);
    setenv(kDetectedVar, detected, 1);
    std::vector<std::string> all{program_invocation_name, "bench"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : all) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    execv("/proc/self/exe", argv.data());
    // Still here: the bench goes on with the generic kernels, and says so.
    std::fprintf(stderr, "bench --blas: could not re-execute with OPENBLAS_CORETYPE (%s)\n", std::strerror(errno));
    unsetenv("OPENBLAS_CORETYPE");
    unsetenv(kDetectedVar);
}

OpenblasCore openblas_core() {
    OpenblasCore c;
    c.core = openblas_library().corename();
    if (const char* d = std::getenv(kDetectedVar)) c.chosen_by = "bench", c.detected = d;
    else if (std::getenv("OPENBLAS_CORETYPE")) c.chosen_by = "environment";
    else c.chosen_by = "openblas";
    return c;
}

GemmComparison compare_with_openblas(const GemmShapeLog& log, Family family, int steps) {
    GemmComparison out;
    out.shapes = log.size();
    openblas_library().set_num_threads(num_threads());
    const Exec ex{family, Dtype::f32, Dtype::f32, Dtype::f32, Dtype::f32};
    for (const auto& [s, n] : log) {
        ShapeCall call(s);
        out.gflop += 2.0 * s.M * s.K * s.N * n / steps * 1e-9;
        out.ours_ms += ms_per_call([&] { call.ours(ex); }) * n / steps;
    }
    for (const auto& [s, n] : log) {
        ShapeCall call(s);
        out.openblas_ms += ms_per_call([&] { call.openblas(); }) * n / steps;
    }
    std::this_thread::sleep_for(kOpenblasSpin);
    return out;
}

}  // namespace mlk::cli
