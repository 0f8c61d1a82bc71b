// Shared by the chart tests: data fed into a RunDataStore and a widget shown
// long enough for its coalesced redraw.
#pragma once

#include <QImage>
#include <QPixmap>
#include <QRect>
#include <QTest>
#include <QWidget>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <QChart>

#include "widgets/charts/metric_chart.h"
#include "widgets/data/run_data.h"

namespace mlk::test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline StepRecord stepOf(int64_t step, std::vector<std::pair<std::string, double>> metrics) {
    StepRecord r;
    r.step = step;
    r.metrics = std::move(metrics);
    return r;
}

// A run of `steps` steps of one metric, fed in one batch.
inline void feed(RunDataStore& data, qint64 run, const std::string& metric, const std::vector<double>& values) {
    std::vector<StepRecord> records;
    for (std::size_t i = 0; i < values.size(); ++i) records.push_back(stepOf(int64_t(i), {{metric, values[i]}}));
    data.addRun({run, QStringLiteral("run-%1").arg(run), QStringLiteral("finished"), QStringLiteral("tiny"), {}, {}});
    data.appendSteps(run, records);
}

// A 1 px antialiased line through `at` puts at least half its ink into one of
// the pixels from a row above to a row below (which ones depends on where the
// plot's edges fall): the darkest of them.
inline QColor inkNear(const QImage& image, QPoint at) {
    QColor darkest = Qt::white;
    for (int dy = -1; dy <= 1; ++dy) {
        const QColor c = image.pixelColor(at + QPoint(0, dy));
        if (c.lightness() < darkest.lightness()) darkest = c;
    }
    return darkest;
}

inline int colourDistance(const QColor& a, const QColor& b) {
    return std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue());
}

// The automatic x range holds the data and ends within a tenth of its span.
inline bool covers(XRange shown, double first, double last) {
    const double slack = 0.1 * (last - first) + 1;
    return shown.lo <= first && shown.hi >= last && shown.lo >= first - slack && shown.hi <= last + slack;
}

inline void showAndSettle(QWidget& w, QSize size) {
    w.resize(size);
    w.show();
    QTest::qWait(MetricChart::kRedrawDelayMs * 3);
}

// Pixels of `colour` (each channel within `tolerance`) in `area` of image.
inline int pixelsOf(const QImage& image, const QColor& colour, QRect area, int tolerance = 8) {
    int count = 0;
    area = area.intersected(image.rect());
    for (int y = area.top(); y <= area.bottom(); ++y)
        for (int x = area.left(); x <= area.right(); ++x) {
            const QColor c = image.pixelColor(x, y);
            if (std::abs(c.red() - colour.red()) <= tolerance && std::abs(c.green() - colour.green()) <= tolerance &&
                std::abs(c.blue() - colour.blue()) <= tolerance)
                ++count;
        }
    return count;
}

// The chart as the user sees it, and its plot area in the image's pixels.
inline QImage viewImage(MetricChart& chart) {
    return chart.viewport()->grab().toImage().convertToFormat(QImage::Format_RGB32);
}
inline QRect plotInImage(const MetricChart& chart) {
    return chart.mapFromScene(chart.chart()->plotArea()).boundingRect();
}

}  // namespace mlk::test
