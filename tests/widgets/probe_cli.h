// The probe panel against `mismatch-lab-cli probe --json`: the CLI itself,
// run on the panel's settings (written as a --config file), and the check
// that the panel shows exactly its object and formats each number from it.
// Shared by the probe panel's tests and the lessons' (one place).
#pragma once

#include <unistd.h>

#include <QString>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/metrics/run_stats.h"
#include "tests/cli_runner.h"
#include "widgets/panels/probe_panel.h"

namespace mlk::probe_cli {

// What `mismatch-lab-cli probe --json --config <cfg>` prints; null when the
// command fails (its output is then in *error).
inline nlohmann::json cliProbe(const Config& cfg, std::string* error = nullptr) {
    static int serial = 0;
    const std::filesystem::path file =
        std::filesystem::temp_directory_path() /
        ("mlk_probe_cli_" + std::to_string(getpid()) + "_" + std::to_string(++serial) + ".json");
    std::ofstream(file) << config_to_json(cfg).dump();
    const clitest::CliResult r = clitest::cli("probe --json --config " + file.string());
    std::filesystem::remove(file);
    // The object is the last line (nothing else goes to stdout with --json).
    std::string line, last;
    std::istringstream lines(r.out);
    while (std::getline(lines, line))
        if (!line.empty()) last = line;
    if (r.code != 0 || last.empty() || last.front() != '{') {
        if (error) *error = "exit " + std::to_string(r.code) + ": " + r.out;
        return nullptr;
    }
    return nlohmann::json::parse(last);
}

// Empty when the panel's current probe is the CLI's for the same settings:
// the whole object, and every number shown as value_text formats it.
// Otherwise what differs.
inline QString panelMismatch(const ProbePanel& panel) {
    std::string error;
    const nlohmann::json expected = cliProbe(panel.current().config, &error);
    if (expected.is_null()) return QString::fromStdString("the CLI failed: " + error);
    if (panel.current().summary != expected)
        return QString::fromStdString("panel " + panel.current().summary.dump() + "\n   cli " + expected.dump());
    for (const QString& m : ProbePanel::metrics()) {
        const QString want = QString::fromStdString(value_text(expected.at(m.toStdString()).get<double>()));
        if (panel.valueText(m) != want) return m + ": panel " + panel.valueText(m) + ", cli " + want;
    }
    return {};
}

}  // namespace mlk::probe_cli
