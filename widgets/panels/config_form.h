// ConfigForm: the run configuration as a form generated entirely from
// config_schema() (core/config/config.h), so a new key appears here with its label,
// editor, range and tooltip without touching this file.
//
// Layout (reads well at ~380 px wide): preset picker with the preset's
// sentence of explanation, Copy JSON / Paste JSON / Reset buttons, a
// non-modal message banner, the validation status area, then one collapsible
// section per config_sections() entry inside a scroll area.
//
// Editors (config_editors.h): bool -> QCheckBox, enum -> QComboBox, int ->
// QSpinBox or QLineEdit, number -> QLineEdit held exactly. Every editor
// carries ConfigKey::tooltip() and its objectName is the dotted key. After
// every edit validate() and config_warnings() run; the keys their messages
// name are marked in place (red = error, amber = warning; icon, border,
// message appended to the tooltip) and the messages are listed in the status
// area. Under the Model section a line gives the model's parameters, memory
// and estimated RL step time (footprint_label.h), updated on every edit.
#pragma once

#include <QHash>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QWidget>

#include "core/config/config.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPushButton;
class QToolButton;
class QVBoxLayout;

namespace mlk {

class FootprintLabel;

class ConfigForm : public QWidget {
    Q_OBJECT
public:
    explicit ConfigForm(QWidget* parent = nullptr);

    // The configuration as edited (possibly invalid: see isValid()). A number
    // or integer field whose text does not parse keeps its last good value.
    Config config() const;
    // Loads `c` into every editor (no validation refused: an invalid config is
    // shown with its problems marked). Emits configChanged().
    void setConfig(const Config& c);

    // The preset last chosen (or "" when none); the config may since have been
    // edited: see modifiedFromPreset().
    QString presetName() const;
    // Loads preset_config(name). Returns false (and shows a message) when
    // the preset is unknown.
    bool setPreset(const QString& name);
    bool modifiedFromPreset() const;

    // The shareable form: config_to_json(config()) (every key, seed included),
    // pretty-printed.
    QString toJson() const;
    // Replaces the configuration by the one in `json` (nested and/or dotted;
    // missing keys take defaults). Malformed JSON or a ConfigError leaves the
    // form unchanged, sets lastMessage() and shows it in the banner; the
    // message is also written to *error when given.
    bool fromJson(const QString& json, QString* error = nullptr);

    // Copies toJson() and confirms in the banner (info, auto-hides).
    void copyJsonToClipboard();
    bool pasteJsonFromClipboard();

    // Validation state of the current config: validate() passes and every
    // text field parses.
    bool isValid() const { return valid_; }
    // Error and warning messages currently shown in the status area.
    QStringList errorMessages() const { return errors_; }
    QStringList warningMessages() const { return warnings_; }
    // "error", "warning" or "" for a key; the messages naming it.
    QString keyState(const QString& key) const;
    QString keyMessage(const QString& key) const;

    // The banner's last message ("" after a success / dismissal).
    QString lastMessage() const { return bannerText_; }

    // The editor of a key (QCheckBox, QComboBox, QSpinBox or QLineEdit);
    // nullptr for an unknown key.
    QWidget* editor(const QString& key) const;
    void setSectionExpanded(const QString& section, bool expanded);
    bool isSectionExpanded(const QString& section) const;

    // Key names that `message` mentions (full dotted names, plus the short
    // "a.b / c / d" forms the warnings use), in schema order.
    static QStringList keysInMessage(const QString& message);

signals:
    void configChanged();
    void validityChanged(bool valid);
    void presetChanged(const QString& name);

private:
    struct Field {
        const ConfigKey* meta = nullptr;
        QWidget* editor = nullptr;
        QLabel* label = nullptr;
        QLabel* marker = nullptr;
        QString baseTooltip;
        QString textError;  // number/int text field that does not parse
        QString state, message;
    };
    struct Section {
        QToolButton* header = nullptr;
        QWidget* body = nullptr;
        QString title;
    };

    void buildUi();
    void loadEditors();                 // cfg_ -> editors, signals blocked
    void onEdited(const QString& key);  // editor -> cfg_, then revalidate
    void revalidate();                  // marks, status, validity signal
    void applyMarks();
    void updateSectionHeaders();
    void updatePresetInfo();
    void showBanner(const QString& text, bool error);
    void hideBanner();

    Config cfg_;
    QString preset_;
    bool valid_ = true;
    bool loading_ = false;
    QStringList errors_, warnings_;
    QString bannerText_;

    QHash<QString, Field> fields_;
    QList<Section> sections_;
    QComboBox* presetCombo_ = nullptr;
    QLabel* presetDesc_ = nullptr;
    QLabel* banner_ = nullptr;
    QToolButton* bannerClose_ = nullptr;
    QWidget* bannerRow_ = nullptr;
    QLabel* status_ = nullptr;
    FootprintLabel* footprint_ = nullptr;  // under the Model section
};

}  // namespace mlk
