#include "widgets/series_math.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace mlk {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

double clampWeight(double weight) {
    if (!(weight > 0)) return 0;  // also catches NaN
    return std::min(weight, kMaxSmoothingWeight);
}

}  // namespace

void extendDebiasedEma(std::span<const double> ys, double weight, EmaState& state, std::vector<double>& out) {
    const double w = clampWeight(weight);
    out.reserve(out.size() + ys.size());
    for (const double y : ys) {
        if (!std::isfinite(y)) {
            out.push_back(kNaN);
            continue;
        }
        if (state.count == 0) state.firstValue = y;
        state.constantSoFar = state.constantSoFar && y == state.firstValue;
        state.accumulated = state.accumulated * w + (1 - w) * y;
        state.weightPower *= w;
        ++state.count;
        // Debiasing by 1 - w^i undoes the pull towards the zero start; a
        // constant series is returned bit-exactly (an exact 0 K3 KL must stay 0).
        const double debias = 1 - state.weightPower;
        out.push_back(state.constantSoFar ? y : state.accumulated / debias);
    }
}

std::vector<double> debiasedEma(std::span<const double> ys, double weight) {
    EmaState state;
    std::vector<double> out;
    extendDebiasedEma(ys, weight, state, out);
    return out;
}

std::pair<std::size_t, std::size_t> indicesInRange(std::span<const double> xs, XRange range) {
    const auto first = std::lower_bound(xs.begin(), xs.end(), range.lo);
    const auto last = std::upper_bound(first, xs.end(), range.hi);
    return {static_cast<std::size_t>(first - xs.begin()), static_cast<std::size_t>(last - xs.begin())};
}

namespace {

// One pixel column's candidates, as indices into the series.
struct Bucket {
    std::size_t first = 0, min = 0, max = 0, last = 0;
    bool empty = true;

    void add(std::size_t i, std::span<const double> ys) {
        if (empty) {
            first = min = max = last = i;
            empty = false;
            return;
        }
        if (ys[i] < ys[min]) min = i;
        if (ys[i] > ys[max]) max = i;
        last = i;
    }

    void flushTo(QList<QPointF>& out, std::span<const double> xs, std::span<const double> ys) {
        if (empty) return;
        std::array<std::size_t, 4> keep{first, min, max, last};
        std::sort(keep.begin(), keep.end());
        const auto end = std::unique(keep.begin(), keep.end());
        for (auto it = keep.begin(); it != end; ++it) out.append(QPointF(xs[*it], ys[*it]));
        empty = true;
    }
};

// The closest point with a finite y strictly outside the range, walking away
// from it; nullopt when there is none.
std::optional<std::size_t> finiteNeighbour(std::span<const double> ys, std::size_t start, int direction) {
    for (std::ptrdiff_t i = static_cast<std::ptrdiff_t>(start); i >= 0 && i < static_cast<std::ptrdiff_t>(ys.size());
         i += direction)
        if (std::isfinite(ys[static_cast<std::size_t>(i)])) return static_cast<std::size_t>(i);
    return std::nullopt;
}

}  // namespace

QList<QPointF> thinMinMax(std::span<const double> xs, std::span<const double> ys, XRange range, int pixelWidth) {
    QList<QPointF> out;
    const std::size_t n = std::min(xs.size(), ys.size());
    xs = xs.first(n);
    ys = ys.first(n);
    if (n == 0) return out;
    const int buckets = std::max(1, pixelWidth);
    const auto [first, last] = indicesInRange(xs, range);
    out.reserve(static_cast<qsizetype>(std::min<std::size_t>(last - first, 4 * static_cast<std::size_t>(buckets)) + 2));

    if (first > 0)
        if (const auto before = finiteNeighbour(ys, first - 1, -1)) out.append(QPointF(xs[*before], ys[*before]));

    const double scale = range.span() > 0 ? buckets / range.span() : 0;
    Bucket bucket;
    int currentBucket = -1;
    for (std::size_t i = first; i < last; ++i) {
        if (!std::isfinite(ys[i])) continue;
        const int b = std::min(buckets - 1, static_cast<int>((xs[i] - range.lo) * scale));
        if (b != currentBucket) {
            bucket.flushTo(out, xs, ys);
            currentBucket = b;
        }
        bucket.add(i, ys);
    }
    bucket.flushTo(out, xs, ys);

    if (last < n)
        if (const auto after = finiteNeighbour(ys, last, +1)) out.append(QPointF(xs[*after], ys[*after]));
    return out;
}

namespace {

double quantileInPlace(std::vector<double>& values, double q) {
    const auto rank = static_cast<std::size_t>(std::lround(std::clamp(q, 0.0, 1.0) * double(values.size() - 1)));
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank), values.end());
    return values[rank];
}

std::vector<double> rangeSamples(std::span<const double> ys, bool logSpace) {
    std::vector<double> samples;
    samples.reserve(ys.size());
    for (const double y : ys) {
        if (!std::isfinite(y)) continue;
        if (!logSpace) samples.push_back(y);
        else if (y > 0) samples.push_back(std::log10(y));
    }
    return samples;
}

}  // namespace

std::optional<YRange> robustYRange(std::span<const double> ys, const RobustRangeOptions& options) {
    std::vector<double> samples = rangeSamples(ys, options.logSpace);
    if (samples.empty()) return std::nullopt;
    double lo = quantileInPlace(samples, options.lowQuantile);
    double hi = quantileInPlace(samples, options.highQuantile);
    const double span = hi - lo;
    // The extremes that are still inside the fences.
    const double lowFence = lo - options.tailFence * span, highFence = hi + options.tailFence * span;
    for (const double v : samples) {
        if (v >= lowFence && v < lo) lo = v;
        if (v <= highFence && v > hi) hi = v;
    }
    if (hi - lo <= 0) {
        // A flat line still needs a visible band around it.
        const double band = options.logSpace ? 1.0 : (lo != 0 ? std::abs(lo) * 0.2 : 2.0);
        lo -= band / 2;
        hi += band / 2;
    }
    const double pad = options.margin * (hi - lo);
    lo -= pad;
    hi += pad;
    if (options.logSpace) return YRange{std::pow(10.0, lo), std::pow(10.0, hi)};
    return YRange{lo, hi};
}

double smallestPositive(std::span<const double> ys) {
    double best = kInf;
    for (const double y : ys)
        if (y > 0 && y < best) best = y;  // NaN compares false, +inf never wins
    return best;
}

double logFloorFor(double smallest) {
    if (!(smallest > 0) || !std::isfinite(smallest)) return kDefaultLogFloor;
    return std::pow(10.0, std::floor(std::log10(smallest)) - 1);
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

std::vector<NonFinitePoint> nonFinitePoints(std::span<const double> xs, std::span<const double> ys) {
    std::vector<NonFinitePoint> out;
    const std::size_t n = std::min(xs.size(), ys.size());
    for (std::size_t i = 0; i < n; ++i) {
        const double y = ys[i];
        if (std::isnan(y)) out.push_back({i, xs[i], NonFiniteKind::nan});
        else if (std::isinf(y)) out.push_back({i, xs[i], y > 0 ? NonFiniteKind::positiveInf : NonFiniteKind::negativeInf});
    }
    return out;
}

double niceTickInterval(double span, int targetTicks, double minStep) {
    if (!(span > 0) || !std::isfinite(span) || targetTicks < 1) return std::max(1.0, minStep);
    const double raw = span / targetTicks;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    const double normalised = raw / magnitude;
    const double step = normalised < 1.5 ? 1 : normalised < 3.5 ? 2 : normalised < 7.5 ? 5 : 10;
    return std::max(step * magnitude, minStep);
}

}  // namespace mlk
