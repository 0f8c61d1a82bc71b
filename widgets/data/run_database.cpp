#include "widgets/data/run_database.h"

#include <algorithm>
#include <exception>

namespace mlk {

RunDatabase::RunDatabase(QObject* parent) : QObject(parent) {
    connect(&watch_, &QTimer::timeout, this, &RunDatabase::checkForChanges);
}

void RunDatabase::startWatching(int intervalMs) {
    sinceChanged_.start();
    watch_.start(std::max(1, intervalMs));
}
void RunDatabase::stopWatching() { watch_.stop(); }
bool RunDatabase::isWatching() const { return watch_.isActive(); }

void RunDatabase::checkForChanges() {
    if (!store_) return;
    try {
        const int64_t version = store_->data_version();
        if (version == dataVersion_ && sinceChanged_.elapsed() < kHeartbeatMs) return;
        dataVersion_ = version;
    } catch (const StoreError&) {
        reconnect();  // still failing: the next tick tries again, the old state stays on screen
        return;
    }
    sinceChanged_.start();
    emit changed();
}

bool RunDatabase::reconnect() {
    if (path_.isEmpty()) return false;
    try {
        store_ = std::make_unique<Store>(Store::open(path_.toStdString()));
    } catch (const StoreError&) {
        return false;
    }
    // The same file on a fresh connection: readers re-read what changed and
    // keep the user's selection and baseline (opened() would clear them).
    dataVersion_ = -1;
    sinceChanged_.start();
    emit changed();
    return true;
}

RunDatabase::~RunDatabase() = default;

bool RunDatabase::open(const QString& path, QString* error) {
    std::unique_ptr<Store> next;
    try {
        // Store::open refuses a file that is not a run database without
        // writing to it, so a failed open costs neither file anything.
        next = std::make_unique<Store>(Store::open(path.toStdString()));
    } catch (const std::exception& e) {
        if (error) *error = tr("Cannot open %1: %2").arg(path, QString::fromUtf8(e.what()));
        return false;
    }
    store_ = std::move(next);
    path_ = path;
    dataVersion_ = -1;
    emit opened(path_);
    return true;
}

void RunDatabase::close() {
    if (!store_) return;
    store_.reset();
    path_.clear();
    emit closed();
}

Store& RunDatabase::openStore() const {
    if (!store_) throw StoreError("no run database is open");
    return *store_;
}

std::vector<RunSummary> RunDatabase::runs() const { return store_ ? store_->list_runs() : std::vector<RunSummary>{}; }

std::vector<SweepInfo> RunDatabase::sweeps() const { return store_ ? store_->list_sweeps() : std::vector<SweepInfo>{}; }

std::vector<SweepRun> RunDatabase::sweepRuns() const {
    return store_ ? store_->all_sweep_runs() : std::vector<SweepRun>{};
}

std::optional<RunInfo> RunDatabase::runInfo(int64_t runId) const {
    return store_ ? store_->run_info(runId) : std::nullopt;
}

std::vector<MetricPoint> RunDatabase::metricSeries(int64_t runId, const std::string& metric) const {
    return store_ ? store_->metric_series(runId, metric) : std::vector<MetricPoint>{};
}

std::vector<std::string> RunDatabase::metricNames(int64_t runId) const {
    return store_ ? store_->metric_names(runId) : std::vector<std::string>{};
}

std::optional<int64_t> RunDatabase::lastStep(int64_t runId) const {
    return store_ ? store_->last_step(runId) : std::nullopt;
}

std::vector<StoredStep> RunDatabase::stepsSince(int64_t runId, int64_t afterStep) const {
    return store_ ? store_->steps_since(runId, afterStep) : std::vector<StoredStep>{};
}

void RunDatabase::renameRun(int64_t runId, const std::string& name) {
    openStore().rename_run(runId, name);
    emit runsEdited({runId});
}

void RunDatabase::setNotes(int64_t runId, const std::string& notes) {
    openStore().set_notes(runId, notes);
    emit runsEdited({runId});
}

QList<int64_t> RunDatabase::deleteRuns(const QList<int64_t>& runIds) {
    Store& store = openStore();
    QList<int64_t> done;
    std::exception_ptr firstError;
    for (int64_t id : runIds) {
        try {
            store.delete_run(id);
            done << id;
        } catch (const StoreError&) {
            // The others still go: a locked row must not keep the rest.
            if (!firstError) firstError = std::current_exception();
        }
    }
    if (!done.isEmpty()) emit runsEdited(done);
    if (firstError) std::rethrow_exception(firstError);
    return done;
}

}  // namespace mlk
