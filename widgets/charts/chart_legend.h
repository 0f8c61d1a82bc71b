// The Qt Charts side of a metric chart's runs and seed groups: per run, the
// series holding its drawn points (painted by the line layer, line_layer.h,
// not by Qt Charts) and its NaN/Inf marker series; and the chart's legend
// (legend_item.h), an entry per run or seed group that toggles it (dimmed
// while hidden). Each run in its own colour (palette::runColour(id) unless the
// user chose another), NaN/Inf markers edged in the palette's marker colour.
#pragma once

#include <QObject>
#include <QString>

#include "widgets/charts/chart_traces.h"
#include "widgets/charts/legend_item.h"

QT_BEGIN_NAMESPACE
class QAbstractAxis;
class QFont;
class QChart;
class QWidget;
class QXYSeries;
QT_END_NAMESPACE

namespace mlk {

class ChartLegend : public QObject {
    Q_OBJECT

public:
    static constexpr int kRawAlpha = 70;  // the raw line under the smoothed one
    // 1 px lines take QPainter's cosmetic fast path; a 2 px pen goes through
    // the general stroker, measured ~25x slower per point with antialiasing
    // (Qt 6.4, 2 cores). The smoothed line stands out by opacity, not width.
    static constexpr double kLineWidth = 1.0;

    // `view` gives the legend's text colour. The legend is an item of the
    // chart, placed by the caller (place()).
    ChartLegend(QChart* chart, ChartTraces& traces, const QWidget* view, QObject* parent = nullptr);

    // The axes every marker series is attached to.
    void setAxes(QAbstractAxis* x, QAbstractAxis* y);
    // A new y axis (log <-> linear): marker series are emptied first (points
    // prepared for the other scale must never meet a log axis) and attached
    // to it; the caller redraws.
    void replaceYAxis(QAbstractAxis* y);

    void create(Trace& trace);
    void destroy(Trace& trace);
    // Colours, names and visibility of the run's series after a change of
    // colour, name, smoothing or hidden state.
    void style(Trace& trace);
    // The legend's entries as the traces and groups now are: a run drawn by
    // its seed group has the group's entry instead of its own.
    void syncEntries();
    // The legend laid out across `area` (scene coordinates: the chart's width,
    // its bottom at the bottom of the chart) in at most a fifth of the
    // area's height; returns the height it takes.
    double place(const QRectF& area);
    void setFont(const QFont& font);
    LegendItem* item() const { return item_; }

signals:
    void runClicked(qint64 runId);
    void groupClicked(const QString& key);

private:
    void attach(QXYSeries* series);

    QChart* chart_;
    ChartTraces& traces_;
    const QWidget* view_;
    LegendItem* item_;
    QAbstractAxis* x_ = nullptr;
    QAbstractAxis* y_ = nullptr;
};

}  // namespace mlk
