// The sweep dialog as a user fills it: a bad key or value is refused in place
// naming the key and what it allows, with Queue disabled and no sweep to
// queue; a valid grid shows its size and expands as the CLI expands it; a
// grid key no configuration reads is a warning.
// Screenshots go to $MLK_SCREENSHOT_DIR when it is set.
#include <QComboBox>
#include <QDialogButtonBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTest>

#include "core/config/presets.h"
#include "tests/screenshot.h"
#include "widgets/panels/bounded_spin_box.h"
#include "widgets/panels/sweep_dialog.h"

using namespace mlk;

class SweepDialogTest : public QObject {
    Q_OBJECT

    static QPushButton* queueButton(SweepDialog& d) {
        return d.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    }
    // Types into the first setting row, as a user does.
    static void typeFirstRow(SweepDialog& d, const QString& key, const QString& values) {
        auto* combo = d.findChildren<QComboBox*>(QStringLiteral("sweepKey")).front();
        combo->lineEdit()->clear();
        QTest::keyClicks(combo->lineEdit(), key);
        auto* edit = d.findChildren<QLineEdit*>(QStringLiteral("sweepValues")).front();
        edit->clear();
        QTest::keyClicks(edit, values);
    }

private slots:
    void badKeyIsRefusedNamingIt() {
        SweepDialog d(preset_config("r3-tis"), "r3-tis");
        d.show();
        typeFirstRow(d, "correction.is_uper", "2,5");
        QVERIFY(d.errorText().contains("correction.is_uper"));
        QVERIFY2(d.errorText().contains("correction.is_upper"), qPrintable(d.errorText()));  // the suggestion
        QVERIFY(!queueButton(d)->isEnabled());
        QVERIFY(d.configs().empty());
        QCOMPARE(d.runCount(), 0);
        // Queue pressed anyway (a shortcut, a stale enable): nothing is accepted.
        QTest::mouseClick(queueButton(d), Qt::LeftButton);
        QCOMPARE(d.result(), int(QDialog::Rejected));
    }

    void badValueIsRefusedNamingTheKeyAndWhatItAllows() {
        SweepDialog d(preset_config("r3-tis"), "r3-tis");
        d.resize(700, 330);
        d.show();
        typeFirstRow(d, "correction.is_upper", "1.5,abc");
        QVERIFY2(d.errorText().contains("correction.is_upper"), qPrintable(d.errorText()));
        QVERIFY(d.errorText().contains("abc"));
        QVERIFY(!queueButton(d)->isEnabled());
        // An enumeration names its allowed values.
        d.addSetting("correction.is_level", "token,bogus");
        typeFirstRow(d, "correction.is_upper", "1.5,2");
        QVERIFY2(d.errorText().contains("correction.is_level"), qPrintable(d.errorText()));
        QVERIFY(d.errorText().contains("geometric"));
        QVERIFY(!queueButton(d)->isEnabled());
        QVERIFY(d.findChild<QLabel*>("sweepError")->isVisible());
        testing_shots::save(&d, "sweep_dialog_error");
    }

    void seedsAndDuplicatesAreRefusedToo() {
        SweepDialog d(Config{}, "default");
        typeFirstRow(d, "seed", "1,2");
        QVERIFY2(d.errorText().contains("seed"), qPrintable(d.errorText()));
        QVERIFY(!d.acceptable());
        typeFirstRow(d, "optim.lr", "0.001,0.001");
        QVERIFY(d.errorText().contains("twice"));
        QVERIFY(!d.acceptable());
    }

    // Seeds = 0 showed 0 while the summary counted the previous 3: the
    // number typed goes to the minimum when editing ends, and the box says so.
    void seedsBelowTheMinimumSayTheLimitAndTheSummaryAgrees() {
        SweepDialog d(preset_config("default"), "default");
        d.show();
        d.addSetting("optim.lr", "0.001,0.002");
        auto* seeds = d.findChild<BoundedSpinBox*>("sweepSeeds");
        QVERIFY(seeds);
        seeds->selectAll();
        QTest::keyClicks(seeds, QStringLiteral("0"));
        QTest::keyClick(seeds, Qt::Key_Return);
        QCOMPARE(seeds->value(), 1);
        QVERIFY2(seeds->lastClamp().contains(QStringLiteral("Seeds: 0 is below the minimum 1")),
                 qPrintable(seeds->lastClamp()));
        QCOMPARE(d.findChild<QLabel*>("sweepSummary")->text(), QString("2 configurations \u00D7 1 seed = 2 runs"));
    }

    void validGridShowsItsSizeAndExpandsAsTheCliDoes() {
        Config base = preset_config("r3-tis");
        base.rl.steps = 40;
        SweepDialog d(base, "r3-tis");
        d.resize(700, 330);
        d.show();
        typeFirstRow(d, "is_upper", "");  // searchable: part of the key finds it
        typeFirstRow(d, "correction.is_upper", "1.5,2,5");
        d.addSetting("optim.lr", "0.001,0.002");
        d.setSeeds(4);
        QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
        QVERIFY(queueButton(d)->isEnabled());
        QCOMPARE(d.runCount(), 24);
        QCOMPARE(d.findChild<QLabel*>("sweepSummary")->text(), QString("6 configurations \u00D7 4 seeds = 24 runs"));
        // The current value is shown beside the key.
        QVERIFY(d.findChildren<QLabel*>("sweepKeyNow").front()->text().contains("now"));
        // The same expansion `sweep --preset r3-tis --grid ... --seeds 4` makes over this base.
        SweepSpec cli;
        add_grid_option(cli, "correction.is_upper=1.5,2,5");
        add_grid_option(cli, "optim.lr=0.001,0.002");
        cli.seeds = 4;
        const auto expected = expand_sweep(cli, "r3-tis", base);
        QCOMPARE(d.configs().size(), expected.size());
        QCOMPARE(sweep_hash(sweep_identity(d.configs(), d.spec())), sweep_hash(sweep_identity(expected, cli)));
        testing_shots::save(&d, "sweep_dialog_valid");
        // Steps override the configuration's.
        d.setSteps(7);
        QCOMPARE(d.configs().front().config.rl.steps, 7);
        QTest::mouseClick(queueButton(d), Qt::LeftButton);
        QCOMPARE(d.result(), int(QDialog::Accepted));
    }

    // A shipped family from the window: the sweep `sweep --family NAME` runs
    // (same configurations, names and hash, so the CLI's finished runs are
    // kept), with the family's seeds unless changed; the form's settings rows
    // are not part of it.
    void aFamilyIsTheSweepTheCliRuns() {
        Config base = preset_config("r3-tis");
        SweepDialog d(base, "r3-tis");
        d.resize(700, 330);
        d.show();
        typeFirstRow(d, "correction.is_upper", "1.5,2");
        auto* source = d.findChild<QComboBox*>("sweepSource");
        QVERIFY(source);
        QCOMPARE(source->count(), 1 + int(sweep_families().size()));
        source->setCurrentIndex(source->findData(QStringLiteral("collapse-demo")));
        QCOMPARE(d.family(), QStringLiteral("collapse-demo"));
        const SweepFamily& family = sweep_family("collapse-demo");
        QVERIFY(!d.findChild<QWidget*>("addSetting")->isVisible());
        QVERIFY(d.findChild<QLabel*>("sweepIntro")->text().contains("sweep --family collapse-demo"));
        QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
        QCOMPARE(d.spec().seeds, family.spec.seeds);
        const auto cliConfigs = [](const SweepSpec& spec) {
            return expand_sweep(spec, [](const std::string& p) { return any_preset_config(p, "--preset"); });
        };
        const auto expected = cliConfigs(family.spec);
        QCOMPARE(d.configs().size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) QCOMPARE(d.configs()[i].name, expected[i].name);
        QCOMPARE(sweep_hash(sweep_identity(d.configs(), d.spec())), sweep_hash(sweep_identity(expected, family.spec)));
        QCOMPARE(d.runCount(), int(expected.size()) * family.spec.seeds);
        testing_shots::save(&d, "sweep_dialog_family");
        // --seeds 2 --steps 30.
        d.setSeeds(2);
        d.setSteps(30);
        SweepSpec changed = family.spec;
        changed.seeds = 2;
        changed.steps = 30;
        QCOMPARE(sweep_hash(sweep_identity(d.configs(), d.spec())),
                 sweep_hash(sweep_identity(cliConfigs(changed), changed)));
        QCOMPARE(d.configs().front().config.rl.steps, 30);
        QVERIFY(queueButton(d)->isEnabled());
        // Back to the current configuration: its rows as they were.
        source->setCurrentIndex(0);
        QCOMPARE(d.family(), QString());
        QVERIFY(d.findChild<QWidget*>("addSetting")->isVisible());
        QCOMPARE(d.configs().size(), size_t(2));
        QCOMPARE(d.configs().front().preset, std::string("r3-tis"));
    }

    // The key "preset" compares presets, as `sweep --preset A --preset B
    // --grid ...` does: each configuration from its preset, the other rows
    // on top; a misspelt preset is refused naming every preset.
    void aPresetRowComparesPresetsAsTheCliDoes() {
        SweepDialog d(Config{}, "default");
        d.resize(700, 330);
        d.show();
        typeFirstRow(d, "preset", "verl-icepop,verl-seq-mis");
        d.addSetting("optim.lr", "0.001,0.002");
        d.setSeeds(2);
        QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
        SweepSpec cli;
        cli.presets = {"verl-icepop", "verl-seq-mis"};
        add_grid_option(cli, "optim.lr=0.001,0.002");
        cli.seeds = 2;
        const auto expected = expand_sweep(cli, preset_config);
        QCOMPARE(d.configs().size(), size_t(4));
        for (size_t i = 0; i < expected.size(); ++i) {
            QCOMPARE(d.configs()[i].name, expected[i].name);
            QCOMPARE(d.configs()[i].preset, expected[i].preset);
        }
        QCOMPARE(sweep_hash(sweep_identity(d.configs(), d.spec())), sweep_hash(sweep_identity(expected, cli)));
        QCOMPARE(d.runCount(), 8);
        // Steps left alone are each preset's own.
        QCOMPARE(d.findChild<QSpinBox*>("sweepSteps")->specialValueText(), QString("as each preset has it"));
        QCOMPARE(d.configs().front().config.rl.steps, preset_config("verl-icepop").rl.steps);
        typeFirstRow(d, "preset", "verl-icepop,verl-icepopp");
        QVERIFY2(d.errorText().startsWith("preset: 'verl-icepopp' is unknown; allowed: dense-tiny"),
                 qPrintable(d.errorText()));
        QVERIFY(!queueButton(d)->isEnabled());
        typeFirstRow(d, "preset", "verl-icepop,verl-icepop");
        QVERIFY2(d.errorText().contains("lists 'verl-icepop' twice"), qPrintable(d.errorText()));
        typeFirstRow(d, "preset", "verl-icepop");
        d.addSetting("preset", "verl-seq-mis");
        QVERIFY2(d.errorText().startsWith("preset is given twice"), qPrintable(d.errorText()));
    }

    // The defaults recompute the old policy: an IS bound's values would give
    // the same runs. Said in place, and queued anyway (a lesson may show it).
    void aKeyNoConfigurationReadsIsAWarningNotAnError() {
        SweepDialog d(Config{}, "default");
        d.resize(700, 330);
        d.show();
        typeFirstRow(d, "correction.is_upper", "2,5");
        QVERIFY2(d.errorText().isEmpty(), qPrintable(d.errorText()));
        QVERIFY2(d.warningText().startsWith("correction.is_upper: no configuration of this sweep reads it"),
                 qPrintable(d.warningText()));
        QVERIFY(d.warningText().contains("rl.old_policy=recompute"));
        QVERIFY(d.findChild<QLabel*>("sweepWarning")->isVisible());
        QVERIFY(queueButton(d)->isEnabled());
        testing_shots::save(&d, "sweep_dialog_warning");
        d.addSetting("rl.old_policy", "decoupled");
        d.addSetting("correction.is_level", "token");
        QVERIFY2(d.warningText().isEmpty(), qPrintable(d.warningText()));
        QVERIFY(!d.findChild<QLabel*>("sweepWarning")->isVisible());
    }
};

QTEST_MAIN(SweepDialogTest)
#include "sweep_dialog_test.moc"
