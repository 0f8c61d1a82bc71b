// AdamW over the flat parameter arena, with the global gradient norm and
// clipping. Moments live in two arenas of the same layout as the parameters.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace mlk {

struct AdamWSettings {
    double lr = 1e-3;
    double beta1 = 0.9, beta2 = 0.99, eps = 1e-8;
    double weight_decay = 0.0;
    double grad_clip = 1.0;  // 0 = off
};

struct AdamW {
    std::vector<float> m, v;  // first and second moments, arena layout
    int64_t step = 0;

    // Global L2 norm of grads: double sums of fixed blocks (eight chains and a
    // fixed tree each, on the pool's threads), added in arena order. The order
    // depends only on the arena's size, so the bits do not depend on threads.
    static double grad_norm(std::span<const float> grads);

    // Clips grads to settings.grad_clip (by the norm above), then one AdamW
    // update of params with bias correction, decoupled weight decay, and
    // learning rate lr (the caller applies any warm-up schedule). Returns the
    // norm before clipping.
    double update(std::vector<float>& params, std::span<const float> grads, const AdamWSettings& s, double lr);
};

// Linear warm-up from lr/warmup to lr over `warmup` steps, then constant.
double warmup_lr(double lr, int warmup, int64_t step);

}  // namespace mlk
