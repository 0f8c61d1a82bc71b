// The workbench's command line, read before any window exists:
//   mismatch-lab [DATABASE]          the .desktop file passes %f
//   mismatch-lab --db DATABASE       the CLI's spelling of the same
//   mismatch-lab --help | --version
// Anything else is refused with a message that names the argument and what is
// allowed: a mistyped option must not become a database file of that name.
#pragma once

#include <QString>
#include <QStringList>

namespace mlk {

struct GuiArgs {
    QString database;  // empty: the last one used (or the default)
    bool help = false;
    bool version = false;
    QString error;  // non-empty: refuse to start, print it and guiUsage()
};

// args[0] is the program, as QCoreApplication::arguments() gives them (Qt's own
// options such as -platform already taken out).
GuiArgs parseGuiArgs(const QStringList& args);
QString guiUsage();

}  // namespace mlk
