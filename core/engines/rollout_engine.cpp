#include "core/engines/rollout_engine.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "core/engines/heap.h"
#include "core/model/vocab.h"

namespace mlk {

RolloutEngine::RolloutEngine(const ModelConfig& cfg, const DeviceOps* device)
    : cfg_(cfg), layout_(make_param_layout(cfg)), moe_layers_(cfg.moe_layers()) {
    keep_step_buffers_in_heap();
    if (device) device_ = std::make_unique<DeviceModel>(cfg, *device);
}

RolloutEngine::~RolloutEngine() = default;  // bf16_master_ gives a borrowed master back

std::string RolloutEngine::device_name() const { return device_ ? device_->ops().name() : "cpu"; }

void RolloutEngine::load_weights(std::vector<float>& master, const EngineNumerics& numerics) {
    if ((int64_t)master.size() != layout_.total) throw std::invalid_argument("rollout load_weights: arena size");
    release_weights();
    num_ = numerics;
    if (device_) return device_->load_weights(master, numerics);
    // The head first: it is rounded from the master's own bits, to its own precision.
    lm_head_weights(head_, master, cfg_, layout_, num_);
    const Borrow borrow = borrow_of(num_);
    // A NaN weight, whose bits bf16 rounding does not keep, is cast instead.
    if (borrow == Borrow::cast || (borrow == Borrow::rounded && !bf16_master_.round(std::span<float>(master))))
        cast_master_.cast(std::span<float>(master), layout_, num_);
    w_ = bind_weights(cfg_, layout_, master.data());
    has_weights_ = true;
}

double RolloutEngine::kv_cache_bytes_per_token(const ModelConfig& cfg, const EngineNumerics& n) {
    const double heads = 2.0 * cfg.num_layers * cfg.num_kv_heads;  // K and V
    return is_fp8(n.kv_cache) ? heads * (cfg.head_dim * 1.0 + 4.0) : heads * cfg.head_dim * 4.0;
}

RolloutEngine::Borrow RolloutEngine::borrow_of(const EngineNumerics& n) {
    if (n.cast_is_identity()) return Borrow::as_is;
    return n.matmul == Dtype::bf16 ? Borrow::rounded : Borrow::cast;
}

double RolloutEngine::borrowed_bytes_per_param(const EngineNumerics& n) {
    switch (borrow_of(n)) {
        case Borrow::as_is: return 0.0;
        case Borrow::rounded: return 17.0 / 8.0;
        case Borrow::cast: return 3.0;
    }
    return 3.0;
}

void RolloutEngine::release_weights() {
    if (device_) device_->release_weights();
    bf16_master_.restore();
    cast_master_.restore();
    std::vector<float>().swap(head_);
    w_ = Weights{};
    has_weights_ = false;
}

void RolloutEngine::forward_rows(const Exec& ex, const std::vector<int32_t>& tok, const std::vector<int32_t>& pos,
                                 const std::vector<int32_t>& slot, const std::vector<int32_t>& prefill_lens,
                                 const std::vector<int32_t>& want_rows, const Exec& lp_ex, float inv_temp,
                                 std::vector<float>& lp, std::vector<float>* lp_raw,
                                 std::vector<std::vector<int32_t>>& ids_out) {
    // Each row's cache slot: a prompt's rows share its sequence's.
    std::vector<int32_t> row_slot;
    if (prefill_lens.empty()) {
        row_slot = slot;
    } else {
        for (size_t s = 0; s < prefill_lens.size(); ++s) row_slot.insert(row_slot.end(), prefill_lens[s], slot[s]);
    }
    if (device_)
        return device_->forward_rows(ex, tok, pos, row_slot, prefill_lens, want_rows, lp_ex, inv_temp, lp, lp_raw,
                                     ids_out);
    const int M = (int)tok.size(), D = cfg_.hidden_size, V = cfg_.vocab_size;
    const int H = cfg_.num_heads, Hkv = cfg_.num_kv_heads, hd = cfg_.head_dim, kv = Hkv * hd;
    const bool prefill = !prefill_lens.empty();
    ActBuffer &x = scratch_.x, &ln = scratch_.ln, &atty = scratch_.atty, &o = scratch_.o, &ffn = scratch_.ffn;
    x.resize((size_t)M * D);
    ln.resize((size_t)M * D);
    atty.resize((size_t)M * H * hd);
    o.resize((size_t)M * D);
    ffn.resize((size_t)M * D);
    QkvActs& qkv = scratch_.qkv;
    DenseMlpActs& mlp = scratch_.mlp;
    MoeActs& moe = scratch_.moe;
    embedding_forward(x.data(), tok.data(), w_.embed, M, D, ex.dtype);

    // Decode: each row's attended length.
    std::vector<int32_t> dec_len;
    if (!prefill) {
        dec_len.resize(M);
        for (int i = 0; i < M; ++i) dec_len[i] = pos[i] + 1;
    }
    // An fp8 cache's decode reads rows dequantised into krows_ / vrows_:
    // row r's at r * span (the longest length) on.
    const bool fp8_cache = is_fp8(num_.kv_cache);
    int span = 0;
    std::vector<int32_t> row_index;
    std::vector<int64_t> kv_off;  // each row's place in an fp8 cache
    if (fp8_cache) {
        kv_off.resize(M);
        for (int r = 0; r < M; ++r) kv_off[r] = row_slot[r] * cache_stride_ + (int64_t)pos[r] * kv;
    }
    if (fp8_cache && !prefill) {
        span = *std::max_element(dec_len.begin(), dec_len.end());
        row_index.resize(M);
        std::iota(row_index.begin(), row_index.end(), 0);
        krows_.resize((size_t)M * span * kv);
        vrows_.resize((size_t)M * span * kv);
    }

    ids_out.assign(moe_layers_.size(), {});
    for (int l = 0, mi = 0; l < cfg_.num_layers; ++l) {
        const LayerWeights& lw = w_.layers[l];
        rmsnorm_forward(ex, ln.data(), nullptr, x.data(), lw.input_norm, cfg_.rms_norm_eps, M, D);
        qkv_forward(ex, qkv, ln.data(), pos.data(), M, lw, cfg_);
        // K and V as the cache holds them; the prompt's attention reads these too.
        if (!fp8_cache) {
            store_kv(qkv.k.data(), M, Hkv, hd, num_);
            store_kv(qkv.v.data(), M, Hkv, hd, num_);
            float* kc = kcache_[l].data();
            float* vc = vcache_[l].data();
            for_parts(M, kFloatsPerPart / (2 * kv), [&](size_t r0, size_t r1) {
                for (size_t r = r0; r < r1; ++r) {
                    const int64_t at = row_slot[r] * cache_stride_ + (int64_t)pos[r] * kv;
                    std::copy_n(&qkv.k[r * kv], kv, kc + at);
                    std::copy_n(&qkv.v[r * kv], kv, vc + at);
                }
            });
        } else {
            // Codes and scales into the cache; the rows themselves become
            // code * scale, store_kv's bits.
            store_kv_fp8(kcode_[l].data(), kscale_[l].data(), kv_off.data(), qkv.k.data(), M, Hkv, hd, num_.kv_cache,
                         num_.fp8_scale);
            store_kv_fp8(vcode_[l].data(), vscale_[l].data(), kv_off.data(), qkv.v.data(), M, Hkv, hd, num_.kv_cache,
                         num_.fp8_scale);
        }
        if (prefill) {
            // One call per prompt, each too small to split; the threads share
            // the prompts instead (a query's bits depend on its length only).
            const int P = (int)prefill_lens.size();
            std::vector<int> first(P + 1, 0);
            std::vector<double> cost(P);
            for (int i = 0; i < P; ++i) {
                first[i + 1] = first[i] + prefill_lens[i];
                cost[i] = (double)prefill_lens[i] * prefill_lens[i];
            }
            parallel_tasks(P, cost.data(), [&](int i) {
                const size_t off = (size_t)first[i];
                attention_forward(ex, &atty[off * H * hd], nullptr, &qkv.q[off * H * hd], &qkv.k[off * kv],
                                  &qkv.v[off * kv], 1, prefill_lens[i], H, Hkv, hd);
            });
        } else if (!fp8_cache) {
            attention_decode(ex, atty.data(), qkv.q.data(), kcache_[l].data(), vcache_[l].data(), row_slot.data(),
                             dec_len.data(), cache_stride_, M, H, Hkv, hd);
        } else {
            // Row r's positions below its length, dequantised to rows r * span
            // on: the values store_kv gave, so the same attention bits.
            load_kv_fp8(krows_.data(), kcode_[l].data(), kscale_[l].data(), row_slot.data(), dec_len.data(),
                        cache_stride_, span, M, Hkv, hd, num_.kv_cache);
            load_kv_fp8(vrows_.data(), vcode_[l].data(), vscale_[l].data(), row_slot.data(), dec_len.data(),
                        cache_stride_, span, M, Hkv, hd, num_.kv_cache);
            attention_decode(ex, atty.data(), qkv.q.data(), krows_.data(), vrows_.data(), row_index.data(),
                             dec_len.data(), (int64_t)span * kv, M, H, Hkv, hd);
        }
        matmul_forward(ex, o.data(), atty.data(), lw.wo, nullptr, M, H * hd, D);
        add_inplace(x.data(), o.data(), (int64_t)M * D, num_.residual);
        rmsnorm_forward(ex, ln.data(), nullptr, x.data(), lw.post_norm, cfg_.rms_norm_eps, M, D);
        if (!cfg_.is_moe_layer(l)) {
            dense_mlp_forward(ex, mlp, ffn.data(), ln.data(), M, lw, cfg_);
        } else {
            moe_forward(ex, moe, ffn.data(), ln.data(), M, lw, cfg_, nullptr, MoeKeep::output);
            ids_out[mi++] = moe.own_ids;
        }
        add_inplace(x.data(), ffn.data(), (int64_t)M * D, num_.residual);
    }
    const int R = (int)want_rows.size();
    std::vector<float> xr((size_t)R * D), lnr((size_t)R * D);
    for (int i = 0; i < R; ++i) std::copy_n(&x[(size_t)want_rows[i] * D], D, &xr[(size_t)i * D]);
    rmsnorm_forward(ex, lnr.data(), nullptr, xr.data(), w_.final_norm, cfg_.rms_norm_eps, R, D);
    logits_.resize((size_t)R * V);
    matmul_forward(num_.head_exec(ex.family), logits_.data(), lnr.data(), head_.data(), nullptr, R, D, V);
    lp.resize((size_t)R * V);
    logsoftmax_forward(lp_ex, lp.data(), logits_.data(), inv_temp, R, V);
    if (lp_raw) {
        lp_raw->resize((size_t)R * V);
        logsoftmax_forward(lp_ex, lp_raw->data(), logits_.data(), 1.0f, R, V);
    }
}

namespace {

struct Sampled {
    int32_t token;
    float lp_processed, lp_raw;
};

// Temperature, then top-k, then top-p over the log-probs lp (already at the
// temperature); the processed log-prob is renormalised over the kept set, and
// left untouched (bit for bit) when nothing was filtered.
Sampled sample_row(const float* lp, const float* lp_raw, int V, const SamplingParams& sp, double u) {
    std::vector<int32_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return lp[a] > lp[b]; });
    int keep = V;
    if (sp.top_k > 0 && sp.top_k < keep) keep = sp.top_k;
    if (sp.top_p < 1.0f) {
        double cum = 0.0;
        for (int i = 0; i < keep; ++i) {
            cum += std::exp((double)lp[order[i]]);
            if (cum >= sp.top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    double kept_mass = 0.0;
    for (int i = 0; i < keep; ++i) kept_mass += std::exp((double)lp[order[i]]);
    double target = u * kept_mass, cum = 0.0;
    int32_t tok = order[keep - 1];
    for (int i = 0; i < keep; ++i) {
        cum += std::exp((double)lp[order[i]]);
        if (target < cum) {
            tok = order[i];
            break;
        }
    }
    float lpp = keep == V ? lp[tok] : (float)((double)lp[tok] - std::log(kept_mass));
    return {tok, lpp, lp_raw[tok]};
}

// The kTopAlternatives most likely tokens of one log-prob row into
// out[kTopAlternatives], most likely first, ties to the lower id; a NaN ranks last.
void top_alternatives(const float* lp, int V, TokenAlternative* out) {
    const auto key = [&](int t) { return std::isnan(lp[t]) ? -std::numeric_limits<float>::infinity() : lp[t]; };
    std::vector<int32_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    const int n = std::min(kTopAlternatives, V);
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [&](int a, int b) { return key(a) > key(b) || (key(a) == key(b) && a < b); });
    for (int i = 0; i < n; ++i) out[i] = {order[i], lp[order[i]]};
    for (int i = n; i < kTopAlternatives; ++i) out[i] = {-1, -std::numeric_limits<float>::infinity()};
}

}  // namespace

struct RolloutEngine::Seq {
    int index = 0;
    int slot = -1;
    int next_pos = 0;  // tokens already in the cache
    bool done = false;
    std::vector<int32_t> pending;  // environment tokens still to feed, in order
    size_t next_pending = 0;
};

RolloutResult RolloutEngine::generate(Family family, const std::vector<std::vector<int32_t>>& prompts,
                                      int max_new_tokens, const SamplingParams& sampling, uint64_t seed, int max_batch,
                                      const Environment& environment) {
    if (device_ ? !device_->has_weights() : !has_weights_)
        throw std::logic_error("rollout generate before load_weights");
    const int N = (int)prompts.size(), V = cfg_.vocab_size, L = cfg_.num_layers, k = cfg_.num_experts_per_tok;
    const int Lm = (int)moe_layers_.size();
    const int kv = cfg_.num_kv_heads * cfg_.head_dim;
    const Exec ex = num_.exec(family), lp_ex = num_.logprob_exec(family);
    const float inv_temp = 1.0f / sampling.temperature;
    const int slots = max_batch > 0 ? std::min(max_batch, N) : N;

    int longest = 0;
    for (const auto& p : prompts) {
        if (p.empty()) throw std::invalid_argument("rollout: empty prompt");
        longest = std::max(longest, (int)p.size());
    }
    t_max_ = longest + max_new_tokens;
    if (t_max_ > cfg_.max_position_embeddings)
        throw std::invalid_argument("rollout: prompt + rollout.max_new_tokens exceeds max_position_embeddings (" +
                                    std::to_string(cfg_.max_position_embeddings) + ")");
    cache_stride_ = (int64_t)t_max_ * kv;
    kv_cache_bytes_ = (size_t)(kv_cache_bytes_per_token(cfg_, num_) * slots * t_max_);
    // Not zeroed: attention reads a slot's positions below its length only,
    // which this batch wrote (a freed slot's next sequence already relies on it).
    if (device_) {
        device_->open_cache(slots, t_max_);
    } else if (!is_fp8(num_.kv_cache)) {
        for (auto* cache : {&kcache_, &vcache_}) {
            cache->assign(L, ActBuffer());
            for (ActBuffer& layer : *cache) layer.resize((size_t)slots * cache_stride_);
        }
    } else {
        for (auto* codes : {&kcode_, &vcode_}) {
            codes->assign(L, ByteBuffer());
            for (ByteBuffer& layer : *codes) layer.resize((size_t)slots * cache_stride_);
        }
        for (auto* scales : {&kscale_, &vscale_}) {
            scales->assign(L, ActBuffer());
            for (ActBuffer& layer : *scales) layer.resize((size_t)slots * t_max_ * cfg_.num_kv_heads);
        }
    }

    RolloutResult res;
    res.sequences.resize(N);
    std::vector<Seq> seqs(N);
    for (int i = 0; i < N; ++i) {
        seqs[i].index = i;
        res.sequences[i].tokens = prompts[i];
        res.sequences[i].prompt_len = (int)prompts[i].size();
        res.sequences[i].expert_ids.assign(Lm, std::vector<int32_t>((size_t)t_max_ * k, -1));
    }
    std::vector<int32_t> free_slots(slots);
    for (int s = 0; s < slots; ++s) free_slots[s] = slots - 1 - s;
    int next_waiting = 0, finished = 0;

    std::vector<float> lp, lp_raw;
    std::vector<float>* raw_rows = inv_temp != 1.0f ? &lp_raw : nullptr;
    std::vector<std::vector<int32_t>> ids;
    std::vector<Sampled> drawn;
    std::vector<TokenAlternative> tops;
    std::vector<char> forced_row;

    auto record_ids = [&](const std::vector<int>& row_seq, const std::vector<int32_t>& row_pos) {
        for (int l = 0; l < (int)ids.size(); ++l)
            for (size_t r = 0; r < row_seq.size(); ++r)
                std::copy_n(&ids[l][r * k], k, &res.sequences[row_seq[r]].expert_ids[l][(size_t)row_pos[r] * k]);
    };
    // Samples one token for each sequence in `who` from its logits row, or
    // feeds its next environment token: one token per step either way, so an
    // environment reply goes through the same decode steps and KV cache as
    // sampled tokens.
    auto sample_rows = [&](const std::vector<int>& who, int forward_rows) {
        const int R = (int)who.size();
        const float* raw = raw_rows ? lp_raw.data() : lp.data();
        // Each row's draw (a hash of seed, sequence and step) and its top
        // alternatives are independent of the others: the threads split the
        // rows. What follows a draw (appending, finishing, the environment)
        // stays in row order on this thread.
        drawn.resize(R);
        tops.resize((size_t)R * kTopAlternatives);
        forced_row.resize(R);
        for (int r = 0; r < R; ++r) forced_row[r] = seqs[who[r]].next_pending < seqs[who[r]].pending.size();
        for_parts(R, 32, [&](size_t r0, size_t r1) {
            for (size_t r = r0; r < r1; ++r) {
                const RolloutSequence& out = res.sequences[who[r]];
                const int step = (int)out.tokens.size() - out.prompt_len;
                if (!forced_row[r])
                    drawn[r] = sample_row(&lp[r * V], raw + r * V, V, sampling,
                                          hash_uniform(seed, (uint64_t)seqs[who[r]].index, (uint64_t)step));
                top_alternatives(&lp[r * V], V, &tops[r * kTopAlternatives]);
            }
        });
        for (int r = 0; r < R; ++r) {
            Seq& s = seqs[who[r]];
            RolloutSequence& out = res.sequences[who[r]];
            const int step = (int)out.tokens.size() - out.prompt_len;
            const bool forced = forced_row[r];
            Sampled smp = drawn[r];
            if (forced) {
                // The log-prob of the forced token at the temperature, what the
                // trainer computes there; top-k/top-p may exclude it. Kept for
                // dumps only: env tokens are masked out of every metric.
                const int32_t t = s.pending[s.next_pending++];
                smp = {t, lp[(size_t)r * V + t], raw[(size_t)r * V + t]};
            }
            out.tokens.push_back(smp.token);
            out.lp_processed.push_back(smp.lp_processed);
            out.lp_raw.push_back(smp.lp_raw);
            out.env.push_back(forced ? 1 : 0);
            out.top.insert(out.top.end(), tops.begin() + (ptrdiff_t)r * kTopAlternatives,
                           tops.begin() + (ptrdiff_t)(r + 1) * kTopAlternatives);
            out.rows.push_back(forward_rows);
            if ((!forced && smp.token == Vocab::eos) || step + 1 >= max_new_tokens) {
                out.finished_by_eos = !forced && smp.token == Vocab::eos;
                s.done = true;
                free_slots.push_back(s.slot);
                ++finished;
            } else if (!forced && environment) {
                const std::span<const int32_t> resp(out.tokens.data() + out.prompt_len, (size_t)step + 1);
                s.pending = environment(s.index, resp);
                s.next_pending = 0;
            }
        }
    };

    std::vector<int> active;
    while (finished < N) {
        // Admit waiting sequences into free slots: one packed prefill.
        std::vector<int> admitted;
        while (next_waiting < N && !free_slots.empty()) {
            Seq& s = seqs[next_waiting];
            s.slot = free_slots.back();
            free_slots.pop_back();
            admitted.push_back(next_waiting++);
        }
        if (!admitted.empty()) {
            std::vector<int32_t> tok, pos, slot, lens, want;
            std::vector<int> row_seq;
            for (int i : admitted) {
                const auto& p = prompts[i];
                for (int t = 0; t < (int)p.size(); ++t) {
                    tok.push_back(p[t]);
                    pos.push_back(t);
                    row_seq.push_back(i);
                }
                slot.push_back(seqs[i].slot);
                lens.push_back((int)p.size());
                want.push_back((int)tok.size() - 1);
                seqs[i].next_pos = (int)p.size();
            }
            forward_rows(ex, tok, pos, slot, lens, want, lp_ex, inv_temp, lp, raw_rows, ids);
            record_ids(row_seq, pos);
            ++res.prefill_calls;
            sample_rows(admitted, (int)tok.size());
            for (int i : admitted)
                if (!seqs[i].done) active.push_back(i);
        }
        active.erase(std::remove_if(active.begin(), active.end(), [&](int i) { return seqs[i].done; }), active.end());
        if (active.empty()) continue;

        // One decode step over every active sequence.
        std::vector<int32_t> tok, pos, slot, want;
        for (int i : active) {
            tok.push_back(res.sequences[i].tokens.back());
            pos.push_back(seqs[i].next_pos);
            slot.push_back(seqs[i].slot);
            want.push_back((int)want.size());
        }
        forward_rows(ex, tok, pos, slot, {}, want, lp_ex, inv_temp, lp, raw_rows, ids);
        record_ids(active, pos);
        res.decode_batch_sizes.push_back((int)active.size());
        for (int i : active) ++seqs[i].next_pos;
        sample_rows(active, (int)tok.size());
    }
    for (auto& s : res.sequences)
        for (auto& layer_ids : s.expert_ids) layer_ids.resize(s.tokens.size() * k);
    // The cache is rebuilt for the next batch: free it now, so the training
    // phase reuses its memory instead of adding to it.
    std::vector<ActBuffer>().swap(kcache_);
    std::vector<ActBuffer>().swap(vcache_);
    std::vector<ByteBuffer>().swap(kcode_);
    std::vector<ByteBuffer>().swap(vcode_);
    std::vector<ActBuffer>().swap(kscale_);
    std::vector<ActBuffer>().swap(vscale_);
    ActBuffer().swap(krows_);
    ActBuffer().swap(vrows_);
    scratch_ = Scratch{};
    std::vector<float>().swap(logits_);
    if (device_) device_->close_cache();
    return res;
}

SeqBatch to_seq_batch(const RolloutResult& r) {
    std::vector<std::vector<int32_t>> seqs;
    std::vector<int32_t> prompt_lens;
    for (const auto& s : r.sequences) {
        seqs.push_back(s.tokens);
        prompt_lens.push_back(s.prompt_len);
    }
    return make_seq_batch(seqs, prompt_lens);
}

std::vector<std::vector<int32_t>> replay_table(const RolloutResult& r, int T, int layers, int k) {
    const int B = (int)r.sequences.size();
    std::vector<std::vector<int32_t>> table(layers, std::vector<int32_t>((size_t)B * T * k, -1));
    for (int l = 0; l < layers; ++l)
        for (int i = 0; i < B; ++i) {
            const auto& ids = r.sequences[i].expert_ids.at(l);
            std::copy(ids.begin(), ids.end(), table[l].begin() + (size_t)i * T * k);
        }
    return table;
}

}  // namespace mlk
