// `mismatch-lab-cli settings`: every schema key, as a line each, as JSON and
// as the page docs/settings.md, which must be the command's output as it is
// now (regenerated whenever the schema changes).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../cli_runner.h"
#include "core/config/config.h"
#include "core/config/number_text.h"

using namespace mlk;
using clitest::cli;

namespace {

const std::string kPage = std::string(MLK_SOURCE_DIR) + "/docs/settings.md";
const std::string kRegenerate = std::string(MLK_CLI_PATH) + " settings --markdown > " + kPage;

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// A Markdown cell's text as a reader sees it: escapes and entities undone.
std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) out += s[++i];
        else if (s.compare(i, 4, "&lt;") == 0) out += '<', i += 3;
        else out += s[i];
    }
    return out;
}

// The cells of a table row "| a | b |", split at the '|' that are not escaped.
std::vector<std::string> cells(const std::string& row) {
    std::vector<std::string> out;
    std::string cell;
    for (size_t i = 1; i < row.size(); ++i) {
        if (row[i] == '\\' && i + 1 < row.size()) {
            cell += row.substr(i, 2);
            ++i;
        } else if (row[i] == '|') {
            out.push_back(cell.substr(1, cell.size() - 2));  // the space on either side
            cell.clear();
        } else {
            cell += row[i];
        }
    }
    return out;
}

// A default that is not a fraction as the page writes it: "3", "true", "bf16", "\"\"" for empty text.
std::string default_shown(const ConfigKey& k) {
    if (k.type == ValueType::text) return "\"" + k.default_value.get<std::string>() + "\"";
    if (k.default_value.is_string()) return k.default_value.get<std::string>();
    return k.default_value.dump();
}

}  // namespace

TEST(CliSettings, CheckedInPageIsTheCommandsOutput) {
    const auto r = cli("settings --markdown");
    ASSERT_EQ(r.code, 0) << r.out;
    const std::string page = read_file(kPage);
    if (page == r.out) return;
    // The first line that differs, rather than 30 KB of both texts.
    const auto want = lines_of(r.out), have = lines_of(page);
    size_t i = 0;
    while (i < want.size() && i < have.size() && want[i] == have[i]) ++i;
    ADD_FAILURE() << "docs/settings.md is not what `mismatch-lab-cli settings --markdown` prints now (the settings "
                  << "schema changed?); regenerate it with\n  " << kRegenerate << "\nFirst difference, line " << i + 1
                  << ":\n  docs/settings.md: " << (i < have.size() ? have[i] : "(end of file)")
                  << "\n  the command:      " << (i < want.size() ? want[i] : "(end of output)");
}

// Every key of the schema has its row on the page, in its group's section,
// with its type, default, allowed values or range and description.
TEST(CliSettings, PageHasARowForEverySchemaKey) {
    const std::string page = read_file(kPage);
    ASSERT_FALSE(page.empty()) << kPage << " is missing; generate it with\n  " << kRegenerate;
    const auto lines = lines_of(page);
    for (const ConfigKey& k : config_schema()) {
        SCOPED_TRACE(k.key);
        const std::string start = "| `" + k.key + "` |";
        std::string section;
        const std::string* row = nullptr;
        for (const auto& line : lines) {
            if (line.rfind("## ", 0) == 0) section = line;
            if (line.rfind(start, 0) == 0) {
                EXPECT_EQ(row, nullptr) << "two rows";
                row = &line;
                const std::string group = k.key.substr(0, k.key.find('.'));
                EXPECT_EQ(unescape(section), "## " + (group == k.key ? group : group + ".*"));
            }
        }
        ASSERT_NE(row, nullptr) << "no row starting " << start << " in " << kPage;
        const auto c = cells(*row);
        ASSERT_EQ(c.size(), 5u) << *row;
        EXPECT_EQ(c[1], value_type_name(k.type));
        const std::string def = unescape(c[2]);
        if (k.default_value.is_number_float()) {
            EXPECT_EQ(c_strtod(def.substr(1, def.size() - 2).c_str(), nullptr), k.default_value.get<double>()) << def;
        } else {
            EXPECT_EQ(def, "`" + default_shown(k) + "`");
        }
        const std::string range = unescape(c[3]);
        switch (k.type) {
            case ValueType::enumeration:
                for (const auto& a : k.allowed) EXPECT_NE(range.find("`" + a + "`"), std::string::npos) << a;
                break;
            case ValueType::boolean: EXPECT_EQ(range, "`true`, `false`"); break;
            case ValueType::text: EXPECT_EQ(range, k.format); break;
            case ValueType::integer:
            case ValueType::number: EXPECT_EQ(range, "`" + k.range_text() + "`"); break;
        }
        const std::string what = unescape(c[4]);
        EXPECT_EQ(what.rfind("**" + k.label + ".** " + k.description, 0), 0u) << what;
        if (!k.verl.empty()) {
            EXPECT_NE(what.find("verl: " + k.verl), std::string::npos) << what;
        }
    }
}

// The refusals the page lists are validate()'s own: each is refused with that
// message when set on the defaults.
TEST(CliSettings, PageListsRefusalsAsTheChecksMakeThem) {
    const auto r = cli("settings --markdown");
    ASSERT_EQ(r.code, 0) << r.out;
    int listed = 0;
    bool replay = false;
    for (const auto& line : lines_of(r.out)) {
        if (line.rfind("- `", 0) != 0) continue;
        const size_t end = line.find("`: ", 3);
        ASSERT_NE(end, std::string::npos) << line;
        const std::string setting = line.substr(3, end - 3), why = unescape(line.substr(end + 3));
        Config c;
        try {
            apply_set(c, setting);
            ADD_FAILURE() << setting << " is listed as refused but was accepted";
        } catch (const ConfigError& e) {
            EXPECT_EQ(e.what(), why) << setting;
        }
        ++listed;
        replay = replay || setting == "moe.routing_replay=R3";
    }
    EXPECT_GT(listed, 0);
    EXPECT_TRUE(replay) << "moe.routing_replay=R3 needs model.kind=moe, which the defaults do not have";
}

TEST(CliSettings, JsonIsTheSchema) {
    const auto r = cli("settings --json");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_TRUE(j.is_array());
    ASSERT_EQ(j.size(), config_schema().size());
    for (size_t i = 0; i < j.size(); ++i) {
        const ConfigKey& k = config_schema()[i];
        const auto& o = j[i];
        EXPECT_EQ(o["key"], k.key);
        EXPECT_EQ(o["section"], k.section);
        EXPECT_EQ(o["label"], k.label);
        EXPECT_EQ(o["type"], std::string(value_type_name(k.type)));
        EXPECT_EQ(o["default"], k.default_value) << k.key;
        EXPECT_EQ(o["range"], k.range_text());
        EXPECT_EQ(o["description"], k.description);
        if (k.type == ValueType::enumeration) EXPECT_EQ(o["allowed"], k.allowed) << k.key;
        else EXPECT_FALSE(o.contains("allowed")) << k.key;
        EXPECT_EQ(o.value("verl", ""), k.verl) << k.key;
        EXPECT_EQ(o.value("hf", ""), k.hf) << k.key;
    }
}

TEST(CliSettings, PlainIsOneLineASetting) {
    const auto r = cli("settings");
    ASSERT_EQ(r.code, 0) << r.out;
    const auto lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), config_schema().size() + 1) << r.out;
    EXPECT_EQ(lines[0].rfind("key ", 0), 0u) << lines[0];
    for (size_t i = 0; i < config_schema().size(); ++i) {
        const ConfigKey& k = config_schema()[i];
        std::istringstream words(lines[i + 1]);
        std::string key, type;
        words >> key >> type;
        EXPECT_EQ(key, k.key);
        EXPECT_EQ(type, value_type_name(k.type)) << k.key;
        EXPECT_NE(lines[i + 1].find(k.range_text()), std::string::npos) << lines[i + 1];
    }
}

TEST(CliSettings, BadInputIsRefused) {
    for (const char* args :
         {"settings --bogus", "settings --markdown=1", "settings extra", "settings --json --markdown"}) {
        const auto r = cli(args);
        EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
        EXPECT_EQ(r.out.find("# Settings"), std::string::npos) << args;
    }
    EXPECT_NE(cli("settings --bogus").out.find("unknown option --bogus"), std::string::npos);
    EXPECT_NE(cli("settings extra").out.find("unexpected argument 'extra'"), std::string::npos);
    EXPECT_NE(cli("settings --json --markdown").out.find("not both"), std::string::npos);
}

TEST(CliSettings, HelpShowsTheCommand) {
    const auto r = cli("settings --help");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.rfind("usage: mismatch-lab-cli settings [--json|--markdown]\n", 0), 0u) << r.out;
    EXPECT_NE(cli("--help").out.find("  settings [--json|--markdown]\n"), std::string::npos);
}
