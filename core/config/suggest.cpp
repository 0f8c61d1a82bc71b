// Suggestions for unknown keys: close spellings of our keys, and our key for a
// verl / slime / ms-swift / Hugging Face config.json name however it is written (dotted, nested, as a
// --flag), because renamed options that silently do nothing are a known trap.
#include <algorithm>
#include <cctype>
#include <limits>

#include "core/config/config_file.h"
#include "core/config/schema_table.h"

namespace mlk {

// Community fields are display text ("tis_upper_bound, --tis-clip",
// "algorithm.rollout_correction.rollout_is (null = off)"): the names are the
// lower-case identifiers outside parentheses; "[0]" indexes and a trailing ':'
// are not part of a name.
std::vector<std::string> community_names(const ConfigKey& key) {
    std::vector<std::string> out;
    for (const std::string* field : {&key.verl, &key.slime, &key.swift, &key.hf}) {
        std::string flat;
        int depth = 0;
        for (char ch : *field) {
            if (ch == '(') ++depth;
            else if (ch == ')') depth = std::max(0, depth - 1);
            else if (depth == 0) flat += ch;
        }
        std::string cur;
        auto flush = [&] {
            while (!cur.empty() && cur.back() == ':') cur.pop_back();
            if (const auto b = cur.find('['); b != std::string::npos && cur.back() == ']') cur.erase(b);
            bool name = cur.size() >= 2;
            for (char c : cur)
                name = name && (std::islower(static_cast<unsigned char>(c)) ||
                                std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
            if (name && std::find(out.begin(), out.end(), cur) == out.end()) out.push_back(cur);
            cur.clear();
        };
        for (char ch : flat) {
            if (ch == ',' || ch == '/' || ch == ';' || std::isspace(static_cast<unsigned char>(ch))) flush();
            else cur += ch;
        }
        flush();
    }
    return out;
}

namespace config_detail {

namespace {

// Keys longer than this get no suggestions: no name of ours or theirs is near.
constexpr size_t kMaxSuggestLength = 200;

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

// One spelling for every way of writing a name: lower case, '-' as '_', no
// leading dashes of a flag, no "[i]" indexes ("--TIS-Clip" -> "tis_clip",
// "optim.betas[0]" -> "optim.betas").
std::string normalise(std::string_view s) {
    std::string out;
    int bracket = 0;
    for (char ch : s) {
        if (ch == '[') ++bracket;
        else if (ch == ']') bracket = std::max(0, bracket - 1);
        else if (bracket == 0) out += ch == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    const auto b = out.find_first_not_of('_');
    return b == std::string::npos ? std::string() : out.substr(b);
}

std::string last_part(const std::string& s) { return s.substr(s.rfind('.') + 1); }  // npos + 1 == 0

// Where a community name comes from, for the message.
std::string community_source(const ConfigKey& k, const std::string& name) {
    for (const auto& [field, tool] : {std::pair{&k.verl, "verl"},
                                      {&k.slime, "slime"},
                                      {&k.swift, "ms-swift"},
                                      {&k.hf, "Hugging Face config.json"}}) {
        ConfigKey one;
        one.verl = *field;
        const auto names = community_names(one);
        if (std::find(names.begin(), names.end(), name) != names.end()) return tool;
    }
    return "community";
}

}  // namespace

std::string unknown_key_message(std::string_view key) {
    std::string msg = "unknown key \"" + excerpt_text(key, 120) + "\"";
    if (key.size() > kMaxSuggestLength) return msg + "; no known key is anywhere near that long";
    const std::string q = normalise(key);
    const std::string q_last = last_part(q);

    constexpr size_t kNone = std::numeric_limits<size_t>::max();
    std::vector<std::pair<size_t, std::string>> scored;  // (score, suggestion)
    for (const auto& e : entries()) {
        const auto& name = e.meta.key;
        const std::string name_last = last_part(name);
        size_t best = kNone;
        std::string via;
        // Their spelling: the whole dotted path (as written nested or dotted),
        // its tail, or the last part of a longer name ("rollout_is_threshold").
        for (const auto& c : community_names(e.meta)) {
            const std::string n = normalise(c);
            size_t s = kNone;
            if (q == n) s = 0;
            else if (n.size() > q.size() && n.ends_with("." + q)) s = 1;
            else if (q.size() > n.size() && q.ends_with("." + n) && n.find('.') != std::string::npos) s = 1;
            else if (q_last == last_part(n) && q_last.size() >= 3) s = 2;
            if (s < best) best = s, via = community_source(e.meta, c) + ": " + c;
        }
        // Our spelling, mistyped or in the wrong section.
        size_t ours = kNone;
        const size_t d_full = edit_distance(q, name);
        if (d_full <= std::max<size_t>(2, name.size() / 4)) ours = 1 + d_full;
        if (q_last == name_last) ours = std::min<size_t>(ours, 2);
        else if (const size_t d = edit_distance(q_last, name_last); d <= (name_last.size() > 6 ? 2u : 1u))
            ours = std::min<size_t>(ours, 4 + d);
        if (ours < best) best = ours, via.clear();
        if (best == kNone) continue;
        scored.emplace_back(best, via.empty() ? name : name + " (" + via + ")");
    }
    std::stable_sort(scored.begin(), scored.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<std::string> sugg;
    for (const auto& s : scored) {
        if (sugg.size() == 5) break;
        sugg.push_back(s.second);
    }
    if (!sugg.empty()) return msg + "; did you mean: " + join(sugg) + "?";
    return msg + "; no close match among the " + std::to_string(entries().size()) + " known keys";
}

}  // namespace config_detail
}  // namespace mlk
