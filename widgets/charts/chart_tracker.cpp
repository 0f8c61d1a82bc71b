#include "widgets/charts/chart_tracker.h"

#include <QChart>
#include <QChartView>
#include <QGraphicsEllipseItem>
#include <QObject>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

#include "core/metrics/run_stats.h"
#include "widgets/data/palette.h"
#include "widgets/data/series_math.h"

namespace mlk {

namespace {

QString formatValue(double v) { return QString::fromStdString(value_text(v, 6)); }

// The dot, round although the view paints without antialiasing.
class SmoothEllipseItem : public QGraphicsEllipseItem {
public:
    using QGraphicsEllipseItem::QGraphicsEllipseItem;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override {
        painter->setRenderHint(QPainter::Antialiasing);
        QGraphicsEllipseItem::paint(painter, option, widget);
    }
};

}  // namespace

ChartTracker::ChartTracker(QChartView* view, const ChartTraces& traces, const AxisFrame& frame)
    : view_(view), traces_(traces), frame_(frame), dot_(new SmoothEllipseItem(view->chart())) {
    dot_->setZValue(1000);
    dot_->setPen(QPen(Qt::white, 1.5));
    dot_->hide();
}

QPointF ChartTracker::scenePosOf(const Trace& trace, std::size_t index) const {
    const double x = traces_.xsOf(trace)[index];
    double y = trace.cursor.data.values[index];
    if (std::isnan(y) || y == kInfinity) y = markerValue(frame_.y(), true);
    else if (y == -kInfinity) y = markerValue(frame_.y(), false);
    else if (traces_.log()) y = std::max(y, traces_.logFloor());
    return frame_.toScene(view_->chart()->plotArea(), x, y);
}

std::optional<ChartTracker::Nearest> ChartTracker::nearest(const QPoint& viewPos) const {
    const QRectF plot = view_->chart()->plotArea();
    const QPointF scene = view_->mapToScene(viewPos);
    if (!plot.adjusted(-6, -6, 6, 6).contains(scene) || !frame_.canMap(plot)) return std::nullopt;
    const double xValue = frame_.xAtScene(plot, scene.x());
    const double floor = traces_.logFloor();
    std::optional<Nearest> best;
    double bestDistance = kInfinity;
    const auto consider = [&](const SeedGroup* group, const Trace* trace, std::size_t i, QPointF pos) {
        const double distance = std::hypot(pos.x() - scene.x(), pos.y() - scene.y());
        if (distance >= bestDistance) return;
        bestDistance = distance;
        best = Nearest{group, trace, i, pos};
    };
    for (const auto& [key, group] : traces_.groups()) {
        if (group.aggregated.isEmpty()) continue;
        const std::vector<double>& xs = group.aggregate.xs;
        const auto after = static_cast<std::size_t>(std::lower_bound(xs.begin(), xs.end(), xValue) - xs.begin());
        for (std::size_t i : {after == 0 ? after : after - 1, after}) {
            if (i >= xs.size()) continue;
            const double mean = group.aggregate.mean[i];
            consider(&group, nullptr, i, frame_.toScene(plot, xs[i], traces_.log() ? std::max(mean, floor) : mean));
        }
    }
    for (const auto& [id, trace] : traces_.traces()) {
        if (!traces_.isShown(trace) || trace.cursor.data.size() == 0) continue;
        const std::vector<double>& xs = traces_.xsOf(trace);
        const auto after = static_cast<std::size_t>(std::lower_bound(xs.begin(), xs.end(), xValue) - xs.begin());
        for (std::size_t i : {after == 0 ? after : after - 1, after})
            if (i < xs.size()) consider(nullptr, &trace, i, scenePosOf(trace, i));
    }
    return best;
}

QString ChartTracker::describe(const Nearest& nearest) const {
    if (const SeedGroup* group = nearest.group) {
        const SeedAggregate& a = group->aggregate;
        const std::size_t i = nearest.index;
        return QObject::tr(
                   "<b>%1</b><br>step %2<br>mean of %3 runs: %4<br>min \u2013 max: %5 \u2013 %6<br>(smoothed "
                   "values)<br><span style='color:%7'>right-click to drill down into one of them</span>")
            .arg(group->name.toHtmlEscaped())
            .arg(static_cast<qint64>(a.steps[i]))
            .arg(a.runs[i])
            .arg(formatValue(a.mean[i]), formatValue(a.lo[i]), formatValue(a.hi[i]), palette::secondaryText().name());
    }
    const Trace& trace = *nearest.trace;
    const double raw = trace.cursor.data.values[nearest.index];
    const double smoothed = nearest.index < trace.smoothed.size() ? trace.smoothed[nearest.index] : std::nan("");
    QString rawText = formatValue(raw);
    if (traces_.log() && raw <= 0) rawText += QObject::tr(" (drawn at floor)");
    QString where = QObject::tr("step %1").arg(static_cast<qint64>(trace.cursor.data.steps[nearest.index]));
    if (traces_.xAxis() == ChartXAxis::wallTime)
        where += QObject::tr(" at %1 s")
                     .arg(trace.elapsed[nearest.index], 0, 'f', trace.elapsed[nearest.index] < 100 ? 2 : 0);
    return QObject::tr(
               "<b>%1</b><br>%2<br>raw: %3<br>smoothed: %4%5<br><span style='color:%6'>right-click to drill down"
               "</span>")
        .arg(trace.name.toHtmlEscaped(), where, rawText,
             std::isfinite(raw) ? formatValue(smoothed) : QObject::tr("n/a"),
             othersAtStep(trace, trace.cursor.data.steps[nearest.index]), palette::secondaryText().name());
}

// Every other shown run's raw value at the same step, largest first (NaN
// last), as TensorBoard's and W&B's hover list every run at the x under the
// mouse; "" with no other run at that step.
QString ChartTracker::othersAtStep(const Trace& nearest, double step) const {
    struct Row {
        double value;
        QString html;
    };
    std::vector<Row> rows;
    for (const auto& [id, trace] : traces_.traces()) {
        if (&trace == &nearest || !traces_.isShown(trace)) continue;
        const auto& steps = trace.cursor.data.steps;
        const auto it = std::lower_bound(steps.begin(), steps.end(), step);
        if (it == steps.end() || *it != step) continue;
        const double v = trace.cursor.data.values[static_cast<std::size_t>(it - steps.begin())];
        rows.push_back({v, QStringLiteral("<span style='color:%1'>\u25a0</span> %2: %3")
                               .arg(trace.colour.name(), trace.name.toHtmlEscaped(), formatValue(v))});
    }
    if (rows.empty()) return {};
    std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
        return std::isnan(b.value) ? !std::isnan(a.value) : a.value > b.value;
    });
    constexpr std::size_t kListed = 12;
    QString html = QObject::tr("<br><b>other runs at this step</b> (raw)");
    for (std::size_t i = 0; i < rows.size() && i < kListed; ++i) html += QStringLiteral("<br>") + rows[i].html;
    if (rows.size() > kListed) html += QObject::tr("<br>\u2026 and %1 more").arg(rows.size() - kListed);
    return html;
}

std::vector<RunStep> ChartTracker::runStepsAt(const QPoint& viewPos) const {
    const auto found = nearest(viewPos);
    if (!found) return {};
    if (const Trace* trace = found->trace)
        return {RunStep{trace->runId, static_cast<qint64>(trace->cursor.data.steps[found->index]), trace->name}};
    std::vector<RunStep> runs;
    const qint64 step = static_cast<qint64>(found->group->aggregate.steps[found->index]);
    QList<qint64> ids = found->group->aggregated;
    std::sort(ids.begin(), ids.end());
    for (qint64 id : ids)
        if (const auto it = traces_.traces().find(id); it != traces_.traces().end())
            runs.push_back(RunStep{id, step, it->second.name});
    return runs;
}

QString ChartTracker::textAt(const QPoint& viewPos) const {
    const auto found = nearest(viewPos);
    return found ? describe(*found) : QString();
}

void ChartTracker::show(const QPoint& viewPos) {
    const auto found = nearest(viewPos);
    if (!found) {
        clear();
        return;
    }
    const double r = 4.5;
    dot_->setRect(QRectF(found->scenePos - QPointF(r, r), QSizeF(2 * r, 2 * r)));
    dot_->setBrush(found->group ? found->group->colour : found->trace->colour);
    dot_->show();
    QToolTip::showText(view_->mapToGlobal(viewPos), describe(*found), view_);
}

bool ChartTracker::shown() const { return dot_->isVisible(); }

void ChartTracker::clear() {
    dot_->hide();
    QToolTip::hideText();
}

}  // namespace mlk
