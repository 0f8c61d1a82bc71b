// The run browser's "Group by" over a store with two sweeps and loose runs,
// built directly (create_run with sweep slots; no training): by sweep, the
// parents, their configurations and counts; by configuration, runs that
// differ in the seed only under one parent; selecting a parent selects its
// runs (the charts' overlay); a run another connection adds shows on the next
// refresh, as the window's data_version poll triggers it.
// MLK_SCREENSHOT_DIR=<dir> also saves <dir>/browser_grouped_by_sweep.png.
#include <QLineEdit>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include "core/config/config.h"
#include "core/config/presets.h"
#include "core/config/sweep.h"
#include "core/store/store.h"
#include "tests/screenshot.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/run_browser.h"

using namespace mlk;

namespace {

QStringList labels(const QTreeWidget* t) {
    QStringList out;
    for (int i = 0; i < t->topLevelItemCount(); ++i) out << t->topLevelItem(i)->text(RunBrowser::TreeName);
    return out;
}

// A sweep's spec as the CLI and the window store it, so its parent counts
// come from the real identity JSON.
int64_t openSweep(Store& s, const SweepSpec& spec, std::vector<SweepConfig>* configs) {
    *configs = expand_sweep(spec, preset_config);
    const auto id = sweep_identity(*configs, spec);
    return s.open_sweep(sweep_hash(id), id.dump());
}

int64_t addRun(Store& s, const SweepConfig& c, const SweepSpec& spec, int seed, int64_t sweep, RunStatus status) {
    const Config cfg = sweep_run_config(c, spec, seed);
    const int64_t id = s.create_run(c.name + " seed=" + std::to_string(seed), c.preset, config_to_json(cfg).dump(),
                                    seed, RunStatus::running, SweepRun{sweep, 0, c.name, seed, "[]"});
    s.set_status(id, status);
    return id;
}

}  // namespace

class RunGroupsTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    QString path_;
    int64_t sweepA_ = 0, sweepB_ = 0, loose1_ = 0, loose2_ = 0, looseSeed2_ = 0;
    QList<int64_t> aRuns_;

private slots:
    void initTestCase() {
        path_ = dir_.path() + "/groups.sqlite";
        Store s = Store::open(path_.toStdString());
        // Sweep A: r3-tis x is_upper 1.5, 5 x 2 seeds; three of four runs exist, two finished.
        SweepSpec a;
        a.presets = {"r3-tis"};
        add_grid_option(a, "correction.is_upper=1.5,5");
        a.seeds = 2;
        std::vector<SweepConfig> ca;
        sweepA_ = openSweep(s, a, &ca);
        aRuns_ << addRun(s, ca[0], a, 1, sweepA_, RunStatus::finished);
        aRuns_ << addRun(s, ca[0], a, 2, sweepA_, RunStatus::finished);
        aRuns_ << addRun(s, ca[1], a, 1, sweepA_, RunStatus::failed);
        // Loose runs: the defaults with seeds 1 and 2 (one configuration), and r3-grpo.
        Config d;
        loose1_ = s.create_run("default", "default", config_to_json(d).dump(), 1, RunStatus::finished);
        d.seed = 2;
        looseSeed2_ = s.create_run("default seed=2", "default", config_to_json(d).dump(), 2, RunStatus::stopped);
        loose2_ =
            s.create_run("r3-grpo", "r3-grpo", config_to_json(preset_config("r3-grpo")).dump(), 1, RunStatus::finished);
        // Sweep B: the defaults x 3 seeds, one run so far.
        SweepSpec b;
        b.seeds = 3;
        std::vector<SweepConfig> cb;
        sweepB_ = openSweep(s, b, &cb);
        addRun(s, cb[0], b, 1, sweepB_, RunStatus::finished);
    }

    void bySweepShowsParentsConfigurationsAndCounts() {
        RunDatabase db;
        QVERIFY(db.open(path_));
        RunBrowser b;
        b.setDatabase(&db);
        b.resize(1100, 520);
        b.show();
        QCOMPARE(b.groupTree()->isVisible(), false);  // the flat list by default
        b.setGroupBy(RunBrowser::GroupBy::sweep);
        QVERIFY(b.groupTree()->isVisible());
        const QStringList top = labels(b.groupTree());
        QCOMPARE(top.size(), 3);
        QVERIFY2(top[0].startsWith(QString("Sweep %1: 1 configuration \u00D7 3 seeds, 1/3 finished").arg(sweepB_)),
                 qPrintable(top[0]));
        QVERIFY2(top[1].startsWith(QString("Sweep %1: 2 configurations \u00D7 2 seeds, 2/4 finished").arg(sweepA_)),
                 qPrintable(top[1]));
        QVERIFY(top[1].contains("created"));
        QCOMPARE(top[2], QString("Not in a sweep: 3 runs, 2 finished"));
        // Sweep A's configurations, in the sweep's order, with their runs.
        QTreeWidgetItem* a = b.groupTree()->topLevelItem(1);
        QCOMPARE(a->childCount(), 2);
        QVERIFY2(a->child(0)->text(0).endsWith(": 2 runs, 2 finished"), qPrintable(a->child(0)->text(0)));
        QVERIFY(a->child(0)->text(0).contains("is_upper=1.5") || a->child(0)->text(0).startsWith("r3-tis"));
        QCOMPARE(a->child(0)->childCount(), 2);
        QVERIFY2(a->child(1)->text(0).contains("is_upper=5"), qPrintable(a->child(1)->text(0)));
        QCOMPARE(a->child(1)->childCount(), 1);
        QCOMPARE(a->child(1)->child(0)->text(RunBrowser::TreeStatus), QString("failed"));
        QCOMPARE(b.groupTree()->topLevelItem(2)->childCount(), 3);
        testing_shots::save(&b, "browser_grouped_by_sweep");

        // Selecting a parent selects (and overlays) every run under it.
        QSignalSpy sel(&b, &RunBrowser::selectionChanged);
        b.groupTree()->clearSelection();
        a->setSelected(true);
        QVERIFY(!sel.isEmpty());
        QList<int64_t> got = sel.last().at(0).value<QList<int64_t>>();
        std::sort(got.begin(), got.end());
        QCOMPARE(got, aRuns_);
        QCOMPARE(b.selectedRunIds().size(), 3);
        // The selection survives a refresh and the switch back to the list.
        b.refresh();
        QCOMPARE(b.selectedRunIds().size(), 3);
        b.setGroupBy(RunBrowser::GroupBy::none);
        QVERIFY(b.table()->isVisible());
        QCOMPARE(b.selectedRunIds().size(), 3);
    }

    void byConfigurationJoinsSeedsOfOneConfiguration() {
        RunDatabase db;
        QVERIFY(db.open(path_));
        RunBrowser b;
        b.setDatabase(&db);
        b.setGroupBy(RunBrowser::GroupBy::configuration);
        const QStringList top = labels(b.groupTree());
        // is_upper=1.5 (2 seeds), is_upper=5, r3-grpo, and the defaults: the
        // loose seeds 1 and 2 with sweep B's seed 1 (same configuration, seed aside).
        QCOMPARE(top.size(), 4);
        int defaults = -1;
        for (int i = 0; i < top.size(); ++i)
            if (b.groupTree()->topLevelItem(i)->childCount() == 3) defaults = i;
        QVERIFY2(defaults >= 0, qPrintable(top.join(" | ")));
        QVERIFY2(top[defaults].contains("3 runs, 2 finished (seeds 1, 1, 2)") ||
                     top[defaults].contains("3 runs, 2 finished (seeds 1, 2)"),
                 qPrintable(top[defaults]));
        int twoSeeds = 0;
        for (int i = 0; i < top.size(); ++i) twoSeeds += b.groupTree()->topLevelItem(i)->childCount() == 2;
        QCOMPARE(twoSeeds, 1);
    }

    void aRunWrittenElsewhereShowsOnTheNextRefresh() {
        RunDatabase db;
        QVERIFY(db.open(path_));
        RunBrowser b;
        b.setDatabase(&db);
        b.setGroupBy(RunBrowser::GroupBy::sweep);
        {
            // Another connection (another process, in the app) fills sweep B's seed 2.
            Store other = Store::open(path_.toStdString());
            SweepSpec spec;
            spec.seeds = 3;
            const auto configs = expand_sweep(spec, preset_config);
            addRun(other, configs[0], spec, 2, sweepB_, RunStatus::finished);
        }
        b.refresh();
        QVERIFY2(labels(b.groupTree())[0].contains("2/3 finished"), qPrintable(labels(b.groupTree())[0]));
        QCOMPARE(b.groupTree()->topLevelItem(0)->child(0)->childCount(), 2);
        // A filter keeps only matching runs under their groups.
        b.findChild<QLineEdit*>()->setText("r3-grpo");
        QCOMPARE(labels(b.groupTree()), QStringList{"Not in a sweep: 1 run, 1 finished"});
    }
};

QTEST_MAIN(RunGroupsTest)
#include "run_groups_test.moc"
