#include "widgets/charts/chart_style.h"

namespace mlk {

ChartStyle& ChartStyle::instance() {
    static ChartStyle style;
    return style;
}

void ChartStyle::setPresentation(bool on) {
    if (on == presentation_) return;
    presentation_ = on;
    emit changed();
}

}  // namespace mlk
