// What every window test sets up and takes down: Qt's test mode (settings and
// the data folder in scratch locations), an application name carrying the
// process id so two checkouts testing at once never share or delete each
// other's default database, and settings that start empty; and how a test
// finds a menu and its actions by their texts, as a user does.
#pragma once

#include <QAction>
#include <QApplication>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
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

// The menu bar's menu titled `menu` ("&Help"), or null.
inline QMenu* menuIn(QMainWindow& w, const QString& menu) {
    for (QAction* m : w.menuBar()->actions())
        if (m->menu() && m->text() == menu) return m->menu();
    return nullptr;
}

// The action `text` ("&Glossary") of the menu titled `menu`, or null.
inline QAction* actionIn(QMainWindow& w, const QString& menu, const QString& text) {
    if (QMenu* m = menuIn(w, menu))
        for (QAction* a : m->actions())
            if (a->text() == text) return a;
    return nullptr;
}

}  // namespace window_test
