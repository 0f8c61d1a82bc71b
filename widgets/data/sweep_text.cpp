#include "widgets/data/sweep_text.h"

namespace mlk {

namespace {

const QString kDash = QStringLiteral("\u2014");

QString orDash(const std::string& text) { return text.empty() ? kDash : QString::fromStdString(text); }

}  // namespace

QString sweepSpreadText(const Spread& s) { return orDash(spread_text(s, "\u00b1")); }

QString sweepDeltaText(double d, const Interval& ci) { return orDash(delta_text(d, ci)); }

QString sweepVerdictCell(const Verdict& v) {
    if (!v.evaluated) return kDash;
    if (!v.detected) return QStringLiteral("no");
    return v.step >= 0 ? QStringLiteral("yes (step %1)").arg(v.step) : QStringLiteral("yes");
}

}  // namespace mlk
