#include "core/config/lessons.h"

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/config/presets.h"

namespace mlk {

// Generated at configure time from resources/lessons/*.json.
extern const std::vector<std::pair<const char*, const char*>> kLessonFiles;

namespace {

// Refuses any field of `j` not in `allowed`, naming where it was found.
void only_fields(const nlohmann::json& j, std::initializer_list<const char*> allowed, const std::string& where) {
    if (!j.is_object()) throw std::logic_error(where + ": expected an object");
    for (auto it = j.begin(); it != j.end(); ++it) {
        if (std::find_if(allowed.begin(), allowed.end(), [&](const char* a) { return it.key() == a; }) != allowed.end())
            continue;
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        throw std::logic_error(where + ": unknown field '" + it.key() + "'; allowed: " + list);
    }
}

template <class T>
T field(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.contains(key)) throw std::logic_error(where + ": missing field '" + key + "'");
    try {
        return j.at(key).get<T>();
    } catch (const nlohmann::json::exception&) {
        throw std::logic_error(where + ": field '" + key + "' has the wrong type");
    }
}

std::vector<std::string> strings(const nlohmann::json& j, const char* key, const std::string& where) {
    return j.contains(key) ? field<std::vector<std::string>>(j, key, where) : std::vector<std::string>{};
}

}  // namespace

Lesson parse_lesson(const std::string& id, const std::string& text) {
    const std::string file = "resources/lessons/" + id + ".json";
    const nlohmann::json j = nlohmann::json::parse(text);
    only_fields(j, {"title", "question", "look_at", "explanation", "source", "runs", "charts", "read", "probe"}, file);
    Lesson l;
    l.id = id;
    l.title = field<std::string>(j, "title", file);
    l.question = field<std::string>(j, "question", file);
    l.look_at = field<std::string>(j, "look_at", file);
    l.explanation = field<std::string>(j, "explanation", file);
    l.source = field<std::string>(j, "source", file);
    l.charts = field<std::vector<std::string>>(j, "charts", file);
    l.read = field<std::string>(j, "read", file);
    if (std::find(l.charts.begin(), l.charts.end(), l.read) == l.charts.end())
        throw std::logic_error(file + ": 'read' (" + l.read + ") is not one of 'charts'");
    const nlohmann::json runs = field<nlohmann::json>(j, "runs", file);
    if (!runs.is_array() || runs.empty()) throw std::logic_error(file + ": 'runs' must list at least one run");
    for (size_t i = 0; i < runs.size(); ++i) {
        const std::string where = file + " runs[" + std::to_string(i) + "]";
        only_fields(runs[i], {"label", "preset", "set", "steps"}, where);
        LessonRun r{field<std::string>(runs[i], "label", where), field<std::string>(runs[i], "preset", where),
                    strings(runs[i], "set", where), field<int>(runs[i], "steps", where)};
        if (r.steps < 1) throw std::logic_error(where + ": 'steps' must be at least 1");
        l.runs.push_back(std::move(r));
    }
    if (j.contains("probe")) {
        const std::string where = file + " probe";
        const nlohmann::json& p = j.at("probe");
        only_fields(p, {"preset", "set", "changes"}, where);
        l.probe =
            LessonProbe{field<std::string>(p, "preset", where), strings(p, "set", where), strings(p, "changes", where)};
    }
    return l;
}

const std::vector<Lesson>& lessons() {
    static const std::vector<Lesson> all = [] {
        std::vector<Lesson> v;
        for (const auto& [name, text] : kLessonFiles) v.push_back(parse_lesson(name, text));
        std::sort(v.begin(), v.end(), [](const Lesson& a, const Lesson& b) { return a.id < b.id; });
        return v;
    }();
    return all;
}

Config lesson_run_config(const LessonRun& run) {
    Config c = preset_config(run.preset);
    for (const std::string& s : run.set) apply_set(c, s);
    c.rl.steps = run.steps;
    validate(c);
    return c;
}

Config lesson_probe_config(const LessonProbe& probe) {
    Config c = preset_config(probe.preset);
    for (const std::string& s : probe.set) apply_set(c, s);
    return c;
}

}  // namespace mlk
