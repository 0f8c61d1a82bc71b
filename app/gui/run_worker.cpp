#include "app/gui/run_worker.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "core/rl/run_controller.h"
#include "widgets/data/run_data.h"

namespace mlk {

std::vector<RunJob> sweepJobs(const SweepSpec& spec, const std::vector<SweepConfig>& configs) {
    const nlohmann::json identity = sweep_identity(configs, spec);
    const std::string hash = sweep_hash(identity), specJson = identity.dump();
    std::vector<RunJob> jobs;
    for (const SweepConfig& sc : configs) {
        for (int seed = 1; seed <= spec.seeds; ++seed) {
            RunJob job;
            job.config = sweep_run_config(sc, spec, seed);
            job.preset = QString::fromStdString(sc.preset);
            job.name = QString::fromStdString(sweep_run_name(sc, seed));
            job.sweep = SweepSlot{hash, specJson, sc.name, seed};
            jobs.push_back(std::move(job));
        }
    }
    return jobs;
}

namespace {

// The slot a sweep job's run is stored in, or nullopt with *kept set when the
// slot's run is kept as it is (the CLI's rule: ended runs are skipped, and a
// run another process is writing is left to it).
std::optional<SweepRun> claimSlot(Store& store, const SweepSlot& s, std::optional<RunInfo>* kept) {
    const int64_t sweepId = store.open_sweep(s.hash, s.specJson);
    for (const SweepRun& r : store.sweep_runs(sweepId)) {
        if (r.config_name != s.configName || r.seed != s.seed) continue;
        std::optional<RunInfo> info = store.run_info(r.run_id);
        if (info && (sweep_slot_ended(info->status) || run_status_live(info->status))) {
            *kept = std::move(info);
            return std::nullopt;
        }
    }
    return SweepRun{sweepId, 0, s.configName, s.seed, sweep_run_tags(s.configName, s.seed)};
}

}  // namespace

RunWorker::RunWorker(QString dbPath, QString cacheDir, RunDataStore* data)
    : dbPath_(std::move(dbPath)), cacheDir_(std::move(cacheDir)), data_(data) {}

void RunWorker::setDatabase(const QString& path) {
    std::lock_guard lock(mu_);
    dbPath_ = path;
}

void RunWorker::enqueue(const RunJob& job) {
    {
        std::lock_guard lock(mu_);
        queue_.push_back(job);
    }
    emit queueChanged(queued());
}

int RunWorker::queued() const {
    std::lock_guard lock(mu_);
    return (int)queue_.size();
}

// Flags change under the lock the waiter checks them under, or a notify
// could fall between its check and its wait and be lost.
void RunWorker::pause() {
    std::lock_guard lock(mu_);
    paused_ = true;
}

void RunWorker::resume() {
    {
        std::lock_guard lock(mu_);
        paused_ = false;
    }
    cv_.notify_all();
}

void RunWorker::stop() {
    {
        std::lock_guard lock(mu_);
        stop_ = true;
    }
    cv_.notify_all();
}

void RunWorker::stopAll() {
    {
        std::lock_guard lock(mu_);
        queue_.clear();
    }
    stop();
    emit queueChanged(0);
}

void RunWorker::singleStep() {
    {
        std::lock_guard lock(mu_);
        stepsAllowed_ += 1;
    }
    cv_.notify_all();
}

bool RunWorker::waitWhilePaused(bool& held, const std::function<void(bool)>& setHeld) {
    std::unique_lock lock(mu_);
    for (;;) {
        if (stop_) return false;
        // The status follows the pause, not each single step: a paused run
        // stays "paused" while it steps one at a time.
        if (held != paused_) {
            held = paused_;
            lock.unlock();
            setHeld(held);
            lock.lock();
            continue;  // the flags may have moved meanwhile
        }
        if (!paused_ || stepsAllowed_ > 0) break;
        cv_.wait(lock);
    }
    if (paused_ && stepsAllowed_ > 0) --stepsAllowed_;
    return true;
}

void RunWorker::work() {
    if (busy_.exchange(true)) return;  // already draining the queue
    for (;;) {
        RunJob job;
        QString db;
        {
            std::lock_guard lock(mu_);
            if (queue_.empty()) break;
            job = queue_.front();
            queue_.pop_front();
            db = dbPath_;
        }
        emit queueChanged(queued());
        stop_ = false;
        qint64 runId = -1;
        try {
            Store store = Store::open(db.toStdString());
            std::optional<SweepRun> slot;
            if (job.sweep) {
                std::optional<RunInfo> kept;
                slot = claimSlot(store, *job.sweep, &kept);
                if (!slot) {
                    emit slotSkipped(job.name, kept->id, QString::fromStdString(kept->status));
                    continue;
                }
            }
            RunCallbacks cb;
            cb.cancel = &stop_;
            cb.on_base = [&](const BaseProgress& p) {
                emit baseProgress(p.step, p.total, p.eval_reward, p.layers, p.model_layers);
            };
            // ETA from the time spent in RL steps only: the base-policy
            // warm-up and pauses say nothing about the steps still to come.
            double stepSeconds = 0;
            int64_t stepsDone = 0, total = job.config.rl.steps;
            auto eta = [&](int64_t next) {
                if (stepsDone == 0) return -1.0;
                return stepSeconds / (double)stepsDone * (double)(total - next);
            };
            int64_t current = 0;
            cb.on_phase = [&](Phase p) { emit phaseChanged(phase_name(p), (int)current, (int)total, eta(current)); };
            emit jobStarted(job.name);
            emit phaseChanged(phase_name(Phase::warmup), 0, (int)total, -1);
            std::optional<RunController> created;
            try {
                created.emplace(RunController::create(store, job.config, job.preset.toStdString(),
                                                      job.name.toStdString(), cacheDir_.toStdString(), cb, 0, slot));
            } catch (const StoppedInWarmup& e) {
                // Stored "stopped": `resume` warms up again.
                emit runFinished(e.run_id, run_status_name(RunStatus::stopped));
                continue;
            }
            RunController& rc = *created;
            runId = rc.run_id();
            data_->addRun({runId, job.name, "running", job.preset, {}, {}});  // colour and seed group: from the store
            emit runStarted(runId, job.name);
            // Steps are pushed to the data layer directly so charts move at
            // once; the data layer signals the UI once per push.
            RunStatus status = RunStatus::finished;
            bool held = false;
            const auto setHeld = [&](bool paused) {
                rc.set_paused(paused);
                const QString name = run_status_name(paused ? RunStatus::paused : RunStatus::running);
                data_->setRunStatus(runId, name);
                emit runStatusChanged(runId, name);
            };
            try {
                while (!rc.done()) {
                    if (stop_ || !waitWhilePaused(held, setHeld)) {
                        status = RunStatus::stopped;
                        break;
                    }
                    current = rc.next_step();
                    const auto started = std::chrono::steady_clock::now();
                    StepRecord rec = rc.step();
                    stepSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
                    ++stepsDone;
                    data_->appendStep(runId, rec);
                    emit stepCompleted(runId, (int)rec.step, (int)total, eta(rec.step + 1));
                    if (!rc.divergence().empty()) {
                        status = RunStatus::diverged;
                        break;
                    }
                }
            } catch (const std::exception& e) {
                rc.finish(RunStatus::failed, e.what());  // stores the real error; never throws
                throw;
            }
            rc.finish(status);  // a failed last checkpoint stores "failed" and throws
            data_->setRunStatus(runId, run_status_name(status));
            emit runFinished(runId, run_status_name(status));
            if (status == RunStatus::diverged)
                emit failed(tr("Run %1 %2; the steps before it are stored.")
                                .arg(runId)
                                .arg(QString::fromStdString(rc.divergence())));
        } catch (const std::exception& e) {
            if (runId >= 0) {
                data_->setRunStatus(runId, "failed");
                emit runFinished(runId, "failed");
            }
            if (!stop_) emit failed(QString::fromStdString(e.what()));
        }
    }
    busy_ = false;
    emit idle();
}

}  // namespace mlk
