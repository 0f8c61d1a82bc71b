// ConfigForm: every schema key through its editor, JSON round trips, rejected
// pastes that change nothing, in-place marking of invalid combinations, presets.
// A flagged field as drawn (border, fill, marker, tooltip). MLK_SCREENSHOT_DIR=<dir>
// also saves <dir>/form.png and <dir>/form_default.png (400 x 900).
#include <cmath>
#include <optional>

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QGuiApplication>
#include <QLabel>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QImage>
#include <QTest>

#include "core/engines/device.h"
#include "core/config/config.h"
#include "core/config/presets.h"
#include "core/rl/footprint.h"
#include "tests/screenshot.h"
#include "widgets/panels/bounded_spin_box.h"
#include "widgets/panels/config_form.h"

using namespace mlk;
using nlohmann::json;

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

bool inRange(const ConfigKey& k, double x) {
    const bool lo = k.min_exclusive ? x > k.min : x >= k.min;
    const bool hi = k.max_exclusive ? x < k.max : x <= k.max;
    return lo && hi;
}

// A non-default allowed value for a number key, as the text a user types.
std::optional<QString> numberCandidate(const ConfigKey& k) {
    const double def = k.default_value.get<double>();
    for (const char* text : {"1.001", "1e-4", "0.37", "2.5", "7", "0.999", "150"}) {
        const double x = std::stod(text);
        if (x != def && inRange(k, x)) return QString::fromLatin1(text);
    }
    return std::nullopt;
}

// The form's marks (config_form.cpp's style sheet): an error's border and fill.
const QColor kErrorBorder(0xd3, 0x2f, 0x2f);
const QColor kErrorFill(0xff, 0xf5, 0xf5);
const QColor kErrorInk(0xb7, 0x1c, 0x1c);

// The part of `w` shown on screen, in the coordinates of `top`.
QRect shownRect(const QWidget* top, const QWidget* w) {
    return w->visibleRegion().boundingRect().translated(w->mapTo(top, QPoint(0, 0)));
}

// Pixels of `img` inside `rect` whose channels are each within `tol` of `c`.
int pixelsNear(const QImage& img, const QRect& rect, const QColor& c, int tol) {
    int n = 0;
    const QRect r = rect.intersected(img.rect());
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) {
            const QColor p = img.pixelColor(x, y);
            if (std::abs(p.red() - c.red()) <= tol && std::abs(p.green() - c.green()) <= tol &&
                std::abs(p.blue() - c.blue()) <= tol)
                ++n;
        }
    return n;
}

void typeInto(QLineEdit* le, const QString& text) {
    le->setFocus();
    le->selectAll();
    QTest::keyClick(le, Qt::Key_Delete);
    QTest::keyClicks(le, text);
}

}  // namespace

class ConfigFormTest : public QObject {
    Q_OBJECT
private slots:
    void everyKeyThroughItsEditor();
    void numbersAreExact();
    void jsonRoundTrip();
    void malformedJsonChangesNothing();
    void unknownKeyChangesNothing();
    void invalidComboRejectedOnPaste();
    void pasteFromClipboard();
    void invalidCombinationMarksBothControls();
    void deviceThisMachineLacksBlocksStart();
    void aSettingTheProfileOverridesIsInvalid();
    void aNumberBeyondItsRangeSaysTheLimit();
    void warningsMarkKeys();
    void ineffectiveKeysAreGreyedWithTheReason();
    void presetPickerLoadsPreset();
    void everyControlHasItsTooltip();
    void sectionsFollowSchema();
    void flaggedFieldIsDrawnFlagged();
    void footprintFollowsTheModel();
    void autoSaysWhatItStandsFor();
};

void ConfigFormTest::everyKeyThroughItsEditor() {
    int tested = 0;
    for (const ConfigKey& k : config_schema()) {
        ConfigForm form;
        form.setConfig(Config{});
        QWidget* ed = form.editor(qs(k.key));
        QVERIFY2(ed, k.key.c_str());
        QCOMPARE(ed->objectName(), qs(k.key));
        json expected;
        switch (k.type) {
            case ValueType::boolean: {
                auto* cb = qobject_cast<QCheckBox*>(ed);
                QVERIFY2(cb, k.key.c_str());
                const bool before = cb->isChecked();
                QCOMPARE(before, k.default_value.get<bool>());
                QTest::mouseClick(cb, Qt::LeftButton, {}, QPoint(cb->height() / 2, cb->height() / 2));
                if (cb->isChecked() == before) cb->click();  // style-dependent indicator position
                QCOMPARE(cb->isChecked(), !before);
                expected = !before;
                break;
            }
            case ValueType::enumeration: {
                auto* combo = qobject_cast<QComboBox*>(ed);
                QVERIFY2(combo, k.key.c_str());
                QCOMPARE(combo->count(), static_cast<int>(k.allowed.size()));
                const int i = (combo->currentIndex() + 1) % combo->count();
                combo->setCurrentIndex(i);
                expected = k.allowed[static_cast<size_t>(i)];
                break;
            }
            case ValueType::integer: {
                const int64_t def = k.default_value.get<int64_t>();
                int64_t v = def + 1;
                if (!inRange(k, static_cast<double>(v))) v = def - 1;
                if (k.key == "seed") v = 123456789012345;  // beyond int: the seed needs 53 bits
                QVERIFY2(inRange(k, static_cast<double>(v)), k.key.c_str());
                if (auto* sb = qobject_cast<QSpinBox*>(ed)) {
                    sb->setFocus();
                    sb->setValue(static_cast<int>(v));
                } else {
                    auto* le = qobject_cast<QLineEdit*>(ed);
                    QVERIFY2(le, k.key.c_str());
                    typeInto(le, QString::number(v));
                }
                expected = v;
                break;
            }
            case ValueType::number: {
                auto* le = qobject_cast<QLineEdit*>(ed);
                QVERIFY2(le, k.key.c_str());
                QCOMPARE(le->text(), qs(config_value_text(Config{}, k.key)));
                const auto text = numberCandidate(k);
                QVERIFY2(text, k.key.c_str());
                typeInto(le, *text);
                expected = std::stod(text->toStdString());
                break;
            }
            case ValueType::text: {  // the layer list, the only text key
                auto* le = qobject_cast<QLineEdit*>(ed);
                QVERIFY2(le, k.key.c_str());
                QCOMPARE(le->text(), qs(config_value_text(Config{}, k.key)));
                typeInto(le, QStringLiteral("1"));
                expected = "1";
                break;
            }
        }
        const json got = config_get(form.config(), k.key);
        QVERIFY2(got == expected, (k.key + ": got " + got.dump() + ", expected " + expected.dump()).c_str());
        QVERIFY2(got != k.default_value, k.key.c_str());

        // The shareable JSON carries the change; a second form reproduces it
        // exactly when the config is valid, and refuses it unchanged otherwise.
        ConfigForm other;
        const Config before = other.config();
        QString err;
        const bool ok = other.fromJson(form.toJson(), &err);
        // A paste takes every valid config, also one for a device this machine
        // lacks (rollout.device = cuda without a GPU), which the form then marks.
        bool config_valid = true;
        try {
            validate(form.config());
        } catch (const ConfigError&) {
            config_valid = false;
        }
        QCOMPARE(ok, config_valid);
        if (ok) {
            QVERIFY2(other.config() == form.config(), k.key.c_str());
            QVERIFY2(config_get(other.config(), k.key) == expected, k.key.c_str());
        } else {
            QVERIFY(other.config() == before);
            QVERIFY2(!err.isEmpty(), k.key.c_str());
        }
        ++tested;
    }
    QCOMPARE(tested, static_cast<int>(config_schema().size()));
}

void ConfigFormTest::numbersAreExact() {
    ConfigForm form;
    auto* lo = qobject_cast<QLineEdit*>(form.editor("correction.veto_threshold"));
    auto* up = qobject_cast<QLineEdit*>(form.editor("correction.is_upper"));
    QVERIFY(lo && up);
    typeInto(lo, "1e-4");
    typeInto(up, "1.001");
    QCOMPARE(form.config().correction.veto_threshold, 1e-4);
    QCOMPARE(form.config().correction.is_upper, 1.001);
    // Text that does not parse is an error in place, keeps the last good value.
    up->setText("1.0.1");
    QVERIFY(!form.isValid());
    QCOMPARE(form.keyState("correction.is_upper"), QString("error"));
    QCOMPARE(form.config().correction.is_upper, 1.001);
    // Out of range (is_upper > 0 exclusive)
    typeInto(up, "0");
    QVERIFY(!form.isValid());
    QVERIFY(form.keyMessage("correction.is_upper").contains("out of range"));
    typeInto(up, "3");
    QVERIFY(form.isValid());
    // Valid; but the defaults apply no correction, so a changed bound is a
    // warning that says why (at its default it would only be greyed).
    QCOMPARE(form.keyState("correction.is_upper"), QString("warning"));
    QVERIFY(form.keyMessage("correction.is_upper").contains("rl.old_policy=recompute applies no correction"));
    typeInto(up, "2");
    QCOMPARE(form.keyState("correction.is_upper"), QString("ignored"));
}

void ConfigFormTest::jsonRoundTrip() {
    ConfigForm a;
    Config c = preset_config("verl-icepop");
    c.seed = 9007199254740991LL;
    c.rl.gspo_eps_low = 3e-4;
    c.optim.eps = 1e-8;
    a.setConfig(c);
    QVERIFY(a.isValid());
    const QString j = a.toJson();
    const json parsed = json::parse(j.toStdString());
    QCOMPARE(parsed["seed"].get<int64_t>(), 9007199254740991LL);
    QVERIFY(parsed == config_to_json(c));
    ConfigForm b;
    QVERIFY(b.fromJson(j));
    QVERIFY(b.config() == c);
    QCOMPARE(b.toJson(), j);
    QVERIFY(b.lastMessage().isEmpty());
    // Dotted form is accepted too; missing keys take defaults.
    QVERIFY(b.fromJson(R"({"rollout.precision": "fp32", "kernels": {"batch_invariant": true}})"));
    QCOMPARE(b.config().rollout.precision, Dtype::f32);
    QVERIFY(b.config().kernels.batch_invariant);
    QCOMPARE(b.config().seed, Config{}.seed);
}

void ConfigFormTest::malformedJsonChangesNothing() {
    ConfigForm form;
    Config c = preset_config("r3-tis");
    c.seed = 42;
    form.setConfig(c);
    const QString before = form.toJson();
    QSignalSpy changed(&form, &ConfigForm::configChanged);
    QString err;
    QVERIFY(!form.fromJson(R"({"rl": {"eps_low": 0.1,)", &err));
    QVERIFY2(err.contains("Malformed JSON"), qPrintable(err));
    QVERIFY2(err.contains("parse error"), qPrintable(err));
    QCOMPARE(form.lastMessage(), err);
    QVERIFY(form.findChild<QWidget*>("banner")->isVisibleTo(&form));
    QCOMPARE(form.toJson(), before);
    QVERIFY(form.config() == c);
    QCOMPARE(changed.count(), 0);
    // not an object
    QVERIFY(!form.fromJson("[1, 2]", &err));
    QVERIFY(err.contains("JSON object"));
    QVERIFY(form.config() == c);
}

void ConfigFormTest::unknownKeyChangesNothing() {
    ConfigForm form;
    Config c;
    c.rl.eps_high = 0.27;
    form.setConfig(c);
    QString err;
    QVERIFY(!form.fromJson(R"({"rl": {"eps_hihg": 0.3}})", &err));
    QVERIFY2(err.contains("rl.eps_hihg"), qPrintable(err));
    QVERIFY2(err.contains("rl.eps_high"), qPrintable(err));  // the suggestion
    QVERIFY(form.config() == c);
    // wrong type / out of range name the key too
    QVERIFY(!form.fromJson(R"({"rollout": {"top_p": 2}})", &err));
    QVERIFY2(err.contains("rollout.top_p"), qPrintable(err));
    QVERIFY(form.config() == c);
}

void ConfigFormTest::invalidComboRejectedOnPaste() {
    ConfigForm form;
    const Config before = form.config();
    QString err;
    QVERIFY(!form.fromJson(R"({"correction": {"is_lower": 5, "is_upper": 2}})", &err));
    QVERIFY2(err.contains("correction.is_lower") && err.contains("correction.is_upper"), qPrintable(err));
    QVERIFY(form.config() == before);
}

void ConfigFormTest::pasteFromClipboard() {
    QClipboard* cb = QGuiApplication::clipboard();
    QVERIFY(cb);
    ConfigForm a;
    Config c;
    c.seed = 77;
    c.model.kind = ModelKind::moe;
    c.moe.routing_replay = RoutingReplay::R3;
    a.setConfig(c);
    a.copyJsonToClipboard();
    if (cb->text() != a.toJson()) QSKIP("this platform has no clipboard");
    ConfigForm b;
    QVERIFY(b.pasteJsonFromClipboard());
    QVERIFY(b.config() == c);
    cb->setText("{not json");
    QVERIFY(!b.pasteJsonFromClipboard());
    QVERIFY(b.lastMessage().contains("Malformed JSON"));
    QVERIFY(b.config() == c);
}

void ConfigFormTest::deviceThisMachineLacksBlocksStart() {
    if (cuda_devices() > 0) QSKIP("a CUDA device is present");
    ConfigForm form;
    auto* device = qobject_cast<QComboBox*>(form.editor("rollout.device"));
    QVERIFY(device);
    QCOMPARE(device->currentText(), QString("cpu"));
    QVERIFY(form.isValid());
    device->setCurrentText("cuda");
    QCOMPARE(form.config().rollout.device, Device::cuda);
    QVERIFY(!form.isValid());
    QCOMPARE(form.keyState("rollout.device"), QString("error"));
    QVERIFY(form.keyMessage("rollout.device").contains("allowed here: cpu"));
    QVERIFY(form.findChild<QLabel*>("validationStatus")->text().contains("rollout.device = cuda"));
    device->setCurrentText("cpu");
    QVERIFY(form.isValid());
    QCOMPARE(form.keyState("rollout.device"), QString());
}

void ConfigFormTest::invalidCombinationMarksBothControls() {
    ConfigForm form;
    form.setConfig(Config{});
    QVERIFY(form.isValid());
    QSignalSpy validity(&form, &ConfigForm::validityChanged);
    auto* lo = qobject_cast<QLineEdit*>(form.editor("correction.is_lower"));
    auto* up = qobject_cast<QLineEdit*>(form.editor("correction.is_upper"));
    QVERIFY(lo && up);
    typeInto(up, "2");
    typeInto(lo, "3");
    QVERIFY(!form.isValid());
    QVERIFY(validity.count() >= 1);
    QCOMPARE(validity.last().at(0).toBool(), false);
    QCOMPARE(form.keyState("correction.is_lower"), QString("error"));
    QCOMPARE(form.keyState("correction.is_upper"), QString("error"));
    QCOMPARE(lo->property("mlkState").toString(), QString("error"));
    QCOMPARE(up->property("mlkState").toString(), QString("error"));
    QVERIFY(lo->toolTip().contains("must not exceed"));
    QVERIFY(up->toolTip().contains("must not exceed"));
    QCOMPARE(form.keyState("rl.eps_low"), QString());
    QCOMPARE(form.errorMessages().size(), 1);
    QVERIFY(form.findChild<QLabel*>("validationStatus")->text().contains("must not exceed"));
    // fixing it clears the marks and reports validity
    typeInto(lo, "0.5");
    QVERIFY(form.isValid());
    QCOMPARE(validity.last().at(0).toBool(), true);
    // (still a warning: truncate ignores is_lower)
    QCOMPARE(form.keyState("correction.is_lower"), QString("warning"));
    QCOMPARE(form.keyState("correction.is_upper"), QString("ignored"));
    QCOMPARE(up->property("mlkState").toString(), QString("ignored"));
    // a cross-section combination: R3 on a dense model
    auto* rr = qobject_cast<QComboBox*>(form.editor("moe.routing_replay"));
    rr->setCurrentIndex(rr->findText("R3"));
    QVERIFY(!form.isValid());
    QCOMPARE(form.keyState("moe.routing_replay"), QString("error"));
    QCOMPARE(form.keyState("model.kind"), QString("error"));
}

// A numerics setting the profile overrides is invalid, not greyed and kept:
// the message names the key that decides instead.
void ConfigFormTest::aSettingTheProfileOverridesIsInvalid() {
    ConfigForm form;
    Config c;
    c.rollout.profile = NumericsProfile::vllm_bf16;
    form.setConfig(c);
    QVERIFY(form.isValid());
    QCOMPARE(form.keyState("rollout.precision"), QString("ignored"));
    auto* precision = qobject_cast<QComboBox*>(form.editor("rollout.precision"));
    QVERIFY(precision);
    precision->setCurrentIndex(precision->findData(QStringLiteral("fp8_e4m3")));
    QVERIFY(!form.isValid());
    QCOMPARE(form.keyState("rollout.precision"), QString("error"));
    QCOMPARE(form.keyState("rollout.matmul_dtype"), QString("error"));
    QVERIFY(form.findChild<QLabel*>("validationStatus")->text().contains("rollout.matmul_dtype"));
    form.resize(900, 700);
    QVERIFY(testing_shots::save(precision->parentWidget(), QStringLiteral("form_rollout_numerics_refused")));
    QVERIFY(testing_shots::save(form.findChild<QLabel*>("validationStatus"), QStringLiteral("form_status_refused")));
    auto* matmul = qobject_cast<QComboBox*>(form.editor("rollout.matmul_dtype"));
    precision->setCurrentIndex(precision->findData(QStringLiteral("bf16")));
    matmul->setCurrentIndex(matmul->findData(QStringLiteral("fp8_e4m3")));
    QVERIFY(form.isValid());
    QCOMPARE(form.config().rollout.matmul_dtype, PointDtype::fp8_e4m3);
}

// Typing 999999 into Layers left "9" and "Configuration valid", with no
// word of the maximum: the number stays as typed until editing ends, then
// goes to the maximum, and the box says why.
void ConfigFormTest::aNumberBeyondItsRangeSaysTheLimit() {
    ConfigForm form;
    form.setConfig(Config{});
    auto* layers = qobject_cast<BoundedSpinBox*>(form.editor("model.num_layers"));
    QVERIFY(layers);
    QSignalSpy clamped(layers, &BoundedSpinBox::clamped);
    layers->selectAll();
    QTest::keyClicks(layers, QStringLiteral("999999"));
    QCOMPARE(layers->text(), QStringLiteral("999999"));  // kept as typed while editing
    QTest::keyClick(layers, Qt::Key_Return);
    QCOMPARE(layers->value(), layers->maximum());
    QCOMPARE(clamped.count(), 1);
    QVERIFY2(layers->lastClamp().contains(QStringLiteral("999999 is above the maximum %1").arg(layers->maximum())),
             qPrintable(layers->lastClamp()));
    QCOMPARE(form.config().model.num_layers, layers->maximum());
    // A number in range says nothing.
    layers->selectAll();
    QTest::keyClicks(layers, QStringLiteral("3"));
    QTest::keyClick(layers, Qt::Key_Return);
    QCOMPARE(layers->value(), 3);
    QCOMPARE(clamped.count(), 1);
    QVERIFY(layers->lastClamp().isEmpty());
}

void ConfigFormTest::warningsMarkKeys() {
    QCOMPARE(ConfigForm::keysInMessage("correction.is_level / rs_level / veto_threshold have no effect with "
                                       "rl.old_policy=recompute"),
             (QStringList{"rl.old_policy", "correction.is_level", "correction.rs_level", "correction.veto_threshold"}));
    ConfigForm form;
    Config c;
    c.correction.is_level = IsLevel::token;  // no effect with recompute: a warning, still valid
    form.setConfig(c);
    QVERIFY(form.isValid());
    QVERIFY(!form.warningMessages().isEmpty());
    QCOMPARE(form.keyState("correction.is_level"), QString("warning"));
    QCOMPARE(form.keyState("rl.old_policy"), QString("warning"));
}

// IS bounds under correction.is_level=off and GSPO's clip under the PPO loss
// must not look as if they acted: they are greyed, saying why, and come back
// when they act.
void ConfigFormTest::ineffectiveKeysAreGreyedWithTheReason() {
    ConfigForm form;
    Config c;
    c.rl.old_policy = OldPolicyMode::decoupled;
    form.setConfig(c);
    QCOMPARE(form.keyState("correction.is_upper"), QString("ignored"));
    QVERIFY(form.keyMessage("correction.is_upper").contains("correction.is_level is off"));
    QCOMPARE(form.keyState("rl.gspo_eps_high"), QString("ignored"));
    QVERIFY(form.keyMessage("rl.gspo_eps_high").contains("rl.loss=gspo"));
    QCOMPARE(form.keyState("rl.eps_high"), QString());
    QVERIFY(form.editor("correction.is_upper")->toolTip().contains("Ignored"));
    c.correction.is_level = IsLevel::token;
    c.rl.loss = PolicyLossType::gspo;
    form.setConfig(c);
    QCOMPARE(form.keyState("correction.is_upper"), QString());
    QCOMPARE(form.keyState("rl.gspo_eps_high"), QString());
    QCOMPARE(form.keyState("rl.eps_high"), QString("ignored"));
    QVERIFY(form.isValid());
}

void ConfigFormTest::presetPickerLoadsPreset() {
    ConfigForm form;
    QSignalSpy changed(&form, &ConfigForm::configChanged);
    auto* combo = form.findChild<QComboBox*>("presetCombo");
    QVERIFY(combo);
    // Every preset once, under its group's header (which carries no data and
    // cannot be picked).
    int items = 0, headers = 0;
    for (int i = 0; i < combo->count(); ++i) {
        if (combo->itemData(i).isValid()) {
            ++items;
            QVERIFY(!combo->itemData(i, Qt::ToolTipRole).toString().isEmpty());
        } else {
            ++headers;
        }
    }
    QCOMPARE(items, static_cast<int>(presets().size()));
    QCOMPARE(headers, static_cast<int>(preset_groups().size()));
    QVERIFY(headers >= 5);
    const QString target = "verl-icepop";
    const int idx = combo->findData(target);
    QVERIFY(idx > 0);
    // user-like: step onto it with the keyboard (emits activated)
    combo->setCurrentIndex(idx - 1);
    combo->setFocus();
    QTest::keyClick(combo, Qt::Key_Down);
    QCOMPARE(combo->currentIndex(), idx);
    QCOMPARE(form.presetName(), target);
    QVERIFY(form.config() == preset_config(target.toStdString()));
    QVERIFY(!form.modifiedFromPreset());
    QVERIFY(changed.count() >= 1);
    const QString desc = qs(find_preset(target.toStdString())->description);
    QVERIFY(form.findChild<QLabel*>("presetDescription")->text().contains(desc.left(30).toHtmlEscaped()));
    QCOMPARE(qobject_cast<QComboBox*>(form.editor("correction.is_mode"))->currentText(),
             qs(config_value_text(preset_config(target.toStdString()), "correction.is_mode")));
    // API and an unknown name
    QVERIFY(form.setPreset("r3-gspo"));
    QVERIFY(form.config() == preset_config("r3-gspo"));
    const Config keep = form.config();
    QVERIFY(!form.setPreset("no-such-preset"));
    QVERIFY(form.config() == keep);
    QVERIFY(form.lastMessage().contains("no-such-preset"));
    // an edit leaves the preset name but reports the modification
    auto* seed = qobject_cast<QLineEdit*>(form.editor("seed"));
    typeInto(seed, "5");
    QVERIFY(form.modifiedFromPreset());
    QCOMPARE(form.presetName(), QString("r3-gspo"));
    QVERIFY(form.findChild<QLabel*>("presetDescription")->text().contains("seed"));
}

void ConfigFormTest::everyControlHasItsTooltip() {
    ConfigForm form;
    for (const ConfigKey& k : config_schema()) {
        const QString tip = form.editor(qs(k.key))->toolTip();
        QVERIFY2(tip.contains(qs(k.range_text()).toHtmlEscaped()), k.key.c_str());
        QVERIFY2(tip.contains(qs(k.description).left(25).toHtmlEscaped()), k.key.c_str());
        if (!k.verl.empty()) QVERIFY2(tip.contains(qs(k.verl).left(20).toHtmlEscaped()), k.key.c_str());
    }
}

void ConfigFormTest::sectionsFollowSchema() {
    ConfigForm form;
    QStringList headers;
    for (auto* b : form.findChildren<QWidget*>("mlkSectionHeader")) headers << b->property("section").toString();
    QStringList expected;
    for (const auto& s : config_sections()) expected << qs(s);
    QCOMPARE(headers, expected);
    form.setSectionExpanded("Optimizer", false);
    QVERIFY(!form.isSectionExpanded("Optimizer"));
    QVERIFY(form.isSectionExpanded("Task"));
}

void ConfigFormTest::flaggedFieldIsDrawnFlagged() {
    const QString dir = qEnvironmentVariable("MLK_SCREENSHOT_DIR");
    ConfigForm form;
    form.setPreset("verl-icepop");
    auto* lo = qobject_cast<QLineEdit*>(form.editor("correction.is_lower"));
    auto* up = qobject_cast<QLineEdit*>(form.editor("correction.is_upper"));
    typeInto(up, "2");
    typeInto(lo, "3");
    for (const char* section : {"Task", "Model", "Rollout engine", "Kernels"}) form.setSectionExpanded(section, false);
    form.resize(400, 900);
    form.show();
    QVERIFY(QTest::qWaitForWindowExposed(&form));
    form.setFocus();  // no focus frame on the editors checked below
    QTest::qWait(20);
    const QImage shot = form.grab().toImage();
    if (!dir.isEmpty()) QVERIFY(shot.save(dir + "/form.png"));

    // The flagged field: red border and pale red fill where it is drawn, the
    // critical marker beside it with the message as tooltip, a red label.
    const QRect loRect = shownRect(&form, lo);
    QVERIFY2(loRect.height() >= 10, "correction.is_lower is scrolled out of view");
    QVERIFY(pixelsNear(shot, loRect, kErrorBorder, 8) >= loRect.height());
    QVERIFY(pixelsNear(shot, loRect, kErrorFill, 2) > loRect.width() * loRect.height() / 4);
    QLabel* marker = nullptr;
    for (auto* l : lo->parentWidget()->findChildren<QLabel*>())
        if (l->toolTip().contains("must not exceed")) marker = l;
    QVERIFY(marker);
    QVERIFY(!marker->pixmap().isNull());
    QVERIFY(lo->toolTip().startsWith("<p style='color:#b71c1c'>"));
    QLabel* label = nullptr;
    for (auto* l : form.findChildren<QLabel*>())
        if (l->buddy() == lo) label = l;
    QVERIFY(label);
    QVERIFY(pixelsNear(shot, shownRect(&form, label), kErrorInk, 40) >= 3);
    // A field with nothing to say is drawn plain.
    const QRect epsRect = shownRect(&form, form.editor("rl.eps_low"));
    QVERIFY(epsRect.height() >= 10);
    QCOMPARE(pixelsNear(shot, epsRect, kErrorBorder, 8), 0);
    QCOMPARE(pixelsNear(shot, epsRect, kErrorFill, 2), 0);
    // The status area lists the error in words.
    QVERIFY(form.findChild<QLabel*>("validationStatus")->text().contains("correction.is_lower"));

    ConfigForm plain;
    plain.resize(400, 900);
    plain.show();
    QVERIFY(QTest::qWaitForWindowExposed(&plain));
    const QImage plainShot = plain.grab().toImage();
    if (!dir.isEmpty()) QVERIFY(plainShot.save(dir + "/form_default.png"));
    QVERIFY(plain.findChild<QLabel*>("validationStatus")->text().contains("Configuration valid"));
    QCOMPARE(pixelsNear(plainShot, QRect(QPoint(0, 0), plainShot.size()), kErrorFill, 2), 0);
}

// The line under the Model section gives the model's parameters, memory and
// step time, follows every model edit, and has no numbers for a model that
// cannot be built.
void ConfigFormTest::footprintFollowsTheModel() {
    ConfigForm form;
    form.setConfig(Config{});
    auto* label = form.findChild<QLabel*>("modelFootprint");
    QVERIFY(label);
    const auto params = [](const Config& c) {
        return QString::fromStdString(footprint_text(model_footprint(c))).section(QLatin1Char(' '), 0, 0);
    };
    QVERIFY2(label->text().contains(QStringLiteral("102.0k parameters")), qPrintable(label->text()));
    auto* layers = qobject_cast<QSpinBox*>(form.editor("model.num_layers"));
    QVERIFY(layers);
    layers->setFocus();
    layers->setValue(6);
    Config six;
    six.model.num_layers = 6;
    QVERIFY2(label->text().contains(params(six) + QStringLiteral(" parameters")), qPrintable(label->text()));
    QVERIFY(label->text().contains(QStringLiteral("per RL step")));
    auto* headDim = qobject_cast<QSpinBox*>(form.editor("model.head_dim"));
    headDim->setFocus();
    headDim->setValue(15);
    QVERIFY(!form.isValid());
    QCOMPARE(form.keyState("model.head_dim"), QString("error"));
    QVERIFY2(!label->text().contains(QStringLiteral("parameters")), qPrintable(label->text()));
    headDim->setValue(0);
    QVERIFY(form.isValid());
    QVERIFY(label->text().contains(params(six)));
}

// A rounding point left at auto names the profile's choice, and follows the
// profile when it changes; the value stored stays "auto".
void ConfigFormTest::autoSaysWhatItStandsFor() {
    ConfigForm form;
    form.setConfig(preset_config("production-moe-deep"));  // vllm-bf16 rollout, fsdp-bf16 training
    auto autoText = [&](const char* key) {
        auto* combo = qobject_cast<QComboBox*>(form.editor(key));
        return combo ? combo->itemText(combo->findData(QStringLiteral("auto"))) : QString();
    };
    QCOMPARE(autoText("rollout.rope_dtype"), QString("auto (fp32)"));
    QCOMPARE(autoText("train.rope_dtype"), QString("auto (bf16)"));
    QCOMPARE(autoText("train.residual_dtype"), QString("auto (bf16)"));
    QCOMPARE(autoText("rollout.kv_cache_dtype"), QString("auto (bf16)"));
    QCOMPARE(autoText("rollout.attn_softmax"), QString("auto (online)"));
    auto* profile = qobject_cast<QComboBox*>(form.editor("train.profile"));
    QVERIFY(profile);
    profile->setCurrentIndex(profile->findData(QStringLiteral("fp32-reference")));
    QCOMPARE(autoText("train.residual_dtype"), QString("auto (fp32)"));
    QCOMPARE(autoText("train.rope_dtype"), QString("auto (fp32)"));
    QCOMPARE(autoText("train.matmul_dtype"), QString("auto (fp32)"));
    QCOMPARE(form.config().train.residual_dtype, PointDtype::auto_);
}

QTEST_MAIN(ConfigFormTest)
#include "config_form_test.moc"
