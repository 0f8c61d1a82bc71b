// The run browser's config-diff panel: a title line, a "differences only"
// switch and a table whose rows are config keys (schema order, then any key
// a stored config has that this build does not know) and whose columns are a
// reference config and the configs compared with it. A value that differs
// from the reference is highlighted (palette::changedSetting), its key bold;
// a value its run does not read (config_ignored_keys) is grey with why, and
// is not highlighted when the reference does not read it either. Where a
// column's run was made, when one recorded it, is a first row, "(ran on)".
#pragma once

#include <QColor>
#include <QList>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <string>

class QCheckBox;
class QLabel;
class QTableWidget;

namespace mlk {

class ConfigDiffView : public QWidget {
    Q_OBJECT
public:
    struct Column {
        QString title;
        QColor colour;           // swatch in the header; invalid = none
        std::string configJson;  // as stored; "" = every default
        std::string machine;     // where the run was made; "" = not recorded
    };

    explicit ConfigDiffView(QWidget* parent = nullptr);

    // columns[0] is the reference; an empty list clears the table.
    // `title` is rich text shown above the table.
    void setColumns(const QString& title, const QList<Column>& columns);

    void setDifferencesOnly(bool on);
    bool differencesOnly() const;
    QStringList keys() const;  // keys of the rows shown, in order
    QTableWidget* table() const { return table_; }

private:
    void rebuild();

    QList<Column> columns_;
    QLabel* title_ = nullptr;
    QCheckBox* only_ = nullptr;
    QTableWidget* table_ = nullptr;
};

}  // namespace mlk
