// The lines of a metric chart as pixels: every shown run's raw and smoothed
// line, and every seed group's band and mean line. On screen they are
// rasterised once per data or axis change into a cached image, which hover,
// the rubber band and other repaints only blit; a dense line is filled as
// pixel-column spans straight into the image (series_math.h, columnSpans),
// and only the runs whose points or mapping changed are mapped again. Vector
// output (SVG export, printing) gets real polylines.
#pragma once

#include <QImage>
#include <QLine>
#include <QPolygonF>
#include <QRect>
#include <QString>

#include <map>
#include <vector>

#include "widgets/charts/axis_frame.h"
#include "widgets/charts/chart_traces.h"

QT_BEGIN_NAMESPACE
class QPainter;
QT_END_NAMESPACE

namespace mlk {

class LineLayer {
public:
    static constexpr int kBandAlpha = 55;  // a seed group's min-max band

    // The next paint renders again (data or axes changed).
    void invalidate() { stale_ = true; }
    // The line width changed: every line is prepared again.
    void restyle() {
        drawn_.clear();
        stale_ = true;
    }
    // One run or seed group drawn over the others, which fade (the mouse is
    // on its legend entry, or on its row in the run list or the sweep
    // table): 0 and an empty key for none. A run drawn by its seed group
    // brings the group forward. On screen only; vector output draws every
    // line as it is.
    void setEmphasis(qint64 runId, const QString& groupKey);
    qint64 emphasisRun() const { return emphasisRun_; }
    // The lines of `traces` inside `plot` as `frame` maps them.
    void paint(QPainter* painter, const QRectF& plot, const AxisFrame& frame, const ChartTraces& traces);

private:
    // Device-pixel mapping of (x, value) into a target whose origin is
    // `origin` in scene coordinates, `scale` device pixels per scene unit: an
    // affine map of (x, axis y), one multiply-add per coordinate.
    struct Mapping {
        bool log = false;
        double sx = 1, sy = 1, x0 = 0, y0 = 0;
        bool operator==(const Mapping&) const = default;
    };
    // One series as drawn: a dense line as column spans, a sparse one as an
    // antialiased polyline.
    struct DrawnLine {
        bool dense = false;
        std::vector<QLine> spans;
        QPolygonF polyline;
    };
    // A run's geometry as last rasterised, and what it was computed from.
    struct Drawn {
        int version = -1;  // Trace::seriesVersion
        QRect area;
        Mapping mapping;
        DrawnLine raw, smooth;
    };

    static Mapping mappingFor(const QRectF& plot, const AxisFrame& frame, QPointF origin, double scale);
    static void mapPoints(const QList<QPointF>& points, const Mapping& mapping, QPolygonF& out);
    static DrawnLine prepare(const QList<QPointF>& points, const Mapping& mapping);
    void render(QRect area, double dpr, const QRectF& plot, const AxisFrame& frame, const ChartTraces& traces);
    // Whether the emphasised run or group is drawn here: one this chart does
    // not show (filtered out, no value of its metric) fades nothing.
    bool emphasisDrawn(const ChartTraces& traces) const;
    bool isEmphasised(const QString& key, const SeedGroup& group) const;
    // A colour as drawn: faded while another line is emphasised.
    QColor toned(const QColor& colour, bool emphasisedLine) const;
    // toned: bands other than an emphasised group's fade.
    void paintBands(QPainter& painter, const Mapping& mapping, const ChartTraces& traces, bool toned) const;
    void paintVectors(QPainter* painter, const QRectF& plot, const AxisFrame& frame, const ChartTraces& traces) const;

    QImage image_;
    QRect area_;
    bool stale_ = true;
    std::map<qint64, Drawn> drawn_;  // by run
    qint64 emphasisRun_ = 0;
    QString emphasisGroup_;
    bool fading_ = false;  // emphasisDrawn() at the last render
};

}  // namespace mlk
