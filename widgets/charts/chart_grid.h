// A grid of MetricCharts over one RunDataStore: the catalogue's key charts
// (each on the catalogue's default axis), "Add chart" for any stored metric, one x range
// shared by every chart (zoom one, all follow), one set of shown runs, x by
// step or wall time, seeds grouped into bands or not, and a smoothing slider
// for all.
#pragma once

#include <QList>
#include <QSet>
#include <QStringList>
#include <QWidget>

#include <optional>

#include "widgets/charts/chart_zoomer.h"
#include "widgets/charts/metric_chart.h"
#include "widgets/data/run_data.h"

QT_BEGIN_NAMESPACE
class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QPushButton;
class QScrollArea;
class QSlider;
QT_END_NAMESPACE

namespace mlk {

class ChartGrid : public QWidget {
    Q_OBJECT

public:
    explicit ChartGrid(RunDataStore* data, QWidget* parent = nullptr);

    static QStringList defaultMetrics();          // the catalogue's key charts, in its order
    static QStringList defaultLogScaleMetrics();  // those whose catalogue axis is log

    // Adds a chart of metric (or returns the one already there).
    MetricChart* addChart(const QString& metric);
    bool removeChart(const QString& metric);
    void removeChart(MetricChart* chart);
    QList<MetricChart*> charts() const { return charts_; }
    MetricChart* chartFor(const QString& metric) const;
    QStringList availableMetrics() const;  // what "Add chart" offers
    // Exactly these charts, in this order (a lesson's): charts of other
    // metrics go, missing ones are added, kept ones keep their options.
    void showMetrics(const QStringList& metrics);
    // Frames one chart in the accent colour, "the chart to read" (empty: none).
    void setHighlightedMetric(const QString& metric);
    QString highlightedMetric() const { return highlighted_; }

    // Runs taking part in every chart; showAllRuns() follows the store.
    void setVisibleRuns(const QList<qint64>& runIds);
    void showAllRuns();
    // Adds one run to the runs shown (a run just started); nothing to do
    // while every run is shown.
    void addVisibleRun(qint64 runId);
    // A legend click hides/shows a run in every chart.
    void toggleRunHidden(qint64 runId);
    void setRunHidden(qint64 runId, bool hidden);
    // One run (or seed group) over the others in every chart, as its legend
    // entry or its row in the run list is hovered; 0 and "" for none.
    void setEmphasis(qint64 runId, const QString& groupKey = {});

    void setSharedXRange(double lo, double hi);
    void resetZoom();
    std::optional<XRange> sharedXRange() const { return zoomLink_->range(); }

    void setSmoothing(double weight);
    double smoothing() const { return smoothing_; }
    void setXAxis(MetricChart::XAxis axis);  // every chart; resets the shared zoom
    void setGroupSeeds(bool on);             // see MetricChart::setGroupSeeds
    bool groupSeeds() const { return groupSeeds_; }
    void setIgnoreOutliers(bool on);  // see MetricChart::setIgnoreOutliers
    bool ignoreOutliers() const { return ignoreOutliers_; }
    MetricChart::XAxis xAxis() const { return xAxis_; }
    // Two columns of charts where two fit at their minimum width, else one
    // (a narrow charts area, beside the probe and lessons docks on a laptop).
    int columns() const { return columns_; }

    void redrawAllNow();

    // Shown above the charts while the store has no run (a new database): what
    // to do next. The widget's own text says only that there is none.
    void setEmptyHint(const QString& text);
    QLabel* emptyHint() const { return emptyHint_; }

signals:
    void chartsChanged();
    void drillDownRequested(qint64 runId, qint64 step);  // from any chart's menu

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    QWidget* buildToolbar();
    void relayout();
    void refreshMetricChoices();
    void updateEmptyHint();

    RunDataStore* data_;
    ZoomLink* zoomLink_;  // one x range across the charts
    QList<MetricChart*> charts_;
    std::optional<QList<qint64>> visibleRuns_;
    QSet<qint64> hiddenRuns_;
    double smoothing_ = MetricChart::kDefaultSmoothing;
    MetricChart::XAxis xAxis_ = MetricChart::XAxis::step;
    bool groupSeeds_ = false;
    bool ignoreOutliers_ = true;
    int columns_ = 2;
    QString highlighted_;

    QComboBox* metricChoice_ = nullptr;
    QComboBox* xAxisChoice_ = nullptr;
    QCheckBox* groupSeedsBox_ = nullptr;
    QCheckBox* outliersBox_ = nullptr;
    QPushButton* addButton_ = nullptr;
    QSlider* smoothingSlider_ = nullptr;
    QLabel* smoothingLabel_ = nullptr;
    QLabel* emptyHint_ = nullptr;
    QScrollArea* scroll_ = nullptr;
    QGridLayout* grid_ = nullptr;
};

}  // namespace mlk
