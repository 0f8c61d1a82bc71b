#include "core/rl_loop.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/advantage.h"
#include "core/checkpoint.h"
#include "core/correction.h"
#include "core/metrics.h"
#include "core/model.h"
#include "core/policy_loss.h"
#include "core/probe.h"
#include "core/vocab.h"

namespace mlk {

namespace fs = std::filesystem;

const std::vector<std::string>& step_metric_names() {
    static const std::vector<std::string> names = {
        "reward_mean", "reward_std", "accuracy", "response_length",
        "k3_kl", "kl", "logp_abs_diff_mean", "logp_abs_diff_max",
        "F@1.1", "F@1.5", "F@2", "F@5", "F@10",
        "chi2_token", "chi2_seq", "training_ppl", "rollout_ppl", "log_ppl_diff", "log_ppl_abs_diff", "ppl_ratio",
        "ess", "is_weight_mean", "is_weight_min", "is_weight_max",
        "truncated_fraction", "truncated_low_fraction", "masked_fraction", "rejected_token_fraction",
        "rejected_seq_fraction", "vetoed_seq_fraction", "kept_token_fraction",
        "entropy", "grad_norm", "policy_loss", "clip_fraction", "ppo_kl",
        "router_diff_router", "router_diff_token", "router_diff_sequence",
        "lr", "rollout_ms", "recompute_ms", "train_ms", "tokens_per_s"};
    return names;
}

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

std::string run_checkpoint_root(const std::string& db_path, int64_t run_id) {
    return db_path + ".ckpt/run-" + std::to_string(run_id);
}

double RlSession::metric(const StepRecord& r, const std::string& name) {
    for (const auto& [n, v] : r.metrics)
        if (n == name) return v;
    return std::numeric_limits<double>::quiet_NaN();
}

RlSession::RlSession(const Config& cfg, std::vector<float> params, Store* store, int64_t run_id,
                     std::string ckpt_root, int64_t first_step, AdamW optimizer)
    : cfg_(cfg),
      model_(model_config_of(cfg)),
      layout_(make_param_layout(model_)),
      task_(make_task(enum_name(cfg.task.name), cfg.task.length)),
      params_(std::move(params)),
      opt_(std::move(optimizer)),
      rollout_(model_),
      train_(model_),
      store_(store),
      run_id_(run_id),
      ckpt_root_(std::move(ckpt_root)),
      next_step_(first_step) {
    if ((int64_t)params_.size() != layout_.total)
        throw std::invalid_argument("RL session: parameters do not match model " + model_.preset_name());
}

void RlSession::checkpoint() {
    if (next_step_ == 0) return;
    const int64_t step = next_step_ - 1;
    const std::string dir = ckpt_root_ + "/step-" + std::to_string(step);
    OptimizerState st{opt_.step, opt_.m, opt_.v};
    save_checkpoint(dir, model_, layout_, params_.data(), {{"step", step}, {"run_id", run_id_}},
                    opt_.m.empty() ? nullptr : &st);
    if (store_) store_->add_checkpoint(run_id_, step, dir);
}

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Sequences [s0, s1) of a padded batch as a batch of their own.
SeqBatch sub_batch(const SeqBatch& b, int s0, int s1) {
    SeqBatch o;
    o.B = s1 - s0;
    o.T = b.T;
    o.tokens.assign(b.tokens.begin() + (size_t)s0 * b.T, b.tokens.begin() + (size_t)s1 * b.T);
    o.lengths.assign(b.lengths.begin() + s0, b.lengths.begin() + s1);
    o.prompt_lens.assign(b.prompt_lens.begin() + s0, b.prompt_lens.begin() + s1);
    return o;
}

std::vector<std::vector<int32_t>> sub_table(const std::vector<std::vector<int32_t>>& t, int s0, int s1, int T, int k) {
    std::vector<std::vector<int32_t>> o;
    for (const auto& layer : t)
        o.emplace_back(layer.begin() + (size_t)s0 * T * k, layer.begin() + (size_t)s1 * T * k);
    return o;
}

// The response-token log-probs of sequences [s0, s1) from a training forward.
std::vector<float> response_logp(const TrainForward& f, const SeqBatch& b, int s0, int s1) {
    std::vector<float> out;
    for (int i = s0; i < s1; ++i)
        for (int t = b.prompt_lens[i]; t < b.lengths[i]; ++t) out.push_back(f.logp[(size_t)(i - s0) * b.T + t]);
    return out;
}

}  // namespace

StepRecord RlSession::step(const std::function<void(Phase)>& on_phase) {
    auto phase = [&](Phase p) {
        if (on_phase) on_phase(p);
    };
    const int64_t step = next_step_;
    const int B = cfg_.rl.prompts_per_step, n = cfg_.rl.samples_per_prompt, S = B * n;
    const bool moe = model_.kind == ModelKind::moe;
    const int L = model_.num_layers, k = model_.num_experts_per_tok;
    const Family fam = cfg_.kernels.batch_invariant ? Family::batch_invariant : Family::fast;
    const float inv_temp = 1.0f / (float)cfg_.rollout.temperature;
    if (cfg_.kernels.threads > 0) set_num_threads(cfg_.kernels.threads);
    const auto t_step = Clock::now();

    // 1-2. Prompts and rollout with the trainer's weights cast to the rollout precision.
    phase(Phase::rollout);
    auto t0 = Clock::now();
    std::vector<Prompt> prompts;
    std::vector<std::vector<int32_t>> inputs;
    const uint64_t prompt_stream = hash_u64((uint64_t)cfg_.seed, 0x5eed);
    for (int p = 0; p < B; ++p) {
        prompts.push_back(task_->sample(prompt_stream, (uint64_t)step * B + p));
        for (int j = 0; j < n; ++j) inputs.push_back(prompts.back().tokens);
    }
    rollout_.load_weights(params_, cfg_.rollout.precision);
    SamplingParams sp{(float)cfg_.rollout.temperature, cfg_.rollout.top_k, (float)cfg_.rollout.top_p};
    RolloutResult roll = rollout_.generate(fam, inputs, cfg_.rollout.max_new_tokens, sp,
                                           hash_u64((uint64_t)cfg_.seed, 0x9a0be, (uint64_t)step),
                                           cfg_.rollout.max_batch);
    const double rollout_ms = ms_since(t0);

    // 3. Rewards and advantages.
    std::vector<double> rewards(S), exact(S);
    double resp_len = 0;
    for (int i = 0; i < S; ++i) {
        const auto& s = roll.sequences[i];
        std::vector<int32_t> resp(s.tokens.begin() + s.prompt_len, s.tokens.end());
        rewards[i] = task_->reward(prompts[i / n], resp, cfg_.task.partial_credit);
        exact[i] = task_->reward(prompts[i / n], resp, false) == 1.0 ? 1.0 : 0.0;
        resp_len += (double)resp.size();
    }
    AdvantageSettings as;
    as.estimator = cfg_.rl.estimator;
    as.group_size = n;
    as.grpo_std_normalize = cfg_.rl.grpo_std_norm;
    std::vector<double> adv = compute_advantages(rewards, as);

    // 4-5. Training-engine recompute (the "old" policy) and mismatch metrics.
    phase(Phase::recompute);
    t0 = Clock::now();
    SeqBatch batch = to_seq_batch(roll);
    std::vector<std::vector<int32_t>> replay;
    if (moe && cfg_.moe.routing_replay == RoutingReplay::R3) replay = replay_table(roll, batch.T, L, k);
    const Exec train_ex{fam, cfg_.train.precision};
    TrainForward old = train_.forward(train_ex, params_, batch, inv_temp, replay.empty() ? nullptr : &replay);
    const double recompute_ms = ms_since(t0);
    TokenView tv = gather_tokens(roll, batch, old, cfg_.rollout.logprobs);
    MismatchMetrics mm = mismatch_metrics(tv.lp_train, tv.lp_roll, tv.valid, tv.seq_offsets);
    RouterDiff rd;
    if (moe) rd = routing_diff(roll, batch, old, L, k);

    // 6. Correction weights. recompute = standard PPO: no correction applied,
    // the ratios are still reported (metrics only).
    CorrectionSettings corr_settings = cfg_.correction;
    if (cfg_.rl.old_policy == OldPolicyMode::recompute) corr_settings = CorrectionSettings{};
    const std::vector<float>& lp_old = tv.lp_train;
    CorrectionResult corr = compute_correction(corr_settings, lp_old, tv.lp_roll, tv.valid, tv.seq_offsets);
    const std::vector<float>& lp_anchor = cfg_.rl.old_policy == OldPolicyMode::bypass ? tv.lp_roll : lp_old;

    // 7. Mini-steps over contiguous slices of whole prompt groups.
    phase(Phase::training);
    t0 = Clock::now();
    PolicyLossSettings pls;
    pls.type = cfg_.rl.loss;
    pls.eps_low = cfg_.rl.eps_low;
    pls.eps_high = cfg_.rl.eps_high;
    pls.gspo_eps_low = cfg_.rl.gspo_eps_low;
    pls.gspo_eps_high = cfg_.rl.gspo_eps_high;
    pls.aggregation = cfg_.rl.loss_agg;
    AdamWSettings aw;
    aw.lr = cfg_.optim.lr;
    aw.beta1 = cfg_.optim.beta1;
    aw.beta2 = cfg_.optim.beta2;
    aw.eps = cfg_.optim.eps;
    aw.weight_decay = cfg_.optim.weight_decay;
    aw.grad_clip = cfg_.optim.grad_clip;
    const int mini = std::min(cfg_.rl.mini_steps, B);
    double loss_sum = 0, clip_sum = 0, norm_sum = 0, kl_sum = 0, lr_used = 0;
    for (int ms = 0; ms < mini; ++ms) {
        const int s0 = (int)((int64_t)B * ms / mini) * n, s1 = (int)((int64_t)B * (ms + 1) / mini) * n;
        const int t0i = tv.seq_offsets[s0], t1i = tv.seq_offsets[s1];
        SeqBatch mb = mini == 1 ? batch : sub_batch(batch, s0, s1);
        const TrainForward* fwd = &old;  // one mini-step: the recompute's activations are current
        TrainForward cur;
        if (mini > 1) {
            std::vector<std::vector<int32_t>> mreplay;
            if (!replay.empty()) mreplay = sub_table(replay, s0, s1, batch.T, k);
            cur = train_.forward(train_ex, params_, mb, inv_temp, mreplay.empty() ? nullptr : &mreplay);
            fwd = &cur;
        }
        std::vector<float> lp_theta = response_logp(*fwd, mb, 0, s1 - s0);
        std::vector<int> offs(tv.seq_offsets.begin() + s0, tv.seq_offsets.begin() + s1 + 1);
        for (int& o : offs) o -= t0i;
        std::span<const float> anchor(lp_anchor.data() + t0i, t1i - t0i);
        std::vector<double> w(corr.weights.begin() + t0i, corr.weights.begin() + t1i);
        std::vector<uint8_t> keep(corr.keep.begin() + t0i, corr.keep.begin() + t1i);
        if (cfg_.rl.old_policy == OldPolicyMode::bypass && ms > 0) {
            // Bypass: the weights follow the current policy vs the rollout.
            std::span<const float> roll_lp(tv.lp_roll.data() + t0i, t1i - t0i);
            std::vector<uint8_t> valid(tv.valid.begin() + t0i, tv.valid.begin() + t1i);
            CorrectionResult c = compute_correction(corr_settings, lp_theta, roll_lp, valid, offs);
            w = c.weights;
            keep = c.keep;
        }
        std::span<const double> sadv(adv.data() + s0, s1 - s0);
        PolicyLossResult pl = policy_loss(pls, lp_theta, anchor, sadv, w, keep, offs);
        std::vector<float> dlogp((size_t)mb.B * mb.T, 0.0f);
        size_t ti = 0;
        for (int i = 0; i < mb.B; ++i)
            for (int t = mb.prompt_lens[i]; t < mb.lengths[i]; ++t) dlogp[(size_t)i * mb.T + t] = (float)pl.grad[ti++];
        grads_.assign(layout_.total, 0.0f);
        train_.backward(grads_, dlogp, nullptr);
        lr_used = warmup_lr(cfg_.optim.lr, cfg_.optim.warmup_steps, opt_.step);
        norm_sum += opt_.update(params_, grads_, aw, lr_used);
        loss_sum += pl.loss;
        clip_sum += pl.clip_fraction;
        kl_sum += pl.ppo_kl;
    }
    const double train_ms = ms_since(t0);

    // 8. The step's record: metrics, drill-down samples, one transaction.
    phase(Phase::saving);
    StepRecord rec;
    rec.step = step;
    double rmean = 0, rvar = 0, acc = 0, ent = 0;
    for (int i = 0; i < S; ++i) {
        rmean += rewards[i] / S;
        acc += exact[i] / S;
    }
    for (int i = 0; i < S; ++i) rvar += (rewards[i] - rmean) * (rewards[i] - rmean) / S;
    for (float e : tv.entropy) ent += e;
    if (!tv.entropy.empty()) ent /= (double)tv.entropy.size();
    double total_tokens = 0;
    for (int l : batch.lengths) total_tokens += l;
    const double step_ms = ms_since(t_step);
    const CorrectionStats& cs = corr.stats;
    auto add = [&](const char* name, double v) { rec.metrics.emplace_back(name, v); };
    add("reward_mean", rmean);
    add("reward_std", std::sqrt(rvar));
    add("accuracy", acc);
    add("response_length", resp_len / S);
    add("k3_kl", mm.k3_kl);
    add("kl", mm.kl);
    add("logp_abs_diff_mean", mm.logp_abs_diff_mean);
    add("logp_abs_diff_max", mm.logp_abs_diff_max);
    add("F@1.1", mm.f_1_1);
    add("F@1.5", mm.f_1_5);
    add("F@2", mm.f_2);
    add("F@5", mm.f_5);
    add("F@10", mm.f_10);
    add("chi2_token", mm.chi2_token);
    add("chi2_seq", mm.chi2_seq);
    add("training_ppl", mm.training_ppl);
    add("rollout_ppl", mm.rollout_ppl);
    add("log_ppl_diff", mm.log_ppl_diff);
    add("log_ppl_abs_diff", mm.log_ppl_abs_diff);
    add("ppl_ratio", mm.ppl_ratio);
    add("ess", cs.ess);
    add("is_weight_mean", cs.is_weight_mean);
    add("is_weight_min", cs.is_weight_min);
    add("is_weight_max", cs.is_weight_max);
    add("truncated_fraction", cs.truncated_high_fraction);
    add("truncated_low_fraction", cs.truncated_low_fraction);
    add("masked_fraction", cs.masked_fraction);
    add("rejected_token_fraction", cs.rejected_token_fraction);
    add("rejected_seq_fraction", cs.rejected_seq_fraction);
    add("vetoed_seq_fraction", cs.vetoed_seq_fraction);
    add("kept_token_fraction", cs.kept_token_fraction);
    add("entropy", ent);
    add("grad_norm", norm_sum / mini);
    add("policy_loss", loss_sum / mini);
    add("clip_fraction", clip_sum / mini);
    add("ppo_kl", kl_sum / mini);
    add("router_diff_router", rd.router_level);
    add("router_diff_token", rd.token_level);
    add("router_diff_sequence", rd.sequence_level);
    add("lr", lr_used);
    add("rollout_ms", rollout_ms);
    add("recompute_ms", recompute_ms);
    add("train_ms", train_ms);
    add("tokens_per_s", step_ms > 0 ? total_tokens / (step_ms / 1000.0) : 0.0);

    // A bounded, evenly strided sample of token pairs for the scatter plot.
    const size_t N = tv.lp_roll.size(), cap = 1024;
    const size_t stride = N > cap ? (N + cap - 1) / cap : 1;
    for (size_t i = 0, idx = 0; i < N; i += stride, ++idx)
        rec.token_samples.push_back({(int32_t)idx, tv.lp_roll[i], tv.lp_train[i], tv.seq[i],
                                     tv.pos[i] - batch.prompt_lens[tv.seq[i]], tv.token[i]});
    for (size_t i = 0; i < mm.f_grid.size(); ++i) rec.ft_curve.push_back({mm.f_grid[i], mm.f_curve[i]});
    for (size_t d = 0; d < rd.histogram.size(); ++d) rec.router_hist.push_back({(int32_t)d, (int64_t)rd.histogram[d]});

    // Text samples: the first sample of up to four prompts, every token with
    // both log-probs and the number of router flips at its position.
    std::vector<int> rd_offset(S + 1, 0);  // routing_diff walks every position of every sequence
    for (int i = 0; i < S; ++i) rd_offset[i + 1] = rd_offset[i] + (int)roll.sequences[i].tokens.size();
    for (int p = 0; p < std::min(B, 4); ++p) {
        const int i = p * n;
        const auto& s = roll.sequences[i];
        nlohmann::json toks = nlohmann::json::array();
        for (int t = tv.seq_offsets[i]; t < tv.seq_offsets[i + 1]; ++t) {
            int flips = moe ? rd.per_token_sum[rd_offset[i] + tv.pos[t] - 1] : 0;  // routing that predicted it
            toks.push_back({{"id", tv.token[t]},
                            {"text", Vocab::token_text(tv.token[t])},
                            {"lp_roll", tv.lp_roll[t]},
                            {"lp_train", tv.lp_train[t]},
                            {"flips", flips}});
        }
        std::vector<int32_t> resp(s.tokens.begin() + s.prompt_len, s.tokens.end());
        rec.text_samples.push_back({p, prompts[p].text, Vocab::decode(resp), rewards[i], toks.dump()});
    }
    if (store_) store_->append_step(run_id_, rec);
    ++next_step_;
    if (next_step_ % cfg_.run.checkpoint_every == 0) checkpoint();
    return rec;
}

}  // namespace mlk
