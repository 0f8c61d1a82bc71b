// The CUDA backend's per-thread arithmetic without a GPU: a host-side grid
// loop runs every body of kernels/cuda/bodies*.h over the whole output, the
// way the __global__ kernels of kernels/cuda/*.cu map threads to them (for
// block kernels: every block, each phase for every thread, a phase boundary
// being a __syncthreads), and the result must equal the CPU kernels bit for
// bit: the batch-invariant family, the family-free forward ops and every
// backward op, on every CPU ISA path, in fp32 and in narrow storage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/cpu/features.h"
#include "kernels/cuda/bodies.h"
#include "kernels/cuda/bodies_fp8.h"
#include "kernels/cuda/bodies_attention.h"
#include "kernels/kernels.h"
#include "kernels/ref.h"
#include "tests/bits.h"
#include "tests/random_data.h"

using namespace mlk;
namespace B = mlk::cuda::body;

namespace {

using testdata::bits_equal;

std::vector<float> rounded(std::vector<float> v, Dtype dt) {
    for (auto& x : v) x = round_to(x, dt);
    return v;
}

// Every CPU ISA path available here, with 1 and 2 threads (the CPU kernels'
// bits depend on neither; the CUDA bodies must equal each).
void for_each_cpu_config(const std::function<void()>& f) {
    const cpu::Isa best = cpu::detected_isa();
    for (int i = 0; i <= static_cast<int>(best); ++i)
        for (int t : {1, 2}) {
            cpu::force_isa(static_cast<cpu::Isa>(i));
            set_num_threads(t);
            SCOPED_TRACE(testing::Message() << cpu::isa_name(static_cast<cpu::Isa>(i)) << " threads " << t);
            f();
        }
    cpu::force_isa(best);
    set_num_threads(0);
}

// A block kernel on the host: for every block, each phase runs for threads
// 0..nthreads-1 before the next phase starts (the kernel's __syncthreads).
template <class... Phase>
void run_blocks(int64_t nblocks, int nthreads, int smem_floats, Phase... phase) {
    std::vector<float> sm(std::max(smem_floats, 1));
    for (int64_t b = 0; b < nblocks; ++b) {
        std::fill(sm.begin(), sm.end(), -12345.0f);  // no phase may read what it did not write
        auto run = [&](auto& ph) {
            for (int t = 0; t < nthreads; ++t) ph(b, t, sm.data());
        };
        (run(phase), ...);
    }
}
int64_t row_blocks(int M) { return (M + B::kRowsPerBlock - 1) / B::kRowsPerBlock; }

const Dtype kStorage[] = {Dtype::f32, Dtype::bf16, Dtype::f16};
std::string dt_name(Dtype d) { return std::string(dtype_name(d)); }

}  // namespace

TEST(CudaBodies, Elementwise) {
    for (Dtype dt : kStorage)
        for (int64_t n : {1, 15, 17, 1000}) {
            SCOPED_TRACE(dt_name(dt) + " n " + std::to_string(n));
            const auto g = rounded(testdata::uniform(n, 1, -8, 8), dt), u = rounded(testdata::uniform(n, 2), dt),
                       y0 = rounded(testdata::uniform(n, 3), dt), d = testdata::uniform(n, 4);
            for_each_cpu_config([&] {
                const Exec ex{Family::batch_invariant, dt};
                for (Dtype silu : kStorage) {  // Exec::silu
                    Exec es = ex;
                    es.silu = silu;
                    std::vector<float> want(n), got(n);
                    swiglu_forward(es, want.data(), g.data(), u.data(), n);
                    for (int64_t i = 0; i < n; ++i) B::swiglu_at(got.data(), g.data(), u.data(), dt, silu, i);
                    EXPECT_TRUE(bits_equal(got, want)) << "swiglu, silu point " << dt_name(silu);
                }
                for (GradStore store : {GradStore::add, GradStore::overwrite}) {
                    SCOPED_TRACE(store == GradStore::add ? "add" : "overwrite");
                    std::vector<float> dgw(n, 0.5f), duw(n, -0.25f), dgg = dgw, dug = duw;
                    swiglu_backward(dgw.data(), duw.data(), d.data(), g.data(), u.data(), n, store);
                    for (int64_t i = 0; i < n; ++i)
                        B::swiglu_bwd_at(dgg.data(), dug.data(), d.data(), g.data(), u.data(), store == GradStore::add,
                                         i);
                    EXPECT_TRUE(bits_equal(dgg, dgw)) << "swiglu dgate";
                    EXPECT_TRUE(bits_equal(dug, duw)) << "swiglu dup";
                }
                std::vector<float> yw = y0, yg = y0;
                add_inplace(yw.data(), d.data(), n, dt);
                for (int64_t i = 0; i < n; ++i) B::add_round_at(yg.data(), d.data(), dt, i);
                EXPECT_TRUE(bits_equal(yg, yw)) << "add_inplace";
                std::vector<float> rw = d, rg = d;
                round_buffer(rw.data(), rw.size(), dt);
                for (int64_t i = 0; i < n; ++i) B::round_at(rg.data(), dt, i);
                EXPECT_TRUE(bits_equal(rg, rw)) << "round_buffer";
            });
        }
}

TEST(CudaBodies, Embedding) {
    const int V = 52;
    for (int C : {1, 17, 64}) {
        const int M = 37;
        const auto table = testdata::uniform((size_t)V * C, 5), dout = testdata::uniform((size_t)M * C, 6);
        std::vector<int32_t> tok(M);
        for (int m = 0; m < M; ++m) tok[m] = (m * 7) % 13;  // repeats: order matters
        for_each_cpu_config([&] {
            for (Dtype dt : kStorage) {
                std::vector<float> want((size_t)M * C), got((size_t)M * C);
                embedding_forward(want.data(), tok.data(), table.data(), M, C, dt);
                for (int64_t i = 0; i < (int64_t)M * C; ++i)
                    B::embedding_at(got.data(), tok.data(), table.data(), C, dt, i);
                EXPECT_TRUE(bits_equal(got, want)) << dt_name(dt);
            }
            std::vector<float> dw = testdata::uniform((size_t)V * C, 7), dg = dw;
            embedding_backward(dw.data(), dout.data(), tok.data(), M, C);
            for (int c = 0; c < C; ++c) B::embedding_bwd_col(dg.data(), dout.data(), tok.data(), M, C, c);
            EXPECT_TRUE(bits_equal(dg, dw)) << "embedding_backward C " << C;
        });
    }
}

TEST(CudaBodies, Rope) {
    const float theta = 10000.0f;
    for (int D : {16, 20, 64, 7}) {
        const int M = 9, H = 3;
        std::vector<int32_t> pos = {0, 1, 5, 63, 64, 200, 1000, 7, 3};
        const int maxp = 1000;
        std::vector<float> table((size_t)(maxp + 1) * D, 0.0f);
        for (int p = 0; p <= maxp; ++p) B::rope_cs_row(table.data() + (size_t)p * D, p, D, theta);
        std::vector<int32_t> neg = {-3, 2, -100, 0, 5, -1, 9, 4, 1};
        std::vector<float> rowtab((size_t)M * D, 0.0f);
        for (int m = 0; m < M; ++m) B::rope_cs_row(rowtab.data() + (size_t)m * D, neg[m], D, theta);
        const auto x0 = rounded(testdata::uniform((size_t)M * H * D, 8, -2, 2), Dtype::bf16);
        for_each_cpu_config([&] {
            for (Dtype dt : kStorage)
                for (Dtype pt : kStorage)                       // Exec::rope (the forward's arithmetic)
                    for (Dtype ct : {Dtype::f32, Dtype::bf16})  // Exec::rope_cache
                        for (bool inverse : {false, true})
                            for (bool negative : {false, true}) {
                                if (inverse && (pt != Dtype::f32 || ct != Dtype::f32)) continue;
                                SCOPED_TRACE(testing::Message()
                                             << "D " << D << " " << dt_name(dt) << " point " << dt_name(pt) << " cache "
                                             << dt_name(ct) << " inverse " << inverse << " negative positions "
                                             << negative);
                                const auto& p = negative ? neg : pos;
                                std::vector<float> want = x0, got = x0;
                                if (inverse) rope_backward(want.data(), p.data(), M, H, D, theta);
                                else rope_forward(want.data(), p.data(), M, H, D, theta, dt, pt, ct);
                                const B::RopeArgs a{got.data(),
                                                    p.data(),
                                                    negative ? rowtab.data() : table.data(),
                                                    negative,
                                                    M,
                                                    H,
                                                    D,
                                                    inverse ? Dtype::f32 : dt,
                                                    inverse,
                                                    pt,
                                                    ct};
                                for (int64_t i = 0; i < (int64_t)M * H * (D / 2); ++i) B::rope_at(a, i);
                                EXPECT_TRUE(bits_equal(got, want));
                            }
        });
    }
}

// fp8 quantisation: the scale bodies, then each kernel's blocks and threads
// (activations and weights, every scale kind and granularity) against the CPU.
TEST(CudaBodies, Fp8Quantisation) {
    const Fp8Granularity kGrans[] = {Fp8Granularity::tensor, Fp8Granularity::channel, Fp8Granularity::block};
    for (Dtype fmt : {Dtype::fp8_e4m3, Dtype::fp8_e5m2})
        for (Fp8Scale kind : {Fp8Scale::fp32, Fp8Scale::pow2}) {
            for (Fp8Granularity g : kGrans)
                EXPECT_TRUE(bits_equal(std::vector<float>{B::fp8_floor_of(fmt, kind, g)},
                                       std::vector<float>{fp8_activation_floor(fmt, kind, g)}));
            for (float amax : {0.0f, 1e-41f, 1e-30f, 1e-3f, 0.7f, 448.0f, 3e4f, 57344.0f, 1e30f, 3.4e38f,
                               bits_float(0x7f800000u), bits_float(0x7fc00000u)})
                for (float floor : {0.0f, fp8_activation_floor(fmt, Fp8Scale::fp32, Fp8Granularity::channel)})
                    EXPECT_TRUE(bits_equal(std::vector<float>{B::fp8_scale_of(amax, fmt, kind, floor)},
                                           std::vector<float>{fp8_scale(amax, fmt, kind, floor)}))
                        << amax << " floor " << floor;
        }
    for (Dtype fmt : {Dtype::fp8_e4m3, Dtype::fp8_e5m2})
        for (auto [M, K] : {std::pair{1, 1}, std::pair{5, 300}, std::pair{3, 64}, std::pair{131, 129}}) {
            auto x = testdata::uniform((size_t)M * K, 9, -30, 30);
            if (M > 1) std::fill(x.begin() + K, x.begin() + 2 * K, 0.0f);  // an all-zero row
            x[0] = 1e-41f;                                                 // a subnormal
            if (M > 2)
                for (int k = 0; k < K; ++k) x[(size_t)2 * K + k] *= 1e-5f;  // a quiet row: the floor
            for (Fp8Scale kind : {Fp8Scale::fp32, Fp8Scale::pow2})
                for (Fp8Granularity g : kGrans) {
                    SCOPED_TRACE(testing::Message() << dt_name(fmt) << " " << M << "x" << K << " scale " << (int)kind
                                                    << " granularity " << (int)g);
                    for_each_cpu_config([&] {
                        // activations
                        const int64_t ns = fp8_activation_scale_count(M, K, g);
                        std::vector<float> want(x.size()), got(x.size()), sw(ns), sg(ns, -1.0f);
                        quantize_activations(want.data(), sw.data(), x.data(), M, K, fmt, kind, g);
                        const float floor = B::fp8_floor_of(fmt, kind, g);
                        if (g == Fp8Granularity::tensor) {
                            std::vector<float> partial((size_t)M + 1);
                            run_blocks(
                                M, B::kQuantThreads, B::kQuantThreads,
                                [&](int64_t b, int t, float* sm) { B::quantize_seg_p1(x.data(), K, K, b, t, sm); },
                                [&](int64_t b, int t, float* sm) { B::row_amax_p2(partial.data(), b, t, sm); });
                            run_blocks(
                                1, B::kQuantThreads, B::kQuantThreads,
                                [&](int64_t, int t, float* sm) { B::amax_p1(partial.data(), M, t, sm); },
                                [&](int64_t, int t, float* sm) {
                                    B::tensor_scale_p2(partial.data() + M, sg.data(), fmt, kind, floor, t, sm);
                                });
                            for (int64_t i = 0; i < (int64_t)M * K; ++i)
                                B::quantize_tensor_at(got.data(), x.data(), partial.data() + M, fmt, i);
                        } else {
                            const int len = g == Fp8Granularity::block ? kFp8Block : K;
                            run_blocks(
                                ns, B::kQuantThreads, B::kQuantThreads,
                                [&](int64_t b, int t, float* sm) { B::quantize_seg_p1(x.data(), K, len, b, t, sm); },
                                [&](int64_t b, int t, float* sm) {
                                    B::quantize_seg_p2(got.data(), sg.data(), x.data(), K, len, fmt, kind, floor, b, t,
                                                       sm);
                                });
                        }
                        EXPECT_TRUE(bits_equal(got, want)) << "activations";
                        EXPECT_TRUE(bits_equal(sg, sw)) << "activation scales";
                        // x as a weight [M, K]
                        const int64_t nw = fp8_weight_scale_count(M, K, g);
                        std::vector<float> ww = x, wg = x, scw(nw), scg(nw, -1.0f);
                        quantize_weight(ww.data(), scw.data(), M, K, fmt, kind, g);
                        if (g == Fp8Granularity::channel) {
                            for (int n = 0; n < K; ++n) B::quantize_col(wg.data(), scg.data(), M, K, fmt, kind, n);
                        } else if (g == Fp8Granularity::block) {
                            run_blocks(
                                nw, B::kQuantThreads, B::kQuantThreads,
                                [&](int64_t b, int t, float* sm) { B::quantize_wblock_p1(wg.data(), M, K, b, t, sm); },
                                [&](int64_t b, int t, float* sm) {
                                    B::quantize_wblock_p2(wg.data(), scg.data(), M, K, fmt, kind, b, t, sm);
                                });
                        } else {
                            std::vector<float> partial((size_t)M + 1);
                            run_blocks(
                                M, B::kQuantThreads, B::kQuantThreads,
                                [&](int64_t b, int t, float* sm) { B::quantize_seg_p1(wg.data(), K, K, b, t, sm); },
                                [&](int64_t b, int t, float* sm) { B::row_amax_p2(partial.data(), b, t, sm); });
                            run_blocks(
                                1, B::kQuantThreads, B::kQuantThreads,
                                [&](int64_t, int t, float* sm) { B::amax_p1(partial.data(), M, t, sm); },
                                [&](int64_t, int t, float* sm) {
                                    B::tensor_scale_p2(partial.data() + M, scg.data(), fmt, kind, 0.0f, t, sm);
                                });
                            for (int64_t i = 0; i < (int64_t)M * K; ++i)
                                B::quantize_tensor_at(wg.data(), wg.data(), partial.data() + M, fmt, i);
                        }
                        EXPECT_TRUE(bits_equal(wg, ww)) << "weight";
                        EXPECT_TRUE(bits_equal(scg, scw)) << "weight scales";
                    });
                }
        }
}

// The fp8 KV cache in bytes: every code's value and back, then store and
// load against the CPU's store_kv_fp8 / load_kv_fp8 (codes, scales, the rows
// left in x, the dequantised rows).
TEST(CudaBodies, Fp8KvCacheBytes) {
    for (Dtype fmt : {Dtype::fp8_e4m3, Dtype::fp8_e5m2}) {
        SCOPED_TRACE(dt_name(fmt));
        for (int c = 0; c < 256; ++c) {
            const float v = fp8_bits_to_f32((uint8_t)c, fmt), got = B::fp8_value_of((uint8_t)c, fmt);
            if (v != v) {
                EXPECT_NE(got, got) << c;
                continue;
            }
            EXPECT_EQ(float_bits(got), float_bits(v)) << c;
            EXPECT_EQ((int)B::fp8_code_of(v, fmt), c) << c;
        }
        const int M = 5, Hkv = 3, hd = 40, kv = Hkv * hd, slots = 4, t_max = 9;
        const int64_t stride = (int64_t)t_max * kv;
        auto x = testdata::uniform((size_t)M * kv, 21, -40, 40);
        for (int k = 0; k < hd; ++k) x[(size_t)kv + k] = 0.0f;        // an all-zero head
        for (int k = 0; k < hd; ++k) x[(size_t)2 * kv + k] *= 1e-6f;  // a quiet one: the floor
        const std::vector<int64_t> off = {0 * stride + 3 * kv, 1 * stride + 0 * kv, 3 * stride + 8 * kv,
                                          2 * stride + 5 * kv, 0 * stride + 4 * kv};
        for (Fp8Scale kind : {Fp8Scale::fp32, Fp8Scale::pow2})
            for_each_cpu_config([&] {
                std::vector<uint8_t> cw((size_t)slots * stride, 0), cg(cw.size(), 0);
                std::vector<float> sw((size_t)slots * t_max * Hkv, 0.0f), sg(sw.size(), 0.0f), xw = x, xg = x;
                store_kv_fp8(cw.data(), sw.data(), off.data(), xw.data(), M, Hkv, hd, fmt, kind);
                run_blocks((int64_t)M * Hkv, B::kQuantThreads, B::kQuantThreads,
                           [&](int64_t b, int t, float* sm) { B::amax_p1(xg.data() + b * hd, hd, t, sm); },
                           [&](int64_t b, int t, float* sm) {
                               B::store_kv_p2(cg.data(), sg.data(), off.data(), xg.data(), Hkv, hd, fmt, kind, b, t,
                                              sm);
                           });
                EXPECT_EQ(cg, cw) << "codes";
                EXPECT_TRUE(bits_equal(sg, sw)) << "scales";
                EXPECT_TRUE(bits_equal(xg, xw)) << "rows";
                // the rows kept equal quantize_activations' per row of hd
                std::vector<float> xq = x;
                quantize_activations(xq.data(), nullptr, xq.data(), M * Hkv, hd, fmt, kind, Fp8Granularity::channel);
                EXPECT_TRUE(bits_equal(xw, xq)) << "store_kv's bits";
                // read back: slots 0 and 3 up to lengths 5 and 9
                const std::vector<int32_t> slot = {0, 3}, len = {5, 9};
                const int span = 9;
                std::vector<float> lw((size_t)2 * span * kv, -1.0f), lg(lw.size(), -1.0f);
                load_kv_fp8(lw.data(), cw.data(), sw.data(), slot.data(), len.data(), stride, span, 2, Hkv, hd, fmt);
                for (int64_t i = 0; i < (int64_t)lg.size(); ++i)
                    B::load_kv_at(lg.data(), cg.data(), sg.data(), slot.data(), len.data(), stride, span, kv, hd, fmt,
                                  i);
                EXPECT_TRUE(bits_equal(lg, lw)) << "loaded rows";
                // slot 0's position 3 and slot 3's position 8 are rows 0 and 2 of x
                for (int k = 0; k < kv; ++k) {
                    EXPECT_EQ(float_bits(lw[(size_t)3 * kv + k]), float_bits(xw[k]));
                    EXPECT_EQ(float_bits(lw[((size_t)span + 8) * kv + k]), float_bits(xw[(size_t)2 * kv + k]));
                }
            });
    }
}

TEST(CudaBodies, MatmulForwardBatchInvariant) {
    struct S {
        int M, K, N;
    };
    for (S s : {S{1, 64, 52}, S{7, 17, 33}, S{37, 128, 64}, S{5, 1, 16}, S{3, 0, 5}, S{20, 64, 192}})
        for (Dtype dt : kStorage)
            for (Dtype quant : {Dtype::f32, Dtype::fp8_e4m3})
                for (bool with_bias : {true, false}) {
                    SCOPED_TRACE(testing::Message() << s.M << "x" << s.K << "x" << s.N << " " << dt_name(dt)
                                                    << " quant " << dt_name(quant) << " bias " << with_bias);
                    const auto x = rounded(testdata::uniform((size_t)s.M * s.K, 10), dt),
                               w = rounded(testdata::uniform((size_t)s.K * s.N, 11), dt),
                               bias = rounded(testdata::uniform(s.N, 12), dt);
                    for_each_cpu_config([&] {
                        const Exec ex{Family::batch_invariant, dt, Dtype::f32, Dtype::f32, quant};
                        std::vector<float> want((size_t)s.M * s.N), got(want.size());
                        const float* b = with_bias ? bias.data() : nullptr;
                        matmul_forward(ex, want.data(), x.data(), w.data(), b, s.M, s.K, s.N);
                        std::vector<float> xq = x;  // the device quantises the rows first, as the CPU
                        const float floor = B::fp8_floor_of(quant, ex.quant_scale, ex.quant_granularity);
                        if (is_fp8(quant) && s.K > 0)  // Exec's default: fp32 scales per row
                            run_blocks(
                                s.M, B::kQuantThreads, B::kQuantThreads,
                                [&](int64_t r, int t, float* sm) { B::quantize_seg_p1(x.data(), s.K, s.K, r, t, sm); },
                                [&](int64_t r, int t, float* sm) {
                                    B::quantize_seg_p2(xq.data(), nullptr, x.data(), s.K, s.K, quant, ex.quant_scale,
                                                       floor, r, t, sm);
                                });
                        for (int m = 0; m < s.M; ++m)
                            for (int n = 0; n < s.N; ++n)
                                B::matmul_bi_at(got.data(), xq.data(), w.data(), b, s.K, s.N, dt, m, n);
                        EXPECT_TRUE(bits_equal(got, want));
                    });
                }
}

TEST(CudaBodies, MatmulBackward) {
    struct S {
        int M, K, N;
    };
    for (S s : {S{1, 64, 52}, S{37, 17, 33}, S{300, 64, 20}}) {
        SCOPED_TRACE(testing::Message() << s.M << "x" << s.K << "x" << s.N);
        const auto x = testdata::uniform((size_t)s.M * s.K, 13), w = testdata::uniform((size_t)s.K * s.N, 14),
                   g = testdata::uniform((size_t)s.M * s.N, 15);
        for_each_cpu_config([&] {
            for (GradStore store : {GradStore::add, GradStore::overwrite}) {
                SCOPED_TRACE(store == GradStore::add ? "add" : "overwrite");
                std::vector<float> di((size_t)s.M * s.K, 0.5f), dw((size_t)s.K * s.N, 0.25f), db(s.N, 0.125f);
                std::vector<float> dig = di, dwg = dw, dbg = db;
                matmul_backward(di.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), s.M, s.K, s.N, store);
                for (int m = 0; m < s.M; ++m)
                    for (int k = 0; k < s.K; ++k)
                        B::matmul_dinp_at(dig.data(), g.data(), w.data(), s.K, s.N, store == GradStore::add, m, k);
                for (int k = 0; k < s.K; ++k)
                    for (int n = 0; n < s.N; ++n) B::matmul_dw_at(dwg.data(), x.data(), g.data(), s.M, s.K, s.N, k, n);
                for (int n = 0; n < s.N; ++n) B::matmul_dbias_at(dbg.data(), g.data(), s.M, s.N, n);
                EXPECT_TRUE(bits_equal(dig, di)) << "dinp";
                EXPECT_TRUE(bits_equal(dwg, dw)) << "dw";
                EXPECT_TRUE(bits_equal(dbg, db)) << "dbias";
            }
        });
    }
}

TEST(CudaBodies, RmsnormBatchInvariant) {
    for (int C : {1, 15, 16, 17, 52, 64, 128, 300})
        for (int M : {1, 9, 37})
            for (Dtype dt : kStorage) {
                const Dtype sdt = dt == Dtype::f16 ? Dtype::bf16 : dt;
                SCOPED_TRACE(testing::Message() << "C " << C << " M " << M << " " << dt_name(dt));
                const auto x = rounded(testdata::uniform((size_t)M * C, 16, -3, 3), dt),
                           w = rounded(testdata::uniform(C, 17, 0.5, 1.5), dt);
                for_each_cpu_config([&] {
                    for (Dtype ndt : {Dtype::f32, Dtype::bf16}) {  // Exec::norm
                        Exec ex{Family::batch_invariant, dt, Dtype::f32, sdt};
                        ex.norm = ndt;
                        std::vector<float> want((size_t)M * C), got(want.size()), rw(M), rg(M);
                        rmsnorm_forward(ex, want.data(), rw.data(), x.data(), w.data(), 1e-6f, M, C);
                        const B::RmsnormArgs a{got.data(), rg.data(), x.data(), w.data(), 1e-6f, M, C, dt, sdt, ndt};
                        run_blocks(
                            row_blocks(M), B::kRowThreads, B::kRowSmem,
                            [&](int64_t b, int t, float* sm) { B::rmsnorm_p1(a, (int)b, t, sm); },
                            [&](int64_t b, int t, float* sm) { B::rmsnorm_p2(a, (int)b, t, sm); });
                        EXPECT_TRUE(bits_equal(got, want)) << "out, norm point " << dt_name(ndt);
                        EXPECT_TRUE(bits_equal(rg, rw)) << "rstd";
                    }
                });
            }
}

TEST(CudaBodies, RmsnormBackward) {
    for (int C : {1, 17, 64, 128})
        for (int M : {1, 37}) {
            SCOPED_TRACE(testing::Message() << "C " << C << " M " << M);
            const auto x = testdata::uniform((size_t)M * C, 18, -2, 2), w = testdata::uniform(C, 19, 0.5, 1.5),
                       g = testdata::uniform((size_t)M * C, 20);
            std::vector<float> y((size_t)M * C), rs(M);
            rmsnorm_forward({Family::batch_invariant}, y.data(), rs.data(), x.data(), w.data(), 1e-6f, M, C);
            for_each_cpu_config([&] {
                for (GradStore store : {GradStore::add, GradStore::overwrite}) {
                    SCOPED_TRACE(store == GradStore::add ? "add" : "overwrite");
                    std::vector<float> di((size_t)M * C, 0.5f), dw(C, 0.25f), dig = di, dwg = dw;
                    rmsnorm_backward(di.data(), dw.data(), g.data(), x.data(), w.data(), rs.data(), M, C, store);
                    const B::RmsnormBwdArgs a{dig.data(), g.data(), x.data(), w.data(),
                                              rs.data(),  M,        C,        store == GradStore::add};
                    run_blocks(
                        row_blocks(M), B::kRowThreads, B::kRowSmem,
                        [&](int64_t b, int t, float* sm) { B::rmsnorm_bwd_p1(a, (int)b, t, sm); },
                        [&](int64_t b, int t, float* sm) { B::rmsnorm_bwd_p2(a, (int)b, t, sm); });
                    for (int c = 0; c < C; ++c)
                        B::rmsnorm_dweight_col(dwg.data(), g.data(), x.data(), rs.data(), M, C, c);
                    EXPECT_TRUE(bits_equal(dig, di)) << "dinp";
                    EXPECT_TRUE(bits_equal(dwg, dw)) << "dweight";
                }
            });
        }
}

TEST(CudaBodies, LogSoftmaxEntropyGatherBatchInvariant) {
    for (int V : {1, 15, 16, 17, 52, 200, 1000})
        for (int M : {1, 9})
            for (Dtype dt : kStorage) {
                const Dtype sdt = dt;
                SCOPED_TRACE(testing::Message() << "V " << V << " M " << M << " " << dt_name(dt));
                auto z = rounded(testdata::uniform((size_t)M * V, 21, -8, 8), dt);
                if (V > 3) z[2] = -1e30f;  // a token of probability 0: log-prob far below exp's range
                const float it = 1.0f / 0.9f;
                std::vector<int32_t> target(M);
                for (int m = 0; m < M; ++m) target[m] = m == 1 ? V : (m * 5) % V;  // row 1: out of range -> NaN
                for_each_cpu_config([&] {
                    const Exec ex{Family::batch_invariant, dt, Dtype::f32, sdt};
                    std::vector<float> want((size_t)M * V), got(want.size());
                    logsoftmax_forward(ex, want.data(), z.data(), it, M, V);
                    const B::LogsoftmaxArgs a{got.data(), z.data(), it, M, V, dt, sdt};
                    run_blocks(
                        row_blocks(M), B::kRowThreads, B::kRowSmem,
                        [&](int64_t b, int t, float* sm) { B::logsoftmax_p1(a, (int)b, t, sm); },
                        [&](int64_t b, int t, float* sm) { B::logsoftmax_p2(a, (int)b, t, sm); },
                        [&](int64_t b, int t, float* sm) { B::logsoftmax_p3(a, (int)b, t, sm); });
                    ASSERT_TRUE(bits_equal(got, want)) << "log-softmax";
                    std::vector<float> ew(M), eg(M);
                    entropy_forward(ex, ew.data(), want.data(), M, V);
                    const B::EntropyArgs e{eg.data(), want.data(), M, V, dt};
                    run_blocks(
                        row_blocks(M), B::kRowThreads, B::kRowSmem,
                        [&](int64_t b, int t, float* sm) { B::entropy_p1(e, (int)b, t, sm); },
                        [&](int64_t b, int t, float* sm) { B::entropy_p2(e, (int)b, t, sm); });
                    EXPECT_TRUE(bits_equal(eg, ew)) << "entropy";
                    std::vector<float> gw(M), gg(M);
                    logprob_gather(gw.data(), want.data(), target.data(), M, V);
                    for (int m = 0; m < M; ++m) B::logprob_gather_at(gg.data(), want.data(), target.data(), V, m);
                    EXPECT_TRUE(bits_equal(gg, gw)) << "gather";
                });
            }
}

TEST(CudaBodies, LogSoftmaxBackward) {
    for (int V : {1, 17, 52, 200})
        for (int M : {1, 37}) {
            SCOPED_TRACE(testing::Message() << "V " << V << " M " << M);
            const auto z = testdata::uniform((size_t)M * V, 22, -5, 5), g = testdata::uniform((size_t)M * V, 23);
            std::vector<float> lp((size_t)M * V);
            logsoftmax_forward({Family::batch_invariant}, lp.data(), z.data(), 1.25f, M, V);
            for_each_cpu_config([&] {
                std::vector<float> dw((size_t)M * V, 0.5f), dg = dw;
                logsoftmax_backward(dw.data(), g.data(), lp.data(), 1.25f, M, V);
                const B::LogsoftmaxBwdArgs a{dg.data(), g.data(), lp.data(), 1.25f, M, V};
                run_blocks(
                    row_blocks(M), B::kRowThreads, B::kRowSmem,
                    [&](int64_t b, int t, float* sm) { B::logsoftmax_bwd_p1(a, (int)b, t, sm); },
                    [&](int64_t b, int t, float* sm) { B::logsoftmax_bwd_p2(a, (int)b, t, sm); });
                EXPECT_TRUE(bits_equal(dg, dw));
            });
        }
}

// The router's rows are the CPU's code in both families (bi16 or left-to-right weights).
TEST(CudaBodies, Router) {
    struct S {
        int E, k;
    };
    for (S s : {S{8, 2}, S{16, 4}, S{48, 8}, S{48, 20}, S{4, 6}})
        for (Family fam : {Family::batch_invariant, Family::fast})
            for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
                const int M = 13;
                SCOPED_TRACE(testing::Message() << "E " << s.E << " k " << s.k << " "
                                                << (fam == Family::fast ? "fast" : "bi") << " " << dt_name(dt));
                auto z = rounded(testdata::uniform((size_t)M * s.E, 24, -3, 3), dt);
                z[3] = z[5];  // a tie: the lower id first
                const auto dwts = testdata::uniform((size_t)M * s.k, 25);
                for_each_cpu_config([&] {
                    const Exec ex{fam, dt};
                    const bool bi = fam == Family::batch_invariant;
                    std::vector<int32_t> iw((size_t)M * s.k), ig(iw.size());
                    std::vector<float> ww((size_t)M * s.k), wg(ww.size()), rw(ww.size()), rg(ww.size());
                    router_topk_forward(ex, iw.data(), ww.data(), z.data(), M, s.E, s.k);
                    for (int m = 0; m < M; ++m) B::router_topk_row(bi, dt, ig.data(), wg.data(), z.data(), s.E, s.k, m);
                    EXPECT_EQ(ig, iw) << "ids";
                    EXPECT_TRUE(bits_equal(wg, ww)) << "weights";
                    router_replay_forward(ex, rw.data(), z.data(), iw.data(), M, s.E, s.k);
                    for (int m = 0; m < M; ++m)
                        B::router_replay_row(bi, dt, rg.data(), z.data(), iw.data(), s.E, s.k, m);
                    EXPECT_TRUE(bits_equal(rg, rw)) << "replay";
                    if (s.k > s.E) return;  // repeated ids: the backward is defined for distinct experts
                    std::vector<float> dlw((size_t)M * s.E, 0.5f), dlg = dlw;
                    router_backward(dlw.data(), dwts.data(), ww.data(), iw.data(), M, s.E, s.k);
                    for (int m = 0; m < M; ++m)
                        B::router_bwd_row(dlg.data(), dwts.data(), ww.data(), iw.data(), s.E, s.k, m);
                    EXPECT_TRUE(bits_equal(dlg, dlw)) << "backward";
                });
            }
}

// The MoE combine and its backward are the CPU's plans: the per-token chain
// over the slots, dy one product, the gate-weight gradient one double chain.
TEST(CudaBodies, MoeCombine) {
    const int M = 11, k = 3, D = 40, rows = 9;
    const auto pool = testdata::uniform((size_t)rows * D, 31, -3, 3);
    const auto w = testdata::uniform((size_t)M * k, 32, 0, 1);
    const auto dout = testdata::uniform((size_t)M * D, 33, -2, 2);
    std::vector<const float*> slot((size_t)M * k);
    for (size_t i = 0; i < slot.size(); ++i) slot[i] = pool.data() + (i * 5 % rows) * D;
    std::vector<int32_t> slots = {0, 4, 5, 9, 13, 20, 32};  // one expert's slots, ascending
    const int n = (int)slots.size();
    const auto y = testdata::uniform((size_t)n * D, 34, -3, 3);
    for_each_cpu_config([&] {
        for (Dtype dt : kStorage) {
            std::vector<float> want((size_t)M * D), got(want.size());
            moe_combine_forward({Family::fast, dt}, want.data(), slot.data(), w.data(), M, k, D);
            for (int64_t i = 0; i < (int64_t)M * D; ++i)
                B::moe_combine_at(got.data(), slot.data(), w.data(), k, D, dt, i);
            EXPECT_TRUE(bits_equal(got, want)) << "forward " << dt_name(dt);
        }
        std::vector<float> dyw((size_t)n * D), dyg(dyw.size()), dww((size_t)M * k, -1.0f), dwg = dww;
        moe_combine_backward(dyw.data(), dww.data(), dout.data(), y.data(), w.data(), slots.data(), n, k, D);
        for (int64_t i = 0; i < (int64_t)n * D; ++i)
            B::moe_combine_bwd_dy_at(dyg.data(), dout.data(), w.data(), slots.data(), k, D, i);
        for (int r = 0; r < n; ++r)
            B::moe_combine_bwd_dweight_row(dwg.data(), dout.data(), y.data(), slots.data(), k, D, r);
        EXPECT_TRUE(bits_equal(dyg, dyw)) << "backward dy";
        EXPECT_TRUE(bits_equal(dwg, dww)) << "backward dweights";
    });
}

namespace {

// AdamW steps: the defaults; step 1 with clipping (grad scale < 1) and decay;
// step 1000 with beta2 = 0.999, a grad scale above 1 and decay.
std::vector<AdamWStep> adamw_steps() {
    AdamWStep a;
    AdamWStep b;
    b.grad_scale = 0.37, b.weight_decay = 0.1, b.lr = 3e-4;
    b.bias_correction1 = 1.0 - b.beta1, b.bias_correction2 = 1.0 - b.beta2;
    AdamWStep c;
    c.grad_scale = 2.5, c.beta2 = 0.999, c.eps = 1e-6, c.weight_decay = 0.01, c.lr = 1e-2;
    c.bias_correction1 = 1.0 - std::pow(c.beta1, 1000.0), c.bias_correction2 = 1.0 - std::pow(c.beta2, 1000.0);
    return {a, b, c};
}

}  // namespace

// The optimizer step: the body (B::adamw_at, one index per thread) over
// random parameters equals the CPU kernel, which runs the same element code
// vectorised per ISA and split across threads, and the reference's order.
TEST(CudaBodies, Adamw) {
    const auto steps = adamw_steps();
    for (size_t si = 0; si < steps.size(); ++si)
        for (bool zero_moments : {false, true})
            for (int64_t n : {1, 15, 1000, 40009}) {  // 40009: split across threads
                SCOPED_TRACE(testing::Message() << "step " << si << " zero moments " << zero_moments << " n " << n);
                const AdamWStep& s = steps[si];
                const auto p0 = testdata::uniform(n, 30, -2, 2), g = testdata::uniform(n, 31, -3, 3);
                auto m0 = testdata::uniform(n, 32, -0.1f, 0.1f), v0 = testdata::uniform(n, 33, 0.0f, 0.01f);
                if (zero_moments) std::fill(m0.begin(), m0.end(), 0.0f), std::fill(v0.begin(), v0.end(), 0.0f);
                std::vector<float> pg = p0, mg = m0, vg = v0;
                for (int64_t i = 0; i < n; ++i) B::adamw_at(pg.data(), mg.data(), vg.data(), g.data(), s, i);
                ASSERT_NE(float_bits(pg[0]), float_bits(p0[0]));
                std::vector<float> pr = p0, mr = m0, vr = v0;
                ref::adamw_update(pr.data(), mr.data(), vr.data(), g.data(), n, s.grad_scale, s.beta1, s.beta2, s.eps,
                                  s.weight_decay, s.lr, s.bias_correction1, s.bias_correction2);
                EXPECT_TRUE(bits_equal(pg, pr)) << "params vs ref";
                EXPECT_TRUE(bits_equal(mg, mr)) << "first moment vs ref";
                EXPECT_TRUE(bits_equal(vg, vr)) << "second moment vs ref";
                for_each_cpu_config([&] {
                    std::vector<float> p = p0, m = m0, v = v0;
                    adamw_update(p.data(), m.data(), v.data(), g.data(), n, s);
                    EXPECT_TRUE(bits_equal(pg, p)) << "params";
                    EXPECT_TRUE(bits_equal(mg, m)) << "first moment";
                    EXPECT_TRUE(bits_equal(vg, v)) << "second moment";
                });
            }
}

namespace {

struct AttnShape {
    int B, T, H, Hkv, D;
    Dtype dt, pdt = Dtype::f32, sdt = Dtype::f32;
};
const AttnShape kAttnShapes[] = {{1, 1, 1, 1, 16, Dtype::f32},
                                 {3, 40, 4, 2, 16, Dtype::f32},
                                 {2, 70, 2, 1, 32, Dtype::bf16, Dtype::bf16},
                                 {1, 129, 4, 4, 64, Dtype::f16, Dtype::f16, Dtype::f16},
                                 {2, 17, 6, 3, 20, Dtype::f32, Dtype::bf16, Dtype::bf16},
                                 {1, 300, 2, 2, 16, Dtype::bf16, Dtype::bf16, Dtype::f32}};

template <class Locate>
void run_bi_attention(const B::AttnCommon& c, int64_t nblocks, int cap, Locate locate) {
    auto phase = [&](auto fn) {
        return [&, fn](int64_t b, int t, float* sm) { fn(c, locate(b), t, B::attn_smem(sm, cap)); };
    };
    run_blocks(nblocks, B::kAttnThreads, B::attn_smem_floats(cap), phase(B::attn_bi_p1), phase(B::attn_bi_p2),
               phase(B::attn_bi_p3), phase(B::attn_bi_p4), phase(B::attn_bi_p5));
}

}  // namespace

// Eager softmax (Exec::eager_softmax) runs the batch-invariant bodies in
// either family, on the CPU and on the device: both families' CPU bits are
// checked against the bodies.
TEST(CudaBodies, AttentionPrefillAndDecodeBatchInvariant) {
    for (const AttnShape& s : kAttnShapes)
        for (bool eager : {false, true})
            for (Family fam : {Family::batch_invariant, Family::fast}) {
                if (!eager && fam == Family::fast) continue;  // the fast family's own plan is not the bodies'
                SCOPED_TRACE(testing::Message()
                             << "B" << s.B << " T" << s.T << " H" << s.H << "/" << s.Hkv << " D" << s.D << " "
                             << dt_name(s.dt) << " probs " << dt_name(s.pdt) << " stats " << dt_name(s.sdt)
                             << (eager ? " eager" : "") << (fam == Family::fast ? " fast" : ""));
                const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * s.T * s.Hkv * s.D;
                const auto q = rounded(testdata::uniform(nq, 26, -2, 2), s.dt),
                           k = rounded(testdata::uniform(nk, 27, -2, 2), s.dt),
                           v = rounded(testdata::uniform(nk, 28), s.dt);
                Exec ex{fam, s.dt, s.pdt, s.sdt};
                ex.eager_softmax = eager;
                const B::AttnCommon c{s.D, 1.0f / std::sqrt((float)s.D), s.dt, s.pdt, s.sdt, eager};
                // the KV cache: sequence b in slot (2b+1) % (B+2), capacity T+5
                const int Tmax = s.T + 5;
                const int64_t cs = (int64_t)Tmax * s.Hkv * s.D;
                std::vector<float> kc((size_t)(s.B + 2) * cs, 0.0f), vc(kc.size(), 0.0f);
                std::vector<int32_t> slot(s.B);
                for (int b = 0; b < s.B; ++b) {
                    slot[b] = (2 * b + 1) % (s.B + 2);
                    for (int t = 0; t < s.T; ++t)
                        for (int i = 0; i < s.Hkv * s.D; ++i) {
                            kc[slot[b] * cs + (size_t)t * s.Hkv * s.D + i] = k[((size_t)b * s.T + t) * s.Hkv * s.D + i];
                            vc[slot[b] * cs + (size_t)t * s.Hkv * s.D + i] = v[((size_t)b * s.T + t) * s.Hkv * s.D + i];
                        }
                }
                for_each_cpu_config([&] {
                    std::vector<float> want(nq), watt((size_t)s.B * s.H * s.T * s.T, 7.0f);
                    attention_forward(ex, want.data(), watt.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv,
                                      s.D);
                    std::vector<float> got(nq), gatt(watt.size(), 7.0f);
                    const B::AttnPrefillArgs pa{c,        got.data(), gatt.data(), q.data(), k.data(),
                                                v.data(), s.B,        s.T,         s.H,      s.Hkv};
                    run_bi_attention(c, (int64_t)s.B * s.H * s.T, s.T,
                                     [&](int64_t b) { return B::prefill_query(pa, b); });
                    ASSERT_TRUE(bits_equal(got, want)) << "prefill";
                    ASSERT_TRUE(bits_equal(gatt, watt)) << "att";
                    // decode: sequence b at position (t + 7b) % T, so lengths differ within a step
                    for (int t = 0; t < s.T; t += std::max(1, s.T / 7)) {
                        std::vector<float> qt((size_t)s.B * s.H * s.D), ow(qt.size()), og(qt.size(), 3.0f);
                        std::vector<int32_t> len(s.B);
                        for (int b = 0; b < s.B; ++b) {
                            const int p = (t + 7 * b) % s.T;
                            len[b] = p + 1;
                            std::copy_n(q.begin() + ((size_t)b * s.T + p) * s.H * s.D, s.H * s.D,
                                        qt.begin() + (size_t)b * s.H * s.D);
                        }
                        attention_decode(ex, ow.data(), qt.data(), kc.data(), vc.data(), slot.data(), len.data(), cs,
                                         s.B, s.H, s.Hkv, s.D);
                        const B::AttnDecodeArgs da{c,          og.data(), qt.data(), kc.data(), vc.data(), slot.data(),
                                                   len.data(), cs,        s.B,       s.H,       s.Hkv};
                        run_bi_attention(c, (int64_t)s.B * s.H, Tmax,
                                         [&](int64_t b) { return B::decode_query(da, b); });
                        ASSERT_TRUE(bits_equal(og, ow)) << "decode step " << t;
                    }
                });
            }
}

TEST(CudaBodies, AttentionBackward) {
    for (const AttnShape& s : kAttnShapes) {
        SCOPED_TRACE(testing::Message() << "B" << s.B << " T" << s.T << " H" << s.H << "/" << s.Hkv << " D" << s.D);
        const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * s.T * s.Hkv * s.D;
        const auto q = testdata::uniform(nq, 29, -2, 2), k = testdata::uniform(nk, 30, -2, 2),
                   v = testdata::uniform(nk, 31), go = testdata::uniform(nq, 32);
        std::vector<float> out(nq), att((size_t)s.B * s.H * s.T * s.T);
        attention_forward({Family::batch_invariant}, out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T,
                          s.H, s.Hkv, s.D);
        for_each_cpu_config([&] {
            for (GradStore store : {GradStore::add, GradStore::overwrite}) {
                SCOPED_TRACE(store == GradStore::add ? "add" : "overwrite");
                std::vector<float> dq(nq, 0.5f), dk(nk, 0.25f), dv(nk, 0.0f), dqg = dq, dkg = dk, dvg = dv;
                attention_backward(dq.data(), dk.data(), dv.data(), go.data(), att.data(), q.data(), k.data(), v.data(),
                                   s.B, s.T, s.H, s.Hkv, s.D, store);
                std::vector<float> ds(att.size(), -1.0f);
                const B::AttnBwdArgs a{dqg.data(),
                                       dkg.data(),
                                       dvg.data(),
                                       ds.data(),
                                       go.data(),
                                       att.data(),
                                       q.data(),
                                       k.data(),
                                       v.data(),
                                       s.B,
                                       s.T,
                                       s.H,
                                       s.Hkv,
                                       s.D,
                                       1.0f / std::sqrt((float)s.D),
                                       store == GradStore::add};
                run_blocks((int64_t)s.B * s.H * s.T, B::kAttnThreads, B::kLanes,
                           [&](int64_t b, int t, float*) { B::attn_bwd_ds_p1(a, b, t); },
                           [&](int64_t b, int t, float* sm) { B::attn_bwd_ds_p2(a, b, t, sm); },
                           [&](int64_t b, int t, float* sm) { B::attn_bwd_ds_p3(a, b, t, sm); });
                for (int64_t i = 0; i < (int64_t)nq; ++i) B::attn_bwd_dq_at(a, i);
                for (int64_t i = 0; i < (int64_t)nk; ++i) B::attn_bwd_dkdv_at(a, i);
                EXPECT_TRUE(bits_equal(dqg, dq)) << "dq";
                EXPECT_TRUE(bits_equal(dkg, dk)) << "dk";
                EXPECT_TRUE(bits_equal(dvg, dv)) << "dv";
            }
        });
    }
}
