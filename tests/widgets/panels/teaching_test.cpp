// Explanations where the numbers are: the one tooltip routine (title,
// meaning, formula, direction from the catalogue), used by the chart titles,
// the chart menu and the metric pickers; the glossary (key terms and every
// metric by group, searchable); the preset picker by group, each preset with
// its sentence; presentation mode's chart scale. MLK_SCREENSHOT_DIR=<dir>
// saves glossary.png, chart_title_tooltip.png, preset_picker.png and
// chart_presentation.png.
#include <QAbstractItemView>
#include <QApplication>
#include <QComboBox>
#include <QHelpEvent>
#include <QLineEdit>
#include <QMenu>
#include <QPainter>
#include <QStandardItemModel>
#include <QTest>
#include <QToolTip>

#include <cmath>
#include <memory>

#include "core/config/presets.h"
#include "core/metrics/catalogue.h"
#include "core/metrics/glossary.h"
#include "tests/screenshot.h"
#include "tests/widgets/charts/chart_test_util.h"
#include "widgets/charts/chart_grid.h"
#include "widgets/charts/chart_style.h"
#include "widgets/charts/metric_chart.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/run_data.h"
#include "widgets/panels/config_form.h"
#include "widgets/panels/glossary.h"

using namespace mlk;

namespace {

QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

QWidget* shownToolTip() {
    for (QWidget* w : QApplication::topLevelWidgets())
        if (w->inherits("QTipLabel") && w->isVisible()) return w;
    return nullptr;
}

// The widget with its tooltip drawn where it opened: a tooltip is a window
// of its own, and a screenshot of the widget alone would not show it.
QImage withToolTip(QWidget* w, QWidget* tip) {
    QImage image = w->grab().toImage();
    const QPoint at = w->mapFromGlobal(tip->pos());
    const QPixmap t = tip->grab();
    QImage out(std::max(image.width(), at.x() + t.width()), std::max(image.height(), at.y() + t.height()),
               QImage::Format_ARGB32);
    out.fill(Qt::white);
    QPainter p(&out);
    p.drawImage(0, 0, image);
    p.drawPixmap(at, t);
    return out;
}

}  // namespace

class TeachingTest : public QObject {
    Q_OBJECT

private slots:
    void toolTipRoutineSaysTitleMeaningFormulaAndDirection() {
        for (const MetricInfo& m : metric_catalogue()) {
            QVERIFY2(!m.meaning.empty() && !m.formula.empty(), m.name.data());
            const QString tip = metricToolTip(qs(m.name));
            for (std::string_view part : {m.title, m.meaning, m.formula})
                QVERIFY2(tip.contains(qs(part).toHtmlEscaped()), m.name.data());
            QVERIFY(tip.contains(metricDirectionText(m)));
            QCOMPARE(metricTitle(qs(m.name)), qs(m.title));
        }
        QVERIFY(metricToolTip("k3_kl").contains("lower is better"));
        QVERIFY(metricToolTip("reward_mean").contains("higher is better"));
        QVERIFY(metricToolTip("k3_kl", "Mean over steps of:").startsWith("<qt><p>Mean over steps of:"));
        QVERIFY(metricToolTip("not_a_metric").contains("not_a_metric"));
        QCOMPARE(metricTitle("not_a_metric"), QString("not_a_metric"));
    }

    void chartTitleAndMenuCarryTheMetricsExplanation() {
        RunDataStore data;
        MetricChart chart(&data, "F@2");
        chart.resize(560, 340);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        chart.redrawNow();
        QCOMPARE(chart.title(), qs(find_metric("F@2")->title));
        // Hover the title, above the plot.
        const QPoint titlePos(chart.width() / 2, int(chart.chart()->plotArea().top()) / 2);
        QHelpEvent help(QEvent::ToolTip, titlePos, chart.viewport()->mapToGlobal(titlePos));
        QApplication::sendEvent(chart.viewport(), &help);
        QWidget* tip = shownToolTip();
        QVERIFY(tip);
        QVERIFY(QToolTip::text().contains(qs(find_metric("F@2")->formula).toHtmlEscaped()));
        const QString shots = qEnvironmentVariable("MLK_SCREENSHOT_DIR");
        if (!shots.isEmpty()) QVERIFY(withToolTip(&chart, tip).save(shots + "/chart_title_tooltip.png"));
        QToolTip::hideText();
        std::unique_ptr<QMenu> menu(chart.createContextMenu(nullptr));
        QAction* about = menu->actions().back();
        QVERIFY(about->text().contains(chart.title()));
        QCOMPARE(about->toolTip(), metricToolTip("F@2"));
    }

    void glossaryListsTermsAndEveryMetricAndFilters() {
        Glossary g;
        g.resize(620, 760);
        g.show();
        QCOMPARE(g.shownTerms(), int(glossary_terms().size()));
        QCOMPARE(g.shownMetrics(), int(metric_catalogue().size()));
        for (const char* group : {"Reward", "Mismatch", "Correction", "Routing"}) QVERIFY(g.html().contains(group));
        testing_shots::save(&g, "glossary");
        QTest::keyClicks(g.searchField(), "icepop");
        QCOMPARE(g.shownTerms(), 1);
        g.setFilter("rho - 1 - r");  // a formula
        QVERIFY(g.shownMetrics() >= 1);
        QVERIFY(g.html().contains("K3 KL"));
        g.setFilter("no such word anywhere");
        QCOMPARE(g.shownTerms() + g.shownMetrics(), 0);
        QVERIFY(g.html().contains("Nothing matches"));
        testing_shots::save(&g, "glossary_search");
    }

    void presetPickerGroupsPresetsWithTheirSentence() {
        ConfigForm form;
        form.resize(420, 700);
        form.show();
        auto* combo = form.findChild<QComboBox*>("presetCombo");
        QVERIFY(combo);
        auto* model = qobject_cast<QStandardItemModel*>(combo->model());
        QVERIFY(model);
        QString group;
        int headers = 0;
        for (int i = 0; i < combo->count(); ++i) {
            QStandardItem* item = model->item(i);
            if (!combo->itemData(i).isValid()) {
                QCOMPARE(item->flags(), Qt::NoItemFlags);  // a header is never picked
                group = item->text();
                QCOMPARE(group, qs(preset_groups()[size_t(headers++)]));
                continue;
            }
            const Preset* p = find_preset(combo->itemData(i).toString().toStdString());
            QVERIFY(p);
            QCOMPARE(qs(preset_group(*p)), group);
            QVERIFY(
                combo->itemData(i, Qt::ToolTipRole).toString().contains(qs(p->description).left(40).toHtmlEscaped()));
        }
        QCOMPARE(headers, int(preset_groups().size()));
        // Open, as the user sees it.
        combo->showPopup();
        QTest::qWait(50);
        QWidget* popup = combo->view()->window();
        popup->resize(popup->width(), 720);
        testing_shots::save(popup, "preset_picker");
        combo->hidePopup();
    }

    void presentationModeScalesChartLinesAndText() {
        RunDataStore data;
        std::vector<double> reward, k3;
        for (int i = 0; i < 60; ++i) {
            reward.push_back(0.2 + 0.5 * i / 60.0 + 0.05 * std::sin(i));
            k3.push_back(1e-3 * (1 + 0.3 * std::cos(0.7 * i)));
        }
        test::feed(data, 1, "reward_mean", reward);
        test::feed(data, 1, "k3_kl", k3);
        ChartGrid grid(&data);
        MetricChart& chart = *grid.chartFor("k3_kl");
        test::showAndSettle(grid, QSize(1000, 640));
        const double titleSize = chart.chart()->titleFont().pointSizeF();
        const QColor colour = data.colour(1);
        const int thin = test::pixelsOf(test::viewImage(chart), colour, test::plotInImage(chart));
        ChartStyle::instance().setPresentation(true);
        grid.redrawAllNow();
        QCOMPARE(ChartStyle::instance().lineScale(), ChartStyle::kPresentationLineScale);
        QCOMPARE(chart.chart()->titleFont().pointSizeF(), titleSize * ChartStyle::kPresentationFontScale);
        // Thicker lines: more of the plot in the run's colour.
        const int thick = test::pixelsOf(test::viewImage(chart), colour, test::plotInImage(chart));
        QVERIFY2(thick > thin * 3 / 2, qPrintable(QString("%1 vs %2").arg(thick).arg(thin)));
        testing_shots::save(&grid, "chart_presentation");
        ChartStyle::instance().setPresentation(false);
        QCOMPARE(chart.chart()->titleFont().pointSizeF(), titleSize);
        QCOMPARE(ChartStyle::instance().lineScale(), 1.0);
    }
};

QTEST_MAIN(TeachingTest)
#include "teaching_test.moc"
