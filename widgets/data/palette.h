// Every colour the workbench and its reports draw with, in one place: run
// colours (a run's default colour depends on its id only, so it is the same
// in every chart, table and report) and the few colours that carry a meaning
// (run status, NaN/Inf markers, a changed setting).
#pragma once

#include <QColor>
#include <QList>

#include <string_view>

namespace mlk::palette {

// The run colours, in the order consecutive run ids take them.
const QList<QColor>& runColours();
// Default colour of run `runId` (ids start at 1).
QColor runColour(qint64 runId);

// Run status: finished, failed, running, and anything else.
QColor statusColour(std::string_view status);

// Markers and highlights.
QColor nonFiniteMarker();  // NaN / Inf markers at a plot edge
QColor floorMarker();      // values <= 0 held at a log axis' floor
QColor neutralInk();       // reference lines, secondary text
QColor changedSetting();   // background of a setting that differs from the baseline

}  // namespace mlk::palette
