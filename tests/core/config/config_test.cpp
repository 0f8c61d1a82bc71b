// Config schema, JSON parsing (nested and dotted), --set, validation, diff.
#include "core/config/config.h"
#include "core/config/presets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/model/vocab.h"

using namespace mlk;
using nlohmann::json;

namespace {

// Parses and expects a ConfigError whose message contains every needle.
void expect_error(const json& j, std::initializer_list<std::string> needles) {
    try {
        config_from_json(j);
        ADD_FAILURE() << "no error for " << j.dump();
    } catch (const ConfigError& e) {
        const std::string msg = e.what();
        for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
}

void expect_set_error(const std::string& kv, std::initializer_list<std::string> needles) {
    Config c;
    const Config before = c;
    try {
        apply_set(c, kv);
        ADD_FAILURE() << "no error for --set " << kv;
    } catch (const ConfigError& e) {
        const std::string msg = e.what();
        for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
    EXPECT_TRUE(c == before) << "a failed --set must leave the config unchanged";
}

uint64_t bits(double x) {
    uint64_t u;
    std::memcpy(&u, &x, sizeof u);
    return u;
}

}  // namespace

TEST(Config, DefaultsMatchTheSpecification) {
    const json expected = {
        {"seed", 1},
        {"task.name", "addition"},
        {"task.length", 3},
        {"task.partial_credit", false},
        {"task.eval_size", 64},
        {"model.kind", "dense"},
        {"model.size", "tiny"},
        {"model.hidden_size", 0},
        {"model.num_layers", 0},
        {"model.num_heads", 0},
        {"model.num_kv_heads", 0},
        {"model.head_dim", 0},
        {"model.intermediate_size", 0},
        {"model.num_experts", 0},
        {"model.num_experts_per_tok", 0},
        {"model.moe_intermediate_size", 0},
        {"model.decoder_sparse_step", 0},
        {"model.mlp_only_layers", ""},
        {"model.tie_word_embeddings", "auto"},
        {"model.max_position_embeddings", 0},
        {"kernels.batch_invariant", false},
        {"kernels.threads", 0},
        {"rollout.precision", "bf16"},
        {"rollout.temperature", 1.0},
        {"rollout.top_k", 0},
        {"rollout.top_p", 1.0},
        {"rollout.max_new_tokens", 10},
        {"rollout.max_batch", 0},
        {"rollout.logprobs", "processed"},
        {"train.precision", "fp32"},
        {"moe.routing_replay", "off"},
        {"rl.steps", 150},
        {"rl.prompts_per_step", 32},
        {"rl.samples_per_prompt", 8},
        {"rl.estimator", "grpo"},
        {"rl.grpo_std_norm", true},
        {"rl.loss", "ppo"},
        {"rl.eps_low", 0.2},
        {"rl.eps_high", 0.2},
        {"rl.gspo_eps_low", 3e-4},
        {"rl.gspo_eps_high", 4e-4},
        {"rl.mini_steps", 1},
        {"rl.loss_agg", "token-mean"},
        {"rl.old_policy", "recompute"},
        {"correction.is_level", "off"},
        {"correction.is_mode", "truncate"},
        {"correction.is_lower", 0.0},
        {"correction.is_upper", 2.0},
        {"correction.rs_level", "off"},
        {"correction.rs_lower", 0.5},
        {"correction.rs_upper", 2.0},
        {"correction.veto_threshold", 0.0},
        {"correction.veto_kind", "ratio"},
        {"correction.batch_normalize", false},
        {"optim.lr", 5e-4},
        {"optim.warmup_steps", 0},
        {"optim.grad_clip", 1.0},
        {"optim.weight_decay", 0.0},
        {"optim.beta1", 0.9},
        {"optim.beta2", 0.99},
        {"optim.eps", 1e-8},
        {"base.sft_steps", 3000},
        {"base.lr", 3e-3},
        {"base.batch_size", 32},
        {"base.target_reward", 0.25},
        {"base.grow_from_layers", 0},
        {"base.grow_steps", 25},
        {"base.grow_lr", 1e-3},
        {"run.checkpoint_every", 10},
        {"run.keep_last", 3},
        {"run.keep_every", 0},
        {"rollout.device", "cpu"},
        {"rollout.profile", "simple"},
        {"rollout.matmul_dtype", "auto"},
        {"rollout.residual_dtype", "auto"},
        {"rollout.attn_probs_dtype", "auto"},
        {"rollout.stats_dtype", "auto"},
        {"rollout.lm_head_dtype", "auto"},
        {"rollout.norm_dtype", "auto"},
        {"rollout.silu_dtype", "auto"},
        {"rollout.rope_cache_dtype", "auto"},
        {"rollout.rope_dtype", "auto"},
        {"rollout.attn_softmax", "auto"},
        {"rollout.fp8_scale", "auto"},
        {"rollout.fp8_granularity", "auto"},
        {"rollout.kv_cache_dtype", "auto"},
        {"train.device", "cpu"},
        {"train.profile", "simple"},
        {"train.matmul_dtype", "auto"},
        {"train.residual_dtype", "auto"},
        {"train.attn_probs_dtype", "auto"},
        {"train.stats_dtype", "auto"},
        {"train.lm_head_dtype", "auto"},
        {"train.norm_dtype", "auto"},
        {"train.silu_dtype", "auto"},
        {"train.rope_cache_dtype", "auto"},
        {"train.rope_dtype", "auto"},
        {"train.attn_softmax", "auto"},
        {"train.fp8_scale", "auto"},
        {"train.fp8_granularity", "auto"},
    };
    const json flat = config_to_flat_json(Config{});
    EXPECT_EQ(flat, expected) << flat.dump(1);
    EXPECT_EQ(config_from_json(json::object()), Config{});
    EXPECT_EQ(config_from_json(nullptr), Config{});
    // The schema's default_value agrees with Config{}.
    for (const auto& k : config_schema()) EXPECT_EQ(k.default_value, flat[k.key]) << k.key;
}

TEST(Config, SchemaIsComplete) {
    const std::vector<std::string> sections = {"Task",        "Model",      "Rollout engine", "Kernels",     "MoE & R3",
                                               "Policy loss", "Correction", "Optimizer",      "Base policy", "Run"};
    EXPECT_EQ(config_sections(), sections);
    std::set<std::string> keys;
    for (const auto& k : config_schema()) {
        EXPECT_TRUE(keys.insert(k.key).second) << "duplicate " << k.key;
        EXPECT_FALSE(k.label.empty()) << k.key;
        EXPECT_GE(k.description.size(), 20u) << k.key;
        EXPECT_NE(std::find(sections.begin(), sections.end(), k.section), sections.end()) << k.key;
        if (k.type == ValueType::enumeration) {
            EXPECT_GE(k.allowed.size(), 2u) << k.key;
        }
        if (k.type == ValueType::integer) {
            EXPECT_TRUE(std::isfinite(k.min) && std::isfinite(k.max)) << k.key;
        }
        // The key finds its own row, and its name is the path of a field of
        // Config holding the default.
        const ConfigKey* found = find_config_key(k.key);
        ASSERT_NE(found, nullptr) << k.key;
        EXPECT_EQ(found->key, k.key);
        EXPECT_EQ(found->description, k.description) << k.key;
        EXPECT_EQ(config_get(Config{}, k.key), k.default_value) << k.key;
        EXPECT_FALSE(k.tooltip().empty());
    }
    EXPECT_EQ(find_config_key("no.such"), nullptr);
    // Sections are contiguous.
    std::vector<std::string> seen;
    for (const auto& k : config_schema())
        if (seen.empty() || seen.back() != k.section) seen.push_back(k.section);
    EXPECT_EQ(seen, sections);

    const ConfigKey* up = find_config_key("correction.is_upper");
    ASSERT_NE(up, nullptr);
    EXPECT_EQ(up->section, "Correction");
    EXPECT_NE(up->verl.find("rollout_is_threshold"), std::string::npos);
    EXPECT_NE(up->slime.find("tis_upper_bound"), std::string::npos);
    EXPECT_NE(up->swift.find("rollout_importance_sampling_threshold"), std::string::npos);
    EXPECT_NE(up->tooltip().find("tis_upper_bound"), std::string::npos);
    EXPECT_EQ(up->range_text(), "> 0");
    EXPECT_NE(find_config_key("correction.is_mode")->description.find("min(w, U)"), std::string::npos);
    EXPECT_EQ(find_config_key("rollout.top_p")->range_text(), "(0, 1]");
    EXPECT_EQ(find_config_key("task.length")->range_text(), "[1, 8]");
    EXPECT_EQ(find_config_key("rollout.precision")->range_text(), "fp32, bf16, fp16, fp8_e4m3, fp8_e5m2");
    EXPECT_EQ(find_config_key("moe.routing_replay")->slime, "--use-rollout-routing-replay");
    EXPECT_EQ(find_config_key("correction.rs_level")->allowed,
              (std::vector<std::string>{"off", "token", "sequence", "geometric", "seq_mean_k3"}));
    EXPECT_EQ(find_config_key("correction.is_level")->allowed,
              (std::vector<std::string>{"off", "token", "sequence", "geometric"}));
}

TEST(Config, NestedAndDottedFormsMix) {
    Config c = config_from_json({{"rollout", {{"precision", "fp16"}, {"top_k", 5}}},
                                 {"correction.is_level", "token"},
                                 {"correction", {{"is_mode", "mask"}}},
                                 {"model", {{"kind", "moe"}}},
                                 {"moe.routing_replay", "R3"},
                                 {"rl", {{"old_policy", "decoupled"}}}});
    EXPECT_EQ(c.rollout.precision, Dtype::f16);
    EXPECT_EQ(c.rollout.top_k, 5);
    EXPECT_EQ(c.correction.is_level, IsLevel::token);
    EXPECT_EQ(c.correction.is_mode, IsMode::mask);
    EXPECT_EQ(c.model.kind, ModelKind::moe);
    EXPECT_EQ(c.moe.routing_replay, RoutingReplay::R3);
    EXPECT_EQ(c.rollout.temperature, 1.0);  // untouched keys keep defaults
    // A dotted key inside a nested object.
    EXPECT_EQ(config_from_json({{"rollout", {{"precision", "fp32"}}}, {"rl", {{"steps", 7}}}}).rl.steps, 7);
    // Integers are accepted for numbers, integral floats for integers.
    EXPECT_EQ(config_from_json({{"correction.is_upper", 3}}).correction.is_upper, 3.0);
    EXPECT_EQ(config_from_json({{"task.length", 4.0}}).task.length, 4);
    // The same key twice (nested and dotted) is refused.
    expect_error({{"rollout", {{"precision", "fp16"}}}, {"rollout.precision", "bf16"}}, {"rollout.precision", "twice"});
    // Merging keeps the base.
    Config base;
    base.seed = 99;
    EXPECT_EQ(config_merge_json(base, {{"task.length", 5}}).seed, 99);
}

TEST(Config, ErrorsNameTheKeyAndTheAllowedValues) {
    try {
        config_from_json({{"rollout", {{"precision", "bf17"}}}});
        FAIL();
    } catch (const ConfigError& e) {
        EXPECT_STREQ(
            e.what(),
            "rollout.precision: \"bf17\" is not allowed; allowed values: fp32, bf16, fp16, fp8_e4m3, fp8_e5m2");
    }
    static_assert(std::is_base_of_v<std::invalid_argument, ConfigError>);
    expect_error({{"moe.routing_replay", "r3"}}, {"moe.routing_replay", "off, R2, R3", "did you mean \"R3\""});
    expect_error({{"task.length", 9}}, {"task.length", "9", "[1, 8]"});
    expect_error({{"task.length", 0}}, {"task.length", "[1, 8]"});
    expect_error({{"task.length", "3"}}, {"task.length", "integer", "[1, 8]", "string"});
    expect_error({{"task.length", 2.5}}, {"task.length", "integer"});
    expect_error({{"task.partial_credit", 1}}, {"task.partial_credit", "true or false"});
    expect_error({{"rollout.top_p", 0.0}}, {"rollout.top_p", "(0, 1]"});
    expect_error({{"rollout.top_p", 1.5}}, {"rollout.top_p", "(0, 1]"});
    EXPECT_EQ(config_from_json({{"rollout.top_p", 1.0}}).rollout.top_p, 1.0);
    expect_error({{"rollout.temperature", 0.05}}, {"rollout.temperature", "(0.05, 10]"});
    EXPECT_EQ(config_from_json({{"rollout.temperature", 10}}).rollout.temperature, 10.0);
    expect_error({{"seed", -1}}, {"seed", "[0, 9007199254740991]"});
    expect_error({{"correction.is_upper", 0}}, {"correction.is_upper", "> 0"});
    expect_error({{"rollout", 3}}, {"rollout", "object"});
    expect_error({{"rollout", {{"precision", {{"x", 1}}}}}}, {"rollout.precision", "object"});
    expect_error(json::array({1, 2}), {"object"});
}

TEST(Config, UnknownKeysSuggestCloseMatches) {
    expect_error({{"rollout.precison", "bf16"}}, {"unknown key \"rollout.precison\"", "rollout.precision"});
    expect_error({{"rollout", {{"temprature", 1.0}}}}, {"rollout.temprature", "rollout.temperature"});
    expect_error({{"precision", "bf16"}}, {"rollout.precision", "train.precision"});
    // Community names point at ours.
    expect_error({{"tis_mode", "mask"}}, {"correction.is_mode"});
    expect_error({{"correction", {{"rollout_is_threshold", 2.0}}}}, {"correction.is_upper"});
    expect_error({{"use_rollout_routing_replay", true}}, {"moe.routing_replay"});
    expect_error({{"zzzzzz", 1}}, {"unknown key \"zzzzzz\"", "no close match"});
    // A nested unknown section is named down to the leaf, as its dotted form
    // would be, so nested community spellings are matched like dotted ones.
    expect_error({{"rollout", {{"nope", {{"deeper", 1}}}}}}, {"unknown key \"rollout.nope.deeper\""});
}

TEST(Config, CrossFieldValidation) {
    expect_error({{"correction.is_lower", 3.0}, {"correction.is_upper", 2.0}},
                 {"correction.is_lower", "correction.is_upper"});
    expect_error({{"correction.rs_lower", 1.5}, {"correction.rs_upper", 1.2}},
                 {"correction.rs_lower", "correction.rs_upper"});
    // seq_mean_k3 uses rs_upper as a K3 threshold: rs_lower is not compared.
    EXPECT_NO_THROW(config_from_json({{"correction.rs_level", "seq_mean_k3"}, {"correction.rs_upper", 0.01}}));
    expect_error({{"moe.routing_replay", "R3"}}, {"moe.routing_replay", "model.kind"});
    EXPECT_NO_THROW(config_from_json({{"moe.routing_replay", "R3"}, {"model.kind", "moe"}}));
    expect_error({{"correction.is_mode", "clip"}, {"correction.is_upper", 0.5}},
                 {"correction.is_upper", "correction.is_lower"});
    EXPECT_NO_THROW(config_from_json(
        {{"correction.is_mode", "clip"}, {"correction.is_upper", 0.5}, {"correction.is_lower", 0.25}}));
    expect_error({{"rl.samples_per_prompt", 1}}, {"rl.estimator", "rl.samples_per_prompt"});
    EXPECT_NO_THROW(config_from_json({{"rl.samples_per_prompt", 1}, {"rl.estimator", "reinforce_baseline"}}));
    // fp8 needs a scale: a matmul input or the KV cache, never a stored intermediate.
    for (const char* key : {"rollout.residual_dtype", "rollout.attn_probs_dtype", "rollout.stats_dtype",
                            "rollout.lm_head_dtype", "train.residual_dtype", "train.lm_head_dtype"})
        expect_error({{key, "fp8_e4m3"}}, {key, "auto, fp32, bf16, fp16"});
    EXPECT_NO_THROW(config_from_json({{"rollout.matmul_dtype", "fp8_e5m2"},
                                      {"rollout.kv_cache_dtype", "fp8_e4m3"},
                                      {"train.matmul_dtype", "fp8_e4m3"},
                                      {"rollout.precision", "fp8_e4m3"}}));
    expect_error({{"rollout.profile", "vllm"}}, {"rollout.profile", "vllm-bf16", "fsdp-bf16"});

    Config c;
    c.rollout.top_p = 0.0;  // built in code, caught by validate
    EXPECT_THROW(validate(c), ConfigError);
    c = Config{};
    EXPECT_NO_THROW(validate(c));

    // Legal but ineffective settings produce warnings, not errors.
    EXPECT_TRUE(config_warnings(Config{}).empty());
    c.correction.is_level = IsLevel::token;
    ASSERT_FALSE(config_warnings(c).empty());
    EXPECT_NE(config_warnings(c)[0].find("rl.old_policy"), std::string::npos);
    c.rl.old_policy = OldPolicyMode::decoupled;
    EXPECT_TRUE(config_warnings(c).empty());
    // A named profile ignores the simple profile's precision: refused, naming
    // the key that decides (profiles_test covers every numerics key).
    c.rollout.profile = NumericsProfile::vllm_bf16;
    EXPECT_TRUE(config_warnings(c).empty());
    c.rollout.precision = Dtype::f16;
    try {
        validate(c);
        ADD_FAILURE() << "rollout.precision under vllm-bf16 accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("rollout.matmul_dtype"), std::string::npos) << e.what();
    }
}

TEST(Config, ApplySet) {
    Config c;
    apply_set(c, "rollout.precision=fp32");
    apply_set(c, "kernels.batch_invariant=true");
    apply_set(c, "task.length=5");
    apply_set(c, "optim.lr=2.5e-4");
    apply_set(c, " correction.is_upper = 1.5 ");
    apply_set(c, "rl.loss_agg=seq-mean-token-mean");
    apply_set(c, "seed=9007199254740991");
    EXPECT_EQ(c.rollout.precision, Dtype::f32);
    EXPECT_TRUE(c.kernels.batch_invariant);
    EXPECT_EQ(c.task.length, 5);
    EXPECT_EQ(c.optim.lr, 2.5e-4);
    EXPECT_EQ(c.correction.is_upper, 1.5);
    EXPECT_EQ(c.rl.loss_agg, LossAggregation::seq_mean_token_mean);
    EXPECT_EQ(c.seed, 9007199254740991LL);
    apply_set(c, "kernels.batch_invariant=false");
    EXPECT_FALSE(c.kernels.batch_invariant);

    expect_set_error("rollout.precision=bf17", {"rollout.precision", "fp32, bf16, fp16"});
    expect_set_error("task.length=abc", {"task.length", "integer", "[1, 8]"});
    expect_set_error("task.length=3.5", {"task.length", "integer"});
    expect_set_error("task.length=12", {"task.length", "[1, 8]"});
    expect_set_error("optim.lr=fast", {"optim.lr", "number", "(0, 1]"});
    expect_set_error("optim.lr=nan", {"optim.lr"});
    expect_set_error("kernels.batch_invariant=yes", {"kernels.batch_invariant", "true or false"});
    expect_set_error("rollout.precisoin=fp32", {"rollout.precision"});
    expect_set_error("rollout.precision", {"key=value"});
    expect_set_error("moe.routing_replay=R3", {"moe.routing_replay", "model.kind"});  // cross-field
    expect_set_error("seed=99999999999999999999", {"seed"});
}

TEST(Config, JsonRoundTripIsExact) {
    Config c;
    c.seed = 123456789012345;
    c.task.name = TaskName::reverse;
    c.task.partial_credit = true;
    c.model.kind = ModelKind::moe;
    c.model.size = ModelSize::small;
    c.moe.routing_replay = RoutingReplay::R3;
    c.rollout.temperature = 0.1 + 0.2;  // 0.30000000000000004
    c.rollout.top_p = 1.0 / 3.0;
    c.optim.lr = 1.2345678901234567e-5;
    c.optim.eps = 4.9406564584124654e-300;
    c.optim.beta2 = std::nextafter(1.0, 0.0);
    c.correction.is_level = IsLevel::geometric;
    c.correction.is_mode = IsMode::clip;
    c.correction.is_lower = 0.99;
    c.correction.is_upper = 1.001;
    c.correction.rs_level = RsLevel::seq_mean_k3;
    c.correction.rs_upper = 0.01;
    c.correction.veto_threshold = 1e-4;
    c.correction.veto_kind = VetoKind::old_prob;
    c.rl.estimator = AdvantageEstimator::rloo;
    c.rl.loss = PolicyLossType::gspo;
    c.rl.old_policy = OldPolicyMode::bypass;
    c.rl.eps_high = 0.27;
    validate(c);

    const json j = config_to_json(c);
    ASSERT_TRUE(j.contains("seed"));
    ASSERT_TRUE(j["rollout"].is_object());
    EXPECT_EQ(j["rollout"]["precision"], "bf16");
    const Config back = config_from_json(json::parse(j.dump()));
    EXPECT_TRUE(back == c);
    EXPECT_EQ(bits(back.rollout.temperature), bits(c.rollout.temperature));
    EXPECT_EQ(bits(back.rollout.top_p), bits(c.rollout.top_p));
    EXPECT_EQ(bits(back.optim.lr), bits(c.optim.lr));
    EXPECT_EQ(bits(back.optim.eps), bits(c.optim.eps));
    EXPECT_EQ(bits(back.optim.beta2), bits(c.optim.beta2));
    EXPECT_EQ(config_to_json(back).dump(), j.dump());
    EXPECT_TRUE(config_diff(back, c).empty());
    // Every schema key is present in the nested form.
    for (const auto& k : config_schema()) {
        std::string ptr = "/" + k.key;
        std::replace(ptr.begin(), ptr.end(), '.', '/');
        EXPECT_TRUE(j.contains(json::json_pointer(ptr))) << k.key;
    }
    // The flat form parses too.
    EXPECT_TRUE(config_from_json(config_to_flat_json(c)) == c);
}

TEST(Config, DiffAndGenericAccess) {
    Config a, b;
    b.rollout.precision = Dtype::f32;
    b.correction.is_upper = 1.5;
    b.kernels.batch_invariant = true;
    const auto d = config_diff(a, b);
    ASSERT_EQ(d.size(), 3u);
    // Schema order: Rollout engine, Kernels, Correction.
    EXPECT_EQ(d[0].key, "rollout.precision");
    EXPECT_EQ(d[0].a, "bf16");
    EXPECT_EQ(d[0].b, "fp32");
    EXPECT_EQ(d[1].key, "kernels.batch_invariant");
    EXPECT_EQ(d[1].a, "false");
    EXPECT_EQ(d[1].b, "true");
    EXPECT_EQ(d[2].key, "correction.is_upper");
    EXPECT_EQ(d[2].a, "2.0");
    EXPECT_EQ(d[2].b, "1.5");

    Config c;
    EXPECT_EQ(config_get(c, "rl.loss_agg"), "token-mean");
    EXPECT_EQ(config_get(c, "seed"), 1);
    config_set(c, "rl.mini_steps", 8);
    EXPECT_EQ(c.rl.mini_steps, 8);
    config_set(c, "correction.rs_level", "geometric");
    EXPECT_EQ(c.correction.rs_level, RsLevel::geometric);
    EXPECT_EQ(config_value_text(c, "correction.rs_level"), "geometric");
    EXPECT_EQ(config_value_text(c, "optim.lr"), "0.0005");
    EXPECT_THROW(config_set(c, "rl.mini_steps", 0), ConfigError);
    EXPECT_THROW(config_set(c, "nope", 0), ConfigError);
    EXPECT_THROW(config_get(c, "nope"), ConfigError);
    EXPECT_EQ(enum_name(LossAggregation::seq_mean_token_mean), "seq-mean-token-mean");
    EXPECT_EQ(enum_name(Dtype::bf16), "bf16");
}

// Every enumeration's names round-trip, and unknown or mis-cased names are refused.
template <class E>
void expect_names_round_trip() {
    const auto names = enum_names<E>();
    ASSERT_FALSE(names.empty());
    for (size_t i = 0; i < names.size(); ++i) {
        EXPECT_EQ(enum_name(static_cast<E>(i)), names[i]);
        EXPECT_EQ(enum_from_name<E>(names[i]), static_cast<E>(i)) << names[i];
    }
    EXPECT_EQ(enum_from_name<E>("no-such-name"), std::nullopt);
    EXPECT_EQ(enum_name(static_cast<E>(names.size())), "?");
}

TEST(Config, EnumNamesRoundTrip) {
    expect_names_round_trip<TaskName>();
    expect_names_round_trip<ModelKind>();
    expect_names_round_trip<ModelSize>();
    expect_names_round_trip<Dtype>();
    expect_names_round_trip<LogprobSource>();
    expect_names_round_trip<RoutingReplay>();
    expect_names_round_trip<OldPolicyMode>();
    expect_names_round_trip<AdvantageEstimator>();
    expect_names_round_trip<PolicyLossType>();
    expect_names_round_trip<LossAggregation>();
    expect_names_round_trip<IsLevel>();
    expect_names_round_trip<IsMode>();
    expect_names_round_trip<RsLevel>();
    expect_names_round_trip<VetoKind>();
    EXPECT_EQ(enum_from_name<RsLevel>("Token"), std::nullopt);
    EXPECT_EQ(enum_from_name<IsMode>("tis"), std::nullopt);
}

// Runs of one preset get names that tell them apart (not three "r3-grpo").
TEST(Config, DefaultRunNamesSayWhatDiffersFromThePreset) {
    const Config base = preset_config("r3-grpo");
    EXPECT_EQ(default_run_name("r3-grpo", base, base), "r3-grpo");
    Config c = base;
    c.seed = 3;
    c.rl.steps = 40;  // the length is not what a run tries
    EXPECT_EQ(default_run_name("r3-grpo", base, c), "r3-grpo seed=3");
    c.correction.is_upper = 1.5;
    c.rollout.profile = NumericsProfile::vllm_bf16;
    c.train.profile = NumericsProfile::fsdp_bf16;
    c.optim.lr = 0.001;
    const std::string name = default_run_name("r3-grpo", base, c);
    EXPECT_EQ(name.rfind("r3-grpo ", 0), 0u) << name;
    EXPECT_NE(name.find("+1 more seed=3"), std::string::npos) << name;  // the seed never folded in
    EXPECT_EQ(default_run_name("", Config{}, Config{}), "custom");
}

// Pasted JSON with several bad keys: every bad key is named at once (the
// first three in full), not only the first.
TEST(Config, EveryBadKeyIsNamedAtOnce) {
    try {
        config_from_json({{"rollout.precision", "bf17"}, {"optim.lr", -1}, {"nope", 1}});
        FAIL() << "accepted";
    } catch (const ConfigError& e) {
        const std::string m = e.what();
        for (const char* key : {"rollout.precision", "optim.lr", "nope"})
            EXPECT_NE(m.find(key), std::string::npos) << key << " missing from: " << m;
    }
    try {
        config_from_json({{"a1", 1}, {"a2", 1}, {"a3", 1}, {"a4", 1}, {"a5", 1}});
        FAIL() << "accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("and 2 more"), std::string::npos) << e.what();
    }
}

// The preset picker lists presets by group: every shipped preset names one,
// the groups come in their teaching order, and a preset file with an unknown
// field is refused (a misspelt "group" must not pass silently).
// A setting the user changed that the configuration does not read is said,
// by key and value, with why; one left at its default is not (the form only
// greys it), and one sentence serves every key a reason silences.
TEST(Config, ChangedSettingsThatNothingReadsAreWarnings) {
    Config c;
    c.rl.old_policy = OldPolicyMode::decoupled;
    EXPECT_TRUE(config_warnings(c).empty());
    c.correction.is_upper = 5;
    std::vector<std::string> w = config_warnings(c);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0], "correction.is_upper=5.0 has no effect: correction.is_level is off");
    c.correction.is_mode = IsMode::mask;
    w = config_warnings(c);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0], "correction.is_mode=mask, correction.is_upper=5.0 have no effect: correction.is_level is off");
    c.correction.is_level = IsLevel::token;
    EXPECT_TRUE(config_warnings(c).empty());
    c.rl.loss = PolicyLossType::gspo;
    c.rl.eps_high = 0.5;
    w = config_warnings(c);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("rl.eps_high=0.5 has no effect: only rl.loss=ppo"), std::string::npos) << w[0];
}

// A shipped preset sets nothing that it does not read.
TEST(Presets, NoPresetSetsWhatItDoesNotRead) {
    for (const Preset& p : presets())
        for (const std::string& w : config_warnings(preset_config(p.name))) ADD_FAILURE() << p.name << ": " << w;
}

TEST(Presets, EveryPresetHasAGroupAndFilesAreReadStrictly) {
    const std::vector<std::string> groups = preset_groups();
    ASSERT_FALSE(groups.empty());
    EXPECT_EQ(groups.front(), "Basics");
    for (const Preset& p : presets()) {
        EXPECT_FALSE(p.group.empty()) << p.name;
        EXPECT_NE(std::find(groups.begin(), groups.end(), p.group), groups.end()) << p.name;
    }
    EXPECT_EQ(std::find(groups.begin(), groups.end(), std::string(kOtherPresetGroup)), groups.end());
    const Preset ok = parse_preset("x", R"({"description": "d", "group": "G", "config": {}})");
    EXPECT_EQ(ok.group, "G");
    EXPECT_EQ(parse_preset("y", R"({"description": "d", "config": {}})").group, "");
    EXPECT_THROW(parse_preset("z", R"({"description": "d", "gruop": "G", "config": {}})"), std::logic_error);
}
