#include "core/rl/probe.h"

#include "core/metrics/catalogue.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/rl/footprint.h"
#include "core/rl/tasks.h"

namespace mlk {

ProbeResult run_probe(const Config& cfg, std::vector<float> params) {
    ProbeResult r;
    r.model = model_config_of(cfg);
    auto task = make_task(enum_name(cfg.task.name), cfg.task.length);
    std::vector<std::vector<int32_t>> prompts;
    std::vector<Prompt> drawn;
    for (int p = 0; p < cfg.rl.prompts_per_step; ++p) {
        drawn.push_back(task->sample((uint64_t)cfg.seed, (uint64_t)p));
        for (int n = 0; n < cfg.rl.samples_per_prompt; ++n) prompts.push_back(drawn.back().tokens);
    }
    if (cfg.kernels.threads > 0) set_num_threads(cfg.kernels.threads);
    RolloutEngine rollout(r.model, device_ops_for(cfg.rollout.device, "rollout.device"));
    TrainEngine train(r.model, device_ops_for(cfg.train.device, "train.device"));
    static_cast<Measurement&>(r) = measure(cfg, rollout, train, params, prompts, hash_u64((uint64_t)cfg.seed, 0x9a0be),
                                           false, {}, task_environment(*task, drawn, cfg.rl.samples_per_prompt));
    return r;
}

std::vector<float> probe_initial_params(const Config& cfg) {
    const ModelConfig m = model_config_of(cfg);
    const ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), (uint64_t)cfg.seed);
    return params;
}

nlohmann::json probe_json(const ProbeResult& r, const Config& cfg) {
    nlohmann::json j = probe_summary_json(r);
    const ModelFootprint f = model_footprint(cfg);
    j["params"] = f.params;
    j["memory_mb"] = f.memory_mb;
    return j;
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
    j["tv_token"] = m.tv_token;
    j["tv_seq"] = m.tv_seq;
    for (int b = 0; b < kProbBuckets; ++b) {
        j[std::string(kProbBucketMetrics[b].count)] = m.buckets[b].count;
        j[std::string(kProbBucketMetrics[b].frac)] = m.buckets[b].frac;
        j[std::string(kProbBucketMetrics[b].abs_diff)] = m.buckets[b].abs_diff_mean;
        j[std::string(kProbBucketMetrics[b].k3_share)] = m.buckets[b].k3_share;
    }
    j["router_diff_router"] = r.router.router_level;
    j["router_diff_token"] = r.router.token_level;
    j["router_diff_sequence"] = r.router.sequence_level;
    j["tokens"] = m.num_valid_tokens;
    j["bitwise_equal"] = r.bitwise_equal;
    return j;
}

nlohmann::json probe_dump_json(const ProbeResult& r) {
    const TokenView& t = r.tokens;
    const std::vector<int> moe_layers = r.model.moe_layers();  // the routing tables' rows, in order
    const bool moe = !moe_layers.empty();
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
            for (size_t l = 0; l < moe_layers.size(); ++l) {
                const auto& ids = r.roll.sequences[t.seq[i]].expert_ids[l];
                ro.push_back(
                    std::vector<int32_t>(ids.begin() + (size_t)t.pos[i] * k, ids.begin() + (size_t)(t.pos[i] + 1) * k));
                const auto& used = r.train.used_expert_ids[l];
                tr.push_back(std::vector<int32_t>(used.begin() + row * k, used.begin() + (row + 1) * k));
            }
            e["experts_rollout"] = ro;  // [MoE layer][k]; -1 = never fed (last token)
            e["experts_train"] = tr;
        }
        tokens.push_back(std::move(e));
    }
    // Prompt positions have no token record, yet their routes shape every
    // response log-prob (through attention, and the last one predicts the
    // first response token): with them the dump holds the routing of every
    // position, so R3 can be replayed and checked outside.
    const auto experts_at = [&](const std::vector<std::vector<int32_t>>& ids, size_t row) {
        nlohmann::json layers = nlohmann::json::array();  // [MoE layer][k]
        for (const auto& layer : ids)
            layers.push_back(std::vector<int32_t>(layer.begin() + row * k, layer.begin() + (row + 1) * k));
        return layers;
    };
    nlohmann::json seqs = nlohmann::json::array();
    for (size_t i = 0; i < r.roll.sequences.size(); ++i) {
        const RolloutSequence& s = r.roll.sequences[i];
        nlohmann::json e{{"prompt_len", s.prompt_len}, {"tokens", s.tokens}, {"finished_by_eos", s.finished_by_eos}};
        if (moe) {
            // [prompt position][MoE layer][k]
            nlohmann::json ro = nlohmann::json::array(), tr = nlohmann::json::array();
            for (int pos = 0; pos < s.prompt_len; ++pos) {
                ro.push_back(experts_at(s.expert_ids, (size_t)pos));
                tr.push_back(experts_at(r.train.used_expert_ids, i * r.batch.T + pos));
            }
            e["prompt_experts_rollout"] = ro;
            e["prompt_experts_train"] = tr;
        }
        seqs.push_back(std::move(e));
    }
    return {{"format", "mismatch-lab-probe-dump/1"},
            {"model", r.model.preset_name()},
            {"layers", moe_layers.size()},
            {"moe_layers", moe_layers},
            {"experts_per_token", moe ? k : 0},
            {"sequences", seqs},
            {"tokens", tokens},
            {"summary", probe_summary_json(r)}};
}

}  // namespace mlk
