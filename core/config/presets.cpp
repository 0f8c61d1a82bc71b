#include "core/config/presets.h"

#include <algorithm>

namespace mlk {

// Generated at configure time from resources/presets/*.json.
extern const std::vector<std::pair<const char*, const char*>> kPresetFiles;

const std::vector<Preset>& presets() {
    static const std::vector<Preset> all = [] {
        std::vector<Preset> v;
        for (const auto& [name, text] : kPresetFiles) {
            nlohmann::json j = nlohmann::json::parse(text);
            v.push_back({name, j.at("description").get<std::string>(), j.at("config")});
        }
        std::sort(v.begin(), v.end(), [](const Preset& a, const Preset& b) { return a.name < b.name; });
        return v;
    }();
    return all;
}

const Preset* find_preset(const std::string& name) {
    for (const auto& p : presets())
        if (p.name == name) return &p;
    return nullptr;
}

Config preset_config(const std::string& name) {
    const Preset* p = find_preset(name);
    if (!p) {
        std::string allowed;
        for (const auto& q : presets()) allowed += (allowed.empty() ? "" : ", ") + q.name;
        throw ConfigError("preset '" + name + "' is unknown; allowed: " + allowed);
    }
    return config_from_json(p->config);
}

}  // namespace mlk
