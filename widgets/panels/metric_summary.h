// The "what was tried" table: for a chosen metric, each run's final value,
// best value (max or min by the catalogue's Better) and mean of the last
// kLastN steps, with the steps they come from, sortable by any column (a
// missing value sorts last: NumberCell). Reads the run database; the same
// statistics as the CLI and the reports (core/metrics/run_stats.h).
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

class RunDatabase;

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

    // Shows these runs (read from database, not owned; nullptr clears).
    void setRuns(const RunDatabase* database, const QList<RunRef>& runs);
    // The metric summarised; the choice offers every metric of the runs shown.
    void setMetric(const QString& metric);
    QString metric() const { return metric_; }
    QStringList metricChoices() const;

    QTableWidget* table() const { return table_; }

private:
    void reload();

    const RunDatabase* database_ = nullptr;
    QList<RunRef> runs_;
    QString metric_ = QStringLiteral("reward_mean");
    QComboBox* choice_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace mlk
