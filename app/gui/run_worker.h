// Runs queued configurations one after another on its own thread. It owns
// its own store connection (the GUI's is RunDatabase's), feeds every
// completed step to the data layer (which signals the UI once per batch), and
// never touches a widget. A run it holds paused reads "paused" in the store
// and the data layer until it is resumed.
#pragma once

#include <QObject>
#include <QString>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.h"
#include "core/config/sweep.h"

namespace mlk {

class RunDataStore;

// A queued run's place in a sweep. The sweep is found (or made) by its hash
// when the run starts, on the worker's connection: the GUI thread does no
// store work, and the database open then is the one the run goes into.
struct SweepSlot {
    std::string hash, specJson;  // sweep_hash / sweep_identity, as the CLI computes them
    std::string configName;
    int seed = 1;
};

struct RunJob {
    Config config;
    QString preset;
    QString name;
    std::optional<SweepSlot> sweep;
};

// Every run of a sweep over `configs` (expand_sweep), configuration-major, as
// the CLI runs them, each named as the CLI names it and carrying its slot.
std::vector<RunJob> sweepJobs(const SweepSpec& spec, const std::vector<SweepConfig>& configs);

class RunWorker : public QObject {
    Q_OBJECT
public:
    RunWorker(QString dbPath, QString cacheDir, RunDataStore* data);

    // Thread-safe controls (called from the GUI thread).
    void enqueue(const RunJob& job);
    void pause();
    void resume();
    void stop();        // stops the current run (status "stopped") and clears nothing else
    void stopAll();     // also empties the queue
    void singleStep();  // while paused: run exactly one more step
    bool paused() const { return paused_; }
    int queued() const;
    void setDatabase(const QString& path);

public slots:
    // Processes the queue until it is empty; started from the worker thread.
    void work();

signals:
    // A job leaves the queue: from here until idle() the worker is busy with
    // it, its base-policy warm-up included, and stop() ends it.
    void jobStarted(const QString& name);
    void runStarted(qint64 runId, const QString& name);
    void phaseChanged(const QString& phase, int step, int total, double etaSeconds);
    // layers < modelLayers while a growing warm-up trains its shallow model.
    void baseProgress(int step, int total, double heldOutReward, int layers, int modelLayers);
    void stepCompleted(qint64 runId, int step, int total, double etaSeconds);
    // The run was held ("paused") or goes on again ("running"); the store
    // says so already.
    void runStatusChanged(qint64 runId, const QString& status);
    void runFinished(qint64 runId, const QString& status);
    void queueChanged(int queued);
    void failed(const QString& message);
    // A sweep's slot already holds a run that is kept (ended, or written by
    // another process): the job is dropped, as a repeated CLI sweep skips it.
    void slotSkipped(const QString& name, qint64 runId, const QString& status);
    void idle();

private:
    // Blocks while paused (singleStep() lets one step through); false when
    // stopped meanwhile. `held` is whether the run is shown paused: when it
    // must change, setHeld(new value) runs first, outside the lock.
    bool waitWhilePaused(bool& held, const std::function<void(bool)>& setHeld);

    QString dbPath_, cacheDir_;
    RunDataStore* data_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    std::deque<RunJob> queue_;
    std::atomic<bool> paused_{false}, stop_{false}, busy_{false};
    std::atomic<int> stepsAllowed_{0};
};

}  // namespace mlk
