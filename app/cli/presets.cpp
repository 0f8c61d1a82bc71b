// `presets`: the model presets (architectures) and the RL presets, each with
// its one-line description. Both are what `--preset` takes. RL presets are
// listed by group in teaching order, as the workbench's picker lists them.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/config/presets.h"
#include "core/model/params.h"

namespace mlk::cli {

int cmd_presets(const Argv& argv) {
    Spec spec;
    spec.flags = {"--json"};
    const Args a = parse_args(argv, spec);
    nlohmann::json j = nlohmann::json::array();
    for (const auto& name : model_preset_names()) {
        const ModelConfig m = model_preset(name);
        const std::string desc =
            "model: " + architecture_text(m) + "; " + std::to_string(make_param_layout(m).total) + " parameters";
        const ModelSettings s = preset_settings(name);
        j.push_back({{"name", name},
                     {"type", "model"},
                     {"description", desc},
                     {"config", {{"model", {{"kind", enum_name(s.kind)}, {"size", enum_name(s.size)}}}}}});
    }
    for (const auto& group : preset_groups())
        for (const auto& p : presets())
            if (preset_group(p) == group)
                j.push_back({{"name", p.name},
                             {"type", "rl"},
                             {"group", group},
                             {"description", p.description},
                             {"config", p.config}});
    if (a.has("--json")) {
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    std::string heading = "models";
    std::printf("%s\n", heading.c_str());
    for (const auto& p : j) {
        const std::string group = p.value("group", "models");
        if (group != heading) std::printf("\n%s\n", (heading = group).c_str());
        std::printf("  %-28s %s\n", p["name"].get<std::string>().c_str(), p["description"].get<std::string>().c_str());
    }
    return 0;
}

}  // namespace mlk::cli
