// mismatch-lab: the desktop workbench.
#include <QApplication>
#include <QIcon>

#include "app/gui/main_window.h"

int main(int argc, char** argv) {
    Q_INIT_RESOURCE(resources);  // the .qrc lives in the static mlk_app library
    QApplication app(argc, argv);
    // Folder names without spaces: ~/.local/share/MismatchLab/mismatch-lab/runs.sqlite.
    QApplication::setOrganizationName(QStringLiteral("MismatchLab"));
    QApplication::setApplicationName(QStringLiteral("mismatch-lab"));
    QApplication::setApplicationDisplayName(QStringLiteral("Mismatch Lab"));
    QApplication::setApplicationVersion(QStringLiteral(MLK_VERSION));
    QGuiApplication::setDesktopFileName(mlk::MainWindow::applicationId());
    QApplication::setWindowIcon(QIcon::fromTheme(mlk::MainWindow::applicationId(),
                                                 QIcon(QStringLiteral(":/icons/org.mismatchlab.MismatchLab.svg"))));
    // A database path on the command line opens it (the .desktop file passes %f).
    const QStringList args = QApplication::arguments();
    mlk::MainWindow w(args.size() > 1 ? args.at(1) : QString());
    w.show();
    return app.exec();
}
