// The hover read-out of a metric chart (PlotJuggler's "tracker"): the point
// nearest the mouse, a run's raw value or a seed group's mean, gets a dot in
// its colour and a tooltip naming the run, step (and wall time), raw and
// smoothed value, or the group's mean and min-max.
#pragma once

#include <QPoint>
#include <QPointF>
#include <QString>

#include <cstddef>
#include <optional>
#include <vector>

#include "widgets/charts/axis_frame.h"
#include "widgets/charts/chart_traces.h"

QT_BEGIN_NAMESPACE
class QChartView;
class QGraphicsEllipseItem;
QT_END_NAMESPACE

namespace mlk {

// A run's point on a chart: what its drill-down opens.
struct RunStep {
    qint64 runId = 0;
    qint64 step = 0;
    QString runName;  // "#id name"
};

class ChartTracker {
public:
    ChartTracker(QChartView* view, const ChartTraces& traces, const AxisFrame& frame);

    QString textAt(const QPoint& viewPos) const;  // "" away from every point
    // What the point nearest viewPos is the step of: its run, or on a seed
    // group's mean line each run the group averages (by id; one shorter than
    // that step opens at its nearest); none away from every point.
    std::vector<RunStep> runStepsAt(const QPoint& viewPos) const;
    void show(const QPoint& viewPos);  // dot and tooltip, or clear()
    void clear();
    bool shown() const;  // the dot is on the plot
    // Scene position of a point of `trace` as drawn: NaN/Inf at their marker,
    // values below a log axis' floor at the floor.
    QPointF scenePosOf(const Trace& trace, std::size_t index) const;

private:
    struct Nearest {
        const SeedGroup* group = nullptr;  // set: the point is on a group's mean line
        const Trace* trace = nullptr;
        std::size_t index = 0;
        QPointF scenePos;
    };
    std::optional<Nearest> nearest(const QPoint& viewPos) const;
    QString describe(const Nearest& nearest) const;
    QString othersAtStep(const Trace& nearest, double step) const;

    QChartView* view_;
    const ChartTraces& traces_;
    const AxisFrame& frame_;
    QGraphicsEllipseItem* dot_;
};

}  // namespace mlk
