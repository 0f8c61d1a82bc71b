#include "widgets/charts/chart_grid.h"

#include <QCheckBox>
#include <QScrollArea>
#include <QScrollBar>
#include <QComboBox>
#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSlider>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "core/metrics/catalogue.h"
#include "widgets/charts/axis_rules.h"
#include "widgets/charts/flow_layout.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/palette.h"

namespace mlk {

namespace {
constexpr int kSliderSteps = 100;  // smoothing slider: weight = value / 100
}

ChartGrid::ChartGrid(RunDataStore* data, QWidget* parent)
    : QWidget(parent), data_(data), zoomLink_(new ZoomLink(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    layout->addWidget(buildToolbar());
    emptyHint_ = new QLabel(tr("No runs in this database yet."), this);
    emptyHint_->setObjectName(QStringLiteral("emptyHint"));
    emptyHint_->setWordWrap(true);
    emptyHint_->setAlignment(Qt::AlignCenter);
    emptyHint_->setContentsMargins(8, 6, 8, 6);
    emptyHint_->setStyleSheet(QStringLiteral("color: %1;").arg(palette::secondaryText().name()));
    layout->addWidget(emptyHint_);
    // The charts scroll once they no longer fit: adding one must never grow
    // the window past the screen (its size is remembered).
    auto* scroll = new QScrollArea(this);
    scroll_ = scroll;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    // One chart's width and the vertical scroll bar, never a chart cut at the right.
    scroll->setMinimumWidth(MetricChart::kMinimumWidth + scroll->verticalScrollBar()->sizeHint().width());
    auto* area = new QWidget(scroll);
    grid_ = new QGridLayout(area);
    grid_->setContentsMargins(0, 0, 0, 0);
    grid_->setSpacing(4);
    scroll->setWidget(area);
    layout->addWidget(scroll, 1);

    for (const QString& metric : defaultMetrics()) addChart(metric);
    connect(data_, &RunDataStore::runsChanged, this, &ChartGrid::refreshMetricChoices);
    connect(data_, &RunDataStore::dataChanged, this, &ChartGrid::refreshMetricChoices);
    connect(data_, &RunDataStore::runsChanged, this, &ChartGrid::updateEmptyHint);
    refreshMetricChoices();
    updateEmptyHint();
}

void ChartGrid::setEmptyHint(const QString& text) { emptyHint_->setText(text); }

void ChartGrid::updateEmptyHint() { emptyHint_->setVisible(data_->runIds().isEmpty()); }

QStringList ChartGrid::defaultMetrics() {
    QStringList names;
    for (const std::string& name : key_metric_names()) names.append(QString::fromStdString(name));
    return names;
}

QStringList ChartGrid::defaultLogScaleMetrics() {
    // The catalogue says which metrics span decades (K3 KL: 1e-3 bf16 MoE,
    // 1e-8 reduction order only, exactly 0 truly on-policy): on a linear axis
    // all but the largest would lie flat on zero. The report reads the same.
    QStringList names = defaultMetrics();
    names.removeIf([](const QString& name) { return !defaultLogScale(name.toStdString()); });
    return names;
}

QWidget* ChartGrid::buildToolbar() {
    auto* bar = new QWidget(this);

    metricChoice_ = new QComboBox(bar);
    metricChoice_->setMinimumContentsLength(8);  // the popup lists names in full
    metricChoice_->setPlaceholderText(tr("every metric has a chart"));
    metricChoice_->setToolTip(tr("Every metric stored for the loaded runs"));
    auto* add = new QPushButton(tr("Add chart"), bar);
    addButton_ = add;
    connect(add, &QPushButton::clicked, this, [this] {
        if (!metricChoice_->currentText().isEmpty()) addChart(metricChoice_->currentText());
    });

    smoothingSlider_ = new QSlider(Qt::Horizontal, bar);
    smoothingSlider_->setRange(0, kSliderSteps - 1);  // 0.99 at most: 1 would freeze the line
    smoothingSlider_->setMaximumWidth(140);
    smoothingSlider_->setValue(static_cast<int>(std::lround(smoothing_ * kSliderSteps)));
    smoothingSlider_->setToolTip(tr("Debiased EMA weight of the smoothed lines (0 = raw data only)"));
    smoothingLabel_ = new QLabel(QString::number(smoothing_, 'f', 2), bar);
    smoothingLabel_->setMinimumWidth(32);
    connect(smoothingSlider_, &QSlider::valueChanged, this,
            [this](int value) { setSmoothing(double(value) / kSliderSteps); });

    xAxisChoice_ = new QComboBox(bar);
    xAxisChoice_->addItem(tr("step"));
    xAxisChoice_->addItem(tr("wall time"));
    xAxisChoice_->setToolTip(
        tr("x of every chart: the training step, or the wall-clock time since each run's "
           "first step (a paused or resumed run shows a gap, never a zig-zag)"));
    connect(xAxisChoice_, &QComboBox::currentIndexChanged, this,
            [this](int index) { setXAxis(index == 1 ? MetricChart::XAxis::wallTime : MetricChart::XAxis::step); });

    groupSeedsBox_ = new QCheckBox(tr("Group seeds"), bar);
    groupSeedsBox_->setToolTip(
        tr("Runs whose configurations differ only in the seed: one mean line in a "
           "min\u2013max band of their smoothed values, one legend entry"));
    connect(groupSeedsBox_, &QCheckBox::toggled, this, &ChartGrid::setGroupSeeds);

    outliersBox_ = new QCheckBox(tr("Ignore outliers"), bar);
    outliersBox_->setChecked(ignoreOutliers_);
    outliersBox_->setToolTip(
        tr("Scale y to the bulk of the values (5\u201395 %, tails kept); a chart's note counts the points "
           "left outside. Mismatch and routing charts always keep each run's peak. Right-click a chart "
           "to set its y range by hand."));
    connect(outliersBox_, &QCheckBox::toggled, this, &ChartGrid::setIgnoreOutliers);

    auto* reset = new QPushButton(tr("Reset zoom"), bar);
    reset->setToolTip(tr("Show every step in all charts (or double-click a chart)"));
    connect(reset, &QPushButton::clicked, this, &ChartGrid::resetZoom);

    // Groups that stay together; the toolbar wraps between them when the
    // charts area is narrow, and the display settings keep to the right.
    auto* row = new FlowLayout(bar);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(keptTogether(bar, {new QLabel(tr("Metric:")), metricChoice_, add}));
    row->setStretchBefore(row->count());
    row->addWidget(groupSeedsBox_);
    row->addWidget(outliersBox_);
    row->addWidget(keptTogether(bar, {new QLabel(tr("x:")), xAxisChoice_}));
    row->addWidget(keptTogether(bar, {new QLabel(tr("Smoothing:")), smoothingSlider_, smoothingLabel_}));
    row->addWidget(reset);
    return bar;
}

// --- Charts ------------------------------------------------------------------

void ChartGrid::setEmphasis(qint64 runId, const QString& groupKey) {
    for (MetricChart* chart : charts_) chart->setEmphasis(runId, groupKey);
}

MetricChart* ChartGrid::addChart(const QString& metric) {
    if (MetricChart* existing = chartFor(metric)) return existing;
    auto* chart = new MetricChart(data_, metric, this);
    chart->setSmoothing(smoothing_);
    chart->setXAxis(xAxis_);
    chart->setGroupSeeds(groupSeeds_);
    chart->setIgnoreOutliers(ignoreOutliers_);
    if (defaultLogScale(metric.toStdString())) chart->setLogScale(true);  // the catalogue's default axis
    if (visibleRuns_) chart->setVisibleRuns(*visibleRuns_);
    for (qint64 id : hiddenRuns_) chart->setRunHidden(id, true);
    zoomLink_->add(chart);
    connect(chart, &MetricChart::runLegendClicked, this, &ChartGrid::toggleRunHidden);
    // A run found in one chart's legend stands out in every chart.
    connect(chart, &MetricChart::legendHovered, this, &ChartGrid::setEmphasis);
    connect(chart, &MetricChart::drillDownRequested, this, &ChartGrid::drillDownRequested);
    connect(chart, &MetricChart::removeRequested, this, [this, chart] { removeChart(chart); });
    charts_.append(chart);
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
    if (!charts_.removeOne(chart)) return;
    zoomLink_->remove(chart);
    grid_->removeWidget(chart);
    chart->hide();
    chart->deleteLater();  // may be inside its own context-menu action
    relayout();
    refreshMetricChoices();
    emit chartsChanged();
}

MetricChart* ChartGrid::chartFor(const QString& metric) const {
    const auto it = std::find_if(charts_.begin(), charts_.end(), [&](MetricChart* c) { return c->metric() == metric; });
    return it == charts_.end() ? nullptr : *it;
}

void ChartGrid::showMetrics(const QStringList& metrics) {
    for (MetricChart* c : QList<MetricChart*>(charts_))
        if (!metrics.contains(c->metric())) removeChart(c);
    for (const QString& m : metrics) addChart(m);
    QList<MetricChart*> ordered;
    for (const QString& m : metrics) ordered.append(chartFor(m));
    charts_ = ordered;
    relayout();
    setHighlightedMetric(highlighted_);  // a chart made anew gets the frame too
    emit chartsChanged();
}

void ChartGrid::setHighlightedMetric(const QString& metric) {
    highlighted_ = metric;
    // A frame, not a change of the plot: the chart reads as it always does.
    const QString frame = QStringLiteral("QChartView { border: 3px solid %1; }").arg(palette::lessonAccent().name());
    for (MetricChart* c : charts_) c->setStyleSheet(c->metric() == metric ? frame : QString());
}

QStringList ChartGrid::availableMetrics() const {
    QStringList names = data_->metricNames();
    // Before any run has a step, offer what a run will write.
    if (names.isEmpty())
        for (const std::string& name : metric_names()) names.append(QString::fromStdString(name));
    names.removeIf([this](const QString& name) { return chartFor(name) != nullptr; });
    return names;
}

void ChartGrid::refreshMetricChoices() {
    const QStringList names = availableMetrics();
    QStringList current;
    for (int i = 0; i < metricChoice_->count(); ++i) current.append(metricChoice_->itemText(i));
    if (current == names) return;
    const QSignalBlocker block(metricChoice_);
    const QString selected = metricChoice_->currentText();
    metricChoice_->clear();
    metricChoice_->addItems(names);
    for (int i = 0; i < names.size(); ++i) metricChoice_->setItemData(i, metricToolTip(names[i]), Qt::ToolTipRole);
    metricChoice_->setCurrentIndex(names.isEmpty() ? -1 : std::max<qsizetype>(0, names.indexOf(selected)));
    addButton_->setEnabled(!names.isEmpty());
}

void ChartGrid::relayout() {
    for (MetricChart* chart : charts_) grid_->removeWidget(chart);
    for (int r = 0; r < grid_->rowCount(); ++r) grid_->setRowStretch(r, 0);
    for (int c = 0; c < grid_->columnCount(); ++c) grid_->setColumnStretch(c, 0);
    for (qsizetype i = 0; i < charts_.size(); ++i) {
        const int row = static_cast<int>(i) / columns_, column = static_cast<int>(i) % columns_;
        grid_->addWidget(charts_[i], row, column);
        grid_->setRowStretch(row, 1);
        grid_->setColumnStretch(column, 1);
    }
}

void ChartGrid::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    // From the scroll area's width less a scroll bar, whether one shows or
    // not: a bar that appears with one column must not bring back two.
    const int width = scroll_->width() - scroll_->verticalScrollBar()->sizeHint().width();
    const int columns = width >= 2 * MetricChart::kMinimumWidth + grid_->spacing() ? 2 : 1;
    if (columns == columns_) return;
    columns_ = columns;
    relayout();
}

// --- Runs --------------------------------------------------------------------

void ChartGrid::setVisibleRuns(const QList<qint64>& runIds) {
    visibleRuns_ = runIds;
    for (MetricChart* chart : charts_) chart->setVisibleRuns(runIds);
}

void ChartGrid::addVisibleRun(qint64 runId) {
    if (!visibleRuns_ || visibleRuns_->contains(runId)) return;
    setVisibleRuns(*visibleRuns_ + QList<qint64>{runId});
}

void ChartGrid::showAllRuns() {
    visibleRuns_.reset();
    for (MetricChart* chart : charts_) chart->showAllRuns();
}

void ChartGrid::toggleRunHidden(qint64 runId) { setRunHidden(runId, !hiddenRuns_.contains(runId)); }

void ChartGrid::setRunHidden(qint64 runId, bool hidden) {
    if (hidden) hiddenRuns_.insert(runId);
    else hiddenRuns_.remove(runId);
    for (MetricChart* chart : charts_) chart->setRunHidden(runId, hidden);
}

// --- Shared x range ----------------------------------------------------------

void ChartGrid::setSharedXRange(double lo, double hi) { zoomLink_->setRange(lo, hi); }

void ChartGrid::resetZoom() { zoomLink_->reset(); }

// --- Smoothing / redraw ------------------------------------------------------

void ChartGrid::setSmoothing(double weight) {
    smoothing_ = std::clamp(weight, 0.0, kMaxSmoothingWeight);
    {
        const QSignalBlocker block(smoothingSlider_);
        smoothingSlider_->setValue(static_cast<int>(std::lround(smoothing_ * kSliderSteps)));
    }
    smoothingLabel_->setText(QString::number(smoothing_, 'f', 2));
    for (MetricChart* chart : charts_) chart->setSmoothing(smoothing_);
}

void ChartGrid::setXAxis(MetricChart::XAxis axis) {
    {
        const QSignalBlocker block(xAxisChoice_);
        xAxisChoice_->setCurrentIndex(axis == MetricChart::XAxis::wallTime ? 1 : 0);
    }
    if (axis == xAxis_) return;
    xAxis_ = axis;
    zoomLink_->forget();  // a step range is no time range
    for (MetricChart* chart : charts_) chart->setXAxis(axis);
}

void ChartGrid::setGroupSeeds(bool on) {
    {
        const QSignalBlocker block(groupSeedsBox_);
        groupSeedsBox_->setChecked(on);
    }
    groupSeeds_ = on;
    for (MetricChart* chart : charts_) chart->setGroupSeeds(on);
}

void ChartGrid::setIgnoreOutliers(bool on) {
    {
        const QSignalBlocker block(outliersBox_);
        outliersBox_->setChecked(on);
    }
    ignoreOutliers_ = on;
    for (MetricChart* chart : charts_) chart->setIgnoreOutliers(on);
}

void ChartGrid::redrawAllNow() {
    for (MetricChart* chart : charts_) chart->redrawNow();
}

}  // namespace mlk
