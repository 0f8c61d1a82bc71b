// mismatch-lab-report: `mismatch-lab-cli report` as a program of its own, the
// one command that needs Qt (commands.h). Takes the words after `report`.
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"

int main(int argc, char** argv) {
    return mlk::cli::run_command("report", mlk::cli::cmd_report, std::vector<std::string>(argv + 1, argv + argc));
}
