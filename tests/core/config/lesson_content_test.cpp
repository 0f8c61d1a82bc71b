// The shipped lessons (resources/lessons/*.json) and their strict parser:
// every lesson parses, names presets, overrides and probe changes that
// apply and validate, and charts that are catalogue metrics; an unknown or
// missing field is refused naming it. The lessons' first runs share base
// policies, so the window test (lessons_test) warms up few of them.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/config/lessons.h"
#include "core/config/presets.h"
#include "core/metrics/catalogue.h"
#include "core/rl/base_policy.h"

using namespace mlk;

namespace {

const char* kMinimal = R"({"title": "t", "question": "q", "look_at": "l", "explanation": "e", "source": "s",
  "runs": [{"label": "a", "preset": "default", "steps": 2}], "charts": ["k3_kl"], "read": "k3_kl"})";

std::string refusal(const std::string& text) {
    try {
        parse_lesson("x", text);
    } catch (const std::exception& e) {
        return e.what();
    }
    return {};
}

}  // namespace

TEST(LessonContent, SixLessonsInTeachingOrder) {
    const auto& all = lessons();
    ASSERT_EQ(all.size(), 6u);
    for (size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(all[i].id.substr(0, 2), std::to_string(i + 1) + "-") << all[i].id;
        for (const std::string* s :
             {&all[i].title, &all[i].question, &all[i].look_at, &all[i].explanation, &all[i].source})
            EXPECT_FALSE(s->empty()) << all[i].id;
    }
}

TEST(LessonContent, EveryRunPresetOverrideAndChartResolves) {
    for (const Lesson& l : lessons()) {
        ASSERT_FALSE(l.runs.empty()) << l.id;
        for (const LessonRun& r : l.runs) {
            EXPECT_NE(find_preset(r.preset), nullptr) << l.id << ": " << r.preset;
            EXPECT_FALSE(r.label.empty()) << l.id;
            Config c;
            EXPECT_NO_THROW(c = lesson_run_config(r)) << l.id << ": " << r.label;
            EXPECT_EQ(c.rl.steps, r.steps);
            // A lesson sets nothing its run does not read: the form would show the student a warning.
            for (const std::string& w : config_warnings(c)) ADD_FAILURE() << l.id << ": " << r.label << ": " << w;
        }
        for (const std::string& m : l.charts) EXPECT_NE(find_metric(m), nullptr) << l.id << ": " << m;
        EXPECT_NE(std::find(l.charts.begin(), l.charts.end(), l.read), l.charts.end()) << l.id;
        if (l.probe) {
            Config c;
            ASSERT_NO_THROW(c = lesson_probe_config(*l.probe)) << l.id;
            // Each change applies on top of the ones before, as the probe dock's buttons do.
            for (const std::string& change : l.probe->changes) EXPECT_NO_THROW(apply_set(c, change)) << change;
        }
    }
}

TEST(LessonContent, RunsOfALessonDifferInTheirConfiguration) {
    // Two equal runs in one lesson would be one line drawn twice (and the
    // window matches a started run to its lesson run by name).
    for (const Lesson& l : lessons()) {
        std::set<std::string> names;
        for (const LessonRun& r : l.runs) {
            const Config c = lesson_run_config(r);
            EXPECT_TRUE(names.insert(default_run_name(r.preset, preset_config(r.preset), c) + r.preset).second)
                << l.id << ": " << r.label;
        }
    }
}

TEST(LessonContent, FirstRunsShareFewBasePolicies) {
    // A base-policy warm-up costs 30-75 s on two cores the first time; the
    // lessons' first runs are chosen to need at most four between them.
    std::set<std::string> keys;
    for (const Lesson& l : lessons()) keys.insert(base_policy_key(lesson_run_config(l.runs.front())));
    EXPECT_LE(keys.size(), 4u);
}

TEST(LessonContent, ParsingIsStrict) {
    EXPECT_EQ(refusal(kMinimal), "");
    nlohmann::json j = nlohmann::json::parse(kMinimal);
    j["qestion"] = "typo";
    EXPECT_NE(refusal(j.dump()).find("unknown field 'qestion'"), std::string::npos) << refusal(j.dump());
    j = nlohmann::json::parse(kMinimal);
    j["runs"][0]["sets"] = nlohmann::json::array();
    EXPECT_NE(refusal(j.dump()).find("runs[0]: unknown field 'sets'"), std::string::npos) << refusal(j.dump());
    j = nlohmann::json::parse(kMinimal);
    j["probe"] = {{"preset", "default"}, {"change", nlohmann::json::array()}};
    EXPECT_NE(refusal(j.dump()).find("probe: unknown field 'change'"), std::string::npos) << refusal(j.dump());
    j = nlohmann::json::parse(kMinimal);
    j.erase("look_at");
    EXPECT_NE(refusal(j.dump()).find("missing field 'look_at'"), std::string::npos);
    j = nlohmann::json::parse(kMinimal);
    j["read"] = "grad_norm";
    EXPECT_NE(refusal(j.dump()).find("'read' (grad_norm) is not one of 'charts'"), std::string::npos);
    j = nlohmann::json::parse(kMinimal);
    j["runs"] = nlohmann::json::array();
    EXPECT_NE(refusal(j.dump()).find("at least one run"), std::string::npos);
    j = nlohmann::json::parse(kMinimal);
    j["runs"][0]["steps"] = 0;
    EXPECT_NE(refusal(j.dump()).find("'steps' must be at least 1"), std::string::npos);
}

TEST(LessonContent, ABadOverrideNamesItsKey) {
    LessonRun r{"x", "default", {"rollout.precison=bf16"}, 2};
    try {
        lesson_run_config(r);
        FAIL() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("rollout.precison"), std::string::npos) << e.what();
    }
}
