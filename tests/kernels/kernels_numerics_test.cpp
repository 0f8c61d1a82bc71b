// The rounding points a numerics profile sets (kernels.h, Exec): fp8 e4m3 /
// e5m2 conversion against the formats' definitions for every code, the
// power-of-two quantisation scales, W8A8 matmul inputs, and the attention P
// tile and the statistics of RMSNorm, log-softmax and attention. Each point
// must change the bits where it applies, and nothing where it is fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_paths.h"
#include "tests/random_data.h"

using namespace mlk;

namespace {

struct Format {
    Dtype dt;
    int exp_bits, man_bits, bias;
    double max;
};
const Format kFormats[] = {{Dtype::fp8_e4m3, 4, 3, 7, 448.0}, {Dtype::fp8_e5m2, 5, 2, 15, 57344.0}};

// A code's value from the format's definition alone (OCP FP8): NaN codes are
// e4m3's S.1111.111 and e5m2's exponent 31 with a mantissa; e5m2's exponent
// 31 without one is infinity.
double value_of(uint8_t code, const Format& f) {
    const int s = code >> 7, e = (code >> f.man_bits) & ((1 << f.exp_bits) - 1), m = code & ((1 << f.man_bits) - 1);
    const double sign = s ? -1.0 : 1.0;
    if (f.dt == Dtype::fp8_e4m3 && e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
    if (f.dt == Dtype::fp8_e5m2 && e == 31)
        return m ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
    if (e == 0) return sign * std::ldexp((double)m, 1 - f.bias - f.man_bits);
    return sign * std::ldexp(1.0 + std::ldexp((double)m, -f.man_bits), e - f.bias);
}

// The finite non-negative values of a format with their codes, ascending.
std::vector<std::pair<double, uint8_t>> finite_values(const Format& f) {
    std::vector<std::pair<double, uint8_t>> v;
    for (int c = 0; c < 128; ++c) {
        const double x = value_of((uint8_t)c, f);
        if (std::isfinite(x)) v.push_back({x, (uint8_t)c});
    }
    std::sort(v.begin(), v.end());
    return v;
}

bool same(float a, float b) { return (std::isnan(a) && std::isnan(b)) || float_bits(a) == float_bits(b); }

}  // namespace

TEST(KernelsFp8, EveryCodeDecodesToTheFormatsValue) {
    for (const Format& f : kFormats) {
        SCOPED_TRACE(dtype_name(f.dt));
        int nan = 0;
        for (int c = 0; c < 256; ++c) {
            const double want = value_of((uint8_t)c, f);
            const float got = fp8_bits_to_f32((uint8_t)c, f.dt);
            if (std::isnan(want)) {
                EXPECT_TRUE(std::isnan(got)) << c;
                ++nan;
                continue;
            }
            EXPECT_EQ((double)got, want) << "code " << c;
            EXPECT_EQ(std::signbit(got), c >= 128) << "code " << c;
        }
        EXPECT_EQ(nan, f.dt == Dtype::fp8_e4m3 ? 2 : 6);
        EXPECT_EQ(finite_values(f).back().first, f.max);
        EXPECT_EQ(fp8_max(f.dt), (float)f.max);
    }
}

// Encoding: each finite value maps to its code; between two neighbours the
// nearer wins and a tie goes to the even code (as integers, the even
// mantissa); past the largest finite value the result saturates there; the
// fast rounding used by the quantisers agrees everywhere.
TEST(KernelsFp8, EncodingRoundsToNearestEvenAndSaturates) {
    for (const Format& f : kFormats) {
        SCOPED_TRACE(dtype_name(f.dt));
        const auto vals = finite_values(f);
        for (double sign : {1.0, -1.0}) {
            for (size_t i = 0; i < vals.size(); ++i) {
                const auto [x, code] = vals[i];
                const uint8_t want = (uint8_t)(sign < 0 ? code | 0x80 : code);
                EXPECT_EQ(f32_to_fp8_bits((float)(sign * x), f.dt), want) << x;
                if (i + 1 == vals.size()) continue;
                const auto [y, ycode] = vals[i + 1];
                const float mid = (float)(sign * (x + y) / 2);  // exact in fp32 for both formats
                ASSERT_EQ((double)mid, sign * (x + y) / 2);
                const uint8_t even = (code % 2 == 0) ? code : ycode;
                EXPECT_EQ(f32_to_fp8_bits(mid, f.dt) & 0x7f, even) << "tie between " << x << " and " << y;
                const float below = std::nextafter(mid, 0.0f), above = std::nextafter(mid, (float)(sign * 1e30));
                EXPECT_EQ(f32_to_fp8_bits(below, f.dt) & 0x7f, code) << "just below the midpoint of " << x;
                EXPECT_EQ(f32_to_fp8_bits(above, f.dt) & 0x7f, ycode) << "just above the midpoint of " << x;
            }
            const uint8_t maxcode = vals.back().second;
            for (double big : {f.max * 1.01, f.max * 1.5, 1e30, (double)std::numeric_limits<float>::max()})
                EXPECT_EQ(f32_to_fp8_bits((float)(sign * big), f.dt) & 0x7f, maxcode) << big;
            const float inf = (float)(sign * std::numeric_limits<double>::infinity());
            EXPECT_EQ(fp8_bits_to_f32(f32_to_fp8_bits(inf, f.dt), f.dt),
                      f.dt == Dtype::fp8_e5m2 ? inf : (float)(sign * f.max));
        }
        EXPECT_TRUE(std::isnan(round_to(std::numeric_limits<float>::quiet_NaN(), f.dt)));

        // fp8_round against the encoder: every neighbour of every value and
        // midpoint, and a stride through all finite floats of both signs.
        std::vector<float> probes;
        for (size_t i = 0; i + 1 < vals.size(); ++i)
            for (float x : {(float)vals[i].first, (float)((vals[i].first + vals[i + 1].first) / 2)})
                for (float p : {x, std::nextafter(x, 0.0f), std::nextafter(x, 1e30f)}) probes.push_back(p);
        for (uint32_t u = 0; u < 0x7f800000u; u += 1237) probes.push_back(bits_float(u));
        probes.push_back(std::numeric_limits<float>::infinity());
        for (float p : probes)
            for (float x : {p, -p}) {
                const float want = fp8_bits_to_f32(f32_to_fp8_bits(x, f.dt), f.dt);
                ASSERT_TRUE(same(fp8_round(x, f.dt), want)) << x << " -> " << fp8_round(x, f.dt) << " vs " << want;
            }
    }
}

// Scales are the smallest power of two that brings the row into range, so
// quantise-dequantise never saturates and divides exactly.
TEST(KernelsFp8, PowerOfTwoScalesPerRowAndPerColumn) {
    testdata::for_each_isa([] {
        for (const Format& f : kFormats) {
            SCOPED_TRACE(dtype_name(f.dt));
            EXPECT_EQ(fp8_scale(0.0f, f.dt), 1.0f);
            EXPECT_EQ(fp8_scale((float)f.max, f.dt), 1.0f);
            EXPECT_EQ(fp8_scale((float)f.max * 2, f.dt), 2.0f);
            EXPECT_EQ(fp8_scale(std::nextafter((float)f.max * 2, 1e30f), f.dt), 4.0f);
            EXPECT_EQ(fp8_scale((float)f.max / 8, f.dt), 0.125f);
            const int M = 5, K = 37;
            auto x = testdata::uniform((size_t)M * K, 3, -3.0f, 3.0f);
            for (int k = 0; k < K; ++k) x[(size_t)2 * K + k] *= 1e-4f;   // a quiet row gets its own small scale
            for (int k = 0; k < K; ++k) x[(size_t)3 * K + k] *= 1e-40f;  // subnormal: the scale has no float inverse
            for (int k = 0; k < K; ++k) x[(size_t)4 * K + k] = 0.0f;
            // A row and a column whose largest magnitude is negative, a
            // binade above their largest positive value.
            for (int k = 0; k < K; ++k) x[(size_t)1 * K + k] = 0.1f * std::fabs(x[(size_t)1 * K + k]);
            x[(size_t)1 * K + 5] = -2.9f;
            x[7] = -2.95f;
            std::vector<float> q(x.size()), scale(M);
            quantize_rows(q.data(), scale.data(), x.data(), M, K, f.dt);
            for (int m = 0; m < M; ++m) {
                float amax = 0;
                for (int k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x[(size_t)m * K + k]));
                const float s = scale[m];
                int e = 0;
                EXPECT_EQ(std::frexp(s, &e), 0.5f) << "a power of two";
                EXPECT_LE(amax / s, (float)f.max);
                if (amax > 0) {
                    EXPECT_GT(amax / s, (float)f.max / 2) << "the smallest such power";
                }
                for (int k = 0; k < K; ++k) {
                    const size_t i = (size_t)m * K + k;
                    EXPECT_EQ(q[i], round_to(x[i] / s, f.dt) * s);
                    EXPECT_EQ(round_to(q[i] / s, f.dt), q[i] / s) << "on the fp8 grid times the scale";
                }
            }
            // Columns of a [K, N] weight: per output channel, the same rule.
            std::vector<float> w = x, cs(K);
            quantize_cols(w.data(), cs.data(), M, K, f.dt);
            std::vector<float> wt((size_t)K * M), qt(wt.size()), rs(K);
            for (int m = 0; m < M; ++m)
                for (int k = 0; k < K; ++k) wt[(size_t)k * M + m] = x[(size_t)m * K + k];
            quantize_rows(qt.data(), rs.data(), wt.data(), K, M, f.dt);
            for (int k = 0; k < K; ++k) {
                EXPECT_EQ(cs[k], rs[k]);
                for (int m = 0; m < M; ++m) EXPECT_EQ(w[(size_t)m * K + k], qt[(size_t)k * M + m]);
            }
            // Enough rows to be split over threads: the same bits as row by row.
            const int BM = 1024, BK = 64;
            auto big = testdata::uniform((size_t)BM * BK, 5, -40.0f, 40.0f);
            std::vector<float> together(big.size()), alone(BK);
            quantize_rows(together.data(), nullptr, big.data(), BM, BK, f.dt);
            for (int m = 0; m < BM; m += 97) {
                quantize_rows(alone.data(), nullptr, big.data() + (size_t)m * BK, 1, BK, f.dt);
                for (int k = 0; k < BK; ++k) ASSERT_EQ(together[(size_t)m * BK + k], alone[k]) << m << "," << k;
            }
        }
    });
}

// W8A8: with quant set, the matmul equals the fp32 matmul of the quantised
// rows, and differs from the unquantised one.
TEST(KernelsNumerics, Fp8MatmulQuantisesItsInputRows) {
    const int M = 9, K = 48, N = 40;
    const auto x = testdata::uniform((size_t)M * K, 5, -2, 2);
    auto w = testdata::uniform((size_t)K * N, 6, -0.5f, 0.5f);
    quantize_cols(w.data(), nullptr, K, N, Dtype::fp8_e4m3);
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        std::vector<float> xq(x.size()), want((size_t)M * N), got(want.size()), plain(want.size());
        quantize_rows(xq.data(), nullptr, x.data(), M, K, Dtype::fp8_e4m3);
        matmul_forward({fam, Dtype::bf16}, want.data(), xq.data(), w.data(), nullptr, M, K, N);
        matmul_forward({fam, Dtype::bf16, Dtype::f32, Dtype::f32, Dtype::fp8_e4m3}, got.data(), x.data(), w.data(),
                       nullptr, M, K, N);
        matmul_forward({fam, Dtype::bf16}, plain.data(), x.data(), w.data(), nullptr, M, K, N);
        for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(same(got[i], want[i])) << i;
        size_t differ = 0;
        for (size_t i = 0; i < got.size(); ++i) differ += !same(got[i], plain[i]);
        EXPECT_GT(differ, got.size() / 2);
    }
}

// The statistics: RMSNorm's 1/rms and log-softmax's log-sum-exp are stored
// at ex.stats; everything downstream of them moves accordingly.
TEST(KernelsNumerics, StatisticsAreRoundedWhereTheProfileSaysSo) {
    const int M = 6, C = 80;
    const auto x = testdata::uniform((size_t)M * C, 8, -3, 3), w = testdata::uniform(C, 9, 0.5f, 1.5f);
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        std::vector<float> o32((size_t)M * C), o16(o32.size()), r32(M), r16(M);
        rmsnorm_forward({fam, Dtype::f32}, o32.data(), r32.data(), x.data(), w.data(), 1e-6f, M, C);
        rmsnorm_forward({fam, Dtype::f32, Dtype::f32, Dtype::bf16}, o16.data(), r16.data(), x.data(), w.data(), 1e-6f,
                        M, C);
        for (int m = 0; m < M; ++m) {
            EXPECT_EQ(r16[m], round_to(r32[m], Dtype::bf16));
            EXPECT_NE(r16[m], r32[m]) << "row " << m << " (a random rms is not a bf16 value)";
            for (int c = 0; c < C; ++c) {
                const size_t i = (size_t)m * C + c;
                EXPECT_EQ(o16[i], (x[i] * r16[m]) * w[c]);
            }
        }
        std::vector<float> lp32((size_t)M * C), lp16(lp32.size());
        logsoftmax_forward({fam, Dtype::f32}, lp32.data(), x.data(), 1.0f, M, C);
        logsoftmax_forward({fam, Dtype::f32, Dtype::f32, Dtype::bf16}, lp16.data(), x.data(), 1.0f, M, C);
        for (int m = 0; m < M; ++m) {
            // lp = z - lse: the rounding of lse shifts a row by one constant.
            const float lse32 = x[(size_t)m * C] - lp32[(size_t)m * C], lse16 = x[(size_t)m * C] - lp16[(size_t)m * C];
            EXPECT_EQ(lse16, round_to(lse16, Dtype::bf16)) << "row " << m;
            EXPECT_NEAR(lse16, lse32, std::fabs(lse32) / 128);
            EXPECT_NE(lp16[(size_t)m * C], lp32[(size_t)m * C]);
        }
    }
}

// The attention P tile (probs) and normaliser (stats): fp32 changes nothing,
// bf16 changes the output in prefill and in decode, in both families.
TEST(KernelsNumerics, AttentionProbsAndNormaliserAreRoundedWhereTheProfileSaysSo) {
    const int B = 2, T = 37, H = 4, Hkv = 2, D = 16;
    const size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D;
    const auto q = testdata::uniform(nq, 21, -2, 2), k = testdata::uniform(nk, 22, -2, 2),
               v = testdata::uniform(nk, 23);
    const int64_t cs = (int64_t)T * Hkv * D;
    std::vector<int32_t> slot = {0, 1}, len = {T, 20};
    std::vector<float> qd((size_t)B * H * D);
    for (int b = 0; b < B; ++b)
        std::copy_n(q.begin() + ((size_t)b * T + len[b] - 1) * H * D, H * D, qd.begin() + (size_t)b * H * D);
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        SCOPED_TRACE(fam == Family::fast ? "fast" : "batch_invariant");
        auto prefill = [&](Exec ex) {
            std::vector<float> out(nq);
            attention_forward(ex, out.data(), nullptr, q.data(), k.data(), v.data(), B, T, H, Hkv, D);
            return out;
        };
        auto decode = [&](Exec ex) {
            std::vector<float> out(qd.size());
            attention_decode(ex, out.data(), qd.data(), k.data(), v.data(), slot.data(), len.data(), cs, B, H, Hkv, D);
            return out;
        };
        for (auto run :
             {std::function<std::vector<float>(Exec)>(prefill), std::function<std::vector<float>(Exec)>(decode)}) {
            const auto base = run({fam, Dtype::f32});
            const auto again = run({fam, Dtype::f32, Dtype::f32, Dtype::f32});
            const auto probs = run({fam, Dtype::f32, Dtype::bf16, Dtype::f32});
            const auto stats = run({fam, Dtype::f32, Dtype::f32, Dtype::bf16});
            size_t dp = 0, ds = 0;
            for (size_t i = 0; i < base.size(); ++i) {
                ASSERT_TRUE(same(again[i], base[i]));
                dp += !same(probs[i], base[i]);
                ds += !same(stats[i], base[i]);
                EXPECT_NEAR(probs[i], base[i], 0.02f);
                EXPECT_NEAR(stats[i], base[i], 0.02f);
            }
            EXPECT_GT(dp, base.size() / 2);
            EXPECT_GT(ds, base.size() / 2);
        }
    }
}
