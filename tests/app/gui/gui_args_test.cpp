// The workbench's command line: a database path (positional or --db), --help,
// --version; everything else refused with a message naming the argument, so a
// mistyped option never becomes a database file of that name.
#include <QTest>

#include "app/gui/gui_args.h"

using namespace mlk;

class GuiArgsTest : public QObject {
    Q_OBJECT

    static GuiArgs parse(QStringList a) {
        a.prepend(QStringLiteral("mismatch-lab"));
        return parseGuiArgs(a);
    }

private slots:
    void nothingOpensTheLastDatabase() {
        const GuiArgs g = parse({});
        QVERIFY(g.error.isEmpty());
        QVERIFY(g.database.isEmpty());
        QVERIFY(!g.help && !g.version);
    }
    void aPathOrDbOpensThatDatabase() {
        QCOMPARE(parse({"runs.sqlite"}).database, QStringLiteral("runs.sqlite"));
        QCOMPARE(parse({"--db", "a b.sqlite"}).database, QStringLiteral("a b.sqlite"));
        QCOMPARE(parse({"--db=x.sqlite"}).database, QStringLiteral("x.sqlite"));
    }
    void helpAndVersionAreSeenAnywhere() {
        QVERIFY(parse({"--help"}).help);
        QVERIFY(parse({"-h"}).help);
        QVERIFY(parse({"--version"}).version);
        // before Qt takes out its own options, main still finds --help
        const GuiArgs g = parse({"-platform", "offscreen", "--help"});
        QVERIFY(g.help);
        QVERIFY(!g.error.isEmpty());
    }
    void anUnknownOptionIsRefusedByName() {
        const GuiArgs g = parse({"--dbb", "runs.sqlite"});
        QVERIFY(g.error.contains(QStringLiteral("'--dbb'")));
        QVERIFY(g.error.contains(QStringLiteral("--db DATABASE")));
        QVERIFY(g.error.contains(QStringLiteral("--help")));
        QVERIFY(!parse({"-x"}).error.isEmpty());
        QVERIFY(!parse({"-"}).error.isEmpty());  // no database comes from stdin
    }
    void aMissingOrSecondDatabaseIsRefused() {
        QVERIFY(parse({"--db"}).error.contains(QStringLiteral("--db needs a database file path")));
        QVERIFY(parse({"--db="}).error.contains(QStringLiteral("needs a database file path")));
        const GuiArgs two = parse({"a.sqlite", "--db", "b.sqlite"});
        QVERIFY(two.error.contains(QStringLiteral("'a.sqlite' and 'b.sqlite'")));
        QCOMPARE(two.database, QStringLiteral("a.sqlite"));
    }
};

QTEST_APPLESS_MAIN(GuiArgsTest)
#include "gui_args_test.moc"
