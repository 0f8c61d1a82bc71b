// The numerics settings under every profile: each value a user can set
// either changes what the engine computes (its log-prob bits) or is refused,
// naming what decides instead. No setting is accepted and silently ignored.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "core/config/config.h"
#include "core/config/profiles.h"
#include "core/engines/numerics.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "tests/model_params.h"
#include "tests/token_sequences.h"

namespace mlk {
namespace {

// What an engine computes under some numerics, as bits: the rollout's
// sampled tokens and log-probs, or the trainer's log-probs on fixed tokens.
// A large batch for points whose effect is rare at this size: an fp32
// difference below bf16's resolution changes a stored value about once in
// 2^16 roundings.
class Bits {
public:
    Bits(int prompts, int new_tokens)
        : cfg_(model_preset("dense-tiny")),
          params_(testdata::model_params(cfg_, 42)),
          prompts_(prompts),
          new_tokens_(new_tokens) {
        // Norm weights away from their initial 1, so rounding x/rms before
        // the weight multiply differs from rounding the product once.
        const ParamLayout layout = make_param_layout(cfg_);
        for (const ParamSpec& s : layout.specs)
            if (s.name.find("norm.weight") != std::string::npos)
                for (int64_t i = 0; i < s.numel; ++i)
                    params_[s.offset + i] = 1.0f + 0.3f * (float)std::sin(0.7 * (double)(s.offset + i));
        RolloutEngine roll(cfg_);
        roll.load_weights(params_, EngineNumerics{});
        batch_ = to_seq_batch(roll.generate(Family::fast, prompts_list(), new_tokens_, SamplingParams{}, 7));
        roll.release_weights();
    }
    std::vector<uint32_t> rollout(const EngineNumerics& n) {
        RolloutEngine roll(cfg_);
        roll.load_weights(params_, n);
        const RolloutResult r = roll.generate(Family::fast, prompts_list(), new_tokens_, SamplingParams{}, 7);
        roll.release_weights();
        std::vector<uint32_t> out;
        for (const auto& s : r.sequences) {
            for (int32_t t : s.tokens) out.push_back((uint32_t)t);
            for (float lp : s.lp_processed) out.push_back(float_bits(lp));
        }
        return out;
    }
    std::vector<uint32_t> train(const EngineNumerics& n) {
        TrainEngine train(cfg_);
        const TrainForward f = train.forward(Family::fast, n, params_, batch_, 1.0f, nullptr);
        std::vector<uint32_t> out;
        for (float lp : f.logp) out.push_back(float_bits(lp));
        return out;
    }

private:
    std::vector<std::vector<int32_t>> prompts_list() const { return testdata::token_sequences(prompts_, 5, 3, 7); }
    ModelConfig cfg_;
    std::vector<float> params_;
    int prompts_, new_tokens_;
    SeqBatch batch_;
};

EngineNumerics numerics_of(const Config& c, bool rollout) { return rollout ? rollout_numerics(c) : train_numerics(c); }

TEST(NumericsSettings, EveryValueUnderEveryProfileChangesTheBitsOrIsRefused) {
    Bits small(6, 8), large(64, 16);
    // Bits per distinct numerics and batch, computed once each.
    using Seen = std::vector<std::pair<EngineNumerics, std::vector<uint32_t>>>;
    Seen seen[2][2];  // [large][rollout]
    const auto bits_of = [&](const EngineNumerics& n, bool rollout, bool big) -> const std::vector<uint32_t>& {
        Seen& s = seen[big][rollout];
        for (const auto& [m, b] : s)
            if (m == n) return b;
        Bits& bits = big ? large : small;
        s.emplace_back(n, rollout ? bits.rollout(n) : bits.train(n));
        return s.back().second;
    };
    int refused = 0, changed = 0;
    for (const std::string& profile : enum_names<NumericsProfile>()) {
        Config base;
        apply_set(base, "rollout.profile=" + profile);
        apply_set(base, "train.profile=" + profile);
        for (const std::string& key : numerics_keys()) {
            if (key.ends_with(".profile")) continue;
            const bool rollout = key.rfind("rollout.", 0) == 0;
            const EngineNumerics at_default = numerics_of(base, rollout);
            for (const std::string& value : find_config_key(key)->allowed) {
                SCOPED_TRACE(profile + ": " + key + "=" + value);
                Config c = base;
                std::optional<std::string> error;
                try {
                    apply_set(c, key + "=" + value);
                } catch (const ConfigError& e) {
                    error = e.what();
                }
                if (error) {
                    // Refused: the message names the key; a refusal for want of
                    // effect names what decides instead.
                    EXPECT_NE(error->find(key), std::string::npos) << *error;
                    if (error->find("has no effect") != std::string::npos) {
                        ++refused;
                        Config kept = base;
                        config_set(kept, key, value);
                        EXPECT_EQ(numerics_of(kept, rollout), at_default) << "refused though it changes the numerics";
                    }
                    continue;
                }
                const EngineNumerics n = numerics_of(c, rollout);
                if (n == at_default) {
                    // Accepted with the numerics unchanged: only a value the
                    // profile already gives (a pin that does what it says).
                    EXPECT_TRUE(config_value_text(c, key) == config_value_text(base, key) ||
                                auto_dtype_of(base, key) == value)
                        << "accepted, and the engine computes as without it";
                    continue;
                }
                ++changed;
                if (bits_of(n, rollout, false) != bits_of(at_default, rollout, false)) continue;
                EXPECT_NE(bits_of(n, rollout, true), bits_of(at_default, rollout, true)) << numerics_text(n, rollout);
            }
        }
    }
    // Both outcomes occur: the test exercises refusals and real changes.
    EXPECT_GT(refused, 10);
    EXPECT_GT(changed, 100);
}

TEST(NumericsSettings, PrecisionUnderANamedProfileIsRefusedNamingTheMatmulKey) {
    Config c;
    apply_set(c, "rollout.profile=vllm-bf16");
    apply_set(c, "train.profile=fsdp-bf16");
    try {
        apply_set(c, "rollout.precision=fp8_e4m3");
        FAIL() << "accepted";
    } catch (const ConfigError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("rollout.precision=fp8_e4m3 has no effect"), std::string::npos) << m;
        EXPECT_NE(m.find("rollout.matmul_dtype"), std::string::npos) << m;
    }
    // The same value under the simple profile is its one precision.
    Config simple;
    apply_set(simple, "rollout.precision=fp8_e4m3");
    EXPECT_EQ(rollout_numerics(simple).matmul, Dtype::fp8_e4m3);
}

TEST(NumericsSettings, Fp8ScalesAreRefusedWhereNothingIsFp8) {
    Config c;
    EXPECT_THROW(apply_set(c, "rollout.fp8_scale=pow2"), ConfigError);
    EXPECT_THROW(apply_set(c, "train.fp8_granularity=block"), ConfigError);
    apply_set(c, "rollout.kv_cache_dtype=fp8_e4m3");
    apply_set(c, "rollout.fp8_scale=pow2");  // the KV cache's scales
    EXPECT_EQ(rollout_numerics(c).fp8_scale, Fp8Scale::pow2);
    // The KV cache has one granularity (per token and KV head).
    EXPECT_THROW(apply_set(c, "rollout.fp8_granularity=tensor"), ConfigError);
    apply_set(c, "rollout.matmul_dtype=fp8_e4m3");
    apply_set(c, "rollout.fp8_granularity=block");
    EXPECT_EQ(rollout_numerics(c).fp8_granularity, Fp8Granularity::block);
}

// A database written before such settings were refused still reads: the
// setting that had no effect goes back to its default.
TEST(NumericsSettings, AStoredConfigurationWithASettingWithoutEffectStillReads) {
    nlohmann::json j = config_to_json(Config{});
    j["rollout"]["profile"] = "vllm-bf16";
    j["rollout"]["precision"] = "fp8_e4m3";
    EXPECT_THROW(config_from_json(j), ConfigError);
    const Config c = stored_config_from_json(j);
    EXPECT_EQ(c.rollout.precision, Config{}.rollout.precision);
    EXPECT_EQ(c.rollout.profile, NumericsProfile::vllm_bf16);
}

// The profiles' table as the engines' sources give it (docs/science.md).
TEST(NumericsSettings, ProfilesResolveAsTheirSourcesSay) {
    const Dtype f = Dtype::f32, b = Dtype::bf16;
    const auto of = [](const char* profile) {
        Config c;
        apply_set(c, std::string("rollout.profile=") + profile);
        return rollout_numerics(c);
    };
    const EngineNumerics vllm = of("vllm-bf16"), sglang = of("sglang-bf16"), fp8 = of("sglang-fp8"),
                         fsdp = of("fsdp-bf16"), megatron = of("megatron-bf16");
    for (const EngineNumerics& n : {vllm, sglang, fp8, fsdp, megatron}) {
        EXPECT_EQ(n.residual, b);
        EXPECT_EQ(n.attn_probs, b);
        EXPECT_EQ(n.stats, f);
        EXPECT_EQ(n.lm_head, b);
        EXPECT_FALSE(n.eager_softmax);
    }
    EXPECT_EQ(vllm.norm, b);
    EXPECT_EQ(vllm.silu, b);
    EXPECT_EQ(vllm.rope_cache, b);
    EXPECT_EQ(vllm.rope, f);
    EXPECT_EQ(fsdp.norm, b);
    EXPECT_EQ(fsdp.silu, b);
    EXPECT_EQ(fsdp.rope_cache, b);
    EXPECT_EQ(fsdp.rope, b);
    for (const EngineNumerics& n : {sglang, fp8, megatron}) {
        EXPECT_EQ(n.norm, f);
        EXPECT_EQ(n.silu, f);
        EXPECT_EQ(n.rope_cache, f);
        EXPECT_EQ(n.rope, f);
    }
    EXPECT_EQ(fp8.matmul, Dtype::fp8_e4m3);
    EXPECT_EQ(fp8.fp8_scale, Fp8Scale::fp32);
    EXPECT_EQ(fp8.fp8_granularity, Fp8Granularity::channel);
    EXPECT_EQ(sglang.matmul, b);
}

}  // namespace
}  // namespace mlk
