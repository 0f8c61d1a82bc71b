#include "widgets/panels/config_editors.h"

#include <charconv>
#include <climits>
#include <cmath>
#include <string>

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QEvent>
#include <QLineEdit>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyle>
#include <QWidget>

#include "core/engines/numerics.h"
#include "widgets/data/palette.h"
#include "widgets/data/qt_text.h"
#include "widgets/panels/bounded_spin_box.h"

namespace mlk::config_editors {

namespace {

QString tr(const char* text) { return QCoreApplication::translate("mlk::ConfigForm", text); }

// Wheel events over an unfocused spin box or combo box scroll the form
// instead of silently changing a setting.
class WheelGuard : public QObject {
public:
    using QObject::QObject;
    bool eventFilter(QObject* o, QEvent* e) override {
        if (e->type() == QEvent::Wheel) {
            if (auto* w = qobject_cast<QWidget*>(o); w && !w->hasFocus()) {
                e->ignore();
                return true;
            }
        }
        return QObject::eventFilter(o, e);
    }
};

// "0 = off", "0 = all cores", "0 = none" in a description -> "off" etc.
QString zeroMeaning(const std::string& desc) {
    static const QRegularExpression re(QStringLiteral("\\b0 = ([a-z][a-z ]*?)(?=[;.,)]|$)"));
    const auto m = re.match(qs(desc));
    return m.hasMatch() ? m.captured(1) : QString();
}

// The whole text (a leading '+' allowed) as a number of type T.
template <class T>
bool parseNumber(const QString& text, T& out) {
    const std::string s = text.trimmed().toStdString();
    const char* b = s.data();
    const char* e = b + s.size();
    if (b != e && *b == '+') ++b;
    if (b == e) return false;
    auto [p, ec] = std::from_chars(b, e, out);
    return ec == std::errc() && p == e;
}

bool parseDouble(const QString& text, double& out) { return parseNumber(text, out) && std::isfinite(out); }
bool parseInt(const QString& text, int64_t& out) { return parseNumber(text, out); }

}  // namespace

void describeAuto(QWidget* editor, const ConfigKey& key, const Config& cfg) {
    auto* combo = qobject_cast<QComboBox*>(editor);
    const int i = combo ? combo->findData(QStringLiteral("auto")) : -1;
    if (i < 0) return;
    const std::string resolved = auto_dtype_of(cfg, key.key);
    if (!resolved.empty()) combo->setItemText(i, QStringLiteral("auto (%1)").arg(qs(resolved)));
}

QString richTooltip(const ConfigKey& k) {
    // tooltip(): description, then "Range/Values: ... Default: ...", then
    // community names, one per line. Rich text so Qt wraps long lines.
    const QStringList lines = qs(k.tooltip()).split(QLatin1Char('\n'));
    QString html = QStringLiteral("<p style='white-space:normal'><b>%1</b> <span style='color:%3'>(%2)</span></p>")
                       .arg(qs(k.label).toHtmlEscaped(), qs(k.key).toHtmlEscaped(), palette::secondaryText().name());
    for (int i = 0; i < lines.size(); ++i) html += QStringLiteral("<p>%1</p>").arg(lines[i].toHtmlEscaped());
    return html;
}

QWidget* make(const ConfigKey& k, QObject* context, std::function<void()> edited) {
    switch (k.type) {
        case ValueType::boolean: {
            auto* cb = new QCheckBox;
            QObject::connect(cb, &QCheckBox::toggled, context, edited);
            return cb;
        }
        case ValueType::enumeration: {
            auto* combo = new QComboBox;
            combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
            combo->setMinimumContentsLength(8);
            for (const std::string& a : k.allowed) combo->addItem(qs(a), qs(a));
            QObject::connect(combo, &QComboBox::currentIndexChanged, context, edited);
            combo->installEventFilter(new WheelGuard(combo));
            return combo;
        }
        case ValueType::integer:
            if (k.min >= INT_MIN && k.max <= INT_MAX) {
                auto* sb = new BoundedSpinBox(qs(k.label));
                sb->setRange(static_cast<int>(k.min), static_cast<int>(k.max));
                sb->setAccelerated(true);
                const QString zero = zeroMeaning(k.description);
                if (!zero.isEmpty() && k.min == 0) sb->setSpecialValueText(QStringLiteral("0 (%1)").arg(zero));
                QObject::connect(sb, &QSpinBox::valueChanged, context, edited);
                sb->installEventFilter(new WheelGuard(sb));
                return sb;
            }
            [[fallthrough]];
        case ValueType::number: {
            auto* le = new QLineEdit;
            const bool integer = k.type == ValueType::integer;
            le->setValidator(new QRegularExpressionValidator(
                QRegularExpression(integer ? QStringLiteral("[+-]?[0-9]*") : QStringLiteral("[+-]?[0-9.eE+-]*")), le));
            le->setPlaceholderText(qs(k.range_text()));
            QObject::connect(le, &QLineEdit::textChanged, context, edited);
            return le;
        }
        case ValueType::text: {
            auto* le = new QLineEdit;
            le->setPlaceholderText(qs(k.format));
            QObject::connect(le, &QLineEdit::textChanged, context, edited);
            return le;
        }
    }
    return new QWidget;
}

void load(QWidget* editor, const ConfigKey& k, const Config& cfg) {
    const nlohmann::json v = config_get(cfg, k.key);
    QSignalBlocker block(editor);
    if (auto* cb = qobject_cast<QCheckBox*>(editor)) {
        cb->setChecked(v.get<bool>());
    } else if (auto* combo = qobject_cast<QComboBox*>(editor)) {
        combo->setCurrentIndex(combo->findData(qs(v.get<std::string>())));
    } else if (auto* sb = qobject_cast<QSpinBox*>(editor)) {
        sb->setValue(static_cast<int>(v.get<int64_t>()));
    } else if (auto* le = qobject_cast<QLineEdit*>(editor)) {
        le->setText(qs(config_value_text(cfg, k.key)));
        le->setCursorPosition(0);
    }
}

QString store(QWidget* editor, const ConfigKey& k, Config& cfg) {
    const QString key = qs(k.key);
    try {
        if (auto* cb = qobject_cast<QCheckBox*>(editor)) {
            config_set(cfg, k.key, cb->isChecked());
        } else if (auto* combo = qobject_cast<QComboBox*>(editor)) {
            config_set(cfg, k.key, combo->currentData().toString().toStdString());
        } else if (auto* sb = qobject_cast<QSpinBox*>(editor)) {
            config_set(cfg, k.key, static_cast<int64_t>(sb->value()));
        } else if (auto* le = qobject_cast<QLineEdit*>(editor)) {
            if (k.type == ValueType::text) {
                config_set(cfg, k.key, le->text().toStdString());
            } else if (k.type == ValueType::integer) {
                int64_t x = 0;
                if (!parseInt(le->text(), x))
                    return QStringLiteral("%1: enter %2 in %3").arg(key, tr("an integer"), qs(k.range_text()));
                config_set(cfg, k.key, x);
            } else {
                double x = 0;
                if (!parseDouble(le->text(), x))
                    return QStringLiteral("%1: enter %2 in %3 (e.g. 0.5 or 1e-4)")
                        .arg(key, tr("a number"), qs(k.range_text()));
                config_set(cfg, k.key, x);
            }
        }
    } catch (const ConfigError& e) {
        return qs(e.what());
    }
    return {};
}

QString stateStyleSheet() {
    const palette::Tone e = palette::errorTone(), w = palette::warningTone();
    return QStringLiteral(R"(
QLineEdit[mlkState="error"], QSpinBox[mlkState="error"], QComboBox[mlkState="error"] {
    border: 1px solid %1; border-radius: 3px; padding: 1px 3px; background: %2; }
QLineEdit[mlkState="warning"], QSpinBox[mlkState="warning"], QComboBox[mlkState="warning"] {
    border: 1px solid %4; border-radius: 3px; padding: 1px 3px; background: %5; }
QCheckBox[mlkState="error"] { background: %2; border: 1px solid %1; border-radius: 3px; }
QCheckBox[mlkState="warning"] { background: %5; border: 1px solid %4; border-radius: 3px; }
QLabel[mlkState="error"] { color: %3; }
QLabel[mlkState="warning"] { color: %6; }
QLabel[mlkState="ignored"] { color: %7; font-style: italic; }
)")
        .arg(e.border.name(), e.fill.name(), e.ink.name(), w.border.name(), w.fill.name(), w.ink.name(),
             palette::secondaryText().name());
}

void setState(QWidget* w, const QString& state) {
    if (w->property("mlkState").toString() == state) return;
    w->setProperty("mlkState", state);
    // A dynamic property does not restyle by itself.
    w->style()->unpolish(w);
    w->style()->polish(w);
    w->update();
}

QString notedTooltip(const QString& note, const QString& base) {
    return note.isEmpty() ? base : QStringLiteral("<p><i>%1</i></p><hr/>%2").arg(note.toHtmlEscaped(), base);
}

}  // namespace mlk::config_editors
