// `metrics`: the metric catalogue (core/metrics/catalogue.h), the one list of
// what every stored metric is, as a readable table or a JSON array.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/metrics/catalogue.h"

namespace mlk::cli {

namespace {

std::string str(std::string_view s) { return std::string(s); }

}  // namespace

int cmd_metrics(const Argv& argv) {
    Spec spec;
    spec.flags = {"--json"};
    const Args a = parse_args(argv, spec);
    if (a.has("--json")) {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        for (const auto& m : metric_catalogue())
            j.push_back({{"name", str(m.name)},
                         {"title", str(m.title)},
                         {"unit", str(m.unit)},
                         {"better", str(enum_name(m.better))},
                         {"kind", str(enum_name(m.kind))},
                         {"axis", str(enum_name(m.axis))},
                         {"key_chart", m.key_chart},
                         {"group", str(m.group)},
                         {"meaning", str(m.meaning)},
                         {"formula", str(m.formula)}});
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    // One line of facts per metric, then its meaning and formula indented
    // below: the prose is too long for a column.
    std::printf("%-24s %-8s %-12s %-6s %-4s %-13s %s\n", "name", "better", "kind", "axis", "key", "group", "unit");
    std::string_view group;
    for (const auto& m : metric_catalogue()) {
        if (m.group != group) {
            if (!group.empty()) std::printf("\n");
            group = m.group;
        }
        std::printf("%-24s %-8s %-12s %-6s %-4s %-13s %s\n", str(m.name).c_str(), str(enum_name(m.better)).c_str(),
                    str(enum_name(m.kind)).c_str(), str(enum_name(m.axis)).c_str(), m.key_chart ? "yes" : "",
                    str(m.group).c_str(), m.unit.empty() ? "-" : str(m.unit).c_str());
        std::printf("    %s: %s\n", str(m.title).c_str(), str(m.meaning).c_str());
        if (!m.formula.empty()) std::printf("    = %s\n", str(m.formula).c_str());
    }
    return 0;
}

}  // namespace mlk::cli
