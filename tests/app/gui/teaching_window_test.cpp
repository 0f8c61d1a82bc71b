// The window's teaching wiring (main_window_teach.cpp): Help > Glossary on
// F1, View > Probe starting from the form's configuration, and
// View > Presentation mode (F11) scaling the application font and the charts
// and going back cleanly, persisted. MLK_SCREENSHOT_DIR=<dir> saves
// window_presentation.png and window_probe.png.
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QScrollArea>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include "app/gui/main_window.h"
#include "tests/app/gui/window_test_env.h"
#include "core/metrics/run_stats.h"
#include "tests/screenshot.h"
#include "widgets/charts/chart_style.h"
#include "widgets/panels/config_form.h"
#include "widgets/panels/probe_panel.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

namespace {}  // namespace

class TeachingWindowTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private slots:
    void initTestCase() {
        window_test::enter("Mismatch Lab Teaching Test");
        qputenv("MLK_CACHE_DIR", (dir_.path() + "/cache").toUtf8());
    }

    void cleanupTestCase() { window_test::leave(); }

    void menusOfferGlossaryProbeAndPresentation() {
        MainWindow w(dir_.path() + "/runs.sqlite");
        QAction* glossary = window_test::actionIn(w, "&Help", "&Glossary");
        QVERIFY(glossary);
        QCOMPARE(glossary->shortcut(), QKeySequence(QKeySequence::HelpContents));
        glossary->trigger();
        QVERIFY(!w.glossaryDock()->isHidden());
        QAction* presentation = window_test::actionIn(w, "&View", "Presentation mode");
        QVERIFY(presentation);
        QCOMPARE(presentation->shortcut(), QKeySequence(Qt::Key_F11));
    }

    void presentationModeGoesAndComesBackAndPersists() {
        const QFont normal = QApplication::font();
        {
            MainWindow w(dir_.path() + "/runs.sqlite");
            w.resize(1400, 900);
            w.show();
            QVERIFY(!w.presentationMode());
            window_test::actionIn(w, "&View", "Presentation mode")->trigger();
            QVERIFY(w.presentationMode());
            QVERIFY(ChartStyle::instance().presentation());
            QCOMPARE(QApplication::font().pointSizeF(), normal.pointSizeF() * ChartStyle::kPresentationFontScale);
            QVERIFY(QSettings().value("view/presentation").toBool());
            QTest::qWait(100);
            testing_shots::save(&w, "window_presentation");
        }
        {
            MainWindow w(dir_.path() + "/runs.sqlite");  // comes back on
            QVERIFY(w.presentationMode());
            w.setPresentationMode(false);
            QCOMPARE(QApplication::font(), normal);
            QVERIFY(!ChartStyle::instance().presentation());
            QVERIFY(!QSettings().value("view/presentation").toBool());
        }
    }

    void probeDockStartsFromTheForm() {
        MainWindow w(dir_.path() + "/runs.sqlite");
        w.resize(1500, 950);
        w.show();
        Config c = w.configForm()->config();
        c.rl.prompts_per_step = 8;
        c.rl.samples_per_prompt = 4;
        w.configForm()->setConfig(c);
        QSignalSpy probed(w.probePanel(), &ProbePanel::probed);
        w.probeDock()->toggleViewAction()->trigger();
        QTRY_VERIFY_WITH_TIMEOUT(!probed.isEmpty(), kEventDeadlineMs);
        QVERIFY(w.probePanel()->current().config == w.configForm()->config());
        QVERIFY(!w.probePanel()->valueText("k3_kl").isEmpty());
        // Nothing of the probe is cut off at the dock's edge: the panel fits its
        // scroll area's width, and the status lines (set by the probe) are whole.
        QApplication::processEvents();
        auto* scroll = qobject_cast<QScrollArea*>(w.probeDock()->widget());
        QVERIFY(scroll);
        QVERIFY2(w.probePanel()->width() <= scroll->viewport()->width(),
                 qPrintable(QStringLiteral("panel %1 px in a %2 px viewport")
                                .arg(w.probePanel()->width())
                                .arg(scroll->viewport()->width())));
        auto* status = w.probePanel()->findChild<QLabel*>(QStringLiteral("probeStatus"));
        QVERIFY(status);
        QVERIFY2(status->width() >= status->sizeHint().width(),
                 qPrintable(QStringLiteral("status %1 px for %2 px of text: %3")
                                .arg(status->width())
                                .arg(status->sizeHint().width())
                                .arg(status->text())));
        testing_shots::save(&w, "window_probe");
    }
};

QTEST_MAIN(TeachingWindowTest)
#include "teaching_window_test.moc"
