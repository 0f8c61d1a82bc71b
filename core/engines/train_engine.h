// The training engine: full-sequence forward over a padded batch of
// prompt+response (prefill shapes, M = B*T), per-token log-probs and entropy,
// and a hand-written backward into a flat gradient arena.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/engines/numerics.h"
#include "core/model/blocks.h"

namespace mlk {

class DeviceModel;
class DeviceOps;

struct SeqBatch {
    int B = 0, T = 0;                  // sequences, padded length
    std::vector<int32_t> tokens;       // [B,T], Vocab::pad past each sequence's end
    std::vector<int32_t> lengths;      // [B] valid tokens (prompt + response)
    std::vector<int32_t> prompt_lens;  // [B]
};
// seqs[i] = prompt + response tokens, padded with Vocab::pad to the longest.
SeqBatch make_seq_batch(const std::vector<std::vector<int32_t>>& seqs, const std::vector<int32_t>& prompt_lens);
// Sequences [s0, s1) of a batch as a batch of their own (same padded length).
SeqBatch sub_batch(const SeqBatch& b, int s0, int s1);

struct TrainForward;
// The row convention of every training engine (the CPU's, a device's):
// position t's token is predicted by row t-1 of its sequence, position 0 by
// none. Fills out.logp and out.entropy [B*T] from the rows' log-probs
// lp_rows[B*T, V] and entropies ent[B*T] (0 at t = 0).
void next_token_logp(TrainForward& out, const SeqBatch& batch, const float* lp_rows, const float* ent, int V);
// Its backward: dlp[B*T, V] (zeros on entry) += dlogp[B*T] at each position's
// predicting row and token.
void scatter_dlogp(float* dlp, const SeqBatch& batch, const std::vector<float>& dlogp, int V);
// A tied LM head's gradient dhead[D, V] added into the embedding's
// dembed[V, D], transposed, after the head's GEMM and before the embedding's
// own scatter (the order the gradients' bits depend on).
void add_tied_head_grad(float* dembed, const float* dhead, int V, int D);

struct TrainForward {
    // logp[b*T+t] = log p(tokens[b,t] | tokens[b,<t]) at temperature 1/inv_temp,
    // for 1 <= t < T (0 at t = 0). entropy[b*T+t] of that same distribution.
    std::vector<float> logp, entropy;
    // [num_moe_layers][B*T*k], indexed as ModelConfig::moe_layers() (empty for
    // a dense model), at the position of the input token: this engine's own
    // top-k, and the experts it actually used (the rollout's under R3).
    std::vector<std::vector<int32_t>> own_expert_ids, used_expert_ids;
};

class TrainEngine {
public:
    // device: where the model runs (device.h): nullptr, this engine's own CPU
    // code; else the forward and backward run there (DeviceModel), and the
    // log-probs come back for the loss and the gradients for the optimizer.
    explicit TrainEngine(const ModelConfig& cfg, const DeviceOps* device = nullptr);
    ~TrainEngine();
    TrainEngine(TrainEngine&&) noexcept;
    // "cpu", or the device's name.
    std::string device_name() const;

    // params: the fp32 master arena, stored for compute as `numerics` says
    // (numerics.h). replay_ids: R3, [num_moe_layers][B*T*k] rollout experts
    // (-1 = no rollout route there: use our own top-k), or nullptr.
    // With fp32 activations and no fp8 the engine computes on `params`
    // itself (a cast would be a copy: 59 MB on moe-deep), so params and the
    // batch must stay alive and unchanged until the backward.
    // for_backward = false: log-probs only (a probe, or the recompute of a
    // step trained in several mini-steps): no activations are kept and no
    // attention probabilities saved, which the fast family's online softmax
    // otherwise computes a second time past one key block; the log-probs have the same bits, and
    // a backward then needs a new forward.
    const TrainForward& forward(Family family, const EngineNumerics& numerics, const std::vector<float>& params,
                                const SeqBatch& batch, float inv_temp,
                                const std::vector<std::vector<int32_t>>* replay_ids, bool for_backward = true);

    // Accumulates d(loss)/d(params) into grads (arena layout, layout().total
    // floats) given dlogp[B*T] = d(loss)/d(logp). Uses the activations of the
    // last forward. A checkpointing forward's activations serve one
    // backward, which frees each layer's input once the layer is done.
    void backward(std::span<float> grads, const std::vector<float>& dlogp);
    // The same into a vector, sized to the arena (with zeros) when it is not.
    void backward(std::vector<float>& grads, const std::vector<float>& dlogp);
    // The same into a fresh mapping, whose pages the backward maps for
    // writing just before each layer writes them (prefault_for_write; an
    // expert no token reached stays unmapped). A resident arena skips that:
    // the madvise calls cost moe-small's warm-up 0.45 ms a step for nothing.
    void backward(PagedFloats& grads, const std::vector<float>& dlogp);

    // Floats a forward over S sequences of length T keeps for backward: every
    // layer's activations (less the recomputed ones, below), or with
    // full_recompute only each layer's input plus one layer's worth.
    static double kept_activation_floats(const ModelConfig& cfg, double S, double T, bool full_recompute);
    // Of those, with full_recompute: the layer inputs (checkpoints_).
    static double checkpoint_floats(const ModelConfig& cfg, double S, double T);
    // Above this many bytes of training memory the engine checkpoints: it
    // keeps each layer's input only and recomputes the layer's forward in
    // backward, from the same input with the same kernels, M and thread
    // count, so the bits are those of keeping (engines_test checks). It costs
    // one more forward of the layers. Training memory is the kept activations
    // plus what every training step holds beside them: the fp32 master, its
    // gradients and AdamW's two moments. Counting activations alone let
    // moe-deep's warm-up (32 sequences) keep its 54 MB of activations beside
    // 237 MB of those, and its first run peaked at 316 MB; the deep presets'
    // RL batches cross it either way.
    static constexpr double kFullRecomputeBytes = 256.0 * 1024 * 1024;
    static constexpr double kTrainingStateBytesPerParam = 4.0 * sizeof(float);
    static bool full_recompute_for(const ModelConfig& cfg, double S, double T);
    // Floats a log-probs-only forward (for_backward = false) over S sequences
    // of length T holds at once: one layer's activations.
    static double logprob_forward_floats(const ModelConfig& cfg, double S, double T);
    // Tests and benches: checkpoint always (true), never (false), or by the
    // threshold above (std::nullopt, the default).
    void force_full_recompute(std::optional<bool> on) { force_full_ = on; }

    // Frees everything the last forward kept, for backward or to be read (a
    // backward now needs a new forward, and logprob_row is gone). Between
    // steps the rollout, the recompute and a checkpoint then reuse that
    // memory instead of adding to it.
    void release_activations();

    // Floats held for the weights cast to the last forward's numerics: 0 on
    // the master itself (fp32, no fp8), else the embedding, the final norm
    // and the largest layer, into which each layer is cast in turn.
    size_t held_cast_floats() const;
    static int64_t cast_weight_floats(const ModelConfig& cfg, const EngineNumerics& numerics);

    const ModelConfig& config() const { return cfg_; }
    const ParamLayout& layout() const { return layout_; }
    // The last forward's log-probs over the vocabulary at row (b, t), the
    // distribution that predicts position t+1 (V floats, valid until the next
    // forward or release_activations): for "why this token?" (core/rl/worst_tokens.h).
    const float* logprob_row(int b, int t) const { return &lp_[((size_t)b * batch_->T + t) * cfg_.vocab_size]; }

private:
    struct LayerActs {
        // Every buffer is written whole by the kernel that fills it (ActBuffer:
        // no zero-fill on each step's fresh activations).
        ActBuffer x_in, ln1, rstd1, att, atty, x_mid, ln2, rstd2, ffn_out;
        QkvActs qkv;
        DenseMlpActs mlp;
        MoeActs moe;
    };
    // The activations backward recomputes instead of keeping: the outputs of
    // row and elementwise ops whose inputs are kept (ln1, ln2, q and k after
    // norm and RoPE, SwiGLU's act, the experts' gathered rows; ffn_out is
    // forward-only). The kernels are deterministic for a given M and thread
    // count, so the recomputed bits equal the forward's, and this cuts the
    // kept activations by about two fifths for a few row ops. One layer's
    // worth of buffers lives here and is swapped into the layer being worked on.
    struct Recomputed {
        ActBuffer ln1, ln2, ffn_out, q, k, act, expert_x, expert_act;
    };
    void backward_into(std::span<float> grads, const std::vector<float>& dlogp, bool map_pages);
    void swap_recomputed(LayerActs& a);
    void recompute(LayerActs& a, int layer);
    // moe_keep: what an MoE layer keeps of its experts (blocks.h); with
    // MoeKeep::routes (a backward's recompute) neither the FFN's output nor
    // the layer's output x is computed, in a dense layer too.
    void layer_forward(LayerActs& a, int layer, const int32_t* replay, ActBuffer& x, bool save_att, MoeKeep moe_keep);
    ModelConfig cfg_;
    ParamLayout layout_;
    std::vector<int> moe_layers_;  // cfg_.moe_layers()
    // The weights the last forward computes with: the master's own (fp32, no
    // fp8), or cast to its numerics a layer at a time, each time the layer
    // runs, in forward and again in backward. A whole cast copy would be 4 bytes
    // a parameter beside the master (moe-deep: 59 MB of its training peak);
    // casting twice keeps moe-deep's bf16 training phase within noise of the
    // copy's (620-630 ms against 616-634).
    void bind_compute_weights(const std::vector<float>& params, const EngineNumerics& numerics);
    const LayerWeights& layer_weights(int l);  // w_.layers[l], cast when the master is
    struct CastWeights {
        const float* master = nullptr;  // null: w_ views the master itself
        EngineNumerics numerics;
        std::vector<float> outside;  // [V*D] the embedding, [D] the final norm
        PagedFloats layer_weights;   // the largest layer's floats; holds layer `layer`
        int layer = -1;
    };
    CastWeights cast_;
    std::vector<float> head_;  // [D, V] at the profile's lm_head
    Weights w_;                // cast: each layer's views into cast_.layer_weights
    const SeqBatch* batch_ = nullptr;
    bool have_activations_ = false;
    bool full_recompute_ = false;
    std::optional<bool> force_full_;
    Exec ex_;  // the last forward's, which recompute() repeats
    Dtype residual_ = Dtype::f32;
    std::vector<std::vector<int32_t>> replay_;  // the last forward's R3 table, when checkpointing
    std::vector<int> moe_index_;                // layer -> index among the MoE layers, -1 for dense
    float inv_temp_ = 1.0f;
    int M_ = 0;
    std::vector<int32_t> pos_;
    std::vector<LayerActs> acts_;  // keeping: every layer's
    Recomputed spare_;
    // Checkpointing: each layer's input, and the one layer being computed.
    std::vector<PagedFloats> checkpoints_;
    LayerActs work_;
    ActBuffer x_final_, lnf_, rstdf_, lp_;
    TrainForward out_;
    std::unique_ptr<DeviceModel> device_;  // null: the CPU engine
};

}  // namespace mlk
