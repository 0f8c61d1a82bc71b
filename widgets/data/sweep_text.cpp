#include "widgets/data/sweep_text.h"

#include <cmath>

namespace mlk {

namespace {

const QString kDash = QStringLiteral("\u2014");

QString number(double v, int significant) { return QString::fromStdString(value_text(v, significant)); }

QString signedNumber(double v) { return (v >= 0 ? QStringLiteral("+") : QString()) + number(v, 3); }

}  // namespace

QString sweepSpreadText(const Spread& s) {
    if (s.n == 0 || !std::isfinite(s.mean)) return kDash;
    if (s.n < 2 || !std::isfinite(s.std)) return number(s.mean, 3);
    return number(s.mean, 3) + QStringLiteral(" \u00b1 ") + number(s.std, 2);
}

bool sweepDeltaSignificant(const Interval& ci) {
    return std::isfinite(ci.lo) && std::isfinite(ci.hi) && (ci.lo > 0 || ci.hi < 0);
}

QString sweepDeltaText(double d, const Interval& ci) {
    if (!std::isfinite(d)) return kDash;
    QString t = signedNumber(d);
    if (std::isfinite(ci.lo) && std::isfinite(ci.hi))
        t += QStringLiteral(" [") + signedNumber(ci.lo) + QStringLiteral(", ") + signedNumber(ci.hi) + QStringLiteral("]");
    return t;
}

QString sweepVerdictCell(const Verdict& v) {
    if (!v.evaluated) return kDash;
    if (!v.detected) return QStringLiteral("no");
    return v.step >= 0 ? QStringLiteral("yes (step %1)").arg(v.step) : QStringLiteral("yes");
}

}  // namespace mlk
