// Every CPU kernel (both families, every ISA path this CPU has) against the
// slow reference in kernels/ref.h, plus the storage-precision rounding rules
// checked on hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/features.h"
#include "kernels/kernels.h"
#include "tests/bits.h"
#include "tests/kernels/isa_paths.h"
#include "tests/random_data.h"
#include "kernels/ref.h"

using namespace mlk;
using testdata::for_each_isa;

namespace {

bool same_bits(float a, float b) { return float_bits(a) == float_bits(b); }

const Family kFamilies[] = {Family::fast, Family::batch_invariant};
const char* fname(Family f) { return f == Family::fast ? "fast" : "batch_invariant"; }

struct MatShape {
    int M, K, N;
};

}  // namespace

// ---------------------------------------------------------------------------
// Storage precision
// ---------------------------------------------------------------------------

TEST(KernelsDtype, Names) {
    EXPECT_EQ(dtype_name(Dtype::bf16), "bf16");
    EXPECT_EQ(dtype_name(Dtype::f16), "fp16");
    EXPECT_EQ(dtype_name(Dtype::f32), "fp32");
}

TEST(KernelsDtype, Bf16HandComputed) {
    EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3f80);
    // 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7: ties to even -> 1
    EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f), 0x3f80);
    // 1 + 3*2^-8 halfway between 1+2^-7 (odd) and 1+2^-6 (even) -> up
    EXPECT_EQ(f32_to_bf16_bits(1.0f + 3 * 0x1p-8f), 0x3f82);
    // just above the halfway point rounds up
    EXPECT_EQ(f32_to_bf16_bits(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
    EXPECT_EQ(f32_to_bf16_bits(-2.0f), 0xc000);
    // FLT_MAX rounds past the largest bf16 (0x7f7f) to inf
    EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7f80);
    EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7f80);
    EXPECT_EQ(f32_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xff80);
    // subnormal fp32 keeps its top bits (bf16 has the fp32 exponent range)
    EXPECT_EQ(f32_to_bf16_bits(bits_float(0x00012345u)), 0x0001);
    EXPECT_EQ(f32_to_bf16_bits(bits_float(0x00018000u)), 0x0002);  // tie, 1 is odd -> 2
    // NaN stays a quiet NaN, including a signalling NaN whose payload is in the low bits
    EXPECT_TRUE(std::isnan(bf16_bits_to_f32(f32_to_bf16_bits(bits_float(0x7f800001u)))));
    EXPECT_TRUE(std::isnan(round_to(std::numeric_limits<float>::quiet_NaN(), Dtype::bf16)));
    EXPECT_EQ(round_to(-0.0f, Dtype::bf16), 0.0f);
    EXPECT_TRUE(std::signbit(round_to(-0.0f, Dtype::bf16)));
}

TEST(KernelsDtype, F16HandComputed) {
    EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16_bits(-2.5f), 0xc100);
    EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7bff);   // largest finite
    EXPECT_EQ(f32_to_f16_bits(65519.99f), 0x7bff);  // below the halfway point
    EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7c00);   // halfway, 0x3ff odd -> overflow to inf
    EXPECT_EQ(f32_to_f16_bits(1e9f), 0x7c00);
    EXPECT_EQ(f32_to_f16_bits(-std::numeric_limits<float>::infinity()), 0xfc00);
    EXPECT_EQ(f32_to_f16_bits(1.0f + 0x1p-11f), 0x3c00);      // tie -> even
    EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * 0x1p-11f), 0x3c02);  // tie -> even (up)
    EXPECT_EQ(f32_to_f16_bits(0x1p-14f), 0x0400);             // smallest normal
    EXPECT_EQ(f32_to_f16_bits(0x1p-24f), 0x0001);             // smallest subnormal
    EXPECT_EQ(f32_to_f16_bits(0x1p-25f), 0x0000);             // tie between 0 and 2^-24 -> 0
    EXPECT_EQ(f32_to_f16_bits(1.5f * 0x1p-25f), 0x0001);
    EXPECT_EQ(f32_to_f16_bits(3.0f * 0x1p-25f), 0x0002);      // 1.5 ulp: tie -> even 2
    EXPECT_EQ(f32_to_f16_bits(5.0f * 0x1p-25f), 0x0002);      // 2.5 ulp: tie -> even 2
    EXPECT_EQ(f32_to_f16_bits(0x1p-14f - 0x1p-25f), 0x0400);  // rounds up into the normals
    EXPECT_EQ(f32_to_f16_bits(-0x1p-30f), 0x8000);            // underflow keeps the sign
    EXPECT_EQ(f16_bits_to_f32(0x0001), 0x1p-24f);
    EXPECT_EQ(f16_bits_to_f32(0x03ff), 1023 * 0x1p-24f);
    EXPECT_EQ(f16_bits_to_f32(0x7bff), 65504.0f);
    EXPECT_EQ(f16_bits_to_f32(0xfc00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_TRUE(std::isnan(f16_bits_to_f32(f32_to_f16_bits(bits_float(0x7f800001u)))));
    // every half value round-trips
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = f16_bits_to_f32((uint16_t)h);
        if (std::isnan(f)) continue;
        ASSERT_EQ(f32_to_f16_bits(f), h) << std::hex << h;
    }
}

// The vectorised rounding (F16C, integer bf16 and fp8 code) equals the scalar
// rules on many random bit patterns, through round_buffer and copy_rounded on
// every ISA path.
TEST(KernelsDtype, RoundBufferMatchesScalarEverywhere) {
    std::mt19937 g(7);
    std::vector<float> src(4 * 65536 + 4099);
    for (auto& x : src) x = bits_float(g());
    src[0] = 65520.0f;
    src[1] = 0x1p-25f;
    src[2] = -0.0f;
    // fp8's ties to even (e4m3 then e5m2, normal and subnormal), its
    // saturation, a carry past the largest float, infinities.
    const float edges[] = {1.0625f,  1.1875f,  -1.0625f, 0x1.18p-8f, 1.125f,   1.375f,   -1.375f,
                           0x1p-17f, 0x3p-17f, 464.0f,   460.0f,     480.0f,   57344.0f, 61440.0f,
                           6e4f,     3.4e38f,  -3.4e38f, INFINITY,   -INFINITY};
    for (size_t i = 0; i < std::size(edges); ++i) src[3 + i] = edges[i];
    for_each_isa([&] {
        for (Dtype d : {Dtype::bf16, Dtype::f16, Dtype::fp8_e4m3, Dtype::fp8_e5m2, Dtype::f32})
            for (bool copy : {false, true}) {
                SCOPED_TRACE(copy ? "copy_rounded" : "round_buffer");
                std::vector<float> v = src, from = src;
                if (copy) {
                    // more than four 64K chunks, so the threaded split runs too
                    v.assign(src.size(), 0.0f);
                    copy_rounded(v.data(), from.data(), v.size(), d);
                    ASSERT_EQ(0, std::memcmp(from.data(), src.data(), src.size() * sizeof(float)));
                } else {
                    round_buffer(v.data(), v.size(), d);
                }
                for (size_t i = 0; i < v.size(); ++i) {
                    const float want = round_to(src[i], d);
                    if (std::isnan(want)) {
                        ASSERT_TRUE(std::isnan(v[i]));
                    } else {
                        ASSERT_TRUE(same_bits(v[i], want)) << i << " " << src[i];
                    }
                }
            }
    });
}

TEST(KernelsMath, ExpLogAccuracy) {
    for (double x = -87.0; x <= 88.5; x += 0.01237) {
        const float xf = (float)x;
        const double want = std::exp((double)xf);
        EXPECT_NEAR(cpu::exp_s(xf), want, 3e-7 * want) << xf;
    }
    EXPECT_EQ(cpu::exp_s(0.0f), 1.0f);
    EXPECT_EQ(cpu::exp_s(-std::numeric_limits<float>::infinity()), 0.0f);
    EXPECT_EQ(cpu::exp_s(100.0f), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(cpu::exp_s(std::numeric_limits<float>::quiet_NaN())));
    for (double x = 1e-30; x < 1e30; x *= 1.37) {
        const float xf = (float)x;
        const double want = std::log((double)xf);
        EXPECT_NEAR(cpu::log_s(xf), want, 2.5e-7 * std::max(1.0, std::fabs(want))) << xf;
    }
    EXPECT_EQ(cpu::log_s(1.0f), 0.0f);
}

// ---------------------------------------------------------------------------
// Matmul
// ---------------------------------------------------------------------------

TEST(KernelsRef, MatmulBatchInvariantIsBitwiseRef) {
    const MatShape shapes[] = {{1, 64, 64},   {3, 64, 52}, {8, 128, 384}, {17, 33, 7},    {64, 192, 64},
                               {70, 96, 128}, {5, 1, 16},  {2, 0, 9},     {13, 384, 128}, {1, 128, 16}};
    for_each_isa([&] {
        for (auto s : shapes)
            for (bool with_bias : {false, true}) {
                SCOPED_TRACE(testing::Message() << s.M << "x" << s.K << "x" << s.N << " bias " << with_bias);
                auto x = testdata::uniform((size_t)s.M * s.K, 1 + s.M);
                auto w = testdata::uniform((size_t)s.K * s.N, 2 + s.N);
                auto b = testdata::uniform(s.N, 3);
                std::vector<float> want((size_t)s.M * s.N), got(want.size(), -7.0f);
                ref::matmul_forward<float>(want.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, s.M, s.K,
                                           s.N);
                matmul_forward({Family::batch_invariant, Dtype::f32}, got.data(), x.data(), w.data(),
                               with_bias ? b.data() : nullptr, s.M, s.K, s.N);
                for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << i;
                // narrow storage: the same chain, rounded once at the end
                for (Dtype d : {Dtype::bf16, Dtype::f16}) {
                    matmul_forward({Family::batch_invariant, d}, got.data(), x.data(), w.data(),
                                   with_bias ? b.data() : nullptr, s.M, s.K, s.N);
                    for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], round_to(want[i], d)));
                }
            }
    });
}

TEST(KernelsRef, MatmulFastCloseToRef) {
    const MatShape shapes[] = {{1, 64, 64},   {4, 128, 128},  {8, 384, 128},  {6, 64, 52}, {9, 96, 128}, {33, 64, 8},
                               {64, 128, 16}, {130, 64, 192}, {256, 128, 52}, {1, 17, 5},  {3, 1, 33},   {7, 0, 4}};
    for_each_isa([&] {
        for (auto s : shapes) {
            SCOPED_TRACE(testing::Message() << s.M << "x" << s.K << "x" << s.N);
            auto x = testdata::uniform((size_t)s.M * s.K, 11 + s.K);
            auto w = testdata::uniform((size_t)s.K * s.N, 12 + s.M);
            auto b = testdata::uniform(s.N, 13);
            std::vector<float> got((size_t)s.M * s.N);
            matmul_forward({Family::fast, Dtype::f32}, got.data(), x.data(), w.data(), b.data(), s.M, s.K, s.N);
            for (int m = 0; m < s.M; ++m)
                for (int n = 0; n < s.N; ++n) {
                    double acc = b[n], mag = std::fabs(b[n]);
                    for (int k = 0; k < s.K; ++k) {
                        acc += (double)x[(size_t)m * s.K + k] * w[(size_t)k * s.N + n];
                        mag += std::fabs((double)x[(size_t)m * s.K + k] * w[(size_t)k * s.N + n]);
                    }
                    ASSERT_NEAR(got[(size_t)m * s.N + n], acc, (s.K + 2) * 6e-8 * mag + 1e-30) << m << "," << n;
                }
        }
    });
}

// ---------------------------------------------------------------------------
// Row kernels
// ---------------------------------------------------------------------------

TEST(KernelsRef, RmsnormCloseToRef) {
    const int shapes[][2] = {{1, 64}, {5, 52}, {64, 128}, {3, 7}, {100, 384}, {2, 16}};
    for_each_isa([&] {
        for (Family fam : kFamilies)
            for (auto s : shapes) {
                const int M = s[0], C = s[1];
                SCOPED_TRACE(testing::Message() << fname(fam) << " " << M << "x" << C);
                auto x = testdata::uniform((size_t)M * C, 21 + C, -3, 3);
                auto w = testdata::uniform(C, 22, 0.5, 1.5);
                std::vector<double> want((size_t)M * C), wr(M);
                auto xd = testdata::to_double(x), wd = testdata::to_double(w);
                ref::rmsnorm_forward<double>(want.data(), wr.data(), xd.data(), wd.data(), 1e-6, M, C);
                std::vector<float> got((size_t)M * C), rs(M);
                rmsnorm_forward({fam, Dtype::f32}, got.data(), rs.data(), x.data(), w.data(), 1e-6f, M, C);
                for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-6 * (1 + std::fabs(want[i])));
                for (int m = 0; m < M; ++m) ASSERT_NEAR(rs[m], wr[m], 2e-6 * wr[m]);
            }
    });
}

TEST(KernelsRef, LogSoftmaxAndEntropyCloseToRef) {
    const int shapes[][2] = {{1, 52}, {7, 52}, {64, 52}, {3, 5}, {20, 1000}, {1, 16}, {33, 17}};
    for_each_isa([&] {
        for (Family fam : kFamilies)
            for (auto s : shapes)
                for (float it : {1.0f, 1.0f / 0.7f}) {
                    const int M = s[0], V = s[1];
                    SCOPED_TRACE(testing::Message() << fname(fam) << " " << M << "x" << V << " it " << it);
                    auto z = testdata::uniform((size_t)M * V, 31 + V, -8, 8);
                    std::vector<double> want((size_t)M * V), went(M);
                    auto zd = testdata::to_double(z);
                    ref::logsoftmax_forward<double>(want.data(), zd.data(), (double)it, M, V);
                    std::vector<float> lp((size_t)M * V), ent(M);
                    logsoftmax_forward({fam, Dtype::f32}, lp.data(), z.data(), it, M, V);
                    for (size_t i = 0; i < lp.size(); ++i) ASSERT_NEAR(lp[i], want[i], 2e-6 * (1 + std::fabs(want[i])));
                    // entropy of the (float) log-probs, against the double reference on the same input
                    auto lpd = testdata::to_double(lp);
                    ref::entropy_forward<double>(went.data(), lpd.data(), M, V);
                    entropy_forward({fam, Dtype::f32}, ent.data(), lp.data(), M, V);
                    for (int m = 0; m < M; ++m) ASSERT_NEAR(ent[m], went[m], 2e-6 * (1 + std::fabs(went[m])));
                    // gather
                    std::vector<int32_t> tgt(M);
                    for (int m = 0; m < M; ++m) tgt[m] = (m * 7919) % V;
                    std::vector<float> g(M);
                    logprob_gather(g.data(), lp.data(), tgt.data(), M, V);
                    for (int m = 0; m < M; ++m) ASSERT_EQ(g[m], lp[(size_t)m * V + tgt[m]]);
                }
    });
}

// The batch-invariant row plan (bi16) behind every row reduction, spelled out.
TEST(KernelsRef, RowSumFollowsTheBi16Plan) {
    for_each_isa([&] {
        for (int64_t n : {0, 1, 15, 16, 17, 100, 4097}) {
            auto x = testdata::uniform((size_t)n, 41 + (uint32_t)n, -1, 3);
            double want = 0, mag = 0;
            for (float v : x) {
                want += v;
                mag += std::fabs(v);
            }
            // the documented plan, spelled out
            float lanes[16] = {0};
            for (int64_t j = 0; j < n; ++j) lanes[j % 16] = lanes[j % 16] + x[j];
            for (int s = 8; s > 0; s >>= 1)
                for (int i = 0; i < s; ++i) lanes[i] = lanes[i] + lanes[i + s];
            const float got = cpu::isa_table().row_sum(cpu::Plan::bi16, x.data(), n);
            EXPECT_TRUE(same_bits(got, lanes[0])) << n;
            EXPECT_NEAR(got, want, 1e-6 * mag + 1e-30);
        }
    });
}

TEST(KernelsRef, RouterMatchesRef) {
    const int shapes[][3] = {{1, 8, 2}, {37, 8, 2}, {64, 16, 4}, {5, 6, 6}, {9, 64, 8}};
    for_each_isa([&] {
        for (Family fam : kFamilies)
            for (auto s : shapes) {
                const int M = s[0], E = s[1], k = s[2];
                SCOPED_TRACE(testing::Message() << fname(fam) << " M" << M << " E" << E << " k" << k);
                auto z = testdata::uniform((size_t)M * E, 51 + E, -2, 2);
                z[0] = z[1];  // a tie: the lower id goes first
                std::vector<int32_t> ids_ref((size_t)M * k), ids((size_t)M * k);
                std::vector<double> w_ref((size_t)M * k);
                auto zd = testdata::to_double(z);
                ref::router_topk_forward<double>(ids_ref.data(), w_ref.data(), zd.data(), M, E, k);
                std::vector<float> w((size_t)M * k), w2((size_t)M * k);
                router_topk_forward({fam, Dtype::f32}, ids.data(), w.data(), z.data(), M, E, k);
                EXPECT_EQ(ids, ids_ref);
                for (size_t i = 0; i < w.size(); ++i) ASSERT_NEAR(w[i], w_ref[i], 1e-6);
                router_replay_forward({fam, Dtype::f32}, w2.data(), z.data(), ids.data(), M, E, k);
                for (size_t i = 0; i < w.size(); ++i) ASSERT_TRUE(same_bits(w[i], w2[i]));
            }
    });
}

// The top-k plan is k repeated argmaxes by strict '>' over the experts not
// yet taken, from the first of them (ties keep the lower id; a NaN is never
// preferred, but is taken where it is the first untaken logit). The kernel
// picks them in one pass where a row has no NaN: rows full of ties, signed
// zeros, infinities, NaNs at the front, middle and end, and k > E must all
// give the ids of that plan, in its order.
TEST(KernelsRef, RouterTopkIsRepeatedArgmax) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    auto plan = [](const std::vector<float>& z, int k) {
        const int E = (int)z.size();
        std::vector<int32_t> ids;
        std::vector<bool> taken(E);
        for (int j = 0; j < k; ++j) {
            int best = -1;
            for (int e = 0; e < E; ++e)
                if (!taken[e] && (best < 0 || z[e] > z[best])) best = e;
            best = std::max(best, 0);
            taken[best] = true;
            ids.push_back(best);
        }
        return ids;
    };
    std::vector<std::vector<float>> rows = {
        {1, 1, 1, 1, 1, 1}, {0.0f, -0.0f, 0.0f, -0.0f}, {-inf, inf, -inf, inf, 3, 3},
        {nan, 1, 2, 3, 4},  {1, 2, nan, 3, nan, 0},     {4, 3, 2, 1, nan},
        {nan, nan, nan},    {-inf, -inf, -inf, 2},      {2, 1},
    };
    std::mt19937 rng(7);
    for (int r = 0; r < 40; ++r) {  // E = 48 as moe-deep, values on a coarse grid: many ties
        std::vector<float> z(48);
        for (float& v : z) v = (float)((int)(rng() % 9) - 4) * 0.5f;
        if (r % 5 == 0) z[rng() % 48] = nan;
        rows.push_back(z);
    }
    for_each_isa([&] {
        for (Family fam : kFamilies)
            for (const auto& z : rows) {
                const int E = (int)z.size();
                for (int k : {1, 2, 3, 6, E, E + 2}) {
                    SCOPED_TRACE(testing::Message() << fname(fam) << " E" << E << " k" << k << " row " << z[0]);
                    std::vector<int32_t> ids(k);
                    std::vector<float> w(k);
                    router_topk_forward({fam, Dtype::f32}, ids.data(), w.data(), z.data(), 1, E, k);
                    EXPECT_EQ(ids, plan(z, k));
                }
            }
    });
}

// The combine is one fp32 FMA chain per token and channel over the slots in
// order: bit for bit ref<float> in fp32 on every ISA and thread count (D not
// a multiple of 16 exercises the masked tail), and that result rounded in bf16.
TEST(KernelsRef, MoeCombineIsBitwiseRef) {
    const int shapes[][3] = {{1, 2, 16}, {37, 2, 40}, {300, 4, 128}, {5, 8, 7}};
    for_each_isa([&] {
        for (int threads : {1, 2})
            for (auto s : shapes) {
                const int M = s[0], k = s[1], D = s[2];
                SCOPED_TRACE(testing::Message() << "threads " << threads << " M" << M << " k" << k << " D" << D);
                set_num_threads(threads);
                const int rows = 3 * k;  // slots point into a pool of expert rows, some shared
                const auto pool = testdata::uniform((size_t)rows * D, 61 + D, -3, 3);
                const auto w = testdata::uniform((size_t)M * k, 62 + k, 0, 1);
                std::vector<const float*> slot((size_t)M * k);
                for (size_t i = 0; i < slot.size(); ++i) slot[i] = pool.data() + (i * 7 % rows) * D;
                std::vector<float> want((size_t)M * D), got((size_t)M * D), got16((size_t)M * D);
                ref::moe_combine_forward<float>(want.data(), slot.data(), w.data(), M, k, D);
                moe_combine_forward({Family::fast, Dtype::f32}, got.data(), slot.data(), w.data(), M, k, D);
                moe_combine_forward({Family::batch_invariant, Dtype::bf16}, got16.data(), slot.data(), w.data(), M, k,
                                    D);
                for (size_t i = 0; i < want.size(); ++i) {
                    ASSERT_TRUE(same_bits(got[i], want[i])) << i << ": " << got[i] << " vs " << want[i];
                    ASSERT_TRUE(same_bits(got16[i], round_to(want[i], Dtype::bf16))) << i;
                }
            }
    });
    set_num_threads(0);
}

// Its backward: dy a plain fp32 product and each slot's gate-weight gradient
// one double chain over the channels, so bit for bit the reference on every
// ISA, for expert row counts that leave short groups of chains (n % 4 != 0)
// and D that leaves a masked tail; an fp32 chain differs, so the test can tell.
TEST(KernelsRef, MoeCombineBackwardIsBitwiseRef) {
    const int shapes[][4] = {{1, 2, 16, 3}, {37, 2, 40, 5}, {300, 4, 128, 97}, {5, 8, 7, 2}};
    for_each_isa([&] {
        for (auto s : shapes) {
            const int M = s[0], k = s[1], D = s[2], n = s[3];
            SCOPED_TRACE(testing::Message() << "M" << M << " k" << k << " D" << D << " n" << n);
            const auto dout = testdata::uniform((size_t)M * D, 71 + D, -3, 3);
            const auto y = testdata::uniform((size_t)n * D, 72 + n, -3, 3);
            const auto w = testdata::uniform((size_t)M * k, 73 + k, 0, 1);
            std::vector<int32_t> slots(n);
            for (int r = 0; r < n; ++r) slots[r] = (int32_t)(((int64_t)r * 7 + 3) % ((int64_t)M * k));
            std::sort(slots.begin(), slots.end());
            slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
            const int rows = (int)slots.size();
            std::vector<float> want_dy((size_t)rows * D), got_dy(want_dy.size());
            std::vector<float> want_dw((size_t)M * k, -1.0f), got_dw(want_dw.size(), -1.0f);
            ref::moe_combine_backward(want_dy.data(), want_dw.data(), dout.data(), y.data(), w.data(), slots.data(),
                                      rows, k, D);
            moe_combine_backward(got_dy.data(), got_dw.data(), dout.data(), y.data(), w.data(), slots.data(), rows, k,
                                 D);
            for (size_t i = 0; i < want_dy.size(); ++i) ASSERT_TRUE(same_bits(got_dy[i], want_dy[i])) << i;
            for (size_t i = 0; i < want_dw.size(); ++i)
                ASSERT_TRUE(same_bits(got_dw[i], want_dw[i])) << i << ": " << got_dw[i] << " vs " << want_dw[i];
            // A float chain (what a vector of fp32 lanes would keep) gives
            // other bits for some slot of the larger shapes.
            if (D < 40) continue;
            bool differs = false;
            for (int r = 0; r < rows && !differs; ++r) {
                const float* g = dout.data() + (int64_t)(slots[r] / k) * D;
                float dot = 0;
                for (int d = 0; d < D; ++d) dot = std::fma(g[d], y[(size_t)r * D + d], dot);
                differs = !same_bits(dot, want_dw[slots[r]]);
            }
            EXPECT_TRUE(differs);
        }
    });
}

// ---------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------

TEST(KernelsRef, SwigluAddEmbedding) {
    for_each_isa([&] {
        for (int64_t n : {1, 15, 192, 1000, 70001}) {
            auto g = testdata::uniform((size_t)n, 61, -12, 12), u = testdata::uniform((size_t)n, 62);
            std::vector<float> want((size_t)n), got((size_t)n);
            ref::swiglu_forward<float>(want.data(), g.data(), u.data(), n);
            for (Family fam : kFamilies) {
                swiglu_forward({fam, Dtype::f32}, got.data(), g.data(), u.data(), n);
                for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got[i], want[i], 4e-7 * std::fabs(want[i]) + 1e-30);
            }
            std::vector<float> y = u;
            add_inplace(y.data(), g.data(), n, Dtype::bf16);
            for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(y[i], round_to(u[i] + g[i], Dtype::bf16)));
        }
        const int Vn = 52, C = 40, M = 9;
        auto table = testdata::uniform((size_t)Vn * C, 63);
        std::vector<int32_t> tok = {3, 0, 51, 3, 7, 7, 7, 1, 50};
        std::vector<float> want((size_t)M * C), got((size_t)M * C);
        ref::embedding_forward<float>(want.data(), tok.data(), table.data(), M, C);
        embedding_forward(got.data(), tok.data(), table.data(), M, C, Dtype::f32);
        EXPECT_EQ(got, want);
        embedding_forward(got.data(), tok.data(), table.data(), M, C, Dtype::f16);
        for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], round_to(want[i], Dtype::f16)));
    });
}

TEST(KernelsRef, RopeBitwiseRef) {
    const int M = 11, H = 3;
    for_each_isa([&] {
        for (int D : {2, 16, 32, 34, 64})
            for (float theta : {10000.0f, 500000.0f}) {
                auto x = testdata::uniform((size_t)M * H * D, 71 + D);
                std::vector<int32_t> pos = {0, 1, 2, 5, 127, 128, 300, 4095, 7, 0, 77};
                std::vector<float> want = x, got = x;
                ref::rope_forward<float>(want.data(), pos.data(), M, H, D, (double)theta);
                rope_forward(got.data(), pos.data(), M, H, D, theta, Dtype::f32);
                for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i])) << D << " " << i;
                got = x;
                rope_forward(got.data(), pos.data(), M, H, D, theta, Dtype::bf16);
                for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], round_to(want[i], Dtype::bf16)));
                ref::rope_backward<float>(want.data(), pos.data(), M, H, D, (double)theta);
                got = x;
                rope_forward(got.data(), pos.data(), M, H, D, theta, Dtype::f32);
                rope_backward(got.data(), pos.data(), M, H, D, theta);
                for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same_bits(got[i], want[i]));
                for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], x[i], 1e-6);  // inverse rotation
            }
    });
}

// ---------------------------------------------------------------------------
// Attention
// ---------------------------------------------------------------------------

namespace {
struct AttShape {
    int B, T, H, Hkv, D;
};
const AttShape kAttShapes[] = {{2, 9, 4, 2, 16}, {1, 70, 2, 1, 32}, {3, 17, 2, 2, 8},
                               {1, 1, 1, 1, 16}, {2, 33, 4, 4, 64}, {1, 20, 6, 3, 20}};
}  // namespace

TEST(KernelsRef, AttentionPrefillAndDecodeCloseToRef) {
    for_each_isa([&] {
        for (Family fam : kFamilies)
            for (auto s : kAttShapes) {
                SCOPED_TRACE(testing::Message()
                             << fname(fam) << " B" << s.B << " T" << s.T << " H" << s.H << "/" << s.Hkv << " D" << s.D);
                const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * s.T * s.Hkv * s.D;
                auto q = testdata::uniform(nq, 81 + s.T, -2, 2), k = testdata::uniform(nk, 82 + s.D, -2, 2),
                     v = testdata::uniform(nk, 83);
                std::vector<double> want(nq), watt((size_t)s.B * s.H * s.T * s.T);
                auto qd = testdata::to_double(q), kd = testdata::to_double(k), vd = testdata::to_double(v);
                ref::attention_forward<double>(want.data(), watt.data(), qd.data(), kd.data(), vd.data(), s.B, s.T, s.H,
                                               s.Hkv, s.D);
                std::vector<float> out(nq), att(watt.size(), -1.0f);
                attention_forward({fam, Dtype::f32}, out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T,
                                  s.H, s.Hkv, s.D);
                for (size_t i = 0; i < nq; ++i) ASSERT_NEAR(out[i], want[i], 3e-6) << i;
                for (size_t i = 0; i < att.size(); ++i) ASSERT_NEAR(att[i], watt[i], 3e-6) << i;
                // decode every position against a cache laid out [slot][Tmax][Hkv][D]
                const int Tmax = s.T + 3;
                const int64_t cs = (int64_t)Tmax * s.Hkv * s.D;
                std::vector<float> kc((size_t)s.B * cs, 0.0f), vc((size_t)s.B * cs, 0.0f);
                for (int b = 0; b < s.B; ++b)
                    for (int t = 0; t < s.T; ++t)
                        for (int i = 0; i < s.Hkv * s.D; ++i) {
                            const int slot = s.B - 1 - b;  // slots need not follow the batch order
                            kc[slot * cs + (size_t)t * s.Hkv * s.D + i] = k[((size_t)b * s.T + t) * s.Hkv * s.D + i];
                            vc[slot * cs + (size_t)t * s.Hkv * s.D + i] = v[((size_t)b * s.T + t) * s.Hkv * s.D + i];
                        }
                for (int t = 0; t < s.T; ++t) {
                    std::vector<float> qt((size_t)s.B * s.H * s.D), ot(qt.size());
                    std::vector<int32_t> slot(s.B), len(s.B);
                    for (int b = 0; b < s.B; ++b) {
                        slot[b] = s.B - 1 - b;
                        len[b] = t + 1;
                        std::copy_n(q.begin() + ((size_t)b * s.T + t) * s.H * s.D, s.H * s.D,
                                    qt.begin() + (size_t)b * s.H * s.D);
                    }
                    attention_decode({fam, Dtype::f32}, ot.data(), qt.data(), kc.data(), vc.data(), slot.data(),
                                     len.data(), cs, s.B, s.H, s.Hkv, s.D);
                    for (int b = 0; b < s.B; ++b)
                        for (int i = 0; i < s.H * s.D; ++i)
                            ASSERT_NEAR(ot[(size_t)b * s.H * s.D + i], want[((size_t)b * s.T + t) * s.H * s.D + i],
                                        3e-6);
                }
            }
    });
}

// A long decode (many KV splits in the fast family) and a single active query.
TEST(KernelsRef, AttentionDecodeLongContext) {
    const int H = 4, Hkv = 2, D = 32, L = 700;
    const int64_t cs = (int64_t)L * Hkv * D;
    auto kc = testdata::uniform((size_t)cs, 91, -2, 2), vc = testdata::uniform((size_t)cs, 92),
         q = testdata::uniform((size_t)H * D, 93, -2, 2);
    // reference: prefill of a batch of one over the first L positions, last row
    std::vector<double> qfull((size_t)L * H * D, 0.0), out((size_t)L * H * D);
    std::copy(q.begin(), q.end(), qfull.begin() + (size_t)(L - 1) * H * D);
    auto kd = testdata::to_double(kc), vd = testdata::to_double(vc);
    ref::attention_forward<double>(out.data(), nullptr, qfull.data(), kd.data(), vd.data(), 1, L, H, Hkv, D);
    for_each_isa([&] {
        for (Family fam : kFamilies) {
            std::vector<float> o((size_t)H * D);
            int32_t slot = 0, len = L;
            attention_decode({fam, Dtype::f32}, o.data(), q.data(), kc.data(), vc.data(), &slot, &len, cs, 1, H, Hkv,
                             D);
            for (int i = 0; i < H * D; ++i) ASSERT_NEAR(o[i], out[(size_t)(L - 1) * H * D + i], 3e-6) << fname(fam);
        }
    });
}

// Storage precision: every kernel computes in fp32 and rounds its outputs once
// (RNE) to ex.dtype, so a narrow output equals the rounded fp32 output.
TEST(KernelsRef, NarrowStorageIsRoundedFp32) {
    for_each_isa([&] {
        for (Family fam : kFamilies)
            for (Dtype dt : {Dtype::bf16, Dtype::f16}) {
                SCOPED_TRACE(testing::Message() << fname(fam) << " " << dtype_name(dt));
                auto check = [&](const std::vector<float>& narrow, const std::vector<float>& wide) {
                    for (size_t i = 0; i < wide.size(); ++i)
                        ASSERT_TRUE(same_bits(narrow[i], round_to(wide[i], dt))) << i;
                };
                const int M = 9, C = 52;
                auto x = testdata::uniform((size_t)M * C, 101, -3, 3), w = testdata::uniform(C, 102, 0.5, 1.5);
                std::vector<float> a((size_t)M * C), b((size_t)M * C), ra(M), rb(M);
                rmsnorm_forward({fam, Dtype::f32}, a.data(), ra.data(), x.data(), w.data(), 1e-5f, M, C);
                rmsnorm_forward({fam, dt}, b.data(), rb.data(), x.data(), w.data(), 1e-5f, M, C);
                check(b, a);
                logsoftmax_forward({fam, Dtype::f32}, a.data(), x.data(), 1.3f, M, C);
                logsoftmax_forward({fam, dt}, b.data(), x.data(), 1.3f, M, C);
                check(b, a);
                entropy_forward({fam, Dtype::f32}, ra.data(), a.data(), M, C);
                entropy_forward({fam, dt}, rb.data(), a.data(), M, C);
                check(rb, ra);
                swiglu_forward({fam, Dtype::f32}, a.data(), x.data(), w.data(), C);
                swiglu_forward({fam, dt}, b.data(), x.data(), w.data(), C);
                check(std::vector<float>(b.begin(), b.begin() + C), std::vector<float>(a.begin(), a.begin() + C));
                const int B = 2, T = 20, H = 2, D = 16;
                auto q = testdata::uniform((size_t)B * T * H * D, 103),
                     k = testdata::uniform((size_t)B * T * H * D, 104),
                     v = testdata::uniform((size_t)B * T * H * D, 105);
                std::vector<float> oa(q.size()), ob(q.size());
                attention_forward({fam, Dtype::f32}, oa.data(), nullptr, q.data(), k.data(), v.data(), B, T, H, H, D);
                attention_forward({fam, dt}, ob.data(), nullptr, q.data(), k.data(), v.data(), B, T, H, H, D);
                check(ob, oa);
            }
    });
}

// adamw_update from p0, m0, v0 against the reference, on every ISA path and
// thread count (elementwise, so nothing may depend on the split).
static void check_adamw_against_ref(const std::vector<float>& p0, const std::vector<float>& m0,
                                    const std::vector<float>& v0, const std::vector<float>& g, const AdamWStep& s) {
    const int64_t n = (int64_t)p0.size();
    std::vector<float> pr = p0, mr = m0, vr = v0;
    ref::adamw_update(pr.data(), mr.data(), vr.data(), g.data(), n, s.grad_scale, s.beta1, s.beta2, s.eps,
                      s.weight_decay, s.lr, s.bias_correction1, s.bias_correction2);
    ASSERT_NE(float_bits(pr[0]), float_bits(p0[0]));
    for_each_isa([&] {
        for (int threads : {1, 2, 3}) {
            SCOPED_TRACE(threads);
            set_num_threads(threads);
            std::vector<float> p = p0, m = m0, v = v0;
            adamw_update(p.data(), m.data(), v.data(), g.data(), n, s);
            EXPECT_TRUE(testdata::bits_equal(p, pr)) << "params";
            EXPECT_TRUE(testdata::bits_equal(m, mr)) << "first moment";
            EXPECT_TRUE(testdata::bits_equal(v, vr)) << "second moment";
        }
        set_num_threads(0);
    });
}

// The optimizer step gives the reference's bits over a length that leaves a
// ragged tail, with clipping, decay and bias correction all on: at step 3,
// and at step 400, where 1 - 0.9^400 has rounded to 1 and the CPU skips the
// first moment's division.
TEST(KernelsRef, AdamwBitwiseRef) {
    const int64_t n = 100003;
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> p0(n), m0(n), v0(n), g(n);
    for (int64_t i = 0; i < n; ++i) {
        p0[i] = nd(rng), m0[i] = 0.1f * nd(rng), v0[i] = std::abs(0.01f * nd(rng)), g[i] = nd(rng);
    }
    for (double t : {3.0, 400.0}) {
        SCOPED_TRACE(t);
        AdamWStep s;
        s.grad_scale = 0.37, s.beta1 = 0.9, s.beta2 = 0.99, s.eps = 1e-8, s.weight_decay = 0.01, s.lr = 3e-4;
        s.bias_correction1 = 1.0 - std::pow(0.9, t), s.bias_correction2 = 1.0 - std::pow(0.99, t);
        EXPECT_EQ(s.bias_correction1 == 1.0, t == 400.0);
        check_adamw_against_ref(p0, m0, v0, g, s);
    }
}

// The gradient norm's block sum gives the reference's eight chains' bits on
// every ISA: lengths around the chain count and a block with a ragged tail,
// values spanning 2^-60 .. 2^60 so a chain or combine in another order shows.
TEST(KernelsRef, SumSquaresBitwiseRefOnEveryIsa) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
    std::uniform_int_distribution<int> expo(-60, 60);
    std::vector<float> x(16384 + 13);
    for (float& v : x) v = std::ldexp(mant(rng), expo(rng));
    for_each_isa([&] {
        for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{23}, (int64_t)x.size()}) {
            SCOPED_TRACE(n);
            const double got = sum_squares(x.data(), n), want = ref::sum_squares(x.data(), n);
            EXPECT_EQ(std::memcmp(&got, &want, sizeof got), 0) << got << " vs " << want;
        }
    });
}

// The weight and key transposes (in-register 16 x 16 tiles) on every ISA:
// every element lands where the plain loop puts it, rows rows..ldd-1 of the
// destination are zeroed, nothing past `cols` destination rows is written.
// Shapes: one element, whole tiles, ragged rows and columns, padding.
TEST(KernelsRef, TransposeMatchesThePlainLoopOnEveryIsa) {
    struct Shape {
        int rows, cols, ldd;
        int64_t stride;
    };
    const float sentinel = -7.25f;
    for_each_isa([&] {
        for (Shape s : {Shape{1, 1, 1, 1}, Shape{16, 16, 16, 16}, Shape{32, 48, 32, 48}, Shape{17, 33, 40, 35},
                        Shape{5, 70, 5, 80}, Shape{64, 13, 70, 13}, Shape{128, 64, 128, 64}}) {
            SCOPED_TRACE(testing::Message() << s.rows << "x" << s.cols << " ldd " << s.ldd);
            std::vector<float> src((size_t)s.rows * s.stride);
            for (size_t i = 0; i < src.size(); ++i) src[i] = (float)i + 0.5f;
            const int extra = 2;  // destination rows past cols that must stay untouched
            std::vector<float> dst((size_t)(s.cols + extra) * s.ldd, sentinel);
            cpu::isa_table().transpose(dst.data(), s.ldd, src.data(), s.stride, s.rows, s.cols);
            int wrong = 0;
            for (int c = 0; c < s.cols + extra; ++c)
                for (int r = 0; r < s.ldd; ++r) {
                    const float want = c >= s.cols ? sentinel : r < s.rows ? src[(size_t)r * s.stride + c] : 0.0f;
                    wrong += dst[(size_t)c * s.ldd + r] != want;
                }
            EXPECT_EQ(wrong, 0);
        }
    });
}

// The router's rows run per ISA (their exponentials' fma and rint inline
// there): ids and weights, both families, fp32 and bf16, and the replay's
// weights, the same bits on every path as on the scalar one.
TEST(KernelsRef, RouterSameBitsOnEveryIsa) {
    const int M = 64, E = 48, k = 6;
    auto z = testdata::uniform((size_t)M * E, 77, -6, 6);
    z[5] = std::numeric_limits<float>::quiet_NaN();  // row 0 takes the argmax plan
    struct Out {
        std::vector<int32_t> ids;
        std::vector<float> w, replayed;
    };
    std::vector<Out> first;
    bool have_first = false;
    for_each_isa([&] {
        std::vector<Out> outs;
        for (Family fam : kFamilies)
            for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
                Out o{std::vector<int32_t>((size_t)M * k), std::vector<float>((size_t)M * k),
                      std::vector<float>((size_t)M * k)};
                router_topk_forward({fam, dt}, o.ids.data(), o.w.data(), z.data(), M, E, k);
                router_replay_forward({fam, dt}, o.replayed.data(), z.data(), o.ids.data(), M, E, k);
                outs.push_back(std::move(o));
            }
        if (!have_first) {
            first = outs;
            have_first = true;
            return;
        }
        for (size_t i = 0; i < outs.size(); ++i) {
            EXPECT_EQ(outs[i].ids, first[i].ids) << i;
            EXPECT_EQ(std::memcmp(outs[i].w.data(), first[i].w.data(), outs[i].w.size() * sizeof(float)), 0) << i;
            EXPECT_EQ(
                std::memcmp(outs[i].replayed.data(), first[i].replayed.data(), outs[i].replayed.size() * sizeof(float)),
                0)
                << i;
        }
    });
    ASSERT_TRUE(have_first);
}
