// Every user-facing setting of a run, in one schema table (config.cpp) that is
// the single source of truth for the GUI form, tooltips, CLI `--set`, JSON
// validation and config diffs. A key's dotted name is also the C++ path of its
// field in `Config` (key "rollout.top_p" is `cfg.rollout.top_p`).
//
// JSON forms accepted by config_from_json (they may be mixed):
//   {"rollout": {"precision": "bf16"}}      nested objects
//   {"rollout.precision": "bf16"}           dotted keys
// Missing keys take their defaults. Unknown keys, wrong JSON types, values out
// of range and unknown enum names throw ConfigError with a message that names
// the key and the allowed values or range (and close matches for unknown keys,
// including the verl / slime / ms-swift spelling of a setting).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/settings.h"

namespace mlk {

class ConfigError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Equal when every schema key has the same value.
bool operator==(const Config& a, const Config& b);

// ---- the schema -----------------------------------------------------------
enum class ValueType { boolean, integer, number, enumeration, text };
std::string_view value_type_name(ValueType t);  // "bool", "int", "number", "enum", "text"

struct ConfigKey {
    std::string key;      // dotted, e.g. "correction.is_upper"
    std::string section;  // group title: Task, Model, Rollout engine, Kernels, MoE & R3,
                          // Policy loss, Correction, Optimizer, Base policy, Run
    std::string label;    // short form label, e.g. "IS upper bound"
    ValueType type = ValueType::number;
    nlohmann::json default_value;
    std::vector<std::string> allowed;  // enumeration: allowed names, in display order
    std::string format;                // text: what the text must look like, for messages and tooltips
    // integer / number range; an open side is +-infinity. Exclusive bounds are
    // written "(" / ")" by range_text().
    double min = 0, max = 0;
    bool min_exclusive = false, max_exclusive = false;
    std::string description;  // one or two sentences, tooltip-ready, formula where there is one
    // Community names ("" when none): verl, slime/Miles, ms-swift, and the
    // field of a Hugging Face config.json (model dimensions).
    std::string verl, slime, swift, hf;

    std::string range_text() const;  // "[0, 1]", "(0.05, 10]", ">= 0", "fp32, bf16, fp16", "true, false", format
    std::string tooltip() const;     // description + range/default + community names, plain text
    // "verl: x; slime/Miles: y; ..." for the names this key has ("" when none).
    std::string community_names() const;
};

// Schema in display order; entries of one section are contiguous.
const std::vector<ConfigKey>& config_schema();
const std::vector<std::string>& config_sections();       // section titles in display order
const ConfigKey* find_config_key(std::string_view key);  // nullptr when unknown

// ---- parsing, printing, validation ----------------------------------------
// Parses nested and/or dotted JSON, then validate(). Throws ConfigError.
Config config_from_json(const nlohmann::json& j);
// A stored run's configuration: config_from_json, except that a numerics
// setting without effect (numerics_keys_without_effect, refused on input) is
// put back to its default first. It changed nothing the run computed, and a
// database written before such settings were refused still reads.
Config stored_config_from_json(const nlohmann::json& j);
// Overlays keys from `j` on `base` (same rules as config_from_json), then validate().
Config config_merge_json(const Config& base, const nlohmann::json& j);
// Full nested form with every key (seed included); round-trips bit for bit.
nlohmann::json config_to_json(const Config& c);
// Flat form {"dotted.key": value} with every key.
nlohmann::json config_to_flat_json(const Config& c);

// CLI `--set key=value`: bool true|false, integers, numbers, enum names, text.
// Checks the key's own type/range and then validate(c). Throws ConfigError.
void apply_set(Config& c, const std::string& key_eq_value);

// Generic access by key (for generic UIs). config_set checks type and range of
// that key only (no cross-field validate, so a form can pass through
// intermediate states); call validate() before using the config.
nlohmann::json config_get(const Config& c, std::string_view key);
void config_set(Config& c, std::string_view key, const nlohmann::json& value);
// Value as display text: "true", "42", "0.001", "bf16".
std::string config_value_text(const Config& c, std::string_view key);

// Cross-field checks; throws ConfigError naming every key involved.
void validate(const Config& c);
// Settings that are legal but have no effect, e.g. an IS level with
// rl.old_policy=recompute. One sentence each; empty when none.
std::vector<std::string> config_warnings(const Config& c);

// Keys whose value has no effect given the others (IS bounds with
// correction.is_level=off, GSPO's clip under the PPO loss, ...), each with
// why: the workbench greys them out and says so.
struct IgnoredKey {
    std::string key, reason;
};
std::vector<IgnoredKey> config_ignored_keys(const Config& c);

struct ConfigDiff {
    std::string key;
    std::string a;  // config_value_text of the first config
    std::string b;
};
// Keys whose values differ, in schema order.
std::vector<ConfigDiff> config_diff(const Config& a, const Config& b);

}  // namespace mlk
