// Reading a config from a file or from text a user typed or pasted: a strict
// JSON reader in front of config_merge_json (config.h). Every failure is a
// ConfigError whose message starts with the source (e.g. "config file
// runs/a.json") and names the key or the line and column:
// - a missing, unreadable or oversized file, a directory;
// - invalid JSON, with line and column; bytes after the document ("{} x"); a
//   NUL byte anywhere (nlohmann's parser would stop reading at it);
// - nesting deeper than kMaxConfigDepth, refused while reading, before any
//   recursive walk of the value;
// - a key given twice in one object ({"seed": 1, "seed": 2}, a section twice),
//   or in nested and dotted form;
// - numbers a double cannot hold: 1e400 (too large), 1e-400 (would read as 0).
// Keys and values quoted in messages are escaped and cut short.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace mlk {

// Deepest nesting of objects and arrays a config may hold (a config needs 3);
// checked before anything walks a value recursively (config_merge_json checks
// it too, for values built in code).
inline constexpr int kMaxConfigDepth = 64;

// The names of a setting in verl / slime / ms-swift (or a Hugging Face
// config.json field) as a user would write them:
// the identifiers and --flags of its community fields outside parentheses,
// without "[i]" indexes ("tis_upper_bound, --tis-clip" -> tis_upper_bound,
// --tis-clip). Unknown keys spelled so are answered with the setting's key.
std::vector<std::string> community_names(const ConfigKey& key);

// A config file is a few KB of JSON; larger files are refused unread.
inline constexpr size_t kMaxConfigFileBytes = 16u << 20;

// The strict reader alone: `text` as JSON, with the checks above.
nlohmann::json parse_config_text(std::string_view text, const std::string& source);

// Overlays the config in `text` on `base` (config_merge_json) and validates.
Config config_merge_text(const Config& base, std::string_view text, const std::string& source);

// The same for the file at `path`; messages start with "config file <path>".
Config config_merge_file(const Config& base, const std::string& path);

}  // namespace mlk
