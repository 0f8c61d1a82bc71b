#include "widgets/charts/chart_menu.h"

#include <QBuffer>
#include <QDir>
#include <QFileDialog>
#include <QGraphicsView>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QRegularExpression>
#include <QSvgGenerator>

#include <cmath>

#include "core/config/atomic_file.h"
#include "widgets/charts/metric_chart.h"
#include "widgets/data/export_folder.h"
#include "widgets/data/metric_help.h"

namespace mlk {

namespace {

void askSmoothing(MetricChart& chart) {
    bool ok = false;
    const double weight = QInputDialog::getDouble(&chart, QObject::tr("Smoothing"),
                                                  QObject::tr("EMA weight (0 = raw data, 0.99 = very smooth):"),
                                                  chart.smoothing(), 0, kMaxSmoothingWeight, 3, &ok);
    if (ok) chart.setSmoothing(weight);
}

// Two numbers, lo and hi, on one line: "0 0.01".
void askYRange(MetricChart& chart) {
    const YRange now = chart.manualYRange().value_or(chart.shownYRange());
    bool ok = false;
    const QString text = QInputDialog::getText(
        &chart, QObject::tr("Y range"),
        QObject::tr("Lowest and highest value shown, e.g. \"0 0.01\"%1:")
            .arg(chart.logScale() ? QObject::tr(" (both > 0 on a log scale)") : QString()),
        QLineEdit::Normal, QStringLiteral("%1 %2").arg(now.lo, 0, 'g', 6).arg(now.hi, 0, 'g', 6), &ok);
    if (!ok) return;
    const QStringList parts = text.simplified().split(' ');
    bool a = false, b = false;
    const double lo = parts.size() == 2 ? parts[0].toDouble(&a) : 0, hi = parts.size() == 2 ? parts[1].toDouble(&b) : 0;
    if (!a || !b || !(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || (chart.logScale() && lo <= 0)) {
        QMessageBox::warning(
            &chart, QObject::tr("Y range"),
            QObject::tr("\"%1\" is not a range: give two numbers, the lower first%2.")
                .arg(text, chart.logScale() ? QObject::tr(", both above 0 on a log scale") : QString()));
        return;
    }
    chart.setManualYRange(YRange{lo, hi});
}

// A PNG at the size the user picks (the screen's is rarely what a slide or a
// page wants), saved into the remembered export folder, and said where.
void askSave(MetricChart& chart, bool svg) {
    QString base = chart.metric();
    base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]")), QStringLiteral("_"));
    QSize size;
    if (!svg) {
        const QSize now = chart.size();
        const QList<QSize> sizes = {now, now * 2, QSize(1600, 600), QSize(2400, 900)};
        const QStringList labels = {
            QObject::tr("As on screen (%1 \u00D7 %2 px)").arg(now.width()).arg(now.height()),
            QObject::tr("Twice the screen (%1 \u00D7 %2 px)").arg(now.width() * 2).arg(now.height() * 2),
            QObject::tr("Slide (1600 \u00D7 600 px)"), QObject::tr("Print (2400 \u00D7 900 px)")};
        bool ok = false;
        const QString pick = QInputDialog::getItem(&chart, QObject::tr("Save chart as PNG"), QObject::tr("Size:"),
                                                   labels, 1, false, &ok);
        if (!ok) return;
        size = sizes[labels.indexOf(pick)];
    }
    const QString path =
        QFileDialog::getSaveFileName(&chart, svg ? QObject::tr("Save chart as SVG") : QObject::tr("Save chart as PNG"),
                                     exportPath(base + (svg ? ".svg" : ".png")),
                                     svg ? QObject::tr("SVG images (*.svg)") : QObject::tr("PNG images (*.png)"));
    if (path.isEmpty()) return;
    if (const QString why = svg ? chart.saveSvg(path) : chart.savePng(path, size); !why.isEmpty()) {
        QMessageBox::warning(&chart, QObject::tr("Save chart"), why);
        return;
    }
    rememberExportFolder(path);
    QMessageBox::information(&chart, QObject::tr("Save chart"),
                             svg ? QObject::tr("Saved %1 (vector).").arg(QDir::toNativeSeparators(path))
                                 : QObject::tr("Saved %1 (%2 \u00D7 %3 px).")
                                       .arg(QDir::toNativeSeparators(path))
                                       .arg(size.width())
                                       .arg(size.height()));
}

}  // namespace

QMenu* createChartMenu(MetricChart& chart, QWidget* parent, std::vector<RunStep> at) {
    auto* menu = new QMenu(parent);
    // A spike on a chart and the tokens behind it, one click apart.
    const QString drillTip = QObject::tr(
        "This step's sampled tokens, F(t), router flips and worst tokens "
        "(the nearest step that stored them)");
    const auto addDrill = [&chart, &drillTip](QMenu* into, const RunStep& r, const QString& text) {
        into->addAction(text, &chart, [&chart, r] { emit chart.drillDownRequested(r.runId, r.step); })
            ->setToolTip(drillTip);
    };
    if (at.size() == 1) {
        addDrill(menu, at.front(), QObject::tr("Drill down: %1, step %2").arg(at.front().runName).arg(at.front().step));
        menu->addSeparator();
    } else if (at.size() > 1) {
        QMenu* runs = menu->addMenu(QObject::tr("Drill down at step %1").arg(at.front().step));
        runs->setToolTipsVisible(true);
        for (const RunStep& r : at) addDrill(runs, r, r.runName);
        menu->addSeparator();
    }
    QAction* log = menu->addAction(QObject::tr("Log scale"));
    log->setCheckable(true);
    log->setChecked(chart.logScale());
    QObject::connect(log, &QAction::toggled, &chart, &MetricChart::setLogScale);
    menu->addAction(QObject::tr("Smoothing\u2026"), &chart, [&chart] { askSmoothing(chart); });
    menu->addAction(QObject::tr("Y range\u2026"), &chart, [&chart] { askYRange(chart); });
    QAction* autoY =
        menu->addAction(QObject::tr("Automatic y range"), &chart, [&chart] { chart.setManualYRange(std::nullopt); });
    autoY->setEnabled(chart.manualYRange().has_value());
    QAction* reset = menu->addAction(QObject::tr("Reset zoom"), &chart, &MetricChart::resetXRange);
    reset->setEnabled(chart.zoomedXRange().has_value());
    menu->addSeparator();
    menu->addAction(QObject::tr("Save as PNG\u2026"), &chart, [&chart] { askSave(chart, false); });
    menu->addAction(QObject::tr("Save as SVG\u2026"), &chart, [&chart] { askSave(chart, true); });
    menu->addSeparator();
    menu->addAction(QObject::tr("Remove chart"), &chart, &MetricChart::removeRequested);
    menu->addSeparator();
    // What the metric is: the same text as the title's tooltip, kept open.
    const QString help = metricToolTip(chart.metric());
    QAction* about = menu->addAction(QObject::tr("What is %1?").arg(chart.title()), &chart, [&chart, help] {
        auto* box = new QMessageBox(QMessageBox::Information, chart.title(), help, QMessageBox::Close, &chart);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    });
    about->setToolTip(help);
    menu->setToolTipsVisible(true);
    return menu;
}

namespace {

// Whole or not at all (core/config/atomic_file.h): a chart saved again over
// the one in a draft keeps it if this save fails.
QString writeWhole(const QString& path, const QByteArray& bytes) {
    try {
        write_file_atomically(path.toStdString(), std::string_view(bytes.constData(), size_t(bytes.size())));
        return {};
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
}

}  // namespace

QString saveViewAsPng(QGraphicsView& view, const QString& path) {
    const QPixmap pixmap = view.grab();
    QBuffer png;
    if (pixmap.isNull() || !png.open(QIODevice::WriteOnly) || !pixmap.save(&png, "PNG"))
        return QObject::tr("cannot draw the chart as PNG for %1").arg(path);
    return writeWhole(path, png.data());
}

QString saveViewAsSvg(QGraphicsView& view, const QString& path, const QString& title, const QString& description) {
    QBuffer svg;
    svg.open(QIODevice::WriteOnly);
    QSvgGenerator generator;
    generator.setOutputDevice(&svg);
    generator.setSize(view.size());
    generator.setViewBox(QRect(QPoint(0, 0), view.size()));
    generator.setTitle(title);
    generator.setDescription(description);
    QPainter painter;
    if (!painter.begin(&generator)) return QObject::tr("cannot draw the chart as SVG for %1").arg(path);
    painter.setRenderHint(QPainter::Antialiasing);
    view.render(&painter, QRectF(QPointF(0, 0), view.size()), view.viewport()->rect());
    painter.end();
    return writeWhole(path, svg.data());
}

}  // namespace mlk
