// The Sweeps panel against summarize_sweep on a hand-made sweep (two
// configurations x three seeds, collapses in some seeds): rows, counts,
// spreads and deltas as the summary has them, the seed rows with the
// verdicts, the baseline choice, the thresholds editor (ranges from
// verdict_threshold_infos, collapse_drop changing the collapsed count), a
// seed written by another connection showing without a click, and the runs
// a selection sends to the charts. MLK_SCREENSHOT_DIR keeps sweep-table.png.
#include <QApplication>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QPushButton>
#include <QSettings>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include <memory>

#include "tests/screenshot.h"
#include "../sweep_store.h"
#include "core/store/run_lock.h"
#include "core/store/sweep_summary.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/sweep_table.h"
#include "widgets/panels/verdict_thresholds.h"
#include "widgets/data/sweep_text.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;
namespace fx = mlk::sweep_fixture;

class SweepTableTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void rowsMatchTheSummary();
    void thresholdsEditor();
    void aRunningSeedIsNotCountedAsEnded();

private:
    // Waits for the panel's off-thread summary after a change.
    static bool settle(SweepTable& t, QSignalSpy& updated, int before);
    std::unique_ptr<QTemporaryDir> dir_;
};

void SweepTableTest::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName("MismatchLabTest");
    QApplication::setApplicationName(QStringLiteral("Sweep Table Test %1").arg(QCoreApplication::applicationPid()));
    QSettings().clear();
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
}

void SweepTableTest::cleanupTestCase() { QFile::remove(QSettings().fileName()); }

bool SweepTableTest::settle(SweepTable& t, QSignalSpy& updated, int before) {
    QElapsedTimer waited;
    waited.start();
    while (waited.elapsed() < kEventDeadlineMs && updated.count() <= before) QTest::qWait(25);
    while (waited.elapsed() < kEventDeadlineMs && t.busy()) QTest::qWait(25);
    return updated.count() > before && !t.busy();
}

void SweepTableTest::rowsMatchTheSummary() {
    const std::string path = dir_->filePath("table.sqlite").toStdString();
    int64_t sweep = 0;
    {
        Store s = Store::open(path);
        sweep = fx::make_sweep(s, 1, 3);  // "is_upper=5" seed 3 comes later
    }
    RunDatabase db;
    QVERIFY(db.open(QString::fromStdString(path)));
    db.startWatching(50);
    SweepTable table;
    table.resize(1400, 360);
    QSignalSpy updated(&table, &SweepTable::updated);
    table.setDatabase(&db);
    QVERIFY(settle(table, updated, 0));
    QCOMPARE(table.sweepId(), sweep);
    QCOMPARE(table.sweepChoice()->count(), 1);
    QVERIFY(table.sweepChoice()->currentText().contains("2 configurations"));
    QTreeWidget* tree = table.tree();
    QCOMPARE(tree->topLevelItemCount(), 2);
    QCOMPARE(tree->topLevelItem(1)->text(SweepTable::ColRuns), QStringLiteral("2/3"));

    // Another connection (as another process) stores the missing seed: it
    // shows without a click.
    {
        Store w = Store::open(path);
        fx::add_sweep_seed(w, sweep, 1, 3);
    }
    QTRY_COMPARE_WITH_TIMEOUT(tree->topLevelItem(1)->text(SweepTable::ColRuns), QStringLiteral("3/3"),
                              kEventDeadlineMs);
    QTRY_VERIFY_WITH_TIMEOUT(!table.busy(), kEventDeadlineMs);

    Store check = Store::open(path);
    auto compare = [&](const SweepSummary& want) {
        QCOMPARE(tree->topLevelItemCount(), (int)want.configs.size());
        for (size_t i = 0; i < want.configs.size(); ++i) {
            const QTreeWidgetItem* row = tree->topLevelItem((int)i);
            const ConfigSummary& c = want.stats[i];
            QCOMPARE(row->text(SweepTable::ColConfig), QString::fromStdString(want.configs[i].name));
            QVERIFY(row->toolTip(SweepTable::ColConfig).contains("correction.is_upper"));
            QCOMPARE(row->text(SweepTable::ColRuns), QStringLiteral("%1/%2").arg(c.runs.size()).arg(want.seeds));
            QCOMPARE(row->text(SweepTable::ColCollapsed), QString::number(c.collapsed));
            QCOMPARE(row->text(SweepTable::ColDiverged), QString::number(c.diverged));
            QCOMPARE(row->text(SweepTable::ColBlowup), QString::number(c.blown_up));
            QCOMPARE(row->text(SweepTable::ColWarned), QString::number(c.warned));
            QCOMPARE(row->text(SweepTable::ColFinal), sweepSpreadText(c.final_reward));
            QCOMPARE(row->text(SweepTable::ColBest), sweepSpreadText(c.best_reward));
            QCOMPARE(row->text(SweepTable::ColAuc), sweepSpreadText(c.auc));
            const bool shaded = 2 * c.collapsed >= (int)c.runs.size();
            QCOMPARE(row->background(SweepTable::ColCollapsed).color() == palette::errorTone().fill, shaded);
            if (c.baseline) {
                QCOMPARE(row->text(SweepTable::ColDeltaFinal), QStringLiteral("baseline"));
            } else {
                QCOMPARE(row->text(SweepTable::ColDeltaFinal), sweepDeltaText(c.delta_final, c.delta_final_ci));
                QCOMPARE(row->text(SweepTable::ColDeltaAuc), sweepDeltaText(c.delta_auc, c.delta_auc_ci));
                QCOMPARE(row->font(SweepTable::ColDeltaFinal).bold(), interval_excludes_zero(c.delta_final_ci));
            }
            QCOMPARE(row->childCount(), (int)c.runs.size());
            for (int k = 0; k < row->childCount(); ++k) {
                const QTreeWidgetItem* seed = row->child(k);
                const RunOutcome& o = c.runs[k];
                QVERIFY(seed->text(SweepTable::ColConfig).contains(QStringLiteral("#%1").arg(o.run_id)));
                QCOMPARE(seed->text(SweepTable::ColCollapsed), sweepVerdictCell(o.verdicts.collapse));
                QCOMPARE(seed->toolTip(SweepTable::ColCollapsed),
                         QString::fromStdString(verdict_text(o.verdicts.collapse)));
                QCOMPARE(seed->text(SweepTable::ColFinal), QString::fromStdString(value_text(o.final_reward, 4)));
            }
        }
    };
    const SweepSummary first = summarize_sweep(check, sweep);
    // The fixture does what it says, or the comparison proves little.
    QCOMPARE(first.stats[0].collapsed, 2);
    QCOMPARE(first.stats[1].collapsed, 0);
    QVERIFY(first.stats[1].delta_final > 0);
    QVERIFY(interval_excludes_zero(first.stats[1].delta_final_ci));
    compare(first);

    // Against the other configuration: the deltas turn round.
    const int before = updated.count();
    table.baselineChoice()->setCurrentIndex(1);
    QVERIFY(settle(table, updated, before));
    QCOMPARE(table.baseline(), QString::fromStdString(fx::kConfigs[1]));
    const SweepSummary other = summarize_sweep(check, sweep, {}, fx::kConfigs[1]);
    QVERIFY(other.stats[0].delta_final < 0);
    compare(other);

    // A configuration's row sends its runs to the charts; the seed rows open.
    QSignalSpy show(&table, &SweepTable::showRunsRequested);
    tree->topLevelItem(0)->setExpanded(true);
    tree->topLevelItem(0)->setSelected(true);
    QCOMPARE(show.count(), 1);
    const QList<int64_t> sent = show.at(0).at(0).value<QList<int64_t>>();
    QCOMPARE(sent.size(), 3);
    for (const RunOutcome& o : other.stats[0].runs) QVERIFY(sent.contains(o.run_id));
    QVERIFY(mlk::testing_shots::save(&table, "sweep-table"));
    QSignalSpy exportAsked(&table, &SweepTable::exportReportRequested);
    table.findChild<QPushButton*>(QStringLiteral("exportSweepReport"))->click();
    QCOMPARE(exportAsked.count(), 1);

    // The mouse on a configuration's row names its first seed's run (the
    // charts bring its band forward); on a seed's row, that run; off the
    // table, none.
    table.show();
    QVERIFY(QTest::qWaitForWindowExposed(&table));
    QSignalSpy hovered(&table, &SweepTable::runHovered);
    const auto moveTo = [&](const QTreeWidgetItem* item) {
        const QPoint at = tree->visualItemRect(item).center();
        QTest::mouseMove(tree->viewport(), at + QPoint(0, 1));  // a move to where the cursor is moves nothing
        QTest::mouseMove(tree->viewport(), at);
    };
    moveTo(tree->topLevelItem(0));
    QTRY_VERIFY_WITH_TIMEOUT(!hovered.isEmpty(), kEventDeadlineMs);
    QCOMPARE(hovered.last().at(0).toLongLong(), other.stats[0].runs[0].run_id);
    moveTo(tree->topLevelItem(0)->child(1));
    QTRY_COMPARE_WITH_TIMEOUT(hovered.last().at(0).toLongLong(), other.stats[0].runs[1].run_id, kEventDeadlineMs);
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(tree->viewport(), &leave);
    QCOMPARE(hovered.last().at(0).toLongLong(), int64_t(0));
}

// A seed still running was counted as ended: "3/3" and a final reward and
// delta from its partial series. It shows as running and stays out of the
// statistics until it ends.
void SweepTableTest::aRunningSeedIsNotCountedAsEnded() {
    const std::string path = dir_->filePath("running.sqlite").toStdString();
    int64_t sweep = 0, live = 0;
    std::unique_ptr<RunWriterLock> writing;
    {
        Store s = Store::open(path);
        sweep = fx::make_sweep(s, 1, 3);
        Config c = fx::config_of(1);
        c.seed = 3;
        live = s.create_run("default " + fx::kConfigs[1], "default", config_to_json(c).dump(), 3, RunStatus::running,
                            SweepRun{sweep, 0, fx::kConfigs[1], 3, "[]"});
        writing = std::make_unique<RunWriterLock>(RunWriterLock::acquire(path, live));
        StepRecord r;
        r.step = 0;
        r.metrics = {{"reward_mean", 0.99}};
        s.append_step(live, r);
    }
    Store check = Store::open(path);
    const SweepSummary sum = summarize_sweep(check, sweep);
    QCOMPARE(sum.configs[1].in_progress, 1);
    QCOMPARE(sum.runs_in_progress(), 1);
    QCOMPARE((int)sum.stats[1].runs.size(), 2);
    QCOMPARE(sum.runs_stored(), 5);
    RunDatabase db;
    QVERIFY(db.open(QString::fromStdString(path)));
    SweepTable table;
    QSignalSpy updated(&table, &SweepTable::updated);
    table.setDatabase(&db);
    QVERIFY(settle(table, updated, 0));
    QCOMPARE(table.tree()->topLevelItem(1)->text(SweepTable::ColRuns), QStringLiteral("2/3 (+1 running)"));
    QCOMPARE(table.tree()->topLevelItem(1)->text(SweepTable::ColFinal), sweepSpreadText(sum.stats[1].final_reward));
    // It ends: counted, with its series.
    writing.reset();
    {
        Store w = Store::open(path);
        w.set_status(live, RunStatus::finished);
    }
    QCOMPARE(summarize_sweep(check, sweep).runs_in_progress(), 0);
    QCOMPARE(summarize_sweep(check, sweep).runs_stored(), 6);
}

void SweepTableTest::thresholdsEditor() {
    // Every key from the infos, and nothing outside its range can be entered.
    VerdictThresholdsDialog dialog({});
    for (const VerdictThresholdInfo& info : verdict_threshold_infos()) {
        QDoubleSpinBox* box = dialog.editor(QString::fromLatin1(info.key));
        QVERIFY2(box, info.key);
        QCOMPARE(box->minimum(), info.min);
        QCOMPARE(box->maximum(), info.max);
        QCOMPARE(box->decimals() == 0, info.integer);
        QVERIFY(!box->toolTip().isEmpty());
        box->setValue(info.max + 1);
        QCOMPARE(box->value(), info.max);
        box->setValue(info.min - 1);
        QCOMPARE(box->value(), info.min);
    }
    dialog.setThresholds({});
    QVERIFY(dialog.thresholds() == VerdictThresholds{});

    const std::string path = dir_->filePath("thresholds.sqlite").toStdString();
    int64_t sweep = 0;
    {
        Store s = Store::open(path);
        sweep = fx::make_sweep(s);
    }
    RunDatabase db;
    QVERIFY(db.open(QString::fromStdString(path)));
    SweepTable table;
    QSignalSpy updated(&table, &SweepTable::updated);
    table.setDatabase(&db);
    QVERIFY(settle(table, updated, 0));
    QCOMPARE(table.tree()->topLevelItem(1)->text(SweepTable::ColCollapsed), QStringLiteral("0"));

    // A sag to 70% of the best is a collapse once the line sits at 80%.
    dialog.editor("collapse_drop")->setValue(0.8);
    const VerdictThresholds t = dialog.thresholds();
    QCOMPARE(t.collapse_drop, 0.8);
    const int before = updated.count();
    table.setThresholds(t);
    QVERIFY(settle(table, updated, before));
    Store check = Store::open(path);
    const SweepSummary want = summarize_sweep(check, sweep, t);
    QCOMPARE(want.stats[1].collapsed, 1);
    QCOMPARE(table.tree()->topLevelItem(1)->text(SweepTable::ColCollapsed), QStringLiteral("1"));
    QCOMPARE(table.tree()->topLevelItem(0)->text(SweepTable::ColCollapsed), QString::number(want.stats[0].collapsed));
    // Kept for the next session (and the reports made from the window).
    QCOMPARE(savedVerdictThresholds().collapse_drop, 0.8);
    SweepTable again;
    QCOMPARE(again.thresholds().collapse_drop, 0.8);
    saveVerdictThresholds({});
}

QTEST_MAIN(SweepTableTest)
#include "sweep_table_test.moc"
