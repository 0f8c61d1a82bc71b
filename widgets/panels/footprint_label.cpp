#include "widgets/panels/footprint_label.h"

#include "core/rl/footprint.h"
#include "widgets/data/palette.h"

namespace mlk {

FootprintLabel::FootprintLabel(QWidget* parent) : QLabel(parent) {
    setObjectName(QStringLiteral("modelFootprint"));
    setWordWrap(true);
    setStyleSheet(QStringLiteral("color: %1;").arg(palette::secondaryText().name()));
    setToolTip(
        tr("Parameters of the model (active: used per token, an MoE layer counting its top-k experts), the memory of "
           "an RL session (parameters, gradients, AdamW moments, both engines' copies, the activations and KV cache "
           "of one batch) and one RL step's time estimated from its floating-point work and a matmul benchmark run "
           "once on this machine."));
}

void FootprintLabel::showFor(const Config& c, bool valid) {
    if (!valid) {
        setText(tr("Model footprint: fix the errors above to see it."));
        return;
    }
    setText(tr("Model: %1").arg(QString::fromStdString(footprint_text(model_footprint(c)))));
}

}  // namespace mlk
