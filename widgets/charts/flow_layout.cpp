#include "widgets/charts/flow_layout.h"

#include <QHBoxLayout>
#include <QWidget>

#include <algorithm>

namespace mlk {

QWidget* keptTogether(QWidget* parent, std::initializer_list<QWidget*> widgets) {
    auto* group = new QWidget(parent);
    auto* line = new QHBoxLayout(group);
    line->setContentsMargins(0, 0, 0, 0);
    for (QWidget* w : widgets) {
        w->setParent(group);
        line->addWidget(w);
    }
    return group;
}

FlowLayout::FlowLayout(QWidget* parent) : QLayout(parent) {}

FlowLayout::~FlowLayout() {
    while (QLayoutItem* item = takeAt(0)) delete item;
}

void FlowLayout::addItem(QLayoutItem* item) { items_.append(item); }

QLayoutItem* FlowLayout::takeAt(int index) {
    if (index < 0 || index >= items_.size()) return nullptr;
    return items_.takeAt(index);
}

int FlowLayout::heightForWidth(int width) const { return arrange(QRect(0, 0, width, 0), false); }

QSize FlowLayout::sizeHint() const {
    int width = 0, height = 0, shown = 0;
    for (const QLayoutItem* item : items_) {
        if (item->isEmpty()) continue;
        width += item->sizeHint().width();
        height = std::max(height, item->sizeHint().height());
        ++shown;
    }
    const QMargins m = contentsMargins();
    return QSize(width + std::max(0, shown - 1) * spacing() + m.left() + m.right(), height + m.top() + m.bottom());
}

QSize FlowLayout::minimumSize() const {
    QSize size;
    for (const QLayoutItem* item : items_)
        if (!item->isEmpty()) size = size.expandedTo(item->sizeHint());
    const QMargins m = contentsMargins();
    return size.grownBy(m);
}

void FlowLayout::setGeometry(const QRect& rect) {
    QLayout::setGeometry(rect);
    arrange(rect, true);
}

int FlowLayout::arrange(const QRect& rect, bool apply) const {
    const QRect area = rect.marginsRemoved(contentsMargins());
    const int gap = std::max(0, spacing());
    int top = area.top();
    qsizetype first = 0;
    while (first < items_.size()) {
        // One row: as many items as fit (at least one).
        qsizetype end = first;
        int used = 0, height = 0;
        for (; end < items_.size(); ++end) {
            const QLayoutItem* item = items_[end];
            if (item->isEmpty()) continue;
            const int width = item->sizeHint().width() + (used > 0 ? gap : 0);
            if (used > 0 && used + width > area.width()) break;
            used += width;
            height = std::max(height, item->sizeHint().height());
        }
        if (apply) {
            const int free = std::max(0, area.width() - used);
            int x = area.left();
            bool placed = false;
            for (qsizetype i = first; i < end; ++i) {
                QLayoutItem* item = items_[i];
                if (item->isEmpty()) continue;
                if (placed) x += gap;
                if (placed && i == stretchBefore_) x += free;
                const QSize size = item->sizeHint().boundedTo(QSize(area.width(), height));
                item->setGeometry(QRect(QPoint(x, top + (height - size.height()) / 2), size));
                x += size.width();
                placed = true;
            }
        }
        top += height + (end < items_.size() ? gap : 0);
        first = end;
    }
    return top - area.top() + contentsMargins().top() + contentsMargins().bottom();
}

}  // namespace mlk
