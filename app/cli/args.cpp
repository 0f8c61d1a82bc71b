#include "app/cli/args.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/config/config_file.h"
#include "core/config/presets.h"
#include "core/engines/device.h"
#include "core/model/params.h"

namespace fs = std::filesystem;

namespace mlk::cli {

namespace {

bool all_digits(const std::string& s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

bool is_model_preset(const std::string& name) {
    for (const auto& n : model_preset_names())
        if (n == name) return true;
    return false;
}

std::string allowed_options(const Spec& spec) {
    std::string s;
    for (const auto& o : spec.values) s += " " + o;
    for (const auto& o : spec.flags) s += " " + o;
    return s.empty() ? " none" : s;
}

// Why a positional word is not wanted, with the option it was probably meant for.
std::string unexpected_word(const std::string& word, const Spec& spec) {
    std::string msg = "unexpected argument '" + word + "'";
    if (spec.max_positional == 0) msg += ": this command takes no positional arguments";
    else
        msg +=
            ": expected " +
            (spec.max_positional == 1 ? std::string("one ") : "at most " + std::to_string(spec.max_positional) + " ") +
            spec.positional;
    if (spec.values.count("--preset") && (is_model_preset(word) || find_preset(word)))
        msg += " (did you mean --preset " + word + "?)";
    else if (spec.values.count("--set") && word.find('=') != std::string::npos)
        msg += " (did you mean --set " + word + "?)";
    return msg;
}

}  // namespace

std::string Args::get(const std::string& name, const std::string& fallback) const {
    auto it = options.find(name);
    return it == options.end() ? fallback : it->second.back();
}

std::string Args::require(const std::string& name) const {
    auto it = options.find(name);
    if (it == options.end()) throw UsageError("missing required option " + name);
    return it->second.back();
}

const std::vector<std::string>& Args::all(const std::string& name) const {
    static const std::vector<std::string> none;
    auto it = options.find(name);
    return it == options.end() ? none : it->second;
}

Args parse_args(const std::vector<std::string>& argv, const Spec& spec) {
    Args a;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& s = argv[i];
        const bool negative_number = s.size() > 1 && s[0] == '-' && std::isdigit((unsigned char)s[1]);
        if (s.size() < 2 || s[0] != '-' || negative_number) {
            if (a.positional.size() >= spec.max_positional) throw UsageError(unexpected_word(s, spec));
            a.positional.push_back(s);
            continue;
        }
        if (spec.flags.count(s)) {
            a.flags.insert(s);
        } else if (spec.values.count(s)) {
            if (i + 1 >= argv.size()) throw UsageError(s + " needs a value");
            auto& vals = a.options[s];
            if (!vals.empty() && !spec.repeatable.count(s))
                throw UsageError(s + " given twice ('" + vals.back() + "' and '" + argv[i + 1] +
                                 "'); it takes one value");
            vals.push_back(argv[++i]);
        } else {
            std::string hint;
            if (const auto eq = s.find('='); eq != std::string::npos && spec.values.count(s.substr(0, eq)))
                hint = " (write " + s.substr(0, eq) + " VALUE, with a space)";
            throw UsageError("unknown option " + s + hint + "; allowed:" + allowed_options(spec));
        }
    }
    if (a.positional.size() < spec.min_positional)
        throw UsageError(
            "expected " +
            (spec.min_positional == 1 ? std::string("a ") : "at least " + std::to_string(spec.min_positional) + " ") +
            spec.positional + " (see `mismatch-lab-cli runs`)");
    return a;
}

int64_t parse_integer(const std::string& what, const std::string& text, int64_t min, int64_t max) {
    const std::string allowed = "allowed: a plain integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                                "] (digits only: no sign, space or leading zero)";
    const bool negative = text.size() > 1 && text[0] == '-';
    const std::string digits = negative ? text.substr(1) : text;
    if (!all_digits(digits) || (digits.size() > 1 && digits[0] == '0') || (text[0] == '-' && !negative))
        throw UsageError(what + ": '" + text + "' is not an integer; " + allowed);
    // Plain apart from a sign, or too long for 64 bits: out of range, not malformed.
    if (negative || digits.size() > 18) throw UsageError(what + ": " + text + " is out of range; " + allowed);
    const int64_t v = std::stoll(digits);
    if (v < min || v > max) throw UsageError(what + ": " + text + " is out of range; " + allowed);
    return v;
}

int64_t parse_run_id(const std::string& what, const std::string& text) {
    if (!all_digits(text) || text[0] == '0' || text.size() > 18)
        throw UsageError(what + ": '" + text +
                         "' is not a run id; allowed: a positive integer as `mismatch-lab-cli runs` lists it "
                         "(digits only: no sign, space or leading zero)");
    return std::stoll(text);
}

VerdictThresholds parse_verdict_options(const Args& a) {
    VerdictThresholds th;
    for (const auto& v : a.all("--verdict")) {
        try {
            set_verdict_option(th, v);
        } catch (const std::invalid_argument& e) {
            throw UsageError(std::string("--verdict: ") + e.what());
        }
    }
    return th;
}

int parse_steps(const Args& a, int fallback) {
    if (!a.has("--steps")) return fallback;
    const ConfigKey* k = find_config_key("rl.steps");
    return (int)parse_integer("--steps", a.get("--steps"), (int64_t)k->min, (int64_t)k->max);
}

std::string db_path(const Args& a) {
    const std::string db = a.require("--db");
    if (db.empty()) throw UsageError("--db: the path is empty; allowed: a database file path such as runs.sqlite");
    if (db == ":memory:" || db.rfind("file:", 0) == 0)
        throw UsageError("--db: '" + db +
                         "' is an SQLite special name, not a file; allowed: a database file path such as "
                         "runs.sqlite (runs, checkpoints and the GUI need a real file)");
    if (fs::is_directory(db)) throw UsageError("--db: " + db + " is a directory; allowed: a database file path");
    return db;
}

Store open_store(const Args& a, Store::Intent intent) {
    const std::string db = db_path(a);
    try {
        return Store::open(db, intent);
    } catch (const StoreError& e) {
        throw UsageError(std::string("--db: ") + e.what());
    }
}

Store open_existing_store(const Args& a, Store::Intent intent) {
    const std::string db = db_path(a);
    if (!fs::exists(db)) throw UsageError("--db: " + db + " does not exist (`mismatch-lab-cli run` creates one)");
    return open_store(a, intent);
}

Store writable(Store store) {
    if (store.read_only())
        throw UsageError("--db: " + store.path() +
                         " is read-only for this user (it may not write the file or its folder), so no run can be "
                         "stored there; allowed: a database this user can write, e.g. a copy in a folder of its own");
    return store;
}

std::string directory_option(const Args& a, const std::string& name, const std::string& fallback) {
    const std::string dir = a.get(name, fallback);
    if (dir.empty()) throw UsageError(name + ": the path is empty; allowed: a directory path");
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
        throw UsageError(name + ": " + dir + " is a file; allowed: a directory (existing or to be created)");
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir))
        throw UsageError(name + ": cannot create the directory " + dir + ": " +
                         (ec ? ec.message() : std::string("not a directory")));
    return dir;
}

std::string output_file_option(const Args& a, const std::string& name) {
    const std::string path = a.require(name);
    if (path.empty()) throw UsageError(name + ": the path is empty; allowed: a file path");
    if (fs::is_directory(path)) throw UsageError(name + ": " + path + " is a directory; allowed: a file path");
    return path;
}

Config preset_named(const std::string& p) { return any_preset_config(p, "--preset"); }

Config preset_base(const Args& a) { return a.has("--preset") ? preset_named(a.get("--preset")) : Config{}; }

Config build_config(const Args& a) {
    Config c = preset_base(a);
    if (a.has("--config")) c = config_merge_file(c, a.get("--config"));
    for (const auto& kv : a.all("--set")) apply_set(c, kv);
    validate(c);
    return c;
}

void require_devices(const Config& c) {
    if (const std::string problem = device_problem(c); !problem.empty()) throw UsageError(problem);
}

int run_command(const std::string& name, const std::function<int(const std::vector<std::string>&)>& command,
                const std::vector<std::string>& argv) {
    const std::string prefix = "mismatch-lab-cli " + name + ": ";
    try {
        return command(argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "%s%s\n", prefix.c_str(), e.what());
        return 2;
    } catch (const std::invalid_argument& e) {  // ConfigError, ReportInputError and other bad values
        std::fprintf(stderr, "%s%s\n", prefix.c_str(), e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%serror: %s\n", prefix.c_str(), e.what());
        return 1;
    } catch (...) {
        std::fprintf(stderr, "%serror: unknown failure\n", prefix.c_str());
        return 1;
    }
}

std::string eta_text(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    char buf[32];
    if (seconds < 90) std::snprintf(buf, sizeof buf, "%.0fs", seconds);
    else std::snprintf(buf, sizeof buf, "%.0fm%02.0fs", std::floor(seconds / 60), std::fmod(seconds, 60));
    return buf;
}

nlohmann::json json_number(double v) {
    if (std::isfinite(v)) return v;
    return nullptr;
}

}  // namespace mlk::cli
