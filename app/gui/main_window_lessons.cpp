// MainWindow, the Lessons dock: a lesson's "Run experiment" loads the
// finished runs of its configurations from the open database and queues the
// rest on the worker (training stays off the GUI thread), selects them side
// by side in the run browser as they appear, shows the lesson's charts and
// frames the one to read; "Probe this lesson" and its changes drive the
// probe dock. Kept apart so the lesson wiring is in one place.
#include <QAction>
#include <QDockWidget>
#include <QMenuBar>
#include <QScrollArea>
#include <QTabWidget>
#include <QTimer>

#include <algorithm>

#include "app/gui/main_window.h"
#include "app/gui/run_worker.h"
#include "core/config/lessons.h"
#include "core/config/presets.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/lessons_panel.h"
#include "widgets/panels/probe_panel.h"
#include "widgets/panels/run_browser.h"

namespace mlk {

void MainWindow::buildLessons() {
    lessons_ = new LessonsPanel(this);
    lessonsDock_ = new QDockWidget(tr("Lessons"), this);
    lessonsDock_->setObjectName("lessonsDock");
    lessonsDock_->setWidget(lessons_);
    addDockWidget(Qt::RightDockWidgetArea, lessonsDock_);
    // Beside the probe, not under it: a lesson's change buttons and the
    // numbers they move are read together, each at full height.
    splitDockWidget(probeDock_, lessonsDock_, Qt::Horizontal);
    lessonsDock_->hide();
    connect(lessonsDock_, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        if (visible && lessonsDock_->width() < LessonsPanel::kPreferredWidth - 20)
            resizeDocks({lessonsDock_}, {LessonsPanel::kPreferredWidth}, Qt::Horizontal);
    });
    connect(lessons_, &LessonsPanel::runRequested, this, &MainWindow::runLesson);
    connect(lessons_, &LessonsPanel::probeRequested, this, &MainWindow::probeLesson);
    connect(lessons_, &LessonsPanel::changeRequested, this, &MainWindow::tryLessonChange);
    connect(lessons_, &LessonsPanel::lessonSelected, this, [this] {
        lessonRuns_.clear();
        lessonPending_.clear();
        charts_->setHighlightedMetric({});
    });
    // A queued lesson run joins the lesson's side-by-side view when it
    // starts (the window's own handler has refreshed the browser by then).
    connect(worker_, &RunWorker::runStarted, this, [this](qint64 id, const QString& name) {
        if (!lessonPending_.removeOne(name)) return;
        lessonRuns_.append(id);
        browser_->selectRuns(QList<int64_t>(lessonRuns_.begin(), lessonRuns_.end()));
        charts_->setVisibleRuns(lessonRuns_);
    });

    QAction* toggle = lessonsDock_->toggleViewAction();
    toggle->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
    toggle->setToolTip(tr("The guided lessons: one-click experiments with a question and an explanation"));
    for (QAction* a : menuBar()->actions())
        if (a->menu() && a->text() == tr("&View")) a->menu()->addAction(toggle);
}

std::optional<qint64> MainWindow::finishedRunLike(const Config& cfg) const {
    // The same configuration finished before (by a lesson, a CLI run or a
    // sweep's seed): a run at least as long as the lesson's counts.
    std::vector<RunSummary> runs;
    try {
        runs = db_->runs();
    } catch (const std::exception&) {
        return std::nullopt;  // nothing to load from: the lesson runs anew
    }
    for (const RunSummary& s : runs) {
        if (s.status != "finished") continue;
        try {
            const std::optional<RunInfo> info = db_->runInfo(s.id);
            if (!info) continue;
            Config stored = stored_config_from_json(nlohmann::json::parse(info->config_json));
            if (stored.rl.steps < cfg.rl.steps) continue;
            stored.rl.steps = cfg.rl.steps;
            if (stored == cfg) return s.id;
        } catch (const std::exception&) {
            // A configuration another version stored that no longer parses is not this lesson's.
        }
    }
    return std::nullopt;
}

void MainWindow::runLesson(int index) {
    const Lesson& l = lessons_->lesson(index);
    if (lessons_->currentLesson() != index) lessons_->selectLesson(index);
    QStringList charts;
    for (const std::string& m : l.charts) charts << QString::fromStdString(m);
    const QString read = QString::fromStdString(l.read);
    charts_->showMetrics(charts);
    charts_->setHighlightedMetric(read);
    centre_->setCurrentWidget(charts_);
    lessons_->setReadHint(tr("Read: %1").arg(metricTitle(read)));

    lessonRuns_.clear();
    lessonPending_.clear();
    std::vector<RunJob> jobs;
    for (const LessonRun& r : l.runs) {
        RunJob job;
        try {
            job.config = lesson_run_config(r);
        } catch (const std::exception& e) {
            lessons_->setStatus(tr("This lesson's run \"%1\" is invalid: %2")
                                    .arg(QString::fromStdString(r.label), QString::fromUtf8(e.what())));
            return;
        }
        if (const std::optional<qint64> id = finishedRunLike(job.config)) {
            lessonRuns_.append(*id);
            continue;
        }
        job.preset = QString::fromStdString(r.preset);
        job.name = QString::fromStdString(default_run_name(r.preset, preset_config(r.preset), job.config));
        jobs.push_back(std::move(job));
    }
    const int loaded = static_cast<int>(lessonRuns_.size());
    const int waiting = worker_->queued() + (busy_ ? 1 : 0);
    const bool refused = !jobs.empty() && refuseReadOnly();  // the stored runs still show
    if (refused) jobs.clear();
    for (const RunJob& job : jobs) {
        lessonPending_.append(job.name);
        worker_->enqueue(job);
    }
    // Only the lesson's runs on the charts, from the first click on: none
    // until the first one starts when nothing was loaded.
    browser_->refresh();
    browser_->selectRuns(QList<int64_t>(lessonRuns_.begin(), lessonRuns_.end()));
    charts_->setVisibleRuns(lessonRuns_);
    // A longer finished run stands in for a lesson's: the charts show the
    // lesson's steps, which its text describes, not what came after them.
    int lessonSteps = 0;
    for (const LessonRun& r : l.runs) lessonSteps = std::max(lessonSteps, r.steps);
    bool longer = false;
    for (qint64 id : lessonRuns_)
        if (const std::optional<RunInfo> info = db_->runInfo(id); info && info->steps > lessonSteps) longer = true;
    if (longer && lessonSteps > 0) charts_->setSharedXRange(0, lessonSteps - 1);
    QString status = refused ? tr("Loaded %1 finished runs of this lesson; the others need a database you can "
                                  "write: this one is read-only for you.")
                                   .arg(loaded)
                     : jobs.empty() ? tr("Loaded %1 finished runs of this lesson: nothing to run.").arg(loaded)
                                    : tr("Queued %1 runs").arg(jobs.size());
    if (!jobs.empty() && loaded) status += tr(", loaded %1 finished").arg(loaded);
    if (!jobs.empty() && waiting) status += tr(" (after %1 already queued or running)").arg(waiting);
    if (longer) status += tr("; the charts show the lesson's %1 steps of the longer runs loaded").arg(lessonSteps);
    if (!jobs.empty())
        status += tr(". A configuration's first run warms up its base policy once (seconds to a minute).");
    lessons_->setStatus(status);
    showStatus(status, 6000);
    if (!jobs.empty() && !busy_) {
        if (worker_->paused()) worker_->resume();
        QMetaObject::invokeMethod(worker_, &RunWorker::work, Qt::QueuedConnection);
    }
}

void MainWindow::probeLesson(int index) {
    const Lesson& l = lessons_->lesson(index);
    if (!l.probe) return;
    // Shown first: showing the dock starts it from the form, and the
    // lesson's request then overtakes that probe (the runner keeps the latest).
    probeDock_->show();
    probeDock_->raise();
    probe_->setConfig(lesson_probe_config(*l.probe));
    lessonProbe_ = index;
    lessons_->setStatus(
        tr("Probing %1's settings: the numbers are in the Probe dock.").arg(QString::fromStdString(l.probe->preset)));
    showProbeNumbers();
}

void MainWindow::tryLessonChange(int index, const QString& change) {
    if (lessonProbe_ != index || !probeDock_->isVisible()) probeLesson(index);
    Config c = probe_->config();
    try {
        apply_set(c, change.toStdString());
    } catch (const std::exception& e) {
        lessons_->setStatus(QString::fromUtf8(e.what()));
        return;
    }
    probe_->setConfig(c);
    lessons_->setStatus(tr("Probing with %1: compare each number with the previous probe beside it.").arg(change));
    showProbeNumbers();
}

// On a laptop the probe's numbers sit below its editors, out of view; a
// lesson's changes are clicked in the Lessons dock and read in the numbers.
// After the dock has laid out (it may just have been shown).
void MainWindow::showProbeNumbers() {
    QTimer::singleShot(0, this, [this] {
        if (auto* scroll = qobject_cast<QScrollArea*>(probeDock_->widget()))
            scroll->ensureWidgetVisible(probe_->numbersTable(), 0, 0);
    });
}

}  // namespace mlk
