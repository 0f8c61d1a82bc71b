// `settings`: every setting of the schema (core/config/config.h), the one
// list the workbench's form, its tooltips, `--set` and configuration files
// read, as a line each, a JSON array, or the page docs/settings.md. The page
// is this command's output checked in, and a test compares the two, so it
// cannot drift from the schema: everything on it comes from the schema or
// from validate(), nothing is written here about a single setting.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/config/config.h"
#include "core/config/number_text.h"

namespace mlk::cli {

namespace {

// A value as `--set` takes it: numbers through number_text, so the page reads
// the same under any locale and compiler.
std::string setting_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
    if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
    if (v.is_number()) return number_text(v.get<double>());
    return v.dump();
}

// "rollout" for rollout.top_p; a key without a dot (seed) is its own group.
std::string group_of(const std::string& key) { return key.substr(0, key.find('.')); }

// The settings' groups in the schema's display order, each group once.
std::vector<std::string> setting_groups() {
    std::vector<std::string> out;
    for (const ConfigKey& k : config_schema())
        if (std::find(out.begin(), out.end(), group_of(k.key)) == out.end()) out.push_back(group_of(k.key));
    return out;
}

struct Refusal {
    std::string setting;  // "moe.routing_replay=R3"
    std::string why;      // validate()'s message
};

// What validate() refuses when one setting changes from the defaults: each
// value of an enumeration or bool and each finite, inclusive end of a range,
// tried alone. The messages name the settings they conflict with, so the
// page says which settings are refused under which others without a rule
// being written twice.
std::vector<Refusal> refusals(const ConfigKey& k) {
    std::vector<nlohmann::json> values;
    switch (k.type) {
        case ValueType::boolean: values = {true, false}; break;
        case ValueType::enumeration:
            for (const auto& a : k.allowed) values.emplace_back(a);
            break;
        case ValueType::integer:
        case ValueType::number: {
            const auto add = [&](double x, bool open) {
                if (!std::isfinite(x) || open) return;
                if (k.type == ValueType::integer) values.emplace_back(static_cast<int64_t>(x));
                else values.emplace_back(x);
            };
            add(k.min, k.min_exclusive);
            if (k.max != k.min) add(k.max, k.max_exclusive);
            break;
        }
        case ValueType::text: break;
    }
    std::vector<Refusal> out;
    for (const auto& v : values) {
        if (v == k.default_value) continue;
        Config c;
        config_set(c, k.key, v);
        try {
            validate(c);
        } catch (const ConfigError& e) {
            out.push_back({k.key + "=" + setting_text(v), e.what()});
        }
    }
    return out;
}

// Text in a Markdown table cell: a '|' would end the cell, and '*', '`', '\'
// and a '<' before a tag's first character would start emphasis, code, an
// escape or HTML ("w <- w / mean(w)" stays as it is).
std::string md_text(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        const char ch = s[i], next = i + 1 < s.size() ? s[i + 1] : ' ';
        if (ch == '<' &&
            ((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') || next == '/' || next == '!' || next == '?'))
            out += "&lt;";
        else if (ch == '|' || ch == '*' || ch == '`' || ch == '\\') out += std::string("\\") + ch;
        else out += ch;
    }
    return out;
}

// Text in a code span; only '|' needs escaping there, and only in a table.
std::string md_code(const std::string& s) {
    std::string out = "`";
    for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return out + "`";
}

std::string range_cell(const ConfigKey& k) {
    switch (k.type) {
        case ValueType::boolean: return md_code("true") + ", " + md_code("false");
        case ValueType::enumeration: {
            std::string out;
            for (const auto& a : k.allowed) out += (out.empty() ? "" : ", ") + md_code(a);
            return out;
        }
        case ValueType::text: return md_text(k.format);
        case ValueType::integer:
        case ValueType::number: break;
    }
    return md_code(k.range_text());
}

std::string default_cell(const ConfigKey& k) {
    const std::string v = setting_text(k.default_value);
    return md_code(k.type == ValueType::text ? "\"" + v + "\"" : v);
}

void print_markdown() {
    std::string page =
        "# Settings\n\n"
        "Every setting of a run: its key as `--set key=value`, configuration files and the workbench's settings "
        "form use it, its type, default, allowed values and what it does.\n\n"
        "This page is generated from the settings schema (`core/config/schema.cpp`) by `mismatch-lab-cli settings "
        "--markdown > docs/settings.md`, and CI fails when it differs from that command's output: change the "
        "schema, not this page.\n\n"
        "Ranges: `[a, b]` includes both ends, `(a, b]` excludes a, `>= a` has no upper bound.\n";
    for (const std::string& group : setting_groups()) {
        std::vector<std::string> sections;
        for (const ConfigKey& k : config_schema())
            if (group_of(k.key) == group && std::find(sections.begin(), sections.end(), k.section) == sections.end())
                sections.push_back(k.section);
        std::string list;
        for (const auto& s : sections) list += (list.empty() ? "" : ", ") + s;
        // A plain heading: the workbench's Markdown renderer would set a code
        // span in a heading at body size.
        page += "\n## " + md_text(find_config_key(group) ? group : group + ".*") + "\n\n";
        page += "In the workbench's settings form under " + md_text(list) + ".\n\n";
        page += "| Key | Type | Default | Allowed values / range | What it does |\n";
        page += "| --- | --- | --- | --- | --- |\n";
        std::vector<Refusal> refused;
        for (const ConfigKey& k : config_schema()) {
            if (group_of(k.key) != group) continue;
            std::string what = "**" + md_text(k.label) + ".** " + md_text(k.description);
            if (const std::string names = k.community_names(); !names.empty()) what += " " + md_text(names) + ".";
            page += "| " + md_code(k.key) + " | " + std::string(value_type_name(k.type)) + " | " + default_cell(k) +
                    " | " + range_cell(k) + " | " + what + " |\n";
            for (auto& r : refusals(k)) refused.push_back(std::move(r));
        }
        if (!refused.empty()) {
            page += "\nRefused while every other setting is at its default (the check's own message):\n\n";
            for (const Refusal& r : refused) page += "- " + md_code(r.setting) + ": " + md_text(r.why) + "\n";
        }
    }
    std::fputs(page.c_str(), stdout);
}

}  // namespace

int cmd_settings(const Argv& argv) {
    Spec spec;
    spec.flags = {"--json", "--markdown"};
    const Args a = parse_args(argv, spec);
    if (a.has("--json") && a.has("--markdown")) throw UsageError("give --json or --markdown, not both");
    if (a.has("--markdown")) {
        print_markdown();
        return 0;
    }
    if (a.has("--json")) {
        nlohmann::ordered_json j = nlohmann::ordered_json::array();
        for (const ConfigKey& k : config_schema()) {
            nlohmann::ordered_json o = {{"key", k.key},
                                        {"group", group_of(k.key)},
                                        {"section", k.section},
                                        {"label", k.label},
                                        {"type", std::string(value_type_name(k.type))},
                                        {"default", k.default_value},
                                        {"range", k.range_text()},
                                        {"description", k.description}};
            if (k.type == ValueType::enumeration) o["allowed"] = k.allowed;
            for (const auto& [who, name] : {std::pair<const char*, const std::string&>{"verl", k.verl},
                                            {"slime", k.slime},
                                            {"swift", k.swift},
                                            {"hf", k.hf}})
                if (!name.empty()) o[who] = name;
            j.push_back(o);
        }
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    // One line a setting: what `--set` needs to know; the prose is the page's.
    std::printf("%-34s %-6s %-16s %s\n", "key", "type", "default", "allowed values / range");
    for (const ConfigKey& k : config_schema()) {
        const std::string def = setting_text(k.default_value);
        std::printf("%-34s %-6s %-16s %s\n", k.key.c_str(), std::string(value_type_name(k.type)).c_str(),
                    (k.type == ValueType::text ? "\"" + def + "\"" : def).c_str(), k.range_text().c_str());
    }
    return 0;
}

}  // namespace mlk::cli
