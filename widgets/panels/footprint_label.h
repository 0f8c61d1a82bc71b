// The config form's line under the Model section: parameters, memory and the
// estimated time of one RL step of the configuration as edited
// (core/rl/footprint.h), so a model being built shows its cost before Start.
#pragma once

#include <QLabel>

#include "core/config/settings.h"

namespace mlk {

class FootprintLabel : public QLabel {
    Q_OBJECT
public:
    explicit FootprintLabel(QWidget* parent = nullptr);
    // The footprint of `c`; a config that does not validate has none, and
    // the label says so instead of showing numbers for a model that cannot
    // be built.
    void showFor(const Config& c, bool valid);
};

}  // namespace mlk
