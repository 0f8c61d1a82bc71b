#include "widgets/charts/line_layer.h"

#include <QLineSeries>
#include <QPaintEngine>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <span>

#include "kernels/cpu/features.h"
#include "widgets/charts/chart_legend.h"
#include "widgets/charts/chart_style.h"

namespace mlk {

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

LineLayer::Mapping LineLayer::mappingFor(const QRectF& plot, const AxisFrame& frame, QPointF origin, double scale) {
    const AxisScale& x = frame.x();
    const AxisScale& y = frame.y();
    const double ylo = y.toAxis(y.lo), yhi = y.toAxis(y.hi);
    Mapping m;
    m.log = y.log;
    m.sx = plot.width() / (x.hi - x.lo) * scale;
    m.sy = plot.height() / (yhi - ylo) * scale;
    m.x0 = (plot.left() - origin.x()) * scale - x.lo * m.sx;
    m.y0 = (plot.bottom() - origin.y()) * scale + ylo * m.sy;
    return m;
}

void LineLayer::mapPoints(const QList<QPointF>& points, const Mapping& m, QPolygonF& out) {
    out.resize(points.size());
    QPointF* o = out.data();
    for (const QPointF& p : points)
        *o++ = QPointF(m.x0 + p.x() * m.sx, m.y0 - (m.log ? std::log10(p.y()) : p.y()) * m.sy);
}

LineLayer::DrawnLine LineLayer::prepare(const QList<QPointF>& points, const Mapping& mapping) {
    DrawnLine line;
    mapPoints(points, mapping, line.polyline);
    const std::span<const QPointF> pixels(line.polyline.constData(), std::size_t(line.polyline.size()));
    // Column spans are one pixel wide: a thicker (presentation) line is stroked.
    line.dense = ChartStyle::instance().lineScale() <= 1 && isDenseInPixels(pixels);
    if (line.dense) {
        line.spans = columnSpans(pixels);
        line.polyline.clear();
    }
    return line;
}

void LineLayer::setEmphasis(qint64 runId, const QString& groupKey) {
    const qint64 run = groupKey.isEmpty() ? runId : 0;  // a group's entry names its first run too
    if (run == emphasisRun_ && groupKey == emphasisGroup_) return;
    emphasisRun_ = run;
    emphasisGroup_ = groupKey;
    stale_ = true;
}

bool LineLayer::emphasisDrawn(const ChartTraces& traces) const {
    if (emphasisRun_ == 0 && emphasisGroup_.isEmpty()) return false;
    const Trace* run = emphasisRun_ != 0 ? traces.find(emphasisRun_) : nullptr;
    if (run && traces.isShown(*run)) return true;
    for (const auto& [key, group] : traces.groups())
        if (isEmphasised(key, group)) return true;
    return false;
}

bool LineLayer::isEmphasised(const QString& key, const SeedGroup& group) const {
    // A run drawn by its seed group (the run list's hover names a run) is
    // found in its group's band.
    return key == emphasisGroup_ || (emphasisRun_ != 0 && group.members.contains(emphasisRun_));
}

QColor LineLayer::toned(const QColor& colour, bool emphasisedLine) const {
    if (!fading_ || emphasisedLine) return colour;
    // Three quarters of the way to the white plot: still there, out of the way.
    const auto fade = [](int channel) { return channel + (255 - channel) * 3 / 4; };
    return QColor(fade(colour.red()), fade(colour.green()), fade(colour.blue()), colour.alpha());
}

void LineLayer::paint(QPainter* painter, const QRectF& plot, const AxisFrame& frame, const ChartTraces& traces) {
    if (painter->paintEngine()->type() != QPaintEngine::Raster) {
        paintVectors(painter, plot, frame, traces);
        return;
    }
    const QRect area = plot.adjusted(-1, -1, 1, 1).toAlignedRect();
    const double dpr = painter->device()->devicePixelRatioF();
    if (stale_ || area_ != area || image_.devicePixelRatioF() != dpr) render(area, dpr, plot, frame, traces);
    painter->drawImage(area.topLeft(), image_);
}

void LineLayer::render(QRect area, double dpr, const QRectF& plot, const AxisFrame& frame, const ChartTraces& traces) {
    stale_ = false;
    area_ = area;
    const QSize size = area.size() * dpr;
    if (image_.size() != size) image_ = QImage(size, QImage::Format_ARGB32_Premultiplied);
    image_.setDevicePixelRatio(1);  // drawn in device pixels; the ratio is set after drawing
    image_.fill(Qt::transparent);
    cpu::clear_upper_vector_state();  // after Qt's fill: the mapping below calls log10 per point
    const Mapping mapping = mappingFor(plot, frame, area.topLeft(), dpr);
    std::erase_if(drawn_, [&](const auto& entry) { return !traces.find(entry.first); });
    for (const auto& [id, trace] : traces.traces()) {
        // Geometry only for the runs whose series or mapping changed.
        if (!traces.isShown(trace)) continue;
        Drawn& drawn = drawn_[id];
        if (drawn.version == trace.seriesVersion && drawn.area == area && drawn.mapping == mapping) continue;
        drawn.version = trace.seriesVersion;
        drawn.area = area;
        drawn.mapping = mapping;
        drawn.raw = prepare(trace.raw->points(), mapping);
        drawn.smooth = prepare(trace.smooth->points(), mapping);
    }
    std::vector<DrawnLine> groupMeans;
    groupMeans.reserve(traces.groups().size());  // the span layers below point into it
    for (const auto& [key, group] : traces.groups()) groupMeans.push_back(prepare(group.mean, mapping));

    fading_ = emphasisDrawn(traces);
    QPainter painter(&image_);
    painter.setRenderHint(QPainter::Antialiasing);
    paintBands(painter, mapping, traces, true);
    // Dense lines are collected and filled together; a sparse line is drawn
    // through the painter after the dense ones before it (draw order = overdraw).
    std::vector<SpanLayer> pending;
    const auto draw = [&](const DrawnLine& line, const QColor& colour) {
        if (line.dense) {
            pending.push_back({&line.spans, qPremultiply(colour.rgba())});
            return;
        }
        fillSpanLayers(image_, pending);
        pending.clear();
        painter.setPen(QPen(colour, ChartLegend::kLineWidth * ChartStyle::instance().lineScale() * dpr));
        if (line.polyline.size() == 1) painter.drawPoint(line.polyline.front());
        else if (line.polyline.size() > 1) painter.drawPolyline(line.polyline);
    };
    // An emphasised line last, over the faded others.
    for (const bool emphasisPass : {false, true}) {
        if (emphasisPass && !fading_) break;
        for (const auto& [id, trace] : traces.traces())
            if (traces.isShown(trace) && trace.raw->isVisible() && (id == emphasisRun_) == emphasisPass)
                draw(drawn_[id].raw, toned(blendedOnWhite(trace.raw->pen().color()), emphasisPass));
        for (const auto& [id, trace] : traces.traces())
            if (traces.isShown(trace) && trace.smooth->isVisible() && (id == emphasisRun_) == emphasisPass)
                draw(drawn_[id].smooth, toned(trace.smooth->pen().color(), emphasisPass));
        std::size_t g = 0;
        for (const auto& [key, group] : traces.groups()) {
            if (isEmphasised(key, group) == emphasisPass) draw(groupMeans[g], toned(group.colour, emphasisPass));
            ++g;
        }
    }
    fillSpanLayers(image_, pending);
    painter.end();
    image_.setDevicePixelRatio(dpr);
}

void LineLayer::paintBands(QPainter& painter, const Mapping& mapping, const ChartTraces& traces, bool toned) const {
    // Each group's min-max band: the upper edge forwards, the lower back.
    QPolygonF upper, lower;
    painter.save();
    painter.setPen(Qt::NoPen);
    for (const auto& [key, group] : traces.groups()) {
        if (group.hi.isEmpty()) continue;
        mapPoints(group.hi, mapping, upper);
        mapPoints(group.lo, mapping, lower);
        std::reverse(lower.begin(), lower.end());
        QColor fill = group.colour;
        fill.setAlpha(toned && fading_ && !isEmphasised(key, group) ? kBandAlpha / 3 : kBandAlpha);
        painter.setBrush(fill);
        painter.drawPolygon(upper + lower);
    }
    painter.restore();
}

void LineLayer::paintVectors(QPainter* painter, const QRectF& plot, const AxisFrame& frame,
                             const ChartTraces& traces) const {
    painter->save();
    painter->setClipRect(plot.adjusted(-1, -1, 1, 1));
    const Mapping mapping = mappingFor(plot, frame, QPointF(0, 0), 1.0);
    paintBands(*painter, mapping, traces, false);
    QPolygonF polygon;
    const auto draw = [&](const QList<QPointF>& points, const QColor& colour) {
        if (points.isEmpty()) return;
        mapPoints(points, mapping, polygon);
        painter->setPen(QPen(colour, ChartLegend::kLineWidth * ChartStyle::instance().lineScale()));
        if (polygon.size() == 1) painter->drawPoint(polygon.front());
        else painter->drawPolyline(polygon);
    };
    for (const auto& [id, trace] : traces.traces())
        if (traces.isShown(trace) && trace.raw->isVisible())
            draw(trace.raw->points(), blendedOnWhite(trace.raw->pen().color()));
    for (const auto& [id, trace] : traces.traces())
        if (traces.isShown(trace) && trace.smooth->isVisible())
            draw(trace.smooth->points(), trace.smooth->pen().color());
    for (const auto& [key, group] : traces.groups()) draw(group.mean, group.colour);
    painter->restore();
}

}  // namespace mlk
