// The RL presets of resources/presets/*.json, compiled into the binary so the
// CLI and the workbench need no installed data files. Each is a partial
// configuration (missing keys take defaults) with a one-sentence description
// and a group: where it comes from (Miles, verl, the R3 paper ...) or what it
// teaches (batch invariance, FP8), for pickers that list them by group.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace mlk {

struct Preset {
    std::string name;
    std::string description;
    std::string group;      // "" when the file names none (shown under kOtherPresetGroup)
    nlohmann::json config;  // partial, nested
};

inline constexpr const char* kOtherPresetGroup = "Other";

// Sorted by name. A preset file holds `description`, `config` and optionally
// `group`; any other field is refused (a typo such as "gruop" would otherwise
// silently drop the preset into Other).
const std::vector<Preset>& presets();
// Every group of presets() once, in teaching order: the known groups first
// (basics, then what the engines do, then the sources), then any other group
// alphabetically, kOtherPresetGroup last.
std::vector<std::string> preset_groups();
// One preset file's text as presets() reads it; throws std::logic_error on an
// unknown field and nlohmann's errors on malformed JSON or a missing field.
Preset parse_preset(const std::string& name, const std::string& text);
// The group a preset is listed under (kOtherPresetGroup when it names none).
std::string preset_group(const Preset& p);
const Preset* find_preset(const std::string& name);  // nullptr when unknown
// The full configuration of a preset (defaults filled in); throws ConfigError
// naming the allowed presets when unknown.
Config preset_config(const std::string& name);
// What a sweep's (or `--preset`'s) preset names: a model preset ("dense-tiny",
// ...: the defaults with that model) or an RL preset; ConfigError led by
// `field`, naming every preset, when unknown.
Config any_preset_config(const std::string& name, const std::string& field);

// A run's default name: its preset and what distinguishes it from the
// preset, e.g. "r3-grpo is_upper=1.5 seed=3" (settings by their last key
// part, at most three, then "+N more", then the seed), so runs of one preset
// can be told apart. `base` is the preset's configuration, `c` the run's.
std::string default_run_name(const std::string& preset, const Config& base, const Config& c);

}  // namespace mlk
