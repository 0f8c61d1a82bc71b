// Reports from real stores: a tiny real RL run (5 steps) and three synthetic
// runs (a collapse, a truly on-policy run with K3 KL exactly 0, an MoE run with
// NaN metrics). Files are written by the `report` command of the CLI binary
// (as a user would run it) and by build_report directly; their content is
// checked against the database (statistics by run_stats, numbers by
// value_text, run colours by palette::runColour): HTML parses as XML and holds the
// config table, the key charts inline and the embedded CSV; the PDF has
// pages, pdftotext finds the summary values, pdfdetach finds the CSVs
// byte-identical to export_csv.
// MLK_REPORT_DIR=<dir> also keeps report-one.pdf / report-compare.pdf /
// report-compare.html there for looking at.
#include <cmath>
#include <memory>
#include <set>

#include <QBuffer>
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

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "../../cli_runner.h"
#include "core/config/profiles.h"
#include "core/config/config.h"
#include "core/metrics/catalogue.h"
#include "core/metrics/run_stats.h"
#include "core/model/params.h"
#include "core/rl/run_controller.h"
#include "core/store/export.h"
#include "core/store/store.h"
#include "widgets/charts/report_charts.h"
#include "widgets/data/palette.h"
#include "widgets/report/report.h"

using namespace mlk;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// `mismatch-lab-cli report ARGS...`: the exit code (the output goes to the test log).
int run_cli(const std::vector<std::string>& args) {
    std::string line = "report";
    for (const auto& a : args) {
        std::string q = "'";
        for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
        line += " " + q + "'";
    }
    const clitest::CliResult r = clitest::cli(line);
    if (!r.out.empty()) qInfo("%s", r.out.c_str());
    return r.code;
}

QString read_text(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(f.readAll());
}

// Runs a tool; returns its stdout (empty and *ok=false when it fails).
QByteArray tool(const QString& exe, const QStringList& args, bool* ok) {
    QProcess p;
    p.start(exe, args);
    *ok = p.waitForFinished(120000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
    return p.readAllStandardOutput();
}

// XML well-formedness of the HTML after its doctype line. Returns "" or the error.
QString xml_error(const QString& html) {
    QString body = html;
    body.remove(QRegularExpression(QStringLiteral("^<!DOCTYPE[^>]*>\\s*")));
    QXmlStreamReader x(body);
    while (!x.atEnd()) x.readNext();
    return x.hasError() ? QStringLiteral("line %1: %2").arg(x.lineNumber()).arg(x.errorString()) : QString();
}

StepRecord step_record(int64_t step, std::vector<std::pair<std::string, double>> metrics) {
    StepRecord r;
    r.step = step;
    r.metrics = std::move(metrics);
    return r;
}

}  // namespace

class ReportTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void chartsKeepNanAndZero();
    void htmlFromRealRun();
    void comparisonContent();
    void pdfFromRealRunAndComparison();
    void cliErrors();
    void followsTheScreen();
    void builtModelNamesItsDimensions();
    void numericsAreWhatEachEngineComputes();
    void pointsAreMarkedAsOnScreen();
    void appVersionIsAColumnOnlyWhenRunsDiffer();
    void machinesAreALineOrATable();
    void perMetricRowsNameRunsByWhatDiffers();

private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::string db_;
    int64_t real_ = 0, collapse_ = 0, onpolicy_ = 0, nanmoe_ = 0;
    QString keep_dir_;

    // Every summary value of the report, as printed.
    QStringList summary_values(Store& s, const std::vector<int64_t>& runs, const std::vector<std::string>& metrics);
};

void ReportTest::initTestCase() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    db_ = dir_->filePath(QStringLiteral("runs.db")).toStdString();
    keep_dir_ = qEnvironmentVariable("MLK_REPORT_DIR");
    if (!keep_dir_.isEmpty()) QDir().mkpath(keep_dir_);
    Store store = Store::open(db_);

    // A real run: tiny dense model, no SFT warm-up, 5 RL steps.
    {
        Config c;
        c.rl.prompts_per_step = 4;
        c.rl.samples_per_prompt = 4;
        c.rl.steps = 5;
        c.base.sft_steps = 0;
        const std::string cache = dir_->filePath(QStringLiteral("cache")).toStdString();
        RunController rc = RunController::create(store, c, "custom", "real tiny", cache, {});
        while (!rc.done()) rc.step();
        rc.finish(RunStatus::finished);
        real_ = rc.run_id();
        QCOMPARE(store.steps(real_).size(), size_t(5));
    }

    // Synthetic: a dense run whose reward collapses after step 15.
    {
        Config c;
        c.rl.steps = 30;
        c.rollout.precision = Dtype::bf16;
        collapse_ = store.create_run("collapsing baseline", "custom", config_to_json(c).dump(), 1, RunStatus::finished);
        for (int s = 0; s < 30; ++s) {
            const double reward = s < 16 ? 0.1 + 0.03 * s : std::max(0.02, 0.55 - 0.06 * (s - 15));
            StepRecord r = step_record(s, {{"reward_mean", reward},
                                           {"accuracy", reward * 0.9},
                                           {"k3_kl", 1e-4 * (1 + 0.3 * std::sin(s)) * (s < 20 ? 1 : 3)},
                                           {"grad_norm", 0.07 - 0.0015 * s},
                                           {"F@2", s % 4 == 0 ? 0.0 : 2e-3 * (1 + s % 3)}});
            for (int i = 0; i < 60; ++i) {
                const double lr = std::log((i + 1) / 60.0);
                r.token_samples.push_back({i, lr, lr + 0.05 * std::sin(i * 1.3), i / 6, i % 6, i});
            }
            r.ft_curve = {{1.1, 0.2}, {1.5, 0.03}, {2, 0.004}, {5, 0.0}, {10, 0.0}};
            store.append_step(collapse_, r);
        }
    }
    // Synthetic: truly on policy, K3 KL exactly 0 at every step.
    {
        Config c;
        c.seed = 7;
        c.rl.steps = 30;
        c.kernels.batch_invariant = true;
        c.rollout.precision = Dtype::f32;
        onpolicy_ = store.create_run("on-policy", "truly-on-policy", config_to_json(c).dump(), 7, RunStatus::finished);
        for (int s = 0; s < 30; ++s) {
            StepRecord r = step_record(s, {{"reward_mean", 0.3 + 0.01 * s},
                                           {"accuracy", 0.25 + 0.01 * s},
                                           {"k3_kl", 0.0},
                                           {"grad_norm", 0.05},
                                           {"F@2", 0.0}});
            for (int i = 0; i < 40; ++i) {
                const double lp = std::log((i + 1) / 40.0);
                r.token_samples.push_back({i, lp, lp, i / 4, i % 4, i});
            }
            r.ft_curve = {{1.1, 0.0}, {1.5, 0.0}, {2, 0.0}, {5, 0.0}, {10, 0.0}};
            store.append_step(onpolicy_, r);
        }
    }
    // Synthetic: MoE with NaN reward, NaN grad norm, an infinite K3 KL and router histograms.
    {
        Config c;
        c.rl.steps = 25;
        c.model.kind = ModelKind::moe;
        c.moe.routing_replay = RoutingReplay::R3;
        nanmoe_ = store.create_run("moe, NaN", "custom", config_to_json(c).dump(), 1, RunStatus::failed);
        for (int s = 0; s < 25; ++s) {
            StepRecord r = step_record(s, {{"reward_mean", s == 5 ? kNaN : 0.2 + 0.005 * s},
                                           {"accuracy", 0.2},
                                           {"k3_kl", s == 20 ? INFINITY : 2e-3 + 1e-4 * (s % 5)},
                                           {"grad_norm", s == 12 ? kNaN : 0.2},
                                           {"F@2", 0.01 + 0.001 * (s % 3)},
                                           {"router_diff_token", 0.5}});
            for (int i = 0; i < 30; ++i) {
                const double lr = std::log((i + 1) / 30.0);
                r.token_samples.push_back({i, lr, lr - 0.1 * std::cos(i), i / 3, i % 3, i});
            }
            r.ft_curve = {{1.1, 0.4}, {1.5, 0.1}, {2, 0.01 + 0.001 * (s % 3)}, {5, 1e-3}, {10, 0.0}};
            r.router_hist = {{0, 900 + s}, {1, 80}, {2, 15}, {3, 0}};
            store.append_step(nanmoe_, r);
        }
    }
}

QStringList ReportTest::summary_values(Store& s, const std::vector<int64_t>& runs,
                                       const std::vector<std::string>& metrics) {
    QStringList v;
    for (int64_t id : runs)
        for (const auto& m : metrics) {
            const std::vector<MetricPoint> ser = s.metric_series(id, m);
            if (ser.empty()) continue;
            const RunStats st = run_stats(ser, m);
            v << QString::fromStdString(value_text(st.final_value));
            if (st.best_step >= 0) v << QString::fromStdString(value_text(st.best));
            v << QString::fromStdString(value_text(st.mean_last));
        }
    return v;
}

// The screen draws a run as a line and a dot only where a point has no
// neighbour; the report marked every point of a run of at most 25.
void ReportTest::pointsAreMarkedAsOnScreen() {
    report::ChartSpec spec;
    spec.size = QSize(400, 200);
    report::ChartRun shortRun{"short", palette::runColour(1), {}, {}, {}, {}},
        gappy{"gappy", palette::runColour(2), {}, {}, {}, {}};
    for (int s = 0; s < 10; ++s) shortRun.points.push_back({(double)s, 0.1 * s});
    // NaN at steps 1 and 3: steps 0 and 2 stand alone, steps 4-5 a line.
    for (int s = 0; s < 6; ++s) gappy.points.push_back({(double)s, s == 1 || s == 3 ? kNaN : 0.5});
    const report::RenderedChart c = report::render_xy_chart(spec, {shortRun, gappy});
    QCOMPARE(c.markedPoints, 2);
    QCOMPARE(c.finitePoints, 14);
}

void ReportTest::chartsKeepNanAndZero() {
    report::ChartSpec spec;
    spec.yScale = report::Scale::log;
    spec.size = QSize(400, 200);
    report::ChartRun zero{"zero", palette::runColour(1), {}, {}, {}, {}},
        nan{"nan", palette::runColour(2), {}, {}, {}, {}};
    for (int s = 0; s < 10; ++s) {
        zero.points.push_back({(double)s, 0.0});
        nan.points.push_back({(double)s, s == 4 ? kNaN : 1e-3});
    }
    report::RenderedChart c = report::render_xy_chart(spec, {zero, nan});
    QCOMPARE(c.floorPoints, 10);
    QCOMPARE(c.edgePoints, 1);
    QCOMPARE(c.finitePoints, 19);
    QVERIFY(c.floor > 0 && c.floor < 1e-3);
    QVERIFY(c.notes.join(" ").contains(QStringLiteral("zero: 10 value(s) \u2264 0")));
    QVERIFY(c.notes.join(" ").contains("nan: 1 NaN value(s) at step 4"));
    QImage img;
    QVERIFY(img.loadFromData(c.png, "PNG"));
    QCOMPARE(img.size(), QSize(800, 400));
    // Not blank: the chart drew something besides the background.
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 7)
        for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
    QVERIFY(colours.size() > 5);
}

void ReportTest::htmlFromRealRun() {
    const QString out = dir_->filePath(QStringLiteral("one.html"));
    QCOMPARE(run_cli({std::to_string(real_), "--db", db_, "--out", out.toStdString(), "--appendix"}), 0);
    const QString html = read_text(out);
    QVERIFY(html.startsWith(QStringLiteral("<!DOCTYPE html>")));
    const QString err = xml_error(html);
    QVERIFY2(err.isEmpty(), qPrintable(err));

    Store store = Store::open(db_);
    const RunInfo info = *store.run_info(real_);
    QVERIFY(html.contains(QStringLiteral("Run report: #%1 real tiny").arg(real_)));
    QVERIFY(html.contains(QStringLiteral("Mismatch Lab " MLK_VERSION)));

    // Self-contained: every src / href is a data: URL.
    QRegularExpression ext(QStringLiteral("(src|href)=\"(?!data:)"));
    QVERIFY(!ext.match(html).hasMatch());
    // The four key charts (and the drill-down figures) inline, each a valid PNG.
    QRegularExpression img(QStringLiteral("<img src=\"data:image/png;base64,([A-Za-z0-9+/=]+)\" width=\"(\\d+)\""));
    int images = 0;
    for (auto it = img.globalMatch(html); it.hasNext();) {
        auto m = it.next();
        QImage im;
        QVERIFY(im.loadFromData(QByteArray::fromBase64(m.captured(1).toLatin1()), "PNG"));
        QCOMPARE(im.width(), m.captured(2).toInt() * 2);
        ++images;
    }
    QVERIFY2(images >= 6, qPrintable(QString::number(images)));  // 4 key charts + F(t) + scatter
    // The catalogue's key charts, on the catalogue's scales.
    for (const char* alt :
         {"chart of reward_mean", "chart of k3_kl (log scale)", "chart of grad_norm", "chart of F@2 (log scale)"})
        QVERIFY2(html.contains(QStringLiteral("alt=\"%1\"").arg(QLatin1String(alt))), alt);

    // The config table: every key with the stored value.
    const Config cfg = config_from_json(nlohmann::json::parse(info.config_json));
    for (const auto& k : config_schema()) {
        const QString v = QString::fromStdString(config_value_text(cfg, k.key)).toHtmlEscaped();
        QRegularExpression row(
            QStringLiteral("<tr><td class=\"key\">%1</td><td>[^<]*</td><td( class=\"changed\")?>(<b>)?%2(</b>)?</td>")
                .arg(QRegularExpression::escape(QString::fromStdString(k.key)), QRegularExpression::escape(v)));
        QVERIFY2(row.match(html).hasMatch(), k.key.c_str());
    }
    // Summary values from the database.
    for (const QString& v : summary_values(store, {real_}, key_metric_names()))
        QVERIFY2(html.contains(QStringLiteral(">%1<").arg(v)) || html.contains(QStringLiteral(">%1 (").arg(v)),
                 qPrintable(v));
    // Environment.
    QVERIFY(html.contains(QStringLiteral("<h2>Environment</h2>")));
    QVERIFY(html.contains(QStringLiteral("hardware threads")));
    // The embedded CSV equals export_csv.
    QRegularExpression csv(
        QStringLiteral("href=\"data:text/csv;base64,([A-Za-z0-9+/=]+)\" download=\"run-%1-").arg(real_));
    auto m = csv.match(html);
    QVERIFY(m.hasMatch());
    QCOMPARE(QByteArray::fromBase64(m.captured(1).toLatin1()).toStdString(), export_csv(store, {real_}));
    // Appendix: every step of the run, reward to 6 digits.
    for (const auto& [step, v] : store.metric_series(real_, "reward_mean"))
        QVERIFY(html.contains(QStringLiteral("<tr><td class=\"num\">%1</td><td class=\"num\">%2</td>")
                                  .arg(step)
                                  .arg(std::isfinite(v) ? QString::asprintf("%.6g", v) : QStringLiteral("NaN"))));
}

void ReportTest::comparisonContent() {
    Store store = Store::open(db_);
    ReportRequest req;
    req.runs = {collapse_, onpolicy_, nanmoe_};
    req.metrics = {"accuracy"};
    req.step = 10;
    Report rep = build_report(store, req);
    const QString err = xml_error(rep.html);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    QVERIFY(rep.title.startsWith(QStringLiteral("Comparison:")));
    QVERIFY(rep.html.contains(QStringLiteral("alt=\"chart of accuracy\"")));
    QVERIFY(rep.images >= 4 + 1 + 1 + 1 + 3);  // key charts, accuracy, F(t), router histogram, 3 scatters
    // Config: exactly the keys that differ from the baseline.
    auto cfg = [&](int64_t id) { return config_from_json(nlohmann::json::parse(store.run_info(id)->config_json)); };
    std::set<std::string> keys;
    for (int64_t id : {onpolicy_, nanmoe_})
        for (const auto& d : config_diff(cfg(collapse_), cfg(id))) keys.insert(d.key);
    QVERIFY(keys.count("seed") && keys.count("kernels.batch_invariant") && keys.count("model.kind"));
    for (const auto& k : config_schema()) {
        const bool shown =
            rep.html.contains(QStringLiteral("<tr><td class=\"key\">%1</td>").arg(QString::fromStdString(k.key)));
        QVERIFY2(shown == (keys.count(k.key) > 0), k.key.c_str());
    }
    // Verdicts.
    QRegularExpression verdictRow(QStringLiteral("<tr><td>.*?#%2 %1</td><td>(.*?)</td><td>(.*?)</td></tr>"));
    auto verdicts = [&](const QString& name, int64_t id) {
        auto m = QRegularExpression(verdictRow.pattern().arg(QRegularExpression::escape(name)).arg(id)).match(rep.html);
        return m.hasMatch() ? std::make_pair(m.captured(1), m.captured(2)) : std::make_pair(QString(), QString());
    };
    auto [c1, d1] = verdicts(QStringLiteral("collapsing baseline"), collapse_);
    QVERIFY2(c1.contains(QStringLiteral("DETECTED")), qPrintable(c1));
    auto [c2, d2] = verdicts(QStringLiteral("on-policy"), onpolicy_);
    QVERIFY2(c2.contains(QStringLiteral("none")) && d2.contains(QStringLiteral("none")), qPrintable(c2 + d2));
    auto [c3, d3] = verdicts(QStringLiteral("moe, NaN"), nanmoe_);
    QVERIFY2(d3.contains(QStringLiteral("DETECTED")) && d3.contains(QStringLiteral("step 12")), qPrintable(d3));
    // NaN and zeros on log charts are noted, never dropped.
    // (named as the legends name them: these names share no word, so whole)
    QVERIFY(rep.html.contains(QStringLiteral("moe, NaN: 1 NaN value(s) at step 12")));
    QVERIFY(rep.html.contains(QStringLiteral("moe, NaN: 1 infinite value(s) at step 20")));
    QVERIFY(rep.html.contains(QStringLiteral("on-policy: 30 value(s) \u2264 0")));
    // Router counts of the chosen step, straight from the store.
    QVERIFY(rep.html.contains(
        QStringLiteral("<td>#%1 moe, NaN</td><td class=\"num\">910</td><td class=\"num\">80</td>").arg(nanmoe_)));
    QVERIFY(rep.html.contains(QStringLiteral("Drill-down at step 10")));
    // Each run in the colour the workbench gives it: its swatch, and its line on a key chart.
    QRegularExpression chart(
        QStringLiteral("<img src=\"data:image/png;base64,([A-Za-z0-9+/=]+)\"[^>]*alt=\"chart of reward_mean\""));
    const auto cm = chart.match(rep.html);
    QVERIFY(cm.hasMatch());
    QImage rewardChart;
    QVERIFY(rewardChart.loadFromData(QByteArray::fromBase64(cm.captured(1).toLatin1()), "PNG"));
    for (int64_t id : req.runs) {
        const QColor c = palette::runColour(id);
        QVERIFY2(rep.html.contains(QStringLiteral("<tr><td><span style=\"color:%1\">\u25a0</span></td><td "
                                                  "class=\"num\">%2</td>")
                                       .arg(c.name())
                                       .arg(id)),
                 qPrintable(c.name()));
        int near = 0;
        for (int y = 0; y < rewardChart.height(); ++y)
            for (int x = 0; x < rewardChart.width(); ++x) {
                const QColor p = rewardChart.pixelColor(x, y);
                near +=
                    std::abs(p.red() - c.red()) + std::abs(p.green() - c.green()) + std::abs(p.blue() - c.blue()) < 24;
            }
        QVERIFY2(near > 50, qPrintable(QStringLiteral("run %1: %2 pixels of %3").arg(id).arg(near).arg(c.name())));
    }
    // Attachments: one CSV per run + the JSON.
    QCOMPARE(rep.attachments.size(), size_t(4));
    QCOMPARE(rep.attachments[0].data.toStdString(), export_csv(store, {collapse_}));
}

void ReportTest::pdfFromRealRunAndComparison() {
    const QString pdftotext = QStandardPaths::findExecutable(QStringLiteral("pdftotext"));
    const QString pdfinfo = QStandardPaths::findExecutable(QStringLiteral("pdfinfo"));
    const QString pdfdetach = QStandardPaths::findExecutable(QStringLiteral("pdfdetach"));
    struct Case {
        QString file;
        std::vector<std::string> args;
        std::vector<int64_t> runs;
        std::vector<std::string> metrics;
    };
    const QString one = dir_->filePath(QStringLiteral("report-one.pdf"));
    const QString cmp = dir_->filePath(QStringLiteral("report-compare.pdf"));
    std::vector<Case> cases = {
        {one, {std::to_string(real_), "--db", db_, "--out", one.toStdString()}, {real_}, key_metric_names()},
        {cmp,
         {std::to_string(collapse_), std::to_string(onpolicy_), std::to_string(nanmoe_), "--db", db_, "--out",
          cmp.toStdString(), "--baseline", std::to_string(onpolicy_), "--metric", "accuracy", "--step", "10"},
         {onpolicy_, collapse_, nanmoe_},
         {"reward_mean", "k3_kl", "grad_norm", "F@2", "accuracy"}},
    };
    Store store = Store::open(db_);
    for (const auto& c : cases) {
        QCOMPARE(run_cli(c.args), 0);
        QFile f(c.file);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.read(5) == "%PDF-");
        f.close();
        if (!keep_dir_.isEmpty()) {
            const QString dst = keep_dir_ + "/" + QFileInfo(c.file).fileName();
            QFile::remove(dst);
            QFile::copy(c.file, dst);
        }
        if (pdftotext.isEmpty() || pdfinfo.isEmpty() || pdfdetach.isEmpty())
            QSKIP("poppler-utils (pdftotext, pdfinfo, pdfdetach) not installed");
        bool ok = false;
        const QString info = QString::fromUtf8(tool(pdfinfo, {c.file}, &ok));
        QVERIFY(ok);
        auto pages = QRegularExpression(QStringLiteral("Pages:\\s+(\\d+)")).match(info);
        QVERIFY(pages.hasMatch());
        QVERIFY2(pages.captured(1).toInt() >= 3, qPrintable(info));
        const QString text =
            QString::fromUtf8(tool(pdftotext, {QStringLiteral("-layout"), c.file, QStringLiteral("-")}, &ok));
        QVERIFY(ok);
        QVERIFY(text.contains(QStringLiteral("Summary")));
        // Pages: each numbered at its foot; the charts heading on the page of
        // its first chart (an image), never alone at the foot of the one before.
        const QStringList page_texts =
            QString::fromUtf8(tool(pdftotext, {c.file, QStringLiteral("-")}, &ok)).split(QLatin1Char('\f'));
        QVERIFY(ok);
        QCOMPARE(page_texts.size() - 1, pages.captured(1).toInt());  // a form feed after every page
        int charts_page = 0;
        for (int i = 0; i + 1 < page_texts.size(); ++i) {
            const QStringList lines = page_texts[i].trimmed().split(QLatin1Char('\n'));
            QVERIFY2(lines.contains(QString::number(i + 1)), qPrintable(c.file + ": page " + QString::number(i + 1)));
            if (!charts_page && page_texts[i].contains(QStringLiteral("Key charts"))) charts_page = i + 1;
        }
        QVERIFY(charts_page > 0);
        const QString pdfimages = QStandardPaths::findExecutable(QStringLiteral("pdfimages"));
        const QStringList images = QString::fromUtf8(tool(pdfimages, {QStringLiteral("-list"), c.file}, &ok))
                                       .split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QVERIFY(ok);
        bool chart_on_heading_page = false;
        for (const QString& row : images.mid(2))  // two header lines
            chart_on_heading_page |= row.simplified().section(QLatin1Char(' '), 0, 0).toInt() == charts_page;
        QVERIFY2(chart_on_heading_page, qPrintable(c.file + ": no image on the page of \"Key charts\""));
        for (const QString& v : summary_values(store, c.runs, c.metrics))
            QVERIFY2(text.contains(v), qPrintable(c.file + ": " + v));
        for (int64_t id : c.runs) {
            QVERIFY(text.contains(QStringLiteral("#%1 ").arg(id)));
            QVERIFY(text.contains(QStringLiteral("run-%1-").arg(id)));
        }
        // The CSV attachments, byte for byte.
        const QString list = QString::fromUtf8(tool(pdfdetach, {QStringLiteral("-list"), c.file}, &ok));
        QVERIFY(ok);
        QVERIFY2(list.contains(QStringLiteral("%1 embedded files").arg(c.runs.size() + 1)), qPrintable(list));
        QTemporaryDir x;
        tool(pdfdetach, {QStringLiteral("-saveall"), QStringLiteral("-o"), x.path(), c.file}, &ok);
        QVERIFY(ok);
        for (int64_t id : c.runs) {
            const QStringList found = QDir(x.path()).entryList({QStringLiteral("run-%1-*.csv").arg(id)});
            QCOMPARE(found.size(), 1);
            QFile csv(x.filePath(found[0]));
            QVERIFY(csv.open(QIODevice::ReadOnly));
            QCOMPARE(csv.readAll().toStdString(), export_csv(store, {id}));
        }
        QFile js(x.filePath(QStringLiteral("runs.json")));
        QVERIFY(js.open(QIODevice::ReadOnly));
        QVERIFY(nlohmann::json::parse(js.readAll().toStdString()) == export_json(store, c.runs));
    }
    if (!keep_dir_.isEmpty()) {
        const QString html = keep_dir_ + "/report-compare.html";
        QCOMPARE(run_cli({std::to_string(collapse_), std::to_string(onpolicy_), std::to_string(nanmoe_), "--db", db_,
                          "--out", html.toStdString(), "--metric", "accuracy"}),
                 0);
    }
}

void ReportTest::cliErrors() {
    const std::string out = dir_->filePath(QStringLiteral("x.html")).toStdString();
    const std::string id = std::to_string(real_);
    QCOMPARE(run_cli({"999", "--db", db_, "--out", out}), 2);                                  // unknown run id
    QCOMPARE(run_cli({id, "--db", db_, "--out", dir_->filePath("x.docx").toStdString()}), 2);  // extension
    QCOMPARE(run_cli({id, "--db", db_, "--out", out, "--metric", "no_such_metric"}), 2);
    QCOMPARE(run_cli({id, "--db", db_, "--out", out, "--step", "999"}), 2);
    QCOMPARE(run_cli({id, "--db", db_, "--out", out, "--step", "-1"}), 2);
    QCOMPARE(run_cli({id, "--db", db_, "--out", out, "--baseline", "abc"}), 2);
    QCOMPARE(run_cli({id, "--db", dir_->filePath("missing.db").toStdString(), "--out", out}), 2);
    QCOMPARE(run_cli({id, "--out", out}), 2);           // no --db
    QCOMPARE(run_cli({"--db", db_, "--out", out}), 2);  // no run
    QCOMPARE(run_cli({id, "--db", db_, "--out", out, "--bogus"}), 2);
    // A directory where the file should go: a failure, not bad input.
    QCOMPARE(run_cli({id, "--db", db_, "--out", dir_->filePath("no/such/dir/r.pdf").toStdString()}), 1);
    QVERIFY(!QFile::exists(QString::fromStdString(out)));
}

// The runs' app version: one line under the Runs table when every run has
// the same (ten columns would break words mid-way in the PDF), a column when
// they differ.
// A sweep's run names share their preset and fixed settings; whole, they
// would squeeze the per-metric table's metric column to a letter a line. There,
// and in the legends, a run is named by what the report's other runs lack;
// the runs table names it whole.
void ReportTest::perMetricRowsNameRunsByWhatDiffers() {
    const QTemporaryDir dir;
    Store store = Store::open(dir.filePath(QStringLiteral("sweep.db")).toStdString());
    const std::string fixed = "default is_level=sequence old_policy=decoupled";
    std::vector<int64_t> ids;
    for (const std::string& name : {fixed + " is_upper=5.0", fixed + " seed=2"}) {
        ids.push_back(store.create_run(name, "default", config_to_json(Config{}).dump(), 1, RunStatus::finished));
        for (int s = 0; s < 3; ++s)
            store.append_step(ids.back(), step_record(s, {{"reward_mean", 0.1 * s}, {"k3_kl", 1e-4}}));
    }
    ReportRequest req;
    req.runs = ids;
    const Report rep = build_report(store, req);
    const auto row = [&](const QString& label) { return QStringLiteral("<td>%1</td><td class=\"num\">").arg(label); };
    QVERIFY2(rep.html.contains(row(QStringLiteral("is_upper=5.0"))), qPrintable(rep.html));
    QVERIFY(rep.html.contains(row(QStringLiteral("seed=2"))));
    QVERIFY(rep.html.contains(QString::fromStdString(fixed + " seed=2")));  // the runs table
    // Each metric heads its runs' rows across the table; a metric cell that
    // spanned them could run taller than they are, and a page break split it.
    QVERIFY2(rep.html.contains(QStringLiteral("<tr class=\"section\"><td colspan=\"7\">reward_mean&#160;")),
             qPrintable(rep.html));
    QVERIFY(!rep.html.contains(QStringLiteral("rowspan")));
}

void ReportTest::appVersionIsAColumnOnlyWhenRunsDiffer() {
    ReportRequest req;
    req.runs = {collapse_, onpolicy_};
    {
        Store store = Store::open(db_);
        const std::string v = store.run_info(collapse_)->app_version;
        QCOMPARE(store.run_info(onpolicy_)->app_version, v);
        const Report rep = build_report(store, req);
        QVERIFY(!rep.html.contains(QStringLiteral("<th>app version</th>")));
        QVERIFY2(rep.html.contains(QStringLiteral("All runs made by Mismatch Lab %1.").arg(QString::fromStdString(v))),
                 qPrintable(rep.html.left(4000)));
    }
    const QString copy = dir_->filePath(QStringLiteral("versions.db"));
    QVERIFY(QFile::copy(QString::fromStdString(db_), copy));
    sqlite3* raw = nullptr;
    QCOMPARE(sqlite3_open(copy.toUtf8().constData(), &raw), SQLITE_OK);
    const std::string sql = "UPDATE runs SET app_version = '0.0.9' WHERE id = " + std::to_string(onpolicy_);
    QCOMPARE(sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(raw);
    Store store = Store::open(copy.toStdString());
    const Report rep = build_report(store, req);
    QVERIFY(rep.html.contains(QStringLiteral("<th>app version</th>")));
    QVERIFY(rep.html.contains(QStringLiteral("<td>0.0.9</td>")));
    QVERIFY(!rep.html.contains(QStringLiteral("made by Mismatch Lab")));
}

// Where the runs were made: nothing when no run recorded it, a line when
// all ran on one machine, a table of run and machine when they differ.
void ReportTest::machinesAreALineOrATable() {
    ReportRequest req;
    req.runs = {collapse_, onpolicy_};
    const QString copy = dir_->filePath(QStringLiteral("machines.db"));
    QVERIFY(QFile::copy(QString::fromStdString(db_), copy));
    Store store = Store::open(copy.toStdString());
    QVERIFY(!build_report(store, req).html.contains(QStringLiteral(" ran on ")));
    const std::string here = "Some CPU, SIMD avx512, 2 kernel threads";
    store.set_machine(collapse_, here);
    store.set_machine(onpolicy_, here);
    QString html = build_report(store, req).html;
    QVERIFY2(html.contains(QStringLiteral("All runs ran on Some CPU, SIMD avx512, 2 kernel threads.")),
             qPrintable(html.left(4000)));
    store.set_machine(onpolicy_, here + "; rollout on CUDA: Some GPU <sm_90>");
    html = build_report(store, req).html;
    QVERIFY(!html.contains(QStringLiteral("All runs ran on")));
    QVERIFY(html.contains(QStringLiteral("<th>ran on</th>")));
    QVERIFY(html.contains(QStringLiteral("<td>Some CPU, SIMD avx512, 2 kernel threads</td>")));
    QVERIFY2(html.contains(QStringLiteral("rollout on CUDA: Some GPU &lt;sm_90&gt;</td>")), "escaped");
}

QTEST_MAIN(ReportTest)
// A run of a built model (model.* dimensions changed) shows what it was in the
// environment table; a preset is named by its name alone.
void ReportTest::builtModelNamesItsDimensions() {
    Store store = Store::open(db_);
    Config c;
    c.model.kind = ModelKind::moe;
    c.model.num_layers = 3;
    c.model.mlp_only_layers = "1";
    const int64_t built = store.create_run("built", "custom", config_to_json(c).dump(), 1, RunStatus::finished);
    for (int s = 0; s < 3; ++s) store.append_step(built, step_record(s, {{"reward_mean", 0.1 * s}}));
    ReportRequest req;
    req.runs = {nanmoe_, built};
    const Report rep = build_report(store, req);
    QVERIFY(rep.html.contains(QStringLiteral("<td>moe-tiny</td>")));
    const QString name = QString::fromStdString("moe-custom (" + architecture_text(model_config_of(c)) + ")");
    QVERIFY(name.contains(QStringLiteral("dense layers 1")));
    QVERIFY2(rep.html.contains(QStringLiteral("<td>%1</td>").arg(name.toHtmlEscaped())), qPrintable(name));
}

// A named profile does not read `precision`: the table names the profile
// and what its rounding points resolve to, never the unread precision.
void ReportTest::numericsAreWhatEachEngineComputes() {
    Store store = Store::open(db_);
    Config c;
    c.rollout.profile = NumericsProfile::vllm_bf16;
    c.train.profile = NumericsProfile::megatron_bf16;  // train.precision stays its default fp32, unread
    const int64_t run = store.create_run("named", "default", config_to_json(c).dump(), 1, RunStatus::finished);
    for (int s = 0; s < 3; ++s) store.append_step(run, step_record(s, {{"reward_mean", 0.1 * s}}));
    ReportRequest req;
    req.runs = {run};
    const QString html = build_report(store, req).html;
    const QString train = QString::fromStdString(numerics_text(train_numerics(c), false)).toHtmlEscaped();
    QVERIFY2(html.contains(QStringLiteral("<td>megatron-bf16<br/><span class=\"note\">%1</span></td>").arg(train)),
             qPrintable(html));
    QVERIFY(html.contains(QStringLiteral("<th>training numerics</th>")));
    QVERIFY(!html.contains(QStringLiteral("<th>training precision</th>")));
}

#include "report_test.moc"

// A report made from the window looks like the window: the run colours the
// user chose, the charts on screen with their scales, the smoothing, seeds
// grouped into a band (a seed's NaN still noted, under the group's name); no
// per-step appendix unless asked for, the CSV attached either way.
void ReportTest::followsTheScreen() {
    Store store = Store::open(db_);
    Config c;
    c.seed = 11;
    const int64_t s1 = store.create_run("seeded", "custom", config_to_json(c).dump(), 11, RunStatus::finished);
    c.seed = 12;
    const int64_t s2 = store.create_run("seeded", "custom", config_to_json(c).dump(), 12, RunStatus::finished);
    for (int step = 0; step < 20; ++step)
        for (int64_t id : {s1, s2}) {
            StepRecord r;
            r.step = step;
            const double v = id == s2 && step == 7 ? std::numeric_limits<double>::quiet_NaN() : 0.1 * step + id;
            r.metrics = {{"entropy", v}, {"reward_mean", 0.5}};
            store.append_step(id, r);
        }
    ReportRequest req;
    req.runs = {real_, s1, s2};
    req.view.colours[real_] = QColor(0x12, 0x34, 0x56);
    req.view.smoothing = 0.6;
    req.view.group_seeds = true;
    req.view.charts = {"entropy", "k3_kl"};
    req.view.log_charts = {"entropy"};
    const Report rep = build_report(store, req);
    QVERIFY(rep.html.contains(QStringLiteral("color:#123456")));  // the user's colour, not the palette's
    QVERIFY(!rep.html.contains(QStringLiteral("color:%1\"").arg(palette::runColour(real_).name())));
    QVERIFY(rep.html.contains(QStringLiteral("weight 0.6")));
    QVERIFY(rep.html.contains(QStringLiteral("min\u2013max band")));
    // The charts on screen, in their order and scales, and no other.
    const qsizetype entropy = rep.html.indexOf(QStringLiteral("alt=\"chart of entropy")),
                    k3 = rep.html.indexOf(QStringLiteral("alt=\"chart of k3_kl"));
    QVERIFY2(entropy >= 0 && k3 > entropy, qPrintable(QString("%1 %2").arg(entropy).arg(k3)));
    QVERIFY(!rep.html.contains(QStringLiteral("alt=\"chart of reward_mean")));
    QVERIFY(rep.html.contains(QStringLiteral("alt=\"chart of entropy (log scale)\"")));
    QVERIFY(rep.html.contains(QStringLiteral("alt=\"chart of k3_kl\"")));  // linear, as on that screen
    // The group is named after its first seed; the NaN of the second is noted under it.
    QVERIFY2(rep.html.contains(QStringLiteral("#%1 seeded \u00B7 2 seeds: 1 NaN value(s) at step 7").arg(s1)),
             qPrintable(rep.html.mid(rep.html.indexOf("NaN value"), 200)));
    QVERIFY(!rep.html.contains(QStringLiteral(">Appendix")));
    QVERIFY(std::any_of(rep.attachments.begin(), rep.attachments.end(),
                        [](const ReportAttachment& a) { return a.mime == "text/csv"; }));
}
