// Routing replay within an RL step: R2 replays the old-policy forward's own
// routes in the mini-steps, R3 the rollout's; without replay the policy's
// drift over the mini-steps flips routes.
#include <gtest/gtest.h>

#include <vector>

#include "core/config/config.h"
#include "core/model/params.h"
#include "core/rl/session.h"

using namespace mlk;

namespace {

// Steps of an MoE session from random weights, with four mini-steps and a
// learning rate high enough that the policy moves within a step.
std::vector<StepRecord> steps_with(RoutingReplay replay, int n) {
    Config c;
    c.model.kind = ModelKind::moe;
    c.rl.prompts_per_step = 8;
    c.rl.samples_per_prompt = 4;
    c.rl.mini_steps = 4;
    c.optim.lr = 3e-3;
    c.task.partial_credit = true;  // rewards that differ at random weights, so advantages are not all 0
    c.moe.routing_replay = replay;
    validate(c);
    const ModelConfig m = model_config_of(c);
    const ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), (uint64_t)c.seed);
    RlSession session(c, params, nullptr, 0, "", 0);
    std::vector<StepRecord> out;
    for (int i = 0; i < n; ++i) out.push_back(session.step());
    return out;
}

double metric(const StepRecord& r, const char* name) { return RlSession::metric(r, name); }

TEST(RoutingReplay, R2ReplaysTheOldPolicyRoutesInEveryMiniStep) {
    const auto off = steps_with(RoutingReplay::off, 3), r2 = steps_with(RoutingReplay::R2, 3),
               r3 = steps_with(RoutingReplay::R3, 3);
    double drift = 0;
    for (const auto& s : off) drift += metric(s, "router_diff_ministep");
    EXPECT_GT(drift, 0.0) << "without replay the mini-steps' drift must flip some routes";
    for (size_t i = 0; i < r2.size(); ++i) {
        EXPECT_EQ(metric(r2[i], "router_diff_ministep"), 0.0) << "step " << i;
        EXPECT_EQ(metric(r3[i], "router_diff_ministep"), 0.0) << "step " << i;
        EXPECT_EQ(metric(r3[i], "router_diff_router"), 0.0) << "R3 replays the rollout's routes";
    }
    // R2 leaves the recompute alone: the first step's rollout-vs-training flips
    // are those of no replay, bit for bit; later steps differ as training did.
    EXPECT_EQ(metric(r2[0], "router_diff_router"), metric(off[0], "router_diff_router"));
    EXPECT_GT(metric(r2[0], "router_diff_router"), 0.0);
    EXPECT_EQ(metric(r2[0], "k3_kl"), metric(off[0], "k3_kl"));
    EXPECT_NE(metric(r2[0], "policy_loss"), metric(off[0], "policy_loss"))
        << "replayed routes change the later mini-steps' losses";
}

TEST(RoutingReplay, R2NeedsAnMoeModelAndWarnsWithOneMiniStep) {
    Config c;
    c.moe.routing_replay = RoutingReplay::R2;
    try {
        validate(c);
        FAIL() << "R2 on a dense model must be refused";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("moe.routing_replay=R2 needs model.kind=moe"), std::string::npos)
            << e.what();
    }
    c.model.kind = ModelKind::moe;
    EXPECT_NO_THROW(validate(c));
    bool warned = false;
    for (const auto& w : config_warnings(c)) warned |= w.find("rl.mini_steps=1") != std::string::npos;
    EXPECT_TRUE(warned);
}

}  // namespace
