#include "core/metrics/mismatch.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace mlk {

namespace {

inline bool tok_valid(std::span<const std::uint8_t> valid, std::size_t t) { return valid.empty() || valid[t] != 0; }

}  // namespace

double k3_from_log_ratio(double r) {
    if (r == 0.0) return 0.0;
    const double a = std::fabs(r);
    if (a < 1e-4) {
        // exp(r) - 1 - r = r^2/2 * (1 + r/3 * (1 + r/4 * (1 + r/5))) + O(r^6)
        return 0.5 * r * r * (1.0 + r / 3.0 * (1.0 + r / 4.0 * (1.0 + r / 5.0)));
    }
    return std::expm1(r) - r;
}

void check_token_layout(std::size_t n_tokens, std::span<const std::uint8_t> valid, std::span<const int> seq_offsets,
                        const char* who) {
    const std::string w = who;
    if (seq_offsets.empty()) throw std::invalid_argument(w + ": seq_offsets must have S+1 >= 1 entries");
    if (seq_offsets.front() != 0) throw std::invalid_argument(w + ": seq_offsets[0] must be 0");
    for (std::size_t i = 1; i < seq_offsets.size(); ++i)
        if (seq_offsets[i] < seq_offsets[i - 1])
            throw std::invalid_argument(w + ": seq_offsets must be non-decreasing");
    if (static_cast<std::size_t>(seq_offsets.back()) != n_tokens)
        throw std::invalid_argument(w + ": seq_offsets.back() (" + std::to_string(seq_offsets.back()) +
                                    ") != number of tokens (" + std::to_string(n_tokens) + ")");
    if (!valid.empty() && valid.size() != n_tokens)
        throw std::invalid_argument(w + ": valid mask has " + std::to_string(valid.size()) + " entries, expected " +
                                    std::to_string(n_tokens));
}

int prob_bucket(float lp_roll) {
    const double p = std::exp(static_cast<double>(lp_roll));
    for (int b = 0; b < kProbBuckets - 1; ++b)
        if (p >= kProbBucketEdges[b]) return b;
    return kProbBuckets - 1;
}

std::vector<double> f_curve_grid(int points) {
    if (points < 2) throw std::invalid_argument("f_curve_grid: points must be >= 2");
    std::vector<double> g(static_cast<std::size_t>(points));
    const double lo = std::log(1e-4), hi = std::log(1e4 - 1.0);
    for (int i = 0; i < points; ++i) {
        const double u = static_cast<double>(i) / static_cast<double>(points - 1);
        g[static_cast<std::size_t>(i)] = 1.0 + std::exp(lo + (hi - lo) * u);
    }
    g.front() = 1.0001;
    g.back() = 1e4;
    return g;
}

namespace {

// Sorted |r| of the valid tokens, then F(t) = (#|r| > ln t) / n by binary search.
std::vector<double> sorted_abs_r(std::span<const float> lp_train, std::span<const float> lp_roll,
                                 std::span<const std::uint8_t> valid) {
    std::vector<double> a;
    a.reserve(lp_train.size());
    for (std::size_t t = 0; t < lp_train.size(); ++t)
        if (tok_valid(valid, t))
            a.push_back(std::fabs(static_cast<double>(lp_train[t]) - static_cast<double>(lp_roll[t])));
    std::sort(a.begin(), a.end());
    return a;
}

double fraction_above(const std::vector<double>& sorted_abs, double t) {
    if (sorted_abs.empty()) return 0.0;
    const double thr = std::log(t);
    const auto it = std::upper_bound(sorted_abs.begin(), sorted_abs.end(), thr);
    return static_cast<double>(sorted_abs.end() - it) / static_cast<double>(sorted_abs.size());
}

}  // namespace

std::vector<double> extreme_token_fraction(std::span<const float> lp_train, std::span<const float> lp_roll,
                                           std::span<const std::uint8_t> valid, std::span<const double> thresholds) {
    if (lp_train.size() != lp_roll.size())
        throw std::invalid_argument("extreme_token_fraction: lp_train and lp_roll sizes differ");
    if (!valid.empty() && valid.size() != lp_train.size())
        throw std::invalid_argument("extreme_token_fraction: valid mask size differs");
    const auto a = sorted_abs_r(lp_train, lp_roll, valid);
    std::vector<double> out;
    out.reserve(thresholds.size());
    for (double t : thresholds) {
        if (!(t >= 1.0)) throw std::invalid_argument("extreme_token_fraction: thresholds must be >= 1");
        out.push_back(fraction_above(a, t));
    }
    return out;
}

MismatchMetrics mismatch_metrics(std::span<const float> lp_train, std::span<const float> lp_roll,
                                 std::span<const std::uint8_t> valid, std::span<const int> seq_offsets,
                                 const MetricsOptions& options) {
    const std::size_t n = lp_train.size();
    if (lp_roll.size() != n) throw std::invalid_argument("mismatch_metrics: lp_train and lp_roll sizes differ");
    check_token_layout(n, valid, seq_offsets, "mismatch_metrics");

    MismatchMetrics m;
    m.f_grid = f_curve_grid(options.f_curve_points);
    m.f_curve.assign(m.f_grid.size(), 0.0);

    // ---- token level ----
    double sum_k3 = 0, sum_r = 0, sum_abs = 0, max_abs = 0, sum_chi = 0, sum_tv = 0;
    double bucket_abs[kProbBuckets] = {}, bucket_k3[kProbBuckets] = {};
    std::size_t nv = 0;
    for (std::size_t t = 0; t < n; ++t) {
        if (!tok_valid(valid, t)) continue;
        const double r = static_cast<double>(lp_train[t]) - static_cast<double>(lp_roll[t]);
        const double k3 = k3_from_log_ratio(r);
        ++nv;
        sum_k3 += k3;
        sum_r += r;
        sum_abs += std::fabs(r);
        max_abs = std::max(max_abs, std::fabs(r));
        sum_chi += std::expm1(2.0 * clamp20(r));
        sum_tv += 0.5 * std::fabs(std::expm1(clamp20(r)));
        const int b = prob_bucket(lp_roll[t]);
        m.buckets[b].count++;
        bucket_abs[b] += std::fabs(r);
        bucket_k3[b] += k3;
    }
    m.num_valid_tokens = nv;
    if (nv > 0) {
        const double dn = static_cast<double>(nv);
        m.k3_kl = sum_k3 / dn;
        m.kl = -sum_r / dn;
        m.logp_abs_diff_mean = sum_abs / dn;
        m.logp_abs_diff_max = max_abs;
        m.chi2_token = sum_chi / dn;
        m.tv_token = sum_tv / dn;
        for (int b = 0; b < kProbBuckets; ++b) {
            ProbBucket& pb = m.buckets[b];
            pb.frac = static_cast<double>(pb.count) / dn;
            if (pb.count > 0) pb.abs_diff_mean = bucket_abs[b] / static_cast<double>(pb.count);
            if (sum_k3 > 0) pb.k3_share = bucket_k3[b] / sum_k3;
        }
        const auto a = sorted_abs_r(lp_train, lp_roll, valid);
        m.f_1_1 = fraction_above(a, kFixedFThresholds[0]);
        m.f_1_5 = fraction_above(a, kFixedFThresholds[1]);
        m.f_2 = fraction_above(a, kFixedFThresholds[2]);
        m.f_5 = fraction_above(a, kFixedFThresholds[3]);
        m.f_10 = fraction_above(a, kFixedFThresholds[4]);
        for (std::size_t i = 0; i < m.f_grid.size(); ++i) m.f_curve[i] = fraction_above(a, m.f_grid[i]);
    }

    // ---- sequence level ----
    const std::size_t S = seq_offsets.size() - 1;
    double s_chi_sum = 0, s_chi_geo = 0, s_ppl_tr = 0, s_ppl_ro = 0, s_lppl_tr = 0, s_lppl_ro = 0;
    double s_diff = 0, s_absdiff = 0, s_ratio = 0, s_tv = 0;
    double dmax = -std::numeric_limits<double>::infinity();
    double dmin = std::numeric_limits<double>::infinity();
    std::size_t ns = 0;
    for (std::size_t i = 0; i < S; ++i) {
        double sr = 0, str = 0, sro = 0;
        std::size_t c = 0;
        for (int t = seq_offsets[i]; t < seq_offsets[i + 1]; ++t) {
            const auto tt = static_cast<std::size_t>(t);
            if (!tok_valid(valid, tt)) continue;
            const double a = lp_train[tt], b = lp_roll[tt];
            sr += a - b;
            str += a;
            sro += b;
            ++c;
        }
        if (c == 0) continue;  // skipped: no valid token
        ++ns;
        const double dc = static_cast<double>(c);
        const double mean_tr = str / dc, mean_ro = sro / dc;
        s_chi_sum += std::expm1(2.0 * clamp20(sr));
        s_chi_geo += std::expm1(2.0 * clamp20(sr / dc));
        s_tv += 0.5 * std::fabs(std::expm1(clamp20(sr)));
        s_ppl_tr += std::exp(-mean_tr);
        s_ppl_ro += std::exp(-mean_ro);
        s_lppl_tr += -mean_tr;
        s_lppl_ro += -mean_ro;
        const double d = mean_ro - mean_tr;
        s_diff += d;
        s_absdiff += std::fabs(d);
        s_ratio += std::exp(d);
        dmax = std::max(dmax, d);
        dmin = std::min(dmin, d);
    }
    m.num_sequences = ns;
    if (ns > 0) {
        const double ds = static_cast<double>(ns);
        m.chi2_seq_sum = s_chi_sum / ds;
        m.chi2_seq_geometric = s_chi_geo / ds;
        m.tv_seq = s_tv / ds;
        m.chi2_seq = options.chi2_seq_kind == Chi2SeqKind::sum ? m.chi2_seq_sum : m.chi2_seq_geometric;
        m.training_ppl = s_ppl_tr / ds;
        m.rollout_ppl = s_ppl_ro / ds;
        m.training_log_ppl = s_lppl_tr / ds;
        m.rollout_log_ppl = s_lppl_ro / ds;
        m.log_ppl_diff = s_diff / ds;
        m.log_ppl_abs_diff = s_absdiff / ds;
        m.log_ppl_diff_max = dmax;
        m.log_ppl_diff_min = dmin;
        m.ppl_ratio = s_ratio / ds;
    }
    return m;
}

RouterDiff router_diff(std::span<const std::int32_t> rollout_ids, std::span<const std::int32_t> train_ids,
                       std::span<const std::uint8_t> valid_token_mask, std::size_t num_tokens, int layers, int k,
                       std::span<const int> seq_offsets) {
    if (layers < 0 || k < 0) throw std::invalid_argument("router_diff: layers and k must be >= 0");
    const std::size_t L = static_cast<std::size_t>(layers), K = static_cast<std::size_t>(k);
    const std::size_t per_token = L * K;
    if (rollout_ids.size() != num_tokens * per_token || train_ids.size() != num_tokens * per_token)
        throw std::invalid_argument("router_diff: ids must have num_tokens * layers * k entries");
    check_token_layout(num_tokens, valid_token_mask, seq_offsets, "router_diff");

    RouterDiff rd;
    rd.histogram.assign(K + 1, 0);
    rd.token_histogram.assign(per_token + 1, 0);
    rd.per_token_sum.assign(num_tokens, 0);
    const std::size_t S = seq_offsets.size() - 1;
    rd.per_sequence_mean.assign(S, 0.0);

    // d for every (token, layer); statistics over valid tokens only.
    std::uint64_t routers_diff = 0, tokens_diff = 0, sum_d_valid = 0;
    for (std::size_t t = 0; t < num_tokens; ++t) {
        const bool v = tok_valid(valid_token_mask, t);
        int sum_d = 0;
        for (std::size_t l = 0; l < L; ++l) {
            const std::int32_t* ro = rollout_ids.data() + (t * L + l) * K;
            const std::int32_t* tr = train_ids.data() + (t * L + l) * K;
            int d = 0;
            for (std::size_t a = 0; a < K; ++a) {
                bool found = false;
                for (std::size_t b = 0; b < K && !found; ++b) found = ro[a] == tr[b];
                if (!found) ++d;
            }
            sum_d += d;
            if (v) {
                rd.histogram[static_cast<std::size_t>(d)]++;
                if (d > 0) ++routers_diff;
            }
        }
        rd.per_token_sum[t] = sum_d;
        if (v) {
            rd.num_valid_tokens++;
            rd.token_histogram[static_cast<std::size_t>(sum_d)]++;
            if (sum_d > 0) ++tokens_diff;
            sum_d_valid += static_cast<std::uint64_t>(sum_d);
        }
    }
    if (rd.num_valid_tokens > 0) {
        const double nv = static_cast<double>(rd.num_valid_tokens);
        rd.router_level = L > 0 ? static_cast<double>(routers_diff) / (nv * static_cast<double>(L)) : 0.0;
        rd.token_level = static_cast<double>(tokens_diff) / nv;
        rd.mean_diff_per_token = static_cast<double>(sum_d_valid) / nv;
    }
    double seq_sum = 0;
    for (std::size_t i = 0; i < S; ++i) {
        std::uint64_t s = 0, c = 0;
        for (int t = seq_offsets[i]; t < seq_offsets[i + 1]; ++t) {
            const auto tt = static_cast<std::size_t>(t);
            if (!tok_valid(valid_token_mask, tt)) continue;
            s += static_cast<std::uint64_t>(rd.per_token_sum[tt]);
            ++c;
        }
        if (c == 0) continue;
        rd.per_sequence_mean[i] = static_cast<double>(s) / static_cast<double>(c);
        seq_sum += rd.per_sequence_mean[i];
        rd.num_sequences++;
    }
    if (rd.num_sequences > 0) rd.sequence_level = seq_sum / static_cast<double>(rd.num_sequences);
    return rd;
}

}  // namespace mlk
