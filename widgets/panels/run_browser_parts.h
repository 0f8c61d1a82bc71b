// Pieces shared by the run browser's source files (run_browser.cpp,
// run_browser_edits.cpp) and its config-diff panel: not a public interface.
#pragma once

#include <QAbstractItemView>
#include <QColor>
#include <QHeaderView>
#include <QIcon>
#include <QTableWidget>

namespace mlk::run_browser {

// The run id, on every item of a row.
constexpr int kIdRole = Qt::UserRole + 1;

// A run's colour as a small rounded square, for cells and headers.
QIcon colourSwatch(const QColor& colour);

// Exposes the view state: a poll must not destroy an open name editor.
class RunTable : public QTableWidget {
public:
    using QTableWidget::QTableWidget;
    bool editing() const { return state() == QAbstractItemView::EditingState; }
};

// Qt 6.4's header neither elides a long title (whatever its textElideMode)
// nor aligns it to a side: centred and cut at both ends, a run's title in the
// config diff lost its "#id" and the end of its name, where sweep names
// differ. This header cuts a title in its middle when painting it; the item
// keeps the whole title.
class MiddleElidingHeader : public QHeaderView {
public:
    using QHeaderView::QHeaderView;
    // The section's title as painted at its current width.
    QString shownText(int logicalIndex) const;

protected:
    void initStyleOptionForIndex(QStyleOptionHeader* option, int logicalIndex) const override;
};

}  // namespace mlk::run_browser
