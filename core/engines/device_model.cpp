#include "core/engines/device_model.h"

#include <stdexcept>
#include <string>

namespace mlk {

// Device memory, kept from one call to the next (resize keeps capacity):
// every buffer is written whole by the op that fills it.
struct DeviceModel::Buffers {
    explicit Buffers(const DeviceOps& o)
        : params(o),
          head(o),
          x(o),
          ln(o),
          q_pre(o),
          k_pre(o),
          q(o),
          k(o),
          v(o),
          atty(o),
          o(o),
          ffn(o),
          gate(o),
          up(o),
          act(o),
          router_logits(o),
          own_weights(o),
          weights(o),
          xs(o),
          ys(o),
          rows_out(o),
          logits(o),
          lp(o),
          ent(o),
          tok(o),
          pos(o),
          slot(o),
          len(o),
          own_ids(o),
          ids(o),
          kv_off(o),
          gather_off(o),
          slot_rows(o) {}
    DeviceArray<float> params, head;                 // the engine's copy of the arena; the LM head [D, V]
    std::vector<DeviceArray<float>> kcache, vcache;  // [L][slots * t_max * Hkv*hd]
    DeviceArray<float> x, ln, q_pre, k_pre, q, k, v, atty, o, ffn;  // one layer's activations
    DeviceArray<float> gate, up, act;                               // [M,F] dense; [M*k,Fm] MoE, by expert
    DeviceArray<float> router_logits, own_weights, weights;         // [M,E], [M,k], [M,k]
    DeviceArray<float> xs, ys;                                      // [M*k,D]: experts' input and output rows
    DeviceArray<float> rows_out, logits, lp, ent;                   // final rows, [R,V] x2, [R]
    DeviceArray<int32_t> tok, pos, slot, len, own_ids, ids;
    DeviceArray<int64_t> kv_off, gather_off;
    DeviceArray<const float*> slot_rows;
};

DeviceModel::DeviceModel(const ModelConfig& cfg, const DeviceOps& ops)
    : cfg_(cfg), layout_(make_param_layout(cfg)), ops_(ops), b_(std::make_unique<Buffers>(ops)) {}

DeviceModel::~DeviceModel() = default;

void DeviceModel::load_weights(const std::vector<float>& master, const EngineNumerics& numerics) {
    if ((int64_t)master.size() != layout_.total) throw std::invalid_argument("device load_weights: arena size");
    num_ = numerics;
    {
        ActBuffer cast;
        cast_params(cast, master, layout_, num_);
        b_->params.upload(cast.data(), cast.size());
    }
    std::vector<float> head;
    lm_head_weights(head, master, cfg_, layout_, num_);
    b_->head.upload(head);
    w_ = bind_weights(cfg_, layout_, b_->params.data());
}

void DeviceModel::release_weights() {
    b_->params.free();
    b_->head.free();
    w_ = Weights{};
}

bool DeviceModel::has_weights() const { return b_->params.size() != 0; }

void DeviceModel::open_cache(int slots, int t_max) {
    const int64_t kv = (int64_t)cfg_.num_kv_heads * cfg_.head_dim;
    cache_stride_ = (int64_t)t_max * kv;
    for (auto* cache : {&b_->kcache, &b_->vcache}) {
        cache->clear();
        for (int l = 0; l < cfg_.num_layers; ++l) {
            cache->emplace_back(ops_);
            cache->back().resize((size_t)slots * cache_stride_);
        }
    }
}

void DeviceModel::close_cache() {
    b_->kcache.clear();
    b_->vcache.clear();
    // The weights stay (until release_weights); the activations go.
    auto kept = std::make_unique<Buffers>(ops_);
    kept->params = std::move(b_->params);
    kept->head = std::move(b_->head);
    b_ = std::move(kept);  // the device pointers, and with them w_, are unchanged
}

void DeviceModel::count(double flop) const {
    if (!ops_.counts_flops()) count_kernel_flops(flop);
}

void DeviceModel::matmul(const Exec& ex, float* out, const float* inp, const float* w, int M, int K, int N) {
    ops_.matmul_forward(ex, out, inp, w, M, K, N);
    count(2.0 * M * K * N);
}

// One decoder layer on b_->x (in place), the CPU engines' calls in their order.
void DeviceModel::layer_forward(const Exec& ex, int l, Rows& rows, std::vector<int32_t>* own_ids,
                                std::vector<int32_t>* used_ids) {
    Buffers& b = *b_;
    const int M = rows.M, D = cfg_.hidden_size, H = cfg_.num_heads, Hkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
    const int kv = Hkv * hd;
    const float eps = cfg_.rms_norm_eps;
    const LayerWeights& lw = w_.layers[l];
    b.ln.resize((size_t)M * D);
    ops_.rmsnorm_forward(ex, b.ln.data(), b.x.data(), lw.input_norm, eps, M, D);
    // q/k/v, Qwen3's per-head RMSNorm on q and k, RoPE (blocks.cpp: qkv_forward).
    b.q_pre.resize((size_t)M * H * hd);
    b.k_pre.resize((size_t)M * kv);
    b.v.resize((size_t)M * kv);
    b.q.resize((size_t)M * H * hd);
    b.k.resize((size_t)M * kv);
    matmul(ex, b.q_pre.data(), b.ln.data(), lw.wq, M, D, H * hd);
    matmul(ex, b.k_pre.data(), b.ln.data(), lw.wk, M, D, kv);
    matmul(ex, b.v.data(), b.ln.data(), lw.wv, M, D, kv);
    ops_.rmsnorm_forward(ex, b.q.data(), b.q_pre.data(), lw.q_norm, eps, M * H, hd);
    ops_.rmsnorm_forward(ex, b.k.data(), b.k_pre.data(), lw.k_norm, eps, M * Hkv, hd);
    ops_.rope_forward(b.q.data(), b.pos.data(), M, H, hd, cfg_.rope_theta, ex.dtype);
    ops_.rope_forward(b.k.data(), b.pos.data(), M, Hkv, hd, cfg_.rope_theta, ex.dtype);

    b.atty.resize((size_t)M * H * hd);
    if (rows.attend == Attend::sequences) {
        ops_.attention_forward(ex, b.atty.data(), b.q.data(), b.k.data(), b.v.data(), rows.B, rows.T, H, Hkv, hd);
        count(2.0 * rows.B * H * (double)rows.T * (rows.T + 1) * hd);  // QK and PV over the causal triangle
    } else {
        // K and V as the cache stores them (store_kv); the prompt's attention reads these too.
        for (DeviceArray<float>* t : {&b.k, &b.v}) {
            if (is_fp8(num_.kv_cache)) ops_.quantize_rows(t->data(), M * Hkv, hd, num_.kv_cache);
            else ops_.round_buffer(t->data(), (size_t)M * kv, num_.kv_cache);
        }
        float* kc = b.kcache[l].data();
        float* vc = b.vcache[l].data();
        ops_.copy_rows(kc, b.kv_off.data(), b.k.data(), nullptr, M, kv);
        ops_.copy_rows(vc, b.kv_off.data(), b.v.data(), nullptr, M, kv);
        if (rows.attend == Attend::prompts) {
            size_t off = 0;
            for (int len : rows.lens) {
                ops_.attention_forward(ex, b.atty.data() + off * H * hd, b.q.data() + off * H * hd,
                                       b.k.data() + off * kv, b.v.data() + off * kv, 1, len, H, Hkv, hd);
                off += (size_t)len;
                count(2.0 * H * (double)len * (len + 1) * hd);
            }
        } else {
            ops_.attention_decode(ex, b.atty.data(), b.q.data(), kc, vc, b.slot.data(), b.len.data(), cache_stride_, M,
                                  H, Hkv, hd);
            count(4.0 * H * rows.decode_positions * hd);
        }
    }
    b.o.resize((size_t)M * D);
    matmul(ex, b.o.data(), b.atty.data(), lw.wo, M, H * hd, D);
    ops_.add_inplace(b.x.data(), b.o.data(), (int64_t)M * D, num_.residual);
    ops_.rmsnorm_forward(ex, b.ln.data(), b.x.data(), lw.post_norm, eps, M, D);
    b.ffn.resize((size_t)M * D);
    if (!cfg_.is_moe_layer(l)) {
        const int F = cfg_.intermediate_size;
        b.gate.resize((size_t)M * F);
        b.up.resize((size_t)M * F);
        b.act.resize((size_t)M * F);
        matmul(ex, b.gate.data(), b.ln.data(), lw.w_gate, M, D, F);
        matmul(ex, b.up.data(), b.ln.data(), lw.w_up, M, D, F);
        ops_.swiglu_forward(ex, b.act.data(), b.gate.data(), b.up.data(), (int64_t)M * F);
        matmul(ex, b.ffn.data(), b.act.data(), lw.w_down, M, F, D);
    } else {
        std::vector<int32_t> own, used;
        moe_forward(ex, lw, rows, own, used);
        if (own_ids) *own_ids = std::move(own);
        if (used_ids) *used_ids = std::move(used);
    }
    ops_.add_inplace(b.x.data(), b.ffn.data(), (int64_t)M * D, num_.residual);
}

// The MoE feed-forward of b_->ln into b_->ffn (blocks.cpp: moe_forward): the
// router on the device, its top-k brought to the host, the tokens grouped by
// expert in token order there, one GEMM chain per expert over its rows, and
// the combine over each token's slots.
void DeviceModel::moe_forward(const Exec& ex, const LayerWeights& w, const Rows& rows, std::vector<int32_t>& own,
                              std::vector<int32_t>& ids) {
    Buffers& b = *b_;
    const int M = rows.M, D = cfg_.hidden_size, E = cfg_.num_experts, k = cfg_.num_experts_per_tok;
    const int Fm = cfg_.moe_intermediate_size;
    const size_t S = (size_t)M * k;
    Exec router_ex = ex;  // the router's GEMM is not quantised
    router_ex.quant = Dtype::f32;
    b.router_logits.resize((size_t)M * E);
    b.own_ids.resize(S);
    b.own_weights.resize(S);
    matmul(router_ex, b.router_logits.data(), b.ln.data(), w.router, M, D, E);
    ops_.router_topk_forward(ex, b.own_ids.data(), b.own_weights.data(), b.router_logits.data(), M, E, k);
    b.own_ids.download(own);
    const float* weights = b.own_weights.data();
    if (rows.replay) {
        ids.resize(S);
        for (int m = 0; m < M; ++m) {
            const int32_t* src = rows.replay[(size_t)m * k] >= 0 ? rows.replay + (size_t)m * k : &own[(size_t)m * k];
            std::copy(src, src + k, &ids[(size_t)m * k]);
        }
        b.ids.upload(ids);
        b.weights.resize(S);
        ops_.router_replay_forward(ex, b.weights.data(), b.router_logits.data(), b.ids.data(), M, E, k);
        weights = b.weights.data();
    } else {
        ids = own;
    }

    // Expert e's rows are first[e] .. first[e+1] of xs/ys, its tokens in token order.
    std::vector<int64_t> first(E + 1, 0);
    for (size_t s = 0; s < S; ++s) ++first[ids[s] + 1];
    for (int e = 0; e < E; ++e) first[e + 1] += first[e];
    std::vector<int64_t> fill(first.begin(), first.end() - 1), src_off(S);
    b.xs.resize(S * D);
    b.ys.resize(S * D);
    std::vector<const float*> slot_rows(S);
    for (size_t s = 0; s < S; ++s) {
        const int64_t r = fill[ids[s]]++;
        src_off[r] = (int64_t)(s / k) * D;
        slot_rows[s] = b.ys.data() + r * D;
    }
    b.gather_off.upload(src_off);
    ops_.copy_rows(b.xs.data(), nullptr, b.ln.data(), b.gather_off.data(), (int)S, D);
    b.gate.resize(S * Fm);
    b.up.resize(S * Fm);
    b.act.resize(S * Fm);
    for (int e = 0; e < E; ++e) {
        const int Me = (int)(first[e + 1] - first[e]);
        if (Me == 0) continue;
        const int64_t r = first[e];
        float *gate = b.gate.data() + r * Fm, *up = b.up.data() + r * Fm, *act = b.act.data() + r * Fm;
        matmul(ex, gate, b.xs.data() + r * D, w.e_gate[e], Me, D, Fm);
        matmul(ex, up, b.xs.data() + r * D, w.e_up[e], Me, D, Fm);
        ops_.swiglu_forward(ex, act, gate, up, (int64_t)Me * Fm);
        matmul(ex, b.ys.data() + r * D, act, w.e_down[e], Me, Fm, D);
    }
    b.slot_rows.upload(slot_rows);
    ops_.moe_combine_forward(ex, b.ffn.data(), b.slot_rows.data(), weights, M, k, D);
}

void DeviceModel::forward_rows(const Exec& ex, const std::vector<int32_t>& tok, const std::vector<int32_t>& pos,
                               const std::vector<int32_t>& row_slot, const std::vector<int32_t>& prefill_lens,
                               const std::vector<int32_t>& want_rows, const Exec& lp_ex, float inv_temp,
                               std::vector<float>& lp, std::vector<float>* lp_raw,
                               std::vector<std::vector<int32_t>>& ids_out) {
    if (!has_weights()) throw std::logic_error("device forward before load_weights");
    if (b_->kcache.empty()) throw std::logic_error("device forward_rows without a KV cache (open_cache)");
    Buffers& b = *b_;
    const int M = (int)tok.size(), D = cfg_.hidden_size, V = cfg_.vocab_size;
    const int64_t kv = (int64_t)cfg_.num_kv_heads * cfg_.head_dim;
    Rows rows;
    rows.M = M;
    rows.attend = prefill_lens.empty() ? Attend::decode : Attend::prompts;
    rows.lens = prefill_lens;
    b.tok.upload(tok);
    b.pos.upload(pos);
    std::vector<int64_t> kv_off(M);
    for (int r = 0; r < M; ++r) kv_off[r] = row_slot[r] * cache_stride_ + (int64_t)pos[r] * kv;
    b.kv_off.upload(kv_off);
    if (rows.attend == Attend::decode) {
        std::vector<int32_t> len(M);
        for (int r = 0; r < M; ++r) len[r] = pos[r] + 1, rows.decode_positions += len[r];
        b.slot.upload(row_slot);
        b.len.upload(len);
    }
    b.x.resize((size_t)M * D);
    ops_.embedding_forward(b.x.data(), b.tok.data(), w_.embed, M, D, ex.dtype);
    const std::vector<int> moe_layers = cfg_.moe_layers();
    ids_out.assign(moe_layers.size(), {});
    for (int l = 0, mi = 0; l < cfg_.num_layers; ++l) {
        const bool moe = cfg_.is_moe_layer(l);
        layer_forward(ex, l, rows, moe ? &ids_out[mi] : nullptr, nullptr);
        mi += moe;
    }
    const int R = (int)want_rows.size();
    std::vector<int64_t> want_off(R);
    for (int i = 0; i < R; ++i) want_off[i] = (int64_t)want_rows[i] * D;
    b.gather_off.upload(want_off);
    b.rows_out.resize((size_t)R * D);
    b.ln.resize((size_t)R * D);
    ops_.copy_rows(b.rows_out.data(), nullptr, b.x.data(), b.gather_off.data(), R, D);
    ops_.rmsnorm_forward(ex, b.ln.data(), b.rows_out.data(), w_.final_norm, cfg_.rms_norm_eps, R, D);
    b.logits.resize((size_t)R * V);
    matmul(num_.head_exec(ex.family), b.logits.data(), b.ln.data(), b.head.data(), R, D, V);
    b.lp.resize((size_t)R * V);
    ops_.logsoftmax_forward(lp_ex, b.lp.data(), b.logits.data(), inv_temp, R, V);
    b.lp.download(lp);
    if (lp_raw) {
        ops_.logsoftmax_forward(lp_ex, b.lp.data(), b.logits.data(), 1.0f, R, V);
        b.lp.download(*lp_raw);
    }
}

void DeviceModel::sequence_forward(Family family, const SeqBatch& batch, float inv_temp,
                                   const std::vector<std::vector<int32_t>>* replay_ids, TrainForward& out,
                                   std::vector<float>& lp_rows) {
    if (!has_weights()) throw std::logic_error("device forward before load_weights");
    Buffers& b = *b_;
    const int B = batch.B, T = batch.T, M = B * T, D = cfg_.hidden_size, V = cfg_.vocab_size;
    const std::vector<int> moe_layers = cfg_.moe_layers();
    if ((int)batch.tokens.size() != M) throw std::invalid_argument("device forward: tokens must be B*T");
    if (replay_ids && replay_ids->size() != moe_layers.size())
        throw std::invalid_argument("device forward: the replay table has " + std::to_string(replay_ids->size()) +
                                    " layers, the model " + std::to_string(moe_layers.size()) + " MoE layers");
    const Exec ex = num_.exec(family);
    Rows rows;
    rows.M = M;
    rows.attend = Attend::sequences;
    rows.B = B;
    rows.T = T;
    std::vector<int32_t> pos(M);
    for (int i = 0; i < M; ++i) pos[i] = i % T;
    b.tok.upload(batch.tokens);
    b.pos.upload(pos);
    b.x.resize((size_t)M * D);
    ops_.embedding_forward(b.x.data(), b.tok.data(), w_.embed, M, D, ex.dtype);
    out.own_expert_ids.assign(moe_layers.size(), {});
    out.used_expert_ids.assign(moe_layers.size(), {});
    for (int l = 0, mi = 0; l < cfg_.num_layers; ++l) {
        const bool moe = cfg_.is_moe_layer(l);
        rows.replay = moe && replay_ids ? (*replay_ids)[mi].data() : nullptr;
        layer_forward(ex, l, rows, moe ? &out.own_expert_ids[mi] : nullptr, moe ? &out.used_expert_ids[mi] : nullptr);
        mi += moe;
    }
    b.ln.resize((size_t)M * D);
    ops_.rmsnorm_forward(ex, b.ln.data(), b.x.data(), w_.final_norm, cfg_.rms_norm_eps, M, D);
    b.logits.resize((size_t)M * V);
    matmul(num_.head_exec(family), b.logits.data(), b.ln.data(), b.head.data(), M, D, V);
    const Exec lp_ex = num_.logprob_exec(family);
    b.lp.resize((size_t)M * V);
    b.ent.resize(M);
    ops_.logsoftmax_forward(lp_ex, b.lp.data(), b.logits.data(), inv_temp, M, V);
    ops_.entropy_forward(lp_ex, b.ent.data(), b.lp.data(), M, V);
    std::vector<float> ent;
    b.lp.download(lp_rows);
    b.ent.download(ent);
    // Position t's token is predicted by row t-1 of the same sequence.
    out.logp.assign(M, 0.0f);
    out.entropy.assign(M, 0.0f);
    for (int s = 0; s < B; ++s)
        for (int t = 1; t < T; ++t) {
            const size_t row = (size_t)s * T + t - 1;
            out.logp[(size_t)s * T + t] = lp_rows[row * V + batch.tokens[(size_t)s * T + t]];
            out.entropy[(size_t)s * T + t] = ent[row];
        }
}

}  // namespace mlk
