#include "widgets/panels/metric_summary.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>
#include <limits>
#include <set>

#include "core/store/store.h"
#include "core/metrics/run_stats.h"

namespace mlk {

namespace {

// Sorts by a number, not by its text; a missing or non-finite one sorts last
// whichever the order.
class NumberItem : public QTableWidgetItem {
public:
    NumberItem(double value, const QString& text) : QTableWidgetItem(text), m_value(value) {
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& other) const override {
        const auto* that = dynamic_cast<const NumberItem*>(&other);
        if (!that) return QTableWidgetItem::operator<(other);
        const bool mine = std::isfinite(m_value), theirs = std::isfinite(that->m_value);
        if (mine != theirs) {
            const bool ascending =
                !tableWidget() || tableWidget()->horizontalHeader()->sortIndicatorOrder() == Qt::AscendingOrder;
            return ascending ? mine : !mine;  // the non-finite one ends up last
        }
        return mine && m_value < that->m_value;
    }

private:
    double m_value;
};

QString numberText(double v) { return QString::fromStdString(value_text(v)); }

}  // namespace

MetricSummary::MetricSummary(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto* row = new QHBoxLayout;
    m_choice = new QComboBox(this);
    m_choice->setObjectName(QStringLiteral("summaryMetric"));
    m_choice->setMinimumContentsLength(18);
    m_choice->setToolTip(tr("The metric summarised for each run"));
    row->addWidget(new QLabel(tr("Metric:"), this));
    row->addWidget(m_choice);
    row->addStretch(1);
    layout->addLayout(row);
    connect(m_choice, &QComboBox::currentTextChanged, this, [this](const QString& text) {
        if (!text.isEmpty()) setMetric(text);
    });

    m_table = new QTableWidget(0, ColumnCount, this);
    m_table->setObjectName(QStringLiteral("metricSummary"));
    m_table->setHorizontalHeaderLabels({tr("Run"), tr("Final"), tr("at step"), tr("Best"), tr("at step"),
                                        tr("Mean of last %1").arg(kLastN), tr("NaN/Inf")});
    m_table->horizontalHeaderItem(ColBest)->setToolTip(
        tr("Highest value, or lowest for metrics where lower is better "
           "(KL, F(t), gradient norm, losses, times)"));
    m_table->horizontalHeaderItem(ColMeanLast)
        ->setToolTip(tr("Mean of the finite values of the last %1 stored steps").arg(kLastN));
    m_table->horizontalHeaderItem(ColNonFinite)->setToolTip(tr("Steps whose value is NaN or infinite"));
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->horizontalHeader()->setSectionResizeMode(ColRun, QHeaderView::Stretch);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(ColRun, Qt::AscendingOrder);
    layout->addWidget(m_table, 1);
}

void MetricSummary::setRuns(Store* store, const QList<RunRef>& runs) {
    m_store = store;
    m_runs = store ? runs : QList<RunRef>{};
    reload();
}

void MetricSummary::setMetric(const QString& metric) {
    if (metric == m_metric) return;
    m_metric = metric;
    reload();
}

QStringList MetricSummary::metricChoices() const {
    QStringList choices;
    for (int i = 0; i < m_choice->count(); ++i) choices << m_choice->itemText(i);
    return choices;
}

void MetricSummary::reload() {
    std::set<std::string> names;
    std::vector<MetricPoint> series;
    const std::string metric = m_metric.toStdString();
    m_table->setSortingEnabled(false);  // rows are filled by index
    m_table->setRowCount(0);
    try {
        for (const RunRef& run : m_runs) {
            for (const std::string& name : m_store->metric_names(run.id)) names.insert(name);
            series = m_store->metric_series(run.id, metric);
            const RunStats st = run_stats(series, metric, kLastN);
            const int r = m_table->rowCount();
            m_table->insertRow(r);
            auto* name = new QTableWidgetItem(QStringLiteral("#%1 %2").arg(run.id).arg(run.name));
            name->setData(Qt::DecorationRole, run.colour);
            name->setData(Qt::UserRole, qint64(run.id));
            m_table->setItem(r, ColRun, name);
            const bool any = st.count > 0;
            const auto step = [](int64_t s) { return s >= 0 ? double(s) : std::numeric_limits<double>::quiet_NaN(); };
            const auto text = [&](double v) { return any ? numberText(v) : QStringLiteral("\u2014"); };
            m_table->setItem(r, ColFinal, new NumberItem(st.final_value, text(st.final_value)));
            m_table->setItem(
                r, ColFinalStep,
                new NumberItem(step(st.final_step), any ? QString::number(st.final_step) : QStringLiteral("\u2014")));
            const bool best = st.best_step >= 0;
            m_table->setItem(r, ColBest,
                             new NumberItem(st.best, best ? numberText(st.best) : QStringLiteral("\u2014")));
            m_table->setItem(
                r, ColBestStep,
                new NumberItem(step(st.best_step), best ? QString::number(st.best_step) : QStringLiteral("\u2014")));
            QString mean = text(st.mean_last);
            if (any && st.last_n_finite < st.last_n)
                mean += tr(" (%1 of %2 finite)").arg(st.last_n_finite).arg(st.last_n);
            m_table->setItem(r, ColMeanLast, new NumberItem(st.mean_last, mean));
            m_table->setItem(r, ColNonFinite, new NumberItem(st.nonfinite(), QString::number(st.nonfinite())));
        }
    } catch (const StoreError& e) {
        // A busy or vanished database: keep what was read, say why.
        m_table->setToolTip(QString::fromUtf8(e.what()));
    }
    m_table->setSortingEnabled(true);
    m_table->resizeColumnsToContents();

    const QSignalBlocker block(m_choice);
    m_choice->clear();
    for (const std::string& name : names) m_choice->addItem(QString::fromStdString(name));
    if (m_choice->findText(m_metric) < 0) m_choice->addItem(m_metric);
    m_choice->setCurrentText(m_metric);
}

}  // namespace mlk
