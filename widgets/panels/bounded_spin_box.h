// A spin box that says so when a typed number lies outside its range. Qt's
// own drops the keystroke that would leave the range (typing 999999 into
// 0..64 leaves "9") or shows the text while keeping the previous value (0
// in 1..64 reads "0" while the value stays 3), without a word either way.
// Here the number typed stays in the box until editing ends, then goes to
// the nearest end of the range, and a tooltip at the box names the limit.
#pragma once

#include <QSpinBox>
#include <QString>

namespace mlk {

class BoundedSpinBox : public QSpinBox {
    Q_OBJECT

public:
    // `what` names the setting in the message, e.g. "Layers".
    explicit BoundedSpinBox(const QString& what, QWidget* parent = nullptr);
    // What the last clamp said ("Layers: 999999 is above the maximum 64, so 64"),
    // "" when the last edit was in range.
    QString lastClamp() const { return lastClamp_; }

signals:
    void clamped(const QString& message);

protected:
    QValidator::State validate(QString& text, int& pos) const override;
    // A whole number out of range becomes the nearest end of the range (Qt's
    // own correction would take the zero, bounded, not the number typed).
    void fixup(QString& input) const override;

private:
    void noteClamp();
    QString what_, lastClamp_;
    qint64 typed_ = 0;
    bool outside_ = false;
};

}  // namespace mlk
