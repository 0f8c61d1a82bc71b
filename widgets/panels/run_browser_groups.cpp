// RunBrowser, third part: the group tree ("Group by" sweep or
// configuration). Rebuilt from the rows the table holds on every populate();
// which groups are closed and which runs are selected carry over.
#include <QComboBox>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QStackedWidget>
#include <QTreeWidget>

#include <cmath>
#include <functional>

#include "core/metrics/run_stats.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_groups.h"
#include "widgets/panels/run_browser.h"
#include "widgets/panels/run_browser_parts.h"
#include "widgets/data/qt_text.h"

namespace mlk {

using run_browser::kIdRole;

namespace {

constexpr int kGroupKeyRole = Qt::UserRole + 2;

}  // namespace

void RunBrowser::setGroupBy(GroupBy g) {
    if (g == groupBy_) return;
    const QList<int64_t> keep = selectedRunIds();
    groupBy_ = g;
    {
        QSignalBlocker block(groupCombo_);
        groupCombo_->setCurrentIndex(static_cast<int>(g));
    }
    views_->setCurrentWidget(g == GroupBy::none ? static_cast<QWidget*>(table_) : tree_);
    populateTree();
    selectRuns(keep);
}

QTreeWidgetItem* RunBrowser::addTreeRun(QTreeWidgetItem* parent, int64_t id) {
    const Row& row = rows_.at(id);
    const RunSummary& s = row.summary;
    auto* it = new QTreeWidgetItem(parent);
    it->setText(TreeName, qs(s.name));
    it->setIcon(TreeName, run_browser::colourSwatch(runColour(id)));
    it->setText(TreeId, QString::number(id));
    it->setText(TreeStatus, qs(s.status));
    it->setForeground(TreeStatus, palette::statusColour(s.status));
    it->setText(TreeSteps, QString::number(s.steps));
    it->setText(TreeFinalReward,
                std::isnan(row.stats.finalReward) ? QStringLiteral("\u2014") : qs(value_text(row.stats.finalReward)));
    it->setText(TreeCreated, localTimeText(s.created));
    it->setData(TreeName, kIdRole, QVariant::fromValue<qlonglong>(id));
    return it;
}

void RunBrowser::populateTree() {
    if (groupBy_ == GroupBy::none) {
        QSignalBlocker block(tree_);
        tree_->clear();
        return;
    }
    std::vector<GroupedRun> runs;
    for (auto it = rows_.rbegin(); it != rows_.rend(); ++it)  // newest first, as the table opens
        if (matchesFilter(it->first))
            runs.push_back({it->first, it->second.summary.name, it->second.summary.status, it->second.configJson,
                            it->second.seed});
    const std::vector<RunGroup> groups =
        groupBy_ == GroupBy::sweep ? groupBySweep(runs, sweeps_, sweepLinks_) : groupByConfiguration(runs, sweepLinks_);

    const int scroll = tree_->verticalScrollBar()->value();
    QSignalBlocker block(tree_);
    tree_->clear();
    // A parent spans the row: its label says what the columns would.
    const std::function<void(QTreeWidgetItem*, const RunGroup&)> add = [&](QTreeWidgetItem* parent, const RunGroup& g) {
        auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(tree_);
        QString label = g.label;
        if (!g.created.isEmpty()) label += tr(" \u2014 created %1").arg(localTimeText(g.created.toStdString()));
        item->setText(TreeName, label);
        item->setToolTip(TreeName, tr("%1\nSelect to show its runs on the charts").arg(label));
        item->setData(TreeName, kGroupKeyRole, g.key);
        QFont f = item->font(TreeName);
        f.setBold(true);
        item->setFont(TreeName, f);
        item->setFirstColumnSpanned(true);
        for (const RunGroup& c : g.children) add(item, c);
        for (int64_t id : g.runs) addTreeRun(item, id);
        item->setExpanded(!collapsed_.contains(g.key));
    };
    for (const RunGroup& g : groups) add(nullptr, g);
    tree_->verticalScrollBar()->setValue(scroll);
}

QList<int64_t> RunBrowser::treeSelectedRunIds() const {
    // A selected group stands for every run under it, in tree order.
    QList<int64_t> out;
    const std::function<void(QTreeWidgetItem*, bool)> walk = [&](QTreeWidgetItem* it, bool inSelected) {
        const bool sel = inSelected || it->isSelected();
        const QVariant id = it->data(TreeName, kIdRole);
        if (id.isValid() && sel && !out.contains(id.toLongLong())) out << id.toLongLong();
        for (int i = 0; i < it->childCount(); ++i) walk(it->child(i), sel);
    };
    for (int i = 0; i < tree_->topLevelItemCount(); ++i) walk(tree_->topLevelItem(i), false);
    return out;
}

void RunBrowser::selectInTree(const QList<int64_t>& ids) {
    QSignalBlocker block(tree_);
    tree_->clearSelection();
    const std::function<void(QTreeWidgetItem*)> walk = [&](QTreeWidgetItem* it) {
        const QVariant id = it->data(TreeName, kIdRole);
        if (id.isValid() && ids.contains(id.toLongLong())) it->setSelected(true);
        for (int i = 0; i < it->childCount(); ++i) walk(it->child(i));
    };
    for (int i = 0; i < tree_->topLevelItemCount(); ++i) walk(tree_->topLevelItem(i));
    tree_->viewport()->update();
}

}  // namespace mlk
