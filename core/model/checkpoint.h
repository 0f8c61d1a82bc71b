// Checkpoints as Hugging Face would write them: a directory with
//   model.safetensors      parameters under their HF Qwen3 / Qwen3-MoE names,
//                          linear weights transposed to HF's [out, in]
//   config.json            HF config (model_type qwen3 or qwen3_moe)
//   optimizer.safetensors  optional AdamW moments "exp_avg.<name>" and
//                          "exp_avg_sq.<name>" (HF shapes), step in metadata
// so `AutoModelForCausalLM.from_pretrained(dir)` can load the model elsewhere.
//
// safetensors format: u64 little-endian header length N, N bytes of JSON
// header {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__":
// {string: string}} padded with spaces so the data starts at a multiple of 8,
// then the raw little-endian tensor data (offsets relative to its start).
//
// Every file is written to a temporary name, flushed (fsync) and renamed, so a
// crash never leaves a half-written file; model.safetensors is written last and
// carries a save id that optimizer.safetensors must match on load.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/params.h"

namespace mlk {

class CheckpointError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// Throws CheckpointError(msg): the checkpoint reader's and the Hugging Face
// config reader's one way to refuse a file.
[[noreturn]] inline void checkpoint_fail(const std::string& msg) { throw CheckpointError(msg); }

// AdamW state in arena layout (same offsets as the parameters).
struct OptimizerState {
    int64_t step = 0;      // optimizer steps taken (bias correction)
    std::vector<float> m;  // exp_avg, layout.total floats
    std::vector<float> v;  // exp_avg_sq, layout.total floats
    bool operator==(const OptimizerState&) const = default;
};
// What save_checkpoint writes of an optimizer: its step and views of its
// moments, the caller's own arrays (a copy would be 118 MB on moe-deep).
struct OptimizerStateView {
    int64_t step = 0;
    std::span<const float> m, v;
    OptimizerStateView(int64_t step_, std::span<const float> m_, std::span<const float> v_)
        : step(step_), m(m_), v(v_) {}
    OptimizerStateView(const OptimizerState& s) : step(s.step), m(s.m), v(s.v) {}  // NOLINT: a view of it
};

struct LoadedCheckpoint {
    ModelConfig model;          // from config.json (size "custom" when no preset matches)
    ParamLayout layout;         // make_param_layout(config)
    std::vector<float> params;  // arena order, layout.total floats
    nlohmann::json metadata;    // as given to save_checkpoint ({} when none)
    std::optional<OptimizerState> optimizer;
};

// Writes dir/model.safetensors, dir/config.json and, when `opt` is given,
// dir/optimizer.safetensors (a stale optimizer file is removed otherwise).
// Creates dir. `metadata` is stored exactly (any JSON) and its top-level
// entries are also mirrored as readable strings in the safetensors
// __metadata__. Throws CheckpointError.
void save_checkpoint(const std::string& dir, const ModelConfig& cfg, const ParamLayout& layout, const float* params,
                     const nlohmann::json& metadata = {}, std::optional<OptimizerStateView> opt = std::nullopt);

// Reads a checkpoint directory. Accepts F32, F16, BF16 (and F64) tensors,
// converting to float. Throws CheckpointError naming the file and the problem:
// truncated file, corrupt header, missing / unexpected tensor, wrong shape,
// unsupported dtype, unsupported config.json.
LoadedCheckpoint load_checkpoint(const std::string& dir);

// ---- config.json ----------------------------------------------------------
nlohmann::json hf_config_json(const ModelConfig& cfg);
ModelConfig model_config_from_hf(const nlohmann::json& j);  // throws CheckpointError

// ---- safetensors, low level -------------------------------------------------
struct TensorOut {
    std::string name;
    std::string dtype = "F32";
    std::vector<int64_t> shape;
    const void* data = nullptr;  // little-endian bytes, product(shape) * dtype size
    // Instead of data (F32 only): writes the product(shape) floats into a
    // buffer of the writer's, when the tensor's turn comes (a tensor made on
    // the fly, without a copy of every tensor held at once).
    std::function<void(float*)> fill;
};
// Atomic (temp file + fsync + rename). Tensors are stored in the given order.
void write_safetensors(const std::string& path, const std::vector<TensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata);

struct SafetensorsFile {
    struct Tensor {
        std::string dtype;
        std::vector<int64_t> shape;
        uint64_t begin = 0, end = 0;  // into data()
        int64_t numel() const;
    };
    std::string path;
    std::map<std::string, Tensor> tensors;
    std::map<std::string, std::string> metadata;
    std::vector<unsigned char> bytes;  // whole file
    uint64_t data_start = 0;

    const unsigned char* data() const { return bytes.data() + data_start; }
    // The tensor as floats (F32 copied; F16, BF16, F64 converted), after
    // checking dtype and size. Throws CheckpointError naming the tensor.
    std::vector<float> to_f32(const std::string& name) const;
};
// Parses and checks the header (lengths, offsets within the file). Throws
// CheckpointError naming the file and problem.
SafetensorsFile read_safetensors(const std::string& path);

}  // namespace mlk
