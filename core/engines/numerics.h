// An engine's weights as its numerics store them (the profile's rounding
// points, core/config/profiles.h): the cast of the fp32 master, rounded or
// fp8-quantised, in a copy or in place, the LM head, the KV cache's rows.
#pragma once

#include <span>
#include <vector>

#include "core/config/profiles.h"
#include "core/model/model.h"

namespace mlk {

// The engine's copy of the fp32 master parameters: every tensor rounded to
// the activations' precision and, under fp8, every linear weight but the
// router and the LM head quantised with n.fp8_scale at n.fp8_granularity
// (quantize_weight).
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
// or fp8 with a scale of kind n.fp8_scale per row and KV head.
void store_kv(float* kv, int M, int Hkv, int hd, const EngineNumerics& n);

}  // namespace mlk
