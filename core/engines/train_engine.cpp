#include "core/engines/train_engine.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/engines/device_model.h"
#include "core/engines/heap.h"
#include "core/model/vocab.h"

namespace mlk {

TrainEngine::TrainEngine(const ModelConfig& cfg, const DeviceOps* device)
    : cfg_(cfg), layout_(make_param_layout(cfg)), moe_layers_(cfg.moe_layers()) {
    keep_step_buffers_in_heap();
    moe_index_.assign(cfg.num_layers, -1);
    for (size_t i = 0; i < moe_layers_.size(); ++i) moe_index_[moe_layers_[i]] = (int)i;
    if (device) device_ = std::make_unique<DeviceModel>(cfg, *device);
}

TrainEngine::~TrainEngine() = default;
TrainEngine::TrainEngine(TrainEngine&&) noexcept = default;

std::string TrainEngine::device_name() const { return device_ ? device_->ops().name() : "cpu"; }

SeqBatch make_seq_batch(const std::vector<std::vector<int32_t>>& seqs, const std::vector<int32_t>& prompt_lens) {
    SeqBatch b;
    b.B = (int)seqs.size();
    for (const auto& s : seqs) b.T = std::max(b.T, (int)s.size());
    b.tokens.assign((size_t)b.B * b.T, Vocab::pad);
    for (int i = 0; i < b.B; ++i) {
        std::copy(seqs[i].begin(), seqs[i].end(), b.tokens.begin() + (size_t)i * b.T);
        b.lengths.push_back((int)seqs[i].size());
    }
    b.prompt_lens = prompt_lens;
    return b;
}

SeqBatch sub_batch(const SeqBatch& b, int s0, int s1) {
    SeqBatch o;
    o.B = s1 - s0;
    o.T = b.T;
    o.tokens.assign(b.tokens.begin() + (size_t)s0 * b.T, b.tokens.begin() + (size_t)s1 * b.T);
    o.lengths.assign(b.lengths.begin() + s0, b.lengths.begin() + s1);
    o.prompt_lens.assign(b.prompt_lens.begin() + s0, b.prompt_lens.begin() + s1);
    return o;
}

const TrainForward& TrainEngine::forward(Family family, const EngineNumerics& numerics,
                                         const std::vector<float>& params, const SeqBatch& batch, float inv_temp,
                                         const std::vector<std::vector<int32_t>>* replay_ids, bool for_backward) {
    const Exec ex = numerics.exec(family);
    const int B = batch.B, T = batch.T, D = cfg_.hidden_size, V = cfg_.vocab_size, L = cfg_.num_layers;
    const int M = B * T;
    if ((int64_t)params.size() != layout_.total) throw std::invalid_argument("train forward: parameter arena size");
    if ((int)batch.tokens.size() != M) throw std::invalid_argument("train forward: tokens must be B*T");
    if (T > cfg_.max_position_embeddings)
        throw std::invalid_argument("train forward: sequence longer than max_position_embeddings");
    if (replay_ids && replay_ids->size() != moe_layers_.size())
        throw std::invalid_argument("train forward: the replay table has " + std::to_string(replay_ids->size()) +
                                    " layers, the model " + std::to_string(moe_layers_.size()) + " MoE layers");
    batch_ = &batch;
    have_activations_ = for_backward;
    inv_temp_ = inv_temp;
    M_ = M;
    if (device_) {  // the device keeps what its backward needs itself
        device_->load_weights(params, numerics);
        std::vector<float> lp;
        device_->sequence_forward(family, batch, inv_temp, replay_ids, out_, lp, for_backward);
        lp_.resize(lp.size());
        std::copy(lp.begin(), lp.end(), lp_.begin());
        return out_;
    }
    ex_ = ex;
    residual_ = numerics.residual;
    full_recompute_ = for_backward && (force_full_ ? *force_full_ : full_recompute_for(cfg_, B, T));
    if (full_recompute_ && replay_ids) replay_ = *replay_ids;
    else replay_.clear();

    bind_compute_weights(params, numerics);
    lm_head_weights(head_, params, cfg_, layout_, numerics);

    pos_.resize(M);
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t) pos_[(size_t)b * T + t] = t;

    // Checkpointing and log-probs only: every layer computes in the one
    // shared work_ layer. Checkpointing recomputes the layer, probabilities
    // included, in backward; a backward reads this forward's experts only
    // where it keeps the layer.
    const bool keeps = for_backward && !full_recompute_;
    acts_.resize(keeps ? L : 0);
    checkpoints_.clear();
    out_.own_expert_ids.assign(moe_layers_.size(), {});
    out_.used_expert_ids.assign(moe_layers_.size(), {});
    ActBuffer x((size_t)M * D);
    embedding_forward(x.data(), batch.tokens.data(), w_.embed, M, D, ex.dtype);
    for (int l = 0, mi = 0; l < L; ++l) {
        LayerActs& a = keeps ? acts_[l] : work_;
        const bool moe = cfg_.is_moe_layer(l);
        const int32_t* replay = moe && replay_ids ? (*replay_ids)[mi].data() : nullptr;
        if (keeps) swap_recomputed(a);
        if (for_backward && full_recompute_) {
            checkpoints_.emplace_back(x.size());
            copy_floats(checkpoints_.back().data(), x.data(), x.size());
        }
        a.x_in.swap(x);  // x is written whole at the layer's end: a buffer to reuse, not a copy to make
        layer_forward(a, l, replay, x, keeps, keeps ? MoeKeep::all : MoeKeep::output);
        if (moe) {
            out_.own_expert_ids[mi] = a.moe.own_ids;
            out_.used_expert_ids[mi] = a.moe.ids;
            ++mi;
        }
        if (keeps) swap_recomputed(a);
    }
    // A whole batch's layer, not to be held through training: a checkpointing
    // backward makes its layers afresh after the head, whose buffers reuse it.
    if (!keeps) work_ = LayerActs{};
    x_final_ = std::move(x);
    lnf_.resize((size_t)M * D);
    rstdf_.resize(M);
    rmsnorm_forward(ex, lnf_.data(), rstdf_.data(), x_final_.data(), w_.final_norm, cfg_.rms_norm_eps, M, D);
    const Exec lp_ex = numerics.logprob_exec(family);
    {  // the logits live until lp_ is made: a backward reads lp_. Made in
       // this order the heap reuses the logits' block for the backward's
       // [M, V] buffers (lp_ first left dense-small's peak 3.4 MB higher).
        ActBuffer logits((size_t)M * V);
        matmul_forward(numerics.head_exec(family), logits.data(), lnf_.data(), head_.data(), nullptr, M, D, V);
        lp_.resize((size_t)M * V);
        logsoftmax_forward(lp_ex, lp_.data(), logits.data(), inv_temp, M, V);
    }
    std::vector<float> ent(M);
    entropy_forward(lp_ex, ent.data(), lp_.data(), M, V);

    next_token_logp(out_, batch, lp_.data(), ent.data(), V);
    return out_;
}

void next_token_logp(TrainForward& out, const SeqBatch& batch, const float* lp_rows, const float* ent, int V) {
    const int B = batch.B, T = batch.T;
    out.logp.assign((size_t)B * T, 0.0f);
    out.entropy.assign((size_t)B * T, 0.0f);
    for (int b = 0; b < B; ++b)
        for (int t = 1; t < T; ++t) {
            const size_t row = (size_t)b * T + t - 1;
            out.logp[(size_t)b * T + t] = lp_rows[row * V + batch.tokens[(size_t)b * T + t]];
            out.entropy[(size_t)b * T + t] = ent[row];
        }
}

void scatter_dlogp(float* dlp, const SeqBatch& batch, const std::vector<float>& dlogp, int V) {
    const int B = batch.B, T = batch.T;
    for (int b = 0; b < B; ++b)
        for (int t = 1; t < T; ++t) {
            const size_t row = (size_t)b * T + t - 1;
            dlp[row * V + batch.tokens[(size_t)b * T + t]] += dlogp[(size_t)b * T + t];
        }
}

void add_tied_head_grad(float* dembed, const float* dhead, int V, int D) {
    for (int v = 0; v < V; ++v)
        for (int d = 0; d < D; ++d) dembed[(size_t)v * D + d] += dhead[(size_t)d * V + v];
}

namespace {

int64_t largest_layer_floats(const ParamLayout& layout) {
    int64_t largest = 0;
    for (const ParamLayout::Layer& layer : layout.layers)
        largest = std::max(largest, layer.all().end - layer.all().begin);
    return largest;
}

}  // namespace

void TrainEngine::bind_compute_weights(const std::vector<float>& params, const EngineNumerics& numerics) {
    if (numerics.cast_is_identity()) {
        cast_ = {};
        // Weights views are writable because gradients use them too; the
        // engine only ever reads w_.
        w_ = bind_weights(cfg_, layout_, const_cast<float*>(params.data()));
        return;
    }
    cast_.numerics = numerics;
    cast_.master = params.data();
    cast_.layer = -1;
    // Outside the layers the forward reads the embedding and the final norm,
    // each cast whole (the head is head_).
    const ParamSpec* embed = layout_.find("model.embed_tokens.weight");
    const ParamSpec* norm = layout_.find("model.norm.weight");
    cast_.outside.resize((size_t)(embed->numel + norm->numel));
    cast_params(cast_.outside.data(), cast_.master, {embed->offset, embed->offset + embed->numel}, layout_, numerics);
    cast_params(cast_.outside.data() + embed->numel, cast_.master, {norm->offset, norm->offset + norm->numel}, layout_,
                numerics);
    const int64_t largest = largest_layer_floats(layout_);
    if ((int64_t)cast_.layer_weights.size() != largest) cast_.layer_weights = PagedFloats((size_t)largest);
    w_ = Weights{};
    w_.embed = cast_.outside.data();
    w_.final_norm = cast_.outside.data() + embed->numel;
    for (int l = 0; l < cfg_.num_layers; ++l)
        w_.layers.push_back(
            bind_layer_weights(cfg_, layout_, l, cast_.layer_weights.data(), layout_.layers[l].all().begin));
}

const LayerWeights& TrainEngine::layer_weights(int l) {
    if (cast_.master && cast_.layer != l) {
        cast_params(cast_.layer_weights.data(), cast_.master, layout_.layers[l].all(), layout_, cast_.numerics);
        cast_.layer = l;
    }
    return w_.layers[l];
}

size_t TrainEngine::held_cast_floats() const { return cast_.outside.size() + cast_.layer_weights.size(); }

int64_t TrainEngine::cast_weight_floats(const ModelConfig& cfg, const EngineNumerics& numerics) {
    if (numerics.cast_is_identity()) return 0;
    const ParamLayout layout = make_param_layout(cfg);
    return layout.find("model.embed_tokens.weight")->numel + layout.find("model.norm.weight")->numel +
           largest_layer_floats(layout);
}

// One decoder layer from a.x_in (the last forward's batch and numerics); x
// receives its output. The probabilities are saved only when a backward will
// read these activations (the fast family's online softmax computes them a
// second time for a query longer than one key block).
void TrainEngine::layer_forward(LayerActs& a, int l, const int32_t* replay, ActBuffer& x, bool save_att,
                                MoeKeep moe_keep) {
    const Exec& ex = ex_;
    const int B = batch_->B, T = batch_->T, D = cfg_.hidden_size, M = M_;
    const int H = cfg_.num_heads, Hkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
    const LayerWeights& lw = layer_weights(l);
    a.ln1.resize((size_t)M * D);
    a.rstd1.resize(M);
    rmsnorm_forward(ex, a.ln1.data(), a.rstd1.data(), a.x_in.data(), lw.input_norm, cfg_.rms_norm_eps, M, D);
    qkv_forward(ex, a.qkv, a.ln1.data(), pos_.data(), M, lw, cfg_);
    float* att = nullptr;  // the probabilities the backward reads
    if (save_att) {
        a.att.resize((size_t)B * H * T * T);
        att = a.att.data();
    }
    a.atty.resize((size_t)M * H * hd);
    attention_forward(ex, a.atty.data(), att, a.qkv.q.data(), a.qkv.k.data(), a.qkv.v.data(), B, T, H, Hkv, hd);
    ActBuffer o((size_t)M * D);  // written whole by the GEMM
    matmul_forward(ex, o.data(), a.atty.data(), lw.wo, nullptr, M, H * hd, D);
    copy_into(a.x_mid, a.x_in);
    add_inplace(a.x_mid.data(), o.data(), (int64_t)M * D, residual_);
    a.ln2.resize((size_t)M * D);
    a.rstd2.resize(M);
    rmsnorm_forward(ex, a.ln2.data(), a.rstd2.data(), a.x_mid.data(), lw.post_norm, cfg_.rms_norm_eps, M, D);
    // A backward's recompute (MoeKeep::routes) wants what the FFN's backward
    // reads, not the FFN's output or x: an MoE layer's experts run in that
    // backward, and a dense layer skips its down projection.
    const bool output = moe_keep != MoeKeep::routes;
    if (output) a.ffn_out.resize((size_t)M * D);
    float* ffn_out = output ? a.ffn_out.data() : nullptr;
    if (!cfg_.is_moe_layer(l)) dense_mlp_forward(ex, a.mlp, ffn_out, a.ln2.data(), M, lw, cfg_);
    else moe_forward(ex, a.moe, ffn_out, a.ln2.data(), M, lw, cfg_, replay, moe_keep);
    if (!output) return;
    copy_into(x, a.x_mid);
    add_inplace(x.data(), a.ffn_out.data(), (int64_t)M * D, residual_);
}

void TrainEngine::backward(std::vector<float>& grads, const std::vector<float>& dlogp) {
    if ((int64_t)grads.size() != layout_.total) grads.assign(layout_.total, 0.0f);
    backward_into(std::span<float>(grads), dlogp, false);
}

void TrainEngine::backward(std::span<float> grads, const std::vector<float>& dlogp) {
    backward_into(grads, dlogp, false);
}

void TrainEngine::backward(PagedFloats& grads, const std::vector<float>& dlogp) {
    backward_into(grads.span(), dlogp, true);
}

void TrainEngine::backward_into(std::span<float> grads, const std::vector<float>& dlogp, bool map_pages) {
    if (!batch_ || !have_activations_) throw std::logic_error("train backward without the forward's activations");
    if ((int64_t)grads.size() != layout_.total)
        throw std::invalid_argument("train backward: gradient arena has " + std::to_string(grads.size()) +
                                    " floats, the model " + std::to_string(layout_.total));
    if (device_) return device_->backward(grads, dlogp);
    const SeqBatch& batch = *batch_;
    const int B = batch.B, T = batch.T, D = cfg_.hidden_size, V = cfg_.vocab_size, L = cfg_.num_layers;
    const int H = cfg_.num_heads, Hkv = cfg_.num_kv_heads, hd = cfg_.head_dim;
    const int M = M_;
    Weights gw = bind_weights(cfg_, layout_, grads.data());
    const auto prefault = [&](ParamRange r) {
        if (map_pages && r.end > r.begin) prefault_for_write(grads.data() + r.begin, (size_t)(r.end - r.begin));
    };
    // Outside the layers: the embedding before them, the final norm and head after.
    const auto& layers = layout_.layers;
    prefault({0, layers.empty() ? layout_.total : layers.front().shared.begin});
    if (!layers.empty()) prefault({layers.back().all().end, layout_.total});

    // Every backward buffer below is written whole by its first kernel
    // (GradStore::overwrite) before anything adds into it: nothing to zero.
    ActBuffer dx((size_t)M * D);
    {  // the head and the final norm; their gradient buffers end here
        GradBuffer dlp((size_t)M * V);
        scatter_dlogp(dlp.data(), batch, dlogp, V);
        GradBuffer dlogits((size_t)M * V);
        logsoftmax_backward(dlogits.data(), dlp.data(), lp_.data(), inv_temp_, M, V);
        // Two of the head's three [M, V] buffers are done with (a checkpointing
        // forward serves one backward, so its lp_ too).
        ActBuffer().swap(dlp);
        if (full_recompute_) ActBuffer().swap(lp_);
        ActBuffer dlnf((size_t)M * D);
        if (gw.lm_head) {
            matmul_backward(dlnf.data(), gw.lm_head, nullptr, dlogits.data(), lnf_.data(), head_.data(), M, D, V,
                            GradStore::overwrite);
        } else {
            std::vector<float> dhead((size_t)D * V, 0.0f);
            matmul_backward(dlnf.data(), dhead.data(), nullptr, dlogits.data(), lnf_.data(), head_.data(), M, D, V,
                            GradStore::overwrite);
            add_tied_head_grad(gw.embed, dhead.data(), V, D);
        }
        rmsnorm_backward(dx.data(), gw.final_norm, dlnf.data(), x_final_.data(), w_.final_norm, rstdf_.data(), M, D,
                         GradStore::overwrite);
    }
    if (full_recompute_) {
        // A checkpointing forward serves one backward: the layer inputs are
        // freed below as their layers are done, and what the layers' backward
        // does not read goes now, before its one layer of buffers is at its
        // largest (the heap keeps its high-water mark resident; heap.h).
        have_activations_ = false;
        for (ActBuffer* v : {&x_final_, &lnf_}) ActBuffer().swap(*v);
        // The heap's free pages (the rollout's KV cache, the forward's layer)
        // go back too: they stay resident under the gradient arena, which the
        // layers below fill (moe-deep: 14 MB of its training phase's peak).
        // The layers' buffers take their pages afresh, once a step.
        return_free_heap();
    }
    for (int l = L - 1; l >= 0; --l) {
        LayerActs& a = full_recompute_ ? work_ : acts_[l];
        const LayerWeights& lw = layer_weights(l);
        LayerWeights& g = gw.layers[l];
        if (full_recompute_) {
            copy_into(a.x_in, checkpoints_[l].span());
            checkpoints_[l] = PagedFloats();  // its pages go back while the layers below still fill the gradients
            const int mi = moe_index_[l];
            ActBuffer x_out;
            // An MoE layer's experts run in moe_backward_recomputing, one at a time.
            layer_forward(a, l, mi >= 0 && !replay_.empty() ? replay_[mi].data() : nullptr, x_out, true,
                          MoeKeep::routes);
        } else {
            swap_recomputed(a);
            recompute(a, l);
        }
        // An expert no token was routed to gets no gradient written: its
        // pages stay unmapped (a third of moe-deep's experts in an RL step).
        // Consecutive routed experts are one call.
        prefault(layers[l].shared);
        ParamRange run{};
        for (size_t e = 0; e < a.moe.experts.size() && e < layers[l].experts.size(); ++e) {
            if (a.moe.experts[e].rows.empty()) continue;
            const ParamRange& r = layers[l].experts[e];
            if (run.end != r.begin) {
                prefault(run);
                run.begin = r.begin;
            }
            run.end = r.end;
        }
        prefault(run);
        // x_out = x_mid + ffn(ln2(x_mid)): dx flows to x_mid directly and through the FFN.
        ActBuffer dln2((size_t)M * D);
        if (!cfg_.is_moe_layer(l))
            dense_mlp_backward(dln2.data(), g, dx.data(), a.mlp, a.ln2.data(), M, lw, cfg_, GradStore::overwrite);
        else if (full_recompute_)
            moe_backward_recomputing(ex_, dln2.data(), g, dx.data(), a.moe, a.ln2.data(), M, lw, cfg_);
        else moe_backward(dln2.data(), g, dx.data(), a.moe, a.ln2.data(), M, lw, cfg_);
        rmsnorm_backward(dx.data(), g.post_norm, dln2.data(), a.x_mid.data(), lw.post_norm, a.rstd2.data(), M, D);
        // x_mid = x_in + o_proj(attn(...)).
        ActBuffer datty((size_t)M * H * hd);
        matmul_backward(datty.data(), g.wo, nullptr, dx.data(), a.atty.data(), lw.wo, M, H * hd, D,
                        GradStore::overwrite);
        ActBuffer dq((size_t)M * H * hd), dk((size_t)M * Hkv * hd), dv((size_t)M * Hkv * hd);
        attention_backward(dq.data(), dk.data(), dv.data(), datty.data(), a.att.data(), a.qkv.q.data(), a.qkv.k.data(),
                           a.qkv.v.data(), B, T, H, Hkv, hd, GradStore::overwrite);
        ActBuffer dln1((size_t)M * D);
        qkv_backward(dln1.data(), g, dq.data(), dk.data(), dv.data(), a.qkv, a.ln1.data(), pos_.data(), M, lw, cfg_,
                     GradStore::overwrite);
        rmsnorm_backward(dx.data(), g.input_norm, dln1.data(), a.x_in.data(), lw.input_norm, a.rstd1.data(), M, D);
        if (!full_recompute_) swap_recomputed(a);
    }
    embedding_backward(gw.embed, dx.data(), batch.tokens.data(), M, D);
}

void TrainEngine::release_activations() {
    have_activations_ = false;
    if (device_) device_->release_activations();
    std::vector<LayerActs>().swap(acts_);
    std::vector<PagedFloats>().swap(checkpoints_);
    spare_ = Recomputed{};
    work_ = LayerActs{};
    for (ActBuffer* v : {&x_final_, &lnf_, &rstdf_, &lp_}) ActBuffer().swap(*v);
    // The cast weights too: each forward casts afresh.
    cast_ = {};
    w_ = Weights{};
    out_ = TrainForward{};
    std::vector<std::vector<int32_t>>().swap(replay_);
    std::vector<int32_t>().swap(pos_);
    batch_ = nullptr;
}

void TrainEngine::swap_recomputed(LayerActs& a) {
    a.ln1.swap(spare_.ln1);
    a.ln2.swap(spare_.ln2);
    a.ffn_out.swap(spare_.ffn_out);
    a.qkv.q.swap(spare_.q);
    a.qkv.k.swap(spare_.k);
    a.mlp.act.swap(spare_.act);
    a.moe.x.swap(spare_.expert_x);
    a.moe.act.swap(spare_.expert_act);
}

// Layer `layer`'s dropped activations, by the calls its forward made.
void TrainEngine::recompute(LayerActs& a, int layer) {
    const int M = M_, D = cfg_.hidden_size;
    const LayerWeights& lw = layer_weights(layer);
    a.ln1.resize((size_t)M * D);
    rmsnorm_forward(ex_, a.ln1.data(), nullptr, a.x_in.data(), lw.input_norm, cfg_.rms_norm_eps, M, D);
    qk_norm_rope(ex_, a.qkv, pos_.data(), M, lw, cfg_);
    a.ln2.resize((size_t)M * D);
    rmsnorm_forward(ex_, a.ln2.data(), nullptr, a.x_mid.data(), lw.post_norm, cfg_.rms_norm_eps, M, D);
    if (!cfg_.is_moe_layer(layer)) {
        a.mlp.act.resize(a.mlp.gate.size());
        swiglu_forward(ex_, a.mlp.act.data(), a.mlp.gate.data(), a.mlp.up.data(), (int64_t)a.mlp.gate.size());
    } else {
        moe_recompute_inputs(ex_, a.moe, a.ln2.data(), cfg_);
    }
}

namespace {

// Floats the training engine keeps for one layer of M rows of S sequences of
// length T (LayerActs, QkvActs, DenseMlpActs, MoeActs) when it keeps the layer.
double layer_kept_floats(const ModelConfig& m, bool moe_layer, double M, double S, double T) {
    const double D = m.hidden_size, H = m.num_heads, Hkv = m.num_kv_heads, hd = m.head_dim;
    double f = 2 * M * D + 2 * M;                            // x_in, x_mid; two rstd
    f += M * H * hd + 2 * M * Hkv * hd + M * (H + Hkv);      // q_pre, k_pre, v; q/k norm rstd
    f += S * H * T * T + M * H * hd;                         // attention probabilities, attention output
    if (!moe_layer) return f + 2 * M * m.intermediate_size;  // gate, up
    const double k = m.num_experts_per_tok;
    f += M * m.num_experts + 4 * M * k;              // router logits; own/used ids and weights
    f += M * k * (D + 2 * m.moe_intermediate_size);  // per expert: its output rows, gate, up
    return f;
}

// What backward recomputes of a kept layer (ln1, ln2, ffn_out, q and k after
// norm and RoPE, SwiGLU's act, the experts' gathered rows).
double layer_recomputed_floats(const ModelConfig& m, bool moe_layer, double M) {
    const double D = m.hidden_size;
    const double f = 3 * M * D + M * (m.num_heads + m.num_kv_heads) * m.head_dim;
    if (!moe_layer) return f + M * m.intermediate_size;
    return f + M * m.num_experts_per_tok * (D + m.moe_intermediate_size);
}

}  // namespace

double TrainEngine::checkpoint_floats(const ModelConfig& m, double S, double T) {
    return (double)m.num_layers * S * T * m.hidden_size;
}

double TrainEngine::kept_activation_floats(const ModelConfig& m, double S, double T, bool full_recompute) {
    const double M = S * T;
    double kept = full_recompute ? checkpoint_floats(m, S, T) : 0.0, shared = 0;
    for (int l = 0; l < m.num_layers; ++l) {
        const bool moe = m.is_moe_layer(l);
        if (full_recompute) {
            shared = std::max(shared, layer_kept_floats(m, moe, M, S, T) + layer_recomputed_floats(m, moe, M));
        } else {
            kept += layer_kept_floats(m, moe, M, S, T);
            shared = std::max(shared, layer_recomputed_floats(m, moe, M));
        }
    }
    return kept + shared;
}

bool TrainEngine::full_recompute_for(const ModelConfig& cfg, double S, double T) {
    const double state = (double)parameter_count(cfg) * kTrainingStateBytesPerParam;
    return state + kept_activation_floats(cfg, S, T, false) * sizeof(float) > kFullRecomputeBytes;
}

double TrainEngine::logprob_forward_floats(const ModelConfig& m, double S, double T) {
    const double M = S * T;
    double one_layer = 0;
    for (int l = 0; l < m.num_layers; ++l) {
        const bool moe = m.is_moe_layer(l);
        // less the attention probabilities, which this forward does not save
        one_layer = std::max(one_layer, layer_kept_floats(m, moe, M, S, T) + layer_recomputed_floats(m, moe, M) -
                                            S * m.num_heads * T * T);
    }
    return one_layer;
}

}  // namespace mlk
