// What `run` and `resume` share: stepping a run to its end (or a stop signal)
// with one line per step, and the callbacks that show the base policy's
// training and let Ctrl-C stop a run cleanly.
#pragma once

#include "core/config/config.h"
#include "core/rl/run_controller.h"

namespace mlk::cli {

// Prints config_warnings() on stderr.
void print_warnings(const Config& c);
// One line on stdout before the slow work of `run` and `probe`: the model,
// its parameters, memory and estimated time per RL step (core/rl/footprint.h).
void print_footprint(const Config& c);
// Base-policy progress on stderr; installs the SIGINT / SIGTERM / SIGHUP
// handlers that stop the warm-up or the run cleanly.
RunCallbacks cli_callbacks();
// The exit code of a run that a signal stopped before its last step: not 0,
// so a script or a batch system tells it from a finished run, and not 1 or
// 2, since nothing failed and `resume` continues it.
inline constexpr int kExitStopped = 3;

// Steps `rc` to its end, printing each step (a JSON object per line with
// `json`), then finishes it as finished (returns 0), stopped (kExitStopped),
// diverged (returns 1 with the step and metric on stderr) or failed
// (rethrows).
// `lines` false prints nothing of its own (a sweep prints one line per run).
int drive(RunController& rc, bool json, bool lines = true);
// True once a signal asked the process to stop (after cli_callbacks()).
bool stop_requested();
// A run stopped by a signal during the warm-up: says how to go on. Returns
// kExitStopped.
int stopped_in_warmup(const StoppedInWarmup& e, const std::string& db, bool json);

}  // namespace mlk::cli
