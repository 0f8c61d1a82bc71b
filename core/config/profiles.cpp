#include "core/config/profiles.h"

#include <functional>

#include "core/config/config.h"

namespace mlk {

namespace {

// The profiles' table. Each point is the named engine's default path for a
// bf16 Qwen3-style model; the source file and function each comes from are
// in docs/science.md ("Where each engine rounds"). A field left at its
// EngineNumerics default is fp32 (one rounding of a fused expression) or
// online softmax.
EngineNumerics profile_points(NumericsProfile p, Dtype precision) {
    const Dtype b = Dtype::bf16;
    EngineNumerics n;
    // What every bf16 stack here shares: bf16 GEMM inputs and outputs with
    // fp32 accumulation; the residual added and stored in bf16 (vLLM's and
    // flashinfer's fused add + RMSNorm, transformers' `residual +
    // hidden_states`, Megatron's default fp32_residual_connection=False);
    // fp32 statistics; FlashAttention's online softmax with a bf16 P tile
    // (flash_fwd_kernel.h: convert_type<Element>(acc_s)) and its normaliser
    // applied after P.V; a bf16 LM head and bf16 logits, cast to fp32 for the
    // log-softmax.
    const auto bf16_stack = [&] { n.matmul = b, n.residual = b, n.attn_probs = b, n.lm_head = b; };
    switch (p) {
        case NumericsProfile::simple: return EngineNumerics::simple(precision);
        case NumericsProfile::fp32_reference: return n;
        case NumericsProfile::vllm_bf16:
            // vLLM's CUDA kernels: csrc/layernorm_kernels.cu rms_norm_kernel and
            // fused_add_rms_norm_kernel round x * r to bf16, then multiply the
            // weight in bf16; csrc/activation_kernels.cu silu_kernel returns
            // (T)silu(x), then * y in T; rotary_embedding/base.py casts the
            // cos/sin cache to the model dtype, and csrc/pos_encoding_kernels.cu
            // rotates in fp32 and rounds once.
            bf16_stack();
            n.norm = b, n.silu = b, n.rope_cache = b;
            return n;
        case NumericsProfile::sglang_bf16:
        case NumericsProfile::sglang_fp8:
            // sgl-kernel's rmsnorm, fused_add_rmsnorm and silu_and_mul are
            // flashinfer's (include/flashinfer/norm.cuh, activation.cuh): x * r * w
            // and silu(x) * y in fp32, rounded once; rotary_embedding.py keeps the
            // cos/sin cache in fp32 on CUDA and flashinfer's pos_enc.cuh rotates
            // in fp32. The FP8 profile quantises its GEMMs (W8A8 e4m3,
            // fp8_utils.py apply_fp8_linear: per-token activations, fp32 scales).
            bf16_stack();
            if (p == NumericsProfile::sglang_fp8) n.matmul = Dtype::fp8_e4m3;
            return n;
        case NumericsProfile::fsdp_bf16:
            // transformers' modeling_qwen3.py: Qwen3RMSNorm returns
            // `self.weight * hidden_states.to(input_dtype)`; Qwen3MLP computes
            // act_fn(gate_proj(x)) * up_proj(x) as two bf16 ops;
            // Qwen3RotaryEmbedding returns cos/sin `.to(x.dtype)` and
            // apply_rotary_pos_emb rotates in bf16 ops.
            bf16_stack();
            n.norm = b, n.silu = b, n.rope_cache = b, n.rope = b;
            return n;
        case NumericsProfile::megatron_bf16:
            // Megatron-LM with Transformer Engine: TE's RMSNorm
            // (rmsnorm_fwd_kernels.cuh) computes x * r * g in fp32 and rounds
            // once; the fused SwiGLU (fused_bias_swiglu.py, compiled) and TE's
            // fused RoPE (fused_rope.cu: fp32 sincosf and rotation) round once.
            bf16_stack();
            return n;
    }
    return EngineNumerics::simple(precision);
}

// The fp8 settings are auto, then the kernel's enumeration in its order:
// one cast each way, and the settings' name table names both.
static_assert(int(Fp8ScalePoint::fp32) == int(Fp8Scale::fp32) + 1 &&
              int(Fp8ScalePoint::pow2) == int(Fp8Scale::pow2) + 1);
static_assert(int(Fp8GranularityPoint::tensor) == int(Fp8Granularity::tensor) + 1 &&
              int(Fp8GranularityPoint::channel) == int(Fp8Granularity::channel) + 1 &&
              int(Fp8GranularityPoint::block) == int(Fp8Granularity::block) + 1);
template <class Kernel, class Point>
Kernel kernel_of(Point p) {
    return static_cast<Kernel>(static_cast<int>(p) - 1);
}
std::string name_of(Fp8Scale s) { return std::string(enum_name(static_cast<Fp8ScalePoint>(int(s) + 1))); }
std::string name_of(Fp8Granularity g) { return std::string(enum_name(static_cast<Fp8GranularityPoint>(int(g) + 1))); }
std::string softmax_name(bool eager) {
    return std::string(enum_name(eager ? SoftmaxPoint::eager : SoftmaxPoint::online));
}

Dtype point(PointDtype d, Dtype from_profile) {
    switch (d) {
        case PointDtype::auto_: return from_profile;
        case PointDtype::f32: return Dtype::f32;
        case PointDtype::bf16: return Dtype::bf16;
        case PointDtype::f16: return Dtype::f16;
        case PointDtype::fp8_e4m3: return Dtype::fp8_e4m3;
        case PointDtype::fp8_e5m2: return Dtype::fp8_e5m2;
    }
    return from_profile;
}

// kv: the rollout's kv_cache_dtype, null for the training engine (no cache).
EngineNumerics resolve(const RoundingPoints& r, Dtype precision, const PointDtype* kv) {
    EngineNumerics n = profile_points(r.profile, precision);
    n.matmul = point(r.matmul_dtype, n.matmul);
    n.residual = point(r.residual_dtype, n.residual);
    n.attn_probs = point(r.attn_probs_dtype, n.attn_probs);
    n.stats = point(r.stats_dtype, n.stats);
    n.lm_head = point(r.lm_head_dtype, n.lm_head);
    n.norm = point(r.norm_dtype, n.norm);
    n.silu = point(r.silu_dtype, n.silu);
    n.rope = point(r.rope_dtype, n.rope);
    n.rope_cache = point(r.rope_cache_dtype, n.rope_cache);
    if (r.attn_softmax != SoftmaxPoint::auto_) n.eager_softmax = r.attn_softmax == SoftmaxPoint::eager;
    if (r.fp8_scale != Fp8ScalePoint::auto_) n.fp8_scale = kernel_of<Fp8Scale>(r.fp8_scale);
    if (r.fp8_granularity != Fp8GranularityPoint::auto_)
        n.fp8_granularity = kernel_of<Fp8Granularity>(r.fp8_granularity);
    n.kv_cache = kv ? point(*kv, n.activations()) : n.activations();
    // A cache that holds every key and value exactly stores them unchanged:
    // the activations' own precision, fp32, or fp16 for bf16 values (fp16
    // keeps all 8 bits of a bf16 mantissa from 6.1e-5 to 65504).
    const Dtype act = n.activations();
    if (n.kv_cache == Dtype::f32 || (n.kv_cache == Dtype::f16 && act == Dtype::bf16)) n.kv_cache = act;
    // Scales where nothing is fp8 compute nothing: back to the defaults, so
    // equal numerics mean equal bits (numerics_keys_without_effect relies on it).
    const EngineNumerics plain;
    if (!is_fp8(n.matmul) && !is_fp8(n.kv_cache)) n.fp8_scale = plain.fp8_scale;
    if (!is_fp8(n.matmul)) n.fp8_granularity = plain.fp8_granularity;
    return n;
}

std::string engine_of(const std::string& key) { return key.substr(0, key.find('.')); }

EngineNumerics numerics_of(const Config& c, const std::string& engine) {
    return engine == "rollout" ? rollout_numerics(c) : train_numerics(c);
}

// The point keys of one engine with what auto stands for at each.
struct PointKey {
    const char* name;
    std::function<std::string(const EngineNumerics&)> value;
};
const std::vector<PointKey>& point_keys() {
    const auto d = [](Dtype EngineNumerics::*m) {
        return [m](const EngineNumerics& n) { return std::string(dtype_name(n.*m)); };
    };
    static const std::vector<PointKey> keys = {
        {"matmul_dtype", d(&EngineNumerics::matmul)},
        {"residual_dtype", d(&EngineNumerics::residual)},
        {"attn_probs_dtype", d(&EngineNumerics::attn_probs)},
        {"stats_dtype", d(&EngineNumerics::stats)},
        {"lm_head_dtype", d(&EngineNumerics::lm_head)},
        {"norm_dtype", d(&EngineNumerics::norm)},
        {"silu_dtype", d(&EngineNumerics::silu)},
        {"rope_dtype", d(&EngineNumerics::rope)},
        {"rope_cache_dtype", d(&EngineNumerics::rope_cache)},
        {"attn_softmax", [](const EngineNumerics& n) { return softmax_name(n.eager_softmax); }},
        {"fp8_scale", [](const EngineNumerics& n) { return name_of(n.fp8_scale); }},
        {"fp8_granularity", [](const EngineNumerics& n) { return name_of(n.fp8_granularity); }},
        {"kv_cache_dtype", d(&EngineNumerics::kv_cache)},
    };
    return keys;
}

}  // namespace

EngineNumerics EngineNumerics::simple(Dtype precision) {
    const Dtype storage = is_fp8(precision) ? Dtype::bf16 : precision;
    EngineNumerics n;
    n.matmul = precision, n.residual = storage, n.lm_head = storage, n.kv_cache = storage;
    return n;
}

EngineNumerics rollout_numerics(const Config& c) {
    return resolve(c.rollout, c.rollout.precision, &c.rollout.kv_cache_dtype);
}

EngineNumerics train_numerics(const Config& c) { return resolve(c.train, c.train.precision, nullptr); }

std::string auto_dtype_of(const Config& c, const std::string& key) {
    const std::string engine = engine_of(key);
    if (engine != "rollout" && engine != "train") return "";
    const std::string name = key.substr(engine.size() + 1);
    for (const PointKey& p : point_keys()) {
        if (name != p.name || (engine == "train" && name == "kv_cache_dtype")) continue;
        Config at_auto = c;
        config_set(at_auto, key, std::string("auto"));
        return p.value(numerics_of(at_auto, engine));
    }
    return "";
}

std::string numerics_text(const EngineNumerics& n, bool with_kv_cache) {
    auto d = [](Dtype x) { return std::string(dtype_name(x)); };
    std::string s = "matmul " + d(n.matmul) + ", residual " + d(n.residual) + ", norm " + d(n.norm) + ", SiLU " +
                    d(n.silu) + ", RoPE cache " + d(n.rope_cache) + ", RoPE " + d(n.rope) + ", softmax " +
                    softmax_name(n.eager_softmax) + ", P " + d(n.attn_probs) + ", stats " + d(n.stats) + ", LM head " +
                    d(n.lm_head);
    if (with_kv_cache) s += ", KV " + d(n.kv_cache);
    if (is_fp8(n.matmul) || (with_kv_cache && is_fp8(n.kv_cache))) {
        s += ", fp8 scales " + name_of(n.fp8_scale);
        if (is_fp8(n.matmul))
            s += std::string(" per ") + (n.fp8_granularity == Fp8Granularity::tensor  ? "tensor"
                                         : n.fp8_granularity == Fp8Granularity::block ? "128-block"
                                                                                      : "token x channel");
    }
    return s;
}

const std::vector<std::string>& numerics_keys() {
    static const std::vector<std::string> keys = [] {
        std::vector<std::string> k;
        for (const char* engine : {"rollout", "train"}) {
            k.push_back(std::string(engine) + ".profile");
            k.push_back(std::string(engine) + ".precision");
            for (const PointKey& p : point_keys())
                if (std::string(engine) == "rollout" || std::string(p.name) != "kv_cache_dtype")
                    k.push_back(std::string(engine) + "." + p.name);
        }
        return k;
    }();
    return keys;
}

std::vector<NumericsKeyWithoutEffect> numerics_keys_without_effect(const Config& c) {
    std::vector<NumericsKeyWithoutEffect> out;
    const Config defaults;
    for (const std::string& key : numerics_keys()) {
        const std::string engine = engine_of(key);
        const EngineNumerics now = numerics_of(c, engine);
        const ConfigKey* k = find_config_key(key);
        bool matters = false;
        for (const std::string& v : k->allowed) {
            Config other = c;
            config_set(other, key, v);
            if (numerics_of(other, engine) != now) {
                matters = true;
                break;
            }
        }
        const RoundingPoints& r = engine == "rollout" ? static_cast<const RoundingPoints&>(c.rollout) : c.train;
        const std::string matmul = engine + ".matmul_dtype", kv = "rollout.kv_cache_dtype";
        const std::string name = key.substr(engine.size() + 1);
        if (matters) {
            // The key matters, but a point's value may compute what auto does
            // without being the point's own value (a pin of auto): a KV cache
            // wider than the keys and values it stores. (A profile or a
            // precision that equals another is a name for the same thing.)
            if (name == "profile" || name == "precision") continue;
            const std::string value = config_value_text(c, key);
            Config at_default = c;
            config_set(at_default, key, config_get(defaults, key));
            if (value == config_value_text(defaults, key) || numerics_of(at_default, engine) != now ||
                value == auto_dtype_of(c, key))
                continue;
            if (name == "kv_cache_dtype")
                out.push_back({key,
                               "the keys and values are " + std::string(dtype_name(now.activations())) +
                                   " already (the activations' precision), which " + value + " holds exactly",
                               ""});
            else out.push_back({key, "it computes what " + key + "=auto (" + auto_dtype_of(c, key) + ") does", ""});
            continue;
        }
        if (name == "precision") {
            if (r.profile != NumericsProfile::simple)
                out.push_back({key,
                               engine + ".profile=" + std::string(enum_name(r.profile)) +
                                   " is not simple: the profile's rounding points decide",
                               matmul});
            else out.push_back({key, "every rounding point it would set has its own key set", ""});
        } else if (name == "fp8_scale") {
            std::string what = matmul + " is " + std::string(dtype_name(now.matmul));
            if (engine == "rollout") what += " and " + kv + " is " + std::string(dtype_name(now.kv_cache));
            out.push_back({key, "nothing this engine computes is fp8 (" + what + ")",
                           engine == "rollout" ? matmul + " or " + kv : matmul});
        } else if (name == "fp8_granularity") {
            out.push_back({key,
                           "only an fp8 matmul has it (" + matmul + " is " + std::string(dtype_name(now.matmul)) +
                               "; an fp8 KV cache is scaled per token and KV head)",
                           matmul});
        } else if (name == "profile") {
            out.push_back({key, "every rounding point has its own key set", ""});
        } else {
            out.push_back({key, "no value of it changes this engine's numerics under the other settings", ""});
        }
    }
    return out;
}

}  // namespace mlk
