// Which run the mouse is on in a list of runs (an item view), and 0 once it
// is on no run or off the list: the charts bring that run's line forward
// (ChartGrid::setEmphasis). The run list and the sweep table both say it.
// Rows that change under a still mouse are asked again, so a run added on
// top of the list is not left faded behind the one that was there. The
// view keeps its model for its life.
#pragma once

#include <QObject>

#include <cstdint>
#include <functional>

QT_BEGIN_NAMESPACE
class QAbstractItemView;
class QModelIndex;
QT_END_NAMESPACE

namespace mlk {

class RunHover : public QObject {
    Q_OBJECT

public:
    // runAt: the run of a row (0 for a row that is no run).
    RunHover(QAbstractItemView* view, std::function<int64_t(const QModelIndex&)> runAt);

signals:
    void runHovered(int64_t runId);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void hover(int64_t runId);

    std::function<int64_t(const QModelIndex&)> runAt_;
    int64_t hovered_ = 0;
    bool recheckPending_ = false;
};

}  // namespace mlk
