// The Sweeps panel in the window: a tab beside Runs that View brings back,
// choosing a configuration overlays its runs on the charts as one seed band,
// and the sweep report exported from the window follows the screen.
// MLK_SCREENSHOT_DIR keeps window-sweeps.png.
#include <algorithm>
#include <cmath>

#include <QApplication>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QMenu>
#include <QMenuBar>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

#include "app/gui/main_window.h"
#include "tests/app/gui/window_test_env.h"
#include "tests/screenshot.h"
#include "tests/widgets/sweep_store.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/panels/run_browser.h"
#include "widgets/panels/sweep_table.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

class SweepsWindowTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { window_test::enter("Sweeps Window Test"); }
    void cleanupTestCase() { window_test::leave(); }

    void sweepsTabDrivesTheCharts() {
        QTemporaryDir d;
        const QString path = d.path() + "/sweeps.sqlite";
        {
            Store s = Store::open(path.toStdString());
            sweep_fixture::make_sweep(s);
        }
        MainWindow w(path);
        w.resize(1500, 950);
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        SweepTable* table = w.sweepTable();
        QTRY_VERIFY_WITH_TIMEOUT(table->summary().has_value() && !table->busy(), kEventDeadlineMs);
        auto* dock = w.findChild<QDockWidget*>("sweepsDock");
        QVERIFY(dock);
        dock->raise();
        QAction* toggle = nullptr;
        for (QAction* menu : w.menuBar()->actions())
            if (menu->text() == "&View")
                for (QAction* a : menu->menu()->actions())
                    if (a->text() == "Sweeps") toggle = a;
        QVERIFY2(toggle, "View > Sweeps");

        // The collapsing configuration: its three seeds, as one band.
        QTreeWidgetItem* row = table->tree()->topLevelItem(0);
        row->setExpanded(true);
        row->setSelected(true);
        QVERIFY(w.charts()->groupSeeds());
        // The run list and its metric summary follow what the charts show.
        QList<int64_t> seeds;
        for (const RunOutcome& o : table->summary()->stats[0].runs) seeds << o.run_id;
        std::sort(seeds.begin(), seeds.end());
        QList<int64_t> selected = w.runBrowser()->selectedRunIds();
        std::sort(selected.begin(), selected.end());
        QCOMPARE(selected, seeds);
        QTest::qWait(300);
        QVERIFY(mlk::testing_shots::save(&w, "window-sweeps"));

        const QString pdf = d.path() + "/sweep.pdf";
        QString error;
        QVERIFY2(w.exportSweepReport(pdf, &error), qPrintable(error));
        QVERIFY(QFileInfo(pdf).size() > 10000);

        // The window's own export paints the pages off the GUI thread: it
        // returns before the file is written, which reportWritten announces.
        std::optional<Report> report = w.sweepReport(&error);
        QVERIFY2(report, qPrintable(error));
        const QString later = d.path() + "/sweep-later.pdf";
        QSignalSpy written(&w, &MainWindow::reportWritten);
        w.writeReport(std::move(*report), later, QStringLiteral("Export sweep report"));
        QCOMPARE(written.count(), 0);
        QVERIFY(written.wait(30000));
        QCOMPARE(written.first().first().toString(), later);
        // The same report, but for its "Generated" time (the PDF's bytes differ by it).
        QFile written_pdf(later);
        QVERIFY(written_pdf.open(QIODevice::ReadOnly));
        QCOMPARE(written_pdf.read(5), QByteArray("%PDF-"));
        QVERIFY2(
            std::abs(double(QFileInfo(later).size() - QFileInfo(pdf).size())) < 0.01 * double(QFileInfo(pdf).size()),
            qPrintable(QString("%1 against %2 bytes").arg(QFileInfo(later).size()).arg(QFileInfo(pdf).size())));
    }
};

QTEST_MAIN(SweepsWindowTest)
#include "sweeps_window_test.moc"
