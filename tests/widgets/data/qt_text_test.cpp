// widgets/data/qt_text.h: after useOneNumberNotation a German user's
// workbench writes numbers as the CLI and the exports do, in Qt's widgets
// and in the C library alike; stored times read in local time on screen and
// in UTC in reports, whatever the time zone.
#include <QDoubleSpinBox>
#include <QTest>

#include <clocale>
#include <cstdio>
#include <ctime>

#include "tests/comma_locale.h"
#include "tests/scratch.h"
#include "widgets/data/qt_text.h"

using namespace mlk;

class QtTextTest : public QObject {
    Q_OBJECT
private slots:
    void spinBoxesAndTheCLibraryWriteAPoint() {
        // What QApplication leaves under LANG=de_DE.UTF-8.
        testing_locale::build_comma_locale(testing_scratch::scratch_dir("number_notation"));
        QCOMPARE(QString::fromStdString(testing_locale::use_comma_locale()), QString());
        QLocale::setDefault(QLocale(QLocale::German, QLocale::Germany));
        QDoubleSpinBox before;
        before.setDecimals(3);
        before.setRange(1, 100);
        before.setValue(10);
        QCOMPARE(before.text(), QStringLiteral("10,000"));  // ten, which an English reader takes for ten thousand

        useOneNumberNotation();
        QDoubleSpinBox after;
        after.setDecimals(3);
        after.setRange(1, 100);
        after.setValue(10);
        QCOMPARE(after.text(), QStringLiteral("10.000"));
        char buf[16];
        std::snprintf(buf, sizeof buf, "%g", 0.5);
        QCOMPARE(QString::fromLatin1(buf), QStringLiteral("0.5"));
        QCOMPARE(num(0.25), QStringLiteral("0.25"));
    }

    void timesAreLocalOnScreenAndUtcInReports() {
        // A POSIX rule, so no tzdata is needed: two hours east of UTC.
        qputenv("TZ", "XYZ-2");
        tzset();
        const std::string stored = "2026-11-29T23:37:10.010Z";
        QCOMPARE(localTimeText(stored), QStringLiteral("2026-11-30 01:37"));
        QCOMPARE(utcTimeText(stored), QStringLiteral("2026-11-29 23:37:10"));
        QCOMPARE(localTimeText("not a time"), QStringLiteral("not a time"));
        qunsetenv("TZ");
        tzset();
    }
};

QTEST_MAIN(QtTextTest)
#include "qt_text_test.moc"
