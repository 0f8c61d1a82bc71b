#include "core/probe.h"

#include <cstring>

#include "core/tasks.h"

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
            v.valid.push_back(1);
            v.token.push_back(s.tokens[pos]);
            v.pos.push_back(pos);
            v.seq.push_back(i);
        }
        v.seq_offsets.push_back((int)v.lp_roll.size());
    }
    return v;
}

RouterDiff routing_diff(const RolloutResult& roll, const SeqBatch& batch, const TrainForward& train, int layers,
                        int k) {
    std::vector<int32_t> rollout_ids, train_ids;
    std::vector<uint8_t> valid;
    std::vector<int> offsets{0};
    for (int i = 0; i < batch.B; ++i) {
        const RolloutSequence& s = roll.sequences[i];
        for (size_t pos = 0; pos < s.tokens.size(); ++pos) {
            bool routed = s.expert_ids[0][pos * k] >= 0;
            for (int l = 0; l < layers; ++l)
                for (int j = 0; j < k; ++j) {
                    rollout_ids.push_back(s.expert_ids[l][pos * k + j]);
                    train_ids.push_back(train.used_expert_ids[l][((size_t)i * batch.T + pos) * k + j]);
                }
            valid.push_back(routed ? 1 : 0);
        }
        offsets.push_back((int)valid.size());
    }
    return router_diff(rollout_ids, train_ids, valid, valid.size(), layers, k, offsets);
}

ProbeResult run_probe(const Config& cfg, const std::vector<float>& params) {
    ProbeResult r;
    r.model = model_config_of(cfg);
    auto task = make_task(enum_name(cfg.task.name), cfg.task.length);
    std::vector<std::vector<int32_t>> prompts;
    for (int p = 0; p < cfg.rl.prompts_per_step; ++p) {
        Prompt pr = task->sample((uint64_t)cfg.seed, (uint64_t)p);
        for (int n = 0; n < cfg.rl.samples_per_prompt; ++n) prompts.push_back(pr.tokens);
    }
    if (cfg.kernels.threads > 0) set_num_threads(cfg.kernels.threads);
    const Family fam = cfg.kernels.batch_invariant ? Family::batch_invariant : Family::fast;
    RolloutEngine rollout(r.model);
    rollout.load_weights(params, cfg.rollout.precision);
    SamplingParams sp{(float)cfg.rollout.temperature, cfg.rollout.top_k, (float)cfg.rollout.top_p};
    r.roll = rollout.generate(fam, prompts, cfg.rollout.max_new_tokens, sp, hash_u64((uint64_t)cfg.seed, 0x9a0be),
                              cfg.rollout.max_batch);
    r.batch = to_seq_batch(r.roll);

    TrainEngine train(r.model);
    const bool moe = r.model.kind == ModelKind::moe;
    std::vector<std::vector<int32_t>> replay;
    if (moe && cfg.moe.routing_replay == RoutingReplay::R3)
        replay = replay_table(r.roll, r.batch.T, r.model.num_layers, r.model.num_experts_per_tok);
    r.train = train.forward(Exec{fam, cfg.train.precision}, params, r.batch, 1.0f / (float)cfg.rollout.temperature,
                            replay.empty() ? nullptr : &replay);

    r.tokens = gather_tokens(r.roll, r.batch, r.train, cfg.rollout.logprobs);
    r.mismatch = mismatch_metrics(r.tokens.lp_train, r.tokens.lp_roll, r.tokens.valid, r.tokens.seq_offsets);
    if (moe) r.router = routing_diff(r.roll, r.batch, r.train, r.model.num_layers, r.model.num_experts_per_tok);
    r.bitwise_equal = !r.tokens.lp_roll.empty() &&
                      std::memcmp(r.tokens.lp_roll.data(), r.tokens.lp_train.data(),
                                  r.tokens.lp_roll.size() * sizeof(float)) == 0;
    return r;
}

nlohmann::json probe_summary_json(const ProbeResult& r) {
    const MismatchMetrics& m = r.mismatch;
    nlohmann::json j;
    j["k3_kl"] = m.k3_kl;
    j["kl"] = m.kl;
    j["logp_abs_diff_mean"] = m.logp_abs_diff_mean;
    j["logp_abs_diff_max"] = m.logp_abs_diff_max;
    j["F@1.1"] = m.f_1_1;
    j["F@1.5"] = m.f_1_5;
    j["F@2"] = m.f_2;
    j["F@5"] = m.f_5;
    j["F@10"] = m.f_10;
    j["router_diff_router"] = r.router.router_level;
    j["router_diff_token"] = r.router.token_level;
    j["router_diff_sequence"] = r.router.sequence_level;
    j["tokens"] = m.num_valid_tokens;
    j["bitwise_equal"] = r.bitwise_equal;
    return j;
}

nlohmann::json probe_dump_json(const ProbeResult& r) {
    const TokenView& t = r.tokens;
    const bool moe = r.model.kind == ModelKind::moe;
    const int k = r.model.num_experts_per_tok;
    nlohmann::json tokens = nlohmann::json::array();
    for (size_t i = 0; i < t.lp_roll.size(); ++i) {
        nlohmann::json e{{"seq", t.seq[i]},
                         {"pos", t.pos[i]},
                         {"token", t.token[i]},
                         {"lp_rollout_processed", t.lp_roll_processed[i]},
                         {"lp_rollout_raw", t.lp_roll_raw[i]},
                         {"lp_train", t.lp_train[i]}};
        if (moe) {
            nlohmann::json ro = nlohmann::json::array(), tr = nlohmann::json::array();
            const size_t row = (size_t)t.seq[i] * r.batch.T + t.pos[i];
            for (int l = 0; l < r.model.num_layers; ++l) {
                const auto& ids = r.roll.sequences[t.seq[i]].expert_ids[l];
                ro.push_back(std::vector<int32_t>(ids.begin() + (size_t)t.pos[i] * k, ids.begin() + (size_t)(t.pos[i] + 1) * k));
                const auto& used = r.train.used_expert_ids[l];
                tr.push_back(std::vector<int32_t>(used.begin() + row * k, used.begin() + (row + 1) * k));
            }
            e["experts_rollout"] = ro;  // [layer][k]; -1 = never fed (last token)
            e["experts_train"] = tr;
        }
        tokens.push_back(std::move(e));
    }
    nlohmann::json seqs = nlohmann::json::array();
    for (const auto& s : r.roll.sequences)
        seqs.push_back({{"prompt_len", s.prompt_len}, {"tokens", s.tokens}, {"finished_by_eos", s.finished_by_eos}});
    return {{"format", "mismatch-lab-probe-dump/1"},
            {"model", r.model.preset_name()},
            {"layers", moe ? r.model.num_layers : 0},
            {"experts_per_token", moe ? k : 0},
            {"sequences", seqs},
            {"tokens", tokens},
            {"summary", probe_summary_json(r)}};
}

}  // namespace mlk
