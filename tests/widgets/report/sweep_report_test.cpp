// The sweep report of a hand-made sweep (two configurations x three seeds,
// collapses in some seeds): the HTML holds the verdict table as
// summarize_sweep has it, every configuration's name in its seed group's
// colour, the rule text with a changed threshold and the charts (reward
// first); the PDF is written by `report --sweep` as a user would run it;
// a bad sweep id, baseline or option exits 2 and writes nothing.
// MLK_REPORT_DIR=<dir> keeps sweep-report.pdf / .html there for looking at.
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <algorithm>
#include <memory>

#include "../../cli_runner.h"
#include "../sweep_store.h"
#include "core/store/sweep_summary.h"
#include "widgets/charts/report_charts.h"
#include "widgets/data/palette.h"
#include "widgets/data/sweep_text.h"
#include "widgets/report/report_sweep.h"

using namespace mlk;
namespace fx = mlk::sweep_fixture;

namespace {

int run_cli(const std::string& args) {
    const clitest::CliResult r = clitest::cli("report " + args);
    if (!r.out.empty()) qInfo("%s", r.out.c_str());
    return r.code;
}

QString xml_error(const QString& html) {
    QString body = html;
    body.remove(QRegularExpression(QStringLiteral("^<!DOCTYPE[^>]*>\\s*")));
    QXmlStreamReader x(body);
    while (!x.atEnd()) x.readNext();
    return x.hasError() ? QStringLiteral("line %1: %2").arg(x.lineNumber()).arg(x.errorString()) : QString();
}

}  // namespace

class SweepReportTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void bandsSetTheirOwnRange();
    void htmlHoldsTheVerdictTable();
    void pdfFromTheCli();
    void badInputWritesNothing();

private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::string db_;
    int64_t sweep_ = 0;
    QString keep_;
};

void SweepReportTest::initTestCase() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    db_ = dir_->filePath("sweep.sqlite").toStdString();
    Store s = Store::open(db_);
    sweep_ = fx::make_sweep(s);
    keep_ = qEnvironmentVariable("MLK_REPORT_DIR");
    if (!keep_.isEmpty()) QDir().mkpath(keep_);
}

// Every configuration of a sweep report is a band without a raw line: the
// x axis must still span its steps (not 0 to 1, showing two steps).
void SweepReportTest::bandsSetTheirOwnRange() {
    report::ChartRun band{QStringLiteral("group"), QColor(255, 0, 0), {}};
    for (int x = 0; x <= 100; ++x) {
        band.smooth.push_back({double(x), double(x)});
        band.lo.push_back({double(x), x - 1.0});
        band.hi.push_back({double(x), x + 1.0});
    }
    report::ChartSpec spec;
    spec.size = QSize(400, 240);
    spec.pixelRatio = 1;
    const report::RenderedChart c = report::render_xy_chart(spec, {band});
    QImage img;
    QVERIFY(img.loadFromData(c.png));
    // The rising line reaches the top right quarter of the plot.
    int red = 0;
    for (int y = 0; y < img.height() / 2; ++y)
        for (int x = img.width() * 3 / 4; x < img.width(); ++x) {
            const QColor p = img.pixelColor(x, y);
            red += p.red() > 200 && p.green() < 120 && p.blue() < 120;
        }
    QVERIFY2(red > 5, qPrintable(QString::number(red)));
}

void SweepReportTest::htmlHoldsTheVerdictTable() {
    Store s = Store::open(db_);
    SweepReportRequest req;
    req.sweep_id = sweep_;
    req.thresholds.collapse_drop = 0.8;  // the sag of "is_upper=5" seed 3 is a collapse now
    req.view.smoothing = 0.6;
    req.view.charts = {"k3_kl", "reward_mean", "grad_norm"};
    const Report r = build_sweep_report(s, req);
    const SweepSummary sum = summarize_sweep(s, sweep_, req.thresholds);
    QCOMPARE(sum.stats[1].collapsed, 1);
    const QString& h = r.html;
    if (!keep_.isEmpty()) save_report(r, (keep_ + "/sweep-report.html").toStdString());
    QVERIFY2(xml_error(h).isEmpty(), qPrintable(xml_error(h)));
    QVERIFY(r.title.startsWith(QStringLiteral("Sweep %1").arg(sweep_)));
    QVERIFY(h.contains(QStringLiteral(">coll.</th>")));
    for (size_t i = 0; i < sum.configs.size(); ++i) {
        const ConfigSummary& c = sum.stats[i];
        const QString name = QString::fromStdString(sum.configs[i].name).toHtmlEscaped();
        QVERIFY(h.contains(name));
        // The verdict table's row: name, runs, counts, spreads and delta in order.
        QString row =
            QRegularExpression::escape(name) + ".*?" + QStringLiteral("%1/%2").arg(c.runs.size()).arg(sum.seeds);
        for (int n : {c.collapsed, c.diverged, c.blown_up, c.warned}) row += QStringLiteral(".*?>%1<").arg(n);
        for (const Spread* sp : {&c.final_reward, &c.best_reward, &c.auc})
            row += ".*?" + QRegularExpression::escape(sweepSpreadText(*sp).toHtmlEscaped().replace(
                               QStringLiteral(" \u00b1 "), QStringLiteral("<br/>\u00b1 ")));
        row += ".*?" + (c.baseline
                            ? QStringLiteral("\\(baseline\\)")
                            : QRegularExpression::escape(sweepDeltaText(c.delta_final, c.delta_final_ci)
                                                             .replace(QStringLiteral(" ["), QStringLiteral("<br/>["))));
        QVERIFY2(QRegularExpression(row).match(h).hasMatch(), qPrintable(row));
        // Each configuration in its seed group's colour: its first run's.
        int64_t first = c.runs.front().run_id;
        for (const RunOutcome& o : c.runs) first = std::min(first, o.run_id);
        QVERIFY(h.contains(QStringLiteral("color:%1\">\u25a0").arg(palette::runColour(first).name())));
        for (const RunOutcome& o : c.runs) QVERIFY(h.contains(QStringLiteral("run-%1-").arg(o.run_id)));
    }
    // The rules with the threshold in force (80%, not the default 50%).
    QVERIFY(h.contains(QString::fromStdString(collapse_rule_text(req.thresholds)).toHtmlEscaped()));
    QVERIFY(!h.contains(QString::fromStdString(collapse_rule_text({})).toHtmlEscaped()));
    QVERIFY(h.contains(QStringLiteral("collapse_drop=0.8")));
    // The screen's charts, reward first, smoothed as on screen.
    QCOMPARE(r.images, 3);
    QCOMPARE(h.count(QStringLiteral("data:image/png;base64,")), 3);
    const qsizetype reward = h.indexOf(QStringLiteral("alt=\"chart of reward_mean")),
                    kl = h.indexOf(QStringLiteral("alt=\"chart of k3_kl"));
    QVERIFY(reward > 0 && kl > reward);
    QVERIFY(h.contains(QStringLiteral("weight 0.6")));
    QVERIFY(h.contains(QStringLiteral("min\u2013max band")));
    // Per seed, and the configurations' settings against the baseline.
    QVERIFY(h.contains(QStringLiteral("Runs by configuration and seed")));
    QVERIFY(h.contains(QStringLiteral("correction.is_upper")));
    QCOMPARE(r.attachments.size(), size_t(fx::kSeeds * fx::kConfigs.size() + 1));
    // Where the sweep's runs were made: said once when every run recorded one machine.
    QVERIFY(!h.contains(QStringLiteral(" ran on ")));
    for (const ConfigSummary& c : sum.stats)
        for (const RunOutcome& o : c.runs) s.set_machine(o.run_id, "Some CPU, SIMD avx2, 3 kernel threads");
    QVERIFY(build_sweep_report(s, req).html.contains(
        QStringLiteral("All runs ran on Some CPU, SIMD avx2, 3 kernel threads.")));
}

void SweepReportTest::pdfFromTheCli() {
    const QString pdf = dir_->filePath("sweep.pdf");
    QCOMPARE(run_cli("--sweep " + std::to_string(sweep_) + " --db '" + db_ + "' --out '" + pdf.toStdString() +
                     "' --baseline 'is_upper=5' --verdict collapse_drop=0.8 --title 'Hand-made sweep'"),
             0);
    QFile f(pdf);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.read(5) == "%PDF-");
    QVERIFY(f.size() > 20000);
    f.close();
    if (!keep_.isEmpty()) {
        QFile::remove(keep_ + "/sweep-report.pdf");
        QFile::copy(pdf, keep_ + "/sweep-report.pdf");
    }
    const QString pdftotext = QStandardPaths::findExecutable(QStringLiteral("pdftotext"));
    if (pdftotext.isEmpty()) QSKIP("pdftotext not installed");
    QProcess p;
    p.start(pdftotext, {QStringLiteral("-layout"), pdf, QStringLiteral("-")});
    QVERIFY(p.waitForFinished(60000));
    const QString text = QString::fromUtf8(p.readAllStandardOutput());
    QVERIFY(text.contains(QStringLiteral("Hand-made sweep")));
    for (const std::string& c : fx::kConfigs) QVERIFY(text.contains(QString::fromStdString(c)));
    QVERIFY(text.contains(QStringLiteral("Baseline: is_upper=5")));
}

void SweepReportTest::badInputWritesNothing() {
    const std::string out = dir_->filePath("bad.pdf").toStdString();
    const std::string db = " --db '" + db_ + "' --out '" + out + "'";
    const std::string id = std::to_string(sweep_);
    QCOMPARE(run_cli("--sweep 99" + db), 2);                                    // no such sweep
    QCOMPARE(run_cli("--sweep 0" + db), 2);                                     // not an id
    QCOMPARE(run_cli("--sweep " + id + db + " --baseline nope"), 2);            // not a configuration
    QCOMPARE(run_cli("--sweep " + id + db + " --verdict collapse_drop=7"), 2);  // out of range
    QCOMPARE(run_cli("--sweep " + id + db + " --step 3"), 2);                   // a run report's option
    QCOMPARE(run_cli("1 --sweep " + id + db), 2);                               // runs and a sweep
    QVERIFY(!QFile::exists(QString::fromStdString(out)));
    const clitest::CliResult r = clitest::cli("report --sweep " + id + db + " --baseline nope");
    QVERIFY2(r.out.find("--baseline") != std::string::npos && r.out.find("is_upper=2") != std::string::npos,
             r.out.c_str());
    QVERIFY(clitest::cli("report --sweep 99" + db).out.find("--sweep") != std::string::npos);

    Store s = Store::open(db_);
    SweepReportRequest req;
    req.sweep_id = sweep_;
    req.baseline = "nope";
    QVERIFY_THROWS_EXCEPTION(ReportInputError, build_sweep_report(s, req));
}

QTEST_MAIN(SweepReportTest)
#include "sweep_report_test.moc"
