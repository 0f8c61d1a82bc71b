// A sweep summary's numbers as QString for the workbench's sweep table and
// the sweep report: core's spread_text / delta_text (which the CLI prints
// too), with an em dash where a figure is undefined.
#pragma once

#include <QString>

#include "core/metrics/sweep_stats.h"

namespace mlk {

// "0.512 ± 0.12" (the sd over seeds; "0.512" with one seed, "—" with none).
QString sweepSpreadText(const Spread& s);
// "+0.21 [+0.12, +0.30]"; "—" where undefined.
QString sweepDeltaText(double delta, const Interval& ci);
// A run's verdict in a cell: "yes (step 40)", "no", "—" (not evaluated).
QString sweepVerdictCell(const Verdict& v);

}  // namespace mlk
