// "Queue sweep…": a sweep built from the workbench's current configuration,
// or one of the shipped families as `sweep --family NAME` runs it (the same
// sweep: runs the CLI has finished are kept). The key "preset" lists presets
// to compare (`sweep --preset A --preset B`) in place of the current
// configuration. The user picks setting keys (the schema's, searchable, each shown with
// its current value and what it allows), types values for each, and the seeds (and optionally the steps); the dialog
// checks all of it as `sweep --grid` does (add_grid_option, then expand_sweep over the configuration), shows the first
// error naming the key and what it allows, and keeps OK disabled until the sweep expands. It queues nothing itself: the
// window turns spec() and configs() into runs.
#pragma once

#include <QDialog>
#include <QList>

#include <vector>

#include "core/config/config.h"
#include "core/config/sweep.h"

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QVBoxLayout;

namespace mlk {

class SweepDialog : public QDialog {
    Q_OBJECT
public:
    // `preset` names the runs as the CLI names a preset's ("custom" when none).
    SweepDialog(const Config& base, const QString& preset, QWidget* parent = nullptr);

    // A row for one setting; empty key: the user picks it.
    void addSetting(const QString& key = {}, const QString& values = {});
    // A shipped family (sweep_families()) instead of the current
    // configuration; "" goes back to it. Seeds become the family's.
    void setFamily(const QString& name);
    QString family() const;  // "" while sweeping the current configuration
    void setSeeds(int seeds);
    void setSteps(int steps);  // 0: the configuration's own

    // The checked sweep; empty configs() while errorText() is not empty.
    const SweepSpec& spec() const { return spec_; }
    const std::vector<SweepConfig>& configs() const { return configs_; }
    int runCount() const { return static_cast<int>(configs_.size()) * spec_.seeds; }
    QString errorText() const;
    QString warningText() const;
    QString summaryText() const;
    bool acceptable() const;  // OK is enabled

private:
    struct SettingRow {
        QWidget* box = nullptr;
        QComboBox* key = nullptr;
        QLabel* current = nullptr;
        QLineEdit* values = nullptr;
    };

    void recheck();
    void describeKey(SettingRow& row);
    void showSource();

    Config base_;
    std::string preset_;
    const SweepFamily* family_ = nullptr;
    QComboBox* source_ = nullptr;
    QLabel* intro_ = nullptr;
    QWidget* settings_ = nullptr;  // the setting rows and Add setting: the current configuration's
    SweepSpec spec_;
    std::vector<SweepConfig> configs_;
    QList<SettingRow> rows_;
    QVBoxLayout* rowsLayout_ = nullptr;
    QSpinBox* seeds_ = nullptr;
    QSpinBox* steps_ = nullptr;
    QLabel* summary_ = nullptr;
    QLabel* error_ = nullptr;
    QLabel* warning_ = nullptr;  // sweep_warnings: queued anyway
    QDialogButtonBox* buttons_ = nullptr;
};

}  // namespace mlk
