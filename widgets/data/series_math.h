// Pure numeric helpers behind the live charts: smoothing, per-pixel thinning,
// seed aggregation and NaN/Inf positions. (The axis rules, log floor and
// robust range included, are in widgets/charts/axis_rules.h.) No widgets
// here, so every rule can be tested without a display.
#pragma once

#include <QLine>
#include <QList>
#include <QPointF>
#include <QString>

#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <vector>

namespace mlk {

// +infinity, as the series and chart code spell it (empty ranges, open sides).
inline constexpr double kInfinity = std::numeric_limits<double>::infinity();

// --- Debiased EMA (TensorBoard's smoothing) --------------------------------

// Running state, so a live series is smoothed incrementally: appending k
// points costs O(k), not O(n).
struct EmaState {
    double accumulated = 0;     // the biased EMA, started at 0
    double weightPower = 1;     // weight^count, kept as a product (no pow per point)
    std::size_t count = 0;      // finite values folded in so far
    double firstValue = 0;      // while every finite value equals this one...
    bool constantSoFar = true;  // ...the output is that value exactly
};

// Largest usable weight: at 1 the EMA never moves and debiasing divides by 0.
inline constexpr double kMaxSmoothingWeight = 0.999;

// Smooths ys[i] for every i and appends the results to out (one per input).
// Non-finite inputs are skipped by the EMA and come out as NaN, so the raw
// series keeps them (as markers) while the smoothed line simply has no point.
void extendDebiasedEma(std::span<const double> ys, double weight, EmaState& state, std::vector<double>& out);
std::vector<double> debiasedEma(std::span<const double> ys, double weight);

// --- Min/max thinning --------------------------------------------------------

struct XRange {
    double lo = 0;
    double hi = 0;
    double span() const { return hi - lo; }
    bool operator==(const XRange&) const = default;
};

// Keeps, for every pixel bucket of [range.lo, range.hi], the first, minimum,
// maximum and last point in x order (at most 4 per bucket), plus the nearest
// point outside each end so the line reaches the plot edges when zoomed.
// xs must be ascending. Points with a non-finite y are skipped: they cannot be
// drawn as a line and are shown as markers instead (see nonFinitePoints).
QList<QPointF> thinMinMax(std::span<const double> xs, std::span<const double> ys, XRange range, int pixelWidth);

// Index range [first, last) of ascending xs inside [range.lo, range.hi].
std::pair<std::size_t, std::size_t> indicesInRange(std::span<const double> xs, XRange range);

// --- Pixel-column geometry (what the chart paints) ---------------------------

// A line through points already mapped to device pixels, in x order. Dense
// noisy data drawn as a polyline zig-zags up and down every pixel column, and
// the raster engine pays for every pixel of that length (most of a redraw at
// 10 runs x 10k steps).

// One vertical span per integer pixel column from the first point's column to
// the last's: the part of the polyline inside that column, rounded to whole
// pixels. Filled, they set the pixels a 1 px non-antialiased polyline would.
// Each span is a QLine with x1 == x2.
std::vector<QLine> columnSpans(std::span<const QPointF> pixels);

// Whether a polyline has at least one point per two pixel columns it spans:
// then spans look like the line (steps of at most two pixels), and a noisy
// one is a band whose antialiased zig-zag would cost far more to stroke.
bool isDenseInPixels(std::span<const QPointF> pixels);

// --- Seeds of one configuration ---------------------------------------------

// One run of a seed group: its steps (ascending), where each step is drawn
// (the step itself, or its wall time) and its values, all aligned.
struct SeedRun {
    std::span<const double> steps, xs, ys;
};

// Per step of the union of the runs' steps: the mean x, and the mean, lowest
// and highest finite y over the runs that have that step (`runs` of them).
// Steps where no run has a finite y are left out.
struct SeedAggregate {
    std::vector<double> steps, xs, mean, lo, hi;
    std::vector<int> runs;
    std::size_t size() const { return steps.size(); }
};
SeedAggregate aggregateSeeds(std::span<const SeedRun> runs);

// --- Non-finite values -------------------------------------------------------

enum class NonFiniteKind { nan, positiveInf, negativeInf };

struct NonFinitePoint {
    std::size_t index = 0;
    double x = 0;
    NonFiniteKind kind = NonFiniteKind::nan;
};

// Every NaN / +-Inf of the series, in x order: the chart draws them as
// markers at the plot edge, since Qt would silently drop them from a line.
std::vector<NonFinitePoint> nonFinitePoints(std::span<const double> xs, std::span<const double> ys);

}  // namespace mlk
