#include "widgets/panels/sweep_table.h"

#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QPixmap>
#include <QPushButton>
#include <QSet>
#include <QSignalBlocker>
#include <QThread>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

#include "widgets/charts/flow_layout.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/run_hover.h"
#include "widgets/panels/verdict_thresholds.h"
#include "widgets/data/sweep_text.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace {

constexpr int kRunIdRole = Qt::UserRole + 1;   // a seed row's run id
constexpr int kConfigRole = Qt::UserRole + 2;  // a configuration row's index

// "3: 4 configurations × 5 seeds, 2026-11-24 21:03"
QString sweepLabel(const SweepInfo& s) {
    int configs = 0, seeds = 0;
    try {
        const nlohmann::json spec = nlohmann::json::parse(s.spec_json);
        configs = spec.contains("configs") ? (int)spec.at("configs").size() : 0;
        seeds = spec.value("seeds", 0);
    } catch (const std::exception&) {
    }
    return QObject::tr("Sweep %1: %2 configurations \u00d7 %3 seeds, %4")
        .arg(s.id)
        .arg(configs)
        .arg(seeds)
        .arg(localTimeText(s.created));
}

QString settingsTooltip(const SweepConfigInfo& c) {
    QStringList lines{QObject::tr("preset %1").arg(qs(c.preset))};
    for (const auto& [k, v] : c.differs.items())
        lines << qs(k) + QStringLiteral(" = ") + qs(v.is_string() ? v.get<std::string>() : v.dump());
    if (c.differs.empty()) lines << QObject::tr("(no setting differs from the other configurations)");
    return lines.join(QLatin1Char('\n'));
}

QPixmap swatch(const QColor& c) {
    QPixmap p(10, 10);
    p.fill(c);
    return p;
}

}  // namespace

// What a job hands back to the GUI thread.
struct SweepTable::Result {
    std::shared_ptr<Store> store;
    QStringList labels;
    QList<qint64> ids;
    int64_t sweepId = 0;
    QString signature;
    bool unchanged = false;
    std::optional<SweepSummary> summary;
    QString baselineUsed;  // empty when the requested one is gone (another sweep)
    QString error;
};

SweepTable::SweepTable(QWidget* parent) : QWidget(parent) {
    thresholds_ = savedVerdictThresholds();
    buildUi();
}

SweepTable::~SweepTable() {
    if (job_) {
        job_->disconnect(this);
        job_->wait();
        delete job_;
    }
}

void SweepTable::buildUi() {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    sweepChoice_ = new QComboBox(this);
    sweepChoice_->setObjectName(QStringLiteral("sweepChoice"));
    sweepChoice_->setMinimumContentsLength(36);
    sweepChoice_->setToolTip(tr("The sweeps of this database (mismatch-lab-cli sweep)"));
    baselineChoice_ = new QComboBox(this);
    baselineChoice_->setObjectName(QStringLiteral("baselineChoice"));
    baselineChoice_->setMinimumContentsLength(20);
    baselineChoice_->setToolTip(tr("The configuration the others are compared against (\u0394 columns)"));
    thresholdsButton_ = new QPushButton(tr("Thresholds\u2026"), this);
    thresholdsButton_->setToolTip(tr("The verdicts' thresholds, for this table and the reports"));
    showButton_ = new QPushButton(tr("Show on charts"), this);
    showButton_->setToolTip(
        tr("Overlay the selected configurations' runs (all the sweep's without a selection) with seeds as bands"));
    exportButton_ = new QPushButton(tr("Export sweep report\u2026"), this);
    exportButton_->setObjectName(QStringLiteral("exportSweepReport"));
    exportButton_->setToolTip(tr("HTML or PDF, drawn as the charts are (colours, smoothing, seed bands)"));
    // Wraps where the dock is narrow (beside the lessons and the probe on a
    // laptop), rather than hold the window wider than the screen.
    auto* row = new FlowLayout;
    row->addWidget(keptTogether(this, {new QLabel(tr("Sweep:")), sweepChoice_}));
    row->addWidget(keptTogether(this, {new QLabel(tr("Baseline:")), baselineChoice_}));
    row->addWidget(thresholdsButton_);
    row->addWidget(showButton_);
    row->addWidget(exportButton_);
    layout->addLayout(row);
    info_ = new QLabel(this);
    info_->setObjectName(QStringLiteral("sweepInfo"));
    info_->setWordWrap(true);
    layout->addWidget(info_);

    tree_ = new QTreeWidget(this);
    tree_->setObjectName(QStringLiteral("sweepTable"));
    tree_->setColumnCount(ColumnCount);
    tree_->setHeaderLabels({tr("Configuration"), tr("Runs"), tr("Collapsed"), tr("Diverged"), tr("Blow-up"),
                            tr("Warned"), tr("Final reward"), tr("Best"), tr("AUC"), tr("Collapse step"),
                            tr("\u0394 final [95% CI]"), tr("\u0394 AUC [95% CI]")});
    QTreeWidgetItem* header = tree_->headerItem();
    header->setToolTip(ColRuns, tr("Runs stored of the configurations' seeds; a seed row: the run's status"));
    header->setToolTip(ColWarned, tr("Runs with an R3 early warning (F@2 high, gradient norm falling)"));
    header->setToolTip(ColFinal, tr("Mean \u00b1 sd over seeds of each run's mean reward over its last window"));
    header->setToolTip(ColBest, tr("Mean \u00b1 sd over seeds of each run's best window mean"));
    header->setToolTip(ColAuc, tr("Mean \u00b1 sd over seeds of each run's mean reward over all steps"));
    header->setToolTip(ColCollapseStep, tr("Median step where the collapses began"));
    header->setToolTip(ColDeltaFinal, tr("Final reward minus the baseline's, with a %1-resample bootstrap interval; "
                                         "bold where it excludes 0")
                                          .arg(kBootstrapResamples));
    header->setToolTip(ColDeltaAuc, tr("AUC minus the baseline's, with its bootstrap interval"));
    tree_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    tree_->setAlternatingRowColors(true);
    tree_->setUniformRowHeights(true);
    tree_->header()->setStretchLastSection(false);
    tree_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    layout->addWidget(tree_, 1);

    connect(sweepChoice_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setSweep(sweepChoice_->itemData(i).toLongLong());
    });
    connect(baselineChoice_, &QComboBox::currentIndexChanged, this, [this](int i) {
        if (i >= 0) setBaseline(baselineChoice_->itemText(i));
    });
    connect(thresholdsButton_, &QPushButton::clicked, this, &SweepTable::editThresholds);
    connect(showButton_, &QPushButton::clicked, this, [this] {
        const QList<int64_t> ids = selectedRunIds();
        if (!ids.isEmpty()) emit showRunsRequested(ids);
    });
    connect(exportButton_, &QPushButton::clicked, this, &SweepTable::exportReportRequested);
    connect(tree_, &QTreeWidget::itemSelectionChanged, this, [this] {
        if (!tree_->selectedItems().isEmpty()) emit showRunsRequested(selectedRunIds());
    });
    auto* hover = new RunHover(tree_, [this](const QModelIndex& index) {
        const QTreeWidgetItem* item = tree_->itemFromIndex(index);
        if (item && item->childCount() > 0) item = item->child(0);
        return item ? item->data(ColConfig, kRunIdRole).toLongLong() : int64_t(0);
    });
    connect(hover, &RunHover::runHovered, this, &SweepTable::runHovered);
    fillTree();
}

void SweepTable::setDatabase(RunDatabase* database) {
    for (const auto& c : dbConnections_) disconnect(c);
    dbConnections_.clear();
    db_ = database;
    store_.reset();
    storePath_.clear();
    signature_.clear();
    summary_.reset();
    if (db_) {
        dbConnections_ << connect(db_, &RunDatabase::opened, this, [this] {
            store_.reset();  // another file: a connection of its own to it
            signature_.clear();
            sweepId_ = 0;
            refresh();
        });
        dbConnections_ << connect(db_, &RunDatabase::changed, this, &SweepTable::refresh);
        dbConnections_ << connect(db_, &RunDatabase::closed, this, [this] {
            store_.reset();
            storePath_.clear();
            summary_.reset();
            signature_.clear();
            fillTree();
        });
    }
    fillTree();
    refresh();
}

void SweepTable::setSweep(int64_t sweepId) {
    if (sweepId == sweepId_) return;
    sweepId_ = sweepId;
    baseline_.clear();  // another sweep's configurations
    refresh();
}

void SweepTable::setBaseline(const QString& name) {
    if (name == baseline_) return;
    baseline_ = name;
    refresh();
}

void SweepTable::setThresholds(const VerdictThresholds& t) {
    if (t == thresholds_) return;
    thresholds_ = t;
    saveVerdictThresholds(t);
    emit thresholdsChanged(t);
    refresh();
}

void SweepTable::setColourProvider(std::function<QColor(int64_t)> provider) {
    colours_ = std::move(provider);
    fillTree();
}

void SweepTable::refresh() {
    if (!db_ || !db_->isOpen()) return;
    if (job_) {
        again_ = true;
        return;
    }
    startJob();
}

void SweepTable::startJob() {
    again_ = false;
    if (db_->path() != storePath_) store_.reset();
    storePath_ = db_->path();
    auto result = std::make_shared<Result>();
    jobResult_ = result;
    // Everything the job reads is copied: the GUI may change its choices
    // while it runs (then its result is dropped and a new job starts).
    job_ = QThread::create([result, store = store_, path = storePath_.toStdString(), id = sweepId_,
                            baseline = baseline_.toStdString(), th = thresholds_, previous = signature_]() mutable {
        try {
            if (!store) store = std::make_shared<Store>(Store::open(path));
            result->store = store;
            const std::vector<SweepInfo> sweeps = store->list_sweeps();
            for (const SweepInfo& s : sweeps) {
                result->labels << sweepLabel(s);
                result->ids << s.id;
            }
            // The newest sweep until the user picks one.
            if (!result->ids.contains(id)) id = sweeps.empty() ? 0 : sweeps.back().id;
            result->sweepId = id;
            if (!id) return;
            // The summary is recomputed only when a run of the sweep moved
            // (steps, status) or the choices did: the heartbeat polls often.
            const std::vector<SweepRun> linked = store->sweep_runs(id);
            std::map<int64_t, const RunSummary*> byId;
            const std::vector<RunSummary> runs = store->list_runs();
            for (const RunSummary& r : runs) byId[r.id] = &r;
            QString sig = QStringLiteral("%1|%2|%3|").arg(id).arg(qs(baseline), qs(verdict_thresholds_json(th).dump()));
            for (const SweepRun& s : linked) {
                const auto it = byId.find(s.run_id);
                sig += QStringLiteral("%1:%2:%3:%4;")
                           .arg(s.run_id)
                           .arg(it != byId.end() ? it->second->steps : -1)
                           .arg(it != byId.end() ? qs(it->second->status) : QString(),
                                it != byId.end() ? qs(it->second->updated) : QString());
            }
            result->signature = sig;
            if (sig == previous) {
                result->unchanged = true;
                return;
            }
            try {
                result->summary = summarize_sweep(*store, id, th, baseline);
                result->baselineUsed = qs(baseline);
            } catch (const std::invalid_argument&) {
                result->summary = summarize_sweep(*store, id, th);  // that baseline is not in this sweep
            }
        } catch (const std::exception& e) {
            result->error = QString::fromUtf8(e.what());
        }
    });
    connect(job_, &QThread::finished, this, &SweepTable::finishJob);
    job_->start();
}

void SweepTable::finishJob() {
    job_->deleteLater();
    job_ = nullptr;
    const std::shared_ptr<Result> r = std::move(jobResult_);
    if (r->store) store_ = r->store;
    if (again_) {
        // The choices moved while it ran: its summary may be of old ones.
        startJob();
        return;
    }
    apply(*r);
}

void SweepTable::apply(const Result& r) {
    lastError_ = r.error;
    if (!r.error.isEmpty()) {
        info_->setText(tr("Could not read the sweeps: %1").arg(r.error));
        return;
    }
    {
        const QSignalBlocker block(sweepChoice_);
        bool same = sweepChoice_->count() == r.labels.size();
        for (int i = 0; same && i < r.labels.size(); ++i)
            same = sweepChoice_->itemText(i) == r.labels[i] && sweepChoice_->itemData(i).toLongLong() == r.ids[i];
        if (!same) {
            sweepChoice_->clear();
            for (int i = 0; i < r.labels.size(); ++i) sweepChoice_->addItem(r.labels[i], r.ids[i]);
        }
        sweepChoice_->setCurrentIndex(r.ids.indexOf(r.sweepId));
    }
    sweepId_ = r.sweepId;
    if (r.unchanged) return;
    signature_ = r.signature;
    summary_ = r.summary;
    if (summary_) baseline_ = r.baselineUsed;
    {
        const QSignalBlocker block(baselineChoice_);
        baselineChoice_->clear();
        if (summary_) {
            for (const SweepConfigInfo& c : summary_->configs) baselineChoice_->addItem(qs(c.name));
            baselineChoice_->setCurrentIndex((int)summary_->baseline);
        }
    }
    fillTree();
    emit updated();
}

QColor SweepTable::configColour(size_t config) const {
    const std::vector<RunOutcome>& runs = summary_->stats[config].runs;
    if (runs.empty()) return palette::neutralInk();
    int64_t first = runs.front().run_id;
    for (const RunOutcome& o : runs) first = std::min(first, o.run_id);
    return colours_ ? colours_(first) : palette::runColour(first);
}

void SweepTable::fillTree() {
    // Rebuilt whole (a sweep has tens of rows), keeping what the user opened
    // and selected.
    QSet<QString> expanded, selected;
    for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
        const QTreeWidgetItem* top = tree_->topLevelItem(i);
        if (top->isExpanded()) expanded << top->text(ColConfig);
        if (top->isSelected()) selected << top->text(ColConfig);
        for (int k = 0; k < top->childCount(); ++k)
            if (top->child(k)->isSelected()) selected << top->child(k)->data(ColConfig, kRunIdRole).toString();
    }
    const QSignalBlocker block(tree_);
    tree_->clear();
    const bool have = summary_.has_value();
    showButton_->setEnabled(have && summary_->runs_stored() > 0);
    exportButton_->setEnabled(have && summary_->runs_stored() > 0);
    baselineChoice_->setEnabled(have);
    if (!have) {
        info_->setText(db_ && db_->isOpen() ? tr("No sweep in this database: mismatch-lab-cli sweep --db FILE ... "
                                                 "runs one, and it shows here as it goes.")
                                            : tr("No database open."));
        return;
    }
    const SweepSummary& s = *summary_;
    QString info = tr("Sweep %1: %2 configurations \u00d7 %3 seeds \u00d7 %4 steps; %5 of %6 runs ended.")
                       .arg(s.sweep_id)
                       .arg(s.configs.size())
                       .arg(s.seeds)
                       .arg(s.steps)
                       .arg(s.runs_stored())
                       .arg(s.runs_expected());
    if (s.runs_in_progress() > 0) info += tr(" %n running, not counted until it ends.", nullptr, s.runs_in_progress());
    if (!(thresholds_ == VerdictThresholds{})) info += tr(" Thresholds changed from the defaults.");
    info_->setText(info);
    info_->setToolTip(qs(collapse_rule_text(thresholds_) + "\n" + divergence_rule_text() + "\n" +
                         blowup_rule_text(thresholds_) + "\n" + warning_rule_text(thresholds_)));
    const palette::Tone bad = palette::errorTone();
    const QColor good = palette::okTone().ink;
    QFont bold = tree_->font();
    bold.setBold(true);
    for (size_t i = 0; i < s.configs.size(); ++i) {
        const SweepConfigInfo& c = s.configs[i];
        const ConfigSummary& st = s.stats[i];
        const int n = (int)st.runs.size();
        auto* top = new QTreeWidgetItem(tree_);
        top->setText(ColConfig, qs(c.name));
        top->setData(ColConfig, kConfigRole, (qulonglong)i);
        top->setIcon(ColConfig, swatch(configColour(i)));
        top->setToolTip(ColConfig, settingsTooltip(c));
        top->setText(ColRuns, c.in_progress > 0 ? tr("%1/%2 (+%3 running)").arg(n).arg(s.seeds).arg(c.in_progress)
                                                : QStringLiteral("%1/%2").arg(n).arg(s.seeds));
        top->setText(ColCollapsed, QString::number(st.collapsed));
        if (n > 0 && 2 * st.collapsed >= n) {
            top->setBackground(ColCollapsed, bad.fill);
            top->setForeground(ColCollapsed, bad.ink);
            top->setFont(ColCollapsed, bold);
            top->setToolTip(ColCollapsed, tr("Half the runs or more collapsed"));
        }
        top->setText(ColDiverged, QString::number(st.diverged));
        top->setText(ColBlowup, QString::number(st.blown_up));
        top->setText(ColWarned, QString::number(st.warned));
        top->setText(ColFinal, sweepSpreadText(st.final_reward));
        top->setText(ColBest, sweepSpreadText(st.best_reward));
        top->setText(ColAuc, sweepSpreadText(st.auc));
        top->setText(ColCollapseStep, std::isfinite(st.median_collapse_step)
                                          ? qs(value_text(st.median_collapse_step, 4))
                                          : QStringLiteral("\u2014"));
        auto delta = [&](int col, double d, const Interval& ci) {
            if (st.baseline) {
                top->setText(col, tr("baseline"));
                return;
            }
            top->setText(col, sweepDeltaText(d, ci));
            if (interval_excludes_zero(ci)) {
                top->setFont(col, bold);
                top->setForeground(col, d > 0 ? good : bad.ink);
                top->setToolTip(col, tr("The 95% interval excludes 0: more than seed noise"));
            }
        };
        delta(ColDeltaFinal, st.delta_final, st.delta_final_ci);
        delta(ColDeltaAuc, st.delta_auc, st.delta_auc_ci);
        for (int col = ColRuns; col < ColumnCount; ++col) top->setTextAlignment(col, Qt::AlignRight | Qt::AlignVCenter);

        for (const RunOutcome& o : st.runs) {
            auto* child = new QTreeWidgetItem(top);
            const RunVerdicts& v = o.verdicts;
            child->setText(ColConfig, tr("seed %1 \u00b7 run #%2").arg(o.seed).arg(o.run_id));
            child->setData(ColConfig, kRunIdRole, (qlonglong)o.run_id);
            child->setText(ColRuns, qs(o.status));
            child->setForeground(ColRuns, palette::statusColour(o.status));
            auto verdict = [&](int col, const Verdict& d) {
                child->setText(col, sweepVerdictCell(d));
                child->setToolTip(col, qs(verdict_text(d)));
                if (d.detected) child->setForeground(col, bad.ink);
            };
            verdict(ColCollapsed, v.collapse);
            verdict(ColDiverged, v.divergence);
            verdict(ColBlowup, v.blowup);
            child->setText(ColWarned, o.warned() ? tr("yes") : tr("no"));
            child->setToolTip(ColWarned, QStringLiteral("F@2: %1\ngrad_norm: %2")
                                             .arg(qs(verdict_text(v.f2_warning)), qs(verdict_text(v.grad_fall))));
            if (o.warned()) child->setForeground(ColWarned, bad.ink);
            child->setText(ColFinal, qs(value_text(o.final_reward, 4)));
            child->setText(ColBest, qs(value_text(o.best_reward, 4)));
            child->setText(ColAuc, qs(value_text(o.auc, 4)));
            child->setText(ColCollapseStep, v.collapse.detected ? QString::number(v.collapse.step) : QString());
            for (int col = ColCollapsed; col < ColumnCount; ++col)
                child->setTextAlignment(col, Qt::AlignRight | Qt::AlignVCenter);
            if (selected.contains(QString::number(o.run_id))) child->setSelected(true);
        }
        if (expanded.contains(top->text(ColConfig))) top->setExpanded(true);
        if (selected.contains(top->text(ColConfig))) top->setSelected(true);
    }
}

QList<int64_t> SweepTable::selectedRunIds() const {
    QList<int64_t> ids;
    for (const QTreeWidgetItem* item : tree_->selectedItems()) {
        if (item->parent()) {
            const int64_t id = item->data(ColConfig, kRunIdRole).toLongLong();
            if (!ids.contains(id)) ids << id;
            continue;
        }
        for (int k = 0; k < item->childCount(); ++k) {
            const int64_t id = item->child(k)->data(ColConfig, kRunIdRole).toLongLong();
            if (!ids.contains(id)) ids << id;
        }
    }
    if (ids.isEmpty())
        for (int64_t id : allRunIds()) ids << id;
    return ids;
}

std::vector<int64_t> SweepTable::allRunIds() const {
    std::vector<int64_t> ids;
    if (summary_)
        for (const ConfigSummary& c : summary_->stats)
            for (const RunOutcome& o : c.runs) ids.push_back(o.run_id);
    return ids;
}

void SweepTable::editThresholds() {
    VerdictThresholdsDialog dialog(thresholds_, this);
    if (dialog.exec() == QDialog::Accepted) setThresholds(dialog.thresholds());
}

}  // namespace mlk
