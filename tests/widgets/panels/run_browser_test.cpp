// RunBrowser over a temporary run database with three runs: table contents
// and sorting (missing values last either way), selection signals, rename /
// notes / delete persisted to the store, colours, a paused run, the
// "differences only" config diff against a pinned baseline, the metric
// summary (final / best / mean of last N), and what the rendered browser
// shows. MLK_SCREENSHOT_DIR=<dir> also saves <dir>/browser.png and
// <dir>/browser_summary.png.
#include <algorithm>
#include <cmath>
#include <memory>

#include <QApplication>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QStyleOptionViewItem>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>

#include "core/config/config.h"
#include "core/config/presets.h"
#include "core/store/run_lock.h"
#include "core/store/store.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/run_browser.h"
#include "widgets/panels/run_browser_parts.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QList<int64_t> sorted(QList<int64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// A table cell's rectangle in the coordinates of `top` (an ancestor).
QRect cellRect(const QWidget* top, const QTableWidget* t, int row, int col) {
    return t->visualItemRect(t->item(row, col)).translated(t->viewport()->mapTo(top, QPoint(0, 0)));
}

// Pixels of `img` inside `rect` whose channels are each within `tol` of `c`.
int pixelsNear(const QImage& img, const QRect& rect, const QColor& c, int tol = 0) {
    int n = 0;
    const QRect r = rect.intersected(img.rect());
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) {
            const QColor p = img.pixelColor(x, y);
            if (std::abs(p.red() - c.red()) <= tol && std::abs(p.green() - c.green()) <= tol &&
                std::abs(p.blue() - c.blue()) <= tol)
                ++n;
        }
    return n;
}

}  // namespace

class RunBrowserTest : public QObject {
    Q_OBJECT
private slots:
    void init();
    void cleanup();
    void listsEveryRunWithStats();
    void theRunCountSaysHowManyTheFilterShows();
    void sortsNumerically();
    void selectionEmitsIds();
    void renamePersists();
    void notesPersist();
    void deleteWithAutoConfirm();
    void coloursAreStable();
    void configDiffDifferencesOnly();
    void configDiffGreysWhatARunDoesNotRead();
    void configDiffSaysWhereTheRunsRan();
    void configDiffCutsLongRunNamesInTheMiddle();
    void configDiffGivesTwoRunsTheRoomThereIs();
    void hoveringARunSaysWhichForTheCharts();
    void refreshPicksUpNewRuns();
    void metricSummaryOfSelectedRuns();
    void pausedRunShowsPaused();
    void statusColumnWidensWhenARunIsInterrupted();
    void followsTheDatabase();
    void aReconnectKeepsSelectionAndBaseline();
    void rendersStatusSwatchAndDiffColours();
    void diffReferenceIsThePinnedRunElseTheOneSelectedFirst();

private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<Store> store_;  // the test's own connection, for writing and checking
    std::unique_ptr<RunWriterLock> writingB_;
    std::unique_ptr<RunDatabase> db_;
    int64_t a_ = 0, b_ = 0, c_ = 0;
    Config ca_, cb_, cc_;
};

void RunBrowserTest::init() {
    QTest::failOnWarning(QRegularExpression("QString::arg"));  // once printed on every refresh
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    store_ = std::make_unique<Store>(Store::open(dir_->filePath("runs.db").toStdString()));
    db_ = std::make_unique<RunDatabase>();
    QVERIFY(db_->open(dir_->filePath("runs.db")));
    ca_ = Config{};
    cb_ = preset_config("r3-tis");
    cb_.seed = 3;
    cc_ = Config{};
    cc_.seed = 7;
    cc_.rollout.precision = Dtype::f32;
    a_ = store_->create_run("baseline dense", "default", config_to_json(ca_).dump(), ca_.seed, RunStatus::finished);
    b_ = store_->create_run("moe tis", "r3-tis", config_to_json(cb_).dump(), cb_.seed, RunStatus::running);
    // b's writer is alive: without its lock a "running" run reads "interrupted".
    writingB_ = std::make_unique<RunWriterLock>(RunWriterLock::acquire(store_->path(), b_));
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
    writingB_.reset();
    db_.reset();
    store_.reset();
    dir_.reset();
}

// "8 run(s)" under a filter that shows 2 rows read as if the filter did
// nothing: the count says how many rows of how many the table shows.
void RunBrowserTest::theRunCountSaysHowManyTheFilterShows() {
    RunBrowser br;
    br.setDatabase(db_.get());
    auto* info = br.findChild<QLabel*>("runInfo");
    auto* filter = br.findChild<QLineEdit*>("runFilter");
    QVERIFY(info && filter);
    QVERIFY2(info->text().startsWith("3 run(s)"), qPrintable(info->text()));
    filter->setText(QStringLiteral("moe"));
    QVERIFY2(info->text().startsWith("1 of 3 run(s) match the filter"), qPrintable(info->text()));
    br.refresh();  // a new step or run reloads the list: the filter's count stays
    QVERIFY2(info->text().startsWith("1 of 3 run(s) match the filter"), qPrintable(info->text()));
    filter->clear();
    QVERIFY2(info->text().startsWith("3 run(s)"), qPrintable(info->text()));
}

void RunBrowserTest::listsEveryRunWithStats() {
    store_->set_machine(a_, "Some CPU, SIMD avx2, 4 kernel threads");
    RunBrowser br;
    br.setDatabase(db_.get());
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
    // run_stats' statistics in value_text()'s format, as the metric summary and the CLI.
    QCOMPARE(cell(b_, RunBrowser::ColFinalReward), QString("0.6"));
    QCOMPARE(cell(b_, RunBrowser::ColBestReward), QString("0.9"));
    QCOMPARE(cell(a_, RunBrowser::ColMeanK3), QString("0.002"));
    QCOMPARE(cell(c_, RunBrowser::ColMeanK3), QString("\u2014"));  // no k3_kl metric
    QVERIFY(!cell(a_, RunBrowser::ColCreated).isEmpty());
    const auto createdTip = [&](int64_t id) {
        return t->item(static_cast<int>(br.runIds().indexOf(id)), RunBrowser::ColCreated)->toolTip();
    };
    QVERIFY2(createdTip(a_).endsWith("\nRan on Some CPU, SIMD avx2, 4 kernel threads"), qPrintable(createdTip(a_)));
    QVERIFY2(!createdTip(b_).contains("Ran on"), "a run that recorded no machine names none");
}

void RunBrowserTest::sortsNumerically() {
    RunBrowser br;
    br.setDatabase(db_.get());
    br.table()->sortByColumn(RunBrowser::ColBestReward, Qt::DescendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{b_, a_, c_}));
    // c has no k3_kl: last whichever the order.
    br.table()->sortByColumn(RunBrowser::ColMeanK3, Qt::AscendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{a_, b_, c_}));
    br.table()->sortByColumn(RunBrowser::ColMeanK3, Qt::DescendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{b_, a_, c_}));
    br.table()->sortByColumn(RunBrowser::ColId, Qt::AscendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{a_, b_, c_}));
    br.table()->sortByColumn(RunBrowser::ColName, Qt::AscendingOrder);
    QCOMPARE(br.runIds(), (QList<int64_t>{a_, c_, b_}));
}

void RunBrowserTest::selectionEmitsIds() {
    RunBrowser br;
    br.setDatabase(db_.get());
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
    br.setDatabase(db_.get());
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
    br.setDatabase(db_.get());
    QVERIFY(br.setNotes(c_, "diverged at step 2: fp32 rollout, check lr"));
    QCOMPARE(qs(store_->run_info(c_)->notes), QString("diverged at step 2: fp32 rollout, check lr"));
    const int row = static_cast<int>(br.runIds().indexOf(c_));
    QVERIFY(br.table()->item(row, RunBrowser::ColName)->toolTip().contains("diverged at step 2"));
    QVERIFY(!br.setNotes(9999, "no such run"));
}

void RunBrowserTest::deleteWithAutoConfirm() {
    RunBrowser br;
    br.setDatabase(db_.get());
    br.setBaseline(b_);
    br.selectRuns({b_, c_});
    QSignalSpy deleted(&br, &RunBrowser::runsDeleted);
    QSignalSpy sel(&br, &RunBrowser::selectionChanged);
    br.setConfirmDeletes(false);
    // b's writer is alive: b stays, and the browser says why.
    QCOMPARE(br.deleteRuns({b_}), 0);
    QVERIFY(store_->run_info(b_).has_value());
    QVERIFY2(br.lastError().contains("is being written; stop it first"), qPrintable(br.lastError()));
    QCOMPARE(deleted.count(), 0);
    // The writer's next step reloads the list; the refusal stays readable.
    br.refresh();
    const QString line = br.findChild<QLabel*>("runInfo")->text();
    QVERIFY2(line.contains("is being written; stop it first"), qPrintable(line));
    writingB_.reset();  // its writer ends
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
    br.setDatabase(db_.get());
    const auto& pal = palette::runColours();
    QVERIFY(pal.size() >= 8);
    QCOMPARE(br.runColour(a_), palette::runColour(a_));  // the charts' colour
    QCOMPARE(br.runColour(a_ + pal.size()), br.runColour(a_));
    QVERIFY(br.runColour(a_) != br.runColour(b_));
    br.setColourProvider([](int64_t id) { return id == 2 ? QColor(Qt::black) : QColor(); });
    QCOMPARE(br.runColour(2), QColor(Qt::black));
    QCOMPARE(br.runColour(1), palette::runColour(1));
    br.setRunColour(1, QColor(Qt::green));
    QCOMPARE(br.runColour(1), QColor(Qt::green));
    br.refresh();
    QCOMPARE(br.runColour(1), QColor(Qt::green));
}

// Two runs of the defaults that differ in an IS bound differ in nothing that
// acted (the defaults recompute the old policy): the bound is grey with why,
// not highlighted. A run that applies IS reads it: highlighted, not grey.
void RunBrowserTest::configDiffGreysWhatARunDoesNotRead() {
    Config loose = Config{};
    loose.correction.is_upper = 5;
    Config tis = loose;
    tis.rl.old_policy = OldPolicyMode::decoupled;
    tis.correction.is_level = IsLevel::token;
    const int64_t l = store_->create_run("bound only", "default", config_to_json(loose).dump(), 1, RunStatus::finished);
    const int64_t t = store_->create_run("tis", "default", config_to_json(tis).dump(), 1, RunStatus::finished);
    RunBrowser br;
    br.setDatabase(db_.get());
    br.setBaseline(a_);  // the defaults, seed 1
    br.selectRuns({l, t});
    QTableWidget* d = br.diffTable();
    const int row = static_cast<int>(br.diffKeys().indexOf("correction.is_upper"));
    QVERIFY(row >= 0);
    QTableWidgetItem* baseline = d->item(row, 1);
    QTableWidgetItem* unread = d->item(row, 2);
    QTableWidgetItem* read = d->item(row, 3);
    QCOMPARE(unread->text(), QString("5.0"));
    QCOMPARE(unread->foreground().color(), palette::neutralInk());
    QVERIFY2(unread->toolTip().contains("Not read by this run: rl.old_policy=recompute applies no correction"),
             qPrintable(unread->toolTip()));
    QVERIFY(unread->background() != QBrush(palette::changedSetting()));
    QCOMPARE(baseline->foreground().color(), palette::neutralInk());
    QCOMPARE(read->text(), QString("5.0"));
    QCOMPARE(read->background(), QBrush(palette::changedSetting()));
    QVERIFY(read->toolTip().isEmpty());
}

// Sweep runs' names share a long start and differ at the end: a header
// keeps the run's "#id" and the name's end, the whole name in its tooltip.
void RunBrowserTest::configDiffCutsLongRunNamesInTheMiddle() {
    const QString start = "tis-sweep rl.old_policy=decoupled correction.is_level=token correction.is_upper=";
    const int64_t two = store_->create_run((start + "2 seed=1").toStdString(), "default",
                                           config_to_json(Config{}).dump(), 1, RunStatus::finished);
    const int64_t five = store_->create_run((start + "5 seed=1").toStdString(), "default",
                                            config_to_json(Config{}).dump(), 1, RunStatus::finished);
    RunBrowser br;
    br.resize(900, 600);
    br.show();
    QVERIFY(QTest::qWaitForWindowExposed(&br));
    br.setDatabase(db_.get());
    br.selectRuns({two, five});
    QTableWidget* d = br.diffTable();
    const QString whole = QString("#%1 %2").arg(two).arg(start + "2 seed=1");
    QCOMPARE(d->horizontalHeaderItem(1)->text(), whole);
    QCOMPARE(d->horizontalHeaderItem(1)->toolTip(), whole);
    // What the header paints.
    auto* header = dynamic_cast<run_browser::MiddleElidingHeader*>(d->horizontalHeader());
    QVERIFY(header);
    const auto shown = [&] { return header->shownText(1); };
    QVERIFY2(shown().startsWith(QString("#%1 tis-sweep").arg(two)) && shown().endsWith("2 seed=1") &&
                 shown().contains(QChar(0x2026)),
             qPrintable(shown()));
    // Widened by the user, it shows more of the name.
    const qsizetype before = shown().size();
    d->setColumnWidth(1, d->columnWidth(1) + 150);
    QVERIFY(shown().size() > before);
}

// Two runs in a wide window: each column holds its run's whole name (a cap
// of 220 px would cut the first to "#6 collapse-de…-policy seed=3" beside an
// empty last column); many runs still share the width.
void RunBrowserTest::configDiffGivesTwoRunsTheRoomThereIs() {
    std::vector<int64_t> ids;
    for (const char* name : {"collapse-demo-on-policy seed=3", "collapse-demo-fp8-bypass seed=3"})
        ids.push_back(store_->create_run(name, "default", config_to_json(Config{}).dump(), 1, RunStatus::finished));
    RunBrowser br;
    br.resize(1300, 600);
    br.show();
    QVERIFY(QTest::qWaitForWindowExposed(&br));
    br.setDatabase(db_.get());
    br.selectRuns({ids[0], ids[1]});
    QTableWidget* d = br.diffTable();
    auto* header = dynamic_cast<run_browser::MiddleElidingHeader*>(d->horizontalHeader());
    QVERIFY(header);
    QCOMPARE(header->shownText(1), QString("#%1 collapse-demo-on-policy seed=3").arg(ids[0]));
    QVERIFY2(d->columnWidth(1) > 220, qPrintable(QString::number(d->columnWidth(1))));
}

// The charts bring the hovered run's line forward: the browser says which
// run the mouse is on, and none once it leaves the list.
void RunBrowserTest::hoveringARunSaysWhichForTheCharts() {
    RunBrowser br;
    br.resize(900, 600);
    br.show();
    QVERIFY(QTest::qWaitForWindowExposed(&br));
    br.setDatabase(db_.get());
    QTableWidget* t = br.table();
    QSignalSpy hovered(&br, &RunBrowser::runHovered);
    const int row = static_cast<int>(br.runIds().indexOf(b_));
    const QPoint onRow = t->visualRect(t->model()->index(row, RunBrowser::ColName)).center();
    // (From elsewhere first: a move to where the cursor already is moves nothing.)
    QTest::mouseMove(t->viewport(), onRow + QPoint(0, 1));
    QTest::mouseMove(t->viewport(), onRow);
    QTRY_VERIFY_WITH_TIMEOUT(!hovered.isEmpty(), kEventDeadlineMs);
    QCOMPARE(hovered.last().front().toLongLong(), b_);
    // A new run lands in the list under the still mouse: the run under it
    // now is the one the charts bring forward, not the one that was there.
    QCursor::setPos(t->viewport()->mapToGlobal(onRow));
    const int64_t added = store_->create_run("added", "default", config_to_json(ca_).dump(), 9, RunStatus::finished);
    br.refresh();
    const int64_t under = br.runIds().at(t->indexAt(onRow).row());
    QVERIFY(under != b_);
    QTRY_COMPARE_WITH_TIMEOUT(hovered.last().front().toLongLong(), under, kEventDeadlineMs);
    Q_UNUSED(added);
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(t->viewport(), &leave);
    QCOMPARE(hovered.last().front().toLongLong(), int64_t(0));
}

// Where two runs were made is a first row of their diff, "(ran on)",
// compared like a setting; with fewer than two runs that recorded it (a
// lone run against the defaults, runs from before schema v6) there is none.
void RunBrowserTest::configDiffSaysWhereTheRunsRan() {
    const std::string two = "Some CPU, SIMD avx512, 2 kernel threads", one = "Some CPU, SIMD avx512, 1 kernel thread";
    store_->set_machine(a_, two);
    store_->set_machine(c_, one);
    RunBrowser br;
    br.setDatabase(db_.get());
    br.selectRuns({a_});
    QVERIFY(!br.diffKeys().contains("(ran on)"));
    br.selectRuns({a_, b_});
    QVERIFY2(!br.diffKeys().contains("(ran on)"), "b recorded none");
    br.selectRuns({a_, c_});
    QCOMPARE(br.diffKeys().front(), QString("(ran on)"));
    QTableWidget* d = br.diffTable();
    QCOMPARE(d->item(0, 1)->text(), qs(two));
    QCOMPARE(d->item(0, 2)->text(), qs(one));
    QVERIFY(d->item(0, 0)->toolTip().contains("Not a setting"));
    store_->set_machine(c_, two);
    br.refresh();
    br.selectRuns({a_, c_});
    QVERIFY2(!br.diffKeys().contains("(ran on)"), "the same machine is no difference");
    br.setDifferencesOnly(false);
    QCOMPARE(br.diffKeys().front(), QString("(ran on)"));
}

void RunBrowserTest::configDiffDifferencesOnly() {
    RunBrowser br;
    br.setDatabase(db_.get());
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
    br.setDatabase(db_.get());
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
    QCOMPARE(br.table()->item(row, RunBrowser::ColFinalReward)->text(), QString("0.75"));
}

void RunBrowserTest::metricSummaryOfSelectedRuns() {
    RunBrowser br;
    br.setDatabase(db_.get());
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

void RunBrowserTest::pausedRunShowsPaused() {
    RunBrowser br;
    br.setDatabase(db_.get());
    const auto status = [&](int64_t id) {
        return br.table()->item(static_cast<int>(br.runIds().indexOf(id)), RunBrowser::ColStatus);
    };
    store_->set_status(b_, RunStatus::paused);  // as the worker does when it holds a run
    br.refresh();
    QCOMPARE(status(b_)->text(), QString("paused"));
    QCOMPARE(status(b_)->foreground().color(), palette::statusColour("paused"));
    QCOMPARE(status(a_)->foreground().color(), palette::statusColour("finished"));
    QVERIFY(palette::statusColour("paused") != palette::statusColour("running"));
    store_->set_status(b_, RunStatus::running);  // resumed
    br.refresh();
    QCOMPARE(status(b_)->text(), QString("running"));
    QCOMPARE(status(b_)->foreground().color(), palette::statusColour("running"));
}

void RunBrowserTest::statusColumnWidensWhenARunIsInterrupted() {
    RunBrowser br;
    br.setDatabase(db_.get());
    QTableWidget* t = br.table();
    const int row = static_cast<int>(br.runIds().indexOf(b_));
    QCOMPARE(t->item(row, RunBrowser::ColStatus)->text(), QString("running"));
    // A width the user dragged survives polls that change nothing...
    t->setColumnWidth(RunBrowser::ColStatus, 40);
    br.refresh();
    QCOMPARE(t->columnWidth(RunBrowser::ColStatus), 40);
    // ...but not a status the column has not shown: the run's writer dies (a
    // killed CLI), so the same rows hold a longer word.
    writingB_.reset();
    br.refresh();
    QCOMPARE(t->item(row, RunBrowser::ColStatus)->text(), QString("interrupted"));
    QStyleOptionViewItem opt;
    opt.initFrom(t);
    const int needs = t->itemDelegate()->sizeHint(opt, t->model()->index(row, RunBrowser::ColStatus)).width();
    QVERIFY2(t->columnWidth(RunBrowser::ColStatus) >= needs,
             qPrintable(QString("status column %1 px, \"interrupted\" needs %2")
                            .arg(t->columnWidth(RunBrowser::ColStatus))
                            .arg(needs)));
}

void RunBrowserTest::followsTheDatabase() {
    RunBrowser br;
    br.setDatabase(db_.get());
    br.setBaseline(a_);
    QSignalSpy base(&br, &RunBrowser::baselineChanged);
    const QString other = dir_->filePath("other.db");
    Store::open(other.toStdString()).create_run("elsewhere", "default", "{}", 1, RunStatus::stopped);
    QVERIFY(db_->open(other));  // opened in the shared database: the table starts over
    QCOMPARE(br.table()->rowCount(), 1);
    QCOMPARE(br.table()->item(0, RunBrowser::ColName)->text(), QString("elsewhere"));
    QVERIFY(!br.baseline().has_value());
    QCOMPARE(base.last().at(0).toLongLong(), -1LL);
    QString err;
    QVERIFY(!db_->open(dir_->filePath("missing-dir/x/runs.db"), &err));  // refused: nothing changes
    QVERIFY(err.contains("missing-dir"));
    QCOMPARE(br.table()->rowCount(), 1);
    db_->close();
    QCOMPARE(br.table()->rowCount(), 0);
    QVERIFY(br.findChild<QLabel*>("runInfo")->text().contains("No run database open"));
}

// A transient error makes RunDatabase reconnect to the same file: that is no
// File > Open, so the user's selection and pinned baseline stay, and what
// another process wrote meanwhile shows.
void RunBrowserTest::aReconnectKeepsSelectionAndBaseline() {
    RunBrowser br;
    br.setDatabase(db_.get());
    br.selectRuns({a_, c_});
    br.setBaseline(c_);
    QSignalSpy opened(db_.get(), &RunDatabase::opened);
    QSignalSpy changed(db_.get(), &RunDatabase::changed);
    const int64_t d = store_->create_run("written meanwhile", "default", "{}", 9, RunStatus::stopped);
    QVERIFY(db_->reconnect());
    QCOMPARE(opened.count(), 0);
    QCOMPARE(changed.count(), 1);
    br.refresh();  // what the window's coalesced changed() handler does
    QCOMPARE(br.table()->rowCount(), 4);
    QCOMPARE(sorted(br.selectedRunIds()), sorted({a_, c_}));
    QCOMPARE(br.baseline().value_or(-1), c_);
    QVERIFY(d > c_);
}

void RunBrowserTest::rendersStatusSwatchAndDiffColours() {
    RunBrowser br;
    br.setDatabase(db_.get());
    br.setNotes(a_, "reference run");
    br.setBaseline(a_);
    br.selectRuns({b_, c_});
    br.resize(960, 640);
    br.show();
    QVERIFY(QTest::qWaitForWindowExposed(&br));
    const QString dir = qEnvironmentVariable("MLK_SCREENSHOT_DIR");
    QImage shot = br.grab().toImage();
    if (!dir.isEmpty()) QVERIFY(shot.save(dir + "/browser.png"));
    QTableWidget* t = br.table();
    const auto row = [&](int64_t id) { return static_cast<int>(br.runIds().indexOf(id)); };

    // The swatch of a (not selected) is drawn in a's colour, and only there.
    const QColor ca = br.runColour(a_);
    QVERIFY(pixelsNear(shot, cellRect(&br, t, row(a_), RunBrowser::ColColour), ca) >= 60);
    QCOMPARE(pixelsNear(shot, cellRect(&br, t, row(b_), RunBrowser::ColColour), ca), 0);
    QVERIFY(t->item(row(a_), RunBrowser::ColColour)->toolTip().contains(ca.name()));
    // The baseline's id cell carries the flag and says why.
    QVERIFY(t->item(row(a_), RunBrowser::ColId)->text().contains(QString::fromUtf8("⚑")));
    QCOMPARE(t->item(row(a_), RunBrowser::ColId)->toolTip(), QString("Baseline of the config diff"));
    // "finished" is written in the status colour (anti-aliased: near it).
    const QRect status = cellRect(&br, t, row(a_), RunBrowser::ColStatus);
    QCOMPARE(t->item(row(a_), RunBrowser::ColStatus)->text(), QString("finished"));
    QVERIFY(pixelsNear(shot, status, palette::statusColour("finished"), 40) >= 3);
    QCOMPARE(pixelsNear(shot, status, palette::statusColour("failed"), 40), 0);

    // Config diff: b's model.kind differs from the baseline's and is
    // highlighted; the baseline's own column is not.
    QTableWidget* d = br.diffTable();
    const int kind = static_cast<int>(br.diffKeys().indexOf("model.kind"));
    QVERIFY(kind >= 0);
    // b's column, by its header ("#<id> <name>"): the selected runs follow the
    // table's order, not the order they were selected in.
    int colB = -1;
    for (int col = 1; col < d->columnCount(); ++col)
        if (d->horizontalHeaderItem(col)->text().startsWith(QStringLiteral("#%1 ").arg(b_))) colB = col;
    QVERIFY(colB > 1);
    QVERIFY(d->horizontalHeaderItem(1)->text().startsWith(QStringLiteral("baseline #%1 ").arg(a_)));
    QCOMPARE(d->item(kind, colB)->text(), QString("moe"));
    QCOMPARE(d->item(kind, colB)->background().color(), palette::changedSetting());
    const QRect changed = cellRect(&br, d, kind, colB), same = cellRect(&br, d, kind, 1);
    QVERIFY(pixelsNear(shot, changed, palette::changedSetting()) > changed.width() * changed.height() / 3);
    QCOMPARE(pixelsNear(shot, same, palette::changedSetting()), 0);

    // The metric summary: b's final reward, and its run cell drawn in b's colour.
    br.lowerTabs()->setCurrentWidget(br.metricSummary());
    QTest::qWait(20);
    shot = br.grab().toImage();
    if (!dir.isEmpty()) QVERIFY(shot.save(dir + "/browser_summary.png"));
    QTableWidget* s = br.metricSummary()->table();
    int rb = -1;
    for (int r = 0; r < s->rowCount(); ++r)
        if (s->item(r, MetricSummary::ColRun)->data(Qt::UserRole).toLongLong() == b_) rb = r;
    QVERIFY(rb >= 0);
    QCOMPARE(s->item(rb, MetricSummary::ColFinal)->text(), QString("0.6"));
    QVERIFY(pixelsNear(shot, cellRect(&br, s, rb, MetricSummary::ColRun), br.runColour(b_)) >= 30);
}

QTEST_MAIN(RunBrowserTest)
#include "run_browser_test.moc"

// The diff's reference ("vs run N (first selected)") is the pinned baseline,
// else the run the user selected first, not the top-most row, whatever the
// table's order; a multi-selection can pin it from the menu.
void RunBrowserTest::diffReferenceIsThePinnedRunElseTheOneSelectedFirst() {
    RunBrowser br;
    br.setDatabase(db_.get());
    br.resize(900, 500);
    br.show();
    QVERIFY(QTest::qWaitForWindowExposed(&br));
    QTableWidget* t = br.table();
    const auto clickRun = [&](int64_t id, Qt::KeyboardModifiers mods) {
        for (int r = 0; r < t->rowCount(); ++r)
            if (t->item(r, RunBrowser::ColId)->text().toLongLong() == id) {
                // The ID cell (not the editable name), and never two clicks
                // within a double-click.
                QTest::qWait(QApplication::doubleClickInterval() + 20);
                const QRect cell = t->visualItemRect(t->item(r, RunBrowser::ColId));
                QTest::mouseClick(t->viewport(), Qt::LeftButton, mods, cell.center());
                return;
            }
        QFAIL("no row for the run");
    };
    // Newest first in the table: c above a. The user picks a, then c.
    clickRun(a_, {});
    clickRun(c_, Qt::ControlModifier);
    QCOMPARE(br.selectedRunIds(), (QList<int64_t>{a_, c_}));
    QVERIFY(br.diffTable()->horizontalHeaderItem(1)->text().startsWith(QStringLiteral("#%1 ").arg(a_)));
    // The other order: c first.
    clickRun(c_, {});
    clickRun(a_, Qt::ControlModifier);
    QCOMPARE(br.selectedRunIds(), (QList<int64_t>{c_, a_}));
    QVERIFY(br.diffTable()->horizontalHeaderItem(1)->text().startsWith(QStringLiteral("#%1 ").arg(c_)));
    // A pinned baseline wins over the selection order.
    br.setBaseline(b_);
    QVERIFY(br.diffTable()->horizontalHeaderItem(1)->text().startsWith(QStringLiteral("baseline #%1 ").arg(b_)));
}
