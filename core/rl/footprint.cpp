#include "core/rl/footprint.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <vector>

#include "core/config/number_text.h"
#include "core/engines/numerics.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "core/model/params.h"
#include "kernels/kernels.h"

namespace mlk {

namespace {

constexpr double kMB = 1024.0 * 1024.0;

}  // namespace

ModelFootprint model_footprint(const Config& c) {
    const ModelConfig m = model_config_of(c);
    ModelFootprint f;
    f.params = parameter_count(m);
    // Per token an MoE layer runs its whole router but only top-k experts.
    ModelConfig top_k_only = m;
    top_k_only.num_experts = m.num_experts_per_tok;
    f.active_params = parameter_count(top_k_only) +
                      int64_t{m.num_moe_layers()} * m.hidden_size * (m.num_experts - m.num_experts_per_tok);
    const double P = static_cast<double>(f.params);
    f.state_mb = 3 * 4.0 * P / kMB;

    const TaskBounds tb = task_bounds(c.task.name, c.task.length);
    const double S = double(c.rl.prompts_per_step) * c.rl.samples_per_prompt;
    const double T = tb.prompt_tokens + c.rollout.max_new_tokens, M = S * T;
    const double slots = c.rollout.max_batch > 0 ? std::min<double>(c.rollout.max_batch, S) : S;
    const EngineNumerics rn = rollout_numerics(c);
    double rollout = RolloutEngine::borrowed_bytes_per_param(rn) * P;
    rollout += RolloutEngine::kv_cache_bytes_per_token(m, rn) * slots * T;  // K and V cache
    // An fp8 cache's decode reads one layer's rows dequantised to fp32.
    if (is_fp8(rn.kv_cache)) rollout += 4.0 * 2.0 * slots * T * m.num_kv_heads * m.head_dim;
    rollout += 4.0 * TrainEngine::logprob_forward_floats(m, S, tb.prompt_tokens);  // a prefill layer
    f.rollout_mb = rollout / kMB;

    // Several mini-steps: the recompute keeps nothing, each slice's forward
    // keeps its own (the largest slice: whole prompt groups).
    const int mini = std::max(1, c.rl.mini_step_count());
    const double S_kept = std::ceil(double(c.rl.prompts_per_step) / mini) * c.rl.samples_per_prompt;
    const bool full = TrainEngine::full_recompute_for(m, S_kept, T);
    double floats = TrainEngine::kept_activation_floats(m, S_kept, T, full);
    if (mini > 1) floats = std::max(floats, TrainEngine::logprob_forward_floats(m, S, T));
    floats += 2 * M * m.hidden_size + 4 * M * m.vocab_size;  // final norm in/out; logits, log-probs, their grads
    floats += (double)TrainEngine::cast_weight_floats(m, train_numerics(c));
    // The gradients: a checkpointing backward frees each layer's input as it
    // maps the layer's gradients, so the two take turns.
    const double inputs = full ? TrainEngine::checkpoint_floats(m, S_kept, T) : 0.0;
    floats += std::max(P, inputs) - inputs;
    f.training_mb = 4.0 * floats / kMB;
    f.memory_mb = f.state_mb + std::max(f.rollout_mb, f.training_mb);

    const double A = static_cast<double>(f.active_params);
    // The last term: with checkpointing, the layers' forward once more in backward.
    const double flop = 2 * A * M + 2 * A * M + 6 * A * M + 2 * A * M * (mini - 1) / mini + (full ? 2 * A * M : 0.0);
    f.step_gflop = flop * 1e-9;
    f.est_step_ms = f.step_gflop / rl_step_gflops() * 1e3;
    return f;
}

double rl_step_gflops() {
    static const double rate = [] {
        // A training-shaped product (rows of a batch times a hidden-to-MLP
        // weight), repeated until about 20 ms have passed; the best rep counts.
        const int M = 512, K = 128, N = 384;
        std::vector<float> a((size_t)M * K, 0.5f), w((size_t)K * N, 0.25f), out((size_t)M * N);
        const Exec ex{Family::fast, Dtype::f32};
        using Clock = std::chrono::steady_clock;
        double best = 1e30;
        const auto start = Clock::now();
        for (int rep = 0; rep < 200; ++rep) {
            const auto t0 = Clock::now();
            matmul_forward(ex, out.data(), a.data(), w.data(), nullptr, M, K, N);
            best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
            if (rep >= 4 && Clock::now() - start > std::chrono::milliseconds(20)) break;
        }
        return 2.0 * M * K * N / best * 1e-9 * kStepEfficiency;
    }();
    return rate;
}

std::string footprint_text(const ModelFootprint& f) {
    auto count = [](int64_t n) { return n >= 1000000 ? fixed_text(n / 1e6, 1) + "M" : fixed_text(n / 1e3, 1) + "k"; };
    const double ms = f.est_step_ms;
    const std::string step = ms >= 1000 ? fixed_text(ms / 1000, 1) + " s" : fixed_text(ms, 0) + " ms";
    return count(f.params) + " parameters (" + count(f.active_params) + " active per token), about " +
           fixed_text(f.memory_mb, 0) + " MiB, about " + step + " per RL step";
}

}  // namespace mlk
