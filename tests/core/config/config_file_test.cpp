// The config reader (config_file.h): files that cannot be read, invalid or
// hostile JSON, numbers a double cannot hold, keys given twice, and the
// suggestions for every verl / slime / ms-swift spelling in the schema. Every
// failure must be a ConfigError naming the source and the key.
#include "core/config/config_file.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

using namespace mlk;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// The message of the ConfigError that reading `text` throws ("" and a test
// failure when it does not throw one).
std::string error_of(const std::string& text) {
    try {
        config_merge_text(Config{}, text, "test input");
        ADD_FAILURE() << "no error for " << text.substr(0, 200);
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

void expect_error(const std::string& text, std::initializer_list<std::string> needles) {
    const std::string msg = error_of(text);
    EXPECT_EQ(msg.rfind("test input: ", 0), 0u) << msg;
    for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
}

class ConfigFileTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mlk_config_file_test_" + std::to_string(getpid()) + "_" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string write(const std::string& name, const std::string& text) {
        const std::string path = (dir_ / name).string();
        std::ofstream(path, std::ios::binary) << text;
        return path;
    }
    std::string file_error(const std::string& path) {
        try {
            config_merge_file(Config{}, path);
            ADD_FAILURE() << "no error for " << path;
        } catch (const ConfigError& e) {
            return e.what();
        }
        return "";
    }
    fs::path dir_;
};

}  // namespace

TEST_F(ConfigFileTest, ReadsAValidFileOverTheBase) {
    Config base;
    base.seed = 7;
    const std::string path = write("a.json", "{\n  \"rollout\": {\"top_p\": 0.9},\n  \"rl.steps\": 12\n}\n");
    const Config c = config_merge_file(base, path);
    EXPECT_EQ(c.rollout.top_p, 0.9);
    EXPECT_EQ(c.rl.steps, 12);
    EXPECT_EQ(c.seed, 7) << "keys the file does not give keep the base's value";
}

TEST_F(ConfigFileTest, FilesThatCannotBeReadNameTheFile) {
    const std::string missing = (dir_ / "nope.json").string();
    std::string msg = file_error(missing);
    EXPECT_NE(msg.find("config file " + missing), std::string::npos) << msg;
    EXPECT_NE(msg.find("does not exist"), std::string::npos) << msg;

    msg = file_error(dir_.string());
    EXPECT_NE(msg.find("config file " + dir_.string()), std::string::npos) << msg;
    EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;

    msg = file_error(write("empty.json", " \n"));
    EXPECT_NE(msg.find("empty.json: is empty"), std::string::npos) << msg;

    if (geteuid() != 0) {  // root reads any file
        const std::string locked = write("locked.json", "{}");
        fs::permissions(locked, fs::perms::none);
        msg = file_error(locked);
        EXPECT_NE(msg.find("locked.json: cannot be read"), std::string::npos) << msg;
    }
}

// A FIFO would block the reader until some writer comes (forever, if none
// does) and a device may never end: both are refused at once, by kind.
TEST_F(ConfigFileTest, PathsThatAreNotRegularFilesAreRefusedWithoutBlocking) {
    const std::string fifo = (dir_ / "pipe.json").string();
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    // A reader that opened the FIFO anyway would wait for a writer: one comes
    // and goes until the read is over, so such a reader fails this test
    // instead of hanging it.
    std::atomic<bool> done{false};
    std::thread writer([&] {
        while (!done) {
            const int fd = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
            if (fd >= 0) close(fd);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    std::string msg = file_error(fifo);
    done = true;
    writer.join();
    EXPECT_NE(msg.find("config file " + fifo + ": is a FIFO"), std::string::npos) << msg;
    EXPECT_NE(msg.find("allowed: a regular JSON file"), std::string::npos) << msg;
    msg = file_error("/dev/zero");
    EXPECT_NE(msg.find("/dev/zero: is a character device"), std::string::npos) << msg;
}

TEST_F(ConfigFileTest, InvalidJsonGivesLineAndColumn) {
    const std::string path = write("bad.json", "{\n  \"seed\": 1,\n  oops\n}\n");
    const std::string msg = file_error(path);
    EXPECT_NE(msg.find("bad.json: invalid JSON at line 3, column 3"), std::string::npos) << msg;
    // A value in a file keeps naming the file and the key.
    const std::string range = file_error(write("range.json", "{\"rollout\": {\"top_p\": 2}}"));
    EXPECT_NE(range.find("range.json: rollout.top_p: 2 is out of range"), std::string::npos) << range;
}

TEST(ConfigReader, TrailingBytesAndNulAreRefused) {
    expect_error("{} x", {"invalid JSON", "line 1, column 4"});
    expect_error(std::string("{}\0", 3), {"NUL byte", "line 1, column 3"});
    expect_error(std::string("{\"seed\": 1\0, \"seed\": 2}", 22), {"NUL byte"});
    expect_error("{}{}", {"invalid JSON"});
    expect_error("[1, 2]", {"expected a JSON object, got array"});
}

TEST(ConfigReader, DeepNestingIsRefusedWithoutRecursion) {
    for (int levels : {65, 1000, 100000}) {
        const std::string text = "{\"seed\": " + std::string(levels, '[') + std::string(levels, ']') + "}";
        const std::string msg = error_of(text);
        EXPECT_NE(msg.find("seed: nested deeper than 64 levels"), std::string::npos) << msg.substr(0, 300);
        EXPECT_LT(msg.size(), 300u);
    }
    // At the limit it is read, then refused as the wrong type for seed.
    const std::string ok = "{\"seed\": " + std::string(63, '[') + std::string(63, ']') + "}";
    expect_error(ok, {"seed: expected an integer"});
    // Deep objects as well as arrays, inside a section.
    std::string objs = "{\"rollout\": {\"top_k\": ";
    for (int i = 0; i < 5000; ++i) objs += "{\"a\": ";
    objs += "1" + std::string(5000, '}') + "}}";
    expect_error(objs, {"rollout.top_k.a.a.a", "nested deeper than 64"});
}

TEST(ConfigReader, LongValuesAreQuotedShort) {
    const std::string big(100000, 'x');
    std::string msg = error_of("{\"rollout\": {\"precision\": \"" + big + "\"}}");
    EXPECT_NE(msg.find("rollout.precision: \"xxxx"), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 400u);
    msg = error_of("{\"" + big + "\": 1}");
    EXPECT_NE(msg.find("unknown key \"xxxx"), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 400u);
    msg = error_of("{\"seed\": " + std::string(50000, '1') + "}");
    EXPECT_NE(msg.find("seed: the number 1111"), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 400u);
    // An unterminated string is the rest of the file: not echoed whole.
    msg = error_of("{\"seed\": \"" + big);
    EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg.substr(0, 300);
    EXPECT_LT(msg.size(), 600u);
}

TEST(ConfigReader, NumbersADoubleCannotHoldNameTheKey) {
    expect_error("{\"rollout\": {\"temperature\": 1e400}}", {"rollout.temperature", "1e400", "too large"});
    expect_error("{\"rollout.temperature\": -1e400}", {"rollout.temperature", "too large"});
    expect_error("{\"correction\": {\"veto_threshold\": 1e-400}}",
                 {"correction.veto_threshold", "1e-400", "too small", "would read as 0"});
    expect_error("{\"seed\": 1e400}", {"seed", "too large"});
    // Zero written any way is zero, and the smallest subnormal is not 0.
    const Config z = config_merge_text(Config{}, "{\"correction\": {\"veto_threshold\": 0.0e-400}}", "t");
    EXPECT_EQ(z.correction.veto_threshold, 0.0);
    const Config tiny = config_merge_text(Config{}, "{\"correction\": {\"veto_threshold\": 5e-324}}", "t");
    EXPECT_GT(tiny.correction.veto_threshold, 0.0);
    // --set reads numbers the same way.
    for (const char* kv : {"rollout.temperature=1e400", "correction.veto_threshold=1e-400"}) {
        Config c;
        try {
            apply_set(c, kv);
            ADD_FAILURE() << kv;
        } catch (const ConfigError& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find(std::string(kv).substr(0, std::string(kv).find('='))), std::string::npos) << msg;
            EXPECT_NE(msg.find("too "), std::string::npos) << msg;
        }
    }
}

TEST(ConfigReader, KeysGivenTwiceAreRefused) {
    expect_error("{\"seed\": 1, \"seed\": 2}", {"seed: given twice"});
    expect_error("{\"rollout\": {\"top_k\": 1}, \"rollout\": {\"top_p\": 0.5}}", {"rollout: given twice"});
    expect_error("{\"rollout\": {\"top_k\": 1, \"top_k\": 2}}", {"rollout.top_k: given twice"});
    expect_error("{\"rollout.top_k\": 1, \"rollout.top_k\": 1}", {"rollout.top_k: given twice"});
    expect_error("{\"rollout\": {\"top_k\": 1}, \"rollout.top_k\": 2}", {"rollout.top_k: given twice"});
    expect_error("{\"rollout.top_k\": 2, \"rollout\": {\"top_k\": 1}}", {"rollout.top_k: given twice"});
}

TEST(ConfigReader, OddKeysAreShownEscaped) {
    const std::string msg = error_of("{\"se\\u0000ed\": 1}");
    EXPECT_NE(msg.find("unknown key \"se\\u0000ed\""), std::string::npos) << msg;
    const std::string tab = error_of("{\"a\\tb\": 1}");
    EXPECT_NE(tab.find("\"a\\u0009b\""), std::string::npos) << tab;
    const std::string bytes = error_of("{\"\xff\xfe\": 1}");
    EXPECT_NE(bytes.find("invalid JSON"), std::string::npos) << bytes;  // not UTF-8: the parser refuses it
}

TEST(ConfigReader, NestedCommunitySpellingsGetSuggestions) {
    expect_error("{\"actor_rollout_ref\": {\"actor\": {\"optim\": {\"lr\": 1e-6}}}}",
                 {"actor_rollout_ref.actor.optim.lr", "optim.lr"});
    expect_error("{\"actor_rollout_ref.actor.optim.lr\": 1e-6}", {"optim.lr"});
    expect_error("{\"--tis-clip\": 2}", {"correction.is_upper"});
}

// Every community name of the schema, as a dotted key, nested objects and (for
// flags) the flag itself, must be answered with our key among the suggestions.
TEST(ConfigReader, EveryCommunityNameGetsASuggestion) {
    int names = 0, suggested = 0;
    for (const ConfigKey& k : config_schema()) {
        for (const std::string& name : community_names(k)) {
            if (find_config_key(name)) continue;  // spelled as ours: read, not suggested
            std::vector<std::string> forms = {json({{name, 1}}).dump()};
            if (name.find('.') != std::string::npos && name.rfind("--", 0) != 0) {
                json nested = 1;
                std::string rest = name;
                std::vector<std::string> parts;
                for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1))
                    parts.push_back(rest.substr(0, dot));
                parts.push_back(rest);
                for (auto it = parts.rbegin(); it != parts.rend(); ++it) nested = json({{*it, nested}});
                forms.push_back(nested.dump());
            }
            for (const std::string& text : forms) {
                ++names;
                const std::string msg = error_of(text);
                const bool ok = msg.find(k.key) != std::string::npos;
                suggested += ok;
                EXPECT_TRUE(ok) << k.key << " not suggested for " << text << ": " << msg;
            }
        }
    }
    EXPECT_GE(names, 60);
    std::printf("community spellings with a suggestion: %d of %d\n", suggested, names);
}
