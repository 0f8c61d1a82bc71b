#include "widgets/charts/chart_menu.h"

#include <QFileDialog>
#include <QFileInfo>
#include <QGraphicsView>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QRegularExpression>
#include <QSvgGenerator>

#include "widgets/charts/metric_chart.h"

namespace mlk {

namespace {

void askSmoothing(MetricChart& chart) {
    bool ok = false;
    const double weight = QInputDialog::getDouble(&chart, QObject::tr("Smoothing"),
                                                  QObject::tr("EMA weight (0 = raw data, 0.99 = very smooth):"),
                                                  chart.smoothing(), 0, kMaxSmoothingWeight, 3, &ok);
    if (ok) chart.setSmoothing(weight);
}

void askSave(MetricChart& chart, bool svg) {
    QString base = chart.metric();
    base.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9_.-]")), QStringLiteral("_"));
    const QString path = QFileDialog::getSaveFileName(
        &chart, svg ? QObject::tr("Save chart as SVG") : QObject::tr("Save chart as PNG"),
        base + (svg ? ".svg" : ".png"), svg ? QObject::tr("SVG images (*.svg)") : QObject::tr("PNG images (*.png)"));
    if (path.isEmpty()) return;
    if (!(svg ? chart.saveSvg(path) : chart.savePng(path)))
        QMessageBox::warning(&chart, QObject::tr("Save chart"), QObject::tr("Could not write %1.").arg(path));
}

}  // namespace

QMenu* createChartMenu(MetricChart& chart, QWidget* parent) {
    auto* menu = new QMenu(parent);
    QAction* log = menu->addAction(QObject::tr("Log scale"));
    log->setCheckable(true);
    log->setChecked(chart.logScale());
    QObject::connect(log, &QAction::toggled, &chart, &MetricChart::setLogScale);
    menu->addAction(QObject::tr("Smoothing\u2026"), &chart, [&chart] { askSmoothing(chart); });
    QAction* reset = menu->addAction(QObject::tr("Reset zoom"), &chart, &MetricChart::resetXRange);
    reset->setEnabled(chart.zoomedXRange().has_value());
    menu->addSeparator();
    menu->addAction(QObject::tr("Save as PNG\u2026"), &chart, [&chart] { askSave(chart, false); });
    menu->addAction(QObject::tr("Save as SVG\u2026"), &chart, [&chart] { askSave(chart, true); });
    menu->addSeparator();
    menu->addAction(QObject::tr("Remove chart"), &chart, &MetricChart::removeRequested);
    return menu;
}

bool saveViewAsPng(QGraphicsView& view, const QString& path) {
    const QPixmap pixmap = view.grab();
    return !pixmap.isNull() && pixmap.save(path, "PNG");
}

bool saveViewAsSvg(QGraphicsView& view, const QString& path, const QString& title, const QString& description) {
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(view.size());
    generator.setViewBox(QRect(QPoint(0, 0), view.size()));
    generator.setTitle(title);
    generator.setDescription(description);
    QPainter painter;
    if (!painter.begin(&generator)) return false;
    painter.setRenderHint(QPainter::Antialiasing);
    view.render(&painter, QRectF(QPointF(0, 0), view.size()), view.viewport()->rect());
    painter.end();
    return QFileInfo(path).size() > 0;
}

}  // namespace mlk
