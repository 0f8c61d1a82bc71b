// The conversions every widget and the report make when they put core data
// on screen: a UTF-8 std::string as a QString; a number as the run
// statistics print it everywhere (value_text: %g at `significant` digits;
// "NaN", "inf", "-inf"), so a figure reads the same in a panel, a report and
// the CLI; and a stored time.
#pragma once

#include <QString>

#include <string_view>

#include "core/metrics/run_stats.h"

namespace mlk {

inline QString qs(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

inline QString num(double v, int significant = 5) { return qs(value_text(v, significant)); }

// When a run or sweep was created, from the store's ISO-8601 UTC text. On
// screen in the user's local time to the minute, as a file manager shows
// times; in reports in UTC to the second ("2026-11-29 11:37:10"), under a
// heading that says UTC, since a report is read in other time zones. Text
// that is not such a time is shown as it is.
QString localTimeText(std::string_view iso);
QString utcTimeText(std::string_view iso);

// One notation for numbers whatever the user's locale: the configs, the CLI,
// the exports, the charts and num() all write "0.5", so Qt's spin boxes must
// too (under de_DE a verdict threshold of 10 would read "10,000"). Called once a
// QApplication exists: it takes the C library's locale from the user's, where
// printf and strtod write and read "0,5". The core's conversions do not
// depend on that (core/config/number_text.h); putting LC_NUMERIC back, as
// Qt's documentation advises, keeps any other one in the process so.
void useOneNumberNotation();

}  // namespace mlk
