// MainWindow, the sweep queue: "Queue sweep…" opens the dialog over the
// form's configuration, and its runs go into the worker's queue with their
// sweep slots (the worker finds the sweep in the store when each starts).
#include <QSettings>

#include "app/gui/main_window.h"
#include "app/gui/run_worker.h"
#include "widgets/panels/config_form.h"
#include "widgets/panels/sweep_dialog.h"

namespace mlk {

void MainWindow::queueSweep() {
    if (!form_->isValid()) {
        showStatus(tr("The configuration is invalid: %1").arg(form_->errorMessages().join("; ")), 8000);
        return;
    }
    auto* dialog = new SweepDialog(form_->config(), form_->presetName(), this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &QDialog::accepted, this, [this, dialog] { enqueueSweep(dialog->spec(), dialog->configs()); });
    dialog->open();
}

int MainWindow::enqueueSweep(const SweepSpec& spec, const std::vector<SweepConfig>& configs) {
    if (refuseReadOnly()) return 0;
    const std::vector<RunJob> jobs = sweepJobs(spec, configs);
    for (const RunJob& job : jobs) worker_->enqueue(job);
    rememberConfig();
    showStatus(tr("Queued a sweep: %1 configurations \u00D7 %2 seeds = %3 runs")
                   .arg(configs.size())
                   .arg(spec.seeds)
                   .arg(jobs.size()),
               6000);
    // A sweep is queued to run: with nothing running, the queue starts now
    // (Start would add the form's configuration as one more run).
    if (!busy_) {
        if (worker_->paused()) worker_->resume();
        QMetaObject::invokeMethod(worker_, &RunWorker::work, Qt::QueuedConnection);
    }
    return static_cast<int>(jobs.size());
}

}  // namespace mlk
