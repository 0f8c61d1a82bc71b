#include "widgets/panels/number_cell.h"

#include <QHeaderView>
#include <QTableWidget>

#include <cmath>

namespace mlk {

NumberCell::NumberCell(double value, const QString& text) : QTableWidgetItem(text, kType), value_(value) {
    setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
}

void NumberCell::setValue(double value, const QString& text) {
    value_ = value;
    setText(text);
}

bool NumberCell::operator<(const QTableWidgetItem& other) const {
    if (other.type() != kType) return QTableWidgetItem::operator<(other);
    const double theirs = static_cast<const NumberCell&>(other).value_;
    const bool mineMissing = std::isnan(value_), theirsMissing = std::isnan(theirs);
    if (mineMissing || theirsMissing) {
        if (mineMissing == theirsMissing) return false;
        // QTableWidget sorts descending by asking "other < this": read the
        // order from the header so the missing one ends up last either way.
        const QTableWidget* table = tableWidget();
        const bool ascending = !table || table->horizontalHeader()->sortIndicatorOrder() == Qt::AscendingOrder;
        return ascending ? theirsMissing : mineMissing;
    }
    return value_ < theirs;
}

}  // namespace mlk
