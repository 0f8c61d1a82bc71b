#include "core/rl/optim.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/model/buffers.h"
#include "kernels/kernels.h"

namespace mlk {

namespace {
// Floats per block of the norm's sum; the block count, not the thread count,
// fixes the order of the sum.
constexpr size_t kNormBlock = size_t{1} << 14;
}  // namespace

double AdamW::grad_norm(std::span<const float> grads) {
    const size_t n = grads.size(), nb = (n + kNormBlock - 1) / kNormBlock;
    std::vector<double> block(nb);
    for_parts(nb, 4, [&](size_t b0, size_t b1) {
        for (size_t b = b0; b < b1; ++b)
            block[b] = sum_squares(grads.data() + b * kNormBlock, (int64_t)std::min(kNormBlock, n - b * kNormBlock));
    });
    double ss = 0.0;
    for (double s : block) ss += s;
    return std::sqrt(ss);
}

double AdamW::update(std::vector<float>& params, std::span<const float> grads, const AdamWSettings& s, double lr) {
    if (grads.size() != params.size())
        throw std::invalid_argument("AdamW update: " + std::to_string(grads.size()) + " gradients for " +
                                    std::to_string(params.size()) + " parameters");
    if (m.size() != params.size()) {
        m.assign(params.size(), 0.0f);
        v.assign(params.size(), 0.0f);
    }
    const double norm = grad_norm(grads);
    // A non-finite gradient would poison the moments for good: skip the update
    // and let the caller report the norm (NaN/Inf is a finding, not a crash).
    if (!std::isfinite(norm)) return norm;
    const double scale = (s.grad_clip > 0 && norm > s.grad_clip) ? s.grad_clip / norm : 1.0;
    ++step;
    AdamWStep st;
    st.grad_scale = scale;
    st.beta1 = s.beta1, st.beta2 = s.beta2, st.eps = s.eps, st.weight_decay = s.weight_decay, st.lr = lr;
    st.bias_correction1 = 1.0 - std::pow(s.beta1, (double)step);
    st.bias_correction2 = 1.0 - std::pow(s.beta2, (double)step);
    adamw_update(params.data(), m.data(), v.data(), grads.data(), (int64_t)params.size(), st);
    return norm;
}

double warmup_lr(double lr, int warmup, int64_t step) {
    if (warmup <= 0 || step >= warmup) return lr;
    return lr * (double)(step + 1) / (double)warmup;
}

}  // namespace mlk
