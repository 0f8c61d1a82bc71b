// A grid of MetricCharts over one RunDataStore: the default four (reward,
// K3 KL, gradient norm, F@2), "Add chart" for any stored metric, one x range
// shared by every chart (zoom one, all follow), one set of shown runs, x by
// step or wall time, seeds grouped into bands or not, and a smoothing slider
// for all.
#pragma once

#include <QList>
#include <QSet>
#include <QStringList>
#include <QWidget>

#include <optional>

#include "widgets/charts/metric_chart.h"
#include "widgets/data/run_data.h"

QT_BEGIN_NAMESPACE
class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QPushButton;
class QSlider;
QT_END_NAMESPACE

namespace mlk {

class ChartGrid : public QWidget {
    Q_OBJECT

public:
    explicit ChartGrid(RunDataStore* data, QWidget* parent = nullptr);

    static QStringList defaultMetrics();          // reward_mean, k3_kl, grad_norm, F@2
    static QStringList defaultLogScaleMetrics();  // charts that start on a log y axis

    // Adds a chart of metric (or returns the one already there).
    MetricChart* addChart(const QString& metric);
    bool removeChart(const QString& metric);
    void removeChart(MetricChart* chart);
    QList<MetricChart*> charts() const { return m_charts; }
    MetricChart* chartFor(const QString& metric) const;
    QStringList availableMetrics() const;  // what "Add chart" offers

    // Runs taking part in every chart; showAllRuns() follows the store.
    void setVisibleRuns(const QList<qint64>& runIds);
    void showAllRuns();
    // A legend click hides/shows a run in every chart.
    void toggleRunHidden(qint64 runId);
    void setRunHidden(qint64 runId, bool hidden);

    void setSharedXRange(double lo, double hi);
    void resetZoom();
    std::optional<XRange> sharedXRange() const { return m_sharedX; }

    void setSmoothing(double weight);
    double smoothing() const { return m_smoothing; }
    void setXAxis(MetricChart::XAxis axis);  // every chart; resets the shared zoom
    void setGroupSeeds(bool on);             // see MetricChart::setGroupSeeds
    bool groupSeeds() const { return m_groupSeeds; }
    MetricChart::XAxis xAxis() const { return m_xAxis; }
    void setColumns(int columns);
    int columns() const { return m_columns; }

    void redrawAllNow();

signals:
    void chartsChanged();

private:
    QWidget* buildToolbar();
    void relayout();
    void refreshMetricChoices();
    void followXRange(MetricChart* source, double lo, double hi);
    void followReset(MetricChart* source);

    RunDataStore* m_data;
    QList<MetricChart*> m_charts;
    std::optional<QList<qint64>> m_visibleRuns;
    QSet<qint64> m_hiddenRuns;
    std::optional<XRange> m_sharedX;
    double m_smoothing = MetricChart::kDefaultSmoothing;
    MetricChart::XAxis m_xAxis = MetricChart::XAxis::step;
    bool m_groupSeeds = false;
    int m_columns = 2;
    bool m_propagating = false;

    QComboBox* m_metricChoice = nullptr;
    QComboBox* m_xAxisChoice = nullptr;
    QCheckBox* m_groupSeedsBox = nullptr;
    QPushButton* m_addButton = nullptr;
    QSlider* m_smoothingSlider = nullptr;
    QLabel* m_smoothingLabel = nullptr;
    QGridLayout* m_grid = nullptr;
};

}  // namespace mlk
