#include "core/engines/numerics.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <mutex>
#include <stdexcept>

namespace mlk {

namespace {

bool ends_with(const std::string& s, const char* tail) {
    const size_t n = std::char_traits<char>::length(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

}  // namespace

void cast_params(std::span<float> out, const std::vector<float>& master, const ParamLayout& layout,
                 const EngineNumerics& n) {
    if (out.size() != master.size()) throw std::invalid_argument("cast_params: output and master sizes differ");
    cast_params(out.data(), master.data(), {0, (int64_t)master.size()}, layout, n);
}

void cast_params(float* out, const float* master, ParamRange range, const ParamLayout& layout,
                 const EngineNumerics& n) {
    copy_rounded(out, master + range.begin, (size_t)(range.end - range.begin), n.activations());
    if (!is_fp8(n.matmul)) return;
    std::vector<const ParamSpec*> linear;
    for (const ParamSpec& s : layout.specs) {
        if (s.offset < range.begin || s.offset >= range.end) continue;
        if (s.offset + s.numel > range.end) throw std::invalid_argument("cast_params: a range ends inside " + s.name);
        // Linear weights are stored [in, out]; the router (mlp.gate) and the
        // LM head stay at the activations' precision, as serving engines keep them.
        if (s.transposed && !ends_with(s.name, "mlp.gate.weight") && s.name != "lm_head.weight") linear.push_back(&s);
    }
    // Each tensor is quantised on its own: the threads share them out (on
    // one, moe-deep's 1,800 tensors take 90 ms of every fp8 rollout's step).
    for_parts(linear.size(), 1, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i) {
            const ParamSpec& s = *linear[i];
            quantize_weight(out + (s.offset - range.begin), nullptr, (int)s.shape[0], (int)s.shape[1], n.matmul,
                            n.fp8_scale, n.fp8_granularity);
        }
    });
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
    // A scale per (token, KV head) row whatever the matmuls' granularity, of
    // the engine's scale kind (a per-token activation scale, floor included).
    if (is_fp8(n.kv_cache))
        quantize_activations(kv, nullptr, kv, M * Hkv, hd, n.kv_cache, n.fp8_scale, Fp8Granularity::channel);
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

namespace {

// A difference of bit patterns held in 3 bytes: (-2^23, 2^23), and -2^23
// marks a weight kept whole.
constexpr int32_t kWhole = -(1 << 23);

// The master's tensors in runs a cast can take one at a time: the embedding
// before the layers, each layer, the final norm and head after them.
std::vector<ParamRange> cast_runs(const ParamLayout& layout) {
    if (layout.layers.empty()) return {{0, layout.total}};
    std::vector<ParamRange> runs{{0, layout.layers.front().all().begin}};
    for (const ParamLayout::Layer& l : layout.layers) runs.push_back(l.all());
    runs.push_back({layout.layers.back().all().end, layout.total});
    return runs;
}

}  // namespace

void CastInPlace::cast(std::span<float> master, const ParamLayout& layout, const EngineNumerics& n) {
    restore();
    const size_t count = master.size();
    low_ = PagedFloats((count + 1) / 2);
    high_ = PagedFloats((count + 3) / 4);
    uint32_t* const u = reinterpret_cast<uint32_t*>(master.data());
    uint16_t* const low = reinterpret_cast<uint16_t*>(low_.data());
    int8_t* const high = reinterpret_cast<int8_t*>(high_.data());
    std::mutex whole_lock;
    std::vector<float> cast;
    for (const ParamRange& run : cast_runs(layout)) {
        if (run.end <= run.begin) continue;
        cast.resize((size_t)(run.end - run.begin));
        cast_params(cast.data(), master.data(), run, layout, n);
        const uint32_t* const c = reinterpret_cast<const uint32_t*>(cast.data());
        for_parts(cast.size(), kFloatsPerPart, [&](size_t b, size_t e) {
            std::vector<std::pair<int64_t, uint32_t>> whole;
            for (size_t j = b; j < e; ++j) {
                const size_t i = (size_t)run.begin + j;
                // Modulo 2^32 the difference gives the bits back whatever they
                // are (NaN, a sign the cast changed); only its size can fail.
                const int32_t d = static_cast<int32_t>(u[i] - c[j]);
                if (d > kWhole && d < -kWhole) {
                    low[i] = static_cast<uint16_t>(d);
                    high[i] = static_cast<int8_t>(d >> 16);
                } else {
                    low[i] = static_cast<uint16_t>(kWhole);
                    high[i] = static_cast<int8_t>(kWhole >> 16);
                    whole.emplace_back((int64_t)i, u[i]);
                }
                u[i] = c[j];
            }
            if (whole.empty()) return;
            const std::lock_guard<std::mutex> hold(whole_lock);
            whole_.insert(whole_.end(), whole.begin(), whole.end());
        });
    }
    master_ = master;
}

void CastInPlace::restore() {
    if (!active()) return;
    uint32_t* const u = reinterpret_cast<uint32_t*>(master_.data());
    const uint16_t* const low = reinterpret_cast<const uint16_t*>(low_.data());
    const int8_t* const high = reinterpret_cast<const int8_t*>(high_.data());
    for_parts(master_.size(), kFloatsPerPart, [&](size_t b, size_t e) {
        for (size_t i = b; i < e; ++i)
            u[i] += static_cast<uint32_t>(static_cast<int32_t>(high[i]) * 65536 + static_cast<int32_t>(low[i]));
    });
    // A weight kept whole had kWhole added, its old bits are put back.
    for (const auto& [i, bits] : whole_) u[i] = bits;
    master_ = {};
    low_ = PagedFloats();
    high_ = PagedFloats();
    std::vector<std::pair<int64_t, uint32_t>>().swap(whole_);
}

}  // namespace mlk
