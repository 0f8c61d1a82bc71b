// A bounded fuzz test of the config reader: 10,000 inputs from a seeded
// generator (mutations of valid configs, random JSON over the schema's keys,
// deep nesting, odd numbers, keys given twice). Each must either give a
// Config that validates and survives a round trip, or throw ConfigError;
// never a crash or any other exception. A slice of them goes through the CLI.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/config/config_file.h"
#include "tests/cli_runner.h"

using namespace mlk;
using nlohmann::json;

namespace {

class Generator {
public:
    explicit Generator(uint64_t seed) : rng_(seed) {
        for (const ConfigKey& k : config_schema()) {
            keys_.push_back(k.key);
            const auto dot = k.key.find('.');
            if (dot != std::string::npos) {
                sections_.push_back(k.key.substr(0, dot));
                leaves_.push_back(k.key.substr(dot + 1));
            }
            for (const auto& n : community_names(k)) keys_.push_back(n);
            for (const auto& a : k.allowed) words_.push_back(a);
        }
        valid_.push_back(config_to_json(Config{}).dump(2));
        valid_.push_back(config_to_flat_json(Config{}).dump());
        Config c;
        c.rollout.top_p = 0.9, c.task.partial_credit = true, c.correction.is_upper = 3.5;
        valid_.push_back(config_to_json(c).dump());
        valid_.push_back(R"({"rollout": {"precision": "fp16", "top_k": 5}, "rl.steps": 3, "seed": 9})");
    }

    std::string next() {
        switch (pick(6)) {
            case 0:
            case 1: return mutate(valid_[pick(valid_.size())]);
            case 2: return random_json().dump();
            case 3: return deep();
            case 4: return duplicated();
            default: return odd_numbers();
        }
    }

private:
    size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
    template <class T>
    const T& any(const std::vector<T>& v) {
        return v[pick(v.size())];
    }

    std::string mutate(std::string s) {
        static const std::string alphabet = "{}[]\",:.-+eE0123456789 \\u\ttrufalsn\x01\xff";
        for (size_t n = 1 + pick(4); n > 0 && !s.empty(); --n) {
            const size_t at = pick(s.size());
            switch (pick(5)) {
                case 0: s[at] = alphabet[pick(alphabet.size())]; break;
                case 1: s.erase(at, 1 + pick(8)); break;
                case 2: s.insert(at, 1, alphabet[pick(alphabet.size())]); break;
                case 3: s.insert(at, s.substr(pick(s.size()), 1 + pick(30))); break;
                default: s.resize(at); break;
            }
        }
        return s;
    }

    json scalar() {
        switch (pick(8)) {
            case 0: return nullptr;
            case 1: return pick(2) == 1;
            case 2: return static_cast<int64_t>(pick(2000)) - 1000;
            case 3: return std::uniform_real_distribution<double>(-10, 10)(rng_);
            case 4: return any(words_);
            case 5: return std::string(pick(200), 'a' + static_cast<char>(pick(26)));
            case 6: return static_cast<uint64_t>(rng_());
            default: return std::ldexp(1.0, static_cast<int>(pick(2100)) - 1075);
        }
    }

    json random_json(int depth = 0) {
        const size_t kind = depth > 3 ? 9 : pick(10);
        if (kind < 3) {  // a section object or a dotted/community key
            json o = json::object();
            for (size_t n = pick(5); n > 0; --n) {
                switch (pick(4)) {
                    case 0: o[any(keys_)] = scalar(); break;
                    case 1: o[any(sections_)] = random_json(depth + 1); break;
                    case 2: o[any(leaves_)] = scalar(); break;
                    default: o[std::string(1 + pick(5), static_cast<char>(pick(128)))] = random_json(depth + 1);
                }
            }
            return o;
        }
        if (kind == 3) {
            json a = json::array();
            for (size_t n = pick(4); n > 0; --n) a.push_back(random_json(depth + 1));
            return a;
        }
        if (depth == 0) return json{{any(keys_), scalar()}};
        return scalar();
    }

    std::string deep() {
        const size_t levels = pick(10) == 0 ? 20000 + pick(80000) : pick(130);
        const bool arrays = pick(2) == 0;
        std::string s = "{\"" + any(keys_) + "\": ";
        for (size_t i = 0; i < levels; ++i) s += arrays ? "[" : "{\"k\": ";
        s += "1";
        if (pick(4) != 0) s += std::string(levels, arrays ? ']' : '}') + "}";  // sometimes unterminated
        return s;
    }

    std::string duplicated() {
        const std::string& k = any(keys_);
        std::string a = json(k).dump(), b = json(any(keys_)).dump();
        switch (pick(3)) {
            case 0: return "{" + a + ": " + scalar().dump() + ", " + a + ": " + scalar().dump() + "}";
            case 1: return "{" + a + ": {}, " + b + ": 1, " + a + ": {}}";
            default: {
                const std::string& sec = any(sections_);
                return "{\"" + sec + "\": {\"" + any(leaves_) + "\": 1}, \"" + sec + "." + any(leaves_) + "\": 2}";
            }
        }
    }

    std::string odd_numbers() {
        static const std::vector<std::string> numbers = {"1e400",
                                                         "-1e400",
                                                         "1e-400",
                                                         "-0",
                                                         "-0.0",
                                                         "0e999999",
                                                         "1e-324",
                                                         "5e-324",
                                                         "18446744073709551616",
                                                         "9223372036854775808",
                                                         "-9223372036854775809",
                                                         "1.7976931348623157e308",
                                                         "2e308",
                                                         "00",
                                                         "1.",
                                                         ".5",
                                                         "1e",
                                                         "NaN",
                                                         "Infinity",
                                                         "0x10",
                                                         "+1",
                                                         "1E+2"};
        return "{\"" + any(keys_) + "\": " + any(numbers) + "}";
    }

    std::mt19937_64 rng_;
    std::vector<std::string> keys_, sections_, leaves_, words_, valid_;
};

}  // namespace

TEST(ConfigFuzz, EveryInputGivesAConfigOrAConfigError) {
    Generator gen(20261123);
    const auto start = std::chrono::steady_clock::now();
    int parsed = 0, refused = 0;
    for (int i = 0; i < 10000; ++i) {
        const std::string text = gen.next();
        try {
            const Config c = config_merge_text(Config{}, text, "fuzz input");
            ++parsed;
            validate(c);
            EXPECT_TRUE(config_from_json(config_to_json(c)) == c) << text.substr(0, 300);
        } catch (const ConfigError& e) {
            ++refused;
            EXPECT_LT(std::string(e.what()).size(), 2000u) << text.substr(0, 300);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "input " << i << " threw " << e.what() << " for: " << text.substr(0, 300);
        }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("fuzz: %d parsed, %d refused in %.2f s\n", parsed, refused, secs);
    // The generator must reach both outcomes, or it tests nothing.
    EXPECT_GT(parsed, 100);
    EXPECT_GT(refused, 5000);
}

// The same generator through the CLI, as a user's file meets it: every input
// exits 0 or 2 (never a crash or a signal), a refused one writes nothing (no
// run store for `run`), an accepted one gives `checkpoint` its files.
TEST(ConfigFuzz, TheCliExitsZeroOrTwoAndWritesNothingOnRefusal) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / ("mlk_cli_fuzz_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    Generator gen(20261124);
    int accepted = 0, refused = 0;
    for (int i = 0; i < 600; ++i) {
        const std::string text = gen.next();
        bool reader_accepts = true;
        try {
            validate(config_merge_text(Config{}, text, "fuzz input"));
        } catch (const std::exception&) {
            reader_accepts = false;
        }
        const fs::path file = dir / "input.json";
        std::ofstream(file, std::ios::binary) << text;
        const std::string input = " --config " + file.string();
        if (reader_accepts) {
            const fs::path out = dir / ("ck" + std::to_string(i));
            const auto r = clitest::cli("checkpoint --preset default" + input + " --out " + out.string());
            EXPECT_EQ(r.code, 0) << "input " << i << ": " << r.out << "\nfor: " << text.substr(0, 300);
            EXPECT_TRUE(fs::exists(out / "model.safetensors")) << "input " << i;
            fs::remove_all(out);
            ++accepted;
        } else {
            const fs::path db = dir / "refused.sqlite";
            const auto r = clitest::cli("run --preset default --steps 1" + input + " --db " + db.string());
            EXPECT_EQ(r.code, 2) << "input " << i << ": " << r.out << "\nfor: " << text.substr(0, 300);
            EXPECT_FALSE(fs::exists(db)) << "input " << i << " was refused but wrote a run store";
            fs::remove_all(db);
            fs::remove_all(db.string() + ".ckpt");
            ++refused;
        }
    }
    fs::remove_all(dir);
    EXPECT_GE(accepted, 10);  // the generator is seeded: 14 of these 600
    EXPECT_GT(refused, 300);
}
