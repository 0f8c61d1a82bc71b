// Command-line input of mismatch-lab-cli, checked one way for every command:
// options and positional words, run ids, step counts, database, directory and
// output paths, the layered configuration, and the one exit-code ladder
// (0 ok; 1 failure; 2 bad input, with a message naming the option or key and
// the allowed values).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/metrics/verdicts.h"
#include "core/store/store.h"

namespace mlk::cli {

// Bad command-line input: exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What a command accepts. Anything else is a UsageError.
struct Spec {
    std::set<std::string> values;      // options that take a value: "--db"
    std::set<std::string> repeatable;  // of those, the ones that may be given more than once: "--set"
    std::set<std::string> flags;       // options without a value: "--json"
    std::string positional;            // what the positional words are, for messages ("RUN"); "" for none
    size_t min_positional = 0, max_positional = 0;
};

struct Args {
    std::vector<std::string> positional;
    std::map<std::string, std::vector<std::string>> options;  // "--set" -> values
    std::set<std::string> flags;                              // "--json"

    bool has(const std::string& name) const { return options.count(name) || flags.count(name); }
    std::string get(const std::string& name, const std::string& fallback = "") const;
    std::string require(const std::string& name) const;
    const std::vector<std::string>& all(const std::string& name) const;
};

// Words starting with "-" are options (a negative number is a positional word,
// so that `show -1` is refused as a run id, not as an option).
Args parse_args(const std::vector<std::string>& argv, const Spec& spec);

// A run id as `runs` prints it: a plain positive decimal integer, no sign,
// space or leading zero ("7"; not " 7", "+7", "07"). `what` names the
// argument in the message ("RUN", "--baseline").
int64_t parse_run_id(const std::string& what, const std::string& text);
// A plain decimal integer in [min, max] (no sign, space or leading zero).
int64_t parse_integer(const std::string& what, const std::string& text, int64_t min, int64_t max);
// --steps N, in the range the config schema gives rl.steps; `fallback` when absent.
int parse_steps(const Args& a, int fallback);
// Every `--verdict key=value` (repeatable) over the defaults; UsageError
// naming the key and the allowed keys or range.
VerdictThresholds parse_verdict_options(const Args& a);

// --db as a real file path: not empty, not an in-memory or URI name, not a directory.
std::string db_path(const Args& a);
// Opens (creating) the --db store; a file that is not a run store is bad input.
Store open_store(const Args& a, Store::Intent intent = Store::Intent::write);
// Opens the --db store, which must already exist; by default to read it only
// (an empty file is an empty store, and nothing is written into it).
Store open_existing_store(const Args& a, Store::Intent intent = Store::Intent::read);
// `store`, for a command that writes runs; UsageError when it opened read-only.
Store writable(Store store);
// An option naming a directory: it must be one or be creatable (created here,
// before any long work starts). `fallback` when the option is absent.
std::string directory_option(const Args& a, const std::string& name, const std::string& fallback);
// An option naming an output file: not empty, not a directory.
std::string output_file_option(const Args& a, const std::string& name);

// Settings, layered: --preset (a model or RL preset) < --config FILE < each --set key=value.
Config build_config(const Args& a);
// UsageError naming the key when `c` places an engine on a device this
// machine does not have (rollout.device / train.device = cuda without a
// usable GPU): a request this machine cannot carry out, refused before any
// database or warm-up is touched.
void require_devices(const Config& c);
// A model preset (its model, default settings) or an RL preset; ConfigError
// naming every preset when `name` is neither.
Config preset_named(const std::string& name);
// The --preset layer alone (defaults without one): what a run's default name is told apart from.
Config preset_base(const Args& a);

// Progress and JSON output shared by `run`, `resume` and `sweep`: a time
// left as "42s" or "3m05s" ("?" when unknown), and a JSON number that is
// null where the value is not finite (JSON has no NaN).
std::string eta_text(double seconds);
nlohmann::json json_number(double v);

// Runs a command, mapping what it throws to the exit code and a message on stderr.
int run_command(const std::string& name, const std::function<int(const std::vector<std::string>&)>& command,
                const std::vector<std::string>& argv);

}  // namespace mlk::cli
