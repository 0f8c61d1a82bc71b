// The workbench window: configuration on the left, live charts and the
// drill-down in the middle, the run browser below, run control in the
// toolbar. Training runs on a worker thread; the window only reads, through
// its RunDatabase (one connection to the open file, shared by every panel).
#pragma once

#include <QList>
#include <QMainWindow>
#include <QPointer>
#include <QStringList>
#include <QThread>

#include <memory>
#include <optional>
#include <vector>

#include "core/config/sweep.h"
#include "widgets/report/report.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QProgressBar;
class QTabWidget;
class QTimer;

namespace mlk {

class ChartGrid;
class ConfigForm;
class DrillDown;
class Glossary;
class LessonsPanel;
class ProbePanel;
class RunBrowser;
class RunDatabase;
class RunDataStore;
class RunWorker;
class SweepTable;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // dbPath empty: the default database in the application data folder.
    explicit MainWindow(const QString& dbPath = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    static QString defaultDatabasePath();
    static QString applicationId() { return QStringLiteral("org.mismatchlab.MismatchLab"); }

    // Opens (or creates) a run database; on failure keeps the current one and
    // returns false with a message naming the file.
    bool openDatabase(const QString& path, QString* error = nullptr);
    QString databasePath() const;

    // Run control, as the toolbar and shortcuts do it.
    void startRun();     // Ctrl+R: queue the current configuration and start
    void enqueueRun();   // Ctrl+Shift+R: add to the queue only
    void togglePause();  // Ctrl+P
    void stopRun();      // Ctrl+.
    void singleStep();   // Ctrl+T
    // Run > Queue sweep…: the sweep dialog over the form's configuration
    // (non-modal; its Queue button calls enqueueSweep).
    void queueSweep();
    // Queues every run of the sweep, each with its slot, and starts the queue
    // when nothing runs. Returns the number of runs queued.
    int enqueueSweep(const SweepSpec& spec, const std::vector<SweepConfig>& configs);

    ConfigForm* configForm() const { return form_; }
    ChartGrid* charts() const { return charts_; }
    RunBrowser* runBrowser() const { return browser_; }
    DrillDown* drillDown() const { return drill_; }
    SweepTable* sweepTable() const { return sweeps_; }
    RunDatabase* database() const { return db_; }
    RunDataStore* data() const { return data_; }
    RunWorker* worker() const { return worker_; }
    bool isBusy() const { return busy_; }
    QAction* startAction() const { return startAct_; }
    QAction* queueAction() const { return queueAct_; }
    QAction* sweepAction() const { return sweepAct_; }
    QAction* stopAction() const { return stopAct_; }
    QAction* pauseAction() const { return pauseAct_; }
    QString progressText() const;  // the run bar's text as shown
    void showStatus(const QString& message, int timeoutMs = 0);
    // True, with a status message, when the open database is read-only for
    // this user: nothing that would store a run starts.
    bool refuseReadOnly();
    // What the charts show now, for a report that looks like the screen.
    ReportView reportView(const std::vector<int64_t>& runs) const;
    void showDrillDown(qint64 runId, qint64 step = -1);
    // The Sweeps panel's sweep, baseline and thresholds as a report drawn
    // like the screen; nullopt with *error on failure.
    std::optional<Report> sweepReport(QString* error = nullptr);
    // That report written to `path` before returning; false with *error.
    bool exportSweepReport(const QString& path, QString* error = nullptr);
    // Writes `report` to `path` on a thread of its own (main_window_export.cpp):
    // the status bar says "Writing…", then "Wrote" and reportWritten(), or a
    // warning titled `title` says why not.
    void writeReport(Report report, const QString& path, const QString& title);
    void waitForReports();  // until every report being written is written

    // Teaching (main_window_teach.cpp): Help > Glossary, the Probe dock,
    // View > Presentation mode (F11; persisted).
    Glossary* glossary() const { return glossary_; }
    QDockWidget* glossaryDock() const { return glossaryDock_; }
    ProbePanel* probePanel() const { return probe_; }
    QDockWidget* probeDock() const { return probeDock_; }
    void setPresentationMode(bool on);
    bool presentationMode() const;

    // Lessons (main_window_lessons.cpp): View > Lessons (Ctrl+Shift+L), the
    // guided path. runLesson launches or loads a lesson's runs, shows them
    // side by side on its charts and frames the chart to read; probeLesson
    // opens the probe at the lesson's settings, tryLessonChange applies one
    // of its changes there.
    LessonsPanel* lessonsPanel() const { return lessons_; }
    QDockWidget* lessonsDock() const { return lessonsDock_; }
    void runLesson(int index);
    void probeLesson(int index);
    void tryLessonChange(int index, const QString& change);
    void showProbeNumbers();
    // The current lesson's runs: those loaded and those started so far.
    QList<qint64> lessonRuns() const { return lessonRuns_; }

signals:
    void runFinished(qint64 runId, const QString& status);
    void reportWritten(const QString& path);  // by writeReport

protected:
    void showEvent(QShowEvent* e) override;
    void closeEvent(QCloseEvent* e) override;

private:
    static constexpr int kRunsDockHeight = 370;
    static constexpr int kTopAtLeast = 420;
    void fitRunsDock();
    void buildUi();
    void buildMenus();
    void buildSweepsDock();
    void buildTeaching();
    void buildLessons();  // after the worker: it follows the runs the worker starts
    std::optional<qint64> finishedRunLike(const Config& cfg) const;
    void restoreSettings();
    void saveSettings();
    // The form's configuration and the preset it came from, restored at the next start.
    void rememberConfig();
    void addRecent(const QString& path);
    void rebuildRecentMenu();
    void exportSelected(const QString& format);
    void exportReport();
    void updateRunControls();
    void setPhase(const QString& phase, int step, int total, double eta);

    RunDatabase* db_ = nullptr;
    RunDataStore* data_ = nullptr;
    ConfigForm* form_ = nullptr;
    ChartGrid* charts_ = nullptr;
    RunBrowser* browser_ = nullptr;
    DrillDown* drill_ = nullptr;
    SweepTable* sweeps_ = nullptr;
    QDockWidget* sweepsDock_ = nullptr;
    QTabWidget* centre_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QDockWidget *formDock_ = nullptr, *runsDock_ = nullptr;
    QLabel* queueLabel_ = nullptr;
    QLabel* dbLabel_ = nullptr;
    QMenu* recentMenu_ = nullptr;
    QAction* sweepAct_ = nullptr;
    QAction *startAct_ = nullptr, *queueAct_ = nullptr, *pauseAct_ = nullptr, *stopAct_ = nullptr, *stepAct_ = nullptr;
    QTimer* browserRefresh_ = nullptr;
    QThread workerThread_;
    QList<QThread*> reportJobs_;  // writeReport's, until they finish
    RunWorker* worker_ = nullptr;
    bool busy_ = false;
    bool fitDocksOnShow_ = false;  // no layout was restored: fitRunsDock() once shown

    Glossary* glossary_ = nullptr;
    ProbePanel* probe_ = nullptr;
    QDockWidget *glossaryDock_ = nullptr, *probeDock_ = nullptr;
    QAction* presentationAct_ = nullptr;

    LessonsPanel* lessons_ = nullptr;
    QDockWidget* lessonsDock_ = nullptr;
    QList<qint64> lessonRuns_;
    QStringList lessonPending_;  // names of the lesson's queued runs not started yet
    int lessonProbe_ = -1;       // the lesson whose settings the probe holds
};

}  // namespace mlk
