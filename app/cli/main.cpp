// mismatch-lab-cli: the core without widgets, for scripts, CI and sweeps.
// This file only dispatches; each command lives in its own file
// (commands.h), and every one reads its input through args.h, which also
// maps what a command throws to the exit code: 0 ok, 2 bad input, 1 failure
// (and 3 for a run a signal stopped, app/cli/drive.h).
#include <csignal>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "app/cli/args.h"
#include "app/cli/commands.h"

namespace {

const char* kUsage =
    "usage: mismatch-lab-cli <command> [options]\n"
    "commands:\n"
    "  probe --preset NAME [--set key=value ...] [--config FILE] [--checkpoint DIR] [--json] [--dump FILE]\n"
    "  checkpoint --preset NAME --out DIR [--set key=value ...] [--config FILE]\n"
    "  run --preset P [--config FILE] [--set k=v ...] [--steps N] --db FILE [--name NAME] [--json] [--cache-dir DIR]\n"
    "  resume RUN --db FILE [--steps N] [--json] [--cache-dir DIR]\n"
    "  runs --db FILE [--json]\n"
    "  show RUN --db FILE [--verdict key=value ...]\n"
    "  presets [--json]\n"
    "  metrics [--json]\n"
    "  settings [--json|--markdown]\n"
    "  export RUN --db FILE --format csv|json --out FILE\n"
    "  bench [--steps N] [--set k=v ...] [--preset MODEL ...] [--device cpu|cuda|both]\n"
    "        [--kernels fast|batch-invariant|both|same] [--blas] [--json]\n"
    "  sweep --db FILE [--preset P ...] [--grid key=v1,v2,... ...] [--seeds N] [--steps N] [--json]\n"
    "        [--cache-dir DIR] [--verdict key=value ...] [--baseline CONFIG];\n"
    "        sweep --db FILE --family NAME [--seeds N] [--steps N]; sweep --db FILE --summary SWEEP; sweep --list\n"
#ifdef MLK_WITH_REPORTS
    "  report RUN [RUN ...] --db FILE --out FILE.html|FILE.pdf [--baseline RUN] [--step N] [--metric NAME ...]\n"
    "         [--title TEXT] [--appendix] [--verdict key=value ...]\n"
    "  report --sweep SWEEP --db FILE --out FILE.html|FILE.pdf [--baseline CONFIG] [--title TEXT]\n"
    "         [--verdict key=value ...]\n"
#endif
    "presets: a model preset (dense-tiny, moe-tiny, dense-small, moe-small, dense-deep, moe-deep) or an RL\n"
    "         preset (see `presets`); model.* settings change single dimensions (model.num_layers=8, ...)\n"
    "RUN: a run id as `runs` lists it; N: steps, 1 to 100000\n"
    "exit codes: 0 ok, 1 failure (a run failed or diverged, a write failed), 2 bad input or a refused\n"
    "            request, 3 stopped by SIGINT/SIGTERM/SIGHUP (`resume` continues the run)\n";

// `command`'s lines of the usage (its own and their continuations) and the
// notes that follow the commands: what `CMD --help` prints.
std::string command_usage(const std::string& command) {
    std::string out, notes;
    bool in_command = false, in_notes = false;
    std::istringstream lines(kUsage);
    for (std::string line; std::getline(lines, line);) {
        // "  cmd ..." starts a command, deeper indents continue it, and an
        // unindented line ("presets: ...") ends the list of commands.
        const bool starts_command = line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ';
        if (starts_command) in_command = line.substr(2) == command || line.rfind("  " + command + " ", 0) == 0;
        else if (line.empty() || line[0] != ' ') in_command = false;
        in_notes = in_notes || line.rfind("presets:", 0) == 0;
        if (in_command && starts_command)
            out += (out.empty() ? "usage: mismatch-lab-cli " : "       mismatch-lab-cli ") + line.substr(2) + "\n";
        else if (in_command) out += line + "\n";
        if (in_notes) notes += line + "\n";
    }
    return out + notes;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace mlk::cli;
    // Past a file-size limit (ulimit -f) a write fails with EFBIG and the
    // command fails naming it ("File too large"), as on a full disk, instead
    // of the process dying silently by SIGXFSZ with its run left unmarked.
    std::signal(SIGXFSZ, SIG_IGN);
    const std::map<std::string, int (*)(const Argv&)> commands = {
        {"probe", cmd_probe},       {"checkpoint", cmd_checkpoint},
        {"run", cmd_run},           {"resume", cmd_resume},
        {"runs", cmd_runs},         {"show", cmd_show},
        {"presets", cmd_presets},   {"metrics", cmd_metrics},
        {"settings", cmd_settings}, {"export", cmd_export},
        {"bench", cmd_bench},       {"sweep", cmd_sweep},
#ifdef MLK_WITH_REPORTS
        {"report", forward_report},
#endif
    };
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    const std::string name = argv[1];
    if (name == "--help" || name == "-h" || name == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    if (name == "--version") {
        std::printf("mismatch-lab-cli %s\n", MLK_VERSION);
        return 0;
    }
    const auto it = commands.find(name);
    if (it == commands.end()) {
        std::fprintf(stderr, "mismatch-lab-cli: unknown command '%s'\n%s", name.c_str(), kUsage);
        return 2;
    }
    // `CMD --help` anywhere among its arguments: that command's usage, not
    // "unknown option --help".
    for (int i = 2; i < argc; ++i)
        if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
            std::fputs(command_usage(name).c_str(), stdout);
            return 0;
        }
    return run_command(name, it->second, Argv(argv + 2, argv + argc));
}
