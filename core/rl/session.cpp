#include "core/rl/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <stdexcept>

#include "core/engines/heap.h"
#include "core/model/checkpoint.h"
#include "core/model/vocab.h"
#include "core/rl/advantage.h"
#include "core/rl/policy_loss.h"

namespace mlk {

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::warmup: return "base-policy warm-up";
        case Phase::rollout: return "rollout";
        case Phase::recompute: return "recompute";
        case Phase::training: return "training";
        case Phase::saving: return "saving";
    }
    return "?";
}

double RlSession::metric(const StepRecord& r, const std::string& name) {
    for (const auto& [n, v] : r.metrics)
        if (n == name) return v;
    return std::numeric_limits<double>::quiet_NaN();
}

RlSession::RlSession(const Config& cfg, std::vector<float> params, Store* store, int64_t run_id, std::string ckpt_root,
                     int64_t first_step, AdamW optimizer)
    : cfg_(cfg),
      model_(model_config_of(cfg)),
      layout_(make_param_layout(model_)),
      task_(make_task(enum_name(cfg.task.name), cfg.task.length)),
      params_(std::move(params)),
      opt_(std::move(optimizer)),
      rollout_(model_, device_ops_for(cfg.rollout.device, "rollout.device")),
      train_(model_, device_ops_for(cfg.train.device, "train.device")),
      store_(store),
      run_id_(run_id),
      ckpt_root_(std::move(ckpt_root)),
      next_step_(first_step) {
    if ((int64_t)params_.size() != layout_.total)
        throw std::invalid_argument("RL session: parameters do not match model " + model_.preset_name());
    return_free_heap();
}

void RlSession::checkpoint() {
    if (uncommitted_update_)
        throw std::logic_error("no checkpoint: the weights hold step " + std::to_string(next_step_ + 1) +
                               "'s update, which was never stored");
    if (next_step_ == 0) return;
    const int64_t step = next_step_ - 1;
    const std::string dir = ckpt_root_ + "/step-" + std::to_string(step);
    std::optional<OptimizerStateView> opt;
    if (!opt_.m.empty()) opt.emplace(opt_.step, opt_.m, opt_.v);
    save_checkpoint(dir, model_, layout_, params_.data(), {{"step", step}, {"run_id", run_id_}}, opt);
    if (!store_) return;
    store_->add_checkpoint(run_id_, step, dir);
    prune_checkpoints();
}

// The newest run.keep_last step checkpoints stay, and those after a multiple
// of run.keep_every steps; the base policy (step -1, in the shared cache) is
// never this run's to delete. The row goes first: a reader never finds a
// listed checkpoint without its folder.
void RlSession::prune_checkpoints() {
    std::vector<Checkpoint> own;
    for (Checkpoint& c : store_->checkpoints(run_id_))
        if (c.step >= 0) own.push_back(std::move(c));
    const int keep_last = cfg_.run.keep_last, every = cfg_.run.keep_every;
    for (size_t i = 0; i + keep_last < own.size(); ++i) {
        if (every > 0 && (own[i].step + 1) % every == 0) continue;
        store_->remove_checkpoint(run_id_, own[i].step);
        std::error_code ec;
        std::filesystem::remove_all(own[i].path, ec);
    }
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// Rows [s0, s1) of a routing table, [num_moe_layers][B*T*k].
std::vector<std::vector<int32_t>> sub_table(const std::vector<std::vector<int32_t>>& t, int s0, int s1, int T, int k) {
    std::vector<std::vector<int32_t>> o;
    for (const auto& layer : t) o.emplace_back(layer.begin() + (size_t)s0 * T * k, layer.begin() + (size_t)s1 * T * k);
    return o;
}

// The response-token log-probs of every sequence of a training forward.
std::vector<float> response_logp(const TrainForward& f, const SeqBatch& b) {
    std::vector<float> out;
    for (int i = 0; i < b.B; ++i)
        for (int t = b.prompt_lens[i]; t < b.lengths[i]; ++t) out.push_back(f.logp[(size_t)i * b.T + t]);
    return out;
}

template <class T>
std::vector<T> slice(const std::vector<T>& v, int a, int b) {
    return std::vector<T>(v.begin() + a, v.begin() + b);
}

}  // namespace

StepRecord RlSession::step(const std::function<void(Phase)>& on_phase) {
    const auto phase = [&](Phase p) {
        if (on_phase) on_phase(p);
    };
    if (cfg_.kernels.threads > 0) set_num_threads(cfg_.kernels.threads);
    const int64_t step = next_step_;
    const auto t_step = Clock::now();

    const std::vector<Prompt> prompts = sample_prompts(step);
    std::vector<std::vector<int32_t>> inputs;
    for (const Prompt& p : prompts)
        for (int j = 0; j < cfg_.rl.samples_per_prompt; ++j) inputs.push_back(p.tokens);
    // One mini-step trains on the recompute's activations; several run a
    // forward of their own on each slice, so the recompute keeps none.
    const Measurement m = measure(
        cfg_, rollout_, train_, params_, inputs, hash_u64((uint64_t)cfg_.seed, 0x9a0be, (uint64_t)step),
        cfg_.rl.mini_step_count() == 1,
        [&](MeasurePhase p) { phase(p == MeasurePhase::rollout ? Phase::rollout : Phase::recompute); },
        task_environment(*task_, prompts, cfg_.rl.samples_per_prompt));
    const Scores scores = score(prompts, m.roll);
    // recompute = standard PPO: no correction applied; the ratios are still reported.
    const CorrectionResult corr = compute_correction(correction_settings(), m.tokens.lp_train, m.tokens.lp_roll,
                                                     m.tokens.valid, m.tokens.seq_offsets);
    phase(Phase::training);
    uncommitted_update_ = true;
    const TrainOutcome trained = train_policy(m, scores, corr);

    phase(Phase::saving);
    const StepRecord rec = record(step, prompts, m, scores, corr, trained, ms_since(t_step));
    if (store_) store_->append_step(run_id_, rec);
    ++next_step_;
    uncommitted_update_ = false;
    if (next_step_ % cfg_.run.checkpoint_every == 0) checkpoint();
    return rec;
}

std::vector<Prompt> RlSession::sample_prompts(int64_t step) const {
    const int B = cfg_.rl.prompts_per_step;
    const uint64_t prompt_stream = hash_u64((uint64_t)cfg_.seed, 0x5eed);
    std::vector<Prompt> prompts;
    for (int p = 0; p < B; ++p) prompts.push_back(task_->sample(prompt_stream, (uint64_t)step * B + p));
    return prompts;
}

RlSession::Scores RlSession::score(const std::vector<Prompt>& prompts, const RolloutResult& roll) const {
    const int n = cfg_.rl.samples_per_prompt, S = (int)roll.sequences.size();
    Scores s;
    s.rewards.resize(S);
    s.exact.resize(S);
    double resp_len = 0;
    for (int i = 0; i < S; ++i) {
        const auto& seq = roll.sequences[i];
        std::vector<int32_t> resp(seq.tokens.begin() + seq.prompt_len, seq.tokens.end());
        s.rewards[i] = task_->reward(prompts[i / n], resp, cfg_.task.partial_credit);
        s.exact[i] = task_->reward(prompts[i / n], resp, false) == 1.0 ? 1.0 : 0.0;
        resp_len += (double)seq.sampled_tokens();  // the policy's tokens, not tool output
    }
    s.mean_length = resp_len / S;
    AdvantageSettings as;
    as.estimator = cfg_.rl.estimator;
    as.group_size = n;
    as.grpo_std_normalize = cfg_.rl.grpo_std_norm;
    s.advantages = compute_advantages(s.rewards, as);
    return s;
}

CorrectionSettings RlSession::correction_settings() const {
    return cfg_.rl.old_policy == OldPolicyMode::recompute ? CorrectionSettings{} : cfg_.correction;
}

// Mini-steps over contiguous slices of whole prompt groups. A single one
// trains on the recompute's activations; with several, each slice runs a
// forward of its own (after the first the policy has moved: off-policy). In
// bypass mode the weights follow the current policy.
RlSession::TrainOutcome RlSession::train_policy(const Measurement& m, const Scores& scores,
                                                const CorrectionResult& corr) {
    const auto t0 = Clock::now();
    const int B = cfg_.rl.prompts_per_step, n = cfg_.rl.samples_per_prompt;
    const AdamWSettings aw{cfg_.optim.lr,  cfg_.optim.beta1,        cfg_.optim.beta2,
                           cfg_.optim.eps, cfg_.optim.weight_decay, cfg_.optim.grad_clip};
    const int mini = cfg_.rl.mini_step_count();
    double loss_sum = 0, clip_sum = 0, norm_sum = 0, kl_sum = 0, lr_used = 0;
    RouteCount routes;
    for (int i = 0; i < mini; ++i) {
        MiniStep ms;
        ms.index = i, ms.count = mini;
        ms.s0 = (int)((int64_t)B * i / mini) * n, ms.s1 = (int)((int64_t)B * (i + 1) / mini) * n;
        ms.t0 = m.tokens.seq_offsets[ms.s0], ms.t1 = m.tokens.seq_offsets[ms.s1];
        ms.batch = mini == 1 ? m.batch : sub_batch(m.batch, ms.s0, ms.s1);
        const TrainForward& fwd = ministep_forward(m, ms, routes);
        const PolicyLossResult pl = ministep_loss(m, scores, corr, ms, fwd);
        const SeqBatch& mb = ms.batch;
        std::vector<float> dlogp((size_t)mb.B * mb.T, 0.0f);
        size_t ti = 0;
        for (int b = 0; b < mb.B; ++b)
            for (int t = mb.prompt_lens[b]; t < mb.lengths[b]; ++t) dlogp[(size_t)b * mb.T + t] = (float)pl.grad[ti++];
        grads_ = PagedFloats(layout_.total);
        train_.backward(grads_, dlogp);
        lr_used = warmup_lr(cfg_.optim.lr, cfg_.optim.warmup_steps, opt_.step);
        // AdamW makes its moments at its first update (8 bytes a parameter):
        // the heap's free pages go back before, not under them.
        if (opt_.m.empty()) return_free_heap();
        norm_sum += opt_.update(params_, grads_.span(), aw, lr_used);
        loss_sum += pl.loss;
        clip_sum += pl.clip_fraction;
        kl_sum += pl.ppo_kl;
    }
    train_.release_activations();
    // The gradients live in this phase only: freed, they leave the next
    // rollout's weight copy and KV cache room (moe-deep: 59 MB of the peak).
    grads_ = PagedFloats();
    const int64_t compared = routes.flipped + routes.unflipped;
    const double ministep_flips = compared ? (double)routes.flipped / (double)compared : 0.0;
    return {loss_sum / mini, clip_sum / mini, norm_sum / mini, kl_sum / mini, lr_used, ministep_flips, ms_since(t0)};
}

// The recompute's forward for a single mini-step; else a fresh forward of the
// slice, routed as routing replay says (R3: the rollout's routes, R2: the
// old-policy forward's own), counting the routes the policy's drift flipped.
const TrainForward& RlSession::ministep_forward(const Measurement& m, const MiniStep& ms, RouteCount& routes) {
    if (ms.count == 1) return m.train;
    const int k = model_.num_experts_per_tok;
    const bool moe = model_.num_moe_layers() > 0;
    const bool r2 = cfg_.moe.routing_replay == RoutingReplay::R2;
    std::vector<std::vector<int32_t>> replay, old_routes;
    // The old-policy routes: R2's replay, and what mini-steps 2..n are compared with.
    if (moe && (r2 || ms.index > 0)) old_routes = sub_table(m.train.used_expert_ids, ms.s0, ms.s1, m.batch.T, k);
    if (!m.replay.empty()) replay = sub_table(m.replay, ms.s0, ms.s1, m.batch.T, k);
    if (r2) replay = old_routes;
    const float inv_temp = 1.0f / (float)cfg_.rollout.temperature;
    const TrainForward& fwd = train_.forward(kernel_family(cfg_), train_numerics(cfg_), params_, ms.batch, inv_temp,
                                             replay.empty() ? nullptr : &replay);
    if (moe && ms.index > 0) {
        const RouterDiff rd =
            table_routing_diff(old_routes, fwd.used_expert_ids, ms.batch.T, k, m.tokens, ms.t0, ms.t1, ms.s0);
        for (size_t d = 0; d < rd.histogram.size(); ++d)
            (d ? routes.flipped : routes.unflipped) += (int64_t)rd.histogram[d];
    }
    return fwd;
}

// The policy loss of one mini-step's slice against its anchor: the training
// engine's old log-probs, or the rollout's in bypass mode, where the
// correction follows the current policy after the first mini-step.
PolicyLossResult RlSession::ministep_loss(const Measurement& m, const Scores& scores, const CorrectionResult& corr,
                                          const MiniStep& ms, const TrainForward& fwd) const {
    const TokenView& tv = m.tokens;
    const bool bypass = cfg_.rl.old_policy == OldPolicyMode::bypass;
    const std::vector<float>& lp_anchor = bypass ? tv.lp_roll : tv.lp_train;
    const PolicyLossSettings pls{cfg_.rl.loss,         cfg_.rl.eps_low,       cfg_.rl.eps_high,
                                 cfg_.rl.gspo_eps_low, cfg_.rl.gspo_eps_high, cfg_.rl.loss_agg};
    const std::vector<float> lp_theta = response_logp(fwd, ms.batch);
    std::vector<int> offs = slice(tv.seq_offsets, ms.s0, ms.s1 + 1);
    for (int& o : offs) o -= ms.t0;
    std::vector<double> w = slice(corr.weights, ms.t0, ms.t1);
    std::vector<uint8_t> keep = slice(corr.keep, ms.t0, ms.t1);
    if (bypass && ms.index > 0) {
        const std::span<const float> roll_lp(tv.lp_roll.data() + ms.t0, ms.t1 - ms.t0);
        CorrectionResult c =
            compute_correction(correction_settings(), lp_theta, roll_lp, slice(tv.valid, ms.t0, ms.t1), offs);
        w = std::move(c.weights);
        keep = std::move(c.keep);
    }
    const std::span<const float> anchor(lp_anchor.data() + ms.t0, ms.t1 - ms.t0);
    const std::span<const double> adv(scores.advantages.data() + ms.s0, ms.s1 - ms.s0);
    return policy_loss(pls, lp_theta, anchor, adv, w, keep, offs);
}

namespace {

// Reward mean and spread, exact-match accuracy, and mean entropy per response token.
struct BatchScore {
    double reward_mean = 0, reward_std = 0, accuracy = 0, entropy = 0;
};
BatchScore batch_score(const std::vector<double>& rewards, const std::vector<double>& exact,
                       const std::vector<float>& entropy, const std::vector<uint8_t>& valid) {
    const double S = (double)rewards.size();
    BatchScore b;
    for (size_t i = 0; i < rewards.size(); ++i) {
        b.reward_mean += rewards[i] / S;
        b.accuracy += exact[i] / S;
    }
    double var = 0;
    for (double r : rewards) var += (r - b.reward_mean) * (r - b.reward_mean) / S;
    b.reward_std = std::sqrt(var);
    size_t n = 0;
    for (size_t t = 0; t < entropy.size(); ++t)
        if (valid[t]) b.entropy += entropy[t], ++n;
    if (n) b.entropy /= (double)n;
    return b;
}

void set_mismatch(StepMetrics& v, const MismatchMetrics& mm, const RouterDiff& rd) {
    v.k3_kl = mm.k3_kl, v.kl = mm.kl, v.logp_abs_diff_mean = mm.logp_abs_diff_mean;
    v.logp_abs_diff_max = mm.logp_abs_diff_max;
    v.f_1_1 = mm.f_1_1, v.f_1_5 = mm.f_1_5, v.f_2 = mm.f_2, v.f_5 = mm.f_5, v.f_10 = mm.f_10;
    v.chi2_token = mm.chi2_token, v.chi2_seq = mm.chi2_seq;
    v.training_ppl = mm.training_ppl, v.rollout_ppl = mm.rollout_ppl, v.log_ppl_diff = mm.log_ppl_diff;
    v.log_ppl_abs_diff = mm.log_ppl_abs_diff, v.ppl_ratio = mm.ppl_ratio;
    v.tv_token = mm.tv_token, v.tv_seq = mm.tv_seq;
    static_assert(std::size(kProbBucketMetrics) == kProbBuckets);
    for (int b = 0; b < kProbBuckets; ++b) {
        v.*find_metric(kProbBucketMetrics[b].count)->field = (double)mm.buckets[b].count;
        v.*find_metric(kProbBucketMetrics[b].frac)->field = mm.buckets[b].frac;
        v.*find_metric(kProbBucketMetrics[b].abs_diff)->field = mm.buckets[b].abs_diff_mean;
        v.*find_metric(kProbBucketMetrics[b].k3_share)->field = mm.buckets[b].k3_share;
    }
    v.router_diff_router = rd.router_level, v.router_diff_token = rd.token_level;
    v.router_diff_sequence = rd.sequence_level;
}

void set_correction(StepMetrics& v, const CorrectionStats& cs) {
    v.ess = cs.ess, v.is_weight_mean = cs.is_weight_mean, v.is_weight_min = cs.is_weight_min;
    v.is_weight_max = cs.is_weight_max;
    v.truncated_fraction = cs.truncated_high_fraction, v.truncated_low_fraction = cs.truncated_low_fraction;
    v.masked_fraction = cs.masked_fraction, v.rejected_token_fraction = cs.rejected_token_fraction;
    v.rejected_seq_fraction = cs.rejected_seq_fraction, v.vetoed_seq_fraction = cs.vetoed_seq_fraction;
    v.kept_token_fraction = cs.kept_token_fraction;
}

// A bounded, evenly strided sample of token pairs for the scatter plot, plus
// the step's worst tokens (so an outlier at a spike is always drawn, and is
// one "why this token?" explains), in token order; the F(t) curve and the
// router-flip histogram. Tool output is no sample.
void add_distributions(StepRecord& rec, const Measurement& m) {
    const TokenView& tv = m.tokens;
    std::vector<size_t> valid;
    for (size_t i = 0; i < tv.valid.size(); ++i)
        if (tv.valid[i]) valid.push_back(i);
    const size_t N = valid.size(), cap = 1024;
    const size_t stride = N > cap ? (N + cap - 1) / cap : 1;
    std::vector<size_t> picked = worst_token_indices(m);
    for (size_t v = 0; v < N; v += stride) picked.push_back(valid[v]);
    std::sort(picked.begin(), picked.end());
    picked.erase(std::unique(picked.begin(), picked.end()), picked.end());
    for (size_t idx = 0; idx < picked.size(); ++idx) {
        const size_t i = picked[idx];
        rec.token_samples.push_back({(int32_t)idx, tv.lp_roll[i], tv.lp_train[i], tv.seq[i],
                                     tv.pos[i] - m.batch.prompt_lens[tv.seq[i]], tv.token[i]});
    }
    const MismatchMetrics& mm = m.mismatch;
    for (size_t i = 0; i < mm.f_grid.size(); ++i) rec.ft_curve.push_back({mm.f_grid[i], mm.f_curve[i]});
    const auto& hist = m.router.histogram;
    for (size_t d = 0; d < hist.size(); ++d) rec.router_hist.push_back({(int32_t)d, (int64_t)hist[d]});
}

// Text samples: the first sample of up to four prompts, every token with both
// log-probs and the number of router flips at the position that predicted it.
void add_text_samples(StepRecord& rec, const std::vector<Prompt>& prompts, const Measurement& m,
                      const std::vector<double>& rewards, int samples_per_prompt, bool moe) {
    const TokenView& tv = m.tokens;
    const int n = samples_per_prompt;
    for (int p = 0; p < std::min((int)prompts.size(), 4); ++p) {
        const int i = p * n;
        const auto& s = m.roll.sequences[i];
        nlohmann::json toks = nlohmann::json::array();
        for (int t = tv.seq_offsets[i]; t < tv.seq_offsets[i + 1]; ++t) {
            const int flips = moe ? m.router.per_token_sum[t] : 0;  // routing_diff: one entry per response token
            toks.push_back({{"id", tv.token[t]},
                            {"text", Vocab::token_text(tv.token[t])},
                            {"lp_roll", tv.lp_roll[t]},
                            {"lp_train", tv.lp_train[t]},
                            {"flips", flips}});
            if (!tv.valid[t]) toks.back()["env"] = true;  // inserted by the environment
        }
        std::vector<int32_t> resp(s.tokens.begin() + s.prompt_len, s.tokens.end());
        rec.text_samples.push_back({p, prompts[p].text, Vocab::decode(resp), rewards[i], toks.dump()});
    }
}

}  // namespace

StepRecord RlSession::record(int64_t step, const std::vector<Prompt>& prompts, const Measurement& m,
                             const Scores& scores, const CorrectionResult& corr, const TrainOutcome& trained,
                             double step_ms) const {
    const BatchScore b = batch_score(scores.rewards, scores.exact, m.tokens.entropy, m.tokens.valid);
    double total_tokens = 0;
    for (int l : m.batch.lengths) total_tokens += l;

    StepMetrics v;
    v.reward_mean = b.reward_mean, v.reward_std = b.reward_std, v.accuracy = b.accuracy;
    v.response_length = scores.mean_length, v.entropy = b.entropy;
    set_mismatch(v, m.mismatch, m.router);
    set_correction(v, corr.stats);
    v.grad_norm = trained.grad_norm, v.policy_loss = trained.loss;
    v.clip_fraction = trained.clip_fraction, v.ppo_kl = trained.ppo_kl, v.lr = trained.lr;
    v.router_diff_ministep = trained.ministep_flips;
    v.rollout_ms = m.rollout_ms, v.recompute_ms = m.recompute_ms, v.train_ms = trained.ms;
    v.tokens_per_s = step_ms > 0 ? total_tokens / (step_ms / 1000.0) : 0.0;

    StepRecord rec;
    rec.step = step;
    rec.metrics = to_named_values(v);
    add_distributions(rec, m);
    add_text_samples(rec, prompts, m, scores.rewards, cfg_.rl.samples_per_prompt, model_.num_moe_layers() > 0);
    rec.worst_tokens_json = worst_tokens_json(m.worst);
    return rec;
}

}  // namespace mlk
