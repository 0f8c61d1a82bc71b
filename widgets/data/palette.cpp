#include "widgets/data/palette.h"

#include <algorithm>
#include <cmath>

namespace mlk::palette {

const QList<QColor>& runColours() {
    // Okabe & Ito's colour-blind-safe set (Wong, Nature Methods 2011), in an
    // order that keeps the first runs far apart: category10's brown and red
    // look alike, and to a red-green colour-blind user so do its green and
    // orange. Its yellow is left out (unreadable as a thin line on white),
    // its black is a dark grey (axes are black), and Paul Tol's purple makes
    // eight. Every pair stays apart for normal, deuteranope and protanope
    // vision (run_data_test checks it by simulation). The sky blue sits
    // last but one, away from the first blue by five places: a sweep of
    // five seeds draws its configurations in runs 1, 6, 11, ... (indices 0,
    // 5, 2, 7, 4), and its first two bands would look alike with the sky blue
    // sixth.
    static const QList<QColor> colours = {QColor(0x00, 0x72, 0xb2), QColor(0xd5, 0x5e, 0x00), QColor(0x00, 0x9e, 0x73),
                                          QColor(0xcc, 0x79, 0xa7), QColor(0xe6, 0x9f, 0x00), QColor(0x44, 0x44, 0x44),
                                          QColor(0x56, 0xb4, 0xe9), QColor(0xaa, 0x33, 0x77)};
    return colours;
}

QColor runColour(qint64 runId) {
    const qint64 n = runColours().size();
    return runColours()[static_cast<qsizetype>(((runId - 1) % n + n) % n)];
}

QColor statusColour(std::string_view status) {
    if (status == "finished") return QColor(0x2e, 0x7d, 0x32);
    if (status == "failed") return QColor(0xc6, 0x28, 0x28);
    if (status == "running") return QColor(0x15, 0x65, 0xc0);
    if (status == "diverged") return QColor(0x8e, 0x24, 0xaa);
    if (status == "interrupted") return QColor(0xe6, 0x51, 0x00);
    return QColor(0x61, 0x61, 0x61);
}

QColor nonFiniteMarker() { return QColor(0xd3, 0x2f, 0x2f); }
QColor floorMarker() { return QColor(0x75, 0x75, 0x75); }
QColor neutralInk() { return QColor(0x61, 0x61, 0x61); }
QColor changedSetting() { return QColor(0xff, 0xf3, 0xc4); }
QColor secondaryText() { return QColor(0x55, 0x55, 0x55); }
QColor routerFlip() { return QColor(0x6a, 0x1b, 0x9a); }
QColor routerFlipFill() { return QColor(0xf3, 0xe5, 0xf5); }
QColor codeBackground() { return QColor(0xf1, 0xf1, 0xf1); }
QColor highlightMark() { return QColor(0xe6, 0x51, 0x00); }
QColor lessonAccent() { return QColor(0xe0, 0x8a, 0x00); }

Tone errorTone() { return {QColor(0xb7, 0x1c, 0x1c), QColor(0xd3, 0x2f, 0x2f), QColor(0xff, 0xf5, 0xf5)}; }
Tone warningTone() { return {QColor(0x8a, 0x61, 0x00), QColor(0xe0, 0xa0, 0x00), QColor(0xff, 0xfb, 0xea)}; }
Tone okTone() { return {QColor(0x2e, 0x7d, 0x32), QColor(0x81, 0xc7, 0x84), QColor(0xed, 0xf7, 0xed)}; }
Tone infoTone() { return {QColor(0x0d, 0x3c, 0x61), QColor(0x90, 0xca, 0xf9), QColor(0xe8, 0xf4, 0xfd)}; }

QColor mismatchHeat(double d) {
    if (std::isnan(d)) return QColor(0xbd, 0xbd, 0xbd);
    const double lo = -6.0, hi = 0.0;  // log10 range
    const double t = std::clamp(d <= 0 ? 0.0 : (std::log10(d) - lo) / (hi - lo), 0.0, 1.0);
    const QColor a(0xff, 0xff, 0xff), b = nonFiniteMarker();
    auto mix = [t](float x, float y) { return static_cast<float>(x + t * (y - x)); };
    return QColor::fromRgbF(mix(a.redF(), b.redF()), mix(a.greenF(), b.greenF()), mix(a.blueF(), b.blueF()));
}

QColor inkOn(const QColor& background) { return background.lightnessF() < 0.62 ? Qt::white : Qt::black; }

}  // namespace mlk::palette
