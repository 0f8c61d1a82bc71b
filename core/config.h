// Every user-facing setting of a run, in one schema table (config.cpp) that is
// the single source of truth for the GUI form, tooltips, CLI `--set`, JSON
// validation and config diffs. A key's dotted name is also the C++ path of its
// field in `Config` (key "rollout.top_p" is `cfg.rollout.top_p`).
//
// JSON forms accepted by config_from_json (they may be mixed):
//   {"rollout": {"precision": "bf16"}}      nested objects
//   {"rollout.precision": "bf16"}           dotted keys
// Missing keys take their defaults. Unknown keys, wrong JSON types, values out
// of range and unknown enum names throw ConfigError with a message that names
// the key and the allowed values or range (and close matches for unknown keys,
// including the verl / slime / ms-swift spelling of a setting).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/advantage.h"    // AdvantageEstimator
#include "core/correction.h"   // CorrectionSettings, IsLevel, IsMode, RsLevel, VetoKind
#include "core/params.h"       // ModelKind, ModelConfig
#include "core/policy_loss.h"  // PolicyLossType, LossAggregation
#include "kernels/dtype.h"     // Dtype

namespace mlk {

class ConfigError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// ---- enumerations (JSON names in comments) -------------------------------
// Enums owned by the modules that consume them are reused here, so a config
// field passes straight through: IsLevel, IsMode, RsLevel, VetoKind and
// CorrectionSettings (core/correction.h), PolicyLossType, LossAggregation
// (core/policy_loss.h), AdvantageEstimator (core/advantage.h), ModelKind
// (core/params.h), Dtype (kernels/dtype.h).
enum class TaskName { addition, sort, reverse };
enum class ModelSize { tiny, small };
enum class LogprobSource { processed, raw };
enum class RoutingReplay { off, R3 };
enum class OldPolicyMode { recompute, bypass, decoupled };

// JSON/CLI name of an enum value, e.g. enum_name(LossAggregation::token_mean) == "token-mean".
std::string_view enum_name(TaskName v);           // addition | sort | reverse
std::string_view enum_name(ModelSize v);          // tiny | small
std::string_view enum_name(ModelKind v);          // dense | moe
std::string_view enum_name(Dtype v);              // fp32 | bf16 | fp16
std::string_view enum_name(LogprobSource v);      // processed | raw
std::string_view enum_name(RoutingReplay v);      // off | R3
std::string_view enum_name(AdvantageEstimator v); // grpo | rloo | reinforce_baseline
std::string_view enum_name(PolicyLossType v);     // ppo | gspo | reinforce
std::string_view enum_name(LossAggregation v);    // token-mean | seq-mean-token-mean
std::string_view enum_name(OldPolicyMode v);      // recompute | bypass | decoupled
std::string_view enum_name(IsLevel v);            // off | token | sequence | geometric
std::string_view enum_name(IsMode v);             // truncate | clip | mask
std::string_view enum_name(RsLevel v);            // off | token | sequence | geometric | seq_mean_k3
std::string_view enum_name(VetoKind v);           // ratio | old_prob

// ---- the typed configuration ----------------------------------------------
struct TaskSettings {
    TaskName name = TaskName::addition;
    int length = 3;
    bool partial_credit = false;
    int eval_size = 64;
    bool operator==(const TaskSettings&) const = default;
};
struct ModelSettings {
    ModelKind kind = ModelKind::dense;
    ModelSize size = ModelSize::tiny;
    bool operator==(const ModelSettings&) const = default;
};
struct KernelSettings {
    bool batch_invariant = false;
    int threads = 0;  // 0 = all cores
    bool operator==(const KernelSettings&) const = default;
};
struct RolloutSettings {
    Dtype precision = Dtype::bf16;
    double temperature = 1.0;
    int top_k = 0;  // 0 = off
    double top_p = 1.0;
    int max_new_tokens = 10;
    int max_batch = 0;  // 0 = every sequence in flight at once
    LogprobSource logprobs = LogprobSource::processed;
    bool operator==(const RolloutSettings&) const = default;
};
struct TrainSettings {
    Dtype precision = Dtype::f32;
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
    bool operator==(const RlSettings&) const = default;
};
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
    bool operator==(const BaseSettings&) const = default;
};
struct RunSettings {
    int checkpoint_every = 10;
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
    // correction.h's struct; rs_lower defaults to 0.5 here (0 there means 1/rs_upper).
    CorrectionSettings correction{.rs_lower = 0.5};
    OptimSettings optim;
    BaseSettings base;
    RunSettings run;
};
// Equal when every schema key has the same value.
bool operator==(const Config& a, const Config& b);

// ---- the schema -----------------------------------------------------------
enum class ValueType { boolean, integer, number, enumeration };
std::string_view value_type_name(ValueType t);  // "bool", "int", "number", "enum"

struct ConfigKey {
    std::string key;          // dotted, e.g. "correction.is_upper"
    std::string section;      // group title: Task, Model, Rollout engine, Kernels, MoE & R3,
                              // Policy loss, Correction, Optimizer, Base policy, Run
    std::string label;        // short form label, e.g. "IS upper bound"
    ValueType type = ValueType::number;
    nlohmann::json default_value;
    std::vector<std::string> allowed;  // enumeration: allowed names, in display order
    // integer / number range; an open side is +-infinity. Exclusive bounds are
    // written "(" / ")" by range_text().
    double min = 0, max = 0;
    bool min_exclusive = false, max_exclusive = false;
    std::string description;  // one or two sentences, tooltip-ready, formula where there is one
    // Community names ("" when none): verl, slime/Miles, ms-swift.
    std::string verl, slime, swift;

    std::string range_text() const;    // "[0, 1]", "(0.05, 10]", ">= 0", "fp32, bf16, fp16", "true, false"
    std::string tooltip() const;       // description + range/default + community names, plain text
};

// Schema in display order; entries of one section are contiguous.
const std::vector<ConfigKey>& config_schema();
const std::vector<std::string>& config_sections();  // section titles in display order
const ConfigKey* find_config_key(std::string_view key);  // nullptr when unknown

// ---- parsing, printing, validation ----------------------------------------
// Parses nested and/or dotted JSON, then validate(). Throws ConfigError.
Config config_from_json(const nlohmann::json& j);
// Overlays keys from `j` on `base` (same rules as config_from_json), then validate().
Config config_merge_json(const Config& base, const nlohmann::json& j);
// Full nested form with every key (seed included); round-trips bit for bit.
nlohmann::json config_to_json(const Config& c);
// Flat form {"dotted.key": value} with every key.
nlohmann::json config_to_flat_json(const Config& c);

// CLI `--set key=value`: bool true|false, integers, numbers, enum names.
// Checks the key's own type/range and then validate(c). Throws ConfigError.
void apply_set(Config& c, const std::string& key_eq_value);

// Generic access by key (for generic UIs). config_set checks type and range of
// that key only (no cross-field validate, so a form can pass through
// intermediate states); call validate() before using the config.
nlohmann::json config_get(const Config& c, std::string_view key);
void config_set(Config& c, std::string_view key, const nlohmann::json& value);
// Value as display text: "true", "42", "0.001", "bf16".
std::string config_value_text(const Config& c, std::string_view key);

// Cross-field checks; throws ConfigError naming every key involved.
void validate(const Config& c);
// Settings that are legal but have no effect, e.g. an IS level with
// rl.old_policy=recompute. One sentence each; empty when none.
std::vector<std::string> config_warnings(const Config& c);

struct ConfigDiff {
    std::string key;
    std::string a;  // config_value_text of the first config
    std::string b;
};
// Keys whose values differ, in schema order.
std::vector<ConfigDiff> config_diff(const Config& a, const Config& b);

// model_preset("<kind>-<size>") (vocab_size = Vocab::size()).
ModelConfig model_config_of(const Config& c);

}  // namespace mlk
