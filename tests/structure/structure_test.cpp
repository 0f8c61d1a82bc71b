// The source tree's structure rules: includes
// run only from a layer to the layers below it, no include circle, no Qt in
// core/ or kernels/, and no source file longer than kMaxLines except the
// tables named in kLongTables.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = MLK_SOURCE_DIR;

// Each layer and the layers it may include (itself always).
const std::map<std::string, std::set<std::string>> kMayInclude = {
    {"kernels", {}},
    {"core/config", {"kernels"}},
    {"core/model", {"kernels", "core/config"}},
    {"core/engines", {"kernels", "core/config", "core/model"}},
    {"core/metrics", {"kernels", "core/config"}},
    {"core/store", {"kernels", "core/config", "core/metrics"}},
    {"core/rl", {"kernels", "core/config", "core/model", "core/engines", "core/metrics", "core/store"}},
    {"widgets/data", {"kernels", "core/config", "core/model", "core/engines", "core/metrics", "core/store", "core/rl"}},
    {"widgets/charts",
     {"kernels", "core/config", "core/model", "core/engines", "core/metrics", "core/store", "core/rl", "widgets/data"}},
    {"widgets/report",
     {"kernels", "core/config", "core/model", "core/engines", "core/metrics", "core/store", "core/rl", "widgets/data",
      "widgets/charts"}},
    {"widgets/panels",
     {"kernels", "core/config", "core/model", "core/engines", "core/metrics", "core/store", "core/rl", "widgets/data",
      "widgets/charts"}},
    {"app/cli",
     {"kernels", "core/config", "core/model", "core/engines", "core/metrics", "core/store", "core/rl", "widgets/data",
      "widgets/charts", "widgets/report"}},
    {"app/gui",
     {"kernels", "core/config", "core/model", "core/engines", "core/metrics", "core/store", "core/rl", "widgets/data",
      "widgets/charts", "widgets/report", "widgets/panels"}},
};

// Source files allowed past kMaxLines: tables, whose length is their content.
constexpr int kMaxLines = 600;
const std::set<std::string> kLongTables = {
    "core/config/schema.cpp",  // the schema: one entry per setting
};

std::string layer_of(const std::string& rel) {
    std::string best;
    for (const auto& [layer, _] : kMayInclude)
        if (rel.rfind(layer + "/", 0) == 0 && layer.size() > best.size()) best = layer;
    return best;
}

std::vector<std::string> sources() {
    std::vector<std::string> out;
    for (const char* top : {"kernels", "core", "widgets", "app"})
        for (const auto& e : fs::recursive_directory_iterator(kRoot / top)) {
            const std::string ext = e.path().extension().string();
            if (e.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".inc" || ext == ".cu" || ext == ".cuh"))
                out.push_back(fs::relative(e.path(), kRoot).string());
        }
    return out;
}

// Project includes ("dir/file.h") of a file.
std::vector<std::string> includes_of(const std::string& rel) {
    static const std::regex re(R"(^\s*#\s*include\s+"([^"]+)\")");
    std::ifstream in(kRoot / rel);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, re)) out.push_back(m[1]);
    }
    return out;
}

TEST(Structure, EveryFileBelongsToALayer) {
    for (const auto& f : sources()) EXPECT_FALSE(layer_of(f).empty()) << f << " is in no layer of kMayInclude";
}

TEST(Structure, IncludesGoOnlyDownward) {
    for (const auto& f : sources()) {
        const std::string from = layer_of(f);
        for (const auto& inc : includes_of(f)) {
            if (!fs::exists(kRoot / inc)) continue;  // generated or a test's own helper
            const std::string to = layer_of(inc);
            if (to.empty() || to == from) continue;
            EXPECT_TRUE(kMayInclude.at(from).count(to))
                << f << " (" << from << ") includes " << inc << " (" << to << ")";
        }
    }
}

TEST(Structure, NoIncludeCircle) {
    std::map<std::string, std::vector<std::string>> graph;
    for (const auto& f : sources())
        for (const auto& inc : includes_of(f))
            if (fs::exists(kRoot / inc)) graph[f].push_back(inc);
    std::map<std::string, int> state;  // 0 new, 1 on the path, 2 done
    std::vector<std::string> path;
    std::function<void(const std::string&)> visit = [&](const std::string& n) {
        state[n] = 1;
        path.push_back(n);
        for (const auto& m : graph[n]) {
            if (state[m] == 1) {
                std::string cycle;
                for (auto it = std::find(path.begin(), path.end(), m); it != path.end(); ++it) cycle += *it + " -> ";
                ADD_FAILURE() << "include circle: " << cycle << m;
            } else if (state[m] == 0) {
                visit(m);
            }
        }
        path.pop_back();
        state[n] = 2;
    };
    for (const auto& [n, _] : graph)
        if (state[n] == 0) visit(n);
}

TEST(Structure, CoreAndKernelsIncludeNoQt) {
    static const std::regex qt(R"(^\s*#\s*include\s*[<"]Q[A-Za-z]+)");
    for (const auto& f : sources()) {
        if (f.rfind("core/", 0) != 0 && f.rfind("kernels/", 0) != 0) continue;
        std::ifstream in(kRoot / f);
        for (std::string line; std::getline(in, line);) EXPECT_FALSE(std::regex_search(line, qt)) << f << ": " << line;
    }
}

TEST(Structure, NoSourceFileIsLongerThanTheLimitExceptTables) {
    for (const auto& f : sources()) {
        std::ifstream in(kRoot / f);
        int lines = 0;
        for (std::string line; std::getline(in, line);) ++lines;
        if (kLongTables.count(f)) continue;
        EXPECT_LE(lines, kMaxLines) << f;
    }
}

}  // namespace
