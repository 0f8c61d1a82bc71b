// The frame of a chart's plot area, painted from two AxisScales
// (axis_rules.h): grid lines under the data; axis lines, ticks, tick labels
// and axis titles over it; the chart's margins fitted to the labels. The live
// metric charts, the drill-down and the report charts all draw their axes
// with it, so an axis reads the same everywhere.
//
// Qt Charts' own axes stay, hidden, as the mapping its series are drawn by:
// their labels cannot follow the rules (QLogValueAxis labels powers of the
// base only), and they re-create and lay out a text document per label on
// every range change (a third of a live chart's zoom redraw, measured).
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsItem>
#include <QHash>
#include <QRectF>
#include <QStaticText>
#include <QString>

#include <functional>
#include <memory>

#include "widgets/charts/axis_rules.h"

QT_BEGIN_NAMESPACE
class QAbstractBarSeries;
class QChart;
class QPainter;
QT_END_NAMESPACE

namespace mlk {

// The frame's colours: the palette's neutral ink (widgets/data/palette.h) at
// the strengths each line needs on the white plot.
namespace frame_colours {
QColor grid();
QColor minorGrid();
QColor axis();
QColor label();
}  // namespace frame_colours

class AxisFrame {
public:
    static constexpr int kOuterMargin = 4;
    static constexpr int kTickLength = 4;
    static constexpr int kLabelGap = 3;  // between a tick and its label

    explicit AxisFrame(const QFont& font = QFont());

    void setFont(const QFont& font);
    const QFont& font() const { return font_; }
    void setX(const AxisScale& scale, const QString& title = {});
    void setY(const AxisScale& scale, const QString& title = {});
    // Off: Qt Charts draws the x axis (a bar chart's categories) and the
    // frame only y.
    void setDrawsX(bool on) { drawsX_ = on; }
    const AxisScale& x() const { return x_; }
    const AxisScale& y() const { return y_; }
    const QString& xTitle() const { return xTitle_; }

    bool canMap(const QRectF& plot) const;
    QPointF toScene(const QRectF& plot, double x, double y) const;
    double xAtScene(const QRectF& plot, double sceneX) const;

    // Height kept free under the x axis' labels for a legend of our own
    // (legend_item.h), which Qt Charts does not know about.
    void setSpaceBelow(int pixels) { spaceBelow_ = pixels; }
    int spaceBelow() const { return spaceBelow_; }
    // The chart's margins (and the legend's top margin when Qt Charts' legend
    // sits under the plot: the chart's margins lie outside the legend) with
    // room for the labels, the titles and the space below. Lays the chart
    // out at once when they change, so a paint or an export right after sees
    // the new plot area.
    void fitMargins(QChart* chart);

    void paintGrid(QPainter* painter, const QRectF& plot) const;  // under the data
    void paintAxes(QPainter* painter, const QRectF& plot);        // over it

private:
    const QStaticText& text(const QString& text);

    QFont font_;
    AxisScale x_, y_;
    QString xTitle_, yTitle_;
    int spaceBelow_ = 0;
    bool drawsX_ = true;
    int yTitleOffset_ = 0;  // from the plot's left edge to the y title's top
    QHash<QString, QStaticText> texts_;
};

// An item over a chart's whole rect that paints through a callback: a layer
// of an AxisFrame over or under Qt Charts' series, or a whole plot.
class ChartLayerItem : public QGraphicsItem {
public:
    // Qt Charts stacks its grid at z 2, axes 3, series 4 and the legend 5.
    static constexpr qreal kUnderSeries = 2.5;
    static constexpr qreal kOverSeries = 4.5;

    ChartLayerItem(QChart* chart, std::function<void(QPainter*)> paint, qreal z);
    QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) override;

private:
    QChart* chart_;
    std::function<void(QPainter*)> paint_;
};

// For a chart whose series Qt Charts draws: the frame's grid under the
// series and its axes over them, as items of the chart (they die with it).
// Hide the chart's own axes; call frame->fitMargins(chart) after each change
// of scales.
void addAxisFrame(QChart* chart, std::shared_ptr<AxisFrame> frame);

// Replaces the chart's axes by hidden Qt Charts axes over x and y (the
// mapping its series are drawn by) and attaches every series to them.
void setHiddenAxes(QChart* chart, const AxisScale& x, const AxisScale& y);

// A bar chart's axes: Qt Charts' category axis along x (it draws the
// category labels and the title), y from barAxis(largest) painted by
// `frame` (added to the chart once, addAxisFrame); the series is attached to
// both. A short chart asks for fewer ticks (targetTicks) so its labels
// do not overlap.
void setBarAxes(QChart* chart, QAbstractBarSeries* series, const QStringList& categories, const QString& xTitle,
                double largest, const QString& yTitle, AxisFrame& frame, int targetTicks = 5);

}  // namespace mlk
