#include "widgets/charts/drilldown_plots.h"

#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QLegend>
#include <QLineSeries>
#include <QScatterSeries>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "core/metrics/catalogue.h"
#include "widgets/charts/axis_rules.h"
#include "widgets/data/palette.h"

namespace mlk {

ProbabilityPlot buildProbabilityPlot(QChart* chart) {
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
    // Rings (no fill: the token's own dot shows through) and the picked token
    // filled, in the highlight colour, over everything.
    auto* worst = new QScatterSeries;
    worst->setName(QObject::tr("largest |\u0394 log p| (Why this token?)"));
    worst->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    worst->setMarkerSize(13);
    worst->setBrush(Qt::NoBrush);
    worst->setPen(QPen(palette::highlightMark(), 1.6));
    auto* picked = new QScatterSeries;
    picked->setName(QObject::tr("shown in Why this token?"));
    picked->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    picked->setMarkerSize(9);
    picked->setColor(palette::highlightMark());
    picked->setBorderColor(palette::highlightMark().darker(150));
    chart->addSeries(worst);
    chart->addSeries(picked);
    const AxisScale unit = linearAxis(0, 1, 5);
    setHiddenAxes(chart, unit, unit);
    auto frame = std::make_shared<AxisFrame>(chart->font());
    frame->setX(unit, QObject::tr("rollout probability  exp(lp_roll)"));
    frame->setY(unit, QObject::tr("training probability  exp(lp_train)"));
    addAxisFrame(chart, frame);
    frame->fitMargins(chart);
    return {scatter, worst, picked};
}

LogProbabilityScatter::LogProbabilityScatter(QChart* chart)
    : chart_(chart), frame_(std::make_shared<AxisFrame>(chart->font())) {
    // The legend would take a row from a small dock: the title says it.
    chart_->setTitle(QObject::tr("p_train vs p_roll (log axes); grey: previous probe"));
    ghost_ = new QScatterSeries;
    ghost_->setName(QObject::tr("previous probe"));
    ghost_->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    ghost_->setMarkerSize(6);
    QColor grey = palette::neutralInk();
    grey.setAlpha(70);
    ghost_->setColor(grey);
    ghost_->setBorderColor(Qt::transparent);
    now_ = new QScatterSeries;
    now_->setName(QObject::tr("this probe"));
    now_->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    now_->setMarkerSize(6);
    QColor tokens = palette::runColour(1);
    tokens.setAlpha(150);
    now_->setColor(tokens);
    now_->setBorderColor(Qt::transparent);
    diagonal_ = new QLineSeries;
    diagonal_->setName(QObject::tr("y = x"));
    QPen dp(palette::neutralInk());
    dp.setStyle(Qt::DashLine);
    dp.setWidthF(1.2);
    diagonal_->setPen(dp);
    for (QAbstractSeries* s : {static_cast<QAbstractSeries*>(ghost_), static_cast<QAbstractSeries*>(now_),
                               static_cast<QAbstractSeries*>(diagonal_)})
        chart_->addSeries(s);  // the ghost under the probe, the diagonal on top
    chart_->legend()->setVisible(false);
    addAxisFrame(chart_, frame_);
    draw({}, {});
}

void LogProbabilityScatter::draw(const QList<QPointF>& now, const QList<QPointF>& ghost) {
    double smallest = 1;
    for (const QList<QPointF>* points : {&now, &ghost})
        for (const QPointF& p : *points)
            for (double v : {p.x(), p.y()})
                if (v > 0 && std::isfinite(v)) smallest = std::min(smallest, v);
    // The log floor every chart uses, showing at least 1e-4..1 and at most
    // 1e-12..1 (below that a token is noise either way).
    floor_ = std::clamp(logFloorFor(smallest), kDefaultLogFloor, 1e-4);
    const auto held = [this](const QList<QPointF>& points) {
        QList<QPointF> out;
        out.reserve(points.size());
        const auto clamp = [this](double v) { return std::isfinite(v) ? std::clamp(v, floor_, 1.0) : floor_; };
        for (const QPointF& p : points) out.append(QPointF(clamp(p.x()), clamp(p.y())));
        return out;
    };
    ghost_->replace(held(ghost));
    now_->replace(held(now));
    diagonal_->replace(QList<QPointF>{{floor_, floor_}, {1, 1}});
    ghost_->setVisible(!ghost.isEmpty());
    const AxisScale axis = logAxis(floor_, 1);
    setHiddenAxes(chart_, axis, axis);
    frame_->setX(axis, QObject::tr("rollout probability  exp(lp_roll)"));
    frame_->setY(axis, QObject::tr("training probability  exp(lp_train)"));
    frame_->fitMargins(chart_);
    chart_->update();
}

FtPlotter::FtPlotter(QChart* chart) : chart_(chart), frame_(std::make_shared<AxisFrame>(chart->font())) {
    addAxisFrame(chart_, frame_);
}

FtPlot FtPlotter::draw(const QList<QPointF>& points, bool logY) {
    chart_->removeAllSeries();
    chart_->setTitle(QObject::tr("F(t): fraction of tokens with max(\u03C1, 1/\u03C1) > t"));
    FtPlot plot;
    double minPos = kInfinity, maxY = 0, tMin = kInfinity, tMax = 0;
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

ProbBuckets probBucketsFrom(const std::vector<std::pair<std::string, double>>& stepMetrics) {
    ProbBuckets b;
    b.categories = {QStringLiteral("[0.1, 1]"), QStringLiteral("[0.01, 0.1)"), QStringLiteral("[1e-3, 0.01)"),
                    QStringLiteral("[1e-4, 1e-3)"), QStringLiteral("[0, 1e-4)")};
    const auto value = [&](std::string_view name, int& found) {
        for (const auto& [n, v] : stepMetrics)
            if (n == name) return ++found, v;
        return std::numeric_limits<double>::quiet_NaN();
    };
    int found = 0, counted = 0;
    for (size_t i = 0; i < std::size(kProbBucketMetrics); ++i) {
        const ProbBucketMetricNames& m = kProbBucketMetrics[i];
        b.tokenShare << value(m.frac, found);
        b.k3Share << value(m.k3_share, found);
        b.absDiff << value(m.abs_diff, found);
        // Each decade's token count under its name (steps stored without the
        // counts show the shares alone).
        const double n = value(m.count, counted);
        if (std::isfinite(n)) b.categories[int(i)] += QObject::tr("\n%1 tokens").arg(qint64(n));
    }
    b.stored = found == 3 * int(std::size(kProbBucketMetrics));
    return b;
}

ProbBucketPlotter::ProbBucketPlotter(QChart* shares, QChart* diffs)
    : shares_(shares),
      diffs_(diffs),
      sharesFrame_(std::make_shared<AxisFrame>(shares->font())),
      diffsFrame_(std::make_shared<AxisFrame>(diffs->font())) {
    addAxisFrame(shares_, sharesFrame_);
    addAxisFrame(diffs_, diffsFrame_);
}

QString ProbBucketPlotter::draw(const ProbBuckets& b) {
    const auto bars = [](const QString& name, const QList<qreal>& values, const QColor& colour, double& largest) {
        auto* set = new QBarSet(name);
        set->setColor(colour);
        set->setBorderColor(colour);
        set->setLabelColor(palette::neutralInk());
        for (qreal v : values) {
            const qreal shown = std::isfinite(v) ? v : 0;  // an absent value draws no bar
            *set << shown;
            largest = std::max(largest, double(shown));
        }
        return set;
    };
    const auto plot = [](QChart* chart, const QString& title, const QList<QBarSet*>& sets) {
        chart->removeAllSeries();
        chart->setTitle(title);
        auto* series = new QBarSeries;
        for (QBarSet* s : sets) series->append(s);
        series->setLabelsVisible(true);
        series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
        series->setLabelsFormat(QStringLiteral("@value"));
        series->setLabelsPrecision(2);
        series->setBarWidth(0.8);  // wide enough for a label like 0.00087 over each of two bars
        chart->addSeries(series);
        return series;
    };
    const QString xTitle = QObject::tr("rollout probability  p = exp(lp_roll)");
    double top = 0, topDiff = 0;
    QBarSeries* shares = plot(shares_, QObject::tr("Where the tokens are, and where the K3 KL comes from"),
                              {bars(QObject::tr("share of tokens"), b.tokenShare, palette::runColour(1), top),
                               bars(QObject::tr("share of K3 KL"), b.k3Share, palette::runColour(2), top)});
    // Headroom over the tallest bar: its value label sits above it.
    // Two charts share the tab's height: three ticks keep their labels apart.
    setBarAxes(shares_, shares, b.categories, xTitle, std::max(1.1 * top, 0.1), QObject::tr("share of the step"),
               *sharesFrame_, 3);
    shares_->legend()->setVisible(true);
    QBarSeries* diffs =
        plot(diffs_, QObject::tr("Mean |\u0394 log p| by rollout probability"),
             {bars(QObject::tr("mean |lp_train \u2212 lp_roll|"), b.absDiff, palette::runColour(3), topDiff)});
    setBarAxes(diffs_, diffs, b.categories, xTitle, 1.25 * topDiff, QObject::tr("mean |\u0394 log p|"), *diffsFrame_,
               3);
    diffs_->legend()->setVisible(false);
    sharesFrame_->fitMargins(shares_);
    diffsFrame_->fitMargins(diffs_);
    if (!b.stored) return QObject::tr("This step has no rollout-probability buckets (recorded by an older version).");
    QString tail;
    for (int i = int(b.categories.size()) - 1; i >= 0 && tail.isEmpty(); --i)
        if (b.tokenShare[i] > 0) tail = b.categories[i].section(QLatin1Char('\n'), 0, 0);
    return QObject::tr(
               "Buckets by decade of the rollout probability; a bar of K3 share above its token share "
               "marks a decade that carries more than its part of the mismatch. Lowest decade with tokens: %1.")
        .arg(tail.isEmpty() ? QObject::tr("none") : tail.toHtmlEscaped());  // the panel shows notes as rich text
}

}  // namespace mlk
