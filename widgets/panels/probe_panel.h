// The "Probe" dock: change precision, rounding (numerics profile), kernels,
// routing replay or the model and see, about a second later, what one rollout
// batch of the configured task shows without training: K3 KL, F(t), router
// flips and the training-vs-rollout probability scatter. The numbers are
// `mismatch-lab-cli probe --json`'s for the same configuration (the same
// run_probe, on ProbeRunner's thread), each beside the previous probe's with
// an arrow, and the previous scatter stays as grey ghost points.
#pragma once

#include <QHash>
#include <QLabel>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "widgets/data/probe_runner.h"

class QChartView;
class QTableWidget;

namespace mlk {

class LogProbabilityScatter;

class ProbePanel : public QWidget {
    Q_OBJECT
public:
    explicit ProbePanel(QWidget* parent = nullptr);
    ~ProbePanel() override;

    // The settings the panel edits, in display order.
    static QStringList keys();
    // The metrics shown, in display order (keys of the probe --json object).
    static QStringList metrics();

    // Every other setting (task, batch, seed ...) comes from here, e.g. the
    // configuration form's; probes it.
    void setConfig(const Config& cfg);
    Config config() const { return cfg_; }
    // One key as the user would set it (the editor shows it); probes.
    void setValue(const QString& key, const nlohmann::json& value);
    QWidget* editor(const QString& key) const { return editors_.value(key); }
    QLabel* label(const QString& key) const { return labels_.value(key); }

    // Read-outs as shown: the value column, the previous probe's, the arrow.
    QString valueText(const QString& metric) const;
    QString previousText(const QString& metric) const;
    QString changeText(const QString& metric) const;
    QString statusText() const { return status_->text(); }
    const ProbeOutcome& current() const { return now_; }
    const ProbeOutcome& previous() const { return before_; }
    LogProbabilityScatter* scatter() const { return scatter_.get(); }
    QWidget* numbersTable() const;
    ProbeRunner* runner() const { return runner_; }

signals:
    // A probe's numbers are on screen.
    void probed(const mlk::ProbeOutcome& outcome);

private:
    void edited(const QString& key);
    void requestProbe();
    // Shows each editor's value and greys those the configuration does not
    // read, as the configuration form does (config_ignored_keys).
    void loadEditors(const QWidget* except = nullptr);
    void showOutcome(const ProbeOutcome& outcome);
    void fillTable();
    int row(const QString& metric) const { return int(metrics().indexOf(metric)); }

    Config cfg_;
    ProbeRunner* runner_ = nullptr;
    ProbeOutcome now_, before_;
    QHash<QString, QWidget*> editors_;
    QHash<QString, QLabel*> labels_;
    QLabel* status_ = nullptr;
    QLabel* error_ = nullptr;
    QTableWidget* table_ = nullptr;
    QChartView* view_ = nullptr;
    std::unique_ptr<LogProbabilityScatter> scatter_;
};

}  // namespace mlk
