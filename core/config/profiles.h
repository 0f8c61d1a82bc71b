// An engine's numerics profile: where it rounds. Real stacks differ less in
// fp32 reduction order (which rounding to bf16 mostly erases) than in which
// intermediates their kernels store narrow, so each engine has a profile of
// rounding points, each taken from the named engine's own code (the table and
// its sources: profiles.cpp and docs/science.md); both engines run the same
// kernels with them. Each point is overridden by its key
// ("<engine>.<point>_dtype", "<engine>.attn_softmax", "<engine>.fp8_*")
// unless auto; a key that changes nothing under the others is refused
// (numerics_keys_without_effect).
#pragma once

#include <string>
#include <vector>

#include "core/config/settings.h"
#include "kernels/kernels.h"

namespace mlk {

struct EngineNumerics {
    Dtype matmul = Dtype::f32;      // weights and linear-layer inputs; fp8 = W8A8
    Dtype residual = Dtype::f32;    // the residual stream between blocks
    Dtype attn_probs = Dtype::f32;  // attention's P tile as P.V reads it
    Dtype stats = Dtype::f32;       // 1/rms, log-sum-exp, the attention normaliser
    Dtype lm_head = Dtype::f32;     // LM head weights and logits (log-probs are fp32)
    Dtype kv_cache = Dtype::f32;    // rollout only: K and V as its cache stores them
    Dtype norm = Dtype::f32;        // RMSNorm's x * (1/rms) before the weight multiply (Exec::norm)
    Dtype silu = Dtype::f32;        // SwiGLU's silu(gate) before the product (Exec::silu)
    Dtype rope = Dtype::f32;        // RoPE's rotation arithmetic (Exec::rope)
    Dtype rope_cache = Dtype::f32;  // RoPE's cos/sin cache (Exec::rope_cache)
    bool eager_softmax = false;     // attention normalises P before P.V (Exec::eager_softmax)
    // fp8 quantisation of the matmul inputs and weights and of an fp8 KV
    // cache; left at these defaults where nothing is fp8, so two numerics
    // compare equal exactly when they compute the same bits.
    Fp8Scale fp8_scale = Fp8Scale::fp32;
    Fp8Granularity fp8_granularity = Fp8Granularity::channel;

    // Storage of activations and of the non-linear weights (norms,
    // embeddings, the MoE router): the matmul precision, bf16 under fp8.
    Dtype activations() const { return is_fp8(matmul) ? Dtype::bf16 : matmul; }
    // Whether cast_params leaves the master as it is (fp32, no fp8): an
    // engine then computes on the master arena itself instead of a copy.
    bool cast_is_identity() const { return activations() == Dtype::f32 && !is_fp8(matmul); }
    // The body's kernels; the router and the LM head use their own.
    Exec exec(Family family) const {
        Exec ex = with_points(family, activations());
        ex.quant = is_fp8(matmul) ? matmul : Dtype::f32;
        return ex;
    }
    Exec router_exec(Family family) const { return with_points(family, activations()); }
    Exec head_exec(Family family) const { return with_points(family, lm_head); }
    // Log-probs and entropies come out in fp32, from logits at lm_head.
    Exec logprob_exec(Family family) const { return with_points(family, Dtype::f32); }

    // The simple profile of one storage precision (the `precision` key's).
    static EngineNumerics simple(Dtype precision);
    bool operator==(const EngineNumerics&) const = default;

private:
    Exec with_points(Family family, Dtype dtype) const {
        Exec ex;
        ex.family = family, ex.dtype = dtype, ex.probs = attn_probs, ex.stats = stats;
        ex.norm = norm, ex.silu = silu, ex.rope = rope, ex.rope_cache = rope_cache, ex.eager_softmax = eager_softmax;
        ex.quant_scale = fp8_scale, ex.quant_granularity = fp8_granularity;
        return ex;
    }
};

EngineNumerics rollout_numerics(const Config& c);
EngineNumerics train_numerics(const Config& c);
// What "auto" stands for at a rounding-point key ("rollout.residual_dtype",
// "train.lm_head_dtype", "rollout.kv_cache_dtype", ...) under c's profile,
// e.g. "bf16"; "" for any other key.
std::string auto_dtype_of(const Config& c, const std::string& key);
// One line, e.g. "matmul bf16, residual fp32, P bf16, stats fp32, LM head bf16, KV bf16".
std::string numerics_text(const EngineNumerics& n, bool with_kv_cache);

// The numerics keys ("<engine>.precision", "<engine>.<point>",
// "rollout.kv_cache_dtype") that change nothing under c's other settings:
// either every allowed value gives the engine the same numerics (the value it
// has cannot matter), or its value computes what the key's default does
// without being the point's own value (an fp32 KV cache for bf16 keys and
// values). A value equal to what auto resolves to is a pin and is kept.
// `reason` says why, `instead` names the key to use ("" when none).
struct NumericsKeyWithoutEffect {
    std::string key, reason, instead;
};
std::vector<NumericsKeyWithoutEffect> numerics_keys_without_effect(const Config& c);
// The keys the check above covers, for both engines.
const std::vector<std::string>& numerics_keys();

}  // namespace mlk
