#include "widgets/data/palette.h"

namespace mlk::palette {

const QList<QColor>& runColours() {
    // d3's category10 (also TensorBoard's and matplotlib's default cycle):
    // familiar to the users, distinct on white, readable as thin lines.
    static const QList<QColor> colours = {QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
                                          QColor(0xd6, 0x27, 0x28), QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b),
                                          QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22),
                                          QColor(0x17, 0xbe, 0xcf)};
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
    return QColor(0x61, 0x61, 0x61);
}

QColor nonFiniteMarker() { return QColor(0xd3, 0x2f, 0x2f); }
QColor floorMarker() { return QColor(0x75, 0x75, 0x75); }
QColor neutralInk() { return QColor(0x61, 0x61, 0x61); }
QColor changedSetting() { return QColor(0xff, 0xf3, 0xc4); }

}  // namespace mlk::palette
