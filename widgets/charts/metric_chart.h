// One live chart: one metric, any number of runs. Per run a thin translucent
// raw line and a debiased-EMA smoothed line in the run's colour, NaN/Inf
// markers at the plot edge, a log axis that keeps values <= 0 (at a floor,
// with a note), an outlier-robust y range, hover read-out, drag-zoom on x.
//
// Redraws are coalesced: any number of data signals within kRedrawDelayMs
// produce one redraw, which re-thins every series that changed to the plot's
// pixel width and pushes it with QXYSeries::replace (never point-by-point
// append). The lines, grid and axes are painted by one item from a raster
// layer cached between data changes (see MetricLinesItem).
#pragma once

#include <QChartView>
#include <QFont>
#include <QHash>
#include <QImage>
#include <QLine>
#include <QList>
#include <QPointer>
#include <QPolygonF>
#include <QSet>
#include <QStaticText>
#include <QString>
#include <QTimer>

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "widgets/data/run_data.h"
#include "widgets/data/series_math.h"

QT_BEGIN_NAMESPACE
class QAbstractAxis;
class QGraphicsEllipseItem;
class QGraphicsItem;
class QPainter;
class QLineSeries;
class QMenu;
class QRubberBand;
class QScatterSeries;
class QValueAxis;
class QXYSeries;
QT_END_NAMESPACE

namespace mlk {

class MetricChart : public QChartView {
    Q_OBJECT

public:
    static constexpr int kRedrawDelayMs = 30;
    static constexpr double kDefaultSmoothing = 0.6;
    static constexpr int kDefaultPointBudget = 8000;
    static constexpr int kMinBuckets = 150;
    static constexpr double kMarkerBand = 0.08;  // of the data span, per edge that has markers

    MetricChart(RunDataStore* data, const QString& metric, QWidget* parent = nullptr);
    ~MetricChart() override;

    QString metric() const { return m_metric; }
    RunDataStore* dataStore() const { return m_data; }

    // Which runs take part: every run of the store (default) or a chosen list.
    void setVisibleRuns(const QList<qint64>& runIds);
    void showAllRuns();
    // Hidden runs keep a (dimmed) legend entry, so a click brings them back.
    void setRunHidden(qint64 runId, bool hidden);
    bool isRunHidden(qint64 runId) const { return m_hiddenRuns.contains(runId); }
    QList<qint64> plottedRuns() const;  // runs that have a series here now

    // What x is: the step, or the wall-clock time since the run's first step
    // (TensorBoard's "relative"), kept non-decreasing so a resumed run or a
    // clock step never zig-zags. Changing it resets the zoom.
    enum class XAxis { step, wallTime };
    void setXAxis(XAxis axis);
    XAxis xAxis() const { return m_xAxisKind; }
    QString xAxisTitle() const;

    void setLogScale(bool on);
    bool logScale() const { return m_logScale; }
    // Runs whose configurations differ in the seed only (RunMeta::seedGroup)
    // drawn as one mean line in a min-max band (of their smoothed values),
    // when two or more of them have this metric. Off: every run its own line.
    void setGroupSeeds(bool on);
    bool groupSeeds() const { return m_groupSeeds; }
    struct SeedBandView {
        QString name;
        QList<qint64> runs;
        QList<QPointF> mean, lo, hi;  // as drawn (thinned)
    };
    QList<SeedBandView> seedBands() const;
    void setSmoothing(double weight);  // EMA weight in [0, 0.999]; 0 = raw only
    double smoothing() const { return m_smoothing; }
    // Raw points per chart (all runs together) before pixel columns are
    // merged into wider min/max buckets; 0 = one bucket per pixel always.
    // Every pushed point is thinned, mapped and rasterised again on a zoom:
    // the budget keeps ten dense runs as cheap as three.
    void setPointBudget(int points);
    int pointBudget() const { return m_pointBudget; }

    // Zoom on x. nullopt: follow the data. setXRange/resetXRange emit
    // xRangeChanged/xRangeReset when the range actually changes.
    void setXRange(double lo, double hi);
    void resetXRange();
    std::optional<XRange> zoomedXRange() const { return m_zoom; }
    XRange shownXRange() const { return m_shownX; }
    YRange shownYRange() const { return m_shownY; }

    bool savePng(const QString& path);
    bool saveSvg(const QString& path);

    void scheduleRedraw();
    void redrawNow();
    int redrawCount() const { return m_redrawCount; }

    // Read-outs for tests and reports.
    QLineSeries* rawSeries(qint64 runId) const;
    QLineSeries* smoothedSeries(qint64 runId) const;
    QScatterSeries* nanMarkers(qint64 runId) const;
    QScatterSeries* infMarkers(qint64 runId) const;
    QAbstractAxis* yAxis() const { return m_yAxis; }
    int valuesAtFloor() const { return m_valuesAtFloor; }  // shown run values <= 0 (log scale only)
    int nonFiniteCount() const { return m_nonFiniteCount; }
    QString noteText() const { return m_noteText; }      // "" when there is nothing to note
    QStringList tickLabels(Qt::Orientation axis) const;  // the labels painted on that axis now
    // Scene position of a data point (step, value) as the lines are drawn.
    QPointF toScene(double x, double y) const;
    QString hoverTextAt(const QPoint& viewPos) const;  // what the tooltip would say there
    QMenu* createContextMenu(QWidget* parent);

signals:
    void xRangeChanged(double lo, double hi);
    void xRangeReset();
    void removeRequested();
    void runLegendClicked(qint64 runId);
    void redrawn();

protected:
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;
    void mouseDoubleClickEvent(QMouseEvent* event) override;
    void leaveEvent(QEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void showEvent(QShowEvent* event) override;

private:
    // Device-pixel mapping of (step, value) into a target whose origin is
    // `origin` in scene coordinates, `scale` device pixels per scene unit.
    struct LineMapping {
        bool log = false;
        double sx = 1, sy = 1, x0 = 0, y0 = 0;
        bool operator==(const LineMapping&) const = default;
    };
    // One series as the raster layer draws it: a dense line as column spans,
    // a sparse one as an antialiased polyline.
    struct DrawnLine {
        bool dense = false;
        std::vector<QLine> spans;
        QPolygonF polyline;
    };
    static DrawnLine prepareLine(const QList<QPointF>& points, const LineMapping& mapping);

    // One run's data as this chart sees it, with the derived series cached so
    // a live append costs O(new points), not O(n).
    struct Trace {
        qint64 runId = 0;
        QString name;
        QColor colour;
        SeriesCursor cursor;
        std::size_t processed = 0;  // points folded into the caches below
        EmaState ema;
        std::vector<double> smoothed;
        std::vector<NonFinitePoint> nonFinite;
        double smallestPositive = 0;
        // x by wall time: seconds since the first step with a known time,
        // non-decreasing; empty while no step has a known time.
        std::vector<double> elapsed;
        double firstTime = std::numeric_limits<double>::quiet_NaN();
        QLineSeries* raw = nullptr;
        QLineSeries* smooth = nullptr;
        QScatterSeries* nan = nullptr;
        QScatterSeries* inf = nullptr;
        QLineSeries* legend = nullptr;  // no points: the legend entry only
        // The last thinning, reused while its inputs are unchanged (a live
        // update then re-thins only the runs that grew).
        struct Thinning {
            XRange x;
            int buckets = 0;
            std::size_t points = 0;
            bool log = false;
            XAxis axis = XAxis::step;
            QList<QPointF> raw, smooth;
            int atFloor = 0;  // values <= 0 in x (counted on a log axis only)
        };
        std::optional<Thinning> thinning;
        // Pixel geometry of raw/smooth as last rasterised, and what it was
        // computed from: series content (seriesVersion) and mapping.
        int seriesVersion = 0;
        int drawnVersion = -1;
        QRect drawnArea;
        LineMapping drawnMapping;
        DrawnLine drawnRaw, drawnSmooth;
    };

    struct ThinnedTrace {
        Trace* trace = nullptr;
        QList<QPointF> raw, smooth;
    };

    // Seeds of one configuration drawn together (see setGroupSeeds).
    struct SeedGroup {
        QString name;
        QColor colour;
        QList<qint64> members;               // in this chart, hidden ones included
        QList<qint64> aggregated;            // the members not hidden
        std::vector<std::size_t> signature;  // what the aggregate was computed from
        SeedAggregate aggregate;
        QList<QPointF> mean, lo, hi;  // thinned, in axis values
        QLineSeries* legend = nullptr;
        DrawnLine drawnMean;
    };

    struct Nearest {
        const SeedGroup* group = nullptr;  // set: the point is on a group's mean line
        const Trace* trace = nullptr;
        std::size_t index = 0;
        QPointF scenePos;
    };

    void buildChart();
    void installYAxis();
    void attach(QXYSeries* series);
    void createSeries(Trace& trace);
    void destroySeries(Trace& trace);
    void styleTrace(Trace& trace);
    void applyLegend(Trace& trace);
    void syncTraces();
    void updateTraceData(Trace& trace);
    void resetDerived(Trace& trace);
    bool isShown(const Trace& trace) const;
    bool isInShownGroup(const Trace& trace) const;  // grouped, and drawn by its group
    void syncGroups(const QList<RunMeta>& metas);
    void toggleGroupHidden(const QString& key);
    void aggregateGroup(SeedGroup& group);
    void thinGroups(XRange x, int buckets, std::vector<double>& visibleValues);
    void paintBands(QPainter& painter, const LineMapping& mapping) const;
    const std::vector<double>& xsOf(const Trace& trace) const;  // steps or elapsed, by the x axis
    static void extendElapsed(Trace& trace);
    XRange dataXExtent() const;
    int plotPixelWidth() const;
    double logFloor() const;
    int bucketsPerRun(int pixels) const;
    std::vector<ThinnedTrace> thinShownTraces(XRange x, int pixels);
    void noteMarkerEdges(const Trace& trace, XRange x);  // sets m_markersAtTop / m_markersAtBottom
    void pushToSeries(const std::vector<ThinnedTrace>& thinned, XRange x, YRange y);
    YRange yRangeFor(std::vector<double>& visibleRaw) const;
    void applyAxes(XRange x, YRange y);
    int placeMarkers(Trace& trace, XRange x);
    double edgeY(bool top) const;
    QPointF scenePosOf(const Trace& trace, std::size_t index) const;
    LineMapping lineMapping(QPointF origin, double scale) const;
    static void mapPoints(const QList<QPointF>& points, const LineMapping& mapping, QPolygonF& out);
    bool canDrawLines() const;
    void paintPlot(QPainter* painter);     // grid, lines, axes: what MetricLinesItem draws
    enum class AxisLayer { grid, frame };  // under the lines; over them (axis lines, ticks, labels)
    void paintAxes(QPainter* painter, AxisLayer layer);
    QString tickLabel(double value, bool xAxis) const;
    const QStaticText& labelText(const QString& text);
    void fitMarginsToLabels();
    void paintLines(QPainter* painter);  // after paintPlot's canDrawLines() check
    void renderLinesImage(QRect area, double dpr);
    void paintLinesAsVectors(QPainter* painter);
    friend class MetricLinesItem;
    void updateNote();
    double sceneXToValue(double sceneX) const;
    std::optional<Nearest> nearestPoint(const QPoint& viewPos) const;
    QString describe(const Nearest& nearest) const;
    void showHover(const QPoint& viewPos);
    void clearHover();
    void askSmoothing();
    void askSave(bool svg);

    RunDataStore* m_data;
    QString m_metric;
    std::map<qint64, Trace> m_traces;
    bool m_groupSeeds = false;
    std::map<QString, SeedGroup> m_groups;  // by RunMeta::seedGroup
    QHash<qint64, QString> m_groupOf;       // grouped run -> its group
    std::size_t m_derivedVersion = 0;       // bumped whenever a trace's derived data restarts
    std::optional<QSet<qint64>> m_visibleFilter;
    QSet<qint64> m_hiddenRuns;

    XAxis m_xAxisKind = XAxis::step;
    bool m_logScale = false;
    double m_smoothing = kDefaultSmoothing;
    int m_pointBudget = kDefaultPointBudget;
    std::optional<XRange> m_zoom;
    XRange m_shownX{0, 1};
    YRange m_shownY{0, 1};
    int m_valuesAtFloor = 0;
    int m_nonFiniteCount = 0;
    bool m_markersAtTop = false;     // NaN / +Inf in view
    bool m_markersAtBottom = false;  // -Inf in view
    double m_floor = kDefaultLogFloor;

    std::vector<AxisTick> m_xTicks, m_yTicks;
    double m_xTickInterval = 1;
    double m_yTickInterval = 1;  // linear y only
    double m_timeUnit = 1;       // seconds per x label unit on a wall-time axis
    QFont m_axisFont;
    QHash<QString, QStaticText> m_labelCache;

    QValueAxis* m_xAxis = nullptr;
    QAbstractAxis* m_yAxis = nullptr;
    QGraphicsEllipseItem* m_hoverDot = nullptr;
    QGraphicsItem* m_lines = nullptr;
    // Every shown line, rasterised once per data or axis change: hover, the
    // rubber band and other repaints only blit it.
    QImage m_linesImage;
    QRect m_linesArea;
    bool m_linesStale = true;
    QString m_noteText;

    QTimer m_redrawTimer;
    bool m_dirty = true;
    int m_redrawCount = 0;

    QRubberBand* m_band = nullptr;
    std::optional<QPoint> m_dragOrigin;
};

}  // namespace mlk
