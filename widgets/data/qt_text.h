// The two conversions every widget and the report make when they put core
// data on screen: a UTF-8 std::string as a QString, and a number as the run
// statistics print it everywhere (value_text: %g at `significant` digits;
// "NaN", "inf", "-inf"), so a figure reads the same in a panel, a report and
// the CLI.
#pragma once

#include <QString>

#include <string_view>

#include "core/metrics/run_stats.h"

namespace mlk {

inline QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

inline QString num(double v, int significant = 5) { return qs(value_text(v, significant)); }

}  // namespace mlk
