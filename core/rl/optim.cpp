#include "core/rl/optim.h"

#include <cmath>

#include "kernels/kernels.h"

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
