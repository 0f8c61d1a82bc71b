// The RL presets of resources/presets/*.json, compiled into the binary so the
// CLI and the workbench need no installed data files. Each is a partial
// configuration (missing keys take defaults) with a one-sentence description.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace mlk {

struct Preset {
    std::string name;
    std::string description;
    nlohmann::json config;  // partial, nested
};

// Sorted by name.
const std::vector<Preset>& presets();
const Preset* find_preset(const std::string& name);  // nullptr when unknown
// The full configuration of a preset (defaults filled in); throws ConfigError
// naming the allowed presets when unknown.
Config preset_config(const std::string& name);

// A run's default name: its preset and what distinguishes it from the
// preset, e.g. "r3-grpo seed=3 is_upper=1.5" (settings by their last key
// part, at most three, then "+N more"), so runs of one preset can be told
// apart. `base` is the preset's configuration, `c` the run's.
std::string default_run_name(const std::string& preset, const Config& base, const Config& c);

}  // namespace mlk
