#include "widgets/data/export_folder.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace mlk {

namespace {
constexpr const char* kKey = "exportFolder";
}

QString exportFolder() {
    const QString saved = QSettings().value(kKey).toString();
    return !saved.isEmpty() && QFileInfo(saved).isDir() ? saved : QDir::homePath();
}

void rememberExportFolder(const QString& savedFile) { QSettings().setValue(kKey, QFileInfo(savedFile).absolutePath()); }

QString exportPath(const QString& fileName) { return QDir(exportFolder()).filePath(fileName); }

}  // namespace mlk
