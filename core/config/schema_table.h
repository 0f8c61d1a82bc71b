// The schema's rows as core/config's own files see them: each key's metadata
// with typed accessors into Config (the table is schema.cpp), and the few text
// helpers the parsing files share, so that every message quotes keys and values
// the same bounded, escaped way. Internal to core/config: config.h is the
// public face.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"

namespace mlk::config_detail {

struct Entry {
    ConfigKey meta;
    std::function<nlohmann::json(const Config&)> get;
    std::function<void(Config&, const nlohmann::json&)> put;  // value already checked and canonical
    // text: "" when the text is well formed, else why not (without the key).
    std::function<std::string(const std::string&)> check_text;

    Entry& label(std::string s) {
        meta.label = std::move(s);
        return *this;
    }
    Entry& range(double lo, double hi, bool lo_excl = false, bool hi_excl = false) {
        meta.min = lo, meta.max = hi, meta.min_exclusive = lo_excl, meta.max_exclusive = hi_excl;
        return *this;
    }
    Entry& desc(std::string s) {
        meta.description = std::move(s);
        return *this;
    }
    Entry& names(std::string verl, std::string slime = "", std::string swift = "") {
        meta.verl = std::move(verl), meta.slime = std::move(slime), meta.swift = std::move(swift);
        return *this;
    }
    Entry& hf(std::string name) {
        meta.hf = std::move(name);
        return *this;
    }
    Entry& text_format(std::string format, std::function<std::string(const std::string&)> check) {
        meta.format = std::move(format);
        check_text = std::move(check);
        return *this;
    }
};

// ---- schema.cpp -------------------------------------------------------------
const std::vector<Entry>& entries();  // display order
const Entry* find_entry(std::string_view key);
// True when some key starts with `prefix` + "." ("rollout", "correction").
bool is_section_prefix(std::string_view prefix);

// ---- suggest.cpp ------------------------------------------------------------
// "unknown key "k"; did you mean: a, b (verl name ...)?" for a dotted key.
std::string unknown_key_message(std::string_view key);

// ---- config_text.cpp --------------------------------------------------------
// Values and keys are echoed at most this long (plus an ellipsis), so a
// 100 KB value cannot flood a message.
inline constexpr size_t kExcerptChars = 60;

[[noreturn]] void fail(const std::string& msg);
std::string join(const std::vector<std::string>& v, const char* sep = ", ");
std::string lower(std::string s);
std::string json_kind(const nlohmann::json& v);  // "string", "integer", "array", ...
// Control characters as \u00XX, cut to `max` characters with "...": a key or
// text as a message shows it (a key holding \u0000 is shown, not cut there).
std::string excerpt_text(std::string_view s, size_t max = kExcerptChars);
// A JSON value as compact JSON, cut to about kExcerptChars; never recurses
// deeper than a few levels, so any value is safe to quote.
std::string excerpt(const nlohmann::json& v);
// The deepest nesting of objects and arrays in `v` (a scalar is 0), counted
// without recursion and stopping once past `limit`.
int json_depth(const nlohmann::json& v, int limit);

}  // namespace mlk::config_detail
