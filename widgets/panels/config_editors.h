// The config form's field editors, one per schema key type: bool ->
// QCheckBox, enum -> QComboBox, int -> QSpinBox (a QLineEdit with an integer
// check when the range exceeds int, e.g. the seed), number -> QLineEdit
// parsed with std::from_chars, so 1e-4 or 1.001 are held exactly, text ->
// QLineEdit checked against the key's format (e.g. a layer list). The form
// (config_form.h) lays them out and validates; these move values between an
// editor and a Config.
#pragma once

#include <QString>

#include <functional>

#include "core/config/config.h"

class QObject;
class QWidget;

namespace mlk::config_editors {

// A new, parentless editor for `key`; `edited` runs after every user edit
// (not after load()). Spin and combo boxes ignore the mouse wheel unless
// focused, so scrolling the form never changes a setting by accident.
QWidget* make(const ConfigKey& key, QObject* context, std::function<void()> edited);

// Shows the value of `key` in `cfg` (signals blocked).
void load(QWidget* editor, const ConfigKey& key, const Config& cfg);

// Writes the editor's value into `cfg`. Returns "" on success, else the
// message to show (text that does not parse, or the ConfigError of a value
// config_set refuses); `cfg` then keeps its last good value.
QString store(QWidget* editor, const ConfigKey& key, Config& cfg);

// A combo's "auto" item says what it stands for under cfg's numerics
// profile, e.g. "auto (bf16)"; other editors and keys are left alone.
void describeAuto(QWidget* editor, const ConfigKey& key, const Config& cfg);

// The key's tooltip() as rich text (Qt wraps it): label, key, description,
// range, default and the community names.
QString richTooltip(const ConfigKey& key);

// The style sheet that marks a field by its "mlkState" property: "error" and
// "warning" tint the editor and its label in the palette's tones, "ignored"
// (a value the configuration does not read) greys the label.
QString stateStyleSheet();

// Sets the "mlkState" of `w` ("" for none) and restyles it if it changed.
void setState(QWidget* w, const QString& state);

// A field's tooltip with `note` (plain text, e.g. why the value is ignored)
// in italics above `base`; `base` alone when there is no note.
QString notedTooltip(const QString& note, const QString& base);

}  // namespace mlk::config_editors
