#include "app/gui/gui_args.h"

namespace mlk {

QString guiUsage() {
    return QStringLiteral(
        "usage: mismatch-lab [DATABASE]\n"
        "       mismatch-lab --db DATABASE\n"
        "       mismatch-lab --help | --version\n"
        "DATABASE: a run database file (.sqlite), opened or created; without one the last database used opens.\n");
}

GuiArgs parseGuiArgs(const QStringList& args) {
    GuiArgs g;
    // The first error is kept; the scan goes on so that --help and --version are
    // seen wherever they stand (main asks before Qt takes out its own options).
    const auto fail = [&](const QString& message) {
        if (g.error.isEmpty()) g.error = message;
    };
    const auto setDatabase = [&](const QString& path, const QString& how) {
        if (path.isEmpty()) fail(QStringLiteral("%1 needs a database file path").arg(how));
        else if (!g.database.isEmpty())
            fail(QStringLiteral("more than one database given: '%1' and '%2'; pass one").arg(g.database, path));
        else g.database = path;
    };
    for (int i = 1; i < args.size(); ++i) {
        const QString& a = args.at(i);
        if (a == QLatin1String("--help") || a == QLatin1String("-h")) g.help = true;
        else if (a == QLatin1String("--version")) g.version = true;
        else if (a == QLatin1String("--db")) setDatabase(i + 1 < args.size() ? args.at(++i) : QString(), a);
        else if (a.startsWith(QLatin1String("--db="))) setDatabase(a.mid(5), QStringLiteral("--db="));
        else if (a.startsWith(QLatin1Char('-')))
            fail(QStringLiteral("unknown option '%1'; allowed: --db DATABASE, --help, --version, or a "
                                "database file path")
                     .arg(a));
        else setDatabase(a, QStringLiteral("the database argument"));
    }
    return g;
}

}  // namespace mlk
