// The "what was tried" table: for a chosen metric, each run's final value,
// best value (max or min by metric_higher_is_better) and mean of the last
// kLastN steps, with the steps they come from, sortable by any column (a
// value missing or not finite sorts last). Reads the run store; the same
// statistics as the report's summary tables (report.h: metric_stats).
#pragma once

#include <QColor>
#include <QList>
#include <QString>
#include <QWidget>

#include <cstdint>

QT_BEGIN_NAMESPACE
class QComboBox;
class QTableWidget;
QT_END_NAMESPACE

namespace mlk {

class Store;

class MetricSummary : public QWidget {
    Q_OBJECT

public:
    static constexpr int kLastN = 10;
    enum Column { ColRun, ColFinal, ColFinalStep, ColBest, ColBestStep, ColMeanLast, ColNonFinite, ColumnCount };

    struct RunRef {
        int64_t id = 0;
        QString name;
        QColor colour;
    };

    explicit MetricSummary(QWidget* parent = nullptr);

    // Shows these runs (read from store, not owned; nullptr clears).
    void setRuns(Store* store, const QList<RunRef>& runs);
    // The metric summarised; the choice offers every metric of the runs shown.
    void setMetric(const QString& metric);
    QString metric() const { return m_metric; }
    QStringList metricChoices() const;

    QTableWidget* table() const { return m_table; }

private:
    void reload();

    Store* m_store = nullptr;
    QList<RunRef> m_runs;
    QString m_metric = QStringLiteral("reward_mean");
    QComboBox* m_choice = nullptr;
    QTableWidget* m_table = nullptr;
};

}  // namespace mlk
