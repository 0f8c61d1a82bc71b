#include "widgets/panels/run_browser.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <QAction>
#include <QCheckBox>
#include <QTabWidget>
#include <QColorDialog>
#include <QDateTime>
#include <QDialog>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "widgets/data/run_data.h"

namespace mlk {

namespace {

constexpr int kIdRole = Qt::UserRole + 1;    // run id on every item of a row
constexpr int kSortRole = Qt::UserRole + 2;  // numeric sort key

QString qs(const std::string& s) { return QString::fromStdString(s); }
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Sorts by kSortRole when present (numbers, with NaN as the lowest), else by text.
class SortItem : public QTableWidgetItem {
public:
    using QTableWidgetItem::QTableWidgetItem;
    bool operator<(const QTableWidgetItem& other) const override {
        const QVariant a = data(kSortRole), b = other.data(kSortRole);
        if (a.isValid() && b.isValid()) {
            const double x = a.toDouble(), y = b.toDouble();
            if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && !std::isnan(y);
            return x < y;
        }
        return text().localeAwareCompare(other.text()) < 0;
    }
};

QString fmtNumber(double v, bool small) {
    if (std::isnan(v)) return QStringLiteral("\u2014");
    if (std::isinf(v)) return v > 0 ? QStringLiteral("+inf") : QStringLiteral("-inf");
    if (small) return QString::number(v, 'g', 3);
    return QString::number(v, 'f', 3);
}

QString fmtCreated(const std::string& iso) {
    QDateTime t = QDateTime::fromString(qs(iso), Qt::ISODateWithMs);
    if (!t.isValid()) return qs(iso);
    return t.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
}

QIcon swatch(const QColor& c) {
    QPixmap pm(14, 14);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(c.darker(140));
    p.setBrush(c);
    p.drawRoundedRect(QRectF(0.5, 0.5, 13, 13), 3, 3);
    return QIcon(pm);
}

QColor statusColour(const std::string& s) {
    if (s == "finished") return QColor(0x2e, 0x7d, 0x32);
    if (s == "failed") return QColor(0xc6, 0x28, 0x28);
    if (s == "running") return QColor(0x15, 0x65, 0xc0);
    return QColor(0x61, 0x61, 0x61);
}

// Dotted key -> display text for a stored config; schema keys through the
// typed parser (so defaults are filled in), raw flattening as the fallback for
// a config this build cannot parse.
using FlatConfig = std::map<std::string, std::string>;

void flattenRaw(const nlohmann::json& j, const std::string& prefix, FlatConfig& out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it)
            flattenRaw(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    } else {
        out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
    }
}

FlatConfig flatConfig(const std::string& configJson, bool* parsed = nullptr) {
    FlatConfig out;
    if (parsed) *parsed = false;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(configJson.empty() ? std::string("{}") : configJson);
    } catch (const nlohmann::json::exception&) {
        return out;
    }
    try {
        const Config c = config_from_json(j);
        for (const ConfigKey& k : config_schema()) out[k.key] = config_value_text(c, k.key);
        if (parsed) *parsed = true;
    } catch (const ConfigError&) {
        flattenRaw(j, "", out);
    }
    return out;
}

// Exposes the view state: a poll must not destroy an open name editor.
class RunTable : public QTableWidget {
public:
    using QTableWidget::QTableWidget;
    bool editing() const { return state() == QAbstractItemView::EditingState; }
};

}  // namespace

RunBrowser::RunBrowser(QWidget* parent) : QWidget(parent) { buildUi(); }

RunBrowser::~RunBrowser() = default;

// The chart layer's rule (widgets/run_data.h), so a run has one colour everywhere.
const QList<QColor>& RunBrowser::defaultPalette() { return RunDataStore::palette(); }

QColor RunBrowser::defaultRunColour(int64_t id) { return RunDataStore::defaultColour(id); }

void RunBrowser::buildUi() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);
    outer->setSpacing(4);

    auto* top = new QHBoxLayout;
    filter_ = new QLineEdit(this);
    filter_->setPlaceholderText(tr("Filter by name, preset, status or notes"));
    filter_->setClearButtonEnabled(true);
    auto* pinBtn = new QPushButton(tr("Pin as baseline"), this);
    pinBtn->setObjectName(QStringLiteral("pinBaseline"));
    pinBtn->setToolTip(tr("Compare the configs of other runs against the selected run"));
    auto* refreshBtn = new QPushButton(tr("Refresh"), this);
    top->addWidget(filter_, 1);
    top->addWidget(pinBtn);
    top->addWidget(refreshBtn);
    outer->addLayout(top);
    connect(filter_, &QLineEdit::textChanged, this, [this] { applyFilter(); });
    connect(refreshBtn, &QPushButton::clicked, this, [this] { refresh(); });
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
    table_->horizontalHeaderItem(ColFinalReward)->setToolTip(tr("reward_mean at the last step"));
    table_->horizontalHeaderItem(ColBestReward)->setToolTip(tr("Highest reward_mean of any step"));
    table_->horizontalHeaderItem(ColMeanK3)->setToolTip(
        tr("Mean over steps of k3_kl, the K3 estimate of KL(rollout || training); 0 = truly on-policy"));
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
    tl->addWidget(table_, 1);
    info_ = new QLabel(tablePane);
    info_->setObjectName(QStringLiteral("runInfo"));
    info_->setWordWrap(true);
    tl->addWidget(info_);

    lowerTabs_ = new QTabWidget(split);
    lowerTabs_->setObjectName(QStringLiteral("lowerTabs"));
    lowerTabs_->setDocumentMode(true);
    auto* diffPane = new QWidget(lowerTabs_);
    auto* dl = new QVBoxLayout(diffPane);
    dl->setContentsMargins(0, 0, 0, 0);
    dl->setSpacing(2);
    auto* dh = new QHBoxLayout;
    diffTitle_ = new QLabel(diffPane);
    diffTitle_->setWordWrap(true);
    diffTitle_->setTextFormat(Qt::RichText);
    diffOnly_ = new QCheckBox(tr("Differences only"), diffPane);
    diffOnly_->setObjectName(QStringLiteral("differencesOnly"));
    diffOnly_->setChecked(true);
    dh->addWidget(diffTitle_, 1);
    dh->addWidget(diffOnly_, 0, Qt::AlignTop);
    dl->addLayout(dh);
    diff_ = new QTableWidget(0, 2, diffPane);
    diff_->setObjectName(QStringLiteral("configDiff"));
    diff_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    diff_->verticalHeader()->hide();
    diff_->verticalHeader()->setDefaultSectionSize(diff_->fontMetrics().height() + 6);
    diff_->horizontalHeader()->setStretchLastSection(true);
    diff_->setAlternatingRowColors(true);
    diff_->setWordWrap(false);
    dl->addWidget(diff_, 1);
    connect(diffOnly_, &QCheckBox::toggled, this, [this] { updateDiff(); });

    summary_ = new MetricSummary(lowerTabs_);
    lowerTabs_->addTab(diffPane, tr("Config diff"));
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
    connect(table_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* it) { onItemChanged(it); });
    connect(table_, &QTableWidget::customContextMenuRequested, this, [this](const QPoint& p) { showContextMenu(p); });
    connect(table_, &QTableWidget::itemDoubleClicked, this, [this](QTableWidgetItem* it) {
        if (it && it->column() != ColName) emit runActivated(it->data(kIdRole).toLongLong());
    });

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

void RunBrowser::setStore(Store* store) {
    store_ = store;
    if (owned_ && owned_.get() != store) owned_.reset();
    rows_.clear();
    baseline_.reset();
    refresh();
}

bool RunBrowser::setDatabase(const QString& path, QString* error) {
    try {
        auto s = std::make_unique<Store>(Store::open(path.toStdString()));
        rows_.clear();
        baseline_.reset();
        owned_ = std::move(s);
        store_ = owned_.get();
        refresh();
        return true;
    } catch (const StoreError& e) {
        setError(qs(e.what()));
        if (error) *error = qs(e.what());
        return false;
    }
}

void RunBrowser::setError(const QString& e) {
    lastError_ = e;
    populate();  // shows the message in the info line
}

void RunBrowser::refresh() {
    if (!store_) {
        rows_.clear();
        populate();
        return;
    }
    if (static_cast<RunTable*>(table_)->editing()) return;  // never yank an open editor
    std::map<int64_t, Row> next;
    try {
        for (const RunSummary& s : store_->list_runs()) {
            Row r;
            auto old = rows_.find(s.id);
            const bool unchanged = old != rows_.end() && old->second.summary.updated == s.updated &&
                                   old->second.summary.steps == s.steps && old->second.summary.status == s.status;
            if (unchanged) {
                r = old->second;
                r.summary = s;
            } else {
                r.summary = s;
                if (auto info = store_->run_info(s.id)) {
                    r.notes = info->notes;
                    r.configJson = info->config_json;
                }
                r.stats.steps = s.steps;
                r.stats.updated = s.updated;
                const auto rew = store_->metric_series(s.id, "reward_mean");
                const auto k3 = store_->metric_series(s.id, "k3_kl");
                r.stats.finalReward = rew.empty() ? kNaN : rew.back().second;
                double best = kNaN;
                for (const auto& [step, v] : rew)
                    if (!std::isnan(v) && (std::isnan(best) || v > best)) best = v;
                r.stats.bestReward = best;
                double sum = 0;
                int n = 0;
                for (const auto& [step, v] : k3)
                    if (std::isfinite(v)) sum += v, ++n;
                r.stats.meanK3 = n ? sum / n : kNaN;
            }
            next.emplace(s.id, std::move(r));
        }
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

int RunBrowser::rowOf(int64_t id) const {
    for (int r = 0; r < table_->rowCount(); ++r)
        if (auto* it = table_->item(r, ColId); it && it->data(kIdRole).toLongLong() == id) return r;
    return -1;
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
                    auto* it = new SortItem;
                    it->setData(kIdRole, QVariant::fromValue<qlonglong>(id));
                    Qt::ItemFlags f = Qt::ItemIsSelectable | Qt::ItemIsEnabled;
                    if (c == ColName) f |= Qt::ItemIsEditable;
                    it->setFlags(f);
                    if (c >= ColSteps && c <= ColMeanK3) it->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                    table_->setItem(r, c, it);
                }
            }
            const RunSummary& s = row.summary;
            const bool isBase = baseline_ && *baseline_ == id;
            auto set = [&](int c, const QString& text, QVariant sortKey = {}) {
                QTableWidgetItem* it = table_->item(r, c);
                it->setText(text);
                it->setData(kSortRole, sortKey);
                QFont f = it->font();
                f.setBold(isBase);
                it->setFont(f);
                return it;
            };
            auto* idItem = set(ColId, isBase ? QStringLiteral("%1 \u2691").arg(id) : QString::number(id),
                               QVariant::fromValue<double>(static_cast<double>(id)));
            idItem->setToolTip(isBase ? tr("Baseline of the config diff") : QString());
            set(ColColour, QString(), QVariant::fromValue<double>(static_cast<double>(id)));
            auto* nameItem = set(ColName, qs(s.name));
            nameItem->setToolTip(row.notes.empty() ? tr("Double-click to rename; right-click for notes")
                                                   : tr("Notes: %1").arg(qs(row.notes)));
            nameItem->setIcon(row.notes.empty() ? QIcon() : style()->standardIcon(QStyle::SP_FileDialogContentsView));
            auto* st = set(ColStatus, qs(s.status));
            st->setForeground(statusColour(s.status));
            set(ColPreset, qs(s.preset));
            set(ColSteps, QString::number(s.steps), QVariant::fromValue<double>(static_cast<double>(s.steps)));
            set(ColFinalReward, fmtNumber(row.stats.finalReward, false), row.stats.finalReward);
            set(ColBestReward, fmtNumber(row.stats.bestReward, false), row.stats.bestReward);
            set(ColMeanK3, fmtNumber(row.stats.meanK3, true), row.stats.meanK3);
            auto* cr = set(ColCreated, fmtCreated(s.created));
            cr->setToolTip(qs(s.created));
        }
    }
    table_->setSortingEnabled(true);
    // Fit the columns when the set of runs changes (not on every poll, so a
    // width the user dragged survives refreshes).
    if (static_cast<int>(rows_.size()) != fittedRows_) {
        fittedRows_ = static_cast<int>(rows_.size());
        for (int c = 0; c < ColumnCount; ++c) {
            if (c == ColColour || c == ColCreated) continue;  // Created stretches
            table_->resizeColumnToContents(c);
            // room for bold (baseline) rows; names get at least 160 px
            const int w = table_->columnWidth(c) + (c == ColName ? 24 : 6);
            table_->setColumnWidth(c, c == ColName ? std::clamp(w, 160, 320) : std::min(w, 220));
        }
    }
    updateColours();
    applyFilter();
    selectRuns(keepSel);
    populating_ = false;

    QString info = tr("%n run(s)", nullptr, static_cast<int>(rows_.size()));
    if (!store_) info = tr("No run store open");
    if (!lastError_.isEmpty())
        info += QStringLiteral(" \u2014 <span style='color:#b71c1c'>%1</span>").arg(lastError_.toHtmlEscaped());
    info_->setText(info);
    onSelectionChanged();
    updateDiff();
    updateSummary();
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
        runs.append({id, QString::fromStdString(it->second.summary.name), runColour(id)});
        signature += QStringLiteral("%1:%2:%3:%4;")
                         .arg(id)
                         .arg(it->second.summary.steps)
                         .arg(QString::fromStdString(it->second.summary.updated), runs.back().name)
                         .arg(runs.back().colour.name());
    }
    if (signature == summarySignature_ && summaryStore_ == store_) return;
    summarySignature_ = signature;
    summaryStore_ = store_;
    summary_->setRuns(store_, runs);
}

void RunBrowser::updateColours() {
    QSignalBlocker block(table_);
    for (int r = 0; r < table_->rowCount(); ++r) {
        const int64_t id = idAtRow(r);
        if (auto* it = table_->item(r, ColColour)) {
            const QColor c = runColour(id);
            it->setIcon(swatch(c));
            it->setToolTip(tr("%1 \u2014 right-click \u2192 Change colour\u2026").arg(c.name()));
        }
    }
}

void RunBrowser::applyFilter() {
    const QString f = filter_->text().trimmed();
    for (int r = 0; r < table_->rowCount(); ++r) {
        bool show = true;
        if (!f.isEmpty()) {
            const auto it = rows_.find(idAtRow(r));
            show = false;
            if (it != rows_.end()) {
                const Row& row = it->second;
                for (const std::string* s : {&row.summary.name, &row.summary.preset, &row.summary.status, &row.notes})
                    if (qs(*s).contains(f, Qt::CaseInsensitive)) show = true;
                if (QString::number(it->first) == f) show = true;
            }
        }
        table_->setRowHidden(r, !show);
    }
}

QList<int64_t> RunBrowser::runIds() const {
    QList<int64_t> out;
    for (int r = 0; r < table_->rowCount(); ++r) out << idAtRow(r);
    return out;
}

QList<int64_t> RunBrowser::selectedRunIds() const {
    std::set<int> rowsSel;
    for (const QModelIndex& i : table_->selectionModel()->selectedRows()) rowsSel.insert(i.row());
    QList<int64_t> out;
    for (int r : rowsSel) out << idAtRow(r);
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
    }
    table_->viewport()->update();
    if (!populating_) onSelectionChanged();
}

void RunBrowser::onSelectionChanged() {
    if (populating_) return;
    const QList<int64_t> sel = selectedRunIds();
    if (sel == lastSelection_) return;
    lastSelection_ = sel;
    updateDiff();
    updateSummary();
    emit selectionChanged(sel);
}

QColor RunBrowser::runColour(int64_t id) const {
    if (auto it = overrides_.find(id); it != overrides_.end()) return it->second;
    if (provider_) {
        const QColor c = provider_(id);
        if (c.isValid()) return c;
    }
    return defaultRunColour(id);
}

void RunBrowser::setColourProvider(std::function<QColor(int64_t)> provider) {
    provider_ = std::move(provider);
    updateColours();
    updateDiff();
}

void RunBrowser::setRunColour(int64_t id, const QColor& c) {
    if (c.isValid()) overrides_[id] = c;
    else overrides_.erase(id);
    updateColours();
    updateDiff();
}

void RunBrowser::changeColour(int64_t id) {
    const QColor c = QColorDialog::getColor(runColour(id), this, tr("Colour of run %1").arg(id));
    if (!c.isValid()) return;
    setRunColour(id, c);
    emit colourChangeRequested(id, c);
}

bool RunBrowser::renameRun(int64_t id, const QString& name) {
    const QString n = name.trimmed();
    auto it = rows_.find(id);
    if (!store_ || it == rows_.end() || n.isEmpty()) return false;
    try {
        store_->rename_run(id, n.toStdString());
    } catch (const StoreError& e) {
        lastError_ = qs(e.what());
        populate();
        return false;
    }
    it->second.summary.name = n.toStdString();
    refresh();
    emit runRenamed(id, n);
    return true;
}

bool RunBrowser::setNotes(int64_t id, const QString& notes) {
    auto it = rows_.find(id);
    if (!store_ || it == rows_.end()) return false;
    try {
        store_->set_notes(id, notes.toStdString());
    } catch (const StoreError& e) {
        lastError_ = qs(e.what());
        populate();
        return false;
    }
    it->second.notes = notes.toStdString();
    it->second.summary.updated.clear();  // force a re-read on refresh
    refresh();
    return true;
}

void RunBrowser::onItemChanged(QTableWidgetItem* item) {
    if (populating_ || !item || item->column() != ColName) return;
    const int64_t id = item->data(kIdRole).toLongLong();
    auto it = rows_.find(id);
    if (it == rows_.end()) return;
    const QString old = qs(it->second.summary.name);
    if (item->text().trimmed() == old) return;
    if (!renameRun(id, item->text())) {
        QSignalBlocker block(table_);
        item->setText(old);
    }
}

int RunBrowser::deleteRuns(const QList<int64_t>& ids) {
    if (!store_ || ids.isEmpty()) return 0;
    if (confirmDeletes_) {
        QString what;
        if (ids.size() == 1) {
            auto it = rows_.find(ids.front());
            what = tr("Delete run %1 \u201C%2\u201D with all its steps, samples and checkpoints records?")
                       .arg(ids.front())
                       .arg(it != rows_.end() ? qs(it->second.summary.name) : QString());
        } else {
            what = tr("Delete %n runs with all their steps, samples and checkpoint records?", nullptr,
                      static_cast<int>(ids.size()));
        }
        const auto answer =
            QMessageBox::question(this, tr("Delete runs"), what + QStringLiteral("\n\n") + tr("This cannot be undone."),
                                  QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
        if (answer != QMessageBox::Yes) return 0;
    }
    QList<int64_t> done;
    for (int64_t id : ids) {
        try {
            store_->delete_run(id);
            done << id;
            overrides_.erase(id);
        } catch (const StoreError& e) {
            lastError_ = qs(e.what());
        }
    }
    refresh();
    if (!done.isEmpty()) emit runsDeleted(done);
    return static_cast<int>(done.size());
}

void RunBrowser::setBaseline(std::optional<int64_t> id) {
    if (id && !rows_.count(*id)) return;
    if (baseline_ == id) return;
    baseline_ = id;
    populate();
    emit baselineChanged(id ? *id : -1);
}

void RunBrowser::setDifferencesOnly(bool on) { diffOnly_->setChecked(on); }
bool RunBrowser::differencesOnly() const { return diffOnly_->isChecked(); }

QStringList RunBrowser::diffKeys() const {
    QStringList out;
    for (int r = 0; r < diff_->rowCount(); ++r)
        if (auto* it = diff_->item(r, 0)) out << it->text();
    return out;
}

void RunBrowser::updateDiff() {
    // Reference column: the baseline, else the first selected run; other
    // columns: every other selected run. A lone run is compared with the defaults.
    struct Col {
        QString title;
        QColor colour;
        FlatConfig flat;
    };
    QList<int64_t> sel = selectedRunIds();
    std::optional<int64_t> ref = baseline_;
    if (!ref && !sel.isEmpty()) ref = sel.front();
    QList<Col> cols;
    auto colOf = [&](int64_t id, const QString& role) {
        const Row& row = rows_.at(id);
        return Col{QStringLiteral("%1%2 %3").arg(role).arg(id).arg(qs(row.summary.name)), runColour(id),
                   flatConfig(row.configJson)};
    };
    QString title;
    if (ref && rows_.count(*ref)) {
        cols << colOf(*ref, baseline_ ? tr("baseline #") : QStringLiteral("#"));
        for (int64_t id : sel)
            if (id != *ref && rows_.count(id)) cols << colOf(id, QStringLiteral("#"));
        if (cols.size() == 1) {
            Col d{tr("defaults"), QColor(), flatConfig(config_to_json(Config{}).dump())};
            cols.insert(0, d);
            title = tr("<b>Config of run %1</b> against the defaults. Select other runs to compare%2.")
                        .arg(*ref)
                        .arg(baseline_ ? QString() : tr(", or right-click \u2192 Pin as baseline"));
        } else {
            title = baseline_ ? tr("<b>Config vs baseline</b> run %1").arg(*ref)
                              : tr("<b>Config vs run %1</b> (first selected; pin a baseline to keep it)").arg(*ref);
        }
    } else {
        title = tr("Select runs to compare their configs; right-click a run \u2192 <i>Pin as baseline</i>.");
    }
    diffTitle_->setText(title);

    std::vector<std::string> keys;
    std::set<std::string> seen;
    for (const ConfigKey& k : config_schema())
        if (seen.insert(k.key).second) keys.push_back(k.key);
    for (const Col& c : cols)
        for (const auto& [k, v] : c.flat)
            if (seen.insert(k).second) keys.push_back(k);

    diff_->clear();
    diff_->setColumnCount(1 + static_cast<int>(cols.size()));
    QStringList headers{tr("Key")};
    for (const Col& c : cols) headers << c.title;
    diff_->setHorizontalHeaderLabels(headers);
    for (int i = 0; i < cols.size(); ++i)
        if (cols[i].colour.isValid()) diff_->horizontalHeaderItem(i + 1)->setIcon(swatch(cols[i].colour));
    diff_->setRowCount(0);
    if (cols.isEmpty()) return;
    const bool only = diffOnly_->isChecked();
    const QString missing = QStringLiteral("\u2014");
    for (const std::string& k : keys) {
        QStringList vals;
        bool differs = false;
        for (const Col& c : cols) {
            auto it = c.flat.find(k);
            vals << (it == c.flat.end() ? missing : qs(it->second));
            if (vals.back() != vals.front()) differs = true;
        }
        if (only && !differs) continue;
        const int r = diff_->rowCount();
        diff_->insertRow(r);
        auto* keyItem = new QTableWidgetItem(qs(k));
        if (const ConfigKey* meta = find_config_key(k))
            keyItem->setToolTip(QStringLiteral("%1 (%2)").arg(qs(meta->label), qs(meta->section)));
        if (differs) {
            QFont f = keyItem->font();
            f.setBold(true);
            keyItem->setFont(f);
        }
        diff_->setItem(r, 0, keyItem);
        for (int i = 0; i < vals.size(); ++i) {
            auto* it = new QTableWidgetItem(vals[i]);
            if (i > 0 && vals[i] != vals[0]) it->setBackground(QColor(0xff, 0xf3, 0xc4));
            diff_->setItem(r, i + 1, it);
        }
    }
    diff_->resizeColumnToContents(0);
    for (int c = 1; c < diff_->columnCount() - 1; ++c) {
        diff_->resizeColumnToContents(c);
        diff_->setColumnWidth(c, std::min(diff_->columnWidth(c), 220));
    }
    if (only && diff_->rowCount() == 0 && cols.size() > 1) {
        diff_->setRowCount(1);
        auto* it = new QTableWidgetItem(tr("(identical configs)"));
        it->setForeground(QColor(0x61, 0x61, 0x61));
        it->setFlags(Qt::ItemIsEnabled);
        diff_->setItem(0, 0, it);
        diff_->setSpan(0, 0, 1, diff_->columnCount());
    }
}

void RunBrowser::editNotes(int64_t id) {
    auto it = rows_.find(id);
    if (it == rows_.end()) return;
    QDialog dlg(this);
    dlg.setWindowTitle(tr("Notes for run %1").arg(id));
    auto* l = new QVBoxLayout(&dlg);
    l->addWidget(new QLabel(tr("Notes for \u201C%1\u201D:").arg(qs(it->second.summary.name)), &dlg));
    auto* edit = new QPlainTextEdit(qs(it->second.notes), &dlg);
    l->addWidget(edit);
    auto* bb = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, &dlg);
    l->addWidget(bb);
    connect(bb, &QDialogButtonBox::accepted, &dlg, &QDialog::accept);
    connect(bb, &QDialogButtonBox::rejected, &dlg, &QDialog::reject);
    dlg.resize(420, 260);
    if (dlg.exec() == QDialog::Accepted) setNotes(id, edit->toPlainText());
}

void RunBrowser::showContextMenu(const QPoint& pos) {
    const QModelIndex idx = table_->indexAt(pos);
    if (idx.isValid() && !table_->selectionModel()->isRowSelected(idx.row(), QModelIndex()))
        selectRuns({idAtRow(idx.row())});
    const QList<int64_t> sel = selectedRunIds();
    QMenu menu(this);
    if (sel.size() == 1) {
        const int64_t id = sel.front();
        menu.addAction(tr("Rename\u2026"), this, [this, id] {
            const int r = rowOf(id);
            if (r >= 0) table_->editItem(table_->item(r, ColName));
        });
        menu.addAction(tr("Notes\u2026"), this, [this, id] { editNotes(id); });
        menu.addAction(tr("Change colour\u2026"), this, [this, id] { changeColour(id); });
        if (overrides_.count(id))
            menu.addAction(tr("Reset colour"), this, [this, id] {
                setRunColour(id, QColor());
                emit colourChangeRequested(id, runColour(id));
            });
        menu.addSeparator();
        if (baseline_ == id) menu.addAction(tr("Unpin baseline"), this, [this] { setBaseline(std::nullopt); });
        else menu.addAction(tr("Pin as baseline"), this, [this, id] { setBaseline(id); });
        menu.addSeparator();
    }
    if (!sel.isEmpty())
        menu.addAction(tr("Delete %n run(s)\u2026", nullptr, static_cast<int>(sel.size())), this,
                       [this, sel] { deleteRuns(sel); });
    menu.addSeparator();
    menu.addAction(tr("Refresh"), this, [this] { refresh(); });
    menu.exec(table_->viewport()->mapToGlobal(pos));
}

}  // namespace mlk
