// Batch invariance: under Family::batch_invariant a row's output bits depend on
// nothing but the row (not the batch size, its position in the batch, the other
// rows, the thread count or the ISA path), and decode attention against a KV
// cache equals prefill attention bit for bit at every position. The fast family,
// by contrast, must really change bits with the batch size.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cpu/features.h"
#include "kernels/cpu/gemm.h"
#include "kernels/kernels.h"
#include "tests/bits.h"
#include "tests/random_data.h"

using namespace mlk;

namespace {

using testdata::bits_equal;

using testdata::count_diff;

struct Config {
    cpu::Isa isa;
    int threads;
};

// Every (ISA available here) x (1, 2 threads).
std::vector<Config> configs() {
    std::vector<Config> c;
    for (int i = 0; i <= static_cast<int>(cpu::detected_isa()); ++i)
        for (int t : {1, 2}) c.push_back({static_cast<cpu::Isa>(i), t});
    return c;
}

class Restore {
public:
    ~Restore() {
        cpu::force_isa(cpu::detected_isa());
        set_num_threads(0);
    }
};

// Places row `x` (width W) at `pos` in a batch of `M` rows whose other rows are
// random (seeded by M, so every batch has different neighbours).
std::vector<float> batch_with(const std::vector<float>& x, int W, int M, int pos, float lo, float hi) {
    auto b = testdata::uniform((size_t)M * W, 1000 + M, lo, hi);
    std::copy(x.begin(), x.end(), b.begin() + (size_t)pos * W);
    return b;
}

struct Placement {
    int M, pos;
};
const Placement kPlacements[] = {{1, 0}, {7, 3}, {64, 50}, {300, 299}};

// For every config and placement, run(M, batch) must return the same bits for
// the probed row as the first config at batch 1.
void expect_row_invariant(const char* what, int W, float lo, float hi,
                          const std::function<std::vector<float>(const std::vector<float>&, int, int)>& run) {
    Restore restore;
    SCOPED_TRACE(what);
    const auto x = testdata::uniform(W, 77, lo, hi);
    std::vector<float> base;
    for (const Config& c : configs()) {
        cpu::force_isa(c.isa);
        set_num_threads(c.threads);
        for (const Placement& p : kPlacements) {
            SCOPED_TRACE(testing::Message() << cpu::isa_name(c.isa) << " threads " << c.threads << " M " << p.M);
            auto got = run(batch_with(x, W, p.M, p.pos, lo, hi), p.M, p.pos);
            if (base.empty()) base = got;
            else ASSERT_TRUE(bits_equal(got, base));
        }
    }
}

const Exec kBi{Family::batch_invariant, Dtype::f32};

}  // namespace

TEST(KernelsInvariance, MatmulRowIsBatchInvariant) {
    const int kn[][2] = {{64, 64}, {64, 192}, {192, 64}, {64, 52}, {128, 384}, {384, 128}, {128, 16}, {96, 128}};
    for (auto s : kn)
        for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
            const int K = s[0], N = s[1];
            auto w = testdata::uniform((size_t)K * N, 5 + K + N);
            auto bias = testdata::uniform(N, 6);
            expect_row_invariant(("matmul " + std::to_string(K) + "x" + std::to_string(N)).c_str(), K, -1, 1,
                                 [&](const std::vector<float>& in, int M, int pos) {
                                     std::vector<float> out((size_t)M * N);
                                     matmul_forward({Family::batch_invariant, dt}, out.data(), in.data(), w.data(),
                                                    bias.data(), M, K, N);
                                     return std::vector<float>(out.begin() + (size_t)pos * N,
                                                               out.begin() + (size_t)(pos + 1) * N);
                                 });
        }
}

TEST(KernelsInvariance, RmsnormRowIsBatchInvariant) {
    for (int C : {64, 128, 52}) {
        auto w = testdata::uniform(C, 8, 0.5, 1.5);
        expect_row_invariant("rmsnorm", C, -2, 2, [&](const std::vector<float>& in, int M, int pos) {
            std::vector<float> out((size_t)M * C), rs(M);
            rmsnorm_forward(kBi, out.data(), rs.data(), in.data(), w.data(), 1e-6f, M, C);
            std::vector<float> r(out.begin() + (size_t)pos * C, out.begin() + (size_t)(pos + 1) * C);
            r.push_back(rs[pos]);
            return r;
        });
    }
}

TEST(KernelsInvariance, LogSoftmaxAndEntropyRowIsBatchInvariant) {
    for (int V : {52, 200}) {
        expect_row_invariant("log_softmax + entropy", V, -6, 6, [&](const std::vector<float>& in, int M, int pos) {
            std::vector<float> lp((size_t)M * V), ent(M);
            logsoftmax_forward(kBi, lp.data(), in.data(), 1.0f / 0.9f, M, V);
            entropy_forward(kBi, ent.data(), lp.data(), M, V);
            std::vector<float> r(lp.begin() + (size_t)pos * V, lp.begin() + (size_t)(pos + 1) * V);
            r.push_back(ent[pos]);
            return r;
        });
    }
}

TEST(KernelsInvariance, RouterAndSwigluRowIsBatchInvariant) {
    const int E = 16, k = 4;
    expect_row_invariant("router", E, -2, 2, [&](const std::vector<float>& in, int M, int pos) {
        std::vector<int32_t> ids((size_t)M * k);
        std::vector<float> w((size_t)M * k), w2((size_t)M * k);
        router_topk_forward({Family::batch_invariant, Dtype::bf16}, ids.data(), w.data(), in.data(), M, E, k);
        router_replay_forward({Family::batch_invariant, Dtype::bf16}, w2.data(), in.data(), ids.data(), M, E, k);
        std::vector<float> r;
        for (int j = 0; j < k; ++j) r.push_back((float)ids[(size_t)pos * k + j]);
        for (int j = 0; j < k; ++j) r.push_back(w[(size_t)pos * k + j]);
        for (int j = 0; j < k; ++j) r.push_back(w2[(size_t)pos * k + j]);
        return r;
    });
    const int F = 192;
    auto up = testdata::uniform(F, 9);
    expect_row_invariant("swiglu", F, -6, 6, [&](const std::vector<float>& in, int M, int pos) {
        std::vector<float> u((size_t)M * F);
        for (int m = 0; m < M; ++m) std::copy(up.begin(), up.end(), u.begin() + (size_t)m * F);
        std::vector<float> out((size_t)M * F);
        swiglu_forward(kBi, out.data(), in.data(), u.data(), (int64_t)M * F);
        return std::vector<float>(out.begin() + (size_t)pos * F, out.begin() + (size_t)(pos + 1) * F);
    });
}

// Decode against a cache equals prefill at every position, bitwise, in every
// config, with grouped-query heads, narrow storage, and sequences of different
// lengths decoded together (continuous batching).
TEST(KernelsInvariance, DecodeEqualsPrefillAtEveryPosition) {
    Restore restore;
    // pdt / sdt: the P tile and normaliser rounding points of a profile.
    struct S {
        int B, T, H, Hkv, D;
        Dtype dt, pdt = Dtype::f32, sdt = Dtype::f32;
    };
    const S shapes[] = {{3, 40, 4, 2, 16, Dtype::f32},
                        {2, 70, 2, 1, 32, Dtype::bf16, Dtype::bf16},
                        {1, 129, 4, 4, 64, Dtype::f16, Dtype::f16, Dtype::f16},
                        {2, 17, 6, 3, 20, Dtype::f32, Dtype::bf16, Dtype::bf16}};
    for (auto s : shapes) {
        SCOPED_TRACE(testing::Message() << "B" << s.B << " T" << s.T << " H" << s.H << "/" << s.Hkv << " D" << s.D
                                        << " probs " << dtype_name(s.pdt) << " stats " << dtype_name(s.sdt));
        const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * s.T * s.Hkv * s.D;
        auto q = testdata::uniform(nq, 11, -2, 2), k = testdata::uniform(nk, 12, -2, 2), v = testdata::uniform(nk, 13);
        for (auto* t : {&q, &k, &v})
            for (auto& x : *t) x = round_to(x, s.dt);
        const int Tmax = s.T + 5;
        const int64_t cs = (int64_t)Tmax * s.Hkv * s.D;
        std::vector<float> kc((size_t)(s.B + 2) * cs, 0.0f), vc(kc.size(), 0.0f);
        for (int b = 0; b < s.B; ++b)
            for (int t = 0; t < s.T; ++t)
                for (int i = 0; i < s.Hkv * s.D; ++i) {
                    const size_t slot = (size_t)(b * 2 + 1) % (s.B + 2);
                    kc[slot * cs + (size_t)t * s.Hkv * s.D + i] = k[((size_t)b * s.T + t) * s.Hkv * s.D + i];
                    vc[slot * cs + (size_t)t * s.Hkv * s.D + i] = v[((size_t)b * s.T + t) * s.Hkv * s.D + i];
                }
        std::vector<float> base;
        for (const Config& c : configs()) {
            cpu::force_isa(c.isa);
            set_num_threads(c.threads);
            SCOPED_TRACE(testing::Message() << cpu::isa_name(c.isa) << " threads " << c.threads);
            std::vector<float> pre(nq);
            const Exec bi{Family::batch_invariant, s.dt, s.pdt, s.sdt};
            attention_forward(bi, pre.data(), nullptr, q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
            if (base.empty()) base = pre;
            else ASSERT_TRUE(bits_equal(pre, base));
            // decode: sequence b is at position (t + 7*b) % T, so lengths differ inside a step
            for (int t = 0; t < s.T; ++t) {
                std::vector<float> qt((size_t)s.B * s.H * s.D), ot(qt.size()), want(qt.size());
                std::vector<int32_t> slot(s.B), len(s.B);
                for (int b = 0; b < s.B; ++b) {
                    const int p = (t + 7 * b) % s.T;
                    slot[b] = (b * 2 + 1) % (s.B + 2);
                    len[b] = p + 1;
                    const size_t off = ((size_t)b * s.T + p) * s.H * s.D;
                    std::copy_n(q.begin() + off, s.H * s.D, qt.begin() + (size_t)b * s.H * s.D);
                    std::copy_n(pre.begin() + off, s.H * s.D, want.begin() + (size_t)b * s.H * s.D);
                }
                attention_decode(bi, ot.data(), qt.data(), kc.data(), vc.data(), slot.data(), len.data(), cs, s.B, s.H,
                                 s.Hkv, s.D);
                ASSERT_TRUE(bits_equal(ot, want)) << "t " << t;
            }
        }
    }
}

// A sequence's cache slot holds whatever its previous user left past the
// sequence's length (the rollout neither zeroes the cache nor clears a freed
// slot): decode in either family reads positions below len only, so NaN there
// changes no bit of the output.
TEST(KernelsInvariance, DecodeReadsNoCachePositionPastItsLength) {
    Restore restore;
    struct S {
        int B, H, Hkv, D, Tmax;
    };
    for (const S s : {S{5, 4, 2, 16, 90}, S{3, 2, 1, 40, 300}}) {
        SCOPED_TRACE(testing::Message() << "B" << s.B << " H" << s.H << "/" << s.Hkv << " D" << s.D);
        const int64_t cs = (int64_t)s.Tmax * s.Hkv * s.D;
        const size_t slots = (size_t)s.B + 1;
        std::vector<int32_t> slot(s.B), len(s.B);
        for (int b = 0; b < s.B; ++b) {
            slot[b] = (int32_t)((b + 1) % slots);
            len[b] = 1 + (37 * b + 11) % s.Tmax;
        }
        const auto k = testdata::uniform(slots * cs, 41, -2, 2), v = testdata::uniform(slots * cs, 42);
        const auto q = testdata::uniform((size_t)s.B * s.H * s.D, 43, -2, 2);
        std::vector<float> kz(slots * cs, 0.0f), vz = kz, kn(slots * cs, std::nanf("")), vn = kn;
        for (int b = 0; b < s.B; ++b)
            for (int64_t i = 0; i < (int64_t)len[b] * s.Hkv * s.D; ++i) {
                const size_t at = (size_t)slot[b] * cs + i;
                kz[at] = kn[at] = k[at];
                vz[at] = vn[at] = v[at];
            }
        for (const Config& c : configs())
            for (Family fam : {Family::fast, Family::batch_invariant}) {
                cpu::force_isa(c.isa);
                set_num_threads(c.threads);
                SCOPED_TRACE(testing::Message() << cpu::isa_name(c.isa) << " threads " << c.threads
                                                << (fam == Family::fast ? " fast" : " batch-invariant"));
                const Exec ex{fam, Dtype::f32};
                std::vector<float> oz(q.size()), on(q.size());
                attention_decode(ex, oz.data(), q.data(), kz.data(), vz.data(), slot.data(), len.data(), cs, s.B, s.H,
                                 s.Hkv, s.D);
                attention_decode(ex, on.data(), q.data(), kn.data(), vn.data(), slot.data(), len.data(), cs, s.B, s.H,
                                 s.Hkv, s.D);
                EXPECT_TRUE(bits_equal(on, oz));
            }
    }
}

// The fast family's prefill (online softmax over 128-key blocks) is one plan per
// query: its output and saved probabilities have the same bits on every ISA path
// and thread count, and without saving the probabilities (which then skips
// their second exponential). Lengths of one block (the batch-invariant plan
// itself, by its statement), three and five blocks.
TEST(KernelsInvariance, FastPrefillIsOnePlanOnEveryPath) {
    Restore restore;
    struct S {
        int B, T, H, Hkv, D;
        Dtype pdt, sdt;
    };
    const S shapes[] = {{2, 70, 4, 2, 16, Dtype::f32, Dtype::f32},
                        {1, 300, 2, 1, 16, Dtype::f32, Dtype::f32},
                        {1, 600, 2, 2, 40, Dtype::bf16, Dtype::bf16}};
    for (auto s : shapes) {
        SCOPED_TRACE(testing::Message() << "T" << s.T << " D" << s.D);
        const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * s.T * s.Hkv * s.D;
        // Scores spread wide enough that the running max moves in many blocks.
        auto q = testdata::uniform(nq, 31, -3, 3), k = testdata::uniform(nk, 32, -3, 3), v = testdata::uniform(nk, 33);
        const Exec fast{Family::fast, Dtype::f32, s.pdt, s.sdt};
        std::vector<float> base_out, base_att;
        for (const Config& c : configs()) {
            cpu::force_isa(c.isa);
            set_num_threads(c.threads);
            SCOPED_TRACE(testing::Message() << cpu::isa_name(c.isa) << " threads " << c.threads);
            std::vector<float> out(nq), att((size_t)s.B * s.H * s.T * s.T);
            attention_forward(fast, out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
            if (base_out.empty()) {
                base_out = out;
                base_att = att;
                continue;
            }
            EXPECT_TRUE(bits_equal(out, base_out));
            EXPECT_TRUE(bits_equal(att, base_att));
        }
        std::vector<float> unsaved(nq);
        attention_forward(fast, unsaved.data(), nullptr, q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
        EXPECT_TRUE(bits_equal(unsaved, base_out));
        const Exec bi{Family::batch_invariant, Dtype::f32, s.pdt, s.sdt};
        std::vector<float> bi_out(nq);
        attention_forward(bi, bi_out.data(), nullptr, q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
        if (s.T <= 128) EXPECT_TRUE(bits_equal(bi_out, base_out));
        else EXPECT_GT(count_diff(bi_out, base_out), 0u) << "more than one key block rescales";
    }
}

// RoPE: a decode step (one row) gets the same bits as the prefill row.
TEST(KernelsInvariance, RopeDecodeEqualsPrefill) {
    const int T = 200, H = 4, D = 16;
    auto x = testdata::uniform((size_t)T * H * D, 21);
    std::vector<int32_t> pos(T);
    for (int t = 0; t < T; ++t) pos[t] = t;
    std::vector<float> pre = x;
    rope_forward(pre.data(), pos.data(), T, H, D, 10000.0f, Dtype::bf16);
    for (int t : {0, 1, 63, 64, 199}) {
        std::vector<float> row(x.begin() + (size_t)t * H * D, x.begin() + (size_t)(t + 1) * H * D);
        rope_forward(row.data(), &pos[t], 1, H, D, 10000.0f, Dtype::bf16);
        EXPECT_TRUE(bits_equal(
            row, std::vector<float>(pre.begin() + (size_t)t * H * D, pre.begin() + (size_t)(t + 1) * H * D)));
    }
}

// Backward kernels: one order whatever the thread count.
TEST(KernelsInvariance, BackwardIndependentOfThreads) {
    Restore restore;
    const int M = 300, K = 64, N = 192, B = 3, T = 50, H = 4, Hkv = 2, D = 16, V = 52, C = 64;
    auto inp = testdata::uniform((size_t)M * K, 41), w = testdata::uniform((size_t)K * N, 42),
         dout = testdata::uniform((size_t)M * N, 43);
    const size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D;
    auto q = testdata::uniform(nq, 44, -2, 2), k = testdata::uniform(nk, 45, -2, 2), v = testdata::uniform(nk, 46),
         go = testdata::uniform(nq, 47);
    std::vector<float> att((size_t)B * H * T * T), out(nq);
    attention_forward(kBi, out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
    auto z = testdata::uniform((size_t)M * V, 48, -5, 5), glp = testdata::uniform((size_t)M * V, 49);
    std::vector<float> lp((size_t)M * V);
    logsoftmax_forward(kBi, lp.data(), z.data(), 1.0f, M, V);
    auto xn = testdata::uniform((size_t)M * C, 50, -2, 2), wn = testdata::uniform(C, 51, 0.5, 1.5),
         gn = testdata::uniform((size_t)M * C, 52);
    std::vector<float> yn((size_t)M * C), rs(M);
    rmsnorm_forward(kBi, yn.data(), rs.data(), xn.data(), wn.data(), 1e-6f, M, C);
    std::vector<int32_t> tok(M);
    for (int m = 0; m < M; ++m) tok[m] = (m * 31) % V;

    auto run_all = [&] {
        std::vector<float> r;
        auto app = [&](const std::vector<float>& x) { r.insert(r.end(), x.begin(), x.end()); };
        std::vector<float> di((size_t)M * K, 0.5f), dw((size_t)K * N, 0.25f), db(N, 0.0f);
        matmul_backward(di.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), M, K, N);
        app(di), app(dw), app(db);
        std::vector<float> dq(nq, 0.0f), dk(nk, 0.0f), dv(nk, 0.0f);
        attention_backward(dq.data(), dk.data(), dv.data(), go.data(), att.data(), q.data(), k.data(), v.data(), B, T,
                           H, Hkv, D);
        app(dq), app(dk), app(dv);
        std::vector<float> dz((size_t)M * V, 0.0f), dl = glp;
        logsoftmax_backward(dz.data(), dl.data(), lp.data(), 1.0f, M, V);
        app(dz);
        std::vector<float> dx((size_t)M * C, 0.0f), dwn(C, 0.0f), dtab((size_t)V * C, 0.0f);
        rmsnorm_backward(dx.data(), dwn.data(), gn.data(), xn.data(), wn.data(), rs.data(), M, C);
        embedding_backward(dtab.data(), gn.data(), tok.data(), M, C);
        app(dx), app(dwn), app(dtab);
        std::vector<float> dg((size_t)M * C, 0.0f), du((size_t)M * C, 0.0f);
        swiglu_backward(dg.data(), du.data(), gn.data(), xn.data(), yn.data(), (int64_t)M * C);
        app(dg), app(du);
        return r;
    };
    for (int i = 0; i <= static_cast<int>(cpu::detected_isa()); ++i) {
        cpu::force_isa(static_cast<cpu::Isa>(i));
        SCOPED_TRACE(cpu::isa_name(static_cast<cpu::Isa>(i)));
        set_num_threads(1);
        auto one = run_all();
        set_num_threads(2);
        auto two = run_all();
        EXPECT_TRUE(bits_equal(one, two));
        set_num_threads(3);  // oversubscribed: still the same
        EXPECT_TRUE(bits_equal(run_all(), one));
    }
}

// The thread count is each application thread's own: the fast family's plan
// follows the count its caller set, so a probe setting 1 thread on one thread
// cannot change the bits of a run computing with 2 on another.
TEST(KernelsInvariance, ThreadCountIsPerCallingThread) {
    Restore restore;
    const Exec fast{Family::fast, Dtype::f32};
    const int M = 4, K = 2048, N = 64;  // decode-sized: split-K by the thread count
    auto x = testdata::uniform((size_t)M * K, 71), w = testdata::uniform((size_t)K * N, 72);
    auto mm = [&] {
        std::vector<float> out((size_t)M * N);
        matmul_forward(fast, out.data(), x.data(), w.data(), nullptr, M, K, N);
        return out;
    };
    set_num_threads(1);
    const auto one = mm();
    set_num_threads(2);
    const auto two = mm();
    ASSERT_FALSE(bits_equal(one, two)) << "this shape's fast plan must depend on the thread count";
    std::vector<float> other;
    std::thread([&] {
        set_num_threads(1);  // another thread asks for one
        other = mm();
    }).join();
    EXPECT_TRUE(bits_equal(other, one)) << "the other thread computes with its own count";
    EXPECT_EQ(num_threads(), 2);
    EXPECT_TRUE(bits_equal(mm(), two)) << "this thread's count and bits are unchanged";
}

// An MoE layer's experts run as tasks of parallel_tasks (a grouped GEMM):
// each must keep the bits of its own sequential call, including the fast
// family's decode-size split-K whose plan follows the caller's thread count,
// and the caller must still see every flop and GEMM shape.
TEST(KernelsInvariance, ParallelTasksKeepEachCallsBits) {
    Restore restore;
    set_num_threads(2);
    const Exec fast{Family::fast, Dtype::f32};
    const int K = 2048, N = 64;
    const std::vector<int> rows = {4, 1, 0, 7, 64, 2, 33, 3};  // decode sizes (split-K) and larger ones
    const int G = (int)rows.size();
    std::vector<std::vector<float>> x(G), w(G), serial(G), grouped(G);
    for (int g = 0; g < G; ++g) {
        x[g] = testdata::uniform((size_t)std::max(rows[g], 1) * K, 300 + g);
        w[g] = testdata::uniform((size_t)K * N, 400 + g);
        serial[g].assign((size_t)rows[g] * N, 0.0f);
        grouped[g].assign((size_t)rows[g] * N, -1.0f);
    }
    GemmShapeLog serial_log, grouped_log;
    set_gemm_shape_log(&serial_log);
    const double f0 = kernel_flop_count();
    for (int g = 0; g < G; ++g)
        matmul_forward(fast, serial[g].data(), x[g].data(), w[g].data(), nullptr, rows[g], K, N);
    const double serial_flops = kernel_flop_count() - f0;
    set_gemm_shape_log(&grouped_log);
    std::vector<double> cost(rows.begin(), rows.end());
    std::vector<std::atomic<int>> runs(G);
    const double f1 = kernel_flop_count();
    parallel_tasks(G, cost.data(), [&](int g) {
        runs[g].fetch_add(1);
        matmul_forward(fast, grouped[g].data(), x[g].data(), w[g].data(), nullptr, rows[g], K, N);
    });
    const double grouped_flops = kernel_flop_count() - f1;
    set_gemm_shape_log(nullptr);
    for (int g = 0; g < G; ++g) {
        EXPECT_EQ(runs[g].load(), 1) << "task " << g;
        EXPECT_TRUE(bits_equal(grouped[g], serial[g])) << "expert of " << rows[g] << " rows";
    }
    EXPECT_EQ(grouped_flops, serial_flops);
    EXPECT_EQ(grouped_log, serial_log);
    // The split-K plan of 4 rows depends on the count: had a worker planned
    // with its own default instead of the caller's, the check above could pass
    // by luck on a 2-thread machine, so compare with a 1-thread plan too.
    set_num_threads(1);
    std::vector<float> one((size_t)rows[0] * N);
    matmul_forward(fast, one.data(), x[0].data(), w[0].data(), nullptr, rows[0], K, N);
    EXPECT_FALSE(bits_equal(one, serial[0])) << "this shape's fast plan must depend on the thread count";
}

TEST(KernelsInvariance, ParallelTasksRethrowsAfterTheOthersFinish) {
    Restore restore;
    set_num_threads(2);
    std::vector<std::atomic<int>> done(16);
    EXPECT_THROW(parallel_tasks(16, nullptr,
                                [&](int i) {
                                    if (i == 5) throw std::runtime_error("task 5");
                                    done[i].store(1);
                                }),
                 std::runtime_error);
    for (int i = 0; i < 16; ++i)
        if (i != 5) {
            EXPECT_EQ(done[i].load(), 1) << "task " << i;
        }
}

// The mismatch is real: the fast family changes bits with the batch size for
// model shapes, while staying deterministic run to run.
TEST(KernelsInvariance, FastFamilyChangesBitsWithBatch) {
    Restore restore;
    set_num_threads(2);
    const Exec fast{Family::fast, Dtype::f32};
    const int K = 128, N = 128;
    auto w = testdata::uniform((size_t)K * N, 61);
    auto big = testdata::uniform((size_t)1024 * K, 62);
    auto run_mm = [&](int M) {
        std::vector<float> out((size_t)M * N);
        matmul_forward(fast, out.data(), big.data(), w.data(), nullptr, M, K, N);
        return std::vector<float>(out.begin(), out.begin() + 8 * N);  // rows 0..7
    };
    const auto m8 = run_mm(8), m1024 = run_mm(1024), m32 = run_mm(32);
    EXPECT_TRUE(bits_equal(run_mm(8), m8));  // deterministic
    EXPECT_GT(count_diff(m8, m1024), 0u) << "split-K decode vs K-blocked training should differ";
    EXPECT_GT(count_diff(m32, m1024), 0u);
    // and the batch-invariant family does not
    std::vector<float> b8((size_t)8 * N), b1024((size_t)1024 * N);
    matmul_forward(kBi, b8.data(), big.data(), w.data(), nullptr, 8, K, N);
    matmul_forward(kBi, b1024.data(), big.data(), w.data(), nullptr, 1024, K, N);
    EXPECT_TRUE(bits_equal(b8, std::vector<float>(b1024.begin(), b1024.begin() + 8 * N)));

    // row reductions: few rows vs many rows
    const int V = 52, C = 64;
    auto z = testdata::uniform((size_t)256 * V, 63, -6, 6);
    std::vector<float> lp4((size_t)256 * V), lp256((size_t)256 * V), e4(256), e256(256);
    for (int m0 = 0; m0 < 256; m0 += 4) {  // decode-sized batches of 4 rows
        logsoftmax_forward(fast, lp4.data() + (size_t)m0 * V, z.data() + (size_t)m0 * V, 1.0f, 4, V);
    }
    logsoftmax_forward(fast, lp256.data(), z.data(), 1.0f, 256, V);
    // entropy of the same log-probs, 4 rows at a time vs 256 at once
    for (int m0 = 0; m0 < 256; m0 += 4) entropy_forward(fast, e4.data() + m0, lp256.data() + (size_t)m0 * V, 4, V);
    entropy_forward(fast, e256.data(), lp256.data(), 256, V);
    EXPECT_GT(count_diff(lp4, lp256), 0u);
    EXPECT_GT(count_diff(e4, e256), 0u);
    auto x = testdata::uniform((size_t)256 * C, 64, -2, 2), wn = testdata::uniform(C, 65, 0.5, 1.5);
    std::vector<float> y4((size_t)4 * C), y256((size_t)256 * C);
    rmsnorm_forward(fast, y4.data(), nullptr, x.data(), wn.data(), 1e-6f, 4, C);
    rmsnorm_forward(fast, y256.data(), nullptr, x.data(), wn.data(), 1e-6f, 256, C);
    EXPECT_GT(count_diff(y4, std::vector<float>(y256.begin(), y256.begin() + 4 * C)), 0u);

    // attention: split-KV decode (scores as lane sums and a tree) vs the prefill
    const int T = 96, H = 4, Hkv = 2, D = 16;
    auto q = testdata::uniform((size_t)T * H * D, 66, -2, 2), k = testdata::uniform((size_t)T * Hkv * D, 67, -2, 2),
         v = testdata::uniform((size_t)T * Hkv * D, 68);
    std::vector<float> pre((size_t)T * H * D);
    attention_forward(fast, pre.data(), nullptr, q.data(), k.data(), v.data(), 1, T, H, Hkv, D);
    size_t diff = 0;
    for (int t = 0; t < T; ++t) {
        std::vector<float> o((size_t)H * D);
        int32_t slot = 0, len = t + 1;
        attention_decode(fast, o.data(), q.data() + (size_t)t * H * D, k.data(), v.data(), &slot, &len,
                         (int64_t)T * Hkv * D, 1, H, Hkv, D);
        diff +=
            count_diff(o, std::vector<float>(pre.begin() + (size_t)t * H * D, pre.begin() + (size_t)(t + 1) * H * D));
    }
    EXPECT_GT(diff, 0u);
}

// The fast family's matmul is the plan its comment states. M <= 8: split-K,
// S = fast_splitk_parts(M, K, threads) fresh FMA chains over [s*K/S, (s+1)*K/S)
// summed by the pairwise tree; M > 8: K blocks of fast_kblock(M), each a fresh
// chain, added left to right; then + bias. Checked against those plans written
// out in scalar code, on every ISA and thread count: S from 2 to 8, one to
// six K blocks (the tiles that keep the total in C and those that keep it in
// registers), partial column vectors and one-row and two-tile row counts.
TEST(KernelsInvariance, FastMatmulFollowsItsPlan) {
    Restore restore;
    struct S {
        int M, K, N;
    };
    const S shapes[] = {{1, 64, 52},   {3, 128, 70},  {5, 96, 128},   {8, 384, 128},  {7, 256, 200},
                        {20, 384, 52}, {33, 100, 64}, {64, 384, 128}, {100, 600, 70}, {70, 256, 16}};
    for (const S sh : shapes) {
        const auto x = testdata::uniform((size_t)sh.M * sh.K, 91, -2, 2),
                   w = testdata::uniform((size_t)sh.K * sh.N, 92), b = testdata::uniform(sh.N, 93);
        for (const Config& c : configs()) {
            cpu::force_isa(c.isa);
            set_num_threads(c.threads);
            // Part s of the reduction: [bound(s), bound(s + 1)).
            const int parts = cpu::fast_splitk_parts(sh.M, sh.K, c.threads);
            const int kblock = cpu::fast_kblock(sh.M);
            const int nparts = parts > 1 ? parts : (sh.K + kblock - 1) / kblock;
            const auto bound = [&](int s) {
                return parts > 1 ? (int)((int64_t)s * sh.K / parts) : std::min(sh.K, s * kblock);
            };
            SCOPED_TRACE(testing::Message() << cpu::isa_name(c.isa) << " threads " << c.threads << " M" << sh.M << " K"
                                            << sh.K << " N" << sh.N << " parts " << nparts);
            std::vector<float> want((size_t)sh.M * sh.N), got(want.size()), partial(nparts);
            for (int m = 0; m < sh.M; ++m)
                for (int n = 0; n < sh.N; ++n) {
                    for (int s = 0; s < nparts; ++s) {
                        float acc = 0.0f;
                        for (int k = bound(s); k < bound(s + 1); ++k)
                            acc = __builtin_fmaf(x[(size_t)m * sh.K + k], w[(size_t)k * sh.N + n], acc);
                        partial[s] = acc;
                    }
                    const std::function<float(int, int)> tree = [&](int lo, int hi) -> float {
                        if (hi - lo == 1) return partial[lo];
                        const int mid = lo + (hi - lo) / 2;
                        return tree(lo, mid) + tree(mid, hi);
                    };
                    float total = partial[0];
                    for (int s = 1; s < nparts; ++s) total = total + partial[s];
                    want[(size_t)m * sh.N + n] = (parts > 1 ? tree(0, parts) : total) + b[n];
                }
            matmul_forward(Exec{Family::fast, Dtype::f32}, got.data(), x.data(), w.data(), b.data(), sh.M, sh.K, sh.N);
            EXPECT_TRUE(bits_equal(got, want));
        }
    }
}

// The pool survives resizing between and around parallel kernels.
TEST(KernelsInvariance, PoolResizeStress) {
    Restore restore;
    const int M = 256, K = 64, N = 192;
    auto x = testdata::uniform((size_t)M * K, 71), w = testdata::uniform((size_t)K * N, 72);
    std::vector<float> ref((size_t)M * N), out((size_t)M * N);
    matmul_forward(kBi, ref.data(), x.data(), w.data(), nullptr, M, K, N);
    for (int r = 0; r < 200; ++r) {
        if (r % 10 == 0) set_num_threads(1 + (r / 10) % 3);
        matmul_forward(kBi, out.data(), x.data(), w.data(), nullptr, M, K, N);
        ASSERT_TRUE(bits_equal(out, ref)) << r;
    }
    set_num_threads(0);
    EXPECT_GE(num_threads(), 1);
}

// The fast family's plans are chosen by shape and thread count only, never by the
// ISA path: every path computes the same bits for a given (M, threads).
TEST(KernelsInvariance, FastFamilySameBitsOnEveryIsa) {
    Restore restore;
    set_num_threads(2);
    const Exec fast{Family::fast, Dtype::bf16};
    auto run = [&] {
        std::vector<float> r;
        auto app = [&](const std::vector<float>& x) { r.insert(r.end(), x.begin(), x.end()); };
        for (int M : {1, 5, 8, 20, 100}) {
            const int K = 128, N = 52;
            auto x = testdata::uniform((size_t)M * K, 81), w = testdata::uniform((size_t)K * N, 82),
                 b = testdata::uniform(N, 83);
            std::vector<float> out((size_t)M * N);
            matmul_forward(fast, out.data(), x.data(), w.data(), b.data(), M, K, N);
            app(out);
            std::vector<float> lp((size_t)M * N), ent(M), y((size_t)M * N);
            logsoftmax_forward(fast, lp.data(), out.data(), 1.0f, M, N);
            entropy_forward(fast, ent.data(), lp.data(), M, N);
            rmsnorm_forward(fast, y.data(), nullptr, out.data(), w.data(), 1e-6f, M, N);
            app(lp), app(ent), app(y);
        }
        const int B = 2, T = 70, H = 4, Hkv = 2, D = 16;
        auto q = testdata::uniform((size_t)B * T * H * D, 84, -2, 2),
             k = testdata::uniform((size_t)B * T * Hkv * D, 85, -2, 2),
             v = testdata::uniform((size_t)B * T * Hkv * D, 86);
        std::vector<float> o(q.size()), att((size_t)B * H * T * T);
        attention_forward(fast, o.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
        app(o), app(att);
        std::vector<int32_t> slot = {1, 0}, len = {70, 33};
        std::vector<float> od((size_t)B * H * D);
        attention_decode(fast, od.data(), q.data(), k.data(), v.data(), slot.data(), len.data(), (int64_t)T * Hkv * D,
                         B, H, Hkv, D);
        app(od);
        return r;
    };
    std::vector<float> base;
    for (int i = 0; i <= static_cast<int>(cpu::detected_isa()); ++i) {
        cpu::force_isa(static_cast<cpu::Isa>(i));
        SCOPED_TRACE(cpu::isa_name(static_cast<cpu::Isa>(i)));
        auto got = run();
        if (base.empty()) base = got;
        else EXPECT_TRUE(bits_equal(got, base));
    }
}
