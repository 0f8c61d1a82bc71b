// The GUI's run database: the one owner of the connection to the file the
// window shows. The data layer, the run browser, the metric summary, the
// drill-down and the window all read through it, so none reaches through
// another to get at the store, and opening a file is one step that every
// reader hears about (opened()). Lives on the GUI thread; the training worker
// opens its own connection to path() (a Store is best used by one thread).
#pragma once

#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/metrics/run_stats.h"
#include "core/store/store.h"

namespace mlk {

class RunDatabase : public QObject {
    Q_OBJECT

public:
    explicit RunDatabase(QObject* parent = nullptr);
    ~RunDatabase() override;

    // Opens (or creates) the database at `path`. On failure the file open
    // before stays open, and *error names the file and the reason.
    bool open(const QString& path, QString* error = nullptr);
    void close();
    bool isOpen() const { return store_ != nullptr; }
    QString path() const { return path_; }
    // The connection itself, for what takes a Store (drill-down, exports,
    // reports); nullptr while closed. Owned here: do not keep it past closed().
    Store* store() const { return store_.get(); }
    // The open file is read-only for this user (Store::open): browse, never write.
    bool readOnly() const { return store_ && store_->read_only(); }

    // Readers: empty results while closed; a failing query throws StoreError.
    std::vector<RunSummary> runs() const;  // newest first
    std::optional<RunInfo> runInfo(int64_t runId) const;
    std::vector<MetricPoint> metricSeries(int64_t runId, const std::string& metric) const;
    std::vector<std::string> metricNames(int64_t runId) const;  // sorted
    std::optional<int64_t> lastStep(int64_t runId) const;
    std::vector<StoredStep> stepsSince(int64_t runId, int64_t afterStep) const;
    std::vector<SweepInfo> sweeps() const;    // by id
    std::vector<SweepRun> sweepRuns() const;  // every run's slot, of every sweep

    // Edits; each emits runsEdited() when it changed the store. Throw
    // StoreError (a closed database is one).
    void renameRun(int64_t runId, const std::string& name);
    void setNotes(int64_t runId, const std::string& notes);
    // Deletes each run; returns those deleted. A run that cannot be deleted
    // does not stop the others; the first such StoreError is rethrown after
    // runsEdited() has reported those deleted.
    QList<int64_t> deleteRuns(const QList<int64_t>& runIds);

    // Checks the file for commits by any other connection every intervalMs
    // (PRAGMA data_version) and emits changed(); every kHeartbeatMs it emits
    // changed() regardless. A failing check reconnects (a transient error
    // must not leave the window on a dead connection).
    void startWatching(int intervalMs = kDefaultWatchIntervalMs);
    void stopWatching();
    bool isWatching() const;
    // Opens the same file on a fresh connection and emits changed(), not
    // opened(): selections and baselines survive a transient error. False
    // (and the old connection kept) when the file cannot be opened now.
    bool reconnect();
    static constexpr int kDefaultWatchIntervalMs = 250;
    static constexpr int kHeartbeatMs = 2000;

signals:
    // A file was opened (File > Open, or the same one again by the user):
    // readers start over.
    void opened(const QString& path);
    // The file may hold news: another connection committed (a CLI run, the
    // training worker), or the heartbeat came (a writer may have died, which
    // commits nothing). Emitted while watching (startWatching).
    void changed();
    void closed();
    // Runs were renamed, annotated or deleted through this object.
    void runsEdited(const QList<int64_t>& runIds);

private:
    Store& openStore() const;
    void checkForChanges();

    std::unique_ptr<Store> store_;
    QString path_;
    QTimer watch_;
    int64_t dataVersion_ = -1;
    QElapsedTimer sinceChanged_;
};

}  // namespace mlk
