// RunBrowser: every run of the run database in a sortable table, with the
// selection driving the chart overlays, per-run colours, rename / notes /
// delete, a pinned baseline and a config-diff panel against it, and the
// metric summary of the selected runs.
//
// Columns: id, colour swatch, name (editable in place), status (coloured by
// palette::statusColour), preset, steps, final reward, best reward, mean K3
// KL, created. Reward columns use the "reward_mean" metric, KL the "k3_kl"
// metric, with core/metrics/run_stats.h's statistics and value_text(); a run
// without them shows "—" and sorts last (NumberCell).
//
// The database is not owned (RunDatabase: the window's). refresh() re-reads
// the run list (cheap when nothing changed: metrics are re-read only for runs
// whose step count, status or update time moved), keeps the selection and the
// baseline, and is what the app's poll timer calls; a file opened in the
// database reloads the table. "Group by" shows the runs instead as a tree
// (widgets/data/run_groups.h): by sweep, then configuration, or by
// configuration; selecting a group selects its runs. The table stays the full
// list behind it. The source is split: run_browser.cpp (table, selection,
// diff columns), run_browser_edits.cpp (colours, rename / notes / delete,
// context menu), run_browser_groups.cpp (the group tree), config_diff.cpp
// (the diff panel).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include <QColor>
#include <QList>
#include <QString>
#include <QWidget>

#include "core/store/store.h"
#include "widgets/panels/metric_summary.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QStackedWidget;
class QTreeWidget;
class QTreeWidgetItem;
class QTableWidget;
class QTableWidgetItem;
class QTabWidget;

namespace mlk {

class ConfigDiffView;
class RunDatabase;

class RunBrowser : public QWidget {
    Q_OBJECT
public:
    enum Column {
        ColId,
        ColColour,
        ColName,
        ColStatus,
        ColPreset,
        ColSteps,
        ColFinalReward,
        ColBestReward,
        ColMeanK3,
        ColCreated,
        ColumnCount
    };

    enum class GroupBy { none, sweep, configuration };
    // The group tree's columns.
    enum TreeColumn { TreeName, TreeId, TreeStatus, TreeSteps, TreeFinalReward, TreeCreated, TreeColumnCount };

    explicit RunBrowser(QWidget* parent = nullptr);
    ~RunBrowser() override;

    void setGroupBy(GroupBy g);
    GroupBy groupBy() const { return groupBy_; }
    QTreeWidget* groupTree() const { return tree_; }

    // Not owned; nullptr clears the table. The pinned baseline is dropped.
    void setDatabase(RunDatabase* database);
    RunDatabase* database() const { return db_; }

    // Reloads the run list from the store.
    void refresh();

    // Run ids in table (display) order / currently selected, in the order the
    // user selected them (the first is the config diff's reference unless a
    // baseline is pinned).
    QList<int64_t> runIds() const;
    QList<int64_t> selectedRunIds() const;
    void selectRuns(const QList<int64_t>& ids);

    // Colour of a run: a user override (setRunColour / "Change colour…"),
    // else the provider's, else palette::runColour(id) (the charts' rule).
    QColor runColour(int64_t id) const;
    void setColourProvider(std::function<QColor(int64_t)> provider);
    void setRunColour(int64_t id, const QColor& c);

    // Store edits (also reachable from the context menu and in-place edit).
    bool renameRun(int64_t id, const QString& name);
    bool setNotes(int64_t id, const QString& notes);
    // Deletes after QMessageBox::question unless confirmDeletes() is false.
    // Returns the number of runs deleted.
    int deleteRuns(const QList<int64_t>& ids);
    void setConfirmDeletes(bool on) { confirmDeletes_ = on; }
    bool confirmDeletes() const { return confirmDeletes_; }

    // Baseline for the config diff (std::nullopt = none).
    void setBaseline(std::optional<int64_t> id);
    std::optional<int64_t> baseline() const { return baseline_; }

    // The diff panel: rows are keys; columns key | baseline | each selected
    // run other than the baseline.
    QTableWidget* diffTable() const;
    void setDifferencesOnly(bool on);
    bool differencesOnly() const;
    QStringList diffKeys() const;  // keys of the rows shown, in order

    QTableWidget* table() const { return table_; }
    MetricSummary* metricSummary() const { return summary_; }
    QTabWidget* lowerTabs() const { return lowerTabs_; }
    // The last error (store failures are shown in a non-modal line, never a
    // dialog): a refused edit's until the next edit, else the last load's.
    QString lastError() const { return editError_.isEmpty() ? lastError_ : editError_; }

signals:
    void selectionChanged(const QList<int64_t>& runIds);
    // The user chose a colour for a run; invalid = back to its default.
    void colourChangeRequested(int64_t runId, const QColor& colour);
    void runRenamed(int64_t runId, const QString& name);
    void runsDeleted(const QList<int64_t>& runIds);
    void baselineChanged(int64_t runId);  // -1 when cleared
    // Double-click on a run: the app may open its drill-down.
    void runActivated(int64_t runId);
    // The mouse is on a run's row (0: on none, or off the list), for the
    // charts to bring its line forward.
    void runHovered(int64_t runId);

private:
    // Of reward_mean and k3_kl (run_stats); NaN = none.
    struct Stats {
        double finalReward = std::numeric_limits<double>::quiet_NaN();
        double bestReward = std::numeric_limits<double>::quiet_NaN();
        double meanK3 = std::numeric_limits<double>::quiet_NaN();
    };
    struct Row {
        RunSummary summary;
        std::string notes;
        std::string machine;  // where it ran, for the Created column's tooltip
        std::string configJson;
        int64_t seed = 0;
        Stats stats;
    };

    void buildUi();
    void followHover();
    void populate();
    void readRow(const RunSummary& summary, Row& row) const;
    void fillRow(int r, int64_t id, const Row& row);
    void fitColumns();
    void updateColours();
    void updateDiff();
    void updateSummary();
    void onSelectionChanged();
    void onItemChanged(QTableWidgetItem* item);
    void showContextMenu(const QPoint& pos);
    void editNotes(int64_t id);
    void changeColour(int64_t id);
    void applyFilter();
    void updateInfo();
    bool matchesFilter(int64_t id) const;
    void populateTree();
    QTreeWidgetItem* addTreeRun(QTreeWidgetItem* parent, int64_t id);
    QList<int64_t> treeSelectedRunIds() const;
    void selectInTree(const QList<int64_t>& ids);
    int rowOf(int64_t id) const;
    int64_t idAtRow(int row) const;

    RunDatabase* db_ = nullptr;
    QList<QMetaObject::Connection> dbConnections_;
    std::map<int64_t, Row> rows_;
    std::map<int64_t, QColor> overrides_;
    std::function<QColor(int64_t)> provider_;
    std::optional<int64_t> baseline_;
    QList<int64_t> lastSelection_;
    bool confirmDeletes_ = true;
    bool populating_ = false;
    QString fittedKey_;  // rows and statuses the columns were last fitted to
    QString lastError_;  // the last load's; the next good load clears it
    // Why the last rename, note or delete was refused. It stays until the
    // next edit: a CLI writing the database reloads the list every poll.
    QString editError_;
    QList<int64_t> selectionOrder_;  // selected runs in the order the user selected them

    GroupBy groupBy_ = GroupBy::none;
    std::vector<SweepInfo> sweeps_;
    std::vector<SweepRun> sweepLinks_;
    QStringList collapsed_;  // keys of the groups the user closed

    QLineEdit* filter_ = nullptr;
    QComboBox* groupCombo_ = nullptr;
    QStackedWidget* views_ = nullptr;  // the table | the group tree
    QTreeWidget* tree_ = nullptr;
    QLabel* info_ = nullptr;
    QTableWidget* table_ = nullptr;
    ConfigDiffView* diff_ = nullptr;
    QTabWidget* lowerTabs_ = nullptr;  // config diff | metric summary
    MetricSummary* summary_ = nullptr;
    QString summarySignature_;  // the runs (and their step counts) summary_ shows
    const RunDatabase* summaryDatabase_ = nullptr;
};

}  // namespace mlk
