#include "core/rl/optim.h"

#include <cmath>

namespace mlk {

double AdamW::grad_norm(const std::vector<float>& grads) {
    double ss = 0.0;
    for (float g : grads) ss += (double)g * g;
    return std::sqrt(ss);
}

double AdamW::update(std::vector<float>& params, std::vector<float>& grads, const AdamWSettings& s, double lr) {
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
    const double bc1 = 1.0 - std::pow(s.beta1, (double)step), bc2 = 1.0 - std::pow(s.beta2, (double)step);
    for (size_t i = 0; i < params.size(); ++i) {
        const double g = grads[i] * scale;
        const double mi = s.beta1 * m[i] + (1.0 - s.beta1) * g;
        const double vi = s.beta2 * v[i] + (1.0 - s.beta2) * g * g;
        m[i] = (float)mi;
        v[i] = (float)vi;
        double p = params[i];
        p -= lr * s.weight_decay * p;
        p -= lr * (mi / bc1) / (std::sqrt(vi / bc2) + s.eps);
        params[i] = (float)p;
    }
    return norm;
}

double warmup_lr(double lr, int warmup, int64_t step) {
    if (warmup <= 0 || step >= warmup) return lr;
    return lr * (double)(step + 1) / (double)warmup;
}

}  // namespace mlk
