#include "widgets/charts/report_charts.h"

#include <QApplication>
#include <QBarSeries>
#include <QBarSet>
#include <QBuffer>
#include <QChart>
#include <QGraphicsScene>
#include <QImage>
#include <QFontMetricsF>
#include <QLegend>
#include <QLegendMarker>
#include <QAreaSeries>
#include <QLineSeries>
#include <QPainter>
#include <QScatterSeries>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "widgets/charts/axis_frame.h"
#include "core/metrics/run_stats.h"
#include "widgets/charts/axis_rules.h"
#include "widgets/data/palette.h"

namespace mlk::report {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QFont chart_font(qreal pt, bool bold = false) {
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPointSizeF(pt);
    f.setBold(bold);
    return f;
}

QChart* new_chart(const ChartSpec& spec) {
    auto* chart = new QChart;
    chart->setTheme(QChart::ChartThemeLight);
    chart->setAnimationOptions(QChart::NoAnimation);
    chart->setBackgroundBrush(Qt::white);
    chart->setBackgroundRoundness(0);
    chart->setMargins(QMargins(2, 2, 2, 2));
    chart->setTitle(spec.title);
    chart->setTitleFont(chart_font(10, true));
    chart->legend()->setAlignment(Qt::AlignBottom);
    chart->legend()->setFont(chart_font(7.5));
    chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);
    return chart;
}

// Renders the chart (owned by the scene from here on) into PNG bytes.
QByteArray render_png(QChart* chart, QSize size, qreal ratio) {
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        throw std::runtime_error("report charts need a QApplication (Qt Charts draws through QGraphicsScene)");
    QGraphicsScene scene;
    scene.addItem(chart);
    chart->setGeometry(QRectF(QPointF(0, 0), QSizeF(size)));
    // Let the chart lay out its axes, legend and series items.
    for (int i = 0; i < 3; ++i) QCoreApplication::sendPostedEvents();
    QImage img(QSize(qRound(size.width() * ratio), qRound(size.height() * ratio)), QImage::Format_ARGB32_Premultiplied);
    img.setDevicePixelRatio(ratio);
    img.fill(Qt::white);
    {
        QPainter p(&img);
        p.setRenderHint(QPainter::Antialiasing);
        p.setRenderHint(QPainter::TextAntialiasing);
        scene.render(&p, QRectF(QPointF(0, 0), QSizeF(size)), QRectF(QPointF(0, 0), QSizeF(size)));
    }
    QByteArray png;
    QBuffer buf(&png);
    buf.open(QIODevice::WriteOnly);
    if (!img.convertToFormat(QImage::Format_RGB32).save(&buf, "PNG"))
        throw std::runtime_error("cannot encode a chart as PNG");
    return png;
}

QString list_x(const std::vector<double>& xs, bool integer) {
    QStringList parts;
    for (size_t i = 0; i < xs.size() && i < 8; ++i)
        parts << (integer ? QString::number((qint64)std::llround(xs[i])) : QString::number(xs[i], 'g', 6));
    if (xs.size() > 8) parts << QStringLiteral("... (%1 more)").arg(xs.size() - 8);
    return parts.join(QStringLiteral(", "));
}

void hide_legend(QChart* chart, QAbstractSeries* s) {
    for (QLegendMarker* m : chart->legend()->markers(s)) m->setVisible(false);
}

}  // namespace

QString png_data_url(const QByteArray& png) {
    return QStringLiteral("data:image/png;base64,") + QString::fromLatin1(png.toBase64());
}

QString short_number(double v) { return QString::fromStdString(value_text(v, 4)); }

RenderedChart render_xy_chart(const ChartSpec& spec, const std::vector<ChartRun>& runs) {
    RenderedChart out;
    out.size = spec.size;
    const bool logY = spec.yScale == Scale::log, logX = spec.xScale == Scale::log;

    // ---- ranges -----------------------------------------------------------
    double xlo = INFINITY, xhi = -INFINITY;
    std::vector<double> ys;  // finite values in the x range
    bool anyFloor = false, anyTopEdge = false, anyBottomEdge = false;
    for (const auto& r : runs)
        for (const auto& p : r.points) {
            if (!std::isfinite(p.x) || (logX && p.x <= 0)) continue;
            xlo = std::min(xlo, p.x);
            xhi = std::max(xhi, p.x);
            if (std::isnan(p.y) || p.y == INFINITY) {
                anyTopEdge = true;
            } else if (p.y == -INFINITY) {
                anyBottomEdge = true;
            } else {
                anyFloor = anyFloor || (logY && p.y <= 0);
                ys.push_back(p.y);
            }
        }
    // Smoothed lines and bands are drawn too: their values are in range,
    // and so are their steps (a seed group has no raw line of its own).
    // (On a log axis the floor comes from the raw values alone, as on
    // screen: a smoothed tail decaying towards 0 is raised to it.)
    std::vector<double> drawnYs;
    for (const auto& r : runs)
        for (const auto* line : {&r.smooth, &r.lo, &r.hi})
            for (const auto& p : *line)
                if (std::isfinite(p.x) && std::isfinite(p.y) && !(logX && p.x <= 0)) {
                    drawnYs.push_back(p.y);
                    xlo = std::min(xlo, p.x);
                    xhi = std::max(xhi, p.x);
                }
    if (!std::isnan(spec.xMin)) xlo = spec.xMin;
    if (!std::isnan(spec.xMax)) xhi = spec.xMax;
    if (!(xlo <= xhi)) xlo = logX ? 1 : 0, xhi = logX ? 10 : 1;
    if (xlo == xhi) {
        if (logX) xlo /= 2, xhi *= 2;
        else xlo -= 1, xhi += 1;
    }
    if (logX && std::isnan(spec.xMin) && std::isnan(spec.xMax)) {
        const YRange decades = wholeDecades(xlo, xhi);
        xlo = decades.lo, xhi = decades.hi;
    }

    // ---- y: the rules every chart follows (axis_rules.h), every value in view
    double floorY = kNaN, topY = kNaN, bottomY = kNaN;
    ValueAxisOptions yOptions;
    yOptions.log = logY;
    yOptions.wholeRange = true;
    yOptions.nonNegative = spec.nonNegative;
    yOptions.markersAtTop = anyTopEdge;
    yOptions.markersAtBottom = anyBottomEdge;
    if (logY) {
        const double rawFloor = logFloorFor(smallestPositive(ys));
        const bool lineBelow = std::any_of(drawnYs.begin(), drawnYs.end(), [&](double v) { return v < rawFloor; });
        if (anyFloor || anyBottomEdge || lineBelow) {
            floorY = rawFloor;
            out.floor = floorY;
            yOptions.floor = floorY;
            yOptions.valuesAtFloor = true;
        }
    }
    for (const double v : drawnYs) ys.push_back(logY && !std::isnan(floorY) ? std::max(v, floorY) : v);
    AxisScale y = valueAxis(ys, yOptions);
    if (!std::isnan(spec.yMin) || !std::isnan(spec.yMax)) {
        const double lo = std::isnan(spec.yMin) ? y.lo : spec.yMin, hi = std::isnan(spec.yMax) ? y.hi : spec.yMax;
        y = logY ? logAxis(lo, hi) : linearAxis(lo, hi, yOptions.targetTicks);
    }
    if (anyTopEdge) topY = markerValue(y, true);
    if (anyBottomEdge) bottomY = logY ? floorY : markerValue(y, false);  // -inf on a log axis: at the floor
    const double axLo = y.lo, axHi = y.hi;
    const AxisScale x = logX ? logAxis(xlo, xhi) : linearAxis(xlo, xhi, 6, spec.integerX ? 1 : 0);

    QChart* chart = new_chart(spec);
    auto attach = [&](QAbstractSeries* s) { chart->addSeries(s); };

    std::vector<QAbstractSeries*> hidden;
    const QString xWord = spec.xLabel.isEmpty() ? QStringLiteral("x") : spec.xLabel.section(QStringLiteral(" ("), 0, 0);
    // A line of finite points, at the floor where a log axis cannot show them.
    const auto onAxis = [&](const std::vector<XY>& line) {
        QList<QPointF> out;
        for (const auto& p : line)
            if (std::isfinite(p.x) && std::isfinite(p.y) && !(logX && p.x <= 0))
                out << QPointF(p.x, logY && !std::isnan(floorY) && p.y < floorY ? floorY : p.y);
        return out;
    };
    for (const auto& r : runs) {
        if (!r.lo.empty() && r.lo.size() == r.hi.size()) {
            auto *upper = new QLineSeries, *lower = new QLineSeries;
            upper->replace(onAxis(r.hi));
            lower->replace(onAxis(r.lo));
            auto* band = new QAreaSeries(upper, lower);
            QColor fill = r.color;
            fill.setAlpha(60);
            band->setBrush(fill);
            band->setPen(Qt::NoPen);
            attach(band);
            hidden.push_back(band);
        }
        const bool smoothed = !r.smooth.empty();
        std::vector<QList<QPointF>> segments(1);
        QList<QPointF> floorPts, edgePts;
        std::vector<double> floorXs, nanXs, infXs;
        int drawn = 0;
        for (const auto& p : r.points) {
            if (!std::isfinite(p.x) || (logX && p.x <= 0)) continue;
            if (std::isnan(p.y) || std::isinf(p.y)) {
                const double y = (std::isnan(p.y) || p.y > 0) ? topY : bottomY;
                edgePts << QPointF(p.x, y);
                (std::isnan(p.y) ? nanXs : infXs).push_back(p.x);
                if (!segments.back().isEmpty()) segments.emplace_back();
                continue;
            }
            double y = p.y;
            if (logY && y <= 0) {
                y = floorY;
                floorPts << QPointF(p.x, y);
                floorXs.push_back(p.x);
            }
            segments.back() << QPointF(p.x, y);
            ++drawn;
        }
        out.finitePoints += drawn;
        out.floorPoints += (int)floorXs.size();
        out.edgePoints += (int)edgePts.size();

        bool named = false;
        for (const auto& seg : segments) {
            if (seg.isEmpty() && named) continue;
            QXYSeries* s;
            if (spec.lines) {
                s = new QLineSeries;
                // Under a smoothed line the raw one is faint, as on screen.
                QColor c = r.color;
                if (smoothed) c.setAlpha(70);
                QPen pen(c);
                pen.setWidthF(smoothed ? 1.0 : 1.8);
                s->setPen(pen);
                // As the screen draws it: a line through the points, a dot
                // only where a point has no neighbour to join.
                s->setPointsVisible(seg.size() == 1);
                out.markedPoints += seg.size() == 1 ? 1 : 0;
                s->setMarkerSize(5);
            } else {
                auto* sc = new QScatterSeries;
                sc->setMarkerShape(QScatterSeries::MarkerShapeCircle);
                sc->setMarkerSize(5);
                QColor c = r.color;
                c.setAlpha(150);
                sc->setColor(c);
                sc->setBorderColor(c);
                s = sc;
            }
            if (!smoothed) s->setColor(r.color);
            if (!spec.lines) {
                QColor c = r.color;
                c.setAlpha(150);
                s->setColor(c);
            }
            s->setName(r.name);
            s->replace(seg);
            attach(s);
            if (named || smoothed) hidden.push_back(s);
            named = true;
        }
        if (smoothed) {
            auto* s = new QLineSeries;
            QPen pen(r.color);
            pen.setWidthF(1.8);
            s->setPen(pen);
            s->setName(r.name);
            s->replace(onAxis(r.smooth));
            attach(s);
        }
        if (!floorPts.isEmpty()) {
            auto* s = new QScatterSeries;
            s->setMarkerShape(QScatterSeries::MarkerShapeCircle);
            s->setMarkerSize(8);
            s->setColor(Qt::white);
            s->setBorderColor(r.color);
            s->setPen(QPen(r.color, 1.5));
            s->replace(floorPts);
            attach(s);
            hidden.push_back(s);
            out.notes << QStringLiteral(
                             "%1: %2 value(s) \u2264 0 at %3 %4 drawn as open circles at the floor %5 "
                             "(log scale cannot show them).")
                             .arg(r.name, QString::number(floorXs.size()), xWord, list_x(floorXs, spec.integerX),
                                  short_number(floorY));
        }
        if (!edgePts.isEmpty()) {
            auto* s = new QScatterSeries;
            s->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
            s->setMarkerSize(10);
            s->setColor(r.color);
            s->setBorderColor(r.color.darker(140));
            s->replace(edgePts);
            attach(s);
            hidden.push_back(s);
            if (!nanXs.empty())
                out.notes << QStringLiteral("%1: %2 NaN value(s) at %3 %4, drawn as triangles at the top edge.")
                                 .arg(r.name, QString::number(nanXs.size()), xWord, list_x(nanXs, spec.integerX));
            if (!infXs.empty())
                out.notes << QStringLiteral("%1: %2 infinite value(s) at %3 %4, drawn as triangles at the %5 edge.")
                                 .arg(r.name, QString::number(infXs.size()), xWord, list_x(infXs, spec.integerX),
                                      logY ? QStringLiteral("top (+inf) / floor (-inf)")
                                           : QStringLiteral("top (+inf) / bottom (-inf)"));
        }
        if (r.points.empty() && r.smooth.empty())
            out.notes << QStringLiteral("%1: no data for this chart.").arg(r.name);
    }

    if (spec.diagonal) {
        auto* d = new QLineSeries;
        d->setName(QStringLiteral("y = x"));
        QPen pen(palette::neutralInk());
        pen.setStyle(Qt::DashLine);
        pen.setWidthF(1.2);
        d->setPen(pen);
        const double lo = std::max(xlo, axLo), hi = std::min(xhi, axHi);
        d->replace(QList<QPointF>{{lo, lo}, {hi, hi}});
        attach(d);
    }
    // Legend-only entries explaining the special markers.
    if (out.edgePoints > 0) {
        auto* s = new QScatterSeries;
        s->setName(QStringLiteral("NaN/Inf"));
        s->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
        s->setMarkerSize(10);
        s->setColor(palette::nonFiniteMarker());
        attach(s);
    }
    if (out.floorPoints > 0) {
        auto* s = new QScatterSeries;
        s->setName(QStringLiteral("\u2264 0 at floor"));
        s->setMarkerShape(QScatterSeries::MarkerShapeCircle);
        s->setMarkerSize(8);
        s->setColor(Qt::white);
        s->setBorderColor(palette::floorMarker());
        s->setPen(QPen(palette::floorMarker(), 1.5));
        attach(s);
    }
    setHiddenAxes(chart, x, y);
    for (QAbstractSeries* s : hidden) hide_legend(chart, s);
    // A bottom legend is one row, and Qt elides names that do not fit it: configurations that
    // differ only at the end ("-mis", "-mis-bn") then read the same. Many runs, or long names,
    // go in a column on the right.
    {
        // Qt splits a bottom legend's width evenly between its entries (the markers do not
        // exist yet: the runs' names and the legend-only entries are what it will show).
        const QFontMetricsF fm(chart->legend()->font());
        qreal widest = 0;
        for (const ChartRun& r : runs) widest = std::max(widest, fm.horizontalAdvance(r.name));
        const int entries = (int)runs.size() + (out.edgePoints > 0) + (out.floorPoints > 0) + (spec.diagonal ? 1 : 0);
        const qreal share = (spec.size.width() - 16) / std::max(entries, 1);
        if (runs.size() > 4 || widest + 40 > share) chart->legend()->setAlignment(Qt::AlignRight);
    }
    auto frame = std::make_shared<AxisFrame>(chart_font(8));
    frame->setX(x, spec.xLabel);
    frame->setY(y, spec.yLabel);
    addAxisFrame(chart, frame);
    frame->fitMargins(chart);

    out.png = render_png(chart, spec.size, spec.pixelRatio);
    return out;
}

RenderedChart render_bar_chart(const ChartSpec& spec, const QStringList& categories, const std::vector<BarRun>& runs,
                               int labelPrecision) {
    RenderedChart out;
    out.size = spec.size;
    QChart* chart = new_chart(spec);
    auto* series = new QBarSeries;
    double hi = 0;
    for (const auto& r : runs) {
        auto* set = new QBarSet(r.name);
        set->setColor(r.color);
        set->setBorderColor(r.color.darker(130));
        set->setLabelFont(chart_font(7));
        set->setLabelColor(Qt::black);
        std::vector<double> nanAt;
        for (int i = 0; i < categories.size(); ++i) {
            double v = i < (int)r.values.size() ? r.values[i] : 0.0;
            if (!std::isfinite(v)) {
                nanAt.push_back(i);
                v = 0;
            }
            hi = std::max(hi, v);
            *set << v;
            ++out.finitePoints;
        }
        if (!nanAt.empty()) {
            QStringList cats;
            for (double i : nanAt) cats << categories[(int)i];
            out.notes << QStringLiteral("%1: non-finite value(s) at %2 drawn as 0.").arg(r.name, cats.join(", "));
            out.edgePoints += (int)nanAt.size();
        }
        series->append(set);
    }
    series->setLabelsVisible(true);
    series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
    series->setLabelsPrecision(labelPrecision);
    chart->addSeries(series);
    auto frame = std::make_shared<AxisFrame>(chart_font(8));
    addAxisFrame(chart, frame);
    setBarAxes(chart, series, categories, spec.xLabel, hi, spec.yLabel, *frame);
    for (QAbstractAxis* a : chart->axes(Qt::Horizontal)) {
        a->setTitleFont(chart_font(8, true));
        a->setLabelsFont(chart_font(8));
    }
    chart->legend()->setMarkerShape(QLegend::MarkerShapeRectangle);
    out.png = render_png(chart, spec.size, spec.pixelRatio);
    return out;
}

}  // namespace mlk::report
