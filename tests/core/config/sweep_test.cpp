// Sweep expansion: the cross product in a fixed order, names that tell the
// configurations apart, the `--set` checks for keys and values, and a hash
// that finds the same sweep again and only that one.
#include <gtest/gtest.h>

#include <set>

#include "core/config/model_builder.h"
#include "core/config/presets.h"
#include "core/config/sweep.h"

using namespace mlk;

namespace {

std::vector<SweepConfig> expand(const SweepSpec& s) { return expand_sweep(s, preset_config); }

SweepSpec grid(std::initializer_list<const char*> options) {
    SweepSpec s;
    for (const char* o : options) add_grid_option(s, o);
    return s;
}

template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(Sweep, CrossProductOfPresetsAndGridFirstKeyOutermost) {
    SweepSpec s = grid({"correction.is_upper=1.5,5", "optim.lr=0.001,0.01,0.1"});
    s.presets = {"default", "r3-tis"};
    const auto c = expand(s);
    ASSERT_EQ(c.size(), 12u);
    EXPECT_EQ(c[0].preset, "default");
    EXPECT_EQ(c[6].preset, "r3-tis");
    EXPECT_DOUBLE_EQ(c[0].config.correction.is_upper, 1.5);
    EXPECT_DOUBLE_EQ(c[2].config.correction.is_upper, 1.5);
    EXPECT_DOUBLE_EQ(c[3].config.correction.is_upper, 5);
    EXPECT_DOUBLE_EQ(config_get(c[1].config, "optim.lr").get<double>(), 0.01);
    EXPECT_EQ(c[4].settings,
              (std::vector<std::pair<std::string, std::string>>{{"correction.is_upper", "5"}, {"optim.lr", "0.01"}}));
    std::set<std::string> names;
    for (const auto& x : c) names.insert(x.name);
    EXPECT_EQ(names.size(), c.size());
}

TEST(Sweep, NamesAreThePresetPlusWhatTheGridChanges) {
    SweepSpec s = grid({"correction.is_upper=1.5,5"});
    s.presets = {"r3-tis"};
    const auto c = expand(s);
    const Config base = preset_config("r3-tis");
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].name, default_run_name("r3-tis", base, c[0].config));
    EXPECT_NE(c[0].name.find("r3-tis"), std::string::npos);
    EXPECT_NE(c[1].name.find("is_upper=5"), std::string::npos);
    // No presets: the defaults.
    const auto d = expand(SweepSpec{});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].name, "default");
}

TEST(Sweep, MoreThanThreeSettingsSpellEveryGridSettingOut) {
    // default_run_name shows three differences; the fourth key alone tells these apart.
    SweepSpec s = grid({"optim.lr=0.002", "rl.prompts_per_step=4", "rl.samples_per_prompt=2", "rl.eps_high=0.1,0.3"});
    const auto c = expand(s);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_NE(c[0].name, c[1].name);
}

// A name cut to "default is_level=sequence is_upper=5.0 old_policy=decoupled
// +1 more" must not hide the seed in "+1 more": both seeds of a configuration
// would read the same.
TEST(Sweep, RunNamesTellEverySlotApart) {
    SweepSpec s = grid({"rl.old_policy=decoupled", "correction.is_level=token,sequence", "correction.is_upper=5",
                        "rl.prompts_per_step=4,8"});
    s.seeds = 3;
    const auto configs = expand(s);
    ASSERT_EQ(configs.size(), 4u);
    std::set<std::string> names;
    for (const SweepConfig& c : configs)
        for (int seed = 1; seed <= s.seeds; ++seed) {
            const std::string name = sweep_run_name(c, seed);
            EXPECT_TRUE(names.insert(name).second) << name;
            EXPECT_EQ(name.rfind(c.name, 0), 0u) << name;  // the configuration's name, as the summary shows it
            if (seed != 1) {
                EXPECT_TRUE(name.ends_with(" seed=" + std::to_string(seed))) << name;
            }
        }
    EXPECT_EQ(sweep_run_name(configs[0], 1), configs[0].name);  // the default seed
    // A base with another seed (the workbench's form): the sweep runs seeds
    // 1..N all the same, named the same way.
    SweepSpec from_form = grid({"correction.is_upper=2,5"});
    Config base = Config{};
    base.seed = 3;
    const auto form_configs = expand_sweep(from_form, "default", base);
    EXPECT_EQ(sweep_run_name(form_configs[0], 1), form_configs[0].name);
    EXPECT_EQ(sweep_run_name(form_configs[0], 3), form_configs[0].name + " seed=3");
}

TEST(Sweep, RunConfigSetsSeedAndSteps) {
    SweepSpec s;
    s.steps = 7;
    const auto c = expand(s);
    const Config r = sweep_run_config(c[0], s, 3);
    EXPECT_EQ(r.seed, 3u);
    EXPECT_EQ(r.rl.steps, 7);
}

TEST(Sweep, BadInputNamesTheKeyAndWhatIsAllowed) {
    EXPECT_NE(error_of([] { expand(grid({"correction.is_uper=1,2"})); }).find("correction.is_upper"),
              std::string::npos);  // the suggestion
    const std::string bad_value = error_of([] { expand(grid({"correction.is_level=tokn"})); });
    EXPECT_NE(bad_value.find("correction.is_level"), std::string::npos) << bad_value;
    EXPECT_NE(bad_value.find("sequence"), std::string::npos) << bad_value;
    EXPECT_NE(error_of([] { grid({"optim.lr="}); }).find("empty value list"), std::string::npos);
    EXPECT_NE(error_of([] { grid({"optim.lr=1,,2"}); }).find("empty value"), std::string::npos);
    EXPECT_NE(error_of([] { grid({"optim.lr=0.1", "optim.lr=0.2"}); }).find("twice"), std::string::npos);
    EXPECT_NE(error_of([] { grid({"seed=1,2"}); }).find("--seeds"), std::string::npos);
    for (int seeds : {0, kMaxSweepSeeds + 1}) {
        SweepSpec s;
        s.seeds = seeds;
        EXPECT_NE(error_of([&] { expand(s); }).find("--seeds"), std::string::npos);
    }
}

TEST(Sweep, HashFindsTheSameSweepAndOnlyIt) {
    SweepSpec s = grid({"correction.is_upper=1.5,5"});
    s.seeds = 3;
    const std::string h = sweep_hash(sweep_identity(expand(s), s));
    EXPECT_EQ(h, sweep_hash(sweep_identity(expand(s), s)));
    SweepSpec more_seeds = s;
    more_seeds.seeds = 4;
    EXPECT_NE(h, sweep_hash(sweep_identity(expand(more_seeds), more_seeds)));
    SweepSpec longer = s;
    longer.steps = 9;
    EXPECT_NE(h, sweep_hash(sweep_identity(expand(longer), longer)));
    SweepSpec other = grid({"correction.is_upper=1.5,6"});
    other.seeds = 3;
    EXPECT_NE(h, sweep_hash(sweep_identity(expand(other), other)));
}

// A grid key that no configuration reads gives the same runs under other
// names: the defaults recompute the old policy, so no correction acts. Said
// once per key, with why; a key that some configuration reads is not.
TEST(Sweep, AGridKeyThatNoConfigurationReadsIsAWarning) {
    SweepSpec s = grid({"correction.is_level=off,token"});
    std::vector<std::string> w = sweep_warnings(s, expand(s));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0],
              "correction.is_level: no configuration of this sweep reads it, so its 2 values give the same "
              "runs under different names: rl.old_policy=recompute applies no correction (its weights are 1); use "
              "rl.old_policy=decoupled or bypass");
    s = grid({"rl.old_policy=decoupled", "correction.is_upper=2,5"});
    w = sweep_warnings(s, expand(s));
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0].find("correction.is_upper: no configuration"), 0u) << w[0];
    EXPECT_NE(w[0].find("names: correction.is_level is off"), std::string::npos) << w[0];
    // Read where is_level=token: the off half repeats itself, the sweep does not.
    s = grid({"rl.old_policy=decoupled", "correction.is_level=off,token", "correction.is_upper=2,5"});
    EXPECT_TRUE(sweep_warnings(s, expand(s)).empty());
    s = grid({"rl.old_policy=decoupled", "correction.is_level=token", "correction.is_upper=2,5"});
    EXPECT_TRUE(sweep_warnings(s, expand(s)).empty());
}

TEST(Sweep, ShippedFamiliesExpandToTheirPresets) {
    // Every shipped family expands (its presets exist, its grid is valid), at
    // least 5 seeds as the stability lab's verdict tables need; collapse-demo
    // starts with its uncorrected configuration, the baseline of its table.
    std::vector<std::string> names;
    for (const SweepFamily& f : sweep_families()) {
        names.push_back(f.name);
        EXPECT_FALSE(expand(f.spec).empty()) << f.name;
        EXPECT_GE(f.spec.seeds, 5) << f.name;
        for (const std::string& w : sweep_warnings(f.spec, expand(f.spec))) ADD_FAILURE() << f.name << ": " << w;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"batch-invariance", "collapse-demo", "fp16-vs-bf16", "is-does-no-harm",
                                               "long-horizon-corrections", "miles-moe", "r3-paper"}));
    EXPECT_EQ(sweep_family("collapse-demo").spec.presets,
              (std::vector<std::string>{"collapse-demo-fp8-bypass", "collapse-demo-on-policy"}));
    const SweepFamily& moe = sweep_family("miles-moe");
    EXPECT_EQ(moe.spec.seeds, 5);
    EXPECT_EQ(moe.spec.steps, 150);
    EXPECT_EQ(moe.spec.presets, (std::vector<std::string>{"miles-moe-tis1.5", "miles-moe-tis1.5-mis",
                                                          "miles-moe-tis1.5-mis-bn", "miles-moe-tis2-mis-bn"}));
    EXPECT_EQ(expand(sweep_family("is-does-no-harm").spec).size(), 4u);
    EXPECT_NE(
        error_of([] { sweep_family("nope"); }).find("is-does-no-harm, long-horizon-corrections, miles-moe, r3-paper"),
        std::string::npos);
}

TEST(Sweep, APresetNameIsAModelOrAnRlPreset) {
    // A sweep's (and --preset's) names: a model preset is the defaults with
    // that model; an RL preset its whole configuration; anything else names
    // the field and every preset.
    const Config moe = any_preset_config("moe-small", "preset");
    EXPECT_EQ(moe.model, preset_settings("moe-small"));
    EXPECT_EQ(config_to_json(any_preset_config("r3-tis", "preset")), config_to_json(preset_config("r3-tis")));
    const std::string e = error_of([] { any_preset_config("r3-tiss", "--preset"); });
    EXPECT_EQ(e.rfind("--preset: 'r3-tiss' is unknown; allowed: dense-tiny, ", 0), 0u) << e;
    EXPECT_NE(e.find(", r3-tis, "), std::string::npos) << e;
}

TEST(Sweep, FromABaseConfigurationIsThePresetsExpansionOverThatBase) {
    // The workbench's form: a preset changed by hand, swept over one key.
    Config base = preset_config("r3-tis");
    apply_set(base, "optim.lr=0.002");
    SweepSpec s = grid({"correction.is_upper=1.5,5"});
    s.seeds = 2;
    const auto c = expand_sweep(s, "r3-tis", base);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].preset, "r3-tis");
    // The hand-made change is kept; the names show only what the grid changes.
    EXPECT_DOUBLE_EQ(config_get(c[1].config, "optim.lr").get<double>(), 0.002);
    EXPECT_DOUBLE_EQ(c[1].config.correction.is_upper, 5);
    EXPECT_EQ(c[1].name, default_run_name("r3-tis", base, c[1].config));
    EXPECT_EQ(c[1].name.find("lr"), std::string::npos);
    // Over the preset's own configuration it is the preset sweep, hash included.
    SweepSpec p = s;
    p.presets = {"r3-tis"};
    const auto q = expand(p);
    const auto b = expand_sweep(s, "r3-tis", preset_config("r3-tis"));
    EXPECT_EQ(sweep_hash(sweep_identity(q, p)), sweep_hash(sweep_identity(b, s)));
    // The checks are the preset path's: a bad value names the key, bad seeds the range.
    EXPECT_NE(
        error_of([&] { expand_sweep(grid({"correction.is_upper=abc"}), "r3-tis", base); }).find("correction.is_upper"),
        std::string::npos);
    SweepSpec bad;
    bad.seeds = 0;
    EXPECT_NE(error_of([&] { expand_sweep(bad, "r3-tis", base); }).find("1 to 1000"), std::string::npos);
    EXPECT_NE(error_of([&] { expand_sweep(p, "r3-tis", base); }).find("presets"), std::string::npos);
}
