#include "widgets/panels/bounded_spin_box.h"

#include <QLineEdit>
#include <QToolTip>

namespace mlk {

BoundedSpinBox::BoundedSpinBox(const QString& what, QWidget* parent) : QSpinBox(parent), what_(what) {
    setCorrectionMode(QAbstractSpinBox::CorrectToNearestValue);
    // Before the spin box corrects the text at the end of an edit: what was typed.
    connect(lineEdit(), &QLineEdit::textEdited, this, [this](const QString& text) {
        bool ok = false;
        const qint64 v = text.trimmed().toLongLong(&ok);
        outside_ = ok && (v < minimum() || v > maximum());
        typed_ = v;
        if (!outside_) lastClamp_.clear();
    });
    connect(this, &QAbstractSpinBox::editingFinished, this, [this] { noteClamp(); });
}

QValidator::State BoundedSpinBox::validate(QString& text, int& pos) const {
    const QValidator::State state = QSpinBox::validate(text, pos);
    if (state == QValidator::Acceptable) return state;
    // A whole number out of range stays as typed; editing's end corrects it.
    bool ok = false;
    text.trimmed().toLongLong(&ok);
    return ok ? QValidator::Intermediate : state;
}

void BoundedSpinBox::fixup(QString& input) const {
    bool ok = false;
    const qint64 v = input.trimmed().toLongLong(&ok);
    if (ok && v > maximum()) input = textFromValue(maximum());
    else if (ok && v < minimum()) input = textFromValue(minimum());
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
