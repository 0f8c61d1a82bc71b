// Statistics of one metric over a run, computed one way for every reader: the
// CLI's `show`, the run browser, the metric summary and reports.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>

#include "core/metrics/catalogue.h"

namespace mlk {

// (step, value) in ascending step order, as Store::metric_series returns it.
using MetricPoint = std::pair<int64_t, double>;

struct RunStats {
    static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    int count = 0;      // steps with a value (finite or not)
    int nan_count = 0;  // of which NaN
    int inf_count = 0;  // of which +-Inf
    // The value at the last step, whatever it is (NaN and Inf included).
    double final_value = kNone;
    int64_t final_step = -1;
    // The best finite value by the metric's direction (max for higher, min for
    // lower; the first step reaching it); none for Better::none or when no
    // value is finite.
    double best = kNone;
    int64_t best_step = -1;
    // Mean of the finite values among the last `last_n` steps.
    double mean_last = kNone;
    int last_n = 0;         // steps in that window (min(last_n, count))
    int last_n_finite = 0;  // finite values in it
    int nonfinite() const { return nan_count + inf_count; }
};

RunStats run_stats(std::span<const MetricPoint> series, Better better, int last_n = 10);
// Direction from the catalogue; metrics it does not know have Better::none.
RunStats run_stats(std::span<const MetricPoint> series, std::string_view metric, int last_n = 10);

// Mean and sample standard deviation (n - 1) of the finite values among
// `values`, e.g. one statistic of several seeds' runs; NaN where undefined
// (no finite value; the deviation of a single one).
struct Spread {
    int n = 0;  // finite values
    double mean = RunStats::kNone, std = RunStats::kNone;
};
Spread spread(std::span<const double> values);

// A metric value as text, one way everywhere: "NaN", "inf", "-inf", or
// `significant` significant digits (%g).
std::string value_text(double v, int significant = 5);

}  // namespace mlk
