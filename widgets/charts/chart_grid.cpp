#include "widgets/charts/chart_grid.h"

#include <QCheckBox>
#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "core/metrics/catalogue.h"

namespace mlk {

namespace {
constexpr int kSliderSteps = 100;  // smoothing slider: weight = value / 100
}

ChartGrid::ChartGrid(RunDataStore* data, QWidget* parent) : QWidget(parent), m_data(data) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    layout->addWidget(buildToolbar());
    auto* area = new QWidget(this);
    m_grid = new QGridLayout(area);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setSpacing(4);
    layout->addWidget(area, 1);

    for (const QString& metric : defaultMetrics()) addChart(metric);
    connect(m_data, &RunDataStore::runsChanged, this, &ChartGrid::refreshMetricChoices);
    connect(m_data, &RunDataStore::dataChanged, this, &ChartGrid::refreshMetricChoices);
    refreshMetricChoices();
}

QStringList ChartGrid::defaultMetrics() {
    return {QStringLiteral("reward_mean"), QStringLiteral("k3_kl"), QStringLiteral("grad_norm"), QStringLiteral("F@2")};
}

QStringList ChartGrid::defaultLogScaleMetrics() {
    // K3 KL spans decades between configurations (1e-3 bf16 MoE, 1e-8 reduction
    // order only, exactly 0 truly on-policy): on a linear axis all but the
    // largest lie flat on zero.
    return {QStringLiteral("k3_kl")};
}

QWidget* ChartGrid::buildToolbar() {
    auto* bar = new QWidget(this);
    auto* row = new QHBoxLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);

    m_metricChoice = new QComboBox(bar);
    m_metricChoice->setMinimumContentsLength(18);
    m_metricChoice->setPlaceholderText(tr("every metric has a chart"));
    m_metricChoice->setToolTip(tr("Every metric stored for the loaded runs"));
    auto* add = new QPushButton(tr("Add chart"), bar);
    m_addButton = add;
    connect(add, &QPushButton::clicked, this, [this] {
        if (!m_metricChoice->currentText().isEmpty()) addChart(m_metricChoice->currentText());
    });

    m_smoothingSlider = new QSlider(Qt::Horizontal, bar);
    m_smoothingSlider->setRange(0, kSliderSteps - 1);  // 0.99 at most: 1 would freeze the line
    m_smoothingSlider->setFixedWidth(140);
    m_smoothingSlider->setValue(static_cast<int>(std::lround(m_smoothing * kSliderSteps)));
    m_smoothingSlider->setToolTip(tr("Debiased EMA weight of the smoothed lines (0 = raw data only)"));
    m_smoothingLabel = new QLabel(QString::number(m_smoothing, 'f', 2), bar);
    m_smoothingLabel->setMinimumWidth(32);
    connect(m_smoothingSlider, &QSlider::valueChanged, this,
            [this](int value) { setSmoothing(double(value) / kSliderSteps); });

    m_xAxisChoice = new QComboBox(bar);
    m_xAxisChoice->addItem(tr("step"));
    m_xAxisChoice->addItem(tr("wall time"));
    m_xAxisChoice->setToolTip(
        tr("x of every chart: the training step, or the wall-clock time since each run's "
           "first step (a paused or resumed run shows a gap, never a zig-zag)"));
    connect(m_xAxisChoice, &QComboBox::currentIndexChanged, this,
            [this](int index) { setXAxis(index == 1 ? MetricChart::XAxis::wallTime : MetricChart::XAxis::step); });

    m_groupSeedsBox = new QCheckBox(tr("Group seeds"), bar);
    m_groupSeedsBox->setToolTip(
        tr("Runs whose configurations differ only in the seed: one mean line in a "
           "min\u2013max band of their smoothed values, one legend entry"));
    connect(m_groupSeedsBox, &QCheckBox::toggled, this, &ChartGrid::setGroupSeeds);

    auto* reset = new QPushButton(tr("Reset zoom"), bar);
    reset->setToolTip(tr("Show every step in all charts (or double-click a chart)"));
    connect(reset, &QPushButton::clicked, this, &ChartGrid::resetZoom);

    row->addWidget(new QLabel(tr("Metric:"), bar));
    row->addWidget(m_metricChoice);
    row->addWidget(add);
    row->addStretch(1);
    row->addWidget(m_groupSeedsBox);
    row->addSpacing(8);
    row->addWidget(new QLabel(tr("x:"), bar));
    row->addWidget(m_xAxisChoice);
    row->addSpacing(8);
    row->addWidget(new QLabel(tr("Smoothing:"), bar));
    row->addWidget(m_smoothingSlider);
    row->addWidget(m_smoothingLabel);
    row->addWidget(reset);
    return bar;
}

// --- Charts ------------------------------------------------------------------

MetricChart* ChartGrid::addChart(const QString& metric) {
    if (MetricChart* existing = chartFor(metric)) return existing;
    auto* chart = new MetricChart(m_data, metric, this);
    chart->setSmoothing(m_smoothing);
    chart->setXAxis(m_xAxis);
    chart->setGroupSeeds(m_groupSeeds);
    if (defaultLogScaleMetrics().contains(metric)) chart->setLogScale(true);
    if (m_visibleRuns) chart->setVisibleRuns(*m_visibleRuns);
    for (qint64 id : m_hiddenRuns) chart->setRunHidden(id, true);
    if (m_sharedX) chart->setXRange(m_sharedX->lo, m_sharedX->hi);
    connect(chart, &MetricChart::xRangeChanged, this,
            [this, chart](double lo, double hi) { followXRange(chart, lo, hi); });
    connect(chart, &MetricChart::xRangeReset, this, [this, chart] { followReset(chart); });
    connect(chart, &MetricChart::runLegendClicked, this, &ChartGrid::toggleRunHidden);
    connect(chart, &MetricChart::removeRequested, this, [this, chart] { removeChart(chart); });
    m_charts.append(chart);
    relayout();
    refreshMetricChoices();
    emit chartsChanged();
    return chart;
}

bool ChartGrid::removeChart(const QString& metric) {
    MetricChart* chart = chartFor(metric);
    if (!chart) return false;
    removeChart(chart);
    return true;
}

void ChartGrid::removeChart(MetricChart* chart) {
    if (!m_charts.removeOne(chart)) return;
    m_grid->removeWidget(chart);
    chart->hide();
    chart->deleteLater();  // may be inside its own context-menu action
    relayout();
    refreshMetricChoices();
    emit chartsChanged();
}

MetricChart* ChartGrid::chartFor(const QString& metric) const {
    const auto it =
        std::find_if(m_charts.begin(), m_charts.end(), [&](MetricChart* c) { return c->metric() == metric; });
    return it == m_charts.end() ? nullptr : *it;
}

QStringList ChartGrid::availableMetrics() const {
    QStringList names = m_data->metricNames();
    // Before any run has a step, offer what a run will write.
    if (names.isEmpty())
        for (const std::string& name : metric_names()) names.append(QString::fromStdString(name));
    names.removeIf([this](const QString& name) { return chartFor(name) != nullptr; });
    return names;
}

void ChartGrid::refreshMetricChoices() {
    const QStringList names = availableMetrics();
    QStringList current;
    for (int i = 0; i < m_metricChoice->count(); ++i) current.append(m_metricChoice->itemText(i));
    if (current == names) return;
    const QSignalBlocker block(m_metricChoice);
    const QString selected = m_metricChoice->currentText();
    m_metricChoice->clear();
    m_metricChoice->addItems(names);
    m_metricChoice->setCurrentIndex(names.isEmpty() ? -1 : std::max<qsizetype>(0, names.indexOf(selected)));
    m_addButton->setEnabled(!names.isEmpty());
}

void ChartGrid::relayout() {
    for (MetricChart* chart : m_charts) m_grid->removeWidget(chart);
    for (int r = 0; r < m_grid->rowCount(); ++r) m_grid->setRowStretch(r, 0);
    for (int c = 0; c < m_grid->columnCount(); ++c) m_grid->setColumnStretch(c, 0);
    for (qsizetype i = 0; i < m_charts.size(); ++i) {
        const int row = static_cast<int>(i) / m_columns, column = static_cast<int>(i) % m_columns;
        m_grid->addWidget(m_charts[i], row, column);
        m_grid->setRowStretch(row, 1);
        m_grid->setColumnStretch(column, 1);
    }
}

void ChartGrid::setColumns(int columns) {
    m_columns = std::max(1, columns);
    relayout();
}

// --- Runs --------------------------------------------------------------------

void ChartGrid::setVisibleRuns(const QList<qint64>& runIds) {
    m_visibleRuns = runIds;
    for (MetricChart* chart : m_charts) chart->setVisibleRuns(runIds);
}

void ChartGrid::showAllRuns() {
    m_visibleRuns.reset();
    for (MetricChart* chart : m_charts) chart->showAllRuns();
}

void ChartGrid::toggleRunHidden(qint64 runId) { setRunHidden(runId, !m_hiddenRuns.contains(runId)); }

void ChartGrid::setRunHidden(qint64 runId, bool hidden) {
    if (hidden) m_hiddenRuns.insert(runId);
    else m_hiddenRuns.remove(runId);
    for (MetricChart* chart : m_charts) chart->setRunHidden(runId, hidden);
}

// --- Shared x range ----------------------------------------------------------

void ChartGrid::followXRange(MetricChart* source, double lo, double hi) {
    if (m_propagating) return;
    m_sharedX = XRange{lo, hi};
    m_propagating = true;
    for (MetricChart* chart : m_charts)
        if (chart != source) chart->setXRange(lo, hi);
    m_propagating = false;
}

void ChartGrid::followReset(MetricChart* source) {
    if (m_propagating) return;
    m_sharedX.reset();
    m_propagating = true;
    for (MetricChart* chart : m_charts)
        if (chart != source) chart->resetXRange();
    m_propagating = false;
}

void ChartGrid::setSharedXRange(double lo, double hi) {
    if (!(hi > lo)) return;
    m_sharedX = XRange{lo, hi};
    m_propagating = true;
    for (MetricChart* chart : m_charts) chart->setXRange(lo, hi);
    m_propagating = false;
}

void ChartGrid::resetZoom() {
    m_sharedX.reset();
    m_propagating = true;
    for (MetricChart* chart : m_charts) chart->resetXRange();
    m_propagating = false;
}

// --- Smoothing / redraw ------------------------------------------------------

void ChartGrid::setSmoothing(double weight) {
    m_smoothing = std::clamp(weight, 0.0, kMaxSmoothingWeight);
    {
        const QSignalBlocker block(m_smoothingSlider);
        m_smoothingSlider->setValue(static_cast<int>(std::lround(m_smoothing * kSliderSteps)));
    }
    m_smoothingLabel->setText(QString::number(m_smoothing, 'f', 2));
    for (MetricChart* chart : m_charts) chart->setSmoothing(m_smoothing);
}

void ChartGrid::setXAxis(MetricChart::XAxis axis) {
    {
        const QSignalBlocker block(m_xAxisChoice);
        m_xAxisChoice->setCurrentIndex(axis == MetricChart::XAxis::wallTime ? 1 : 0);
    }
    if (axis == m_xAxis) return;
    m_xAxis = axis;
    m_sharedX.reset();  // a step range is no time range
    for (MetricChart* chart : m_charts) chart->setXAxis(axis);
}

void ChartGrid::setGroupSeeds(bool on) {
    {
        const QSignalBlocker block(m_groupSeedsBox);
        m_groupSeedsBox->setChecked(on);
    }
    m_groupSeeds = on;
    for (MetricChart* chart : m_charts) chart->setGroupSeeds(on);
}

void ChartGrid::redrawAllNow() {
    for (MetricChart* chart : m_charts) chart->redrawNow();
}

}  // namespace mlk
