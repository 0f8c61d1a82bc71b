// mismatch-lab: the desktop workbench.
#include <QApplication>
#include <QIcon>
#include <csignal>
#include <cstdio>

#include "app/gui/gui_args.h"
#include "app/gui/main_window.h"
#include "widgets/data/qt_text.h"

int main(int argc, char** argv) {
    Q_INIT_RESOURCE(resources);  // the .qrc lives in the static mlk_gui library
    // --help and --version answer before QApplication, so without a display too
    // (a terminal over SSH); Qt's own options are still in argv here.
    QStringList raw;
    for (int i = 0; i < argc; ++i) raw << QString::fromLocal8Bit(argv[i]);
    const mlk::GuiArgs early = mlk::parseGuiArgs(raw);
    if (early.help) {
        std::fputs(qPrintable(mlk::guiUsage()), stdout);
        return 0;
    }
    if (early.version) {
        std::printf("mismatch-lab %s\n", MLK_VERSION);
        return 0;
    }
    // Past a file-size limit (ulimit -f) a write fails with EFBIG and the run
    // is marked failed with that error, instead of the process dying by
    // SIGXFSZ with its run left unmarked.
    std::signal(SIGXFSZ, SIG_IGN);
    QApplication app(argc, argv);
    mlk::useOneNumberNotation();
    // Folder names without spaces: ~/.local/share/MismatchLab/mismatch-lab/runs.sqlite.
    QApplication::setOrganizationName(QStringLiteral("MismatchLab"));
    QApplication::setApplicationName(QStringLiteral("mismatch-lab"));
    QApplication::setApplicationDisplayName(QStringLiteral("Mismatch Lab"));
    QApplication::setApplicationVersion(QStringLiteral(MLK_VERSION));
    QGuiApplication::setDesktopFileName(mlk::MainWindow::applicationId());
    QApplication::setWindowIcon(QIcon::fromTheme(mlk::MainWindow::applicationId(),
                                                 QIcon(QStringLiteral(":/icons/org.mismatchlab.MismatchLab.svg"))));
    // A database path on the command line opens it (the .desktop file passes %f).
    const mlk::GuiArgs args = mlk::parseGuiArgs(QApplication::arguments());
    if (!args.error.isEmpty()) {
        std::fprintf(stderr, "mismatch-lab: %s\n%s", qPrintable(args.error), qPrintable(mlk::guiUsage()));
        return 2;
    }
    mlk::MainWindow w(args.database);
    w.show();
    return app.exec();
}
