#include "widgets/charts/drilldown_plots.h"

#include <QChart>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>

#include <algorithm>
#include <cmath>
#include <limits>

#include "widgets/charts/axis_rules.h"
#include "widgets/data/palette.h"

namespace mlk {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

QScatterSeries* buildProbabilityPlot(QChart* chart) {
    chart->setTitle(QObject::tr("Training vs rollout probability of sampled tokens"));
    auto* diag = new QLineSeries;
    diag->setName(QObject::tr("y = x (no mismatch)"));
    diag->replace(QList<QPointF>{{0, 0}, {1, 1}});
    QPen dp(palette::neutralInk());
    dp.setStyle(Qt::DashLine);
    dp.setWidthF(1.2);
    diag->setPen(dp);
    auto* scatter = new QScatterSeries;
    scatter->setName(QObject::tr("tokens"));
    scatter->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    scatter->setMarkerSize(6);
    QColor tokens = palette::runColour(1);
    tokens.setAlpha(140);
    scatter->setColor(tokens);
    scatter->setBorderColor(Qt::transparent);
    chart->addSeries(scatter);
    chart->addSeries(diag);  // on top, so the reference stays visible under dense points
    const AxisScale unit = linearAxis(0, 1, 5);
    setHiddenAxes(chart, unit, unit);
    auto frame = std::make_shared<AxisFrame>(chart->font());
    frame->setX(unit, QObject::tr("rollout probability  exp(lp_roll)"));
    frame->setY(unit, QObject::tr("training probability  exp(lp_train)"));
    addAxisFrame(chart, frame);
    frame->fitMargins(chart);
    return scatter;
}

FtPlotter::FtPlotter(QChart* chart) : chart_(chart), frame_(std::make_shared<AxisFrame>(chart->font())) {
    addAxisFrame(chart_, frame_);
}

FtPlot FtPlotter::draw(const QList<QPointF>& points, bool logY) {
    chart_->removeAllSeries();
    chart_->setTitle(QObject::tr("F(t): fraction of tokens with max(\u03C1, 1/\u03C1) > t"));
    FtPlot plot;
    double minPos = kInf, maxY = 0, tMin = kInf, tMax = 0;
    const auto usable = [](QPointF p) { return std::isfinite(p.x()) && std::isfinite(p.y()) && p.x() > 0; };
    for (const QPointF& p : points) {
        if (!usable(p)) continue;
        if (p.y() > 0) minPos = std::min(minPos, p.y());
        maxY = std::max(maxY, p.y());
        tMin = std::min(tMin, p.x());
        tMax = std::max(tMax, p.x());
    }
    plot.floor = logFloorFor(minPos);  // the rule every log axis follows
    QList<QPointF> atFloor;
    for (const QPointF& p : points) {
        if (!usable(p)) {
            ++plot.skipped;
            continue;
        }
        QPointF drawn = p;
        if (logY && p.y() <= 0) {
            drawn.setY(plot.floor);
            atFloor << drawn;
        }
        plot.drawn << drawn;
    }
    plot.atFloor = int(atFloor.size());
    plot.tMin = std::isfinite(tMin) ? tMin : 0;
    plot.tMax = tMax;

    auto* series = new QLineSeries;
    series->setName(QObject::tr("F(t)"));
    series->setPointsVisible(true);
    QPen pen(palette::runColour(1));
    pen.setWidthF(2);
    series->setPen(pen);
    series->replace(plot.drawn);
    chart_->addSeries(series);
    if (!atFloor.isEmpty()) {
        auto* zeros = new QScatterSeries;
        zeros->setName(QObject::tr("F(t) = 0, drawn at %1").arg(plot.floor, 0, 'g', 4));
        zeros->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
        zeros->setMarkerSize(9);
        zeros->setColor(Qt::white);
        zeros->setBorderColor(palette::floorMarker());
        zeros->replace(atFloor);
        chart_->addSeries(zeros);
    }
    chart_->legend()->setVisible(!atFloor.isEmpty());

    const AxisScale x = std::isfinite(tMin) ? logAxisAround(tMin / 1.05, tMax * 1.05) : logAxis(1, 10);
    AxisScale y;
    if (logY) {
        y = logAxisAround(plot.atFloor ? plot.floor : std::min(minPos, 1.0), std::max(1.0, maxY), 0.05);
    } else {
        ValueAxisOptions options;
        options.nonNegative = true;  // a fraction
        std::vector<double> ys;
        for (const QPointF& p : plot.drawn) ys.push_back(p.y());
        y = valueAxis(ys, options);
    }
    setHiddenAxes(chart_, x, y);
    frame_->setX(x, QObject::tr("threshold t (log)"));
    frame_->setY(y, QObject::tr("fraction of tokens"));
    frame_->fitMargins(chart_);
    chart_->update();
    return plot;
}

}  // namespace mlk
