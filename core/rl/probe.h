// The `probe` command: one rollout batch of the configured task and the
// training forward on it (the RL step's measurement pass), with every
// mismatch metric between the two, as JSON summaries and per-token dumps.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/settings.h"
#include "core/rl/measure.h"

namespace mlk {

struct ProbeResult : Measurement {
    ModelConfig model;
};

// Prompts from the configured task (rl.prompts_per_step x rl.samples_per_prompt
// sequences), rollout with the rollout settings, training forward with the
// training settings (R3 when moe.routing_replay = R3).
ProbeResult run_probe(const Config& cfg, std::vector<float> params);
// The weights `probe` uses without --checkpoint: the configured model's
// initial weights from cfg.seed (so the CLI and the workbench's probe panel
// measure the same model).
std::vector<float> probe_initial_params(const Config& cfg);

// The probe's measurements (keys listed in the README).
nlohmann::json probe_summary_json(const ProbeResult& r);
// The `probe --json` object, as the CLI prints it and the GUI's probe panel
// shows it: the summary plus the model's size and memory (never the step
// time estimate: it rests on a timing, and this object is a function of the
// configuration, same input, same bytes).
nlohmann::json probe_json(const ProbeResult& r, const Config& cfg);
// The `probe --dump` per-token document (format in the README).
nlohmann::json probe_dump_json(const ProbeResult& r);

}  // namespace mlk
