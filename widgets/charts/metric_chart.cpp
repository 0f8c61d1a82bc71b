#include "widgets/charts/metric_chart.h"

#include <QChart>
#include <QContextMenuEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontMetrics>
#include <QGraphicsEllipseItem>
#include <QGraphicsLayout>
#include <QGraphicsScene>
#include <QInputDialog>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMenu>
#include <QMessageBox>
#include <QMouseEvent>
#include <QPaintEngine>
#include <QPainter>
#include <QStaticText>
#include <QRegularExpression>
#include <QRubberBand>
#include <QScatterSeries>
#include <QSvgGenerator>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "kernels/cpu/features.h"

namespace mlk {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Markers sit this fraction of the plot height inside the edge, so they are
// drawn whole instead of half-clipped by the plot border.
constexpr double kMarkerInset = 0.04;
constexpr int kMinDragPixels = 4;
constexpr int kRawAlpha = 70;
constexpr int kBandAlpha = 55;  // a seed group's min-max band
// 1 px lines take QPainter's cosmetic fast path; a 2 px pen goes through the
// general stroker, measured ~25x slower per point with antialiasing (Qt 6.4,
// 2 cores). The smoothed line stands out by opacity, not width.
constexpr double kLineWidth = 1.0;
constexpr int kOuterMargin = 4;
constexpr int kTickLength = 4;
constexpr int kLabelGap = 3;  // between a tick and its label
const QColor kGridColour(226, 226, 226);
const QColor kMinorGridColour(242, 242, 242);
const QColor kAxisColour(150, 150, 150);
const QColor kLabelColour(70, 70, 70);

QFont smallerFont(QFont font, double points) {
    font.setPointSizeF(points);
    return font;
}

QString formatValue(double v) {
    if (std::isnan(v)) return QStringLiteral("NaN");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("+Inf") : QStringLiteral("-Inf");
    return QString::number(v, 'g', 6);
}

void setLegendEntryVisible(QChart* chart, QAbstractSeries* series, bool visible) {
    for (QLegendMarker* marker : chart->legend()->markers(series)) marker->setVisible(visible);
}

}  // namespace

// The plot of one chart in one item: grid, every run's raw and smoothed
// lines, axis lines and tick labels. QtCharts' LineChartItem re-strokes a
// mouse hit-area outline (~1 us per point) on each replace() and axis change,
// and its axes re-create and lay out a text document per label on every range
// change (a third of a zoom redraw, measured); this item only maps and paints.
// The QtCharts axes stay, hidden, as the range the markers are placed by.
class MetricLinesItem : public QGraphicsItem {
public:
    MetricLinesItem(MetricChart* owner, QGraphicsItem* parent) : QGraphicsItem(parent), m_owner(owner) {
        setAcceptedMouseButtons(Qt::NoButton);
        setAcceptHoverEvents(false);
    }
    QRectF boundingRect() const override { return m_owner->chart()->rect(); }
    void paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) override { m_owner->paintPlot(painter); }

private:
    MetricChart* m_owner;
};

// The hover dot, round although the view paints without antialiasing.
class SmoothEllipseItem : public QGraphicsEllipseItem {
public:
    using QGraphicsEllipseItem::QGraphicsEllipseItem;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem* option, QWidget* widget) override {
        painter->setRenderHint(QPainter::Antialiasing);
        QGraphicsEllipseItem::paint(painter, option, widget);
    }
};

MetricChart::MetricChart(RunDataStore* data, const QString& metric, QWidget* parent)
    : QChartView(parent), m_data(data), m_metric(metric) {
    buildChart();
    // No antialiasing for the frame: axis and grid lines are axis-aligned (and
    // crisper without it), and antialiased grid lines were ~10% of a zoom
    // redraw. Text keeps its own antialiasing; the data lines and the hover
    // dot set theirs.
    setRenderHint(QPainter::Antialiasing, false);
    // The chart background covers the viewport: no second fill under it.
    viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
    // A zoom moves the marker items: a BSP index was measured slower than none.
    scene()->setItemIndexMethod(QGraphicsScene::NoIndex);
    // Repaint the viewport as one rectangle: with the default minimal update
    // the union of ~40 changed items' rects becomes a many-rect clip region,
    // and Qt 6.4 then rasterises each line segment against it (and hands the
    // spans to its GUI thread pool): measured 7x slower paints.
    setViewportUpdateMode(QGraphicsView::FullViewportUpdate);
    setMouseTracking(true);
    viewport()->setMouseTracking(true);
    setMinimumSize(260, 200);
    m_band = new QRubberBand(QRubberBand::Rectangle, viewport());

    m_redrawTimer.setSingleShot(true);
    m_redrawTimer.setInterval(kRedrawDelayMs);
    connect(&m_redrawTimer, &QTimer::timeout, this, [this] {
        // A hidden chart (another tab) stays dirty and redraws when shown.
        if (isVisible()) redrawNow();
    });
    connect(m_data, &RunDataStore::dataChanged, this, [this](const QList<qint64>& runIds) {
        const bool concernsUs = !m_visibleFilter || std::any_of(runIds.begin(), runIds.end(), [this](qint64 id) {
            return m_visibleFilter->contains(id);
        });
        if (concernsUs) scheduleRedraw();
    });
    connect(m_data, &RunDataStore::runsChanged, this, &MetricChart::scheduleRedraw);
    scheduleRedraw();
}

MetricChart::~MetricChart() = default;

// --- Chart skeleton ----------------------------------------------------------

void MetricChart::buildChart() {
    QChart* c = chart();
    c->setTitle(m_metric);
    QFont titleFont = smallerFont(c->titleFont(), 10);
    titleFont.setBold(true);
    c->setTitleFont(titleFont);
    c->setBackgroundRoundness(0);
    m_axisFont = smallerFont(c->font(), 8);
    c->setMargins(QMargins(kOuterMargin, kOuterMargin, kOuterMargin, kOuterMargin));
    c->layout()->setContentsMargins(0, 0, 0, 0);
    c->legend()->setAlignment(Qt::AlignBottom);
    c->legend()->setFont(smallerFont(c->legend()->font(), 8));

    // Hidden: they hold the range the markers are placed by; MetricLinesItem
    // paints the visible axes (see there).
    m_xAxis = new QValueAxis;
    c->addAxis(m_xAxis, Qt::AlignBottom);
    m_xAxis->setVisible(false);
    installYAxis();

    m_lines = new MetricLinesItem(this, c);
    m_lines->setZValue(3.5);

    m_hoverDot = new SmoothEllipseItem(c);
    m_hoverDot->setZValue(1000);
    m_hoverDot->setPen(QPen(Qt::white, 1.5));
    m_hoverDot->hide();
}

void MetricChart::installYAxis() {
    if (m_yAxis) {
        chart()->removeAxis(m_yAxis);  // hands ownership back to us
        delete m_yAxis;
    }
    if (m_logScale) {
        auto* axis = new QLogValueAxis;
        axis->setBase(10);
        m_yAxis = axis;
    } else {
        m_yAxis = new QValueAxis;
    }
    chart()->addAxis(m_yAxis, Qt::AlignLeft);
    m_yAxis->setVisible(false);  // see buildChart
    for (auto& [id, trace] : m_traces) {
        if (!trace.raw) continue;
        for (QXYSeries* s : {static_cast<QXYSeries*>(trace.legend), static_cast<QXYSeries*>(trace.nan),
                             static_cast<QXYSeries*>(trace.inf)}) {
            // Emptied first: points prepared for the other scale (zeros on a
            // linear axis) must never meet the log axis. The caller redraws.
            s->clear();
            s->attachAxis(m_yAxis);
        }
    }
}

void MetricChart::attach(QXYSeries* series) {
    chart()->addSeries(series);
    series->attachAxis(m_xAxis);
    series->attachAxis(m_yAxis);
}

// --- Per-run series ----------------------------------------------------------

void MetricChart::createSeries(Trace& trace) {
    // The drawn points live in raw/smooth (outside the chart: MetricLinesItem
    // paints them); the chart holds the legend entry and the markers.
    trace.raw = new QLineSeries(this);
    trace.smooth = new QLineSeries(this);
    trace.legend = new QLineSeries;
    trace.nan = new QScatterSeries;
    trace.inf = new QScatterSeries;
    for (QXYSeries* s : {static_cast<QXYSeries*>(trace.legend), static_cast<QXYSeries*>(trace.nan),
                         static_cast<QXYSeries*>(trace.inf)})
        attach(s);
    trace.nan->setMarkerShape(QScatterSeries::MarkerShapeRotatedRectangle);
    trace.nan->setMarkerSize(10);
    trace.inf->setMarkerShape(QScatterSeries::MarkerShapeTriangle);
    trace.inf->setMarkerSize(11);
    const qint64 runId = trace.runId;
    for (QLegendMarker* marker : chart()->legend()->markers(trace.legend))
        connect(marker, &QLegendMarker::clicked, this, [this, runId] { emit runLegendClicked(runId); });
    styleTrace(trace);
}

void MetricChart::destroySeries(Trace& trace) {
    for (QXYSeries* s : {static_cast<QXYSeries*>(trace.legend), static_cast<QXYSeries*>(trace.nan),
                         static_cast<QXYSeries*>(trace.inf)}) {
        if (!s) continue;
        chart()->removeSeries(s);
        delete s;
    }
    delete trace.raw;
    delete trace.smooth;
    trace.legend = nullptr;
    trace.raw = trace.smooth = nullptr;
    trace.nan = trace.inf = nullptr;
}

void MetricChart::styleTrace(Trace& trace) {
    if (!trace.raw) return;
    QColor faint = trace.colour;
    faint.setAlpha(kRawAlpha);
    QPen rawPen(faint);
    rawPen.setWidthF(kLineWidth);
    trace.raw->setPen(rawPen);
    QPen smoothPen(trace.colour);
    smoothPen.setWidthF(kLineWidth);
    trace.smooth->setPen(smoothPen);
    trace.smooth->setName(trace.name);
    trace.legend->setPen(smoothPen);
    trace.legend->setName(trace.name);
    trace.raw->setName(trace.name + tr(" (raw)"));
    for (QScatterSeries* markers : {trace.nan, trace.inf}) {
        markers->setColor(trace.colour);
        markers->setBorderColor(trace.colour.darker(180));
    }
    const bool shown = !m_hiddenRuns.contains(trace.runId);
    // With smoothing off the "smoothed" line is the raw data: one line is enough.
    trace.raw->setVisible(shown && m_smoothing > 0);
    trace.smooth->setVisible(shown);
    trace.nan->setVisible(shown);
    trace.inf->setVisible(shown);
    applyLegend(trace);
}

void MetricChart::applyLegend(Trace& trace) {
    QChart* c = chart();
    setLegendEntryVisible(c, trace.nan, false);
    setLegendEntryVisible(c, trace.inf, false);
    // Hiding a series also hides its legend entry; a hidden run keeps a dimmed
    // one so the user can click it back.
    const bool hidden = m_hiddenRuns.contains(trace.runId);
    QColor label = palette().color(QPalette::WindowText);
    if (hidden) label.setAlpha(90);
    // A run drawn by its seed group has the group's legend entry instead.
    const bool grouped = m_groupOf.contains(trace.runId);
    for (QLegendMarker* marker : c->legend()->markers(trace.legend)) {
        marker->setVisible(!grouped);
        marker->setLabelBrush(label);
    }
}

void MetricChart::syncTraces() {
    QSet<qint64> wanted;
    const QList<RunMeta> metas = m_data->runs();
    for (const RunMeta& meta : metas) {
        if (m_visibleFilter && !m_visibleFilter->contains(meta.id)) continue;
        wanted.insert(meta.id);
        auto [it, inserted] = m_traces.try_emplace(meta.id);
        Trace& trace = it->second;
        if (inserted) {
            trace.runId = meta.id;
            resetDerived(trace);
        }
        const bool restyle = trace.name != meta.name || trace.colour != meta.colour;
        trace.name = meta.name;
        trace.colour = meta.colour;
        updateTraceData(trace);
        // Series only for runs that have this metric: no empty legend entries.
        if (!trace.raw && trace.cursor.data.size() > 0) createSeries(trace);
        else if (restyle) styleTrace(trace);
    }
    for (auto it = m_traces.begin(); it != m_traces.end();) {
        if (wanted.contains(it->first)) {
            ++it;
            continue;
        }
        destroySeries(it->second);
        it = m_traces.erase(it);
    }
    syncGroups(metas);
}

void MetricChart::syncGroups(const QList<RunMeta>& metas) {
    std::map<QString, QList<qint64>> byKey;
    if (m_groupSeeds)
        for (const RunMeta& meta : metas) {
            const auto it = m_traces.find(meta.id);
            if (it == m_traces.end() || !it->second.raw || meta.seedGroup.isEmpty()) continue;
            byKey[meta.seedGroup].append(meta.id);
        }
    const QHash<qint64, QString> before = std::exchange(m_groupOf, {});
    for (auto it = m_groups.begin(); it != m_groups.end();) {
        const auto wanted = byKey.find(it->first);
        if (wanted != byKey.end() && wanted->second.size() >= 2) {
            ++it;
            continue;
        }
        chart()->removeSeries(it->second.legend);
        delete it->second.legend;
        it = m_groups.erase(it);
    }
    for (const auto& [key, members] : byKey) {
        if (members.size() < 2) continue;  // a lone seed is drawn as a run
        SeedGroup& group = m_groups[key];
        if (!group.legend) {
            group.legend = new QLineSeries;
            attach(group.legend);
            for (QLegendMarker* marker : chart()->legend()->markers(group.legend))
                connect(marker, &QLegendMarker::clicked, this, [this, key = key] { toggleGroupHidden(key); });
        }
        group.members = members;
        const Trace& first = m_traces.at(members.front());
        group.colour = first.colour;
        group.name = tr("%1 \u00B7 %n seeds", "", int(members.size())).arg(first.name);
        group.legend->setName(group.name);
        group.legend->setPen(QPen(group.colour, kLineWidth));
        const bool allHidden =
            std::all_of(members.begin(), members.end(), [this](qint64 id) { return m_hiddenRuns.contains(id); });
        QColor label = palette().color(QPalette::WindowText);
        if (allHidden) label.setAlpha(90);
        for (QLegendMarker* marker : chart()->legend()->markers(group.legend)) marker->setLabelBrush(label);
        for (qint64 id : members) m_groupOf.insert(id, key);
    }
    // Runs' own legend entries change only when who is grouped changes.
    if (m_groupOf != before)
        for (auto& [id, trace] : m_traces)
            if (trace.raw) applyLegend(trace);
}

void MetricChart::toggleGroupHidden(const QString& key) {
    const auto it = m_groups.find(key);
    if (it == m_groups.end()) return;
    const QList<qint64> members = it->second.members;
    // One click hides the whole group, or shows it again when all is hidden.
    const bool hide =
        !std::all_of(members.begin(), members.end(), [this](qint64 id) { return m_hiddenRuns.contains(id); });
    for (qint64 id : members)
        if (m_hiddenRuns.contains(id) != hide) emit runLegendClicked(id);
}

void MetricChart::resetDerived(Trace& trace) {
    trace.processed = 0;
    trace.ema = {};
    trace.smoothed.clear();
    trace.nonFinite.clear();
    trace.smallestPositive = kInf;
    trace.thinning.reset();
    trace.elapsed.clear();
    trace.firstTime = std::numeric_limits<double>::quiet_NaN();
    ++m_derivedVersion;  // seed groups built on this trace must be re-aggregated
}

void MetricChart::updateTraceData(Trace& trace) {
    if (m_data->syncSeries(trace.runId, m_metric, trace.cursor) == SyncResult::replaced) resetDerived(trace);
    const MetricSeries& data = trace.cursor.data;
    const std::size_t from = trace.processed;
    if (from >= data.size()) return;
    const std::span<const double> xs(data.steps.data() + from, data.size() - from);
    const std::span<const double> ys(data.values.data() + from, data.size() - from);
    extendDebiasedEma(ys, m_smoothing, trace.ema, trace.smoothed);
    for (NonFinitePoint p : nonFinitePoints(xs, ys)) {
        p.index += from;
        trace.nonFinite.push_back(p);
    }
    trace.smallestPositive = std::min(trace.smallestPositive, smallestPositive(ys));
    extendElapsed(trace);
    trace.processed = data.size();
}

void MetricChart::extendElapsed(Trace& trace) {
    const std::vector<double>& times = trace.cursor.data.times;
    if (std::isnan(trace.firstTime)) {
        // Steps before the first known time (a schema-v1 database resumed
        // later) are placed at 0.
        const auto known = std::find_if(times.begin(), times.end(), [](double t) { return std::isfinite(t); });
        if (known == times.end()) return;
        trace.firstTime = *known;
        trace.elapsed.clear();
    }
    for (std::size_t i = trace.elapsed.size(); i < times.size(); ++i) {
        const double previous = trace.elapsed.empty() ? 0.0 : trace.elapsed.back();
        const double since = times[i] - trace.firstTime;
        trace.elapsed.push_back(std::isfinite(since) ? std::max(previous, since) : previous);
    }
}

const std::vector<double>& MetricChart::xsOf(const Trace& trace) const {
    return m_xAxisKind == XAxis::wallTime ? trace.elapsed : trace.cursor.data.steps;
}

bool MetricChart::isShown(const Trace& trace) const {
    // By wall time, a run with no known step time (schema v1) has no x.
    return trace.raw && !m_hiddenRuns.contains(trace.runId) && !m_groupOf.contains(trace.runId) &&
           (m_xAxisKind == XAxis::step || trace.elapsed.size() == trace.cursor.data.size());
}

bool MetricChart::isInShownGroup(const Trace& trace) const {
    return trace.raw && !m_hiddenRuns.contains(trace.runId) && m_groupOf.contains(trace.runId) &&
           (m_xAxisKind == XAxis::step || trace.elapsed.size() == trace.cursor.data.size());
}

void MetricChart::aggregateGroup(SeedGroup& group) {
    QList<qint64> aggregated;
    std::vector<std::size_t> signature{m_derivedVersion, std::size_t(m_xAxisKind)};
    for (qint64 id : group.members) {
        const Trace& trace = m_traces.at(id);
        if (!isInShownGroup(trace)) continue;
        aggregated.append(id);
        signature.insert(signature.end(), {std::size_t(id), trace.processed});
    }
    if (signature == group.signature) return;
    group.signature = std::move(signature);
    group.aggregated = aggregated;
    std::vector<SeedRun> runs;
    for (qint64 id : aggregated) {
        const Trace& trace = m_traces.at(id);
        runs.push_back({trace.cursor.data.steps, xsOf(trace), trace.smoothed});
    }
    group.aggregate = aggregateSeeds(runs);
}

void MetricChart::thinGroups(XRange x, int buckets, std::vector<double>& visibleValues) {
    for (auto& [key, group] : m_groups) {
        aggregateGroup(group);
        const SeedAggregate& a = group.aggregate;
        group.mean = thinMinMax(a.xs, a.mean, x, buckets);
        group.lo = thinMinMax(a.xs, a.lo, x, buckets);
        group.hi = thinMinMax(a.xs, a.hi, x, buckets);
        for (const QList<QPointF>* line : {&group.mean, &group.lo, &group.hi})
            for (const QPointF& p : *line) visibleValues.push_back(p.y());
        if (m_logScale) {
            // A band reaching 0 (seeds of a truly on-policy run: K3 KL
            // exactly 0) is drawn at the floor, so the floor must be in
            // range and in the note, as for a run's own values.
            const auto [first, last] = indicesInRange(a.xs, x);
            m_valuesAtFloor += static_cast<int>(countNonPositive(std::span(a.lo).subspan(first, last - first)));
        }
    }
}

// --- Redraw ------------------------------------------------------------------

void MetricChart::scheduleRedraw() {
    m_dirty = true;
    // Never restarted: a steady stream of signals still redraws every 30 ms.
    if (!m_redrawTimer.isActive()) m_redrawTimer.start();
}

void MetricChart::redrawNow() {
    cpu::clear_upper_vector_state();  // painting may have left it dirty: see there
    m_redrawTimer.stop();
    m_dirty = false;
    ++m_redrawCount;
    syncTraces();

    const XRange x = m_zoom.value_or(dataXExtent());
    const int pixels = plotPixelWidth();
    m_floor = m_logScale ? logFloor() : kDefaultLogFloor;
    std::vector<ThinnedTrace> thinned = thinShownTraces(x, pixels);

    std::vector<double> visibleRaw;
    for (const ThinnedTrace& t : thinned)
        for (const QPointF& p : t.raw) visibleRaw.push_back(p.y());
    thinGroups(x, bucketsPerRun(pixels), visibleRaw);
    const YRange y = yRangeFor(visibleRaw);
    if (m_logScale) {
        for (ThinnedTrace& t : thinned) {
            clampForLog(t.raw, m_floor);
            clampForLog(t.smooth, m_floor);
        }
        for (auto& [key, group] : m_groups)
            for (QList<QPointF>* line : {&group.mean, &group.lo, &group.hi}) clampForLog(*line, m_floor);
    }

    pushToSeries(thinned, x, y);
    int nonFinite = 0;
    for (ThinnedTrace& t : thinned) nonFinite += placeMarkers(*t.trace, x);
    for (auto& [id, trace] : m_traces)
        if (isInShownGroup(trace)) nonFinite += placeMarkers(trace, x);
    m_nonFiniteCount = nonFinite;
    updateNote();
    emit redrawn();
}

int MetricChart::bucketsPerRun(int pixels) const {
    if (m_pointBudget <= 0) return pixels;
    const auto shown =
        std::count_if(m_traces.begin(), m_traces.end(), [this](const auto& t) { return isShown(t.second); });
    // Up to 4 points per bucket and run. Below the budget every pixel column
    // keeps its own min/max; above it columns are merged, never below
    // kMinBuckets, so many runs cost the same as a few.
    const int affordable = m_pointBudget / (4 * std::max<int>(1, static_cast<int>(shown)));
    return std::clamp(affordable, std::min(pixels, kMinBuckets), pixels);
}

std::vector<MetricChart::ThinnedTrace> MetricChart::thinShownTraces(XRange x, int pixels) {
    std::vector<ThinnedTrace> thinned;
    const int buckets = bucketsPerRun(pixels);
    int atFloor = 0;
    m_markersAtTop = m_markersAtBottom = false;
    for (auto& [id, trace] : m_traces) {
        // A seed in a group keeps its NaN/Inf markers: the band's mean skips
        // such values, and they must not vanish silently.
        if (isInShownGroup(trace)) noteMarkerEdges(trace, x);
        if (!isShown(trace)) continue;
        const MetricSeries& data = trace.cursor.data;
        const std::vector<double>& xs = xsOf(trace);
        auto& cached = trace.thinning;
        if (!cached || !(cached->x == x) || cached->buckets != buckets || cached->points != data.size() ||
            cached->log != m_logScale || cached->axis != m_xAxisKind) {
            Trace::Thinning fresh{
                x, buckets, data.size(), m_logScale, m_xAxisKind, thinMinMax(xs, data.values, x, buckets), {}, 0};
            // Weight 0: the smoothed line is the raw data, drawn once.
            fresh.smooth = m_smoothing > 0 ? thinMinMax(xs, trace.smoothed, x, buckets) : fresh.raw;
            if (m_logScale) {
                const auto [first, last] = indicesInRange(xs, x);
                fresh.atFloor = static_cast<int>(countNonPositive(std::span(data.values).subspan(first, last - first)));
            }
            cached = std::move(fresh);
        }
        thinned.push_back(ThinnedTrace{&trace, cached->raw, cached->smooth});
        atFloor += cached->atFloor;
        noteMarkerEdges(trace, x);
    }
    m_valuesAtFloor = atFloor;
    return thinned;
}

void MetricChart::noteMarkerEdges(const Trace& trace, XRange x) {
    const std::vector<double>& xs = xsOf(trace);
    for (const NonFinitePoint& p : trace.nonFinite) {
        if (xs[p.index] < x.lo || xs[p.index] > x.hi) continue;
        (p.kind == NonFiniteKind::negativeInf ? m_markersAtBottom : m_markersAtTop) = true;
    }
}

void MetricChart::pushToSeries(const std::vector<ThinnedTrace>& thinned, XRange x, YRange y) {
    // QtCharts recomputes a line's geometry (and strokes its hit-test shape,
    // ~0.5 us per point) on every axis change *and* every replace(). With the
    // series emptied first, an axis change costs nothing and each series is
    // laid out once per redraw instead of three times.
    const bool axesChange = !(x == m_shownX) || y.lo != m_shownY.lo || y.hi != m_shownY.hi;
    if (axesChange) applyAxes(x, y);
    for (auto& [id, trace] : m_traces)
        if (trace.raw && !isShown(trace)) {
            trace.raw->clear();
            trace.smooth->clear();
            if (!isInShownGroup(trace)) {  // a grouped seed keeps its markers (placed after)
                trace.nan->clear();
                trace.inf->clear();
            }
        }
    for (const ThinnedTrace& t : thinned) {
        const QList<QPointF> raw = m_smoothing > 0 ? t.raw : QList<QPointF>{};
        // Unchanged points (another run grew, a hover redraw) are not re-laid out.
        bool changed = false;
        if (t.trace->raw->points() != raw) {
            t.trace->raw->replace(raw);
            changed = true;
        }
        if (t.trace->smooth->points() != t.smooth) {
            t.trace->smooth->replace(t.smooth);
            changed = true;
        }
        if (changed) ++t.trace->seriesVersion;
    }
    m_linesStale = true;
    m_lines->update();
}

XRange MetricChart::dataXExtent() const {
    double lo = kInf, hi = -kInf;
    for (const auto& [id, trace] : m_traces) {
        if (!(isShown(trace) || isInShownGroup(trace)) || trace.cursor.data.size() == 0) continue;
        lo = std::min(lo, xsOf(trace).front());
        hi = std::max(hi, xsOf(trace).back());
    }
    if (lo > hi) return {0, 1};
    if (lo == hi) return {lo - 1, hi + 1};
    // Out to the next tenth-of-span tick: a growing run then moves the axis
    // (and re-lays out every line) only every few percent of its length, and
    // the runs that did not change keep their series untouched.
    const double step = niceTickInterval(hi - lo, 10, m_xAxisKind == XAxis::step ? 1 : 0);
    return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

int MetricChart::plotPixelWidth() const {
    const int plotWidth = static_cast<int>(chart()->plotArea().width());
    // Before the first layout the plot area is empty: estimate from the view.
    return plotWidth >= 16 ? plotWidth : std::max(16, width() - 100);
}

double MetricChart::logFloor() const {
    double smallest = kInf;
    for (const auto& [id, trace] : m_traces)
        if (isShown(trace) || isInShownGroup(trace)) smallest = std::min(smallest, trace.smallestPositive);
    return logFloorFor(smallest);
}

YRange MetricChart::yRangeFor(std::vector<double>& visibleRaw) const {
    RobustRangeOptions options;
    options.logSpace = m_logScale;
    options.margin = 0.05;  // the rounding below adds room too
    const std::optional<YRange> robust = robustYRange(visibleRaw, options);
    // Worked out in axis units: log10 of the value on a log axis.
    const auto toAxis = [this](double v) { return m_logScale ? std::log10(v) : v; };
    double lo = robust ? toAxis(robust->lo) : (m_logScale ? std::log10(m_floor) : 0.0);
    double hi = robust ? toAxis(robust->hi) : lo + 1;
    if (m_logScale) {
        if (m_valuesAtFloor > 0) lo = std::min(lo, std::log10(m_floor));
        // QLogValueAxis labels only powers of ten: at least one must show.
        if (hi - lo < 1) {
            const double grow = (1 - (hi - lo)) / 2;
            lo -= grow;
            hi += grow;
        }
    }
    // Bands kept free of data for the NaN/Inf markers, and to lift points
    // drawn at the log floor off the axis line.
    const double span = hi - lo;
    if (m_markersAtTop) hi += kMarkerBand * span;
    if (m_markersAtBottom || (m_logScale && m_valuesAtFloor > 0)) lo -= kMarkerBand * span;
    // Out to ticks (quarter decades on a log axis): labels sit on the edges,
    // and a live update inside the same ticks leaves the axis, and so every
    // other run's series, untouched.
    if (m_logScale) return {std::pow(10.0, std::floor(lo * 4) / 4), std::pow(10.0, std::ceil(hi * 4) / 4)};
    const double step = niceTickInterval(hi - lo, 5);
    return {std::floor(lo / step) * step, std::ceil(hi / step) * step};
}

void MetricChart::applyAxes(XRange x, YRange y) {
    m_shownX = x;
    m_shownY = y;
    m_xAxis->setRange(x.lo, x.hi);
    if (m_xAxisKind == XAxis::step) {
        m_timeUnit = 1;
        m_xTickInterval = niceTickInterval(x.span(), 6, 1);
    } else {
        // Labels in seconds, minutes or hours, whichever keeps them short.
        m_timeUnit = x.span() < 600 ? 1 : x.span() < 36000 ? 60 : 3600;
        m_xTickInterval = niceTickInterval(x.span() / m_timeUnit, 6) * m_timeUnit;
    }
    m_xTicks = linearTicks(x.lo, x.hi, m_xTickInterval);
    if (auto* log = qobject_cast<QLogValueAxis*>(m_yAxis)) {
        log->setRange(y.lo, y.hi);
        // Minor lines help within a few decades and are clutter across many.
        m_yTicks = logTicks(y.lo, y.hi, 3.01);
    } else if (auto* linear = qobject_cast<QValueAxis*>(m_yAxis)) {
        linear->setRange(y.lo, y.hi);
        m_yTickInterval = niceTickInterval(y.hi - y.lo, 5);
        m_yTicks = linearTicks(y.lo, y.hi, m_yTickInterval);
    }
    fitMarginsToLabels();
}

QString MetricChart::tickLabel(double value, bool xAxis) const {
    if (xAxis) return formatTick(value / m_timeUnit, m_xTickInterval / m_timeUnit);
    return m_logScale ? QString::number(value, 'g', 6) : formatTick(value, m_yTickInterval);
}

QStringList MetricChart::tickLabels(Qt::Orientation axis) const {
    QStringList labels;
    for (const AxisTick& tick : axis == Qt::Horizontal ? m_xTicks : m_yTicks)
        if (tick.major) labels << tickLabel(tick.value, axis == Qt::Horizontal);
    return labels;
}

const QStaticText& MetricChart::labelText(const QString& text) {
    // A handful of distinct labels per chart; the bound only guards against
    // an endless zoom session.
    if (m_labelCache.size() > 512) m_labelCache.clear();
    auto it = m_labelCache.find(text);
    if (it == m_labelCache.end()) {
        QStaticText prepared(text);
        prepared.setTextFormat(Qt::PlainText);
        prepared.prepare(QTransform(), m_axisFont);
        it = m_labelCache.insert(text, prepared);
    }
    return it.value();
}

void MetricChart::fitMarginsToLabels() {
    // Room outside the plot for the labels; changed only when the widest
    // label changes, since a new margin re-lays out the chart.
    const QFontMetrics metrics(m_axisFont);
    int widestY = 0;
    for (const AxisTick& tick : m_yTicks)
        if (tick.major) widestY = std::max(widestY, metrics.horizontalAdvance(tickLabel(tick.value, false)));
    const int lastX = m_xTicks.empty() ? 0 : metrics.horizontalAdvance(tickLabel(m_xTicks.back().value, true));
    const QMargins wanted(kOuterMargin + widestY + kTickLength + kLabelGap, kOuterMargin + metrics.height() / 2,
                          kOuterMargin + lastX / 2, kOuterMargin);
    bool changed = false;
    if (chart()->margins() != wanted) {
        chart()->setMargins(wanted);
        changed = true;
    }
    // The chart's margins lie outside the legend: the x labels and title get
    // their room as the top margin of the legend, right under the plot.
    const int xLabelsHeight = kTickLength + kLabelGap + 2 * metrics.height() + 2;
    QLegend* legend = chart()->legend();
    qreal left = 0, top = 0, right = 0, bottom = 0;
    legend->getContentsMargins(&left, &top, &right, &bottom);
    if (top != xLabelsHeight) {
        legend->setContentsMargins(0, xLabelsHeight, 0, 0);
        changed = true;
    }
    // Lay out now, not at the next event-loop turn: a paint or an export
    // right after this redraw must not see the old plot area.
    if (changed) chart()->layout()->activate();
}

void MetricChart::paintPlot(QPainter* painter) {
    if (!canDrawLines()) return;
    paintAxes(painter, AxisLayer::grid);
    paintLines(painter);
    paintAxes(painter, AxisLayer::frame);
}

void MetricChart::paintAxes(QPainter* painter, AxisLayer layer) {
    const QRectF plot = chart()->plotArea();
    painter->save();
    painter->setRenderHint(QPainter::Antialiasing, false);
    // Lines on pixel centres: crisp 1 px lines without antialiasing.
    const auto pixelX = [&](double x) { return std::floor(toScene(x, m_shownY.lo).x()) + 0.5; };
    const auto pixelY = [&](double y) { return std::floor(toScene(m_shownX.lo, y).y()) + 0.5; };
    const double left = std::floor(plot.left()) + 0.5, right = std::floor(plot.right()) + 0.5;
    const double top = std::floor(plot.top()) + 0.5, bottom = std::floor(plot.bottom()) + 0.5;
    if (layer == AxisLayer::grid) {
        for (const bool major : {false, true}) {
            painter->setPen(QPen(major ? kGridColour : kMinorGridColour, 0));
            for (const AxisTick& tick : m_yTicks)
                if (tick.major == major)
                    painter->drawLine(QPointF(left, pixelY(tick.value)), QPointF(right, pixelY(tick.value)));
        }
        painter->setPen(QPen(kGridColour, 0));
        for (const AxisTick& tick : m_xTicks)
            painter->drawLine(QPointF(pixelX(tick.value), top), QPointF(pixelX(tick.value), bottom));
        painter->restore();
        return;
    }
    painter->setPen(QPen(kAxisColour, 0));
    painter->drawLine(QPointF(left, top), QPointF(left, bottom));
    painter->drawLine(QPointF(left, bottom), QPointF(right, bottom));
    painter->setFont(m_axisFont);
    const QFontMetrics metrics(m_axisFont);
    for (const AxisTick& tick : m_yTicks) {
        if (!tick.major) continue;
        const double y = pixelY(tick.value);
        painter->setPen(QPen(kAxisColour, 0));
        painter->drawLine(QPointF(left - kTickLength, y), QPointF(left, y));
        const QStaticText& text = labelText(tickLabel(tick.value, false));
        painter->setPen(kLabelColour);
        painter->drawStaticText(
            QPointF(left - kTickLength - kLabelGap - text.size().width(), y - text.size().height() / 2), text);
    }
    for (const AxisTick& tick : m_xTicks) {
        const double x = pixelX(tick.value);
        painter->setPen(QPen(kAxisColour, 0));
        painter->drawLine(QPointF(x, bottom), QPointF(x, bottom + kTickLength));
        const QStaticText& text = labelText(tickLabel(tick.value, true));
        painter->setPen(kLabelColour);
        painter->drawStaticText(QPointF(x - text.size().width() / 2, bottom + kTickLength + kLabelGap), text);
    }
    const QStaticText& title = labelText(xAxisTitle());
    painter->drawStaticText(QPointF((plot.left() + plot.right() - title.size().width()) / 2,
                                    bottom + kTickLength + kLabelGap + metrics.height() + 1),
                            title);
    painter->restore();
}

double MetricChart::edgeY(bool top) const {
    if (m_logScale) {
        const double lo = std::log10(m_shownY.lo), hi = std::log10(m_shownY.hi);
        const double inset = kMarkerInset * (hi - lo);
        return std::pow(10.0, top ? hi - inset : lo + inset);
    }
    const double inset = kMarkerInset * (m_shownY.hi - m_shownY.lo);
    return top ? m_shownY.hi - inset : m_shownY.lo + inset;
}

int MetricChart::placeMarkers(Trace& trace, XRange x) {
    QList<QPointF> nanPoints, infPoints;
    const double top = edgeY(true), bottom = edgeY(false);
    const std::vector<double>& xs = xsOf(trace);
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

void MetricChart::updateNote() {
    QStringList parts;
    if (m_logScale && m_valuesAtFloor > 0)
        parts << (m_valuesAtFloor == 1 ? tr("1 value <= 0 shown at floor %1")
                                       : tr("%1 values <= 0 shown at floor %2").arg(m_valuesAtFloor))
                     .arg(m_floor, 0, 'g', 3);
    if (m_nonFiniteCount > 0)
        parts << tr("%1 NaN/Inf marked at the plot edge (\u25C6 NaN, \u25B2 Inf)").arg(m_nonFiniteCount);
    if (m_xAxisKind == XAxis::wallTime) {
        const auto untimed = std::count_if(m_traces.begin(), m_traces.end(), [this](const auto& t) {
            const Trace& trace = t.second;
            return trace.raw && !m_hiddenRuns.contains(trace.runId) && trace.elapsed.size() != trace.cursor.data.size();
        });
        if (untimed > 0)
            parts << tr("%n run(s) without step times (older database) not shown by wall time", "", int(untimed));
    }
    const QString note = parts.join(QStringLiteral("; "));
    if (note == m_noteText) return;
    m_noteText = note;
    // A second title line: outside the plot, so it never covers data. (The
    // chart title is rich text.)
    QString title = m_metric.toHtmlEscaped();
    if (!note.isEmpty())
        title = QStringLiteral(
                    "<div align=\"center\">%1<br><span style=\"font-size:7pt; font-weight:normal; "
                    "color:#b04a00\">%2</span></div>")
                    .arg(title, note.toHtmlEscaped());
    chart()->setTitle(title);
}

// --- Options -----------------------------------------------------------------

void MetricChart::setVisibleRuns(const QList<qint64>& runIds) {
    m_visibleFilter = QSet<qint64>(runIds.begin(), runIds.end());
    scheduleRedraw();
}

void MetricChart::showAllRuns() {
    m_visibleFilter.reset();
    scheduleRedraw();
}

void MetricChart::setRunHidden(qint64 runId, bool hidden) {
    if (hidden == m_hiddenRuns.contains(runId)) return;
    if (hidden) m_hiddenRuns.insert(runId);
    else m_hiddenRuns.remove(runId);
    const auto it = m_traces.find(runId);
    if (it != m_traces.end()) styleTrace(it->second);
    scheduleRedraw();
}

QList<qint64> MetricChart::plottedRuns() const {
    QList<qint64> ids;
    for (const auto& [id, trace] : m_traces)
        if (trace.raw) ids.append(id);
    return ids;
}

QString MetricChart::xAxisTitle() const {
    if (m_xAxisKind == XAxis::step) return tr("step");
    const QString unit = m_timeUnit == 1 ? tr("s") : m_timeUnit == 60 ? tr("min") : tr("h");
    return tr("wall time since the run's first step (%1)").arg(unit);
}

void MetricChart::setXAxis(XAxis axis) {
    if (axis == m_xAxisKind) return;
    m_xAxisKind = axis;
    // A zoom in steps means nothing in seconds; reset silently (the grid
    // switches every chart at once).
    m_zoom.reset();
    scheduleRedraw();
}

void MetricChart::setGroupSeeds(bool on) {
    if (on == m_groupSeeds) return;
    m_groupSeeds = on;
    scheduleRedraw();
}

QList<MetricChart::SeedBandView> MetricChart::seedBands() const {
    QList<SeedBandView> views;
    for (const auto& [key, group] : m_groups)
        if (!group.aggregated.isEmpty()) views.append({group.name, group.aggregated, group.mean, group.lo, group.hi});
    return views;
}

void MetricChart::setLogScale(bool on) {
    if (on == m_logScale) return;
    m_logScale = on;
    installYAxis();
    // At once, not deferred: until re-prepared, values <= 0 would make
    // QLogValueAxis hide whole series.
    redrawNow();
}

void MetricChart::setSmoothing(double weight) {
    weight = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, kMaxSmoothingWeight);
    if (weight == m_smoothing) return;
    m_smoothing = weight;
    for (auto& [id, trace] : m_traces) {
        resetDerived(trace);
        styleTrace(trace);
    }
    scheduleRedraw();
}

void MetricChart::setPointBudget(int points) {
    if (points == m_pointBudget) return;
    m_pointBudget = std::max(0, points);
    scheduleRedraw();
}

void MetricChart::setXRange(double lo, double hi) {
    if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return;
    const XRange range{lo, hi};
    if (m_zoom == range) return;
    m_zoom = range;
    scheduleRedraw();
    emit xRangeChanged(lo, hi);
}

void MetricChart::resetXRange() {
    if (!m_zoom) return;
    m_zoom.reset();
    scheduleRedraw();
    emit xRangeReset();
}

// --- Export ------------------------------------------------------------------

bool MetricChart::savePng(const QString& path) {
    clearHover();
    if (m_dirty) redrawNow();
    const QPixmap pixmap = grab();
    return !pixmap.isNull() && pixmap.save(path, "PNG");
}

bool MetricChart::saveSvg(const QString& path) {
    clearHover();
    if (m_dirty) redrawNow();
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(size());
    generator.setViewBox(QRect(QPoint(0, 0), size()));
    generator.setTitle(m_metric);
    generator.setDescription(tr("Mismatch Lab chart of %1").arg(m_metric));
    QPainter painter;
    if (!painter.begin(&generator)) return false;
    painter.setRenderHint(QPainter::Antialiasing);
    QGraphicsView::render(&painter, QRectF(QPointF(0, 0), size()), viewport()->rect());
    painter.end();
    return QFileInfo(path).size() > 0;
}

// --- Hover -------------------------------------------------------------------

double MetricChart::sceneXToValue(double sceneX) const {
    const QRectF plot = chart()->plotArea();
    if (plot.width() <= 0) return m_shownX.lo;
    return m_shownX.lo + (sceneX - plot.left()) / plot.width() * m_shownX.span();
}

QPointF MetricChart::scenePosOf(const Trace& trace, std::size_t index) const {
    const double x = xsOf(trace)[index];
    double y = trace.cursor.data.values[index];
    if (std::isnan(y) || y == kInf) y = edgeY(true);
    else if (y == -kInf) y = edgeY(false);
    else if (m_logScale && y < m_floor) y = m_floor;
    return toScene(x, y);
}

QPointF MetricChart::toScene(double x, double y) const {
    const QRectF plot = chart()->plotArea();
    const double fx = (x - m_shownX.lo) / m_shownX.span();
    double fy;
    if (m_logScale) {
        const double lo = std::log10(m_shownY.lo);
        fy = (std::log10(y) - lo) / (std::log10(m_shownY.hi) - lo);
    } else {
        fy = (y - m_shownY.lo) / (m_shownY.hi - m_shownY.lo);
    }
    return QPointF(plot.left() + fx * plot.width(), plot.bottom() - fy * plot.height());
}

namespace {

// Raw lines are drawn opaque in their colour pre-blended with the white plot
// background: alpha-blending long overlapping zig-zags cost most of a paint,
// and on white the look is the same.
QColor blendedOnWhite(QColor c) {
    const double a = c.alphaF();
    return QColor::fromRgbF(1.0 - a * (1.0 - c.redF()), 1.0 - a * (1.0 - c.greenF()), 1.0 - a * (1.0 - c.blueF()));
}

// A dense line to fill: its column spans (one per column, consecutive) and colour.
struct SpanLayer {
    const std::vector<QLine>* spans;
    QRgb premultiplied;
};

// Sets the pixels of the layers' spans straight in the image, in layer order.
// Through QPainter each span is a call (~1 us) and a redraw of 10 dense runs
// has ~25k of them. Written tile by tile (16 columns: one cache line of
// pixels per row) with every layer per tile, so the tile's rows stay in L1
// while the lines overdraw each other; column by column over the whole image
// each pixel would be a cache miss.
void fillSpanLayers(QImage& image, const std::vector<SpanLayer>& layers) {
    constexpr int kTileColumns = 16;
    const int width = image.width(), height = image.height();
    const qsizetype stride = image.bytesPerLine() / qsizetype(sizeof(QRgb));
    auto* pixels = reinterpret_cast<QRgb*>(image.bits());
    for (int tile = 0; tile < width; tile += kTileColumns) {
        const int tileEnd = std::min(width, tile + kTileColumns);
        for (const SpanLayer& layer : layers) {
            const std::vector<QLine>& spans = *layer.spans;
            if (spans.empty()) continue;
            const int first = spans.front().x1();
            const int from = std::max(tile, first);
            const int to = std::min<qsizetype>(tileEnd, first + qsizetype(spans.size()));
            for (int x = from; x < to; ++x) {
                const QLine& span = spans[std::size_t(x - first)];
                const int top = std::max(0, std::min(span.y1(), span.y2()));
                const int bottom = std::min(height - 1, std::max(span.y1(), span.y2()));
                QRgb* pixel = pixels + top * stride + x;
                for (int y = top; y <= bottom; ++y, pixel += stride) *pixel = layer.premultiplied;
            }
        }
    }
}

}  // namespace

MetricChart::LineMapping MetricChart::lineMapping(QPointF origin, double scale) const {
    const QRectF plot = chart()->plotArea();
    const bool log = m_logScale;
    const double ylo = log ? std::log10(m_shownY.lo) : m_shownY.lo;
    const double yhi = log ? std::log10(m_shownY.hi) : m_shownY.hi;
    // An affine map of (x, axis y): one multiply-add per coordinate.
    LineMapping m;
    m.log = log;
    m.sx = plot.width() / m_shownX.span() * scale;
    m.sy = plot.height() / (yhi - ylo) * scale;
    m.x0 = (plot.left() - origin.x()) * scale - m_shownX.lo * m.sx;
    m.y0 = (plot.bottom() - origin.y()) * scale + ylo * m.sy;
    return m;
}

void MetricChart::mapPoints(const QList<QPointF>& points, const LineMapping& m, QPolygonF& out) {
    out.resize(points.size());
    QPointF* o = out.data();
    for (const QPointF& p : points)
        *o++ = QPointF(m.x0 + p.x() * m.sx, m.y0 - (m.log ? std::log10(p.y()) : p.y()) * m.sy);
}

MetricChart::DrawnLine MetricChart::prepareLine(const QList<QPointF>& points, const LineMapping& mapping) {
    DrawnLine line;
    mapPoints(points, mapping, line.polyline);
    const std::span<const QPointF> pixels(line.polyline.constData(), std::size_t(line.polyline.size()));
    line.dense = isDenseInPixels(pixels);
    if (line.dense) {
        line.spans = columnSpans(pixels);
        line.polyline.clear();
    }
    return line;
}

bool MetricChart::canDrawLines() const {
    const QRectF plot = chart()->plotArea();
    return plot.width() > 0 && plot.height() > 0 && m_shownX.span() > 0 && m_shownY.hi > m_shownY.lo;
}

void MetricChart::paintLines(QPainter* painter) {
    // Vector output (SVG export, printing) gets real polylines; the screen a
    // cached raster layer.
    if (painter->paintEngine()->type() != QPaintEngine::Raster) {
        paintLinesAsVectors(painter);
        return;
    }
    const QRect area = chart()->plotArea().adjusted(-1, -1, 1, 1).toAlignedRect();
    const double dpr = painter->device()->devicePixelRatioF();
    if (m_linesStale || m_linesArea != area || m_linesImage.devicePixelRatioF() != dpr) renderLinesImage(area, dpr);
    painter->drawImage(area.topLeft(), m_linesImage);
}

void MetricChart::renderLinesImage(QRect area, double dpr) {
    m_linesStale = false;
    m_linesArea = area;
    const QSize size = area.size() * dpr;
    if (m_linesImage.size() != size) m_linesImage = QImage(size, QImage::Format_ARGB32_Premultiplied);
    m_linesImage.setDevicePixelRatio(1);  // drawn in device pixels; the ratio is set after drawing
    m_linesImage.fill(Qt::transparent);
    cpu::clear_upper_vector_state();  // after Qt's fill: the mapping below calls log10 per point
    const LineMapping mapping = lineMapping(area.topLeft(), dpr);
    for (auto& [id, trace] : m_traces) {
        // Geometry only for the runs whose series or mapping changed.
        if (!isShown(trace) ||
            (trace.drawnVersion == trace.seriesVersion && trace.drawnArea == area && trace.drawnMapping == mapping))
            continue;
        trace.drawnVersion = trace.seriesVersion;
        trace.drawnArea = area;
        trace.drawnMapping = mapping;
        trace.drawnRaw = prepareLine(trace.raw->points(), mapping);
        trace.drawnSmooth = prepareLine(trace.smooth->points(), mapping);
    }
    for (auto& [key, group] : m_groups) group.drawnMean = prepareLine(group.mean, mapping);
    QPainter painter(&m_linesImage);
    painter.setRenderHint(QPainter::Antialiasing);
    paintBands(painter, mapping);
    // Dense lines are collected and filled together; a sparse line is drawn
    // through the painter after the dense ones before it (draw order = overdraw).
    std::vector<SpanLayer> pending;
    const auto draw = [&](const DrawnLine& line, const QColor& colour) {
        if (line.dense) {
            pending.push_back({&line.spans, qPremultiply(colour.rgba())});
            return;
        }
        fillSpanLayers(m_linesImage, pending);
        pending.clear();
        painter.setPen(QPen(colour, kLineWidth * dpr));
        if (line.polyline.size() == 1) painter.drawPoint(line.polyline.front());
        else if (line.polyline.size() > 1) painter.drawPolyline(line.polyline);
    };
    for (const auto& [id, trace] : m_traces)
        if (isShown(trace) && trace.raw->isVisible()) draw(trace.drawnRaw, blendedOnWhite(trace.raw->pen().color()));
    for (const auto& [id, trace] : m_traces)
        if (isShown(trace) && trace.smooth->isVisible()) draw(trace.drawnSmooth, trace.smooth->pen().color());
    for (const auto& [key, group] : m_groups) draw(group.drawnMean, group.colour);
    fillSpanLayers(m_linesImage, pending);
    painter.end();
    m_linesImage.setDevicePixelRatio(dpr);
}

void MetricChart::paintBands(QPainter& painter, const LineMapping& mapping) const {
    // Each group's min-max band: the upper edge forwards, the lower back.
    QPolygonF upper, lower;
    painter.save();
    painter.setPen(Qt::NoPen);
    for (const auto& [key, group] : m_groups) {
        if (group.hi.isEmpty()) continue;
        mapPoints(group.hi, mapping, upper);
        mapPoints(group.lo, mapping, lower);
        std::reverse(lower.begin(), lower.end());
        QColor fill = group.colour;
        fill.setAlpha(kBandAlpha);
        painter.setBrush(fill);
        painter.drawPolygon(upper + lower);
    }
    painter.restore();
}

void MetricChart::paintLinesAsVectors(QPainter* painter) {
    painter->save();
    painter->setClipRect(chart()->plotArea().adjusted(-1, -1, 1, 1));
    const LineMapping mapping = lineMapping(QPointF(0, 0), 1.0);
    paintBands(*painter, mapping);
    QPolygonF polygon;
    const auto draw = [&](const QLineSeries* series, const QColor& colour) {
        if (series->count() == 0) return;
        mapPoints(series->points(), mapping, polygon);
        painter->setPen(QPen(colour, kLineWidth));
        if (polygon.size() == 1) painter->drawPoint(polygon.front());
        else painter->drawPolyline(polygon);
    };
    for (const auto& [id, trace] : m_traces)
        if (isShown(trace) && trace.raw->isVisible()) draw(trace.raw, blendedOnWhite(trace.raw->pen().color()));
    for (const auto& [id, trace] : m_traces)
        if (isShown(trace) && trace.smooth->isVisible()) draw(trace.smooth, trace.smooth->pen().color());
    for (const auto& [key, group] : m_groups)
        if (!group.mean.isEmpty()) {
            mapPoints(group.mean, mapping, polygon);
            painter->setPen(QPen(group.colour, kLineWidth));
            painter->drawPolyline(polygon);
        }
    painter->restore();
}

std::optional<MetricChart::Nearest> MetricChart::nearestPoint(const QPoint& viewPos) const {
    const QPointF scene = mapToScene(viewPos);
    if (!chart()->plotArea().adjusted(-6, -6, 6, 6).contains(scene)) return std::nullopt;
    const double xValue = sceneXToValue(scene.x());
    std::optional<Nearest> best;
    double bestDistance = kInf;
    for (const auto& [key, group] : m_groups) {
        const std::vector<double>& xs = group.aggregate.xs;
        const auto after = static_cast<std::size_t>(std::lower_bound(xs.begin(), xs.end(), xValue) - xs.begin());
        for (std::size_t i : {after == 0 ? after : after - 1, after}) {
            if (i >= xs.size() || group.aggregated.isEmpty()) continue;
            const double y = m_logScale ? std::max(group.aggregate.mean[i], m_floor) : group.aggregate.mean[i];
            const QPointF pos = toScene(xs[i], y);
            const double distance = std::hypot(pos.x() - scene.x(), pos.y() - scene.y());
            if (distance < bestDistance) {
                bestDistance = distance;
                best = Nearest{&group, nullptr, i, pos};
            }
        }
    }
    for (const auto& [id, trace] : m_traces) {
        if (!isShown(trace) || trace.cursor.data.size() == 0) continue;
        const std::vector<double>& xs = xsOf(trace);
        const auto after = static_cast<std::size_t>(std::lower_bound(xs.begin(), xs.end(), xValue) - xs.begin());
        for (std::size_t i : {after == 0 ? after : after - 1, after}) {
            if (i >= xs.size()) continue;
            const QPointF pos = scenePosOf(trace, i);
            const double distance = std::hypot(pos.x() - scene.x(), pos.y() - scene.y());
            if (distance < bestDistance) {
                bestDistance = distance;
                best = Nearest{nullptr, &trace, i, pos};
            }
        }
    }
    return best;
}

QString MetricChart::describe(const Nearest& nearest) const {
    if (const SeedGroup* group = nearest.group) {
        const SeedAggregate& a = group->aggregate;
        const std::size_t i = nearest.index;
        return tr("<b>%1</b><br>step %2<br>mean of %3 runs: %4<br>min \u2013 max: %5 \u2013 %6<br>(smoothed values)")
            .arg(group->name.toHtmlEscaped())
            .arg(static_cast<qint64>(a.steps[i]))
            .arg(a.runs[i])
            .arg(formatValue(a.mean[i]), formatValue(a.lo[i]), formatValue(a.hi[i]));
    }
    const Trace& trace = *nearest.trace;
    const double raw = trace.cursor.data.values[nearest.index];
    const double smoothed = nearest.index < trace.smoothed.size() ? trace.smoothed[nearest.index] : std::nan("");
    QString rawText = formatValue(raw);
    if (m_logScale && raw <= 0) rawText += tr(" (drawn at floor)");
    QString where = tr("step %1").arg(static_cast<qint64>(trace.cursor.data.steps[nearest.index]));
    if (m_xAxisKind == XAxis::wallTime)
        where += tr(" at %1 s").arg(trace.elapsed[nearest.index], 0, 'f', trace.elapsed[nearest.index] < 100 ? 2 : 0);
    return tr("<b>%1</b><br>%2<br>raw: %3<br>smoothed: %4")
        .arg(trace.name.toHtmlEscaped(), where, rawText, std::isfinite(raw) ? formatValue(smoothed) : tr("n/a"));
}

QString MetricChart::hoverTextAt(const QPoint& viewPos) const {
    const auto nearest = nearestPoint(viewPos);
    return nearest ? describe(*nearest) : QString();
}

void MetricChart::showHover(const QPoint& viewPos) {
    const auto nearest = nearestPoint(viewPos);
    if (!nearest) {
        clearHover();
        return;
    }
    const double r = 4.5;
    m_hoverDot->setRect(QRectF(nearest->scenePos - QPointF(r, r), QSizeF(2 * r, 2 * r)));
    m_hoverDot->setBrush(nearest->group ? nearest->group->colour : nearest->trace->colour);
    m_hoverDot->show();
    QToolTip::showText(mapToGlobal(viewPos), describe(*nearest), this);
}

void MetricChart::clearHover() {
    m_hoverDot->hide();
    QToolTip::hideText();
}

// --- Mouse, menu, lifecycle --------------------------------------------------

void MetricChart::mousePressEvent(QMouseEvent* event) {
    const bool inPlot = chart()->plotArea().contains(mapToScene(event->pos()));
    if (event->button() == Qt::LeftButton && inPlot) {
        m_dragOrigin = event->pos();
        m_band->setGeometry(QRect(event->pos(), QSize()));
        m_band->show();
        event->accept();
        return;
    }
    QChartView::mousePressEvent(event);  // legend clicks live in the scene
}

void MetricChart::mouseMoveEvent(QMouseEvent* event) {
    if (m_dragOrigin) {
        const QRect plot = mapFromScene(chart()->plotArea()).boundingRect();
        const int left = std::clamp(std::min(m_dragOrigin->x(), event->pos().x()), plot.left(), plot.right());
        const int right = std::clamp(std::max(m_dragOrigin->x(), event->pos().x()), plot.left(), plot.right());
        m_band->setGeometry(QRect(QPoint(left, plot.top()), QPoint(right, plot.bottom())));
        event->accept();
        return;
    }
    showHover(event->pos());
    QChartView::mouseMoveEvent(event);
}

void MetricChart::mouseReleaseEvent(QMouseEvent* event) {
    if (m_dragOrigin && event->button() == Qt::LeftButton) {
        m_band->hide();
        const QPoint origin = *m_dragOrigin;
        m_dragOrigin.reset();
        if (std::abs(event->pos().x() - origin.x()) >= kMinDragPixels) {
            const double a = std::clamp(sceneXToValue(mapToScene(origin).x()), m_shownX.lo, m_shownX.hi);
            const double b = std::clamp(sceneXToValue(mapToScene(event->pos()).x()), m_shownX.lo, m_shownX.hi);
            setXRange(std::min(a, b), std::max(a, b));
        }
        event->accept();
        return;
    }
    // Not QChartView's: with a rubber band it turns a right click into zoom-out.
    QGraphicsView::mouseReleaseEvent(event);
}

void MetricChart::mouseDoubleClickEvent(QMouseEvent* event) {
    if (event->button() == Qt::LeftButton && chart()->plotArea().contains(mapToScene(event->pos()))) {
        resetXRange();
        event->accept();
        return;
    }
    QChartView::mouseDoubleClickEvent(event);
}

void MetricChart::leaveEvent(QEvent* event) {
    clearHover();
    QChartView::leaveEvent(event);
}

QMenu* MetricChart::createContextMenu(QWidget* parent) {
    auto* menu = new QMenu(parent);
    QAction* log = menu->addAction(tr("Log scale"));
    log->setCheckable(true);
    log->setChecked(m_logScale);
    connect(log, &QAction::toggled, this, &MetricChart::setLogScale);
    menu->addAction(tr("Smoothing\u2026"), this, &MetricChart::askSmoothing);
    QAction* reset = menu->addAction(tr("Reset zoom"), this, &MetricChart::resetXRange);
    reset->setEnabled(m_zoom.has_value());
    menu->addSeparator();
    menu->addAction(tr("Save as PNG\u2026"), this, [this] { askSave(false); });
    menu->addAction(tr("Save as SVG\u2026"), this, [this] { askSave(true); });
    menu->addSeparator();
    menu->addAction(tr("Remove chart"), this, &MetricChart::removeRequested);
    return menu;
}

void MetricChart::contextMenuEvent(QContextMenuEvent* event) {
    clearHover();
    std::unique_ptr<QMenu> menu(createContextMenu(this));
    menu->exec(event->globalPos());
}

void MetricChart::askSmoothing() {
    bool ok = false;
    const double weight =
        QInputDialog::getDouble(this, tr("Smoothing"), tr("EMA weight (0 = raw data, 0.99 = very smooth):"),
                                m_smoothing, 0, kMaxSmoothingWeight, 3, &ok);
    if (ok) setSmoothing(weight);
}

void MetricChart::askSave(bool svg) {
    QString base = m_metric;
    base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]")), QStringLiteral("_"));
    const QString path = QFileDialog::getSaveFileName(this, svg ? tr("Save chart as SVG") : tr("Save chart as PNG"),
                                                      base + (svg ? ".svg" : ".png"),
                                                      svg ? tr("SVG images (*.svg)") : tr("PNG images (*.png)"));
    if (path.isEmpty()) return;
    if (!(svg ? saveSvg(path) : savePng(path)))
        QMessageBox::warning(this, tr("Save chart"), tr("Could not write %1.").arg(path));
}

void MetricChart::resizeEvent(QResizeEvent* event) {
    QChartView::resizeEvent(event);
    scheduleRedraw();  // the pixel width changed: re-thin
}

void MetricChart::showEvent(QShowEvent* event) {
    QChartView::showEvent(event);
    if (m_dirty) scheduleRedraw();
}

// --- Read-outs ---------------------------------------------------------------

QLineSeries* MetricChart::rawSeries(qint64 runId) const {
    const auto it = m_traces.find(runId);
    return it == m_traces.end() ? nullptr : it->second.raw;
}

QLineSeries* MetricChart::smoothedSeries(qint64 runId) const {
    const auto it = m_traces.find(runId);
    return it == m_traces.end() ? nullptr : it->second.smooth;
}

QScatterSeries* MetricChart::nanMarkers(qint64 runId) const {
    const auto it = m_traces.find(runId);
    return it == m_traces.end() ? nullptr : it->second.nan;
}

QScatterSeries* MetricChart::infMarkers(qint64 runId) const {
    const auto it = m_traces.find(runId);
    return it == m_traces.end() ? nullptr : it->second.inf;
}

}  // namespace mlk
