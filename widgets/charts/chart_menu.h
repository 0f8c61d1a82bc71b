// A metric chart's context menu (the clicked run's step in the drill-down,
// log scale, smoothing, reset zoom, save as PNG or SVG, remove) and the exports behind it: PNG as shown on screen, SVG
// with the lines as vector polylines.
#pragma once

#include <QString>

#include <vector>

#include "widgets/charts/chart_tracker.h"

QT_BEGIN_NAMESPACE
class QGraphicsView;
class QMenu;
class QWidget;
QT_END_NAMESPACE

namespace mlk {

class MetricChart;

// The menu's actions act on `chart`; the caller owns the menu. at: the runs
// of the point right-clicked (one, or a seed group's), whose step the first
// item opens in the drill-down (a submenu picks one of a group's runs).
QMenu* createChartMenu(MetricChart& chart, QWidget* parent, std::vector<RunStep> at = {});

// The view as it is on screen. Both return why the file could not be
// written (the path and the system's reason), empty when it was.
QString saveViewAsPng(QGraphicsView& view, const QString& path);
// The view through QSvgGenerator: whatever paints by paint engine type
// (the line layer) gives vectors.
QString saveViewAsSvg(QGraphicsView& view, const QString& path, const QString& title, const QString& description);

}  // namespace mlk
