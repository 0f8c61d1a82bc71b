// The probe: mismatch of a configuration measured end to end, through the
// library and through mismatch-lab-cli.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/config/config.h"
#include "core/config/presets.h"
#include "core/model/params.h"
#include "core/rl/probe.h"
#include "tests/cli_runner.h"
#include "tests/core/model/model_ref.h"

using namespace mlk;

namespace {

Config config(const char* kind, bool bi, Dtype roll, Dtype train, bool r3 = false) {
    Config c;
    c.model.kind = std::string(kind) == "moe" ? ModelKind::moe : ModelKind::dense;
    c.kernels.batch_invariant = bi;
    c.rollout.precision = roll;
    c.train.precision = train;
    c.moe.routing_replay = r3 ? RoutingReplay::R3 : RoutingReplay::off;
    return c;
}

ProbeResult probe(const Config& c) {
    ModelConfig m = model_config_of(c);
    ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), (uint64_t)c.seed);
    return run_probe(c, params);
}

TEST(Probe, BatchInvariantEqualPrecisionIsExactlyOnPolicy) {
    for (const char* kind : {"dense", "moe"})
        for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
            ProbeResult r = probe(config(kind, true, dt, dt));
            EXPECT_TRUE(r.bitwise_equal) << kind << " " << dtype_name(dt);
            EXPECT_EQ(r.mismatch.k3_kl, 0.0);
            EXPECT_EQ(r.mismatch.f_1_1, 0.0);
            EXPECT_EQ(r.router.router_level, 0.0);
            EXPECT_GT(r.mismatch.num_valid_tokens, 100u);
        }
}

TEST(Probe, FastKernelsBf16RolloutShowRealMismatchAndR3RemovesRouterFlips) {
    ProbeResult dense = probe(config("dense", false, Dtype::bf16, Dtype::f32));
    EXPECT_FALSE(dense.bitwise_equal);
    EXPECT_GT(dense.mismatch.k3_kl, 0.0);
    EXPECT_EQ(dense.router.router_level, 0.0) << "a dense model has no router";

    ProbeResult moe = probe(config("moe", false, Dtype::bf16, Dtype::f32));
    EXPECT_GT(moe.mismatch.k3_kl, 0.0);
    EXPECT_GT(moe.router.router_level, 0.0) << "bf16 vs fp32 router logits must flip some experts";
    EXPECT_GT(moe.router.token_level, moe.router.router_level);

    ProbeResult r3 = probe(config("moe", false, Dtype::bf16, Dtype::f32, true));
    EXPECT_EQ(r3.router.router_level, 0.0);
    EXPECT_EQ(r3.router.token_level, 0.0);
    EXPECT_LT(r3.mismatch.k3_kl, moe.mismatch.k3_kl);
    // Same rollout either way: R3 only changes the training side.
    EXPECT_EQ(r3.tokens.lp_roll, moe.tokens.lp_roll);
}

TEST(Probe, RawLogprobsWithTemperatureCreateFakeMismatch) {
    Config c = config("dense", true, Dtype::f32, Dtype::f32);
    c.rollout.temperature = 0.7;
    EXPECT_TRUE(probe(c).bitwise_equal);
    c.rollout.logprobs = LogprobSource::raw;
    ProbeResult r = probe(c);
    EXPECT_FALSE(r.bitwise_equal);
    EXPECT_GT(r.mismatch.k3_kl, 1e-4) << "raw log-probs ignore the temperature the trainer applies";
}

TEST(Probe, ContinuousBatchingStaysBitwiseUnderBatchInvariance) {
    // Admitting waiting sequences as others finish changes every decode
    // step's batch; batch-invariant kernels make that irrelevant.
    Config c = config("moe", true, Dtype::bf16, Dtype::bf16);
    c.rollout.max_batch = 5;
    ProbeResult r = probe(c);
    EXPECT_GT(r.roll.prefill_calls, 1);
    EXPECT_LE(*std::max_element(r.roll.decode_batch_sizes.begin(), r.roll.decode_batch_sizes.end()), 5);
    EXPECT_TRUE(r.bitwise_equal);
    EXPECT_EQ(r.mismatch.k3_kl, 0.0);
    EXPECT_THROW(apply_set(c, "rollout.max_batch=-1"), ConfigError);
}

TEST(Probe, SameSeedSameBits) {
    Config c = config("moe", false, Dtype::bf16, Dtype::f32);
    ProbeResult a = probe(c), b = probe(c);
    EXPECT_EQ(a.tokens.lp_roll, b.tokens.lp_roll);
    EXPECT_EQ(a.tokens.lp_train, b.tokens.lp_train);
    EXPECT_EQ(probe_summary_json(a).dump(), probe_summary_json(b).dump());
}

// A model with dense and MoE layers: the routing tables have one row per MoE
// layer, R3 replays every one of them, and the dump says which layers they are.
TEST(Probe, MixedDenseAndMoeLayersCountOnlyTheMoeLayers) {
    Config c = config("moe", false, Dtype::bf16, Dtype::f32);
    c.model.num_layers = 4;
    c.model.mlp_only_layers = "0,2";
    c.rl.prompts_per_step = 8;
    validate(c);
    ProbeResult r = probe(c);
    EXPECT_EQ(r.model.moe_layers(), std::vector<int>({1, 3}));
    ASSERT_EQ(r.roll.sequences[0].expert_ids.size(), 2u);
    ASSERT_EQ(r.train.used_expert_ids.size(), 2u);
    EXPECT_GT(r.router.router_level, 0.0) << "bf16 vs fp32 router logits must flip some experts";
    const nlohmann::json dump = probe_dump_json(r);
    EXPECT_EQ(dump["layers"], 2);
    EXPECT_EQ(dump["moe_layers"], nlohmann::json::array({1, 3}));
    EXPECT_EQ(dump["tokens"][0]["experts_rollout"].size(), 2u);
    EXPECT_EQ(dump["model"], "moe-custom");

    c.moe.routing_replay = RoutingReplay::R3;
    ProbeResult r3 = probe(c);
    EXPECT_EQ(r3.replay.size(), 2u);
    EXPECT_EQ(r3.router.router_level, 0.0);
    EXPECT_EQ(r3.router.token_level, 0.0);
    EXPECT_EQ(r3.tokens.lp_roll, r.tokens.lp_roll);
    EXPECT_LT(r3.mismatch.k3_kl, r.mismatch.k3_kl);
}

// R3 checked from outside: the dump's routing of every position (prompt and
// response) fed to the independent double-precision reference reproduces the
// training engine's R3 log-probs; with other prompt routes it does not.
TEST(Probe, DumpRoutingReproducesR3LogprobsThroughTheReference) {
    Config c = config("moe", false, Dtype::bf16, Dtype::f32, true);
    c.rl.prompts_per_step = 4;
    c.rl.samples_per_prompt = 2;
    const ModelConfig model = model_config_of(c);
    const ParamLayout layout = make_param_layout(model);
    std::vector<float> params(layout.total);
    init_params(model, layout, params.data(), (uint64_t)c.seed);
    const nlohmann::json dump = nlohmann::json::parse(probe_dump_json(run_probe(c, params)).dump());

    const int k = dump["experts_per_token"], L = dump["layers"];
    const int B = (int)dump["sequences"].size();
    int T = 0;
    for (const auto& s : dump["sequences"]) T = std::max(T, (int)s["tokens"].size());
    std::vector<int32_t> tokens((size_t)B * T, 0);
    // Padding and the never-fed last token predict nothing compared here: any valid experts do.
    std::vector<std::vector<int32_t>> routes(L, std::vector<int32_t>((size_t)B * T * k));
    for (auto& layer : routes)
        for (size_t i = 0; i < layer.size(); ++i) layer[i] = (int32_t)(i % k);
    std::vector<uint8_t> is_prompt((size_t)B * T, 0);
    const auto put = [&](size_t row, const nlohmann::json& per_layer) {
        for (int l = 0; l < L; ++l)
            for (int j = 0; j < k; ++j)
                if (per_layer[l][j] >= 0) routes[l][row * k + j] = per_layer[l][j];
    };
    int prompt_rows = 0, replayed_prompt_rows = 0;
    for (int i = 0; i < B; ++i) {
        const auto& s = dump["sequences"][i];
        for (size_t t = 0; t < s["tokens"].size(); ++t) tokens[(size_t)i * T + t] = s["tokens"][t];
        ASSERT_EQ(s["prompt_experts_rollout"].size(), s["prompt_len"].get<size_t>());
        for (int pos = 0; pos < s["prompt_len"]; ++pos) {
            put((size_t)i * T + pos, s["prompt_experts_rollout"][pos]);
            is_prompt[(size_t)i * T + pos] = 1;
            ++prompt_rows;
            // R3: the trainer used exactly the rollout's prompt routes.
            replayed_prompt_rows += s["prompt_experts_train"][pos] == s["prompt_experts_rollout"][pos];
        }
    }
    EXPECT_EQ(replayed_prompt_rows, prompt_rows);
    for (const auto& t : dump["tokens"])
        put((size_t)t["seq"].get<int>() * T + t["pos"].get<int>(), t["experts_rollout"]);

    const std::vector<double> P(params.begin(), params.end());
    const double inv_temp = 1.0 / c.rollout.temperature;
    const auto worst_error = [&](std::vector<std::vector<int32_t>> r) {
        const auto ref = reftest::ref_model_logp(model, P, tokens, B, T, inv_temp, &r, true);
        double worst = 0;
        for (const auto& t : dump["tokens"])
            worst = std::max(worst, std::fabs(ref[(size_t)t["seq"].get<int>() * T + t["pos"].get<int>()] -
                                              t["lp_train"].get<double>()));
        return worst;
    };
    EXPECT_LT(worst_error(routes), 2e-4) << "the tolerance of the engines' reference test (model_test)";

    // Other experts at the prompt positions only (each top-k set moved to the
    // next experts): the response log-probs move well past the tolerance, so
    // the agreement above rests on the dump's prompt routes being the ones
    // the trainer replayed.
    std::vector<std::vector<int32_t>> moved = routes;
    for (auto& layer : moved)
        for (size_t row = 0; row < is_prompt.size(); ++row)
            if (is_prompt[row])
                for (int j = 0; j < k; ++j) layer[row * k + j] = (layer[row * k + j] + 1) % model.num_experts;
    EXPECT_GT(worst_error(moved), 10 * 2e-4);
}

// The production presets do what their descriptions say, each against the
// preset it is one change from (random weights, the presets' own seed).
TEST(Probe, ProductionPresetsShowWhatTheirDescriptionsSay) {
    auto k3 = [](const ProbeResult& r) { return r.mismatch.k3_kl; };
    const ProbeResult dense = probe(preset_config("production-dense-deep"));
    EXPECT_GE(k3(dense), 1e-5);
    EXPECT_LE(k3(dense), 1e-3);
    EXPECT_GT(k3(probe(preset_config("fp8-kv-cache-dense-deep"))), 5 * k3(dense));
    EXPECT_LT(k3(probe(preset_config("fp32-lm-head-dense-deep"))), k3(dense));

    // On dense-small too: the published dense range, K3 KL 1e-5 to 1e-3.
    const ProbeResult small = probe(config_from_json(nlohmann::json::parse(
        R"({"model": {"kind": "dense", "size": "small"}, "rollout": {"profile": "vllm-bf16"},
            "train": {"profile": "fsdp-bf16"}})")));
    EXPECT_GE(k3(small), 1e-5);
    EXPECT_LE(k3(small), 1e-3);

    const ProbeResult moe = probe(preset_config("production-moe-deep"));
    EXPECT_GE(moe.router.token_level, 0.3) << "router flips on at least 30% of response tokens";
    EXPECT_GE(k3(moe), 1e-3) << "the published MoE range 1e-3..1e-1 (moe-deep sits at its bottom)";
    EXPECT_LE(k3(moe), 1e-1);
    EXPECT_GT(k3(moe), k3(dense));
    const ProbeResult r3 = probe(preset_config("production-moe-deep-r3"));
    EXPECT_EQ(r3.router.token_level, 0.0);
    EXPECT_LT(k3(r3), k3(moe));
    const ProbeResult fp8 = probe(preset_config("fp8-rollout-moe-deep"));
    EXPECT_GT(fp8.mismatch.f_2, moe.mismatch.f_2);
    EXPECT_GT(k3(fp8), 10 * k3(moe));
    const ProbeResult unified = probe(preset_config("fp8-unified-moe-deep"));
    EXPECT_LT(k3(unified), k3(fp8) / 10);
    EXPECT_LT(unified.router.token_level, fp8.router.token_level / 4);
}

// ---- through the CLI --------------------------------------------------------

using clitest::cli;
using clitest::CliResult;

TEST(ProbeCli, JsonHasEveryKey) {
    CliResult r = cli("probe --preset moe-tiny --json --set rl.prompts_per_step=4");
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    for (const char* key : {"k3_kl",
                            "kl",
                            "logp_abs_diff_mean",
                            "logp_abs_diff_max",
                            "F@1.1",
                            "F@1.5",
                            "F@2",
                            "F@5",
                            "F@10",
                            "tv_token",
                            "tv_seq",
                            "lowp_count@1e-2",
                            "lowp_frac@1e-1",
                            "lowp_abs_diff@1e-4",
                            "lowp_k3_share@0",
                            "router_diff_router",
                            "router_diff_token",
                            "router_diff_sequence",
                            "tokens",
                            "bitwise_equal"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_GT(j["router_diff_router"].get<double>(), 0.0);
}

TEST(ProbeCli, BatchInvariantJsonIsBitwise) {
    CliResult r =
        cli("probe --preset dense-tiny --json --set kernels.batch_invariant=true --set rollout.precision=fp32");
    ASSERT_EQ(r.code, 0) << r.out;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["bitwise_equal"], true);
    EXPECT_EQ(j["k3_kl"].get<double>(), 0.0);
}

TEST(ProbeCli, DumpHasPerTokenRecords) {
    auto path = std::filesystem::temp_directory_path() / ("mlk_probe_dump_" + std::to_string(getpid()) + ".json");
    CliResult r = cli("probe --preset moe-tiny --dump " + path.string() + " --set rl.prompts_per_step=2");
    ASSERT_EQ(r.code, 0) << r.out;
    std::ifstream in(path);
    auto j = nlohmann::json::parse(in);
    ASSERT_FALSE(j["tokens"].empty());
    auto t = j["tokens"][0];
    for (const char* key : {"seq", "pos", "token", "lp_rollout_processed", "lp_rollout_raw", "lp_train",
                            "experts_rollout", "experts_train"})
        EXPECT_TRUE(t.contains(key)) << key;
    EXPECT_EQ(t["experts_rollout"].size(), 2u) << "one entry per MoE layer";
    const auto& s = j["sequences"][0];
    ASSERT_EQ(s["prompt_experts_rollout"].size(), s["prompt_len"].get<size_t>()) << "one entry per prompt position";
    ASSERT_EQ(s["prompt_experts_train"].size(), s["prompt_len"].get<size_t>());
    EXPECT_EQ(s["prompt_experts_rollout"][0].size(), 2u) << "one entry per MoE layer";
    EXPECT_EQ(s["prompt_experts_rollout"][0][0].size(), j["experts_per_token"].get<size_t>());
    std::filesystem::remove(path);
}

TEST(ProbeCli, BadInputExitsTwoNamingTheKey) {
    CliResult unknown = cli("probe --preset dense-tiny --set rollout.precison=bf16");
    EXPECT_EQ(unknown.code, 2);
    EXPECT_NE(unknown.out.find("rollout.precison"), std::string::npos) << unknown.out;
    CliResult bad_value = cli("probe --preset dense-tiny --set rollout.precision=bf17");
    EXPECT_EQ(bad_value.code, 2);
    EXPECT_NE(bad_value.out.find("fp32, bf16, fp16"), std::string::npos) << bad_value.out;
    CliResult bad_preset = cli("probe --preset dense-huge");
    EXPECT_EQ(bad_preset.code, 2);
    EXPECT_NE(bad_preset.out.find("dense-tiny"), std::string::npos) << bad_preset.out;
    CliResult bad_option = cli("probe --preset dense-tiny --frobnicate");
    EXPECT_EQ(bad_option.code, 2);
}

TEST(CheckpointCli, WritesLoadableCheckpointUsedByProbe) {
    auto dir = std::filesystem::temp_directory_path() / ("mlk_ckpt_cli_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    CliResult w = cli("checkpoint --preset moe-tiny --out " + dir.string());
    ASSERT_EQ(w.code, 0) << w.out;
    EXPECT_TRUE(std::filesystem::exists(dir / "model.safetensors"));
    EXPECT_TRUE(std::filesystem::exists(dir / "config.json"));
    // The probe from the checkpoint equals the probe from the preset seed.
    CliResult a = cli("probe --preset moe-tiny --json --checkpoint " + dir.string());
    CliResult b = cli("probe --preset moe-tiny --json");
    ASSERT_EQ(a.code, 0) << a.out;
    EXPECT_EQ(a.out, b.out);
    CliResult mismatch = cli("probe --preset dense-tiny --json --checkpoint " + dir.string());
    EXPECT_EQ(mismatch.code, 2);
    std::filesystem::remove_all(dir);
}

TEST(ProbeCli, DeepPresetsAndBuiltModels) {
    for (const char* preset : {"dense-deep", "moe-deep"}) {
        CliResult r = cli(std::string("probe --preset ") + preset +
                          " --json --set rl.prompts_per_step=1 --set rl.samples_per_prompt=2");
        ASSERT_EQ(r.code, 0) << r.out;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["params"], make_param_layout(model_preset(preset)).total) << preset;
        EXPECT_GT(j["memory_mb"].get<double>(), 0.0);
        EXPECT_GT(j["tokens"].get<int>(), 0);
    }
    // The text form says what the model costs before the work starts.
    CliResult t = cli("probe --preset moe-deep --set rl.prompts_per_step=1 --set rl.samples_per_prompt=2");
    ASSERT_EQ(t.code, 0) << t.out;
    EXPECT_EQ(t.out.rfind("model moe-deep: 14.8M parameters", 0), 0u) << t.out;
    EXPECT_NE(t.out.find("per RL step"), std::string::npos) << t.out;
    // Dimensions through --set; bad ones exit 2 naming the key.
    CliResult built = cli("probe --preset moe-tiny --json --set model.num_layers=3 --set model.mlp_only_layers=1");
    ASSERT_EQ(built.code, 0) << built.out;
    for (const auto& [set, key] : std::vector<std::pair<std::string, std::string>>{
             {"model.head_dim=15", "model.head_dim"},
             {"model.num_heads=3", "model.num_kv_heads"},
             {"model.mlp_only_layers=2", "model.mlp_only_layers"},
             {"model.mlp_only_layers=x", "model.mlp_only_layers"},
             {"model.num_experts_per_tok=9", "model.num_experts"},
             {"model.max_position_embeddings=8", "model.max_position_embeddings"},
             {"model.hidden_size=9999", "model.hidden_size"}}) {
        CliResult bad = cli("probe --preset moe-tiny --set " + set);
        EXPECT_EQ(bad.code, 2) << set << ": " << bad.out;
        EXPECT_NE(bad.out.find(key), std::string::npos) << set << ": " << bad.out;
    }
}

TEST(CheckpointCli, BuiltModelCheckpointMatchesOnlyItsArchitecture) {
    auto dir = std::filesystem::temp_directory_path() / ("mlk_ckpt_cli_built_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    const std::string sets = " --set model.num_layers=3 --set model.mlp_only_layers=1";
    CliResult w = cli("checkpoint --preset moe-tiny --out " + dir.string() + sets);
    ASSERT_EQ(w.code, 0) << w.out;
    CliResult a = cli("probe --preset moe-tiny --json --checkpoint " + dir.string() + sets);
    CliResult b = cli("probe --preset moe-tiny --json" + sets);
    ASSERT_EQ(a.code, 0) << a.out;
    EXPECT_EQ(a.out, b.out);
    // Same kind, size and layer count, but every layer MoE: not this checkpoint.
    CliResult other = cli("probe --preset moe-tiny --json --set model.num_layers=3 --checkpoint " + dir.string());
    EXPECT_EQ(other.code, 2);
    EXPECT_NE(other.out.find("dense layers 1"), std::string::npos) << other.out;
    std::filesystem::remove_all(dir);
}

}  // namespace
