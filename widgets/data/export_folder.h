// The one folder every save dialog of the workbench opens in (chart images,
// CSV / JSON exports, reports): the last one the user saved into, so exports
// of one session land together. QSettings-backed; home before the first save.
#pragma once

#include <QString>

namespace mlk {

QString exportFolder();
// Remembers the folder of `savedFile` (a file just written).
void rememberExportFolder(const QString& savedFile);
// `fileName` inside exportFolder(): the default path of a save dialog.
QString exportPath(const QString& fileName);

}  // namespace mlk
