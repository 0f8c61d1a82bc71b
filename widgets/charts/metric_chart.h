// One live chart: one metric, any number of runs. Per run a thin translucent
// raw line and a debiased-EMA smoothed line in the run's colour, NaN/Inf
// markers at the plot edge, a log axis that keeps values <= 0 (at a floor,
// with a note), an outlier-robust y range, hover read-out, drag-zoom on x.
//
// Composed of small parts, each in its own file: the data and its thinning
// (chart_traces.h), the Qt Charts series and legend (chart_legend.h), the
// axes by the shared rules (axis_rules.h, axis_frame.h), the raster line
// layer (line_layer.h), the hover read-out (chart_tracker.h), drag zoom
// (chart_zoomer.h) and the context menu and exports (chart_menu.h). This
// class owns the options and runs the redraw.
//
// Redraws are coalesced: any number of data signals within kRedrawDelayMs
// produce one redraw, which re-thins every series that changed to the plot's
// pixel width and pushes it with QXYSeries::replace (never point-by-point
// append).
#pragma once

#include <QChartView>
#include <QList>
#include <QPointF>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <optional>

#include "widgets/charts/axis_frame.h"
#include "widgets/charts/axis_rules.h"
#include "widgets/charts/chart_legend.h"
#include "widgets/charts/chart_tracker.h"
#include "widgets/charts/chart_traces.h"
#include "widgets/charts/chart_zoomer.h"
#include "widgets/charts/line_layer.h"
#include "widgets/data/run_data.h"
#include "widgets/data/series_math.h"

QT_BEGIN_NAMESPACE
class QAbstractAxis;
class QGraphicsItem;
class QLineSeries;
class QMenu;
class QScatterSeries;
class QValueAxis;
QT_END_NAMESPACE

namespace mlk {

class MetricChart : public QChartView {
    Q_OBJECT

public:
    static constexpr int kRedrawDelayMs = 30;
    static constexpr double kDefaultSmoothing = 0.6;
    static constexpr int kMinimumWidth = 260;  // px: the axes, ticks and title still legible
    static constexpr int kDefaultPointBudget = 8000;
    static constexpr int kMinBuckets = ChartTraces::kMinBuckets;

    MetricChart(RunDataStore* data, const QString& metric, QWidget* parent = nullptr);
    ~MetricChart() override;

    QString metric() const { return metric_; }
    // The catalogue's title of the metric (the key when it has none).
    QString title() const { return title_; }
    RunDataStore* dataStore() const { return data_; }

    // Which runs take part: every run of the store (default) or a chosen list.
    void setVisibleRuns(const QList<qint64>& runIds);
    void showAllRuns();
    // One run's line, or one seed group's, over the others, which fade; 0 and
    // an empty key for none. The chart does it for its own legend's hover
    // and says so (legendHovered), for the grid to do it on every chart.
    void setEmphasis(qint64 runId, const QString& groupKey = {});
    qint64 emphasisedRun() const { return lines_.emphasisRun(); }
    // Hidden runs keep a (dimmed) legend entry, so a click brings them back.
    void setRunHidden(qint64 runId, bool hidden);
    bool isRunHidden(qint64 runId) const { return traces_.isHidden(runId); }
    QList<qint64> plottedRuns() const;  // runs that have a series here now

    // What x is (see ChartXAxis). Changing it resets the zoom.
    using XAxis = ChartXAxis;
    void setXAxis(XAxis axis);
    XAxis xAxis() const { return traces_.xAxis(); }
    QString xAxisTitle() const;

    void setLogScale(bool on);
    bool logScale() const { return traces_.log(); }
    // Runs whose configurations differ in the seed only (RunMeta::seedGroup)
    // drawn as one mean line in a min-max band (of their smoothed values),
    // when two or more of them have this metric. Off: every run its own line.
    void setGroupSeeds(bool on);
    bool groupSeeds() const { return traces_.groupSeeds(); }
    struct SeedBandView {
        QString name;
        QList<qint64> runs;
        QList<QPointF> mean, lo, hi;  // as drawn (thinned)
    };
    QList<SeedBandView> seedBands() const;
    void setSmoothing(double weight);  // EMA weight in [0, 0.999]; 0 = raw only
    double smoothing() const { return traces_.smoothing(); }
    // Raw points per chart (all runs together) before pixel columns are
    // merged into wider min/max buckets; 0 = one bucket per pixel always.
    // Every pushed point is thinned, mapped and rasterised again on a zoom:
    // the budget keeps ten dense runs as cheap as three.
    void setPointBudget(int points);
    int pointBudget() const { return pointBudget_; }

    // Zoom on x. nullopt: follow the data. setXRange/resetXRange emit
    // xRangeChanged/xRangeReset when the range actually changes.
    void setXRange(double lo, double hi);
    void resetXRange();
    std::optional<XRange> zoomedXRange() const { return zoom_; }
    XRange shownXRange() const { return {frame_.x().lo, frame_.x().hi}; }
    YRange shownYRange() const { return {frame_.y().lo, frame_.y().hi}; }
    // y: the outlier-robust range (on, the default: 5-95 % with tail fences;
    // a metric whose spikes matter keeps each run's peak, keepsPeaks) or
    // every value (off); a manual range overrides both until cleared.
    void setIgnoreOutliers(bool on);
    bool ignoreOutliers() const { return ignoreOutliers_; }
    void setManualYRange(std::optional<YRange> range);
    std::optional<YRange> manualYRange() const { return manualY_; }
    // Shown raw points that lie outside the y axis now (said in the note).
    int pointsOutside() const { return pointsOutside_; }

    // At the chart's size on screen, or at `size` (logical pixels; drawn by a
    // twin of this chart laid out at that size, so lines and text are as
    // sharp as on screen, never a stretched screenshot).
    // Both return why the file could not be written, empty when it was.
    QString savePng(const QString& path, QSize size = {});
    QString saveSvg(const QString& path);

    void scheduleRedraw();
    void redrawNow();
    int redrawCount() const { return redrawCount_; }

    // Read-outs for tests and reports.
    QLineSeries* rawSeries(qint64 runId) const { return seriesOf(runId, &Trace::raw); }
    QLineSeries* smoothedSeries(qint64 runId) const { return seriesOf(runId, &Trace::smooth); }
    QScatterSeries* nanMarkers(qint64 runId) const { return seriesOf(runId, &Trace::nan); }
    QScatterSeries* infMarkers(qint64 runId) const { return seriesOf(runId, &Trace::inf); }
    QAbstractAxis* yAxis() const { return yAxis_; }
    const LegendItem& legend() const { return *legend_->item(); }
    double logFloor() const { return floor_; }            // where values <= 0 are drawn (log scale)
    int valuesAtFloor() const { return valuesAtFloor_; }  // shown run values <= 0 (log scale only)
    int nonFiniteCount() const { return nonFiniteCount_; }
    QString noteText() const { return noteText_; }               // "" when there is nothing to note
    bool hoverMarkerShown() const { return tracker_->shown(); }  // the hover dot is on the plot
    QStringList tickLabels(Qt::Orientation axis) const;          // the labels painted on that axis now
    // Scene position of a data point (step, value) as the lines are drawn.
    QPointF toScene(double x, double y) const;
    // What the tooltip would say there, and the run's point there (if any).
    QString hoverTextAt(const QPoint& viewPos) const { return tracker_->textAt(viewPos); }
    std::vector<RunStep> runStepsAt(const QPoint& viewPos) const { return tracker_->runStepsAt(viewPos); }
    // at: the runs of the point right-clicked, whose step the menu can open.
    QMenu* createContextMenu(QWidget* parent, std::vector<RunStep> at = {});

signals:
    void xRangeChanged(double lo, double hi);
    void xRangeReset();
    void removeRequested();
    void runLegendClicked(qint64 runId);
    void legendHovered(qint64 runId, const QString& groupKey);  // 0 and "": off the entries
    void drillDownRequested(qint64 runId, qint64 step);         // "Open ... in the drill-down" of the menu
    void redrawn();

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    bool viewportEvent(QEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    template <typename Series>
    Series* seriesOf(qint64 runId, Series* Trace::*member) const {
        const Trace* trace = traces_.find(runId);
        return trace ? trace->*member : nullptr;
    }
    void buildChart();
    void applyFonts();  // at ChartStyle's scale
    void placeLegend();
    void installYAxis();
    void syncTraces();
    void toggleGroupHidden(const QString& key);
    int plotPixelWidth() const;
    AxisScale yAxisFor(const ThinnedView& view, bool log) const;
    void pushToSeries(const ThinnedView& view, XRange x, const AxisScale& y);
    void applyAxes(const AxisScale& x, const AxisScale& y);
    int placeMarkers(Trace& trace, XRange x);
    void paintPlot(QPainter* painter);  // grid, lines, axes
    void updateTitle();
    void updateNote();

    RunDataStore* data_;
    QString metric_;
    QString title_;
    ChartTraces traces_;
    AxisFrame frame_;
    LineLayer lines_;
    ChartLegend* legend_ = nullptr;
    std::optional<ChartTracker> tracker_;
    ChartZoomer* zoomer_ = nullptr;

    int pointBudget_ = kDefaultPointBudget;
    std::optional<XRange> zoom_;
    double floor_ = kDefaultLogFloor;
    int valuesAtFloor_ = 0;
    int nonFiniteCount_ = 0;
    bool ignoreOutliers_ = true;
    std::optional<YRange> manualY_;
    int pointsOutside_ = 0;
    int seriesVersions_ = 0;  // source of Trace::seriesVersion: unique across the chart's runs

    QValueAxis* xAxis_ = nullptr;  // hidden: the range the markers are placed by
    QAbstractAxis* yAxis_ = nullptr;
    QGraphicsItem* plotItem_ = nullptr;
    QString noteText_;

    QTimer redrawTimer_;
    bool dirty_ = true;
    int redrawCount_ = 0;
};

}  // namespace mlk
