// The CUDA backend on a device (CTest labels kernels;gpu). Every test skips
// itself when no CUDA device is present (the build machine and CI have none;
// cuda_bodies_test covers the device arithmetic there).
//  - the batch-invariant family and every family-free or backward op (and the
//    AdamW step) equal the CPU kernels bit for bit, in fp32 and bf16 storage;
//  - every op (both families) is within tolerance of the slow reference;
//  - the fast family really mismatches: split-KV decode vs tiled prefill.
#include <gtest/gtest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/cuda/internal.h"
#include "kernels/cuda/ops.h"
#include "kernels/kernels.h"
#include "kernels/ref.h"
#include "tests/bits.h"
#include "tests/random_data.h"

using namespace mlk;
using cuda::Buffer;

#define MLK_REQUIRE_GPU() \
    if (mlk::cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device"

namespace {

using testdata::bits_equal;
using testdata::count_diff;
::testing::AssertionResult close(const std::vector<float>& got, const std::vector<double>& want, double atol,
                                 double rtol) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
    for (size_t i = 0; i < got.size(); ++i)
        if (!(std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i])))
            return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
    return ::testing::AssertionSuccess();
}
std::vector<float> rounded(std::vector<float> v, Dtype dt) {
    for (auto& x : v) x = round_to(x, dt);
    return v;
}
std::vector<double> dbl(const std::vector<float>& v) { return {v.begin(), v.end()}; }

const Dtype kStorage[] = {Dtype::f32, Dtype::bf16};
const Family kFamilies[] = {Family::batch_invariant, Family::fast};

}  // namespace

// Needs no GPU. cuBLAS is opened when the fast family's first GEMM asks for
// it, not mapped into every process of a CUDA build (about 300 MB of RSS).
// First in this file: a test before it on a GPU would have opened it.
TEST(CudaOps, CublasIsOpenedOnFirstUseNotAtStart) {
    const char* soname = cuda::detail::cublas_soname();
    EXPECT_EQ(dlopen(soname, RTLD_LAZY | RTLD_NOLOAD), nullptr) << soname << " was loaded before first use";
    const cuda::detail::CublasApi& api = cuda::detail::cublas_api();
    EXPECT_NE(api.create, nullptr);
    EXPECT_NE(api.set_stream, nullptr);
    EXPECT_NE(api.sgemm, nullptr);
    EXPECT_NE(api.gemm_ex, nullptr);
    EXPECT_NE(dlopen(soname, RTLD_LAZY | RTLD_NOLOAD), nullptr) << soname << " is not loaded after first use";
}

TEST(CudaOps, DeviceMemoryRoundTrip) {
    MLK_REQUIRE_GPU();
    EXPECT_STRNE(cuda::device_description(), "");
    const auto x = testdata::uniform(1000, 1);
    Buffer<float> a(x), b(x.size());
    cuda::copy_device_to_device(b.data(), a.data(), x.size() * sizeof(float));
    EXPECT_TRUE(bits_equal(b.download(), x));
    cuda::Stream s = cuda::create_stream();
    cuda::set_stream(s);
    cuda::memset_device(b.data(), 0, x.size() * sizeof(float));
    cuda::synchronize();
    EXPECT_EQ(b.download(), std::vector<float>(x.size(), 0.0f));
    cuda::set_stream(nullptr);
    cuda::destroy_stream(s);
}

// Batch-invariant forward ops: device == CPU, bit for bit, for several batch sizes.
TEST(CudaOps, BatchInvariantForwardEqualsCpu) {
    MLK_REQUIRE_GPU();
    // The rounding points of RMSNorm, SwiGLU and RoPE (Exec::norm, silu,
    // rope) at fp32 and at bf16.
    struct Case {
        Dtype dt, point;
    };
    for (Case cs : {Case{Dtype::f32, Dtype::f32}, Case{Dtype::f32, Dtype::bf16}, Case{Dtype::bf16, Dtype::f32},
                    Case{Dtype::bf16, Dtype::bf16}}) {
        const Dtype dt = cs.dt;
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << " norm/silu/rope point " << dtype_name(cs.point));
        Exec bi{Family::batch_invariant, dt, dt, dt};
        bi.norm = bi.silu = bi.rope = bi.rope_cache = cs.point;
        for (int M : {1, 7, 64, 300}) {
            SCOPED_TRACE(testing::Message() << "M " << M);
            const int K = 128, N = 52, C = 64, V = 52, E = 16, k = 4;
            const auto x = rounded(testdata::uniform((size_t)M * K, 2), dt),
                       w = rounded(testdata::uniform((size_t)K * N, 3), dt), b = rounded(testdata::uniform(N, 4), dt);
            std::vector<float> want((size_t)M * N);
            for (Dtype quant : {Dtype::f32, Dtype::fp8_e4m3}) {
                Exec e = bi;
                e.quant = quant;
                matmul_forward(e, want.data(), x.data(), w.data(), b.data(), M, K, N);
                Buffer<float> dx(x), dw(w), db(b), dout((size_t)M * N);
                cuda::matmul_forward(e, dout.data(), dx.data(), dw.data(), db.data(), M, K, N);
                EXPECT_TRUE(bits_equal(dout.download(), want)) << "matmul quant " << dtype_name(quant);
            }
            const auto h = rounded(testdata::uniform((size_t)M * C, 5, -3, 3), dt),
                       g = rounded(testdata::uniform(C, 6, 0.5, 1.5), dt);
            std::vector<float> y((size_t)M * C), rs(M);
            rmsnorm_forward(bi, y.data(), rs.data(), h.data(), g.data(), 1e-6f, M, C);
            Buffer<float> dh(h), dg(g), dy(y.size()), drs(M);
            cuda::rmsnorm_forward(bi, dy.data(), drs.data(), dh.data(), dg.data(), 1e-6f, M, C);
            EXPECT_TRUE(bits_equal(dy.download(), y)) << "rmsnorm";
            EXPECT_TRUE(bits_equal(drs.download(), rs)) << "rstd";
            const auto z = rounded(testdata::uniform((size_t)M * V, 7, -8, 8), dt);
            std::vector<float> lp((size_t)M * V), ent(M), gat(M);
            std::vector<int32_t> tgt(M);
            for (int m = 0; m < M; ++m) tgt[m] = (m * 31) % V;
            logsoftmax_forward(bi, lp.data(), z.data(), 1.25f, M, V);
            entropy_forward(bi, ent.data(), lp.data(), M, V);
            logprob_gather(gat.data(), lp.data(), tgt.data(), M, V);
            Buffer<float> dz(z), dlp(lp.size()), dent(M), dgat(M);
            Buffer<int32_t> dtgt(tgt);
            cuda::logsoftmax_forward(bi, dlp.data(), dz.data(), 1.25f, M, V);
            cuda::entropy_forward(bi, dent.data(), dlp.data(), M, V);
            cuda::logprob_gather(dgat.data(), dlp.data(), dtgt.data(), M, V);
            EXPECT_TRUE(bits_equal(dlp.download(), lp)) << "log-softmax";
            EXPECT_TRUE(bits_equal(dent.download(), ent)) << "entropy";
            EXPECT_TRUE(bits_equal(dgat.download(), gat)) << "gather";
            const auto rz = rounded(testdata::uniform((size_t)M * E, 8, -2, 2), dt);
            std::vector<int32_t> ids((size_t)M * k);
            std::vector<float> rw((size_t)M * k), rr((size_t)M * k);
            router_topk_forward(bi, ids.data(), rw.data(), rz.data(), M, E, k);
            router_replay_forward(bi, rr.data(), rz.data(), ids.data(), M, E, k);
            Buffer<float> drz(rz), drw(rw.size()), drr(rr.size());
            Buffer<int32_t> dids(ids.size());
            cuda::router_topk_forward(bi, dids.data(), drw.data(), drz.data(), M, E, k);
            cuda::router_replay_forward(bi, drr.data(), drz.data(), dids.data(), M, E, k);
            EXPECT_EQ(dids.download(), ids) << "router ids";
            EXPECT_TRUE(bits_equal(drw.download(), rw)) << "router weights";
            EXPECT_TRUE(bits_equal(drr.download(), rr)) << "router replay";
            // family-free elementwise ops
            std::vector<float> sw((size_t)M * C), yy = h;
            swiglu_forward(bi, sw.data(), h.data(), y.data(), (int64_t)M * C);
            add_inplace(yy.data(), y.data(), (int64_t)M * C, dt);
            Buffer<float> dsw(sw.size()), dyy(h);
            cuda::swiglu_forward(bi, dsw.data(), dh.data(), dy.data(), (int64_t)M * C);
            cuda::add_inplace(dyy.data(), dy.data(), (int64_t)M * C, dt);
            EXPECT_TRUE(bits_equal(dsw.download(), sw)) << "swiglu";
            EXPECT_TRUE(bits_equal(dyy.download(), yy)) << "add_inplace";
            // rows gathered by offset into rows scattered by offset (reversed order)
            std::vector<int64_t> from(M), to(M);
            for (int m = 0; m < M; ++m) from[m] = (int64_t)((m * 7) % M) * C, to[m] = (int64_t)(M - 1 - m) * C;
            std::vector<float> moved((size_t)M * C);
            copy_rows(moved.data(), to.data(), h.data(), from.data(), M, C);
            Buffer<float> dmoved(moved.size());
            Buffer<int64_t> dfrom(from), dto(to);
            cuda::copy_rows(dmoved.data(), dto.data(), dh.data(), dfrom.data(), M, C);
            EXPECT_TRUE(bits_equal(dmoved.download(), moved)) << "copy_rows";
            const auto table = testdata::uniform((size_t)V * C, 9);  // tokens tgt[m] < V
            std::vector<float> emb((size_t)M * C), ro((size_t)M * C);
            embedding_forward(emb.data(), tgt.data(), table.data(), M, C, dt);
            const int H = 4, D = 16;  // C = H * D
            std::vector<int32_t> pos(M);
            for (int m = 0; m < M; ++m) pos[m] = (m * 37) % 500;
            ro = h;
            rope_forward(ro.data(), pos.data(), M, H, D, 10000.0f, dt, bi.rope, bi.rope_cache);
            Buffer<float> dtable(table), demb(emb.size()), dro(h);
            Buffer<int32_t> dpos(pos);
            cuda::embedding_forward(demb.data(), dtgt.data(), dtable.data(), M, C, dt);
            cuda::rope_forward(dro.data(), dpos.data(), M, H, D, 10000.0f, dt, bi.rope, bi.rope_cache);
            EXPECT_TRUE(bits_equal(demb.download(), emb)) << "embedding";
            EXPECT_TRUE(bits_equal(dro.download(), ro)) << "rope";
            // fp8: activations [M, C] and h as a weight [M, C], every scale kind and granularity
            for (Fp8Scale kind : {Fp8Scale::fp32, Fp8Scale::pow2})
                for (Fp8Granularity g : {Fp8Granularity::tensor, Fp8Granularity::channel, Fp8Granularity::block}) {
                    SCOPED_TRACE(testing::Message() << "fp8 scale " << (int)kind << " granularity " << (int)g);
                    std::vector<float> qa((size_t)M * C), sa(fp8_activation_scale_count(M, C, g)),
                        qw = h, sw(fp8_weight_scale_count(M, C, g));
                    quantize_activations(qa.data(), sa.data(), h.data(), M, C, Dtype::fp8_e4m3, kind, g);
                    quantize_weight(qw.data(), sw.data(), M, C, Dtype::fp8_e4m3, kind, g);
                    Buffer<float> dqa(qa.size()), dsa(sa.size()), dqw(h), dsw(sw.size());
                    cuda::quantize_activations(dqa.data(), dsa.data(), dh.data(), M, C, Dtype::fp8_e4m3, kind, g);
                    cuda::quantize_weight(dqw.data(), dsw.data(), M, C, Dtype::fp8_e4m3, kind, g);
                    EXPECT_TRUE(bits_equal(dqa.download(), qa)) << "quantize_activations";
                    EXPECT_TRUE(bits_equal(dsa.download(), sa)) << "quantize_activations scales";
                    EXPECT_TRUE(bits_equal(dqw.download(), qw)) << "quantize_weight";
                    EXPECT_TRUE(bits_equal(dsw.download(), sw)) << "quantize_weight scales";
                }
        }
    }
}

// Batch-invariant attention: prefill (with att) and decode against a cache,
// device == CPU bitwise; decode == prefill at every position.
TEST(CudaOps, BatchInvariantAttentionEqualsCpu) {
    MLK_REQUIRE_GPU();
    // eager: Exec::eager_softmax, which runs the batch-invariant plan in
    // either family on both backends, so the fast family is checked too.
    struct S {
        int B, T, H, Hkv, D;
        Dtype dt, pdt, sdt;
        bool eager = false;
        Family fam = Family::batch_invariant;
    };
    for (S s : {S{3, 40, 4, 2, 16, Dtype::f32, Dtype::f32, Dtype::f32},
                S{2, 70, 2, 1, 32, Dtype::bf16, Dtype::bf16, Dtype::f32},
                S{1, 300, 4, 4, 64, Dtype::bf16, Dtype::bf16, Dtype::bf16},
                S{3, 40, 4, 2, 16, Dtype::f32, Dtype::f32, Dtype::f32, true},
                S{2, 70, 2, 1, 32, Dtype::bf16, Dtype::bf16, Dtype::f32, true, Family::fast},
                S{1, 300, 4, 4, 64, Dtype::bf16, Dtype::bf16, Dtype::bf16, true},
                S{1, 300, 4, 4, 64, Dtype::bf16, Dtype::bf16, Dtype::bf16, true, Family::fast}}) {
        SCOPED_TRACE(testing::Message() << "B" << s.B << " T" << s.T << " D" << s.D << " " << dtype_name(s.dt)
                                        << (s.eager ? " eager" : "") << (s.fam == Family::fast ? " fast" : ""));
        Exec bi{s.fam, s.dt, s.pdt, s.sdt};
        bi.eager_softmax = s.eager;
        const size_t nq = (size_t)s.B * s.T * s.H * s.D, nk = (size_t)s.B * s.T * s.Hkv * s.D;
        const auto q = rounded(testdata::uniform(nq, 9, -2, 2), s.dt),
                   k = rounded(testdata::uniform(nk, 10, -2, 2), s.dt), v = rounded(testdata::uniform(nk, 11), s.dt);
        std::vector<float> out(nq), att((size_t)s.B * s.H * s.T * s.T);
        attention_forward(bi, out.data(), att.data(), q.data(), k.data(), v.data(), s.B, s.T, s.H, s.Hkv, s.D);
        Buffer<float> dq(q), dk(k), dv(v), dout(nq), datt(att.size());
        cuda::attention_forward(bi, dout.data(), datt.data(), dq.data(), dk.data(), dv.data(), s.B, s.T, s.H, s.Hkv,
                                s.D);
        ASSERT_TRUE(bits_equal(dout.download(), out)) << "prefill";
        ASSERT_TRUE(bits_equal(datt.download(), att)) << "att";
        // decode: the batch's keys are the cache (slot b, capacity T); sequence b at position (t + 7b) % T
        const int64_t cs = (int64_t)s.T * s.Hkv * s.D;
        for (int t = 0; t < s.T; t += 3) {
            std::vector<float> qt((size_t)s.B * s.H * s.D), want(qt.size());
            std::vector<int32_t> slot(s.B), len(s.B);
            for (int b = 0; b < s.B; ++b) {
                const int p = (t + 7 * b) % s.T;
                slot[b] = b;
                len[b] = p + 1;
                std::copy_n(q.begin() + ((size_t)b * s.T + p) * s.H * s.D, s.H * s.D,
                            qt.begin() + (size_t)b * s.H * s.D);
                std::copy_n(out.begin() + ((size_t)b * s.T + p) * s.H * s.D, s.H * s.D,
                            want.begin() + (size_t)b * s.H * s.D);
            }
            Buffer<float> dqt(qt), dot(qt.size());
            Buffer<int32_t> dslot(slot), dlen(len);
            cuda::attention_decode(bi, dot.data(), dqt.data(), dk.data(), dv.data(), dslot.data(), dlen.data(), cs, s.B,
                                   s.H, s.Hkv, s.D);
            ASSERT_TRUE(bits_equal(dot.download(), want)) << "decode step " << t;
        }
    }
}

// The backward ops have one plan, the CPU's: device == CPU bitwise.
TEST(CudaOps, BackwardEqualsCpu) {
    MLK_REQUIRE_GPU();
    const int M = 300, K = 64, N = 52, C = 64, V = 52, E = 16, k = 4;
    const auto x = testdata::uniform((size_t)M * K, 12), w = testdata::uniform((size_t)K * N, 13),
               g = testdata::uniform((size_t)M * N, 14);
    std::vector<float> di((size_t)M * K, 0.5f), dw((size_t)K * N, 0.25f), db(N, 0.0f);
    Buffer<float> ddi(di), ddw(dw), ddb(db), dx(x), dwt(w), dg(g);
    matmul_backward(di.data(), dw.data(), db.data(), g.data(), x.data(), w.data(), M, K, N);
    cuda::matmul_backward(ddi.data(), ddw.data(), ddb.data(), dg.data(), dx.data(), dwt.data(), M, K, N);
    EXPECT_TRUE(bits_equal(ddi.download(), di)) << "matmul dinp";
    EXPECT_TRUE(bits_equal(ddw.download(), dw)) << "matmul dw";
    EXPECT_TRUE(bits_equal(ddb.download(), db)) << "matmul dbias";
    std::vector<float> dio((size_t)M * K, 9.0f);
    Buffer<float> ddio(dio);
    matmul_backward(dio.data(), nullptr, nullptr, g.data(), x.data(), w.data(), M, K, N, GradStore::overwrite);
    cuda::matmul_backward(ddio.data(), nullptr, nullptr, dg.data(), dx.data(), dwt.data(), M, K, N,
                          GradStore::overwrite);
    EXPECT_TRUE(bits_equal(ddio.download(), dio)) << "matmul dinp, overwritten";

    const auto h = testdata::uniform((size_t)M * C, 15, -2, 2), gw = testdata::uniform(C, 16, 0.5, 1.5),
               gh = testdata::uniform((size_t)M * C, 17);
    std::vector<float> y((size_t)M * C), rs(M), dh((size_t)M * C, 0.0f), dgw(C, 0.0f);
    rmsnorm_forward({Family::batch_invariant}, y.data(), rs.data(), h.data(), gw.data(), 1e-6f, M, C);
    Buffer<float> bh(h), bgw(gw), bgh(gh), brs(rs), bdh(dh), bdgw(dgw);
    rmsnorm_backward(dh.data(), dgw.data(), gh.data(), h.data(), gw.data(), rs.data(), M, C);
    cuda::rmsnorm_backward(bdh.data(), bdgw.data(), bgh.data(), bh.data(), bgw.data(), brs.data(), M, C);
    EXPECT_TRUE(bits_equal(bdh.download(), dh)) << "rmsnorm dinp";
    EXPECT_TRUE(bits_equal(bdgw.download(), dgw)) << "rmsnorm dweight";
    std::vector<float> dho((size_t)M * C, 9.0f);
    Buffer<float> bdho(dho);
    rmsnorm_backward(dho.data(), nullptr, gh.data(), h.data(), gw.data(), rs.data(), M, C, GradStore::overwrite);
    cuda::rmsnorm_backward(bdho.data(), nullptr, bgh.data(), bh.data(), bgw.data(), brs.data(), M, C,
                           GradStore::overwrite);
    EXPECT_TRUE(bits_equal(bdho.download(), dho)) << "rmsnorm dinp, overwritten";

    std::vector<float> sg((size_t)M * C, 0.0f), su((size_t)M * C, 0.0f);
    Buffer<float> bsg(sg), bsu(su), by(y);
    swiglu_backward(sg.data(), su.data(), gh.data(), h.data(), y.data(), (int64_t)M * C);
    cuda::swiglu_backward(bsg.data(), bsu.data(), bgh.data(), bh.data(), by.data(), (int64_t)M * C);
    EXPECT_TRUE(bits_equal(bsg.download(), sg)) << "swiglu dgate";
    EXPECT_TRUE(bits_equal(bsu.download(), su)) << "swiglu dup";
    std::vector<float> sgo((size_t)M * C, 9.0f), suo((size_t)M * C, 9.0f);
    Buffer<float> bsgo(sgo), bsuo(suo);
    swiglu_backward(sgo.data(), suo.data(), gh.data(), h.data(), y.data(), (int64_t)M * C, GradStore::overwrite);
    cuda::swiglu_backward(bsgo.data(), bsuo.data(), bgh.data(), bh.data(), by.data(), (int64_t)M * C,
                          GradStore::overwrite);
    EXPECT_TRUE(bits_equal(bsgo.download(), sgo)) << "swiglu dgate, overwritten";
    EXPECT_TRUE(bits_equal(bsuo.download(), suo)) << "swiglu dup, overwritten";

    std::vector<int32_t> tok(M), pos(M);
    for (int m = 0; m < M; ++m) tok[m] = (m * 31) % V, pos[m] = m % 97;
    std::vector<float> dtab((size_t)V * C, 0.0f), rg = gh;
    Buffer<float> bdtab(dtab), brg(gh);
    Buffer<int32_t> btok(tok), bpos(pos);
    embedding_backward(dtab.data(), gh.data(), tok.data(), M, C);
    cuda::embedding_backward(bdtab.data(), bgh.data(), btok.data(), M, C);
    EXPECT_TRUE(bits_equal(bdtab.download(), dtab)) << "embedding_backward";
    rope_backward(rg.data(), pos.data(), M, 4, 16, 10000.0f);
    cuda::rope_backward(brg.data(), bpos.data(), M, 4, 16, 10000.0f);
    EXPECT_TRUE(bits_equal(brg.download(), rg)) << "rope_backward";

    const auto z = testdata::uniform((size_t)M * V, 18, -5, 5), gl = testdata::uniform((size_t)M * V, 19);
    std::vector<float> lp((size_t)M * V), dz((size_t)M * V, 0.0f);
    logsoftmax_forward({Family::batch_invariant}, lp.data(), z.data(), 1.0f, M, V);
    Buffer<float> blp(lp), bgl(gl), bdz(dz);
    logsoftmax_backward(dz.data(), gl.data(), lp.data(), 1.0f, M, V);
    cuda::logsoftmax_backward(bdz.data(), bgl.data(), blp.data(), 1.0f, M, V);
    EXPECT_TRUE(bits_equal(bdz.download(), dz)) << "logsoftmax_backward";

    const auto rz = testdata::uniform((size_t)M * E, 20, -2, 2), rgw = testdata::uniform((size_t)M * k, 21);
    std::vector<int32_t> ids((size_t)M * k);
    std::vector<float> rw((size_t)M * k), drz((size_t)M * E, 0.0f);
    router_topk_forward({Family::batch_invariant}, ids.data(), rw.data(), rz.data(), M, E, k);
    Buffer<int32_t> bids(ids);
    Buffer<float> brw(rw), brgw(rgw), bdrz(drz);
    router_backward(drz.data(), rgw.data(), rw.data(), ids.data(), M, E, k);
    cuda::router_backward(bdrz.data(), brgw.data(), brw.data(), bids.data(), M, E, k);
    EXPECT_TRUE(bits_equal(bdrz.download(), drz)) << "router_backward";

    // The MoE combine (a family-free op) and its backward on one expert's slots.
    {
        const int Mc = 7, kc = 2, Dc = 24, rows = 5;
        const auto pool = testdata::uniform((size_t)rows * Dc, 40, -3, 3), cw = testdata::uniform((size_t)Mc * kc, 41);
        const auto cdout = testdata::uniform((size_t)Mc * Dc, 42, -2, 2);
        Buffer<float> bpool(pool), bcw(cw), bcdout(cdout);
        std::vector<const float*> hrows((size_t)Mc * kc), drows(hrows.size());
        for (size_t i = 0; i < hrows.size(); ++i) {
            hrows[i] = pool.data() + (i * 3 % rows) * Dc;
            drows[i] = bpool.data() + (i * 3 % rows) * Dc;
        }
        Buffer<const float*> bdrows(drows);
        for (Dtype dt : kStorage) {
            std::vector<float> co((size_t)Mc * Dc);
            Buffer<float> bco(co.size());
            moe_combine_forward({Family::batch_invariant, dt}, co.data(), hrows.data(), cw.data(), Mc, kc, Dc);
            cuda::moe_combine_forward({Family::batch_invariant, dt}, bco.data(), bdrows.data(), bcw.data(), Mc, kc, Dc);
            EXPECT_TRUE(bits_equal(bco.download(), co)) << "moe_combine_forward " << dtype_name(dt);
        }
        const std::vector<int32_t> slots = {1, 2, 6, 11};
        const int n = (int)slots.size();
        const auto y = testdata::uniform((size_t)n * Dc, 43, -3, 3);
        std::vector<float> dy((size_t)n * Dc), dwts((size_t)Mc * kc, -1.0f);
        Buffer<int32_t> bslots(slots);
        Buffer<float> by(y), bdy(dy.size()), bdwts(dwts);
        moe_combine_backward(dy.data(), dwts.data(), cdout.data(), y.data(), cw.data(), slots.data(), n, kc, Dc);
        cuda::moe_combine_backward(bdy.data(), bdwts.data(), bcdout.data(), by.data(), bcw.data(), bslots.data(), n, kc,
                                   Dc);
        EXPECT_TRUE(bits_equal(bdy.download(), dy)) << "moe_combine_backward dy";
        EXPECT_TRUE(bits_equal(bdwts.download(), dwts)) << "moe_combine_backward dweights";
    }

    const int B = 2, T = 50, H = 4, Hkv = 2, D = 16;
    const size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D;
    const auto q = testdata::uniform(nq, 22, -2, 2), kk = testdata::uniform(nk, 23, -2, 2),
               v = testdata::uniform(nk, 24), go = testdata::uniform(nq, 25);
    std::vector<float> o(nq), att((size_t)B * H * T * T), gq(nq, 0.0f), gk(nk, 0.0f), gv(nk, 0.0f);
    attention_forward({Family::batch_invariant}, o.data(), att.data(), q.data(), kk.data(), v.data(), B, T, H, Hkv, D);
    Buffer<float> bq(q), bk(kk), bv(v), bgo(go), batt(att), bgq(gq), bgk(gk), bgv(gv);
    attention_backward(gq.data(), gk.data(), gv.data(), go.data(), att.data(), q.data(), kk.data(), v.data(), B, T, H,
                       Hkv, D);
    cuda::attention_backward(bgq.data(), bgk.data(), bgv.data(), bgo.data(), batt.data(), bq.data(), bk.data(),
                             bv.data(), B, T, H, Hkv, D);
    EXPECT_TRUE(bits_equal(bgq.download(), gq)) << "attention dq";
    EXPECT_TRUE(bits_equal(bgk.download(), gk)) << "attention dk";
    EXPECT_TRUE(bits_equal(bgv.download(), gv)) << "attention dv";
    std::vector<float> gqo(nq, 9.0f), gko(nk, 9.0f), gvo(nk, 9.0f);
    Buffer<float> bgqo(gqo), bgko(gko), bgvo(gvo);
    attention_backward(gqo.data(), gko.data(), gvo.data(), go.data(), att.data(), q.data(), kk.data(), v.data(), B, T,
                       H, Hkv, D, GradStore::overwrite);
    cuda::attention_backward(bgqo.data(), bgko.data(), bgvo.data(), bgo.data(), batt.data(), bq.data(), bk.data(),
                             bv.data(), B, T, H, Hkv, D, GradStore::overwrite);
    EXPECT_TRUE(bits_equal(bgqo.download(), gqo)) << "attention dq, overwritten";
    EXPECT_TRUE(bits_equal(bgko.download(), gko)) << "attention dk, overwritten";
    EXPECT_TRUE(bits_equal(bgvo.download(), gvo)) << "attention dv, overwritten";
}

// The AdamW step (one plan, in double): device == CPU bitwise, for the
// defaults, step 1 with clipping and decay, and step 1000 with beta2 = 0.999
// and a grad scale above 1; three steps in a row on the same buffers.
TEST(CudaOps, AdamwEqualsCpu) {
    MLK_REQUIRE_GPU();
    AdamWStep first, late;
    first.grad_scale = 0.37, first.weight_decay = 0.1, first.lr = 3e-4;
    first.bias_correction1 = 1.0 - first.beta1, first.bias_correction2 = 1.0 - first.beta2;
    late.grad_scale = 2.5, late.beta2 = 0.999, late.eps = 1e-6, late.weight_decay = 0.01, late.lr = 1e-2;
    late.bias_correction1 = 1.0 - std::pow(late.beta1, 1000.0);
    late.bias_correction2 = 1.0 - std::pow(late.beta2, 1000.0);
    for (const AdamWStep& s : {AdamWStep{}, first, late})
        for (int64_t n : {1, 1000, 100003}) {
            SCOPED_TRACE(testing::Message() << "n " << n << " lr " << s.lr);
            const auto g = testdata::uniform(n, 40, -3, 3);
            std::vector<float> p = testdata::uniform(n, 41, -2, 2), m = testdata::uniform(n, 42, -0.1f, 0.1f),
                               v = testdata::uniform(n, 43, 0.0f, 0.01f);
            Buffer<float> dp(p), dm(m), dv(v), dg(g);
            for (int step = 0; step < 3; ++step) {
                adamw_update(p.data(), m.data(), v.data(), g.data(), n, s);
                cuda::adamw_update(dp.data(), dm.data(), dv.data(), dg.data(), n, s);
            }
            EXPECT_TRUE(bits_equal(dp.download(), p)) << "params";
            EXPECT_TRUE(bits_equal(dm.download(), m)) << "first moment";
            EXPECT_TRUE(bits_equal(dv.download(), v)) << "second moment";
        }
}

// Both families against the slow reference (double), fp32 and bf16 storage.
TEST(CudaOps, EveryFamilyCloseToReference) {
    MLK_REQUIRE_GPU();
    for (Family fam : kFamilies)
        for (Dtype dt : kStorage) {
            SCOPED_TRACE(testing::Message() << (fam == Family::fast ? "fast " : "bi ") << dtype_name(dt));
            const Exec ex{fam, dt};
            // bf16 outputs carry a relative rounding error of 2^-9; fp32 only accumulation error.
            const double rt = dt == Dtype::f32 ? 2e-5 : 8e-3;
            for (int M : {1, 5, 100, 600}) {
                SCOPED_TRACE(testing::Message() << "M " << M);
                const int K = 128, N = 52;
                const auto x = rounded(testdata::uniform((size_t)M * K, 30), dt),
                           w = rounded(testdata::uniform((size_t)K * N, 31), dt),
                           b = rounded(testdata::uniform(N, 32), dt);
                std::vector<double> want((size_t)M * N);
                auto xd = dbl(x), wd = dbl(w), bd = dbl(b);
                ref::matmul_forward<double>(want.data(), xd.data(), wd.data(), bd.data(), M, K, N);
                Buffer<float> dx(x), dw(w), db(b), dout(want.size());
                cuda::matmul_forward(ex, dout.data(), dx.data(), dw.data(), db.data(), M, K, N);
                EXPECT_TRUE(close(dout.download(), want, 2e-4, rt)) << "matmul";
                const int C = 64;
                const auto h = rounded(testdata::uniform((size_t)M * C, 33, -3, 3), dt),
                           g = rounded(testdata::uniform(C, 34, 0.5, 1.5), dt);
                std::vector<double> y((size_t)M * C), rs(M);
                auto hd = dbl(h), gd = dbl(g);
                ref::rmsnorm_forward<double>(y.data(), rs.data(), hd.data(), gd.data(), 1e-6, M, C);
                Buffer<float> dh(h), dg(g), dy(y.size()), drs(M);
                cuda::rmsnorm_forward(ex, dy.data(), drs.data(), dh.data(), dg.data(), 1e-6f, M, C);
                EXPECT_TRUE(close(dy.download(), y, 1e-5, rt)) << "rmsnorm";
                {  // Exec::norm at bf16, either family: round(round(h * r, bf16) * g) with the kernel's own r
                    Exec en = ex;
                    en.norm = Dtype::bf16;
                    Buffer<float> dyn(y.size()), drn(M);
                    cuda::rmsnorm_forward(en, dyn.data(), drn.data(), dh.data(), dg.data(), 1e-6f, M, C);
                    const auto yn = dyn.download(), rn = drn.download();
                    EXPECT_TRUE(bits_equal(rn, drs.download())) << "rstd, norm point";
                    std::vector<float> yw(yn.size());
                    for (int m = 0; m < M; ++m)
                        for (int c = 0; c < C; ++c)
                            yw[(size_t)m * C + c] =
                                round_to(round_to(h[(size_t)m * C + c] * rn[m], Dtype::bf16) * g[c], dt);
                    EXPECT_TRUE(bits_equal(yn, yw)) << "rmsnorm, norm point";
                }
                const int V = 1000;
                const auto z = rounded(testdata::uniform((size_t)M * V, 35, -8, 8), dt);
                std::vector<double> lp((size_t)M * V), ent(M);
                auto zd = dbl(z);
                ref::logsoftmax_forward<double>(lp.data(), zd.data(), 1.25, M, V);
                Buffer<float> dz(z), dlp(lp.size()), dent(M);
                cuda::logsoftmax_forward(ex, dlp.data(), dz.data(), 1.25f, M, V);
                const auto glp = dlp.download();
                EXPECT_TRUE(close(glp, lp, 2e-5, rt)) << "log-softmax";
                auto lpd = dbl(glp);
                ref::entropy_forward<double>(ent.data(), lpd.data(), M, V);
                cuda::entropy_forward(ex, dent.data(), dlp.data(), M, V);
                EXPECT_TRUE(close(dent.download(), ent, 2e-5, rt)) << "entropy";
            }
            const int B = 2, T = 129, H = 4, Hkv = 2, D = 32;
            const size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D;
            const auto q = rounded(testdata::uniform(nq, 36, -2, 2), dt),
                       k = rounded(testdata::uniform(nk, 37, -2, 2), dt), v = rounded(testdata::uniform(nk, 38), dt);
            std::vector<double> want(nq), watt((size_t)B * H * T * T);
            auto qd = dbl(q), kd = dbl(k), vd = dbl(v);
            ref::attention_forward<double>(want.data(), watt.data(), qd.data(), kd.data(), vd.data(), B, T, H, Hkv, D);
            Buffer<float> dq(q), dk(k), dv(v), dout(nq), datt(watt.size());
            cuda::attention_forward(ex, dout.data(), datt.data(), dq.data(), dk.data(), dv.data(), B, T, H, Hkv, D);
            EXPECT_TRUE(close(dout.download(), want, 1e-5, rt)) << "attention";
            EXPECT_TRUE(close(datt.download(), watt, 1e-5, 1e-4)) << "attention probabilities";
            // decode of the last position of each sequence against the prefill reference
            std::vector<float> qt((size_t)B * H * D);
            std::vector<double> wt(qt.size());
            std::vector<int32_t> slot = {0, 1}, len = {T, T};
            for (int b = 0; b < B; ++b) {
                std::copy_n(q.begin() + ((size_t)b * T + T - 1) * H * D, H * D, qt.begin() + (size_t)b * H * D);
                std::copy_n(want.begin() + ((size_t)b * T + T - 1) * H * D, H * D, wt.begin() + (size_t)b * H * D);
            }
            Buffer<float> dqt(qt), dot(qt.size());
            Buffer<int32_t> dslot(slot), dlen(len);
            cuda::attention_decode(ex, dot.data(), dqt.data(), dk.data(), dv.data(), dslot.data(), dlen.data(),
                                   (int64_t)T * Hkv * D, B, H, Hkv, D);
            EXPECT_TRUE(close(dot.download(), wt, 1e-5, rt)) << "decode";
        }
}

// The fast family's two GEMM plans (matmul.cu) both close to the reference:
// fp32 and bf16 storage, a bias, fp8 input rows, rows 16-byte aligned or not
// (the skinny kernel's vector and scalar loads). And batch-variant, as
// production GEMMs are: the plan and the skinny kernel's split follow the
// shape, so one row's bits change with the batch around it; the
// batch-invariant kernel's do not.
TEST(CudaOps, FastGemmPlansCloseToReferenceAndFollowTheBatch) {
    MLK_REQUIRE_GPU();
    using cuda::detail::FastGemm;
    for (Dtype dt : kStorage)
        for (FastGemm plan : {FastGemm::skinny, FastGemm::cublas})
            for (Dtype quant : {Dtype::f32, Dtype::fp8_e4m3})
                for (int M : {1, 8, 37, 300})
                    for (int off : {0, 1}) {
                        SCOPED_TRACE(testing::Message()
                                     << dtype_name(dt) << (plan == FastGemm::skinny ? " skinny" : " cuBLAS")
                                     << " quant " << dtype_name(quant) << " M " << M << " off " << off);
                        const int K = 388, N = 200;
                        const auto x = rounded(testdata::uniform((size_t)M * K + off, 50), dt),
                                   w = rounded(testdata::uniform((size_t)K * N, 51), dt),
                                   b = rounded(testdata::uniform(N, 52), dt);
                        std::vector<float> xin(x.begin() + off, x.end());
                        if (is_fp8(quant))
                            quantize_activations(xin.data(), nullptr, xin.data(), M, K, quant, Fp8Scale::fp32,
                                                 Fp8Granularity::channel);
                        std::vector<double> want((size_t)M * N);
                        auto xd = dbl(xin), wd = dbl(w), bd = dbl(b);
                        ref::matmul_forward<double>(want.data(), xd.data(), wd.data(), bd.data(), M, K, N);
                        Buffer<float> dx(x), dw(w), db(b), dout(want.size());
                        cuda::detail::matmul_forward_planned({Family::fast, dt, dt, dt, quant}, dout.data(),
                                                             dx.data() + off, dw.data(), db.data(), M, K, N, plan);
                        EXPECT_TRUE(close(dout.download(), want, 2e-4, dt == Dtype::f32 ? 2e-5 : 8e-3));
                    }
    const int K = 1024, N = 2048, M = 256;
    const auto x = testdata::uniform((size_t)M * K, 53), w = testdata::uniform((size_t)K * N, 54);
    Buffer<float> dx(x), dw(w), dall((size_t)M * N), done(N);
    // by_batch: cuBLAS for the batch, the skinny kernel for the row alone;
    // skinny: split 1 for the batch, more for the row alone.
    for (FastGemm plan : {FastGemm::by_batch, FastGemm::skinny})
        for (Family fam : kFamilies) {
            SCOPED_TRACE(testing::Message() << (fam == Family::fast ? "fast" : "bi") << " plan " << (int)plan);
            const Exec ex{fam, Dtype::f32};
            cuda::detail::matmul_forward_planned(ex, dall.data(), dx.data(), dw.data(), nullptr, M, K, N, plan);
            cuda::detail::matmul_forward_planned(ex, done.data(), dx.data(), dw.data(), nullptr, 1, K, N, plan);
            const auto all = dall.download();
            const size_t diff = count_diff(done.download(), std::vector<float>(all.begin(), all.begin() + N));
            if (fam == Family::fast) EXPECT_GT(diff, 0u) << "row 0 alone should not equal row 0 of a batch of " << M;
            else EXPECT_EQ(diff, 0u) << "batch-invariant row 0 depends on the batch";
        }
}

// A decode batch large enough that no sequence is split (the splits kernel
// then writes the output itself): close to a direct softmax(q k / sqrt(D)) v
// in double, in both families and both storage precisions.
TEST(CudaOps, DecodeOfAFullBatchCloseToReference) {
    MLK_REQUIRE_GPU();
    const int Bq = 600, H = 4, Hkv = 2, D = 32, T = 40, slots = 4;
    const int64_t stride = (int64_t)T * Hkv * D;
    for (Dtype dt : kStorage) {
        const auto q = rounded(testdata::uniform((size_t)Bq * H * D, 60, -2, 2), dt),
                   kc = rounded(testdata::uniform((size_t)slots * stride, 61, -2, 2), dt),
                   vc = rounded(testdata::uniform((size_t)slots * stride, 62), dt);
        std::vector<int32_t> slot(Bq), len(Bq);
        std::vector<double> want((size_t)Bq * H * D);
        for (int s = 0; s < Bq; ++s) {
            slot[s] = s % slots, len[s] = 1 + s % T;
            for (int h = 0; h < H; ++h) {
                const int hk = h / (H / Hkv);
                std::vector<double> p(len[s]);
                double mx = -1e300, sum = 0;
                for (int j = 0; j < len[s]; ++j) {
                    double dot = 0;
                    for (int d = 0; d < D; ++d)
                        dot += (double)q[((size_t)s * H + h) * D + d] *
                               kc[slot[s] * stride + ((size_t)j * Hkv + hk) * D + d];
                    p[j] = dot / std::sqrt((double)D);
                    mx = std::max(mx, p[j]);
                }
                for (double& x : p) sum += (x = std::exp(x - mx));
                for (int d = 0; d < D; ++d) {
                    double o = 0;
                    for (int j = 0; j < len[s]; ++j) o += p[j] * vc[slot[s] * stride + ((size_t)j * Hkv + hk) * D + d];
                    want[((size_t)s * H + h) * D + d] = o / sum;
                }
            }
        }
        Buffer<float> dq(q), dk(kc), dv(vc), dout(want.size());
        Buffer<int32_t> dslot(slot), dlen(len);
        for (Family fam : kFamilies) {
            SCOPED_TRACE(testing::Message() << (fam == Family::fast ? "fast " : "bi ") << dtype_name(dt));
            cuda::attention_decode({fam, dt}, dout.data(), dq.data(), dk.data(), dv.data(), dslot.data(), dlen.data(),
                                   stride, Bq, H, Hkv, D);
            EXPECT_TRUE(close(dout.download(), want, 1e-5, dt == Dtype::f32 ? 2e-5 : 8e-3));
        }
    }
}

// The mismatch is real on the device too: split-KV decode against the cache
// and tiled prefill give different bits in the fast family, equal bits in the
// batch-invariant one.
TEST(CudaOps, FastDecodeDiffersFromPrefill) {
    MLK_REQUIRE_GPU();
    const int T = 1000, H = 4, Hkv = 2, D = 32;
    const auto q = testdata::uniform((size_t)T * H * D, 40, -2, 2),
               k = testdata::uniform((size_t)T * Hkv * D, 41, -2, 2), v = testdata::uniform((size_t)T * Hkv * D, 42);
    Buffer<float> dq(q), dk(k), dv(v), dpre(q.size());
    for (Family fam : kFamilies) {
        const Exec ex{fam, Dtype::f32};
        cuda::attention_forward(ex, dpre.data(), nullptr, dq.data(), dk.data(), dv.data(), 1, T, H, Hkv, D);
        const auto pre = dpre.download();
        size_t diff = 0;
        for (int t = 0; t < T; t += 37) {
            Buffer<float> dqt(std::vector<float>(q.begin() + (size_t)t * H * D, q.begin() + (size_t)(t + 1) * H * D)),
                dot((size_t)H * D);
            Buffer<int32_t> dslot(std::vector<int32_t>{0}), dlen(std::vector<int32_t>{t + 1});
            cuda::attention_decode(ex, dot.data(), dqt.data(), dk.data(), dv.data(), dslot.data(), dlen.data(),
                                   (int64_t)T * Hkv * D, 1, H, Hkv, D);
            diff += count_diff(dot.download(), std::vector<float>(pre.begin() + (size_t)t * H * D,
                                                                  pre.begin() + (size_t)(t + 1) * H * D));
        }
        if (fam == Family::fast) EXPECT_GT(diff, 0u) << "split-KV decode should not equal tiled prefill";
        else EXPECT_EQ(diff, 0u) << "batch-invariant decode equals prefill";
    }
}
