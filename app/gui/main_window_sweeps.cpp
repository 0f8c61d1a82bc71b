// The window's Sweeps panel (widgets/panels/sweep_table.h): a tab beside the
// run list whose chosen configurations the charts overlay as seed bands, and
// its sweep report, drawn as the screen draws runs.
#include <QDockWidget>
#include <QFileDialog>
#include <QMessageBox>

#include "app/gui/main_window.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/data/export_folder.h"
#include "widgets/data/run_data.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/sweep_table.h"
#include "widgets/report/report_sweep.h"

namespace mlk {

// The table reads the sweeps off the GUI thread.
void MainWindow::buildSweepsDock() {
    sweeps_ = new SweepTable(this);
    sweeps_->setColourProvider([this](int64_t id) { return data_->colour(id); });
    sweeps_->setDatabase(db_);
    sweepsDock_ = new QDockWidget(tr("Sweeps"), this);
    sweepsDock_->setObjectName("sweepsDock");
    sweepsDock_->setWidget(sweeps_);
    addDockWidget(Qt::BottomDockWidgetArea, sweepsDock_);
    tabifyDockWidget(runsDock_, sweepsDock_);
    runsDock_->raise();
    // (Before the window has its size; fitRunsDock() once it is shown.)
    resizeDocks({runsDock_}, {kRunsDockHeight}, Qt::Vertical);
    connect(sweeps_, &SweepTable::runHovered, charts_, [this](int64_t id) { charts_->setEmphasis(id); });
    connect(sweeps_, &SweepTable::showRunsRequested, this, [this](const QList<int64_t>& ids) {
        // The run list selects what the charts show, so its tab, the metric
        // summary and the charts name the same runs.
        browser_->selectRuns(ids);
        charts_->setGroupSeeds(true);
        charts_->setVisibleRuns(QList<qint64>(ids.begin(), ids.end()));
        centre_->setCurrentWidget(charts_);
    });
    connect(sweeps_, &SweepTable::exportReportRequested, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Export sweep report"), exportPath(QStringLiteral("sweep-%1.pdf").arg(sweeps_->sweepId())),
            tr("PDF (*.pdf);;HTML (*.html)"));
        if (path.isEmpty()) return;
        QString error;
        std::optional<Report> report = sweepReport(&error);
        if (!report) {
            QMessageBox::warning(this, tr("Export sweep report"), error);
            return;
        }
        writeReport(std::move(*report), path, tr("Export sweep report"));
    });
}

std::optional<Report> MainWindow::sweepReport(QString* error) {
    try {
        if (!db_->store()) throw StoreError("no run database is open");
        if (!sweeps_->sweepId()) throw ReportInputError("no sweep is shown in the Sweeps panel");
        SweepReportRequest req;
        req.sweep_id = sweeps_->sweepId();
        req.baseline = sweeps_->baseline().toStdString();
        req.thresholds = sweeps_->thresholds();
        req.view = reportView(sweeps_->allRunIds());
        return build_sweep_report(*db_->store(), req);
    } catch (const std::exception& e) {
        if (error) *error = QString::fromUtf8(e.what());
        return std::nullopt;
    }
}

bool MainWindow::exportSweepReport(const QString& path, QString* error) {
    std::optional<Report> report = sweepReport(error);
    if (!report) return false;
    try {
        save_report(*report, path.toStdString());
        return true;
    } catch (const std::exception& e) {
        if (error) *error = QString::fromUtf8(e.what());
        return false;
    }
}

}  // namespace mlk
