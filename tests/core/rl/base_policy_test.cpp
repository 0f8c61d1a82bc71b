// The base-policy warm-up's cache key and held-out evaluation: the key must
// change with every setting that changes the cached weights (or a second run
// would silently load a policy made under other settings) and with nothing
// else (or every run would redo the warm-up).
#include "core/rl/base_policy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/config/settings.h"
#include "core/model/params.h"
#include "kernels/kernels.h"

using namespace mlk;
using nlohmann::json;

namespace {

// A valid value of `key` other than its value in `c` (each candidate is
// checked against the key's type and range by config_set).
json other_value(const Config& c, const ConfigKey& k) {
    const json v = config_get(c, k.key);
    std::vector<json> candidates;
    switch (k.type) {
        case ValueType::boolean: candidates = {!v.get<bool>()}; break;
        case ValueType::enumeration:
            for (const auto& a : k.allowed) candidates.push_back(a);
            break;
        case ValueType::integer: candidates = {v.get<int64_t>() + 1, v.get<int64_t>() - 1}; break;
        case ValueType::text: candidates = {"0", "1"}; break;  // the layer list, the only text key
        case ValueType::number: {
            const double x = v.get<double>();
            candidates = {x * 0.5, x * 2, x + 0.1, x - 0.1, x + 1, 0.5};
            break;
        }
    }
    for (const json& cand : candidates) {
        if (cand == v) continue;
        Config probe = c;
        try {
            config_set(probe, k.key, cand);
        } catch (const ConfigError&) {
            continue;
        }
        if (config_get(probe, k.key) != v) return cand;
    }
    ADD_FAILURE() << "no other valid value for " << k.key;
    return v;
}

bool shapes_the_warm_up(const std::string& key) {
    for (const char* prefix : {"task.", "model.", "base.", "rollout."})
        if (key.rfind(prefix, 0) == 0) return true;
    return key == "seed" || key == "kernels.batch_invariant" || key == "kernels.threads";
}

std::string temp_dir(const std::string& name) {
    const auto d =
        std::filesystem::temp_directory_path() / ("mlk_base_policy_test_" + std::to_string(getpid()) + "_" + name);
    std::filesystem::remove_all(d);
    return d.string();
}

}  // namespace

TEST(BasePolicy, KeyChangesWithEverySettingOfTheWarmUpAndNoOther) {
    Config base;
    base.kernels.threads = 3;        // a fixed count, so changing it is visible
    base.base.grow_from_layers = 1;  // a growing warm-up, which every base.* setting shapes
    const std::string k0 = base_policy_key(base);
    int relevant = 0, irrelevant = 0;
    for (const ConfigKey& k : config_schema()) {
        Config c = base;
        config_set(c, k.key, other_value(base, k));
        ASSERT_NE(config_get(c, k.key), config_get(base, k.key)) << k.key;
        const bool changed = base_policy_key(c) != k0;
        EXPECT_EQ(changed, shapes_the_warm_up(k.key))
            << k.key << (changed ? " changes" : " does not change") << " the base-policy key";
        (shapes_the_warm_up(k.key) ? relevant : irrelevant) += 1;
    }
    // Enough keys on each side, and the named ones below, so a schema change
    // cannot empty the loop.
    EXPECT_GE(relevant, 15);
    EXPECT_GE(irrelevant, 20);
    for (const char* key : {"rollout.temperature", "task.partial_credit", "task.eval_size", "kernels.batch_invariant",
                            "kernels.threads", "base.target_reward", "model.size", "seed"})
        EXPECT_TRUE(shapes_the_warm_up(key)) << key;
    for (const char* key : {"optim.lr", "correction.is_level", "rl.steps", "train.precision"}) {
        Config c = base;
        config_set(c, key, other_value(base, *find_config_key(key)));
        EXPECT_EQ(base_policy_key(c), k0) << key;
    }
}

TEST(BasePolicy, GrowthSettingsEnterTheKeyOnlyWhenTheWarmUpGrows) {
    // dense-tiny (2 layers) trains directly by default: its key leaves the
    // growth settings out, whatever they say.
    Config tiny;
    tiny.kernels.threads = 2;
    const std::string k0 = base_policy_key(tiny);
    for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{
             {"base.grow_steps", 50}, {"base.grow_lr", 2e-3}, {"base.grow_from_layers", 2}}) {
        Config c = tiny;
        config_set(c, key, value);
        EXPECT_EQ(base_policy_key(c), k0) << key;
    }
    Config grown = tiny;
    config_set(grown, "base.grow_from_layers", 1);
    EXPECT_NE(base_policy_key(grown), k0);
    config_set(grown, "base.sft_steps", 0);  // nothing trains, nothing grows
    Config untrained = tiny;
    config_set(untrained, "base.sft_steps", 0);
    EXPECT_EQ(base_policy_key(grown), base_policy_key(untrained));

    // A deep model grows by default: auto and its resolved depth are one key.
    Config deep;
    deep.kernels.threads = 2;
    deep.model = preset_settings("dense-deep");
    Config two = deep, direct = deep;
    config_set(two, "base.grow_from_layers", 2);
    config_set(direct, "base.grow_from_layers", 12);
    EXPECT_EQ(base_growth_layers(deep), 2);
    EXPECT_EQ(base_policy_key(two), base_policy_key(deep));
    EXPECT_NE(base_policy_key(direct), base_policy_key(deep));
    EXPECT_EQ(base_growth_layers(direct), 0);
}

TEST(BasePolicy, KeyFollowsThePoolWhenThreadsIsZero) {
    Config c;
    c.kernels.threads = 0;
    const int before = num_threads();
    set_num_threads(1);
    const std::string one = base_policy_key(c);
    set_num_threads(2);
    EXPECT_NE(base_policy_key(c), one);
    set_num_threads(before);
}

// A growing warm-up: the shallow model trains first, leaving base.grow_steps
// of the budget; the grown one trains at least that long before the target
// counts; the cached policy says how it was made.
TEST(BasePolicy, AGrowingWarmUpTrainsTheShallowModelThenTheGrownOne) {
    Config c;
    c.kernels.threads = 2;
    c.task.eval_size = 8;
    c.base.grow_from_layers = 1;
    c.base.sft_steps = 100;
    c.base.grow_steps = 30;
    c.base.target_reward = 0;  // reached at every evaluation: each stage stops at its first allowed one
    const std::string dir = temp_dir("grow");
    std::vector<std::pair<int, int>> seen;  // (step, layers) of each report
    const BasePolicy b = make_base_policy(c, dir, [&](const BaseProgress& p) {
        seen.emplace_back(p.step, p.layers);
        EXPECT_EQ(p.model_layers, 2);
        EXPECT_EQ(p.total, 100);
    });
    // Evaluations every 25 steps of a stage: the shallow one stops at its
    // first (25), the grown one at its first from step 30 on (50).
    EXPECT_EQ(b.grown_from_layers, 1);
    EXPECT_EQ(b.shallow_steps, 25);
    EXPECT_EQ(b.sft_steps, 75);
    ASSERT_EQ(seen.size(), 75u);
    for (size_t i = 0; i < seen.size(); ++i) {
        EXPECT_EQ(seen[i].first, (int)i + 1);
        EXPECT_EQ(seen[i].second, i < 25 ? 1 : 2) << i;
    }
    EXPECT_EQ((int64_t)b.params.size(), make_param_layout(model_config_of(c)).total);

    const BasePolicy again = make_base_policy(c, dir, {});
    EXPECT_TRUE(again.from_cache);
    EXPECT_EQ(again.params, b.params);
    EXPECT_EQ(again.grown_from_layers, 1);
    EXPECT_EQ(again.shallow_steps, 25);
    EXPECT_EQ(again.sft_steps, 75);

    // A budget below base.grow_steps all goes to the grown model.
    c.base.sft_steps = 10;
    const BasePolicy short_budget = make_base_policy(c, dir, {});
    EXPECT_EQ(short_budget.shallow_steps, 0);
    EXPECT_EQ(short_budget.sft_steps, 10);
    std::filesystem::remove_all(dir);
}

TEST(BasePolicy, HeldOutSetHasEvalSizePrompts) {
    Config c;
    c.base.sft_steps = 0;  // the untrained policy, evaluated once
    c.task.partial_credit = true;
    c.kernels.threads = 2;
    auto task = make_task(enum_name(c.task.name), c.task.length);
    const std::string dir = temp_dir("eval_size");
    for (int n : {8, 64, 200}) {
        c.task.eval_size = n;
        BasePolicy b = make_base_policy(c, dir, {});
        EXPECT_FALSE(b.from_cache) << n;
        EXPECT_EQ(b.eval_reward, evaluate_policy(c, b.params, *task, n)) << n;
        for (int other : {8, 64, 200})
            if (other != n) {
                const double r = evaluate_policy(c, b.params, *task, other);
                EXPECT_NE(b.eval_reward, r) << "eval_size " << n << " scored like " << other << " prompts";
            }
    }
    std::filesystem::remove_all(dir);
}
