#include "core/config/sweep.h"

#include "core/config/stable_hash.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "core/config/presets.h"

namespace mlk {

// Generated at configure time from resources/families/*.json.
extern const std::vector<std::pair<const char*, const char*>> kFamilyFiles;

namespace {

std::vector<std::string> split_values(const std::string& text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (true) {
        const size_t comma = text.find(',', start);
        out.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return out;
}

}  // namespace

void add_grid_option(SweepSpec& spec, const std::string& key_eq_values) {
    const size_t eq = key_eq_values.find('=');
    if (eq == std::string::npos || eq == 0)
        throw ConfigError("--grid: '" + key_eq_values +
                          "' is not key=v1,v2,...; allowed: a config key and values, "
                          "e.g. correction.is_upper=1.5,2,5");
    const std::string key = key_eq_values.substr(0, eq), values = key_eq_values.substr(eq + 1);
    if (key == "seed") throw ConfigError("--grid: seed is set by --seeds (seeds 1..N); allowed: any other config key");
    if (values.empty()) throw ConfigError("--grid: " + key + " has an empty value list; allowed: v1,v2,...");
    for (const auto& [k, v] : spec.grid)
        if (k == key)
            throw ConfigError("--grid: " + key + " is given twice; allowed: each key once, values joined by ','");
    std::vector<std::string> list = split_values(values);
    std::set<std::string> seen;
    for (const auto& v : list) {
        if (v.empty()) throw ConfigError("--grid: " + key + " has an empty value in '" + values + "'");
        if (!seen.insert(v).second) throw ConfigError("--grid: " + key + " lists '" + v + "' twice");
    }
    spec.grid.emplace_back(key, std::move(list));
}

namespace {

// The one expansion both entry points share: `bases` (name, configuration)
// outermost, then the grid's odometer.
std::vector<SweepConfig> expand_over(const SweepSpec& spec, const std::vector<std::pair<std::string, Config>>& bases) {
    if (spec.seeds < 1 || spec.seeds > kMaxSweepSeeds)
        throw ConfigError("--seeds: " + std::to_string(spec.seeds) + " is out of range; allowed: 1 to " +
                          std::to_string(kMaxSweepSeeds));
    std::vector<SweepConfig> out;
    std::set<std::string> names;
    for (const auto& [preset, base] : bases) {
        // Odometer over the grid's value lists, the first key outermost.
        std::vector<size_t> at(spec.grid.size(), 0);
        while (true) {
            SweepConfig sc;
            sc.preset = preset;
            sc.config = base;
            for (size_t k = 0; k < spec.grid.size(); ++k) {
                const auto& [key, values] = spec.grid[k];
                try {
                    apply_set(sc.config, key + "=" + values[at[k]]);
                } catch (const ConfigError& e) {
                    throw ConfigError(std::string("--grid: ") + e.what());
                }
                sc.settings.emplace_back(key, values[at[k]]);
            }
            if (spec.steps > 0) apply_set(sc.config, "rl.steps=" + std::to_string(spec.steps));
            sc.name = default_run_name(preset, base, sc.config);
            // default_run_name shows at most three differences; spell every
            // grid setting out when that leaves two configurations one name.
            if (names.count(sc.name)) {
                sc.name = preset;
                for (const auto& [k, v] : sc.settings) sc.name += " " + k + "=" + v;
            }
            if (!names.insert(sc.name).second)
                throw ConfigError("--grid: two configurations are the same (" + sc.name +
                                  "); allowed: distinct values");
            out.push_back(std::move(sc));
            size_t k = spec.grid.size();
            while (k > 0 && ++at[k - 1] == spec.grid[k - 1].second.size()) at[--k] = 0;
            if (k == 0) break;
        }
    }
    return out;
}

}  // namespace

std::vector<SweepConfig> expand_sweep(const SweepSpec& spec,
                                      const std::function<Config(const std::string&)>& preset_of) {
    const std::vector<std::string> presets = spec.presets.empty() ? std::vector<std::string>{"default"} : spec.presets;
    std::vector<std::pair<std::string, Config>> bases;
    for (const std::string& preset : presets) bases.emplace_back(preset, preset_of(preset));
    return expand_over(spec, bases);
}

std::vector<SweepConfig> expand_sweep(const SweepSpec& spec, const std::string& preset, const Config& base) {
    if (!spec.presets.empty())
        throw ConfigError("sweep: presets are given by the base configuration here; allowed: no presets");
    return expand_over(spec, {{preset, base}});
}

std::vector<std::string> sweep_warnings(const SweepSpec& spec, const std::vector<SweepConfig>& configs) {
    std::vector<std::string> out;
    for (const auto& [key, values] : spec.grid) {
        const ConfigKey* k = find_config_key(key);
        if (!k || values.size() < 2 || configs.empty()) continue;
        std::string reason;
        const bool read_somewhere = std::any_of(configs.begin(), configs.end(), [&](const SweepConfig& c) {
            for (const IgnoredKey& ig : config_ignored_keys(c.config))
                if (ig.key == k->key) {
                    if (reason.empty()) reason = ig.reason;
                    return false;
                }
            return true;
        });
        if (!read_somewhere)
            out.push_back(key + ": no configuration of this sweep reads it, so its " + std::to_string(values.size()) +
                          " values give the same runs under different names: " + reason);
    }
    return out;
}

Config sweep_run_config(const SweepConfig& c, const SweepSpec& spec, int seed) {
    Config cfg = c.config;
    apply_set(cfg, "seed=" + std::to_string(seed));
    if (spec.steps > 0) apply_set(cfg, "rl.steps=" + std::to_string(spec.steps));
    return cfg;
}

std::string sweep_run_name(const SweepConfig& c, int seed) {
    // Every sweep runs seeds 1..N whatever its base's seed: the default seed
    // goes unnamed, as in a run's default name.
    return seed == Config{}.seed ? c.name : c.name + " seed=" + std::to_string(seed);
}

nlohmann::json sweep_identity(const std::vector<SweepConfig>& configs, const SweepSpec& spec) {
    nlohmann::json j = {{"seeds", spec.seeds}, {"configs", nlohmann::json::array()}};
    for (const auto& c : configs) {
        nlohmann::json flat = config_to_flat_json(c.config);
        flat.erase("seed");  // the seeds are their own part of the spec
        j["configs"].push_back({{"name", c.name}, {"preset", c.preset}, {"config", flat}});
        j["steps"] = c.config.rl.steps;
    }
    return j;
}

std::string sweep_hash(const nlohmann::json& identity) {
    return fnv1a_hex(identity.dump(), kStoredNameBasis);  // nlohmann sorts object keys: the dump is canonical
}

const std::vector<SweepFamily>& sweep_families() {
    static const std::vector<SweepFamily> all = [] {
        std::vector<SweepFamily> v;
        for (const auto& [name, text] : kFamilyFiles) {
            const nlohmann::json j = nlohmann::json::parse(text);
            SweepFamily f{name, j.at("description").get<std::string>(), {}};
            f.spec.presets = j.at("presets").get<std::vector<std::string>>();
            for (auto it = j.at("grid").begin(); it != j.at("grid").end(); ++it)
                f.spec.grid.emplace_back(it.key(), it.value().get<std::vector<std::string>>());
            f.spec.seeds = j.at("seeds").get<int>();
            f.spec.steps = j.at("steps").get<int>();
            v.push_back(std::move(f));
        }
        std::sort(v.begin(), v.end(), [](const SweepFamily& a, const SweepFamily& b) { return a.name < b.name; });
        return v;
    }();
    return all;
}

const SweepFamily& sweep_family(const std::string& name) {
    std::string allowed;
    for (const auto& f : sweep_families()) {
        if (f.name == name) return f;
        allowed += (allowed.empty() ? "" : ", ") + f.name;
    }
    throw ConfigError("--family: '" + name + "' is unknown; allowed: " + allowed);
}

}  // namespace mlk
