#include "core/engines/numerics.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>

#include "core/config/config.h"

namespace mlk {

namespace {

// The profiles' table (numerics.h says what each row models).
EngineNumerics profile_points(NumericsProfile p, Dtype precision) {
    const Dtype b = Dtype::bf16, f = Dtype::f32;
    switch (p) {
        case NumericsProfile::simple: return EngineNumerics::simple(precision);
        case NumericsProfile::fp32_reference: return {f, f, f, f, f, f};
        case NumericsProfile::vllm_bf16: return {b, f, b, f, b, b};
        case NumericsProfile::sglang_fp8: return {Dtype::fp8_e4m3, f, b, f, b, b};
        case NumericsProfile::fsdp_bf16: return {b, b, b, f, b, b};
        case NumericsProfile::megatron_bf16: return {b, f, b, f, b, b};
    }
    return EngineNumerics::simple(precision);
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

EngineNumerics resolve(const RoundingPoints& r, Dtype precision) {
    EngineNumerics n = profile_points(r.profile, precision);
    n.matmul = point(r.matmul_dtype, n.matmul);
    n.residual = point(r.residual_dtype, n.residual);
    n.attn_probs = point(r.attn_probs_dtype, n.attn_probs);
    n.stats = point(r.stats_dtype, n.stats);
    n.lm_head = point(r.lm_head_dtype, n.lm_head);
    n.kv_cache = n.activations();
    return n;
}

bool ends_with(const std::string& s, const char* tail) {
    const size_t n = std::char_traits<char>::length(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

}  // namespace

EngineNumerics EngineNumerics::simple(Dtype precision) {
    const Dtype storage = is_fp8(precision) ? Dtype::bf16 : precision;
    return {precision, storage, Dtype::f32, Dtype::f32, storage, storage};
}

EngineNumerics rollout_numerics(const Config& c) {
    EngineNumerics n = resolve(c.rollout, c.rollout.precision);
    n.kv_cache = point(c.rollout.kv_cache_dtype, n.activations());
    return n;
}

EngineNumerics train_numerics(const Config& c) { return resolve(c.train, c.train.precision); }

std::string auto_dtype_of(const Config& c, const std::string& key) {
    const bool rollout = key.rfind("rollout.", 0) == 0;
    if (!rollout && key.rfind("train.", 0) != 0) return "";
    const std::string point = key.substr(key.find('.') + 1);
    static const std::pair<const char*, Dtype EngineNumerics::*> kPoints[] = {
        {"matmul_dtype", &EngineNumerics::matmul},         {"residual_dtype", &EngineNumerics::residual},
        {"attn_probs_dtype", &EngineNumerics::attn_probs}, {"stats_dtype", &EngineNumerics::stats},
        {"lm_head_dtype", &EngineNumerics::lm_head},       {"kv_cache_dtype", &EngineNumerics::kv_cache}};
    for (const auto& [name, member] : kPoints) {
        if (point != name || (!rollout && member == &EngineNumerics::kv_cache)) continue;
        Config at_auto = c;
        config_set(at_auto, key, std::string("auto"));
        const EngineNumerics n = rollout ? rollout_numerics(at_auto) : train_numerics(at_auto);
        return std::string(dtype_name(n.*member));
    }
    return "";
}

std::string numerics_text(const EngineNumerics& n, bool with_kv_cache) {
    auto d = [](Dtype x) { return std::string(dtype_name(x)); };
    std::string s = "matmul " + d(n.matmul) + ", residual " + d(n.residual) + ", P " + d(n.attn_probs) + ", stats " +
                    d(n.stats) + ", LM head " + d(n.lm_head);
    if (with_kv_cache) s += ", KV " + d(n.kv_cache);
    return s;
}

void cast_params(std::span<float> out, const std::vector<float>& master, const ParamLayout& layout,
                 const EngineNumerics& n) {
    cast_params(out, master, n.activations());
    if (!is_fp8(n.matmul)) return;
    for (const ParamSpec& s : layout.specs) {
        // Linear weights are stored [in, out]; the router (mlp.gate) and the
        // LM head stay at the activations' precision, as serving engines keep them.
        if (!s.transposed || ends_with(s.name, "mlp.gate.weight") || s.name == "lm_head.weight") continue;
        quantize_cols(out.data() + s.offset, nullptr, (int)s.shape[0], (int)s.shape[1], n.matmul);
    }
}

void lm_head_weights(std::vector<float>& out, const std::vector<float>& master, const ModelConfig& cfg,
                     const ParamLayout& layout, const EngineNumerics& n) {
    const int D = cfg.hidden_size, V = cfg.vocab_size;
    if (cfg.tie_word_embeddings) {
        tied_lm_head(out, master.data() + layout.find("model.embed_tokens.weight")->offset, V, D);
    } else {
        const float* head = master.data() + layout.find("lm_head.weight")->offset;
        out.assign(head, head + (size_t)D * V);
    }
    round_buffer(out.data(), out.size(), n.lm_head);
}

void store_kv(float* kv, int M, int Hkv, int hd, const EngineNumerics& n) {
    if (is_fp8(n.kv_cache)) quantize_rows(kv, nullptr, kv, M * Hkv, hd, n.kv_cache);
    else round_buffer(kv, (size_t)M * Hkv * hd, n.kv_cache);
}

bool Bf16InPlace::round(std::span<float> master) {
    restore();
    const size_t n = master.size();
    uint32_t* const u = reinterpret_cast<uint32_t*>(master.data());  // the weights as bits
    // Parts of whole 32-weight words, so no two threads share a word of bits.
    const size_t words = (n + 31) / 32;
    const auto for_words = [&](const std::function<void(size_t, size_t)>& fn) {
        for_parts(words, kFloatsPerPart / 32, [&](size_t w0, size_t w1) { fn(w0 * 32, std::min(n, w1 * 32)); });
    };
    std::atomic<bool> has_nan{false};
    for_words([&](size_t b, size_t e) {
        bool nan = false;
        for (size_t i = b; i < e; ++i) nan |= (u[i] & 0x7fffffffu) > 0x7f800000u;
        if (nan) has_nan.store(true, std::memory_order_relaxed);
    });
    if (has_nan.load()) return false;
    low_ = PagedFloats((n + 1) / 2);
    rounded_ = PagedFloats(words);
    uint16_t* const low = reinterpret_cast<uint16_t*>(low_.data());
    uint32_t* const up = reinterpret_cast<uint32_t*>(rounded_.data());
    for_words([&](size_t b, size_t e) {
        for (size_t w0 = b; w0 < e; w0 += 32) {
            const size_t w1 = std::min(e, w0 + 32);
            uint32_t word = 0;
            for (size_t i = w0; i < w1; ++i) {
                // Round to nearest even adds 0 or 1 to the high half of a
                // weight that is not a NaN (a carry into the exponent
                // included), so the high half and that bit give the old one back.
                const uint32_t hi = f32_to_bf16_bits(bits_float(u[i]));
                word |= (hi - (u[i] >> 16)) << (i - w0);
                low[i] = static_cast<uint16_t>(u[i]);
                u[i] = hi << 16;
            }
            up[w0 / 32] = word;
        }
    });
    master_ = master;
    return true;
}

void Bf16InPlace::restore() {
    if (!active()) return;
    const size_t n = master_.size(), words = (n + 31) / 32;
    uint32_t* const u = reinterpret_cast<uint32_t*>(master_.data());
    const uint16_t* const low = reinterpret_cast<const uint16_t*>(low_.data());
    const uint32_t* const up = reinterpret_cast<const uint32_t*>(rounded_.data());
    for_parts(words, kFloatsPerPart / 32, [&](size_t wb, size_t we) {
        for (size_t w = wb; w < we; ++w) {
            const size_t b = w * 32, e = std::min(n, b + 32);
            for (size_t i = b; i < e; ++i) u[i] = ((u[i] >> 16) - ((up[w] >> (i - b)) & 1u)) << 16 | low[i];
        }
    });
    master_ = {};
    low_ = PagedFloats();
    rounded_ = PagedFloats();
}

}  // namespace mlk
