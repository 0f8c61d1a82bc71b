#include "widgets/panels/bounded_spin_box.h"

#include <QLineEdit>
#include <QToolTip>

#include <optional>

namespace mlk {

namespace {

// The box's text as a whole number, if it is one.
std::optional<qint64> wholeNumber(const QString& text) {
    bool ok = false;
    const qint64 v = text.trimmed().toLongLong(&ok);
    return ok ? std::optional<qint64>(v) : std::nullopt;
}

}  // namespace

BoundedSpinBox::BoundedSpinBox(const QString& what, QWidget* parent) : QSpinBox(parent), what_(what) {
    // Before the spin box corrects the text at the end of an edit: what was typed.
    connect(lineEdit(), &QLineEdit::textEdited, this, [this](const QString& text) {
        const std::optional<qint64> v = wholeNumber(text);
        outside_ = v && (*v < minimum() || *v > maximum());
        typed_ = v.value_or(0);
        if (!outside_) lastClamp_.clear();
    });
    connect(this, &QAbstractSpinBox::editingFinished, this, [this] { noteClamp(); });
}

QValidator::State BoundedSpinBox::validate(QString& text, int& pos) const {
    const QValidator::State state = QSpinBox::validate(text, pos);
    if (state == QValidator::Acceptable) return state;
    // A whole number out of range stays as typed; editing's end corrects it.
    return wholeNumber(text) ? QValidator::Intermediate : state;
}

void BoundedSpinBox::fixup(QString& input) const {
    const std::optional<qint64> v = wholeNumber(input);
    if (v && *v > maximum()) input = textFromValue(maximum());
    else if (v && *v < minimum()) input = textFromValue(minimum());
    else QSpinBox::fixup(input);
}

void BoundedSpinBox::noteClamp() {
    if (!outside_) return;
    outside_ = false;
    lastClamp_ = typed_ > maximum() ? tr("%1: %2 is above the maximum %3, so %3").arg(what_).arg(typed_).arg(maximum())
                                    : tr("%1: %2 is below the minimum %3, so %3").arg(what_).arg(typed_).arg(minimum());
    QToolTip::showText(mapToGlobal(QPoint(0, height())), lastClamp_, this);
    emit clamped(lastClamp_);
}

}  // namespace mlk
