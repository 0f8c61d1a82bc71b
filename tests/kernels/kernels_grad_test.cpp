// Gradient checks, in two steps for every op that has a backward:
//  1. the double-precision reference backward (ref<double>) against central
//     finite differences of the double reference forward (relative ~1e-6);
//  2. the float CPU backward (every ISA path here) against that reference
//     backward on the same inputs (relative ~1e-4).
// The loss is always sum(output * R) for a fixed random R.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "kernels/cpu/features.h"
#include "kernels/kernels.h"
#include "tests/bits.h"
#include "tests/kernels/isa_paths.h"
#include "tests/random_data.h"
#include "kernels/ref.h"

using namespace mlk;
using testdata::for_each_isa;

namespace {

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
}

// Central differences of loss() w.r.t. every element of p, against g.
void check_fd(const char* what, std::vector<double>& p, const std::vector<double>& g,
              const std::function<double()>& loss) {
    SCOPED_TRACE(what);
    ASSERT_EQ(p.size(), g.size());
    double gmax = 0;
    for (double x : g) gmax = std::max(gmax, std::fabs(x));
    const double floor = std::max(1e-3 * gmax, 1e-9);
    for (size_t i = 0; i < p.size(); ++i) {
        const double x0 = p[i];
        const double h = 1e-5 * std::max(1.0, std::fabs(x0));
        p[i] = x0 + h;
        const double fp = loss();
        p[i] = x0 - h;
        const double fm = loss();
        p[i] = x0;
        const double num = (fp - fm) / (2 * h);
        ASSERT_LE(std::fabs(num - g[i]), 1e-6 * std::max({std::fabs(num), std::fabs(g[i]), floor}))
            << "element " << i << ": numeric " << num << " analytic " << g[i];
    }
}

// float kernel gradient vs double reference gradient.
void check_close(const char* what, const std::vector<float>& got, const std::vector<double>& want) {
    SCOPED_TRACE(what);
    ASSERT_EQ(got.size(), want.size());
    double wmax = 0;
    for (double x : want) wmax = std::max(wmax, std::fabs(x));
    const double floor = std::max(1e-2 * wmax, 1e-12);
    for (size_t i = 0; i < got.size(); ++i)
        ASSERT_LE(std::fabs(got[i] - want[i]), 1e-4 * std::max(std::fabs(want[i]), floor))
            << "element " << i << ": " << got[i] << " vs " << want[i];
}

const Exec kFast{Family::fast, Dtype::f32};

}  // namespace

TEST(KernelsGrad, Matmul) {
    for (auto [M, K, N] : {std::tuple{3, 5, 4}, std::tuple{70, 33, 52}}) {
        auto xf = testdata::uniform((size_t)M * K, 1), wf = testdata::uniform((size_t)K * N, 2),
             bf = testdata::uniform(N, 3), rf = testdata::uniform((size_t)M * N, 4);
        auto x = testdata::to_double(xf), w = testdata::to_double(wf), b = testdata::to_double(bf),
             r = testdata::to_double(rf);
        std::vector<double> dx(x.size(), 0), dw(w.size(), 0), db(N, 0);
        ref::matmul_backward<double>(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), M, K, N);
        if (M * K < 100) {
            auto loss = [&] {
                std::vector<double> out((size_t)M * N);
                ref::matmul_forward<double>(out.data(), x.data(), w.data(), b.data(), M, K, N);
                return dot(out, r);
            };
            check_fd("dinp", x, dx, loss);
            check_fd("dw", w, dw, loss);
            check_fd("dbias", b, db, loss);
        }
        for_each_isa([&] {
            std::vector<float> gx(x.size(), 0), gw(w.size(), 0), gb(N, 0);
            matmul_backward(gx.data(), gw.data(), gb.data(), rf.data(), xf.data(), wf.data(), M, K, N);
            check_close("dinp", gx, dx);
            check_close("dw", gw, dw);
            check_close("dbias", gb, db);
        });
    }
}

TEST(KernelsGrad, Rmsnorm) {
    const int M = 4, C = 37;
    auto xf = testdata::uniform((size_t)M * C, 11, -2, 2), wf = testdata::uniform(C, 12, 0.5, 1.5),
         rf = testdata::uniform((size_t)M * C, 13);
    auto x = testdata::to_double(xf), w = testdata::to_double(wf), r = testdata::to_double(rf);
    std::vector<double> out((size_t)M * C), rs(M), dx(x.size(), 0), dw(C, 0);
    ref::rmsnorm_forward<double>(out.data(), rs.data(), x.data(), w.data(), 1e-6, M, C);
    ref::rmsnorm_backward<double>(dx.data(), dw.data(), r.data(), x.data(), w.data(), rs.data(), M, C);
    auto loss = [&] {
        std::vector<double> o((size_t)M * C);
        ref::rmsnorm_forward<double>(o.data(), nullptr, x.data(), w.data(), 1e-6, M, C);
        return dot(o, r);
    };
    check_fd("dinp", x, dx, loss);
    check_fd("dweight", w, dw, loss);
    for_each_isa([&] {
        std::vector<float> o((size_t)M * C), rsf(M), gx(x.size(), 0), gw(C, 0);
        rmsnorm_forward(kFast, o.data(), rsf.data(), xf.data(), wf.data(), 1e-6f, M, C);
        rmsnorm_backward(gx.data(), gw.data(), rf.data(), xf.data(), wf.data(), rsf.data(), M, C);
        check_close("dinp", gx, dx);
        check_close("dweight", gw, dw);
    });
}

TEST(KernelsGrad, Rope) {
    const int M = 3, H = 2, D = 8;
    std::vector<int32_t> pos = {0, 5, 31};
    auto xf = testdata::uniform((size_t)M * H * D, 21), rf = testdata::uniform((size_t)M * H * D, 22);
    auto x = testdata::to_double(xf), r = testdata::to_double(rf);
    std::vector<double> dx = r;
    ref::rope_backward<double>(dx.data(), pos.data(), M, H, D, 10000.0);
    check_fd("dx", x, dx, [&] {
        std::vector<double> y = x;
        ref::rope_forward<double>(y.data(), pos.data(), M, H, D, 10000.0);
        return dot(y, r);
    });
    for_each_isa([&] {
        std::vector<float> g = rf;
        rope_backward(g.data(), pos.data(), M, H, D, 10000.0f);
        check_close("dx", g, dx);
    });
}

TEST(KernelsGrad, Attention) {
    const int B = 2, T = 5, H = 4, Hkv = 2, D = 4;
    const size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D;
    auto qf = testdata::uniform(nq, 31, -1.5, 1.5), kf = testdata::uniform(nk, 32, -1.5, 1.5),
         vf = testdata::uniform(nk, 33), rf = testdata::uniform(nq, 34);
    auto q = testdata::to_double(qf), k = testdata::to_double(kf), v = testdata::to_double(vf),
         r = testdata::to_double(rf);
    std::vector<double> out(nq), att((size_t)B * H * T * T), dq(nq, 0), dk(nk, 0), dv(nk, 0);
    ref::attention_forward<double>(out.data(), att.data(), q.data(), k.data(), v.data(), B, T, H, Hkv, D);
    ref::attention_backward<double>(dq.data(), dk.data(), dv.data(), r.data(), att.data(), q.data(), k.data(), v.data(),
                                    B, T, H, Hkv, D);
    auto loss = [&] {
        std::vector<double> o(nq);
        ref::attention_forward<double>(o.data(), nullptr, q.data(), k.data(), v.data(), B, T, H, Hkv, D);
        return dot(o, r);
    };
    check_fd("dq", q, dq, loss);
    check_fd("dk", k, dk, loss);
    check_fd("dv", v, dv, loss);
    // float kernels on a larger problem (several tiles, GQA)
    for (auto [B2, T2] : {std::tuple{B, T}, std::tuple{2, 45}}) {
        const size_t nq2 = (size_t)B2 * T2 * H * D, nk2 = (size_t)B2 * T2 * Hkv * D;
        auto q2 = testdata::uniform(nq2, 35, -1.5, 1.5), k2 = testdata::uniform(nk2, 36, -1.5, 1.5),
             v2 = testdata::uniform(nk2, 37), r2 = testdata::uniform(nq2, 38);
        auto q2d = testdata::to_double(q2), k2d = testdata::to_double(k2), v2d = testdata::to_double(v2),
             r2d = testdata::to_double(r2);
        std::vector<double> o2(nq2), a2((size_t)B2 * H * T2 * T2), dq2(nq2, 0), dk2(nk2, 0), dv2(nk2, 0);
        ref::attention_forward<double>(o2.data(), a2.data(), q2d.data(), k2d.data(), v2d.data(), B2, T2, H, Hkv, D);
        ref::attention_backward<double>(dq2.data(), dk2.data(), dv2.data(), r2d.data(), a2.data(), q2d.data(),
                                        k2d.data(), v2d.data(), B2, T2, H, Hkv, D);
        for_each_isa([&] {
            for (Family fam : {Family::fast, Family::batch_invariant}) {
                std::vector<float> of(nq2), af(a2.size()), gq(nq2, 0), gk(nk2, 0), gv(nk2, 0);
                attention_forward({fam, Dtype::f32}, of.data(), af.data(), q2.data(), k2.data(), v2.data(), B2, T2, H,
                                  Hkv, D);
                attention_backward(gq.data(), gk.data(), gv.data(), r2.data(), af.data(), q2.data(), k2.data(),
                                   v2.data(), B2, T2, H, Hkv, D);
                check_close("dq", gq, dq2);
                check_close("dk", gk, dk2);
                check_close("dv", gv, dv2);
            }
        });
    }
}

TEST(KernelsGrad, LogSoftmaxAndEntropy) {
    const int M = 3, V = 23;
    const double it = 1.0 / 0.8;
    auto zf = testdata::uniform((size_t)M * V, 41, -3, 3), rf = testdata::uniform((size_t)M * V, 42),
         ef = testdata::uniform(M, 43);
    auto z = testdata::to_double(zf), r = testdata::to_double(rf), re = testdata::to_double(ef);
    std::vector<double> lp((size_t)M * V), dz(z.size(), 0);
    ref::logsoftmax_forward<double>(lp.data(), z.data(), it, M, V);
    ref::logsoftmax_backward<double>(dz.data(), r.data(), lp.data(), it, M, V);
    check_fd("dlogits", z, dz, [&] {
        std::vector<double> o((size_t)M * V);
        ref::logsoftmax_forward<double>(o.data(), z.data(), it, M, V);
        return dot(o, r);
    });
    for_each_isa([&] {
        std::vector<float> lpf((size_t)M * V), gz((size_t)M * V, 0), gl((size_t)M * V, 0);
        logsoftmax_forward(kFast, lpf.data(), zf.data(), (float)it, M, V);
        logsoftmax_backward(gz.data(), rf.data(), lpf.data(), (float)it, M, V);
        check_close("dlogits", gz, dz);
    });
}

TEST(KernelsGrad, Swiglu) {
    const int64_t n = 45;
    auto gf = testdata::uniform(n, 51, -5, 5), uf = testdata::uniform(n, 52), rf = testdata::uniform(n, 53);
    auto g = testdata::to_double(gf), u = testdata::to_double(uf), r = testdata::to_double(rf);
    std::vector<double> dg(n, 0), du(n, 0);
    ref::swiglu_backward<double>(dg.data(), du.data(), r.data(), g.data(), u.data(), n);
    auto loss = [&] {
        std::vector<double> o(n);
        ref::swiglu_forward<double>(o.data(), g.data(), u.data(), n);
        return dot(o, r);
    };
    check_fd("dgate", g, dg, loss);
    check_fd("dup", u, du, loss);
    for_each_isa([&] {
        std::vector<float> a(n, 0), b(n, 0);
        swiglu_backward(a.data(), b.data(), rf.data(), gf.data(), uf.data(), n);
        check_close("dgate", a, dg);
        check_close("dup", b, du);
    });
}

// GradStore::overwrite ignores what the buffer held and gives the bits of
// adding into zeros, for every op that offers it, on every ISA path and with
// 1 and 2 threads (shapes large enough to be split between threads).
TEST(KernelsGrad, OverwrittenInputGradientEqualsAddingIntoZeros) {
    const int M = 300, K = 64, N = 52;
    const auto x = testdata::uniform((size_t)M * K, 61), w = testdata::uniform((size_t)K * N, 62),
               g = testdata::uniform((size_t)M * N, 63), rw = testdata::uniform(K, 64, 0.5, 1.5),
               gk = testdata::uniform((size_t)M * K, 65);
    std::vector<float> y((size_t)M * K), rs(M);
    rmsnorm_forward(kFast, y.data(), rs.data(), x.data(), rw.data(), 1e-6f, M, K);
    const size_t n = (size_t)M * K;
    for_each_isa([&] {
        for (int threads : {1, 2}) {
            SCOPED_TRACE(testing::Message() << "threads " << threads);
            set_num_threads(threads);
            std::vector<float> added(n, 0.0f), written(n, 7.5f);
            matmul_backward(added.data(), nullptr, nullptr, g.data(), x.data(), w.data(), M, K, N);
            matmul_backward(written.data(), nullptr, nullptr, g.data(), x.data(), w.data(), M, K, N,
                            GradStore::overwrite);
            EXPECT_TRUE(testdata::bits_equal(written, added)) << "matmul dinp";

            added.assign(n, 0.0f);
            written.assign(n, -3.0f);
            rmsnorm_backward(added.data(), nullptr, gk.data(), x.data(), rw.data(), rs.data(), M, K);
            rmsnorm_backward(written.data(), nullptr, gk.data(), x.data(), rw.data(), rs.data(), M, K,
                             GradStore::overwrite);
            EXPECT_TRUE(testdata::bits_equal(written, added)) << "rmsnorm dinp";

            std::vector<float> du_added(n, 0.0f), du_written(n, 2.0f);
            added.assign(n, 0.0f);
            written.assign(n, 2.0f);
            swiglu_backward(added.data(), du_added.data(), gk.data(), x.data(), y.data(), (int64_t)n);
            swiglu_backward(written.data(), du_written.data(), gk.data(), x.data(), y.data(), (int64_t)n,
                            GradStore::overwrite);
            EXPECT_TRUE(testdata::bits_equal(written, added)) << "swiglu dgate";
            EXPECT_TRUE(testdata::bits_equal(du_written, du_added)) << "swiglu dup";

            // Attention: dk/dv gather two query heads per kv head (GQA).
            const int Ba = 3, T = 40, H = 4, Hkv = 2, D = 16;
            const size_t nq = (size_t)Ba * T * H * D, nk = (size_t)Ba * T * Hkv * D;
            std::vector<float> o(nq), att((size_t)Ba * H * T * T);
            const auto q = testdata::uniform(nq, 66, -2, 2), kk = testdata::uniform(nk, 67, -2, 2),
                       v = testdata::uniform(nk, 68), go = testdata::uniform(nq, 69);
            attention_forward(kFast, o.data(), att.data(), q.data(), kk.data(), v.data(), Ba, T, H, Hkv, D);
            std::vector<float> dq0(nq, 0.0f), dk0(nk, 0.0f), dv0(nk, 0.0f), dq1(nq, 5.0f), dk1(nk, 5.0f), dv1(nk, 5.0f);
            attention_backward(dq0.data(), dk0.data(), dv0.data(), go.data(), att.data(), q.data(), kk.data(), v.data(),
                               Ba, T, H, Hkv, D);
            attention_backward(dq1.data(), dk1.data(), dv1.data(), go.data(), att.data(), q.data(), kk.data(), v.data(),
                               Ba, T, H, Hkv, D, GradStore::overwrite);
            EXPECT_TRUE(testdata::bits_equal(dq1, dq0)) << "attention dq";
            EXPECT_TRUE(testdata::bits_equal(dk1, dk0)) << "attention dk";
            EXPECT_TRUE(testdata::bits_equal(dv1, dv0)) << "attention dv";
        }
        set_num_threads(0);
    });
}

TEST(KernelsGrad, Embedding) {
    const int Vn = 7, C = 5, M = 9;
    std::vector<int32_t> tok = {3, 0, 6, 3, 3, 1, 2, 6, 0};
    auto tf = testdata::uniform((size_t)Vn * C, 61), rf = testdata::uniform((size_t)M * C, 62);
    auto t = testdata::to_double(tf), r = testdata::to_double(rf);
    std::vector<double> dt(t.size(), 0);
    ref::embedding_backward<double>(dt.data(), r.data(), tok.data(), M, C);
    check_fd("dtable", t, dt, [&] {
        std::vector<double> o((size_t)M * C);
        ref::embedding_forward<double>(o.data(), tok.data(), t.data(), M, C);
        return dot(o, r);
    });
    for_each_isa([&] {
        std::vector<float> g(t.size(), 0);
        embedding_backward(g.data(), rf.data(), tok.data(), M, C);
        check_close("dtable", g, dt);
    });
}

TEST(KernelsGrad, Router) {
    const int M = 4, E = 8, k = 3;
    auto zf = testdata::uniform((size_t)M * E, 71, -2, 2), rf = testdata::uniform((size_t)M * k, 72);
    auto z = testdata::to_double(zf), r = testdata::to_double(rf);
    std::vector<int32_t> ids((size_t)M * k);
    std::vector<double> w((size_t)M * k), dz(z.size(), 0);
    ref::router_topk_forward<double>(ids.data(), w.data(), z.data(), M, E, k);
    ref::router_backward<double>(dz.data(), r.data(), w.data(), ids.data(), M, E, k);
    // top-k: small perturbations keep the selection, so both forwards have this gradient
    check_fd("dlogits (top-k)", z, dz, [&] {
        std::vector<int32_t> id2((size_t)M * k);
        std::vector<double> w2((size_t)M * k);
        ref::router_topk_forward<double>(id2.data(), w2.data(), z.data(), M, E, k);
        return dot(w2, r);
    });
    check_fd("dlogits (replay)", z, dz, [&] {
        std::vector<double> w2((size_t)M * k);
        ref::router_replay_forward<double>(w2.data(), z.data(), ids.data(), M, E, k);
        return dot(w2, r);
    });
    for_each_isa([&] {
        std::vector<int32_t> idf((size_t)M * k);
        std::vector<float> wf((size_t)M * k), g(z.size(), 0);
        router_topk_forward(kFast, idf.data(), wf.data(), zf.data(), M, E, k);
        ASSERT_EQ(idf, ids);
        router_backward(g.data(), rf.data(), wf.data(), idf.data(), M, E, k);
        check_close("dlogits", g, dz);
    });
}
