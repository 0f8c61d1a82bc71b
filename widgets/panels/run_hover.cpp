#include "widgets/panels/run_hover.h"

#include <QAbstractItemView>
#include <QEvent>

#include <utility>

namespace mlk {

RunHover::RunHover(QAbstractItemView* view, std::function<int64_t(const QModelIndex&)> runAt)
    : QObject(view), runAt_(std::move(runAt)) {
    view->setMouseTracking(true);  // entered() needs it
    view->viewport()->installEventFilter(this);
    connect(view, &QAbstractItemView::entered, this, [this](const QModelIndex& index) { hover(runAt_(index)); });
    connect(view, &QAbstractItemView::viewportEntered, this, [this] { hover(0); });
}

bool RunHover::eventFilter(QObject* watched, QEvent* event) {
    if (event->type() == QEvent::Leave) hover(0);
    return QObject::eventFilter(watched, event);
}

void RunHover::hover(int64_t runId) {
    if (runId == hovered_) return;
    hovered_ = runId;
    emit runHovered(runId);
}

}  // namespace mlk
