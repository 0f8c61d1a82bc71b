// The data behind one metric chart, without any drawing: per run, its values
// as the store holds them (followed through a SeriesCursor), their debiased
// EMA, the NaN/Inf positions, x by step or by wall time, and the last
// thinning to the plot's pixel width, reused while its inputs are unchanged;
// and the seed groups, whose members are drawn as one mean line in a band.
// A live append costs O(new points), and a redraw re-thins only the runs that
// changed.
#pragma once

#include <QColor>
#include <QHash>
#include <QList>
#include <QPointF>
#include <QSet>
#include <QString>

#include <cstddef>
#include <limits>
#include <map>
#include <optional>
#include <vector>

#include "widgets/data/run_data.h"
#include "widgets/data/series_math.h"

QT_BEGIN_NAMESPACE
class QLineSeries;
class QScatterSeries;
QT_END_NAMESPACE

namespace mlk {

// What x is: the step, or the wall-clock time since the run's first step
// (TensorBoard's "relative"), kept non-decreasing so a resumed run or a clock
// step never zig-zags.
enum class ChartXAxis { step, wallTime };

// One run's data as one chart sees it.
struct Trace {
    qint64 runId = 0;
    QString name;              // "#id name", as the tracker shows it
    QString legendName;        // the words of the name the chart's other runs lack (legendLabels)
    QString legendNameWithId;  // the same, "#id " first (a legend too narrow for whole labels)
    QColor colour;
    SeriesCursor cursor;
    std::size_t processed = 0;  // points folded into the caches below
    EmaState ema;
    std::vector<double> smoothed;
    std::vector<NonFinitePoint> nonFinite;
    double smallestPositive = 0;
    // x by wall time: seconds since the first step with a known time,
    // non-decreasing; empty while no step has a known time.
    std::vector<double> elapsed;
    double firstTime = std::numeric_limits<double>::quiet_NaN();

    // The Qt Charts side (chart_legend.h), null until the run has a value of
    // this metric: the points as drawn and the markers.
    QLineSeries* raw = nullptr;
    QLineSeries* smooth = nullptr;
    QScatterSeries* nan = nullptr;
    QScatterSeries* inf = nullptr;
    bool plotted() const { return raw != nullptr; }
    int seriesVersion = 0;  // bumped whenever raw or smooth get other points

    // The last thinning, reused while its inputs are unchanged (a live update
    // then re-thins only the runs that grew).
    struct Thinning {
        XRange x;
        int buckets = 0;
        std::size_t points = 0;
        bool log = false;
        ChartXAxis axis = ChartXAxis::step;
        QList<QPointF> raw, smooth;
        int atFloor = 0;  // values <= 0 in x (counted on a log axis only)
    };
    std::optional<Thinning> thinning;
};

// Seeds of one configuration drawn together.
struct SeedGroup {
    QString name;
    QString legendName;  // from its first member's legend name
    QString legendNameWithId;
    QColor colour;
    QList<qint64> members;               // in this chart, hidden ones included
    QList<qint64> aggregated;            // the members not hidden
    std::vector<std::size_t> signature;  // what the aggregate was computed from
    SeedAggregate aggregate;
    QList<QPointF> mean, lo, hi;  // thinned, in axis values
};

// A redraw's data: every shown run and group thinned to the plot's width.
struct ThinnedView {
    struct Run {
        Trace* trace = nullptr;
        QList<QPointF> raw, smooth;
    };
    std::vector<Run> runs;
    std::vector<double> visibleValues;  // raw values and band edges in view: the y range's input
    int valuesAtFloor = 0;              // log: shown values <= 0
    bool markersAtTop = false;          // NaN / +Inf in view
    bool markersAtBottom = false;       // -Inf in view
};

class ChartTraces {
public:
    static constexpr int kMinBuckets = 150;

    // --- What is shown --------------------------------------------------------
    // Every run of the store (nullopt) or a chosen set.
    void setVisibleFilter(std::optional<QSet<qint64>> runs) { visibleFilter_ = std::move(runs); }
    const std::optional<QSet<qint64>>& visibleFilter() const { return visibleFilter_; }
    bool setHidden(qint64 runId, bool hidden);  // true when it changed
    bool isHidden(qint64 runId) const { return hidden_.contains(runId); }
    const QSet<qint64>& hiddenRuns() const { return hidden_; }
    void setGroupSeeds(bool on) { groupSeeds_ = on; }
    bool groupSeeds() const { return groupSeeds_; }
    void setXAxis(ChartXAxis axis) { xAxis_ = axis; }
    ChartXAxis xAxis() const { return xAxis_; }
    void setLog(bool on) { log_ = on; }
    bool log() const { return log_; }
    // Restarts every run's EMA.
    void setSmoothing(double weight);
    double smoothing() const { return smoothing_; }

    // --- Following the store ----------------------------------------------------
    struct RunChanges {
        std::vector<Trace*> gotData;   // their first value of this metric: series to create
        std::vector<Trace*> restyled;  // name or colour changed
        std::vector<Trace> removed;    // no longer wanted: series to destroy
    };
    RunChanges syncRuns(RunDataStore& data, const QString& metric, const QList<RunMeta>& metas);
    // Groups of two or more plotted runs with the same RunMeta::seedGroup
    // (none unless groupSeeds()).
    void syncGroups(const QList<RunMeta>& metas);

    // --- Reading -------------------------------------------------------------------
    std::map<qint64, Trace>& traces() { return traces_; }
    const std::map<qint64, Trace>& traces() const { return traces_; }
    std::map<QString, SeedGroup>& groups() { return groups_; }
    const std::map<QString, SeedGroup>& groups() const { return groups_; }
    const Trace* find(qint64 runId) const;
    // Drawn as its own line now: plotted, not hidden, not grouped, and with an
    // x (by wall time, a run with no known step time has none).
    bool isShown(const Trace& trace) const;
    bool isInShownGroup(const Trace& trace) const;  // grouped, and drawn by its group
    bool isGrouped(qint64 runId) const { return groupOf_.contains(runId); }
    bool allHidden(const SeedGroup& group) const;
    const std::vector<double>& xsOf(const Trace& trace) const;  // steps or elapsed, by the x axis
    XRange dataXExtent() const;                                 // of every shown run and group
    double logFloor() const;                                    // of every shown run and group
    int untimedRuns() const;  // plotted, not hidden, without step times (by wall time)

    // --- A redraw -------------------------------------------------------------------
    // Buckets per run for a plot `pixels` wide under a budget of raw points
    // per chart (0 = one bucket per pixel).
    int bucketsPerRun(int pixels, int pointBudget) const;
    ThinnedView thin(XRange x, int buckets);

private:
    void resetDerived(Trace& trace);
    void updateData(RunDataStore& data, const QString& metric, Trace& trace);
    static void extendElapsed(Trace& trace);
    void aggregate(SeedGroup& group);
    void noteMarkerEdges(const Trace& trace, XRange x, ThinnedView& view) const;

    std::map<qint64, Trace> traces_;
    std::map<QString, SeedGroup> groups_;  // by RunMeta::seedGroup
    QHash<qint64, QString> groupOf_;       // grouped run -> its group
    std::size_t derivedVersion_ = 0;       // bumped whenever a trace's derived data restarts
    std::optional<QSet<qint64>> visibleFilter_;
    QSet<qint64> hidden_;
    bool groupSeeds_ = false;
    ChartXAxis xAxis_ = ChartXAxis::step;
    bool log_ = false;
    double smoothing_ = 0.6;
};

}  // namespace mlk
