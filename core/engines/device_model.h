// The model on a device (device.h): the forward both engines run and the
// training engine's backward, with the weights, activations, gradients and KV
// cache in device memory and every op a DeviceOps call, in the CPU engines'
// order of ops, shapes and numerics, so that on the host device it equals
// them bit for bit, and on a GPU under batch-invariant kernels too (each
// batch-invariant CUDA op, and every backward op, equals its CPU op bit for bit).
//
// What crosses to the host, and why (the rest stays on the device):
//  - up: the parameters at each weight sync or training forward (cast and
//    rounded on the host, as the CPU engines do), token ids, positions, cache
//    slots and lengths of each call, the MoE layers' gather offsets and slot
//    row pointers, the loss gradient d(loss)/d(log-prob) of each backward;
//  - down: each MoE layer's top-k expert ids (M*k ints): the host groups the
//    tokens by expert, as the CPU engine does, which sets every expert's row
//    count (and with it the fast family's GEMM plan) by the batch's routing;
//  - down: the log-probs of the rows asked for (rollout: R*V floats to sample
//    from; trainer: every row's log-probs and entropies, for the loss);
//  - both ways: the gradient arena around each backward (the host's
//    optimizer steps the master weights; backward adds into its gradients),
//    and with a tied LM head its [D, V] gradient, added to the embedding's
//    transposed on the host as the CPU engine does.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/engines/device.h"
#include "core/engines/numerics.h"
#include "core/engines/train_engine.h"

namespace mlk {

class DeviceModel {
public:
    DeviceModel(const ModelConfig& cfg, const DeviceOps& ops);
    ~DeviceModel();
    const DeviceOps& ops() const { return ops_; }

    // The master fp32 arena as `numerics` stores it (cast_params and
    // lm_head_weights on the host), uploaded.
    void load_weights(const std::vector<float>& master, const EngineNumerics& numerics);
    void release_weights();
    bool has_weights() const;
    const EngineNumerics& numerics() const { return num_; }

    // The rollout's KV cache: `slots` sequences of up to t_max positions each
    // (K and V per layer, [slots][t_max][Hkv*hd]); not zeroed.
    void open_cache(int slots, int t_max);
    void close_cache();  // frees the cache and the work buffers

    // The rollout engine's forward over rows (RolloutEngine::forward_rows):
    // tok/pos/row_slot per row; prefill_lens non-empty: whole prompts packed
    // back to back, else one decode row per sequence. K and V go into the
    // cache as num.kv_cache stores them. lp[R*V] = log-softmax at inv_temp of
    // the rows in want_rows; lp_raw (when non-null) the same at temperature 1.
    // ids_out[MoE layer][M*k]: each row's own top-k experts.
    void forward_rows(const Exec& ex, const std::vector<int32_t>& tok, const std::vector<int32_t>& pos,
                      const std::vector<int32_t>& row_slot, const std::vector<int32_t>& prefill_lens,
                      const std::vector<int32_t>& want_rows, const Exec& lp_ex, float inv_temp, std::vector<float>& lp,
                      std::vector<float>* lp_raw, std::vector<std::vector<int32_t>>& ids_out);

    // The training engine's forward (TrainEngine::forward) over a padded
    // batch: out as TrainEngine fills it; lp_rows[B*T*V] every row's
    // log-probs. for_backward: every layer's activations stay on the device
    // for backward (the CPU engine's recomputed ones included: the device has
    // the memory, and recomputing gives the same bits); the batch must stay
    // alive and unchanged until then.
    void sequence_forward(Family family, const SeqBatch& batch, float inv_temp,
                          const std::vector<std::vector<int32_t>>* replay_ids, TrainForward& out,
                          std::vector<float>& lp_rows, bool for_backward = false);
    // TrainEngine::backward on the device: grads (arena layout, resized to it
    // and zeroed when it is not) += d(loss)/d(params), given
    // dlogp[B*T] = d(loss)/d(logp) for the last for_backward forward.
    void backward(std::span<float> grads, const std::vector<float>& dlogp);
    // Frees the activations kept for backward.
    void release_activations();

private:
    struct Layer;
    struct Buffers;
    enum class Attend { prompts, decode, sequences };
    struct Rows {  // one forward's rows, as layer_forward reads them
        int M = 0;
        Attend attend = Attend::sequences;
        int B = 0, T = 0;                 // sequences
        std::vector<int32_t> lens;        // prompts: each prompt's length, packed in order
        double decode_positions = 0;      // decode: the attended positions, summed over rows
        int span = 0;                     // decode: the longest attended length (an fp8 cache's rows)
        const int32_t* replay = nullptr;  // [M*k] of the layer being run (R3), or null
    };
    // One decoder layer on b_->x in place; `a` receives its activations,
    // those backward reads too when keep.
    void layer_forward(const Exec& ex, int layer, const Rows& rows, Layer& a, bool keep);
    void moe_forward(const Exec& ex, const LayerWeights& w, const Rows& rows, Layer& a, bool keep);
    void moe_backward(float* dx, LayerWeights& g, const float* dout, Layer& a, int M, const LayerWeights& w);
    // ops_.matmul_forward / matmul_backward, their FLOPs counted
    // (kernel_flop_count) where the device does not count them itself.
    void matmul(const Exec& ex, float* out, const float* inp, const float* w, int M, int K, int N);
    void matmul_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int M, int K,
                         int N, GradStore dinp_store);
    void count(double flop) const;

    ModelConfig cfg_;
    ParamLayout layout_;
    const DeviceOps& ops_;
    EngineNumerics num_;
    Weights w_{};  // views into the device arena
    int64_t cache_stride_ = 0;
    std::unique_ptr<Buffers> b_;
};

}  // namespace mlk
