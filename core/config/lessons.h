// The guided lessons of the workbench's Lessons dock, as data:
// resources/lessons/*.json, compiled in as the presets and families are,
// taken in file-name order (the number each file name starts with). A lesson
// is a question, what to look at and an explanation drawn from published
// sources (named), the runs that answer it (a preset, `--set`-style
// overrides and a step count each), the charts to show (catalogue metric
// names) with the one to read, and optionally probe settings with one-click
// changes for the probe dock. Parsing is strict: an unknown field is refused
// naming it, so a typo never silently drops a part of a lesson.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"

namespace mlk {

struct LessonRun {
    std::string label;             // what this run is in the lesson: "bf16 rollout, fp32 trainer"
    std::string preset;            // an RL preset (core/config/presets.h)
    std::vector<std::string> set;  // "key=value", applied in order as `--set` does
    int steps = 0;                 // rl.steps of the run
};

// The probe dock's starting point and the changes offered as one click each.
struct LessonProbe {
    std::string preset;
    std::vector<std::string> set;
    std::vector<std::string> changes;  // "key=value", each applied on top of the probe's current settings
};

struct Lesson {
    std::string id;  // the file name without .json, e.g. "1-engines-disagree"
    std::string title, question, look_at, explanation, source;
    std::vector<LessonRun> runs;      // at least one; the first is the one a lesson starts with
    std::vector<std::string> charts;  // catalogue metric names, in display order
    std::string read;                 // the chart to read: one of `charts`
    std::optional<LessonProbe> probe;
};

// Every shipped lesson in teaching order (by file name).
const std::vector<Lesson>& lessons();
// One lesson file's text as lessons() reads it: std::logic_error naming the
// file and the field for an unknown or missing field, a run without preset or
// steps, no runs, or `read` not among `charts`. Presets, keys and metric names
// are not resolved here (the metric catalogue is a layer above; tests check
// every shipped lesson against both).
Lesson parse_lesson(const std::string& id, const std::string& text);

// The configuration of a lesson's run: the preset, each override through
// apply_set (so a refused one names the key and its allowed values), then the
// steps. Throws ConfigError.
Config lesson_run_config(const LessonRun& run);
// The probe's configuration: the preset and its overrides.
Config lesson_probe_config(const LessonProbe& probe);

}  // namespace mlk
