// The Lessons dock in the real window (app/gui/main_window_lessons.cpp):
// every lesson loads and its experiment runs, on the worker, to its first
// stored step, with the lesson's charts shown and the chart to read framed;
// a finished run of a lesson's configuration is loaded instead of run again;
// every metric of the catalogue says what it means; and the probe a lesson
// opens shows exactly `mismatch-lab-cli probe --json` for its settings.
//
// The lessons' first runs need four base-policy warm-ups between them
// (lesson_content_test checks that), trained once into this test's cache
// folder and shared by its slots. Prints each lesson's time and the total.
// MLK_SCREENSHOT_DIR=<dir> saves lesson<N>_start.png and lesson<N>_result.png
// for every lesson, and lesson1_probe.png. With MLK_LESSONS_FULL=1 each
// lesson's result is taken after all its runs finished (minutes, not seconds):
// the screenshots a teacher would show.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QMenuBar>
#include <QPushButton>
#include <QSettings>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/main_window.h"
#include "tests/app/gui/window_test_env.h"
#include "app/gui/run_worker.h"
#include "core/config/lessons.h"
#include "core/metrics/catalogue.h"
#include "core/store/store.h"
#include "tests/screenshot.h"
#include "tests/widgets/probe_cli.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/lessons_panel.h"
#include "widgets/panels/probe_panel.h"
#include "widgets/panels/run_browser.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

namespace {

// Bounds a hang, not a timing: a cold warm-up of moe-tiny on a busy
// two-core machine stays well inside it.
constexpr int kFirstStepTimeoutMs = 300000;

// Steps stored of the lesson's first run so far (0 before it started).
int64_t firstRunSteps(const MainWindow& w) {
    if (w.lessonRuns().isEmpty()) return 0;
    const std::optional<int64_t> last = w.database()->lastStep(w.lessonRuns().front());
    return last ? *last + 1 : 0;
}

bool waitProbed(QSignalSpy& spy, int count) {
    for (int i = 0; i < 600 && spy.count() < count; ++i) spy.wait(100);
    return spy.count() >= count;
}

}  // namespace

class LessonsTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QElapsedTimer total_;

private slots:
    void initTestCase() {
        total_.start();
        window_test::enter("Mismatch Lab Lessons Test");
        // One cache for every slot: a base policy trained for one lesson serves the next.
        qputenv("MLK_CACHE_DIR", (dir_.path() + "/cache").toUtf8());
    }

    void cleanupTestCase() {
        window_test::leave();
        qInfo("lessons_test wall time: %.1f s", total_.elapsed() / 1000.0);
    }

    void everyCatalogueMetricHasAMeaning() {
        QVERIFY(!metric_catalogue().empty());
        for (const MetricInfo& m : metric_catalogue()) {
            QVERIFY2(!m.meaning.empty(), std::string(m.name).c_str());
            QVERIFY2(!m.title.empty(), std::string(m.name).c_str());
            QVERIFY(!metricToolTip(QString::fromUtf8(m.name.data(), qsizetype(m.name.size()))).isEmpty());
        }
    }

    void lessonsDockIsASidePanelFromTheViewMenu() {
        MainWindow w(dir_.path() + "/menu.sqlite");
        w.show();
        QAction* toggle = window_test::actionIn(w, "&View", "Lessons");
        QVERIFY(toggle);
        QCOMPARE(toggle->shortcut(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
        QVERIFY(w.lessonsDock()->isHidden());
        toggle->trigger();
        QVERIFY(!w.lessonsDock()->isHidden());
        QVERIFY(!w.lessonsDock()->isFloating());  // docked beside the charts, not a dialog
        QVERIFY(QApplication::activeModalWidget() == nullptr);
        LessonsPanel* p = w.lessonsPanel();
        QCOMPARE(p->count(), 6);
        for (int i = 0; i < p->count(); ++i) {
            p->selectLesson(i);
            const Lesson& l = lessons()[size_t(i)];
            QVERIFY(p->text().contains(QString::fromStdString(l.question)));
            QVERIFY(p->text().contains(QString::fromStdString(l.explanation)));
            QCOMPARE(p->probeButton()->isVisibleTo(p), l.probe.has_value());
        }
        toggle->trigger();
        QVERIFY(w.lessonsDock()->isHidden());
    }

    void lessonProbeEqualsTheCli() {
        MainWindow w(dir_.path() + "/probe.sqlite");
        w.resize(1600, 1000);
        w.show();
        w.lessonsDock()->show();
        LessonsPanel* p = w.lessonsPanel();
        p->selectLesson(0);
        QSignalSpy probed(w.probePanel(), &ProbePanel::probed);
        p->probeButton()->click();
        QVERIFY(!w.probeDock()->isHidden());
        QVERIFY(waitProbed(probed, 1));
        QTRY_VERIFY_WITH_TIMEOUT(!w.probePanel()->runner()->busy(), 60000);  // the form's probe overtaken
        QVERIFY(w.probePanel()->current().config == lesson_probe_config(*lessons()[0].probe));
        QCOMPARE(probe_cli::panelMismatch(*w.probePanel()), QString());

        // One click: the lesson's first change, probed on top.
        const int before = int(probed.count());
        QVERIFY(!p->changeButtons().isEmpty());
        p->changeButtons().front()->click();
        QVERIFY(waitProbed(probed, before + 1));
        QTRY_VERIFY_WITH_TIMEOUT(!w.probePanel()->runner()->busy(), 60000);
        Config changed = lesson_probe_config(*lessons()[0].probe);
        apply_set(changed, lessons()[0].probe->changes.front());
        QVERIFY(w.probePanel()->current().config == changed);
        QCOMPARE(probe_cli::panelMismatch(*w.probePanel()), QString());
        QVERIFY(!w.probePanel()->previousText("k3_kl").isEmpty());  // the lesson's probe beside it
        testing_shots::save(&w, "lesson1_probe");
    }

    // Where the probe is short (a small screen, or floated beside the
    // window as here) its numbers sit below its editors: a lesson's probe
    // and each change bring them into view.
    void lessonChangesBringTheProbesNumbersIntoView() {
        MainWindow w(dir_.path() + "/short.sqlite");
        w.resize(1340, 720);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        w.lessonsDock()->show();
        w.probeDock()->show();
        w.probeDock()->setFloating(true);
        w.probeDock()->resize(340, 420);
        LessonsPanel* p = w.lessonsPanel();
        p->selectLesson(0);
        QSignalSpy probed(w.probePanel(), &ProbePanel::probed);
        auto* scroll = qobject_cast<QScrollArea*>(w.probeDock()->widget());
        QVERIFY(scroll);
        const auto numbersInView = [&] {
            const QWidget* table = w.probePanel()->numbersTable();
            const QRect shown(table->mapTo(scroll->viewport(), QPoint(0, 0)), table->size());
            return scroll->viewport()->rect().contains(shown.topLeft() + QPoint(0, 40));  // header and first rows
        };
        p->probeButton()->click();
        QTRY_VERIFY_WITH_TIMEOUT(numbersInView(), kEventDeadlineMs);
        QVERIFY(waitProbed(probed, 1));
        scroll->verticalScrollBar()->setValue(0);  // the user scrolls back to the editors
        QVERIFY2(!numbersInView(), "premise: at this height the editors push the numbers out of view");
        p->changeButtons().front()->click();
        QTRY_VERIFY_WITH_TIMEOUT(numbersInView(), kEventDeadlineMs);
        QTRY_VERIFY_WITH_TIMEOUT(!w.probePanel()->runner()->busy(), 60000);
    }

    void aFinishedRunIsLoadedNotRunAgain() {
        // Runs of lesson 5's configurations stored as finished (as a CLI
        // sweep would leave them): the lesson shows them and queues nothing.
        const QString db = dir_.path() + "/loaded.sqlite";
        QList<qint64> stored;
        {
            Store store = Store::open(db.toStdString());
            for (const LessonRun& r : lessons()[4].runs) {
                const Config c = lesson_run_config(r);
                stored << store.create_run(r.preset, r.preset, config_to_json(c).dump(), uint64_t(c.seed),
                                           RunStatus::finished);
            }
            Config shorter = lesson_run_config(lessons()[4].runs[0]);
            shorter.rl.steps = 10;  // a shorter run does not stand in for the lesson's
            store.create_run("short", "collapse-demo-fp8-bypass", config_to_json(shorter).dump(), 1,
                             RunStatus::finished);
        }
        MainWindow w(db);
        w.show();
        w.runLesson(4);
        QCOMPARE(w.lessonRuns(), stored);
        QCOMPARE(w.worker()->queued(), 0);
        QVERIFY(!w.isBusy());
        const QList<int64_t> selected = w.runBrowser()->selectedRunIds();
        QCOMPARE(QList<qint64>(selected.begin(), selected.end()), stored);
        QVERIFY2(w.lessonsPanel()->status().contains("Loaded 2"), qPrintable(w.lessonsPanel()->status()));
    }

    void aLongerRunLoadedForALessonIsShownToTheLessonsSteps() {
        // Lesson 1's runs stored with 30 steps (a CLI run of the same
        // configuration, longer): loaded, and the charts show the first 20.
        const QString db = dir_.path() + "/longer.sqlite";
        {
            Store store = Store::open(db.toStdString());
            for (const LessonRun& r : lessons()[0].runs) {
                Config c = lesson_run_config(r);
                c.rl.steps = 30;
                const int64_t id = store.create_run(r.preset, r.preset, config_to_json(c).dump(), uint64_t(c.seed),
                                                    RunStatus::finished);
                for (int k = 0; k < 30; ++k) {
                    StepRecord rec;
                    rec.step = k;
                    rec.metrics = {{"k3_kl", k < 20 ? 1e-11 : 1e-6}};
                    store.append_step(id, rec);
                }
            }
        }
        MainWindow w(db);
        w.show();
        w.runLesson(0);
        QCOMPARE(w.worker()->queued(), 0);
        const std::optional<XRange> shown = w.charts()->sharedXRange();
        QVERIFY(shown.has_value());
        QCOMPARE(shown->lo, 0.0);
        QCOMPARE(shown->hi, double(lessons()[0].runs[0].steps - 1));
        QVERIFY2(w.lessonsPanel()->status().contains("the charts show the lesson's 20 steps"),
                 qPrintable(w.lessonsPanel()->status()));
    }

    void everyLessonRunsToItsFirstStep_data() {
        QTest::addColumn<int>("lesson");
        for (size_t i = 0; i < lessons().size(); ++i) QTest::newRow(lessons()[i].id.c_str()) << int(i);
    }

    void everyLessonRunsToItsFirstStep() {
        QFETCH(int, lesson);
        const Lesson& l = lessons()[size_t(lesson)];
        QElapsedTimer t;
        t.start();
        MainWindow w(dir_.path() + QStringLiteral("/lesson%1.sqlite").arg(lesson + 1));
        w.resize(1600, 1000);
        w.show();
        w.lessonsDock()->show();
        LessonsPanel* p = w.lessonsPanel();
        p->selectLesson(lesson);
        QTest::qWait(50);
        testing_shots::save(&w, QStringLiteral("lesson%1_start").arg(lesson + 1));

        p->runButton()->click();  // as the user starts it
        QCOMPARE(w.worker()->queued() + (w.isBusy() ? 1 : 0) > 0, true);
        QStringList charts;
        for (const std::string& m : l.charts) charts << QString::fromStdString(m);
        QStringList shown;
        for (MetricChart* c : w.charts()->charts()) shown << c->metric();
        QCOMPARE(shown, charts);
        const QString read = QString::fromStdString(l.read);
        QCOMPARE(w.charts()->highlightedMetric(), read);
        QVERIFY(!w.charts()->chartFor(read)->styleSheet().isEmpty());
        QCOMPARE(p->readHint(), QStringLiteral("Read: ") + metricTitle(read));

        // The first run stores its first step (a few, for a screenshot with lines).
        QTRY_VERIFY_WITH_TIMEOUT(firstRunSteps(w) >= 1, kFirstStepTimeoutMs);
        const double firstStep = t.elapsed() / 1000.0;
        const qint64 first = w.lessonRuns().front();
        const std::optional<RunInfo> info = w.database()->runInfo(first);
        QVERIFY(info);
        QVERIFY(config_from_json(nlohmann::json::parse(info->config_json)) == lesson_run_config(l.runs.front()));
        const QList<int64_t> selected = w.runBrowser()->selectedRunIds();
        QVERIFY(selected.contains(first));
        QTRY_VERIFY_WITH_TIMEOUT(firstRunSteps(w) >= std::min<int64_t>(5, l.runs.front().steps), 60000);
        if (qEnvironmentVariableIsSet("MLK_LESSONS_FULL")) {
            QTRY_VERIFY_WITH_TIMEOUT(w.lessonRuns().size() == qsizetype(l.runs.size()) && !w.isBusy(), 900000);
            QTRY_COMPARE_WITH_TIMEOUT(w.charts()->chartFor(read)->plottedRuns().size(), qsizetype(l.runs.size()),
                                      kEventDeadlineMs);
        }
        QTest::qWait(MetricChart::kRedrawDelayMs * 4);
        testing_shots::save(&w, QStringLiteral("lesson%1_result").arg(lesson + 1));

        w.worker()->stopAll();
        w.worker()->resume();
        QTRY_VERIFY_WITH_TIMEOUT(!w.isBusy(), 120000);
        qInfo("lesson %d (%s): first step stored after %.1f s, %.1f s in all", lesson + 1, l.id.c_str(), firstStep,
              t.elapsed() / 1000.0);
    }
};

QTEST_MAIN(LessonsTest)
#include "lessons_test.moc"
