// Pure numeric helpers behind the live charts: smoothing, per-pixel thinning,
// a y range that survives outliers, and the preparation a log axis needs.
// No widgets here, so every rule can be tested without a display.
#pragma once

#include <QLine>
#include <QList>
#include <QPointF>
#include <QString>

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace mlk {

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

// --- Robust y range ----------------------------------------------------------

struct YRange {
    double lo = 0;
    double hi = 0;
};

struct RobustRangeOptions {
    double lowQuantile = 0.05;
    double highQuantile = 0.95;
    // Padding on each side, as a fraction of the range.
    double margin = 0.1;
    // Values up to this many quantile spans beyond the quantiles are tails,
    // not outliers, and stay in range (Tukey-style fences): clipping the
    // latest value of a rising reward, or the upper half of a noisy band,
    // would hide what the user is watching. Beyond the fences: outliers.
    double tailFence = 1.5;
    // Work on log10 of the values (positive ones only), for a log axis.
    bool logSpace = false;
};

// y range over the finite values of ys that ignores outliers; nullopt when
// there is no finite (for logSpace: positive) value. The points outside stay
// in the series: they are clipped by the plot, not removed.
std::optional<YRange> robustYRange(std::span<const double> ys, const RobustRangeOptions& options = {});

// --- Log axis preparation ----------------------------------------------------

// Where values <= 0 are drawn on a log axis: one decade below the smallest
// positive finite value, rounded down to a power of ten so the floor sits on
// a labelled tick; 1e-12 when there is no positive value.
inline constexpr double kDefaultLogFloor = 1e-12;
double logFloorFor(double smallestPositive);
double smallestPositive(std::span<const double> ys);  // +inf when none

// Raises, in place, every y below floor (every value <= 0 among them) to
// floor; returns how many were raised. QLogValueAxis hides the whole series if
// a single point is <= 0, so such points are moved, never dropped. (A smoothed
// line can dip below the floor without reaching 0: it is raised too, so it
// stays on the plot next to its raw points.)
std::size_t clampForLog(QList<QPointF>& points, double floor);
std::size_t countNonPositive(std::span<const double> ys);

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

// --- Axis helpers ------------------------------------------------------------

// A 1/2/5 x 10^k step giving about `targetTicks` intervals over span (>= minStep).
double niceTickInterval(double span, int targetTicks, double minStep = 0);

// Label of a tick on a linear axis whose ticks are `interval` apart: as many
// digits as keep neighbouring labels distinct and no more ("0.25", "1.5e+05",
// "123460"); exponent form beyond 1e6 or below 1e-4.
QString formatTick(double value, double interval);

struct AxisTick {
    double value = 0;
    bool major = true;  // labelled, with a full grid line; minor: a faint line only
};

// Every multiple of interval in [lo, hi] (a relative 1e-9 of slack at the
// ends, so a range rounded out to ticks keeps its end ticks).
std::vector<AxisTick> linearTicks(double lo, double hi, double interval);

// A log10 axis over [lo, hi] (0 < lo < hi): every power of ten (major) and,
// when the range spans at most minorDecades decades, 2..9 times each power
// (minor; 2x and 5x are major too when fewer than three powers are in range).
std::vector<AxisTick> logTicks(double lo, double hi, double minorDecades = 3.01);

}  // namespace mlk
