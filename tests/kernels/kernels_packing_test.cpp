// The GEMM tiles read B from packed copies of its column panels
// (set_gemm_packing): a copy of the same values, so every kernel built on the
// tiles must give the same bits with it on and off, on every ISA, in both
// families, with bias, rounding, carried gradients, odd widths, an unaligned
// B and the triangular GEMMs of attention's backward.
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "kernels/cpu/features.h"
#include "kernels/kernels.h"
#include "tests/bits.h"
#include "tests/random_data.h"

using namespace mlk;
using testdata::bits_equal;

namespace {

class Restore {
public:
    ~Restore() {
        set_gemm_packing(true);
        cpu::force_isa(cpu::detected_isa());
        set_num_threads(0);
    }
};

// Runs `work` with packing off and on, on every ISA here, 1 and 2 threads.
void expect_packing_keeps_bits(const std::function<std::vector<float>()>& work) {
    for (int i = 0; i <= static_cast<int>(cpu::detected_isa()); ++i) {
        cpu::force_isa(static_cast<cpu::Isa>(i));
        for (int threads : {1, 2}) {
            SCOPED_TRACE(std::string(cpu::isa_name(static_cast<cpu::Isa>(i))) + ", threads " + std::to_string(threads));
            set_num_threads(threads);
            set_gemm_packing(false);
            const std::vector<float> in_place = work();
            set_gemm_packing(true);
            EXPECT_TRUE(bits_equal(work(), in_place));
        }
    }
}

}  // namespace

// Hundreds of rows a thread, so every thread's sweep packs its panels.
TEST(GemmPacking, MatmulForwardKeepsItsBits) {
    Restore restore;
    const int M = 400;
    struct Shape {
        int K, N;
    };
    // K = 520 runs the fast family's K blocks with the total in registers;
    // N = 100 and 17 end in a masked vector. (Small: the scalar path under
    // the sanitizers runs every one of these.)
    const Shape shapes[] = {{128, 160}, {37, 100}, {300, 17}, {520, 40}, {1, 48}};
    for (const Shape& s : shapes) {
        SCOPED_TRACE("K " + std::to_string(s.K) + " N " + std::to_string(s.N));
        const auto inp = testdata::uniform((size_t)M * s.K, 1);
        // B one float past an allocation's start: no row of it is aligned.
        const auto w = testdata::uniform((size_t)s.K * s.N + 1, 2);
        const auto bias = testdata::uniform(s.N, 3);
        expect_packing_keeps_bits([&] {
            std::vector<float> all;
            // fp32 in one family, bf16 rounding in the other.
            for (const Exec& ex : {Exec{Family::batch_invariant, Dtype::f32}, Exec{Family::fast, Dtype::bf16}}) {
                std::vector<float> out((size_t)M * s.N);
                matmul_forward(ex, out.data(), inp.data(), w.data() + 1, bias.data(), M, s.K, s.N);
                all.insert(all.end(), out.begin(), out.end());
            }
            return all;
        });
    }
}

TEST(GemmPacking, MatmulBackwardKeepsItsBits) {
    Restore restore;
    const int M = 500, K = 96, N = 200;
    const auto inp = testdata::uniform((size_t)M * K, 4), w = testdata::uniform((size_t)K * N, 5),
               dout = testdata::uniform((size_t)M * N, 6);
    expect_packing_keeps_bits([&] {
        // Input gradients carried onto existing values (GradStore::add), as
        // the residual stream's are.
        std::vector<float> di((size_t)M * K, 0.5f), dw((size_t)K * N, 0.25f), db(N, 0.0f);
        matmul_backward(di.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), M, K, N);
        std::vector<float> all = di;
        all.insert(all.end(), dw.begin(), dw.end());
        all.insert(all.end(), db.begin(), db.end());
        return all;
    });
}

// 128 positions: the score and gradient GEMMs of one head have 22 row tiles.
TEST(GemmPacking, AttentionKeepsItsBits) {
    Restore restore;
    const int B = 2, T = 128, H = 4, Hkv = 2, D = 16;
    const size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D;
    const auto q = testdata::uniform(nq, 7, -2, 2), k = testdata::uniform(nk, 8, -2, 2), v = testdata::uniform(nk, 9),
               dout = testdata::uniform(nq, 10);
    expect_packing_keeps_bits([&] {
        std::vector<float> all;
        for (Family fam : {Family::batch_invariant, Family::fast}) {
            std::vector<float> out(nq), att((size_t)B * H * T * T);
            attention_forward(Exec{fam, Dtype::f32}, out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv,
                              D);
            std::vector<float> dq(nq, 0.0f), dk(nk, 0.0f), dv(nk, 0.0f);
            attention_backward(dq.data(), dk.data(), dv.data(), dout.data(), att.data(), q.data(), k.data(), v.data(),
                               B, T, H, Hkv, D);
            for (const auto* x : {&out, &dq, &dk, &dv}) all.insert(all.end(), x->begin(), x->end());
        }
        return all;
    });
}
