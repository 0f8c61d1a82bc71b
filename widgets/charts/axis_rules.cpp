#include "widgets/charts/axis_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/metrics/catalogue.h"

namespace mlk {

namespace {

double quantileInPlace(std::vector<double>& values, double q) {
    const auto rank = static_cast<std::size_t>(std::lround(std::clamp(q, 0.0, 1.0) * double(values.size() - 1)));
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank), values.end());
    return values[rank];
}

std::vector<double> rangeSamples(std::span<const double> ys, bool logSpace) {
    std::vector<double> samples;
    samples.reserve(ys.size());
    for (const double y : ys)
        if (std::isfinite(y) && (!logSpace || y > 0)) samples.push_back(y);
    return samples;
}

}  // namespace

// --- Log axis: values <= 0 ----------------------------------------------------

double logFloorFor(double smallest) {
    if (!(smallest > 0) || !std::isfinite(smallest)) return kDefaultLogFloor;
    return std::pow(10.0, std::floor(std::log10(smallest)) - 1);
}

YRange wholeDecades(double lo, double hi) {
    YRange r{std::pow(10.0, std::floor(std::log10(lo) + 1e-9)), std::pow(10.0, std::ceil(std::log10(hi) - 1e-9))};
    if (r.hi <= r.lo) r.hi = r.lo * 10;
    return r;
}

double smallestPositive(std::span<const double> ys) {
    double best = kInfinity;
    for (const double y : ys)
        if (y > 0 && y < best) best = y;  // NaN compares false, +inf never wins
    return best;
}

std::size_t clampForLog(QList<QPointF>& points, double floor) {
    std::size_t raised = 0;
    for (QPointF& p : points) {
        if (p.y() < floor) {
            p.setY(floor);
            ++raised;
        }
    }
    return raised;
}

std::size_t countNonPositive(std::span<const double> ys) {
    return static_cast<std::size_t>(std::count_if(ys.begin(), ys.end(), [](double y) { return y <= 0; }));
}

// --- Robust y range -----------------------------------------------------------

std::optional<YRange> robustYRange(std::span<const double> ys, const RobustRangeOptions& options) {
    // Quantiles are ranks, so for a log axis they are taken on the values and
    // only the few results go through log10 (not every sample).
    std::vector<double> samples = rangeSamples(ys, options.logSpace);
    if (samples.empty()) return std::nullopt;
    const auto toAxis = [&](double v) { return options.logSpace ? std::log10(v) : v; };
    const auto fromAxis = [&](double v) { return options.logSpace ? std::pow(10.0, v) : v; };
    double lo = toAxis(quantileInPlace(samples, options.lowQuantile));
    double hi = toAxis(quantileInPlace(samples, options.highQuantile));
    const double span = hi - lo;
    // The extremes that are still inside the fences.
    const double lowFence = fromAxis(lo - options.tailFence * span),
                 highFence = fromAxis(hi + options.tailFence * span);
    double lowest = fromAxis(lo), highest = fromAxis(hi);
    for (const double v : samples) {
        if (v >= lowFence && v < lowest) lowest = v;
        if (v <= highFence && v > highest) highest = v;
    }
    lo = std::min(lo, toAxis(lowest));
    hi = std::max(hi, toAxis(highest));
    if (hi - lo <= 0) {
        // A flat line still needs a visible band around it.
        const double band = options.logSpace ? 1.0 : (lo != 0 ? std::abs(lo) * 0.2 : 2.0);
        lo -= band / 2;
        hi += band / 2;
    }
    const double pad = options.margin * (hi - lo);
    lo -= pad;
    hi += pad;
    return YRange{fromAxis(lo), fromAxis(hi)};
}

// --- Ticks and labels -----------------------------------------------------------

double niceTickInterval(double span, int targetTicks, double minStep) {
    if (!(span > 0) || !std::isfinite(span) || targetTicks < 1) return std::max(1.0, minStep);
    const double raw = span / targetTicks;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double normalised = raw / magnitude;
    const double step = normalised < 1.5 ? 1 : normalised < 3.5 ? 2 : normalised < 7.5 ? 5 : 10;
    return std::max(step * magnitude, minStep);
}

QString formatTick(double value, double interval) {
    if (value == 0 || !std::isfinite(value)) return QString::number(value);
    if (!(interval > 0) || !std::isfinite(interval)) return QString::number(value, 'g', 6);
    const double magnitude = std::max(std::abs(value), interval);
    const int intervalExponent = static_cast<int>(std::floor(std::log10(interval) + 1e-9));
    if (magnitude >= 1e6 || magnitude < 1e-4) {
        const int digits = static_cast<int>(std::floor(std::log10(magnitude))) - intervalExponent + 1;
        return QString::number(value, 'g', std::clamp(digits, 1, 15));
    }
    return QString::number(value, 'f', std::max(0, -intervalExponent));
}

QString formatLogTick(double value) { return QString::number(value, 'g', 6); }

std::vector<AxisTick> linearTicks(double lo, double hi, double interval) {
    std::vector<AxisTick> ticks;
    if (!(hi > lo) || !(interval > 0) || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
    const double slack = 1e-9 * (hi - lo);
    const double first = std::ceil((lo - slack) / interval);
    const double last = std::floor((hi + slack) / interval);
    if (last - first > 1000) return ticks;  // a degenerate interval: no wall of lines
    for (double k = first; k <= last; ++k) {
        const double v = k * interval;
        ticks.push_back({std::abs(v) < slack ? 0.0 : v, true});  // no "-0" label
    }
    return ticks;
}

std::vector<AxisTick> logTicks(double lo, double hi, double minorDecades) {
    std::vector<AxisTick> ticks;
    if (!(lo > 0) || !(hi > lo) || !std::isfinite(hi)) return ticks;
    const double slack = 1e-9;  // in decades
    const double a = std::log10(lo), b = std::log10(hi);
    const bool minor = b - a <= minorDecades;
    for (double d = std::floor(a); d <= std::ceil(b); ++d) {
        const double power = std::pow(10.0, d);
        if (d >= a - slack && d <= b + slack) ticks.push_back({power, true});
        if (!minor) continue;
        for (int k = 2; k <= 9; ++k) {
            const double v = k * power;
            const double position = std::log10(v);
            if (position >= a - slack && position <= b + slack) ticks.push_back({v, false});
        }
    }
    // Fewer than three labelled powers of ten leave the scale unreadable:
    // label 2x and 5x too.
    if (std::count_if(ticks.begin(), ticks.end(), [](const AxisTick& t) { return t.major; }) < 3)
        for (AxisTick& tick : ticks) {
            const double mantissa = tick.value / std::pow(10.0, std::floor(std::log10(tick.value) + 1e-9));
            if (std::abs(mantissa - 2) < 1e-6 || std::abs(mantissa - 5) < 1e-6) tick.major = true;
        }
    return ticks;
}

std::vector<bool> labelledMajorTicks(const AxisScale& axis, const std::vector<double>& positions, double extent) {
    std::vector<bool> shown(positions.size(), true);
    double gap = std::numeric_limits<double>::infinity();
    for (size_t i = 1; i < positions.size(); ++i) gap = std::min(gap, std::abs(positions[i] - positions[i - 1]));
    const double room = 1.2 * extent;  // a label and a fifth of one between neighbours
    if (!(gap < room) || gap <= 0) return shown;
    const long stride = std::lround(std::ceil(room / gap));
    std::vector<double> majors;
    for (const AxisTick& t : axis.ticks)
        if (t.major) majors.push_back(t.value);
    bool any = false;
    std::optional<size_t> round;  // the first power of ten (log) or tick (linear): shown if nothing else is
    for (size_t i = 0; i < shown.size() && i < majors.size(); ++i) {
        const double v = majors[i];
        long index;
        if (axis.log) {
            const double exponent = std::log10(v);
            // 2x and 5x ticks (labelled on a short range) give way first.
            if (std::abs(exponent - std::round(exponent)) > 1e-6) {
                shown[i] = false;
                continue;
            }
            index = std::lround(exponent);
        } else {
            index = std::lround(v / axis.interval);
        }
        if (!round) round = i;
        shown[i] = index % stride == 0;
        any = any || shown[i];
    }
    if (!any && !shown.empty()) shown[round.value_or(0)] = true;
    return shown;
}

// --- One axis as drawn ------------------------------------------------------------

QString AxisScale::label(double value) const {
    return log ? formatLogTick(value) : formatTick(value / labelUnit, interval / labelUnit);
}

QStringList AxisScale::majorLabels() const {
    QStringList labels;
    for (const AxisTick& tick : ticks)
        if (tick.major) labels << label(tick.value);
    return labels;
}

double AxisScale::toAxis(double value) const { return log ? std::log10(value) : value; }

double AxisScale::fraction(double value) const {
    const double a = toAxis(lo);
    return (toAxis(value) - a) / (toAxis(hi) - a);
}

bool AxisScale::valid() const { return hi > lo && std::isfinite(lo) && std::isfinite(hi) && (!log || lo > 0); }

AxisScale linearAxis(double lo, double hi, int targetTicks, double minStep, double labelUnit) {
    AxisScale a;
    a.lo = lo;
    a.hi = hi;
    a.labelUnit = labelUnit > 0 ? labelUnit : 1;
    a.interval = niceTickInterval((hi - lo) / a.labelUnit, targetTicks, minStep / a.labelUnit) * a.labelUnit;
    a.ticks = linearTicks(lo, hi, a.interval);
    return a;
}

AxisScale logAxis(double lo, double hi) {
    AxisScale a;
    a.log = true;
    a.lo = lo;
    a.hi = hi;
    a.interval = 0;
    // Minor lines help within a few decades and are clutter across many.
    a.ticks = logTicks(lo, hi, 3.01);
    return a;
}

AxisScale elapsedAxis(double lo, double hi) {
    const double span = hi - lo;
    return linearAxis(lo, hi, 6, 0, span < 600 ? 1 : span < 36000 ? 60 : 3600);
}

QString elapsedUnitName(double labelUnit) {
    return labelUnit == 1 ? QStringLiteral("s") : labelUnit == 60 ? QStringLiteral("min") : QStringLiteral("h");
}

XRange dataXRange(double first, double last, double minStep) {
    if (first == last) return {first - 1, last + 1};
    const double step = niceTickInterval(last - first, 10, minStep);
    return {std::floor(first / step) * step, std::ceil(last / step) * step};
}

AxisScale logAxisAround(double lo, double hi, double pad) {
    double a = std::log10(lo), b = std::log10(hi);
    const double grow = pad * (b - a);
    a -= grow;
    b += grow;
    if (b - a < 1) {
        const double extra = (1 - (b - a)) / 2;
        a -= extra;
        b += extra;
    }
    return logAxis(std::pow(10.0, std::floor(a * 4) / 4), std::pow(10.0, std::ceil(b * 4) / 4));
}

// --- The value (y) axis of a chart -------------------------------------------------

AxisScale valueAxis(std::span<const double> values, const ValueAxisOptions& options) {
    const bool log = options.log;
    RobustRangeOptions robustOptions;
    robustOptions.logSpace = log;
    robustOptions.margin = 0.05;  // the rounding below adds room too
    if (options.wholeRange) robustOptions.lowQuantile = 0, robustOptions.highQuantile = 1;
    const std::optional<YRange> robust = robustYRange(values, robustOptions);
    // Worked out in axis units: log10 of the value on a log axis.
    const auto toAxis = [log](double v) { return log ? std::log10(v) : v; };
    // Without a value: 0 to 1; on a log axis the four decades under 1 where a
    // K3 KL or F(t) lands (a decade at the floor, 1e-12, told a new user
    // nothing), or the floor's decade when every shown value sits there.
    double lo = robust ? toAxis(robust->lo) : !log ? 0.0 : options.valuesAtFloor ? std::log10(options.floor) : -4.0;
    double hi = robust ? toAxis(robust->hi) : !log || options.valuesAtFloor ? lo + 1 : 0.0;
    for (const double v : options.keep) {
        if (!std::isfinite(v) || (log && v <= 0)) continue;
        const double a = toAxis(v), room = 0.05 * std::max(hi - lo, log ? 1.0 : std::abs(a));
        if (a > hi) hi = a + room;
        if (a < lo) lo = a - room;
    }
    if (log) {
        if (options.valuesAtFloor) lo = std::min(lo, std::log10(options.floor));
        // At least one power of ten must show, to read the scale by.
        if (hi - lo < 1) {
            const double grow = (1 - (hi - lo)) / 2;
            lo -= grow;
            hi += grow;
        }
    }
    // Room below 0 for values that cannot exist would only squash the data.
    // (A negative value, the catalogue notwithstanding, is still shown.)
    if (!log && options.nonNegative && lo < 0 && hi > 0 &&
        std::none_of(values.begin(), values.end(), [](double v) { return v < 0; }))
        lo = 0;
    const double span = hi - lo;
    if (options.markersAtTop) hi += kMarkerBand * span;
    if (options.markersAtBottom || (log && options.valuesAtFloor)) lo -= kMarkerBand * span;
    if (log) return logAxis(std::pow(10.0, std::floor(lo * 4) / 4), std::pow(10.0, std::ceil(hi * 4) / 4));
    const double step = niceTickInterval(hi - lo, options.targetTicks);
    return linearAxis(std::floor(lo / step) * step, std::ceil(hi / step) * step, options.targetTicks);
}

AxisScale barAxis(double largest, int targetTicks) {
    const double top = largest > 0 && std::isfinite(largest) ? largest * 1.12 : 1.0;
    const double step = niceTickInterval(top, targetTicks);
    AxisScale a = linearAxis(0, std::ceil(top / step - 1e-9) * step, targetTicks);
    a.ticks = linearTicks(a.lo, a.hi, step);  // the rounding's own step, so the top sits on a tick
    a.interval = step;
    return a;
}

double markerValue(const AxisScale& y, bool top) {
    const double lo = y.toAxis(y.lo), hi = y.toAxis(y.hi);
    const double inset = kMarkerInset * (hi - lo);
    const double at = top ? hi - inset : lo + inset;
    return y.log ? std::pow(10.0, at) : at;
}

// --- The scale a metric starts on ---------------------------------------------------

bool defaultLogScale(std::string_view metric) {
    const MetricInfo* info = find_metric(metric);
    return info && info->axis == Axis::log;
}

bool keepsPeaks(std::string_view metric) {
    const MetricInfo* info = find_metric(metric);
    return info && (info->group == "Mismatch" || info->group == "Routing");
}

bool metricNonNegative(std::string_view metric) {
    const MetricInfo* info = find_metric(metric);
    return info && metric_is_nonnegative(*info);
}

}  // namespace mlk
