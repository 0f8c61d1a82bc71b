// A sweep: the cross product of presets and a grid of settings, each
// configuration run with seeds 1..N. Expanded and checked here, before any
// run starts, with the checks `--set` uses (apply_set, validate), so bad
// input is refused before anything is written. Families are sweeps shipped
// in resources/families/*.json, compiled in as the presets are.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace mlk {

struct SweepSpec {
    std::vector<std::string> presets;  // empty: the defaults ("default")
    // Key and its values, in the order given; keys unique.
    std::vector<std::pair<std::string, std::vector<std::string>>> grid;
    int seeds = 1;  // seeds 1..seeds
    int steps = 0;  // rl.steps of every run when > 0
};

inline constexpr int kMaxSweepSeeds = 1000;

struct SweepConfig {
    std::string name;                                           // default_run_name of the preset and the grid settings
    std::string preset;                                         // as stored with each run
    std::vector<std::pair<std::string, std::string>> settings;  // the grid's key=value of this configuration
    Config config;                                              // seed not yet set
};

// Parses one `--grid key=v1,v2,...` into `spec.grid`. ConfigError naming the
// option and key for an empty key, an empty value list or value, or a key
// given twice; the key and values themselves are checked by expand_sweep.
void add_grid_option(SweepSpec& spec, const std::string& key_eq_values);

// Every configuration: presets (outer) x grid (first key outermost), each
// value set through apply_set, so an unknown key is refused with the same
// suggestions as `--set` and a refused value names the key and its allowed
// values. Seeds outside 1..kMaxSweepSeeds are refused too. `preset_of`
// resolves a preset name (model or RL preset) to its configuration.
std::vector<SweepConfig> expand_sweep(const SweepSpec& spec,
                                      const std::function<Config(const std::string&)>& preset_of);
// The same over one configuration that is not a preset (the workbench's
// form): `base` takes the presets' place, and `preset` names the runs as a
// preset would (configuration names show what the grid changes from `base`).
// `spec.presets` must be empty.
std::vector<SweepConfig> expand_sweep(const SweepSpec& spec, const std::string& preset, const Config& base);

// One warning per grid key that no configuration of the sweep reads, led by
// the key
// (config_ignored_keys: correction.is_upper while correction.is_level is off,
// any correction under rl.old_policy=recompute, ...): its values would give
// the same runs under different names. Not an error: a lesson may sweep a
// setting to show that it does nothing.
std::vector<std::string> sweep_warnings(const SweepSpec& spec, const std::vector<SweepConfig>& configs);

// A run's configuration within the sweep: `c` with `seed` (and the steps).
Config sweep_run_config(const SweepConfig& c, const SweepSpec& spec, int seed);
// A run's name within the sweep: its configuration's name (which spells out
// every grid setting where three would leave two configurations one name),
// then the seed where it is not the default seed (1).
std::string sweep_run_name(const SweepConfig& c, int seed);

// The normalised spec (each configuration's name and full settings, the
// seeds and the steps) and its hash, by which a repeated sweep command finds
// its earlier sweep in the store.
nlohmann::json sweep_identity(const std::vector<SweepConfig>& configs, const SweepSpec& spec);
std::string sweep_hash(const nlohmann::json& identity);

struct SweepFamily {
    std::string name, description;
    SweepSpec spec;
};
// Sorted by name.
const std::vector<SweepFamily>& sweep_families();
// ConfigError naming every family when unknown.
const SweepFamily& sweep_family(const std::string& name);

}  // namespace mlk
