#include "widgets/charts/legend_item.h"

#include <QCursor>
#include <QFontMetricsF>
#include <QGraphicsSceneHoverEvent>
#include <QGraphicsSceneMouseEvent>
#include <QPainter>

#include <algorithm>
#include <cmath>
#include <utility>

namespace mlk {

namespace {

constexpr double kGap = 4;        // between a swatch and its label
constexpr double kSpacing = 12;   // between entries in a row
constexpr double kTopGap = 2;     // between the x axis' labels and the first row
constexpr int kDimmedAlpha = 90;  // a hidden run's label and swatch
constexpr int kMoreInTip = 25;    // names listed in the "+N more" tooltip

QString idLabel(const LegendEntry& entry) { return QStringLiteral("#%1").arg(entry.runId); }

// What every entry's name begins and ends with, cut back to a separator
// ("miles-dense-token-is seeds" and "miles-dense-token-is-mis seeds" share
// "miles-dense-token-" and " seeds"): what a cut name drops first, as it tells
// no entry from another. Zeros for fewer than two entries.
struct Shared {
    qsizetype prefix = 0, suffix = 0;
};
Shared sharedEnds(const std::vector<LegendEntry>& entries) {
    if (entries.size() < 2) return {};
    const auto separator = [](QChar c) { return QStringLiteral(" -_=,").contains(c); };
    QString first = entries.front().name;
    qsizetype p = first.size(), q = first.size();
    for (const LegendEntry& e : entries) {
        qsizetype n = 0;
        while (n < p && n < e.name.size() && first[n] == e.name[n]) ++n;
        p = n;
        qsizetype m = 0;
        while (m < q && m < e.name.size() && first[first.size() - 1 - m] == e.name[e.name.size() - 1 - m]) ++m;
        q = m;
    }
    while (p > 0 && !separator(first[p - 1])) --p;
    while (q > 0 && !separator(first[first.size() - q])) --q;
    for (const LegendEntry& e : entries)
        if (p + q >= e.name.size()) return {};  // some name is all shared: nothing left to show
    return {p, q};
}

// "#id name" in `width`: the id whole; where the names share a start or an
// end, what lies between (with the shared end where it fits); else the
// name's last word (what tells a sweep's seeds apart, "seed=5"), then as much
// of the rest as fits, cut at its end.
QString idAndName(const LegendEntry& entry, const QFontMetricsF& metrics, double width, Shared shared) {
    const QString id = idLabel(entry) + QLatin1Char(' ');
    if (!entry.nameWithId.startsWith(id)) return metrics.elidedText(entry.nameWithId, Qt::ElideRight, width);
    const QString name = entry.nameWithId.mid(id.size());
    const double room = width - metrics.horizontalAdvance(id);
    if (metrics.horizontalAdvance(name) <= room) return entry.nameWithId;
    if ((shared.prefix > 0 || shared.suffix > 0) && entry.name == name) {
        const QString ellipsis(QChar(0x2026));
        const QString head = shared.prefix > 0 ? ellipsis : QString();
        const QString core = name.mid(shared.prefix, name.size() - shared.prefix - shared.suffix);
        for (const QString& tail :
             {shared.suffix > 0 ? name.right(shared.suffix) : QString(), shared.suffix > 0 ? ellipsis : QString()})
            if (metrics.horizontalAdvance(head + core + tail) <= room) return id + head + core + tail;
        return id + metrics.elidedText(head + core, Qt::ElideMiddle, room);
    }
    const qsizetype space = name.lastIndexOf(QLatin1Char(' '));
    const QString last = name.mid(space + 1);
    const double lastWidth = metrics.horizontalAdvance(QStringLiteral("\u2026 ") + last);
    if (space < 0 || lastWidth > room) return id + metrics.elidedText(name, Qt::ElideMiddle, room);
    const QString head = metrics.elidedText(name.left(space) + QStringLiteral("\u2026"), Qt::ElideRight,
                                            room - metrics.horizontalAdvance(QLatin1Char(' ') + last));
    return id + head + QLatin1Char(' ') + last;
}

}  // namespace

LegendItem::LegendItem(QGraphicsItem* parent) : QGraphicsObject(parent) {
    setAcceptHoverEvents(true);
    setAcceptedMouseButtons(Qt::LeftButton);
}

void LegendItem::setEntries(std::vector<LegendEntry> entries) {
    const auto same = [](const LegendEntry& a, const LegendEntry& b) {
        return a.runId == b.runId && a.groupKey == b.groupKey && a.colour == b.colour && a.name == b.name &&
               a.nameWithId == b.nameWithId && a.whole == b.whole && a.dimmed == b.dimmed;
    };
    if (std::equal(entries.begin(), entries.end(), entries_.begin(), entries_.end(), same)) return;
    // The hovered entry by what it is: its index may name another one now.
    const int was = hovered_;
    const auto wasHovered = [&](const LegendEntry& e) {
        return e.runId == entries_[was].runId && e.groupKey == entries_[was].groupKey;
    };
    const auto still = was < 0 ? entries.end() : std::find_if(entries.begin(), entries.end(), wasHovered);
    hovered_ = still == entries.end() ? -1 : int(still - entries.begin());
    entries_ = std::move(entries);
    laidOut_.reset();
    if (was >= 0 && hovered_ < 0) emit hovered(0, {});
    update();
}

void LegendItem::setFont(const QFont& font) {
    if (font == font_) return;
    font_ = font;
    laidOut_.reset();
    update();
}

// Set on every redraw (syncEntries): unchanged, it repaints nothing.
void LegendItem::setTextColour(const QColor& colour) {
    if (colour == text_) return;
    text_ = colour;
    update();
}

double LegendItem::rowHeight() const { return std::ceil(QFontMetricsF(font_).height()) + 3; }

double LegendItem::swatchWidth() const { return std::round(QFontMetricsF(font_).height() * 1.3); }

double LegendItem::layOut(double width, int maxRows) {
    width = std::max(0.0, width);
    maxRows = std::max(1, maxRows);
    // Every redraw of a live chart asks: the same answer needs no new layout
    // (nor a repaint of the scene).
    if (laidOut_ == std::pair(width, maxRows)) return height_;
    laidOut_ = std::pair(width, maxRows);
    prepareGeometryChange();
    cells_.clear();
    rows_ = 0;
    width_ = width;
    if (!entries_.empty() && !flowWhole(width_, maxRows)) grid(width_, maxRows);
    height_ = rows_ > 0 ? kTopGap + rows_ * rowHeight() : 0;
    update();
    return height_;
}

// The labels whole, in rows as long as they fit, each row centred.
bool LegendItem::flowWhole(double width, int maxRows) {
    const QFontMetricsF metrics(font_);
    const double row = rowHeight(), swatch = swatchWidth();
    std::vector<std::vector<Cell>> rows;
    double x = 0;
    for (int i = 0; i < int(entries_.size()); ++i) {
        const double w = swatch + kGap + metrics.horizontalAdvance(entries_[i].name);
        if (w > width) return false;
        if (rows.empty() || x + w > width) {
            if (int(rows.size()) == maxRows) return false;
            rows.emplace_back();
            x = 0;
        }
        rows.back().push_back({i, QRectF(x, kTopGap + (rows.size() - 1) * row, w, row), entries_[i].name});
        x += w + kSpacing;
    }
    for (std::vector<Cell>& cellsOfRow : rows) {
        const double used = cellsOfRow.back().rect.right();
        for (Cell& cell : cellsOfRow) {
            cell.rect.translate((width - used) / 2, 0);
            cells_.push_back(std::move(cell));
        }
    }
    rows_ = int(rows.size());
    names_ = Names::whole;
    return true;
}

// Equal columns over every row the chart spares: "#id", the name's last word
// and what fits of the rest (idAndName), or the ids alone where a column
// cannot hold more.
void LegendItem::grid(double width, int maxRows) {
    const QFontMetricsF metrics(font_);
    const double row = rowHeight(), swatch = swatchWidth();
    const double chrome = swatch + kGap + kSpacing;
    const int n = int(entries_.size());
    double widestId = 0;
    for (const LegendEntry& entry : entries_) widestId = std::max(widestId, metrics.horizontalAdvance(idLabel(entry)));
    int columns = (n + maxRows - 1) / maxRows;
    double column = width / columns;
    names_ = Names::idsFirst;
    if (column - chrome < widestId + metrics.horizontalAdvance(QStringLiteral(" abcd"))) {
        names_ = Names::idsOnly;
        columns = std::max(1, int((width + kSpacing) / (chrome + widestId)));
        column = width / columns;
    }
    const int capacity = columns * maxRows;
    const int shown = n <= capacity ? n : capacity - 1;
    const Shared shared = sharedEnds(entries_);
    for (int i = 0; i < shown; ++i) {
        const LegendEntry& entry = entries_[i];
        const QString label =
            names_ == Names::idsOnly ? idLabel(entry) : idAndName(entry, metrics, column - chrome, shared);
        const double w = std::min(column - kSpacing, swatch + kGap + metrics.horizontalAdvance(label));
        cells_.push_back({i, QRectF((i % columns) * column, kTopGap + (i / columns) * row, w, row), label});
    }
    if (shown < n) {
        const QString more = tr("+%1 more").arg(n - shown);
        cells_.push_back({kMore,
                          QRectF((shown % columns) * column, kTopGap + (shown / columns) * row,
                                 std::min(column, metrics.horizontalAdvance(more) + 2), row),
                          more});
    }
    rows_ = (std::min(n, capacity) + columns - 1) / columns;
}

QStringList LegendItem::labels() const {
    QStringList out;
    for (const Cell& cell : cells_) out << cell.label;
    return out;
}

QRectF LegendItem::entryRect(int entry) const {
    for (const Cell& cell : cells_)
        if (cell.entry == entry) return cell.rect;
    return {};
}

int LegendItem::cellAt(QPointF pos) const {
    for (int i = 0; i < int(cells_.size()); ++i)
        if (cells_[i].rect.contains(pos)) return i;
    return -1;
}

QString LegendItem::toolTipAt(QPointF pos) const {
    const int at = cellAt(pos);
    if (at < 0) return {};
    const Cell& cell = cells_[at];
    if (cell.entry != kMore) {
        const LegendEntry& entry = entries_[cell.entry];
        return entry.whole + QLatin1Char('\n') + (entry.dimmed ? tr("Click to show it") : tr("Click to hide it"));
    }
    // The entries without a cell: every one after the last shown.
    const int firstHidden = at;  // the "+N more" cell is last, after one cell per shown entry
    QStringList names;
    for (int i = firstHidden; i < int(entries_.size()) && names.size() < kMoreInTip; ++i) names << entries_[i].whole;
    if (int(entries_.size()) - firstHidden > kMoreInTip) names << QStringLiteral("\u2026");
    return names.join(QLatin1Char('\n'));
}

QRectF LegendItem::boundingRect() const { return QRectF(0, 0, width_, height_); }

void LegendItem::paint(QPainter* painter, const QStyleOptionGraphicsItem*, QWidget*) {
    if (cells_.empty()) return;
    const double swatch = swatchWidth();
    painter->save();
    painter->setFont(font_);
    for (const Cell& cell : cells_) {
        QColor ink = text_;
        QRectF textRect = cell.rect;
        if (cell.entry != kMore) {
            const LegendEntry& entry = entries_[cell.entry];
            QColor colour = entry.colour;
            if (entry.dimmed) {
                colour.setAlpha(kDimmedAlpha);
                ink.setAlpha(kDimmedAlpha);
            }
            const QRectF swatchRect(cell.rect.left(), cell.rect.top(), swatch, cell.rect.height());
            const double middle = std::floor(swatchRect.center().y()) + 0.5;
            if (entry.group()) {  // a seed group: its band with its mean line
                QColor band = colour;
                band.setAlphaF(band.alphaF() * 0.3);
                painter->fillRect(QRectF(swatchRect.left(), middle - 4, swatch, 8), band);
            }
            painter->setPen(QPen(colour, 2));
            painter->drawLine(QPointF(swatchRect.left(), middle), QPointF(swatchRect.right(), middle));
            textRect.setLeft(swatchRect.right() + kGap);
        }
        painter->setPen(ink);
        painter->drawText(textRect, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextSingleLine, cell.label);
    }
    painter->restore();
}

void LegendItem::hoverMoveEvent(QGraphicsSceneHoverEvent* event) {
    // The scene shows the tooltip of the item under the mouse: this one's
    // says which entry the mouse is on.
    setToolTip(toolTipAt(event->pos()));
    const int at = cellAt(event->pos());
    const bool onEntry = at >= 0 && cells_[at].entry != kMore;
    if (onEntry) setCursor(Qt::PointingHandCursor);
    else unsetCursor();
    hover(onEntry ? cells_[at].entry : -1);
}

void LegendItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* event) {
    setToolTip({});
    unsetCursor();
    hover(-1);
    QGraphicsObject::hoverLeaveEvent(event);
}

void LegendItem::hover(int entry) {
    if (entry == hovered_) return;
    hovered_ = entry;
    if (entry < 0) emit hovered(0, {});
    else emit hovered(entries_[entry].runId, entries_[entry].groupKey);
}

void LegendItem::mousePressEvent(QGraphicsSceneMouseEvent* event) {
    const int at = cellAt(event->pos());
    if (at < 0 || cells_[at].entry == kMore) {
        event->ignore();
        return;
    }
    pressed_ = at;
    event->accept();
}

// A click is a press and a release on one entry, as a button's.
void LegendItem::mouseReleaseEvent(QGraphicsSceneMouseEvent* event) {
    const int at = std::exchange(pressed_, -2);
    if (at != cellAt(event->pos()) || at >= int(cells_.size())) return;
    const LegendEntry& entry = entries_[cells_[at].entry];
    if (entry.group()) emit groupClicked(entry.groupKey);
    else emit runClicked(entry.runId);
}

}  // namespace mlk
