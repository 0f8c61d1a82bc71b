// The window's report exports: a report of the selected runs, and the
// writing of any report off the GUI thread.
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>

#include "app/gui/main_window.h"
#include "widgets/data/export_folder.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/drilldown.h"
#include "widgets/panels/run_browser.h"
#include "widgets/panels/sweep_table.h"

namespace mlk {

void MainWindow::exportReport() {
    QList<int64_t> ids = browser_->selectedRunIds();
    if (ids.isEmpty()) {
        QMessageBox::information(this, tr("Export report"), tr("Select one or more runs in the run browser first."));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export report"), exportPath("report.pdf"),
                                                      tr("PDF (*.pdf);;HTML (*.html)"));
    if (path.isEmpty()) return;
    try {
        if (!db_->store()) throw StoreError("no run database is open");
        ReportRequest req;
        req.runs.assign(ids.begin(), ids.end());
        if (browser_->baseline()) req.baseline = *browser_->baseline();
        req.view = reportView(req.runs);
        req.appendix = QMessageBox::question(this, tr("Export report"),
                                             tr("Add the per-step tables of every run as an appendix (many pages "
                                                "for long runs)? Each run's CSV is attached to the report either "
                                                "way."),
                                             QMessageBox::Yes | QMessageBox::No, QMessageBox::No) == QMessageBox::Yes;
        if (drill_->runId() > 0 && drill_->step() >= 0) req.step = drill_->step();
        req.verdicts = sweeps_->thresholds();
        writeReport(build_report(*db_->store(), req), path, tr("Export report"));
    } catch (const std::exception& e) {
        QMessageBox::warning(this, tr("Export report"), QString::fromUtf8(e.what()));
    }
}

void MainWindow::writeReport(Report report, const QString& path, const QString& title) {
    // build_report drew the charts here (Qt Charts wants this thread); laying
    // out and painting the pages does not, and an appendix of long runs takes
    // seconds of it.
    auto error = std::make_shared<QString>();
    QThread* job = QThread::create([report = std::move(report), path, error] {
        try {
            save_report(report, path.toStdString());
        } catch (const std::exception& e) {
            *error = QString::fromUtf8(e.what());
        }
    });
    reportJobs_.append(job);
    connect(job, &QThread::finished, this, [this, job, path, title, error] {
        reportJobs_.removeAll(job);
        job->deleteLater();
        if (!error->isEmpty()) {
            showStatus(QString(), 1);
            QMessageBox::warning(this, title, *error);
            return;
        }
        rememberExportFolder(path);
        showStatus(tr("Wrote %1").arg(path), 6000);
        emit reportWritten(path);
    });
    showStatus(tr("Writing %1\u2026").arg(QFileInfo(path).fileName()));
    job->start();
}

void MainWindow::waitForReports() {
    for (QThread* job : std::as_const(reportJobs_)) job->wait();
}

}  // namespace mlk
