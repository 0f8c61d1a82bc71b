// The Probe dock: its numbers are `mismatch-lab-cli probe --json`'s for the
// same settings (the CLI itself, tests/widgets/probe_cli.h), formatted by
// value_text; a change probes again off the GUI thread and keeps the previous
// probe as the ghost (numbers, arrows, grey points); rapid changes coalesce.
// Prints how long one probe takes for dense-tiny and moe-tiny.
// MLK_SCREENSHOT_DIR=<dir> saves probe_before.png and probe_after.png.
#include <QComboBox>
#include <QCheckBox>
#include <QElapsedTimer>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QTest>

#include "core/config/config.h"
#include "core/config/presets.h"
#include "core/metrics/run_stats.h"
#include "tests/screenshot.h"
#include "tests/widgets/probe_cli.h"
#include "widgets/charts/drilldown_plots.h"
#include "widgets/panels/probe_panel.h"

using namespace mlk;

namespace {

using probe_cli::cliProbe;

Config small(const char* model) {
    Config c = preset_config("default");
    config_set(c, "model.kind", std::string(model).rfind("moe", 0) == 0 ? "moe" : "dense");
    c.rl.prompts_per_step = 8;
    c.rl.samples_per_prompt = 4;
    return c;
}

bool waitProbed(QSignalSpy& spy, int count) {
    for (int i = 0; i < 600 && spy.count() < count; ++i) spy.wait(100);
    return spy.count() >= count;
}

}  // namespace

class ProbePanelTest : public QObject {
    Q_OBJECT

private slots:
    void numbersAreCoresProbe() {
        ProbePanel panel;
        panel.resize(460, 900);
        panel.show();
        QSignalSpy probed(&panel, &ProbePanel::probed);
        const Config cfg = small("dense");
        panel.setConfig(cfg);
        QVERIFY(panel.runner()->busy());  // off the GUI thread: setConfig returned before the probe ended
        QVERIFY(waitProbed(probed, 1));
        QVERIFY(panel.current().config == cfg);
        QCOMPARE(probe_cli::panelMismatch(panel), QString());
        const nlohmann::json expected = cliProbe(cfg);
        QVERIFY(panel.previousText("k3_kl").isEmpty());  // no ghost before a second probe
        QCOMPARE(panel.scatter()->current()->count(), qsizetype(expected["tokens"].get<int>()));
        QCOMPARE(panel.scatter()->ghost()->count(), qsizetype(0));
    }

    void aChangeKeepsThePreviousProbeAsTheGhost() {
        ProbePanel panel;
        panel.resize(460, 900);
        panel.show();
        QSignalSpy probed(&panel, &ProbePanel::probed);
        Config cfg = small("moe");
        panel.setConfig(cfg);
        QVERIFY(waitProbed(probed, 1));
        const QString k3Before = panel.valueText("k3_kl"), flipsBefore = panel.valueText("router_diff_token");
        const qsizetype pointsBefore = panel.scatter()->current()->count();
        QVERIFY(panel.valueText("router_diff_token") != "0");  // MoE without replay flips routes
        testing_shots::save(&panel, "probe_before");

        // As the user does it: pick R3 in the routing-replay combo.
        auto* replay = qobject_cast<QComboBox*>(panel.editor("moe.routing_replay"));
        QVERIFY(replay);
        replay->setCurrentIndex(replay->findText("R3"));
        QVERIFY(waitProbed(probed, 2));
        config_set(cfg, "moe.routing_replay", "R3");
        const nlohmann::json expected = cliProbe(cfg);
        QCOMPARE(panel.valueText("router_diff_token"),
                 QString::fromStdString(value_text(expected["router_diff_token"].get<double>())));
        QCOMPARE(panel.valueText("router_diff_token"), QString("0"));
        QCOMPARE(panel.previousText("k3_kl"), k3Before);
        QCOMPARE(panel.previousText("router_diff_token"), flipsBefore);
        QCOMPARE(panel.changeText("router_diff_token"), QString("\u2193"));
        QCOMPARE(panel.scatter()->ghost()->count(), pointsBefore);
        QVERIFY(panel.scatter()->ghost()->isVisible());
        testing_shots::save(&panel, "probe_after");
    }

    // As the configuration form does: a setting the configuration does not
    // read is greyed, with why, and comes back when it is read again.
    void settingsTheConfigurationDoesNotReadAreGreyed() {
        ProbePanel panel;
        QSignalSpy probed(&panel, &ProbePanel::probed);
        panel.setConfig(small("dense"));
        QCOMPARE(panel.label("moe.routing_replay")->property("mlkState").toString(), QString("ignored"));
        QVERIFY(panel.editor("moe.routing_replay")->toolTip().contains("a dense model has no routers"));
        QCOMPARE(panel.label("train.precision")->property("mlkState").toString(), QString());
        QVERIFY(!panel.editor("train.precision")->toolTip().contains("Ignored"));

        // Lesson 1's last probe step: the Megatron profile's rounding points
        // decide, so the precision set one step before no longer does.
        auto* profile = qobject_cast<QComboBox*>(panel.editor("train.profile"));
        QVERIFY(profile);
        profile->setCurrentIndex(profile->findText("megatron-bf16"));
        QCOMPARE(panel.label("train.precision")->property("mlkState").toString(), QString("ignored"));
        QVERIFY(panel.editor("train.precision")->toolTip().contains("Ignored: train.profile=megatron-bf16"));
        QCOMPARE(panel.label("rollout.precision")->property("mlkState").toString(), QString());

        auto* kind = qobject_cast<QComboBox*>(panel.editor("model.kind"));
        kind->setCurrentIndex(kind->findText("moe"));
        QCOMPARE(panel.label("moe.routing_replay")->property("mlkState").toString(), QString());
        QVERIFY(!panel.editor("moe.routing_replay")->toolTip().contains("Ignored"));
        QVERIFY(waitProbed(probed, 1));
    }

    void rapidChangesCoalesceToTheLatest() {
        ProbePanel panel;
        QSignalSpy probed(&panel, &ProbePanel::probed);
        Config cfg = small("dense");
        panel.setConfig(cfg);
        for (const char* p : {"fp16", "bf16", "fp32", "bf16"}) panel.setValue("rollout.precision", p);
        QVERIFY(waitProbed(probed, 1));
        QTest::qWait(300);  // nothing else arrives
        // The first probe was overtaken by the later requests: one result,
        // the last settings'.
        QCOMPARE(probed.count(), 1);
        QCOMPARE(QString::fromStdString(std::string(enum_name(panel.current().config.rollout.precision))),
                 QString("bf16"));
        QCOMPARE(panel.current().serial, panel.runner()->latestSerial());
    }

    void probeLatency() {
        for (const char* model : {"dense", "moe"}) {
            Config cfg = preset_config("default");
            config_set(cfg, "model.kind", model);
            ProbeRunner::probe(cfg);  // warm: first-touch of the kernels' tables
            QElapsedTimer t;
            t.start();
            const ProbeOutcome o = ProbeRunner::probe(cfg);
            qInfo("probe latency %s-tiny (preset default: %d x %d sequences, %d tokens): %.0f ms", model,
                  cfg.rl.prompts_per_step, cfg.rl.samples_per_prompt, o.tokens, o.ms);
            QVERIFY(o.error.isEmpty());
        }
    }
};

QTEST_MAIN(ProbePanelTest)
#include "probe_panel_test.moc"
