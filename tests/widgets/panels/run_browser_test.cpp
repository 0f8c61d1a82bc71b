// RunBrowser over a temporary store with three runs: table contents and
// sorting, selection signals, rename / notes / delete persisted to the store,
// colours, the "differences only" config diff against a pinned baseline and
// the metric summary (final / best / mean of last N).
// MLK_SCREENSHOT_DIR=<dir> also saves <dir>/browser.png.
#include <algorithm>
#include <cmath>
#include <memory>

#include <QHeaderView>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QPixmap>
#include <QTest>

#include "core/config/config.h"
#include "core/config/presets.h"
#include "core/store/store.h"
#include "widgets/panels/run_browser.h"
#include "widgets/data/run_data.h"

using namespace mlk;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QList<int64_t> sorted(QList<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace

class RunBrowserTest : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void listsEveryRunWithStats();
    void sortsNumerically();
    void selectionEmitsIds();
    void renamePersists();
    void notesPersist();
    void deleteWithAutoConfirm();
    void coloursAreStable();
    void configDiffDifferencesOnly();
    void refreshPicksUpNewRuns();
    void metricSummaryOfSelectedRuns();
    void screenshot();

private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<Store> store_;
    int64_t a_ = 0, b_ = 0, c_ = 0;
    Config ca_, cb_, cc_;
};

void RunBrowserTest::init() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    store_ = std::make_unique<Store>(Store::open(dir_->filePath("runs.db").toStdString()));
    ca_ = Config{};
    cb_ = preset_config("r3-tis");
    cb_.seed = 3;
    cc_ = Config{};
    cc_.seed = 7;
    cc_.rollout.precision = Dtype::f32;
    a_ = store_->create_run("baseline dense", "default", config_to_json(ca_).dump(), ca_.seed, RunStatus::finished);
    b_ = store_->create_run("moe tis", "r3-tis", config_to_json(cb_).dump(), cb_.seed, RunStatus::running);
    c_ = store_->create_run("fp32 rollout", "default", config_to_json(cc_).dump(), cc_.seed, RunStatus::failed);
    // rewards: a rises to 0.5, b peaks at 0.9 then 0.6, c has no k3 (NaN mean)
    const double ra[] = {0.1, 0.3, 0.5}, rb[] = {0.2, 0.9, 0.6}, rc[] = {0.05, 0.1, 0.15};
    for (int s = 0; s < 3; ++s) {
        StepRecord r;
        r.step = s;
        r.metrics = {{"reward_mean", ra[s]}, {"k3_kl", 0.001 * (s + 1)}};
        store_->append_step(a_, r);
        r.metrics = {{"reward_mean", rb[s]}, {"k3_kl", 0.01}};
        store_->append_step(b_, r);
        r.metrics = {{"reward_mean", rc[s]}};
        store_->append_step(c_, r);
    }
}

void RunBrowserTest::cleanup() {
    store_.reset();
    dir_.reset();
}

void RunBrowserTest::listsEveryRunWithStats() {
    RunBrowser br;
    br.setStore(store_.get());
    QTableWidget* t = br.table();
    QCOMPARE(t->rowCount(), 3);
    QCOMPARE(sorted(br.runIds()), sorted({a_, b_, c_}));
    QCOMPARE(br.runIds().front(), c_);  // newest first by default
    auto cell = [&](int64_t id, int col) {
        for (int r = 0; r < t->rowCount(); ++r)
            if (br.runIds()[r] == id) return t->item(r, col)->text();
        return QString();
    };
    QCOMPARE(cell(b_, RunBrowser::ColName), QString("moe tis"));
    QCOMPARE(cell(b_, RunBrowser::ColStatus), QString("running"));
    QCOMPARE(cell(b_, RunBrowser::ColPreset), QString("r3-tis"));
    QCOMPARE(cell(b_, RunBrowser::ColSteps), QString("3"));
    QCOMPARE(cell(b_, RunBrowser::ColFinalReward), QString("0.600"));
    QCOMPARE(cell(b_, RunBrowser::ColBestReward), QString("0.900"));
    QCOMPARE(cell(a_, RunBrowser::ColMeanK3), QString("0.002"));
    QCOMPARE(cell(c_, RunBrowser::ColMeanK3), QString("\u2014"));  // no k3_kl metric
    QVERIFY(!cell(a_, RunBrowser::ColCreated).isEmpty());
}

void RunBrowserTest::sortsNumerically() {
    RunBrowser br;
    br.setStore(store_.get());
    br.table()->sortByColumn(RunBrowser::ColBestReward, Qt::DescendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{b_, a_, c_}));
    br.table()->sortByColumn(RunBrowser::ColMeanK3, Qt::AscendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{c_, a_, b_}));  // NaN lowest
    br.table()->sortByColumn(RunBrowser::ColName, Qt::AscendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{a_, c_, b_}));
}

void RunBrowserTest::selectionEmitsIds() {
    RunBrowser br;
    br.setStore(store_.get());
    br.resize(900, 600);
    br.show();
    QVERIFY(QTest::qWaitForWindowExposed(&br));
    QSignalSpy spy(&br, &RunBrowser::selectionChanged);
    QTableWidget* t = br.table();
    const QList<int64_t> order = br.runIds();
    auto rowRect = [&](int64_t id) {
        return t->visualItemRect(t->item(static_cast<int>(order.indexOf(id)), RunBrowser::ColName));
    };
    QTest::mouseClick(t->viewport(), Qt::LeftButton, {}, rowRect(a_).center());
    QVERIFY(spy.count() >= 1);
    QCOMPARE(spy.last().at(0).value<QList<int64_t>>(), QList<int64_t>{a_});
    QTest::mouseClick(t->viewport(), Qt::LeftButton, Qt::ControlModifier, rowRect(c_).center());
    QCOMPARE(sorted(spy.last().at(0).value<QList<int64_t>>()), sorted({a_, c_}));
    QCOMPARE(sorted(br.selectedRunIds()), sorted({a_, c_}));
    // programmatic selection, and refresh keeps it without re-emitting
    br.selectRuns({b_});
    QCOMPARE(spy.last().at(0).value<QList<int64_t>>(), QList<int64_t>{b_});
    const int n = spy.count();
    br.refresh();
    QCOMPARE(spy.count(), n);
    QCOMPARE(br.selectedRunIds(), QList<int64_t>{b_});
}

void RunBrowserTest::renamePersists() {
    RunBrowser br;
    br.setStore(store_.get());
    QSignalSpy spy(&br, &RunBrowser::runRenamed);
    QVERIFY(br.renameRun(a_, "renamed by API"));
    QCOMPARE(qs(store_->run_info(a_)->name), QString("renamed by API"));
    QCOMPARE(spy.count(), 1);
    // in-place edit of the name cell
    QTableWidget* t = br.table();
    const int row = static_cast<int>(br.runIds().indexOf(b_));
    QTableWidgetItem* name = t->item(row, RunBrowser::ColName);
    QVERIFY(name->flags() & Qt::ItemIsEditable);
    QVERIFY(!(t->item(row, RunBrowser::ColStatus)->flags() & Qt::ItemIsEditable));
    name->setText("renamed in place");
    QCOMPARE(qs(store_->run_info(b_)->name), QString("renamed in place"));
    QCOMPARE(spy.count(), 2);
    // an empty name is refused and reverted
    t->item(static_cast<int>(br.runIds().indexOf(b_)), RunBrowser::ColName)->setText("   ");
    QCOMPARE(qs(store_->run_info(b_)->name), QString("renamed in place"));
    QCOMPARE(t->item(static_cast<int>(br.runIds().indexOf(b_)), RunBrowser::ColName)->text(),
             QString("renamed in place"));
}

void RunBrowserTest::notesPersist() {
    RunBrowser br;
    br.setStore(store_.get());
    QVERIFY(br.setNotes(c_, "diverged at step 2: fp32 rollout, check lr"));
    QCOMPARE(qs(store_->run_info(c_)->notes), QString("diverged at step 2: fp32 rollout, check lr"));
    const int row = static_cast<int>(br.runIds().indexOf(c_));
    QVERIFY(br.table()->item(row, RunBrowser::ColName)->toolTip().contains("diverged at step 2"));
    QVERIFY(!br.setNotes(9999, "no such run"));
}

void RunBrowserTest::deleteWithAutoConfirm() {
    RunBrowser br;
    br.setStore(store_.get());
    br.setBaseline(b_);
    br.selectRuns({b_, c_});
    QSignalSpy deleted(&br, &RunBrowser::runsDeleted);
    QSignalSpy sel(&br, &RunBrowser::selectionChanged);
    br.setConfirmDeletes(false);
    QCOMPARE(br.deleteRuns({b_}), 1);
    QVERIFY(!store_->run_info(b_).has_value());
    QVERIFY(store_->run_info(a_).has_value());
    QCOMPARE(br.table()->rowCount(), 2);
    QCOMPARE(sorted(br.runIds()), sorted({a_, c_}));
    QCOMPARE(deleted.count(), 1);
    QCOMPARE(deleted.last().at(0).value<QList<int64_t>>(), QList<int64_t>{b_});
    QVERIFY(!br.baseline().has_value());  // the deleted baseline is unpinned
    QCOMPARE(sel.last().at(0).value<QList<int64_t>>(), QList<int64_t>{c_});
}

void RunBrowserTest::coloursAreStable() {
    RunBrowser br;
    br.setStore(store_.get());
    const auto& pal = RunBrowser::defaultPalette();
    QVERIFY(pal.size() >= 8);
    QCOMPARE(br.runColour(a_), RunDataStore::defaultColour(a_));  // the chart layer's colour
    QCOMPARE(br.runColour(a_ + pal.size()), br.runColour(a_));
    QVERIFY(br.runColour(a_) != br.runColour(b_));
    br.setColourProvider([](int64_t id) { return id == 2 ? QColor(Qt::black) : QColor(); });
    QCOMPARE(br.runColour(2), QColor(Qt::black));
    QCOMPARE(br.runColour(1), RunDataStore::defaultColour(1));
    br.setRunColour(1, QColor(Qt::green));
    QCOMPARE(br.runColour(1), QColor(Qt::green));
    br.refresh();
    QCOMPARE(br.runColour(1), QColor(Qt::green));
}

void RunBrowserTest::configDiffDifferencesOnly() {
    RunBrowser br;
    br.setStore(store_.get());
    QVERIFY(br.differencesOnly());  // on by default
    QSignalSpy base(&br, &RunBrowser::baselineChanged);
    br.setBaseline(a_);
    QCOMPARE(base.count(), 1);
    br.selectRuns({b_});
    QStringList expected;
    for (const auto& d : config_diff(ca_, cb_)) expected << qs(d.key);
    QVERIFY(expected.size() >= 3);
    QCOMPARE(br.diffKeys(), expected);
    QTableWidget* d = br.diffTable();
    QCOMPARE(d->columnCount(), 3);
    QVERIFY(d->horizontalHeaderItem(1)->text().contains("baseline"));
    const int row = static_cast<int>(expected.indexOf("model.kind"));
    QCOMPARE(d->item(row, 1)->text(), QString("dense"));
    QCOMPARE(d->item(row, 2)->text(), QString("moe"));
    // all keys when unchecked
    br.setDifferencesOnly(false);
    QCOMPARE(d->rowCount(), static_cast<int>(config_schema().size()));
    br.setDifferencesOnly(true);
    // two runs against the baseline: the union of differences, three value columns
    br.selectRuns({b_, c_});
    QStringList both;
    for (const ConfigKey& k : config_schema())
        if (config_value_text(ca_, k.key) != config_value_text(cb_, k.key) ||
            config_value_text(ca_, k.key) != config_value_text(cc_, k.key))
            both << qs(k.key);
    QCOMPARE(br.diffKeys(), both);
    QCOMPARE(d->columnCount(), 4);
    // baseline against itself only: identical -> no key rows
    br.setBaseline(c_);
    br.selectRuns({c_});
    QStringList vsDefaults;
    for (const auto& x : config_diff(Config{}, cc_)) vsDefaults << qs(x.key);
    QCOMPARE(br.diffKeys(), vsDefaults);  // a lone run is compared with the defaults
}

void RunBrowserTest::refreshPicksUpNewRuns() {
    RunBrowser br;
    br.setStore(store_.get());
    const int64_t d = store_->create_run("late run", "default", config_to_json(Config{}).dump(), 1);
    QCOMPARE(br.table()->rowCount(), 3);
    br.refresh();
    QCOMPARE(br.table()->rowCount(), 4);
    QVERIFY(br.runIds().contains(d));
    StepRecord r;
    r.step = 0;
    r.metrics = {{"reward_mean", 0.75}};
    store_->append_step(d, r);
    br.refresh();
    const int row = static_cast<int>(br.runIds().indexOf(d));
    QCOMPARE(br.table()->item(row, RunBrowser::ColFinalReward)->text(), QString("0.750"));
    // a path works too
    RunBrowser byPath;
    QVERIFY(byPath.setDatabase(dir_->filePath("runs.db")));
    QCOMPARE(byPath.table()->rowCount(), 4);
    QString err;
    QVERIFY(!byPath.setDatabase(dir_->filePath("missing-dir/x/runs.db"), &err));
    QVERIFY(!err.isEmpty());
    QCOMPARE(byPath.table()->rowCount(), 4);
}

void RunBrowserTest::metricSummaryOfSelectedRuns() {
    RunBrowser br;
    br.setStore(store_.get());
    MetricSummary* summary = br.metricSummary();
    QTableWidget* t = summary->table();
    br.selectRuns({a_, b_});
    QCOMPARE(t->rowCount(), 0);  // read only while its tab is shown
    br.lowerTabs()->setCurrentWidget(summary);
    QCOMPARE(t->rowCount(), 2);
    const auto row = [&](int64_t id) {
        for (int r = 0; r < t->rowCount(); ++r)
            if (t->item(r, MetricSummary::ColRun)->data(Qt::UserRole).toLongLong() == id) return r;
        return -1;
    };
    const auto cell = [&](int64_t id, int col) { return t->item(row(id), col)->text(); };
    // reward_mean of b: 0.2, 0.9, 0.6 -> final 0.6 at 2, best 0.9 at 1, mean of the 3 = 0.5667.
    QCOMPARE(cell(b_, MetricSummary::ColFinal), QString("0.6"));
    QCOMPARE(cell(b_, MetricSummary::ColFinalStep), QString("2"));
    QCOMPARE(cell(b_, MetricSummary::ColBest), QString("0.9"));
    QCOMPARE(cell(b_, MetricSummary::ColBestStep), QString("1"));
    QCOMPARE(cell(b_, MetricSummary::ColMeanLast), QString("0.56667"));
    // Sorted by number: b's best (0.9) above a's (0.5) in descending order.
    t->sortByColumn(MetricSummary::ColBest, Qt::DescendingOrder);
    QCOMPARE(t->item(0, MetricSummary::ColRun)->data(Qt::UserRole).toLongLong(), b_);

    // A lower-is-better metric: the best K3 KL is the smallest.
    QVERIFY(summary->metricChoices().contains("k3_kl"));
    summary->setMetric("k3_kl");
    QCOMPARE(cell(a_, MetricSummary::ColBest), QString("0.001"));
    QCOMPARE(cell(a_, MetricSummary::ColBestStep), QString("0"));

    // No selection: every run; c has no K3 KL and sorts last either way.
    br.selectRuns({});
    QCOMPARE(t->rowCount(), 3);
    QCOMPARE(cell(c_, MetricSummary::ColBest), QString::fromUtf8("\u2014"));
    for (const Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
        t->sortByColumn(MetricSummary::ColBest, order);
        QCOMPARE(t->item(2, MetricSummary::ColRun)->data(Qt::UserRole).toLongLong(), c_);
    }
}

void RunBrowserTest::screenshot() {
    const QByteArray dir = qgetenv("MLK_SCREENSHOT_DIR");
    RunBrowser br;
    br.setStore(store_.get());
    br.setNotes(a_, "reference run");
    br.setBaseline(a_);
    br.selectRuns({b_, c_});
    br.resize(960, 640);
    br.show();
    QTest::qWait(50);
    for (const char* name : {"browser", "browser_summary"}) {
        if (QLatin1String(name) == QLatin1String("browser_summary")) {
            br.lowerTabs()->setCurrentWidget(br.metricSummary());
            QTest::qWait(20);
        }
        const QPixmap shot = br.grab();  // rendered in every run; saved when asked
        QVERIFY(!shot.isNull() && shot.width() >= 200 && shot.height() >= 150);
        if (!dir.isEmpty()) QVERIFY(shot.save(QString::fromLocal8Bit(dir) + "/" + name + ".png"));
    }
}

QTEST_MAIN(RunBrowserTest)
#include "run_browser_test.moc"
