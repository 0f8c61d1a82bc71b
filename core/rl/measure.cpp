#include "core/rl/measure.h"

#include <chrono>
#include <cstring>

namespace mlk {

TokenView gather_tokens(const RolloutResult& roll, const SeqBatch& batch, const TrainForward& train,
                        LogprobSource source) {
    TokenView v;
    v.seq_offsets.push_back(0);
    for (int i = 0; i < batch.B; ++i) {
        const RolloutSequence& s = roll.sequences[i];
        for (size_t j = 0; j < s.lp_processed.size(); ++j) {
            const int pos = s.prompt_len + (int)j;
            const size_t at = (size_t)i * batch.T + pos;
            v.lp_roll_processed.push_back(s.lp_processed[j]);
            v.lp_roll_raw.push_back(s.lp_raw[j]);
            v.lp_roll.push_back(source == LogprobSource::raw ? s.lp_raw[j] : s.lp_processed[j]);
            v.lp_train.push_back(train.logp[at]);
            v.entropy.push_back(train.entropy[at]);
            v.valid.push_back(j < s.env.size() && s.env[j] ? 0 : 1);  // env tokens are context, not actions
            v.token.push_back(s.tokens[pos]);
            v.pos.push_back(pos);
            v.seq.push_back(i);
        }
        v.seq_offsets.push_back((int)v.lp_roll.size());
    }
    return v;
}

RouterDiff routing_diff(const RolloutResult& roll, const SeqBatch& batch, const TrainForward& train,
                        const TokenView& tokens, int layers, int k) {
    const size_t N = tokens.pos.size();
    std::vector<int32_t> rollout_ids, train_ids;  // [N][layers][k]
    rollout_ids.reserve(N * layers * k);
    train_ids.reserve(N * layers * k);
    for (size_t t = 0; t < N; ++t) {
        const int i = tokens.seq[t];
        const size_t pos = (size_t)tokens.pos[t] - 1;  // the position that predicted token t
        const RolloutSequence& s = roll.sequences[i];
        for (int l = 0; l < layers; ++l)
            for (int j = 0; j < k; ++j) {
                rollout_ids.push_back(s.expert_ids[l][pos * k + j]);
                train_ids.push_back(train.used_expert_ids[l][((size_t)i * batch.T + pos) * k + j]);
            }
    }
    return router_diff(rollout_ids, train_ids, tokens.valid, N, layers, k, tokens.seq_offsets);
}

RouterDiff table_routing_diff(const std::vector<std::vector<int32_t>>& a, const std::vector<std::vector<int32_t>>& b,
                              int T, int k, const TokenView& tokens, int t0, int t1, int s0) {
    const int layers = (int)a.size();
    if (t1 <= t0) return router_diff({}, {}, {}, 0, layers, k, std::vector<int>{0});
    const size_t N = (size_t)(t1 - t0);
    std::vector<int32_t> a_ids, b_ids;  // [N][layers][k]
    a_ids.reserve(N * layers * k);
    b_ids.reserve(N * layers * k);
    for (int t = t0; t < t1; ++t) {
        const size_t at = ((size_t)(tokens.seq[t] - s0) * T + (size_t)tokens.pos[t] - 1) * k;
        for (int l = 0; l < layers; ++l) {
            a_ids.insert(a_ids.end(), a[l].begin() + at, a[l].begin() + at + k);
            b_ids.insert(b_ids.end(), b[l].begin() + at, b[l].begin() + at + k);
        }
    }
    const std::vector<uint8_t> valid(tokens.valid.begin() + t0, tokens.valid.begin() + t1);
    std::vector<int> offsets;
    for (int s = tokens.seq[t0]; s <= tokens.seq[t1 - 1] + 1; ++s) offsets.push_back(tokens.seq_offsets[s] - t0);
    return router_diff(a_ids, b_ids, valid, N, layers, k, offsets);
}

Family kernel_family(const Config& cfg) { return cfg.kernels.batch_invariant ? Family::batch_invariant : Family::fast; }

Measurement measure(const Config& cfg, RolloutEngine& rollout, TrainEngine& train, std::vector<float>& params,
                    const std::vector<std::vector<int32_t>>& inputs, uint64_t sample_seed, bool for_backward,
                    const std::function<void(MeasurePhase)>& on_phase, const Environment& environment) {
    using Clock = std::chrono::steady_clock;
    const auto ms_since = [](Clock::time_point t0) {
        return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    };
    const ModelConfig& model = train.config();
    const int Lm = model.num_moe_layers(), k = model.num_experts_per_tok;  // routing tables count MoE layers only
    const bool moe = Lm > 0;
    const Family fam = kernel_family(cfg);
    Measurement m;

    if (on_phase) on_phase(MeasurePhase::rollout);
    auto t0 = Clock::now();
    {  // the next step loads the weights afresh
        rollout.load_weights(params, rollout_numerics(cfg));
        const RolloutEngine::WeightsLoan loan{rollout};
        const SamplingParams sp{(float)cfg.rollout.temperature, cfg.rollout.top_k, (float)cfg.rollout.top_p};
        m.roll = rollout.generate(fam, inputs, cfg.rollout.max_new_tokens, sp, sample_seed, cfg.rollout.max_batch,
                                  environment);
    }
    m.rollout_ms = ms_since(t0);

    if (on_phase) on_phase(MeasurePhase::recompute);
    t0 = Clock::now();
    m.batch = to_seq_batch(m.roll);
    if (moe && cfg.moe.routing_replay == RoutingReplay::R3) m.replay = replay_table(m.roll, m.batch.T, Lm, k);
    m.train = train.forward(fam, train_numerics(cfg), params, m.batch, 1.0f / (float)cfg.rollout.temperature,
                            m.replay.empty() ? nullptr : &m.replay, for_backward);
    m.recompute_ms = ms_since(t0);

    m.tokens = gather_tokens(m.roll, m.batch, m.train, cfg.rollout.logprobs);
    m.mismatch = mismatch_metrics(m.tokens.lp_train, m.tokens.lp_roll, m.tokens.valid, m.tokens.seq_offsets);
    if (moe) m.router = routing_diff(m.roll, m.batch, m.train, m.tokens, Lm, k);
    m.worst = capture_worst_tokens(cfg, m, train);  // while `train` still holds the recompute's rows
    m.bitwise_equal = !m.tokens.lp_roll.empty() && std::memcmp(m.tokens.lp_roll.data(), m.tokens.lp_train.data(),
                                                               m.tokens.lp_roll.size() * sizeof(float)) == 0;
    return m;
}

}  // namespace mlk
