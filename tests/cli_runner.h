// Runs mismatch-lab-cli as a user would, capturing its exit code and output.
#pragma once

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace mlk::clitest {

struct CliResult {
    int code;
    std::string out;  // stdout and stderr together
};

inline CliResult cli(const std::string& args) {
    std::string cmd = std::string(MLK_CLI_PATH) + " " + args + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    int status = pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace mlk::clitest
