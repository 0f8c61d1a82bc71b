#include "widgets/data/series_math.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace mlk {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

// Appends the first, lowest, highest and last point with a finite y of
// indices [begin, end), in x order and without repeats.
void appendBucket(QList<QPointF>& out, std::span<const double> xs, std::span<const double> ys, std::size_t begin,
                  std::size_t end) {
    std::size_t first = begin;
    while (first < end && !std::isfinite(ys[first])) ++first;
    if (first == end) return;
    std::size_t lowest = first, highest = first, last = first;
    double low = ys[first], high = low;
    for (std::size_t i = first + 1; i < end; ++i) {
        const double y = ys[i];
        if (!std::isfinite(y)) continue;
        // Strict comparisons: the first of equal extremes is kept.
        if (y < low) {
            low = y;
            lowest = i;
        }
        if (y > high) {
            high = y;
            highest = i;
        }
        last = i;
    }
    std::array<std::size_t, 4> keep{first, lowest, highest, last};
    std::sort(keep.begin(), keep.end());
    const auto unique = std::unique(keep.begin(), keep.end());
    for (auto it = keep.begin(); it != unique; ++it) out.append(QPointF(xs[*it], ys[*it]));
}

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
    const auto bucketOf = [&](double x) { return std::min(buckets - 1, static_cast<int>((x - range.lo) * scale)); };
    // A bucket is a run of consecutive indices (xs ascends, so bucketOf does
    // too): its end is found by binary search and its values scanned in one
    // tight loop, instead of a bucket computation per point.
    for (std::size_t begin = first; begin < last;) {
        const int b = bucketOf(xs[begin]);
        const auto endIt = std::partition_point(xs.begin() + static_cast<std::ptrdiff_t>(begin),
                                                xs.begin() + static_cast<std::ptrdiff_t>(last),
                                                [&](double x) { return bucketOf(x) <= b; });
        const auto end = static_cast<std::size_t>(endIt - xs.begin());
        appendBucket(out, xs, ys, begin, end);
        begin = end;
    }

    if (last < n)
        if (const auto after = finiteNeighbour(ys, last, +1)) out.append(QPointF(xs[*after], ys[*after]));
    return out;
}

std::vector<QLine> columnSpans(std::span<const QPointF> pixels) {
    std::vector<QLine> spans;
    if (pixels.empty()) return spans;
    // Coordinates are clamped to +-1e6 (an outlier far outside the robust
    // range must not overflow int), which also makes rounding a cast: no
    // libm call per pixel on baseline x86-64.
    static constexpr double kLimit = 1e6;
    const auto clampCoordinate = [](double v) { return std::clamp(v, -kLimit, kLimit); };
    const auto roundToInt = [](double v) { return static_cast<int>(v + (kLimit + 0.5)) - static_cast<int>(kLimit); };
    const auto columnOf = [](double x) { return static_cast<int>(x + kLimit) - static_cast<int>(kLimit); };
    const auto pointAt = [&](std::size_t i) {
        return QPointF(clampCoordinate(pixels[i].x()), clampCoordinate(pixels[i].y()));
    };
    spans.reserve(
        static_cast<std::size_t>(std::abs(columnOf(pointAt(pixels.size() - 1).x()) - columnOf(pointAt(0).x()))) + 1);
    QPointF from = pointAt(0);
    int column = columnOf(from.x());
    double lo = from.y(), hi = lo;
    for (std::size_t i = 1; i < pixels.size(); ++i) {
        const QPointF to = pointAt(i);
        const int last = columnOf(to.x());
        if (last > column) {
            // Split the segment at every column boundary it crosses: each
            // column gets the part of the line inside it.
            const double slope = (to.y() - from.y()) / (to.x() - from.x());
            for (int boundary = column + 1; boundary <= last; ++boundary) {
                const double y = from.y() + slope * (boundary - from.x());
                lo = std::min(lo, y);
                hi = std::max(hi, y);
                spans.emplace_back(column, roundToInt(lo), column, roundToInt(hi));
                column = boundary;
                lo = hi = y;
            }
        }
        lo = std::min(lo, to.y());
        hi = std::max(hi, to.y());
        from = to;
    }
    spans.emplace_back(column, roundToInt(lo), column, roundToInt(hi));
    return spans;
}

bool isDenseInPixels(std::span<const QPointF> pixels) {
    if (pixels.size() < 3) return false;
    const double columns = std::abs(pixels.back().x() - pixels.front().x()) + 1;
    return 2.0 * double(pixels.size()) >= columns;
}

SeedAggregate aggregateSeeds(std::span<const SeedRun> runs) {
    SeedAggregate out;
    std::vector<std::size_t> next(runs.size(), 0);  // each run's first step not yet merged
    while (true) {
        // The smallest step any run still has: a k-way merge of the step lists.
        double step = kInfinity;
        for (std::size_t r = 0; r < runs.size(); ++r)
            if (next[r] < runs[r].steps.size()) step = std::min(step, runs[r].steps[next[r]]);
        if (step == kInfinity) break;
        double sumX = 0, sumY = 0, lo = kInfinity, hi = -kInfinity;
        int count = 0;
        for (std::size_t r = 0; r < runs.size(); ++r) {
            if (next[r] >= runs[r].steps.size() || runs[r].steps[next[r]] != step) continue;
            const double y = runs[r].ys[next[r]];
            if (std::isfinite(y)) {
                sumX += runs[r].xs[next[r]];
                sumY += y;
                lo = std::min(lo, y);
                hi = std::max(hi, y);
                ++count;
            }
            ++next[r];
        }
        if (count == 0) continue;
        out.steps.push_back(step);
        out.xs.push_back(sumX / count);
        out.mean.push_back(sumY / count);
        out.lo.push_back(lo);
        out.hi.push_back(hi);
        out.runs.push_back(count);
    }
    return out;
}

std::vector<NonFinitePoint> nonFinitePoints(std::span<const double> xs, std::span<const double> ys) {
    std::vector<NonFinitePoint> out;
    const std::size_t n = std::min(xs.size(), ys.size());
    for (std::size_t i = 0; i < n; ++i) {
        const double y = ys[i];
        if (std::isnan(y)) out.push_back({i, xs[i], NonFiniteKind::nan});
        else if (std::isinf(y))
            out.push_back({i, xs[i], y > 0 ? NonFiniteKind::positiveInf : NonFiniteKind::negativeInf});
    }
    return out;
}

}  // namespace mlk
