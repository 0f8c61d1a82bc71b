#include "widgets/panels/run_hover.h"

#include <QAbstractItemView>
#include <QCursor>
#include <QEvent>
#include <QTimer>

#include <utility>

namespace mlk {

RunHover::RunHover(QAbstractItemView* view, std::function<int64_t(const QModelIndex&)> runAt)
    : QObject(view), runAt_(std::move(runAt)) {
    view->setMouseTracking(true);  // entered() needs it
    view->viewport()->installEventFilter(this);
    connect(view, &QAbstractItemView::entered, this, [this](const QModelIndex& index) { hover(runAt_(index)); });
    connect(view, &QAbstractItemView::viewportEntered, this, [this] { hover(0); });
    // Rows that move under a still mouse (a run added on top, a re-sort, a
    // refresh) change the run it is on without a mouse event: asked again
    // once the view has laid the rows out.
    QAbstractItemModel* model = view->model();
    const auto again = [this, view] {
        if (recheckPending_) return;  // one look per batch of changes
        recheckPending_ = true;
        QTimer::singleShot(0, this, [this, view] {
            recheckPending_ = false;
            if (!view->viewport()->underMouse()) return;
            hover(runAt_(view->indexAt(view->viewport()->mapFromGlobal(QCursor::pos()))));
        });
    };
    connect(model, &QAbstractItemModel::rowsInserted, this, again);
    connect(model, &QAbstractItemModel::rowsRemoved, this, again);
    connect(model, &QAbstractItemModel::modelReset, this, again);
    connect(model, &QAbstractItemModel::layoutChanged, this, again);
    connect(model, &QAbstractItemModel::dataChanged, this, again);
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
