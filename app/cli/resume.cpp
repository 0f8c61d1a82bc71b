// `resume`: an existing run from its last checkpoint, stepped to its end
// (or --steps more steps past that checkpoint).
#include <cstdio>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/drive.h"

namespace mlk::cli {

int cmd_resume(const Argv& argv) {
    Spec spec;
    spec.values = {"--db", "--steps"};
    spec.flags = {"--json"};
    spec.positional = "RUN id";
    spec.min_positional = spec.max_positional = 1;
    const Args a = parse_args(argv, spec);
    const int64_t id = parse_run_id("RUN", a.positional[0]);
    const int steps = parse_steps(a, 0);
    Store store = open_existing_store(a);
    if (!store.run_info(id))
        throw UsageError("RUN: run " + std::to_string(id) + " is not in " + store.path() +
                         " (see `mismatch-lab-cli runs`)");
    RunController rc = RunController::resume(store, id, cli_callbacks(), steps);
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
