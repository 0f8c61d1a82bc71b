// A layout that places its items in a row and wraps them onto further rows
// when the row is narrower than they need, like words in a paragraph. The
// charts' toolbar uses it, so that a window with the configuration, probe and
// lessons docks open still fits a laptop screen (a one-row toolbar held the
// charts area at least 900 px wide). Each item keeps its size hint; a group
// that must stay together (a label and its field) is one widget.
#pragma once

#include <QLayout>
#include <QList>

#include <initializer_list>

namespace mlk {

class FlowLayout : public QLayout {
public:
    explicit FlowLayout(QWidget* parent = nullptr);
    ~FlowLayout() override;

    // A row's free width goes before the item at `index` when that item is
    // on the row and not its first (a toolbar's right-aligned part), else
    // it stays at the row's end.
    void setStretchBefore(int index) { stretchBefore_ = index; }

    void addItem(QLayoutItem* item) override;
    int count() const override { return int(items_.size()); }
    QLayoutItem* itemAt(int index) const override { return items_.value(index); }
    QLayoutItem* takeAt(int index) override;
    Qt::Orientations expandingDirections() const override { return {}; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;     // every item on one row
    QSize minimumSize() const override;  // the widest item
    void setGeometry(const QRect& rect) override;

private:
    // Lays the items out in `rect` (moving them when `apply`); returns the
    // height used.
    int arrange(const QRect& rect, bool apply) const;

    QList<QLayoutItem*> items_;
    int stretchBefore_ = -1;
};

// Widgets a flow must not part (a label and its field), in one row-widget
// under `parent`, for a FlowLayout to place as one item.
QWidget* keptTogether(QWidget* parent, std::initializer_list<QWidget*> widgets);

}  // namespace mlk
