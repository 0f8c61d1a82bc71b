// Static charts for reports: a QChart built from plain data, rendered
// offscreen into PNG bytes (QImage + QPainter at a device pixel ratio, so the
// image stays sharp when a PDF is zoomed). Needs a QApplication (Qt Charts
// is built on QGraphicsView); no widget is shown.
//
// Nothing is dropped silently:
//  - NaN / +-Inf values are drawn as triangle markers at the top (NaN, +Inf)
//    or bottom (-Inf) edge of the plot, break the line there, get a legend
//    entry "NaN/Inf (at edge)" and a note naming the run, count and steps;
//  - on a log y axis, values <= 0 are drawn at a floor (one decade below the
//    smallest positive value, or 1e-12 when there is none) as hollow circles
//    joined by the line, with a legend entry "<= 0 (at floor)" and a note.
// Qt's QLogValueAxis would otherwise hide the whole series, and
// QXYSeries::append would drop non-finite points with a warning only.
#pragma once

#include <QByteArray>
#include <QColor>
#include <QSize>
#include <QString>
#include <QStringList>

#include <limits>
#include <vector>

namespace mlk::report {

struct XY {
    double x = 0;
    double y = 0;
};

// One run's data on a chart, as the workbench draws it: the raw line (faint
// when a smoothed line goes over it), a smoothed line, and for a group of
// seeds a min-max band.
struct ChartRun {
    QString name;  // legend text
    QColor color;
    std::vector<XY> points;  // x ascending for line charts; y may be NaN, +-Inf, <= 0
    // (initialised: a brace list that names only the first three leaves these
    // empty without -Wmissing-field-initializers)
    std::vector<XY> smooth = {};       // finite, x ascending; empty = none
    std::vector<XY> lo = {}, hi = {};  // a band from lo to hi at the same x; empty = none
};

enum class Scale { linear, log };

struct ChartSpec {
    QString title;
    QString xLabel = QStringLiteral("step");
    QString yLabel;
    Scale xScale = Scale::linear;  // log x: x must be > 0
    Scale yScale = Scale::linear;
    bool lines = true;         // false: scatter only
    bool diagonal = false;     // draw y = x over the x range (probability scatter)
    bool integerX = true;      // x labels as integers (steps)
    bool nonNegative = false;  // the values cannot be < 0: a linear axis starts at 0 (axis_rules.h)
    // Fixed ranges (both ends) instead of the data's; NaN = from the data.
    double xMin = std::numeric_limits<double>::quiet_NaN(), xMax = std::numeric_limits<double>::quiet_NaN();
    double yMin = std::numeric_limits<double>::quiet_NaN(), yMax = std::numeric_limits<double>::quiet_NaN();
    QSize size{640, 260};    // logical pixels (the <img> width/height)
    qreal pixelRatio = 2.0;  // image pixels per logical pixel
};

struct RenderedChart {
    QByteArray png;     // PNG bytes of the whole chart
    QSize size;         // logical size
    QStringList notes;  // one sentence per special case (NaN/Inf, values at the floor, no data)
    double floor = std::numeric_limits<double>::quiet_NaN();  // log y: where values <= 0 were drawn
    int finitePoints = 0;                                     // points drawn at their value (or at the floor)
    int floorPoints = 0;                                      // of those, values <= 0 drawn at the floor
    int edgePoints = 0;                                       // NaN/Inf drawn as edge markers
    int markedPoints = 0;  // line charts: points drawn as a dot, as on screen only a point with no neighbour
};

// Line or scatter chart of several runs with a legend.
RenderedChart render_xy_chart(const ChartSpec& spec, const std::vector<ChartRun>& runs);

// Grouped bar chart: one bar set per run over the categories, value labels
// on the bars (labelPrecision significant digits), y from 0.
struct BarRun {
    QString name;
    QColor color;
    std::vector<double> values;  // one per category; NaN shown as 0 with a note
};
RenderedChart render_bar_chart(const ChartSpec& spec, const QStringList& categories, const std::vector<BarRun>& runs,
                               int labelPrecision = 3);

// "data:image/png;base64,..."
QString png_data_url(const QByteArray& png);

// Compact number text for notes and labels: "%.4g", "NaN", "inf", "-inf".
QString short_number(double v);

}  // namespace mlk::report
