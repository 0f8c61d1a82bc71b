// Multi-turn rollouts: the environment's tokens are context, not actions.
// They are inserted by the rollout, fed to both engines, and excluded from the
// loss, the correction and every mismatch metric through one mask
// (RolloutSequence::env -> TokenView::valid).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/config/config.h"
#include "core/model/params.h"
#include "core/model/vocab.h"
#include "core/rl/base_policy.h"
#include "core/rl/correction.h"
#include "core/rl/measure.h"
#include "core/rl/policy_loss.h"
#include "core/rl/session.h"
#include "core/rl/tasks.h"

using namespace mlk;

namespace {

// Two sequences; the first has environment tokens at response positions 2 and 3.
struct HandRollout {
    RolloutResult roll;
    SeqBatch batch;
    TrainForward train;
    std::vector<float> lp_theta;  // the policy being trained, per response token
};

HandRollout hand_rollout() {
    HandRollout h;
    RolloutSequence a;
    a.tokens = {Vocab::bos, 5, 6, 7, 8, 9, 10, 11, 12};
    a.prompt_len = 3;
    a.lp_processed = {-0.5f, -1.2f, -0.1f, -0.2f, -2.0f, -0.7f};
    a.env = {0, 0, 1, 1, 0, 0};
    RolloutSequence b;
    b.tokens = {Vocab::bos, 5, 13, 14, 15, Vocab::eos};
    b.prompt_len = 2;
    b.lp_processed = {-0.3f, -0.9f, -1.5f, -0.05f};
    b.env = {0, 0, 0, 0};
    for (RolloutSequence* s : {&a, &b}) s->lp_raw = s->lp_processed;
    h.roll.sequences = {a, b};
    h.batch = to_seq_batch(h.roll);
    h.train.logp.assign((size_t)h.batch.B * h.batch.T, 0.0f);
    h.train.entropy.assign(h.train.logp.size(), 1.0f);
    // Training log-probs near the rollout's, off by a token-dependent amount.
    for (int i = 0; i < h.batch.B; ++i) {
        const auto& s = h.roll.sequences[i];
        for (size_t j = 0; j < s.lp_processed.size(); ++j) {
            const float lp = s.lp_processed[j] + 0.05f * (float)(j + 1) * (i ? -1.0f : 1.0f);
            h.train.logp[(size_t)i * h.batch.T + s.prompt_len + j] = lp;
            h.lp_theta.push_back(lp + 0.03f);
        }
    }
    return h;
}

struct Outcome {
    MismatchMetrics mm;
    CorrectionResult corr;
    PolicyLossResult loss;
};

Outcome consume(const HandRollout& h) {
    const TokenView tv = gather_tokens(h.roll, h.batch, h.train, LogprobSource::processed);
    Outcome o;
    o.mm = mismatch_metrics(tv.lp_train, tv.lp_roll, tv.valid, tv.seq_offsets);
    CorrectionSettings cs;
    cs.is_level = IsLevel::sequence;
    cs.is_upper = 1.2;
    cs.rs_level = RsLevel::token;
    cs.rs_upper = 1.3;
    cs.batch_normalize = true;
    o.corr = compute_correction(cs, tv.lp_train, tv.lp_roll, tv.valid, tv.seq_offsets);
    const std::vector<double> adv{1.0, -0.5};
    o.loss =
        policy_loss(PolicyLossSettings{}, h.lp_theta, tv.lp_train, adv, o.corr.weights, o.corr.keep, tv.seq_offsets);
    return o;
}

bool same(const Outcome& x, const Outcome& y) {
    const auto& a = x.mm;
    const auto& b = y.mm;
    return a.k3_kl == b.k3_kl && a.kl == b.kl && a.logp_abs_diff_max == b.logp_abs_diff_max &&
           a.chi2_token == b.chi2_token && a.chi2_seq == b.chi2_seq && a.training_ppl == b.training_ppl &&
           a.rollout_ppl == b.rollout_ppl && a.log_ppl_diff == b.log_ppl_diff && a.f_1_1 == b.f_1_1 &&
           a.num_valid_tokens == b.num_valid_tokens && x.corr.weights == y.corr.weights && x.corr.keep == y.corr.keep &&
           x.corr.stats.ess == y.corr.stats.ess && x.corr.stats.is_weight_mean == y.corr.stats.is_weight_mean &&
           x.loss.loss == y.loss.loss && x.loss.grad == y.loss.grad && x.loss.ppo_kl == y.loss.ppo_kl;
}

}  // namespace

TEST(MultiTurn, EnvironmentTokensAreInvalidInTheTokenView) {
    const HandRollout h = hand_rollout();
    const TokenView tv = gather_tokens(h.roll, h.batch, h.train, LogprobSource::processed);
    EXPECT_EQ(tv.valid, (std::vector<uint8_t>{1, 1, 0, 0, 1, 1, 1, 1, 1, 1}));
    EXPECT_EQ(h.roll.sequences[0].sampled_tokens(), 4);
    const Outcome o = consume(h);
    EXPECT_EQ(o.mm.num_valid_tokens, 8u);
    EXPECT_EQ(o.loss.num_kept_tokens, (size_t)std::count(o.corr.keep.begin(), o.corr.keep.end(), 1));
    for (size_t t : {2u, 3u}) {
        EXPECT_EQ(o.corr.keep[t], 0);
        EXPECT_EQ(o.corr.weights[t], 0.0);
        EXPECT_EQ(o.loss.grad[t], 0.0) << "no gradient into tool output";
    }
}

TEST(MultiTurn, ChangingEnvironmentLogprobsChangesNothingPolicyTokensDo) {
    const HandRollout base = hand_rollout();
    const Outcome ref = consume(base);
    const int P = base.roll.sequences[0].prompt_len;
    // The same change at an environment token and at a policy token of the
    // same sequence: rollout and training log-probs, the policy's log-prob.
    auto perturb = [&](int j) {
        HandRollout h = base;
        h.roll.sequences[0].lp_processed[j] -= 1.5f;
        h.roll.sequences[0].lp_raw[j] -= 1.5f;
        h.train.logp[(size_t)P + j] += 0.8f;
        h.train.entropy[(size_t)P + j] += 3.0f;
        h.lp_theta[j] += 0.4f;
        return consume(h);
    };
    for (int j : {2, 3}) EXPECT_TRUE(same(perturb(j), ref)) << "environment token " << j;
    for (int j : {1, 4}) {
        const Outcome o = perturb(j);
        EXPECT_NE(o.mm.k3_kl, ref.mm.k3_kl) << "policy token " << j;
        EXPECT_NE(o.corr.weights, ref.corr.weights) << "policy token " << j;
        EXPECT_NE(o.loss.loss, ref.loss.loss) << "policy token " << j;
    }
    // Only the training log-prob of a policy token: each consumer sees it.
    HandRollout h = base;
    h.train.logp[(size_t)P + 4] += 0.2f;
    EXPECT_NE(consume(h).mm.kl, ref.mm.kl);
}

namespace {

// A dense-tiny policy that writes tool calls: a short supervised warm-up on
// the calculator's demonstrations (cached in a temporary folder).
struct ToolPolicy {
    Config cfg;
    std::vector<float> params;
};
const ToolPolicy& tool_policy() {
    static const ToolPolicy p = [] {
        ToolPolicy t;
        t.cfg.task.name = TaskName::calculator;
        t.cfg.task.length = 1;
        t.cfg.task.eval_size = 8;
        t.cfg.rollout.max_new_tokens = 40;
        t.cfg.base.sft_steps = 60;
        t.cfg.base.batch_size = 16;
        t.cfg.base.target_reward = 1.0;
        t.cfg.kernels.batch_invariant = true;
        const auto dir = std::filesystem::temp_directory_path() / ("mlk-multi-turn-" + std::to_string(getpid()));
        t.params = make_base_policy(t.cfg, dir.string(), {}).params;
        std::filesystem::remove_all(dir);
        return t;
    }();
    return p;
}

}  // namespace

TEST(MultiTurn, RolloutInsertsExactlyTheEnvironmentsReplies) {
    const ToolPolicy& tp = tool_policy();
    Config c = tp.cfg;
    c.rl.prompts_per_step = 8;
    c.rl.samples_per_prompt = 4;
    c.rollout.max_batch = 7;  // continuous batching across replies
    auto task = make_task("calculator", 1);
    std::vector<Prompt> prompts;
    std::vector<std::vector<int32_t>> inputs;
    for (int p = 0; p < c.rl.prompts_per_step; ++p) {
        prompts.push_back(task->sample(3, (uint64_t)p));
        for (int n = 0; n < c.rl.samples_per_prompt; ++n) inputs.push_back(prompts.back().tokens);
    }
    const ModelConfig m = model_config_of(c);
    RolloutEngine roll(m);
    TrainEngine train(m);
    std::vector<float> params = tp.params;  // lent to the rollout
    const Measurement ms = measure(c, roll, train, params, inputs, 77, false, {},
                                   task_environment(*task, prompts, c.rl.samples_per_prompt));
    size_t env_tokens = 0, sampled = 0;
    for (size_t i = 0; i < ms.roll.sequences.size(); ++i) {
        const auto& s = ms.roll.sequences[i];
        const Prompt& pr = prompts[i / c.rl.samples_per_prompt];
        const std::vector<int32_t> resp(s.tokens.begin() + s.prompt_len, s.tokens.end());
        ASSERT_EQ(s.env.size(), resp.size());
        // Replaying the environment over the finished response finds the
        // rollout's env tokens, and each run is the reply to the text before it.
        EXPECT_EQ(s.env, task->environment_mask(pr, resp)) << Vocab::decode(resp);
        for (size_t t = 0; t < resp.size(); ++t) {
            if (!s.env[t] || (t > 0 && s.env[t - 1])) continue;
            const auto reply = task->environment_reply(pr, std::span(resp).first(t));
            ASSERT_FALSE(reply.empty());
            for (size_t j = 0; j < reply.size() && t + j < resp.size(); ++j) EXPECT_EQ(resp[t + j], reply[j]);
        }
        env_tokens += resp.size() - (size_t)s.sampled_tokens();
        sampled += (size_t)s.sampled_tokens();
    }
    EXPECT_GT(env_tokens, 20u) << "the warmed-up policy must call the tool";
    // The metrics count the policy's tokens only.
    EXPECT_EQ(ms.mismatch.num_valid_tokens, sampled);
}

TEST(MultiTurn, BatchInvariantEqualNumericsStaysBitwiseOnPolicy) {
    const ToolPolicy& tp = tool_policy();
    for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
        Config c = tp.cfg;
        c.rollout.precision = dt;
        c.train.precision = dt;
        c.rollout.max_batch = 5;
        c.rollout.temperature = 0.8;
        auto task = make_task("calculator", 1);
        std::vector<Prompt> prompts;
        std::vector<std::vector<int32_t>> inputs;
        for (int p = 0; p < 16; ++p) {
            prompts.push_back(task->sample(9, (uint64_t)p));
            inputs.push_back(prompts.back().tokens);
        }
        const ModelConfig m = model_config_of(c);
        RolloutEngine roll(m);
        TrainEngine train(m);
        std::vector<float> params = tp.params;  // lent to the rollout
        const Measurement ms =
            measure(c, roll, train, params, inputs, 5, false, {}, task_environment(*task, prompts, 1));
        size_t env_tokens = 0;
        for (const auto& s : ms.roll.sequences) env_tokens += s.env.size() - (size_t)s.sampled_tokens();
        EXPECT_GT(env_tokens, 10u);
        // Every response token, the environment's included (both engines
        // run over them as context), agrees bit for bit.
        EXPECT_TRUE(ms.bitwise_equal) << dtype_name(dt);
        EXPECT_EQ(ms.mismatch.k3_kl, 0.0);
    }
}

TEST(MultiTurn, SessionStepRecordsNoToolOutputAsPolicyTokens) {
    const ToolPolicy& tp = tool_policy();
    Config c = tp.cfg;
    c.rl.prompts_per_step = 4;
    c.rl.samples_per_prompt = 1;  // every sequence a text sample, every token a scatter sample
    const auto dir = std::filesystem::temp_directory_path() / ("mlk-multi-turn-s-" + std::to_string(getpid()));
    RlSession session(c, tp.params, nullptr, 0, dir.string());
    const StepRecord rec = session.step();
    std::filesystem::remove_all(dir);
    auto task = make_task("calculator", 1);
    size_t env_tokens = 0, samples_checked = 0, policy_tokens = 0;
    for (const TextSample& ts : rec.text_samples) {
        const nlohmann::json toks = nlohmann::json::parse(ts.tokens_json);
        std::vector<int32_t> resp;
        std::vector<uint8_t> flagged;
        for (const auto& t : toks) {
            resp.push_back(t["id"].get<int32_t>());
            flagged.push_back(t.value("env", false) ? 1 : 0);
        }
        // The drill-down's tokens mark exactly the environment's replies.
        EXPECT_EQ(flagged, task->environment_mask(Prompt{}, resp)) << ts.response;
        env_tokens += (size_t)std::count(flagged.begin(), flagged.end(), 1);
        policy_tokens += (size_t)std::count(flagged.begin(), flagged.end(), 0);
        // The scatter samples of this sequence skip them.
        const int seq = ts.idx * c.rl.samples_per_prompt;
        for (const TokenSample& s : rec.token_samples)
            if (s.seq == seq) {
                ++samples_checked;
                ASSERT_LT((size_t)s.pos, flagged.size());
                EXPECT_EQ(flagged[s.pos], 0) << "token sample at env position " << s.pos;
            }
    }
    EXPECT_GT(env_tokens, 0u);
    EXPECT_EQ(samples_checked, policy_tokens) << "every policy token is a scatter sample, no env token is";
    // response_length is the mean count of the policy's own tokens.
    ASSERT_EQ(rec.text_samples.size(), 4u);
    EXPECT_DOUBLE_EQ(RlSession::metric(rec, "response_length"), (double)policy_tokens / 4.0);
}

TEST(MultiTurn, WarmUpTrainsOnThePolicysTokensOnly) {
    for (const char* name : {"calculator", "addition"}) {
        auto task = make_task(name, 3);
        const SftBatch sb = sft_batch(*task, 17, 2, 8);
        const SeqBatch& b = sb.batch;
        int targets = 0;
        size_t env_tokens = 0;
        for (int i = 0; i < b.B; ++i) {
            const Prompt p = task->sample(17, (uint64_t)2 * 8 + i);  // the stream sft_batch draws from
            const std::vector<int32_t> tgt = task->target(p);
            const std::vector<uint8_t> env = task->environment_mask(p, tgt);
            ASSERT_EQ(b.lengths[i] - b.prompt_lens[i], (int)tgt.size());
            for (int t = 0; t < b.T; ++t) {
                const int r = t - b.prompt_lens[i];
                const bool policy_token = r >= 0 && t < b.lengths[i] && !env[r];
                EXPECT_EQ(sb.target[(size_t)i * b.T + t], policy_token ? 1 : 0) << name << " " << i << " " << t;
                targets += policy_token;
            }
            env_tokens += (size_t)std::count(env.begin(), env.end(), 1);
        }
        EXPECT_EQ(sb.targets, targets);
        EXPECT_EQ(env_tokens > 0, std::string(name) == "calculator");
    }
}
