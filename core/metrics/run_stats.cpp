#include "core/metrics/run_stats.h"

#include <algorithm>
#include <cmath>

#include "core/config/number_text.h"

namespace mlk {

RunStats run_stats(std::span<const MetricPoint> series, Better better, int last_n) {
    RunStats st;
    st.count = static_cast<int>(series.size());
    for (const auto& [step, v] : series) {
        if (std::isnan(v)) {
            ++st.nan_count;
            continue;
        }
        if (std::isinf(v)) {
            ++st.inf_count;
            continue;
        }
        if (better == Better::none) continue;
        const bool improves = std::isnan(st.best) || (better == Better::higher ? v > st.best : v < st.best);
        if (improves) st.best = v, st.best_step = step;
    }
    if (!series.empty()) st.final_value = series.back().second, st.final_step = series.back().first;
    st.last_n = std::clamp(last_n, 0, st.count);
    double sum = 0;
    for (size_t i = series.size() - static_cast<size_t>(st.last_n); i < series.size(); ++i)
        if (std::isfinite(series[i].second)) sum += series[i].second, ++st.last_n_finite;
    if (st.last_n_finite > 0) st.mean_last = sum / st.last_n_finite;
    return st;
}

RunStats run_stats(std::span<const MetricPoint> series, std::string_view metric, int last_n) {
    const MetricInfo* m = find_metric(metric);
    return run_stats(series, m ? m->better : Better::none, last_n);
}

std::string value_text(double v, int significant) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return general_text(v, significant);
}

Spread spread(std::span<const double> values) {
    Spread s;
    double sum = 0;
    for (double v : values)
        if (std::isfinite(v)) {
            sum += v;
            ++s.n;
        }
    if (s.n == 0) return s;
    s.mean = sum / s.n;
    if (s.n < 2) return s;
    double sq = 0;
    for (double v : values)
        if (std::isfinite(v)) sq += (v - s.mean) * (v - s.mean);
    s.std = std::sqrt(sq / (s.n - 1));
    return s;
}

}  // namespace mlk
