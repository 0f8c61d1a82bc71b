// `runs`: the runs of a store, one line (or JSON object) each.
#include <algorithm>
#include <cstdio>
#include <string>
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
    // Columns as wide as their longest value; the name, free text of any
    // length (a sweep's spells its settings out), last, so it never pushes
    // the others out of line.
    int id = 2, preset = 6, status = 6;
    for (const auto& r : runs) {
        id = std::max(id, int(std::to_string(r.id).size()));
        preset = std::max(preset, int(r.preset.size()));
        status = std::max(status, int(r.status.size()));
    }
    std::printf("%-*s  %-*s  %5s  %-*s  %-24s  %s\n", id, "id", status, "status", "steps", preset, "preset", "created",
                "name");
    for (const auto& r : runs)
        std::printf("%-*lld  %-*s  %5lld  %-*s  %-24s  %s\n", id, (long long)r.id, status, r.status.c_str(),
                    (long long)r.steps, preset, r.preset.c_str(), r.created.c_str(), r.name.c_str());
    return 0;
}

}  // namespace mlk::cli
