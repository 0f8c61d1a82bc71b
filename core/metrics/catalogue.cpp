#include "core/metrics/catalogue.h"

#include <algorithm>
#include <set>

namespace mlk {

namespace {

using B = Better;
using K = MetricKind;
using A = Axis;
using S = StepMetrics;

// clang-format off
const std::vector<MetricInfo> kCatalogue = {
    // name, title, meaning, formula, unit, better, kind, axis, key chart, group, field
    {"reward_mean", "Reward (batch mean)", "Mean verifiable reward of the step's responses.",
     "mean over sequences of the task reward", "", B::higher, K::reward, A::linear, true, "Reward", &S::reward_mean},
    {"reward_std", "Reward spread", "Standard deviation of the responses' rewards (population).",
     "sqrt(mean((r - mean r)^2))", "", B::none, K::reward, A::linear, false, "Reward", &S::reward_std},
    {"accuracy", "Accuracy (exact match)", "Share of responses that are exactly right, whatever the partial-credit setting.",
     "mean over sequences of [reward without partial credit == 1]", "", B::higher, K::fraction, A::linear, false,
     "Reward", &S::accuracy},
    {"response_length", "Response length", "Mean number of generated tokens per response (eos included).",
     "mean over sequences of the generated token count", "tokens", B::none, K::length, A::linear, false, "Reward", &S::response_length},

    {"k3_kl", "K3 KL (rollout \u2016 train)",
     "Estimate of KL(rollout || training) over the sampled tokens; exactly 0 iff every training log-prob equals its rollout log-prob.",
     "mean(rho - 1 - r), r = lp_train - lp_roll, rho = exp(r)", "", B::lower, K::divergence, A::log, true, "Mismatch",
     &S::k3_kl},
    {"kl", "K1 KL (rollout \u2016 train)", "The plain log-ratio estimate of KL(rollout || training); may be negative.",
     "mean(lp_roll - lp_train)", "", B::none, K::log_prob, A::linear, false, "Mismatch", &S::kl},
    {"logp_abs_diff_mean", "Mean |log-prob difference|", "Mean absolute difference of the two engines' log-probs.",
     "mean |r|", "", B::lower, K::divergence, A::log, false, "Mismatch", &S::logp_abs_diff_mean},
    {"logp_abs_diff_max", "Max |log-prob difference|", "Largest absolute difference of the two engines' log-probs.",
     "max |r|", "", B::lower, K::divergence, A::log, false, "Mismatch", &S::logp_abs_diff_max},
    {"F@1.1", "F(t = 1.1)", "Share of tokens whose probability ratio between the engines exceeds 1.1 either way.",
     "fraction of tokens with max(rho, 1/rho) > 1.1", "", B::lower, K::fraction, A::log, false, "Mismatch", &S::f_1_1},
    {"F@1.5", "F(t = 1.5)", "Share of tokens whose probability ratio between the engines exceeds 1.5 either way.",
     "fraction of tokens with max(rho, 1/rho) > 1.5", "", B::lower, K::fraction, A::log, false, "Mismatch", &S::f_1_5},
    {"F@2", "F(t = 2): extreme tokens",
     "Share of tokens whose probability differs by more than 2x between the engines; above 0.1 it precedes collapse (R3 paper).",
     "fraction of tokens with max(rho, 1/rho) > 2", "", B::lower, K::fraction, A::log, true, "Mismatch", &S::f_2},
    {"F@5", "F(t = 5)", "Share of tokens whose probability ratio between the engines exceeds 5 either way.",
     "fraction of tokens with max(rho, 1/rho) > 5", "", B::lower, K::fraction, A::log, false, "Mismatch", &S::f_5},
    {"F@10", "F(t = 10)", "Share of tokens whose probability ratio between the engines exceeds 10 either way.",
     "fraction of tokens with max(rho, 1/rho) > 10", "", B::lower, K::fraction, A::log, false, "Mismatch", &S::f_10},
    {"chi2_token", "\u03c7\u00b2 (token)", "Chi-squared divergence of the token ratios: the variance an IS weight would add.",
     "mean(exp(2 clamp20(r))) - 1", "", B::lower, K::divergence, A::log, false, "Mismatch", &S::chi2_token},
    {"chi2_seq", "\u03c7\u00b2 (sequence)", "Chi-squared divergence of the sequence ratios (verl's sum form).",
     "mean over sequences of exp(2 clamp20(sum_t r)) - 1", "", B::lower, K::divergence, A::log, false, "Mismatch",
     &S::chi2_seq},
    {"tv_token", "TV distance (token)",
     "Total variation between the engines' next-token distributions, estimated from the sampled token (unbiased under sampling from the rollout); bounds the bias an uncorrected update carries.",
     "mean(0.5 |1 - exp(clamp20(r))|)", "", B::lower, K::divergence, A::log, false, "Mismatch", &S::tv_token},
    {"tv_seq", "TV distance (sequence)",
     "Total variation between the engines' whole-response distributions, estimated from the sampled responses; bounds the bias of a sequence-level objective left uncorrected.",
     "mean over sequences of 0.5 |1 - exp(clamp20(sum_t r))|", "", B::lower, K::divergence, A::log, false,
     "Mismatch", &S::tv_seq},
    {"training_ppl", "Training perplexity", "Perplexity of the responses under the training engine.",
     "mean over sequences of exp(-mean_t lp_train)", "", B::none, K::ratio, A::linear, false, "Mismatch",
     &S::training_ppl},
    {"rollout_ppl", "Rollout perplexity", "Perplexity of the responses under the rollout engine.",
     "mean over sequences of exp(-mean_t lp_roll)", "", B::none, K::ratio, A::linear, false, "Mismatch",
     &S::rollout_ppl},
    {"log_ppl_diff", "Log-perplexity difference", "How much more likely the rollout found its responses than the trainer does.",
     "mean over sequences of (mean_t lp_roll - mean_t lp_train)", "", B::none, K::log_prob, A::linear, false,
     "Mismatch", &S::log_ppl_diff},
    {"log_ppl_abs_diff", "|Log-perplexity difference|", "Mean absolute per-sequence log-perplexity difference.",
     "mean over sequences of |mean_t lp_roll - mean_t lp_train|", "", B::lower, K::divergence, A::log, false,
     "Mismatch", &S::log_ppl_abs_diff},
    {"ppl_ratio", "Perplexity ratio", "Training over rollout perplexity; 1 when the engines agree.",
     "mean over sequences of exp(mean_t lp_roll - mean_t lp_train)", "", B::none, K::ratio, A::linear, false,
     "Mismatch", &S::ppl_ratio},
    {"lowp_count@1e-1", "Tokens with p_roll [0.1, 1] (count)",
     "How many of the step's response tokens have a rollout probability p = exp(lp_roll) that lies in [0.1, 1]; lowp_frac@1e-1 is the same as a share.",
     "number of valid tokens with 0.1 <= p <= 1", "tokens", B::none, K::count, A::log, false, "Mismatch", &S::lowp_count_e1},
    {"lowp_count@1e-2", "Tokens with p_roll [0.01, 0.1) (count)",
     "How many of the step's response tokens have a rollout probability p = exp(lp_roll) that lies in [0.01, 0.1); lowp_frac@1e-2 is the same as a share.",
     "number of valid tokens with 0.01 <= p < 0.1", "tokens", B::none, K::count, A::log, false, "Mismatch", &S::lowp_count_e2},
    {"lowp_count@1e-3", "Tokens with p_roll [1e-3, 0.01) (count)",
     "How many of the step's response tokens have a rollout probability p = exp(lp_roll) that lies in [1e-3, 0.01); lowp_frac@1e-3 is the same as a share.",
     "number of valid tokens with 1e-3 <= p < 0.01", "tokens", B::none, K::count, A::log, false, "Mismatch", &S::lowp_count_e3},
    {"lowp_count@1e-4", "Tokens with p_roll [1e-4, 1e-3) (count)",
     "How many of the step's response tokens have a rollout probability p = exp(lp_roll) that lies in [1e-4, 1e-3); lowp_frac@1e-4 is the same as a share.",
     "number of valid tokens with 1e-4 <= p < 1e-3", "tokens", B::none, K::count, A::log, false, "Mismatch", &S::lowp_count_e4},
    {"lowp_count@0", "Tokens with p_roll below 1e-4 (count)",
     "How many of the step's response tokens have a rollout probability p = exp(lp_roll) that lies below 1e-4; lowp_frac@0 is the same as a share.",
     "number of valid tokens with p < 1e-4", "tokens", B::none, K::count, A::log, false, "Mismatch", &S::lowp_count_tail},
    {"lowp_frac@1e-1", "Tokens with p_roll in [0.1, 1]",
     "Share of the step's response tokens whose rollout probability p = exp(lp_roll) lies in [0.1, 1]; the decades @1e-1 .. @1e-4 and @0 (the tail) add up to 1.",
     "fraction of valid tokens with 0.1 <= p <= 1", "", B::none, K::fraction, A::log, false, "Mismatch", &S::lowp_frac_e1},
    {"lowp_frac@1e-2", "Tokens with p_roll in [0.01, 0.1)",
     "Share of the step's response tokens whose rollout probability p = exp(lp_roll) lies in [0.01, 0.1); the decades @1e-1 .. @1e-4 and @0 (the tail) add up to 1.",
     "fraction of valid tokens with 0.01 <= p < 0.1", "", B::none, K::fraction, A::log, false, "Mismatch", &S::lowp_frac_e2},
    {"lowp_frac@1e-3", "Tokens with p_roll in [1e-3, 0.01)",
     "Share of the step's response tokens whose rollout probability p = exp(lp_roll) lies in [1e-3, 0.01); the decades @1e-1 .. @1e-4 and @0 (the tail) add up to 1.",
     "fraction of valid tokens with 1e-3 <= p < 0.01", "", B::none, K::fraction, A::log, false, "Mismatch", &S::lowp_frac_e3},
    {"lowp_frac@1e-4", "Tokens with p_roll in [1e-4, 1e-3)",
     "Share of the step's response tokens whose rollout probability p = exp(lp_roll) lies in [1e-4, 1e-3); the decades @1e-1 .. @1e-4 and @0 (the tail) add up to 1.",
     "fraction of valid tokens with 1e-4 <= p < 1e-3", "", B::none, K::fraction, A::log, false, "Mismatch", &S::lowp_frac_e4},
    {"lowp_frac@0", "Tokens with p_roll below 1e-4",
     "Share of the step's response tokens whose rollout probability p = exp(lp_roll) lies below 1e-4; the decades @1e-1 .. @1e-4 and @0 (the tail) add up to 1.",
     "fraction of valid tokens with p < 1e-4", "", B::none, K::fraction, A::log, false, "Mismatch", &S::lowp_frac_tail},
    {"lowp_abs_diff@1e-1", "Mean |log-prob difference|, p_roll in [0.1, 1]",
     "Mean |lp_train - lp_roll| over the response tokens whose rollout probability lies in [0.1, 1]; 0 when there are none (lowp_frac@1e-1 = 0).",
     "mean |r| over valid tokens with 0.1 <= p <= 1", "", B::lower, K::divergence, A::log, false, "Mismatch",
     &S::lowp_abs_diff_e1},
    {"lowp_abs_diff@1e-2", "Mean |log-prob difference|, p_roll in [0.01, 0.1)",
     "Mean |lp_train - lp_roll| over the response tokens whose rollout probability lies in [0.01, 0.1); 0 when there are none (lowp_frac@1e-2 = 0).",
     "mean |r| over valid tokens with 0.01 <= p < 0.1", "", B::lower, K::divergence, A::log, false, "Mismatch",
     &S::lowp_abs_diff_e2},
    {"lowp_abs_diff@1e-3", "Mean |log-prob difference|, p_roll in [1e-3, 0.01)",
     "Mean |lp_train - lp_roll| over the response tokens whose rollout probability lies in [1e-3, 0.01); 0 when there are none (lowp_frac@1e-3 = 0).",
     "mean |r| over valid tokens with 1e-3 <= p < 0.01", "", B::lower, K::divergence, A::log, false, "Mismatch",
     &S::lowp_abs_diff_e3},
    {"lowp_abs_diff@1e-4", "Mean |log-prob difference|, p_roll in [1e-4, 1e-3)",
     "Mean |lp_train - lp_roll| over the response tokens whose rollout probability lies in [1e-4, 1e-3); 0 when there are none (lowp_frac@1e-4 = 0).",
     "mean |r| over valid tokens with 1e-4 <= p < 1e-3", "", B::lower, K::divergence, A::log, false, "Mismatch",
     &S::lowp_abs_diff_e4},
    {"lowp_abs_diff@0", "Mean |log-prob difference|, p_roll below 1e-4",
     "Mean |lp_train - lp_roll| over the response tokens whose rollout probability lies below 1e-4; 0 when there are none (lowp_frac@0 = 0).",
     "mean |r| over valid tokens with p < 1e-4", "", B::lower, K::divergence, A::log, false, "Mismatch",
     &S::lowp_abs_diff_tail},
    {"lowp_k3_share@1e-1", "Share of K3 KL, p_roll in [0.1, 1]",
     "Part of the step's K3 KL contributed by the response tokens whose rollout probability lies in [0.1, 1]; the five shares add up to 1 (all 0 when K3 is 0).",
     "sum of (rho - 1 - r) over valid tokens with 0.1 <= p <= 1 / that sum over every valid token (0/0 = 0)", "",
     B::none, K::fraction, A::linear, false, "Mismatch", &S::lowp_k3_share_e1},
    {"lowp_k3_share@1e-2", "Share of K3 KL, p_roll in [0.01, 0.1)",
     "Part of the step's K3 KL contributed by the response tokens whose rollout probability lies in [0.01, 0.1); the five shares add up to 1 (all 0 when K3 is 0).",
     "sum of (rho - 1 - r) over valid tokens with 0.01 <= p < 0.1 / that sum over every valid token (0/0 = 0)", "",
     B::none, K::fraction, A::linear, false, "Mismatch", &S::lowp_k3_share_e2},
    {"lowp_k3_share@1e-3", "Share of K3 KL, p_roll in [1e-3, 0.01)",
     "Part of the step's K3 KL contributed by the response tokens whose rollout probability lies in [1e-3, 0.01); the five shares add up to 1 (all 0 when K3 is 0).",
     "sum of (rho - 1 - r) over valid tokens with 1e-3 <= p < 0.01 / that sum over every valid token (0/0 = 0)", "",
     B::none, K::fraction, A::linear, false, "Mismatch", &S::lowp_k3_share_e3},
    {"lowp_k3_share@1e-4", "Share of K3 KL, p_roll in [1e-4, 1e-3)",
     "Part of the step's K3 KL contributed by the response tokens whose rollout probability lies in [1e-4, 1e-3); the five shares add up to 1 (all 0 when K3 is 0).",
     "sum of (rho - 1 - r) over valid tokens with 1e-4 <= p < 1e-3 / that sum over every valid token (0/0 = 0)", "",
     B::none, K::fraction, A::linear, false, "Mismatch", &S::lowp_k3_share_e4},
    {"lowp_k3_share@0", "Share of K3 KL, p_roll below 1e-4",
     "Part of the step's K3 KL contributed by the response tokens whose rollout probability lies below 1e-4; the five shares add up to 1 (all 0 when K3 is 0).",
     "sum of (rho - 1 - r) over valid tokens with p < 1e-4 / that sum over every valid token (0/0 = 0)", "",
     B::none, K::fraction, A::linear, false, "Mismatch", &S::lowp_k3_share_tail},

    {"ess", "Effective sample size", "Share of the batch the IS weights effectively keep; 1 = uniform weights.",
     "1 / mean((w / mean w)^2) over kept tokens", "", B::higher, K::fraction, A::linear, false, "Correction", &S::ess},
    {"is_weight_mean", "IS weight mean", "Mean importance weight over kept tokens, after bounds, before batch normalisation.",
     "mean w", "", B::none, K::ratio, A::linear, false, "Correction", &S::is_weight_mean},
    {"is_weight_min", "IS weight min", "Smallest importance weight over kept tokens, after bounds.", "min w", "",
     B::none, K::ratio, A::linear, false, "Correction", &S::is_weight_min},
    {"is_weight_max", "IS weight max", "Largest importance weight over kept tokens, after bounds.", "max w", "",
     B::none, K::ratio, A::linear, false, "Correction", &S::is_weight_max},
    {"truncated_fraction", "Truncated above", "Share of tokens whose IS weight was cut at the upper bound U.",
     "fraction of valid tokens with w > U (truncate, clip)", "", B::lower, K::fraction, A::linear, false,
     "Correction", &S::truncated_fraction},
    {"truncated_low_fraction", "Truncated below", "Share of tokens whose IS weight was raised to the lower bound L.",
     "fraction of valid tokens with w < L (clip)", "", B::lower, K::fraction, A::linear, false, "Correction",
     &S::truncated_low_fraction},
    {"masked_fraction", "Masked (IcePop)", "Share of tokens dropped because their IS weight lies outside [L, U].",
     "fraction of valid tokens with w outside [L, U] (mask)", "", B::lower, K::fraction, A::linear, false,
     "Correction", &S::masked_fraction},
    {"rejected_token_fraction", "Rejected tokens", "Share of tokens dropped by rejection sampling.",
     "fraction of valid tokens outside [rs_lower, rs_upper] at the rejection level", "", B::lower, K::fraction,
     A::linear, false, "Correction", &S::rejected_token_fraction},
    {"rejected_seq_fraction", "Rejected sequences", "Share of sequences with at least one token dropped by rejection.",
     "fraction of sequences with >= 1 token outside [rs_lower, rs_upper]", "", B::lower, K::fraction, A::linear, false, "Correction", &S::rejected_seq_fraction},
    {"vetoed_seq_fraction", "Vetoed sequences", "Share of sequences dropped whole by the veto.",
     "fraction of sequences with a token below the veto threshold", "", B::lower, K::fraction, A::linear, false,
     "Correction", &S::vetoed_seq_fraction},
    {"kept_token_fraction", "Kept tokens", "Share of valid tokens that still count in the loss after every correction.",
     "kept tokens / valid tokens", "", B::higher, K::fraction, A::linear, false, "Correction",
     &S::kept_token_fraction},

    {"entropy", "Entropy", "Mean entropy of the training distribution at the response tokens.",
     "mean_t -sum_v p log p", "nats", B::none, K::entropy, A::linear, false, "Optimisation", &S::entropy},
    {"grad_norm", "Gradient norm (before clipping)",
     "Global L2 norm of the policy gradient, mean over the mini-steps; spikes signal instability.",
     "||g||_2", "", B::lower, K::norm, A::linear, true, "Optimisation", &S::grad_norm},
    {"policy_loss", "Policy loss", "The aggregated policy-gradient loss, mean over the mini-steps.",
     "mean over mini-steps of -sum_t w_t min(ratio_t A, clip(ratio_t) A) / N_kept (token mean)", "", B::none,
     K::loss, A::linear, false, "Optimisation", &S::policy_loss},
    {"clip_fraction", "PPO clip fraction", "Share of kept tokens whose clipped term is active (they get no gradient).",
     "verl's pg_clipfrac", "", B::none, K::fraction, A::linear, false, "Optimisation", &S::clip_fraction},
    {"ppo_kl", "PPO KL", "Mean log-ratio between the anchor and the current policy over kept tokens.",
     "mean(lp_anchor - lp_theta)", "", B::none, K::log_prob, A::linear, false, "Optimisation", &S::ppo_kl},
    {"router_diff_router", "Router flips (routers)",
     "Share of (response token, MoE layer) pairs where the trainer used an expert the rollout did not pick, each token by the routes of the position that produced its log-prob (prompt positions before it do not count); 0 for dense models.",
     "fraction of (response token, layer) with d > 0, d = rollout top-k experts missing from the training top-k at position pos - 1",
     "",
     B::lower, K::fraction, A::linear, false, "Routing", &S::router_diff_router},
    {"router_diff_token", "Router flips (tokens)",
     "Share of response tokens with a flipped router in at least one MoE layer, at the position that produced the token's log-prob.",
     "fraction of response tokens with d > 0 in >= 1 layer (d at position pos - 1)", "", B::lower, K::fraction, A::linear, false, "Routing",
     &S::router_diff_token},
    {"router_diff_sequence", "Router flips per token (sequence mean)",
     "Mean over sequences of the number of flipped experts per response token, summed over layers.",
     "mean_i mean_t sum_l d over response tokens t (d at position pos - 1)", "experts", B::lower, K::divergence, A::linear, false, "Routing",
     &S::router_diff_sequence},
    {"router_diff_ministep", "Router flips within the step (mini-steps)",
     "Share of (response token, MoE layer) pairs whose experts in the mini-steps after the first differ from those of the "
     "old-policy forward: routes the policy's own drift flipped. R2 and R3 make it 0; 0 with one mini-step or a dense model.",
     "fraction of (token, layer) whose top-k set differs, over mini-steps 2..n", "", B::lower, K::fraction, A::linear,
     false, "Routing", &S::router_diff_ministep},
    {"lr", "Learning rate", "The AdamW learning rate of the step, after warm-up.", "optim.lr x min(1, (step + 1) / optim.warmup_steps)", "", B::none, K::rate,
     A::linear, false, "Optimisation", &S::lr},

    {"rollout_ms", "Rollout time", "Wall time of the rollout phase (generation).", "t_end - t_start of the rollout", "ms", B::lower, K::time_ms,
     A::linear, false, "Speed", &S::rollout_ms},
    {"recompute_ms", "Recompute time", "Wall time of the training engine's forward over the rollout.",
     "t_end - t_start of the recompute", "ms",
     B::lower, K::time_ms, A::linear, false, "Speed", &S::recompute_ms},
    {"train_ms", "Training time", "Wall time of the mini-steps (forward, backward, optimiser).",
     "t_end - t_start of the mini-steps", "ms", B::lower,
     K::time_ms, A::linear, false, "Speed", &S::train_ms},
    {"tokens_per_s", "Throughput", "Prompt and response tokens processed per second of the whole step.",
     "(prompt + response tokens) / step wall time",
     "tokens/s", B::higher, K::throughput, A::linear, false, "Speed", &S::tokens_per_s},
};
// clang-format on

}  // namespace

const std::vector<MetricInfo>& metric_catalogue() { return kCatalogue; }

const MetricInfo* find_metric(std::string_view name) {
    for (const MetricInfo& m : kCatalogue)
        if (m.name == name) return &m;
    return nullptr;
}

const std::vector<std::string>& metric_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const MetricInfo& m : kCatalogue) v.emplace_back(m.name);
        return v;
    }();
    return names;
}

std::vector<std::string> key_metric_names() {
    std::vector<std::string> v;
    for (const MetricInfo& m : kCatalogue)
        if (m.key_chart) v.emplace_back(m.name);
    return v;
}

std::vector<std::string> order_metric_names(const std::vector<std::string>& names) {
    const std::set<std::string> given(names.begin(), names.end());
    std::vector<std::string> out;
    for (const std::string& known : metric_names())
        if (given.count(known)) out.push_back(known);
    for (const std::string& other : given)  // std::set: alphabetical
        if (!find_metric(other)) out.push_back(other);
    return out;
}

bool metric_is_nonnegative(const MetricInfo& m) {
    switch (m.kind) {
        case MetricKind::log_prob:
        case MetricKind::loss: return false;
        default: return true;
    }
}

bool metric_is_timing(std::string_view name) {
    const MetricInfo* m = find_metric(name);
    return m && (m->kind == MetricKind::time_ms || m->kind == MetricKind::throughput);
}

std::vector<std::pair<std::string, double>> to_named_values(const StepMetrics& values) {
    std::vector<std::pair<std::string, double>> out;
    out.reserve(kCatalogue.size());
    for (const MetricInfo& m : kCatalogue) out.emplace_back(std::string(m.name), values.*m.field);
    return out;
}

}  // namespace mlk
