// `probe`: the mismatch of one rollout batch against the training forward,
// from initial weights or a checkpoint.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/drive.h"
#include "core/config/atomic_file.h"
#include "core/engines/numerics.h"
#include "core/model/checkpoint.h"
#include "core/model/model.h"
#include "core/rl/probe.h"

namespace mlk::cli {

namespace {

// The checkpoint's weights (which must match the configured model) or initial ones.
std::vector<float> initial_params(const Config& c, const Args& a, ModelConfig* model_out) {
    ModelConfig m = model_config_of(c);
    if (a.has("--checkpoint")) {
        const std::string dir = a.get("--checkpoint");
        if (dir.empty() || !std::filesystem::is_directory(dir))
            throw UsageError("--checkpoint: '" + dir +
                             "' is not a directory; allowed: a checkpoint directory written by "
                             "`mismatch-lab-cli checkpoint` (model.safetensors + config.json)");
        LoadedCheckpoint ck;
        try {
            ck = load_checkpoint(dir);
        } catch (const CheckpointError& e) {
            throw UsageError(std::string("--checkpoint: ") + e.what());
        }
        if (!(ck.model == m))
            throw UsageError("--checkpoint: " + dir + " holds a " + ck.model.preset_name() + " model (" +
                             architecture_text(ck.model) + ") but the configuration asks for " + m.preset_name() +
                             " (" + architecture_text(m) +
                             "); set model.kind / model.size and the model.* "
                             "dimensions to match");
        *model_out = ck.model;
        return ck.params;
    }
    *model_out = m;
    return probe_initial_params(c);
}

}  // namespace

int cmd_probe(const Argv& argv) {
    Spec spec;
    spec.values = {"--preset", "--set", "--config", "--checkpoint", "--dump"};
    spec.repeatable = {"--set"};
    spec.flags = {"--json"};
    const Args a = parse_args(argv, spec);
    const Config c = build_config(a);
    require_devices(c);
    const std::string dump = a.has("--dump") ? output_file_option(a, "--dump") : "";
    ModelConfig m;
    std::vector<float> params = initial_params(c, a, &m);
    const bool json = a.has("--json");
    if (!json) print_footprint(c);
    ProbeResult r = run_probe(c, std::move(params));
    if (!dump.empty()) write_file_atomically(dump, probe_dump_json(r).dump() + "\n");
    const nlohmann::json s = probe_json(r, c);
    if (json) {
        std::cout << s.dump() << "\n";
    } else {
        std::printf("model %s  kernels %s  R3 %s\n", m.preset_name().c_str(),
                    c.kernels.batch_invariant ? "batch-invariant" : "fast",
                    std::string(enum_name(c.moe.routing_replay)).c_str());
        // Where each engine rounds, resolved from its profile and overrides.
        std::printf("  rollout %-14s %s\n", std::string(enum_name(c.rollout.profile)).c_str(),
                    numerics_text(rollout_numerics(c), true).c_str());
        std::printf("  train   %-14s %s\n", std::string(enum_name(c.train.profile)).c_str(),
                    numerics_text(train_numerics(c), false).c_str());
        for (const char* key :
             {"tokens", "bitwise_equal", "k3_kl", "kl", "logp_abs_diff_mean", "logp_abs_diff_max", "F@1.1", "F@1.5",
              "F@2", "F@5", "F@10", "router_diff_router", "router_diff_token", "router_diff_sequence"})
            std::printf("  %-22s %s\n", key, s[key].dump().c_str());
    }
    return 0;
}

}  // namespace mlk::cli
