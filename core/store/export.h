// Full-resolution exports of stored runs: CSV and JSON that round-trip every
// stored metric exactly (doubles printed with 17 significant digits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/store/store.h"

namespace mlk {

// Metric columns of the runs in display order (order_metric_names: the
// catalogue's metrics first, then any other stored name alphabetically).
std::vector<std::string> export_columns(Store& store, const std::vector<int64_t>& run_ids);

// One run: "step,time,elapsed_s,<metric>,..."; several:
// "run_id,run_name,step,time,elapsed_s,<metric>,...". time: when the step
// was stored (ISO-8601 UTC, as W&B's _timestamp); elapsed_s: seconds from the
// run's creation to then (W&B's _runtime); both empty for a step stored
// without a time. NaN (stored NaN, or a metric absent at that step), inf and
// -inf are written as nan, inf, -inf.
std::string export_csv(Store& store, const std::vector<int64_t>& run_ids);

// One run: {"run": {...metadata, "config": {...}}, "steps": [{"step": 0, "<metric>": v, ...}, ...]}.
// Several: {"runs": [<one-run object>, ...]}. Non-finite values are the
// strings "NaN", "Infinity", "-Infinity" (JSON has no such numbers).
nlohmann::json export_json(Store& store, const std::vector<int64_t>& run_ids);

// Reads a cell/JSON value written above back to a double.
double parse_exported_number(const nlohmann::json& v);

}  // namespace mlk
