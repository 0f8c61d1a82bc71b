// Zooming x (PlotJuggler's "zoomer"): on one chart view, drag across the
// plot to zoom to that x range (a rubber band shows it), double-click to
// reset; and ZoomLink, which keeps one x range across charts, so zooming or
// resetting one zooms or resets them all.
#pragma once

#include <QList>
#include <QObject>
#include <QPoint>

#include <optional>

#include "widgets/charts/axis_frame.h"

QT_BEGIN_NAMESPACE
class QChartView;
class QMouseEvent;
class QRubberBand;
QT_END_NAMESPACE

namespace mlk {

class MetricChart;

class ChartZoomer : public QObject {
    Q_OBJECT

public:
    static constexpr int kMinDragPixels = 4;

    ChartZoomer(QChartView* view, const AxisFrame& frame);

    // The view's mouse events: true when the zoomer used it (it is accepted).
    bool press(QMouseEvent* event);
    bool move(QMouseEvent* event);
    bool release(QMouseEvent* event);
    bool doubleClick(QMouseEvent* event);

signals:
    void zoomRequested(double lo, double hi);  // inside the shown x range
    void resetRequested();

private:
    bool inPlot(const QPoint& viewPos) const;

    QChartView* view_;
    const AxisFrame& frame_;
    QRubberBand* band_;
    std::optional<QPoint> origin_;
};

class ZoomLink : public QObject {
    Q_OBJECT

public:
    explicit ZoomLink(QObject* parent = nullptr) : QObject(parent) {}

    void add(MetricChart* chart);  // zoomed to the shared range, if any
    void remove(MetricChart* chart);
    void setRange(double lo, double hi);
    void reset();
    // Drops the shared range and leaves the charts alone (they reset
    // themselves when x changes between step and wall time).
    void forget() { range_.reset(); }
    std::optional<XRange> range() const { return range_; }

private:
    void follow(MetricChart* source, double lo, double hi);
    void followReset(MetricChart* source);

    QList<MetricChart*> charts_;
    std::optional<XRange> range_;
    bool propagating_ = false;
};

}  // namespace mlk
