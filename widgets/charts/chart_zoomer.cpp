#include "widgets/charts/chart_zoomer.h"

#include <QChart>
#include <QChartView>
#include <QMouseEvent>
#include <QRubberBand>

#include <algorithm>
#include <cstdlib>

#include "widgets/charts/metric_chart.h"

namespace mlk {

ChartZoomer::ChartZoomer(QChartView* view, const AxisFrame& frame)
    : QObject(view), view_(view), frame_(frame), band_(new QRubberBand(QRubberBand::Rectangle, view->viewport())) {}

bool ChartZoomer::inPlot(const QPoint& viewPos) const {
    return view_->chart()->plotArea().contains(view_->mapToScene(viewPos));
}

bool ChartZoomer::press(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || !inPlot(event->pos())) return false;
    origin_ = event->pos();
    band_->setGeometry(QRect(event->pos(), QSize()));
    band_->show();
    event->accept();
    return true;
}

bool ChartZoomer::move(QMouseEvent* event) {
    if (!origin_) return false;
    const QRect plot = view_->mapFromScene(view_->chart()->plotArea()).boundingRect();
    const int left = std::clamp(std::min(origin_->x(), event->pos().x()), plot.left(), plot.right());
    const int right = std::clamp(std::max(origin_->x(), event->pos().x()), plot.left(), plot.right());
    band_->setGeometry(QRect(QPoint(left, plot.top()), QPoint(right, plot.bottom())));
    event->accept();
    return true;
}

bool ChartZoomer::release(QMouseEvent* event) {
    if (!origin_ || event->button() != Qt::LeftButton) return false;
    band_->hide();
    const QPoint origin = *origin_;
    origin_.reset();
    if (std::abs(event->pos().x() - origin.x()) >= kMinDragPixels) {
        const QRectF plot = view_->chart()->plotArea();
        const XRange shown{frame_.x().lo, frame_.x().hi};
        const double a = std::clamp(frame_.xAtScene(plot, view_->mapToScene(origin).x()), shown.lo, shown.hi);
        const double b = std::clamp(frame_.xAtScene(plot, view_->mapToScene(event->pos()).x()), shown.lo, shown.hi);
        emit zoomRequested(std::min(a, b), std::max(a, b));
    }
    event->accept();
    return true;
}

bool ChartZoomer::doubleClick(QMouseEvent* event) {
    if (event->button() != Qt::LeftButton || !inPlot(event->pos())) return false;
    emit resetRequested();
    event->accept();
    return true;
}

// --- ZoomLink -------------------------------------------------------------------

void ZoomLink::add(MetricChart* chart) {
    if (charts_.contains(chart)) return;
    if (range_) chart->setXRange(range_->lo, range_->hi);
    charts_.append(chart);
    connect(chart, &MetricChart::xRangeChanged, this, [this, chart](double lo, double hi) { follow(chart, lo, hi); });
    connect(chart, &MetricChart::xRangeReset, this, [this, chart] { followReset(chart); });
}

void ZoomLink::remove(MetricChart* chart) {
    if (charts_.removeOne(chart)) disconnect(chart, nullptr, this, nullptr);
}

void ZoomLink::follow(MetricChart* source, double lo, double hi) {
    if (propagating_) return;
    range_ = XRange{lo, hi};
    propagating_ = true;
    for (MetricChart* chart : charts_)
        if (chart != source) chart->setXRange(lo, hi);
    propagating_ = false;
}

void ZoomLink::followReset(MetricChart* source) {
    if (propagating_) return;
    range_.reset();
    propagating_ = true;
    for (MetricChart* chart : charts_)
        if (chart != source) chart->resetXRange();
    propagating_ = false;
}

void ZoomLink::setRange(double lo, double hi) {
    if (!(hi > lo)) return;
    range_ = XRange{lo, hi};
    propagating_ = true;
    for (MetricChart* chart : charts_) chart->setXRange(lo, hi);
    propagating_ = false;
}

void ZoomLink::reset() {
    range_.reset();
    propagating_ = true;
    for (MetricChart* chart : charts_) chart->resetXRange();
    propagating_ = false;
}

}  // namespace mlk
