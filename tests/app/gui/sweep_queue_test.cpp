// Run > Queue sweep… as a user drives it: a refused grid queues nothing; a
// valid one queues configurations x seeds runs, each with its sweep slot and
// the CLI's name, hash and spec; the runs train (tiny batches, two steps) into
// sweep_runs, and the same sweep again finds the same sweep id and skips the
// runs that finished. Screenshots go to $MLK_SCREENSHOT_DIR when it is set.
#include <QApplication>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QFile>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include "app/gui/main_window.h"
#include "tests/app/gui/window_test_env.h"
#include "app/gui/run_worker.h"
#include "core/config/presets.h"
#include "core/store/store.h"
#include "tests/scratch.h"
#include "tests/screenshot.h"
#include "widgets/panels/config_form.h"
#include "widgets/panels/run_browser.h"
#include "widgets/panels/sweep_dialog.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

class SweepQueueTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

    // The CLI tests' tiny settings (sweep_cli_test's kTiny), two steps.
    static void makeTiny(MainWindow& w) {
        Config c = preset_config("r3-tis");
        apply_set(c, "base.sft_steps=300");
        c.rl.prompts_per_step = 4;
        c.rl.samples_per_prompt = 2;
        c.rl.steps = 2;
        w.configForm()->setPreset("r3-tis");
        w.configForm()->setConfig(c);
    }

    static SweepDialog* openDialog(MainWindow& w) {
        w.sweepAction()->trigger();
        SweepDialog* d = w.findChild<SweepDialog*>();
        if (d && !QTest::qWaitForWindowExposed(d)) return nullptr;  // the callers QVERIFY a dialog
        return d;
    }

    static void fill(SweepDialog* d, const QString& key, const QString& values) {
        auto* combo = d->findChildren<QComboBox*>(QStringLiteral("sweepKey")).front();
        combo->lineEdit()->clear();
        QTest::keyClicks(combo->lineEdit(), key);
        auto* edit = d->findChildren<QLineEdit*>(QStringLiteral("sweepValues")).front();
        edit->clear();
        QTest::keyClicks(edit, values);
    }

    static QPushButton* queueButton(SweepDialog* d) {
        return d->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    }

private slots:
    void initTestCase() {
        window_test::enter("Mismatch Lab Sweep Test");
        // The CLI tests' shared base-policy cache: the tiny warm-up is trained once per machine.
        qputenv("MLK_CACHE_DIR", QByteArray::fromStdString(testing_scratch::shared_cache_dir()));
    }

    void cleanupTestCase() { window_test::leave(); }

    void sweepJobsCarryTheClisSlotsNamesAndHash() {
        SweepSpec spec;
        add_grid_option(spec, "correction.is_upper=1.5,5");
        spec.seeds = 3;
        spec.steps = 2;
        const Config base = preset_config("r3-tis");
        const auto configs = expand_sweep(spec, "r3-tis", base);
        const std::vector<RunJob> jobs = sweepJobs(spec, configs);
        QCOMPARE(jobs.size(), size_t(6));
        // The spec `sweep --preset r3-tis --grid correction.is_upper=1.5,5 --seeds 3 --steps 2` stores.
        SweepSpec cli = spec;
        cli.presets = {"r3-tis"};
        const auto cliConfigs = expand_sweep(cli, preset_config);
        const std::string hash = sweep_hash(sweep_identity(cliConfigs, cli));
        for (size_t i = 0; i < jobs.size(); ++i) {
            const RunJob& j = jobs[i];
            QVERIFY(j.sweep);
            QCOMPARE(j.sweep->hash, hash);
            QCOMPARE(j.sweep->configName, cliConfigs[i / 3].name);
            QCOMPARE(j.sweep->seed, int(i % 3) + 1);
            QCOMPARE(j.config.seed, uint64_t(i % 3 + 1));
            QCOMPARE(j.config.rl.steps, 2);
            QCOMPARE(j.name.toStdString(), sweep_run_name(cliConfigs[i / 3], int(i % 3) + 1));
        }
    }

    void refusedGridQueuesNothing() {
        MainWindow w(dir_.path() + "/refused.sqlite");
        w.show();
        makeTiny(w);
        SweepDialog* d = openDialog(w);
        QVERIFY(d);
        fill(d, "correction.is_upper", "2,huge");
        QVERIFY2(d->errorText().contains("correction.is_upper"), qPrintable(d->errorText()));
        QVERIFY(!queueButton(d)->isEnabled());
        QTest::keyClick(d, Qt::Key_Return);  // Enter does not get past the check either
        QCOMPARE(w.worker()->queued(), 0);
        QVERIFY(!w.isBusy());
        fill(d, "correction.is_uppr", "2");
        QVERIFY2(d->errorText().contains("correction.is_uppr"), qPrintable(d->errorText()));
        QTest::mouseClick(queueButton(d), Qt::LeftButton);
        QCOMPARE(w.worker()->queued(), 0);
        d->reject();
        Store s = Store::open(w.databasePath().toStdString());
        QVERIFY(s.list_sweeps().empty());
        QVERIFY(s.list_runs().empty());
    }

    void queuedSweepRunsIntoItsSlotsAndAgainReusesTheSweep() {
        MainWindow w(dir_.path() + "/gui_sweep.sqlite");
        w.show();
        makeTiny(w);
        QSignalSpy finished(&w, &MainWindow::runFinished);
        SweepDialog* d = openDialog(w);
        QVERIFY(d);
        fill(d, "correction.is_upper", "1.5,5");
        d->setSeeds(1);
        QCOMPARE(d->runCount(), 2);
        QTest::mouseClick(queueButton(d), Qt::LeftButton);
        // Two runs: the first may train the tiny base policy (a minute or
        // two beside another suite); the wait bounds a hang, it times nothing.
        QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 2, 400000);
        for (const auto& f : finished) QCOMPARE(f.at(1).toString(), QString("finished"));
        Store s = Store::open(w.databasePath().toStdString());
        const auto sweeps = s.list_sweeps();
        QCOMPARE(sweeps.size(), size_t(1));
        const auto links = s.sweep_runs(sweeps[0].id);
        QCOMPARE(links.size(), size_t(2));
        QCOMPARE(links[0].run_id, finished[0].at(0).toLongLong());
        QCOMPARE(links[1].run_id, finished[1].at(0).toLongLong());
        QCOMPARE(links[0].seed, 1);
        QVERIFY(links[1].config_name.find("is_upper=5") != std::string::npos);
        QCOMPARE(links[1].tags, "[\"" + links[1].config_name + "\",\"seed=1\"]");
        QCOMPARE((int)s.steps(links[1].run_id).size(), 2);

        // The browser groups them under their sweep.
        w.runBrowser()->refresh();
        w.runBrowser()->setGroupBy(RunBrowser::GroupBy::sweep);
        QTreeWidget* tree = w.runBrowser()->groupTree();
        QCOMPARE(tree->topLevelItemCount(), 1);
        QVERIFY2(tree->topLevelItem(0)->text(0).contains("2 configurations \u00D7 1 seed, 2/2 finished"),
                 qPrintable(tree->topLevelItem(0)->text(0)));
        testing_shots::save(&w, "main_window_sweep_grouped");

        // The same sweep again: the same sweep id, and its finished runs are kept, not run twice.
        QSignalSpy skipped(w.worker(), &RunWorker::slotSkipped);
        d = openDialog(w);
        QVERIFY(d);
        fill(d, "correction.is_upper", "1.5,5");
        d->setSeeds(1);
        QTest::mouseClick(queueButton(d), Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(skipped.size(), 2, 60000);
        QCOMPARE(s.list_sweeps().size(), size_t(1));
        QCOMPARE(s.sweep_runs(sweeps[0].id).size(), size_t(2));
        QCOMPARE(s.list_runs().size(), size_t(2));
        QTRY_VERIFY_WITH_TIMEOUT(!w.isBusy() && w.worker()->queued() == 0, kEventDeadlineMs);
    }
};

QTEST_MAIN(SweepQueueTest)
#include "sweep_queue_test.moc"
