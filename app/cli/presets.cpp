// `presets`: the RL presets with their one-line descriptions.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/config/presets.h"

namespace mlk::cli {

int cmd_presets(const Argv& argv) {
    Spec spec;
    spec.flags = {"--json"};
    const Args a = parse_args(argv, spec);
    if (a.has("--json")) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& p : presets())
            j.push_back({{"name", p.name}, {"description", p.description}, {"config", p.config}});
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    for (const auto& p : presets()) std::printf("%-28s %s\n", p.name.c_str(), p.description.c_str());
    return 0;
}

}  // namespace mlk::cli
