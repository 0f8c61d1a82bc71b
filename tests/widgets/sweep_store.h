// A sweep built by hand for the sweep table and sweep report tests: no
// training, only stored reward curves that collapse in some seeds and not
// in others, linked to their slots as `mismatch-lab-cli sweep` links them.
//
//  - "is_upper=2" (the baseline): seeds 1 and 2 rise to ~0.6 and fall to
//    ~0.05 from step 25 on (a collapse at any collapse_drop); seed 3 holds
//    at ~0.5 (below the other configuration's seeds, so the difference's
//    interval excludes 0 even when the bootstrap draws it three times).
//  - "is_upper=5": seeds 1 and 2 hold at ~0.6; seed 3 sags to ~0.42 (70% of
//    its best): no collapse at the default collapse_drop 0.5, a collapse at
//    0.8. add_sweep_seed writes a seed later (as another process would).
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/store/store.h"

namespace mlk::sweep_fixture {

inline constexpr int kSteps = 40;
inline constexpr int kSeeds = 3;
inline const std::vector<std::string> kConfigs = {"is_upper=2", "is_upper=5"};

inline Config config_of(size_t config) {
    Config c;
    config_set(c, "correction.is_upper", config == 0 ? 2.0 : 5.0);
    config_set(c, "rl.steps", kSteps);
    return c;
}

// A rise, then "hold" (~0.6), "low" (~0.5), "crash" (~0.05 from step 25)
// or "sag" (~0.42).
inline double reward_at(int step, const std::string& shape, int seed) {
    const double noise = 0.01 * std::sin(1.7 * step + seed);
    const double plateau = shape == "low" ? 0.5 : 0.6;
    const double top = plateau + noise;
    if (step < 15) return 0.1 + (plateau - 0.1) * step / 15.0 + noise;
    if (step < 25 || shape == "hold") return top;
    return (shape == "crash" ? 0.05 : 0.42) + noise;
}

inline std::string shape_of(size_t config, int seed) {
    if (config == 0) return seed <= 2 ? "crash" : "low";
    return seed <= 2 ? "hold" : "sag";
}

inline int64_t add_sweep_seed(Store& s, int64_t sweep_id, size_t config, int seed) {
    Config c = config_of(config);
    c.seed = seed;
    const nlohmann::json tags = {kConfigs[config], "seed=" + std::to_string(seed)};
    const int64_t id = s.create_run("default " + kConfigs[config], "default", config_to_json(c).dump(), seed,
                                    RunStatus::running, SweepRun{sweep_id, 0, kConfigs[config], seed, tags.dump()});
    for (int k = 0; k < kSteps; ++k) {
        StepRecord r;
        r.step = k;
        r.metrics = {{"reward_mean", reward_at(k, shape_of(config, seed), seed)},
                     {"grad_norm", 1.0 + 0.1 * std::cos(k)},
                     {"k3_kl", 1e-3},
                     {"F@2", 0.01}};
        s.append_step(id, r);
    }
    s.set_status(id, RunStatus::finished);
    return id;
}

// The sweep with every slot but (`skip_config`, `skip_seed`) stored; pass
// skip_seed 0 to store them all.
inline int64_t make_sweep(Store& s, size_t skip_config = 0, int skip_seed = 0) {
    nlohmann::json spec = {{"seeds", kSeeds}, {"steps", kSteps}, {"configs", nlohmann::json::array()}};
    for (size_t i = 0; i < kConfigs.size(); ++i) {
        nlohmann::json flat = config_to_flat_json(config_of(i));
        flat.erase("seed");
        spec["configs"].push_back({{"name", kConfigs[i]}, {"preset", "default"}, {"config", flat}});
    }
    const int64_t id = s.open_sweep("hand-made", spec.dump());
    for (size_t i = 0; i < kConfigs.size(); ++i)
        for (int seed = 1; seed <= kSeeds; ++seed)
            if (!(i == skip_config && seed == skip_seed)) add_sweep_seed(s, id, i, seed);
    return id;
}

}  // namespace mlk::sweep_fixture
