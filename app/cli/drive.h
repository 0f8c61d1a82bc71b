// What `run` and `resume` share: stepping a run to its end (or a stop signal)
// with one line per step, and the callbacks that show the base policy's
// training and let Ctrl-C stop a run cleanly.
#pragma once

#include "core/config/config.h"
#include "core/rl/run_controller.h"

namespace mlk::cli {

// Prints config_warnings() on stderr.
void print_warnings(const Config& c);
// Base-policy progress on stderr; cancelled by SIGINT / SIGTERM once drive() runs.
RunCallbacks cli_callbacks();
// Steps `rc` to its end, printing each step (a JSON object per line with
// `json`), then finishes it as finished, stopped or failed. Returns 0.
int drive(RunController& rc, bool json);

}  // namespace mlk::cli
