#include "widgets/charts/metric_chart.h"

#include <QChart>
#include <QContextMenuEvent>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMenu>
#include <QMouseEvent>
#include <QScatterSeries>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>

#include "core/metrics/catalogue.h"
#include "kernels/cpu/features.h"
#include "widgets/charts/chart_menu.h"
#include "widgets/charts/chart_style.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/palette.h"

namespace mlk {

namespace {

// Qt Charts stacks its series at z 4: the plot (grid, lines, axes) goes just
// under them, so the NaN/Inf markers stay on top of the lines.
constexpr qreal kPlotZ = 3.5;

QFont smallerFont(QFont font, double points) {
    font.setPointSizeF(points);
    return font;
}

}  // namespace

MetricChart::MetricChart(RunDataStore* data, const QString& metric, QWidget* parent)
    : QChartView(parent), data_(data), metric_(metric), title_(metricTitle(metric)) {
    buildChart();
    // No antialiasing for the frame: axis and grid lines are axis-aligned (and
    // crisper without it), and antialiased grid lines would be ~10% of a zoom
    // redraw. Text keeps its own antialiasing; the data lines and the hover
    // dot set theirs.
    setRenderHint(QPainter::Antialiasing, false);
    // The chart background covers the viewport: no second fill under it.
    viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
    // A zoom moves the marker items: a BSP index measures slower than none.
    scene()->setItemIndexMethod(QGraphicsScene::NoIndex);
    // Repaint the viewport as one rectangle: with the default minimal update
    // the union of ~40 changed items' rects becomes a many-rect clip region,
    // and Qt 6.4 then rasterises each line segment against it (and hands the
    // spans to its GUI thread pool): measured 7x slower paints.
    setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
    setMouseTracking(true);
    viewport()->setMouseTracking(true);
    setMinimumSize(kMinimumWidth, 200);

    tracker_.emplace(this, traces_, frame_);
    zoomer_ = new ChartZoomer(this, frame_);
    connect(zoomer_, &ChartZoomer::zoomRequested, this, &MetricChart::setXRange);
    connect(zoomer_, &ChartZoomer::resetRequested, this, &MetricChart::resetXRange);

    redrawTimer_.setSingleShot(true);
    redrawTimer_.setInterval(kRedrawDelayMs);
    connect(&redrawTimer_, &QTimer::timeout, this, [this] {
        // A hidden chart (another tab) stays dirty and redraws when shown.
        if (isVisible()) redrawNow();
    });
    connect(data_, &RunDataStore::dataChanged, this, [this](const QList<qint64>& runIds) {
        const auto& filter = traces_.visibleFilter();
        const bool concernsUs =
            !filter || std::any_of(runIds.begin(), runIds.end(), [&](qint64 id) { return filter->contains(id); });
        if (concernsUs) scheduleRedraw();
    });
    connect(data_, &RunDataStore::runsChanged, this, &MetricChart::scheduleRedraw);
    connect(&ChartStyle::instance(), &ChartStyle::changed, this, [this] {
        applyFonts();
        for (auto& [id, trace] : traces_.traces()) legend_->style(trace);
        lines_.restyle();
        frame_.fitMargins(chart());
        scheduleRedraw();
    });
    scheduleRedraw();
}

MetricChart::~MetricChart() = default;

// --- Chart skeleton ----------------------------------------------------------

void MetricChart::buildChart() {
    QChart* c = chart();
    c->setBackgroundRoundness(0);
    c->setMargins(
        QMargins(AxisFrame::kOuterMargin, AxisFrame::kOuterMargin, AxisFrame::kOuterMargin, AxisFrame::kOuterMargin));
    c->layout()->setContentsMargins(0, 0, 0, 0);
    legend_ = new ChartLegend(c, traces_, this, this);
    applyFonts();
    connect(legend_, &ChartLegend::runClicked, this, &MetricChart::runLegendClicked);
    connect(legend_, &ChartLegend::groupClicked, this, &MetricChart::toggleGroupHidden);
    // The line of the entry under the mouse over the others (W&B and Plotly
    // do the same): eight palette colours, and a ninth run repeats the first.
    connect(legend_->item(), &LegendItem::hovered, this, [this](qint64 runId, const QString& groupKey) {
        setEmphasis(runId, groupKey);
        emit legendHovered(runId, groupKey);
    });

    // Hidden: they hold the range the markers are placed by; the frame
    // (axis_frame.h) paints the visible axes.
    xAxis_ = new QValueAxis;
    c->addAxis(xAxis_, Qt::AlignBottom);
    xAxis_->setVisible(false);
    installYAxis();

    plotItem_ = new ChartLayerItem(
        c, [this](QPainter* painter) { paintPlot(painter); }, kPlotZ);
}

void MetricChart::applyFonts() {
    const double scale = ChartStyle::instance().fontScale();
    QChart* c = chart();
    QFont titleFont = smallerFont(c->titleFont(), 10 * scale);
    titleFont.setBold(true);
    c->setTitleFont(titleFont);
    frame_.setFont(smallerFont(c->font(), 8 * scale));
    legend_->setFont(smallerFont(c->font(), 8 * scale));
    updateTitle();
}

void MetricChart::installYAxis() {
    if (yAxis_) {
        chart()->removeAxis(yAxis_);  // hands ownership back to us
        delete yAxis_;
    }
    if (traces_.log()) {
        auto* axis = new QLogValueAxis;
        axis->setBase(10);
        yAxis_ = axis;
    } else {
        yAxis_ = new QValueAxis;
    }
    chart()->addAxis(yAxis_, Qt::AlignLeft);
    yAxis_->setVisible(false);  // see buildChart
    legend_->setAxes(xAxis_, yAxis_);
    legend_->replaceYAxis(yAxis_);
}

void MetricChart::syncTraces() {
    const QList<RunMeta> metas = data_->runs();
    ChartTraces::RunChanges runs = traces_.syncRuns(*data_, metric_, metas);
    for (Trace* trace : runs.gotData) legend_->create(*trace);
    for (Trace* trace : runs.restyled) legend_->style(*trace);
    for (Trace& trace : runs.removed) legend_->destroy(trace);
    traces_.syncGroups(metas);
    legend_->syncEntries();
    placeLegend();
}

void MetricChart::toggleGroupHidden(const QString& key) {
    const auto it = traces_.groups().find(key);
    if (it == traces_.groups().end()) return;
    const QList<qint64> members = it->second.members;
    // One click hides the whole group, or shows it again when all is hidden.
    const bool hide = !traces_.allHidden(it->second);
    for (qint64 id : members)
        if (traces_.isHidden(id) != hide) emit runLegendClicked(id);
}

// --- Redraw ------------------------------------------------------------------

void MetricChart::scheduleRedraw() {
    dirty_ = true;
    // Never restarted: a steady stream of signals still redraws every 30 ms.
    if (!redrawTimer_.isActive()) redrawTimer_.start();
}

void MetricChart::redrawNow() {
    cpu::clear_upper_vector_state();  // painting may have left it dirty: see there
    redrawTimer_.stop();
    dirty_ = false;
    ++redrawCount_;
    syncTraces();

    const bool log = traces_.log();
    const XRange x = zoom_.value_or(traces_.dataXExtent());
    floor_ = log ? traces_.logFloor() : kDefaultLogFloor;
    ThinnedView view = traces_.thin(x, traces_.bucketsPerRun(plotPixelWidth(), pointBudget_));
    valuesAtFloor_ = view.valuesAtFloor;

    const AxisScale y = yAxisFor(view, log);
    if (log) {
        for (ThinnedView::Run& run : view.runs) {
            clampForLog(run.raw, floor_);
            clampForLog(run.smooth, floor_);
        }
        for (auto& [key, group] : traces_.groups())
            for (QList<QPointF>* line : {&group.mean, &group.lo, &group.hi}) clampForLog(*line, floor_);
    }

    pointsOutside_ = 0;
    for (const ThinnedView::Run& run : view.runs)
        for (const QPointF& p : run.raw)
            if (std::isfinite(p.y()) && (p.y() < y.lo || p.y() > y.hi) && !(log && p.y() <= floor_)) ++pointsOutside_;
    pushToSeries(view, x, y);
    int nonFinite = 0;
    for (ThinnedView::Run& run : view.runs) nonFinite += placeMarkers(*run.trace, x);
    for (auto& [id, trace] : traces_.traces())
        if (traces_.isInShownGroup(trace)) nonFinite += placeMarkers(trace, x);
    nonFiniteCount_ = nonFinite;
    updateNote();
    emit redrawn();
}

AxisScale MetricChart::yAxisFor(const ThinnedView& view, bool log) const {
    if (manualY_ && (!log || manualY_->lo > 0)) {
        if (log) return logAxis(manualY_->lo, manualY_->hi);
        return linearAxis(manualY_->lo, manualY_->hi, 5);
    }
    const std::string metric = metric_.toStdString();
    ValueAxisOptions options;
    options.log = log;
    options.floor = floor_;
    options.valuesAtFloor = view.valuesAtFloor > 0;
    options.markersAtTop = view.markersAtTop;
    options.markersAtBottom = view.markersAtBottom;
    options.nonNegative = metricNonNegative(metric);
    options.wholeRange = !ignoreOutliers_;
    if (keepsPeaks(metric))
        for (const ThinnedView::Run& run : view.runs) {
            double peak = -std::numeric_limits<double>::infinity();
            for (const QPointF& p : run.raw)
                if (std::isfinite(p.y())) peak = std::max(peak, p.y());
            if (std::isfinite(peak)) options.keep.push_back(peak);
        }
    return valueAxis(view.visibleValues, options);
}

void MetricChart::setIgnoreOutliers(bool on) {
    if (ignoreOutliers_ == on) return;
    ignoreOutliers_ = on;
    scheduleRedraw();
}

void MetricChart::setManualYRange(std::optional<YRange> range) {
    if (range && !(range->hi > range->lo)) range.reset();
    manualY_ = range;
    scheduleRedraw();
}

int MetricChart::plotPixelWidth() const {
    const int plotWidth = static_cast<int>(chart()->plotArea().width());
    // Before the first layout the plot area is empty: estimate from the view.
    return plotWidth >= 16 ? plotWidth : std::max(16, width() - 100);
}

void MetricChart::pushToSeries(const ThinnedView& view, XRange x, const AxisScale& y) {
    // QtCharts recomputes a line's geometry (and strokes its hit-test shape,
    // ~0.5 us per point) on every axis change *and* every replace(). With the
    // series emptied first, an axis change costs nothing and each series is
    // laid out once per redraw instead of three times.
    const AxisScale xScale = traces_.xAxis() == XAxis::step ? linearAxis(x.lo, x.hi, 6, 1) : elapsedAxis(x.lo, x.hi);
    if (!(xScale == frame_.x()) || !(y == frame_.y())) applyAxes(xScale, y);
    for (auto& [id, trace] : traces_.traces())
        if (trace.plotted() && !traces_.isShown(trace)) {
            trace.raw->clear();
            trace.smooth->clear();
            if (!traces_.isInShownGroup(trace)) {  // a grouped seed keeps its markers (placed after)
                trace.nan->clear();
                trace.inf->clear();
            }
        }
    for (const ThinnedView::Run& run : view.runs) {
        const QList<QPointF> raw = traces_.smoothing() > 0 ? run.raw : QList<QPointF>{};
        // Unchanged points (another run grew, a hover redraw) are not re-laid out.
        bool changed = false;
        if (run.trace->raw->points() != raw) {
            run.trace->raw->replace(raw);
            changed = true;
        }
        if (run.trace->smooth->points() != run.smooth) {
            run.trace->smooth->replace(run.smooth);
            changed = true;
        }
        if (changed) run.trace->seriesVersion = ++seriesVersions_;
    }
    lines_.invalidate();
    plotItem_->update();
}

void MetricChart::applyAxes(const AxisScale& x, const AxisScale& y) {
    frame_.setX(x);
    frame_.setX(x, xAxisTitle());  // the title names x's label unit, read from the frame
    frame_.setY(y);
    xAxis_->setRange(x.lo, x.hi);
    if (auto* log = qobject_cast<QLogValueAxis*>(yAxis_)) log->setRange(y.lo, y.hi);
    else if (auto* linear = qobject_cast<QValueAxis*>(yAxis_)) linear->setRange(y.lo, y.hi);
    frame_.fitMargins(chart());
}

int MetricChart::placeMarkers(Trace& trace, XRange x) {
    QList<QPointF> nanPoints, infPoints;
    const double top = markerValue(frame_.y(), true), bottom = markerValue(frame_.y(), false);
    const std::vector<double>& xs = traces_.xsOf(trace);
    for (const NonFinitePoint& p : trace.nonFinite) {
        const double at = xs[p.index];
        if (at < x.lo || at > x.hi) continue;
        if (p.kind == NonFiniteKind::nan) nanPoints.append(QPointF(at, top));
        else infPoints.append(QPointF(at, p.kind == NonFiniteKind::positiveInf ? top : bottom));
    }
    // Unchanged markers are left alone: a replace() re-lays out the series.
    if (trace.nan->points() != nanPoints) trace.nan->replace(nanPoints);
    if (trace.inf->points() != infPoints) trace.inf->replace(infPoints);
    return static_cast<int>(nanPoints.size() + infPoints.size());
}

void MetricChart::paintPlot(QPainter* painter) {
    const QRectF plot = chart()->plotArea();
    if (!frame_.canMap(plot)) return;
    frame_.paintGrid(painter, plot);
    lines_.paint(painter, plot, frame_, traces_);
    frame_.paintAxes(painter, plot);
}

void MetricChart::updateNote() {
    QStringList parts;
    if (traces_.log() && valuesAtFloor_ > 0)
        parts << (valuesAtFloor_ == 1 ? tr("1 value <= 0 shown at floor %1")
                                      : tr("%1 values <= 0 shown at floor %2").arg(valuesAtFloor_))
                     .arg(floor_, 0, 'g', 3);
    if (pointsOutside_ > 0)
        parts << (manualY_ ? tr("%n point(s) outside the set y range", "", pointsOutside_)
                           : tr("%n outlier(s) outside the axis (Ignore outliers)", "", pointsOutside_));
    if (nonFiniteCount_ > 0)
        parts << tr("%1 NaN/Inf marked at the plot edge (\u25C6 NaN, \u25B2 Inf)").arg(nonFiniteCount_);
    if (traces_.xAxis() == XAxis::wallTime) {
        const int untimed = traces_.untimedRuns();
        if (untimed > 0)
            parts << tr("%n run(s) without step times (older database) not shown by wall time", "", untimed);
    }
    const QString note = parts.join(QStringLiteral("; "));
    if (note == noteText_) return;
    noteText_ = note;
    updateTitle();
}

void MetricChart::updateTitle() {
    // The catalogue's title with the stored key after it (what "Add chart",
    // exports and the CLI call the metric); the note on a second line:
    // outside the plot, so it never covers data. (The chart title is rich text.)
    const QString ink = palette::neutralInk().name();
    const double scale = ChartStyle::instance().fontScale();
    QString title = title_.toHtmlEscaped();
    if (title_ != metric_)
        title += QStringLiteral(" <span style=\"font-size:%1pt; font-weight:normal; color:%2\">%3</span>")
                     .arg(8 * scale)
                     .arg(ink, metric_.toHtmlEscaped());
    if (!noteText_.isEmpty())
        title = QStringLiteral(
                    "<div align=\"center\">%1<br><span style=\"font-size:%2pt; font-weight:normal; "
                    "color:%3\">%4</span></div>")
                    .arg(title)
                    .arg(7 * scale)
                    .arg(palette::floorMarker().name(), noteText_.toHtmlEscaped());
    chart()->setTitle(title);
}

// --- Options -----------------------------------------------------------------

void MetricChart::setVisibleRuns(const QList<qint64>& runIds) {
    traces_.setVisibleFilter(QSet<qint64>(runIds.begin(), runIds.end()));
    scheduleRedraw();
}

void MetricChart::showAllRuns() {
    traces_.setVisibleFilter(std::nullopt);
    scheduleRedraw();
}

void MetricChart::setEmphasis(qint64 runId, const QString& groupKey) {
    lines_.setEmphasis(runId, groupKey);
    plotItem_->update();
}

void MetricChart::setRunHidden(qint64 runId, bool hidden) {
    if (!traces_.setHidden(runId, hidden)) return;
    auto& traces = traces_.traces();
    const auto it = traces.find(runId);
    if (it != traces.end()) legend_->style(it->second);
    scheduleRedraw();
}

QList<qint64> MetricChart::plottedRuns() const {
    QList<qint64> ids;
    for (const auto& [id, trace] : traces_.traces())
        if (trace.plotted()) ids.append(id);
    return ids;
}

QString MetricChart::xAxisTitle() const {
    if (traces_.xAxis() == XAxis::step) return tr("step");
    const double unit = frame_.x().labelUnit;
    const QString name = unit == 1 ? tr("s") : unit == 60 ? tr("min") : tr("h");
    return tr("wall time since the run's first step (%1)").arg(name);
}

void MetricChart::setXAxis(XAxis axis) {
    if (axis == traces_.xAxis()) return;
    traces_.setXAxis(axis);
    // A zoom in steps means nothing in seconds; reset silently (the grid
    // switches every chart at once).
    zoom_.reset();
    scheduleRedraw();
}

void MetricChart::setGroupSeeds(bool on) {
    if (on == traces_.groupSeeds()) return;
    traces_.setGroupSeeds(on);
    scheduleRedraw();
}

QList<MetricChart::SeedBandView> MetricChart::seedBands() const {
    QList<SeedBandView> views;
    for (const auto& [key, group] : traces_.groups())
        if (!group.aggregated.isEmpty()) views.append({group.name, group.aggregated, group.mean, group.lo, group.hi});
    return views;
}

void MetricChart::setLogScale(bool on) {
    if (on == traces_.log()) return;
    traces_.setLog(on);
    installYAxis();
    // At once, not deferred: until re-prepared, values <= 0 would make
    // QLogValueAxis hide whole series.
    redrawNow();
}

void MetricChart::setSmoothing(double weight) {
    weight = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, kMaxSmoothingWeight);
    if (weight == traces_.smoothing()) return;
    traces_.setSmoothing(weight);
    for (auto& [id, trace] : traces_.traces()) legend_->style(trace);
    scheduleRedraw();
}

void MetricChart::setPointBudget(int points) {
    if (points == pointBudget_) return;
    pointBudget_ = std::max(0, points);
    scheduleRedraw();
}

void MetricChart::setXRange(double lo, double hi) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return;
    const XRange range{lo, hi};
    if (zoom_ == range) return;
    zoom_ = range;
    scheduleRedraw();
    emit xRangeChanged(lo, hi);
}

void MetricChart::resetXRange() {
    if (!zoom_) return;
    zoom_.reset();
    scheduleRedraw();
    emit xRangeReset();
}

// --- Export ------------------------------------------------------------------

QString MetricChart::savePng(const QString& path, QSize size) {
    tracker_->clear();
    if (dirty_) redrawNow();
    if (!size.isValid() || size == this->size()) return saveViewAsPng(*this, path);
    MetricChart twin(data_, metric_);
    twin.setAttribute(Qt::WA_DontShowOnScreen);
    twin.setLogScale(logScale());
    twin.setSmoothing(smoothing());
    twin.setXAxis(xAxis());
    twin.setGroupSeeds(groupSeeds());
    twin.setIgnoreOutliers(ignoreOutliers_);
    twin.setManualYRange(manualY_);
    twin.setPointBudget(pointBudget_);
    if (const auto& filter = traces_.visibleFilter())
        twin.setVisibleRuns(QList<qint64>(filter->begin(), filter->end()));
    for (qint64 id : traces_.hiddenRuns()) twin.setRunHidden(id, true);
    if (zoom_) twin.setXRange(zoom_->lo, zoom_->hi);
    twin.resize(size);
    twin.show();
    twin.redrawNow();
    return saveViewAsPng(twin, path);
}

QString MetricChart::saveSvg(const QString& path) {
    tracker_->clear();
    if (dirty_) redrawNow();
    return saveViewAsSvg(*this, path, metric_, tr("Mismatch Lab chart of %1").arg(metric_));
}

QMenu* MetricChart::createContextMenu(QWidget* parent, std::vector<RunStep> at) {
    return createChartMenu(*this, parent, std::move(at));
}

// --- Read-outs ---------------------------------------------------------------

QStringList MetricChart::tickLabels(Qt::Orientation axis) const {
    return (axis == Qt::Horizontal ? frame_.x() : frame_.y()).majorLabels();
}

QPointF MetricChart::toScene(double x, double y) const { return frame_.toScene(chart()->plotArea(), x, y); }

// --- Mouse, menu, lifecycle --------------------------------------------------

void MetricChart::mousePressEvent(QMouseEvent* event) {
    if (zoomer_->press(event)) return;
    QChartView::mousePressEvent(event);  // legend clicks live in the scene
}

void MetricChart::mouseMoveEvent(QMouseEvent* event) {
    if (zoomer_->move(event)) return;
    tracker_->show(event->pos());
    QChartView::mouseMoveEvent(event);
}

void MetricChart::mouseReleaseEvent(QMouseEvent* event) {
    if (zoomer_->release(event)) return;
    // Not QChartView's: with a rubber band it turns a right click into zoom-out.
    QGraphicsView::mouseReleaseEvent(event);
}

void MetricChart::mouseDoubleClickEvent(QMouseEvent* event) {
    if (zoomer_->doubleClick(event)) return;
    QChartView::mouseDoubleClickEvent(event);
}

void MetricChart::leaveEvent(QEvent* event) {
    tracker_->clear();
    QChartView::leaveEvent(event);
}

// The mouse moves over the viewport, and its leaving is an event of the
// viewport's: the view's leaveEvent alone left the hover dot behind.
bool MetricChart::viewportEvent(QEvent* event) {
    if (event->type() == QEvent::Leave) tracker_->clear();
    // Over the title (above the plot, where the hover read-out has nothing
    // to say): what the metric is. Qt's scene would otherwise hide the tip.
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        if (mapToScene(help->pos()).y() < chart()->plotArea().top()) {
            QToolTip::showText(help->globalPos(), metricToolTip(metric_), viewport());
            return true;
        }
        // Over a point the hover read-out stays while the mouse does: the
        // scene, with no item tip there, would hide it after a second.
        if (tracker_->shown()) {
            tracker_->show(help->pos());
            return true;
        }
    }
    return QChartView::viewportEvent(event);
}

void MetricChart::contextMenuEvent(QContextMenuEvent* event) {
    std::vector<RunStep> at = tracker_->runStepsAt(event->pos());
    tracker_->clear();
    std::unique_ptr<QMenu> menu(createContextMenu(this, std::move(at)));
    menu->exec(event->globalPos());
}

// Under the x axis' labels, across the chart; the plot gives up its height.
void MetricChart::placeLegend() {
    const double margin = AxisFrame::kOuterMargin;
    const QRectF area = chart()->geometry().adjusted(margin, margin, -margin, -margin);
    const int height = int(std::ceil(legend_->place(area)));
    if (height == frame_.spaceBelow()) return;
    frame_.setSpaceBelow(height);
    frame_.fitMargins(chart());
}

void MetricChart::resizeEvent(QResizeEvent* event) {
    QChartView::resizeEvent(event);
    placeLegend();
    scheduleRedraw();  // the pixel width changed: re-thin
}

void MetricChart::showEvent(QShowEvent* event) {
    QChartView::showEvent(event);
    if (dirty_) scheduleRedraw();
}

}  // namespace mlk
