// `resume`: an existing run from its last checkpoint, stepped to its end
// (or --steps more steps past that checkpoint).
#include <cstdio>
#include <optional>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/drive.h"
#include "core/rl/base_policy.h"

namespace mlk::cli {

int cmd_resume(const Argv& argv) {
    Spec spec;
    spec.values = {"--db", "--steps", "--cache-dir"};
    spec.flags = {"--json"};
    spec.positional = "RUN id";
    spec.min_positional = spec.max_positional = 1;
    const Args a = parse_args(argv, spec);
    const int64_t id = parse_run_id("RUN", a.positional[0]);
    const int steps = parse_steps(a, 0);
    Store store = writable(open_existing_store(a, Store::Intent::write));
    // A run stopped during its warm-up warms up again (cached when it can be).
    const std::string cache = directory_option(a, "--cache-dir", default_cache_dir());
    if (!store.run_info(id))
        throw UsageError("RUN: run " + std::to_string(id) + " is not in " + store.path() +
                         " (see `mismatch-lab-cli runs`)");
    std::optional<RunController> resumed;
    try {
        resumed.emplace(RunController::resume(store, id, cli_callbacks(), steps, cache));
    } catch (const WarmupCancelled&) {
        return stopped_in_warmup(StoppedInWarmup(id), store.path(), a.has("--json"));
    }
    RunController& rc = *resumed;
    for (const std::string& note : rc.notes())
        std::fprintf(stderr, "resuming run %lld: %s\n", (long long)id, note.c_str());
    const int64_t from = *rc.resumed_from();
    if (from < 0)
        std::fprintf(stderr, "resuming run %lld from its base policy (no step checkpoint yet); starting at step 1\n",
                     (long long)id);
    else
        std::fprintf(stderr, "resuming run %lld from the checkpoint of step %lld; continuing at step %lld\n",
                     (long long)id, (long long)from + 1, (long long)from + 2);
    return drive(rc, a.has("--json"));
}

}  // namespace mlk::cli
