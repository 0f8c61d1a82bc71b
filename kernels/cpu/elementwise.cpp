// Elementwise kernels (no reductions, so both families are the same code and
// every ISA path gives the same bits): SwiGLU, embedding, residual add, RoPE.
#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/kernels.h"
#include "kernels/cpu/thread_pool.h"

namespace mlk {

using namespace cpu;

namespace {

constexpr int64_t kChunk = 16384;

template <class F>
void for_range(int64_t n, double work_per_elem, F&& f) {
    const int chunks = (int)((n + kChunk - 1) / kChunk);
    parallel_for(
        chunks, [&](int b, int e) { f(b * kChunk, std::min<int64_t>(n, e * kChunk)); },
        n * work_per_elem >= kParallelWork && num_threads() > 1);
}

}  // namespace

// swiglu_forward: out = round(round(g / (1 + exp(-g)), ex.silu) * up),
// elementwise (ex.silu f32: one rounding of silu(g) * up).
void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n) {
    if (n <= 0) return;
    const IsaTable& I = isa_table();
    for_range(n, 20.0, [&](int64_t i0, int64_t i1) { I.swiglu(out, gate, up, ex.dtype, ex.silu, i0, i1); });
}

// swiglu_backward: sig = 1/(1+exp(-g)); dup += (dout*g)*sig;
// dgate += ((dout*up)*sig)*(1 + g*(1-sig)). Elementwise.
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t n,
                     GradStore store) {
    if (n <= 0) return;
    const IsaTable& I = isa_table();
    const bool add = store == GradStore::add;
    for_range(n, 25.0, [&](int64_t i0, int64_t i1) { I.swiglu_bwd(dgate, dup, dout, gate, up, add, i0, i1); });
}

void embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C, Dtype dtype) {
    if (M <= 0 || C <= 0) return;
    const IsaTable& I = isa_table();
    for (int m = 0; m < M; ++m) I.copy_round(out + (int64_t)m * C, table + (int64_t)tok[m] * C, dtype, C);
}

// embedding_backward: dtable[tok[m]] += dout[m] for m = 0..M-1 in order (a token
// seen twice accumulates in row order). Threads split the columns.
void embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C) {
    if (M <= 0 || C <= 0) return;
    const IsaTable& I = isa_table();
    const int nb = (C + 63) / 64;
    parallel_for(
        nb,
        [&](int b, int e) {
            const int c0 = b * 64, c1 = std::min(C, e * 64);
            for (int m = 0; m < M; ++m)
                I.accumulate(dtable + (int64_t)tok[m] * C + c0, dout + (int64_t)m * C + c0, c1 - c0);
        },
        nb > 1 && (double)M * C >= kParallelWork && num_threads() > 1);
}

// add_inplace: y = round(y + x), elementwise.
void add_inplace(float* y, const float* x, int64_t n, Dtype dtype) {
    if (n <= 0) return;
    const IsaTable& I = isa_table();
    for_range(n, 2.0, [&](int64_t i0, int64_t i1) { I.add_round(y, x, dtype, i0, i1); });
}

// copy_rows: rows split across the pool, a memcpy each.
void copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M, int C) {
    if (M <= 0 || C <= 0) return;
    for_range(M, (double)C, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r)
            std::memcpy(dst + (dst_off ? dst_off[r] : r * C), src + (src_off ? src_off[r] : r * C),
                        (size_t)C * sizeof(float));
    });
}

// ---- RoPE ------------------------------------------------------------------------
// Angle(pos, i) = pos * theta^(-2i/D) in double (exactly the expression of
// ref::rope_forward), cos/sin cast to float, cached per (D, theta) in a table
// that grows with the largest position seen. Rotation per element:
// x1' = x1*c - x2*s, x2' = x2*c + x1*s (separately rounded products, no fma),
// then rounded to dtype; identical for decode and prefill (same table, same
// per-row code), and bitwise equal to ref::rope_forward<float> in fp32.
// With a narrow point (Exec::rope, bf16: a bf16 cos/sin cache rotated in
// bf16, as Hugging Face's q*cos + rotate_half(q)*sin and vLLM's rotary kernel
// in scalar_t): c = round(cos, point), s = round(sin, point),
// x1' = round(round(x1*c) - round(x2*s)), x2' = round(round(x2*c) + round(x1*s))
// (each rounding to point), then rounded to dtype.
namespace {

struct RopeTable {
    int D = 0;
    float theta = 0;
    int npos = 0;
    std::vector<float> cs;  // [npos][D]: cos[D/2] then sin[D/2]
};

std::shared_ptr<const RopeTable> rope_table(int D, float theta, int need) {
    static std::mutex mu;
    static std::vector<std::shared_ptr<const RopeTable>> tables;
    std::lock_guard<std::mutex> lk(mu);
    std::shared_ptr<const RopeTable>* slot = nullptr;
    for (auto& t : tables)
        if (t->D == D && float_bits(t->theta) == float_bits(theta)) {
            if (t->npos >= need) return t;
            slot = &t;
            break;
        }
    auto t = std::make_shared<RopeTable>();
    t->D = D;
    t->theta = theta;
    int np = std::max(256, slot ? (*slot)->npos * 2 : 0);
    while (np < need) np *= 2;
    t->npos = np;
    const int half = D / 2;
    t->cs.resize((size_t)np * D);
    std::vector<double> inv(half);
    for (int i = 0; i < half; ++i) inv[i] = std::pow((double)theta, -2.0 * i / D);
    for (int p = 0; p < np; ++p)
        for (int i = 0; i < half; ++i) {
            const double a = p * inv[i];
            t->cs[(size_t)p * D + i] = (float)std::cos(a);
            t->cs[(size_t)p * D + half + i] = (float)std::sin(a);
        }
    std::shared_ptr<const RopeTable> ct = t;
    if (slot) *slot = ct;
    else tables.push_back(ct);
    return ct;
}

void rope_apply(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dt, Dtype pt, Dtype ct,
                bool inverse) {
    if (M <= 0 || H <= 0 || D < 2) return;
    int maxp = 0;
    bool negative = false;
    for (int m = 0; m < M; ++m) {
        maxp = std::max(maxp, (int)pos[m]);
        negative |= pos[m] < 0;
    }
    auto tab = rope_table(D, theta, maxp + 1);
    std::vector<const float*> rows(M);
    std::vector<float> extra;  // negative positions (unusual): computed on the fly
    if (negative) extra.resize((size_t)M * D);
    const int half = D / 2;
    for (int m = 0; m < M; ++m) {
        if (pos[m] >= 0) {
            rows[m] = tab->cs.data() + (size_t)pos[m] * D;
        } else {
            float* r = extra.data() + (size_t)m * D;
            for (int i = 0; i < half; ++i) {
                const double a = pos[m] * std::pow((double)theta, -2.0 * i / D);
                r[i] = (float)std::cos(a);
                r[half + i] = (float)std::sin(a);
            }
            rows[m] = r;
        }
    }
    const IsaTable& I = isa_table();
    // 30 units per element: a row of heads costs about 0.15 ns per element
    // (one thread), so 448 rows of 8 heads (16 us) split across the threads,
    // which 3 units per element would keep on one.
    parallel_for(
        M, [&](int m0, int m1) { I.rope_rows(x, rows.data(), H, D, dt, pt, ct, inverse, m0, m1); },
        M > 1 && 30.0 * M * H * D >= kParallelWork && num_threads() > 1);
}

}  // namespace

void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype, Dtype point,
                  Dtype cache) {
    rope_apply(x, pos, M, H, D, theta, dtype, point, cache, false);
}

// rope_backward: the inverse rotation g1' = g1*c + g2*s, g2' = g2*c - g1*s (fp32).
void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta) {
    rope_apply(dx, pos, M, H, D, theta, Dtype::f32, Dtype::f32, Dtype::f32, true);
}

// adamw_update: elementwise (kernels.h gives the order); threads split the range.
void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n, const AdamWStep& s) {
    if (n <= 0) return;
    const IsaTable& I = isa_table();
    for_range(n, 12.0, [&](int64_t i0, int64_t i1) { I.adamw(params, m, v, grads, s, i0, i1); });
}

double sum_squares(const float* x, int64_t n) { return n > 0 ? isa_table().sum_squares(x, n) : 0.0; }

}  // namespace mlk
