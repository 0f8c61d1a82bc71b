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

// Run status: finished, failed, running, diverged, interrupted, and anything else.
QColor statusColour(std::string_view status);

// Markers and highlights.
QColor nonFiniteMarker();  // NaN / Inf markers at a plot edge
QColor floorMarker();      // values <= 0 held at a log axis' floor
QColor neutralInk();       // reference lines, secondary text
QColor changedSetting();   // background of a setting that differs from the baseline
QColor secondaryText();    // hints, notes and empty-state text beside the primary text
QColor routerFlip();       // a position where the two engines routed to different experts
QColor routerFlipFill();   // behind a table row whose routes flipped (routerFlip ink on it)
QColor codeBackground();   // behind token text set in a fixed-width font
QColor highlightMark();    // a token singled out in a plot: the step's worst ones, the one being explained
QColor lessonAccent();     // the chart a lesson says to read, and that lesson's hint

// How a message reads: its text, the outline of the field it marks, and the
// fill behind that field.
struct Tone {
    QColor ink, border, fill;
};
Tone errorTone();    // an invalid setting, a failed load
Tone warningTone();  // valid, but probably not what the user meant
Tone okTone();       // the configuration is valid
Tone infoTone();     // a neutral banner

// The per-token mismatch scale |lp_roll - lp_train|: white at <= 1e-6, red at
// >= 1, log-spaced between; grey for a token without a value.
QColor mismatchHeat(double absLogpDiff);
// Black or white, whichever reads better on `background`.
QColor inkOn(const QColor& background);

}  // namespace mlk::palette
