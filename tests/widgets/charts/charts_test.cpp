// MetricChart on real data: log axis with zeros and NaN, live updates from a
// store another connection writes, coalesced redraws, hover read-out, PNG/SVG
// export, the raster line layer's pixels, wall-time x, seed bands, the menu.
#include <QApplication>
#include <QFile>
#include <QFontMetrics>
#include <QImage>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QMenu>
#include <QScatterSeries>
#include <QGraphicsScene>
#include <QPainter>
#include <QHelpEvent>
#include <QSignalSpy>
#include <QToolTip>
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
#include "widgets/data/palette.h"
#include "widgets/data/run_data.h"
#include "widgets/data/series_math.h"
#include "tests/widgets/charts/chart_test_util.h"
#include "widgets/charts/axis_rules.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;
using namespace mlk::test;

class ChartsTest : public QObject {
    Q_OBJECT

private slots:
    // --- MetricChart ---------------------------------------------------------

    // Names that share a long start were cut at their end, keeping the start
    // and losing what tells them apart ("#5 miles-de… seeds" twice): the
    // shared start goes first.
    void aCutLegendNameKeepsWhatTellsItApart() {
        const QStringList names = {"miles-dense-baseline seeds", "miles-dense-token-is seeds",
                                   "miles-dense-token-is-mis seeds", "miles-dense-token-is-mis-bn seeds"};
        std::vector<LegendEntry> entries;
        for (int i = 0; i < 12; ++i) {
            LegendEntry e;
            e.runId = i + 1;
            e.colour = Qt::blue;
            e.name = names[i % 4];
            e.nameWithId = QStringLiteral("#%1 ").arg(i + 1) + e.name;
            e.whole = e.nameWithId;
            entries.push_back(e);
        }
        QGraphicsScene scene;
        auto* item = new LegendItem;  // the scene owns it
        scene.addItem(item);
        LegendItem& legend = *item;
        legend.setEntries(entries);
        const double height = legend.layOut(900, 2);
        if (const QByteArray shots = qgetenv("MLK_SCREENSHOT_DIR"); !shots.isEmpty()) {
            QImage image(900, int(height) + 4, QImage::Format_ARGB32);
            image.fill(Qt::white);
            QPainter painter(&image);
            scene.render(&painter, QRectF(0, 0, 900, height + 4), QRectF(0, 0, 900, height + 4));
            painter.end();
            image.save(QString::fromLocal8Bit(shots) + QStringLiteral("/legend_shared_starts.png"));
        }
        QCOMPARE(legend.names(), LegendItem::Names::idsFirst);
        const QStringList labels = legend.labels();
        QCOMPARE(labels.size(), qsizetype(12));
        for (int i = 0; i < 12; ++i) {
            QVERIFY2(labels[i].startsWith(QStringLiteral("#%1 ").arg(i + 1)), qPrintable(labels[i]));
            QVERIFY2(!labels[i].contains(QStringLiteral("miles-de\u2026")), qPrintable(labels[i]));
        }
        // The four configurations read apart, ids aside.
        QSet<QString> apart;
        for (int i = 0; i < 4; ++i) apart.insert(labels[i].section(QLatin1Char(' '), 1));
        QVERIFY2(apart.size() == 4, qPrintable(labels.join(" | ")));
        QVERIFY2(labels[2].contains(QStringLiteral("is-mis")), qPrintable(labels[2]));
    }

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

    // A robust range leaves the outlier out of the axis but keeps its point
    // in the series; the note counts it, and with Ignore outliers off (or a
    // manual range) the axis follows the choice.
    void outliersAreCountedAndTheRangeIsTheUsers() {
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
        QCOMPARE(chart.pointsOutside(), 1);
        QVERIFY2(chart.noteText().contains(QStringLiteral("1 outlier(s) outside the axis")),
                 qPrintable(chart.noteText()));
        chart.setIgnoreOutliers(false);
        chart.redrawNow();
        QVERIFY(chart.shownYRange().hi >= 1e6);
        QCOMPARE(chart.pointsOutside(), 0);
        QVERIFY(!chart.noteText().contains(QStringLiteral("outside")));
        chart.setManualYRange(YRange{0.5, 1.2});
        chart.redrawNow();
        QCOMPARE(chart.shownYRange().lo, 0.5);
        QCOMPARE(chart.shownYRange().hi, 1.2);
        QCOMPARE(chart.pointsOutside(), 100);  // the 99 values 1.201 .. 1.299, and the outlier
        chart.setManualYRange(std::nullopt);
        chart.redrawNow();
        QVERIFY(chart.shownYRange().hi >= 1e6);
    }

    // F@2 of r3-grpo (spikes to 0.0069), r3-grpo-r3 (tiny) and a truly
    // on-policy run (all 0) overlaid: every run's peak stays inside the axis,
    // on log and on linear scale, and a linear fraction axis never goes below 0.
    void mismatchPeaksStayInsideTheAxis() {
        RunDataStore data;
        std::vector<double> spiky(150, 0.0), small(150, 0.0), zero(150, 0.0);
        for (int i = 0; i < 150; ++i) small[i] = i % 3 == 0 ? 2e-5 * (1 + i % 7) : 0.0;
        for (int i : {20, 21, 33, 47, 90}) spiky[i] = 0.0069 * (i == 21 ? 1.0 : 0.4);
        feed(data, 1, "F@2", spiky);
        feed(data, 2, "F@2", small);
        feed(data, 3, "F@2", zero);
        MetricChart chart(&data, QStringLiteral("F@2"));
        showAndSettle(chart, QSize(800, 400));
        for (bool log : {false, true}) {
            chart.setLogScale(log);
            chart.redrawNow();
            const YRange y = chart.shownYRange();
            QVERIFY2(y.hi >= 0.0069, qPrintable(QString("log %1: axis top %2").arg(log).arg(y.hi)));
            QVERIFY2(y.hi >= 2e-5 * 7, qPrintable(QString::number(y.hi)));
            if (!log) {
                QCOMPARE(y.lo, 0.0);
                QVERIFY(y.hi < 0.02);  // not a degenerate band around the zeros either
            }
        }
        // A fraction that is 0 throughout: [0, something], never below 0.
        RunDataStore flat;
        feed(flat, 1, "reward_mean", std::vector<double>(40, 0.0));
        MetricChart reward(&flat, QStringLiteral("reward_mean"));
        showAndSettle(reward, QSize(600, 300));
        reward.redrawNow();
        QCOMPARE(reward.shownYRange().lo, 0.0);
        QVERIFY(reward.shownYRange().hi > 0);
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
        QTRY_VERIFY_WITH_TIMEOUT(chart.rawSeries(run) && chart.rawSeries(run)->count() == kSteps, kEventDeadlineMs);
        writer.join();
        QVERIFY(changed.count() >= 1);
        QCOMPARE(chart.rawSeries(run)->points().back(), QPointF(kSteps - 1, 0.01 * (kSteps - 1)));
        QVERIFY(covers(chart.shownXRange(), 0, kSteps - 1));
        data.stopPolling();
    }

    void manyDataSignalsCoalesceIntoFewRedraws() {
        RunDataStore data;
        data.addRun({1, QStringLiteral("a"), QStringLiteral("running"), QString(), {}, {}});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(700, 400));
        QSignalSpy changed(&data, &RunDataStore::dataChanged);
        const int before = chart.redrawCount();
        for (int s = 0; s < 100; ++s) data.appendStep(1, stepOf(s, {{"reward_mean", std::sin(s * 0.1)}}));
        QCOMPARE(changed.count(), 100);
        QTRY_COMPARE_WITH_TIMEOUT(chart.rawSeries(1) ? chart.rawSeries(1)->count() : 0, 100, kEventDeadlineMs);
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

        // The dot follows the mouse over the plot and goes when the mouse leaves.
        QTest::mouseMove(chart.viewport(), chart.mapFromScene(scene));
        QTRY_VERIFY_WITH_TIMEOUT(chart.hoverMarkerShown(), kEventDeadlineMs);
        QEvent leave(QEvent::Leave);
        QApplication::sendEvent(chart.viewport(), &leave);
        QVERIFY(!chart.hoverMarkerShown());
    }

    // The read-out lists every run at the step under the mouse, as
    // TensorBoard and W&B do, and stays while the mouse stays: the view's
    // own tooltip event hid it after about a second.
    void hoverListsEveryRunAtTheStepAndStays() {
        RunDataStore data;
        feed(data, 1, "reward_mean", {0.1, 0.2, 0.3, 0.4});
        feed(data, 2, "reward_mean", {0.5, 0.6, 0.7, 0.8});
        feed(data, 3, "reward_mean", {0.9, 0.1, 0.05});  // shorter: no step 3
        feed(data, 4, "reward_mean", {0.3, 0.3, 0.3, 0.35});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(700, 400));
        chart.redrawNow();
        const QPoint at = chart.mapFromScene(chart.toScene(3, 0.8));
        const QString text = chart.hoverTextAt(at);
        QVERIFY2(text.contains(QStringLiteral("run-2")) && text.contains(QStringLiteral("raw: 0.8")), qPrintable(text));
        const qsizetype others = text.indexOf(QStringLiteral("other runs at this step"));
        QVERIFY2(others > 0, qPrintable(text));
        const qsizetype r4 = text.indexOf(QStringLiteral("run-4: 0.35")),
                        r1 = text.indexOf(QStringLiteral("run-1: 0.4"));
        QVERIFY2(r4 > others && r1 > others, qPrintable(text));
        QVERIFY2(r1 < r4, qPrintable(text));                                   // largest first
        QVERIFY2(!text.contains(QStringLiteral("run-3:")), qPrintable(text));  // no value at step 3
        // The mouse rests on the point: the view's tooltip event keeps the read-out.
        QTest::mouseMove(chart.viewport(), at);
        QTRY_VERIFY_WITH_TIMEOUT(chart.hoverMarkerShown(), kEventDeadlineMs);
        QHelpEvent tip(QEvent::ToolTip, at, chart.viewport()->mapToGlobal(at));
        QApplication::sendEvent(chart.viewport(), &tip);
        QVERIFY(chart.hoverMarkerShown());
        QTRY_VERIFY_WITH_TIMEOUT(QToolTip::isVisible(), kEventDeadlineMs);
        QVERIFY2(QToolTip::text().contains(QStringLiteral("other runs at this step")), qPrintable(QToolTip::text()));
        if (const QByteArray shots = qgetenv("MLK_SCREENSHOT_DIR"); !shots.isEmpty())
            for (QWidget* w : QApplication::topLevelWidgets())
                if (w->inherits("QTipLabel") && w->isVisible())
                    w->grab().save(QString::fromLocal8Bit(shots) + QStringLiteral("/hover_every_run.png"));
    }

    void saveWritesPngAndSvg() {
        RunDataStore data;
        feed(data, 1, "reward_mean", {0.1, 0.3, 0.2, 0.5});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        chart.resize(500, 320);  // never shown: export must still draw current data
        QTemporaryDir dir;
        const QString png = dir.filePath(QStringLiteral("c.png")), svg = dir.filePath(QStringLiteral("c.svg"));
        QCOMPARE(chart.savePng(png), QString());
        QCOMPARE(chart.saveSvg(svg), QString());
        const QImage image(png);
        QCOMPARE(image.size(), QSize(500, 320));
        QFile file(svg);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray text = file.readAll();
        QVERIFY(text.contains("<svg"));
        QVERIFY(text.contains("reward_mean"));
        QVERIFY2(text.contains(">run-1<"), "the legend, drawn in the chart's scene, is exported with it");
        QVERIFY2(text.contains("<polyline"), "lines are vectors in SVG, not an embedded raster");
        const QByteArray shots = qgetenv("MLK_SCREENSHOT_DIR");
        if (!shots.isEmpty()) QFile::copy(svg, QString::fromLocal8Bit(shots) + QStringLiteral("/chart_export.svg"));
        QCOMPARE(chart.rawSeries(1)->count(), 4);

        // At a chosen size: that size, drawn anew (the run's colour is on it,
        // the title too), the chart on screen untouched.
        const QString big = dir.filePath(QStringLiteral("big.png"));
        chart.setSmoothing(0);
        QCOMPARE(chart.savePng(big, QSize(1600, 600)), QString());
        if (!shots.isEmpty())
            QFile::copy(big, QString::fromLocal8Bit(shots) + QStringLiteral("/chart_export_1600.png"));
        const QImage large(big);
        QCOMPARE(large.size(), QSize(1600, 600));
        int runPixels = 0, left = large.width(), right = 0;
        const QColor colour = palette::runColour(1);
        for (int y = 0; y < large.height(); ++y)
            for (int x = 0; x < large.width(); ++x) {
                const QColor p(large.pixel(x, y));
                if (colourDistance(p, colour) >= 60) continue;
                ++runPixels;
                if (y < large.height() - 60) left = std::min(left, x), right = std::max(right, x);  // not the legend
            }
        // A 1 px antialiased line across the plot, drawn at that width.
        QVERIFY2(runPixels > 300 && left < 100 && right > 1500,
                 qPrintable(QString("%1 pixels from x %2 to %3").arg(runPixels).arg(left).arg(right)));
        QCOMPARE(chart.size(), QSize(500, 320));
    }

    // The user learns why, not only that it failed (the chart's menu shows
    // this text).
    void aFailedSaveSaysWhy() {
        RunDataStore data;
        feed(data, 1, "reward_mean", {0.1, 0.3});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        chart.resize(300, 200);
        QTemporaryDir dir;
        const QString missing = dir.filePath(QStringLiteral("no-such-folder/c.png"));
        const QString why = chart.savePng(missing);
        QVERIFY2(why.contains(missing) && why.contains(QStringLiteral("No such file or directory")), qPrintable(why));
        QVERIFY(chart.saveSvg(dir.filePath(QStringLiteral("no-such-folder/c.svg"))).contains("No such file"));
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

    // Before the first value a log chart spans the decades a mismatch metric
    // lands in, not one decade at the floor (it read 1e-12 to 1e-11).
    void anEmptyLogChartShowsTheDecadesAMismatchLandsIn() {
        RunDataStore data;
        MetricChart chart(&data, QStringLiteral("k3_kl"));
        showAndSettle(chart, QSize(600, 400));
        chart.setLogScale(true);
        QCOMPARE(chart.shownYRange().lo, 1e-4);
        QCOMPARE(chart.shownYRange().hi, 1.0);
        QCOMPARE(chart.tickLabels(Qt::Vertical).front(), QStringLiteral("0.0001"));
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
        data.addRun({2, QStringLiteral("sparse"), QStringLiteral("finished"), QString(), {}, {}});
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
        // antialiased: at least half the colour
        const QColor sparse = inkNear(chart.grab().toImage(), chart.mapFromScene(chart.toScene(2250, 0.32)));
        QVERIFY2(sparse.blue() > 150 && sparse.red() < 140, qPrintable(sparse.name()));

        // New data, a new colour: the cached raster must not show the old ones.
        data.appendStep(1, stepOf(4000, {{"reward_mean", 0.2}}));
        data.setColour(1, QColor(0, 150, 0));
        QTRY_COMPARE_WITH_TIMEOUT(pixelAt(2000, 0.25), QColor(0, 150, 0), kEventDeadlineMs);
        // Hidden: the run's colour is gone from the plot (the axis may move, so
        // no point lookup; one off the image would read an invalid colour).
        const auto pixelsOf = [&](const QColor& c) {
            const QImage image = chart.grab().toImage();
            const QRect plot = chart.mapFromScene(chart.chart()->plotArea()).boundingRect() & image.rect();
            int n = 0;
            for (int y = plot.top(); y <= plot.bottom(); ++y)
                for (int x = plot.left(); x <= plot.right(); ++x) n += image.pixelColor(x, y) == c;
            return n;
        };
        QVERIFY(pixelsOf(QColor(0, 150, 0)) > 100);
        chart.setRunHidden(1, true);
        chart.redrawNow();
        QCOMPARE(pixelsOf(QColor(0, 150, 0)), 0);

        // The legend names each run by its name (legendLabels).
        const QStringList labels = chart.legend().labels();
        QVERIFY2(labels.contains(QStringLiteral("sparse")), qPrintable(labels.join(", ")));
    }

    // A sweep's runs share their preset and fixed settings, so a legend that
    // cut long names would show "#1 default is_level=tok..." twice: it names
    // each run by what the chart's other runs lack, in rows while they fit,
    // and hover keeps the name whole.
    void legendNamesKeepWhatTellsTheRunsApart() {
        RunDataStore data;
        const QString first = QStringLiteral("default is_level=token is_upper=5.0 old_policy=decoupled");
        const QString second = first + QStringLiteral(" seed=2");
        const QString third = QStringLiteral("default is_level=sequence is_upper=5.0 old_policy=decoupled");
        const QStringList names = {first, second, third};
        for (qint64 run = 1; run <= 3; ++run) {
            data.addRun({run, names[run - 1], QStringLiteral("finished"), QStringLiteral("default"), {}, {}});
            data.appendSteps(run, {stepOf(0, {{"reward_mean", 0.1 * double(run)}}), stepOf(1, {{"reward_mean", 0.2}})});
        }
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(600, 400));
        const LegendItem& legend = chart.legend();
        const QStringList whole = {"is_level=token", "is_level=token seed=2", "is_level=sequence"};
        QCOMPARE(legend.labels(), whole);
        QCOMPARE(legend.rows(), 1);
        // Too narrow for one row (Qt's legend cut each label to "is_l..."):
        // a second row, the labels whole; the plot gives up the height.
        const double plotOfOneRow = chart.chart()->plotArea().height();
        chart.resize(280, 400);
        QTRY_COMPARE_WITH_TIMEOUT(legend.rows(), 2, kEventDeadlineMs);
        QCOMPARE(legend.labels(), whole);
        QCOMPARE(legend.names(), LegendItem::Names::whole);
        QCOMPARE(chart.chart()->plotArea().height(), plotOfOneRow - legend.rowHeight());
        QVERIFY(chart.chart()->plotArea().bottom() < legend.mapToScene(legend.entryRect(0).topLeft()).y());
        chart.resize(600, 400);
        QTRY_COMPARE_WITH_TIMEOUT(legend.rows(), 1, kEventDeadlineMs);
        QCOMPARE(chart.smoothedSeries(2)->name(), QStringLiteral("#2 ") + second);  // as the hover names it
        QVERIFY(legend.toolTipAt(legend.entryRect(1).center()).startsWith(QStringLiteral("#2 ") + second + "\n"));
        // One run alone: nothing to tell apart, its whole name.
        chart.setVisibleRuns({2});
        chart.redrawNow();
        QCOMPARE(legend.labels(), QStringList({second}));
        // Two runs of one name (the same configuration run twice): the ids
        // tell them apart.
        data.addRun({4, first, QStringLiteral("finished"), QStringLiteral("default"), {}, {}});
        data.appendSteps(4, {stepOf(0, {{"reward_mean", 0.5}}), stepOf(1, {{"reward_mean", 0.6}})});
        chart.setVisibleRuns({1, 3, 4});
        chart.redrawNow();
        QCOMPARE(legend.labels(), QStringList({"#1 " + first, "is_level=sequence", "#4 " + first}));
        // Ten runs in 600 x 200 (at most a fifth of the height for the
        // legend): more than its rows hold whole, so equal columns, each
        // label its id, its name's last word (a sweep's seeds differ there)
        // and as much of the rest as the column holds.
        QList<qint64> ten;
        for (qint64 run = 1; run <= 10; ++run) {
            if (run > 4) {
                data.addRun({run,
                             third + QStringLiteral(" seed=%1").arg(run),
                             QStringLiteral("finished"),
                             QStringLiteral("default"),
                             {},
                             {}});
                data.appendSteps(run, {stepOf(0, {{"reward_mean", 0.5}}), stepOf(1, {{"reward_mean", 0.6}})});
            }
            ten << run;
        }
        chart.setVisibleRuns(ten);
        chart.resize(600, 200);
        chart.redrawNow();
        QCOMPARE(legend.names(), LegendItem::Names::idsFirst);
        if (const QByteArray shots = qgetenv("MLK_SCREENSHOT_DIR"); !shots.isEmpty())
            chart.grab().save(QString::fromLocal8Bit(shots) + QStringLiteral("/legend_of_ten_runs.png"));
        QVERIFY(legend.rows() * legend.rowHeight() <= 200 / 5);
        const QStringList labels = legend.labels();
        QCOMPARE(labels.size(), qsizetype(10));
        for (int i = 0; i < 10; ++i) {
            const QString id = QStringLiteral("#%1 ").arg(i + 1);
            QVERIFY2(labels[i].startsWith(id) && labels[i].size() >= id.size() + 5, qPrintable(labels[i]));
            if (i >= 4 && i < 9)
                QVERIFY2(labels[i].endsWith(QStringLiteral(" seed=%1").arg(i + 1)), qPrintable(labels[i]));
        }
        // A click on an entry toggles its run, as on the run list's box.
        QSignalSpy toggled(&chart, &MetricChart::runLegendClicked);
        const QPoint seventh = chart.mapFromScene(legend.mapToScene(legend.entryRect(6).center()));
        QTest::mouseClick(chart.viewport(), Qt::LeftButton, {}, seventh);
        QCOMPARE(toggled.size(), 1);
        QCOMPARE(toggled.front().front().toLongLong(), qint64(7));
        // No runs: no legend, and the plot takes its height back.
        const double withLegend = chart.chart()->plotArea().height();
        chart.setVisibleRuns({});
        chart.redrawNow();
        QCOMPARE(legend.rows(), 0);
        QVERIFY(legend.labels().isEmpty());
        // (the ten runs' two rows and the gap above them)
        QCOMPARE(chart.chart()->plotArea().height(), withLegend + 2 * legend.rowHeight() + 2);
    }

    // The mouse on a legend entry brings its line forward and fades the
    // others (the palette has eight colours: run 9 looks like run 1).
    void hoveringALegendEntryFadesTheOtherLines() {
        RunDataStore data;
        feed(data, 1, "reward_mean", std::vector<double>(50, 0.2));
        feed(data, 2, "reward_mean", std::vector<double>(50, 0.8));
        data.setColour(1, QColor(200, 0, 0));
        data.setColour(2, QColor(0, 0, 200));
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        chart.setSmoothing(0);
        showAndSettle(chart, QSize(600, 400));
        chart.redrawNow();
        const auto lineColour = [&](double value) {
            return inkNear(chart.grab().toImage(), chart.mapFromScene(chart.toScene(25, value)));
        };
        const QColor red = lineColour(0.2), blue = lineColour(0.8);
        QVERIFY2(red.red() > 150 && blue.blue() > 150, qPrintable(red.name() + " " + blue.name()));
        const auto lightness = [](const QColor& c) { return c.red() + c.green() + c.blue(); };
        const LegendItem& legend = chart.legend();
        // (From elsewhere first: a move to where the cursor already is moves nothing.)
        QTest::mouseMove(chart.viewport(), QPoint(1, 1));
        QTest::mouseMove(chart.viewport(), chart.mapFromScene(legend.mapToScene(legend.entryRect(0).center())));
        // Run 2's line three quarters of the way to white, still blue; run 1's as it was.
        QTRY_VERIFY_WITH_TIMEOUT(lightness(lineColour(0.8)) > lightness(blue) + 300, kEventDeadlineMs);
        QVERIFY(lineColour(0.8).blue() > lineColour(0.8).red() + 30);
        QCOMPARE(lineColour(0.2), red);
        // Off the legend: every line as it was.
        QTest::mouseMove(chart.viewport(), chart.mapFromScene(chart.toScene(10, 0.5)));
        QTRY_COMPARE_WITH_TIMEOUT(lineColour(0.8), blue, kEventDeadlineMs);
        // A run this chart does not draw (the run list hovers any run) fades nothing.
        chart.setEmphasis(3);
        QCOMPARE(lineColour(0.8), blue);
        QCOMPARE(lineColour(0.2), red);
        chart.setEmphasis(0);
        QTest::mouseMove(chart.viewport(), chart.mapFromScene(legend.mapToScene(legend.entryRect(1).center())));
        QTRY_VERIFY_WITH_TIMEOUT(lightness(lineColour(0.2)) > lightness(red) + 300, kEventDeadlineMs);
        QCOMPARE(lineColour(0.8), blue);
    }

    // Where even the ids do not fit the rows, the last cell counts the rest,
    // and its tooltip names them; a seed group's entry is one, for the group.
    void aLegendOfManyRunsCountsWhatItCannotShow() {
        RunDataStore data;
        for (qint64 run = 1; run <= 60; ++run) feed(data, run, "reward_mean", {0.1, 0.2});
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        showAndSettle(chart, QSize(300, 200));
        const LegendItem& legend = chart.legend();
        QCOMPARE(legend.names(), LegendItem::Names::idsOnly);
        if (const QByteArray shots = qgetenv("MLK_SCREENSHOT_DIR"); !shots.isEmpty())
            chart.grab().save(QString::fromLocal8Bit(shots) + QStringLiteral("/legend_of_sixty_runs.png"));
        const QStringList labels = legend.labels();
        QVERIFY2(labels.size() < 60, qPrintable(labels.join(", ")));
        QCOMPARE(labels.front(), QStringLiteral("#1"));
        const int shown = int(labels.size()) - 1;
        QCOMPARE(labels.back(), QStringLiteral("+%1 more").arg(60 - shown));
        QCOMPARE(labels[shown - 1], QStringLiteral("#%1").arg(shown));
        QVERIFY(legend.rows() * legend.rowHeight() <= 200 / 5);
        const QString more = legend.toolTipAt(legend.entryRect(LegendItem::kMore).center());
        QVERIFY2(more.startsWith(QStringLiteral("#%1 run-%1\n#%2 run-%2").arg(shown + 1).arg(shown + 2)),
                 qPrintable(more));
        // A click on it toggles nothing.
        QSignalSpy toggled(&chart, &MetricChart::runLegendClicked);
        QTest::mouseClick(chart.viewport(), Qt::LeftButton, {},
                          chart.mapFromScene(legend.mapToScene(legend.entryRect(LegendItem::kMore).center())));
        QCOMPARE(toggled.size(), 0);
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
        const QColor band = image.pixelColor(chart.mapFromScene(chart.toScene(25, 0.27)));
        // The mean line over the band: at least half its colour.
        const QColor mean = inkNear(image, chart.mapFromScene(chart.toScene(25, 0.2 + 0.025)));
        QVERIFY2(colourDistance(mean, palette::runColour(1)) < colourDistance(band, palette::runColour(1)) * 0.6,
                 qPrintable(mean.name() + " over " + band.name()));
        QVERIFY2(band != Qt::white && band != palette::runColour(1) && band.blue() > band.red(),
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
        // Held in a local: a range-for over a member of the temporary list
        // would read it after it is destroyed (ASan: heap-use-after-free).
        const QList<MetricChart::SeedBandView> bands = chart.seedBands();
        QCOMPARE(bands.size(), qsizetype(1));
        for (const QPointF& p : bands.front().mean) QCOMPARE(p.y(), kDefaultLogFloor);
        QVERIFY(chart.shownYRange().lo < kDefaultLogFloor && chart.shownYRange().hi > kDefaultLogFloor);
        QVERIFY2(chart.noteText().contains(QStringLiteral("values <= 0")), qPrintable(chart.noteText()));
    }

    // A log-scale seed band never reaches below the floor: smoothed seeds
    // decaying towards 0 (tiny positive values, below the floor of the raw
    // data) stay at or above the floor, inside the axis.
    void seedBandNeverGoesBelowTheLogFloor() {
        RunDataStore data;
        for (qint64 run = 1; run <= 3; ++run) {
            data.addRun({run,
                         QStringLiteral("seed %1").arg(run),
                         QStringLiteral("finished"),
                         QString(),
                         {},
                         QStringLiteral("same")});
            std::vector<StepRecord> records;
            for (int s = 0; s < 60; ++s)
                records.push_back(stepOf(s, {{"F@2", s < 5 ? 1e-3 * run : (s % 7 == 0 ? 2e-4 : 0.0)}}));
            data.appendSteps(run, records);
        }
        MetricChart chart(&data, QStringLiteral("F@2"));
        chart.setGroupSeeds(true);
        chart.setSmoothing(0.9);
        showAndSettle(chart, QSize(700, 400));
        chart.setLogScale(true);
        chart.redrawNow();
        const QList<MetricChart::SeedBandView> bands = chart.seedBands();
        QCOMPARE(bands.size(), qsizetype(1));
        const YRange y = chart.shownYRange();
        for (const QList<QPointF>* line : {&bands.front().lo, &bands.front().mean, &bands.front().hi})
            for (const QPointF& p : *line) {
                QVERIFY2(p.y() >= chart.logFloor(),
                         qPrintable(QString("%1 below the floor %2").arg(p.y()).arg(chart.logFloor())));
                QVERIFY(p.y() >= y.lo && p.y() <= y.hi);
            }
    }

    // A spike and the tokens behind it: the right-clicked run's step opens in
    // the drill-down (through the grid, which the window listens to); away
    // from every point, and on a seed group's mean, there is no such item.
    void rightClickingAPointOffersItsStepInTheDrillDown() {
        RunDataStore data;
        feed(data, 3, "reward_mean", {0.1, 0.5, 0.2, 0.9, 0.4, 0.6});
        feed(data, 4, "reward_mean", {0.3, 0.3, 0.3, 0.3, 0.3, 0.3});
        ChartGrid grid(&data);
        grid.resize(900, 700);
        grid.show();
        QVERIFY(QTest::qWaitForWindowExposed(&grid));
        MetricChart* chart = grid.chartFor(QStringLiteral("reward_mean"));
        QVERIFY(chart);
        chart->redrawNow();
        const QPoint spike = chart->mapFromScene(chart->toScene(3, 0.9));
        const std::vector<RunStep> at = chart->runStepsAt(spike);
        QCOMPARE(at.size(), size_t(1));
        QCOMPARE(at.front().runId, qint64(3));
        QCOMPARE(at.front().step, qint64(3));
        QVERIFY(chart->hoverTextAt(spike).contains(QStringLiteral("right-click to drill down")));
        QVERIFY(chart->runStepsAt(QPoint(1, 1)).empty());
        std::unique_ptr<QMenu> menu(chart->createContextMenu(nullptr, at));
        QAction* drill = menu->actions().front();
        QVERIFY2(drill->text().startsWith(QStringLiteral("Drill down: #3")) &&
                     drill->text().endsWith(QStringLiteral("step 3")),
                 qPrintable(drill->text()));
        QSignalSpy opened(&grid, &ChartGrid::drillDownRequested);
        drill->trigger();
        QCOMPARE(opened.count(), 1);
        QCOMPARE(opened.first().at(0).toLongLong(), 3LL);
        QCOMPARE(opened.first().at(1).toLongLong(), 3LL);
        std::unique_ptr<QMenu> plain(chart->createContextMenu(nullptr));
        QCOMPARE(plain->actions().front()->text(), QStringLiteral("Log scale"));
        // Two seeds grouped: the mean line is no one run's step, so a submenu
        // picks one of the runs it averages there.
        RunDataStore seeds;
        for (qint64 run : {5, 6}) {
            seeds.addRun({run, QStringLiteral("seed"), QStringLiteral("finished"), QString(), {}, QStringLiteral("g")});
            std::vector<StepRecord> records;
            for (int i = 0; i < 6; ++i) records.push_back(stepOf(i, {{"reward_mean", run == 5 ? 0.9 : 0.3}}));
            seeds.appendSteps(run, records);
        }
        MetricChart grouped(&seeds, QStringLiteral("reward_mean"));
        grouped.setGroupSeeds(true);
        showAndSettle(grouped, QSize(700, 400));
        grouped.redrawNow();
        QCOMPARE(grouped.seedBands().size(), qsizetype(1));
        const QPoint mean = grouped.mapFromScene(grouped.toScene(3, 0.6));
        QVERIFY(grouped.hoverTextAt(mean).contains(QStringLiteral("mean of 2 runs")));
        const std::vector<RunStep> seeds2 = grouped.runStepsAt(mean);
        QCOMPARE(seeds2.size(), size_t(2));
        QCOMPARE(seeds2[0].runId, qint64(5));
        QCOMPARE(seeds2[1].runId, qint64(6));
        QCOMPARE(seeds2[1].step, qint64(3));
        std::unique_ptr<QMenu> groupMenu(grouped.createContextMenu(nullptr, seeds2));
        QMenu* pick = groupMenu->actions().front()->menu();
        QVERIFY(pick);
        QCOMPARE(groupMenu->actions().front()->text(), QStringLiteral("Drill down at step 3"));
        QCOMPARE(pick->actions().size(), qsizetype(2));
        QCOMPARE(pick->actions()[1]->text(), QStringLiteral("#6 seed"));
        QSignalSpy picked(&grouped, &MetricChart::drillDownRequested);
        pick->actions()[1]->trigger();
        QCOMPARE(picked.count(), 1);
        QCOMPARE(picked.first().at(0).toLongLong(), 6LL);
        QCOMPARE(picked.first().at(1).toLongLong(), 3LL);
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
};

QTEST_MAIN(ChartsTest)
#include "charts_test.moc"
