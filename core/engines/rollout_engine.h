// The rollout engine: batched autoregressive generation with a KV cache and
// continuous batching, as an inference server does it. Its weights come from
// the trainer, stored as its numerics profile says. Prompts are prefilled packed
// (M = sum of prompt lengths); each decode step runs the active sequences
// only, so the decode batch shrinks as sequences finish and grows as waiting
// ones are admitted.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/engines/device_model.h"
#include "core/engines/numerics.h"
#include "core/engines/train_engine.h"
#include "core/model/blocks.h"

namespace mlk {

struct SamplingParams {
    float temperature = 1.0f;
    int top_k = 0;       // 0 = off
    float top_p = 1.0f;  // 1 = off
};

// One of the most likely tokens at a position, with its log-prob.
struct TokenAlternative {
    int32_t token = 0;
    float lp = 0;
    bool operator==(const TokenAlternative&) const = default;
};
inline constexpr int kTopAlternatives = 5;

struct RolloutSequence {
    std::vector<int32_t> tokens;  // prompt + response
    int prompt_len = 0;
    std::vector<float> lp_processed;  // per response token: log-prob under the distribution sampled from
    std::vector<float> lp_raw;        // per response token: log_softmax(logits) before temperature/top-k/top-p
    // Per response token: 1 where a multi-turn task's environment inserted it
    // (forced, not sampled). The one place the env mask lives: every loss and
    // metric reads its valid tokens from here (core/rl/measure.h).
    std::vector<uint8_t> env;
    bool finished_by_eos = false;
    // Per response token, for "why this token?" (core/rl/worst_tokens.h):
    // top[j*kTopAlternatives ..] the most likely tokens of the distribution
    // it came from, at the temperature and before top-k/top-p (the one the
    // trainer's log-probs are compared with), most likely first (ties: lower
    // id); rows[j] the rows M of the forward that computed it (the packed
    // prefill or the decode batch): what picks the fast kernels' reduction
    // plan. Recorded beside sampling; nothing sampled depends on them.
    std::vector<TokenAlternative> top;
    std::vector<int32_t> rows;
    // Top-k experts of every MoE layer for every position fed to the model,
    // [num_moe_layers][tokens.size()*k], indexed as ModelConfig::moe_layers()
    // (empty for a dense model); -1 where a position was never fed (the last token).
    std::vector<std::vector<int32_t>> expert_ids;

    int sampled_tokens() const { return (int)std::count(env.begin(), env.end(), uint8_t{0}); }
};

// A multi-turn task's environment: called after every token the policy
// samples (unless it ends the sequence) with the sequence's index and its
// response so far; returns the tokens to feed next instead of sampling, one
// per decode step (empty: none). Must not depend on other sequences, so a
// sequence's rollout stays independent of its batch.
using Environment = std::function<std::vector<int32_t>(int seq, std::span<const int32_t> response)>;

struct RolloutResult {
    std::vector<RolloutSequence> sequences;
    std::vector<int> decode_batch_sizes;  // M of every decode step, in order
    int prefill_calls = 0;
};

// The training engine's view of a rollout: padded prompt+response tokens.
SeqBatch to_seq_batch(const RolloutResult& r);
// R3 replay table for the training engine: [moe_layers][B*T*k] (moe_layers =
// ModelConfig::num_moe_layers()), -1 where the rollout never routed a position.
std::vector<std::vector<int32_t>> replay_table(const RolloutResult& r, int T, int moe_layers, int k);

class RolloutEngine {
public:
    // device: where the model runs (device.h): nullptr, the CPU engine's own
    // code; else every forward runs there (DeviceModel) and only sampling,
    // the scheduling and the environment stay on the host.
    explicit RolloutEngine(const ModelConfig& cfg, const DeviceOps* device = nullptr);
    ~RolloutEngine();
    // "cpu", or the device's name.
    std::string device_name() const;

    // Weight sync from the trainer: the master fp32 arena as this engine
    // stores it (numerics.h: cast_params, lm_head_weights). The CPU engine
    // borrows `master` instead of copying it, as the training engine
    // computes on it: as it is for fp32 numerics, rounded in place for bf16
    // ones (Bf16InPlace, 17 bits a weight kept), cast in place for fp16 and
    // fp8 (CastInPlace, 3 bytes). Until release_weights (or the engine's
    // end), which puts its bits back, the caller must neither read nor write master.
    void load_weights(std::vector<float>& master, const EngineNumerics& numerics);
    // How the CPU engine borrows the master under `numerics`, and the bytes a
    // weight it keeps beside it to give it back: 0 (fp32), 17 bits (bf16,
    // Bf16InPlace), 3 bytes (fp16, fp8: CastInPlace).
    enum class Borrow { as_is, rounded, cast };
    static Borrow borrow_of(const EngineNumerics& numerics);
    static double borrowed_bytes_per_param(const EngineNumerics& numerics);
    // Frees the weights (a generate then needs load_weights again) and gives
    // a borrowed master back: the RL step syncs them afresh every step, so
    // between its rollouts they would only add a model's worth of memory to
    // the training phase.
    void release_weights();
    // Releases `engine`'s weights when it goes out of scope, thrown through or not.
    struct WeightsLoan {
        RolloutEngine& engine;
        ~WeightsLoan() { engine.release_weights(); }
    };
    const EngineNumerics& numerics() const { return num_; }
    // Bytes of K and V cache per cached token, every layer, under `numerics`:
    // 4 a value (every precision but fp8 is held in fp32 storage), fp8 1 a
    // value (its code) and 4 a scale per KV head.
    static double kv_cache_bytes_per_token(const ModelConfig& cfg, const EngineNumerics& numerics);
    // The K and V cache the last generate held, in bytes (its slots times
    // the longest prompt plus max_new_tokens, kv_cache_bytes_per_token each):
    // what the cache costs, not the one-layer scratch an fp8 cache's decode
    // dequantises into.
    size_t kv_cache_bytes() const { return kv_cache_bytes_; }

    // seed keys the sampler: token s of sequence i uses hash(seed, i, s), so
    // a sequence's samples do not depend on which others share its batch.
    // max_batch: most sequences in flight at once (0 = all). max_new_tokens
    // bounds the whole response, environment tokens included.
    RolloutResult generate(Family family, const std::vector<std::vector<int32_t>>& prompts, int max_new_tokens,
                           const SamplingParams& sampling, uint64_t seed, int max_batch = 0,
                           const Environment& environment = {});

private:
    struct Seq;
    // Runs rows (token ids at positions) through the model, writing K/V to the
    // cache. prefill_lens non-empty: rows are whole prompts packed back to
    // back; else one decode row per sequence. lp: the log-softmax at
    // inv_temp of the rows in `want_rows`; lp_raw (when non-null) at temperature 1.
    void forward_rows(const Exec& ex, const std::vector<int32_t>& tok, const std::vector<int32_t>& pos,
                      const std::vector<int32_t>& slot, const std::vector<int32_t>& prefill_lens,
                      const std::vector<int32_t>& want_rows, const Exec& lp_ex, float inv_temp, std::vector<float>& lp,
                      std::vector<float>* lp_raw, std::vector<std::vector<int32_t>>& ids_out);

    ModelConfig cfg_;
    ParamLayout layout_;
    Bf16InPlace bf16_master_;  // the master rounded in place, where the numerics allow it
    CastInPlace cast_master_;  // else cast in place, where they are not fp32
    bool has_weights_ = false;
    std::vector<float> head_;  // [D, V] at num_.lm_head
    Weights w_{};
    EngineNumerics num_;
    int t_max_ = 0;
    int64_t cache_stride_ = 0;
    std::vector<ActBuffer> kcache_, vcache_;  // [L][slots*Tmax*Hkv*hd]
    // An fp8 num_.kv_cache instead: the codes [L][slots*Tmax*Hkv*hd] and
    // one scale per (token, KV head) [L][slots*Tmax*Hkv], store_kv's values
    // as code * scale; a decode step dequantises the rows its attention
    // reads into krows_ / vrows_ (one layer's: [M, longest length, Hkv*hd]).
    using ByteBuffer = std::vector<uint8_t, UnsetAllocator<uint8_t>>;
    std::vector<ByteBuffer> kcode_, vcode_;
    std::vector<ActBuffer> kscale_, vscale_;
    ActBuffer krows_, vrows_;
    size_t kv_cache_bytes_ = 0;
    std::vector<int> moe_layers_;  // cfg_.moe_layers()
    // One layer's activations, kept from one forward_rows call to the next
    // of a generate() (freed with the cache): a decode step of a few rows
    // then reuses them instead of allocating them again.
    struct Scratch {
        ActBuffer x, ln, atty, o, ffn;  // [M,D], [M,D], [M,H*hd], [M,D], [M,D]
        QkvActs qkv;
        DenseMlpActs mlp;
        MoeActs moe;
    };
    Scratch scratch_;
    std::vector<float> logits_;
    std::unique_ptr<DeviceModel> device_;  // null: the CPU engine
};

}  // namespace mlk
