// Numbers under a locale whose decimal point is a comma. The workbench's
// QApplication sets the C library's locale from the user's (LANG=de_DE.UTF-8,
// fr_FR, ...), where printf writes "0,5" and strtod stops at "0.5"'s point.
// A stored log-prob, an exported metric, a config value or an HF config
// written or read in that process must be the same as in the CLI's "C"
// locale (tests/comma_locale.h builds one with a comma).
#include <gtest/gtest.h>

#include <clocale>
#include <limits>
#include <regex>
#include <string>

#include "core/config/config.h"
#include "core/config/number_text.h"
#include "core/metrics/run_stats.h"
#include "core/metrics/verdicts.h"
#include "core/model/checkpoint.h"
#include "core/model/params.h"
#include "core/rl/footprint.h"
#include "core/rl/worst_tokens.h"
#include "core/store/export.h"
#include "core/store/store.h"
#include "tests/comma_locale.h"
#include "tests/scratch.h"

using namespace mlk;

namespace {

class CommaLocale : public ::testing::Test {
protected:
    static void SetUpTestSuite() { testing_locale::build_comma_locale(testing_scratch::scratch_dir("numeric_locale")); }
    void SetUp() override { ASSERT_EQ(testing_locale::use_comma_locale(), ""); }
    void TearDown() override { std::setlocale(LC_NUMERIC, "C"); }
};

TEST_F(CommaLocale, NumberTextIsWrittenAndReadWithAPoint) {
    EXPECT_EQ(general_text(0.25, 5), "0.25");
    EXPECT_EQ(general_text(1.0 / 3, 17), "0.33333333333333331");
    EXPECT_EQ(general_text(1.5e-7, 3), "1.5e-07");
    EXPECT_EQ(fixed_text(2.75, 1), "2.8");
    EXPECT_EQ(value_text(0.123456), "0.12346");
    char* end = nullptr;
    const std::string half = " +0.5x";
    EXPECT_EQ(c_strtod(half.c_str(), &end), 0.5);
    EXPECT_STREQ(end, "x");
}

TEST_F(CommaLocale, ConfigValuesParseAsInTheCLocale) {
    Config c;
    apply_set(c, "base.lr=0.25");
    EXPECT_EQ(c.base.lr, 0.25);
    // from_chars says only "out of range"; strtod tells a too-small value from a too-large one.
    try {
        apply_set(c, "base.lr=1.5e-400");
        ADD_FAILURE() << "1.5e-400 was accepted as " << c.base.lr;
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
    }
    try {
        apply_set(c, "base.lr=2.5e400");
        ADD_FAILURE() << "2.5e400 was accepted as " << c.base.lr;
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
    }
}

TEST_F(CommaLocale, VerdictThresholdsParseAsInTheCLocale) {
    for (const VerdictThresholdInfo& info : verdict_threshold_infos()) {
        if (info.integer) continue;
        const double x = info.min + 0.25 * (info.max - info.min);
        VerdictThresholds t;
        set_verdict_threshold(t, info.key, general_text(x, 17));
        EXPECT_EQ(verdict_threshold(t, info.key), x) << info.key;
    }
}

TEST_F(CommaLocale, WorstTokensKeepTheirFractions) {
    WorstTokens w;
    WorstToken t;
    t.lp_roll = -0.123456f;
    t.lp_train = -1.75f;
    t.alt_roll = {{7, -0.015625f}};
    w.tokens.push_back(t);
    const WorstTokens back = parse_worst_tokens(worst_tokens_json(w));
    ASSERT_EQ(back.tokens.size(), 1u);
    EXPECT_EQ(back.tokens[0].lp_roll, -0.123456f);
    EXPECT_EQ(back.tokens[0].lp_train, -1.75f);
    EXPECT_EQ(back, w);
}

TEST_F(CommaLocale, ExportsWriteAndReadPoints) {
    const std::string path = (testing_scratch::scratch_dir("numeric_locale") / "export.sqlite").string();
    Store s = Store::open(path);
    const int64_t id = s.create_run("run", "default", "{}", 1);
    StepRecord rec;
    rec.step = 0;
    rec.metrics = {{"reward_mean", 0.625}, {"k3_kl", 1.5e-4}};
    s.append_step(id, rec);
    const std::string csv = export_csv(s, {id});
    const std::string header = "step,time,elapsed_s,reward_mean,k3_kl\n";
    ASSERT_EQ(csv.rfind(header, 0), 0u) << csv;
    // step, its time, the seconds since the run was created (a point, not a comma), the metrics
    const std::string row = csv.substr(header.size());
    EXPECT_EQ(row.rfind("0,", 0), 0u) << row;
    EXPECT_NE(row.find(",0.625,0.00014999999999999999\n"), std::string::npos) << row;
    EXPECT_NE(row.find("Z,0."), std::string::npos) << row;
    EXPECT_EQ(parse_exported_number(nlohmann::json("0.625")), 0.625);
    EXPECT_THROW(parse_exported_number(nlohmann::json("half")), std::invalid_argument);
}

TEST_F(CommaLocale, HuggingFaceConfigIsWritten) {
    ModelConfig m = model_preset("moe-tiny");
    m.rms_norm_eps = 2.5e-6f;  // the presets' 1e-05 and 10000 have no decimal point to get wrong
    m.rope_theta = 12345.5f;
    nlohmann::json hf;
    ASSERT_NO_THROW(hf = hf_config_json(m));
    EXPECT_EQ(hf["rms_norm_eps"].get<float>(), 2.5e-6f);
    EXPECT_EQ(hf["rope_theta"].get<float>(), 12345.5f);
    std::setlocale(LC_NUMERIC, "C");
    EXPECT_EQ(hf, hf_config_json(m)) << "the same model's config.json under the comma and the C locale";
}

TEST_F(CommaLocale, FootprintTextUsesAPoint) {
    const ModelFootprint f = model_footprint(config_from_json(nlohmann::json::parse("{}")));
    const std::string text = footprint_text(f);
    EXPECT_FALSE(std::regex_search(text, std::regex("[0-9],[0-9]"))) << text;
    std::setlocale(LC_NUMERIC, "C");
    EXPECT_EQ(text, footprint_text(f));
}

}  // namespace
