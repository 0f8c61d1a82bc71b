// `run`: a new RL run into the store, stepped to its end.
#include <cstdio>
#include <optional>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/drive.h"
#include "core/config/presets.h"
#include "core/rl/base_policy.h"

namespace mlk::cli {

int cmd_run(const Argv& argv) {
    Spec spec;
    spec.values = {"--preset", "--config", "--set", "--steps", "--db", "--name", "--cache-dir"};
    spec.repeatable = {"--set"};
    spec.flags = {"--json"};
    const Args a = parse_args(argv, spec);
    Config c = build_config(a);
    const int steps = parse_steps(a, 0);
    if (steps > 0) apply_set(c, "rl.steps=" + std::to_string(steps));
    require_devices(c);
    const std::string preset = a.get("--preset", "custom");
    // Runs of one preset are told apart by what differs (seed, --set, --config), as in the GUI.
    const std::string name = a.get("--name", default_run_name(a.get("--preset", ""), preset_base(a), c));
    if (name.find_first_not_of(" \t\n\r") == std::string::npos)
        throw UsageError(
            "--name: the name is empty; allowed: any text with a visible character (without --name "
            "the run is named after its preset and what differs from it)");
    db_path(a);  // checked before the cache directory is made
    // Checked (and made) here, before the base policy's warm-up can take minutes.
    const std::string cache = directory_option(a, "--cache-dir", default_cache_dir());
    print_warnings(c);
    if (!a.has("--json")) print_footprint(c);
    Store store = writable(open_store(a));
    std::optional<RunController> created;
    try {
        created.emplace(RunController::create(store, c, preset, name, cache, cli_callbacks()));
    } catch (const StoppedInWarmup& e) {
        return stopped_in_warmup(e, store.path(), a.has("--json"));
    }
    RunController& rc = *created;
    if (!a.has("--json")) {
        const BasePolicy& b = rc.base();
        const std::string grown = b.grown_from_layers > 0 ? ", grown from " + std::to_string(b.grown_from_layers) +
                                                                " layers after " + std::to_string(b.shallow_steps) +
                                                                " of its " + std::to_string(b.sft_steps) + " SFT steps"
                                                          : std::string();
        std::printf("run %lld: %s, %lld steps, base policy %s (held-out reward %.3f%s)\n", (long long)rc.run_id(),
                    name.c_str(), (long long)rc.total_steps(), b.from_cache ? "from cache" : "trained", b.eval_reward,
                    grown.c_str());
    }
    return drive(rc, a.has("--json"));
}

}  // namespace mlk::cli
