// A separate process writes the database the window has open, as a user's
// `mismatch-lab-cli run --db` beside the workbench does: the run browser, the
// metric summary and the charts follow the new run and its steps within two
// seconds without Refresh, and no error appears; another database of the
// same file name looks different and starts with nothing selected.
// Screenshots go to
// $MLK_SCREENSHOT_DIR when it is set.
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include <optional>

#include "app/gui/main_window.h"
#include "tests/app/gui/window_test_env.h"
#include "core/store/store.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_data.h"
#include "widgets/panels/run_browser.h"
#include "widgets/report/report.h"
#include "tests/screenshot.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

class ExternalWriterTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    void shot(QWidget* w, const QString& name) { testing_shots::save(w, name); }

    // The browser's row for run `id`: its cell in `column`, or "" when absent.
    static QString cell(RunBrowser* browser, int64_t id, int column) {
        QTableWidget* table = browser->table();
        for (int r = 0; r < table->rowCount(); ++r)
            if (auto* it = table->item(r, RunBrowser::ColId); it && it->text().toLongLong() == id)
                return table->item(r, column) ? table->item(r, column)->text() : QString();
        return {};
    }

    // What the file holds now, through a connection of the test's own.
    struct Seen {
        int64_t id = -1;
        int64_t steps = 0;
        std::string status;
    };
    static Seen inStore(const QString& path) {
        Seen s;
        if (!QFile::exists(path)) return s;
        try {
            Store store = Store::open(path.toStdString());
            const auto runs = store.list_runs();
            if (runs.empty()) return s;
            s.id = runs.front().id, s.steps = runs.front().steps, s.status = runs.front().status;
        } catch (const StoreError&) {
        }
        return s;
    }

private slots:
    void initTestCase() { window_test::enter("Mismatch Lab External Writer Test"); }

    // A malformed message on refresh (an arg() without its placeholder) would
    // print "QString::arg: Argument missing" on every poll.
    void init() { QTest::failOnWarning(QRegularExpression("QString::arg")); }

    void aCliRunShowsLiveWithoutRefresh() {
        const QString db = dir_.filePath("shared.sqlite");
        MainWindow w(db);
        w.resize(1400, 900);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        RunBrowser* browser = w.runBrowser();
        browser->findChild<QTabWidget*>()->setCurrentIndex(1);  // the metric summary follows too

        QProcess cli;
        cli.setProcessChannelMode(QProcess::MergedChannels);
        const int kSteps = 40;
        cli.start(QStringLiteral(MLK_CLI_PATH),
                  {"run", "--preset", "default", "--steps", QString::number(kSteps), "--db", db, "--cache-dir",
                   dir_.filePath("cache"), "--set", "base.sft_steps=300", "--set", "rl.prompts_per_step=4", "--set",
                   "rl.samples_per_prompt=2"});
        QVERIFY(cli.waitForStarted());

        // The run appears in the file (the warm-up follows its creation) ...
        QTRY_VERIFY_WITH_TIMEOUT(inStore(db).id > 0, 60000);
        const int64_t id = inStore(db).id;
        // ... and in the browser within two seconds, with no Refresh.
        QTRY_VERIFY_WITH_TIMEOUT(!cell(browser, id, RunBrowser::ColName).isEmpty(), kEventDeadlineMs);
        // A CLI run is named as the GUI names one: its preset and what it changes.
        QVERIFY2(cell(browser, id, RunBrowser::ColName).contains("default sft_steps=300 prompts_per_step=4"),
                 qPrintable(cell(browser, id, RunBrowser::ColName)));

        // Steps: once the file holds some, the browser shows at least as many.
        QTRY_VERIFY_WITH_TIMEOUT(inStore(db).steps >= 5 || cli.state() == QProcess::NotRunning, 120000);
        const int64_t stored = inStore(db).steps;
        QTRY_VERIFY_WITH_TIMEOUT(cell(browser, id, RunBrowser::ColSteps).toLongLong() >= stored, kEventDeadlineMs);
        if (cli.state() != QProcess::NotRunning) shot(&w, "external-writer-mid-run");

        if (cli.state() != QProcess::NotRunning) QVERIFY(cli.waitForFinished(300000));
        QVERIFY2(cli.exitStatus() == QProcess::NormalExit && cli.exitCode() == 0, cli.readAll().constData());
        QTRY_COMPARE_WITH_TIMEOUT(cell(browser, id, RunBrowser::ColStatus), QString("finished"), kEventDeadlineMs);
        QTRY_COMPARE_WITH_TIMEOUT(cell(browser, id, RunBrowser::ColSteps), QString::number(kSteps), kEventDeadlineMs);
        QTRY_COMPARE_WITH_TIMEOUT(w.data()->stepCount(id), kSteps, kEventDeadlineMs);
        // The metric summary lists the run with its final value.
        QTableWidget* summary = nullptr;
        for (auto* t : browser->findChildren<QTableWidget*>())
            if (t != browser->table() && t->isVisible() && t->columnCount() > 2) summary = t;
        QVERIFY(summary);
        QTRY_VERIFY_WITH_TIMEOUT(summary->rowCount() >= 1, kEventDeadlineMs);
        shot(&w, "external-writer-finished");

        // No error anywhere.
        QVERIFY2(browser->lastError().isEmpty(), qPrintable(browser->lastError()));
        const QString status = w.statusBar()->currentMessage();
        QVERIFY2(!status.contains("run store") && !status.contains("malformed"), qPrintable(status));
    }

    // The report of a run takes the colour the window draws it in, the
    // user's choice included.
    void theReportsColoursAreTheWindows() {
        const QString db = dir_.filePath("colours.sqlite");
        {
            Store s = Store::open(db.toStdString());
            for (int i = 0; i < 3; ++i) s.create_run("r", "default", "{}", 1, RunStatus::finished);
        }
        MainWindow w(db);
        w.data()->setColour(2, QColor(0x12, 0x34, 0x56));
        const ReportView view = w.reportView({1, 2, 3});
        for (int64_t id : {1, 2, 3}) QCOMPARE(view.colours.at(id), w.data()->colour(id));
        QCOMPARE(view.colours.at(2), QColor(0x12, 0x34, 0x56));
        QCOMPARE(view.colours.at(1), palette::runColour(1));
        QCOMPARE(view.smoothing, w.charts()->smoothing());
        QCOMPARE(view.charts.size(), size_t(w.charts()->charts().size()));
        // And the report built from that view draws each run in the window's colour.
        Store store = Store::open(db.toStdString());
        for (int64_t id : {1, 2, 3}) {
            StepRecord r;
            r.step = 0;
            r.metrics = {{"reward_mean", 0.1 * id}};
            store.append_step(id, r);
        }
        ReportRequest req;
        req.runs = {1, 2, 3};
        req.view = view;
        const Report rep = build_report(store, req);
        for (int64_t id : {1, 2, 3})
            QVERIFY2(rep.html.contains(QStringLiteral("color:%1").arg(w.data()->colour(id).name())),
                     qPrintable(QString("run %1").arg(id)));
    }

    // Two databases with the same file name in different folders: the
    // title tells them apart, and switching clears the selection (run ids
    // of one file name other runs in the other).
    void switchingDatabasesClearsTheSelection() {
        QDir(dir_.path()).mkpath("a");
        QDir(dir_.path()).mkpath("b");
        const QString a = dir_.filePath("a/runs.sqlite"), b = dir_.filePath("b/runs.sqlite");
        for (const QString& path : {a, b}) {
            Store s = Store::open(path.toStdString());
            s.create_run("first", "default", "{}", 1, RunStatus::finished);
            s.create_run("second", "default", "{}", 2, RunStatus::finished);
        }
        MainWindow w(a);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        const QString titleA = w.windowTitle();
        QVERIFY2(titleA.contains(QDir::toNativeSeparators(a)), qPrintable(titleA));
        w.runBrowser()->selectRuns({1});
        QCOMPARE(w.runBrowser()->selectedRunIds(), (QList<int64_t>{1}));
        QSignalSpy selection(w.runBrowser(), &RunBrowser::selectionChanged);
        QVERIFY(w.openDatabase(b));
        QVERIFY(w.windowTitle() != titleA);
        QVERIFY2(w.windowTitle().contains(QDir::toNativeSeparators(b)), qPrintable(w.windowTitle()));
        QVERIFY(w.runBrowser()->selectedRunIds().isEmpty());
        QVERIFY(!selection.isEmpty());
        QVERIFY(selection.last().at(0).value<QList<int64_t>>().isEmpty());
    }
};

QTEST_MAIN(ExternalWriterTest)
#include "external_writer_test.moc"
