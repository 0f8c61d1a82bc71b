#include "widgets/panels/probe_panel.h"

#include <QChart>
#include <QChartView>
#include <QFormLayout>
#include <QHeaderView>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "core/config/model_builder.h"
#include "core/metrics/catalogue.h"
#include "core/metrics/run_stats.h"
#include "core/model/params.h"
#include "widgets/charts/drilldown_plots.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/palette.h"
#include "widgets/panels/config_editors.h"

namespace mlk {

namespace {

enum Column { ColMetric, ColNow, ColBefore, ColChange, ColumnCount };

QString text(const nlohmann::json& summary, const QString& metric) {
    const std::string key = metric.toStdString();
    if (!summary.is_object() || !summary.contains(key)) return QStringLiteral("\u2014");
    const nlohmann::json& v = summary[key];
    if (v.is_number()) return QString::fromStdString(value_text(v.get<double>()));
    return QString::fromStdString(v.dump());
}

}  // namespace

QStringList ProbePanel::keys() {
    return {"model.kind",
            "model.size",
            "rollout.precision",
            "rollout.profile",
            "train.precision",
            "train.profile",
            "kernels.batch_invariant",
            "moe.routing_replay",
            "rollout.kv_cache_dtype",
            "rollout.device",
            "train.device"};
}

QStringList ProbePanel::metrics() {
    return {"k3_kl",
            "F@1.1",
            "F@1.5",
            "F@2",
            "F@5",
            "F@10",
            "logp_abs_diff_max",
            "tv_token",
            "tv_seq",
            "router_diff_token",
            "router_diff_router"};
}

ProbePanel::ProbePanel(QWidget* parent) : QWidget(parent) {
    runner_ = new ProbeRunner(this);
    setStyleSheet(config_editors::stateStyleSheet());
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    auto* intro =
        new QLabel(tr("One rollout batch of the configuration's task and the training forward on it, no training: "
                      "what <code>mismatch-lab-cli probe --json</code> measures. Change a setting and compare with the "
                      "previous probe (grey)."),
                   this);
    intro->setWordWrap(true);
    intro->setStyleSheet(QStringLiteral("color: %1;").arg(palette::secondaryText().name()));
    layout->addWidget(intro);

    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    for (const QString& key : keys()) {
        const ConfigKey* meta = find_config_key(key.toStdString());
        if (!meta) continue;
        QWidget* editor = config_editors::make(*meta, this, [this, key] { edited(key); });
        editor->setObjectName(key);
        auto* label = new QLabel(QString::fromStdString(meta->label) + QLatin1Char(':'), this);
        editors_.insert(key, editor);
        labels_.insert(key, label);
        form->addRow(label, editor);
    }
    layout->addLayout(form);

    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("probeStatus"));
    // Three short fixed lines: a wrapped label is squeezed by the table below,
    // and two long ones would make the panel wider than its dock (cut off).
    status_->setWordWrap(false);
    status_->setMinimumHeight(3 * status_->fontMetrics().height() + 4);
    error_ = new QLabel(this);
    error_->setWordWrap(true);
    error_->setStyleSheet(QStringLiteral("color: %1;").arg(palette::floorMarker().name()));
    error_->hide();
    layout->addWidget(status_);
    layout->addWidget(error_);

    table_ = new QTableWidget(int(metrics().size()), ColumnCount, this);
    table_->setObjectName(QStringLiteral("probeNumbers"));
    table_->setHorizontalHeaderLabels({tr("Metric"), tr("Now"), tr("Before"), QString()});
    table_->horizontalHeaderItem(ColBefore)->setToolTip(tr("The previous probe, before the last change"));
    table_->verticalHeader()->hide();
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 4);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->horizontalHeader()->setSectionResizeMode(ColMetric, QHeaderView::Stretch);
    for (int c : {ColNow, ColBefore, ColChange})
        table_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    for (const QString& m : metrics()) {
        auto* item = new QTableWidgetItem(metricTitle(m));
        item->setToolTip(metricToolTip(m));
        table_->setItem(row(m), ColMetric, item);
        for (int c : {ColNow, ColBefore, ColChange}) {
            auto* cell = new QTableWidgetItem;
            cell->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            cell->setToolTip(item->toolTip());
            table_->setItem(row(m), c, cell);
        }
    }
    // Every row shown, never a scroll bar: the numbers are the point.
    table_->setFixedHeight(table_->verticalHeader()->defaultSectionSize() * int(metrics().size()) +
                           table_->horizontalHeader()->sizeHint().height() + 4);
    table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    layout->addWidget(table_);

    auto* chart = new QChart;
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    view_ = new QChartView(chart, this);
    view_->setRenderHint(QPainter::Antialiasing);
    view_->setMinimumSize(260, 200);
    scatter_ = std::make_unique<LogProbabilityScatter>(chart);
    layout->addWidget(view_, 1);

    connect(runner_, &ProbeRunner::started, this, [this] { status_->setText(tr("Probing\u2026")); });
    connect(runner_, &ProbeRunner::finished, this, &ProbePanel::showOutcome);
    loadEditors();
    fillTable();
}

ProbePanel::~ProbePanel() = default;

void ProbePanel::setConfig(const Config& cfg) {
    cfg_ = cfg;
    loadEditors();
    requestProbe();
}

void ProbePanel::loadEditors(const QWidget* except) {
    QHash<QString, QString> ignored;
    for (const IgnoredKey& ig : config_ignored_keys(cfg_))
        ignored.insert(QString::fromStdString(ig.key), tr("Ignored: %1").arg(QString::fromStdString(ig.reason)));
    for (auto it = editors_.begin(); it != editors_.end(); ++it) {
        const ConfigKey& meta = *find_config_key(it.key().toStdString());
        if (it.value() != except) config_editors::load(it.value(), meta, cfg_);
        const QString why = ignored.value(it.key());
        config_editors::setState(labels_.value(it.key()), why.isEmpty() ? QString() : QStringLiteral("ignored"));
        it.value()->setToolTip(config_editors::notedTooltip(why, config_editors::richTooltip(meta)));
        labels_.value(it.key())->setToolTip(it.value()->toolTip());
    }
}

void ProbePanel::setValue(const QString& key, const nlohmann::json& value) {
    Config c = cfg_;
    config_set(c, key.toStdString(), value);
    setConfig(c);
}

void ProbePanel::edited(const QString& key) {
    QWidget* editor = editors_.value(key);
    const ConfigKey* meta = find_config_key(key.toStdString());
    const QString problem = config_editors::store(editor, *meta, cfg_);
    // A model change re-derives its dimensions: show what the others became.
    loadEditors(editor);
    if (!problem.isEmpty()) {
        error_->setText(problem);
        error_->show();
        return;
    }
    requestProbe();
}

void ProbePanel::requestProbe() {
    try {
        validate(cfg_);
    } catch (const ConfigError& e) {
        error_->setText(tr("Not probed: %1").arg(QString::fromUtf8(e.what())));
        error_->show();
        return;
    }
    error_->hide();
    runner_->request(cfg_);
}

void ProbePanel::showOutcome(const ProbeOutcome& outcome) {
    if (!outcome.error.isEmpty()) {
        error_->setText(tr("The probe failed: %1").arg(outcome.error));
        error_->show();
        status_->setText(QString());
        return;
    }
    // The one on screen becomes the ghost; a first probe has none.
    if (!now_.summary.is_null()) before_ = now_;
    now_ = outcome;
    fillTable();
    scatter_->draw(now_.points, before_.points);
    const ModelConfig model = model_config_of(now_.config);
    status_->setText(
        tr("%1 \u00B7 %2 parameters\n%3 tokens compared\n%4 \u00B7 probed in %5 ms")
            .arg(QString::fromStdString(model.preset_name()))
            .arg(now_.summary.value("params", 0))
            .arg(now_.tokens)
            .arg(now_.summary.value("bitwise_equal", false) ? tr("bitwise equal") : tr("not bitwise equal"))
            .arg(qRound(now_.ms)));
    emit probed(now_);
}

void ProbePanel::fillTable() {
    for (const QString& m : metrics()) {
        const int r = row(m);
        table_->item(r, ColNow)->setText(text(now_.summary, m));
        table_->item(r, ColBefore)->setText(before_.summary.is_null() ? QString() : text(before_.summary, m));
        QTableWidgetItem* change = table_->item(r, ColChange);
        change->setText(QString());
        const std::string key = m.toStdString();
        if (before_.summary.is_null() || !now_.summary.contains(key) || !before_.summary.contains(key)) continue;
        const double a = before_.summary[key].is_number() ? before_.summary[key].get<double>() : NAN;
        const double b = now_.summary[key].is_number() ? now_.summary[key].get<double>() : NAN;
        if (!std::isfinite(a) || !std::isfinite(b)) continue;
        change->setText(b > a ? QStringLiteral("\u2191") : b < a ? QStringLiteral("\u2193") : QStringLiteral("="));
        // Green when it moved the good way, red the bad way (the catalogue's direction).
        const MetricInfo* info = find_metric(key);
        QColor ink = palette::secondaryText();
        if (info && info->better != Better::none && a != b) {
            const bool better = (info->better == Better::lower) == (b < a);
            ink = better ? palette::okTone().ink : palette::errorTone().ink;
        }
        change->setForeground(ink);
        QFont bold = change->font();
        bold.setBold(true);
        change->setFont(bold);
    }
}

QWidget* ProbePanel::numbersTable() const { return table_; }

QString ProbePanel::valueText(const QString& metric) const { return table_->item(row(metric), ColNow)->text(); }
QString ProbePanel::previousText(const QString& metric) const { return table_->item(row(metric), ColBefore)->text(); }
QString ProbePanel::changeText(const QString& metric) const { return table_->item(row(metric), ColChange)->text(); }

}  // namespace mlk
