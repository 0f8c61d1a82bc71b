#include "core/metrics/verdicts.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace mlk {

namespace {

std::string steps_text(int64_t a, int64_t b) { return std::to_string(a) + "\u2013" + std::to_string(b); }

}  // namespace

Verdict detect_collapse(std::span<const MetricPoint> r) {
    Verdict d;
    constexpr size_t W = kCollapseWindow;
    const std::string window = std::to_string(W) + "-step reward mean";
    if (r.size() < W) {
        d.detail =
            std::to_string(r.size()) + " reward value(s), the rule needs at least " + std::to_string(W) + " steps";
        return d;
    }
    d.evaluated = true;
    double best = -INFINITY, last_mean = NAN;
    int64_t best_end = -1;
    for (size_t end = W - 1; end < r.size(); ++end) {
        double sum = 0;
        int n = 0;
        for (size_t i = end + 1 - W; i <= end; ++i)
            if (std::isfinite(r[i].second)) sum += r[i].second, ++n;
        if (n < kCollapseMinFinite) continue;
        const double m = sum / n;
        last_mean = m;
        if (m > best) best = m, best_end = r[end].first;
        if (best > kCollapseMinBest && m < kCollapseDrop * best) {
            d.detected = true;
            d.step = r[end].first;
            d.detail = "at step " + std::to_string(d.step) + " the " + window + " " + value_text(m) + " fell below " +
                       value_text(100 * kCollapseDrop) + "% of its best " + value_text(best) + " (" +
                       std::to_string(W) + " steps ending at step " + std::to_string(best_end) + ")";
            return d;
        }
    }
    if (best == -INFINITY) {
        d.evaluated = false;
        d.detail = "no " + std::to_string(W) + "-step window with at least " + std::to_string(kCollapseMinFinite) +
                   " finite reward values";
    } else if (best <= kCollapseMinBest) {
        d.detail =
            "the " + window + " never exceeded " + value_text(kCollapseMinBest) + " (best " + value_text(best) + ")";
    } else {
        d.detail = "last " + window + " " + value_text(last_mean) + ", best " + value_text(best) + " (ending at step " +
                   std::to_string(best_end) + ")";
    }
    return d;
}

Verdict detect_divergence(std::span<const MetricPoint> g, std::span<const MetricPoint> k) {
    Verdict d;
    if (g.empty() && k.empty()) {
        d.detail = "neither grad_norm nor k3_kl is stored";
        return d;
    }
    d.evaluated = true;
    // 1) a non-finite grad_norm or k3_kl
    int64_t first = INT64_MAX;
    std::string what;
    for (const auto& [s, v] : g)
        if (!std::isfinite(v) && s < first) first = s, what = "grad_norm is " + value_text(v);
    for (const auto& [s, v] : k)
        if (!std::isfinite(v) && s < first) first = s, what = "k3_kl is " + value_text(v);
    // 2) k3_kl above kDivergenceK3Factor x its early median
    const std::string factor = value_text(kDivergenceK3Factor) + "x";
    std::string ratio_note, ratio_what;
    int64_t ratio_step = INT64_MAX;
    if (!k.empty()) {
        const size_t early = std::min<size_t>(kDivergenceEarlySteps, std::max<size_t>(1, (k.size() + 1) / 2));
        std::vector<double> e;
        for (size_t i = 0; i < early; ++i)
            if (std::isfinite(k[i].second)) e.push_back(k[i].second);
        if (e.empty()) {
            ratio_note = "k3_kl ratio test skipped (no finite early value)";
        } else {
            std::sort(e.begin(), e.end());
            const size_t h = e.size() / 2;
            const double med = e.size() % 2 ? e[h] : 0.5 * (e[h - 1] + e[h]);
            if (med <= 0) {
                ratio_note = "k3_kl ratio test skipped (early median " + value_text(med) + ")";
            } else if (early >= k.size()) {
                ratio_note = "k3_kl ratio test needs steps after the early window";
            } else {
                for (size_t i = early; i < k.size(); ++i)
                    if (std::isfinite(k[i].second) && k[i].second > kDivergenceK3Factor * med) {
                        ratio_step = k[i].first;
                        ratio_what = "k3_kl " + value_text(k[i].second) + " is " + value_text(k[i].second / med, 3) +
                                     "x its early median " + value_text(med) + " (steps " +
                                     steps_text(k[0].first, k[early - 1].first) + ")";
                        break;
                    }
                if (ratio_step == INT64_MAX)
                    ratio_note = "k3_kl stayed within " + factor + " its early median " + value_text(med);
            }
        }
    }
    if (ratio_step < first) first = ratio_step, what = ratio_what;
    if (first != INT64_MAX) {
        d.detected = true;
        d.step = first;
        d.detail = "at step " + std::to_string(first) + " " + what;
    } else {
        d.detail = "grad_norm and k3_kl finite throughout";
        if (!ratio_note.empty()) d.detail += "; " + ratio_note;
    }
    return d;
}

std::string verdict_text(const Verdict& v) {
    return (!v.evaluated ? "not evaluated: " : v.detected ? "yes: " : "no: ") + v.detail;
}

const std::string& collapse_rule_text() {
    static const std::string t =
        "Collapse: the mean reward over " + std::to_string(kCollapseWindow) + " steps falls below " +
        value_text(100 * kCollapseDrop) + "% of its best such mean after that best exceeded " +
        value_text(kCollapseMinBest) + " (windows with fewer than " + std::to_string(kCollapseMinFinite) +
        " finite values skipped; needs at least " + std::to_string(kCollapseWindow) + " steps).";
    return t;
}

const std::string& divergence_rule_text() {
    static const std::string t = "Divergence: grad_norm or k3_kl NaN/infinite, or k3_kl above " +
                                 value_text(kDivergenceK3Factor) + "\u00d7 its early median (median of the first min(" +
                                 std::to_string(kDivergenceEarlySteps) +
                                 ", n/2) steps, checked on later steps; skipped when that median is 0).";
    return t;
}

}  // namespace mlk
