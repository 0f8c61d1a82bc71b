#include "core/rl/policy_loss.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/metrics/mismatch.h"

namespace mlk {

namespace {

inline bool kept(std::span<const std::uint8_t> keep, std::size_t t) { return keep.empty() || keep[t] != 0; }

struct ClipOutcome {
    double obj;      // min(x*A, clip(x)*A)
    double dobj_dx;  // derivative of obj w.r.t. x (0 when the clipped term is active)
    bool clipped;    // clipped term strictly smaller
};

ClipOutcome clipped_objective(double x, double A, double lo, double hi) {
    const double unclipped = x * A;
    const double clipped = std::clamp(x, lo, hi) * A;
    if (clipped < unclipped) return {clipped, 0.0, true};
    return {unclipped, A, false};
}

}  // namespace

PolicyLossResult policy_loss(const PolicyLossSettings& st, std::span<const float> lp_theta,
                             std::span<const float> lp_anchor, std::span<const double> seq_advantages,
                             std::span<const double> weights, std::span<const std::uint8_t> keep,
                             std::span<const int> seq_offsets) {
    const std::size_t n = lp_theta.size();
    if (lp_anchor.size() != n) throw std::invalid_argument("policy_loss: lp_theta and lp_anchor sizes differ");
    if (!weights.empty() && weights.size() != n)
        throw std::invalid_argument("policy_loss: weights must be empty or have one entry per token");
    check_token_layout(n, keep, seq_offsets, "policy_loss");
    const std::size_t S = seq_offsets.size() - 1;
    if (seq_advantages.size() != S)
        throw std::invalid_argument("policy_loss: seq_advantages must have one entry per sequence");
    if (st.eps_low < 0 || st.eps_high < 0 || st.gspo_eps_low < 0 || st.gspo_eps_high < 0)
        throw std::invalid_argument("policy_loss: clip eps must be >= 0");

    PolicyLossResult res;
    res.grad.assign(n, 0.0);
    res.ratio.assign(n, 0.0);

    // kept tokens per sequence and aggregation coefficient c_t (same for a whole sequence)
    std::vector<std::size_t> nk(S, 0);
    for (std::size_t i = 0; i < S; ++i) {
        for (int ti = seq_offsets[i]; ti < seq_offsets[i + 1]; ++ti)
            if (kept(keep, static_cast<std::size_t>(ti))) nk[i]++;
        res.num_kept_tokens += nk[i];
        if (nk[i] > 0) res.num_sequences++;
    }
    if (res.num_kept_tokens == 0) return res;
    auto coef = [&](std::size_t i) {
        return st.aggregation == LossAggregation::token_mean
                   ? 1.0 / static_cast<double>(res.num_kept_tokens)
                   : 1.0 / (static_cast<double>(nk[i]) * static_cast<double>(res.num_sequences));
    };
    auto w_of = [&](std::size_t t) { return weights.empty() ? 1.0 : weights[t]; };

    double loss = 0.0, kl = 0.0;
    std::size_t n_clip = 0, n_clip_lo = 0, n_clip_hi = 0;
    for (std::size_t i = 0; i < S; ++i) {
        if (nk[i] == 0) continue;
        const double A = seq_advantages[i];
        const double c = coef(i);
        const int b = seq_offsets[i], e = seq_offsets[i + 1];
        if (st.type == PolicyLossType::gspo) {
            double sd = 0.0, sw = 0.0;
            for (int ti = b; ti < e; ++ti) {
                const auto t = static_cast<std::size_t>(ti);
                if (!kept(keep, t)) continue;
                const double d = static_cast<double>(lp_theta[t]) - static_cast<double>(lp_anchor[t]);
                sd += d;
                sw += w_of(t);
                kl -= d;
            }
            const double m = sd / static_cast<double>(nk[i]);
            const double mc = clamp20(m);
            const double s = std::exp(mc);
            const ClipOutcome o = clipped_objective(s, A, 1.0 - st.gspo_eps_low, 1.0 + st.gspo_eps_high);
            // L += sum_t c * (-w_t * obj) = -c * sw * obj ; dobj/dlp_u = dobj/ds * s * (1/n_i)
            loss += -c * sw * o.obj;
            const double ds_dm = (m > -20.0 && m < 20.0) ? s : 0.0;
            const double g = -c * sw * o.dobj_dx * ds_dm / static_cast<double>(nk[i]);
            for (int ti = b; ti < e; ++ti) {
                const auto t = static_cast<std::size_t>(ti);
                if (!kept(keep, t)) continue;
                res.grad[t] = g;
                res.ratio[t] = s;
                if (o.clipped) {
                    ++n_clip;
                    if (s < 1.0 - st.gspo_eps_low) ++n_clip_lo;
                    else ++n_clip_hi;
                }
            }
            continue;
        }
        for (int ti = b; ti < e; ++ti) {
            const auto t = static_cast<std::size_t>(ti);
            if (!kept(keep, t)) continue;
            const double w = w_of(t);
            const double d = static_cast<double>(lp_theta[t]) - static_cast<double>(lp_anchor[t]);
            kl -= d;
            const double ratio = std::exp(clamp20(d));
            res.ratio[t] = ratio;
            if (st.type == PolicyLossType::reinforce) {
                loss += -c * w * A * static_cast<double>(lp_theta[t]);
                res.grad[t] = -c * w * A;
                continue;
            }
            const ClipOutcome o = clipped_objective(ratio, A, 1.0 - st.eps_low, 1.0 + st.eps_high);
            loss += -c * w * o.obj;
            const double dr = (d > -20.0 && d < 20.0) ? ratio : 0.0;
            res.grad[t] = -c * w * o.dobj_dx * dr;
            if (o.clipped) {
                ++n_clip;
                if (ratio < 1.0 - st.eps_low) ++n_clip_lo;
                else ++n_clip_hi;
            }
        }
    }

    const double dk = static_cast<double>(res.num_kept_tokens);
    res.loss = loss;
    res.ppo_kl = kl / dk;
    res.clip_fraction = static_cast<double>(n_clip) / dk;
    res.clip_low_fraction = static_cast<double>(n_clip_lo) / dk;
    res.clip_high_fraction = static_cast<double>(n_clip_hi) / dk;
    double rs = 0.0, rmin = std::numeric_limits<double>::infinity(), rmax = 0.0;
    for (std::size_t t = 0; t < n; ++t) {
        if (!kept(keep, t)) continue;
        rs += res.ratio[t];
        rmin = std::min(rmin, res.ratio[t]);
        rmax = std::max(rmax, res.ratio[t]);
    }
    res.ratio_mean = rs / dk;
    res.ratio_min = rmin;
    res.ratio_max = rmax;
    return res;
}

}  // namespace mlk
