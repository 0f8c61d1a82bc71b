// The numbers behind every chart, without a display: EMA debiasing, min/max
// thinning, pixel-column spans, seed aggregation (series_math.h) and the axis
// rules (axis_rules.h): ticks and labels, robust range, log floor.
#include <QFile>
#include <QFontMetrics>
#include <QImage>
#include <QChart>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMenu>
#include <QPainter>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QPixmap>
#include <QTest>
#include <QValueAxis>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <memory>
#include <random>
#include <thread>

#include <sqlite3.h>

#include "core/store/store.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/charts/metric_chart.h"
#include "widgets/data/run_data.h"
#include "widgets/data/series_math.h"
#include "tests/widgets/charts/chart_test_util.h"
#include "widgets/charts/axis_frame.h"
#include "widgets/charts/axis_rules.h"

using namespace mlk;
using namespace mlk::test;

class ChartRulesTest : public QObject {
    Q_OBJECT

private slots:
    void scaleAndSignComeFromTheCatalogue() {
        QVERIFY(defaultLogScale("k3_kl"));
        QVERIFY(defaultLogScale("F@2"));
        QVERIFY(!defaultLogScale("reward_mean"));
        QVERIFY(!defaultLogScale("not_a_metric"));
        QVERIFY(metricNonNegative("grad_norm"));
        QVERIFY(!metricNonNegative("not_a_metric"));
        // The floor sits a decade under the smallest positive value, on a power of ten.
        QCOMPARE(logFloorFor(3.2e-4), 1e-5);
        QCOMPARE(logFloorFor(std::numeric_limits<double>::infinity()), kDefaultLogFloor);
        // A log range widened to whole decades, at least one.
        QCOMPARE(wholeDecades(3e-3, 0.4).lo, 1e-3);
        QCOMPARE(wholeDecades(3e-3, 0.4).hi, 1.0);
        QCOMPARE(wholeDecades(1e-2, 1e-2).hi, 1e-1);
        QCOMPARE(wholeDecades(1e-3, 1e-1).lo, 1e-3);  // already whole: unchanged
        QCOMPARE(wholeDecades(1e-3, 1e-1).hi, 1e-1);
        // Fewer than three powers of ten: 2x and 5x are labelled too.
        const AxisScale narrow = logAxis(1e-3, 5e-2);
        QCOMPARE(narrow.majorLabels(), (QStringList{"0.001", "0.002", "0.005", "0.01", "0.02", "0.05"}));
    }

    void emaIsDebiased() {
        // weight 0.5: biased EMA 0.5, 1.25, 2.125; debias 0.5, 0.75, 0.875.
        const std::vector<double> s = debiasedEma(std::vector<double>{1, 2, 3}, 0.5);
        QCOMPARE(s.size(), std::size_t(3));
        QCOMPARE(s[0], 1.0);  // not pulled towards 0 (a plain EMA gives 0.5)
        QVERIFY(std::abs(s[1] - 5.0 / 3.0) < 1e-12);
        QVERIFY(std::abs(s[2] - 17.0 / 7.0) < 1e-12);
    }

    void emaSkipsNonFiniteButKeepsTheirPlace() {
        const std::vector<double> s = debiasedEma(std::vector<double>{1, kNaN, 3, kInf}, 0.5);
        QCOMPARE(s.size(), std::size_t(4));
        QCOMPARE(s[0], 1.0);
        QVERIFY(std::isnan(s[1]));
        QVERIFY(std::abs(s[2] - 1.75 / 0.75) < 1e-12);  // the NaN did not count as a step
        QVERIFY(std::isnan(s[3]));
    }

    void emaIncrementalEqualsBatchAndKeepsConstantsExact() {
        std::vector<double> ys;
        std::mt19937 rng(7);
        std::normal_distribution<double> noise;
        for (int i = 0; i < 500; ++i) ys.push_back(i % 37 == 0 ? kNaN : noise(rng));
        const std::vector<double> batch = debiasedEma(ys, 0.9);
        EmaState state;
        std::vector<double> incremental;
        for (std::size_t from = 0; from < ys.size(); from += 33)
            extendDebiasedEma(std::span(ys).subspan(from, std::min<std::size_t>(33, ys.size() - from)), 0.9, state,
                              incremental);
        QCOMPARE(incremental.size(), batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i)
            QVERIFY(incremental[i] == batch[i] || (std::isnan(incremental[i]) && std::isnan(batch[i])));

        const std::vector<double> constant = debiasedEma(std::vector<double>(50, 0.1), 0.95);
        for (double v : constant) QCOMPARE(v, 0.1);
        QCOMPARE(debiasedEma(std::vector<double>{3, 4}, 0.0), (std::vector<double>{3, 4}));
    }

    void thinningKeepsExtremesWithAtMostFourPointsPerBucket() {
        std::mt19937 rng(1);
        std::uniform_real_distribution<double> u(-1, 1);
        std::vector<double> xs, ys;
        for (int i = 0; i < 10000; ++i) {
            xs.push_back(i);
            ys.push_back(u(rng));
        }
        ys[1234] = 50;  // spikes must survive thinning
        ys[8765] = -50;
        const int width = 100;
        const XRange all{0, 9999};
        const QList<QPointF> thin = thinMinMax(xs, ys, all, width);
        QVERIFY(thin.size() <= 4 * width);
        QVERIFY(thin.size() >= 2 * width);
        QCOMPARE(thin.front().x(), 0.0);
        QCOMPARE(thin.back().x(), 9999.0);
        QVERIFY(std::any_of(thin.begin(), thin.end(), [](QPointF p) { return p.y() == 50; }));
        QVERIFY(std::any_of(thin.begin(), thin.end(), [](QPointF p) { return p.y() == -50; }));

        std::map<int, std::vector<QPointF>> buckets;
        for (QPointF p : thin) buckets[std::min(width - 1, int(p.x() / all.span() * width))].push_back(p);
        for (const auto& [b, points] : buckets) {
            QVERIFY2(points.size() <= 4,
                     qPrintable(QStringLiteral("bucket %1 has %2 points").arg(b).arg(points.size())));
            // Each bucket's true min and max are among its kept points.
            double lo = kInf, hi = -kInf;
            for (std::size_t i = 0; i < xs.size(); ++i)
                if (std::min(width - 1, int(xs[i] / all.span() * width)) == b)
                    lo = std::min(lo, ys[i]), hi = std::max(hi, ys[i]);
            QVERIFY(std::any_of(points.begin(), points.end(), [&](QPointF p) { return p.y() == lo; }));
            QVERIFY(std::any_of(points.begin(), points.end(), [&](QPointF p) { return p.y() == hi; }));
        }
        for (qsizetype i = 1; i < thin.size(); ++i) QVERIFY(thin[i].x() > thin[i - 1].x());

        // Zoomed: re-thinned inside the range, plus one neighbour each side.
        const QList<QPointF> zoomed = thinMinMax(xs, ys, XRange{1000, 1100}, width);
        QCOMPARE(zoomed.size(), qsizetype(101 + 2));  // 101 points fit 100 pixels
        QCOMPARE(zoomed.front().x(), 999.0);
        QCOMPARE(zoomed.back().x(), 1101.0);
    }

    void thinningEqualsAPointByPointReference() {
        // The plain algorithm: bucket of every point, first/min/max/last per
        // bucket (first of equal extremes), non-finite values skipped.
        std::mt19937 rng(3);
        std::uniform_real_distribution<double> u(-1, 1);
        std::vector<double> xs, ys;
        for (int i = 0; i < 5000; ++i) {
            xs.push_back(i * 0.37);
            const double r = u(rng);
            ys.push_back(r > 0.97 ? kNaN : r < -0.98 ? kInf : std::round(r * 20));  // ties on purpose
        }
        for (const XRange range : {XRange{0, 5000 * 0.37}, XRange{100, 400}, XRange{-5, 3}}) {
            for (const int width : {1, 37, 640}) {
                QList<QPointF> expected;
                const auto [first, last] = indicesInRange(xs, range);
                const auto finiteAt = [&](std::ptrdiff_t i, int step) -> std::optional<std::size_t> {
                    for (; i >= 0 && i < std::ptrdiff_t(xs.size()); i += step)
                        if (std::isfinite(ys[std::size_t(i)])) return std::size_t(i);
                    return std::nullopt;
                };
                if (first > 0)
                    if (auto b = finiteAt(std::ptrdiff_t(first) - 1, -1)) expected.append(QPointF(xs[*b], ys[*b]));
                std::map<int, std::vector<std::size_t>> buckets;
                for (std::size_t i = first; i < last; ++i)
                    if (std::isfinite(ys[i]))
                        buckets[std::min(width - 1, int((xs[i] - range.lo) * (width / range.span())))].push_back(i);
                for (const auto& [b, members] : buckets) {
                    std::size_t lo = members.front(), hi = members.front();
                    for (std::size_t i : members) {
                        if (ys[i] < ys[lo]) lo = i;
                        if (ys[i] > ys[hi]) hi = i;
                    }
                    std::vector<std::size_t> keep{members.front(), lo, hi, members.back()};
                    std::sort(keep.begin(), keep.end());
                    keep.erase(std::unique(keep.begin(), keep.end()), keep.end());
                    for (std::size_t i : keep) expected.append(QPointF(xs[i], ys[i]));
                }
                if (last < xs.size())
                    if (auto a = finiteAt(std::ptrdiff_t(last), +1)) expected.append(QPointF(xs[*a], ys[*a]));
                QCOMPARE(thinMinMax(xs, ys, range, width), expected);
            }
        }
    }

    void columnSpansSetTheLinesPixels() {
        // Reference: for every column, the y extent of every segment's part
        // inside [c, c + 1), rounded as the spans are.
        std::mt19937 rng(9);
        std::uniform_real_distribution<double> dx(0.05, 2.5), y(0, 200);
        std::vector<QPointF> line{{10.3, y(rng)}};
        for (int i = 0; i < 400; ++i) line.emplace_back(line.back().x() + dx(rng), y(rng));
        const std::vector<QLine> spans = columnSpans(line);
        const int firstColumn = int(std::floor(line.front().x())), lastColumn = int(std::floor(line.back().x()));
        QCOMPARE(int(spans.size()), lastColumn - firstColumn + 1);  // one span per column, none skipped
        for (int c = firstColumn; c <= lastColumn; ++c) {
            double lo = kInf, hi = -kInf;
            for (std::size_t i = 1; i < line.size(); ++i) {
                const QPointF a = line[i - 1], b = line[i];
                const double x0 = std::max(a.x(), double(c)), x1 = std::min(b.x(), double(c + 1));
                if (x0 > x1 || (x0 == x1 && x1 == c + 1)) continue;
                for (const double x : {x0, x1}) {
                    const double v = a.y() + (b.y() - a.y()) * (x - a.x()) / (b.x() - a.x());
                    lo = std::min(lo, v);
                    hi = std::max(hi, v);
                }
            }
            const QLine& span = spans[std::size_t(c - firstColumn)];
            QCOMPARE(span.x1(), c);
            QCOMPARE(span.x2(), c);
            QVERIFY2(std::abs(span.y1() - lo) <= 0.5 + 1e-9 && std::abs(span.y2() - hi) <= 0.5 + 1e-9,
                     qPrintable(QStringLiteral("column %1: span %2..%3, line %4..%5")
                                    .arg(c)
                                    .arg(span.y1())
                                    .arg(span.y2())
                                    .arg(lo)
                                    .arg(hi)));
        }
        // A far outlier is clamped (to a million pixels off), not wrapped around.
        const std::vector<QPointF> outlier{{0.5, 10}, {1.5, -1e300}, {2.5, 10}};
        for (const QLine& span : columnSpans(outlier))
            QVERIFY(span.y1() <= span.y2() && span.y1() >= -1000000 && span.y2() <= 10);
    }

    void densityDecidesHowALineIsDrawn() {
        std::vector<QPointF> sparse, dense;
        for (int i = 0; i < 10; ++i) sparse.emplace_back(i * 30.0, i);
        for (int i = 0; i < 200; ++i) dense.emplace_back(i * 1.5, i % 7);
        QVERIFY(!isDenseInPixels(sparse));
        QVERIFY(isDenseInPixels(dense));
    }

    void axisTicks() {
        const auto values = [](const std::vector<AxisTick>& ticks, bool major) {
            std::vector<double> v;
            for (const AxisTick& t : ticks)
                if (t.major == major) v.push_back(t.value);
            return v;
        };
        QCOMPARE(values(linearTicks(0, 10, 2), true), (std::vector<double>{0, 2, 4, 6, 8, 10}));
        const std::vector<double> small = values(linearTicks(-0.3, 0.3, 0.1), true);
        QCOMPARE(small.size(), std::size_t(7));
        QVERIFY(std::any_of(small.begin(), small.end(), [](double v) { return v == 0 && !std::signbit(v); }));
        QVERIFY(linearTicks(0, 1, 0).empty());

        const auto decades = logTicks(1e-6, 1e-3);
        QCOMPARE(values(decades, true).size(), std::size_t(4));
        QCOMPARE(values(decades, false).size(), std::size_t(3 * 8));  // 2..9 x 1e-6, 1e-5, 1e-4
        const auto wide = logTicks(1e-9, 1);
        QCOMPARE(values(wide, true).size(), std::size_t(10));
        QVERIFY(values(wide, false).empty());  // minor lines only within a few decades
        QVERIFY(logTicks(0, 1).empty());
        // Labels as precise as the tick spacing, so neighbours never read the same.
        QCOMPARE(formatTick(0.25, 0.05), QStringLiteral("0.25"));
        QCOMPARE(formatTick(0.3, 0.1), QStringLiteral("0.3"));
        QCOMPARE(formatTick(123460, 10), QStringLiteral("123460"));
        QCOMPARE(formatTick(1.5e6, 1e5), QStringLiteral("1.5e+06"));
        QCOMPARE(formatTick(0.00012, 0.00001), QStringLiteral("0.00012"));
        QCOMPARE(formatTick(3e-5, 5e-6), QStringLiteral("3e-05"));
        QCOMPARE(formatTick(-2, 0.5), QStringLiteral("-2.0"));
        QCOMPARE(formatTick(0, 0.5), QStringLiteral("0"));
        // Within about a decade, 2x and 5x are labelled too.
        QCOMPARE(values(logTicks(5e-5, 3e-4), true), (std::vector<double>{5e-5, 1e-4, 2e-4}));
    }

    // Lesson 1's K3 KL axis (1e-18 to 1e-3) in a 120-pixel chart on a laptop
    // printed 16 labels on top of each other: where they do not fit, every
    // stride-th stays, on round values, and never none.
    void crowdedLabelsGiveWayOnRoundValues() {
        const auto shownValues = [](const AxisScale& axis, double pixels, double extent) {
            std::vector<double> positions, majors;
            for (const AxisTick& t : axis.ticks)
                if (t.major) majors.push_back(t.value);
            for (size_t i = 0; i < majors.size(); ++i) positions.push_back(pixels * (1 - axis.fraction(majors[i])));
            const std::vector<bool> keep = labelledMajorTicks(axis, positions, extent);
            std::vector<double> out;
            for (size_t i = 0; i < majors.size(); ++i)
                if (keep[i]) out.push_back(majors[i]);
            return out;
        };
        const AxisScale k3 = logAxis(1e-18, 1e-3);  // 16 powers of ten, 8 px apart in 120 px
        const std::vector<double> kept = shownValues(k3, 120, 14);
        QCOMPARE(kept.size(), std::size_t(6));
        for (double v : kept) QCOMPARE(std::lround(std::log10(v)) % 3, 0L);  // 1e-18, 1e-15, ... 1e-3
        QCOMPARE(shownValues(k3, 600, 14).size(), std::size_t(16));          // room for all: all
        const AxisScale steps = linearAxis(0, 20, 10);                       // 0, 2, ... 20
        QCOMPARE(shownValues(steps, 200, 30), (std::vector<double>{0, 4, 8, 12, 16, 20}));
        QCOMPARE(shownValues(steps, 2, 30).size(), std::size_t(1));  // never none
        // A short log range labels 2x and 5x; crowded, the powers of ten stay.
        const AxisScale shortRange = logAxis(5e-5, 3e-4);
        QCOMPARE(shownValues(shortRange, 20, 14), (std::vector<double>{1e-4}));
    }

    // The drill-down's probability plot at a laptop's height is shorter than
    // its y title, which must not run past the chart's top edge, cut mid-word:
    // titles longer than their side of the plot end in an ellipsis inside it.
    void axisTitlesStayBesideThePlot() {
        AxisFrame frame;
        const QString title = QStringLiteral("training probability of the sampled token  exp(lp_train)");
        frame.setX(linearAxis(0, 1, 5), title);
        frame.setY(linearAxis(0, 1, 5), title);
        QChart chart;
        frame.fitMargins(&chart);
        const QFontMetrics metrics(frame.font());
        QVERIFY(metrics.horizontalAdvance(title) > 2 * 150);
        QImage image(700, 500, QImage::Format_RGB32);
        image.fill(Qt::white);
        const QRectF plot(250, 200, 150, 100);
        {
            QPainter painter(&image);
            frame.paintAxes(&painter, plot);
        }
        const auto inked = [&](int x, int y) { return image.pixel(x, y) != qRgb(255, 255, 255); };
        int titleInk = 0;  // the y title's column, within the plot's height
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < int(plot.left()) - 30; ++x) {
                if (!inked(x, y)) continue;
                const bool besidePlot = y >= plot.top() - metrics.height() && y <= plot.bottom() + metrics.height();
                const bool belowPlot = y > plot.bottom() + 5;  // the x title's row
                QVERIFY2(besidePlot && !belowPlot, qPrintable(QString("ink at %1, %2").arg(x).arg(y)));
                ++titleInk;
            }
        QVERIFY(titleInk > 0);  // cut, not dropped
        for (int y = int(plot.bottom()) + 5; y < image.height(); ++y)
            for (int x = int(plot.right()) + 30; x < image.width(); ++x)
                QVERIFY2(!inked(x, y), qPrintable(QString("x title ink at %1, %2").arg(x).arg(y)));
    }

    void seedAggregateIsPerStepMeanMinMax() {
        // Three seeds; the third is shorter and has a NaN: each step averages
        // the runs that have a finite value there.
        const std::vector<double> steps{0, 1, 2, 3}, shortSteps{0, 1, 2};
        const std::vector<double> a{1, 2, 3, 4}, b{3, 4, 5, 6}, c{2, kNaN, 1};
        const std::vector<double> times{10, 20, 30, 40};
        const std::vector<SeedRun> runs{{steps, steps, a}, {steps, times, b}, {shortSteps, shortSteps, c}};
        const SeedAggregate g = aggregateSeeds(runs);
        QCOMPARE(g.steps, (std::vector<double>{0, 1, 2, 3}));
        QCOMPARE(g.runs, (std::vector<int>{3, 2, 3, 2}));
        QCOMPARE(g.mean, (std::vector<double>{2, 3, 3, 5}));
        QCOMPARE(g.lo, (std::vector<double>{1, 2, 1, 4}));
        QCOMPARE(g.hi, (std::vector<double>{3, 4, 5, 6}));
        QCOMPARE(g.xs, (std::vector<double>{10.0 / 3, 10.5, 34.0 / 3, 21.5}));  // mean x of the runs counted
        // A step no run has a finite value for is left out.
        const std::vector<double> nan1{kNaN};
        const std::vector<double> one{0};
        const std::vector<SeedRun> empty{{one, one, nan1}};
        QCOMPARE(aggregateSeeds(empty).size(), std::size_t(0));
    }

    void seedGroupIgnoresTheSeedOnly() {
        const QString a = seedGroupOf(R"({"seed": 1, "optim": {"lr": 0.001}})");
        QVERIFY(!a.isEmpty());
        QCOMPARE(seedGroupOf(R"({"seed": 7, "optim": {"lr": 0.001}})"), a);
        QVERIFY(seedGroupOf(R"({"seed": 1, "optim": {"lr": 0.002}})") != a);
        // Canonical: an omitted key equals its default spelled out.
        const QString defaults = seedGroupOf("{}");
        QCOMPARE(seedGroupOf(R"({"seed": 3})"), defaults);
        QVERIFY(seedGroupOf("not json").isEmpty());
    }

    void thinningSkipsNonFinite() {
        const std::vector<double> xs{0, 1, 2, 3}, ys{1, kNaN, kInf, 2};
        const QList<QPointF> thin = thinMinMax(xs, ys, XRange{0, 3}, 100);
        QCOMPARE(thin.size(), qsizetype(2));
    }

    void robustRangeIgnoresAnOutlier() {
        std::vector<double> ys;
        for (int i = 0; i < 200; ++i) ys.push_back(1 + i / 200.0);
        ys[100] = 1e6;
        const auto range = robustYRange(ys);
        QVERIFY(range);
        QVERIFY2(range->hi < 10, qPrintable(QString::number(range->hi)));
        QVERIFY(range->lo <= 1.0);  // the true minimum is a tail, not an outlier
        QVERIFY(range->hi >= 1.99);

        // A plain ramp is fully visible: its ends are not outliers.
        std::vector<double> ramp;
        for (int i = 0; i <= 100; ++i) ramp.push_back(i);
        const auto r = robustYRange(ramp);
        QVERIFY(r->lo <= 0 && r->hi >= 100);
        QVERIFY(!robustYRange(std::vector<double>{kNaN, kInf}));
    }

    void logPreparationClampsAndFlags() {
        QCOMPARE(logFloorFor(3e-5), 1e-6);
        QCOMPARE(logFloorFor(kInf), kDefaultLogFloor);
        const std::vector<double> ys{0, 3e-5, -1, kNaN, 0.2, kInf, -kInf};
        QCOMPARE(smallestPositive(ys), 3e-5);
        QCOMPARE(countNonPositive(ys), std::size_t(3));  // 0, -1, -Inf
        QList<QPointF> points{{0, 0}, {1, 3e-5}, {2, -1}, {4, 0.2}};
        QCOMPARE(clampForLog(points, 1e-6), std::size_t(2));
        QCOMPARE(points.size(), qsizetype(4));  // moved, never dropped
        QCOMPARE(points[0].y(), 1e-6);
        QCOMPARE(points[2].y(), 1e-6);
        const auto marks = nonFinitePoints(std::vector<double>{0, 1, 2, 3, 4, 5, 6}, ys);
        QCOMPARE(marks.size(), std::size_t(3));
        QCOMPARE(marks[0].kind, NonFiniteKind::nan);
        QCOMPARE(marks[1].kind, NonFiniteKind::positiveInf);
        QCOMPARE(marks[2].kind, NonFiniteKind::negativeInf);
    }
};

QTEST_MAIN(ChartRulesTest)
#include "chart_rules_test.moc"
