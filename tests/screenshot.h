// Screenshots from the widget and window tests: saved only when
// $MLK_SCREENSHOT_DIR names a folder, so a plain test run writes nothing.
#pragma once

#include <QString>
#include <QWidget>

namespace mlk::testing_shots {

// Saves what `w` shows as <$MLK_SCREENSHOT_DIR>/<name>.png. False only when
// the folder is set and the file could not be written.
inline bool save(QWidget* w, const QString& name) {
    const QString dir = qEnvironmentVariable("MLK_SCREENSHOT_DIR");
    return dir.isEmpty() || w->grab().save(dir + "/" + name + ".png");
}

}  // namespace mlk::testing_shots
