// The axis rules every chart follows (the live metric charts, the drill-down
// and the report charts): where values <= 0 sit on a log axis, the y range
// that survives outliers, which ticks an axis gets and how their labels read,
// where NaN/Inf markers go, and the scale a metric starts on (from the metric
// catalogue). Numbers and strings only, no widgets: every rule is testable
// without a display, and no chart keeps a rule of its own.
#pragma once

#include <QList>
#include <QPointF>
#include <QString>
#include <QStringList>

#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "widgets/data/series_math.h"

namespace mlk {

// --- Log axis: values <= 0 ----------------------------------------------------

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

// --- Robust y range -----------------------------------------------------------

struct YRange {
    double lo = 0;
    double hi = 0;
};

// [lo, hi] (lo > 0) widened to whole decades, at least one: a log axis then
// shows at least two labelled ticks.
YRange wholeDecades(double lo, double hi);

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

// --- Ticks and labels -----------------------------------------------------------

// A 1/2/5 x 10^k step giving about `targetTicks` intervals over span (>= minStep).
double niceTickInterval(double span, int targetTicks, double minStep = 0);

// Label of a tick on a linear axis whose ticks are `interval` apart: as many
// digits as keep neighbouring labels distinct and no more ("0.25", "1.5e+05",
// "123460"); exponent form beyond 1e6 or below 1e-4.
QString formatTick(double value, double interval);
// Label of a tick on a log axis: "0.001", "2e-05", "50".
QString formatLogTick(double value);

struct AxisTick {
    double value = 0;
    bool major = true;  // labelled, with a full grid line; minor: a faint line only
    bool operator==(const AxisTick&) const = default;
};

// Every multiple of interval in [lo, hi] (a relative 1e-9 of slack at the
// ends, so a range rounded out to ticks keeps its end ticks).
std::vector<AxisTick> linearTicks(double lo, double hi, double interval);

// A log10 axis over [lo, hi] (0 < lo < hi): every power of ten (major) and,
// when the range spans at most minorDecades decades, 2..9 times each power
// (minor; 2x and 5x are major too when fewer than three powers are in range).
std::vector<AxisTick> logTicks(double lo, double hi, double minorDecades = 3.01);

// --- One axis as drawn ------------------------------------------------------------

// An axis' range, its ticks and how a tick reads: what a chart paints along
// one edge of its plot, and how values map onto it.
struct AxisScale {
    bool log = false;
    double lo = 0, hi = 1;
    double interval = 1;   // linear: between ticks
    double labelUnit = 1;  // a label shows value / labelUnit (wall time in minutes or hours)
    std::vector<AxisTick> ticks;

    QString label(double value) const;
    QStringList majorLabels() const;
    double toAxis(double value) const;  // log10 on a log axis
    // Where value lies between lo (0) and hi (1), in axis units.
    double fraction(double value) const;
    bool valid() const;  // a range a chart can map onto
    bool operator==(const AxisScale&) const = default;
};

// Which labelled ticks keep their label where the plot is too small for all
// of them (a K3 KL axis over 15 decades in a 100-pixel chart): `positions`
// are the major ticks' pixel positions along the axis (in `axis.ticks`'
// order), `extent` a label's size along the axis. Every stride-th is kept, on
// round values (powers of ten whose exponent is a multiple of the stride, or
// multiples of stride x interval), so the labels that stay read as a scale;
// at least one stays. The ticks themselves are drawn regardless.
std::vector<bool> labelledMajorTicks(const AxisScale& axis, const std::vector<double>& positions, double extent);

// A linear axis over exactly [lo, hi], ticks about (hi - lo) / targetTicks
// apart (at least minStep), labelled in labelUnit.
AxisScale linearAxis(double lo, double hi, int targetTicks, double minStep = 0, double labelUnit = 1);
// A log axis over exactly [lo, hi] (0 < lo < hi).
AxisScale logAxis(double lo, double hi);
// The x axis of a wall-time chart over [lo, hi] seconds: labelled in seconds,
// minutes or hours, whichever keeps the labels short.
AxisScale elapsedAxis(double lo, double hi);
// "s", "min" or "h": the unit of elapsedAxis' labels.
QString elapsedUnitName(double labelUnit);

// x range of data from first to last (ascending): out to the next
// tenth-of-span tick (of at least minStep), so a growing run moves the axis
// only every few percent of its length; a single x gets one unit each side.
XRange dataXRange(double first, double last, double minStep);
// A log axis around [lo, hi] (0 < lo <= hi): padded by `pad` of its decades
// each side and rounded out to quarter decades; at least one decade.
AxisScale logAxisAround(double lo, double hi, double pad = 0);

// --- The value (y) axis of a chart -------------------------------------------------

// Bands kept free of data, as a fraction of the data span per edge, for
// NaN/Inf markers (and to lift points at the log floor off the axis line).
inline constexpr double kMarkerBand = 0.08;
// Markers sit this fraction of the plot height inside the edge, so they are
// drawn whole instead of half-clipped by the plot border.
inline constexpr double kMarkerInset = 0.04;

struct ValueAxisOptions {
    bool log = false;
    double floor = kDefaultLogFloor;  // log: where values <= 0 are drawn
    bool valuesAtFloor = false;       // log: some shown value is <= 0 (the floor must show)
    bool markersAtTop = false;        // NaN / +Inf in view
    bool markersAtBottom = false;     // -Inf in view
    bool nonNegative = false;         // linear: the values can never be < 0, so neither is the axis
    int targetTicks = 5;              // linear
    // Every value inside, outliers too: a printed chart has no zoom to find
    // a point the robust range left out (and the user may ask for it).
    bool wholeRange = false;
    // Values that must lie inside whatever the robust range says: each run's
    // peak of a metric whose spikes are the signal (keepsPeaks).
    std::vector<double> keep;
};

// The y axis over the shown values: their outlier-robust range (5-95 % with
// tail fences, robustYRange; or all of them with wholeRange) with room for markers and the floor, at least one
// power of ten on a log axis, rounded out to ticks (quarter decades on a log
// axis) so labels sit on the edges and a live update inside the same ticks
// leaves the axis alone.
AxisScale valueAxis(std::span<const double> values, const ValueAxisOptions& options);

// The value axis of a bar chart: from 0 to above the tallest bar (largest)
// by room for its value label, on ticks.
AxisScale barAxis(double largest, int targetTicks = 5);

// Where a NaN/Inf marker is drawn: just inside the top (NaN, +Inf) or bottom
// (-Inf) edge of y.
double markerValue(const AxisScale& y, bool top);

// --- The scale a metric starts on ---------------------------------------------------

// The catalogue's default axis of the metric (core/metrics/catalogue.h); a
// metric the catalogue does not know starts linear.
bool defaultLogScale(std::string_view metric);
// Whether the catalogue says the metric is never negative (its linear axis
// then starts at 0 rather than below it); false for a metric it does not know.
bool metricNonNegative(std::string_view metric);
// Whether a spike of the metric is what the user looks for (the mismatch and
// routing measures: an F@2 burst before a collapse), so its axis keeps every
// run's peak inside rather than treating it as an outlier.
bool keepsPeaks(std::string_view metric);

}  // namespace mlk
