#include "core/engines/device_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace mlk {

// One layer's activations on the device. Every buffer is written whole by
// the op that fills it (resize keeps capacity, not contents).
struct DeviceModel::Layer {
    explicit Layer(const DeviceOps& ops) : o(&ops) {}
    const DeviceOps* o;
    DeviceArray<float> x_in{*o}, ln1{*o}, rstd1{*o};                  // [M,D], [M,D], [M]
    DeviceArray<float> q_pre{*o}, k_pre{*o}, rstd_q{*o}, rstd_k{*o};  // [M,H*hd], [M,kv], [M*H], [M*Hkv]
    DeviceArray<float> q{*o}, k{*o}, v{*o}, att{*o}, atty{*o};        // ..., [B,H,T,T], [M,H*hd]
    DeviceArray<float> x_mid{*o}, ln2{*o}, rstd2{*o}, ffn{*o};        // [M,D], [M,D], [M], [M,D]
    DeviceArray<float> gate{*o}, up{*o}, act{*o};                     // [M,F] dense; [M*k,Fm] MoE, by expert
    // MoE: the router, the experts' rows (expert e's are first[e] .. first[e+1], its tokens in token order)
    DeviceArray<float> router_logits{*o}, own_weights{*o}, replay_weights{*o};  // [M,E], [M,k], [M,k]
    DeviceArray<float> xs{*o}, ys{*o};                                          // [M*k,D] inputs, outputs
    DeviceArray<int32_t> own_ids{*o}, replay_ids{*o}, row_slot{*o};             // [M,k], [M,k], [M*k]
    DeviceArray<int64_t> gather_off{*o};
    DeviceArray<const float*> slot_rows{*o};
    bool replayed = false;
    std::vector<int64_t> first;     // [E+1]
    std::vector<int32_t> ids;       // [M,k] the experts used, on the host
    std::vector<int64_t> slot_row;  // slot -> its expert row
    const float* used_weights() const { return replayed ? replay_weights.data() : own_weights.data(); }
    const int32_t* used_ids() const { return replayed ? replay_ids.data() : own_ids.data(); }
};

struct DeviceModel::Buffers {
    explicit Buffers(const DeviceOps& ops) : o(&ops), work(ops) {}
    const DeviceOps* o;
    DeviceArray<float> params{*o}, head{*o};         // the engine's copy of the arena; the LM head [D, V]
    std::vector<DeviceArray<float>> kcache, vcache;  // [L][slots * t_max * Hkv*hd]
    // An fp8 num_.kv_cache instead: codes [L][slots * t_max * Hkv*hd], a scale
    // per (position, KV head) [L][slots * t_max * Hkv], and the rows a decode
    // step reads, dequantised: [M, span, Hkv*hd], row r at r * span (row_index).
    std::vector<DeviceArray<uint8_t>> kcode, vcode;
    std::vector<DeviceArray<float>> kscale, vscale;
    DeviceArray<float> krows{*o}, vrows{*o};
    DeviceArray<int32_t> row_index{*o};
    DeviceArray<float> x{*o}, o_proj{*o};  // the residual stream [M,D], attention's projection
    DeviceArray<float> rows_out{*o}, lnf{*o}, rstdf{*o}, logits{*o}, lp{*o}, ent{*o};
    DeviceArray<int32_t> tok{*o}, pos{*o}, slot{*o}, len{*o};
    DeviceArray<int64_t> kv_off{*o}, gather_off{*o};
    Layer work;               // inference: every layer in turn
    std::vector<Layer> kept;  // training: each layer's own
    const SeqBatch* batch = nullptr;
    float inv_temp = 1.0f;
    // The backward's scratch, kept from one backward to the next (on CUDA a
    // free synchronises the device: once per layer and step otherwise).
    DeviceArray<float> dgrads{*o}, dlp{*o}, dlogits{*o}, dhead{*o}, dlnf{*o}, dx{*o}, dln{*o};
    DeviceArray<float> dact{*o}, dgate{*o}, dup{*o}, datty{*o}, dq{*o}, dk{*o}, dv{*o}, dq_pre{*o}, dk_pre{*o};
    DeviceArray<float> dweights{*o}, dy{*o}, drouter{*o}, unit{*o};  // MoE layers
    DeviceArray<const float*> by_expert{*o};
    void free_backward() {
        for (DeviceArray<float>* a :
             {&dgrads, &dlp, &dlogits, &dhead, &dlnf,   &dx,     &dln,      &dact, &dgate,   &dup,
              &datty,  &dq,  &dk,      &dv,    &dq_pre, &dk_pre, &dweights, &dy,   &drouter, &unit})
            a->free();
        by_expert.free();
    }
};

DeviceModel::DeviceModel(const ModelConfig& cfg, const DeviceOps& ops)
    : cfg_(cfg), layout_(make_param_layout(cfg)), ops_(ops), b_(std::make_unique<Buffers>(ops)) {}

DeviceModel::~DeviceModel() = default;

void DeviceModel::load_weights(const std::vector<float>& master, const EngineNumerics& numerics) {
    if ((int64_t)master.size() != layout_.total) throw std::invalid_argument("device load_weights: arena size");
    num_ = numerics;
    if (num_.cast_is_identity()) {  // the cast would be a copy
        b_->params.upload(master);
    } else {
        ActBuffer cast(master.size());
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
    const bool fp8 = is_fp8(num_.kv_cache);
    const size_t values = (size_t)slots * cache_stride_, heads = (size_t)slots * t_max * cfg_.num_kv_heads;
    // Each layer's array of n elements (none when n is 0).
    const auto layers = [&](auto& cache, size_t n) {
        cache.clear();
        for (int l = 0; n && l < cfg_.num_layers; ++l) {
            cache.emplace_back(ops_);
            cache.back().resize(n);
        }
    };
    layers(b_->kcache, fp8 ? 0 : values);
    layers(b_->vcache, fp8 ? 0 : values);
    layers(b_->kcode, fp8 ? values : 0);
    layers(b_->vcode, fp8 ? values : 0);
    layers(b_->kscale, fp8 ? heads : 0);
    layers(b_->vscale, fp8 ? heads : 0);
}

void DeviceModel::close_cache() {
    // The weights stay (until release_weights); the cache and activations go.
    auto fresh = std::make_unique<Buffers>(ops_);
    fresh->params = std::move(b_->params);
    fresh->head = std::move(b_->head);
    b_ = std::move(fresh);  // the device pointers, and with them w_, are unchanged
}

void DeviceModel::release_activations() {
    b_->kept.clear();
    b_->free_backward();
    b_->batch = nullptr;
}

void DeviceModel::count(double flop) const {
    if (!ops_.counts_flops()) count_kernel_flops(flop);
}

void DeviceModel::matmul(const Exec& ex, float* out, const float* inp, const float* w, int M, int K, int N) {
    ops_.matmul_forward(ex, out, inp, w, M, K, N);
    count(2.0 * M * K * N);
}

void DeviceModel::matmul_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int M,
                                  int K, int N, GradStore dinp_store) {
    ops_.matmul_backward(dinp, dw, dout, inp, w, M, K, N, dinp_store);
    count((dinp ? 2.0 : 0.0) * M * K * N + (dw ? 2.0 : 0.0) * M * K * N);
}

// The CPU engines' calls in their order (blocks.cpp, the engines' layer loops).
void DeviceModel::layer_forward(const Exec& ex, int l, const Rows& rows, Layer& a, bool keep) {
    Buffers& b = *b_;
    const int M = rows.M, D = cfg_.hidden_size, H = cfg_.num_heads, Hkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
    const int kv = Hkv * hd;
    const float eps = cfg_.rms_norm_eps;
    const LayerWeights& lw = w_.layers[l];
    if (keep) {
        a.x_in.resize((size_t)M * D);
        ops_.copy_rows(a.x_in.data(), nullptr, b.x.data(), nullptr, M, D);
        a.rstd1.resize(M);
        a.rstd_q.resize((size_t)M * H);
        a.rstd_k.resize((size_t)M * Hkv);
        a.rstd2.resize(M);
    }
    a.ln1.resize((size_t)M * D);
    ops_.rmsnorm_forward(ex, a.ln1.data(), keep ? a.rstd1.data() : nullptr, b.x.data(), lw.input_norm, eps, M, D);
    // q/k/v, Qwen3's per-head RMSNorm on q and k, RoPE (blocks.cpp: qkv_forward).
    a.q_pre.resize((size_t)M * H * hd);
    a.k_pre.resize((size_t)M * kv);
    a.v.resize((size_t)M * kv);
    a.q.resize((size_t)M * H * hd);
    a.k.resize((size_t)M * kv);
    matmul(ex, a.q_pre.data(), a.ln1.data(), lw.wq, M, D, H * hd);
    matmul(ex, a.k_pre.data(), a.ln1.data(), lw.wk, M, D, kv);
    matmul(ex, a.v.data(), a.ln1.data(), lw.wv, M, D, kv);
    ops_.rmsnorm_forward(ex, a.q.data(), keep ? a.rstd_q.data() : nullptr, a.q_pre.data(), lw.q_norm, eps, M * H, hd);
    ops_.rmsnorm_forward(ex, a.k.data(), keep ? a.rstd_k.data() : nullptr, a.k_pre.data(), lw.k_norm, eps, M * Hkv, hd);
    ops_.rope_forward(a.q.data(), b.pos.data(), M, H, hd, cfg_.rope_theta, ex.dtype, ex.rope, ex.rope_cache);
    ops_.rope_forward(a.k.data(), b.pos.data(), M, Hkv, hd, cfg_.rope_theta, ex.dtype, ex.rope, ex.rope_cache);

    a.atty.resize((size_t)M * H * hd);
    if (rows.attend == Attend::sequences) {
        float* att = nullptr;  // the probabilities backward reads
        if (keep) {
            a.att.resize((size_t)rows.B * H * rows.T * rows.T);
            att = a.att.data();
        }
        ops_.attention_forward(ex, a.atty.data(), att, a.q.data(), a.k.data(), a.v.data(), rows.B, rows.T, H, Hkv, hd);
        count(2.0 * rows.B * H * (double)rows.T * (rows.T + 1) * hd);  // QK and PV over the causal triangle
    } else {
        // K and V as the cache stores them (store_kv); the prompt's attention
        // reads these too. An fp8 cache keeps their codes and scales.
        const bool fp8 = is_fp8(num_.kv_cache);
        if (!fp8) {
            for (DeviceArray<float>* t : {&a.k, &a.v}) ops_.round_buffer(t->data(), (size_t)M * kv, num_.kv_cache);
            ops_.copy_rows(b.kcache[l].data(), b.kv_off.data(), a.k.data(), nullptr, M, kv);
            ops_.copy_rows(b.vcache[l].data(), b.kv_off.data(), a.v.data(), nullptr, M, kv);
        } else {
            ops_.store_kv_fp8(b.kcode[l].data(), b.kscale[l].data(), b.kv_off.data(), a.k.data(), M, Hkv, hd,
                              num_.kv_cache, num_.fp8_scale);
            ops_.store_kv_fp8(b.vcode[l].data(), b.vscale[l].data(), b.kv_off.data(), a.v.data(), M, Hkv, hd,
                              num_.kv_cache, num_.fp8_scale);
        }
        if (rows.attend == Attend::prompts) {
            size_t off = 0;
            for (int len : rows.lens) {
                ops_.attention_forward(ex, a.atty.data() + off * H * hd, nullptr, a.q.data() + off * H * hd,
                                       a.k.data() + off * kv, a.v.data() + off * kv, 1, len, H, Hkv, hd);
                off += (size_t)len;
                count(2.0 * H * (double)len * (len + 1) * hd);
            }
        } else if (!fp8) {
            ops_.attention_decode(ex, a.atty.data(), a.q.data(), b.kcache[l].data(), b.vcache[l].data(), b.slot.data(),
                                  b.len.data(), cache_stride_, M, H, Hkv, hd);
            count(4.0 * H * rows.decode_positions * hd);
        } else {
            // The rows this step attends to, dequantised (store_kv's values):
            // the same attention bits as a float cache.
            ops_.load_kv_fp8(b.krows.data(), b.kcode[l].data(), b.kscale[l].data(), b.slot.data(), b.len.data(),
                             cache_stride_, rows.span, M, Hkv, hd, num_.kv_cache);
            ops_.load_kv_fp8(b.vrows.data(), b.vcode[l].data(), b.vscale[l].data(), b.slot.data(), b.len.data(),
                             cache_stride_, rows.span, M, Hkv, hd, num_.kv_cache);
            ops_.attention_decode(ex, a.atty.data(), a.q.data(), b.krows.data(), b.vrows.data(), b.row_index.data(),
                                  b.len.data(), (int64_t)rows.span * kv, M, H, Hkv, hd);
            count(4.0 * H * rows.decode_positions * hd);
        }
    }
    b.o_proj.resize((size_t)M * D);
    matmul(ex, b.o_proj.data(), a.atty.data(), lw.wo, M, H * hd, D);
    ops_.add_inplace(b.x.data(), b.o_proj.data(), (int64_t)M * D, num_.residual);
    if (keep) {
        a.x_mid.resize((size_t)M * D);
        ops_.copy_rows(a.x_mid.data(), nullptr, b.x.data(), nullptr, M, D);
    }
    a.ln2.resize((size_t)M * D);
    ops_.rmsnorm_forward(ex, a.ln2.data(), keep ? a.rstd2.data() : nullptr, b.x.data(), lw.post_norm, eps, M, D);
    a.ffn.resize((size_t)M * D);
    if (!cfg_.is_moe_layer(l)) {
        const int F = cfg_.intermediate_size;
        a.gate.resize((size_t)M * F);
        a.up.resize((size_t)M * F);
        a.act.resize((size_t)M * F);
        matmul(ex, a.gate.data(), a.ln2.data(), lw.w_gate, M, D, F);
        matmul(ex, a.up.data(), a.ln2.data(), lw.w_up, M, D, F);
        ops_.swiglu_forward(ex, a.act.data(), a.gate.data(), a.up.data(), (int64_t)M * F);
        matmul(ex, a.ffn.data(), a.act.data(), lw.w_down, M, F, D);
    } else {
        moe_forward(ex, lw, rows, a, keep);
    }
    ops_.add_inplace(b.x.data(), a.ffn.data(), (int64_t)M * D, num_.residual);
}

// The MoE feed-forward of a.ln2 into a.ffn (blocks.cpp: moe_forward): the
// router on the device, its top-k brought to the host, the tokens grouped by
// expert in token order there, one GEMM chain per expert over its rows, and
// the combine over each token's slots. a.ids holds the experts used.
void DeviceModel::moe_forward(const Exec& ex, const LayerWeights& w, const Rows& rows, Layer& a, bool keep) {
    const int M = rows.M, D = cfg_.hidden_size, E = cfg_.num_experts, k = cfg_.num_experts_per_tok;
    const int Fm = cfg_.moe_intermediate_size;
    const size_t S = (size_t)M * k;
    Exec router_ex = ex;  // the router's GEMM is not quantised
    router_ex.quant = Dtype::f32;
    a.router_logits.resize((size_t)M * E);
    a.own_ids.resize(S);
    a.own_weights.resize(S);
    matmul(router_ex, a.router_logits.data(), a.ln2.data(), w.router, M, D, E);
    ops_.router_topk_forward(ex, a.own_ids.data(), a.own_weights.data(), a.router_logits.data(), M, E, k);
    a.own_ids.download(a.ids);
    a.replayed = rows.replay != nullptr;
    if (a.replayed) {
        for (int m = 0; m < M; ++m)
            if (rows.replay[(size_t)m * k] >= 0) std::copy_n(rows.replay + (size_t)m * k, k, &a.ids[(size_t)m * k]);
        a.replay_ids.upload(a.ids);
        a.replay_weights.resize(S);
        ops_.router_replay_forward(ex, a.replay_weights.data(), a.router_logits.data(), a.replay_ids.data(), M, E, k);
    }

    a.first.assign(E + 1, 0);
    for (size_t s = 0; s < S; ++s) ++a.first[a.ids[s] + 1];
    for (int e = 0; e < E; ++e) a.first[e + 1] += a.first[e];
    std::vector<int64_t> fill(a.first.begin(), a.first.end() - 1), src_off(S);
    std::vector<int32_t> row_slot(S);
    a.slot_row.resize(S);
    a.xs.resize(S * D);
    a.ys.resize(S * D);
    std::vector<const float*> slot_rows(S);
    for (size_t s = 0; s < S; ++s) {
        const int64_t r = fill[a.ids[s]]++;
        src_off[r] = (int64_t)(s / k) * D;
        row_slot[r] = (int32_t)s;
        a.slot_row[s] = r;
        slot_rows[s] = a.ys.data() + r * D;
    }
    if (keep) a.row_slot.upload(row_slot);
    a.gather_off.upload(src_off);
    ops_.copy_rows(a.xs.data(), nullptr, a.ln2.data(), a.gather_off.data(), (int)S, D);
    a.gate.resize(S * Fm);
    a.up.resize(S * Fm);
    a.act.resize(S * Fm);
    for (int e = 0; e < E; ++e) {
        const int Me = (int)(a.first[e + 1] - a.first[e]);
        if (Me == 0) continue;
        const int64_t r = a.first[e];
        float *gate = a.gate.data() + r * Fm, *up = a.up.data() + r * Fm, *act = a.act.data() + r * Fm;
        matmul(ex, gate, a.xs.data() + r * D, w.e_gate[e], Me, D, Fm);
        matmul(ex, up, a.xs.data() + r * D, w.e_up[e], Me, D, Fm);
        ops_.swiglu_forward(ex, act, gate, up, (int64_t)Me * Fm);
        matmul(ex, a.ys.data() + r * D, act, w.e_down[e], Me, Fm, D);
    }
    a.slot_rows.upload(slot_rows);
    ops_.moe_combine_forward(ex, a.ffn.data(), a.slot_rows.data(), a.used_weights(), M, k, D);
}

void DeviceModel::forward_rows(const Exec& ex, const std::vector<int32_t>& tok, const std::vector<int32_t>& pos,
                               const std::vector<int32_t>& row_slot, const std::vector<int32_t>& prefill_lens,
                               const std::vector<int32_t>& want_rows, const Exec& lp_ex, float inv_temp,
                               std::vector<float>& lp, std::vector<float>* lp_raw,
                               std::vector<std::vector<int32_t>>& ids_out) {
    if (!has_weights()) throw std::logic_error("device forward before load_weights");
    if (b_->kcache.empty() && b_->kcode.empty())
        throw std::logic_error("device forward_rows without a KV cache (open_cache)");
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
        if (is_fp8(num_.kv_cache)) {
            rows.span = *std::max_element(len.begin(), len.end());
            std::vector<int32_t> index(M);
            for (int r = 0; r < M; ++r) index[r] = r;
            b.row_index.upload(index);
            b.krows.resize((size_t)M * rows.span * kv);
            b.vrows.resize((size_t)M * rows.span * kv);
        }
    }
    b.x.resize((size_t)M * D);
    ops_.embedding_forward(b.x.data(), b.tok.data(), w_.embed, M, D, ex.dtype);
    ids_out.assign(cfg_.num_moe_layers(), {});
    for (int l = 0, mi = 0; l < cfg_.num_layers; ++l) {
        layer_forward(ex, l, rows, b.work, false);
        if (cfg_.is_moe_layer(l)) ids_out[mi++] = b.work.ids;
    }
    const int R = (int)want_rows.size();
    std::vector<int64_t> want_off(R);
    for (int i = 0; i < R; ++i) want_off[i] = (int64_t)want_rows[i] * D;
    b.gather_off.upload(want_off);
    b.rows_out.resize((size_t)R * D);
    b.lnf.resize((size_t)R * D);
    ops_.copy_rows(b.rows_out.data(), nullptr, b.x.data(), b.gather_off.data(), R, D);
    ops_.rmsnorm_forward(ex, b.lnf.data(), nullptr, b.rows_out.data(), w_.final_norm, cfg_.rms_norm_eps, R, D);
    b.logits.resize((size_t)R * V);
    matmul(num_.head_exec(ex.family), b.logits.data(), b.lnf.data(), b.head.data(), R, D, V);
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
                                   std::vector<float>& lp_rows, bool for_backward) {
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
    b.kept.clear();
    if (for_backward)
        for (int l = 0; l < cfg_.num_layers; ++l) b.kept.emplace_back(ops_);
    out.own_expert_ids.assign(moe_layers.size(), {});
    out.used_expert_ids.assign(moe_layers.size(), {});
    for (int l = 0, mi = 0; l < cfg_.num_layers; ++l) {
        const bool moe = cfg_.is_moe_layer(l);
        rows.replay = moe && replay_ids ? (*replay_ids)[mi].data() : nullptr;
        Layer& a = for_backward ? b.kept[l] : b.work;
        layer_forward(ex, l, rows, a, for_backward);
        if (moe) {
            a.own_ids.download(out.own_expert_ids[mi]);
            out.used_expert_ids[mi] = a.ids;
            ++mi;
        }
    }
    b.lnf.resize((size_t)M * D);
    b.rstdf.resize(M);
    ops_.rmsnorm_forward(ex, b.lnf.data(), b.rstdf.data(), b.x.data(), w_.final_norm, cfg_.rms_norm_eps, M, D);
    b.logits.resize((size_t)M * V);
    matmul(num_.head_exec(family), b.logits.data(), b.lnf.data(), b.head.data(), M, D, V);
    const Exec lp_ex = num_.logprob_exec(family);
    b.lp.resize((size_t)M * V);
    b.ent.resize(M);
    ops_.logsoftmax_forward(lp_ex, b.lp.data(), b.logits.data(), inv_temp, M, V);
    ops_.entropy_forward(lp_ex, b.ent.data(), b.lp.data(), M, V);
    std::vector<float> ent;
    b.lp.download(lp_rows);
    b.ent.download(ent);
    next_token_logp(out, batch, lp_rows.data(), ent.data(), V);
    b.batch = for_backward ? &batch : nullptr;
    b.inv_temp = inv_temp;
}

// blocks.cpp: moe_backward. dx = d(loss)/d(layer input) (overwritten), the
// weight gradients added into g; the experts' input gradients land in a.ys.
void DeviceModel::moe_backward(float* dx, LayerWeights& g, const float* dout, Layer& a, int M, const LayerWeights& w) {
    const int D = cfg_.hidden_size, E = cfg_.num_experts, k = cfg_.num_experts_per_tok, Fm = cfg_.moe_intermediate_size;
    const size_t S = (size_t)M * k;
    Buffers& b = *b_;
    DeviceArray<float>&dweights = b.dweights, &dy = b.dy, &dact = b.dact, &dgate = b.dgate, &dup = b.dup;
    dweights.resize(S);
    ops_.fill_zero(dweights.data(), S);
    dy.resize(S * D);
    dact.resize(S * Fm);
    dgate.resize(S * Fm);
    dup.resize(S * Fm);
    for (int e = 0; e < E; ++e) {
        const int Me = (int)(a.first[e + 1] - a.first[e]);
        if (Me == 0) continue;
        const int64_t r = a.first[e];
        float* dxe = a.ys.data() + r * D;  // the expert's output rows, dead once dy is taken
        ops_.moe_combine_backward(dy.data() + r * D, dweights.data(), dout, a.ys.data() + r * D, a.used_weights(),
                                  a.row_slot.data() + r, Me, k, D);
        matmul_backward(dact.data() + r * Fm, g.e_down[e], dy.data() + r * D, a.act.data() + r * Fm, w.e_down[e], Me,
                        Fm, D, GradStore::overwrite);
        ops_.swiglu_backward(dgate.data() + r * Fm, dup.data() + r * Fm, dact.data() + r * Fm, a.gate.data() + r * Fm,
                             a.up.data() + r * Fm, (int64_t)Me * Fm, GradStore::overwrite);
        matmul_backward(dxe, g.e_gate[e], dgate.data() + r * Fm, a.xs.data() + r * D, w.e_gate[e], Me, D, Fm,
                        GradStore::overwrite);
        matmul_backward(dxe, g.e_up[e], dup.data() + r * Fm, a.xs.data() + r * D, w.e_up[e], Me, D, Fm, GradStore::add);
    }
    // dx[m] = token m's expert input gradients in ascending expert order: the
    // combine with unit weights, as the CPU engine sums them.
    std::vector<const float*> rows(S);
    for (int m = 0; m < M; ++m) {
        int order[64];  // top-k <= 64
        slots_by_expert(order, &a.ids[(size_t)m * k], k);
        for (int i = 0; i < k; ++i) rows[(size_t)m * k + i] = a.ys.data() + a.slot_row[(size_t)m * k + order[i]] * D;
    }
    b.by_expert.upload(rows);
    if (b.unit.size() != S) b.unit.upload(std::vector<float>(S, 1.0f));
    ops_.moe_combine_forward(Exec{Family::batch_invariant, Dtype::f32}, dx, b.by_expert.data(), b.unit.data(), M, k, D);
    b.drouter.resize((size_t)M * E);
    ops_.fill_zero(b.drouter.data(), (size_t)M * E);
    ops_.router_backward(b.drouter.data(), dweights.data(), a.used_weights(), a.used_ids(), M, E, k);
    matmul_backward(dx, g.router, b.drouter.data(), a.ln2.data(), w.router, M, D, E, GradStore::add);
}

void DeviceModel::backward(std::span<float> grads, const std::vector<float>& dlogp) {
    if (!b_->batch) throw std::logic_error("device backward without the forward's activations");
    Buffers& b = *b_;
    const SeqBatch& batch = *b.batch;
    const int B = batch.B, T = batch.T, M = B * T, D = cfg_.hidden_size, V = cfg_.vocab_size;
    const int H = cfg_.num_heads, Hkv = cfg_.num_kv_heads, hd = cfg_.head_dim, kv = Hkv * hd;
    b.dgrads.upload(grads.data(), grads.size());
    Weights gw = bind_weights(cfg_, layout_, b.dgrads.data());

    // The loss gradient scattered onto the rows' log-probs, on the host (B*T*V floats).
    std::vector<float> dlp_host((size_t)M * V, 0.0f);
    scatter_dlogp(dlp_host.data(), batch, dlogp, V);
    DeviceArray<float>&dlp = b.dlp, &dlogits = b.dlogits, &dlnf = b.dlnf, &dx = b.dx;
    dlp.upload(dlp_host);
    dlogits.resize((size_t)M * V);
    ops_.fill_zero(dlogits.data(), (size_t)M * V);
    ops_.logsoftmax_backward(dlogits.data(), dlp.data(), b.lp.data(), b.inv_temp, M, V);
    dlnf.resize((size_t)M * D);
    if (gw.lm_head) {
        matmul_backward(dlnf.data(), gw.lm_head, dlogits.data(), b.lnf.data(), b.head.data(), M, D, V,
                        GradStore::overwrite);
    } else {
        // Tied: the head's [D, V] gradient goes into the embedding's rows, transposed, as the CPU engine adds it.
        DeviceArray<float>& dhead = b.dhead;
        dhead.resize((size_t)D * V);
        ops_.fill_zero(dhead.data(), (size_t)D * V);
        matmul_backward(dlnf.data(), dhead.data(), dlogits.data(), b.lnf.data(), b.head.data(), M, D, V,
                        GradStore::overwrite);
        std::vector<float> dh, embed((size_t)V * D);
        dhead.download(dh);
        ops_.to_host(embed.data(), gw.embed, embed.size() * sizeof(float));
        add_tied_head_grad(embed.data(), dh.data(), V, D);
        ops_.to_device(gw.embed, embed.data(), embed.size() * sizeof(float));
    }
    dx.resize((size_t)M * D);
    ops_.rmsnorm_backward(dx.data(), gw.final_norm, dlnf.data(), b.x.data(), w_.final_norm, b.rstdf.data(), M, D,
                          GradStore::overwrite);

    DeviceArray<float>&dln = b.dln, &dact = b.dact, &dgate = b.dgate, &dup = b.dup, &datty = b.datty, &dq = b.dq,
    &dk = b.dk, &dv = b.dv, &dq_pre = b.dq_pre, &dk_pre = b.dk_pre;
    dln.resize((size_t)M * D);
    for (int l = cfg_.num_layers - 1; l >= 0; --l) {
        Layer& a = b.kept[l];
        const LayerWeights& lw = w_.layers[l];
        LayerWeights& g = gw.layers[l];
        // x_out = x_mid + ffn(ln2(x_mid)): dx flows to x_mid directly and through the FFN.
        if (!cfg_.is_moe_layer(l)) {
            const int F = cfg_.intermediate_size;
            dact.resize((size_t)M * F);
            dgate.resize((size_t)M * F);
            dup.resize((size_t)M * F);
            matmul_backward(dact.data(), g.w_down, dx.data(), a.act.data(), lw.w_down, M, F, D, GradStore::overwrite);
            ops_.swiglu_backward(dgate.data(), dup.data(), dact.data(), a.gate.data(), a.up.data(), (int64_t)M * F,
                                 GradStore::overwrite);
            matmul_backward(dln.data(), g.w_gate, dgate.data(), a.ln2.data(), lw.w_gate, M, D, F, GradStore::overwrite);
            matmul_backward(dln.data(), g.w_up, dup.data(), a.ln2.data(), lw.w_up, M, D, F, GradStore::add);
        } else {
            moe_backward(dln.data(), g, dx.data(), a, M, lw);
        }
        ops_.rmsnorm_backward(dx.data(), g.post_norm, dln.data(), a.x_mid.data(), lw.post_norm, a.rstd2.data(), M, D,
                              GradStore::add);
        // x_mid = x_in + o_proj(attn(...)).
        datty.resize((size_t)M * H * hd);
        matmul_backward(datty.data(), g.wo, dx.data(), a.atty.data(), lw.wo, M, H * hd, D, GradStore::overwrite);
        dq.resize((size_t)M * H * hd);
        dk.resize((size_t)M * kv);
        dv.resize((size_t)M * kv);
        ops_.attention_backward(dq.data(), dk.data(), dv.data(), datty.data(), a.att.data(), a.q.data(), a.k.data(),
                                a.v.data(), B, T, H, Hkv, hd, GradStore::overwrite);
        count(4.0 * B * H * (double)T * (T + 1) * hd);  // dP, dV, dQ, dK over the causal triangle
        // blocks.cpp: qkv_backward.
        ops_.rope_backward(dq.data(), b.pos.data(), M, H, hd, cfg_.rope_theta);
        ops_.rope_backward(dk.data(), b.pos.data(), M, Hkv, hd, cfg_.rope_theta);
        dq_pre.resize((size_t)M * H * hd);
        dk_pre.resize((size_t)M * kv);
        ops_.rmsnorm_backward(dq_pre.data(), g.q_norm, dq.data(), a.q_pre.data(), lw.q_norm, a.rstd_q.data(), M * H, hd,
                              GradStore::overwrite);
        ops_.rmsnorm_backward(dk_pre.data(), g.k_norm, dk.data(), a.k_pre.data(), lw.k_norm, a.rstd_k.data(), M * Hkv,
                              hd, GradStore::overwrite);
        matmul_backward(dln.data(), g.wq, dq_pre.data(), a.ln1.data(), lw.wq, M, D, H * hd, GradStore::overwrite);
        matmul_backward(dln.data(), g.wk, dk_pre.data(), a.ln1.data(), lw.wk, M, D, kv, GradStore::add);
        matmul_backward(dln.data(), g.wv, dv.data(), a.ln1.data(), lw.wv, M, D, kv, GradStore::add);
        ops_.rmsnorm_backward(dx.data(), g.input_norm, dln.data(), a.x_in.data(), lw.input_norm, a.rstd1.data(), M, D,
                              GradStore::add);
    }
    ops_.embedding_backward(gw.embed, dx.data(), b.tok.data(), M, D);
    b.dgrads.download(grads.data());
}

}  // namespace mlk
