// Presentation mode's one setting for every live chart: on a projector the
// lines are drawn thicker and the titles, tick labels and legends larger.
// Charts read the scales when they draw and redraw on changed(); the window
// persists the switch (View > Presentation mode).
#pragma once

#include <QObject>

namespace mlk {

class ChartStyle : public QObject {
    Q_OBJECT
public:
    static constexpr double kPresentationLineScale = 2.5;
    static constexpr double kPresentationFontScale = 1.5;

    static ChartStyle& instance();

    void setPresentation(bool on);
    bool presentation() const { return presentation_; }
    double lineScale() const { return presentation_ ? kPresentationLineScale : 1.0; }
    double fontScale() const { return presentation_ ? kPresentationFontScale : 1.0; }

signals:
    void changed();

private:
    bool presentation_ = false;
};

}  // namespace mlk
