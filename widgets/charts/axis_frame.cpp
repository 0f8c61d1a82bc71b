#include "widgets/charts/axis_frame.h"

#include <QAbstractBarSeries>
#include <QBarCategoryAxis>
#include <QChart>
#include <QFontMetrics>
#include <QGraphicsLayout>
#include <QLegend>
#include <QLogValueAxis>
#include <QPainter>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

#include "widgets/data/palette.h"

namespace mlk {

namespace frame_colours {

namespace {
// The ink at `share` opacity over the white plot, as an opaque colour.
QColor inkOnWhite(double share) {
    const QColor ink = palette::neutralInk();
    const auto mix = [share](int c) { return int(std::lround(255 - share * (255 - c))); };
    return QColor(mix(ink.red()), mix(ink.green()), mix(ink.blue()));
}
}  // namespace

QColor grid() { return inkOnWhite(0.18); }
QColor minorGrid() { return inkOnWhite(0.08); }
QColor axis() { return inkOnWhite(0.66); }
QColor label() { return palette::neutralInk(); }

}  // namespace frame_colours

AxisFrame::AxisFrame(const QFont& font) : font_(font) {}

void AxisFrame::setFont(const QFont& font) {
    font_ = font;
    texts_.clear();
}

void AxisFrame::setX(const AxisScale& scale, const QString& title) {
    x_ = scale;
    xTitle_ = title;
}

void AxisFrame::setY(const AxisScale& scale, const QString& title) {
    y_ = scale;
    yTitle_ = title;
}

bool AxisFrame::canMap(const QRectF& plot) const {
    return plot.width() > 0 && plot.height() > 0 && x_.valid() && y_.valid();
}

QPointF AxisFrame::toScene(const QRectF& plot, double x, double y) const {
    return QPointF(plot.left() + x_.fraction(x) * plot.width(), plot.bottom() - y_.fraction(y) * plot.height());
}

double AxisFrame::xAtScene(const QRectF& plot, double sceneX) const {
    if (plot.width() <= 0) return x_.lo;
    const double axis =
        x_.toAxis(x_.lo) + (sceneX - plot.left()) / plot.width() * (x_.toAxis(x_.hi) - x_.toAxis(x_.lo));
    return x_.log ? std::pow(10.0, axis) : axis;
}

const QStaticText& AxisFrame::text(const QString& s) {
    // A handful of distinct labels per chart; the bound only guards against
    // an endless zoom session.
    if (texts_.size() > 512) texts_.clear();
    auto it = texts_.find(s);
    if (it == texts_.end()) {
        QStaticText prepared(s);
        prepared.setTextFormat(Qt::PlainText);
        prepared.prepare(QTransform(), font_);
        it = texts_.insert(s, prepared);
    }
    return it.value();
}

void AxisFrame::fitMargins(QChart* chart) {
    // Changed only when the widest label changes: a new margin re-lays out
    // the chart.
    const QFontMetrics metrics(font_);
    int widestY = 0;
    for (const AxisTick& tick : y_.ticks)
        if (tick.major) widestY = std::max(widestY, metrics.horizontalAdvance(y_.label(tick.value)));
    const int yTitle = yTitle_.isEmpty() ? 0 : metrics.height() + kLabelGap;
    yTitleOffset_ = widestY + kTickLength + kLabelGap + yTitle;
    const int lastX = !drawsX_ || x_.ticks.empty() ? 0 : metrics.horizontalAdvance(x_.label(x_.ticks.back().value));
    // The x labels and title: right under the plot.
    const int xLabelsHeight =
        drawsX_ ? kTickLength + kLabelGap + metrics.height() + (xTitle_.isEmpty() ? 0 : metrics.height()) + 2 : 0;
    QLegend* legend = chart->legend();
    const bool legendUnder = legend->isVisible() && legend->alignment() == Qt::AlignBottom;
    const QMargins wanted(kOuterMargin + yTitleOffset_, kOuterMargin + metrics.height() / 2, kOuterMargin + lastX / 2,
                          kOuterMargin + (legendUnder ? 0 : xLabelsHeight) + spaceBelow_);
    bool changed = false;
    if (chart->margins() != wanted) {
        chart->setMargins(wanted);
        changed = true;
    }
    const int legendTop = legendUnder ? xLabelsHeight : 0;
    qreal left = 0, top = 0, right = 0, bottom = 0;
    legend->getContentsMargins(&left, &top, &right, &bottom);
    if (top != legendTop) {
        legend->setContentsMargins(0, legendTop, 0, 0);
        changed = true;
    }
    if (changed) chart->layout()->activate();
}

void AxisFrame::paintGrid(QPainter* painter, const QRectF& plot) const {
    if (!canMap(plot)) return;
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing, false);
    // Lines on pixel centres: crisp 1 px lines without antialiasing.
    const double left = std::floor(plot.left()) + 0.5, right = std::floor(plot.right()) + 0.5;
    const double top = std::floor(plot.top()) + 0.5, bottom = std::floor(plot.bottom()) + 0.5;
    for (const bool major : {false, true}) {
        painter->setPen(QPen(major ? frame_colours::grid() : frame_colours::minorGrid(), 0));
        for (const AxisTick& tick : y_.ticks) {
            if (tick.major != major) continue;
            const double y = std::floor(toScene(plot, x_.lo, tick.value).y()) + 0.5;
            painter->drawLine(QPointF(left, y), QPointF(right, y));
        }
        if (!drawsX_) continue;
        for (const AxisTick& tick : x_.ticks) {
            if (tick.major != major) continue;
            const double x = std::floor(toScene(plot, tick.value, y_.lo).x()) + 0.5;
            painter->drawLine(QPointF(x, top), QPointF(x, bottom));
        }
    }
    painter->restore();
}

void AxisFrame::paintAxes(QPainter* painter, const QRectF& plot) {
    if (!canMap(plot)) return;
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing, false);
    const double left = std::floor(plot.left()) + 0.5, right = std::floor(plot.right()) + 0.5;
    const double bottom = std::floor(plot.bottom()) + 0.5, top = std::floor(plot.top()) + 0.5;
    const QPen axisPen(frame_colours::axis(), 0);
    const QColor labelColour = frame_colours::label();
    painter->setPen(axisPen);
    painter->drawLine(QPointF(left, top), QPointF(left, bottom));
    if (drawsX_) painter->drawLine(QPointF(left, bottom), QPointF(right, bottom));
    painter->setFont(font_);
    const QFontMetrics metrics(font_);
    // A label that would run into its neighbour gives way (labelledMajorTicks).
    std::vector<double> ys;
    for (const AxisTick& tick : y_.ticks)
        if (tick.major) ys.push_back(std::floor(toScene(plot, x_.lo, tick.value).y()) + 0.5);
    const std::vector<bool> yLabelled = labelledMajorTicks(y_, ys, metrics.height());
    size_t major = 0;
    for (const AxisTick& tick : y_.ticks) {
        if (!tick.major) continue;
        const double y = ys[major];
        painter->setPen(axisPen);
        painter->drawLine(QPointF(left - kTickLength, y), QPointF(left, y));
        if (!yLabelled[major++]) continue;
        const QStaticText& label = text(y_.label(tick.value));
        painter->setPen(labelColour);
        painter->drawStaticText(
            QPointF(left - kTickLength - kLabelGap - label.size().width(), y - label.size().height() / 2), label);
    }
    if (!yTitle_.isEmpty()) {
        // Cut with an ellipsis where the plot is shorter than the title: a
        // short drill-down plot would otherwise run it past the chart's top edge.
        const QStaticText& title = text(metrics.elidedText(yTitle_, Qt::ElideRight, int(plot.height())));
        painter->save();
        painter->translate(plot.left() - yTitleOffset_, (plot.top() + plot.bottom() + title.size().width()) / 2);
        painter->rotate(-90);
        painter->setPen(labelColour);
        painter->drawStaticText(QPointF(0, 0), title);
        painter->restore();
    }
    if (drawsX_) {
        std::vector<double> xs;
        double widest = 0;
        for (const AxisTick& tick : x_.ticks)
            if (tick.major) {
                xs.push_back(std::floor(toScene(plot, tick.value, y_.lo).x()) + 0.5);
                widest = std::max(widest, text(x_.label(tick.value)).size().width());
            }
        const std::vector<bool> xLabelled = labelledMajorTicks(x_, xs, widest);
        size_t majorX = 0;
        for (const AxisTick& tick : x_.ticks) {
            if (!tick.major) continue;
            const double x = xs[majorX];
            painter->setPen(axisPen);
            painter->drawLine(QPointF(x, bottom), QPointF(x, bottom + kTickLength));
            if (!xLabelled[majorX++]) continue;
            const QStaticText& label = text(x_.label(tick.value));
            painter->setPen(labelColour);
            painter->drawStaticText(QPointF(x - label.size().width() / 2, bottom + kTickLength + kLabelGap), label);
        }
        if (!xTitle_.isEmpty()) {
            const QStaticText& title = text(metrics.elidedText(xTitle_, Qt::ElideRight, int(plot.width())));
            painter->setPen(labelColour);
            painter->drawStaticText(QPointF((plot.left() + plot.right() - title.size().width()) / 2,
                                            bottom + kTickLength + kLabelGap + metrics.height() + 1),
                                    title);
        }
    }
    painter->restore();
}

ChartLayerItem::ChartLayerItem(QChart* chart, std::function<void(QPainter*)> paint, qreal z)
    : QGraphicsItem(chart), chart_(chart), paint_(std::move(paint)) {
    setAcceptedMouseButtons(Qt::NoButton);
    setAcceptHoverEvents(false);
    setZValue(z);
}

QRectF ChartLayerItem::boundingRect() const { return chart_->rect(); }

void ChartLayerItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) { paint_(painter); }

void addAxisFrame(QChart* chart, std::shared_ptr<AxisFrame> frame) {
    new ChartLayerItem(
        chart, [chart, frame](QPainter* p) { frame->paintGrid(p, chart->plotArea()); }, ChartLayerItem::kUnderSeries);
    new ChartLayerItem(
        chart, [chart, frame](QPainter* p) { frame->paintAxes(p, chart->plotArea()); }, ChartLayerItem::kOverSeries);
}

namespace {
QAbstractAxis* hiddenAxis(const AxisScale& scale) {
    QAbstractAxis* axis = nullptr;
    if (scale.log) {
        auto* a = new QLogValueAxis;
        a->setBase(10);
        a->setRange(scale.lo, scale.hi);
        axis = a;
    } else {
        auto* a = new QValueAxis;
        a->setRange(scale.lo, scale.hi);
        axis = a;
    }
    axis->setVisible(false);
    return axis;
}

void removeAxes(QChart* chart) {
    for (QAbstractAxis* a : chart->axes()) {
        chart->removeAxis(a);
        delete a;
    }
}
}  // namespace

void setHiddenAxes(QChart* chart, const AxisScale& x, const AxisScale& y) {
    removeAxes(chart);
    QAbstractAxis* ax = hiddenAxis(x);
    QAbstractAxis* ay = hiddenAxis(y);
    chart->addAxis(ax, Qt::AlignBottom);
    chart->addAxis(ay, Qt::AlignLeft);
    for (QAbstractSeries* s : chart->series()) {
        s->attachAxis(ax);
        s->attachAxis(ay);
    }
}

void setBarAxes(QChart* chart, QAbstractBarSeries* series, const QStringList& categories, const QString& xTitle,
                double largest, const QString& yTitle, AxisFrame& frame, int targetTicks) {
    removeAxes(chart);
    auto* ax = new QBarCategoryAxis;
    ax->append(categories);
    ax->setTitleText(xTitle);
    ax->setGridLineVisible(false);
    ax->setLabelsColor(frame_colours::label());
    ax->setTitleBrush(frame_colours::label());
    ax->setLinePenColor(frame_colours::axis());
    const AxisScale y = barAxis(largest, targetTicks);
    QAbstractAxis* ay = hiddenAxis(y);
    chart->addAxis(ax, Qt::AlignBottom);
    chart->addAxis(ay, Qt::AlignLeft);
    series->attachAxis(ax);
    series->attachAxis(ay);
    frame.setDrawsX(false);
    frame.setX(linearAxis(0, 1, 1));  // bars are placed by the category axis
    frame.setY(y, yTitle);
    frame.fitMargins(chart);
}

}  // namespace mlk
