// The verdict thresholds the workbench judges runs by: an editor built from
// verdict_threshold_infos() (each key with its meaning, its allowed range and
// whether it is an integer, so nothing out of range can be entered), and the
// user's choice kept in QSettings for the sweep table and the reports made
// from the window.
#pragma once

#include <QDialog>
#include <QMap>
#include <QString>

#include "core/metrics/verdicts.h"

QT_BEGIN_NAMESPACE
class QDoubleSpinBox;
QT_END_NAMESPACE

namespace mlk {

// The saved thresholds (defaults when none, or when what is saved no longer
// reads: a key renamed by a newer version keeps its default).
VerdictThresholds savedVerdictThresholds();
void saveVerdictThresholds(const VerdictThresholds& t);

class VerdictThresholdsDialog : public QDialog {
    Q_OBJECT

public:
    explicit VerdictThresholdsDialog(const VerdictThresholds& current, QWidget* parent = nullptr);

    VerdictThresholds thresholds() const;
    void setThresholds(const VerdictThresholds& t);
    // The spin box of one key ("collapse_drop"); nullptr for an unknown key.
    QDoubleSpinBox* editor(const QString& key) const { return editors_.value(key); }

private:
    QMap<QString, QDoubleSpinBox*> editors_;
};

}  // namespace mlk
