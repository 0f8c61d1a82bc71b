#include "widgets/panels/preset_picker.h"

#include <QAbstractItemView>
#include <QApplication>
#include <QComboBox>
#include <QPainter>
#include <QStandardItemModel>
#include <QStyledItemDelegate>

#include <algorithm>

#include "core/config/presets.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace {

constexpr int kDescriptionRole = Qt::UserRole + 1;

// Two lines per preset in the open list: its name, then the start of its
// sentence (elided; the tooltip has it whole). Headers draw as Qt draws them.
class PresetDelegate : public QStyledItemDelegate {
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    QSize sizeHint(const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        QSize s = QStyledItemDelegate::sizeHint(option, index);
        if (!index.data(kDescriptionRole).toString().isEmpty()) s.setHeight(s.height() + smallFont(option).pixelSize());
        return s;
    }

    void paint(QPainter* painter, const QStyleOptionViewItem& option, const QModelIndex& index) const override {
        const QString description = index.data(kDescriptionRole).toString();
        if (description.isEmpty()) return QStyledItemDelegate::paint(painter, option, index);
        QStyleOptionViewItem opt = option;
        initStyleOption(&opt, index);
        const QString name = opt.text;
        opt.text.clear();
        const QWidget* w = opt.widget;
        (w ? w->style() : QApplication::style())->drawControl(QStyle::CE_ItemViewItem, &opt, painter, w);
        const bool selected = opt.state & QStyle::State_Selected;
        const QRect r = opt.rect.adjusted(18, 1, -6, -1);  // indented under the group header
        const QFontMetrics nameMetrics(opt.font);
        painter->save();
        painter->setPen(opt.palette.color(selected ? QPalette::HighlightedText : QPalette::Text));
        painter->setFont(opt.font);
        painter->drawText(QRect(r.left(), r.top(), r.width(), nameMetrics.height()), Qt::AlignLeft | Qt::AlignVCenter,
                          name);
        const QFont small = smallFont(option);
        painter->setFont(small);
        QColor grey = opt.palette.color(selected ? QPalette::HighlightedText : QPalette::Text);
        grey.setAlpha(150);
        painter->setPen(grey);
        const QFontMetrics smallMetrics(small);
        painter->drawText(QRect(r.left(), r.top() + nameMetrics.height(), r.width(), smallMetrics.height()),
                          Qt::AlignLeft | Qt::AlignVCenter,
                          smallMetrics.elidedText(description, Qt::ElideRight, r.width()));
        painter->restore();
    }

private:
    static QFont smallFont(const QStyleOptionViewItem& option) {
        QFont f = option.font;
        f.setPixelSize(std::max(9, QFontMetrics(option.font).height() * 3 / 4));
        return f;
    }
};

}  // namespace

void fillPresetPicker(QComboBox* combo) {
    auto* model = new QStandardItemModel(combo);
    for (const std::string& group : preset_groups()) {
        auto* header = new QStandardItem(qs(group));
        header->setFlags(Qt::NoItemFlags);  // a heading: never picked, skipped by the keys
        QFont bold = combo->font();
        bold.setBold(true);
        header->setFont(bold);
        model->appendRow(header);
        for (const Preset& p : presets()) {
            if (preset_group(p) != group) continue;
            auto* item = new QStandardItem(qs(p.name));
            item->setData(qs(p.name), Qt::UserRole);
            item->setData(qs(p.description), kDescriptionRole);
            item->setToolTip(
                QStringLiteral("<qt><b>%1</b> (%2)<br>%3</qt>")
                    .arg(qs(p.name).toHtmlEscaped(), qs(group).toHtmlEscaped(), qs(p.description).toHtmlEscaped()));
            model->appendRow(item);
        }
    }
    combo->setModel(model);
    combo->setItemDelegate(new PresetDelegate(combo));
    // Two-line rows: show about a dozen presets at once.
    combo->setMaxVisibleItems(14);
    combo->view()->setMinimumWidth(420);
}

}  // namespace mlk
