// `runs`: the runs of a store, one line (or JSON object) each.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace mlk::cli {

int cmd_runs(const Argv& argv) {
    Spec spec;
    spec.values = {"--db"};
    spec.flags = {"--json"};
    const Args a = parse_args(argv, spec);
    Store store = open_existing_store(a);
    const auto runs = store.list_runs();
    if (a.has("--json")) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& r : runs)
            j.push_back({{"id", r.id},
                         {"name", r.name},
                         {"preset", r.preset},
                         {"status", r.status},
                         {"steps", r.steps},
                         {"created", r.created}});
        std::cout << j.dump() << "\n";
        return 0;
    }
    std::printf("%-5s %-28s %-26s %-9s %6s  %s\n", "id", "name", "preset", "status", "steps", "created");
    for (const auto& r : runs)
        std::printf("%-5lld %-28s %-26s %-9s %6lld  %s\n", (long long)r.id, r.name.c_str(), r.preset.c_str(),
                    r.status.c_str(), (long long)r.steps, r.created.c_str());
    return 0;
}

}  // namespace mlk::cli
