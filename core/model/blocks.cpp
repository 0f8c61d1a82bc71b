#include "core/model/blocks.h"

#include <algorithm>
#include <cmath>

namespace mlk {

void qkv_forward(const Exec& ex, QkvActs& a, const float* ln, const int32_t* pos, int M, const LayerWeights& w,
                 const ModelConfig& cfg) {
    const int D = cfg.hidden_size, H = cfg.num_heads, Hkv = cfg.num_kv_heads, hd = cfg.head_dim;
    a.q_pre.resize((size_t)M * H * hd);
    a.k_pre.resize((size_t)M * Hkv * hd);
    a.v.resize((size_t)M * Hkv * hd);
    a.rstd_q.resize((size_t)M * H);
    a.rstd_k.resize((size_t)M * Hkv);
    matmul_forward(ex, a.q_pre.data(), ln, w.wq, nullptr, M, D, H * hd);
    matmul_forward(ex, a.k_pre.data(), ln, w.wk, nullptr, M, D, Hkv * hd);
    matmul_forward(ex, a.v.data(), ln, w.wv, nullptr, M, D, Hkv * hd);
    qk_norm_rope(ex, a, pos, M, w, cfg);
}

void qk_norm_rope(const Exec& ex, QkvActs& a, const int32_t* pos, int M, const LayerWeights& w,
                  const ModelConfig& cfg) {
    const int H = cfg.num_heads, Hkv = cfg.num_kv_heads, hd = cfg.head_dim;
    a.q.resize(a.q_pre.size());
    a.k.resize(a.k_pre.size());
    // Qwen3's per-head RMSNorm on q and k: rows of head_dim.
    rmsnorm_forward(ex, a.q.data(), a.rstd_q.data(), a.q_pre.data(), w.q_norm, cfg.rms_norm_eps, M * H, hd);
    rmsnorm_forward(ex, a.k.data(), a.rstd_k.data(), a.k_pre.data(), w.k_norm, cfg.rms_norm_eps, M * Hkv, hd);
    rope_forward(a.q.data(), pos, M, H, hd, cfg.rope_theta, ex.dtype, ex.rope, ex.rope_cache);
    rope_forward(a.k.data(), pos, M, Hkv, hd, cfg.rope_theta, ex.dtype, ex.rope, ex.rope_cache);
}

void qkv_backward(float* dln, LayerWeights& gw, float* dq, float* dk, const float* dv, const QkvActs& a,
                  const float* ln, const int32_t* pos, int M, const LayerWeights& w, const ModelConfig& cfg,
                  GradStore dln_store) {
    const int D = cfg.hidden_size, H = cfg.num_heads, Hkv = cfg.num_kv_heads, hd = cfg.head_dim;
    rope_backward(dq, pos, M, H, hd, cfg.rope_theta);
    rope_backward(dk, pos, M, Hkv, hd, cfg.rope_theta);
    ActBuffer dq_pre((size_t)M * H * hd), dk_pre((size_t)M * Hkv * hd);
    rmsnorm_backward(dq_pre.data(), gw.q_norm, dq, a.q_pre.data(), w.q_norm, a.rstd_q.data(), M * H, hd,
                     GradStore::overwrite);
    rmsnorm_backward(dk_pre.data(), gw.k_norm, dk, a.k_pre.data(), w.k_norm, a.rstd_k.data(), M * Hkv, hd,
                     GradStore::overwrite);
    matmul_backward(dln, gw.wq, nullptr, dq_pre.data(), ln, w.wq, M, D, H * hd, dln_store);
    matmul_backward(dln, gw.wk, nullptr, dk_pre.data(), ln, w.wk, M, D, Hkv * hd);
    matmul_backward(dln, gw.wv, nullptr, dv, ln, w.wv, M, D, Hkv * hd);
}

void dense_mlp_forward(const Exec& ex, DenseMlpActs& a, float* out, const float* x, int M, const LayerWeights& w,
                       const ModelConfig& cfg) {
    const int D = cfg.hidden_size, F = cfg.intermediate_size;
    a.gate.resize((size_t)M * F);
    a.up.resize((size_t)M * F);
    a.act.resize((size_t)M * F);
    matmul_forward(ex, a.gate.data(), x, w.w_gate, nullptr, M, D, F);
    matmul_forward(ex, a.up.data(), x, w.w_up, nullptr, M, D, F);
    swiglu_forward(ex, a.act.data(), a.gate.data(), a.up.data(), (int64_t)M * F);
    if (out) matmul_forward(ex, out, a.act.data(), w.w_down, nullptr, M, F, D);
}

void dense_mlp_backward(float* dx, LayerWeights& gw, const float* dout, const DenseMlpActs& a, const float* x, int M,
                        const LayerWeights& w, const ModelConfig& cfg, GradStore dx_store) {
    const int D = cfg.hidden_size, F = cfg.intermediate_size;
    ActBuffer dact((size_t)M * F), dgate((size_t)M * F), dup((size_t)M * F);
    matmul_backward(dact.data(), gw.w_down, nullptr, dout, a.act.data(), w.w_down, M, F, D, GradStore::overwrite);
    swiglu_backward(dgate.data(), dup.data(), dact.data(), a.gate.data(), a.up.data(), (int64_t)M * F,
                    GradStore::overwrite);
    matmul_backward(dx, gw.w_gate, nullptr, dgate.data(), x, w.w_gate, M, D, F, dx_store);
    matmul_backward(dx, gw.w_up, nullptr, dup.data(), x, w.w_up, M, D, F);
}

namespace {
// Each expert's row count: the cost by which the threads share the experts out.
std::vector<double> expert_costs(const MoeActs& a) {
    std::vector<double> rows(a.experts.size());
    for (size_t e = 0; e < a.experts.size(); ++e) rows[e] = (double)a.experts[e].rows.size();
    return rows;
}
// slot (m*k + j) -> its row in the stacked expert buffers.
std::vector<int32_t> expert_slot_rows(const MoeActs& a, size_t slots) {
    std::vector<int32_t> row(slots);
    for (const MoeActs::Expert& xe : a.experts)
        for (int r = 0; r < (int)xe.rows.size(); ++r) row[xe.rows[r]] = (int32_t)(xe.first + r);
    return row;
}
// Expert xe's rows of a stacked buffer of `width` floats a row.
float* expert_rows(ActBuffer& b, const MoeActs::Expert& xe, int width) { return b.data() + xe.first * width; }
// The expert's input rows dst[Me, D], gathered from the layer input by token.
void gather_expert_input(float* dst, const MoeActs::Expert& xe, const float* x, int D, int k) {
    const int Me = (int)xe.rows.size();
    for (int r = 0; r < Me; ++r) {
        const float* src = x + (size_t)(xe.rows[r] / k) * D;
        std::copy(src, src + D, dst + (size_t)r * D);
    }
}
// One expert's forward: xg[Me,D] gathered, gate, up, act [Me,Fm] and y[Me,D],
// as moe_forward runs it.
void expert_forward(const Exec& ex, float* xg, float* gate, float* up, float* act, float* y, const MoeActs::Expert& xe,
                    int e, const float* x, const LayerWeights& w, int D, int k, int Fm) {
    const int Me = (int)xe.rows.size();
    gather_expert_input(xg, xe, x, D, k);
    matmul_forward(ex, gate, xg, w.e_gate[e], nullptr, Me, D, Fm);
    matmul_forward(ex, up, xg, w.e_up[e], nullptr, Me, D, Fm);
    swiglu_forward(ex, act, gate, up, (int64_t)Me * Fm);
    matmul_forward(ex, y, act, w.e_down[e], nullptr, Me, Fm, D);
}
// One thread's expert scratch for one MoE call (sized to the largest expert
// it runs there): the activations no backward reads of the experts it runs.
// Freed with the call, so the attention and the rollout reuse the memory (kept
// per thread across calls, sized to the most skewed expert of any layer, it
// held 21 MB of moe-deep's heap through every phase).
struct ExpertScratch {
    ActBuffer x, gate, up, act, y;
    ExpertScratch& fit(int Me, int D, int Fm) {
        for (ActBuffer* b : {&x, &y}) b->resize((size_t)Me * D);
        for (ActBuffer* b : {&gate, &up, &act}) b->resize((size_t)Me * Fm);
        return *this;
    }
};
// Frees the experts' activations other than y, which every mode keeps (the
// combine's input, or the backward's input gradients in its place).
void drop_expert_activations(MoeActs& a) {
    for (ActBuffer* b : {&a.x, &a.gate, &a.up, &a.act}) ActBuffer().swap(*b);
}
}  // namespace

void moe_forward(const Exec& ex, MoeActs& a, float* out, const float* x, int M, const LayerWeights& w,
                 const ModelConfig& cfg, const int32_t* replay_ids, MoeKeep keep) {
    const int D = cfg.hidden_size, E = cfg.num_experts, k = cfg.num_experts_per_tok, Fm = cfg.moe_intermediate_size;
    a.router_logits.resize((size_t)M * E);
    a.own_ids.resize((size_t)M * k);
    a.own_weights.resize((size_t)M * k);
    // The router's GEMM is not quantised (serving engines keep the gate in bf16).
    Exec router_ex = ex;
    router_ex.quant = Dtype::f32;
    matmul_forward(router_ex, a.router_logits.data(), x, w.router, nullptr, M, D, E);
    router_topk_forward(ex, a.own_ids.data(), a.own_weights.data(), a.router_logits.data(), M, E, k);
    if (replay_ids) {
        a.ids.resize((size_t)M * k);
        for (int m = 0; m < M; ++m) {
            const int32_t* src =
                replay_ids[(size_t)m * k] >= 0 ? replay_ids + (size_t)m * k : &a.own_ids[(size_t)m * k];
            std::copy(src, src + k, &a.ids[(size_t)m * k]);
        }
        a.weights.resize((size_t)M * k);
        router_replay_forward(ex, a.weights.data(), a.router_logits.data(), a.ids.data(), M, E, k);
    } else {
        a.ids = a.own_ids;
        a.weights = a.own_weights;
    }

    // Group tokens by expert, in token order: each expert runs one matmul over
    // its M_e rows, so M_e (and with it the fast kernels' reduction plan)
    // depends on the batch's routing, as in a real MoE kernel.
    a.experts.resize(E);
    for (auto& e : a.experts) e.rows.clear();
    for (int m = 0; m < M; ++m)
        for (int j = 0; j < k; ++j) a.experts[a.ids[(size_t)m * k + j]].rows.push_back(m * k + j);
    size_t first = 0;
    for (auto& xe : a.experts) {
        xe.first = first;
        first += xe.rows.size();
    }
    const size_t rows = (size_t)M * k;
    if (keep == MoeKeep::all) {
        a.x.resize(rows * D);
        for (ActBuffer* b : {&a.gate, &a.up, &a.act}) b->resize(rows * Fm);
    } else {
        drop_expert_activations(a);
    }
    if (keep == MoeKeep::routes) return;
    a.y.resize(rows * D);
    const std::vector<int32_t> slot_row = expert_slot_rows(a, rows);
    const std::vector<double> rows_of = expert_costs(a);
    std::vector<ExpertScratch> scratch(keep == MoeKeep::all ? 0 : parallel_task_workers(E));
    // The experts are independent GEMMs of a few rows each: the threads share
    // them out (a grouped GEMM) rather than splitting each small one, with
    // every expert's plan and bits those of its own matmul calls.
    parallel_tasks(E, rows_of.data(), [&](int e, int worker) {
        const MoeActs::Expert& xe = a.experts[e];
        const int Me = (int)xe.rows.size();
        if (Me == 0) return;
        float* y = expert_rows(a.y, xe, D);
        if (keep == MoeKeep::all) {
            expert_forward(ex, expert_rows(a.x, xe, D), expert_rows(a.gate, xe, Fm), expert_rows(a.up, xe, Fm),
                           expert_rows(a.act, xe, Fm), y, xe, e, x, w, D, k, Fm);
            return;
        }
        // Only y outlives the expert (the combine reads it): the rest of its
        // activations, 70 % of a layer's expert buffers, in this thread's scratch.
        ExpertScratch& t = scratch[worker].fit(Me, D, Fm);
        expert_forward(ex, t.x.data(), t.gate.data(), t.up.data(), t.act.data(), y, xe, e, x, w, D, k, Fm);
    });
    // Combine (moe_combine_forward): per token and channel one fp32 FMA chain
    // over the k slots in slot order, rounded to the storage precision.
    std::vector<const float*> slot_y(rows);
    for (size_t s = 0; s < rows; ++s) slot_y[s] = a.y.data() + (size_t)slot_row[s] * D;
    moe_combine_forward(ex, out, slot_y.data(), a.weights.data(), M, k, D);
}

void moe_recompute_inputs(const Exec& ex, MoeActs& a, const float* x, const ModelConfig& cfg) {
    const int D = cfg.hidden_size, k = cfg.num_experts_per_tok, Fm = cfg.moe_intermediate_size;
    const std::vector<double> rows_of = expert_costs(a);
    const size_t rows = a.ids.size();  // M*k
    a.x.resize(rows * D);
    a.act.resize(rows * Fm);
    // Each expert's gather and SwiGLU write its own rows: the threads share the experts.
    parallel_tasks((int)a.experts.size(), rows_of.data(), [&](int e) {
        const MoeActs::Expert& xe = a.experts[e];
        const int Me = (int)xe.rows.size();
        if (Me == 0) return;
        gather_expert_input(expert_rows(a.x, xe, D), xe, x, D, k);
        swiglu_forward(ex, expert_rows(a.act, xe, Fm), expert_rows(a.gate, xe, Fm), expert_rows(a.up, xe, Fm),
                       (int64_t)Me * Fm);
    });
}

void slots_by_expert(int* order, const int32_t* ids, int k) {
    for (int j = 0; j < k; ++j) {  // insertion sort: k is a handful
        int i = j;
        for (; i > 0 && ids[order[i - 1]] > ids[j]; --i) order[i] = order[i - 1];
        order[i] = j;
    }
}

namespace {

// One expert's backward from its activations: dy and the gate weights'
// gradients from dout and its output y (moe_combine_backward), then its
// weight gradients, and its input gradients into dxe (which may be y's
// buffer: y's rows are read before theirs are written).
// In blocks of kRows rows, which gives the bits of one pass: every step is
// per row but the weight gradients, whose one FMA chain over the rows
// (matmul_backward) carries through the blocks in row order. The gradient
// scratch is then a block's, not the expert's (up to every token of the batch
// where the routing is skewed); kept per thread, it is small.
void expert_backward(float* dxe, LayerWeights& gw, float* dweights, const float* dout, const float* y, const float* xg,
                     const float* gate, const float* up, const float* act, const MoeActs& a, const MoeActs::Expert& xe,
                     int e, const LayerWeights& w, int D, int k, int Fm) {
    constexpr int kRows = 256;
    const int Me = (int)xe.rows.size();
    thread_local ActBuffer dy, dact, dgate, dup;
    for (int r0 = 0; r0 < Me; r0 += kRows) {
        const int n = std::min(kRows, Me - r0);
        const size_t xd = (size_t)r0 * D, xf = (size_t)r0 * Fm;
        dy.resize((size_t)n * D);  // written whole by moe_combine_backward
        moe_combine_backward(dy.data(), dweights, dout, y + xd, a.weights.data(), xe.rows.data() + r0, n, k, D);
        for (ActBuffer* b : {&dact, &dgate, &dup}) b->resize((size_t)n * Fm);
        matmul_backward(dact.data(), gw.e_down[e], nullptr, dy.data(), act + xf, w.e_down[e], n, Fm, D,
                        GradStore::overwrite);
        swiglu_backward(dgate.data(), dup.data(), dact.data(), gate + xf, up + xf, (int64_t)n * Fm,
                        GradStore::overwrite);
        matmul_backward(dxe + xd, gw.e_gate[e], nullptr, dgate.data(), xg + xd, w.e_gate[e], n, D, Fm,
                        GradStore::overwrite);
        matmul_backward(dxe + xd, gw.e_up[e], nullptr, dup.data(), xg + xd, w.e_up[e], n, D, Fm);
    }
}

// Every expert's backward, the experts shared out over the threads (each has
// its own weight gradients and slots), from the activations moe_forward kept
// (recompute == nullptr) or from its forward run again under *recompute.
// dx[m] = token m's expert input gradients added in ascending expert order
// (the order of one loop over the experts, so its bits): the combine with
// unit weights, whose fma(1, y, acc) from 0 is exactly that sum of adds.
// A keeping backward writes the input gradients over the forward's y rows
// (dead once the gate weights' gradients are taken) and combines them at
// once. A recompute kept the routes only: its experts go in kExpertGroups
// groups of consecutive experts, each group's input gradients in one buffer
// of about a quarter of the layer's rows, added into dx before the next
// group runs. The same adds in the same order, so the same bits, and a
// quarter of the buffer: 10 MB of moe-deep's RL step, where every expert
// gets tokens. Then the router's backward.
constexpr int kExpertGroups = 4;

void backward_experts(const Exec* recompute, float* dx, LayerWeights& gw, const float* dout, MoeActs& a, const float* x,
                      int M, const LayerWeights& w, const ModelConfig& cfg) {
    const int D = cfg.hidden_size, E = cfg.num_experts, k = cfg.num_experts_per_tok, Fm = cfg.moe_intermediate_size;
    const size_t rows = (size_t)M * k;
    GradBuffer dweights(rows);
    const std::vector<double> rows_of = expert_costs(a);
    const std::vector<int32_t> slot_row = expert_slot_rows(a, rows);
    std::vector<ExpertScratch> scratch(recompute ? parallel_task_workers(E) : 0);
    // Experts [e0, e1) with their rows' input gradients at y_rows (the rows of
    // expert e at y_rows + (first(e) - first(e0)) * D).
    const auto run_experts = [&](int e0, int e1, float* y_rows) {
        const size_t base = a.experts[e0].first;
        parallel_tasks(e1 - e0, rows_of.data() + e0, [&](int i, int worker) {
            const int e = e0 + i;
            const MoeActs::Expert& xe = a.experts[e];
            const int Me = (int)xe.rows.size();
            if (Me == 0) return;
            float* y = y_rows + (xe.first - base) * D;
            if (!recompute) {
                expert_backward(y, gw, dweights.data(), dout, y, expert_rows(a.x, xe, D), expert_rows(a.gate, xe, Fm),
                                expert_rows(a.up, xe, Fm), expert_rows(a.act, xe, Fm), a, xe, e, w, D, k, Fm);
                return;
            }
            // The expert's forward in this thread's scratch, with the calls,
            // M_e and thread count of moe_forward's (so its bits), then its
            // backward; only its input gradients outlive it.
            ExpertScratch& t = scratch[worker].fit(Me, D, Fm);
            expert_forward(*recompute, t.x.data(), t.gate.data(), t.up.data(), t.act.data(), t.y.data(), xe, e, x, w, D,
                           k, Fm);
            expert_backward(y, gw, dweights.data(), dout, t.y.data(), t.x.data(), t.gate.data(), t.up.data(),
                            t.act.data(), a, xe, e, w, D, k, Fm);
        });
    };
    // Each token's slots in ascending expert order (the order its input
    // gradients are added in), once for the whole layer; each token's slot
    // list is its own, so the threads split the tokens.
    std::vector<int32_t> by_expert(rows);
    for_parts(M, 64, [&](size_t m0, size_t m1) {
        for (size_t m = m0; m < m1; ++m) {
            int order[64];  // top-k <= 64
            slots_by_expert(order, &a.ids[m * k], k);
            for (int i = 0; i < k; ++i) by_expert[m * k + i] = (int32_t)(m * k + order[i]);
        }
    });
    if (!recompute) {
        run_experts(0, E, a.y.data());
        std::vector<const float*> rows_in_order(rows);
        for (size_t i = 0; i < rows; ++i) rows_in_order[i] = a.y.data() + (size_t)slot_row[by_expert[i]] * D;
        const std::vector<float> unit(rows, 1.0f);
        moe_combine_forward(Exec{Family::batch_invariant, Dtype::f32}, dx, rows_in_order.data(), unit.data(), M, k, D);
        ActBuffer().swap(a.y);  // consumed: the attention's backward takes its memory
    } else {
        std::fill_n(dx, (size_t)M * D, 0.0f);  // the chain's start, 0.0f
        std::vector<int> bounds{0};            // groups of about rows / kExpertGroups rows
        for (int e = 0; e < E; ++e)
            if (a.experts[e].first + a.experts[e].rows.size() >= rows * bounds.size() / kExpertGroups || e + 1 == E)
                bounds.push_back(e + 1);
        size_t widest = 0;
        for (size_t g = 0; g + 1 < bounds.size(); ++g) {
            const auto& last = a.experts[bounds[g + 1] - 1];
            widest = std::max(widest, last.first + last.rows.size() - a.experts[bounds[g]].first);
        }
        ActBuffer y_group(widest * D);
        // A token's slots of one group are the next run of its ascending
        // list: next[m] is where the token's next group starts.
        std::vector<uint8_t> next(M, 0);
        for (size_t g = 0; g + 1 < bounds.size(); ++g) {
            const int e0 = bounds[g], e1 = bounds[g + 1];
            run_experts(e0, e1, y_group.data());
            const size_t base = a.experts[e0].first;
            for_parts(M, 64, [&](size_t m0, size_t m1) {
                for (size_t m = m0; m < m1; ++m) {
                    float* out = dx + m * D;
                    for (; next[m] < k && a.ids[by_expert[m * k + next[m]]] < e1; ++next[m]) {
                        const float* in = y_group.data() + ((size_t)slot_row[by_expert[m * k + next[m]]] - base) * D;
                        for (int d = 0; d < D; ++d) out[d] += in[d];
                    }
                }
            });
        }
    }
    GradBuffer dlogits((size_t)M * E);
    router_backward(dlogits.data(), dweights.data(), a.weights.data(), a.ids.data(), M, E, k);
    matmul_backward(dx, gw.router, nullptr, dlogits.data(), x, w.router, M, D, E);
}

}  // namespace

void moe_backward(float* dx, LayerWeights& gw, const float* dout, MoeActs& a, const float* x, int M,
                  const LayerWeights& w, const ModelConfig& cfg) {
    backward_experts(nullptr, dx, gw, dout, a, x, M, w, cfg);
}

void moe_backward_recomputing(const Exec& ex, float* dx, LayerWeights& gw, const float* dout, MoeActs& a,
                              const float* x, int M, const LayerWeights& w, const ModelConfig& cfg) {
    backward_experts(&ex, dx, gw, dout, a, x, M, w, cfg);
}

}  // namespace mlk
