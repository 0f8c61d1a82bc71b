// fp8 quantisation (kernels.h: quantize_activations, quantize_weight) against
// a reference written here from the OCP 8-bit floating point spec alone: the
// e4m3 / e5m2 values decoded from their bit fields, a value encoded as the
// nearest of them (ties to the even code, saturating at the largest finite
// one), amax, scale, x / s and q * s in plain scalar loops. Every format,
// scale kind and granularity, on every CPU ISA path, bit for bit: scales and
// dequantised values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "tests/kernels/isa_paths.h"
#include "tests/random_data.h"

using namespace mlk;

namespace {

uint32_t bits(float x) {
    uint32_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

// ---- the OCP formats, from the spec -------------------------------------------------
// E4M3 ("FN"): bias 7, 3 mantissa bits, exponent field 15 holds normal values
// except S.1111.111 (NaN); largest finite 1.75 * 2^8 = 448, no infinities.
// E5M2: bias 15, 2 mantissa bits, exponent field 31 is IEEE inf / NaN;
// largest finite 1.75 * 2^15 = 57344. Exponent field 0: subnormals
// m / 2^man * 2^(1 - bias).
struct Spec {
    int ebits, mbits, bias;
    int max_code;  // the largest finite magnitude's code (0x7e / 0x7b)
};
Spec spec_of(Dtype fmt) { return fmt == Dtype::fp8_e4m3 ? Spec{4, 3, 7, 0x7e} : Spec{5, 2, 15, 0x7b}; }

double decode(int code, Dtype fmt) {
    const Spec s = spec_of(fmt);
    const int mag = code & 0x7f, e = mag >> s.mbits, m = mag & ((1 << s.mbits) - 1);
    const double v = e == 0 ? std::ldexp((double)m, 1 - s.bias - s.mbits)
                            : std::ldexp((double)((1 << s.mbits) + m), e - s.bias - s.mbits);
    return (code & 0x80) ? -v : v;
}

// The nearest finite value's code, ties to the even code; at or past the
// largest finite magnitude, that magnitude (the saturating conversion).
int encode(float x, Dtype fmt) {
    const Spec s = spec_of(fmt);
    const int sign = std::signbit(x) ? 0x80 : 0;
    const double a = std::fabs((double)x);
    if (a >= decode(s.max_code, fmt)) return sign | s.max_code;
    // codes 0..max_code are increasing magnitudes: the first one >= a
    int lo = 0, hi = s.max_code;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (decode(mid, fmt) < a) lo = mid + 1;
        else hi = mid;
    }
    int c = lo;
    if (c > 0) {
        const double up = decode(c, fmt) - a, down = a - decode(c - 1, fmt);
        if (down < up || (down == up && ((c - 1) & 1) == 0)) c = c - 1;
    }
    return sign | c;
}

// ---- the reference quantiser ------------------------------------------------------------
float fmax_of(Dtype fmt) { return fmt == Dtype::fp8_e4m3 ? 448.0f : 57344.0f; }

// vLLM's minimum activation scales (fp32 scales): per token 1 / (max * 512)
// (dynamic_per_token_scaled_fp8_quant), per 1x128 group 1e-10 / max
// (per_token_group_quant_8bit's eps); none per tensor or for weights.
float ref_floor(Dtype fmt, Fp8Scale kind, Fp8Granularity g, bool weight) {
    if (weight || kind != Fp8Scale::fp32) return 0.0f;
    if (g == Fp8Granularity::channel) return 1.0f / (fmax_of(fmt) * 512.0f);
    if (g == Fp8Granularity::block) return 1e-10f / fmax_of(fmt);
    return 0.0f;
}

float ref_scale(float amax, Dtype fmt, Fp8Scale kind, float floor) {
    if (!std::isfinite(amax)) return 1.0f;
    const float q = amax / fmax_of(fmt);
    if (kind == Fp8Scale::fp32) {
        const float s = q < floor ? floor : q;
        return s == 0.0f ? 1.0f : s;
    }
    if (q == 0.0f) return 1.0f;
    for (int e = -149;; ++e)  // the smallest power of two >= q
        if (std::ldexp(1.0, e) >= (double)q) return (float)std::ldexp(1.0, e);
}

struct RefStats {
    int64_t saturated = 0;  // values whose x / s lay past the largest finite value
};

float ref_value(float x, float s, Dtype fmt, RefStats& st) {
    const float y = x / s;
    if (std::fabs(y) > fmax_of(fmt)) ++st.saturated;
    return (float)decode(encode(y, fmt), fmt) * s;
}

float amax_of(const std::vector<float>& v, int64_t begin, int64_t count, int64_t stride) {
    float a = 0.0f;
    for (int64_t i = 0; i < count; ++i) a = std::max(a, std::fabs(v[begin + i * stride]));
    return a;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Activations [M, K]: out and the scales in kernels.h's order.
void ref_activations(std::vector<float>& out, std::vector<float>& scales, const std::vector<float>& x, int M, int K,
                     Dtype fmt, Fp8Scale kind, Fp8Granularity g, RefStats& st) {
    out.assign(x.size(), 0.0f);
    scales.clear();
    const float floor = ref_floor(fmt, kind, g, false);
    if (g == Fp8Granularity::tensor) {
        const float s = ref_scale(amax_of(x, 0, (int64_t)M * K, 1), fmt, kind, floor);
        scales.push_back(s);
        for (size_t i = 0; i < x.size(); ++i) out[i] = ref_value(x[i], s, fmt, st);
        return;
    }
    const int len = g == Fp8Granularity::block ? 128 : K;
    for (int m = 0; m < M; ++m)
        for (int k0 = 0; k0 < K; k0 += len) {
            const int n = std::min(len, K - k0);
            const int64_t at = (int64_t)m * K + k0;
            const float s = ref_scale(amax_of(x, at, n, 1), fmt, kind, floor);
            scales.push_back(s);
            for (int i = 0; i < n; ++i) out[at + i] = ref_value(x[at + i], s, fmt, st);
        }
}

// A weight [K, N]: per tensor, per column n, or per 128x128 block.
void ref_weight(std::vector<float>& out, std::vector<float>& scales, const std::vector<float>& w, int K, int N,
                Dtype fmt, Fp8Scale kind, Fp8Granularity g, RefStats& st) {
    out.assign(w.size(), 0.0f);
    const int bk = g == Fp8Granularity::block ? 128 : K, bn = g == Fp8Granularity::channel ? 1
                                                              : g == Fp8Granularity::block ? 128
                                                                                           : N;
    const int nbk = ceil_div(K, bk), nbn = ceil_div(N, bn);
    scales.assign((size_t)nbk * nbn, 0.0f);
    for (int kb = 0; kb < nbk; ++kb)
        for (int nb = 0; nb < nbn; ++nb) {
            const int k0 = kb * bk, k1 = std::min(K, k0 + bk), n0 = nb * bn, n1 = std::min(N, n0 + bn);
            float a = 0.0f;
            for (int k = k0; k < k1; ++k) a = std::max(a, amax_of(w, (int64_t)k * N + n0, n1 - n0, 1));
            const float s = ref_scale(a, fmt, kind, 0.0f);
            scales[(size_t)kb * nbn + nb] = s;
            for (int k = k0; k < k1; ++k)
                for (int n = n0; n < n1; ++n) out[(size_t)k * N + n] = ref_value(w[(size_t)k * N + n], s, fmt, st);
        }
}

// Random values in [-r, r] with zeros, an all-zero row, a near-silent row
// (the per-token floor), a row of a binade far below the rest, and the
// first value of some rows set so that amax / max rounds down in fp32 (the
// scale then falls short of amax / max and that value saturates).
std::vector<float> make_data(int R, int C, uint64_t seed, Dtype fmt) {
    auto x = testdata::uniform((size_t)R * C, seed, -20.0f, 20.0f);
    for (size_t i = 0; i < x.size(); i += 7) x[i] = 0.0f;
    if (R > 1)
        for (int c = 0; c < C; ++c) x[(size_t)1 * C + c] = 0.0f;
    if (R > 2)
        for (int c = 0; c < C; ++c) x[(size_t)2 * C + c] *= 1e-6f;
    if (R > 3)
        for (int c = 0; c < C; ++c) x[(size_t)3 * C + c] *= 1e-3f;
    const float mx = fmax_of(fmt);
    for (int r = 4; r < R; r += 3) {
        // the row's largest magnitude, nudged until amax / max rounds down
        float a = 25.0f + (float)r * 0.37f;
        for (int t = 0; t < 64 && !((double)(a / mx) * mx < (double)a); ++t) a = std::nextafter(a, 1e30f);
        x[(size_t)r * C] = (r & 1) ? -a : a;
    }
    return x;
}

const char* gran_name(Fp8Granularity g) {
    return g == Fp8Granularity::tensor ? "tensor" : g == Fp8Granularity::channel ? "channel" : "block";
}

constexpr Fp8Granularity kGrans[] = {Fp8Granularity::tensor, Fp8Granularity::channel, Fp8Granularity::block};
constexpr Fp8Scale kKinds[] = {Fp8Scale::fp32, Fp8Scale::pow2};
constexpr Dtype kFormats[] = {Dtype::fp8_e4m3, Dtype::fp8_e5m2};

// Index of the first differing bit pattern, or -1.
int64_t first_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i)
        if (bits(a[i]) != bits(b[i])) return (int64_t)i;
    return -1;
}

}  // namespace

// The reference codec itself: every code decodes and encodes back (NaN and
// e5m2's infinities aside), and the spec's landmarks.
TEST(KernelsFp8, ReferenceCodecMatchesTheSpec) {
    EXPECT_EQ(decode(0x7e, Dtype::fp8_e4m3), 448.0);
    EXPECT_EQ(decode(0x01, Dtype::fp8_e4m3), std::ldexp(1.0, -9));
    EXPECT_EQ(decode(0x08, Dtype::fp8_e4m3), std::ldexp(1.0, -6));
    EXPECT_EQ(decode(0x7b, Dtype::fp8_e5m2), 57344.0);
    EXPECT_EQ(decode(0x01, Dtype::fp8_e5m2), std::ldexp(1.0, -16));
    for (Dtype fmt : kFormats) {
        const Spec s = spec_of(fmt);
        for (int c = 0; c < 256; ++c) {
            if ((c & 0x7f) > s.max_code) continue;
            EXPECT_EQ(encode((float)decode(c, fmt), fmt), (c & 0x7f) == 0 ? (c & 0x80) : c) << c;
            // and the library's own decoder agrees with the spec's fields
            EXPECT_EQ((double)fp8_bits_to_f32((uint8_t)c, fmt), decode(c, fmt)) << c;
        }
        // halfway between 1 and the next value: ties to the even code (1.0)
        const double next = decode(encode(1.0f, fmt) + 1, fmt);
        EXPECT_EQ(encode((float)((1.0 + next) / 2), fmt), encode(1.0f, fmt));
        EXPECT_EQ(encode(1e9f, fmt), s.max_code) << "saturates";
    }
}

TEST(KernelsFp8, ActivationsEqualTheReferenceBitForBit) {
    struct Shape {
        int M, K;
    };
    // tails (K % 128 != 0), a single value, exact blocks, and enough values
    // to be split over threads
    const Shape shapes[] = {{1, 1}, {7, 300}, {5, 128}, {300, 130}, {9, 257}};
    RefStats st;
    testdata::for_each_isa([&] {
        for (Dtype fmt : kFormats)
            for (Fp8Scale kind : kKinds)
                for (Fp8Granularity g : kGrans)
                    for (Shape sh : shapes) {
                        SCOPED_TRACE(testing::Message()
                                     << dtype_name(fmt) << " scale " << (kind == Fp8Scale::fp32 ? "fp32" : "pow2")
                                     << " " << gran_name(g) << " " << sh.M << "x" << sh.K);
                        const auto x = make_data(sh.M, sh.K, 11 + sh.M * 7 + sh.K, fmt);
                        std::vector<float> want, wscale;
                        ref_activations(want, wscale, x, sh.M, sh.K, fmt, kind, g, st);
                        ASSERT_EQ((int64_t)wscale.size(), fp8_activation_scale_count(sh.M, sh.K, g));
                        std::vector<float> got(x.size()), scale(wscale.size(), -1.0f);
                        quantize_activations(got.data(), scale.data(), x.data(), sh.M, sh.K, fmt, kind, g);
                        const int64_t d = first_diff(got, want);
                        EXPECT_EQ(d, -1) << "value " << d << ": " << (d >= 0 ? got[d] : 0) << " vs "
                                         << (d >= 0 ? want[d] : 0) << " (x " << (d >= 0 ? x[d] : 0) << ")";
                        EXPECT_EQ(first_diff(scale, wscale), -1) << "scales";
                        // in place
                        std::vector<float> inplace = x;
                        quantize_activations(inplace.data(), nullptr, inplace.data(), sh.M, sh.K, fmt, kind, g);
                        EXPECT_EQ(first_diff(inplace, want), -1) << "in place";
                    }
    });
    EXPECT_GT(st.saturated, 0) << "some x / s past the largest finite value";
}

TEST(KernelsFp8, WeightsEqualTheReferenceBitForBit) {
    struct Shape {
        int K, N;
    };
    const Shape shapes[] = {{1, 1}, {5, 300}, {128, 256}, {300, 130}, {257, 129}};
    RefStats st;
    testdata::for_each_isa([&] {
        for (Dtype fmt : kFormats)
            for (Fp8Scale kind : kKinds)
                for (Fp8Granularity g : kGrans)
                    for (Shape sh : shapes) {
                        SCOPED_TRACE(testing::Message()
                                     << dtype_name(fmt) << " scale " << (kind == Fp8Scale::fp32 ? "fp32" : "pow2")
                                     << " " << gran_name(g) << " " << sh.K << "x" << sh.N);
                        const auto w0 = make_data(sh.K, sh.N, 23 + sh.K * 5 + sh.N, fmt);
                        std::vector<float> want, wscale;
                        ref_weight(want, wscale, w0, sh.K, sh.N, fmt, kind, g, st);
                        ASSERT_EQ((int64_t)wscale.size(), fp8_weight_scale_count(sh.K, sh.N, g));
                        std::vector<float> w = w0, scale(wscale.size(), -1.0f);
                        quantize_weight(w.data(), scale.data(), sh.K, sh.N, fmt, kind, g);
                        const int64_t d = first_diff(w, want);
                        EXPECT_EQ(d, -1) << "value " << d << ": " << (d >= 0 ? w[d] : 0) << " vs "
                                         << (d >= 0 ? want[d] : 0) << " (w " << (d >= 0 ? w0[d] : 0) << ")";
                        EXPECT_EQ(first_diff(scale, wscale), -1) << "scales";
                    }
    });
    EXPECT_GT(st.saturated, 0);
}

// pow2 scales keep the power-of-two quantiser's bits: every stored value
// divided by its scale is an fp8 value (dividing and multiplying by a power
// of two are exact), equal to round_fp8(x * (1 / s)) * s; fp32 scales give
// other bits on generic data.
TEST(KernelsFp8, Pow2IsExactAndFp32Differs) {
    const int M = 6, K = 300;
    testdata::for_each_isa([&] {
        for (Dtype fmt : kFormats)
            for (Fp8Granularity g : kGrans) {
                SCOPED_TRACE(testing::Message() << dtype_name(fmt) << " " << gran_name(g));
                const auto x = testdata::uniform((size_t)M * K, 41, -3.0f, 3.0f);
                std::vector<float> p2(x.size()), f32(x.size()), s2(fp8_activation_scale_count(M, K, g));
                quantize_activations(p2.data(), s2.data(), x.data(), M, K, fmt, Fp8Scale::pow2, g);
                quantize_activations(f32.data(), nullptr, x.data(), M, K, fmt, Fp8Scale::fp32, g);
                const int per_row = g == Fp8Granularity::block ? (K + 127) / 128 : 1;
                for (int m = 0; m < M; ++m)
                    for (int k = 0; k < K; ++k) {
                        const size_t i = (size_t)m * K + k;
                        const float s = g == Fp8Granularity::tensor    ? s2[0]
                                        : g == Fp8Granularity::channel ? s2[m]
                                                                       : s2[(size_t)m * per_row + k / 128];
                        int e = 0;
                        ASSERT_EQ(std::frexp(s, &e), 0.5f) << "a power of two";
                        const float q = p2[i] / s;
                        ASSERT_EQ(q * s, p2[i]);
                        ASSERT_EQ((double)q, decode(encode(q, fmt), fmt)) << "on the fp8 grid";
                        ASSERT_EQ(bits(p2[i]), bits(fp8_round(x[i] * (1.0f / s), fmt) * s));
                    }
                size_t differ = 0;
                for (size_t i = 0; i < x.size(); ++i) differ += bits(p2[i]) != bits(f32[i]);
                EXPECT_GT(differ, x.size() / 2);
            }
    });
}

// The matmul quantises its input with Exec's scale kind and granularity: the
// same bits as quantize_activations then the unquantised matmul. A tensor
// scale depends on the whole batch; per-token and block scales do not.
TEST(KernelsFp8, MatmulQuantisesItsInputAsExecSays) {
    const int M = 9, K = 200, N = 40;
    auto x = testdata::uniform((size_t)M * K, 5, -2, 2);
    // a loud row sets the tensor's scale: row 0 then falls among the subnormals
    for (int k = 0; k < K; ++k) x[(size_t)4 * K + k] *= 3000.0f;
    const auto w0 = testdata::uniform((size_t)K * N, 6, -0.5f, 0.5f);
    for (Fp8Scale kind : kKinds)
        for (Fp8Granularity g : kGrans)
            for (Family fam : {Family::fast, Family::batch_invariant}) {
                SCOPED_TRACE(testing::Message() << (kind == Fp8Scale::fp32 ? "fp32 " : "pow2 ") << gran_name(g)
                                                << (fam == Family::fast ? " fast" : " bi"));
                std::vector<float> w = w0;
                quantize_weight(w.data(), nullptr, K, N, Dtype::fp8_e4m3, kind, g);
                Exec plain{fam, Dtype::bf16};
                Exec ex = plain;
                ex.quant = Dtype::fp8_e4m3, ex.quant_scale = kind, ex.quant_granularity = g;
                std::vector<float> xq(x.size()), want((size_t)M * N), got(want.size());
                quantize_activations(xq.data(), nullptr, x.data(), M, K, Dtype::fp8_e4m3, kind, g);
                matmul_forward(plain, want.data(), xq.data(), w.data(), nullptr, M, K, N);
                matmul_forward(ex, got.data(), x.data(), w.data(), nullptr, M, K, N);
                EXPECT_EQ(first_diff(got, want), -1);
                // row 0 alone against row 0 of the batch, quantised the same way
                std::vector<float> q1(K), qb(x.size());
                quantize_activations(q1.data(), nullptr, x.data(), 1, K, Dtype::fp8_e4m3, kind, g);
                quantize_activations(qb.data(), nullptr, x.data(), M, K, Dtype::fp8_e4m3, kind, g);
                const bool same = std::equal(q1.begin(), q1.end(), qb.begin());
                EXPECT_EQ(same, g != Fp8Granularity::tensor);
            }
}

// One byte per value (an fp8 KV cache): the codes are the reference's
// encoding of x / s, the values code * s those of quantize_activations per
// row, and dequantize_fp8 reads them back.
TEST(KernelsFp8, RowCodesEqualTheReference) {
    const int M = 9, K = 200;
    RefStats st;
    testdata::for_each_isa([&] {
        for (Dtype fmt : kFormats)
            for (Fp8Scale kind : kKinds) {
                SCOPED_TRACE(testing::Message() << dtype_name(fmt) << (kind == Fp8Scale::fp32 ? " fp32" : " pow2"));
                const auto x = make_data(M, K, 77, fmt);
                std::vector<float> want, wscale;
                ref_activations(want, wscale, x, M, K, fmt, kind, Fp8Granularity::channel, st);
                std::vector<uint8_t> codes(x.size());
                std::vector<float> scales(M), out(x.size()), back(x.size());
                quantize_rows_fp8(codes.data(), scales.data(), out.data(), x.data(), M, K, fmt, kind);
                EXPECT_EQ(first_diff(scales, wscale), -1) << "scales";
                EXPECT_EQ(first_diff(out, want), -1) << "values";
                for (int m = 0; m < M; ++m) {
                    for (int k = 0; k < K; ++k) {
                        const size_t i = (size_t)m * K + k;
                        ASSERT_EQ((int)codes[i], encode(x[i] / wscale[m], fmt)) << i;
                    }
                    dequantize_fp8(back.data() + (size_t)m * K, codes.data() + (size_t)m * K, scales[m], K, fmt);
                }
                EXPECT_EQ(first_diff(back, want), -1) << "dequantised";
            }
    });
}
