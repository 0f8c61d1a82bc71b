// The preset picker's list: presets under their group (core/config/presets.h:
// by source, such as Miles or verl, or by lesson, such as Batch invariance),
// each group a bold header that cannot be picked, each preset with its
// sentence of explanation on a second, grey line and in full as a tooltip.
// Items carry the preset name as their data (QComboBox::findData(name));
// headers carry none.
#pragma once

class QComboBox;

namespace mlk {

// Replaces the combo's items and sets a delegate that draws the second line.
void fillPresetPicker(QComboBox* combo);

}  // namespace mlk
