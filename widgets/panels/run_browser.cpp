#include "widgets/panels/run_browser.h"

#include <algorithm>
#include <cmath>
#include <set>

#include <QAction>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QStyle>
#include <QTabWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

#include "core/config/config.h"
#include "core/metrics/run_stats.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_data.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/config_diff.h"
#include "widgets/panels/number_cell.h"
#include "widgets/panels/run_hover.h"
#include "widgets/panels/run_browser_parts.h"
#include "widgets/data/qt_text.h"

namespace mlk {

using run_browser::kIdRole;
using run_browser::RunTable;

namespace {

const QString kNone = QStringLiteral("\u2014");

// Names, presets and statuses sort as a reader expects ("a" next to "A").
class TextCell : public QTableWidgetItem {
public:
    using QTableWidgetItem::QTableWidgetItem;
    bool operator<(const QTableWidgetItem& other) const override { return text().localeAwareCompare(other.text()) < 0; }
};

bool isNumberColumn(int c) {
    return c == RunBrowser::ColId || c == RunBrowser::ColColour ||
           (c >= RunBrowser::ColSteps && c <= RunBrowser::ColMeanK3);
}

}  // namespace

RunBrowser::RunBrowser(QWidget* parent) : QWidget(parent) { buildUi(); }

RunBrowser::~RunBrowser() = default;

void RunBrowser::buildUi() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);
    outer->setSpacing(4);

    auto* top = new QHBoxLayout;
    filter_ = new QLineEdit(this);
    filter_->setObjectName(QStringLiteral("runFilter"));
    filter_->setPlaceholderText(tr("Filter by name, preset, status or notes"));
    filter_->setClearButtonEnabled(true);
    auto* pinBtn = new QPushButton(tr("Pin as baseline"), this);
    pinBtn->setObjectName(QStringLiteral("pinBaseline"));
    pinBtn->setToolTip(tr("Compare the configs of other runs against the run selected first"));
    auto* refreshBtn = new QPushButton(tr("Refresh"), this);
    groupCombo_ = new QComboBox(this);
    groupCombo_->setObjectName(QStringLiteral("groupBy"));
    groupCombo_->addItems({tr("No grouping"), tr("Group by sweep"), tr("Group by configuration")});
    groupCombo_->setToolTip(
        tr("Show the runs as one list, by sweep (then configuration), or by configuration "
           "(runs that differ in the seed only); selecting a group selects its runs"));
    top->addWidget(filter_, 1);
    top->addWidget(groupCombo_);
    top->addWidget(pinBtn);
    top->addWidget(refreshBtn);
    outer->addLayout(top);
    connect(filter_, &QLineEdit::textChanged, this, [this] {
        applyFilter();
        if (groupBy_ != GroupBy::none) {
            const QList<int64_t> keep = selectedRunIds();
            populateTree();
            selectRuns(keep);
        }
    });
    connect(refreshBtn, &QPushButton::clicked, this, [this] { refresh(); });
    connect(groupCombo_, &QComboBox::currentIndexChanged, this,
            [this](int i) { setGroupBy(static_cast<GroupBy>(std::clamp(i, 0, 2))); });
    connect(pinBtn, &QPushButton::clicked, this, [this] {
        const auto sel = selectedRunIds();
        if (!sel.isEmpty()) setBaseline(sel.front());
    });

    auto* split = new QSplitter(Qt::Vertical, this);
    split->setChildrenCollapsible(false);

    auto* tablePane = new QWidget(split);
    auto* tl = new QVBoxLayout(tablePane);
    tl->setContentsMargins(0, 0, 0, 0);
    tl->setSpacing(2);
    table_ = new RunTable(0, ColumnCount, tablePane);
    table_->setObjectName(QStringLiteral("runTable"));
    table_->setHorizontalHeaderLabels({tr("ID"), QString(), tr("Name"), tr("Status"), tr("Preset"), tr("Steps"),
                                       tr("Final reward"), tr("Best reward"), tr("Mean K3 KL"), tr("Created")});
    table_->horizontalHeaderItem(ColColour)->setToolTip(tr("Run colour in every chart (right-click to change)"));
    table_->horizontalHeaderItem(ColFinalReward)->setToolTip(metricToolTip("reward_mean", tr("At the last step:")));
    table_->horizontalHeaderItem(ColBestReward)
        ->setToolTip(metricToolTip("reward_mean", tr("Highest finite value of any step:")));
    table_->horizontalHeaderItem(ColMeanK3)->setToolTip(metricToolTip("k3_kl", tr("Mean over the run's steps of:")));
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    table_->setEditTriggers(QAbstractItemView::DoubleClicked | QAbstractItemView::EditKeyPressed |
                            QAbstractItemView::SelectedClicked);
    table_->setContextMenuPolicy(Qt::CustomContextMenu);
    table_->verticalHeader()->hide();
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 8);
    table_->setAlternatingRowColors(true);
    table_->setWordWrap(false);
    table_->setSortingEnabled(true);
    table_->sortByColumn(ColId, Qt::DescendingOrder);
    auto* hh = table_->horizontalHeader();
    hh->setSectionResizeMode(QHeaderView::Interactive);
    hh->setSectionResizeMode(ColColour, QHeaderView::Fixed);
    hh->resizeSection(ColColour, 26);
    hh->setStretchLastSection(true);
    hh->setHighlightSections(false);
    views_ = new QStackedWidget(tablePane);
    views_->addWidget(table_);
    tree_ = new QTreeWidget(views_);
    tree_->setObjectName(QStringLiteral("runGroups"));
    tree_->setColumnCount(TreeColumnCount);
    tree_->setHeaderLabels({tr("Name"), tr("ID"), tr("Status"), tr("Steps"), tr("Final reward"), tr("Created")});
    tree_->setSelectionBehavior(QAbstractItemView::SelectRows);
    tree_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    tree_->setAlternatingRowColors(true);
    tree_->setUniformRowHeights(true);
    tree_->header()->setStretchLastSection(true);
    tree_->setColumnWidth(TreeName, 360);
    views_->addWidget(tree_);
    tl->addWidget(views_, 1);
    info_ = new QLabel(tablePane);
    info_->setObjectName(QStringLiteral("runInfo"));
    info_->setWordWrap(true);
    tl->addWidget(info_);

    lowerTabs_ = new QTabWidget(split);
    lowerTabs_->setObjectName(QStringLiteral("lowerTabs"));
    lowerTabs_->setDocumentMode(true);
    diff_ = new ConfigDiffView(lowerTabs_);
    summary_ = new MetricSummary(lowerTabs_);
    lowerTabs_->addTab(diff_, tr("Config diff"));
    lowerTabs_->addTab(summary_, tr("Metric summary"));
    lowerTabs_->setTabToolTip(1, tr("Final, best and mean-of-last-%1 of one metric for the selected runs "
                                    "(every run when none is selected)")
                                     .arg(MetricSummary::kLastN));
    connect(lowerTabs_, &QTabWidget::currentChanged, this, [this] { updateSummary(); });

    split->addWidget(tablePane);
    split->addWidget(lowerTabs_);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    outer->addWidget(split, 1);

    connect(table_, &QTableWidget::itemSelectionChanged, this, [this] { onSelectionChanged(); });
    connect(tree_, &QTreeWidget::itemSelectionChanged, this, [this] { onSelectionChanged(); });
    connect(tree_, &QTreeWidget::itemDoubleClicked, this, [this](QTreeWidgetItem* it) {
        if (it && it->childCount() == 0 && it->data(TreeName, kIdRole).isValid())
            emit runActivated(it->data(TreeName, kIdRole).toLongLong());
    });
    const auto remember = [this](QTreeWidgetItem* it, bool open) {
        const QString key = it->data(TreeName, Qt::UserRole + 2).toString();
        collapsed_.removeAll(key);
        if (!open && !key.isEmpty()) collapsed_ << key;
    };
    connect(tree_, &QTreeWidget::itemCollapsed, this, [remember](QTreeWidgetItem* it) { remember(it, false); });
    connect(tree_, &QTreeWidget::itemExpanded, this, [remember](QTreeWidgetItem* it) { remember(it, true); });
    connect(table_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* it) { onItemChanged(it); });
    connect(table_, &QTableWidget::customContextMenuRequested, this, [this](const QPoint& p) { showContextMenu(p); });
    connect(table_, &QTableWidget::itemDoubleClicked, this, [this](QTableWidgetItem* it) {
        if (it && it->column() != ColName) emit runActivated(it->data(kIdRole).toLongLong());
    });

    followHover();

    auto* del = new QAction(tr("Delete"), table_);
    del->setShortcut(QKeySequence::Delete);
    del->setShortcutContext(Qt::WidgetShortcut);
    connect(del, &QAction::triggered, this, [this] {
        if (!static_cast<RunTable*>(table_)->editing()) deleteRuns(selectedRunIds());
    });
    table_->addAction(del);

    updateDiff();
    populate();
}

void RunBrowser::setDatabase(RunDatabase* database) {
    for (const auto& c : dbConnections_) disconnect(c);
    dbConnections_.clear();
    db_ = database;
    // Another file: its run ids name other runs, so nothing selected,
    // pinned or shown carries over.
    const auto startOver = [this] {
        rows_.clear();
        {
            QSignalBlocker block(table_);
            table_->setRowCount(0);
        }
        const bool hadSelection = !lastSelection_.isEmpty();
        lastSelection_.clear();
        selectionOrder_.clear();
        editError_.clear();
        if (baseline_) {
            baseline_.reset();
            emit baselineChanged(-1);
        }
        refresh();
        if (hadSelection) emit selectionChanged({});
    };
    if (db_) {
        dbConnections_ << connect(db_, &RunDatabase::opened, this, startOver);
        dbConnections_ << connect(db_, &RunDatabase::closed, this, startOver);
        dbConnections_ << connect(db_, &QObject::destroyed, this, [this] {
            db_ = nullptr;
            dbConnections_.clear();
        });
    }
    startOver();
}

void RunBrowser::refresh() {
    if (!db_ || !db_->isOpen()) {
        rows_.clear();
        sweeps_.clear();
        sweepLinks_.clear();
        populate();
        return;
    }
    if (static_cast<RunTable*>(table_)->editing()) return;  // never yank an open editor
    std::map<int64_t, Row> next;
    try {
        for (const RunSummary& s : db_->runs()) {
            Row r;
            const auto old = rows_.find(s.id);
            const bool unchanged = old != rows_.end() && old->second.summary.updated == s.updated &&
                                   old->second.summary.steps == s.steps && old->second.summary.status == s.status;
            if (unchanged) r = old->second;
            else readRow(s, r);
            r.summary = s;
            next.emplace(s.id, std::move(r));
        }
        sweeps_ = db_->sweeps();
        sweepLinks_ = db_->sweepRuns();
        lastError_.clear();
    } catch (const StoreError& e) {
        lastError_ = qs(e.what());
        populate();
        return;
    }
    rows_ = std::move(next);
    if (baseline_ && !rows_.count(*baseline_)) {
        baseline_.reset();
        emit baselineChanged(-1);
    }
    populate();
}

void RunBrowser::readRow(const RunSummary& s, Row& r) const {
    if (auto info = db_->runInfo(s.id)) {
        r.notes = info->notes;
        r.machine = info->machine;
        r.configJson = info->config_json;
        r.seed = static_cast<int64_t>(info->seed);
    }
    const std::vector<MetricPoint> reward = db_->metricSeries(s.id, "reward_mean");
    const std::vector<MetricPoint> k3 = db_->metricSeries(s.id, "k3_kl");
    const RunStats rs = run_stats(reward, "reward_mean");
    r.stats.finalReward = rs.final_value;
    r.stats.bestReward = rs.best;
    r.stats.meanK3 = run_stats(k3, "k3_kl", static_cast<int>(k3.size())).mean_last;
}

int RunBrowser::rowOf(int64_t id) const {
    for (int r = 0; r < table_->rowCount(); ++r)
        if (auto* it = table_->item(r, ColId); it && it->data(kIdRole).toLongLong() == id) return r;
    return -1;
}

// The run under the mouse in the table or the group tree (a group's own row
// is no run).
void RunBrowser::followHover() {
    auto* inTable =
        new RunHover(table_, [this](const QModelIndex& i) { return std::max<int64_t>(0, idAtRow(i.row())); });
    auto* inTree = new RunHover(tree_, [](const QModelIndex& i) {
        const QVariant id = i.siblingAtColumn(TreeName).data(kIdRole);
        return id.isValid() ? id.toLongLong() : int64_t(0);
    });
    for (RunHover* hover : {inTable, inTree}) connect(hover, &RunHover::runHovered, this, &RunBrowser::runHovered);
}

int64_t RunBrowser::idAtRow(int row) const {
    auto* it = table_->item(row, ColId);
    return it ? it->data(kIdRole).toLongLong() : -1;
}

void RunBrowser::populate() {
    populating_ = true;
    const QList<int64_t> keepSel = lastSelection_;
    table_->setSortingEnabled(false);
    {
        QSignalBlocker block(table_);
        // Drop rows of runs that no longer exist.
        for (int r = table_->rowCount() - 1; r >= 0; --r)
            if (!rows_.count(idAtRow(r))) table_->removeRow(r);
        for (const auto& [id, row] : rows_) {
            int r = rowOf(id);
            if (r < 0) {
                r = table_->rowCount();
                table_->insertRow(r);
                for (int c = 0; c < ColumnCount; ++c) {
                    QTableWidgetItem* it =
                        isNumberColumn(c) ? static_cast<QTableWidgetItem*>(new NumberCell) : new TextCell;
                    it->setData(kIdRole, QVariant::fromValue<qlonglong>(id));
                    Qt::ItemFlags f = Qt::ItemIsSelectable | Qt::ItemIsEnabled;
                    if (c == ColName && !(db_ && db_->readOnly())) f |= Qt::ItemIsEditable;
                    it->setFlags(f);
                    if (c == ColId) it->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
                    table_->setItem(r, c, it);
                }
            }
            fillRow(r, id, row);
        }
    }
    table_->setSortingEnabled(true);
    fitColumns();
    updateColours();
    applyFilter();
    populateTree();
    selectRuns(keepSel);
    populating_ = false;

    updateInfo();
    onSelectionChanged();
    updateDiff();
    updateSummary();
}

void RunBrowser::fillRow(int r, int64_t id, const Row& row) {
    const RunSummary& s = row.summary;
    const bool isBase = baseline_ && *baseline_ == id;
    const auto bold = [&](QTableWidgetItem* it) {
        QFont f = it->font();
        f.setBold(isBase);
        it->setFont(f);
        return it;
    };
    const auto text = [&](int c, const QString& t) {
        QTableWidgetItem* it = table_->item(r, c);
        it->setText(t);
        return bold(it);
    };
    const auto number = [&](int c, double v, const QString& t) {
        auto* it = static_cast<NumberCell*>(table_->item(r, c));
        it->setValue(v, t);
        return bold(it);
    };
    // "—" when the run has no such value (no metric, or no finite step).
    const auto stat = [](double v) { return std::isnan(v) ? kNone : qs(value_text(v)); };

    auto* idItem =
        number(ColId, static_cast<double>(id), isBase ? QStringLiteral("%1 \u2691").arg(id) : QString::number(id));
    idItem->setToolTip(isBase ? tr("Baseline of the config diff") : QString());
    number(ColColour, static_cast<double>(id), QString());
    auto* nameItem = text(ColName, qs(s.name));
    nameItem->setToolTip(row.notes.empty() ? tr("Double-click to rename; right-click for notes")
                                           : tr("Notes: %1").arg(qs(row.notes)));
    nameItem->setIcon(row.notes.empty() ? QIcon() : style()->standardIcon(QStyle::SP_FileDialogContentsView));
    text(ColStatus, qs(s.status))->setForeground(palette::statusColour(s.status));
    text(ColPreset, qs(s.preset));
    number(ColSteps, static_cast<double>(s.steps), QString::number(s.steps));
    number(ColFinalReward, row.stats.finalReward, stat(row.stats.finalReward));
    number(ColBestReward, row.stats.bestReward, stat(row.stats.bestReward));
    number(ColMeanK3, row.stats.meanK3, stat(row.stats.meanK3));
    text(ColCreated, localTimeText(s.created))
        ->setToolTip(row.machine.empty() ? qs(s.created) : tr("%1\nRan on %2").arg(qs(s.created), qs(row.machine)));
}

void RunBrowser::fitColumns() {
    // Only when the set of runs or of their statuses changes (not on every
    // poll, so a width the user dragged survives refreshes): a run fitted as
    // "running" that a killed process leaves "interrupted" needs more room.
    std::set<std::string> statuses;
    for (const auto& [id, row] : rows_) statuses.insert(row.summary.status);
    QString key = QString::number(rows_.size());
    for (const std::string& s : statuses) key += QLatin1Char('|') + qs(s);
    if (key == fittedKey_) return;
    fittedKey_ = key;
    for (int c = 0; c < ColumnCount; ++c) {
        if (c == ColColour || c == ColCreated) continue;  // Created stretches
        table_->resizeColumnToContents(c);
        // room for bold (baseline) rows; names get at least 160 px
        const int w = table_->columnWidth(c) + (c == ColName ? 24 : 6);
        table_->setColumnWidth(c, c == ColName ? std::clamp(w, 160, 320) : std::min(w, 220));
    }
}

void RunBrowser::updateSummary() {
    // Read only while the tab is shown, and only when a run it shows moved:
    // refresh() runs every 750 ms during a run.
    if (lowerTabs_->currentWidget() != summary_) return;
    QList<int64_t> ids = selectedRunIds();
    if (ids.isEmpty()) ids = runIds();
    QList<MetricSummary::RunRef> runs;
    QString signature;
    for (int64_t id : ids) {
        const auto it = rows_.find(id);
        if (it == rows_.end()) continue;
        runs.append({id, qs(it->second.summary.name), runColour(id)});
        signature += QStringLiteral("%1:%2:%3:%4:%5;")
                         .arg(id)
                         .arg(it->second.summary.steps)
                         .arg(qs(it->second.summary.updated), runs.back().name, runs.back().colour.name());
    }
    if (signature == summarySignature_ && summaryDatabase_ == db_) return;
    summarySignature_ = signature;
    summaryDatabase_ = db_;
    summary_->setRuns(db_, runs);
}

bool RunBrowser::matchesFilter(int64_t id) const {
    const QString f = filter_->text().trimmed();
    if (f.isEmpty()) return true;
    const auto it = rows_.find(id);
    if (it == rows_.end()) return false;
    const Row& row = it->second;
    for (const std::string* s : {&row.summary.name, &row.summary.preset, &row.summary.status, &row.notes})
        if (qs(*s).contains(f, Qt::CaseInsensitive)) return true;
    return QString::number(id) == f;
}

void RunBrowser::applyFilter() {
    for (int r = 0; r < table_->rowCount(); ++r) table_->setRowHidden(r, !matchesFilter(idAtRow(r)));
    updateInfo();
}

// The count says what the table shows: with a filter hiding rows, how many of
// how many.
void RunBrowser::updateInfo() {
    const int all = static_cast<int>(rows_.size());
    int shown = 0;
    for (int r = 0; r < table_->rowCount(); ++r) shown += !table_->isRowHidden(r);
    QString info =
        shown == all ? tr("%n run(s)", nullptr, all) : tr("%1 of %n run(s) match the filter", nullptr, all).arg(shown);
    if (!db_ || !db_->isOpen()) info = tr("No run database open");
    for (const QString& error : {lastError_, editError_})
        if (!error.isEmpty())
            info += QStringLiteral(" \u2014 <span style='color:%1'>%2</span>")
                        .arg(palette::statusColour("failed").name(), error.toHtmlEscaped());
    info_->setText(info);
}

QList<int64_t> RunBrowser::runIds() const {
    QList<int64_t> out;
    for (int r = 0; r < table_->rowCount(); ++r) out << idAtRow(r);
    return out;
}

QList<int64_t> RunBrowser::selectedRunIds() const {
    if (groupBy_ != GroupBy::none) return treeSelectedRunIds();
    std::set<int> rowsSel;
    for (const QModelIndex& i : table_->selectionModel()->selectedRows()) rowsSel.insert(i.row());
    QList<int64_t> inRows;
    for (int r : rowsSel) inRows << idAtRow(r);
    // In the order the user selected them: those still selected first, then
    // the newly selected ones (in row order, as one click or drag adds them).
    QList<int64_t> out;
    for (int64_t id : selectionOrder_)
        if (inRows.contains(id)) out << id;
    for (int64_t id : inRows)
        if (!out.contains(id)) out << id;
    return out;
}

void RunBrowser::selectRuns(const QList<int64_t>& ids) {
    {
        QSignalBlocker block(table_);
        QSignalBlocker block2(table_->selectionModel());
        table_->clearSelection();
        QItemSelection sel;
        for (int64_t id : ids) {
            const int r = rowOf(id);
            if (r < 0) continue;
            sel.select(table_->model()->index(r, 0), table_->model()->index(r, ColumnCount - 1));
        }
        table_->selectionModel()->select(sel, QItemSelectionModel::Select);
        selectionOrder_ = QList<int64_t>(ids.begin(), ids.end());
        selectInTree(ids);
    }
    table_->viewport()->update();
    if (!populating_) onSelectionChanged();
}

void RunBrowser::onSelectionChanged() {
    if (populating_) return;
    const QList<int64_t> sel = selectedRunIds();
    selectionOrder_ = sel;
    if (sel == lastSelection_) return;
    lastSelection_ = sel;
    updateDiff();
    updateSummary();
    emit selectionChanged(sel);
}

QTableWidget* RunBrowser::diffTable() const { return diff_->table(); }
void RunBrowser::setDifferencesOnly(bool on) { diff_->setDifferencesOnly(on); }
bool RunBrowser::differencesOnly() const { return diff_->differencesOnly(); }
QStringList RunBrowser::diffKeys() const { return diff_->keys(); }

void RunBrowser::updateDiff() {
    // Reference column: the pinned baseline, else the run selected first;
    // other columns: every other selected run. A lone run is compared with
    // the defaults.
    const QList<int64_t> sel = selectedRunIds();
    std::optional<int64_t> ref = baseline_;
    if (!ref && !sel.isEmpty()) ref = sel.front();
    QList<ConfigDiffView::Column> cols;
    const auto column = [&](int64_t id, const QString& role) {
        const Row& row = rows_.at(id);
        return ConfigDiffView::Column{role + runLabel(id, qs(row.summary.name)), runColour(id), row.configJson,
                                      row.machine};
    };
    QString title;
    if (ref && rows_.count(*ref)) {
        cols << column(*ref, baseline_ ? tr("baseline ") : QString());
        for (int64_t id : sel)
            if (id != *ref && rows_.count(id)) cols << column(id, QString());
        if (cols.size() == 1) {
            cols.insert(
                0, ConfigDiffView::Column{tr("defaults"), QColor(), config_to_json(Config{}).dump(), std::string()});
            title = tr("<b>Config of run %1</b> against the defaults. Select other runs to compare%2.")
                        .arg(*ref)
                        .arg(baseline_ ? QString() : tr(", or right-click \u2192 Pin as baseline"));
        } else {
            title = baseline_ ? tr("<b>Config vs baseline</b> run %1").arg(*ref)
                              : tr("<b>Config vs run %1</b> (selected first; pin a baseline to keep it)").arg(*ref);
        }
    } else {
        title = tr("Select runs to compare their configs; right-click a run \u2192 <i>Pin as baseline</i>.");
    }
    diff_->setColumns(title, cols);
}

}  // namespace mlk
