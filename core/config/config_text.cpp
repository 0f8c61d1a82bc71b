// How config messages quote what they were given: keys and values escaped and
// cut short, so that no input (a 100 KB string, a key holding \u0000, invalid
// UTF-8, a value nested 100000 levels deep) can flood, cut or crash a message.
#include <cctype>
#include <cstdio>
#include <utility>

#include "core/config/schema_table.h"

namespace mlk::config_detail {

using nlohmann::json;

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not one.
size_t utf8_length(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c >= 0xE0 && c <= 0xEF) n = 3;
    else if (c >= 0xF0 && c <= 0xF4) n = 4;
    else return 0;
    if (i + n > s.size()) return 0;
    for (size_t k = 1; k < n; ++k)
        if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
    return n;
}

void put_excerpt(const json& v, std::string& out, size_t budget, int depth) {
    if (out.size() >= budget) return;
    switch (v.type()) {
        case json::value_t::object:
        case json::value_t::array: {
            const bool obj = v.is_object();
            out += obj ? '{' : '[';
            if (depth >= 3 && !v.empty()) {
                out += "...";
            } else {
                bool first = true;
                for (auto it = v.begin(); it != v.end() && out.size() < budget; ++it) {
                    if (!first) out += ',';
                    first = false;
                    if (obj) out += "\"" + excerpt_text(it.key(), budget) + "\":";
                    put_excerpt(it.value(), out, budget, depth + 1);
                }
            }
            out += obj ? '}' : ']';
            return;
        }
        case json::value_t::string: out += "\"" + excerpt_text(v.get_ref<const std::string&>(), budget) + "\""; return;
        default: out += v.dump(); return;  // scalars: short, and dump() cannot fail on them
    }
}

}  // namespace

[[noreturn]] void fail(const std::string& msg) { throw ConfigError(msg); }

std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += sep;
        out += v[i];
    }
    return out;
}

std::string lower(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

std::string json_kind(const json& v) {
    switch (v.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "bool";
        case json::value_t::string: return "string";
        case json::value_t::array: return "array";
        case json::value_t::object: return "object";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned: return "integer";
        case json::value_t::number_float: return "number";
        default: return "value";
    }
}

std::string excerpt_text(std::string_view s, size_t max) {
    std::string out;
    size_t shown = 0;  // characters, not bytes
    for (size_t i = 0; i < s.size();) {
        if (shown == max) return out + "...";
        const auto c = static_cast<unsigned char>(s[i]);
        char buf[8];
        if (c < 0x20 || c == 0x7F) {
            std::snprintf(buf, sizeof buf, "\\u%04X", c);
            out += buf;
            ++i;
        } else if (const size_t n = utf8_length(s, i); n > 0) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
            ++i;
        }
        ++shown;
    }
    return out;
}

std::string excerpt(const json& v) {
    std::string out;
    put_excerpt(v, out, kExcerptChars, 0);
    if (out.size() > kExcerptChars) out = out.substr(0, kExcerptChars) + "...";
    // The cut may split a multi-byte character; show its bytes escaped instead.
    return excerpt_text(out, kExcerptChars + 3);
}

int json_depth(const json& v, int limit) {
    int deepest = 0;
    std::vector<std::pair<const json*, int>> pending = {{&v, 0}};
    while (!pending.empty()) {
        const auto [x, d] = pending.back();
        pending.pop_back();
        if (!x->is_structured()) continue;
        deepest = std::max(deepest, d + 1);
        if (deepest > limit) return deepest;
        for (const auto& child : *x) pending.emplace_back(&child, d + 1);
    }
    return deepest;
}

}  // namespace mlk::config_detail
