// Pieces shared by the run browser's source files (run_browser.cpp,
// run_browser_edits.cpp) and its config-diff panel: not a public interface.
#pragma once

#include <QAbstractItemView>
#include <QColor>
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

}  // namespace mlk::run_browser
