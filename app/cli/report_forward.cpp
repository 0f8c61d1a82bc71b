// The CLI's `report`: runs mismatch-lab-report (commands.h says why it is a
// program of its own), found beside this executable as the build and the
// package both place it, with the same words after `report`.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/commands.h"

namespace mlk::cli {

int forward_report(const Argv& argv) {
    namespace fs = std::filesystem;
    const fs::path program = fs::canonical("/proc/self/exe").parent_path() / "mismatch-lab-report";
    std::vector<std::string> words{program.string()};
    words.insert(words.end(), argv.begin(), argv.end());
    std::vector<char*> args;
    for (std::string& w : words) args.push_back(w.data());
    args.push_back(nullptr);
    execv(program.c_str(), args.data());
    throw std::runtime_error("cannot run " + program.string() + " (" + std::strerror(errno) +
                             "): reports are rendered by mismatch-lab-report, which is built with the workbench "
                             "(MLK_BUILD_GUI=ON) and installed beside mismatch-lab-cli");
}

}  // namespace mlk::cli
