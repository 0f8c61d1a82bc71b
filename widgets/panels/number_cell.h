// The one numeric table cell of the panels (run browser, metric summary): it
// sorts by its number, not by its text, and a cell without a number (missing,
// NaN) sorts after every number in either order, so the runs that have a
// value stay on top whichever way the user sorts. Infinities sort as numbers.
#pragma once

#include <QString>
#include <QTableWidgetItem>

#include <limits>

namespace mlk {

class NumberCell : public QTableWidgetItem {
public:
    static constexpr int kType = QTableWidgetItem::UserType + 1;
    static constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

    // Right-aligned, as numbers are read.
    explicit NumberCell(double value = kMissing, const QString& text = {});

    double value() const { return value_; }
    void setValue(double value, const QString& text);

    bool operator<(const QTableWidgetItem& other) const override;
    QTableWidgetItem* clone() const override { return new NumberCell(*this); }

private:
    double value_;
};

}  // namespace mlk
