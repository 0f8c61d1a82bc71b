#include "core/config/presets.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "core/config/model_builder.h"

namespace mlk {

// Generated at configure time from resources/presets/*.json.
extern const std::vector<std::pair<const char*, const char*>> kPresetFiles;

Preset parse_preset(const std::string& name, const std::string& text) {
    const nlohmann::json j = nlohmann::json::parse(text);
    for (auto it = j.begin(); it != j.end(); ++it)
        if (it.key() != "description" && it.key() != "group" && it.key() != "config")
            throw std::logic_error("resources/presets/" + name + ".json: unknown field '" + it.key() +
                                   "'; allowed: description, group, config");
    return {name, j.at("description").get<std::string>(), j.value("group", std::string()), j.at("config")};
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> all = [] {
        std::vector<Preset> v;
        for (const auto& [name, text] : kPresetFiles) v.push_back(parse_preset(name, text));
        std::sort(v.begin(), v.end(), [](const Preset& a, const Preset& b) { return a.name < b.name; });
        return v;
    }();
    return all;
}

std::string preset_group(const Preset& p) { return p.group.empty() ? kOtherPresetGroup : p.group; }

std::vector<std::string> preset_groups() {
    // A student meets the basics first, then what each engine does, then the
    // recipes of each source; the order is a teaching choice, kept here.
    static const std::vector<std::string> order = {
        "Basics", "Batch invariance", "Production engines", "FP8", "R3 paper and R2", "Miles", "verl", "ms-swift",
        "Tasks",  "Stability lab"};
    std::set<std::string> present;
    for (const auto& p : presets()) present.insert(preset_group(p));
    std::vector<std::string> out;
    for (const auto& g : order)
        if (present.erase(g)) out.push_back(g);
    const bool other = present.erase(kOtherPresetGroup) > 0;
    out.insert(out.end(), present.begin(), present.end());
    if (other) out.push_back(kOtherPresetGroup);
    return out;
}

const Preset* find_preset(const std::string& name) {
    for (const auto& p : presets())
        if (p.name == name) return &p;
    return nullptr;
}

std::string default_run_name(const std::string& preset, const Config& base, const Config& c) {
    const nlohmann::json a = config_to_flat_json(base), b = config_to_flat_json(c);
    std::vector<std::string> parts;
    std::string seed;
    for (auto it = b.begin(); it != b.end(); ++it) {
        if (a.contains(it.key()) && a[it.key()] == it.value()) continue;
        if (it.key() == "rl.steps") continue;  // a run's length, not what it tries
        const std::string& key = it.key();
        const std::string leaf = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
        const std::string value = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
        (key == "seed" ? seed : parts.emplace_back()) = leaf + "=" + value;
    }
    std::string name = preset.empty() ? std::string("custom") : preset;
    for (size_t i = 0; i < parts.size() && i < 3; ++i) name += " " + parts[i];
    if (parts.size() > 3) name += " +" + std::to_string(parts.size() - 3) + " more";
    // Last and never in "+N more": the seed is what tells a sweep's runs of
    // one configuration apart.
    if (!seed.empty()) name += " " + seed;
    return name;
}

Config any_preset_config(const std::string& name, const std::string& field) {
    const auto& models = model_preset_names();
    if (std::find(models.begin(), models.end(), name) != models.end()) {
        Config c;
        c.model = preset_settings(name);
        return c;
    }
    if (find_preset(name)) return preset_config(name);
    std::string allowed;
    for (const auto& m : models) allowed += m + ", ";
    for (const auto& p : presets()) allowed += p.name + ", ";
    allowed.resize(allowed.size() - 2);
    throw ConfigError(field + ": '" + name + "' is unknown; allowed: " + allowed);
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
