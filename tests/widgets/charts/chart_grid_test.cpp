// ChartGrid: the catalogue's key charts on its default axes, add and remove,
// the shared x range, shown and hidden runs, and what the grid looks like
// (the runs' colours where their lines are). MLK_SCREENSHOT_DIR=<dir> also
// saves <dir>/charts_grid.png and charts_grid_seeds.png (1200 x 800).
#include <QFile>
#include <QHBoxLayout>
#include <QSlider>
#include <QCheckBox>
#include <QComboBox>
#include <QPushButton>
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
#include <set>
#include <thread>

#include <sqlite3.h>

#include "core/store/store.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/charts/metric_chart.h"
#include "widgets/data/run_data.h"
#include "widgets/data/run_database.h"
#include "widgets/data/palette.h"
#include "widgets/data/series_math.h"
#include "tests/widgets/charts/chart_test_util.h"
#include "widgets/charts/axis_rules.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;
using namespace mlk::test;

class ChartGridTest : public QObject {
    Q_OBJECT

private slots:
    // --- ChartGrid -----------------------------------------------------------

    // A new database's empty charts say why they are empty, and stop once a
    // run is there.
    void gridSaysWhenThereIsNoRun() {
        RunDataStore data;
        ChartGrid grid(&data);
        QVERIFY(grid.emptyHint()->isVisibleTo(&grid));
        QVERIFY(grid.emptyHint()->text().contains(QStringLiteral("No runs")));
        grid.setEmptyHint(QStringLiteral("Start a run"));
        QCOMPARE(grid.emptyHint()->text(), QStringLiteral("Start a run"));
        feed(data, 1, "reward_mean", {0.1, 0.2});
        QVERIFY(!grid.emptyHint()->isVisibleTo(&grid));
        RunDatabase other;  // another database, none open: every run read is dropped
        data.setDatabase(&other);
        QVERIFY(grid.emptyHint()->isVisibleTo(&grid));
        data.setDatabase(nullptr);
    }

    // Beside the probe and lessons docks on a laptop the charts area is
    // narrow: the toolbar wraps between its groups (each whole, none cut at
    // the right), the charts go to one column; wide, one toolbar row, two
    // columns, the display settings at the right.
    void narrowGridWrapsItsToolbarAndGoesToOneColumn() {
        RunDataStore data;
        ChartGrid grid(&data);
        grid.resize(1000, 600);
        grid.show();
        QVERIFY(QTest::qWaitForWindowExposed(&grid));
        QList<QWidget*> tools;
        for (QWidget* w : grid.findChildren<QWidget*>())
            if ((qobject_cast<QPushButton*>(w) || qobject_cast<QComboBox*>(w) || qobject_cast<QCheckBox*>(w) ||
                 qobject_cast<QSlider*>(w)) &&
                !qobject_cast<MetricChart*>(w->parentWidget()))
                tools << w;
        QVERIFY(tools.size() >= 6);
        const auto top = [&](QWidget* w) { return w->mapTo(&grid, QPoint(0, 0)).y(); };
        const auto right = [&](QWidget* w) { return w->mapTo(&grid, QPoint(w->width(), 0)).x(); };
        QTRY_COMPARE_WITH_TIMEOUT(grid.columns(), 2, kEventDeadlineMs);
        const int rowTop = top(tools.front());
        for (QWidget* w : tools) QVERIFY2(std::abs(top(w) - rowTop) < w->height(), qPrintable(w->objectName()));
        QVERIFY(right(grid.findChildren<QSlider*>().front()) > 800);  // at the right

        grid.resize(330, 600);
        QTRY_COMPARE_WITH_TIMEOUT(grid.columns(), 1, kEventDeadlineMs);
        std::set<int> rowTops;
        for (QWidget* w : tools) {
            QVERIFY2(right(w) <= grid.width(), qPrintable(QString::number(right(w))));
            // The flow's item: a group of widgets, or the widget itself.
            QWidget* item = qobject_cast<QHBoxLayout*>(w->parentWidget()->layout()) ? w->parentWidget() : w;
            rowTops.insert(top(item));
        }
        QVERIFY2(rowTops.size() >= 3, qPrintable(QString::number(rowTops.size())));
        for (MetricChart* chart : grid.charts())
            QTRY_VERIFY2(right(chart) <= grid.width(), qPrintable(QString::number(right(chart))));
    }

    void gridDefaultsAddAndRemove() {
        RunDataStore data;
        feed(data, 1, "entropy", {1, 2, 3});
        ChartGrid grid(&data);
        QCOMPARE(grid.charts().size(), qsizetype(4));
        for (const QString& m : ChartGrid::defaultMetrics()) QVERIFY(grid.chartFor(m));
        // The catalogue's key charts, on its default axes, under its titles.
        QCOMPARE(ChartGrid::defaultMetrics(), (QStringList{QStringLiteral("reward_mean"), QStringLiteral("k3_kl"),
                                                           QStringLiteral("F@2"), QStringLiteral("grad_norm")}));
        QVERIFY(grid.chartFor(QStringLiteral("k3_kl"))->logScale());
        QVERIFY(grid.chartFor(QStringLiteral("F@2"))->logScale());  // log in the report too
        QVERIFY(!grid.chartFor(QStringLiteral("reward_mean"))->logScale());
        QCOMPARE(grid.chartFor(QStringLiteral("reward_mean"))->title(), QStringLiteral("Reward (batch mean)"));
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
        data.addRun({1, QStringLiteral("a"), QStringLiteral("finished"), QString(), {}, {}});
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
        QTRY_COMPARE_WITH_TIMEOUT(grid.chartFor(QStringLiteral("F@2"))->shownXRange(), *zoomed, kEventDeadlineMs);

        // Double-click resets all.
        QTest::mouseDClick(grid.chartFor(QStringLiteral("grad_norm"))->viewport(), Qt::LeftButton, {}, plot.center());
        for (MetricChart* c : grid.charts()) QVERIFY(!c->zoomedXRange());
        QTRY_VERIFY_WITH_TIMEOUT(covers(reward->shownXRange(), 0, 199), kEventDeadlineMs);
    }

    void gridShowsChosenRunsAndHidesOnLegendClick() {
        RunDataStore data;
        for (qint64 run : {1, 2, 3}) feed(data, run, "reward_mean", {0.1 * run, 0.2 * run});
        ChartGrid grid(&data);
        showAndSettle(grid, QSize(900, 600));
        MetricChart* reward = grid.chartFor(QStringLiteral("reward_mean"));
        reward->redrawNow();
        QCOMPARE(reward->plottedRuns(), (QList<qint64>{1, 2, 3}));
        QCOMPARE(reward->rawSeries(1)->color().rgb(), palette::runColour(1).rgb());
        grid.setVisibleRuns({1, 3});
        reward->redrawNow();
        QCOMPARE(reward->plottedRuns(), (QList<qint64>{1, 3}));
        emit reward->runLegendClicked(3);
        QVERIFY(!reward->smoothedSeries(3)->isVisible());
        QVERIFY(grid.chartFor(QStringLiteral("k3_kl"))->isRunHidden(3));
        grid.showAllRuns();
        reward->redrawNow();
        QCOMPARE(reward->plottedRuns().size(), qsizetype(3));
        // The mouse on run 2's entry in one chart's legend (charts_test
        // moves it there): run 2 stands out in every chart.
        emit reward->legendHovered(2, {});
        for (MetricChart* chart : grid.charts()) QCOMPARE(chart->emphasisedRun(), qint64(2));
        emit reward->legendHovered(0, {});
        for (MetricChart* chart : grid.charts()) QCOMPARE(chart->emphasisedRun(), qint64(0));
    }

    // Not a check: the picture for a human (and the report).
    // What the user sees: each run's line in its colour where it has data,
    // nowhere else, and a hidden run's colour gone from the plot.
    void linesArePaintedInTheirRunsColours() {
        RunDataStore data;
        feed(data, 1, "reward_mean", std::vector<double>(1000, 1.0));  // steps 0..999
        feed(data, 2, "reward_mean", std::vector<double>(500, 3.0));   // steps 0..499
        MetricChart chart(&data, QStringLiteral("reward_mean"));
        chart.setSmoothing(0);  // one line per run, in the run's full colour
        showAndSettle(chart, QSize(700, 420));
        chart.redrawNow();
        const QColor a = data.colour(1), b = data.colour(2);
        QVERIFY(a != b);
        const auto column = [&](double step, double value) {
            const QPoint at = chart.mapFromScene(chart.toScene(step, value));
            return QRect(at.x() - 3, at.y() - 4, 7, 9);
        };
        QImage image = viewImage(chart);
        const QRect plot = plotInImage(chart);
        QVERIFY(pixelsOf(image, a, column(250, 1.0)) > 0);
        QVERIFY(pixelsOf(image, a, column(800, 1.0)) > 0);
        QVERIFY(pixelsOf(image, b, column(250, 3.0)) > 0);
        // Run 2 ends at step 499: none of its colour in the plot's right third.
        const QPoint end = chart.mapFromScene(chart.toScene(560, 3.0));
        QCOMPARE(pixelsOf(image, b, QRect(QPoint(end.x(), plot.top()), plot.bottomRight())), 0);

        chart.setRunHidden(2, true);
        chart.redrawNow();
        image = viewImage(chart);
        QCOMPARE(pixelsOf(image, b, plotInImage(chart)), 0);
        QVERIFY(pixelsOf(image, a, plotInImage(chart)) > 0);
    }

    void screenshot() {
        const QByteArray dir = qgetenv("MLK_SCREENSHOT_DIR");
        RunDataStore data;
        std::mt19937 rng(3);
        std::normal_distribution<double> noise;
        const char* names[] = {"baseline (bf16 rollout)", "batch-invariant + fp32", "R3 + TIS"};
        for (qint64 run = 1; run <= 3; ++run) {
            data.addRun({run,
                         QString::fromLatin1(names[run - 1]),
                         QStringLiteral("finished"),
                         QStringLiteral("tiny-moe"),
                         {},
                         {}});
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
        for (MetricChart* chart : grid.charts()) {
            const QImage image = viewImage(*chart);
            for (qint64 run = 1; run <= 3; ++run)
                QVERIFY2(pixelsOf(image, data.colour(run), plotInImage(*chart)) > 0,
                         qPrintable(chart->metric() + QStringLiteral(": run %1").arg(run)));
        }
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
        if (dir.isEmpty()) return;
        const QPixmap shot = widget.grab();
        if (!dir.isEmpty()) QVERIFY(shot.save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name)));
    }
};

QTEST_MAIN(ChartGridTest)
#include "chart_grid_test.moc"
