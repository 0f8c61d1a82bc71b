// Minimal argument parsing for mismatch-lab-cli: positionals, `--name value`
// options, repeatable options and boolean flags. Unknown options are errors.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlk::cli {

// Bad command-line input: exit code 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Args {
    std::vector<std::string> positional;
    std::map<std::string, std::vector<std::string>> options;  // "--set" -> values
    std::set<std::string> flags;                              // "--json"

    bool has(const std::string& name) const { return options.count(name) || flags.count(name); }
    std::string get(const std::string& name, const std::string& fallback = "") const {
        auto it = options.find(name);
        return it == options.end() ? fallback : it->second.back();
    }
    std::string require(const std::string& name) const {
        auto it = options.find(name);
        if (it == options.end()) throw UsageError("missing required option " + name);
        return it->second.back();
    }
    const std::vector<std::string>& all(const std::string& name) const {
        static const std::vector<std::string> none;
        auto it = options.find(name);
        return it == options.end() ? none : it->second;
    }
    int get_int(const std::string& name, int fallback) const {
        if (!options.count(name)) return fallback;
        std::string v = get(name);
        try {
            size_t used = 0;
            int x = std::stoi(v, &used);
            if (used != v.size()) throw std::invalid_argument(v);
            return x;
        } catch (const std::exception&) {
            throw UsageError(name + ": '" + v + "' is not an integer");
        }
    }
};

// value_options take a value; flag_options do not. Anything else starting
// with "--" is rejected with the list of what the command accepts.
inline Args parse_args(const std::vector<std::string>& argv, const std::set<std::string>& value_options,
                       const std::set<std::string>& flag_options) {
    Args a;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& s = argv[i];
        if (s.rfind("--", 0) != 0) {
            a.positional.push_back(s);
            continue;
        }
        if (flag_options.count(s)) {
            a.flags.insert(s);
        } else if (value_options.count(s)) {
            if (i + 1 >= argv.size()) throw UsageError(s + " needs a value");
            a.options[s].push_back(argv[++i]);
        } else {
            std::string allowed;
            for (const auto& o : value_options) allowed += " " + o;
            for (const auto& o : flag_options) allowed += " " + o;
            throw UsageError("unknown option " + s + "; allowed:" + allowed);
        }
    }
    return a;
}

}  // namespace mlk::cli
