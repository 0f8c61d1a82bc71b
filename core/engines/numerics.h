// An engine's numerics: where it rounds. Real stacks differ less in fp32
// reduction order (which rounding to bf16 mostly erases) than in which
// intermediates their fused kernels store narrow, so each engine gets a
// profile of rounding points; both engines run the same kernels with them.
//
// The profiles (rollout.profile / train.profile), one table in numerics.cpp:
//   profile          matmul    residual  attn P  stats  LM head
//   simple           P         P*        fp32    fp32   P*       (P = <engine>.precision, * bf16 if P is fp8)
//   fp32-reference   fp32      fp32      fp32    fp32   fp32
//   vllm-bf16        bf16      fp32      bf16    fp32   bf16     fused add + RMSNorm, FlashAttention
//   sglang-fp8       fp8_e4m3  fp32      bf16    fp32   bf16     W8A8 GEMMs; router and LM head bf16
//   fsdp-bf16        bf16      bf16      bf16    fp32   bf16     HF modules: residual added in bf16; FA2
//   megatron-bf16    bf16      fp32      bf16    fp32   bf16     fp32_residual_connection; TE attention
// Each point is overridden by "<engine>.<point>_dtype" unless auto.
#pragma once

#include <span>
#include <vector>

#include "core/model/model.h"

namespace mlk {

struct EngineNumerics {
    Dtype matmul = Dtype::f32;      // weights and linear-layer inputs; fp8 = W8A8
    Dtype residual = Dtype::f32;    // the residual stream between blocks
    Dtype attn_probs = Dtype::f32;  // attention's P tile as P.V reads it
    Dtype stats = Dtype::f32;       // 1/rms, log-sum-exp, the attention normaliser
    Dtype lm_head = Dtype::f32;     // LM head weights and logits (log-probs are fp32)
    Dtype kv_cache = Dtype::f32;    // rollout only: K and V as its cache stores them

    // Storage of activations and of the non-linear weights (norms,
    // embeddings, the MoE router): the matmul precision, bf16 under fp8.
    Dtype activations() const { return is_fp8(matmul) ? Dtype::bf16 : matmul; }
    // Whether cast_params leaves the master as it is (fp32, no fp8): an
    // engine then computes on the master arena itself instead of a copy.
    bool cast_is_identity() const { return activations() == Dtype::f32 && !is_fp8(matmul); }
    // The body's kernels; the router and the LM head use their own.
    Exec exec(Family family) const {
        return {family, activations(), attn_probs, stats, is_fp8(matmul) ? matmul : Dtype::f32};
    }
    Exec router_exec(Family family) const { return {family, activations(), attn_probs, stats, Dtype::f32}; }
    Exec head_exec(Family family) const { return {family, lm_head, attn_probs, stats, Dtype::f32}; }
    // Log-probs and entropies come out in fp32, from logits at lm_head.
    Exec logprob_exec(Family family) const { return {family, Dtype::f32, attn_probs, stats, Dtype::f32}; }

    // The simple profile of one storage precision (the `precision` key's).
    static EngineNumerics simple(Dtype precision);
    bool operator==(const EngineNumerics&) const = default;
};

EngineNumerics rollout_numerics(const Config& c);
EngineNumerics train_numerics(const Config& c);
// What "auto" stands for at a rounding-point key ("rollout.residual_dtype",
// "train.lm_head_dtype", "rollout.kv_cache_dtype", ...) under c's profile,
// e.g. "bf16"; "" for any other key.
std::string auto_dtype_of(const Config& c, const std::string& key);
// One line, e.g. "matmul bf16, residual fp32, P bf16, stats fp32, LM head bf16, KV bf16".
std::string numerics_text(const EngineNumerics& n, bool with_kv_cache);

// The engine's copy of the fp32 master parameters: every tensor rounded to
// the activations' precision and, under fp8, every linear weight but the
// router and the LM head quantised per output channel (quantize_cols).
void cast_params(std::span<float> out, const std::vector<float>& master, const ParamLayout& layout,
                 const EngineNumerics& n);
// The same for the parameters in `range` alone, whole tensors:
// out[i - range.begin] is master[i] cast (a training engine casts a layer at
// a time).
void cast_params(float* out, const float* master, ParamRange range, const ParamLayout& layout, const EngineNumerics& n);
// The LM head as [D, V] at n.lm_head, from the master (the embedding's
// transpose when tied): an fp32 head is computed from fp32 weights even
// where the body runs in bf16, as MiniMax-M1's fix does.
void lm_head_weights(std::vector<float>& out, const std::vector<float>& master, const ModelConfig& cfg,
                     const ParamLayout& layout, const EngineNumerics& n);
// A master arena rounded to bf16 in place, for an engine that computes on
// bf16 weights without a copy of them (the rollout's default numerics): it
// keeps what the rounding took off each weight, its low 16 bits and whether
// it rounded up (17 bits a weight against a 32-bit copy: for moe-deep's rollout
// 59 MB of copy beside the 59 MB master), and puts them back bit for bit.
class Bf16InPlace {
public:
    Bf16InPlace() = default;
    Bf16InPlace(const Bf16InPlace&) = delete;
    Bf16InPlace& operator=(const Bf16InPlace&) = delete;
    ~Bf16InPlace() { restore(); }
    // Rounds every weight of `master` to bf16 (copy_rounded's bits) and keeps
    // master until restore. False, master untouched, where a weight is NaN,
    // whose bits the rounding does not keep.
    bool round(std::span<float> master);
    // master as it was before round; nothing when nothing is rounded.
    void restore();
    bool active() const { return master_.data() != nullptr; }

private:
    std::span<float> master_;
    PagedFloats low_;      // uint16 low halves, two per float
    PagedFloats rounded_;  // one bit a weight: rounded up, 32 per float
};

// A master arena overwritten with its cast (cast_params) in place, for an
// engine whose numerics need more than bf16 rounding (fp8, fp16): it keeps
// each weight's bit pattern less its cast's in 3 bytes, and whole the few
// weights the cast moves further (to zero, from a subnormal), and puts every
// bit back. A cast moves a weight by its low mantissa bits only (fp8 e5m2:
// under 2^21 of its 2^23 units), so 3 bytes a weight hold what a 4-byte
// copy beside the master would (fp8-rollout-moe-deep's rollout: 44 MB, not 59).
class CastInPlace {
public:
    CastInPlace() = default;
    CastInPlace(const CastInPlace&) = delete;
    CastInPlace& operator=(const CastInPlace&) = delete;
    ~CastInPlace() { restore(); }
    // cast_params(master) into master, tensors a layer at a time (one
    // layer's scratch), keeping master until restore.
    void cast(std::span<float> master, const ParamLayout& layout, const EngineNumerics& n);
    // master as it was before cast; nothing when nothing is cast.
    void restore();
    bool active() const { return master_.data() != nullptr; }
    // Weights whose difference took more than 3 bytes, kept whole.
    size_t whole_weights() const { return whole_.size(); }

private:
    std::span<float> master_;
    PagedFloats low_;                                  // uint16 low 16 bits of each difference, two per float
    PagedFloats high_;                                 // int8 high byte of each difference, four per float
    std::vector<std::pair<int64_t, uint32_t>> whole_;  // index, original bits
};

// K or V rows [M, Hkv*hd] as the KV cache stores them (n.kv_cache): rounded,
// or fp8 with a power-of-two scale per row and KV head.
void store_kv(float* kv, int M, int Hkv, int hd, const EngineNumerics& n);

}  // namespace mlk
