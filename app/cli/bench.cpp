// `bench`: milliseconds per RL step by phase for each model preset (or those
// named by --preset), from random weights (the base policy does not change
// the cost of a step).
#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/config/presets.h"
#include "core/model/model.h"
#include "kernels/kernels.h"
#include "core/rl/session.h"

namespace mlk::cli {

int cmd_bench(const Argv& argv) {
    Spec spec;
    spec.values = {"--steps", "--set", "--preset"};
    spec.repeatable = {"--set", "--preset"};
    spec.flags = {"--json"};
    const Args a = parse_args(argv, spec);
    const int steps = parse_steps(a, 5);
    {  // every --set checked once, before the first (slow) preset runs
        Config c;
        for (const auto& kv : a.all("--set")) apply_set(c, kv);
        validate(c);
    }
    // A model preset benches its model with the default numerics; an RL
    // preset its model and its numerics (FP8 quantises every GEMM input).
    std::vector<std::string> names = a.all("--preset");  // default: every model preset
    for (const auto& n : names) preset_named(n);         // every name checked before the first runs
    if (names.empty()) names = model_preset_names();
    nlohmann::json all = nlohmann::json::array();
    if (!a.has("--json"))
        std::printf("%-24s %8s %11s %11s %11s %11s %10s   (%d steps, %d threads)\n", "preset", "params", "rollout_ms",
                    "recompute_ms", "train_ms", "step_ms", "tokens/s", steps, num_threads());
    for (const auto& name : names) {
        Config c = preset_named(name);
        for (const auto& kv : a.all("--set")) apply_set(c, kv);
        ModelConfig m = model_config_of(c);
        ParamLayout layout = make_param_layout(m);
        std::vector<float> params(layout.total);
        init_params(m, layout, params.data(), (uint64_t)c.seed);
        RlSession session(c, params, nullptr, 0, "", 0);
        session.step();  // warm caches and the thread pool
        double roll = 0, rec = 0, train = 0, tok = 0, wall = 0;
        for (int i = 0; i < steps; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            StepRecord r = session.step();
            wall += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            roll += RlSession::metric(r, "rollout_ms");
            rec += RlSession::metric(r, "recompute_ms");
            train += RlSession::metric(r, "train_ms");
            tok += RlSession::metric(r, "tokens_per_s");
        }
        nlohmann::json j = {{"preset", name},
                            {"params", layout.total},
                            {"rollout_ms", roll / steps},
                            {"recompute_ms", rec / steps},
                            {"train_ms", train / steps},
                            {"step_ms", wall / steps},
                            {"tokens_per_s", tok / steps}};
        all.push_back(j);
        if (!a.has("--json"))
            std::printf("%-24s %8lld %11.1f %11.1f %11.1f %11.1f %10.0f\n", name.c_str(), (long long)layout.total,
                        roll / steps, rec / steps, train / steps, wall / steps, tok / steps);
    }
    if (a.has("--json")) std::cout << all.dump() << "\n";
    return 0;
}

}  // namespace mlk::cli
