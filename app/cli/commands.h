// The commands of mismatch-lab-cli, one file each (app/cli/<name>.cpp). Each
// takes the words after its name and returns the exit code; bad input and
// failures are thrown and mapped to 2 / 1 by run_command (args.h).
#pragma once

#include <string>
#include <vector>

namespace mlk::cli {

using Argv = std::vector<std::string>;

int cmd_probe(const Argv& argv);
int cmd_checkpoint(const Argv& argv);
int cmd_presets(const Argv& argv);
int cmd_metrics(const Argv& argv);
int cmd_run(const Argv& argv);
int cmd_resume(const Argv& argv);
int cmd_runs(const Argv& argv);
int cmd_show(const Argv& argv);
int cmd_export(const Argv& argv);
int cmd_bench(const Argv& argv);
int cmd_sweep(const Argv& argv);
#ifdef MLK_WITH_REPORTS
int cmd_report(const Argv& argv);  // needs Qt (widgets/report)
#endif

}  // namespace mlk::cli
