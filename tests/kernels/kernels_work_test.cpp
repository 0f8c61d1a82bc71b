// The work accounting `bench` divides by (kernels.h): each matmul and
// attention call adds its multiply-adds x 2 to the calling thread's count, the
// shape log records GEMMs as issued, and another thread's work never counts.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "kernels/kernels.h"
#include "tests/random_data.h"

using namespace mlk;

namespace {

template <class F>
double flops_of(F&& f) {
    const double before = kernel_flop_count();
    f();
    return kernel_flop_count() - before;
}

}  // namespace

TEST(KernelWork, MatmulCountsTwoFlopsPerMultiplyAdd) {
    const int M = 5, K = 7, N = 9;
    std::vector<float> a((size_t)M * K, 0.5f), w((size_t)K * N, 0.25f), out((size_t)M * N), dout((size_t)M * N, 1.0f),
        da((size_t)M * K), dw((size_t)K * N);
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        Exec ex;
        ex.family = fam;
        EXPECT_EQ(flops_of([&] { matmul_forward(ex, out.data(), a.data(), w.data(), nullptr, M, K, N); }),
                  2.0 * M * K * N);
    }
    EXPECT_EQ(flops_of([&] { matmul_backward(da.data(), nullptr, nullptr, dout.data(), a.data(), w.data(), M, K, N); }),
              2.0 * M * K * N);
    EXPECT_EQ(
        flops_of([&] { matmul_backward(da.data(), dw.data(), nullptr, dout.data(), a.data(), w.data(), M, K, N); }),
        4.0 * M * K * N);
    EXPECT_EQ(flops_of([&] { matmul_forward(Exec{}, out.data(), a.data(), w.data(), nullptr, 0, K, N); }), 0.0);
}

TEST(KernelWork, AttentionCountsTheCausalTriangle) {
    const int B = 2, T = 6, H = 4, Hkv = 2, D = 8;
    const auto q = testdata::uniform((size_t)B * T * H * D, 1), k = testdata::uniform((size_t)B * T * Hkv * D, 2),
               v = testdata::uniform((size_t)B * T * Hkv * D, 3);
    std::vector<float> out((size_t)B * T * H * D), att((size_t)B * H * T * T), dq(q.size()), dk(k.size()), dv(v.size());
    // Query t reads t + 1 keys: sum over t of (t + 1) = T (T + 1) / 2 dot products of D, as many for P.V.
    const double fwd = 2.0 * 2.0 * B * H * D * (T * (T + 1) / 2);
    EXPECT_EQ(flops_of([&] {
                  attention_forward(Exec{}, out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
              }),
              fwd);
    EXPECT_EQ(flops_of([&] {
                  attention_backward(dq.data(), dk.data(), dv.data(), out.data(), att.data(), q.data(), k.data(),
                                     v.data(), B, T, H, Hkv, D);
              }),
              2 * fwd);
    // Decode: sequence s attends to len[s] cached positions.
    const int32_t slot[2] = {0, 1}, len[2] = {3, 6};
    EXPECT_EQ(flops_of([&] {
                  attention_decode(Exec{}, out.data(), q.data(), k.data(), v.data(), slot, len, (int64_t)T * Hkv * D, 2,
                                   H, Hkv, D);
              }),
              2.0 * 2.0 * H * D * (3 + 6));
}

TEST(KernelWork, ShapeLogRecordsEachGemmAsIssued) {
    const int M = 3, K = 4, N = 5;
    std::vector<float> a((size_t)M * K, 1.0f), w((size_t)K * N, 1.0f), out((size_t)M * N), dout((size_t)M * N, 1.0f),
        da((size_t)M * K), dw((size_t)K * N);
    GemmShapeLog log;
    set_gemm_shape_log(&log);
    matmul_forward(Exec{}, out.data(), a.data(), w.data(), nullptr, M, K, N);
    matmul_forward(Exec{}, out.data(), a.data(), w.data(), nullptr, M, K, N);
    matmul_backward(da.data(), dw.data(), nullptr, dout.data(), a.data(), w.data(), M, K, N);
    set_gemm_shape_log(nullptr);
    matmul_forward(Exec{}, out.data(), a.data(), w.data(), nullptr, M, K, N);  // not logged
    const GemmShapeLog want = {
        {GemmShape{'f', M, K, N}, 2}, {GemmShape{'d', M, K, N}, 1}, {GemmShape{'w', M, K, N}, 1}};
    EXPECT_EQ(log, want);
}

TEST(KernelWork, AnotherThreadsWorkIsNotCounted) {
    const int M = 64, K = 32, N = 32;
    std::vector<float> a((size_t)M * K, 1.0f), w((size_t)K * N, 1.0f), out((size_t)M * N), out2((size_t)M * N);
    const double mine = flops_of([&] {
        std::thread other([&] { matmul_forward(Exec{}, out2.data(), a.data(), w.data(), nullptr, M, K, N); });
        other.join();
        matmul_forward(Exec{}, out.data(), a.data(), w.data(), nullptr, M, K, N);
    });
    EXPECT_EQ(mine, 2.0 * M * K * N);
}
