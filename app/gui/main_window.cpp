#include "app/gui/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>

#include <optional>

#include "app/gui/run_worker.h"
#include "core/config/atomic_file.h"
#include "core/config/presets.h"
#include "core/rl/base_policy.h"
#include "core/store/export.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/data/export_folder.h"
#include "widgets/panels/config_form.h"
#include "widgets/panels/drilldown.h"
#include "widgets/report/report.h"
#include "widgets/panels/run_browser.h"
#include "widgets/panels/sweep_table.h"
#include "widgets/data/run_data.h"
#include "widgets/data/run_database.h"

namespace mlk {

namespace {
constexpr int kMaxRecent = 8;

QString etaText(double seconds) {
    if (seconds < 0) return QStringLiteral("ETA —");
    if (seconds < 90) return QStringLiteral("ETA %1 s").arg(qRound(seconds));
    return QStringLiteral("ETA %1 min").arg(seconds / 60.0, 0, 'f', 1);
}
}  // namespace

QString MainWindow::defaultDatabasePath() {
    const QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    QDir().mkpath(dir);
    return dir + QStringLiteral("/runs.sqlite");
}

MainWindow::MainWindow(const QString& dbPath, QWidget* parent) : QMainWindow(parent) {
    setWindowTitle(QStringLiteral("Mismatch Lab"));
    db_ = new RunDatabase(this);
    data_ = new RunDataStore(this);
    data_->setDatabase(db_);
    buildUi();
    buildMenus();
    buildTeaching();

    worker_ = new RunWorker({}, QString::fromStdString(default_cache_dir()), data_);
    worker_->moveToThread(&workerThread_);
    connect(&workerThread_, &QThread::finished, worker_, &QObject::deleteLater);
    workerThread_.start();
    // Busy from the moment a job leaves the queue, its warm-up included:
    // Stop, Pause and Single step act on it, and Start does not queue a
    // second run behind it unsaid.
    connect(worker_, &RunWorker::jobStarted, this, [this] {
        busy_ = true;
        updateRunControls();
    });
    connect(worker_, &RunWorker::runStarted, this, [this](qint64 id, const QString& name) {
        busy_ = true;
        updateRunControls();
        showStatus(tr("Run %1 (%2) started").arg(id).arg(name), 4000);
        browser_->refresh();
        // A run you start is drawn whatever is shown: joined to the runs
        // selected in the list (so the list, the charts and the comparison
        // agree), or to the runs a sweep or lesson put on the charts.
        const QList<int64_t> selected = browser_->selectedRunIds();
        if (!selected.isEmpty() && !selected.contains(id)) browser_->selectRuns(selected + QList<int64_t>{id});
        else charts_->addVisibleRun(id);
    });
    connect(worker_, &RunWorker::baseProgress, this, [this](int step, int total, double reward, int layers, int all) {
        progress_->setRange(0, std::max(total, 1));
        progress_->setValue(step);
        const QString depth = layers < all ? tr(" (%1 of %2 layers, then grown)").arg(layers).arg(all) : QString();
        progress_->setFormat(
            reward >= 0 ? tr("base-policy warm-up %v/%m%1 — held-out reward %2").arg(depth).arg(reward, 0, 'f', 2)
                        : tr("base-policy warm-up %v/%m%1").arg(depth));
    });
    connect(worker_, &RunWorker::phaseChanged, this, &MainWindow::setPhase);
    connect(worker_, &RunWorker::stepCompleted, this, [this](qint64, int step, int total, double eta) {
        setPhase(tr("step done"), step + 1, total, eta);
        // Coalesced: the table reloads at most every 750 ms while steps come
        // (never restarted, or a fast run would not update it until its end).
        if (!browserRefresh_->isActive()) browserRefresh_->start();
    });
    connect(worker_, &RunWorker::runStatusChanged, this, [this](qint64 id, const QString& status) {
        showStatus(tr("Run %1 %2").arg(id).arg(status), 4000);
        // Held between steps: the bar says so until it goes on (no stale ETA).
        if (status == QLatin1String("paused"))
            progress_->setFormat(tr("run %1 paused after step %2/%3 \u2014 Resume (Ctrl+P) or Single step (Ctrl+T)")
                                     .arg(id)
                                     .arg(progress_->value())
                                     .arg(progress_->maximum()));
        browser_->refresh();
    });
    connect(worker_, &RunWorker::runFinished, this, [this](qint64 id, const QString& status) {
        showStatus(tr("Run %1 %2").arg(id).arg(status), 6000);
        browser_->refresh();
        emit runFinished(id, status);
    });
    connect(worker_, &RunWorker::slotSkipped, this, [this](const QString& name, qint64 id, const QString& status) {
        showStatus(tr("%1: skipped, its sweep slot holds run %2 (%3)").arg(name).arg(id).arg(status), 6000);
    });
    connect(worker_, &RunWorker::queueChanged, this,
            [this](int n) { queueLabel_->setText(n ? tr("Queue: %1").arg(n) : QString()); });
    connect(worker_, &RunWorker::failed, this, [this](const QString& msg) {
        showStatus(tr("Run failed: %1").arg(msg), 10000);
        QMessageBox* box = new QMessageBox(QMessageBox::Warning, tr("Run failed"), msg, QMessageBox::Ok, this);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();  // non-modal: the window keeps running
    });
    connect(worker_, &RunWorker::idle, this, [this] {
        busy_ = false;
        progress_->setFormat(tr("idle"));
        progress_->setValue(0);
        updateRunControls();
    });

    buildLessons();
    restoreSettings();
    QString err;
    // A relative last database (remembered by an older build) would name a
    // file in whatever folder the workbench starts from: a new, empty one.
    QString path = dbPath.isEmpty() ? QSettings().value("lastDatabase").toString() : dbPath;
    if (path.isEmpty() || (dbPath.isEmpty() && QFileInfo(path).isRelative())) path = defaultDatabasePath();
    if (!openDatabase(path, &err) && !openDatabase(defaultDatabasePath(), &err)) showStatus(err, 10000);
    updateRunControls();
}

MainWindow::~MainWindow() {
    waitForReports();
    worker_->stopAll();
    worker_->resume();
    workerThread_.quit();
    workerThread_.wait();
}

void MainWindow::buildUi() {
    charts_ = new ChartGrid(data_, this);
    charts_->setEmptyHint(
        tr("No runs in this database yet. Start (Ctrl+R) runs the configuration on the left, "
           "View > Lessons (Ctrl+Shift+L) has guided experiments, File opens a database "
           "with runs."));
    drill_ = new DrillDown(this);
    centre_ = new QTabWidget(this);
    centre_->addTab(charts_, tr("Charts"));
    centre_->addTab(drill_, tr("Drill-down"));
    setCentralWidget(centre_);

    form_ = new ConfigForm(this);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(form_);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // The form's own minimum (its editors whole) and this area's scroll bar.
    scroll->setMinimumWidth(form_->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() +
                            2 * scroll->frameWidth());
    formDock_ = new QDockWidget(tr("Configuration"), this);
    formDock_->setObjectName("configurationDock");
    formDock_->setWidget(scroll);
    addDockWidget(Qt::LeftDockWidgetArea, formDock_);
    connect(form_, &ConfigForm::validityChanged, this, [this](bool) { updateRunControls(); });

    // The drill-down keeps the Store it was given: let go of it before the
    // database lets go of the file.
    connect(db_, &RunDatabase::opened, drill_, &DrillDown::clear);
    connect(db_, &RunDatabase::closed, drill_, &DrillDown::clear);

    // The right docks (lessons, probe, glossary) run down to the status bar:
    // on a short laptop screen a lesson's text kept three lines beside the
    // charts, above a run list as wide as the window.
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    browser_ = new RunBrowser(this);
    browser_->setDatabase(db_);
    browser_->setColourProvider([this](int64_t id) { return data_->colour(id); });
    runsDock_ = new QDockWidget(tr("Runs"), this);
    runsDock_->setObjectName("runsDock");
    runsDock_->setWidget(browser_);
    addDockWidget(Qt::BottomDockWidgetArea, runsDock_);
    connect(browser_, &RunBrowser::selectionChanged, this, [this](const QList<int64_t>& ids) {
        if (ids.isEmpty()) {
            charts_->showAllRuns();
            return;
        }
        charts_->setVisibleRuns(QList<qint64>(ids.begin(), ids.end()));
        showDrillDown(ids.front());
    });
    connect(browser_, &RunBrowser::runHovered, charts_, [this](int64_t id) { charts_->setEmphasis(id); });
    connect(browser_, &RunBrowser::colourChangeRequested, this, [this](int64_t id, const QColor& c) {
        data_->setColour(id, c);
        browser_->refresh();
    });
    connect(charts_, &ChartGrid::drillDownRequested, this, [this](qint64 id, qint64 step) {
        showDrillDown(id, step);
        centre_->setCurrentWidget(drill_);
    });
    connect(browser_, &RunBrowser::runActivated, this, [this](int64_t id) {
        showDrillDown(id);
        centre_->setCurrentWidget(drill_);
    });
    // (The charts drop deleted runs themselves: the data layer hears the
    // database's runsEdited.)
    connect(browser_, &RunBrowser::runsDeleted, this, [this](const QList<int64_t>& ids) {
        if (ids.contains(drill_->runId())) drill_->clear();
    });
    buildSweepsDock();
    browserRefresh_ = new QTimer(this);
    browserRefresh_->setSingleShot(true);
    browserRefresh_->setInterval(750);
    connect(browserRefresh_, &QTimer::timeout, browser_, &RunBrowser::refresh);
    // Any writer (a CLI run on the same file, the worker) shows in the run
    // list and the metric summary without Refresh; coalesced like the steps.
    connect(db_, &RunDatabase::changed, this, [this] {
        if (!browserRefresh_->isActive()) browserRefresh_->start();
    });

    auto* bar = addToolBar(tr("Run"));
    bar->setObjectName("runToolBar");
    startAct_ = bar->addAction(tr("Start"), this, &MainWindow::startRun);
    startAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
    startAct_->setToolTip(tr("Start a run with the configuration on the left (Ctrl+R)"));
    queueAct_ = bar->addAction(tr("Queue"), this, &MainWindow::enqueueRun);
    queueAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_R));
    queueAct_->setToolTip(tr("Add the configuration to the queue; queued runs start one after another (Ctrl+Shift+R)"));
    sweepAct_ = bar->addAction(tr("Queue sweep…"), this, &MainWindow::queueSweep);
    sweepAct_->setToolTip(
        tr("Queue a sweep over the configuration: settings × values × seeds, each run "
           "stored in its sweep"));
    pauseAct_ = bar->addAction(tr("Pause"), this, &MainWindow::togglePause);
    pauseAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_P));
    pauseAct_->setToolTip(tr("Pause or resume the running run between steps (Ctrl+P)"));
    stepAct_ = bar->addAction(tr("Single step"), this, &MainWindow::singleStep);
    stepAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_T));
    stepAct_->setToolTip(tr("While paused: run exactly one more RL step (Ctrl+T)"));
    stopAct_ = bar->addAction(tr("Stop"), this, &MainWindow::stopRun);
    stopAct_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Period));
    stopAct_->setToolTip(tr("Stop the current run after its step; it keeps every completed step (Ctrl+.)"));

    progress_ = new QProgressBar(this);
    progress_->setMinimumWidth(420);
    progress_->setTextVisible(true);
    progress_->setFormat(tr("idle"));
    // A bar without a value shows no text: an empty box, not "idle".
    progress_->setValue(0);
    queueLabel_ = new QLabel(this);
    dbLabel_ = new QLabel(this);
    statusBar()->addPermanentWidget(dbLabel_);
    statusBar()->addPermanentWidget(queueLabel_);
    statusBar()->addPermanentWidget(progress_);
    resize(1500, 950);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&New database…"), QKeySequence::New, this, [this] {
        const QString p = QFileDialog::getSaveFileName(this, tr("New run database"), QFileInfo(databasePath()).path(),
                                                       tr("Run databases (*.sqlite)"));
        QString err;
        if (!p.isEmpty() && !openDatabase(p, &err)) QMessageBox::warning(this, tr("New database"), err);
    });
    file->addAction(tr("&Open database…"), QKeySequence::Open, this, [this] {
        const QString p = QFileDialog::getOpenFileName(this, tr("Open run database"), QFileInfo(databasePath()).path(),
                                                       tr("Run databases (*.sqlite);;All files (*)"));
        QString err;
        if (!p.isEmpty() && !openDatabase(p, &err)) QMessageBox::warning(this, tr("Open database"), err);
    });
    recentMenu_ = file->addMenu(tr("Recent databases"));
    file->addSeparator();
    file->addAction(tr("Export &report…"), this, &MainWindow::exportReport);
    file->addAction(tr("Export selected runs as CSV…"), this, [this] { exportSelected("csv"); });
    file->addAction(tr("Export selected runs as JSON…"), this, [this] { exportSelected("json"); });
    file->addSeparator();
    file->addAction(tr("Copy configuration as JSON"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), form_,
                    &ConfigForm::copyJsonToClipboard);
    file->addAction(tr("Paste configuration from JSON"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_V), form_,
                    &ConfigForm::pasteJsonFromClipboard);
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu* run = menuBar()->addMenu(tr("&Run"));
    run->addAction(startAct_);
    run->addAction(queueAct_);
    run->addAction(sweepAct_);
    run->addAction(pauseAct_);
    run->addAction(stepAct_);
    run->addAction(stopAct_);

    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("Reset zoom"), QKeySequence(Qt::CTRL | Qt::Key_0), charts_, &ChartGrid::resetZoom);
    view->addAction(tr("Charts"), this, [this] { centre_->setCurrentWidget(charts_); });
    view->addAction(tr("Drill-down"), this, [this] { centre_->setCurrentWidget(drill_); });
    view->addSeparator();
    // A closed dock comes back from here.
    view->addAction(formDock_->toggleViewAction());
    view->addAction(runsDock_->toggleViewAction());
    view->addAction(sweepsDock_->toggleViewAction());

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("About Mismatch Lab"), this, [this] {
        QMessageBox::about(this, tr("About Mismatch Lab"),
                           tr("<b>Mismatch Lab %1</b><p>A workbench for training-inference mismatch in LLM "
                              "reinforcement learning: real kernels, real rounding, real routing flips.</p>"
                              "<p>Database: %2</p>")
                               .arg(QApplication::applicationVersion(), databasePath().toHtmlEscaped()));
    });
}

QString MainWindow::databasePath() const { return db_->path(); }

QString MainWindow::progressText() const { return progress_->text(); }

// A message in the status bar's free width: a long one (a path and an error)
// is cut with an ellipsis instead of running under the database label, and
// is whole in the bar's tooltip.
void MainWindow::showStatus(const QString& message, int timeoutMs) {
    int taken = 0;
    for (QWidget* w :
         {static_cast<QWidget*>(dbLabel_), static_cast<QWidget*>(queueLabel_), static_cast<QWidget*>(progress_)})
        if (w && w->isVisible()) taken += w->width() + 12;
    const int room = std::max(80, statusBar()->width() - taken - 24);
    statusBar()->showMessage(statusBar()->fontMetrics().elidedText(message, Qt::ElideRight, room), timeoutMs);
    statusBar()->setToolTip(message);
}

bool MainWindow::openDatabase(const QString& given, QString* error) {
    // Absolute from here on: the recent list and the last database are read
    // again from another folder (`mismatch-lab --db runs.sqlite` in one
    // terminal, the desktop's launcher the next day).
    const QString path = QFileInfo(given).absoluteFilePath();
    // On failure the open file stays open; on success opened() has reloaded
    // the charts' data, the run browser and the drill-down.
    if (!db_->open(path, error)) return false;
    worker_->setDatabase(path);
    data_->startPolling();  // a CLI writing the same file shows live
    addRecent(path);
    // The whole path in the title (the platform appends " — Mismatch Lab"),
    // so two databases of the same file name never look alike; the status
    // bar names the file and its folder.
    const QString full = QDir::toNativeSeparators(path);
    setWindowTitle(full);
    QString folder = QDir::toNativeSeparators(QFileInfo(path).absolutePath());
    const QString home = QDir::toNativeSeparators(QDir::homePath());
    if (folder.startsWith(home)) folder = QStringLiteral("~") + folder.mid(home.size());
    const bool readOnly = db_->readOnly();
    dbLabel_->setText(readOnly ? tr("%1 in %2 (read-only)").arg(QFileInfo(path).fileName(), folder)
                               : tr("%1 in %2").arg(QFileInfo(path).fileName(), folder));
    dbLabel_->setToolTip(readOnly ? tr("%1\nRead-only: this user may not write the file or its folder. Its runs can be "
                                       "browsed, compared and exported; new runs need a database you can write.")
                                        .arg(full)
                                  : full);
    return true;
}

bool MainWindow::refuseReadOnly() {
    if (!db_->readOnly()) return false;
    showStatus(tr("%1 is read-only for you: open or create a database you can write (File menu) to run")
                   .arg(QFileInfo(db_->path()).fileName()),
               8000);
    return true;
}

void MainWindow::startRun() {
    if (busy_) {
        showStatus(tr("A run is active: Queue (Ctrl+Shift+R) adds this configuration after it"), 6000);
        return;
    }
    enqueueRun();
    if (worker_->paused()) worker_->resume();
    QMetaObject::invokeMethod(worker_, &RunWorker::work, Qt::QueuedConnection);
}

void MainWindow::enqueueRun() {
    if (refuseReadOnly()) return;
    if (!form_->isValid()) {
        showStatus(tr("The configuration is invalid: %1").arg(form_->errorMessages().join("; ")), 8000);
        return;
    }
    RunJob job;
    job.config = form_->config();
    job.preset = form_->presetName().isEmpty() ? QStringLiteral("custom") : form_->presetName();
    const std::string preset = job.preset.toStdString();
    const Config base = find_preset(preset) ? preset_config(preset) : Config{};
    job.name = QString::fromStdString(default_run_name(preset, base, job.config));
    worker_->enqueue(job);
    rememberConfig();
    if (busy_) showStatus(tr("Queued: %1").arg(job.name), 4000);
}

void MainWindow::togglePause() {
    if (worker_->paused()) {
        worker_->resume();
        pauseAct_->setText(tr("Pause"));
    } else {
        worker_->pause();
        pauseAct_->setText(tr("Resume"));
    }
    updateRunControls();
}

void MainWindow::stopRun() {
    worker_->stop();
    worker_->resume();
    pauseAct_->setText(tr("Pause"));
}

void MainWindow::singleStep() {
    if (!worker_->paused()) worker_->pause();
    pauseAct_->setText(tr("Resume"));
    worker_->singleStep();
    updateRunControls();
}

void MainWindow::updateRunControls() {
    // Start while a run is active would queue a second run without saying
    // so; Queue is the explicit way to do that.
    startAct_->setEnabled(form_->isValid() && !busy_);
    queueAct_->setEnabled(form_->isValid());
    sweepAct_->setEnabled(form_->isValid());
    pauseAct_->setEnabled(busy_);
    stopAct_->setEnabled(busy_);
    stepAct_->setEnabled(busy_);
}

void MainWindow::setPhase(const QString& phase, int step, int total, double eta) {
    progress_->setRange(0, std::max(total, 1));
    progress_->setValue(step);
    progress_->setFormat(tr("%1 — step %2/%3 — %4").arg(phase).arg(step).arg(total).arg(etaText(eta)));
}

void MainWindow::showDrillDown(qint64 runId, qint64 step) {
    std::optional<int64_t> last;
    try {
        last = db_->lastStep(runId);
    } catch (const StoreError& e) {
        showStatus(QString::fromUtf8(e.what()), 8000);
        return;
    }
    if (!last || !db_->store()) return;
    drill_->setRunStep(*db_->store(), runId, step >= 0 ? step : *last);
}

void MainWindow::exportSelected(const QString& format) {
    QList<int64_t> ids = browser_->selectedRunIds();
    if (ids.isEmpty()) {
        QMessageBox::information(this, tr("Export"), tr("Select one or more runs in the run browser first."));
        return;
    }
    const QString path = QFileDialog::getSaveFileName(this, tr("Export runs"), exportPath("runs." + format),
                                                      format == "csv" ? tr("CSV (*.csv)") : tr("JSON (*.json)"));
    if (path.isEmpty()) return;
    try {
        if (!db_->store()) throw StoreError("no run database is open");
        std::vector<int64_t> v(ids.begin(), ids.end());
        const std::string text =
            format == "csv" ? export_csv(*db_->store(), v) : export_json(*db_->store(), v).dump(1) + "\n";
        write_file_atomically(path.toStdString(), text);
        rememberExportFolder(path);
        showStatus(tr("Wrote %1").arg(path), 6000);
    } catch (const std::exception& e) {
        QMessageBox::warning(this, tr("Export"), QString::fromUtf8(e.what()));
    }
}

ReportView MainWindow::reportView(const std::vector<int64_t>& runs) const {
    ReportView v;
    for (int64_t id : runs) v.colours[id] = data_->colour(id);
    v.smoothing = charts_->smoothing();
    v.group_seeds = charts_->groupSeeds();
    for (MetricChart* c : charts_->charts()) {
        v.charts.push_back(c->metric().toStdString());
        if (c->logScale()) v.log_charts.push_back(c->metric().toStdString());
    }
    return v;
}

void MainWindow::addRecent(const QString& path) {
    QSettings s;
    QStringList recent = s.value("recentDatabases").toStringList();
    recent.removeAll(path);
    recent.prepend(path);
    while (recent.size() > kMaxRecent) recent.removeLast();
    s.setValue("recentDatabases", recent);
    s.setValue("lastDatabase", path);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    recentMenu_->clear();
    for (const QString& p : QSettings().value("recentDatabases").toStringList()) {
        if (QFileInfo(p).isRelative()) continue;  // an older build's; see the constructor
        recentMenu_->addAction(p, this, [this, p] {
            QString err;
            if (!openDatabase(p, &err)) QMessageBox::warning(this, tr("Open database"), err);
        });
    }
}

void MainWindow::restoreSettings() {
    QSettings s;
    restoreGeometry(s.value("geometry").toByteArray());
    // A layout of the user's own is kept; the first one fits the screen.
    fitDocksOnShow_ = !restoreState(s.value("windowState").toByteArray());
    // A size remembered on a larger screen (or grown before charts scrolled)
    // never puts the window past this one.
    if (const QScreen* screen = this->screen()) {
        const QRect avail = screen->availableGeometry();
        if (width() > avail.width() || height() > avail.height()) {
            resize(std::min(width(), avail.width()), std::min(height(), avail.height()));
            move(avail.topLeft());
        }
    }
    // The preset first, so a configuration modified from it is named by it
    // again ("production-moe-deep + 1 modification", not "default + 4").
    const QString last = s.value("lastConfig").toString(), lastPreset = s.value("lastPreset").toString();
    if (!last.isEmpty() && !lastPreset.isEmpty() && find_preset(lastPreset.toStdString())) form_->setPreset(lastPreset);
    QString err;
    if (!last.isEmpty() && !form_->fromJson(last, &err))
        showStatus(tr("The last configuration could not be restored: %1").arg(err), 8000);
    for (const QString& m : s.value("extraCharts").toStringList())
        if (!charts_->chartFor(m)) charts_->addChart(m);
    // View settings: smoothing, x axis, which charts are on a log scale.
    charts_->setSmoothing(s.value("view/smoothing", MetricChart::kDefaultSmoothing).toDouble());
    charts_->setXAxis(s.value("view/xAxis").toString() == QLatin1String("wallTime") ? MetricChart::XAxis::wallTime
                                                                                    : MetricChart::XAxis::step);
    charts_->setGroupSeeds(s.value("view/groupSeeds", false).toBool());
    charts_->setIgnoreOutliers(s.value("view/ignoreOutliers", true).toBool());
    if (s.contains("view/logScaleCharts")) {
        const QStringList logCharts = s.value("view/logScaleCharts").toStringList();
        for (MetricChart* c : charts_->charts()) c->setLogScale(logCharts.contains(c->metric()));
    }
    rebuildRecentMenu();
}

void MainWindow::rememberConfig() {
    QSettings s;
    s.setValue("lastConfig", form_->toJson());
    s.setValue("lastPreset", form_->presetName());
}

void MainWindow::saveSettings() {
    QSettings s;
    s.setValue("geometry", saveGeometry());
    s.setValue("windowState", saveState());
    rememberConfig();
    QStringList metrics;
    for (auto* c : charts_->charts()) metrics << c->metric();
    s.setValue("extraCharts", metrics);
    QStringList logCharts;
    for (MetricChart* c : charts_->charts())
        if (c->logScale()) logCharts << c->metric();
    s.setValue("view/logScaleCharts", logCharts);
    s.setValue("view/smoothing", charts_->smoothing());
    s.setValue("view/groupSeeds", charts_->groupSeeds());
    s.setValue("view/ignoreOutliers", charts_->ignoreOutliers());
    s.setValue("view/xAxis",
               charts_->xAxis() == MetricChart::XAxis::wallTime ? QStringLiteral("wallTime") : QStringLiteral("step"));
}

// The charts get most of the height; the run list about eight rows above
// its diff / summary tabs and the Runs / Sweeps tabs. On a short screen the
// run list gives way first, down to its minimum, so that the menus, the
// charts' toolbar and a row of charts keep kTopAtLeast: at a fixed height the
// window's shrinking would all come out of the charts (and the form beside them).
void MainWindow::fitRunsDock() {
    resizeDocks({runsDock_}, {std::min(kRunsDockHeight, height() - kTopAtLeast)}, Qt::Vertical);
}

void MainWindow::showEvent(QShowEvent* e) {
    QMainWindow::showEvent(e);
    if (std::exchange(fitDocksOnShow_, false)) fitRunsDock();
}

void MainWindow::closeEvent(QCloseEvent* e) {
    saveSettings();
    worker_->stopAll();
    worker_->resume();
    e->accept();
}

}  // namespace mlk
