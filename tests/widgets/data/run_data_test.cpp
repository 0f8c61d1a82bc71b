// RunDataStore: loading runs from a store, incremental polling (only new
// steps, one signal per poll, truncation reloads), the in-process feed
// (thread-safe, one signal per batch, re-delivered steps not duplicated),
// stable colours (palette::runColour unless overridden).
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "core/store/run_lock.h"
#include "core/store/store.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_data.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

namespace {

StepRecord stepOf(int64_t step, std::vector<std::pair<std::string, double>> metrics) {
    StepRecord r;
    r.step = step;
    r.metrics = std::move(metrics);
    return r;
}

void writeSteps(Store& store, int64_t run, int64_t from, int64_t to) {
    for (int64_t s = from; s < to; ++s)
        store.append_step(run, stepOf(s, {{"reward_mean", 0.1 * double(s)}, {"k3_kl", 0.0}, {"zz_custom", 1.0}}));
}

QList<qint64> idsOf(const QSignalSpy& spy, int emission) { return spy.at(emission).at(0).value<QList<qint64>>(); }

}  // namespace

class RunDataTest : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::string path_;

    // CIELAB of a colour as a viewer sees it: `m` simulates a colour-vision
    // deficiency on linear RGB (Machado, Oliveira & Fernandes 2009, severity 1).
    static std::array<double, 3> seenLab(const QColor& c, const double m[3][3]) {
        const auto lin = [](double v) { return v <= 0.04045 ? v / 12.92 : std::pow((v + 0.055) / 1.055, 2.4); };
        const double rgb[3] = {lin(c.redF()), lin(c.greenF()), lin(c.blueF())};
        double s[3];
        for (int i = 0; i < 3; ++i) s[i] = std::clamp(m[i][0] * rgb[0] + m[i][1] * rgb[1] + m[i][2] * rgb[2], 0.0, 1.0);
        const double X = 0.4124 * s[0] + 0.3576 * s[1] + 0.1805 * s[2],
                     Y = 0.2126 * s[0] + 0.7152 * s[1] + 0.0722 * s[2],
                     Z = 0.0193 * s[0] + 0.1192 * s[1] + 0.9505 * s[2];
        const auto f = [](double t) { return t > 0.008856 ? std::cbrt(t) : 7.787 * t + 16.0 / 116; };
        return {116 * f(Y) - 16, 500 * (f(X / 0.95047) - f(Y)), 200 * (f(Y) - f(Z / 1.08883))};
    }

private slots:
    // Run colours stay distinguishable for red-green colour-blind users too:
    // every pair at least 12 CIELAB units apart (d3's category10 has brown
    // and red at 4.6 for protanopes).
    void runColoursSurviveColourBlindness() {
        const double normal[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        const double deutan[3][3] = {
            {0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}};
        const double protan[3][3] = {
            {0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216}, {-0.003882, -0.048116, 1.051998}};
        const QList<QColor>& colours = palette::runColours();
        QVERIFY(colours.size() >= 8);
        for (const auto* m : {normal, deutan, protan})
            for (qsizetype i = 0; i < colours.size(); ++i)
                for (qsizetype j = i + 1; j < colours.size(); ++j) {
                    const auto a = seenLab(colours[i], m), b = seenLab(colours[j], m);
                    const double d = std::hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
                    QVERIFY2(d >= 12,
                             qPrintable(QString("%1 vs %2: %3").arg(colours[i].name(), colours[j].name()).arg(d)));
                }
    }

    // A sweep of a family's presets: with their shared start kept, every legend
    // entry would read "#1 col..." ("collapse-demo-fp8-bypass seed=2" in a sixth
    // of a chart's width).
    void legendLabelsDropAFamilysSharedNameStart() {
        QCOMPARE(legendLabels({}, {"collapse-demo-fp8-bypass", "collapse-demo-fp8-bypass seed=2",
                                   "collapse-demo-on-policy seed=2"}),
                 QStringList({"fp8-bypass", "fp8-bypass seed=2", "on-policy seed=2"}));
        QCOMPARE(legendLabels({}, {"r3-grpo", "r3-grpo-r3", "r3-gspo"}), QStringList({"grpo", "grpo-r3", "gspo"}));
        QCOMPARE(legendLabels({}, {"miles-moe-tis1.5", "miles-moe-tis1.5-mis"}), QStringList({"tis1.5", "tis1.5-mis"}));
        // Not where a name is the shared start itself, nor a key=value
        // setting's value, nor a lone name.
        QCOMPARE(legendLabels({}, {"r3-grpo", "r3"}), QStringList({"r3-grpo", "r3"}));
        QCOMPARE(legendLabels({}, {"profile=megatron-bf16", "profile=megatron-fp16"}),
                 QStringList({"profile=megatron-bf16", "profile=megatron-fp16"}));
        QCOMPARE(legendLabels({}, {"collapse-demo-on-policy"}), QStringList({"collapse-demo-on-policy"}));
        // Two seeds of one configuration keep only their seed words.
        QCOMPARE(legendLabels({}, {"collapse-demo-on-policy seed=2", "collapse-demo-on-policy seed=3"}),
                 QStringList({"seed=2", "seed=3"}));
        // With ids: two runs whose labels read the same keep their whole names.
        QCOMPARE(legendLabels({1, 2, 3}, {"fam-a", "fam-a", "fam-b"}), QStringList({"#1 fam-a", "#2 fam-a", "b"}));
    }

    void init() {
        QVERIFY(dir_.isValid());
        path_ = dir_.filePath(QStringLiteral("runs-%1.db").arg(QTest::currentTestFunction())).toStdString();
    }

    void loadsEveryRunWithMetadataAndSeries() {
        Store writer = Store::open(path_);
        const int64_t a = writer.create_run("baseline", "tiny-dense", "{}", 1, RunStatus::finished);
        const int64_t b = writer.create_run("aligned", "tiny-moe", "{}", 2, RunStatus::running);
        // b's writer is alive: without its lock a "running" run reads "interrupted".
        const RunWriterLock writingB = RunWriterLock::acquire(writer.path(), b);
        writeSteps(writer, a, 0, 5);
        writeSteps(writer, b, 0, 3);
        writer.append_step(b, stepOf(3, {{"reward_mean", std::numeric_limits<double>::quiet_NaN()}}));

        RunDataStore data;
        QSignalSpy runsChanged(&data, &RunDataStore::runsChanged);
        QVERIFY(data.open(QString::fromStdString(path_)));
        QCOMPARE(runsChanged.count(), 1);
        QCOMPARE(data.runIds(), (QList<qint64>{a, b}));
        const RunMeta meta = *data.run(b);
        QCOMPARE(meta.name, QStringLiteral("aligned"));
        QCOMPARE(meta.status, QStringLiteral("running"));
        QCOMPARE(meta.preset, QStringLiteral("tiny-moe"));
        QCOMPARE(data.stepCount(a), 5);
        QCOMPARE(data.stepCount(b), 4);
        QCOMPARE(*data.lastStep(b), 3);

        const MetricSeries reward = data.series(a, QStringLiteral("reward_mean"));
        QCOMPARE(reward.steps, (std::vector<double>{0, 1, 2, 3, 4}));
        QCOMPARE(reward.values[4], 0.4);
        QVERIFY(std::isnan(data.series(b, QStringLiteral("reward_mean")).values[3]));  // kept, not dropped
        QCOMPARE(data.series(b, QStringLiteral("k3_kl")).size(), std::size_t(3));      // absent at step 3: no point
        // Each point carries its step's commit time, also where a metric skips a step.
        const std::vector<StoredStep> rows = writer.steps_since(b, -1);
        const MetricSeries rewardB = data.series(b, QStringLiteral("reward_mean"));
        const MetricSeries k3B = data.series(b, QStringLiteral("k3_kl"));
        QCOMPARE(rewardB.times.size(), std::size_t(4));
        QCOMPARE(k3B.times.size(), std::size_t(3));
        for (std::size_t i = 0; i < 4; ++i) QCOMPARE(rewardB.times[i], rows[i].time);
        for (std::size_t i = 0; i < 3; ++i) QCOMPARE(k3B.times[i], rows[i].time);
        // The RL loop's display order first, unknown names after.
        QCOMPARE(data.metricNames(), (QStringList{"reward_mean", "k3_kl", "zz_custom"}));

        QString error;
        RunDataStore broken;
        QVERIFY(!broken.open(dir_.filePath(QStringLiteral("no/such/dir/x.db")), &error));
        QVERIFY(!error.isEmpty());
    }

    void pollReadsOnlyNewStepsAndSignalsOnce() {
        Store writer = Store::open(path_);
        const int64_t live = writer.create_run("live", "tiny", "{}", 1, RunStatus::running);
        const int64_t done = writer.create_run("done", "tiny", "{}", 1, RunStatus::finished);
        writeSteps(writer, live, 0, 10);
        writeSteps(writer, done, 0, 10);

        RunDataStore data;
        QVERIFY(data.open(QString::fromStdString(path_)));
        SeriesCursor cursor;
        QCOMPARE(data.syncSeries(live, QStringLiteral("reward_mean"), cursor), SyncResult::replaced);
        QCOMPARE(cursor.data.size(), std::size_t(10));

        QSignalSpy changed(&data, &RunDataStore::dataChanged);
        data.poll();  // nothing new
        QCOMPARE(changed.count(), 0);

        writeSteps(writer, live, 10, 13);
        data.poll();
        QCOMPARE(changed.count(), 1);
        QCOMPARE(idsOf(changed, 0), (QList<qint64>{live}));
        QCOMPARE(data.stepCount(live), 13);
        QCOMPARE(data.stepCount(done), 10);
        // The reader's copy grows by exactly the new points.
        QCOMPARE(data.syncSeries(live, QStringLiteral("reward_mean"), cursor), SyncResult::appended);
        QCOMPARE(cursor.data.steps, (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
        QCOMPARE(data.syncSeries(live, QStringLiteral("reward_mean"), cursor), SyncResult::unchanged);

        // A resumed run that was truncated reloads: no zig-zag, no stale steps.
        writer.truncate_after(live, 4);
        writeSteps(writer, live, 5, 7);
        data.poll();
        QCOMPARE(changed.count(), 2);
        QCOMPARE(data.syncSeries(live, QStringLiteral("reward_mean"), cursor), SyncResult::replaced);
        QCOMPARE(cursor.data.steps, (std::vector<double>{0, 1, 2, 3, 4, 5, 6}));

        // Status changes and deleted runs reach the metadata.
        QSignalSpy runsChanged(&data, &RunDataStore::runsChanged);
        writer.set_status(live, RunStatus::finished);
        writer.delete_run(done);
        data.poll();
        QCOMPARE(runsChanged.count(), 1);
        QCOMPARE(data.run(live)->status, QStringLiteral("finished"));
        QVERIFY(!data.run(done));
        QCOMPARE(idsOf(changed, changed.count() - 1), (QList<qint64>{done}));
    }

    void timerPollPicksUpAnotherConnectionsWrites() {
        Store writer = Store::open(path_);
        const int64_t run = writer.create_run("live", "tiny", "{}", 1);
        RunDataStore data;
        QVERIFY(data.open(QString::fromStdString(path_)));
        data.startPolling(10);
        QVERIFY(data.isPolling());
        std::thread cli([&] {
            Store other = Store::open(path_);
            writeSteps(other, run, 0, 25);
        });
        QTRY_COMPARE_WITH_TIMEOUT(data.stepCount(run), 25, kEventDeadlineMs);
        cli.join();
        data.stopPolling();
        QVERIFY(!data.isPolling());
    }

    void directAppendIsThreadSafeAndSignalsOncePerBatch() {
        RunDataStore data;
        QSignalSpy changed(&data, &RunDataStore::dataChanged);
        std::vector<StepRecord> batch;
        for (int s = 0; s < 10; ++s) batch.push_back(stepOf(s, {{"reward_mean", s}}));
        data.appendSteps(7, batch);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(data.stepCount(7), 10);

        // The same step again (the poll already read it): nothing happens.
        data.appendStep(7, stepOf(9, {{"reward_mean", 9}}));
        QCOMPARE(changed.count(), 1);
        // A rewritten earlier step replaces the tail instead of zig-zagging.
        data.appendStep(7, stepOf(5, {{"reward_mean", -1}}));
        QCOMPARE(changed.count(), 2);
        QCOMPARE(data.series(7, QStringLiteral("reward_mean")).steps, (std::vector<double>{0, 1, 2, 3, 4, 5}));

        // A worker thread appends one step at a time while this thread reads.
        // (Counted with a direct connection: QSignalSpy is not for other threads.)
        std::atomic<int> workerSignals{0};
        connect(
            &data, &RunDataStore::dataChanged, &data, [&] { ++workerSignals; }, Qt::DirectConnection);
        std::atomic<bool> done{false};
        std::thread worker([&] {
            for (int s = 6; s < 2006; ++s) data.appendStep(7, stepOf(s, {{"reward_mean", s}}));
            done = true;
        });
        SeriesCursor cursor;
        while (!done) {
            data.syncSeries(7, QStringLiteral("reward_mean"), cursor);
            for (std::size_t i = 1; i < cursor.data.size(); ++i)
                QVERIFY(cursor.data.steps[i] > cursor.data.steps[i - 1]);
        }
        worker.join();
        data.syncSeries(7, QStringLiteral("reward_mean"), cursor);
        QCOMPARE(cursor.data.size(), std::size_t(2006));
        QCOMPARE(workerSignals.load(), 2000);  // direct appends signal once per call
    }

    void coloursAreStablePerRunAndOverridable() {
        Store writer = Store::open(path_);
        const int64_t a = writer.create_run("a", "tiny", "{}", 1);
        const int64_t b = writer.create_run("b", "tiny", "{}", 1);
        RunDataStore first, second;
        QVERIFY(first.open(QString::fromStdString(path_)));
        QVERIFY(second.open(QString::fromStdString(path_)));
        QCOMPARE(first.colour(a), second.colour(a));
        QCOMPARE(first.run(b)->colour, palette::runColour(b));

        QSignalSpy runsChanged(&first, &RunDataStore::runsChanged);
        first.setColour(a, QColor(Qt::magenta));
        QCOMPARE(runsChanged.count(), 1);
        QCOMPARE(first.colour(a), QColor(Qt::magenta));
        writeSteps(writer, a, 0, 3);
        first.poll();  // new data keeps the chosen colour
        QCOMPARE(first.run(a)->colour, QColor(Qt::magenta));
        first.setColour(a, QColor());
        QCOMPARE(first.colour(a), palette::runColour(a));
    }
};

QTEST_MAIN(RunDataTest)
#include "run_data_test.moc"
