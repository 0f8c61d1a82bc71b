// A metric chart's legend, drawn in its scene under the x axis: one entry per
// run or seed group, a swatch in its colour and a label, flowed into rows.
//
// Qt Charts' bottom legend gives every entry an equal share of one row and
// cuts each label at the right: six runs of a sweep in half a laptop's chart
// area are six bare colour boxes. Here the labels stay whole while they fit
// in the rows the chart can spare; past that the entries take equal columns
// in those rows, each label "#id" first and its name cut to fit; where a
// column cannot hold an id and a few letters, the labels are the ids; and past
// what even the ids fit, the last cell says how many more there are. Being in
// the scene, the legend is in every PNG and SVG export of the chart.
#pragma once

#include <QColor>
#include <QFont>
#include <QGraphicsObject>
#include <QRectF>
#include <QString>
#include <QStringList>

#include <optional>
#include <utility>
#include <vector>

namespace mlk {

struct LegendEntry {
    qint64 runId = 0;  // a run's, or a seed group's first member's
    QString groupKey;  // a seed group's key; empty for a run
    QColor colour;
    QString name;         // what tells it apart from the chart's other entries (legendLabels)
    QString nameWithId;   // the same, "#id " first
    QString whole;        // its whole name, shown on hover
    bool dimmed = false;  // hidden: kept, faint, so a click brings it back
    bool group() const { return !groupKey.isEmpty(); }
};

class LegendItem : public QGraphicsObject {
    Q_OBJECT

public:
    enum class Names { whole, idsFirst, idsOnly };
    static constexpr int kMore = -1;  // entryRect(kMore): the "+N more" cell

    explicit LegendItem(QGraphicsItem* parent = nullptr);

    void setEntries(std::vector<LegendEntry> entries);
    const std::vector<LegendEntry>& entries() const { return entries_; }
    void setFont(const QFont& font);
    void setTextColour(const QColor& colour);
    // One row's height in the current font.
    double rowHeight() const;
    // Lays the entries out in `width`, in at most `maxRows` rows, and returns
    // the height they take (0 without entries).
    double layOut(double width, int maxRows);

    // Read-outs, as drawn.
    Names names() const { return names_; }
    int rows() const { return rows_; }
    QStringList labels() const;            // in order; "+N more" last when some did not fit
    QRectF entryRect(int entry) const;     // in item coordinates; empty when not shown
    QString toolTipAt(QPointF pos) const;  // item coordinates

    QRectF boundingRect() const override;
    void paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) override;

signals:
    void runClicked(qint64 runId);
    void groupClicked(const QString& key);
    // The mouse came onto an entry (its run, or its group's key) or left it
    // (0 and an empty key).
    void hovered(qint64 runId, const QString& groupKey);

protected:
    void hoverMoveEvent(QGraphicsSceneHoverEvent* event) override;
    void hoverLeaveEvent(QGraphicsSceneHoverEvent* event) override;
    void mousePressEvent(QGraphicsSceneMouseEvent* event) override;
    void mouseReleaseEvent(QGraphicsSceneMouseEvent* event) override;

private:
    struct Cell {
        int entry = kMore;
        QRectF rect;
        QString label;
    };
    double swatchWidth() const;
    bool flowWhole(double width, int maxRows);
    void grid(double width, int maxRows);
    int cellAt(QPointF pos) const;
    void hover(int cell);

    std::vector<LegendEntry> entries_;
    QFont font_;
    QColor text_;
    std::vector<Cell> cells_;
    std::optional<std::pair<double, int>> laidOut_;  // the width and rows of cells_
    double width_ = 0, height_ = 0;
    int rows_ = 0;
    Names names_ = Names::whole;
    int pressed_ = -2;  // the cell a left press went down on
    int hovered_ = -1;  // the entry under the mouse
};

}  // namespace mlk
