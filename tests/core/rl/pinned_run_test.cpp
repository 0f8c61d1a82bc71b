// Pins the behaviour of the core bit for bit: short RL runs (dense and MoE,
// several correction paths) and one probe, compared with values recorded in
// tests/data/pinned_run.json. Restructuring the code must not change a bit of
// what a run computes; a deliberate change of behaviour rewrites the file:
//   MLK_WRITE_PINNED=1 build/tests/pinned_run_test
// and says why in its commit.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/rl/base_policy.h"
#include "core/metrics/catalogue.h"
#include "core/model/model.h"
#include "core/model/params.h"
#include "core/rl/probe.h"
#include "core/rl/session.h"

using namespace mlk;
using nlohmann::json;

namespace {

const std::string kPinnedFile = std::string(MLK_SOURCE_DIR) + "/tests/data/pinned_run.json";

// Exact text of a double: C99 hex float, so equality of text is equality of bits.
std::string bits(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a", x);
    return buf;
}

uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

// A fresh cache per process: the base-policy warm-up is trained, and so pinned, every time.
std::string fresh_cache_dir() {
    static const std::string dir = [] {
        char tmpl[] = "/tmp/mlk_pinned_XXXXXX";
        return std::string(mkdtemp(tmpl));
    }();
    return dir;
}

Config base_config() {
    Config c;
    c.base.target_reward = 0.2;  // short warm-ups; rewards are non-zero so every step trains
    c.rl.prompts_per_step = 8;
    c.rl.samples_per_prompt = 4;
    c.kernels.threads = 2;  // the fast family's split may follow the thread count
    return c;
}

struct Case {
    const char* name;
    Config cfg;
};

std::vector<Case> cases() {
    std::vector<Case> out;
    {
        Config c = base_config();
        c.rl.old_policy = OldPolicyMode::decoupled;
        c.correction.is_level = IsLevel::token;
        c.correction.is_mode = IsMode::truncate;
        c.task.partial_credit = true;
        out.push_back({"dense-decoupled-token-tis", c});
    }
    {
        Config c = base_config();
        c.model.kind = ModelKind::moe;
        c.moe.routing_replay = RoutingReplay::R3;
        c.rl.old_policy = OldPolicyMode::decoupled;
        c.rl.mini_steps = 2;
        c.correction.is_level = IsLevel::geometric;
        c.correction.is_mode = IsMode::mask;
        c.correction.rs_level = RsLevel::sequence;
        c.correction.rs_lower = 0.5;
        c.correction.rs_upper = 2.0;
        c.correction.batch_normalize = true;
        out.push_back({"moe-r3-2mini-geo-mask-rs", c});
    }
    {
        Config c = base_config();
        c.model.kind = ModelKind::moe;
        c.rl.old_policy = OldPolicyMode::bypass;
        c.rl.loss = PolicyLossType::gspo;
        c.rl.mini_steps = 2;
        c.rl.estimator = AdvantageEstimator::rloo;
        c.correction.is_level = IsLevel::sequence;
        c.correction.veto_threshold = 1e-4;
        c.rollout.max_batch = 8;
        c.rollout.top_p = 0.9;
        c.task.name = TaskName::sort;
        out.push_back({"moe-bypass-gspo-seq-veto-maxbatch", c});
    }
    {
        Config c = base_config();
        c.kernels.batch_invariant = true;
        c.rollout.precision = Dtype::f32;
        c.rl.loss = PolicyLossType::reinforce;
        c.rl.loss_agg = LossAggregation::seq_mean_token_mean;
        out.push_back({"dense-truly-on-policy-reinforce", c});
    }
    return out;
}

json record_case(const std::string& name, const Config& cfg) {
    // A cache of its own: the pin must not depend on which settings the cache key holds.
    const BasePolicy base = make_base_policy(cfg, fresh_cache_dir() + "/" + name, {});
    RlSession session(cfg, base.params, nullptr, 1, "/nonexistent-checkpoints");
    json steps = json::array();
    for (int s = 0; s < 3; ++s) {
        StepRecord r = session.step();
        json metrics = json::object();
        for (const auto& [name, v] : r.metrics)
            if (!metric_is_timing(name)) metrics[name] = bits(v);
        uint64_t h = fnv1a(r.token_samples.data(), 0);
        for (const auto& t : r.token_samples) {
            h = fnv1a(&t.lp_roll, 8, h);
            h = fnv1a(&t.lp_train, 8, h);
            const int32_t ints[4] = {t.idx, t.seq, t.pos, t.token};
            h = fnv1a(ints, sizeof ints, h);
        }
        for (const auto& p : r.ft_curve) h = fnv1a(&p.frac, 8, fnv1a(&p.t, 8, h));
        for (const auto& b : r.router_hist) h = fnv1a(&b.count, 8, fnv1a(&b.d, 4, h));
        for (const auto& t : r.text_samples) {
            h = fnv1a(t.prompt.data(), t.prompt.size(), h);
            h = fnv1a(t.response.data(), t.response.size(), h);
            h = fnv1a(&t.reward, 8, h);
            h = fnv1a(t.tokens_json.data(), t.tokens_json.size(), h);
        }
        h = fnv1a(r.worst_tokens_json.data(), r.worst_tokens_json.size(), h);
        steps.push_back({{"step", r.step}, {"metrics", metrics}, {"drilldown_fnv", std::to_string(h)}});
    }
    const auto& p = session.params();
    return {{"steps", steps},
            {"base_sft_steps", base.sft_steps},
            {"base_eval_reward", bits(base.eval_reward)},
            {"base_fnv", std::to_string(fnv1a(base.params.data(), base.params.size() * sizeof(float)))},
            {"params_fnv", std::to_string(fnv1a(p.data(), p.size() * sizeof(float)))}};
}

json record_probe() {
    Config c = base_config();
    c.model.kind = ModelKind::moe;
    const ModelConfig m = model_config_of(c);
    const ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), 99);
    ProbeResult r = run_probe(c, params);
    const json summary = probe_summary_json(r);
    json out = json::object();
    for (const auto& [k, v] : summary.items()) out[k] = v.is_number_float() ? json(bits(v.get<double>())) : v;
    return out;
}

json record_all() {
    json j = json::object();
    for (const Case& c : cases()) j[c.name] = record_case(c.name, c.cfg);
    j["probe-moe-tiny"] = record_probe();
    return j;
}

}  // namespace

TEST(PinnedRun, EveryBitMatchesTheRecordedRuns) {
    const json now = record_all();
    std::filesystem::remove_all(fresh_cache_dir());
    if (std::getenv("MLK_WRITE_PINNED")) {
        std::ofstream(kPinnedFile) << now.dump(1) << "\n";
        GTEST_SKIP() << "wrote " << kPinnedFile;
    }
    std::ifstream in(kPinnedFile);
    ASSERT_TRUE(in) << "missing " << kPinnedFile;
    const json pinned = json::parse(in);
    ASSERT_EQ(pinned.size(), now.size());
    for (const auto& [name, want] : pinned.items()) {
        ASSERT_TRUE(now.contains(name)) << name;
        if (name.rfind("probe", 0) == 0) {
            for (const auto& [k, v] : want.items()) EXPECT_EQ(now[name][k], v) << name << " " << k;
            EXPECT_EQ(now[name].size(), want.size()) << name;
            continue;
        }
        for (const char* k : {"base_sft_steps", "base_eval_reward", "base_fnv"})
            EXPECT_EQ(now[name][k], want[k]) << name << ": base policy " << k << " differs";
        EXPECT_EQ(now[name]["params_fnv"], want["params_fnv"]) << name << ": final parameters differ";
        for (size_t s = 0; s < want["steps"].size(); ++s) {
            const json& ws = want["steps"][s];
            const json& ns = now[name]["steps"][s];
            EXPECT_EQ(ns["drilldown_fnv"], ws["drilldown_fnv"]) << name << " step " << s << ": drill-down rows differ";
            EXPECT_EQ(ns["metrics"].size(), ws["metrics"].size()) << name << " step " << s;
            for (const auto& [metric, v] : ws["metrics"].items())
                EXPECT_EQ(ns["metrics"].value(metric, json("absent")), v) << name << " step " << s << " " << metric;
        }
    }
}
