// The typed configuration of a run: every enumeration with its one name
// table, every settings section and `Config`. This is the bottom of core: the
// modules that consume a section (model, engines, rl) include this header, so
// a config field passes straight through to them.
#pragma once

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/dtype.h"

namespace mlk {

// ---- enumerations ----------------------------------------------------------
enum class TaskName { addition, sort, reverse, long_addition, calculator };
enum class ModelKind { dense, moe };
enum class ModelSize { tiny, small, deep };
enum class TieEmbeddings { preset, tied, untied };
enum class LogprobSource { processed, raw };
enum class RoutingReplay { off, R2, R3 };
enum class OldPolicyMode { recompute, bypass, decoupled };
enum class AdvantageEstimator { grpo, rloo, reinforce_baseline };
enum class PolicyLossType { ppo, gspo, reinforce };
enum class LossAggregation { token_mean, seq_mean_token_mean };
enum class IsLevel { off, token, sequence, geometric };
enum class IsMode { truncate, clip, mask };
enum class RsLevel { off, token, sequence, geometric, seq_mean_k3 };
enum class VetoKind { ratio, old_prob };
// Where an engine rounds: a named stack (core/engines/numerics.h says what
// each one stores narrow and why), or `simple`: one storage precision.
enum class NumericsProfile { simple, fp32_reference, vllm_bf16, sglang_fp8, fsdp_bf16, megatron_bf16, sglang_bf16 };
// One rounding point's precision; auto = what the engine's profile says.
enum class PointDtype { auto_, f32, bf16, f16, fp8_e4m3, fp8_e5m2 };
// Attention's softmax: online (FlashAttention: P.V divided by the sum after)
// or eager (the softmax normalised in fp32, rounded, then P.V); auto = the profile's.
enum class SoftmaxPoint { auto_, online, eager };
// How fp8 scales are computed and shared (kernels.h Fp8Scale, Fp8Granularity); auto = the profile's.
enum class Fp8ScalePoint { auto_, fp32, pow2 };
enum class Fp8GranularityPoint { auto_, tensor, channel, block };
// Where an engine computes (core/engines/device.h).
enum class Device { cpu, cuda };

// The JSON / CLI names of an enumeration, indexed by value. One table per
// enumeration, used by the schema, the CLI, messages and the UI.
template <class E>
struct EnumNames;
#define MLK_ENUM_NAMES(E, ...)                                     \
    template <>                                                    \
    struct EnumNames<E> {                                          \
        static constexpr std::string_view names[] = {__VA_ARGS__}; \
    };
MLK_ENUM_NAMES(TaskName, "addition", "sort", "reverse", "long_addition", "calculator")
MLK_ENUM_NAMES(ModelKind, "dense", "moe")
MLK_ENUM_NAMES(ModelSize, "tiny", "small", "deep")
MLK_ENUM_NAMES(TieEmbeddings, "auto", "true", "false")
MLK_ENUM_NAMES(LogprobSource, "processed", "raw")
MLK_ENUM_NAMES(RoutingReplay, "off", "R2", "R3")
MLK_ENUM_NAMES(OldPolicyMode, "recompute", "bypass", "decoupled")
MLK_ENUM_NAMES(AdvantageEstimator, "grpo", "rloo", "reinforce_baseline")
MLK_ENUM_NAMES(PolicyLossType, "ppo", "gspo", "reinforce")
MLK_ENUM_NAMES(LossAggregation, "token-mean", "seq-mean-token-mean")
MLK_ENUM_NAMES(IsLevel, "off", "token", "sequence", "geometric")
MLK_ENUM_NAMES(IsMode, "truncate", "clip", "mask")
MLK_ENUM_NAMES(RsLevel, "off", "token", "sequence", "geometric", "seq_mean_k3")
MLK_ENUM_NAMES(VetoKind, "ratio", "old_prob")
MLK_ENUM_NAMES(NumericsProfile, "simple", "fp32-reference", "vllm-bf16", "sglang-fp8", "fsdp-bf16", "megatron-bf16",
               "sglang-bf16")
MLK_ENUM_NAMES(PointDtype, "auto", "fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")
MLK_ENUM_NAMES(SoftmaxPoint, "auto", "online", "eager")
MLK_ENUM_NAMES(Fp8ScalePoint, "auto", "fp32", "pow2")
MLK_ENUM_NAMES(Fp8GranularityPoint, "auto", "tensor", "channel", "block")
MLK_ENUM_NAMES(Device, "cpu", "cuda")
#undef MLK_ENUM_NAMES
template <>
struct EnumNames<Dtype> {
    static constexpr const auto& names = kDtypeNames;
};

// enum_name(LossAggregation::token_mean) == "token-mean"; "?" for a value
// outside the table.
template <class E>
constexpr std::string_view enum_name(E v) {
    const auto i = static_cast<size_t>(v);
    return i < std::size(EnumNames<E>::names) ? EnumNames<E>::names[i] : std::string_view("?");
}
// The value named `name` exactly (case matters), or nullopt.
template <class E>
constexpr std::optional<E> enum_from_name(std::string_view name) {
    for (size_t i = 0; i < std::size(EnumNames<E>::names); ++i)
        if (EnumNames<E>::names[i] == name) return static_cast<E>(i);
    return std::nullopt;
}
template <class E>
std::vector<std::string> enum_names() {
    return {std::begin(EnumNames<E>::names), std::end(EnumNames<E>::names)};
}

// ---- settings sections -----------------------------------------------------
struct TaskSettings {
    TaskName name = TaskName::addition;
    int length = 3;
    bool partial_credit = false;
    int eval_size = 64;
    bool operator==(const TaskSettings&) const = default;
};
// The model builder's input (core/config/model_builder.h): kind and size pick
// a preset architecture; each dimension below, when not 0 / "" / auto,
// replaces the preset's value.
struct ModelSettings {
    ModelKind kind = ModelKind::dense;
    ModelSize size = ModelSize::tiny;
    int hidden_size = 0;
    int num_layers = 0;
    int num_heads = 0;
    int num_kv_heads = 0;
    int head_dim = 0;
    int intermediate_size = 0;
    int num_experts = 0;
    int num_experts_per_tok = 0;
    int moe_intermediate_size = 0;
    int decoder_sparse_step = 0;
    std::string mlp_only_layers;  // "0,3": layers with a dense MLP in an MoE model; "" = none
    TieEmbeddings tie_word_embeddings = TieEmbeddings::preset;
    int max_position_embeddings = 0;
    bool operator==(const ModelSettings&) const = default;
};
struct KernelSettings {
    bool batch_invariant = false;
    int threads = 0;  // 0 = all cores
    bool operator==(const KernelSettings&) const = default;
};
// The rounding points both engines have (numerics.h): each overrides the
// profile's choice unless auto.
struct RoundingPoints {
    NumericsProfile profile = NumericsProfile::simple;
    PointDtype matmul_dtype = PointDtype::auto_;
    PointDtype residual_dtype = PointDtype::auto_;
    PointDtype attn_probs_dtype = PointDtype::auto_;
    PointDtype stats_dtype = PointDtype::auto_;
    PointDtype lm_head_dtype = PointDtype::auto_;
    PointDtype norm_dtype = PointDtype::auto_;
    PointDtype silu_dtype = PointDtype::auto_;
    PointDtype rope_dtype = PointDtype::auto_;
    PointDtype rope_cache_dtype = PointDtype::auto_;
    SoftmaxPoint attn_softmax = SoftmaxPoint::auto_;
    Fp8ScalePoint fp8_scale = Fp8ScalePoint::auto_;
    Fp8GranularityPoint fp8_granularity = Fp8GranularityPoint::auto_;
    bool operator==(const RoundingPoints&) const = default;
};
struct RolloutSettings : RoundingPoints {
    Device device = Device::cpu;
    Dtype precision = Dtype::bf16;                  // the simple profile's one precision
    PointDtype kv_cache_dtype = PointDtype::auto_;  // auto = the activations' storage precision
    double temperature = 1.0;
    int top_k = 0;  // 0 = off
    double top_p = 1.0;
    int max_new_tokens = 10;
    int max_batch = 0;  // 0 = every sequence in flight at once
    LogprobSource logprobs = LogprobSource::processed;
    bool operator==(const RolloutSettings&) const = default;
};
struct TrainSettings : RoundingPoints {
    Device device = Device::cpu;
    Dtype precision = Dtype::f32;  // the simple profile's one precision
    bool operator==(const TrainSettings&) const = default;
};
struct MoeSettings {
    RoutingReplay routing_replay = RoutingReplay::off;
    bool operator==(const MoeSettings&) const = default;
};
struct RlSettings {
    int steps = 150;
    int prompts_per_step = 32;
    int samples_per_prompt = 8;
    AdvantageEstimator estimator = AdvantageEstimator::grpo;
    bool grpo_std_norm = true;
    PolicyLossType loss = PolicyLossType::ppo;
    double eps_low = 0.2;
    double eps_high = 0.2;
    double gspo_eps_low = 3e-4;
    double gspo_eps_high = 4e-4;
    int mini_steps = 1;
    LossAggregation loss_agg = LossAggregation::token_mean;
    OldPolicyMode old_policy = OldPolicyMode::recompute;
    // The mini-steps a step trains in: mini_steps, at most one per prompt group.
    int mini_step_count() const { return mini_steps < prompts_per_step ? mini_steps : prompts_per_step; }
    bool operator==(const RlSettings&) const = default;
};

// The correction.* keys (names follow slime's mis.yaml where one exists:
// tis_level -> is_level, tis_mode -> is_mode, ...). compute_correction
// (core/rl/correction.h) takes this section as it is.
struct CorrectionSettings {
    IsLevel is_level = IsLevel::off;
    IsMode is_mode = IsMode::truncate;
    double is_lower = 0.0;  // 0 = default: 1/is_upper for clip and mask, 0 for truncate
    double is_upper = 2.0;
    RsLevel rs_level = RsLevel::off;
    double rs_lower = 0.0;        // 0 = default 1/rs_upper (unused by seq_mean_k3)
    double rs_upper = 2.0;        // for seq_mean_k3: the K3 threshold (e.g. 0.01)
    double veto_threshold = 0.0;  // 0 = off
    VetoKind veto_kind = VetoKind::ratio;
    bool batch_normalize = false;
    bool operator==(const CorrectionSettings&) const = default;
};

// Lower bounds after the "0 = default" rules above.
double effective_is_lower(const CorrectionSettings& s);
double effective_rs_lower(const CorrectionSettings& s);
// Every broken bound rule of a correction section, one message each naming
// the keys involved (empty when the section is consistent): finite numbers,
// is_upper > 0, 0 <= is_lower <= is_upper, the default lower bound 1/U not
// above U, the same for rs_*, 0 <= veto_threshold (<= 1 for old_prob).
std::vector<std::string> correction_rule_violations(const CorrectionSettings& s);

struct OptimSettings {
    double lr = 5e-4;
    int warmup_steps = 0;
    double grad_clip = 1.0;  // 0 = off
    double weight_decay = 0.0;
    double beta1 = 0.9;
    double beta2 = 0.99;
    double eps = 1e-8;
    bool operator==(const OptimSettings&) const = default;
};
struct BaseSettings {
    int sft_steps = 3000;
    double lr = 3e-3;
    int batch_size = 32;
    double target_reward = 0.25;  // SFT stops early once the held-out reward reaches it
    // Depth growth (base_growth_layers): train a model of grow_from_layers
    // layers first, then the full model grown from it.
    int grow_from_layers = 0;  // 0 = auto: 2 for models of 8 layers or more, else the model's own depth
    int grow_steps = 25;       // steps of the grown model before the target is checked again
    double grow_lr = 1e-3;     // AdamW learning rate of the grown model
    bool operator==(const BaseSettings&) const = default;
};
struct RunSettings {
    int checkpoint_every = 10;
    int keep_last = 3;   // checkpoints kept: the newest keep_last ...
    int keep_every = 0;  // ... plus every step that is a multiple of keep_every (0: none)
    bool operator==(const RunSettings&) const = default;
};

struct Config {
    int64_t seed = 1;
    TaskSettings task;
    ModelSettings model;
    KernelSettings kernels;
    RolloutSettings rollout;
    TrainSettings train;
    MoeSettings moe;
    RlSettings rl;
    CorrectionSettings correction{.rs_lower = 0.5};  // a config's rejection band defaults to [0.5, 2]
    OptimSettings optim;
    BaseSettings base;
    RunSettings run;
};

}  // namespace mlk
