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
#include "kernels/scalar_math.h"
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
            constexpr Fp8Scale P2 = Fp8Scale::pow2;
            EXPECT_EQ(fp8_scale(0.0f, f.dt, P2), 1.0f);
            EXPECT_EQ(fp8_scale((float)f.max, f.dt, P2), 1.0f);
            EXPECT_EQ(fp8_scale((float)f.max * 2, f.dt, P2), 2.0f);
            EXPECT_EQ(fp8_scale(std::nextafter((float)f.max * 2, 1e30f), f.dt, P2), 4.0f);
            EXPECT_EQ(fp8_scale((float)f.max / 8, f.dt, P2), 0.125f);
            EXPECT_EQ(fp8_scale((float)f.max / 8, f.dt, P2, 1.0f), 0.125f) << "pow2 has no floor";
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
            quantize_activations(q.data(), scale.data(), x.data(), M, K, f.dt, P2, Fp8Granularity::channel);
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
            quantize_weight(w.data(), cs.data(), M, K, f.dt, P2, Fp8Granularity::channel);
            std::vector<float> wt((size_t)K * M), qt(wt.size()), rs(K);
            for (int m = 0; m < M; ++m)
                for (int k = 0; k < K; ++k) wt[(size_t)k * M + m] = x[(size_t)m * K + k];
            quantize_activations(qt.data(), rs.data(), wt.data(), K, M, f.dt, P2, Fp8Granularity::channel);
            for (int k = 0; k < K; ++k) {
                EXPECT_EQ(cs[k], rs[k]);
                for (int m = 0; m < M; ++m) EXPECT_EQ(w[(size_t)m * K + k], qt[(size_t)k * M + m]);
            }
            // Enough rows to be split over threads: the same bits as row by row.
            const int BM = 1024, BK = 64;
            auto big = testdata::uniform((size_t)BM * BK, 5, -40.0f, 40.0f);
            std::vector<float> together(big.size()), alone(BK);
            quantize_activations(together.data(), nullptr, big.data(), BM, BK, f.dt, P2, Fp8Granularity::channel);
            for (int m = 0; m < BM; m += 97) {
                quantize_activations(alone.data(), nullptr, big.data() + (size_t)m * BK, 1, BK, f.dt, P2,
                                     Fp8Granularity::channel);
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
    quantize_weight(w.data(), nullptr, K, N, Dtype::fp8_e4m3, Fp8Scale::fp32, Fp8Granularity::channel);
    for (Family fam : {Family::fast, Family::batch_invariant}) {
        std::vector<float> xq(x.size()), want((size_t)M * N), got(want.size()), plain(want.size());
        quantize_activations(xq.data(), nullptr, x.data(), M, K, Dtype::fp8_e4m3, Fp8Scale::fp32,
                             Fp8Granularity::channel);
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

// ---- the rounding points of the model's row and elementwise ops (Exec::norm,
// silu, rope, eager_softmax): every CPU ISA path and both families equal a
// scalar reference written here, and a bf16 point changes the bits of the
// default (fp32 point) on random data, whose bits equal the same reference
// with the point at fp32 (each expression rounded once).
namespace {

size_t count_differ(const std::vector<float>& a, const std::vector<float>& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += !same(a[i], b[i]);
    return n;
}

// exp as the kernels compute it: V::exp is exp_s lane by lane.
float exp_ref(float x) { return fmath::exp_s(x); }

}  // namespace

// RMSNorm: out = round(round(x * r, norm) * w, dtype), r the kernel's rstd
// (which the point leaves alone).
TEST(KernelsNumerics, RmsnormNormPointRoundsXTimesRstd) {
    const int M = 9;
    for (int C : {16, 80, 131}) {
        const auto x = testdata::uniform((size_t)M * C, 31 + C, -3, 3), w = testdata::uniform(C, 32, 0.5f, 1.5f);
        testdata::for_each_isa([&] {
            for (Family fam : {Family::fast, Family::batch_invariant})
                for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
                    SCOPED_TRACE(testing::Message()
                                 << "C " << C << (fam == Family::fast ? " fast " : " bi ") << dtype_name(dt));
                    std::vector<float> base((size_t)M * C), rbase(M);
                    rmsnorm_forward({fam, dt}, base.data(), rbase.data(), x.data(), w.data(), 1e-6f, M, C);
                    for (int m = 0; m < M; ++m)
                        for (int c = 0; c < C; ++c) {
                            const size_t i = (size_t)m * C + c;
                            ASSERT_TRUE(same(base[i], round_to((x[i] * rbase[m]) * w[c], dt))) << i;
                        }
                    for (Dtype norm : {Dtype::bf16, Dtype::f16}) {
                        SCOPED_TRACE(dtype_name(norm));
                        Exec ex{fam, dt};
                        ex.norm = norm;
                        std::vector<float> out((size_t)M * C), r(M);
                        rmsnorm_forward(ex, out.data(), r.data(), x.data(), w.data(), 1e-6f, M, C);
                        for (int m = 0; m < M; ++m) {
                            ASSERT_TRUE(same(r[m], rbase[m]));
                            for (int c = 0; c < C; ++c) {
                                const size_t i = (size_t)m * C + c;
                                const float want = round_to(round_to(x[i] * r[m], norm) * w[c], dt);
                                ASSERT_TRUE(same(out[i], want)) << i << ": " << out[i] << " vs " << want;
                            }
                        }
                        // (an fp16 point under bf16 storage is a finer rounding first: rarely seen)
                        EXPECT_GT(count_differ(out, base), dt == Dtype::f32      ? out.size() / 2
                                                           : norm == Dtype::bf16 ? out.size() / 20
                                                                                 : 0);
                    }
                }
        });
    }
}

// SwiGLU: out = round(round(g / (1 + exp(0 - g)), silu) * up, dtype).
TEST(KernelsNumerics, SwigluSiluPointRoundsTheActivation) {
    const int64_t n = 1037;
    const auto g = testdata::uniform(n, 41, -8, 8), u = testdata::uniform(n, 42, -2, 2);
    testdata::for_each_isa([&] {
        for (Family fam : {Family::fast, Family::batch_invariant})
            for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
                SCOPED_TRACE(testing::Message() << (fam == Family::fast ? "fast " : "bi ") << dtype_name(dt));
                std::vector<float> base(n);
                swiglu_forward({fam, dt}, base.data(), g.data(), u.data(), n);
                for (int64_t i = 0; i < n; ++i) {
                    const float s = g[i] / (1.0f + exp_ref(0.0f - g[i]));
                    ASSERT_TRUE(same(base[i], round_to(s * u[i], dt))) << i;
                }
                for (Dtype point : {Dtype::bf16, Dtype::f16}) {
                    SCOPED_TRACE(dtype_name(point));
                    Exec ex{fam, dt};
                    ex.silu = point;
                    std::vector<float> out(n);
                    swiglu_forward(ex, out.data(), g.data(), u.data(), n);
                    for (int64_t i = 0; i < n; ++i) {
                        const float s = g[i] / (1.0f + exp_ref(0.0f - g[i]));
                        const float want = round_to(round_to(s, point) * u[i], dt);
                        ASSERT_TRUE(same(out[i], want)) << i << ": " << out[i] << " vs " << want;
                    }
                    EXPECT_GT(count_differ(out, base), dt == Dtype::f32       ? (size_t)n / 2
                                                       : point == Dtype::bf16 ? (size_t)n / 20
                                                                              : 0);
                }
            }
    });
}

// RoPE with a narrow point: c = round(cos), s = round(sin) of the fp32 table
// (double angles cast to float), n1 = round(round(x1*c) - round(x2*s)), n2 =
// round(round(x2*c) + round(x1*s)), each rounding to the point, then to dtype.
TEST(KernelsNumerics, RopePointRoundsTheCacheAndTheRotation) {
    const int M = 11, H = 3;
    const float theta = 10000.0f;
    for (int D : {2, 16, 20, 34, 64})
        for (bool negative : {false, true}) {
            std::vector<int32_t> pos = {0, 1, 2, 5, 127, 128, 300, 4095, 7, 0, 77};
            if (negative) pos[3] = -5, pos[8] = -300;
            const auto x0 = testdata::uniform((size_t)M * H * D, 51 + D, -2, 2);
            const int half = D / 2;
            // pt: the arithmetic's precision, ct: the cos/sin cache's.
            auto reference = [&](Dtype dt, Dtype pt, Dtype ct) {
                std::vector<float> y = x0;
                for (int m = 0; m < M; ++m)
                    for (int i = 0; i < half; ++i) {
                        const double a = pos[m] * std::pow((double)theta, -2.0 * i / D);
                        const float c = round_to((float)std::cos(a), ct), s = round_to((float)std::sin(a), ct);
                        for (int h = 0; h < H; ++h) {
                            float* v = y.data() + ((size_t)m * H + h) * D;
                            const float x1 = v[i], x2 = v[half + i];
                            if (pt == Dtype::f32) {
                                v[i] = round_to(x1 * c - x2 * s, dt);
                                v[half + i] = round_to(x2 * c + x1 * s, dt);
                            } else {
                                v[i] = round_to(round_to(round_to(x1 * c, pt) - round_to(x2 * s, pt), pt), dt);
                                v[half + i] = round_to(round_to(round_to(x2 * c, pt) + round_to(x1 * s, pt), pt), dt);
                            }
                        }
                    }
                return y;
            };
            testdata::for_each_isa([&] {
                for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
                    SCOPED_TRACE(testing::Message() << "D " << D << " negative " << negative << " " << dtype_name(dt));
                    std::vector<float> base = x0;
                    rope_forward(base.data(), pos.data(), M, H, D, theta, dt);
                    ASSERT_EQ(count_differ(base, reference(dt, Dtype::f32, Dtype::f32)), 0u);
                    const std::pair<Dtype, Dtype> points[] = {{Dtype::bf16, Dtype::bf16},
                                                              {Dtype::f16, Dtype::f16},
                                                              {Dtype::f32, Dtype::bf16},
                                                              {Dtype::bf16, Dtype::f32}};
                    for (const auto& [pt, ct] : points) {
                        SCOPED_TRACE(std::string("arithmetic ") + std::string(dtype_name(pt)) + ", cache " +
                                     std::string(dtype_name(ct)));
                        std::vector<float> got = x0;
                        rope_forward(got.data(), pos.data(), M, H, D, theta, dt, pt, ct);
                        const auto want = reference(dt, pt, ct);
                        for (size_t i = 0; i < got.size(); ++i)
                            ASSERT_TRUE(same(got[i], want[i])) << i << ": " << got[i] << " vs " << want[i];
                        EXPECT_GT(count_differ(got, base), got.size() / (dt == Dtype::f32 ? 2 : 50));
                    }
                }
            });
        }
}

namespace {

// Eager attention for one query, the batch-invariant plan (kernels/cpu/attention.cpp):
// s_j = (FMA chain over d of q[d]*k_j[d] from 0) * scale; m = max + 0;
// p_j = exp(s_j - m); sum = bi16 (lane j%16, tree); div = round(sum, stats);
// att_j = p_j * (1/div); p_j = round(p_j / div, probs); out[d] =
// round(FMA chain over j of p_j*v_j[d] from 0, dtype).
void eager_query_ref(const Exec& ex, float* out, float* att, const float* q, const float* k, const float* v,
                     int64_t kvstride, int len, int D) {
    const float scale = 1.0f / std::sqrt((float)D);
    std::vector<float> p(len);
    float mx = -std::numeric_limits<float>::infinity();
    for (int j = 0; j < len; ++j) {
        float acc = 0.0f;
        for (int d = 0; d < D; ++d) acc = std::fma(q[d], k[j * kvstride + d], acc);
        p[j] = acc * scale;
        mx = p[j] > mx ? p[j] : mx;
    }
    mx = mx + 0.0f;
    float lanes[16] = {};
    for (int j = 0; j < len; ++j) {
        p[j] = exp_ref(p[j] - mx);
        lanes[j % 16] = lanes[j % 16] + p[j];
    }
    for (int s = 8; s > 0; s >>= 1)
        for (int i = 0; i < s; ++i) lanes[i] = lanes[i] + lanes[i + s];
    const float div = round_to(lanes[0], ex.stats), rl = 1.0f / div;
    for (int j = 0; j < len; ++j) {
        if (att) att[j] = p[j] * rl;
        p[j] = round_to(p[j] / div, ex.probs);
    }
    for (int d = 0; d < D; ++d) {
        float o = 0.0f;
        for (int j = 0; j < len; ++j) o = std::fma(p[j], v[j * kvstride + d], o);
        out[d] = round_to(o, ex.dtype);
    }
}

}  // namespace

// Eager softmax: prefill (with att) and decode, both families, every ISA path,
// equal the reference above; it changes the bits of the FlashAttention order.
TEST(KernelsNumerics, EagerSoftmaxNormalisesPBeforePV) {
    struct S {
        int B, T, H, Hkv, D;
        Dtype dt, pdt, sdt;
    };
    for (S s : {S{2, 37, 4, 2, 16, Dtype::f32, Dtype::f32, Dtype::f32},
                S{2, 37, 4, 2, 16, Dtype::bf16, Dtype::bf16, Dtype::f32},
                S{1, 200, 2, 1, 20, Dtype::f32, Dtype::bf16, Dtype::bf16},
                S{1, 150, 2, 2, 64, Dtype::bf16, Dtype::bf16, Dtype::bf16}}) {
        SCOPED_TRACE(testing::Message() << "B" << s.B << " T" << s.T << " D" << s.D << " " << dtype_name(s.dt)
                                        << " probs " << dtype_name(s.pdt) << " stats " << dtype_name(s.sdt));
        const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * s.T * s.Hkv * s.D;
        const auto q = testdata::uniform(nq, 61, -2, 2), k = testdata::uniform(nk, 62, -2, 2),
                   v = testdata::uniform(nk, 63);
        const int group = s.H / s.Hkv;
        const int64_t kvs = (int64_t)s.Hkv * s.D;
        std::vector<float> want(nq), watt((size_t)s.B * s.H * s.T * s.T, 0.0f);
        for (int b = 0; b < s.B; ++b)
            for (int h = 0; h < s.H; ++h)
                for (int t = 0; t < s.T; ++t) {
                    const size_t qo = (((size_t)b * s.T + t) * s.H + h) * s.D;
                    const size_t ko = (size_t)b * s.T * kvs + (size_t)(h / group) * s.D;
                    eager_query_ref({Family::batch_invariant, s.dt, s.pdt, s.sdt}, want.data() + qo,
                                    watt.data() + (((size_t)b * s.H + h) * s.T + t) * s.T, q.data() + qo, k.data() + ko,
                                    v.data() + ko, kvs, t + 1, s.D);
                }
        testdata::for_each_isa([&] {
            for (Family fam : {Family::fast, Family::batch_invariant}) {
                SCOPED_TRACE(fam == Family::fast ? "fast" : "batch_invariant");
                Exec ex{fam, s.dt, s.pdt, s.sdt};
                std::vector<float> flash(nq), out(nq), att(watt.size(), 7.0f);
                attention_forward(ex, flash.data(), nullptr, q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
                ex.eager_softmax = true;
                attention_forward(ex, out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
                for (size_t i = 0; i < nq; ++i)
                    ASSERT_TRUE(same(out[i], want[i])) << "prefill " << i << ": " << out[i] << " vs " << want[i];
                for (size_t i = 0; i < att.size(); ++i) ASSERT_TRUE(same(att[i], watt[i])) << "att " << i;
                EXPECT_GT(count_differ(out, flash), nq / (s.dt == Dtype::f32 ? 4 : 50));
                // decode against the batch's keys as the cache: sequence b at position (t + 7b) % T
                for (int t = 0; t < s.T; t += 9) {
                    std::vector<float> qt((size_t)s.B * s.H * s.D), dw(qt.size()), dg(qt.size());
                    std::vector<int32_t> slot(s.B), len(s.B);
                    for (int b = 0; b < s.B; ++b) {
                        const int p = (t + 7 * b) % s.T;
                        slot[b] = b;
                        len[b] = p + 1;
                        const size_t from = ((size_t)b * s.T + p) * s.H * s.D, to = (size_t)b * s.H * s.D;
                        std::copy_n(q.begin() + from, s.H * s.D, qt.begin() + to);
                        std::copy_n(want.begin() + from, s.H * s.D, dw.begin() + to);
                    }
                    attention_decode(ex, dg.data(), qt.data(), k.data(), v.data(), slot.data(), len.data(),
                                     (int64_t)s.T * kvs, s.B, s.H, s.Hkv, s.D);
                    for (size_t i = 0; i < dg.size(); ++i)
                        ASSERT_TRUE(same(dg[i], dw[i])) << "decode " << t << " " << i;
                }
            }
        });
    }
}
