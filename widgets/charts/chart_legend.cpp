#include "widgets/charts/chart_legend.h"

#include <QChart>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>
#include <QWidget>

#include <algorithm>
#include <array>

#include "widgets/charts/axis_frame.h"
#include "widgets/charts/chart_style.h"
#include "widgets/data/palette.h"

namespace mlk {

namespace {

// The series of a run that live in the chart (its drawn points do not).
std::array<QXYSeries*, 2> chartSeriesOf(const Trace& trace) { return {trace.nan, trace.inf}; }

}  // namespace

ChartLegend::ChartLegend(QChart* chart, ChartTraces& traces, const QWidget* view, QObject* parent)
    : QObject(parent), chart_(chart), traces_(traces), view_(view), item_(new LegendItem(chart)) {
    // Qt Charts' own legend stays empty and hidden: see legend_item.h.
    chart_->legend()->hide();
    item_->setZValue(ChartLayerItem::kOverSeries);
    connect(item_, &LegendItem::runClicked, this, &ChartLegend::runClicked);
    connect(item_, &LegendItem::groupClicked, this, &ChartLegend::groupClicked);
}

void ChartLegend::setAxes(QAbstractAxis* x, QAbstractAxis* y) {
    x_ = x;
    y_ = y;
}

void ChartLegend::attach(QXYSeries* series) {
    chart_->addSeries(series);
    series->attachAxis(x_);
    series->attachAxis(y_);
}

void ChartLegend::replaceYAxis(QAbstractAxis* y) {
    y_ = y;
    for (auto& [id, trace] : traces_.traces()) {
        if (!trace.plotted()) continue;
        for (QXYSeries* s : chartSeriesOf(trace)) {
            s->clear();
            s->attachAxis(y_);
        }
    }
}

void ChartLegend::create(Trace& trace) {
    trace.raw = new QLineSeries(this);
    trace.smooth = new QLineSeries(this);
    trace.nan = new QScatterSeries;
    trace.inf = new QScatterSeries;
    for (QXYSeries* s : chartSeriesOf(trace)) attach(s);
    trace.nan->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle);
    trace.nan->setMarkerSize(10);
    trace.inf->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
    trace.inf->setMarkerSize(11);
    style(trace);
}

void ChartLegend::destroy(Trace& trace) {
    if (!trace.plotted()) return;
    for (QXYSeries* s : chartSeriesOf(trace)) {
        chart_->removeSeries(s);
        delete s;
    }
    delete trace.raw;
    delete trace.smooth;
    trace.raw = trace.smooth = nullptr;
    trace.nan = trace.inf = nullptr;
}

void ChartLegend::style(Trace& trace) {
    if (!trace.plotted()) return;
    QColor faint = trace.colour;
    faint.setAlpha(kRawAlpha);
    QPen rawPen(faint);
    rawPen.setWidthF(kLineWidth * ChartStyle::instance().lineScale());
    trace.raw->setPen(rawPen);
    QPen smoothPen(trace.colour);
    smoothPen.setWidthF(kLineWidth * ChartStyle::instance().lineScale());
    trace.smooth->setPen(smoothPen);
    trace.smooth->setName(trace.name);
    trace.raw->setName(trace.name + tr(" (raw)"));
    for (QScatterSeries* markers : {trace.nan, trace.inf}) {
        markers->setColor(trace.colour);
        markers->setBorderColor(palette::nonFiniteMarker());
    }
    const bool shown = !traces_.isHidden(trace.runId);
    // With smoothing off the "smoothed" line is the raw data: one line is enough.
    trace.raw->setVisible(shown && traces_.smoothing() > 0);
    trace.smooth->setVisible(shown);
    trace.nan->setVisible(shown);
    trace.inf->setVisible(shown);
}

void ChartLegend::syncEntries() {
    // In the runs' order, a seed group where its first run would be.
    std::vector<std::pair<qint64, LegendEntry>> ordered;
    for (const auto& [id, trace] : traces_.traces())
        if (trace.plotted() && !traces_.isGrouped(id))
            ordered.push_back(
                {id,
                 {id, {}, trace.colour, trace.legendName, trace.legendNameWithId, trace.name, traces_.isHidden(id)}});
    for (const auto& [key, group] : traces_.groups()) {
        const qint64 first = *std::min_element(group.members.begin(), group.members.end());
        ordered.push_back({first,
                           {group.members.front(), key, group.colour, group.legendName, group.legendNameWithId,
                            group.name, traces_.allHidden(group)}});
    }
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<LegendEntry> entries;
    entries.reserve(ordered.size());
    for (auto& [at, entry] : ordered) entries.push_back(std::move(entry));
    item_->setTextColour(view_->palette().color(QPalette::WindowText));
    item_->setEntries(std::move(entries));
}

double ChartLegend::place(const QRectF& area) {
    // A fifth of a 200 px chart is two rows of the default font: a third row
    // left the plot of a 200 px chart about 80 px.
    const int maxRows = std::clamp(int(area.height() / 5 / item_->rowHeight()), 1, 4);
    const double height = item_->layOut(area.width(), maxRows);
    item_->setPos(area.left(), area.bottom() - height);
    return height;
}

void ChartLegend::setFont(const QFont& font) { item_->setFont(font); }

}  // namespace mlk
