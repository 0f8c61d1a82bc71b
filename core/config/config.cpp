// The schema's public face (config.h): ranges and tooltips, value checks,
// nested/dotted overlay, printing, --set, cross-field validation and diffs.
// The table itself is schema.cpp; unknown-key suggestions suggest.cpp.
#include "core/config/config.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <set>

#include "core/config/config_file.h"
#include "core/config/model_builder.h"
#include "core/config/number_text.h"
#include "core/config/profiles.h"
#include "core/config/schema_table.h"

namespace mlk {

using nlohmann::json;
using namespace config_detail;

std::string_view value_type_name(ValueType t) {
    switch (t) {
        case ValueType::boolean: return "bool";
        case ValueType::integer: return "int";
        case ValueType::number: return "number";
        case ValueType::enumeration: return "enum";
        case ValueType::text: return "text";
    }
    return "?";
}

namespace {
std::string bound_text(double x, ValueType) { return number_text(x); }
}  // namespace

std::string ConfigKey::range_text() const {
    switch (type) {
        case ValueType::boolean: return "true, false";
        case ValueType::enumeration: return join(allowed);
        case ValueType::text: return format;
        case ValueType::integer:
        case ValueType::number: break;
    }
    const bool has_lo = std::isfinite(min), has_hi = std::isfinite(max);
    if (has_lo && has_hi)
        return std::string(min_exclusive ? "(" : "[") + bound_text(min, type) + ", " + bound_text(max, type) +
               (max_exclusive ? ")" : "]");
    if (has_lo) return std::string(min_exclusive ? "> " : ">= ") + bound_text(min, type);
    if (has_hi) return std::string(max_exclusive ? "< " : "<= ") + bound_text(max, type);
    return "any finite number";
}

std::string ConfigKey::tooltip() const {
    std::string t = description;
    const bool quoted = type == ValueType::text;  // so an empty default reads ""
    t += "\n" +
         std::string(type == ValueType::enumeration ? "Values: "
                     : type == ValueType::boolean   ? "Values: "
                     : type == ValueType::text      ? "Format: "
                                                    : "Range: ") +
         range_text() + ". Default: " +
         (default_value.is_string() && !quoted ? default_value.get<std::string>() : default_value.dump()) + ".";
    if (const std::string names = community_names(); !names.empty()) t += "\n" + names + ".";
    return t;
}

std::string ConfigKey::community_names() const {
    std::vector<std::string> names;
    if (!verl.empty()) names.push_back("verl: " + verl);
    if (!slime.empty()) names.push_back("slime/Miles: " + slime);
    if (!swift.empty()) names.push_back("ms-swift: " + swift);
    if (!hf.empty()) names.push_back("Hugging Face config.json: " + hf);
    return join(names, "; ");
}

namespace {

// Checks `v` against the key's type and range (or text format) and returns
// the canonical value (bool, int64, double or string).
json check_value(const Entry& e, const json& v) {
    const ConfigKey& m = e.meta;
    switch (m.type) {
        case ValueType::boolean:
            if (!v.is_boolean())
                fail(m.key + ": expected true or false, got " + excerpt(v) + " (" + json_kind(v) + ")");
            return v;
        case ValueType::enumeration: {
            if (!v.is_string())
                fail(m.key + ": expected one of " + join(m.allowed) + ", got " + excerpt(v) + " (" + json_kind(v) +
                     ")");
            const auto s = v.get<std::string>();
            if (std::find(m.allowed.begin(), m.allowed.end(), s) != m.allowed.end()) return v;
            std::string msg =
                m.key + ": \"" + excerpt_text(s) + "\" is not allowed; allowed values: " + join(m.allowed);
            for (const auto& a : m.allowed)
                if (lower(a) == lower(s)) msg += " (did you mean \"" + a + "\"?)";
            fail(msg);
        }
        case ValueType::text: {
            if (!v.is_string())
                fail(m.key + ": expected text (" + m.format + "), got " + excerpt(v) + " (" + json_kind(v) + ")");
            if (const std::string why = e.check_text ? e.check_text(v.get<std::string>()) : ""; !why.empty())
                fail(m.key + ": " + why);
            return v;
        }
        case ValueType::integer: {
            int64_t x = 0;
            bool ok = false;
            if (v.is_number_unsigned()) {
                auto u = v.get<uint64_t>();
                if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
                    fail(m.key + ": " + v.dump() + " is out of range; allowed range: " + m.range_text());
                x = static_cast<int64_t>(u), ok = true;
            } else if (v.is_number_integer()) {
                x = v.get<int64_t>(), ok = true;
            } else if (v.is_number_float()) {
                double d = v.get<double>();
                if (std::isfinite(d) && d == std::floor(d) && std::abs(d) < 9.2e18)
                    x = static_cast<int64_t>(d), ok = true;
            }
            if (!ok)
                fail(m.key + ": expected an integer in " + m.range_text() + ", got " + excerpt(v) + " (" +
                     json_kind(v) + ")");
            const double xd = static_cast<double>(x);
            if (xd < m.min || xd > m.max)
                fail(m.key + ": " + std::to_string(x) + " is out of range; allowed range: " + m.range_text());
            return json(x);
        }
        case ValueType::number: {
            if (!v.is_number())
                fail(m.key + ": expected a number in " + m.range_text() + ", got " + excerpt(v) + " (" + json_kind(v) +
                     ")");
            const double x = v.get<double>();
            if (!std::isfinite(x)) fail(m.key + ": expected a finite number in " + m.range_text());
            const bool lo_bad = m.min_exclusive ? !(x > m.min) : !(x >= m.min);
            const bool hi_bad = m.max_exclusive ? !(x < m.max) : !(x <= m.max);
            if (lo_bad || hi_bad)
                fail(m.key + ": " + number_text(x) + " is out of range; allowed range: " + m.range_text());
            return json(x);
        }
    }
    fail(m.key + ": unsupported type");
}

const Entry& entry_or_throw(std::string_view key) {
    const Entry* e = find_entry(key);
    if (!e) fail(unknown_key_message(key));
    return *e;
}

// An unknown key holding an object is named down to the first key inside it:
// that is where a nested community spelling shows ({"actor_rollout_ref":
// {"actor": {"optim": {"lr": ...}}}} is actor_rollout_ref.actor.optim.lr).
// Bounded by the depth check in overlay().
std::string first_leaf_path(std::string path, const json* v) {
    while (v->is_object() && !v->empty()) {
        path += "." + v->begin().key();
        v = &v->begin().value();
    }
    return path;
}

// Flattens nested and dotted JSON into (dotted key, value) pairs. Recurses
// only into section objects ("rollout": {...}), so at most one level.
// Every key of obj as (dotted key, value); what cannot be a key is added to
// `errors` and passed over, so one reading reports every bad key.
void flatten(const json& obj, const std::string& prefix, std::vector<std::pair<std::string, const json*>>& out,
             std::set<std::string>& seen, std::vector<std::string>& errors) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        const std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (find_entry(path)) {
            if (!seen.insert(path).second)
                errors.push_back(path + ": given twice (nested and dotted forms of the same key); give it once");
            else out.emplace_back(path, &it.value());
        } else if (it.value().is_object() && is_section_prefix(path)) {
            flatten(it.value(), path, out, seen, errors);
        } else if (is_section_prefix(path)) {
            std::vector<std::string> keys;
            for (const auto& e : entries())
                if (e.meta.key.rfind(path + ".", 0) == 0) keys.push_back(e.meta.key);
            errors.push_back(path + ": expected an object with keys " + join(keys) + ", got " + excerpt(it.value()) +
                             " (" + json_kind(it.value()) + ")");
        } else {
            errors.push_back(unknown_key_message(first_leaf_path(path, &it.value())));
        }
    }
}

void overlay(Config& c, const json& j) {
    if (j.is_null()) return;
    if (!j.is_object()) fail("config: expected a JSON object, got " + json_kind(j));
    // Before anything below walks a value recursively (excerpts, comparisons).
    for (auto it = j.begin(); it != j.end(); ++it)
        if (json_depth(it.value(), kMaxConfigDepth) >= kMaxConfigDepth)
            fail(excerpt_text(it.key()) + ": nested deeper than " + std::to_string(kMaxConfigDepth) +
                 " levels of objects and arrays (a config needs at most 3)");
    std::vector<std::pair<std::string, const json*>> items;
    std::set<std::string> seen;
    std::vector<std::string> errors;
    flatten(j, "", items, seen, errors);
    for (const auto& [key, v] : items) {
        const Entry& e = *find_entry(key);
        try {
            e.put(c, check_value(e, *v));
        } catch (const ConfigError& err) {
            errors.push_back(err.what());
        }
    }
    // Every bad key at once (a user fixing a pasted config one error per try
    // would give up), the first few in full so a message stays readable.
    constexpr size_t kShown = 3;
    if (errors.size() > kShown) {
        const size_t more = errors.size() - kShown;
        errors.resize(kShown);
        errors.push_back("and " + std::to_string(more) + " more");
    }
    if (!errors.empty()) fail(join(errors, "; "));
}

}  // namespace

const std::vector<ConfigKey>& config_schema() {
    static const std::vector<ConfigKey> s = [] {
        std::vector<ConfigKey> v;
        for (const auto& e : entries()) v.push_back(e.meta);
        return v;
    }();
    return s;
}

const std::vector<std::string>& config_sections() {
    static const std::vector<std::string> s = [] {
        std::vector<std::string> v;
        for (const auto& e : entries())
            if (v.empty() || v.back() != e.meta.section) v.push_back(e.meta.section);
        return v;
    }();
    return s;
}

const ConfigKey* find_config_key(std::string_view key) {
    for (const auto& k : config_schema())
        if (k.key == key) return &k;
    return nullptr;
}

Config config_from_json(const json& j) { return config_merge_json(Config{}, j); }

Config stored_config_from_json(const json& j) {
    Config c;
    overlay(c, j);
    const Config defaults;
    for (const NumericsKeyWithoutEffect& k : numerics_keys_without_effect(c))
        config_set(c, k.key, config_get(defaults, k.key));
    validate(c);
    return c;
}

Config config_merge_json(const Config& base, const json& j) {
    Config c = base;
    overlay(c, j);
    validate(c);
    return c;
}

json config_to_json(const Config& c) {
    json j = json::object();
    for (const auto& e : entries()) {
        std::string ptr = "/" + e.meta.key;
        std::replace(ptr.begin(), ptr.end(), '.', '/');
        j[json::json_pointer(ptr)] = e.get(c);
    }
    return j;
}

json config_to_flat_json(const Config& c) {
    json j = json::object();
    for (const auto& e : entries()) j[e.meta.key] = e.get(c);
    return j;
}

json config_get(const Config& c, std::string_view key) { return entry_or_throw(key).get(c); }

void config_set(Config& c, std::string_view key, const json& value) {
    const Entry& e = entry_or_throw(key);
    e.put(c, check_value(e, value));
}

std::string config_value_text(const Config& c, std::string_view key) {
    const json v = config_get(c, key);
    if (v.is_string()) return v.get<std::string>();
    return v.dump();
}

void apply_set(Config& c, const std::string& key_eq_value) {
    const auto eq = key_eq_value.find('=');
    if (eq == std::string::npos) fail("--set expects key=value, got \"" + excerpt_text(key_eq_value) + "\"");
    auto trim = [](std::string s) {
        const auto b = s.find_first_not_of(" \t");
        const auto e = s.find_last_not_of(" \t");
        return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    const std::string key = trim(key_eq_value.substr(0, eq));
    std::string text = trim(key_eq_value.substr(eq + 1));
    const Entry& e = entry_or_throw(key);
    const ConfigKey& m = e.meta;
    json v;
    switch (m.type) {
        case ValueType::boolean: {
            const auto t = lower(text);
            if (t == "true") v = true;
            else if (t == "false") v = false;
            else fail(m.key + ": expected true or false, got \"" + excerpt_text(text) + "\"");
            break;
        }
        case ValueType::integer: {
            int64_t x = 0;
            const char* b = text.data();
            const char* end = b + text.size();
            if (b != end && *b == '+') ++b;
            auto [p, ec] = std::from_chars(b, end, x);
            if (ec == std::errc::result_out_of_range)
                fail(m.key + ": " + excerpt_text(text) + " is out of range; allowed range: " + m.range_text());
            if (ec != std::errc() || p != end || b == end)
                fail(m.key + ": expected an integer in " + m.range_text() + ", got \"" + excerpt_text(text) + "\"");
            v = x;
            break;
        }
        case ValueType::number: {
            double x = 0;
            const char* b = text.data();
            const char* end = b + text.size();
            if (b != end && *b == '+') ++b;
            auto [p, ec] = std::from_chars(b, end, x);
            if (ec == std::errc::result_out_of_range && p == end) {
                // Out of a double's range, or only inside it as a subnormal: strtod tells which.
                x = c_strtod(std::string(b, end).c_str(), nullptr);
                if (std::isinf(x))
                    fail(m.key + ": " + excerpt_text(text) + " is too large for a double (the largest is about " +
                         "1.8e308); allowed range: " + m.range_text());
                if (x == 0)
                    fail(m.key + ": " + excerpt_text(text) + " is too small for a double (it would read as 0; write " +
                         "0 for zero); allowed range: " + m.range_text());
                ec = std::errc();
            }
            if (ec != std::errc() || p != end || b == end || !std::isfinite(x))
                fail(m.key + ": expected a number in " + m.range_text() + ", got \"" + excerpt_text(text) + "\"");
            v = x;
            break;
        }
        case ValueType::enumeration:
        case ValueType::text:
            if (text.size() >= 2 && (text.front() == '"' || text.front() == '\'') && text.back() == text.front())
                text = text.substr(1, text.size() - 2);
            v = text;
            break;
    }
    Config next = c;
    e.put(next, check_value(e, v));
    validate(next);
    c = next;
}

void validate(const Config& c) {
    std::vector<std::string> errors;
    const auto& k = c.correction;

    if (c.moe.routing_replay != RoutingReplay::off && c.model.kind != ModelKind::moe)
        errors.push_back("moe.routing_replay=" + std::string(enum_name(c.moe.routing_replay)) +
                         " needs model.kind=moe (model.kind is " + std::string(enum_name(c.model.kind)) +
                         ": a dense model has no routers to replay)");
    for (auto& e : correction_rule_violations(k)) errors.push_back(std::move(e));
    // fp8 needs a scale: only the matmul inputs and the KV cache are quantised with one.
    const auto storage_point = [&](const char* engine, const char* point, PointDtype d) {
        if (d == PointDtype::fp8_e4m3 || d == PointDtype::fp8_e5m2)
            errors.push_back(std::string(engine) + "." + point + ": " + std::string(enum_name(d)) +
                             " is not a storage precision (fp8 values need a scale; only " + engine +
                             ".matmul_dtype and rollout.kv_cache_dtype take fp8); allowed: auto, fp32, bf16, fp16");
    };
    for (const auto& [engine, pts] :
         {std::pair<const char*, const RoundingPoints*>{"rollout", &c.rollout}, {"train", &c.train}}) {
        storage_point(engine, "residual_dtype", pts->residual_dtype);
        storage_point(engine, "attn_probs_dtype", pts->attn_probs_dtype);
        storage_point(engine, "stats_dtype", pts->stats_dtype);
        storage_point(engine, "lm_head_dtype", pts->lm_head_dtype);
        storage_point(engine, "norm_dtype", pts->norm_dtype);
        storage_point(engine, "silu_dtype", pts->silu_dtype);
        storage_point(engine, "rope_dtype", pts->rope_dtype);
        storage_point(engine, "rope_cache_dtype", pts->rope_cache_dtype);
    }
    // A numerics setting whose every value gives the same numerics is refused
    // when set: it would be silently ignored (`rollout.precision` under a named
    // profile), and what decides instead is named.
    const Config defaults;
    for (const NumericsKeyWithoutEffect& k : numerics_keys_without_effect(c)) {
        const std::string value = config_value_text(c, k.key);
        if (value == config_value_text(defaults, k.key)) continue;
        errors.push_back(k.key + "=" + value + " has no effect: " + k.reason +
                         (k.instead.empty() ? "" : " (set " + k.instead + " instead)"));
    }
    for (auto& e : model_rule_violations(c)) errors.push_back(std::move(e));
    if ((c.rl.estimator == AdvantageEstimator::grpo || c.rl.estimator == AdvantageEstimator::rloo) &&
        c.rl.samples_per_prompt < 2)
        errors.push_back("rl.estimator=" + std::string(enum_name(c.rl.estimator)) +
                         " needs rl.samples_per_prompt >= 2 (got " + std::to_string(c.rl.samples_per_prompt) +
                         "): with one sample per prompt every advantage is 0");
    // top_p in (0,1], temperature > 0 etc. are per-key ranges (check_value);
    // re-checked here for configs built in code.
    for (const auto& e : entries()) {
        try {
            check_value(e, e.get(c));
        } catch (const ConfigError& err) {
            errors.push_back(err.what());
        }
    }
    if (!errors.empty()) fail(join(errors, "; "));
}

std::vector<std::string> config_warnings(const Config& c) {
    std::vector<std::string> w = model_warnings(c);
    // A setting the user changed (it differs from the default) that this
    // configuration does not read: one sentence per reason, naming each.
    const Config defaults;
    std::vector<std::pair<std::string, std::vector<std::string>>> by_reason;
    const std::vector<std::string>& refused = numerics_keys();  // validate() refuses these when set
    for (const IgnoredKey& ig : config_ignored_keys(c)) {
        if (std::find(refused.begin(), refused.end(), ig.key) != refused.end()) continue;
        const std::string value = config_value_text(c, ig.key);
        if (value == config_value_text(defaults, ig.key)) continue;
        auto it = std::find_if(by_reason.begin(), by_reason.end(), [&](const auto& r) { return r.first == ig.reason; });
        if (it == by_reason.end()) it = by_reason.insert(by_reason.end(), {ig.reason, {}});
        it->second.push_back(ig.key + "=" + value);
    }
    for (const auto& [reason, keys] : by_reason)
        w.push_back(join(keys, ", ") + (keys.size() == 1 ? " has" : " have") + " no effect: " + reason);
    if (c.rollout.logprobs == LogprobSource::raw && c.rollout.temperature == 1.0 && c.rollout.top_k == 0 &&
        c.rollout.top_p == 1.0)
        w.push_back("rollout.logprobs=raw equals processed when temperature=1, top_k=0 and top_p=1");
    return w;
}

std::vector<IgnoredKey> config_ignored_keys(const Config& c) {
    std::vector<IgnoredKey> out;
    const auto add = [&](std::initializer_list<const char*> keys, const std::string& reason) {
        for (const char* k : keys) out.push_back({k, reason});
    };
    const auto& k = c.correction;
    if (c.rl.old_policy == OldPolicyMode::recompute) {
        add({"correction.is_level", "correction.rs_level", "correction.veto_threshold", "correction.veto_kind",
             "correction.is_mode", "correction.is_upper", "correction.is_lower", "correction.batch_normalize",
             "correction.rs_lower", "correction.rs_upper"},
            "rl.old_policy=recompute applies no correction (its weights are 1); use rl.old_policy=decoupled or bypass");
    } else {
        if (k.is_level == IsLevel::off)
            add({"correction.is_mode", "correction.is_upper", "correction.is_lower", "correction.batch_normalize"},
                "correction.is_level is off");
        else if (k.is_mode == IsMode::truncate)
            add({"correction.is_lower"}, "correction.is_mode=truncate uses the upper bound only (w = min(w, U))");
        if (k.rs_level == RsLevel::off)
            add({"correction.rs_lower", "correction.rs_upper"}, "correction.rs_level is off");
        else if (k.rs_level == RsLevel::seq_mean_k3)
            add({"correction.rs_lower"}, "correction.rs_level=seq_mean_k3 uses rs_upper as its K3 threshold only");
        if (k.veto_threshold == 0) add({"correction.veto_kind"}, "correction.veto_threshold is 0 (veto off)");
    }
    if (c.rl.loss != PolicyLossType::gspo)
        add({"rl.gspo_eps_low", "rl.gspo_eps_high"}, "only rl.loss=gspo clips with these");
    if (c.rl.loss != PolicyLossType::ppo) add({"rl.eps_low", "rl.eps_high"}, "only rl.loss=ppo clips with these");
    for (const NumericsKeyWithoutEffect& k : numerics_keys_without_effect(c))
        out.push_back({k.key, k.reason + (k.instead.empty() ? "" : " (" + k.instead + " decides)")});
    if (c.model.kind != ModelKind::moe) add({"moe.routing_replay"}, "a dense model has no routers (model.kind=dense)");
    else if (c.moe.routing_replay == RoutingReplay::R2 && c.rl.mini_steps == 1)
        add({"moe.routing_replay"},
            "R2 replays the old-policy routes in the mini-steps after the first, and rl.mini_steps=1 has none");
    return out;
}

bool operator==(const Config& a, const Config& b) {
    for (const auto& e : entries())
        if (e.get(a) != e.get(b)) return false;
    return true;
}

std::vector<ConfigDiff> config_diff(const Config& a, const Config& b) {
    std::vector<ConfigDiff> d;
    for (const auto& e : entries()) {
        const json va = e.get(a), vb = e.get(b);
        if (va != vb)
            d.push_back({e.meta.key, va.is_string() ? va.get<std::string>() : va.dump(),
                         vb.is_string() ? vb.get<std::string>() : vb.dump()});
    }
    return d;
}

}  // namespace mlk
