#include "core/metrics/verdicts.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "core/config/number_text.h"

namespace mlk {

namespace {

struct ThresholdField {
    VerdictThresholdInfo info;
    double VerdictThresholds::*real = nullptr;
    int VerdictThresholds::*whole = nullptr;
};

const std::vector<ThresholdField>& threshold_fields() {
    using T = VerdictThresholds;
    static const std::vector<ThresholdField> f = {
        {{"window", "steps per window mean (every rule reads window means)", 2, 1000, true}, nullptr, &T::window},
        {{"min_finite", "finite values a window needs to count", 1, 1000, true}, nullptr, &T::min_finite},
        {{"collapse_min_best", "the best reward window mean must exceed this before a fall counts", -1e9, 1e9, false},
         &T::collapse_min_best},
        {{"collapse_drop", "collapse: the reward window mean below this share of its best", 0, 1, false},
         &T::collapse_drop},
        {{"early_steps", "at most this many first steps make a metric's early level", 1, 1000, true},
         nullptr,
         &T::early_steps},
        {{"blowup_factor", "blow-up: k3_kl or F@2 window mean above this multiple of its early level", 1, 1e9, false},
         &T::blowup_factor},
        {{"f2_warning", "early warning: F@2 window mean above this (the R3 paper's 0.1)", 0, 1, false}, &T::f2_warning},
        {{"grad_fall", "early warning: grad_norm window mean below this share of its highest", 0, 1, false},
         &T::grad_fall},
    };
    return f;
}

const ThresholdField& field(const std::string& key) {
    for (const auto& f : threshold_fields())
        if (key == f.info.key) return f;
    std::string keys;
    for (const auto& f : threshold_fields()) keys += (keys.empty() ? "" : ", ") + std::string(f.info.key);
    throw std::invalid_argument("verdict threshold '" + key + "' is unknown; allowed: " + keys);
}

// Trailing window means: (step at the window's end, mean), windows with too
// few finite values skipped.
// Median of the finite values among the first min(early_steps, ceil(n/2)) points.
double early_level(std::span<const MetricPoint> s, const VerdictThresholds& t, size_t& early) {
    early = std::min<size_t>((size_t)t.early_steps, std::max<size_t>(1, (s.size() + 1) / 2));
    std::vector<double> e;
    for (size_t i = 0; i < early && i < s.size(); ++i)
        if (std::isfinite(s[i].second)) e.push_back(s[i].second);
    if (e.empty()) return NAN;
    std::sort(e.begin(), e.end());
    const size_t h = e.size() / 2;
    return e.size() % 2 ? e[h] : 0.5 * (e[h - 1] + e[h]);
}

std::string window_text(const VerdictThresholds& t) { return std::to_string(t.window) + "-step mean"; }

Verdict too_short(size_t n, const VerdictThresholds& t, const char* what) {
    Verdict d;
    d.detail = std::to_string(n) + " " + what + " value(s); the rule needs a " + window_text(t) + " with at least " +
               std::to_string(t.min_finite) + " finite values";
    return d;
}

}  // namespace

std::vector<MetricPoint> window_means(std::span<const MetricPoint> s, const VerdictThresholds& t) {
    // Each window summed afresh (not a running sum): a window's mean must not
    // depend on the rounding history of the steps before it.
    std::vector<MetricPoint> out;
    const size_t w = (size_t)t.window;
    for (size_t end = w - 1; end < s.size(); ++end) {
        double sum = 0;
        int n = 0;
        for (size_t i = end + 1 - w; i <= end; ++i)
            if (std::isfinite(s[i].second)) sum += s[i].second, ++n;
        if (n >= t.min_finite) out.push_back({s[end].first, sum / n});
    }
    return out;
}

const std::vector<VerdictThresholdInfo>& verdict_threshold_infos() {
    static const std::vector<VerdictThresholdInfo> v = [] {
        std::vector<VerdictThresholdInfo> out;
        for (const auto& f : threshold_fields()) out.push_back(f.info);
        return out;
    }();
    return v;
}

double verdict_threshold(const VerdictThresholds& t, const std::string& key) {
    const ThresholdField& f = field(key);
    return f.real ? t.*f.real : (double)(t.*f.whole);
}

void set_verdict_threshold(VerdictThresholds& t, const std::string& key, const std::string& value) {
    const ThresholdField& f = field(key);
    const std::string range = "a" + std::string(f.info.integer ? "n integer" : " number") + " from " +
                              number_text(f.info.min) + " to " + number_text(f.info.max);
    char* end = nullptr;
    const double parsed = value.empty() ? NAN : c_strtod(value.c_str(), &end);
    const std::optional<double> v = end && *end == '\0' ? std::optional<double>(parsed) : std::nullopt;
    if (!v || !std::isfinite(*v) || *v < f.info.min || *v > f.info.max || (f.info.integer && *v != std::floor(*v)))
        throw std::invalid_argument("verdict threshold '" + key + "': '" + value +
                                    "' is not allowed; allowed: " + range);
    VerdictThresholds next = t;
    if (f.real) next.*f.real = *v;
    else next.*f.whole = (int)*v;
    if (next.min_finite > next.window)
        throw std::invalid_argument("verdict threshold '" + key + "': min_finite (" + std::to_string(next.min_finite) +
                                    ") must not exceed window (" + std::to_string(next.window) + ")");
    t = next;
}

void set_verdict_option(VerdictThresholds& t, const std::string& key_eq_value) {
    const size_t eq = key_eq_value.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("--verdict '" + key_eq_value + "': expected key=value");
    set_verdict_threshold(t, key_eq_value.substr(0, eq), key_eq_value.substr(eq + 1));
}

nlohmann::json verdict_thresholds_json(const VerdictThresholds& t) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& f : threshold_fields()) {
        if (f.real) j[f.info.key] = t.*f.real;
        else j[f.info.key] = t.*f.whole;
    }
    return j;
}

VerdictThresholds verdict_thresholds_from_json(const nlohmann::json& j) {
    if (!j.is_object()) throw std::invalid_argument("verdict thresholds: expected a JSON object");
    VerdictThresholds t;
    for (const auto& [k, v] : j.items()) {
        if (!v.is_number()) throw std::invalid_argument("verdict threshold '" + k + "': expected a number");
        set_verdict_threshold(t, k, number_text(v.get<double>()));
    }
    return t;
}

Verdict detect_collapse(std::span<const MetricPoint> r, const VerdictThresholds& t, int* recovered_dips) {
    if (recovered_dips) *recovered_dips = 0;
    const std::vector<MetricPoint> m = window_means(r, t);
    if (m.empty()) return too_short(r.size(), t, "reward");
    Verdict d;
    d.evaluated = true;
    const std::string window = "reward " + window_text(t);
    double best = -INFINITY;
    int64_t best_end = -1, fall_start = -1, last_recovery = -1;
    double best_at_fall = NAN;
    int dips = 0;
    for (const auto& [step, v] : m) {
        if (v > best) best = v, best_end = step;
        const bool below = best > t.collapse_min_best && v < t.collapse_drop * best;
        if (below && fall_start < 0) fall_start = step, best_at_fall = best;
        if (!below && fall_start >= 0) fall_start = -1, last_recovery = step, ++dips;
    }
    if (recovered_dips) *recovered_dips = dips;
    const double last = m.back().second;
    const std::string dip_text = dips ? "; " + std::to_string(dips) + " earlier fall(s) recovered (last at step " +
                                            std::to_string(last_recovery) + ")"
                                      : "";
    if (fall_start >= 0) {
        d.detected = true;
        d.step = fall_start;
        d.detail = "from step " + std::to_string(fall_start) + " the " + window + " stayed below " +
                   value_text(100 * t.collapse_drop) + "% of its best " + value_text(best_at_fall) +
                   " and did not recover (last " + value_text(last) + " at step " + std::to_string(m.back().first) +
                   ")" + dip_text;
    } else if (best <= t.collapse_min_best) {
        d.detail =
            "the " + window + " never exceeded " + value_text(t.collapse_min_best) + " (best " + value_text(best) + ")";
    } else {
        d.detail = "last " + window + " " + value_text(last) + ", best " + value_text(best) + " (ending at step " +
                   std::to_string(best_end) + ")" + dip_text;
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
    int64_t first = INT64_MAX;
    std::string what;
    for (const auto& [s, v] : g)
        if (!std::isfinite(v) && s < first) first = s, what = "grad_norm is " + value_text(v);
    for (const auto& [s, v] : k)
        if (!std::isfinite(v) && s < first) first = s, what = "k3_kl is " + value_text(v);
    if (first != INT64_MAX) {
        d.detected = true;
        d.step = first;
        d.detail = "at step " + std::to_string(first) + " " + what;
    } else {
        d.detail = "grad_norm and k3_kl finite throughout";
    }
    return d;
}

Verdict detect_blowup(std::span<const MetricPoint> s, const std::string& name, const VerdictThresholds& t) {
    Verdict d;
    size_t early = 0;
    const double level = early_level(s, t, early);
    if (s.size() <= early) {
        d.detail = name + ": " + std::to_string(s.size()) + " value(s), the rule needs steps after the early " +
                   std::to_string(early);
        return d;
    }
    if (!std::isfinite(level) || level <= 0) {
        d.detail = name + " early level " + value_text(level) + " (steps " + std::to_string(s[0].first) + "\u2013" +
                   std::to_string(s[early - 1].first) + "): no ratio to rise by";
        return d;
    }
    const std::vector<MetricPoint> m = window_means(s, t);
    if (m.empty()) return too_short(s.size(), t, name.c_str());
    d.evaluated = true;
    const int64_t after = s[early - 1].first;
    double peak = -INFINITY;
    for (const auto& [step, v] : m) {
        if (step <= after) continue;
        peak = std::max(peak, v);
        if (v > t.blowup_factor * level) {
            d.detected = true;
            d.step = step;
            d.detail = "at step " + std::to_string(step) + " the " + name + " " + window_text(t) + " " + value_text(v) +
                       " is " + value_text(v / level, 3) + "x its early level " + value_text(level);
            return d;
        }
    }
    d.detail = name + " stayed within " + value_text(t.blowup_factor) + "x its early level " + value_text(level) +
               (std::isfinite(peak) ? " (highest " + window_text(t) + " " + value_text(peak) + ")" : "");
    return d;
}

Verdict detect_f2_warning(std::span<const MetricPoint> f, const VerdictThresholds& t) {
    const std::vector<MetricPoint> m = window_means(f, t);
    if (m.empty()) return too_short(f.size(), t, "F@2");
    Verdict d;
    d.evaluated = true;
    double peak = -INFINITY;
    for (const auto& [step, v] : m) {
        peak = std::max(peak, v);
        if (v > t.f2_warning) {
            d.detected = true;
            d.step = step;
            d.detail = "at step " + std::to_string(step) + " the F@2 " + window_text(t) + " " + value_text(v) +
                       " rose above " + value_text(t.f2_warning);
            return d;
        }
    }
    d.detail = "the F@2 " + window_text(t) + " stayed at or below " + value_text(t.f2_warning) + " (highest " +
               value_text(peak) + ")";
    return d;
}

Verdict detect_grad_fall(std::span<const MetricPoint> g, const VerdictThresholds& t) {
    const std::vector<MetricPoint> m = window_means(g, t);
    if (m.empty()) return too_short(g.size(), t, "grad_norm");
    Verdict d;
    d.evaluated = true;
    double peak = -INFINITY;
    int64_t peak_step = -1;
    for (const auto& [step, v] : m) {
        if (v > peak) peak = v, peak_step = step;
        if (peak > 0 && v < t.grad_fall * peak) {
            d.detected = true;
            d.step = step;
            d.detail = "at step " + std::to_string(step) + " the grad_norm " + window_text(t) + " " + value_text(v) +
                       " fell below " + value_text(100 * t.grad_fall) + "% of its highest " + value_text(peak) +
                       " (step " + std::to_string(peak_step) + ")";
            return d;
        }
    }
    d.detail = "the grad_norm " + window_text(t) + " stayed above " + value_text(100 * t.grad_fall) +
               "% of its highest " + value_text(peak);
    return d;
}

RunVerdicts judge_run(const RunSeries& s, const VerdictThresholds& t, bool diverged_status) {
    RunVerdicts v;
    v.collapse = detect_collapse(s.reward_mean, t, &v.recovered_dips);
    v.divergence = detect_divergence(s.grad_norm, s.k3_kl);
    if (diverged_status && !v.divergence.detected) {
        int64_t last = -1;
        for (const auto* series : {&s.reward_mean, &s.grad_norm, &s.k3_kl})
            if (!series->empty()) last = std::max(last, series->back().first);
        v.divergence.evaluated = v.divergence.detected = true;
        v.divergence.step = last;
        v.divergence.detail = "the run stopped as diverged after step " + std::to_string(last);
    }
    // The first of the two metrics to blow up is the run's blow-up.
    const Verdict k = detect_blowup(s.k3_kl, "k3_kl", t), f = detect_blowup(s.f_at_2, "F@2", t);
    if (k.detected && (!f.detected || k.step <= f.step)) v.blowup = k;
    else if (f.detected) v.blowup = f;
    else {
        v.blowup.evaluated = k.evaluated || f.evaluated;
        v.blowup.detail = k.detail + "; " + f.detail;
    }
    v.f2_warning = detect_f2_warning(s.f_at_2, t);
    v.grad_fall = detect_grad_fall(s.grad_norm, t);
    return v;
}

std::string verdict_text(const Verdict& v) {
    return (!v.evaluated ? "not evaluated: " : v.detected ? "yes: " : "no: ") + v.detail;
}

std::string collapse_rule_text(const VerdictThresholds& t) {
    return "Collapse: the reward's " + window_text(t) + " falls below " + value_text(100 * t.collapse_drop) +
           "% of its best such mean (after that best exceeded " + value_text(t.collapse_min_best) +
           ") and is still below at the run's end; a fall that climbs back is a recovered dip (windows with fewer "
           "than " +
           std::to_string(t.min_finite) + " finite values skipped).";
}

std::string divergence_rule_text() { return "Divergence: grad_norm or k3_kl NaN or infinite."; }

std::string blowup_rule_text(const VerdictThresholds& t) {
    return "Mismatch blow-up: the " + window_text(t) + " of k3_kl or F@2 rises above " + value_text(t.blowup_factor) +
           "\u00d7 its early level (median of the first min(" + std::to_string(t.early_steps) +
           ", n/2) steps; skipped when that level is 0).";
}

std::string warning_rule_text(const VerdictThresholds& t) {
    return "Early warnings (R3 paper): the F@2 " + window_text(t) + " above " + value_text(t.f2_warning) +
           "; the grad_norm " + window_text(t) + " below " + value_text(100 * t.grad_fall) + "% of its highest.";
}

}  // namespace mlk
