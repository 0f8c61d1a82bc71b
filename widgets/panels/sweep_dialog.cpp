#include "widgets/panels/sweep_dialog.h"

#include <QComboBox>
#include <QCompleter>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cstring>

#include "core/config/presets.h"
#include "widgets/data/palette.h"
#include "widgets/data/qt_text.h"
#include "widgets/panels/bounded_spin_box.h"

namespace mlk {

namespace {

// The CLI's messages name their option (--grid, --seeds); here the field is
// in front of the user, so the option's name goes.
QString fieldMessage(const std::string& what) {
    QString s = qs(what);
    for (const char* opt : {"--grid: ", "--seeds: "})
        if (s.startsWith(QLatin1String(opt))) s = s.mid(static_cast<int>(std::strlen(opt)));
    if (qs(what).startsWith(QLatin1String("--seeds: "))) s = QObject::tr("Seeds: ") + s;
    return s;
}

// A sweep's preset names, as `sweep --preset` resolves them.
Config sweepPreset(const std::string& name) { return any_preset_config(name, "preset"); }

// The row key that sweeps presets (`sweep --preset A --preset B`) rather than
// a setting: each configuration starts from its preset, not the form's.
const QString kPresetKey = QStringLiteral("preset");

// Seeds over the current configuration unless changed (a family brings its own).
constexpr int kDefaultSeeds = 3;

}  // namespace

SweepDialog::SweepDialog(const Config& base, const QString& preset, QWidget* parent)
    : QDialog(parent), base_(base), preset_(preset.isEmpty() ? std::string("custom") : preset.toStdString()) {
    setWindowTitle(tr("Queue sweep"));
    setObjectName(QStringLiteral("sweepDialog"));
    auto* outer = new QVBoxLayout(this);
    // The families are the product's curated comparisons (the sources'
    // results, reproduced in kind): queued from here as the CLI runs them.
    auto* sourceRow = new QHBoxLayout;
    sourceRow->addWidget(new QLabel(tr("Sweep over:"), this));
    source_ = new QComboBox(this);
    source_->setObjectName(QStringLiteral("sweepSource"));
    source_->addItem(tr("the current configuration (%1)").arg(qs(preset_)));
    for (const SweepFamily& f : sweep_families()) {
        source_->addItem(tr("family %1").arg(qs(f.name)), qs(f.name));
        source_->setItemData(source_->count() - 1, qs(f.description), Qt::ToolTipRole);
    }
    sourceRow->addWidget(source_, 1);
    outer->addLayout(sourceRow);
    intro_ = new QLabel(this);
    intro_->setObjectName(QStringLiteral("sweepIntro"));
    intro_->setWordWrap(true);
    intro_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    outer->addWidget(intro_);

    settings_ = new QWidget(this);
    auto* settingsLayout = new QVBoxLayout(settings_);
    settingsLayout->setContentsMargins(0, 0, 0, 0);
    rowsLayout_ = new QVBoxLayout;
    rowsLayout_->setSpacing(4);
    settingsLayout->addLayout(rowsLayout_);
    auto* add = new QPushButton(tr("Add setting"), settings_);
    add->setObjectName(QStringLiteral("addSetting"));
    connect(add, &QPushButton::clicked, this, [this] { addSetting(); });
    auto* addRow = new QHBoxLayout;
    addRow->addWidget(add);
    addRow->addStretch(1);
    settingsLayout->addLayout(addRow);
    outer->addWidget(settings_);

    auto* form = new QFormLayout;
    seeds_ = new BoundedSpinBox(tr("Seeds"), this);
    seeds_->setObjectName(QStringLiteral("sweepSeeds"));
    seeds_->setRange(1, kMaxSweepSeeds);
    seeds_->setValue(kDefaultSeeds);
    seeds_->setToolTip(tr("Each configuration runs with seeds 1 to N (1 to %1)").arg(kMaxSweepSeeds));
    steps_ = new QSpinBox(this);
    steps_->setObjectName(QStringLiteral("sweepSteps"));
    const ConfigKey* stepsKey = find_config_key("rl.steps");
    steps_->setRange(0, stepsKey && stepsKey->max < 1e9 ? static_cast<int>(stepsKey->max) : 1000000);
    steps_->setToolTip(tr("rl.steps of every run; 0 keeps the configuration's"));
    form->addRow(tr("Seeds"), seeds_);
    form->addRow(tr("Steps"), steps_);
    outer->addLayout(form);
    connect(seeds_, &QSpinBox::valueChanged, this, [this] { recheck(); });
    connect(steps_, &QSpinBox::valueChanged, this, [this] { recheck(); });

    summary_ = new QLabel(this);
    summary_->setObjectName(QStringLiteral("sweepSummary"));
    QFont f = summary_->font();
    f.setBold(true);
    summary_->setFont(f);
    outer->addWidget(summary_);
    // What recheck() says of the sweep, in its tone; hidden while it says nothing.
    const auto messageLine = [&](const char* name, const palette::Tone& tone) {
        auto* label = new QLabel(this);
        label->setObjectName(QLatin1String(name));
        label->setWordWrap(true);
        label->setTextInteractionFlags(Qt::TextSelectableByMouse);
        label->setStyleSheet(QStringLiteral("color: %1").arg(tone.ink.name()));
        label->setVisible(false);
        outer->addWidget(label);
        return label;
    };
    error_ = messageLine("sweepError", palette::errorTone());
    warning_ = messageLine("sweepWarning", palette::warningTone());
    outer->addStretch(1);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons_->button(QDialogButtonBox::Ok)->setText(tr("Queue"));
    connect(buttons_, &QDialogButtonBox::accepted, this, [this] {
        if (acceptable()) accept();
    });
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    outer->addWidget(buttons_);

    connect(source_, &QComboBox::currentIndexChanged, this, [this] { setFamily(source_->currentData().toString()); });
    addSetting();
    showSource();
    resize(640, sizeHint().height());
}

void SweepDialog::setFamily(const QString& name) {
    const SweepFamily* family = name.isEmpty() ? nullptr : &sweep_family(name.toStdString());
    if (family == family_) return;
    family_ = family;
    source_->setCurrentIndex(std::max(0, source_->findData(name)));
    seeds_->setValue(family_ ? family_->spec.seeds : kDefaultSeeds);
    showSource();
    recheck();
}

QString SweepDialog::family() const { return family_ ? qs(family_->name) : QString(); }

void SweepDialog::showSource() {
    settings_->setVisible(!family_);
    if (!family_) {
        intro_->setText(tr("A sweep over the current configuration (<b>%1</b>): every combination of the "
                           "values below, each run with seeds 1 to N. Values are comma-separated, checked "
                           "as <tt>sweep --grid key=v1,v2</tt> checks them; the key <tt>preset</tt> compares "
                           "presets instead, as <tt>sweep --preset</tt> does.")
                            .arg(qs(preset_).toHtmlEscaped()));
        return;
    }
    QStringList grid;
    for (const auto& [key, values] : family_->spec.grid) {
        QStringList v;
        for (const std::string& value : values) v << qs(value);
        grid << QStringLiteral("%1=%2").arg(qs(key), v.join(QLatin1Char(',')));
    }
    QStringList presets;
    for (const std::string& p : family_->spec.presets) presets << qs(p);
    intro_->setText(
        tr("%1<br><br>Presets: %2%3. The same sweep as <tt>sweep --family %4</tt> with these seeds "
           "and steps: runs it has already finished in this database are kept, not run again.")
            .arg(qs(family_->description).toHtmlEscaped(), presets.join(QStringLiteral(", ")).toHtmlEscaped(),
                 grid.isEmpty() ? QString() : tr("; grid: %1").arg(grid.join(QStringLiteral(" ")).toHtmlEscaped()),
                 qs(family_->name)));
}

void SweepDialog::addSetting(const QString& key, const QString& values) {
    SettingRow row;
    row.box = new QWidget(this);
    auto* h = new QHBoxLayout(row.box);
    h->setContentsMargins(0, 0, 0, 0);
    row.key = new QComboBox(row.box);
    row.key->setObjectName(QStringLiteral("sweepKey"));
    row.key->setEditable(true);
    row.key->setInsertPolicy(QComboBox::NoInsert);
    row.key->setMinimumContentsLength(26);
    row.key->addItem(kPresetKey);
    row.key->setItemData(0,
                         tr("Presets to compare, as sweep --preset A --preset B: each configuration starts from "
                            "its preset instead of the current configuration, the other rows set on top"),
                         Qt::ToolTipRole);
    for (const ConfigKey& k : config_schema()) {
        if (k.key == "seed") continue;  // the seeds are their own field
        row.key->addItem(qs(k.key));
        row.key->setItemData(row.key->count() - 1, qs(k.tooltip()), Qt::ToolTipRole);
    }
    // Searchable: typing any part of a key ("is_upper") finds it.
    row.key->completer()->setFilterMode(Qt::MatchContains);
    row.key->completer()->setCompletionMode(QCompleter::PopupCompletion);
    row.key->lineEdit()->setPlaceholderText(tr("setting key, e.g. correction.is_upper"));
    row.key->setCurrentIndex(-1);
    row.key->setEditText(key);
    row.current = new QLabel(row.box);
    row.current->setObjectName(QStringLiteral("sweepKeyNow"));
    row.current->setStyleSheet(QStringLiteral("color: %1").arg(palette::secondaryText().name()));
    row.current->setMinimumWidth(150);
    row.values = new QLineEdit(values, row.box);
    row.values->setObjectName(QStringLiteral("sweepValues"));
    row.values->setPlaceholderText(tr("v1,v2,..."));
    auto* remove = new QToolButton(row.box);
    remove->setText(QStringLiteral("\u2212"));
    remove->setToolTip(tr("Remove this setting from the sweep"));
    h->addWidget(row.key, 3);
    h->addWidget(row.current, 2);
    h->addWidget(row.values, 3);
    h->addWidget(remove);
    rowsLayout_->addWidget(row.box);
    rows_.append(row);
    QWidget* box = row.box;
    connect(row.key, &QComboBox::editTextChanged, this, [this, box] {
        for (SettingRow& r : rows_)
            if (r.box == box) describeKey(r);
        recheck();
    });
    connect(row.values, &QLineEdit::textChanged, this, [this] { recheck(); });
    connect(remove, &QToolButton::clicked, this, [this, box] {
        for (int i = 0; i < rows_.size(); ++i)
            if (rows_[i].box == box) rows_.removeAt(i);
        box->deleteLater();
        recheck();
    });
    describeKey(rows_.back());
    recheck();
}

void SweepDialog::setSeeds(int seeds) { seeds_->setValue(seeds); }
void SweepDialog::setSteps(int steps) { steps_->setValue(steps); }

void SweepDialog::describeKey(SettingRow& row) {
    const std::string key = row.key->currentText().trimmed().toStdString();
    if (qs(key) == kPresetKey) {
        row.current->setText(tr("in place of %1").arg(qs(preset_)));
        row.current->setToolTip(row.key->itemData(0, Qt::ToolTipRole).toString());
        row.values->setPlaceholderText(tr("e.g. verl-icepop,verl-seq-mis"));
        return;
    }
    const ConfigKey* k = find_config_key(key);
    if (!k) {
        row.current->clear();
        row.current->setToolTip({});
        row.values->setPlaceholderText(tr("v1,v2,..."));
        return;
    }
    row.current->setText(tr("now %1 \u00B7 %2").arg(qs(config_value_text(base_, key)), qs(k->range_text())));
    row.current->setToolTip(qs(k->tooltip()));
    row.values->setPlaceholderText(k->type == ValueType::enumeration || k->type == ValueType::boolean
                                       ? qs(k->range_text()).remove(QLatin1Char(' '))
                                       : tr("v1,v2,..."));
}

void SweepDialog::recheck() {
    QString error;
    SweepSpec spec;
    spec.seeds = seeds_->value();
    spec.steps = steps_->value();
    std::vector<SweepConfig> configs;
    try {
        if (family_) {
            spec = family_->spec;
            spec.seeds = seeds_->value();
            if (steps_->value() > 0) spec.steps = steps_->value();
            configs = expand_sweep(spec, sweepPreset);
        }
        for (const SettingRow& r : family_ ? QList<SettingRow>() : rows_) {
            const QString key = r.key->currentText().trimmed(), values = r.values->text().trimmed();
            if (key.isEmpty() && values.isEmpty()) continue;  // a row not filled in yet
            if (key.isEmpty())
                throw ConfigError(
                    tr("values '%1' have no setting key; allowed: a key from the list").arg(values).toStdString());
            if (key == kPresetKey) {
                // Checked as a grid's values are (none empty, none twice); the
                // names themselves by the expansion.
                SweepSpec presets;
                add_grid_option(presets, (key + QLatin1Char('=') + values).toStdString());
                if (!spec.presets.empty())
                    throw ConfigError("preset is given twice; allowed: one row of presets, joined by ','");
                spec.presets = presets.grid.front().second;
                continue;
            }
            if (!find_config_key(key.toStdString()) && key != QLatin1String("seed")) {
                // apply_set names the key and suggests the nearest ones.
                Config probe = base_;
                apply_set(probe, key.toStdString() + "=" + values.section(',', 0, 0).toStdString());
            }
            add_grid_option(spec, (key + QLatin1Char('=') + values).toStdString());
        }
        if (!family_)
            configs = spec.presets.empty() ? expand_sweep(spec, preset_, base_) : expand_sweep(spec, sweepPreset);
    } catch (const ConfigError& e) {
        error = fieldMessage(e.what());
        configs.clear();
    }
    // What 0 steps means for this sweep (a family's spec names its presets).
    steps_->setSpecialValueText(family_ && family_->spec.steps > 0
                                    ? tr("as the family has it (%1)").arg(family_->spec.steps)
                                : spec.presets.empty() ? tr("as configured (%1)").arg(base_.rl.steps)
                                                       : tr("as each preset has it"));
    spec_ = spec;
    configs_ = std::move(configs);
    error_->setText(error);
    error_->setVisible(!error.isEmpty());
    QStringList warnings;
    for (const std::string& w : sweep_warnings(spec_, configs_)) warnings << qs(w);
    warning_->setText(warnings.join(QLatin1Char('\n')));
    warning_->setVisible(!warnings.isEmpty());
    summary_->setText(summaryText());
    buttons_->button(QDialogButtonBox::Ok)->setEnabled(acceptable());
}

QString SweepDialog::errorText() const { return error_->text(); }

QString SweepDialog::warningText() const { return warning_->text(); }

QString SweepDialog::summaryText() const {
    if (configs_.empty()) return tr("Nothing to queue until the sweep is valid");
    const int n = static_cast<int>(configs_.size());
    return tr("%1 %2 \u00D7 %3 %4 = %5 %6")
        .arg(n)
        .arg(n == 1 ? tr("configuration") : tr("configurations"))
        .arg(spec_.seeds)
        .arg(spec_.seeds == 1 ? tr("seed") : tr("seeds"))
        .arg(runCount())
        .arg(runCount() == 1 ? tr("run") : tr("runs"));
}

bool SweepDialog::acceptable() const { return !configs_.empty() && errorText().isEmpty(); }

}  // namespace mlk
