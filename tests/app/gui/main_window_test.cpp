// The workbench as a user drives it: Ctrl+R with the default preset puts
// steps in the database, the charts follow, pause/step/stop behave (a paused
// run reads "paused" everywhere), a malformed database is refused without
// harm and every panel reads the one database the window opened. Screenshots go to
// $MLK_SCREENSHOT_DIR when it is set.
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QProgressBar>
#include <QStatusBar>
#include <QHeaderView>
#include <QMenu>
#include <QMenuBar>
#include <QDockWidget>
#include <QLineSeries>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTextBrowser>
#include <QTableWidget>
#include <QXYSeries>

#include <QThread>

#include <memory>
#include <mutex>
#include <thread>

#include "app/gui/main_window.h"
#include "tests/app/gui/window_test_env.h"
#include "app/gui/run_worker.h"
#include "core/store/store.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/panels/config_form.h"
#include "widgets/panels/lessons_panel.h"
#include "widgets/panels/drilldown.h"
#include "widgets/charts/metric_chart.h"
#include "widgets/panels/run_browser.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_data.h"
#include "widgets/data/run_database.h"
#include "tests/screenshot.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

class MainWindowTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    void shot(QWidget* w, const QString& name) { testing_shots::save(w, name); }
    // Small and quick, but a real run of the default configuration.
    void makeQuick(MainWindow& w, int steps) {
        Config c = w.configForm()->config();
        c.rl.prompts_per_step = 8;
        c.rl.samples_per_prompt = 4;
        c.rl.steps = steps;
        w.configForm()->setConfig(c);
    }

    // A window in the first start's layout (not the one an earlier test's
    // window left), `size` and shown.
    static std::unique_ptr<MainWindow> freshWindow(const QTemporaryDir& d, const char* name, QSize size) {
        QSettings s;
        s.remove("windowState");
        s.remove("geometry");
        s.remove("view/presentation");
        auto w = std::make_unique<MainWindow>(d.path() + "/" + name + ".sqlite");
        w->resize(size);
        w->show();
        return w;
    }

private slots:
    void initTestCase() {
        window_test::enter("Mismatch Lab Test");
        // Test mode points the data folder at a scratch location: start empty.
        for (const char* suffix : {"", "-wal", "-shm"}) QFile::remove(MainWindow::defaultDatabasePath() + suffix);
        qputenv("MLK_CACHE_DIR", (dir_.path() + "/cache").toUtf8());
    }

    void cleanupTestCase() { window_test::leave(); }

    void ctrlRPutsStepsInTheDefaultDatabase() {
        MainWindow w;
        QCOMPARE(w.databasePath(), MainWindow::defaultDatabasePath());
        QVERIFY(w.databasePath().endsWith("runs.sqlite"));
        QCOMPARE(w.windowTitle(), QDir::toNativeSeparators(MainWindow::defaultDatabasePath()));
        QCOMPARE(w.progressText(), QString("idle"));  // said, not an empty box
        w.configForm()->setPreset("default");
        makeQuick(w, 6);
        w.show();
        w.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&w));  // shortcuts reach the active window only
        QSignalSpy finished(&w, &MainWindow::runFinished);
        // The window mid-run: taken when step 3 of 6 reaches the GUI thread.
        bool shotDuringRun = false;
        connect(w.worker(), &RunWorker::stepCompleted, &w, [&](qint64, int step, int, double) {
            if (step != 2 || shotDuringRun) return;
            shotDuringRun = true;
            QVERIFY(w.isBusy());
            w.charts()->redrawAllNow();
            shot(&w, "main_window_during_run");
        });
        QTest::keyClick(&w, Qt::Key_R, Qt::ControlModifier);
        // The first run of the suite includes the base policy's warm-up
        // (~75 s alone on two cores; twice that beside another suite under
        // ctest --parallel): the wait bounds a hang, it times nothing.
        QVERIFY(finished.wait(400000));
        QVERIFY(shotDuringRun);
        QCOMPARE(finished.first().at(1).toString(), QString("finished"));
        const qint64 id = finished.first().at(0).toLongLong();
        Store store = Store::open(w.databasePath().toStdString());
        QCOMPARE((int)store.steps(id).size(), 6);
        // The charts got the steps through the data layer.
        QTRY_VERIFY_WITH_TIMEOUT(w.data()->series(id, "reward_mean").size() == 6, kEventDeadlineMs);
        MetricChart* reward = w.charts()->chartFor("reward_mean");
        QVERIFY(reward);
        // ...and drew them (a coalesced redraw follows the last step).
        QTRY_VERIFY_WITH_TIMEOUT(reward->rawSeries(id) && reward->rawSeries(id)->count() == 6, kEventDeadlineMs);
        w.runBrowser()->refresh();
        QVERIFY(w.runBrowser()->runIds().contains(id));
        shot(&w, "main_window_after_run");
    }

    void comparisonAndDrillDownViews() {
        QTemporaryDir d;
        MainWindow w(d.path() + "/compare.sqlite");
        w.show();
        QSignalSpy finished(&w, &MainWindow::runFinished);
        w.configForm()->setPreset("r3-tis");
        makeQuick(w, 12);
        w.enqueueRun();
        w.configForm()->setPreset("r3-tis-r3");
        makeQuick(w, 12);
        w.startRun();
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 2, 180000);
        w.runBrowser()->refresh();
        const QList<int64_t> ids = w.runBrowser()->runIds();
        QCOMPARE(ids.size(), 2);
        w.runBrowser()->selectRuns(ids);
        // Both runs are overlaid in every chart.
        MetricChart* k3 = w.charts()->chartFor("k3_kl");
        QVERIFY(k3);
        QTRY_COMPARE_WITH_TIMEOUT(k3->plottedRuns().size(), 2, kEventDeadlineMs);
        w.charts()->redrawAllNow();
        shot(&w, "comparison");
        // The same runs by wall time: each from its own first step.
        w.charts()->setXAxis(MetricChart::XAxis::wallTime);
        w.charts()->redrawAllNow();
        QCOMPARE(k3->plottedRuns().size(), 2);
        QVERIFY(k3->shownXRange().lo == 0 && k3->shownXRange().hi > 0);
        shot(&w, "comparison_walltime");
        w.charts()->setXAxis(MetricChart::XAxis::step);
        // The mouse on a run's row brings its line forward in every chart.
        emit w.runBrowser()->runHovered(ids.back());
        for (MetricChart* chart : w.charts()->charts()) QCOMPARE(chart->emphasisedRun(), qint64(ids.back()));
        emit w.runBrowser()->runHovered(0);
        for (MetricChart* chart : w.charts()->charts()) QCOMPARE(chart->emphasisedRun(), qint64(0));
        // A chart's "Drill down" brings the drill-down forward at that run and step.
        auto* centre = qobject_cast<QTabWidget*>(w.centralWidget());
        QVERIFY(centre);
        w.showDrillDown(ids.back());
        const std::vector<int64_t> stored = w.drillDown()->availableSteps();  // steps with tokens stored
        QVERIFY(stored.size() >= 2);
        QCOMPARE(centre->currentWidget(), static_cast<QWidget*>(w.charts()));
        emit w.charts()->drillDownRequested(ids.back(), stored[1]);
        QCOMPARE(centre->currentWidget(), static_cast<QWidget*>(w.drillDown()));
        QCOMPARE(w.drillDown()->runId(), (int64_t)ids.back());
        QCOMPARE(w.drillDown()->step(), stored[1]);
        w.showDrillDown(ids.front());
        centre->setCurrentWidget(w.drillDown());
        QCOMPARE(w.drillDown()->runId(), (int64_t)ids.front());
        QVERIFY(w.drillDown()->scatterPointCount() > 0);
        QVERIFY(!w.drillDown()->routerEmpty());
        for (int t = 0; t < w.drillDown()->tabs()->count(); ++t) {
            w.drillDown()->tabs()->setCurrentIndex(t);
            QTest::qWait(50);  // let the newly shown chart lay out before grabbing
            shot(&w, QString("drilldown_%1").arg(t));
        }
    }

    // Adding charts scrolls the chart area instead of growing the window; a
    // closed dock comes back from the View menu.
    void layoutFitsAndDocksComeBack() {
        QTemporaryDir d;
        MainWindow w(d.path() + "/layout.sqlite");
        w.resize(1200, 800);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QSize before = w.size();
        for (const char* m : {"entropy", "ess", "chi2_token", "response_length", "kl", "policy_loss"})
            w.charts()->addChart(QString::fromLatin1(m));
        QTest::qWait(100);
        QCOMPARE(w.size(), before);
        auto* runsDock = w.findChild<QDockWidget*>("runsDock");
        QVERIFY(runsDock && runsDock->isVisible());
        runsDock->close();
        QTRY_VERIFY_WITH_TIMEOUT(!runsDock->isVisible(), kEventDeadlineMs);
        QAction* bringBack = nullptr;
        for (QAction* menu : w.menuBar()->actions())
            if (menu->text() == "&View")
                for (QAction* a : menu->menu()->actions())
                    if (a->text() == "Runs") bringBack = a;
        QVERIFY2(bringBack, "View > Runs");
        bringBack->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(runsDock->isVisible(), kEventDeadlineMs);
        // A long status message stops short of the database label.
        const QString longMessage =
            QString("Run failed: run store %1: disk I/O error ").arg(w.databasePath()).repeated(4);
        w.showStatus(longMessage);
        const QString shown = w.statusBar()->currentMessage();
        QVERIFY(shown.endsWith(QChar(0x2026)));
        QVERIFY(w.statusBar()->fontMetrics().horizontalAdvance(shown) <
                w.statusBar()->width() - w.findChild<QProgressBar*>()->width());
        QCOMPARE(w.statusBar()->toolTip(), longMessage);
        // The run table shows several rows by default, not two or three.
        QVERIFY2(
            w.runBrowser()->table()->height() >= 6 * w.runBrowser()->table()->verticalHeader()->defaultSectionSize(),
            qPrintable(QString::number(w.runBrowser()->table()->height())));
        // Every dock a lesson opens beside the charts still fits a laptop's
        // 1366-pixel screen, window frame included: the charts' toolbar wraps
        // and the charts go to one column, each still whole.
        w.probeDock()->show();
        w.lessonsDock()->show();
        QTRY_VERIFY_WITH_TIMEOUT(w.lessonsDock()->isVisible(), kEventDeadlineMs);
        w.resize(w.minimumSizeHint().width(), 800);
        QTRY_COMPARE_WITH_TIMEOUT(w.charts()->columns(), 1, kEventDeadlineMs);
        // Nothing is cut at the right: an area without a horizontal scroll
        // bar (the form's, the charts') is as wide as what it holds needs.
        for (QScrollArea* area : w.findChildren<QScrollArea*>())
            if (area->isVisible() && area->horizontalScrollBarPolicy() == Qt::ScrollBarAlwaysOff)
                QVERIFY2(area->viewport()->width() >= area->widget()->minimumSizeHint().width(),
                         area->parentWidget()->metaObject()->className());
        for (MetricChart* chart : w.charts()->charts()) {
            QVERIFY(chart->width() >= MetricChart::kMinimumWidth);
            const QPoint right = chart->mapTo(w.charts(), QPoint(chart->width(), 0));
            QVERIFY2(right.x() <= w.charts()->width(), qPrintable(chart->metric()));
        }
        w.lessonsDock()->close();
        w.probeDock()->close();
        w.resize(1600, 800);
        QTRY_COMPARE_WITH_TIMEOUT(w.charts()->columns(), 2, kEventDeadlineMs);
    }

    // A laptop at 150 % scaling gives the window 1280 x 720 points: the
    // form's settings scroll, and only they (not the whole form as well).
    void aShortWindowScrollsTheFormsSettingsOnly() {
        QTemporaryDir d;
        const auto w = freshWindow(d, "short", {1280, 720});
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        auto* dockArea = qobject_cast<QScrollArea*>(w->findChild<QDockWidget*>("configurationDock")->widget());
        QVERIFY(dockArea);
        QScrollArea* settings = nullptr;
        for (QScrollArea* area : dockArea->widget()->findChildren<QScrollArea*>())
            if (area != dockArea) settings = area;
        QVERIFY(settings);
        // The settings get the height the header leaves: three rows or more.
        const int row = w->configForm()->findChild<QComboBox*>("presetCombo")->height();
        QTRY_VERIFY2(
            settings->height() >= 3 * row,
            qPrintable(QString("settings %1 px of %2").arg(settings->height()).arg(dockArea->viewport()->height())));
        QTRY_VERIFY_WITH_TIMEOUT(settings->verticalScrollBar()->isVisible(), kEventDeadlineMs);
        QVERIFY2(!dockArea->verticalScrollBar()->isVisible(), qPrintable(QString("form %1 px high in a %2 px area")
                                                                             .arg(dockArea->widget()->height())
                                                                             .arg(dockArea->viewport()->height())));
        // The run list shows three rows or more above the config diff, which
        // gives way to one row (its own scroll area's minimum kept two runs).
        QTableWidget* runs = w->runBrowser()->table();
        QVERIFY2(
            runs->height() >= 3 * runs->verticalHeader()->defaultSectionSize() + runs->horizontalHeader()->height(),
            qPrintable(QString("%1 px").arg(runs->height())));
    }

    // The same laptop with the lessons open: the window keeps to the screen,
    // and the lesson's text runs down beside the charts and the run list (in
    // three lines above a run list as wide as the window it would grow the
    // window to 751 points).
    void aLaptopKeepsTheLessonsTextTall() {
        QTemporaryDir d;
        const auto w = freshWindow(d, "lessons", {1280, 720});
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->lessonsDock()->show();
        QTRY_VERIFY_WITH_TIMEOUT(w->lessonsDock()->isVisible(), kEventDeadlineMs);
        QTest::qWait(50);
        QVERIFY2(w->width() <= 1280 && w->height() <= 720,
                 qPrintable(QString("%1 x %2").arg(w->width()).arg(w->height())));
        auto* page = w->lessonsDock()->findChild<QTextBrowser*>();
        QVERIFY(page);
        QVERIFY2(page->height() >= w->height() / 2, qPrintable(QString("%1 px").arg(page->height())));
        QVERIFY(w->lessonsDock()->width() <= LessonsPanel::kPreferredWidth + 20);  // the charts keep the rest
    }

    // A classroom projector: 1024 x 768 in presentation mode (larger text),
    // every dock of the default layout open. The window's minimum stays on
    // the screen (the drill-down's chart minimums held it at 798 points, the
    // status bar and its progress off the bottom).
    void aProjectorFitsPresentationMode() {
        QTemporaryDir d;
        const auto w = freshWindow(d, "projector", {1024, 768});
        QVERIFY(QTest::qWaitForWindowExposed(w.get()));
        w->setPresentationMode(true);
        QVERIFY(w->presentationMode());
        const QSize minimum = w->minimumSizeHint();
        QVERIFY2(minimum.width() <= 1024 && minimum.height() <= 768,
                 qPrintable(QString("%1 x %2").arg(minimum.width()).arg(minimum.height())));
        QTRY_VERIFY_WITH_TIMEOUT(w->height() <= 768, kEventDeadlineMs);
        w->setPresentationMode(false);
    }

    void pauseSingleStepAndStop() {
        QTemporaryDir d;
        MainWindow w(d.path() + "/control.sqlite");
        makeQuick(w, 400);
        w.show();
        QSignalSpy finished(&w, &MainWindow::runFinished);
        w.startRun();
        QTRY_VERIFY_WITH_TIMEOUT(w.isBusy(), 60000);
        QTRY_VERIFY_WITH_TIMEOUT(
            !w.data()->runIds().isEmpty() && w.data()->series(w.data()->runIds().last(), "reward_mean").size() >= 2,
            60000);
        const qint64 id = w.data()->runIds().last();
        Store reader = Store::open(w.databasePath().toStdString());
        const auto stored = [&] { return QString::fromStdString(reader.run_info(id)->status); };
        const auto shown = [&] {
            RunBrowser* b = w.runBrowser();
            return b->table()->item(static_cast<int>(b->runIds().indexOf(id)), RunBrowser::ColStatus);
        };
        // While a run is active Start would queue a duplicate silently: off; Queue stays.
        QVERIFY(!w.startAction()->isEnabled());
        QVERIFY(w.queueAction()->isEnabled());
        w.togglePause();
        // Held between steps: "paused" in the store, the data layer, the browser and the run bar.
        QTRY_COMPARE_WITH_TIMEOUT(stored(), QString("paused"), kEventDeadlineMs);
        QTRY_VERIFY_WITH_TIMEOUT(w.progressText().contains("paused"), kEventDeadlineMs);
        QTRY_COMPARE_WITH_TIMEOUT(shown()->text(), QString("paused"), kEventDeadlineMs);
        QCOMPARE(shown()->foreground().color(), palette::statusColour("paused"));
        QCOMPARE(w.data()->run(id)->status, QString("paused"));
        shot(&w, "main_window_paused");
        const size_t paused_at = w.data()->series(id, "reward_mean").size();
        QTest::qWait(500);
        QCOMPARE(w.data()->series(id, "reward_mean").size(), paused_at);
        w.singleStep();
        QTRY_COMPARE_WITH_TIMEOUT(w.data()->series(id, "reward_mean").size(), paused_at + 1, kEventDeadlineMs);
        QTest::qWait(300);
        QCOMPARE(w.data()->series(id, "reward_mean").size(), paused_at + 1);
        QCOMPARE(stored(), QString("paused"));  // a single step does not resume
        // Resumed: "running" again, and steps come.
        w.togglePause();
        QTRY_COMPARE_WITH_TIMEOUT(stored(), QString("running"), kEventDeadlineMs);
        QTRY_COMPARE_WITH_TIMEOUT(shown()->text(), QString("running"), kEventDeadlineMs);
        QCOMPARE(shown()->foreground().color(), palette::statusColour("running"));
        QTRY_VERIFY_WITH_TIMEOUT(w.data()->series(id, "reward_mean").size() > paused_at + 1, kEventDeadlineMs);
        w.stopRun();
        QVERIFY(finished.wait(kEventDeadlineMs));
        QCOMPARE(finished.first().at(1).toString(), QString("stopped"));
        QCOMPARE(stored(), QString("stopped"));
        QTRY_VERIFY_WITH_TIMEOUT(w.startAction()->isEnabled(), kEventDeadlineMs);
    }

    // A base policy not in the cache trains for a while before the run's
    // first step. The window is busy with the run from the start: Stop acts
    // on the warm-up, Start does not queue a second run, and the stopped
    // run reads "stopped" (resume warms up again).
    void aRunCanBeStoppedDuringItsWarmup() {
        QTemporaryDir d;
        MainWindow w(d.path() + "/warmup.sqlite");
        Config c = w.configForm()->config();
        c.base.sft_steps = 2999;  // a base policy no other test caches
        c.seed = 4242;
        w.configForm()->setConfig(c);
        w.show();
        QSignalSpy finished(&w, &MainWindow::runFinished);
        w.startRun();
        QTRY_VERIFY_WITH_TIMEOUT(w.progressText().contains("base-policy warm-up") && w.progressText().contains("/2999"),
                                 kEventDeadlineMs);
        QVERIFY(w.isBusy());
        QVERIFY(w.stopAction()->isEnabled());
        QVERIFY(w.pauseAction()->isEnabled());
        QVERIFY(!w.startAction()->isEnabled());
        w.startRun();  // Ctrl+R now: refused with a word, nothing queued
        QCOMPARE(w.worker()->queued(), 0);
        w.stopRun();
        QVERIFY(finished.wait(kEventDeadlineMs));
        QCOMPARE(finished.first().at(1).toString(), QString("stopped"));
        Store reader = Store::open(w.databasePath().toStdString());
        const auto runs = reader.list_runs();
        QCOMPARE(runs.size(), size_t(1));
        QCOMPARE(QString::fromStdString(runs.front().status), QString("stopped"));
        QCOMPARE(runs.front().steps, int64_t(0));
        QTRY_VERIFY_WITH_TIMEOUT(!w.isBusy() && w.startAction()->isEnabled(), kEventDeadlineMs);
        QVERIFY(!w.stopAction()->isEnabled());
    }

    // A run started while other runs are selected in the list (a comparison,
    // a lesson's runs) joins the selection and is drawn; so is one started
    // while the charts show a sweep's runs with nothing selected.
    void aRunStartedWithOtherRunsSelectedIsDrawn() {
        QTemporaryDir d;
        MainWindow w(d.path() + "/selected.sqlite");
        makeQuick(w, 2);
        w.show();
        QSignalSpy finished(&w, &MainWindow::runFinished);
        // Starts a run, once the window is idle again after the last one
        // (its end is signalled before the worker goes idle), and waits
        // for its end: its id, or 0.
        const auto runOnce = [&]() -> qint64 {
            QElapsedTimer idle;
            idle.start();
            while (w.isBusy() && idle.elapsed() < kEventDeadlineMs) QTest::qWait(10);
            const qsizetype before = finished.size();
            w.startRun();
            while (finished.size() <= before)
                if (!finished.wait(kEventDeadlineMs)) return 0;
            return finished.last().at(0).toLongLong();
        };
        const qint64 first = runOnce();
        QVERIFY(first > 0);
        RunBrowser* browser = w.runBrowser();
        QTRY_VERIFY_WITH_TIMEOUT(browser->runIds().contains(first), kEventDeadlineMs);
        browser->selectRuns({first});
        MetricChart* reward = w.charts()->chartFor("reward_mean");
        QTRY_COMPARE_WITH_TIMEOUT(reward->plottedRuns(), QList<qint64>{first}, kEventDeadlineMs);

        const qint64 second = runOnce();
        QVERIFY(second > 0);
        QTRY_VERIFY_WITH_TIMEOUT(reward->plottedRuns().contains(second), kEventDeadlineMs);
        QVERIFY(reward->plottedRuns().contains(first));
        QCOMPARE(browser->selectedRunIds(), (QList<int64_t>{first, second}));

        // The charts show a set the list does not select (a sweep's "Show on charts").
        browser->selectRuns({});
        w.charts()->setVisibleRuns({first});
        QTRY_COMPARE_WITH_TIMEOUT(reward->plottedRuns(), QList<qint64>{first}, kEventDeadlineMs);
        const qint64 third = runOnce();
        QVERIFY(third > 0);
        QTRY_VERIFY_WITH_TIMEOUT(reward->plottedRuns().contains(third), kEventDeadlineMs);
        QVERIFY(!reward->plottedRuns().contains(second));
    }

    void trainingRunsOffTheGuiThread() {
        QTemporaryDir d;
        MainWindow w(d.path() + "/thread.sqlite");
        makeQuick(w, 8);
        w.show();
        // Record the thread each step is computed on (latency figures live
        // in mismatch-lab-bench-latency).
        QList<QThread*> producers;
        std::mutex mu;
        connect(
            w.worker(), &RunWorker::stepCompleted, w.data(),
            [&](qint64, int, int, double) {
                std::lock_guard lock(mu);
                producers << QThread::currentThread();
            },
            Qt::DirectConnection);
        QSignalSpy finished(&w, &MainWindow::runFinished);
        w.startRun();
        QVERIFY(finished.wait(120000));
        std::lock_guard lock(mu);
        QVERIFY(producers.size() >= 8);
        for (QThread* t : producers) QVERIFY(t != QApplication::instance()->thread());
    }

    void unreadableDatabaseIsRefusedAndLosesNothing() {
        QTemporaryDir d;
        const QString good = d.path() + "/good.sqlite", bad = d.path() + "/bad.sqlite";
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("this is not a database, it is a shopping list\n");
        f.close();
        MainWindow w(good);
        QString err;
        QVERIFY(!w.openDatabase(bad, &err));
        QVERIFY2(err.contains("bad.sqlite"), qPrintable(err));
        QCOMPARE(w.databasePath(), good);
        QFile again(bad);
        QVERIFY(again.open(QIODevice::ReadOnly));
        QCOMPARE(again.readAll(), QByteArray("this is not a database, it is a shopping list\n"));
    }

    void everyPanelReadsTheWindowsDatabase() {
        QTemporaryDir d;
        const QString one = d.path() + "/one.sqlite", two = d.path() + "/two.sqlite";
        int64_t a = 0, b = 0;
        {
            Store s = Store::open(one.toStdString());
            a = s.create_run("kept", "default", "{}", 1, RunStatus::finished);
            b = s.create_run("doomed", "default", "{}", 1, RunStatus::finished);
            for (int64_t id : {a, b}) {
                StepRecord r;
                r.step = 0;
                r.metrics = {{"reward_mean", 0.5}};
                s.append_step(id, r);
            }
            Store::open(two.toStdString()).create_run("other file", "default", "{}", 1, RunStatus::stopped);
        }
        MainWindow w(one);
        QCOMPARE(w.runBrowser()->database(), w.database());
        QCOMPARE(w.data()->database(), w.database());
        QCOMPARE(w.runBrowser()->runIds().size(), 2);
        QCOMPARE(w.data()->runIds().size(), 2);
        w.showDrillDown(a);
        QCOMPARE(w.drillDown()->runId(), a);
        // A delete in the browser leaves the charts' data and the drill-down at once.
        w.runBrowser()->setConfirmDeletes(false);
        QCOMPARE(w.runBrowser()->deleteRuns({b}), 1);
        QCOMPARE(w.data()->runIds(), QList<qint64>{a});
        // Another file: every panel follows, and the drill-down lets go of the old one.
        QVERIFY(w.openDatabase(two));
        QCOMPARE(w.databasePath(), two);
        QCOMPARE(w.data()->path(), two);
        QCOMPARE(w.runBrowser()->runIds().size(), 1);
        QCOMPARE(w.runBrowser()->table()->item(0, RunBrowser::ColName)->text(), QString("other file"));
        QCOMPARE(w.data()->runIds().size(), 1);
        QCOMPARE(w.drillDown()->runId(), int64_t(-1));
    }

    // `mismatch-lab --db runs.sqlite` in one folder, the launcher the next
    // day from another: the last and recent databases are remembered
    // absolute, and a relative one left by an older build creates no stray
    // empty database in the folder the workbench starts from.
    void relativeDatabasePathsAreRememberedAbsolute() {
        QTemporaryDir d;
        QVERIFY(QDir(d.path()).mkpath("here") && QDir(d.path()).mkpath("elsewhere"));
        const QString before = QDir::currentPath();
        const QString here = QDir(d.path()).filePath("here/rel.sqlite");
        QDir::setCurrent(d.path() + "/here");
        {
            MainWindow w("rel.sqlite");
            QCOMPARE(w.databasePath(), here);
            w.close();
        }
        QCOMPARE(QSettings().value("lastDatabase").toString(), here);
        QCOMPARE(QSettings().value("recentDatabases").toStringList().value(0), here);
        QDir::setCurrent(d.path() + "/elsewhere");
        {
            MainWindow w;
            QCOMPARE(w.databasePath(), here);
            w.close();
        }
        QSettings().setValue("lastDatabase", "stray.sqlite");
        {
            MainWindow w;
            QCOMPARE(w.databasePath(), MainWindow::defaultDatabasePath());
            w.close();
        }
        QVERIFY(!QFile::exists(d.path() + "/elsewhere/stray.sqlite"));
        QDir::setCurrent(before);
    }

    void viewSettingsPersist() {
        QTemporaryDir d;
        {
            MainWindow w(d.path() + "/view.sqlite");
            QVERIFY(w.charts()->chartFor("k3_kl")->logScale());  // K3 KL starts on a log axis
            w.charts()->setSmoothing(0.3);
            w.charts()->setXAxis(MetricChart::XAxis::wallTime);
            w.charts()->setGroupSeeds(true);
            w.charts()->chartFor("grad_norm")->setLogScale(true);
            w.charts()->chartFor("k3_kl")->setLogScale(false);
            w.close();  // saves the settings
        }
        MainWindow w(d.path() + "/view.sqlite");
        QCOMPARE(w.charts()->smoothing(), 0.3);
        QCOMPARE(w.charts()->xAxis(), MetricChart::XAxis::wallTime);
        QVERIFY(w.charts()->groupSeeds());
        QVERIFY(w.charts()->chartFor("reward_mean")->groupSeeds());
        QVERIFY(w.charts()->chartFor("grad_norm")->logScale());
        QVERIFY(!w.charts()->chartFor("k3_kl")->logScale());
        QCOMPARE(w.charts()->chartFor("reward_mean")->xAxis(), MetricChart::XAxis::wallTime);
        // Leave the defaults for the tests after this one.
        w.charts()->setSmoothing(MetricChart::kDefaultSmoothing);
        w.charts()->setXAxis(MetricChart::XAxis::step);
        w.charts()->setGroupSeeds(false);
        w.charts()->chartFor("grad_norm")->setLogScale(false);
        w.charts()->chartFor("k3_kl")->setLogScale(true);
        w.close();
    }

    // The last configuration came back as "default + 4 modifications": the
    // preset it was modified from is named again after a restart.
    void theLastConfigurationComesBackWithItsPreset() {
        QTemporaryDir d;
        Config modified;
        {
            MainWindow w(d.path() + "/last.sqlite");
            QVERIFY(w.configForm()->setPreset(QStringLiteral("production-moe-deep")));
            modified = w.configForm()->config();
            modified.rl.steps = 7;
            w.configForm()->setConfig(modified);
            w.close();  // saves the settings
        }
        MainWindow w(d.path() + "/last.sqlite");
        QCOMPARE(w.configForm()->presetName(), QStringLiteral("production-moe-deep"));
        QVERIFY(w.configForm()->config() == modified);
        QVERIFY(w.configForm()->modifiedFromPreset());
        // Leave the defaults for the tests after this one.
        QVERIFY(w.configForm()->setPreset(QStringLiteral("default")));
        w.close();
    }

    void malformedPastedJsonKeepsTheConfiguration() {
        QTemporaryDir d;
        MainWindow w(d.path() + "/paste.sqlite");
        w.configForm()->setPreset("verl-icepop");
        const QString before = w.configForm()->toJson();
        QString err;
        QVERIFY(!w.configForm()->fromJson("{\"rollout\": {\"precision\": ", &err));
        QVERIFY(!err.isEmpty());
        QCOMPARE(w.configForm()->toJson(), before);
    }
};

QTEST_MAIN(MainWindowTest)
#include "main_window_test.moc"
