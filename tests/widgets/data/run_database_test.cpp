// RunDatabase, the GUI's one connection to the open run database: opening a
// file (and refusing one that is not a run database while keeping the one
// open), its readers, edits that say which runs they touched, and the data
// layer sharing it (a file opened there reloads the charts' data; a run
// deleted through it leaves them at once).
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "core/store/store.h"
#include "widgets/data/run_data.h"
#include "widgets/data/run_database.h"

using namespace mlk;

namespace {

void writeSteps(Store& store, int64_t run, int64_t n) {
    for (int64_t s = 0; s < n; ++s) {
        StepRecord r;
        r.step = s;
        r.metrics = {{"reward_mean", 0.25 * double(s)}, {"k3_kl", 0.001}};
        store.append_step(run, r);
    }
}

}  // namespace

class RunDatabaseTest : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    QString file(const char* name) const { return dir_.filePath(QString::fromLatin1(name)); }

private slots:
    void opensReadsAndClosesWithoutEverReadingElsewhere() {
        {
            Store writer = Store::open(file("a.db").toStdString());
            const int64_t run = writer.create_run("first", "tiny", "{\"seed\": 3}", 3, RunStatus::finished);
            writer.set_notes(run, "a note");
            writeSteps(writer, run, 4);
        }
        RunDatabase db;
        QVERIFY(!db.isOpen());
        QVERIFY(db.store() == nullptr);
        QVERIFY(db.runs().empty());  // closed: empty, no throw
        QSignalSpy opened(&db, &RunDatabase::opened);
        QVERIFY(db.open(file("a.db")));
        QCOMPARE(opened.count(), 1);
        QCOMPARE(opened.last().at(0).toString(), file("a.db"));
        QCOMPARE(db.path(), file("a.db"));
        QVERIFY(db.store() != nullptr);
        const std::vector<RunSummary> runs = db.runs();
        QCOMPARE(runs.size(), std::size_t(1));
        QCOMPARE(runs[0].name, std::string("first"));
        QCOMPARE(runs[0].status, std::string("finished"));
        QCOMPARE(db.runInfo(runs[0].id)->notes, std::string("a note"));
        QCOMPARE(db.metricSeries(runs[0].id, "reward_mean").back().second, 0.75);
        QCOMPARE(db.metricNames(runs[0].id), (std::vector<std::string>{"k3_kl", "reward_mean"}));
        QCOMPARE(*db.lastStep(runs[0].id), int64_t(3));
        QCOMPARE(db.stepsSince(runs[0].id, 1).size(), std::size_t(2));

        QSignalSpy closed(&db, &RunDatabase::closed);
        db.close();
        QCOMPARE(closed.count(), 1);
        QVERIFY(!db.isOpen());
        QVERIFY(db.path().isEmpty());
        QVERIFY(db.runs().empty());
        QVERIFY_THROWS_EXCEPTION(StoreError, db.renameRun(runs[0].id, "x"));
    }

    void aFileThatIsNotADatabaseIsRefusedAndTheOpenOneKept() {
        QFile f(file("list.txt"));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("milk, eggs\n");
        f.close();
        RunDatabase db;
        QVERIFY(db.open(file("good.db")));
        QSignalSpy opened(&db, &RunDatabase::opened);
        QString error;
        QVERIFY(!db.open(file("list.txt"), &error));
        QVERIFY2(error.contains("list.txt"), qPrintable(error));  // names the file
        QCOMPARE(opened.count(), 0);
        QCOMPARE(db.path(), file("good.db"));
        QVERIFY(db.isOpen());
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(f.readAll(), QByteArray("milk, eggs\n"));  // untouched
    }

    void editsSayWhichRunsTheyTouched() {
        RunDatabase db;
        QVERIFY(db.open(file("edits.db")));
        const int64_t a = db.store()->create_run("a", "tiny", "{}", 1);
        const int64_t b = db.store()->create_run("b", "tiny", "{}", 1);
        QSignalSpy edited(&db, &RunDatabase::runsEdited);
        db.renameRun(a, "renamed");
        QCOMPARE(edited.last().at(0).value<QList<int64_t>>(), QList<int64_t>{a});
        QCOMPARE(db.runInfo(a)->name, std::string("renamed"));
        db.setNotes(b, "why");
        QCOMPARE(edited.last().at(0).value<QList<int64_t>>(), QList<int64_t>{b});
        QCOMPARE(db.deleteRuns({a, b}), (QList<int64_t>{a, b}));
        QCOMPARE(edited.count(), 3);
        QCOMPARE(edited.last().at(0).value<QList<int64_t>>(), (QList<int64_t>{a, b}));
        QVERIFY(db.runs().empty());
    }

    void theDataLayerFollowsASharedDatabase() {
        int64_t x = 0, y = 0;
        {
            Store one = Store::open(file("one.db").toStdString());
            x = one.create_run("x", "tiny", "{}", 1, RunStatus::finished);
            y = one.create_run("y", "tiny", "{}", 1, RunStatus::finished);
            writeSteps(one, x, 3);
            writeSteps(one, y, 2);
            Store two = Store::open(file("two.db").toStdString());
            const int64_t z = two.create_run("z", "tiny", "{}", 1, RunStatus::finished);
            writeSteps(two, z, 5);
        }
        RunDatabase db;
        RunDataStore data;
        data.setDatabase(&db);
        QCOMPARE(data.database(), &db);
        QVERIFY(data.runIds().isEmpty());
        QVERIFY(db.open(file("one.db")));  // opened there: loaded here
        QCOMPARE(data.runIds(), (QList<qint64>{x, y}));
        QCOMPARE(data.series(x, "reward_mean").size(), std::size_t(3));
        QCOMPARE(data.path(), file("one.db"));

        QSignalSpy runsChanged(&data, &RunDataStore::runsChanged);
        db.deleteRuns({y});  // no poll needed: the edit reaches the data layer
        QCOMPARE(data.runIds(), QList<qint64>{x});
        QVERIFY(runsChanged.count() >= 1);
        db.renameRun(x, "x renamed");
        QCOMPARE(data.run(x)->name, QString("x renamed"));

        QVERIFY(data.open(file("two.db")));  // through the data layer: the shared database moves
        QCOMPARE(db.path(), file("two.db"));
        QCOMPARE(data.runIds().size(), 1);
        QCOMPARE(data.series(data.runIds().front(), "reward_mean").size(), std::size_t(5));

        // Back to its own database: nothing of the shared one is kept.
        data.setDatabase(nullptr);
        QVERIFY(data.database() != &db);
        QVERIFY(!data.isOpen());
        QVERIFY(data.runIds().isEmpty());
        QVERIFY(db.open(file("one.db")));
        QVERIFY(data.runIds().isEmpty());
    }
};

QTEST_MAIN(RunDatabaseTest)
#include "run_database_test.moc"
