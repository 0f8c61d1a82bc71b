// What every window test sets up and takes down: Qt's test mode (settings and
// the data folder in scratch locations), an application name carrying the
// process id so two checkouts testing at once never share or delete each
// other's default database, and settings that start empty.
#pragma once

#include <QApplication>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <QStandardPaths>
#include <QString>

#include "app/gui/main_window.h"

namespace window_test {

inline void enter(const QString& name) {
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName("MismatchLabTest");
    QApplication::setApplicationName(QStringLiteral("%1 %2").arg(name).arg(QCoreApplication::applicationPid()));
    QSettings().clear();
}

// Removes the test's default data folder and settings file.
inline void leave() {
    QDir(QFileInfo(mlk::MainWindow::defaultDatabasePath()).absolutePath()).removeRecursively();
    QFile::remove(QSettings().fileName());
}

}  // namespace window_test
