// The Qt Widgets and Qt Charts headers nearly every widget file includes,
// precompiled once per library (widgets/CMakeLists.txt): parsing them is most
// of a widget file's compile time (a 77-line file spends ~25 s of CPU in the
// front end alone), and a clean build of the tree on two cores is what CI
// waits for. Only Qt and standard headers: a project header here would make
// every file depend on it.
#pragma once

#include <QApplication>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QColor>
#include <QComboBox>
#include <QFile>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QImage>
#include <QLabel>
#include <QLegend>
#include <QLineSeries>
#include <QList>
#include <QLogValueAxis>
#include <QMenu>
#include <QPainter>
#include <QPixmap>
#include <QPointF>
#include <QPushButton>
#include <QScatterSeries>
#include <QSpinBox>
#include <QString>
#include <QStringList>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QValueAxis>
#include <QWidget>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
