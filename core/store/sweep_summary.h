// A sweep read back from the store: its configurations in the order the
// sweep ran them, each with its runs' outcomes and the summary over seeds
// (core/metrics/sweep_stats.h). What the CLI's `sweep` prints at its end,
// the sweep table shows and the sweep report tabulates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metrics/sweep_stats.h"
#include "core/store/store.h"

namespace mlk {

// The verdicts' series of one stored run.
RunSeries read_run_series(Store& store, int64_t run_id);
// Its outcome; a run the store says diverged counts as divergence.
RunOutcome stored_run_outcome(Store& store, int64_t run_id, const VerdictThresholds& t = {});

struct SweepConfigInfo {
    std::string name, preset;
    // The settings in which this configuration differs from the sweep's
    // others (flat keys, e.g. "correction.is_level"): what tells them apart.
    nlohmann::ordered_json differs = nlohmann::ordered_json::object();
    // Its runs still being written (running or paused): left out of the
    // statistics, whose final reward and deltas would read partial runs as ended.
    int in_progress = 0;
};

struct SweepSummary {
    int64_t sweep_id = 0;
    int seeds = 0, steps = 0;
    VerdictThresholds thresholds;
    size_t baseline = 0;                   // index into configs
    std::vector<SweepConfigInfo> configs;  // in the sweep's order
    std::vector<ConfigSummary> stats;      // parallel to configs; runs by seed, those that have ended
    int runs_expected() const { return (int)configs.size() * seeds; }
    int runs_stored() const;  // ended: finished, failed, stopped, diverged or interrupted
    int runs_in_progress() const;
};

// StoreError for an unknown sweep; std::invalid_argument naming the
// configurations for an unknown baseline (empty: the first configuration).
SweepSummary summarize_sweep(Store& store, int64_t sweep_id, const VerdictThresholds& t = {},
                             const std::string& baseline = {});

}  // namespace mlk
