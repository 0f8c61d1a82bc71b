#include "widgets/charts/chart_legend.h"

#include <QChart>
#include <QFontMetricsF>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QWidget>

#include <algorithm>
#include <array>

#include "widgets/charts/chart_style.h"
#include "widgets/data/palette.h"

namespace mlk {

namespace {

void setLegendEntryVisible(QChart* chart, QAbstractSeries* series, bool visible) {
    for (QLegendMarker* marker : chart->legend()->markers(series)) marker->setVisible(visible);
}

// The series of a run that live in the chart (its drawn points do not).
std::array<QXYSeries*, 3> chartSeriesOf(const Trace& trace) { return {trace.legend, trace.nan, trace.inf}; }

}  // namespace

ChartLegend::ChartLegend(QChart* chart, ChartTraces& traces, const QWidget* view, QObject* parent)
    : QObject(parent), chart_(chart), traces_(traces), view_(view) {}

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
    for (auto& [key, group] : traces_.groups())
        if (group.legend) group.legend->attachAxis(y_);
}

void ChartLegend::create(Trace& trace) {
    trace.raw = new QLineSeries(this);
    trace.smooth = new QLineSeries(this);
    trace.legend = new QLineSeries;
    trace.nan = new QScatterSeries;
    trace.inf = new QScatterSeries;
    for (QXYSeries* s : chartSeriesOf(trace)) attach(s);
    trace.nan->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle);
    trace.nan->setMarkerSize(10);
    trace.inf->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
    trace.inf->setMarkerSize(11);
    const qint64 runId = trace.runId;
    for (QLegendMarker* marker : chart_->legend()->markers(trace.legend))
        connect(marker, &QLegendMarker::clicked, this, [this, runId] { emit runClicked(runId); });
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
    trace.legend = nullptr;
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
    trace.legend->setPen(smoothPen);
    trace.legend->setName(nameOf(trace));
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
    applyLegend(trace);
}

void ChartLegend::applyLegend(Trace& trace) {
    setLegendEntryVisible(chart_, trace.nan, false);
    setLegendEntryVisible(chart_, trace.inf, false);
    // Hiding a series also hides its legend entry; a hidden run keeps a dimmed
    // one so the user can click it back.
    QColor label = view_->palette().color(QPalette::WindowText);
    if (traces_.isHidden(trace.runId)) label.setAlpha(90);
    // A run drawn by its seed group has the group's legend entry instead.
    const bool grouped = traces_.isGrouped(trace.runId);
    for (QLegendMarker* marker : chart_->legend()->markers(trace.legend)) {
        marker->setVisible(!grouped);
        marker->setLabelBrush(label);
    }
}

void ChartLegend::syncGroups(ChartTraces::GroupChanges& changes) {
    for (SeedGroup& gone : changes.removed) {
        chart_->removeSeries(gone.legend);
        delete gone.legend;
        gone.legend = nullptr;
    }
    for (auto& [key, group] : traces_.groups()) {
        if (!group.legend) {
            group.legend = new QLineSeries;
            attach(group.legend);
            for (QLegendMarker* marker : chart_->legend()->markers(group.legend))
                connect(marker, &QLegendMarker::clicked, this, [this, key = key] { emit groupClicked(key); });
        }
        group.legend->setName(nameOf(group));
        group.legend->setPen(QPen(group.colour, kLineWidth * ChartStyle::instance().lineScale()));
        QColor label = view_->palette().color(QPalette::WindowText);
        if (traces_.allHidden(group)) label.setAlpha(90);
        for (QLegendMarker* marker : chart_->legend()->markers(group.legend)) marker->setLabelBrush(label);
    }
    // Runs' own legend entries change only when who is grouped changes.
    if (changes.groupingChanged)
        for (auto& [id, trace] : traces_.traces())
            if (trace.plotted()) applyLegend(trace);
}

QString ChartLegend::nameOf(const Trace& trace) const {
    switch (names_) {
        case Names::whole: return trace.legendName;
        case Names::idsFirst: return trace.legendNameWithId;
        case Names::idsOnly: break;
    }
    return runLabel(trace.runId, {}).trimmed();
}

void ChartLegend::fitTo(double width) {
    const QFontMetricsF metrics(chart_->legend()->font());
    // An entry: its marker (about a line high), the gaps around it, its label.
    const double chrome = metrics.height() + 14;
    double needed = 0, idAndMore = 0;
    int entries = 0;
    for (const auto& [id, trace] : traces_.traces())
        if (trace.plotted() && !traces_.isGrouped(id)) {
            ++entries;
            needed += chrome + metrics.horizontalAdvance(trace.legendName);
            idAndMore = std::max(idAndMore, metrics.horizontalAdvance(runLabel(id, QStringLiteral("abcd"))));
        }
    for (const auto& [key, group] : traces_.groups())
        if (group.legend) {
            ++entries;
            needed += chrome + metrics.horizontalAdvance(group.legendName);
        }
    Names names = Names::whole;
    if (needed > width) names = entries && width / entries - chrome < idAndMore ? Names::idsOnly : Names::idsFirst;
    if (names == names_) return;
    names_ = names;
    for (auto& [id, trace] : traces_.traces())
        if (trace.plotted()) trace.legend->setName(nameOf(trace));
    for (auto& [key, group] : traces_.groups())
        if (group.legend) group.legend->setName(nameOf(group));
}

}  // namespace mlk
