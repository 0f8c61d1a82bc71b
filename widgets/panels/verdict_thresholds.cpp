#include "widgets/panels/verdict_thresholds.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

#include <cmath>

namespace mlk {

namespace {
const char* const kSettingsKey = "verdicts/thresholds";
}  // namespace

VerdictThresholds savedVerdictThresholds() {
    const QString text = QSettings().value(kSettingsKey).toString();
    if (text.isEmpty()) return {};
    try {
        return verdict_thresholds_from_json(nlohmann::json::parse(text.toStdString()));
    } catch (const std::exception&) {
        return {};
    }
}

void saveVerdictThresholds(const VerdictThresholds& t) {
    QSettings().setValue(kSettingsKey, QString::fromStdString(verdict_thresholds_json(t).dump()));
}

VerdictThresholdsDialog::VerdictThresholdsDialog(const VerdictThresholds& current, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Verdict thresholds"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(tr("The same rules for every run and sweep; hover a key for what it means."), this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto* form = new QFormLayout;
    for (const VerdictThresholdInfo& info : verdict_threshold_infos()) {
        auto* box = new QDoubleSpinBox(this);
        const QString key = QString::fromLatin1(info.key);
        box->setObjectName(key);
        // The range is the one `--verdict` checks: a value the CLI would
        // refuse cannot be typed here.
        box->setRange(info.min, info.max);
        box->setDecimals(info.integer ? 0 : 3);
        box->setSingleStep(info.integer ? 1 : (info.max - info.min <= 1 ? 0.05 : 0.5));
        box->setToolTip(QString::fromUtf8(info.meaning) + tr(" (%1 to %2)").arg(info.min).arg(info.max));
        auto* label = new QLabel(key, this);
        label->setToolTip(box->toolTip());
        form->addRow(label, box);
        editors_.insert(key, box);
    }
    layout->addLayout(form);
    auto* buttons =
        new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel | QDialogButtonBox::RestoreDefaults, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons->button(QDialogButtonBox::RestoreDefaults), &QPushButton::clicked, this,
            [this] { setThresholds({}); });
    layout->addWidget(buttons);
    setThresholds(current);
}

VerdictThresholds VerdictThresholdsDialog::thresholds() const {
    VerdictThresholds t;
    for (const VerdictThresholdInfo& info : verdict_threshold_infos()) {
        const double v = editors_.value(QString::fromLatin1(info.key))->value();
        // Through the one setter `--verdict` uses, so its checks hold here too.
        set_verdict_threshold(
            t, info.key,
            info.integer ? std::to_string((long long)std::llround(v)) : QString::number(v, 'g', 10).toStdString());
    }
    return t;
}

void VerdictThresholdsDialog::setThresholds(const VerdictThresholds& t) {
    for (const VerdictThresholdInfo& info : verdict_threshold_infos())
        editors_.value(QString::fromLatin1(info.key))->setValue(verdict_threshold(t, info.key));
}

}  // namespace mlk
