#include "widgets/panels/config_form.h"

#include <algorithm>
#include <string>

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QFontMetrics>
#include <QFormLayout>
#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QStyle>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include "core/config/presets.h"
#include "core/engines/device.h"
#include "widgets/data/palette.h"
#include "widgets/panels/config_editors.h"
#include "widgets/panels/footprint_label.h"
#include "widgets/panels/preset_picker.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace {

// The settings' own scroll area asks only for its minimum height. The form
// wraps its preset description, so the dock's scroll area sizes the form by
// height-for-width, which adds every item's preferred height: with this
// area's preferred height (all the settings) a short dock scrolled the whole
// form as well as the settings, two scroll bars side by side.
class SettingsScrollArea : public QScrollArea {
public:
    using QScrollArea::QScrollArea;
    QSize sizeHint() const override { return {QScrollArea::sizeHint().width(), minimumSizeHint().height()}; }
};

QStringList splitMessages(const std::string& what) {
    QStringList out;
    for (const QString& part : qs(what).split(QStringLiteral("; "), Qt::SkipEmptyParts)) out << part.trimmed();
    return out;
}

// Removes nlohmann's "[json.exception.parse_error.101] " prefix.
QString cleanJsonError(const char* what) {
    QString s = QString::fromUtf8(what);
    static const QRegularExpression re(QStringLiteral("^\\[json\\.exception\\.[a-z_]+\\.\\d+\\]\\s*"));
    s.remove(re);
    return s;
}

}  // namespace

ConfigForm::ConfigForm(QWidget* parent) : QWidget(parent) {
    if (find_preset("default")) {
        preset_ = QStringLiteral("default");
    } else if (!presets().empty()) {
        preset_ = qs(presets().front().name);
    }
    if (!preset_.isEmpty()) {
        try {
            cfg_ = preset_config(preset_.toStdString());
        } catch (const ConfigError&) {
            cfg_ = Config{};
        }
    }
    buildUi();
    loadEditors();
    revalidate();
}

void ConfigForm::buildUi() {
    setStyleSheet(config_editors::stateStyleSheet() + QStringLiteral(R"(
QToolButton#mlkSectionHeader { font-weight: bold; border: none; border-bottom: 1px solid palette(mid);
    padding: 4px 2px; text-align: left; }
)"));
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(6, 6, 6, 6);
    outer->setSpacing(4);

    // ---- preset picker --------------------------------------------------
    auto* presetRow = new QHBoxLayout;
    auto* presetLabel = new QLabel(tr("Preset:"), this);
    presetCombo_ = new QComboBox(this);
    presetCombo_->setObjectName(QStringLiteral("presetCombo"));
    presetCombo_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    presetCombo_->setMinimumContentsLength(12);
    presetCombo_->setToolTip(tr("Load a preset configuration; every setting below can then be changed."));
    fillPresetPicker(presetCombo_);
    presetLabel->setBuddy(presetCombo_);
    presetRow->addWidget(presetLabel);
    presetRow->addWidget(presetCombo_, 1);
    outer->addLayout(presetRow);

    presetDesc_ = new QLabel(this);
    presetDesc_->setObjectName(QStringLiteral("presetDescription"));
    presetDesc_->setWordWrap(true);
    presetDesc_->setTextFormat(Qt::RichText);
    presetDesc_->setStyleSheet(
        QStringLiteral("color: palette(text); background: palette(alternate-base); "
                       "padding: 4px; border-radius: 3px;"));
    outer->addWidget(presetDesc_);

    connect(presetCombo_, &QComboBox::activated, this,
            [this](int i) { setPreset(presetCombo_->itemData(i).toString()); });

    // ---- JSON buttons -----------------------------------------------------
    auto* btnRow = new QHBoxLayout;
    auto* copyBtn = new QPushButton(tr("Copy JSON"), this);
    copyBtn->setObjectName(QStringLiteral("copyJson"));
    copyBtn->setToolTip(
        tr("Copy the whole configuration (seed included) as JSON: the shareable form that "
           "reproduces a run exactly."));
    auto* pasteBtn = new QPushButton(tr("Paste JSON"), this);
    pasteBtn->setObjectName(QStringLiteral("pasteJson"));
    pasteBtn->setToolTip(
        tr("Replace the configuration by the JSON on the clipboard (nested or dotted keys; "
           "missing keys take their defaults). Nothing changes if it is invalid."));
    auto* resetBtn = new QPushButton(tr("Reset"), this);
    resetBtn->setObjectName(QStringLiteral("resetPreset"));
    resetBtn->setToolTip(tr("Reload the selected preset, discarding edits."));
    btnRow->addWidget(copyBtn);
    btnRow->addWidget(pasteBtn);
    btnRow->addWidget(resetBtn);
    outer->addLayout(btnRow);
    connect(copyBtn, &QPushButton::clicked, this, [this] { copyJsonToClipboard(); });
    connect(pasteBtn, &QPushButton::clicked, this, [this] { pasteJsonFromClipboard(); });
    connect(resetBtn, &QPushButton::clicked, this, [this] {
        if (!preset_.isEmpty()) setPreset(preset_);
    });

    // ---- banner (non-modal messages) ---------------------------------------
    bannerRow_ = new QFrame(this);
    bannerRow_->setObjectName(QStringLiteral("banner"));
    auto* bl = new QHBoxLayout(bannerRow_);
    bl->setContentsMargins(6, 4, 2, 4);
    banner_ = new QLabel(bannerRow_);
    banner_->setWordWrap(true);
    banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    bannerClose_ = new QToolButton(bannerRow_);
    bannerClose_->setText(QStringLiteral("\u00D7"));
    bannerClose_->setAutoRaise(true);
    bannerClose_->setToolTip(tr("Dismiss"));
    bl->addWidget(banner_, 1);
    bl->addWidget(bannerClose_, 0, Qt::AlignTop);
    connect(bannerClose_, &QToolButton::clicked, this, [this] { hideBanner(); });
    bannerRow_->hide();
    outer->addWidget(bannerRow_);

    // ---- validation status -------------------------------------------------
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("validationStatus"));
    status_->setWordWrap(true);
    status_->setTextFormat(Qt::RichText);
    status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(status_);

    // ---- sections ------------------------------------------------------------
    auto* scroll = new SettingsScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* content = new QWidget(scroll);
    auto* cl = new QVBoxLayout(content);
    cl->setContentsMargins(0, 0, 4, 0);
    cl->setSpacing(2);

    for (const std::string& sec : config_sections()) {
        Section s;
        s.title = qs(sec);
        s.header = new QToolButton(content);
        s.header->setObjectName(QStringLiteral("mlkSectionHeader"));
        s.header->setProperty("section", s.title);
        s.header->setCheckable(true);
        s.header->setChecked(true);
        s.header->setArrowType(Qt::DownArrow);
        s.header->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
        s.header->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
        s.header->setText(QString(s.title).replace(QLatin1Char('&'), QStringLiteral("&&")));
        s.body = new QWidget(content);
        auto* form = new QFormLayout(s.body);
        form->setContentsMargins(8, 2, 2, 6);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        form->setHorizontalSpacing(8);
        form->setVerticalSpacing(3);
        for (const ConfigKey& k : config_schema()) {
            if (k.section != sec) continue;
            Field f;
            f.meta = &k;
            f.baseTooltip = config_editors::richTooltip(k);
            f.label = new QLabel(qs(k.label), s.body);
            f.label->setToolTip(f.baseTooltip);
            f.editor = config_editors::make(k, this, [this, key = qs(k.key)] { onEdited(key); });
            f.editor->setParent(s.body);
            f.editor->setObjectName(qs(k.key));
            f.editor->setToolTip(f.baseTooltip);
            f.editor->setFocusPolicy(Qt::StrongFocus);
            f.label->setBuddy(f.editor);
            f.marker = new QLabel(s.body);
            f.marker->setFixedSize(16, 16);
            auto* row = new QWidget(s.body);
            auto* rl = new QHBoxLayout(row);
            rl->setContentsMargins(0, 0, 0, 0);
            rl->setSpacing(4);
            f.editor->setParent(row);
            f.marker->setParent(row);
            rl->addWidget(f.editor, 1);
            rl->addWidget(f.marker, 0);
            form->addRow(f.label, row);
            fields_.insert(qs(k.key), f);
        }
        if (sec == "Model") {
            footprint_ = new FootprintLabel(s.body);
            form->addRow(footprint_);
        }
        connect(s.header, &QToolButton::toggled, this, [h = s.header, b = s.body](bool on) {
            h->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
            b->setVisible(on);
        });
        cl->addWidget(s.header);
        cl->addWidget(s.body);
        sections_.push_back(s);
    }
    cl->addStretch(1);
    // One label column width for every section, so editors line up across
    // sections (each section has its own QFormLayout). Bold is the widest form.
    int labelWidth = 0;
    for (const Field& f : std::as_const(fields_)) {
        QFont bold = f.label->font();
        bold.setBold(true);
        labelWidth = std::max(labelWidth, QFontMetrics(bold).horizontalAdvance(f.label->text()) + 4);
    }
    for (const Field& f : std::as_const(fields_)) f.label->setMinimumWidth(labelWidth);
    scroll->setWidget(content);
    // Labels and editors whole, beside the scroll bar: without a horizontal
    // bar, a narrower dock cut the editors' right edge off.
    scroll->setMinimumWidth(content->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
    outer->addWidget(scroll, 1);
}

void ConfigForm::loadEditors() {
    loading_ = true;
    for (auto it = fields_.begin(); it != fields_.end(); ++it) {
        it->textError.clear();
        config_editors::load(it->editor, *it->meta, cfg_);
    }
    {
        QSignalBlocker block(presetCombo_);
        presetCombo_->setCurrentIndex(presetCombo_->findData(preset_));
    }
    loading_ = false;
    updateSectionHeaders();
    updatePresetInfo();
}

void ConfigForm::onEdited(const QString& key) {
    if (loading_) return;
    auto it = fields_.find(key);
    if (it == fields_.end()) return;
    it->textError = config_editors::store(it->editor, *it->meta, cfg_);
    updateSectionHeaders();
    updatePresetInfo();
    revalidate();
    emit configChanged();
}

QStringList ConfigForm::keysInMessage(const QString& message) {
    static const QRegularExpression tok(QStringLiteral("[A-Za-z_][A-Za-z0-9_]*(?:\\.[A-Za-z0-9_]+)*"));
    QStringList found;
    QString lastPrefix;
    auto it = tok.globalMatch(message);
    while (it.hasNext()) {
        const auto m = it.next();
        const QString t = m.captured(0);
        if (find_config_key(t.toStdString())) {
            if (!found.contains(t)) found << t;
            lastPrefix = t.left(t.lastIndexOf(QLatin1Char('.')));
            continue;
        }
        // "correction.is_level / rs_level / veto_threshold": short names after a
        // slash belong to the section of the last full key.
        if (!t.contains(QLatin1Char('.')) && !lastPrefix.isEmpty()) {
            int p = m.capturedStart(0) - 1;
            while (p >= 0 && message[p] == QLatin1Char(' ')) --p;
            if (p >= 0 && message[p] == QLatin1Char('/') && (p == 0 || !message[p - 1].isDigit())) {
                const QString full = lastPrefix + QLatin1Char('.') + t;
                if (find_config_key(full.toStdString()) && !found.contains(full)) found << full;
            }
        }
    }
    // schema order
    QStringList ordered;
    for (const ConfigKey& k : config_schema())
        if (found.contains(qs(k.key))) ordered << qs(k.key);
    return ordered;
}

void ConfigForm::revalidate() {
    QStringList errs, warns;
    for (const ConfigKey& k : config_schema()) {
        const Field& f = fields_[qs(k.key)];
        if (!f.textError.isEmpty()) errs << f.textError;
    }
    try {
        validate(cfg_);
    } catch (const ConfigError& e) {
        for (const QString& m : splitMessages(e.what()))
            if (!errs.contains(m)) errs << m;
    }
    // A device this machine lacks: valid in a stored config, but no run can start here.
    if (const std::string why = device_problem(cfg_); !why.empty()) errs << qs(why);
    for (const std::string& w : config_warnings(cfg_)) warns << qs(w);
    errors_ = errs;
    warnings_ = warns;

    for (auto it = fields_.begin(); it != fields_.end(); ++it) {
        it->state.clear();
        it->message.clear();
    }
    auto mark = [this](const QString& msg, const QString& state) {
        for (const QString& key : keysInMessage(msg)) {
            auto it = fields_.find(key);
            if (it == fields_.end()) continue;
            if (it->state != QLatin1String("error")) it->state = state;
            it->message += (it->message.isEmpty() ? QString() : QStringLiteral("\n")) + msg;
        }
    };
    for (const QString& e : errs) mark(e, QStringLiteral("error"));
    for (const QString& w : warns) mark(w, QStringLiteral("warning"));
    // A value that changes nothing now is greyed, with why (still editable).
    for (const IgnoredKey& ig : config_ignored_keys(cfg_)) {
        auto it = fields_.find(qs(ig.key));
        if (it == fields_.end() || !it->state.isEmpty()) continue;
        it->state = QStringLiteral("ignored");
        it->message = tr("Ignored: %1").arg(qs(ig.reason));
    }
    applyMarks();

    QString html;
    if (errs.isEmpty() && warns.isEmpty()) {
        html = QStringLiteral("<span style='color:%2'>\u2714 %1</span>")
                   .arg(tr("Configuration valid"), palette::okTone().ink.name());
    } else {
        for (const QString& e : errs)
            html += QStringLiteral("<div style='color:%2'>\u2716 %1</div>")
                        .arg(e.toHtmlEscaped(), palette::errorTone().ink.name());
        for (const QString& w : warns)
            html += QStringLiteral("<div style='color:%2'>\u26A0 %1</div>")
                        .arg(w.toHtmlEscaped(), palette::warningTone().ink.name());
    }
    status_->setText(html);
    footprint_->showFor(cfg_, errs.isEmpty());
    for (const Field& f : fields_) config_editors::describeAuto(f.editor, *f.meta, cfg_);

    const bool v = errs.isEmpty();
    if (v != valid_) {
        valid_ = v;
        emit validityChanged(v);
    }
}

void ConfigForm::applyMarks() {
    const int px = 16;
    const QPixmap err = style()->standardIcon(QStyle::SP_MessageBoxCritical).pixmap(px, px);
    const QPixmap warn = style()->standardIcon(QStyle::SP_MessageBoxWarning).pixmap(px, px);
    for (auto it = fields_.begin(); it != fields_.end(); ++it) {
        Field& f = it.value();
        config_editors::setState(f.editor, f.state);
        config_editors::setState(f.label, f.state);
        if (f.state.isEmpty() || f.state == QLatin1String("ignored")) {
            f.marker->clear();
            f.marker->setToolTip(f.message);
            f.editor->setToolTip(config_editors::notedTooltip(f.message, f.baseTooltip));
        } else {
            f.marker->setPixmap(f.state == QLatin1String("error") ? err : warn);
            const QString color =
                (f.state == QLatin1String("error") ? palette::errorTone() : palette::warningTone()).ink.name();
            QString msgHtml;
            for (const QString& m : f.message.split(QLatin1Char('\n')))
                msgHtml +=
                    QStringLiteral("<p style='color:%1'>%2 %3</p>")
                        .arg(color,
                             f.state == QLatin1String("error") ? QStringLiteral("\u2716") : QStringLiteral("\u26A0"),
                             m.toHtmlEscaped());
            f.marker->setToolTip(msgHtml);
            f.editor->setToolTip(msgHtml + QStringLiteral("<hr/>") + f.baseTooltip);
        }
    }
}

void ConfigForm::updateSectionHeaders() {
    const Config defaults;
    for (Section& s : sections_) {
        int changed = 0;
        for (auto it = fields_.begin(); it != fields_.end(); ++it) {
            Field& f = it.value();
            if (qs(f.meta->section) != s.title) continue;
            const bool diff = config_get(cfg_, f.meta->key) != f.meta->default_value;
            changed += diff ? 1 : 0;
            QFont font = f.label->font();
            if (font.bold() != diff) {
                font.setBold(diff);
                f.label->setFont(font);
            }
        }
        const QString title = QString(s.title).replace(QLatin1Char('&'), QStringLiteral("&&"));  // no mnemonic
        s.header->setText(changed ? tr("%1  \u00B7  %n changed", nullptr, changed).arg(title) : title);
        s.header->setToolTip(changed ? tr("%n setting(s) differ from the defaults (shown in bold)", nullptr, changed)
                                     : tr("All settings at their defaults"));
    }
}

void ConfigForm::updatePresetInfo() {
    const Preset* p = preset_.isEmpty() ? nullptr : find_preset(preset_.toStdString());
    QString html = p ? qs(p->description).toHtmlEscaped() : tr("No preset selected.");
    if (p) {
        try {
            const auto diff = config_diff(preset_config(p->name), cfg_);
            if (!diff.empty()) {
                QStringList keys;
                for (const auto& d : diff) keys << qs(d.key);
                html += QStringLiteral("<br/><i style='color:%2'>%1</i>")
                            .arg(tr("Modified: %1").arg(keys.join(QStringLiteral(", "))).toHtmlEscaped(),
                                 palette::secondaryText().name());
            }
        } catch (const ConfigError&) {
        }
    }
    presetDesc_->setText(html);
}

Config ConfigForm::config() const { return cfg_; }

void ConfigForm::setConfig(const Config& c) {
    cfg_ = c;
    loadEditors();
    revalidate();
    emit configChanged();
}

QString ConfigForm::presetName() const { return preset_; }

bool ConfigForm::modifiedFromPreset() const {
    if (preset_.isEmpty()) return true;
    try {
        return !(preset_config(preset_.toStdString()) == cfg_);
    } catch (const ConfigError&) {
        return true;
    }
}

bool ConfigForm::setPreset(const QString& name) {
    Config c;
    try {
        c = preset_config(name.toStdString());
    } catch (const ConfigError& e) {
        showBanner(tr("Preset not loaded: %1").arg(qs(e.what())), true);
        QSignalBlocker block(presetCombo_);
        presetCombo_->setCurrentIndex(presetCombo_->findData(preset_));
        return false;
    }
    const bool changed = name != preset_;
    preset_ = name;
    cfg_ = c;
    hideBanner();
    loadEditors();
    revalidate();
    emit configChanged();
    if (changed) emit presetChanged(preset_);
    return true;
}

QString ConfigForm::toJson() const { return qs(config_to_json(cfg_).dump(2)); }

bool ConfigForm::fromJson(const QString& text, QString* error) {
    QString msg;
    Config c;
    try {
        const nlohmann::json j = nlohmann::json::parse(text.toStdString());
        if (!j.is_object()) throw ConfigError("expected a JSON object with configuration keys");
        c = config_from_json(j);
    } catch (const nlohmann::json::exception& e) {
        msg = tr("Malformed JSON: %1. The configuration was not changed.").arg(cleanJsonError(e.what()));
    } catch (const ConfigError& e) {
        msg = tr("Invalid configuration: %1. The configuration was not changed.").arg(qs(e.what()));
    }
    if (!msg.isEmpty()) {
        showBanner(msg, true);
        if (error) *error = msg;
        return false;
    }
    // A pasted config that is exactly a preset selects that preset.
    for (const Preset& p : presets()) {
        try {
            if (preset_config(p.name) == c) {
                const bool changed = preset_ != qs(p.name);
                preset_ = qs(p.name);
                if (changed) emit presetChanged(preset_);
                break;
            }
        } catch (const ConfigError&) {
        }
    }
    hideBanner();
    setConfig(c);
    if (error) error->clear();
    return true;
}

void ConfigForm::copyJsonToClipboard() {
    if (auto* cb = QGuiApplication::clipboard()) cb->setText(toJson());
    showBanner(
        tr("Copied the whole configuration (%1 keys, seed %2) as JSON.").arg(config_schema().size()).arg(cfg_.seed),
        false);
    const QString shown = bannerText_;
    QTimer::singleShot(4000, this, [this, shown] {
        if (bannerText_ == shown) hideBanner();
    });
}

bool ConfigForm::pasteJsonFromClipboard() {
    const QClipboard* cb = QGuiApplication::clipboard();
    const QString text = cb ? cb->text() : QString();
    if (text.trimmed().isEmpty()) {
        showBanner(tr("The clipboard holds no text to paste. The configuration was not changed."), true);
        return false;
    }
    return fromJson(text);
}

QString ConfigForm::keyState(const QString& key) const {
    auto it = fields_.find(key);
    return it == fields_.end() ? QString() : it->state;
}

QString ConfigForm::keyMessage(const QString& key) const {
    auto it = fields_.find(key);
    return it == fields_.end() ? QString() : it->message;
}

QWidget* ConfigForm::editor(const QString& key) const {
    auto it = fields_.find(key);
    return it == fields_.end() ? nullptr : it->editor;
}

void ConfigForm::setSectionExpanded(const QString& section, bool expanded) {
    for (Section& s : sections_)
        if (s.title == section) s.header->setChecked(expanded);
}

bool ConfigForm::isSectionExpanded(const QString& section) const {
    for (const Section& s : sections_)
        if (s.title == section) return s.header->isChecked();
    return false;
}

void ConfigForm::showBanner(const QString& text, bool error) {
    bannerText_ = text;
    banner_->setText(text);
    const palette::Tone t = error ? palette::errorTone() : palette::infoTone();
    bannerRow_->setStyleSheet(
        QStringLiteral(
            "QFrame#banner { background: %1; border: 1px solid %2; border-radius: 3px; } QLabel { color: %3; }")
            .arg(t.fill.name(), t.border.name(), t.ink.name()));
    bannerRow_->show();
}

void ConfigForm::hideBanner() {
    bannerText_.clear();
    banner_->clear();
    bannerRow_->hide();
}

}  // namespace mlk
