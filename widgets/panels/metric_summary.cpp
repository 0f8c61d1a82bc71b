#include "widgets/panels/metric_summary.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QVBoxLayout>

#include <set>

#include "core/metrics/run_stats.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/run_data.h"
#include "widgets/data/run_database.h"
#include "widgets/panels/number_cell.h"

namespace mlk {

namespace {

QString numberText(double v) { return QString::fromStdString(value_text(v)); }

}  // namespace

MetricSummary::MetricSummary(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto* row = new QHBoxLayout;
    choice_ = new QComboBox(this);
    choice_->setObjectName(QStringLiteral("summaryMetric"));
    choice_->setMinimumContentsLength(18);
    choice_->setToolTip(tr("The metric summarised for each run"));
    row->addWidget(new QLabel(tr("Metric:"), this));
    row->addWidget(choice_);
    row->addStretch(1);
    layout->addLayout(row);
    connect(choice_, &QComboBox::currentTextChanged, this, [this](const QString& text) {
        if (!text.isEmpty()) setMetric(text);
    });

    table_ = new QTableWidget(0, ColumnCount, this);
    table_->setObjectName(QStringLiteral("metricSummary"));
    table_->setMinimumHeight(2 * table_->fontMetrics().height() + 16);  // as the config diff's
    table_->setHorizontalHeaderLabels({tr("Run"), tr("Final"), tr("at step"), tr("Best"), tr("at step"),
                                       tr("Mean of last %1").arg(kLastN), tr("NaN/Inf")});
    table_->horizontalHeaderItem(ColBest)->setToolTip(
        tr("Highest value, or lowest for metrics where lower is better "
           "(KL, F(t), gradient norm, losses, times)"));
    table_->horizontalHeaderItem(ColMeanLast)
        ->setToolTip(tr("Mean of the finite values of the last %1 stored steps").arg(kLastN));
    table_->horizontalHeaderItem(ColNonFinite)->setToolTip(tr("Steps whose value is NaN or infinite"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->verticalHeader()->hide();
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
    table_->setAlternatingRowColors(true);
    table_->setWordWrap(false);
    table_->horizontalHeader()->setSectionResizeMode(ColRun, QHeaderView::Stretch);
    table_->setSortingEnabled(true);
    table_->sortByColumn(ColRun, Qt::AscendingOrder);
    layout->addWidget(table_, 1);
}

void MetricSummary::setRuns(const RunDatabase* database, const QList<RunRef>& runs) {
    database_ = database;
    runs_ = database ? runs : QList<RunRef>{};
    reload();
}

void MetricSummary::setMetric(const QString& metric) {
    if (metric == metric_) return;
    metric_ = metric;
    reload();
}

QStringList MetricSummary::metricChoices() const {
    QStringList choices;
    for (int i = 0; i < choice_->count(); ++i) choices << choice_->itemText(i);
    return choices;
}

void MetricSummary::reload() {
    std::set<std::string> names;
    std::vector<MetricPoint> series;
    const std::string metric = metric_.toStdString();
    table_->setSortingEnabled(false);  // rows are filled by index
    table_->setRowCount(0);
    table_->setToolTip(QString());
    try {
        for (const RunRef& run : runs_) {
            for (const std::string& name : database_->metricNames(run.id)) names.insert(name);
            series = database_->metricSeries(run.id, metric);
            const RunStats st = run_stats(series, metric, kLastN);
            const int r = table_->rowCount();
            table_->insertRow(r);
            auto* name = new QTableWidgetItem(runLabel(run.id, run.name));
            name->setData(Qt::DecorationRole, run.colour);
            name->setData(Qt::UserRole, qint64(run.id));
            table_->setItem(r, ColRun, name);
            const bool any = st.count > 0;
            const auto step = [](int64_t s) { return s >= 0 ? double(s) : NumberCell::kMissing; };
            const auto text = [&](double v) { return any ? numberText(v) : QStringLiteral("\u2014"); };
            table_->setItem(r, ColFinal, new NumberCell(st.final_value, text(st.final_value)));
            table_->setItem(
                r, ColFinalStep,
                new NumberCell(step(st.final_step), any ? QString::number(st.final_step) : QStringLiteral("\u2014")));
            const bool best = st.best_step >= 0;
            table_->setItem(r, ColBest, new NumberCell(st.best, best ? numberText(st.best) : QStringLiteral("\u2014")));
            table_->setItem(
                r, ColBestStep,
                new NumberCell(step(st.best_step), best ? QString::number(st.best_step) : QStringLiteral("\u2014")));
            QString mean = text(st.mean_last);
            if (any && st.last_n_finite < st.last_n)
                mean += tr(" (%1 of %2 finite)").arg(st.last_n_finite).arg(st.last_n);
            table_->setItem(r, ColMeanLast, new NumberCell(st.mean_last, mean));
            table_->setItem(r, ColNonFinite, new NumberCell(st.nonfinite(), QString::number(st.nonfinite())));
        }
    } catch (const StoreError& e) {
        // A busy or vanished database: keep what was read, say why.
        table_->setToolTip(QString::fromUtf8(e.what()));
    }
    table_->setSortingEnabled(true);
    table_->resizeColumnsToContents();

    const QSignalBlocker block(choice_);
    choice_->clear();
    for (const std::string& name : names) choice_->addItem(QString::fromStdString(name));
    if (choice_->findText(metric_) < 0) choice_->addItem(metric_);
    for (int i = 0; i < choice_->count(); ++i)
        choice_->setItemData(i, metricToolTip(choice_->itemText(i)), Qt::ToolTipRole);
    choice_->setCurrentText(metric_);
    choice_->setToolTip(metricToolTip(metric_, tr("The metric summarised for each run:")));
}

}  // namespace mlk
