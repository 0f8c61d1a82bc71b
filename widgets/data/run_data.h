// The charts' data layer (PlotJuggler-style): every run's steps and metric
// series held in memory, fed either by polling a run database (RunDatabase,
// which another process may be writing), or directly by the in-process
// worker. Readers take copies under a mutex; writers signal once per batch,
// never once per point.
#pragma once

#include <QColor>
#include <QList>
#include <QObject>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QTimer>

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/store/store.h"
#include "widgets/data/run_database.h"

namespace mlk {

struct RunMeta {
    qint64 id = 0;
    QString name;
    QString status;  // run_status_name(): "running", "finished", ...
    QString preset;
    QColor colour;  // invalid in addRun() = the run's default colour (palette::runColour)
    // Equal for runs whose configurations differ in the seed only (the
    // canonical config JSON without "seed"); "" = unknown, never grouped.
    QString seedGroup;
};

// How a run is named wherever it is shown (legends, tables, hover, reports):
// "#12 r3-grpo", the id first, since names repeat (three "r3-grpo" runs).
QString runLabel(qint64 id, const QString& name);
// The labels of runs (or, without ids, of a sweep's configurations) in one
// legend, where a long label is cut: each name without the words (space-
// separated) every one of them has, such as a sweep's preset and fixed
// settings, and without the start their first words share up to a hyphen (a
// family's presets: "fp8-bypass", "on-policy" for "collapse-demo-fp8-bypass"
// and "collapse-demo-on-policy"); a name that would be left empty stays
// whole; "#id " goes first
// where two labels would otherwise read the same (their whole names), or on
// every label with `idsFirst` (a legend too narrow for the labels whole).
// One name stays whole.
QStringList legendLabels(const QList<qint64>& ids, const QStringList& names, bool idsFirst = false);
// A group of seeds drawn as one line: "#3 r3-grpo · 5 seeds", named after
// its first run's label.
QString seedGroupLabel(const QString& firstRunLabel, int seeds);

// The seedGroup of a stored configuration (see RunMeta).
QString seedGroupOf(const std::string& configJson);

// One metric of one run: steps ascending, values aligned (NaN/Inf kept), and
// in a reader's copy the wall-clock time of each step (seconds since the Unix
// epoch; NaN where unknown: steps from schema-v1 databases). The store keeps
// times once per step, not per metric.
struct MetricSeries {
    std::vector<double> steps;
    std::vector<double> values;
    std::vector<double> times;
    std::size_t size() const { return steps.size(); }
};

// A reader's own copy of one series, brought up to date by syncSeries().
struct SeriesCursor {
    MetricSeries data;
    quint64 generation = 0;  // 0: never synced
};

enum class SyncResult {
    unchanged,
    appended,  // data gained points at the end; earlier points are untouched
    replaced,  // earlier points changed (reload, rewritten steps): start over
};

class RunDataStore : public QObject {
    Q_OBJECT

public:
    explicit RunDataStore(QObject* parent = nullptr);
    ~RunDataStore() override;

    // --- The database it polls: its own unless setDatabase() shares one (the
    // window's). Poll from the thread the database lives on.
    RunDatabase* database() const { return db_; }
    // Not owned; nullptr = back to its own. Every run read from the previous
    // database is dropped and the new one is loaded when open.
    void setDatabase(RunDatabase* database);
    // Open/close the file of database() (for everyone sharing it); a file
    // opened there loads every run here.
    bool open(const QString& path, QString* error = nullptr);
    void close();
    bool isOpen() const;
    QString path() const;
    void poll();  // new runs, metadata, and steps_since(last) of runs that grow
    // Polls whenever database() reports a change (RunDatabase::startWatching:
    // another connection committed, or its heartbeat), checking every intervalMs.
    void startPolling(int intervalMs = RunDatabase::kDefaultWatchIntervalMs);
    void stopPolling();
    bool isPolling() const;

    // --- In-process feed (any thread)
    void addRun(const RunMeta& meta);  // adds or updates name/status/preset (and colour if valid)
    void setRunStatus(qint64 runId, const QString& status);
    void appendStep(qint64 runId, const StepRecord& record);
    void appendSteps(qint64 runId, const std::vector<StepRecord>& records);

    // --- Reading (any thread)
    QList<qint64> runIds() const;  // ascending
    QList<RunMeta> runs() const;   // ascending id
    std::optional<RunMeta> run(qint64 runId) const;
    QStringList metricNames() const;  // union over runs, in order_metric_names() order
    qint64 stepCount(qint64 runId) const;
    std::optional<qint64> lastStep(qint64 runId) const;
    MetricSeries series(qint64 runId, const QString& metric) const;
    // Brings cursor up to date copying only what it lacks.
    SyncResult syncSeries(qint64 runId, const QString& metric, SeriesCursor& cursor) const;

    void setColour(qint64 runId, const QColor& colour);
    QColor colour(qint64 runId) const;

signals:
    // Steps of these runs were added or replaced: one emission per poll or
    // appended batch. Emitted from the thread that fed the data.
    void dataChanged(const QList<qint64>& runIds);
    // Runs appeared or vanished, or a name, status, preset or colour changed.
    void runsChanged();
    void errorOccurred(const QString& message);

private:
    struct RunEntry {
        RunMeta meta;
        std::vector<int64_t> steps;
        std::vector<double> times;  // aligned with steps
        std::map<std::string, MetricSeries> metrics;
        quint64 generation = 0;
        bool seenInStore = false;
    };
    using MetricRow = std::vector<std::pair<std::string, double>>;

    enum class PollAction { none, load, extend };

    RunEntry& entryLocked(qint64 runId);
    quint64 nextGenerationLocked() { return nextGeneration_++; }
    void attach(RunDatabase* database);
    void reload();  // drops every run, then polls
    void resetDataLocked(RunEntry& entry);
    void appendRowLocked(RunEntry& entry, int64_t step, double time, const MetricRow& metrics);
    bool holdsIdenticalLastLocked(const RunEntry& entry, int64_t step, const MetricRow& metrics) const;
    void truncateFromLocked(RunEntry& entry, int64_t step);
    bool mergeDirectLocked(RunEntry& entry, const StepRecord& record);
    bool updateMetaLocked(RunEntry& entry, const RunSummary& summary);
    PollAction pollActionLocked(const RunSummary& summary) const;
    bool pollRun(const RunSummary& summary, bool& metaChanged);

    mutable std::mutex mutex_;
    std::map<qint64, RunEntry> runs_;
    std::map<qint64, QColor> colourOverrides_;
    quint64 nextGeneration_ = 1;

    RunDatabase* ownDatabase_ = nullptr;  // child QObject
    RunDatabase* db_ = nullptr;
    QList<QMetaObject::Connection> dbConnections_;
};

}  // namespace mlk
