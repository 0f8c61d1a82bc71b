#include "core/rl/correction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "core/metrics/mismatch.h"

namespace mlk {

namespace {

inline bool tok_valid(std::span<const std::uint8_t> valid, std::size_t t) { return valid.empty() || valid[t] != 0; }

}  // namespace

void validate(const CorrectionSettings& s) {
    const std::vector<std::string> errors = correction_rule_violations(s);
    if (errors.empty()) return;
    std::string msg;
    for (const auto& e : errors) msg += (msg.empty() ? "" : "; ") + e;
    throw std::invalid_argument(msg);
}

CorrectionResult compute_correction(const CorrectionSettings& st, std::span<const float> lp_old,
                                    std::span<const float> lp_roll, std::span<const std::uint8_t> valid,
                                    std::span<const int> seq_offsets) {
    validate(st);
    const std::size_t n = lp_old.size();
    if (lp_roll.size() != n) throw std::invalid_argument("compute_correction: lp_old and lp_roll sizes differ");
    check_token_layout(n, valid, seq_offsets, "compute_correction");
    const std::size_t S = seq_offsets.size() - 1;

    // ---- per-token log ratios and per-sequence aggregates over valid tokens ----
    std::vector<double> lr(n, 0.0);
    std::vector<double> seq_sum(S, 0.0), seq_mean(S, 0.0), seq_k3(S, 0.0);
    std::vector<std::size_t> seq_count(S, 0);
    std::vector<std::uint8_t> vetoed(S, 0);
    const bool veto_on = st.veto_threshold > 0.0;
    for (std::size_t i = 0; i < S; ++i) {
        for (int ti = seq_offsets[i]; ti < seq_offsets[i + 1]; ++ti) {
            const auto t = static_cast<std::size_t>(ti);
            if (!tok_valid(valid, t)) continue;
            lr[t] = static_cast<double>(lp_old[t]) - static_cast<double>(lp_roll[t]);
            seq_sum[i] += lr[t];
            seq_k3[i] += k3_from_log_ratio(clamp20(lr[t]));
            seq_count[i]++;
            if (veto_on) {
                const double x =
                    st.veto_kind == VetoKind::ratio ? std::exp(lr[t]) : std::exp(static_cast<double>(lp_old[t]));
                if (x < st.veto_threshold) vetoed[i] = 1;
            }
        }
        if (seq_count[i] > 0) {
            seq_mean[i] = seq_sum[i] / static_cast<double>(seq_count[i]);
            seq_k3[i] /= static_cast<double>(seq_count[i]);
        }
    }

    // Ratio of token t (in sequence i) at a given aggregation level.
    auto level_ratio = [&](int level /*0 token, 1 sequence, 2 geometric*/, std::size_t t, std::size_t i) {
        switch (level) {
            case 1: return std::exp(clamp20(seq_sum[i]));
            case 2: return std::exp(clamp20(seq_mean[i]));
            default: return std::exp(clamp20(lr[t]));
        }
    };
    const int is_lv = st.is_level == IsLevel::sequence ? 1 : st.is_level == IsLevel::geometric ? 2 : 0;
    const int rs_lv = st.rs_level == RsLevel::sequence ? 1 : st.rs_level == RsLevel::geometric ? 2 : 0;
    const double U = st.is_upper, Lb = effective_is_lower(st);
    const double rsU = st.rs_upper, rsL = effective_rs_lower(st);

    CorrectionResult res;
    res.weights.assign(n, 0.0);
    res.keep.assign(n, 0);
    res.raw_weights.assign(n, 0.0);
    CorrectionStats& cs = res.stats;

    std::vector<double> w(n, 0.0);  // after bounds
    std::size_t n_low = 0, n_high = 0, n_masked = 0, n_rej = 0;
    std::size_t n_seq_rej = 0, n_seq_veto = 0;
    std::vector<std::uint8_t> seq_kept(S, 0);
    for (std::size_t i = 0; i < S; ++i) {
        if (seq_count[i] == 0) continue;
        cs.num_sequences++;
        bool any_rej = false;
        if (vetoed[i]) ++n_seq_veto;
        for (int ti = seq_offsets[i]; ti < seq_offsets[i + 1]; ++ti) {
            const auto t = static_cast<std::size_t>(ti);
            if (!tok_valid(valid, t)) continue;
            cs.num_valid_tokens++;
            const double raw = level_ratio(is_lv, t, i);
            res.raw_weights[t] = raw;
            bool keep = true;
            double wt = raw;
            if (st.is_level != IsLevel::off) {
                switch (st.is_mode) {
                    case IsMode::truncate:
                        if (raw > U) {
                            wt = U;
                            ++n_high;
                        }
                        break;
                    case IsMode::clip:
                        if (raw > U) {
                            wt = U;
                            ++n_high;
                        } else if (raw < Lb) {
                            wt = Lb;
                            ++n_low;
                        }
                        break;
                    case IsMode::mask:
                        if (raw > U || raw < Lb) {
                            keep = false;
                            ++n_masked;
                        }
                        break;
                }
            }
            bool rej = false;
            if (st.rs_level == RsLevel::seq_mean_k3) {
                rej = seq_k3[i] > rsU;
            } else if (st.rs_level != RsLevel::off) {
                const double q = level_ratio(rs_lv, t, i);
                rej = q < rsL || q > rsU;
            }
            if (rej) {
                ++n_rej;
                any_rej = true;
                keep = false;
            }
            if (vetoed[i]) keep = false;
            w[t] = wt;
            if (keep) {
                res.keep[t] = 1;
                cs.num_kept_tokens++;
                seq_kept[i] = 1;
            }
        }
        if (any_rej) ++n_seq_rej;
        if (seq_kept[i]) cs.num_kept_sequences++;
    }

    // ---- stats over kept valid tokens (after bounds, before batch normalisation) ----
    if (cs.num_kept_tokens > 0) {
        double s1 = 0, s2 = 0, mn = std::numeric_limits<double>::infinity(), mx = 0;
        for (std::size_t t = 0; t < n; ++t) {
            if (!res.keep[t]) continue;
            s1 += w[t];
            s2 += w[t] * w[t];
            mn = std::min(mn, w[t]);
            mx = std::max(mx, w[t]);
        }
        const double dk = static_cast<double>(cs.num_kept_tokens);
        cs.is_weight_mean = s1 / dk;
        cs.is_weight_min = mn;
        cs.is_weight_max = mx;
        // mean((w/m)^2) = mean(w^2) / m^2  =>  ess = m^2 / mean(w^2)
        const double m2 = s2 / dk;
        cs.ess = m2 > 0.0 ? (cs.is_weight_mean * cs.is_weight_mean) / m2 : 0.0;
    }
    if (cs.num_valid_tokens > 0) {
        const double dv = static_cast<double>(cs.num_valid_tokens);
        cs.truncated_low_fraction = static_cast<double>(n_low) / dv;
        cs.truncated_high_fraction = static_cast<double>(n_high) / dv;
        cs.masked_fraction = static_cast<double>(n_masked) / dv;
        cs.rejected_token_fraction = static_cast<double>(n_rej) / dv;
        cs.kept_token_fraction = static_cast<double>(cs.num_kept_tokens) / dv;
    }
    if (cs.num_sequences > 0) {
        const double ds = static_cast<double>(cs.num_sequences);
        cs.rejected_seq_fraction = static_cast<double>(n_seq_rej) / ds;
        cs.vetoed_seq_fraction = static_cast<double>(n_seq_veto) / ds;
    }

    // ---- batch normalisation and final weights ----
    double factor = 1.0;
    if (st.is_level != IsLevel::off && st.batch_normalize && cs.num_kept_tokens > 0) {
        if (st.is_level == IsLevel::token) {
            factor = cs.is_weight_mean;
        } else {
            // per-sequence weight (identical on all of a sequence's tokens): mean over kept sequences
            double s = 0;
            for (std::size_t i = 0; i < S; ++i) {
                if (!seq_kept[i]) continue;
                for (int ti = seq_offsets[i]; ti < seq_offsets[i + 1]; ++ti) {
                    const auto t = static_cast<std::size_t>(ti);
                    if (res.keep[t]) {
                        s += w[t];
                        break;
                    }
                }
            }
            factor = s / static_cast<double>(cs.num_kept_sequences);
        }
        if (!(factor > 0.0) || !std::isfinite(factor)) factor = 1.0;
    }
    cs.batch_norm_factor = factor;
    for (std::size_t t = 0; t < n; ++t) {
        if (!res.keep[t]) continue;
        res.weights[t] = st.is_level == IsLevel::off ? 1.0 : w[t] / factor;
    }
    return res;
}

}  // namespace mlk
