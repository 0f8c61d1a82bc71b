// Live charts: the series maths (EMA debiasing, min/max thinning, robust
// range, log preparation), and MetricChart / ChartGrid on real data: log axis
// with zeros and NaN, live updates from a store another connection writes,
// coalesced redraws, the shared x range, hover read-out, PNG/SVG export.
// MLK_SCREENSHOT_DIR=<dir> also saves <dir>/charts_grid.png (1200 x 800).
#include <QFile>
#include <QFontMetrics>
#include <QImage>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMenu>
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

using namespace mlk;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

StepRecord stepOf(int64_t step, std::vector<std::pair<std::string, double>> metrics) {
    StepRecord r;
    r.step = step;
    r.metrics = std::move(metrics);
    return r;
}

// A run of `steps` steps of one metric, fed in one batch.
void feed(RunDataStore& data, qint64 run, const std::string& metric, const std::vector<double>& values) {
    std::vector<StepRecord> records;
    for (std::size_t i = 0; i < values.size(); ++i) records.push_back(stepOf(int64_t(i), {{metric, values[i]}}));
    data.addRun({run, QStringLiteral("run-%1").arg(run), QStringLiteral("finished"), QStringLiteral("tiny"), {}});
    data.appendSteps(run, records);
}

// The automatic x range holds the data and ends within a tenth of its span.
bool covers(XRange shown, double first, double last) {
    const double slack = 0.1 * (last - first) + 1;
    return shown.lo <= first && shown.hi >= last && shown.lo >= first - slack && shown.hi <= last + slack;
}

void showAndSettle(QWidget& w, QSize size) {
    w.resize(size);
    w.show();
    QTest::qWait(MetricChart::kRedrawDelayMs * 3);
}

}  // namespace

class ChartsTest : public QObject {
    Q_OBJECT

private slots:
    // --- series_math ---------------------------------------------------------

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

    // --- MetricChart ---------------------------------------------------------

    void logAxisKeepsZerosAndMarksNaN() {
        RunDataStore data;
        const std::vector<double> k3{0, 1e-3, kNaN, 0, 2e-3, kNaN, 5e-4, 0, 1e-3, kInf, 3e-3, 4e-4};
        feed(data, 1, "k3_kl", k3);
        MetricChart chart(&data, QStringLiteral("k3_kl"));
        showAndSettle(chart, QSize(700, 450));
        chart.setLogScale(true);

        QVERIFY(qobject_cast<QLogValueAxis*>(chart.yAxis()));
        QLineSeries* raw = chart.rawSeries(1);
        QVERIFY(raw);
        QVERIFY(raw->isVisible());
        QCOMPARE(raw->count(), 9);  // every finite value, the three zeros included
        const auto* axis = qobject_cast<QLogValueAxis*>(chart.yAxis());
        for (const QPointF& p : raw->points()) {
            QVERIFY2(p.y() > 0, "a point <= 0 makes QLogValueAxis hide the whole series");
            QVERIFY(p.y() >= axis->min() && p.y() <= axis->max());
        }
        QVERIFY(chart.smoothedSeries(1)->count() > 0);
        QCOMPARE(chart.nanMarkers(1)->count(), 2);  // one marker per NaN
        QCOMPARE(chart.infMarkers(1)->count(), 1);
        QVERIFY(chart.nanMarkers(1)->isVisible());
        for (const QPointF& p : chart.nanMarkers(1)->points()) QVERIFY(p.y() > axis->min() && p.y() < axis->max());
        QCOMPARE(chart.valuesAtFloor(), 3);
        QVERIFY2(chart.noteText().contains(QStringLiteral("3 values <= 0 shown at floor")),
                 qPrintable(chart.noteText()));
        QVERIFY(chart.noteText().contains(QStringLiteral("NaN")));

        // Back to linear: the zeros are zeros again.
        chart.setLogScale(false);
        QVERIFY(qobject_cast<QValueAxis*>(chart.yAxis()));
        QCOMPARE(chart.rawSeries(1)->count(), 9);
        const QList<QPointF> linear = raw->points();
        QCOMPARE(std::count_if(linear.begin(), linear.end(), [](QPointF p) { return p.y() == 0; }), 3);
    }

    void robustRangeInChartKeepsOutlierPoint() {
        RunDataStore data;
        std::vector<double> values;
        for (int i = 0; i < 300; ++i) values.push_back(1 + 0.001 * i);
        values[150] = 1e6;
        feed(data, 1, "grad_norm", values);
        MetricChart chart(&data, QStringLiteral("grad_norm"));
        showAndSettle(chart, QSize(800, 400));
        chart.redrawNow();
        QVERIFY2(chart.shownYRange().hi < 10, qPrintable(QString::number(chart.shownYRange().hi)));
        const QList<QPointF> points = chart.rawSeries(1)->points();
        QVERIFY(std::any_of(points.begin(), points.end(), [](QPointF p) { return p.y() == 1e6; }));
    }

    void chartFollowsAStoreBeingWritten() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string path = dir.filePath(QStringLiteral("runs.db")).toStdString();
        int64_t run = 0;
        {
            Store setup = Store::open(path);
            run = setup.create_run("live", "tiny", "{}", 1);
        }
        RunDataStore data;
        QVERIFY(data.open(QString::fromStdString(path)));
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(800, 450));
        QSignalSpy changed(&data, &RunDataStore::dataChanged);
        data.startPolling(15);

        constexpr int kSteps = 60;
        std::thread writer([&] {
            Store store = Store::open(path);  // a second connection, as the CLI would have
            for (int s = 0; s < kSteps; ++s) {
                store.append_step(run, stepOf(s, {{"reward_mean", 0.01 * s}, {"k3_kl", 0.0}}));
                std::this_thread::sleep_for(std::chrono::milliseconds(3));
            }
            store.set_status(run, RunStatus::finished);
        });
        QTRY_VERIFY_WITH_TIMEOUT(chart.rawSeries(run) && chart.rawSeries(run)->count() == kSteps, 15000);
        writer.join();
        QVERIFY(changed.count() >= 1);
        QCOMPARE(chart.rawSeries(run)->points().back(), QPointF(kSteps - 1, 0.01 * (kSteps - 1)));
        QVERIFY(covers(chart.shownXRange(), 0, kSteps - 1));
        data.stopPolling();
    }

    void manyDataSignalsCoalesceIntoFewRedraws() {
        RunDataStore data;
        data.addRun({1, QStringLiteral("a"), QStringLiteral("running"), QString(), {}});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(700, 400));
        QSignalSpy changed(&data, &RunDataStore::dataChanged);
        const int before = chart.redrawCount();
        for (int s = 0; s < 100; ++s) data.appendStep(1, stepOf(s, {{"reward_mean", std::sin(s * 0.1)}}));
        QCOMPARE(changed.count(), 100);
        QTRY_COMPARE(chart.rawSeries(1) ? chart.rawSeries(1)->count() : 0, 100);
        QTest::qWait(MetricChart::kRedrawDelayMs * 3);
        const int redraws = chart.redrawCount() - before;
        QVERIFY2(redraws >= 1 && redraws <= 3, qPrintable(QStringLiteral("%1 redraws").arg(redraws)));
    }

    void hoverNamesRunStepRawAndSmoothed() {
        RunDataStore data;
        feed(data, 3, "reward_mean", {0.1, 0.5, 0.2, 0.9, 0.4, 0.6});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(700, 400));
        chart.redrawNow();
        const QPointF scene = chart.toScene(3, 0.9);
        QVERIFY(chart.chart()->plotArea().contains(scene));
        const QString text = chart.hoverTextAt(chart.mapFromScene(scene));
        QVERIFY2(text.contains(QStringLiteral("run-3")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("step 3")));
        QVERIFY(text.contains(QStringLiteral("raw: 0.9")));
        const double smoothed = debiasedEma(std::vector<double>{0.1, 0.5, 0.2, 0.9}, chart.smoothing())[3];
        QVERIFY(text.contains(QStringLiteral("smoothed: ") + QString::number(smoothed, 'g', 6)));
        QVERIFY(chart.hoverTextAt(QPoint(1, 1)).isEmpty());  // outside the plot
    }

    void saveWritesPngAndSvg() {
        RunDataStore data;
        feed(data, 1, "reward_mean", {0.1, 0.3, 0.2, 0.5});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        chart.resize(500, 320);  // never shown: export must still draw current data
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("c.png")), svg = dir.filePath(QStringLiteral("c.svg"));
        QVERIFY(chart.savePng(png));
        QVERIFY(chart.saveSvg(svg));
        const QImage image(png);
        QCOMPARE(image.size(), QSize(500, 320));
        QFile file(svg);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray text = file.readAll();
        QVERIFY(text.contains("<svg"));
        QVERIFY(text.contains("reward_mean"));
        QVERIFY2(text.contains("<polyline"), "lines are vectors in SVG, not an embedded raster");
        const QByteArray shots = qgetenv("MLK_SCREENSHOT_DIR");
        if (!shots.isEmpty()) QFile::copy(svg, QString::fromLocal8Bit(shots) + QStringLiteral("/chart_export.svg"));
        QCOMPARE(chart.rawSeries(1)->count(), 4);
    }

    void logAxisWithOnlyZerosStillDraws() {
        RunDataStore data;
        feed(data, 1, "k3_kl", std::vector<double>(20, 0.0));  // truly on-policy: exactly 0
        MetricChart chart(&data, QStringLiteral("k3_kl"));
        showAndSettle(chart, QSize(600, 400));
        chart.setLogScale(true);
        QCOMPARE(chart.rawSeries(1)->count(), 20);
        QVERIFY(chart.smoothedSeries(1)->isVisible());
        for (const QPointF& p : chart.smoothedSeries(1)->points()) QCOMPARE(p.y(), kDefaultLogFloor);
        QVERIFY(chart.shownYRange().lo < kDefaultLogFloor && chart.shownYRange().hi > kDefaultLogFloor);
        QVERIFY(chart.noteText().contains(QStringLiteral("20 values <= 0")));
    }

    void pointBudgetBoundsWhatIsPushed() {
        RunDataStore data;
        std::mt19937 rng(5);
        std::normal_distribution<double> noise;
        for (qint64 run = 1; run <= 10; ++run) {
            std::vector<double> values;
            for (int s = 0; s < 5000; ++s) values.push_back(noise(rng));
            values[777] = 100;  // a spike must survive the coarser buckets
            feed(data, run, "grad_norm", values);
        }
        MetricChart chart(&data, QStringLiteral("grad_norm"));
        showAndSettle(chart, QSize(900, 400));
        chart.setPointBudget(4000);
        chart.redrawNow();
        qsizetype raw = 0;
        for (qint64 run = 1; run <= 10; ++run) {
            const QList<QPointF> points = chart.rawSeries(run)->points();
            raw += points.size();
            QVERIFY(std::any_of(points.begin(), points.end(), [](QPointF p) { return p.y() == 100; }));
        }
        QVERIFY2(raw <= 10 * (4 * MetricChart::kMinBuckets + 2), qPrintable(QString::number(raw)));
        chart.setPointBudget(0);  // one bucket per pixel column
        chart.redrawNow();
        QVERIFY(chart.rawSeries(1)->count() > 4 * MetricChart::kMinBuckets);
    }

    void unchangedRunsAreNotPushedAgain() {
        RunDataStore data;
        std::vector<double> values;
        for (int s = 0; s < 500; ++s) values.push_back(std::sin(s * 0.05));
        feed(data, 1, "reward_mean", values);
        feed(data, 2, "reward_mean", values);
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(800, 400));
        chart.redrawNow();
        QSignalSpy finishedRun(chart.rawSeries(1), &QXYSeries::pointsReplaced);
        QSignalSpy runningRun(chart.rawSeries(2), &QXYSeries::pointsReplaced);
        // Run 2 grows inside the same axis ticks: only its lines are re-laid out.
        data.appendStep(2, stepOf(500, {{"reward_mean", 0.5}}));
        chart.redrawNow();
        QCOMPARE(runningRun.count(), 1);
        QCOMPARE(finishedRun.count(), 0);
        QCOMPARE(chart.rawSeries(2)->points().back(), QPointF(500, 0.5));
    }

    void chartPaintsEachRunInItsColourAndFollowsChanges() {
        RunDataStore data;
        std::vector<double> band;
        for (int i = 0; i < 4000; ++i) band.push_back(i % 2 ? 0.2 : 0.3);
        feed(data, 1, "reward_mean", band);  // dense: column spans, a solid band
        data.addRun({2, QStringLiteral("sparse"), QStringLiteral("finished"), QString(), {}});
        for (int64_t step = 0; step <= 4000; step += 500)
            data.appendStep(2, stepOf(step, {{"reward_mean", 0.32}}));  // a polyline
        data.setColour(1, QColor(200, 0, 0));
        data.setColour(2, QColor(0, 0, 200));
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        chart.setSmoothing(0);  // one line per run, in the run's full colour
        showAndSettle(chart, QSize(700, 400));
        chart.redrawNow();
        const auto pixelAt = [&](double step, double value) {
            const QImage image = chart.grab().toImage();
            const QPoint p = chart.mapFromScene(chart.toScene(step, value));
            return image.pixelColor(p);
        };
        QCOMPARE(pixelAt(2000, 0.25), QColor(200, 0, 0));
        const QColor sparse = pixelAt(2250, 0.32);  // antialiased: mostly the colour
        QVERIFY2(sparse.blue() > 150 && sparse.red() < 120, qPrintable(sparse.name()));

        // New data, a new colour: the cached raster must not show the old ones.
        data.appendStep(1, stepOf(4000, {{"reward_mean", 0.2}}));
        data.setColour(1, QColor(0, 150, 0));
        QTRY_COMPARE(pixelAt(2000, 0.25), QColor(0, 150, 0));
        chart.setRunHidden(1, true);
        chart.redrawNow();
        QVERIFY(pixelAt(2000, 0.25) != QColor(0, 150, 0));
    }

    void plotAreaMakesRoomForLabelsWithinTheRedraw() {
        // An export right after a redraw (no event-loop turn) must already see
        // the room the labels need, not the plot area of before.
        RunDataStore data;
        feed(data, 1, "grad_norm", {1, 2, 1.5});
        MetricChart chart(&data, QStringLiteral("grad_norm"));
        showAndSettle(chart, QSize(600, 400));
        chart.redrawNow();
        const double narrow = chart.chart()->plotArea().left();
        std::vector<StepRecord> wide;
        for (int s = 3; s < 60; ++s) wide.push_back(stepOf(s, {{"grad_norm", 123456.0 + s}}));
        data.appendSteps(1, wide);
        chart.redrawNow();
        const double left = chart.chart()->plotArea().left();
        const QFontMetrics metrics(chart.font());
        const QStringList labels = chart.tickLabels(Qt::Vertical);
        QVERIFY2(left > narrow + metrics.horizontalAdvance(QStringLiteral("000")),
                 qPrintable(QStringLiteral("%1 -> %2 (%3)").arg(narrow).arg(left).arg(labels.join(' '))));
        QCOMPARE(QSet<QString>(labels.begin(), labels.end()).size(), labels.size());  // no two ticks read the same
    }

    void axisLabelsArePaintedByTheChart() {
        RunDataStore data;
        feed(data, 1, "k3_kl", {1e-5, 3e-4, 2e-3, 5e-5});
        MetricChart chart(&data, QStringLiteral("k3_kl"));
        showAndSettle(chart, QSize(600, 400));
        chart.setLogScale(true);
        QStringList y = chart.tickLabels(Qt::Vertical);
        for (const char* decade : {"1e-05", "0.0001", "0.001"})
            QVERIFY2(y.contains(QString::fromLatin1(decade)), qPrintable(y.join(' ')));
        const QStringList x = chart.tickLabels(Qt::Horizontal);
        QVERIFY2(x.contains(QStringLiteral("0")) && x.contains(QStringLiteral("3")), qPrintable(x.join(' ')));
        chart.setLogScale(false);
        y = chart.tickLabels(Qt::Vertical);
        QVERIFY2(y.contains(QStringLiteral("0")) && !y.contains(QStringLiteral("1e-05")), qPrintable(y.join(' ')));
        // The labels sit left of the plot, inside the chart.
        QVERIFY(chart.chart()->plotArea().left() > 20);
    }

    void wallTimeAxisIsElapsedTimeThatNeverGoesBack() {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("times.db")).toStdString();
        int64_t timed = 0, untimed = 0;
        {
            Store store = Store::open(path);
            timed = store.create_run("timed", "tiny", "{}", 1);
            untimed = store.create_run("v1 run", "tiny", "{}", 2);
            for (int s = 0; s < 5; ++s) {
                store.append_step(timed, stepOf(s, {{"reward_mean", 0.1 * s}}));
                store.append_step(untimed, stepOf(s, {{"reward_mean", 0.5}}));
            }
        }
        {
            // Commit times as a run paused for an hour and a clock stepped
            // back would leave them; the second run as schema v1 left it.
            sqlite3* db = nullptr;
            QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
            const std::string sql =
                "UPDATE steps SET time = CASE step WHEN 0 THEN '2026-01-01T00:00:00.000Z' "
                "WHEN 1 THEN '2026-01-01T00:00:10.000Z' WHEN 2 THEN '2026-01-01T00:00:20.500Z' "
                "WHEN 3 THEN '2026-01-01T00:00:15.000Z' ELSE '2026-01-01T01:00:20.500Z' END WHERE run_id = " +
                std::to_string(timed) + "; UPDATE steps SET time = '' WHERE run_id = " + std::to_string(untimed) + ";";
            QCOMPARE(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
            sqlite3_close(db);
        }
        RunDataStore data;
        QVERIFY(data.open(QString::fromStdString(path)));
        QCOMPARE(data.series(timed, QStringLiteral("reward_mean")).times.size(), std::size_t(5));
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(800, 400));
        chart.setXRange(1, 3);
        chart.setXAxis(MetricChart::XAxis::wallTime);
        chart.redrawNow();
        QVERIFY(!chart.zoomedXRange());  // a step zoom means nothing in seconds
        // Elapsed seconds, held level where the clock went back: 0, 10, 20.5, 20.5, 3620.5.
        const QList<QPointF> points = chart.rawSeries(timed)->points();
        QCOMPARE(points.size(), qsizetype(5));
        const std::vector<double> expected{0, 10, 20.5, 20.5, 3620.5};
        for (int i = 0; i < 5; ++i) QCOMPARE(points[i].x(), expected[std::size_t(i)]);
        QVERIFY(chart.shownXRange().lo == 0 && chart.shownXRange().hi >= 3620.5 && chart.shownXRange().hi <= 4000);
        QCOMPARE(chart.xAxisTitle(), QStringLiteral("wall time since the run's first step (min)"));
        QVERIFY2(chart.tickLabels(Qt::Horizontal).contains(QStringLiteral("60")),
                 qPrintable(chart.tickLabels(Qt::Horizontal).join(' ')));
        // The run without step times is named, not drawn at a made-up time.
        QVERIFY(!chart.plottedRuns().isEmpty());
        QVERIFY(chart.rawSeries(untimed)->points().isEmpty());
        QVERIFY2(chart.noteText().contains(QStringLiteral("1 run(s) without step times")),
                 qPrintable(chart.noteText()));
        const QString hover = chart.hoverTextAt(chart.mapFromScene(chart.toScene(3620.5, 0.4)));
        QVERIFY2(hover.contains(QStringLiteral("step 4 at 3621 s")), qPrintable(hover));

        chart.setXAxis(MetricChart::XAxis::step);
        chart.redrawNow();
        QCOMPARE(chart.rawSeries(timed)->points().back().x(), 4.0);
        QCOMPARE(chart.rawSeries(untimed)->count(), 5);
        QCOMPARE(chart.xAxisTitle(), QStringLiteral("step"));
    }

    void seedsOfOneConfigurationDrawAsAMeanInABand() {
        RunDataStore data;
        // Runs 1-3: one configuration, three seeds; run 4 another one.
        for (qint64 run = 1; run <= 4; ++run) {
            data.addRun({run,
                         QStringLiteral("cfg-%1").arg(run),
                         QStringLiteral("finished"),
                         QString(),
                         {},
                         run <= 3 ? QStringLiteral("A") : QStringLiteral("B")});
            std::vector<StepRecord> records;
            for (int s = 0; s < 50; ++s) records.push_back(stepOf(s, {{"reward_mean", 0.1 * run + 0.001 * s}}));
            data.appendSteps(run, records);
        }
        data.appendStep(2, stepOf(50, {{"reward_mean", kNaN}}));  // one seed's NaN: marked, not averaged
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        chart.setSmoothing(0);  // raw values, so the band is exact
        showAndSettle(chart, QSize(800, 450));
        chart.redrawNow();
        QVERIFY(chart.seedBands().isEmpty());
        QCOMPARE(chart.rawSeries(1)->count() > 0 || chart.smoothedSeries(1)->count() > 0, true);

        chart.setGroupSeeds(true);
        chart.redrawNow();
        const QList<MetricChart::SeedBandView> bands = chart.seedBands();
        QCOMPARE(bands.size(), qsizetype(1));
        QCOMPARE(bands[0].runs, (QList<qint64>{1, 2, 3}));
        QVERIFY2(bands[0].name.contains(QStringLiteral("3 seeds")), qPrintable(bands[0].name));
        QCOMPARE(bands[0].mean.front(), QPointF(0, 0.2));
        QCOMPARE(bands[0].lo.front(), QPointF(0, 0.1));
        QCOMPARE(bands[0].hi.back(), QPointF(49, 0.3 + 0.049));
        QCOMPARE(chart.nanMarkers(2)->count(), 1);
        QVERIFY2(chart.noteText().contains(QStringLiteral("1 NaN/Inf")), qPrintable(chart.noteText()));
        // The members are drawn by the band; the other configuration as a run.
        QCOMPARE(chart.smoothedSeries(2)->count(), 0);
        QVERIFY(chart.smoothedSeries(4)->count() > 0);
        // Mean line and band in the group's colour (run 1's), band translucent.
        const QImage image = chart.grab().toImage();
        const auto nearColour = [&](QPoint at, const QColor& want) {  // antialiased: within a pixel
            for (int dy = -1; dy <= 1; ++dy) {
                const QColor c = image.pixelColor(at + QPoint(0, dy));
                if (std::abs(c.red() - want.red()) + std::abs(c.green() - want.green()) +
                        std::abs(c.blue() - want.blue()) <
                    90)
                    return true;
            }
            return false;
        };
        QVERIFY(nearColour(chart.mapFromScene(chart.toScene(25, 0.2 + 0.025)), RunDataStore::defaultColour(1)));
        const QColor band = image.pixelColor(chart.mapFromScene(chart.toScene(25, 0.27)));
        QVERIFY2(band != Qt::white && band != RunDataStore::defaultColour(1) && band.blue() > band.red(),
                 qPrintable(band.name()));
        const QString hover = chart.hoverTextAt(chart.mapFromScene(chart.toScene(10, 0.21)));
        QVERIFY2(hover.contains(QStringLiteral("mean of 3 runs: 0.21")), qPrintable(hover));

        // Hiding one seed shrinks the band to the other two.
        chart.setRunHidden(3, true);
        chart.redrawNow();
        QCOMPARE(chart.seedBands().front().runs, (QList<qint64>{1, 2}));
        QCOMPARE(chart.seedBands().front().hi.front(), QPointF(0, 0.2));
        chart.setGroupSeeds(false);
        chart.redrawNow();
        QVERIFY(chart.seedBands().isEmpty());
        QVERIFY(chart.smoothedSeries(2)->count() > 0);
    }

    void seedBandAtZeroStaysOnALogAxis() {
        // Two seeds of a truly on-policy configuration: K3 KL exactly 0.
        RunDataStore data;
        for (qint64 run = 1; run <= 2; ++run) {
            data.addRun({run,
                         QStringLiteral("on-policy %1").arg(run),
                         QStringLiteral("finished"),
                         QString(),
                         {},
                         QStringLiteral("same")});
            std::vector<StepRecord> records;
            for (int s = 0; s < 30; ++s) records.push_back(stepOf(s, {{"k3_kl", 0.0}}));
            data.appendSteps(run, records);
        }
        MetricChart chart(&data, QStringLiteral("k3_kl"));
        chart.setGroupSeeds(true);
        showAndSettle(chart, QSize(700, 400));
        chart.setLogScale(true);
        chart.redrawNow();
        QCOMPARE(chart.seedBands().size(), qsizetype(1));
        for (const QPointF& p : chart.seedBands().front().mean) QCOMPARE(p.y(), kDefaultLogFloor);
        QVERIFY(chart.shownYRange().lo < kDefaultLogFloor && chart.shownYRange().hi > kDefaultLogFloor);
        QVERIFY2(chart.noteText().contains(QStringLiteral("values <= 0")), qPrintable(chart.noteText()));
    }

    void contextMenuOffersTheActions() {
        RunDataStore data;
        feed(data, 1, "k3_kl", {0.0, 1e-3, 2e-3});
        MetricChart chart(&data, QStringLiteral("k3_kl"));
        std::unique_ptr<QMenu> menu(chart.createContextMenu(nullptr));
        QStringList texts;
        for (QAction* a : menu->actions())
            if (!a->isSeparator()) texts << a->text();
        for (const char* wanted :
             {"Log scale", "Smoothing\u2026", "Save as PNG\u2026", "Save as SVG\u2026", "Remove chart"})
            QVERIFY2(texts.contains(QString::fromUtf8(wanted)), wanted);
        QAction* log = menu->actions().front();
        QSignalSpy removed(&chart, &MetricChart::removeRequested);
        log->trigger();
        QVERIFY(chart.logScale());
        QVERIFY(qobject_cast<QLogValueAxis*>(chart.yAxis()));
        for (QAction* a : menu->actions())
            if (a->text() == QStringLiteral("Remove chart")) a->trigger();
        QCOMPARE(removed.count(), 1);
    }

    // --- ChartGrid -----------------------------------------------------------

    void gridDefaultsAddAndRemove() {
        RunDataStore data;
        feed(data, 1, "entropy", {1, 2, 3});
        ChartGrid grid(&data);
        QCOMPARE(grid.charts().size(), qsizetype(4));
        for (const QString& m : ChartGrid::defaultMetrics()) QVERIFY(grid.chartFor(m));
        QVERIFY(grid.availableMetrics().contains(QStringLiteral("entropy")));
        MetricChart* entropy = grid.addChart(QStringLiteral("entropy"));
        QCOMPARE(grid.addChart(QStringLiteral("entropy")), entropy);  // no duplicates
        QCOMPARE(grid.charts().size(), qsizetype(5));
        QVERIFY(!grid.availableMetrics().contains(QStringLiteral("entropy")));
        QVERIFY(grid.removeChart(QStringLiteral("grad_norm")));
        QCOMPARE(grid.charts().size(), qsizetype(4));
        QVERIFY(!grid.chartFor(QStringLiteral("grad_norm")));
        emit entropy->removeRequested();  // the context menu's "Remove chart"
        QVERIFY(!grid.chartFor(QStringLiteral("entropy")));
    }

    void gridSharesTheXRange() {
        RunDataStore data;
        std::vector<StepRecord> records;
        for (int s = 0; s < 200; ++s)
            records.push_back(
                stepOf(s, {{"reward_mean", s * 0.01}, {"k3_kl", 1e-4 * s}, {"grad_norm", 1.0}, {"F@2", 0.0}}));
        data.addRun({1, QStringLiteral("a"), QStringLiteral("finished"), QString(), {}});
        data.appendSteps(1, records);
        ChartGrid grid(&data);
        showAndSettle(grid, QSize(1000, 700));

        grid.chartFor(QStringLiteral("k3_kl"))->setXRange(50, 80);
        for (MetricChart* c : grid.charts()) QCOMPARE(c->zoomedXRange(), (std::optional<XRange>(XRange{50, 80})));

        // Drag-zoom one chart with the mouse: every chart follows.
        MetricChart* reward = grid.chartFor(QStringLiteral("reward_mean"));
        reward->redrawNow();
        const QRect plot = reward->mapFromScene(reward->chart()->plotArea()).boundingRect();
        const QPoint from(plot.left() + plot.width() / 4, plot.center().y());
        const QPoint to(plot.left() + plot.width() * 3 / 4, plot.center().y());
        QTest::mousePress(reward->viewport(), Qt::LeftButton, {}, from);
        QTest::mouseMove(reward->viewport(), to);
        QTest::mouseRelease(reward->viewport(), Qt::LeftButton, {}, to);
        const auto zoomed = reward->zoomedXRange();
        QVERIFY(zoomed);
        QVERIFY(zoomed->lo > 50 && zoomed->hi < 80 && zoomed->span() > 10);
        for (MetricChart* c : grid.charts()) QCOMPARE(c->zoomedXRange(), zoomed);
        QTRY_COMPARE(grid.chartFor(QStringLiteral("F@2"))->shownXRange(), *zoomed);

        // Double-click resets all.
        QTest::mouseDClick(grid.chartFor(QStringLiteral("grad_norm"))->viewport(), Qt::LeftButton, {}, plot.center());
        for (MetricChart* c : grid.charts()) QVERIFY(!c->zoomedXRange());
        QTRY_VERIFY(covers(reward->shownXRange(), 0, 199));
    }

    void gridShowsChosenRunsAndHidesOnLegendClick() {
        RunDataStore data;
        for (qint64 run : {1, 2, 3}) feed(data, run, "reward_mean", {0.1 * run, 0.2 * run});
        ChartGrid grid(&data);
        showAndSettle(grid, QSize(900, 600));
        MetricChart* reward = grid.chartFor(QStringLiteral("reward_mean"));
        reward->redrawNow();
        QCOMPARE(reward->plottedRuns(), (QList<qint64>{1, 2, 3}));
        QCOMPARE(reward->rawSeries(1)->color().rgb(), RunDataStore::defaultColour(1).rgb());
        grid.setVisibleRuns({1, 3});
        reward->redrawNow();
        QCOMPARE(reward->plottedRuns(), (QList<qint64>{1, 3}));
        emit reward->runLegendClicked(3);
        QVERIFY(!reward->smoothedSeries(3)->isVisible());
        QVERIFY(grid.chartFor(QStringLiteral("k3_kl"))->isRunHidden(3));
        grid.showAllRuns();
        reward->redrawNow();
        QCOMPARE(reward->plottedRuns().size(), qsizetype(3));
    }

    // Not a check: the picture for a human (and the report).
    void screenshot() {
        const QByteArray dir = qgetenv("MLK_SCREENSHOT_DIR");
        RunDataStore data;
        std::mt19937 rng(3);
        std::normal_distribution<double> noise;
        const char* names[] = {"baseline (bf16 rollout)", "batch-invariant + fp32", "R3 + TIS"};
        for (qint64 run = 1; run <= 3; ++run) {
            data.addRun(
                {run, QString::fromLatin1(names[run - 1]), QStringLiteral("finished"), QStringLiteral("tiny-moe"), {}});
            std::vector<StepRecord> records;
            for (int s = 0; s < 400; ++s) {
                const double reward = 0.2 + 0.6 * (1 - std::exp(-s / (80.0 * run))) + 0.05 * noise(rng);
                double k3 = run == 2 ? 0.0 : 1e-3 / run * std::exp(0.1 * noise(rng));
                if (run == 2 && s % 50 == 25) k3 = 1e-9 * (1 + std::abs(noise(rng)));
                if (run == 2 && s % 97 == 0) k3 = kNaN;
                const double grad = 1.0 + 0.3 * std::abs(noise(rng)) + (s == 200 && run == 1 ? 40 : 0);
                records.push_back(stepOf(s, {{"reward_mean", reward},
                                             {"k3_kl", k3},
                                             {"grad_norm", grad},
                                             {"F@2", run == 2 ? 0.0 : 0.01 / run * std::exp(0.2 * noise(rng))}}));
            }
            data.appendSteps(run, records);
        }
        ChartGrid grid(&data);
        grid.chartFor(QStringLiteral("k3_kl"))->setLogScale(true);
        showAndSettle(grid, QSize(1200, 800));
        grid.redrawAllNow();
        saveShot(grid, dir, "charts_grid.png");

        // Three seeds of two configurations, grouped into mean lines in bands.
        RunDataStore seeds;
        for (qint64 run = 1; run <= 6; ++run) {
            const bool r3 = run > 3;
            seeds.addRun({run,
                          QString::fromLatin1(r3 ? "R3, seed %1" : "no R3, seed %1").arg((run - 1) % 3 + 1),
                          QStringLiteral("finished"),
                          QString(),
                          {},
                          QString::fromLatin1(r3 ? "r3" : "plain")});
            std::vector<StepRecord> records;
            for (int s = 0; s < 300; ++s) {
                const double reward =
                    0.2 + (r3 ? 0.5 : 0.35) * (1 - std::exp(-s / (60.0 + 20 * (run % 3)))) + 0.06 * noise(rng);
                const double k3 = (r3 ? 2e-4 : 8e-4) * std::exp(0.3 * noise(rng));
                records.push_back(stepOf(s, {{"reward_mean", reward},
                                             {"k3_kl", k3},
                                             {"grad_norm", 1.0 + 0.3 * std::abs(noise(rng))},
                                             {"F@2", (r3 ? 0.0 : 0.01) * std::exp(0.2 * noise(rng))}}));
            }
            seeds.appendSteps(run, records);
        }
        ChartGrid grouped(&seeds);
        grouped.setGroupSeeds(true);
        showAndSettle(grouped, QSize(1200, 800));
        grouped.redrawAllNow();
        QCOMPARE(grouped.chartFor(QStringLiteral("reward_mean"))->seedBands().size(), qsizetype(2));
        saveShot(grouped, dir, "charts_grid_seeds.png");
    }

    void saveShot(QWidget& widget, const QByteArray& dir, const char* name) {
        const QPixmap shot = widget.grab();  // rendered in every run; saved when asked
        QVERIFY(!shot.isNull() && shot.width() >= 200 && shot.height() >= 150);
        if (!dir.isEmpty()) QVERIFY(shot.save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name)));
    }
};

QTEST_MAIN(ChartsTest)
#include "charts_test.moc"
