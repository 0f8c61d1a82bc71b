// The Sweeps panel: one stored sweep as a table of its configurations (runs
// stored of expected, collapsed, diverged, blow-up and warned counts, final
// reward mean ± sd, best, AUC, median collapse step, Δ final and Δ AUC
// against a baseline configuration with their bootstrap intervals), each
// configuration opening onto its runs by seed with every verdict's evidence
// as a tooltip. Every number comes from summarize_sweep and every text from
// widgets/data/sweep_text.h, as in the sweep report, so the table, the CLI's
// `sweep --summary` and the sweep report agree. "Export sweep report…" asks
// the window (exportReportRequested): it knows how the screen draws runs.
//
// The summary is computed off the GUI thread on a connection of its own to
// the database file, again only when the sweep's runs moved (another process
// may be writing the sweep: the RunDatabase's changed() polls for it), so a
// big sweep never blocks the window.
#pragma once

#include <QColor>
#include <QList>
#include <QString>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/store/sweep_summary.h"

QT_BEGIN_NAMESPACE
class QComboBox;
class QLabel;
class QPushButton;
class QThread;
class QTreeWidget;
QT_END_NAMESPACE

namespace mlk {

class RunDatabase;

class SweepTable : public QWidget {
    Q_OBJECT

public:
    enum Column {
        ColConfig,
        ColRuns,
        ColCollapsed,
        ColDiverged,
        ColBlowup,
        ColWarned,
        ColFinal,
        ColBest,
        ColAuc,
        ColCollapseStep,
        ColDeltaFinal,
        ColDeltaAuc,
        ColumnCount
    };

    explicit SweepTable(QWidget* parent = nullptr);
    ~SweepTable() override;

    // Not owned; nullptr clears. Reads the file it has open on a connection
    // of its own, and follows its opened / changed / closed.
    void setDatabase(RunDatabase* database);

    // The sweep shown (0: none); the baseline by configuration name (empty:
    // the first configuration).
    void setSweep(int64_t sweepId);
    int64_t sweepId() const { return sweepId_; }
    void setBaseline(const QString& name);
    QString baseline() const { return baseline_; }
    // Applied to the table at once; kept in QSettings (verdict_thresholds.h).
    void setThresholds(const VerdictThresholds& t);
    const VerdictThresholds& thresholds() const { return thresholds_; }

    // Re-reads the sweeps now (off-thread; updated() when the table changed).
    void refresh();
    // What the table shows; nullopt while no sweep is chosen or read yet.
    const std::optional<SweepSummary>& summary() const { return summary_; }
    bool busy() const { return job_ != nullptr; }
    QString lastError() const { return lastError_; }

    // A configuration's colour on the charts (its seed group takes its first
    // run's): the window's run colours; palette::runColour without one.
    void setColourProvider(std::function<QColor(int64_t)> provider);

    // The runs of the selected rows (a configuration: all its runs); every
    // run of the sweep when none is selected.
    QList<int64_t> selectedRunIds() const;
    std::vector<int64_t> allRunIds() const;

    QTreeWidget* tree() const { return tree_; }
    QComboBox* sweepChoice() const { return sweepChoice_; }
    QComboBox* baselineChoice() const { return baselineChoice_; }

signals:
    // Overlay these runs on the charts, seeds grouped into bands.
    void showRunsRequested(const QList<int64_t>& runIds);
    // The mouse is on a seed's row (its run) or a configuration's (its first
    // seed's run, which finds its band); 0 on none.
    void runHovered(int64_t runId);
    void thresholdsChanged(const VerdictThresholds& t);
    // "Export sweep report…": of sweepId() against baseline(), by thresholds().
    void exportReportRequested();
    // The table was rebuilt from a new summary (or cleared).
    void updated();

private:
    struct Result;
    void buildUi();
    void startJob();
    void finishJob();
    void apply(const Result& r);
    void fillTree();
    void editThresholds();
    QColor configColour(size_t config) const;

    RunDatabase* db_ = nullptr;
    QList<QMetaObject::Connection> dbConnections_;
    std::shared_ptr<Store> store_;  // the job's own connection; one job at a time uses it
    QString storePath_;
    int64_t sweepId_ = 0;
    QString baseline_;
    VerdictThresholds thresholds_;
    std::optional<SweepSummary> summary_;
    QString signature_;  // of the inputs summary_ was computed from
    QString lastError_;
    QThread* job_ = nullptr;
    std::shared_ptr<Result> jobResult_;
    bool again_ = false;  // a refresh came while a job ran
    std::function<QColor(int64_t)> colours_;

    QComboBox* sweepChoice_ = nullptr;
    QComboBox* baselineChoice_ = nullptr;
    QPushButton* thresholdsButton_ = nullptr;
    QPushButton* showButton_ = nullptr;
    QPushButton* exportButton_ = nullptr;
    QLabel* info_ = nullptr;
    QTreeWidget* tree_ = nullptr;
};

}  // namespace mlk
