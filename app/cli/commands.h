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
int cmd_settings(const Argv& argv);
int cmd_run(const Argv& argv);
int cmd_resume(const Argv& argv);
int cmd_runs(const Argv& argv);
int cmd_show(const Argv& argv);
int cmd_export(const Argv& argv);
int cmd_bench(const Argv& argv);
int cmd_sweep(const Argv& argv);
#ifdef MLK_WITH_REPORTS
// `report` renders with Qt (widgets/report), which mismatch-lab-cli does not
// link: its 12 MB of libraries would sit in every training run's memory
// (moe-deep's peak is within 10 MB of the 300 MB target). cmd_report lives in
// mismatch-lab-report (report.cpp, report_main.cpp); forward_report, the CLI's
// `report`, runs that program from the CLI's own directory with the same words.
int cmd_report(const Argv& argv);
int forward_report(const Argv& argv);
#endif

}  // namespace mlk::cli
