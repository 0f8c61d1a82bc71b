// DrillDown over a temporary store: a MoE step with token samples, an F(t)
// curve containing zeros, a router histogram and text samples with router
// flips and the rollout-probability bucket metrics; a dense step without a
// histogram or buckets.
// MLK_SCREENSHOT_DIR=<dir> also saves <dir>/drill_{scatter,ft,router,samples,buckets}.png.
#include <cmath>
#include <memory>

#include <QAbstractTextDocumentLayout>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QImage>
#include <QPixmap>
#include <QScatterSeries>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>

#include <nlohmann/json.hpp>

#include "core/metrics/catalogue.h"
#include "core/store/store.h"
#include "widgets/data/palette.h"
#include "widgets/panels/drilldown.h"
#include "tests/screenshot.h"

using namespace mlk;

namespace {

struct Tok {
    const char* text;
    double lr, lt;
    int flips;
};

}  // namespace

class DrillDownTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void cleanupTestCase();
    void scatterHasEveryPoint();
    void histogramEqualsStoredCounts();
    void ftZerosAreClampedNotHidden();
    void samplesShowEveryTokenAndFlips();
    void bucketsShowTheStepsStoredShares();
    void stepSelectorAndDenseStep();
    void withoutARunEveryTabSaysHowToGetOne();
    void colourScale();
    void screenshots();

private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<Store> store_;
    int64_t run_ = 0;
    std::vector<TokenSample> tokens_;
    std::vector<RouterBin> hist_ = {{0, 5120}, {1, 431}, {2, 37}, {3, 0}};
    // lowp_frac@, lowp_k3_share@, lowp_abs_diff@ for p_roll >= 0.1, ..., below 1e-4
    QList<qreal> frac_ = {0.62, 0.25, 0.09, 0.03, 0.01}, k3_ = {0.08, 0.17, 0.25, 0.3, 0.2},
                 diff_ = {0.002, 0.011, 0.04, 0.09, 0.21};
    std::vector<FtPoint> ft_ = {{1.001, 0.62}, {1.01, 0.21}, {1.1, 0.034}, {1.5, 0.0021}, {2, 0}, {5, 0}, {10, 0}};
    std::vector<std::vector<Tok>> texts_ = {
        {{"1", -0.01, -0.0102, 0}, {"9", -0.2, -0.35, 2}, {"<eos>", -1e-7, -1e-7, 0}},
        {{"4", -2.3, -2.29, 0}, {"2", -0.7, -0.5, 1}, {"&", -0.05, -0.05, 0}, {"<eos>", -0.001, -0.0011, 0}},
    };
};

void DrillDownTest::initTestCase() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    store_ = std::make_unique<Store>(Store::open(dir_->filePath("drill.db").toStdString()));
    run_ = store_->create_run("moe", "r3-tis", "{}", 1);
    // 300 token samples spread over (0, 1] with a growing mismatch
    for (int i = 0; i < 300; ++i) {
        const double lr = std::log((i + 1) / 300.0);
        const double lt = lr + 0.002 * std::sin(i) * (i % 7);
        tokens_.push_back({i, lr, lt, i / 10, i % 10, 5 + i % 20});
    }
    StepRecord r;
    r.step = 0;
    r.metrics = {{"reward_mean", 0.5}};
    for (int b = 0; b < 5; ++b) {
        r.metrics.emplace_back(kProbBucketMetrics[b].count, std::round(1000 * frac_[b]));  // of 1000 tokens
        r.metrics.emplace_back(kProbBucketMetrics[b].frac, frac_[b]);
        r.metrics.emplace_back(kProbBucketMetrics[b].k3_share, k3_[b]);
        r.metrics.emplace_back(kProbBucketMetrics[b].abs_diff, diff_[b]);
    }
    r.token_samples = tokens_;
    r.ft_curve = ft_;
    r.router_hist = hist_;
    int idx = 0;
    for (const auto& sample : texts_) {
        nlohmann::json arr = nlohmann::json::array();
        std::string resp;
        int id = 10;
        for (const Tok& t : sample) {
            arr.push_back({{"id", id++}, {"text", t.text}, {"lp_roll", t.lr}, {"lp_train", t.lt}, {"flips", t.flips}});
            resp += t.text;
        }
        r.text_samples.push_back({idx, idx == 0 ? "12+7=" : "20+22=", resp, idx == 0 ? 1.0 : 0.25, arr.dump()});
        ++idx;
    }
    store_->append_step(run_, r);
    // step 3: dense-like (no histogram), fewer tokens, no zeros in F(t)
    StepRecord d;
    d.step = 3;
    d.metrics = {{"reward_mean", 0.6}};
    d.token_samples = {tokens_.begin(), tokens_.begin() + 10};
    d.ft_curve = {{1.1, 0.2}, {2, 0.01}};
    store_->append_step(run_, d);
}

void DrillDownTest::cleanupTestCase() {
    store_.reset();
    dir_.reset();
}

void DrillDownTest::scatterHasEveryPoint() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, 0);
    QCOMPARE(dd.step(), int64_t(0));
    QCOMPARE(dd.scatterPointCount(), static_cast<int>(tokens_.size()));
    const QList<QPointF> pts = dd.scatterPoints();
    for (size_t i = 0; i < tokens_.size(); ++i) {
        QCOMPARE(pts[static_cast<qsizetype>(i)].x(), std::exp(tokens_[i].lp_roll));
        QCOMPARE(pts[static_cast<qsizetype>(i)].y(), std::exp(tokens_[i].lp_train));
        QVERIFY(pts[static_cast<qsizetype>(i)].x() > 0 && pts[static_cast<qsizetype>(i)].x() <= 1);
    }
    // the diagonal is drawn
    auto* view = dd.scatterView()->findChild<QChartView*>();
    QVERIFY(view);
    bool diagonal = false;
    for (QAbstractSeries* s : view->chart()->series())
        if (auto* l = qobject_cast<QLineSeries*>(s); l && l->points() == QList<QPointF>({{0, 0}, {1, 1}}))
            diagonal = true;
    QVERIFY(diagonal);
}

void DrillDownTest::histogramEqualsStoredCounts() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, 0);
    QList<qreal> expected;
    QStringList cats;
    for (const RouterBin& b : hist_) {
        expected << static_cast<qreal>(b.count);
        cats << QString::number(b.d);
    }
    QCOMPARE(dd.histogramValues(), expected);
    QCOMPARE(dd.histogramCategories(), cats);
    QVERIFY(!dd.routerEmpty());
    QVERIFY(dd.noteText().contains("5588 (token, layer) pairs"));
}

void DrillDownTest::ftZerosAreClampedNotHidden() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, 0);
    const QList<QPointF> pts = dd.ftPoints();
    QCOMPARE(pts.size(), static_cast<int>(ft_.size()));
    QCOMPARE(dd.ftClampedCount(), 3);
    QVERIFY(dd.ftFloor() > 0 && dd.ftFloor() < 0.0021);
    for (int i = 0; i < pts.size(); ++i) {
        QVERIFY(pts[i].y() > 0);  // a log axis would hide the whole series otherwise
        QCOMPARE(pts[i].x(), ft_[static_cast<size_t>(i)].t);
        if (ft_[static_cast<size_t>(i)].frac > 0) QCOMPARE(pts[i].y(), ft_[static_cast<size_t>(i)].frac);
        else QCOMPARE(pts[i].y(), dd.ftFloor());
    }
    QVERIFY2(dd.noteText().contains("F(t) = 0"), qPrintable(dd.noteText()));
    auto* view = dd.ftView()->findChild<QChartView*>();
    QVERIFY(view);
    int logAxes = 0;
    for (QAbstractAxis* a : view->chart()->axes()) logAxes += qobject_cast<QLogValueAxis*>(a) ? 1 : 0;
    QCOMPARE(logAxes, 2);
    bool lineOk = false;
    for (QAbstractSeries* s : view->chart()->series())
        if (auto* l = qobject_cast<QLineSeries*>(s); l && l->count() == static_cast<int>(ft_.size())) lineOk = true;
    QVERIFY(lineOk);
}

void DrillDownTest::samplesShowEveryTokenAndFlips() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, 0);
    const QString html = dd.samplesHtml();
    const QString text = dd.samplesText();
    int flipped = 0;
    for (const auto& sample : texts_)
        for (const Tok& t : sample) {
            const QString esc = QString::fromUtf8(t.text).toHtmlEscaped();
            QVERIFY2(html.contains(QStringLiteral(">%1</span>").arg(esc)), t.text);
            QVERIFY2(text.contains(QString::fromUtf8(t.text)), t.text);
            if (t.flips > 0) {
                ++flipped;
                const QString sup = t.flips == 1 ? QStringLiteral("\u00B9") : QStringLiteral("\u00B2");
                QVERIFY(html.contains(QStringLiteral("text-decoration:underline'>%1</span><span class='flip' "
                                                     "style='color:#6a1b9a; font-weight:bold'>%2</span>")
                                          .arg(esc, sup)));
            }
        }
    QCOMPARE(html.count(QStringLiteral("<span class='flip'")), flipped);
    QVERIFY(text.contains("12+7="));
    QVERIFY(text.contains("20+22="));
    QVERIFY(text.contains("0.25"));
    // the per-token tooltips survive into the rendered document
    auto* browser = dd.samplesView()->findChild<QTextBrowser*>();
    QVERIFY(browser);
    int tips = 0;
    bool sawDiff = false;
    for (QTextBlock b = browser->document()->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QString tip = it.fragment().charFormat().toolTip();
            if (tip.contains("lp_roll")) ++tips;
            if (tip.contains("lp_roll = -0.2") && tip.contains("lp_train = -0.35") && tip.contains("router flips: 2"))
                sawDiff = true;
        }
    QVERIFY2(tips >= 7, qPrintable(QString::number(tips)));
    QVERIFY(sawDiff);
}

void DrillDownTest::bucketsShowTheStepsStoredShares() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, 0);
    const ProbBuckets b = dd.probBuckets();
    QVERIFY(b.stored);
    QCOMPARE(b.categories.size(), 5);
    QCOMPARE(b.categories.front(), QStringLiteral("[0.1, 1]\n620 tokens"));  // each decade's count under its name
    QCOMPARE(b.categories.back(), QStringLiteral("[0, 1e-4)\n10 tokens"));
    QCOMPARE(b.tokenShare, frac_);
    QCOMPARE(b.k3Share, k3_);
    QCOMPARE(b.absDiff, diff_);
    // The bars drawn are those values: token and K3 shares side by side, |delta log p| below.
    QList<QList<qreal>> drawn;
    for (QChartView* view : dd.bucketsView()->findChildren<QChartView*>())
        for (QAbstractSeries* s : view->chart()->series())
            if (auto* bars = qobject_cast<QBarSeries*>(s))
                for (QBarSet* set : bars->barSets()) {
                    QList<qreal> v;
                    for (int i = 0; i < set->count(); ++i) v << set->at(i);
                    drawn << v;
                }
    QCOMPARE(drawn, (QList<QList<qreal>>{frac_, k3_, diff_}));
    QVERIFY2(dd.noteText().contains(QStringLiteral("Lowest decade with tokens: [0, 1e-4)")), qPrintable(dd.noteText()));

    dd.setRunStep(*store_, run_, 3);  // a step without the bucket metrics
    QVERIFY(!dd.probBuckets().stored);
    QVERIFY(std::isnan(dd.probBuckets().tokenShare.front()));
    QVERIFY2(dd.noteText().contains(QStringLiteral("no rollout-probability buckets")), qPrintable(dd.noteText()));
}

void DrillDownTest::stepSelectorAndDenseStep() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, 2);  // snaps to the nearest stored step
    QCOMPARE(dd.step(), int64_t(3));
    QCOMPARE(dd.availableSteps(), (std::vector<int64_t>{0, 3}));
    QVERIFY(dd.routerEmpty());
    QVERIFY(dd.histogramValues().isEmpty());
    QVERIFY(dd.noteText().contains("Dense model: no router"));
    QCOMPARE(dd.scatterPointCount(), 10);
    QCOMPARE(dd.ftClampedCount(), 0);
    QVERIFY(dd.samplesText().contains("No text samples"));
    QSignalSpy spy(&dd, &DrillDown::stepChanged);
    auto* spin = dd.findChild<QSpinBox*>("stepSpin");
    QVERIFY(spin);
    spin->setValue(1);  // nearest stored: 0
    QCOMPARE(dd.step(), int64_t(0));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(dd.scatterPointCount(), 300);
    QCOMPARE(dd.histogramValues().size(), 4);
}

// A new user opening the tab before selecting a run learns what to do, not
// that "no token samples are stored".
void DrillDownTest::withoutARunEveryTabSaysHowToGetOne() {
    DrillDown dd;
    const QString how = QStringLiteral("select one in the Runs list");
    const QStringList notes = dd.noteText().split(QLatin1Char('\n'));
    QVERIFY2(notes.size() == 4 && notes[0].contains(how) && notes[1].contains(how), qPrintable(dd.noteText()));
    QVERIFY2(dd.samplesText().contains(how), qPrintable(dd.samplesText()));
    QVERIFY2(dd.whyView()->noteText().contains(how), qPrintable(dd.whyView()->noteText()));
    QVERIFY(!dd.samplesText().contains(QStringLiteral("stored")));
    // With a run, a step without samples says so instead.
    dd.setRunStep(*store_, run_, 3);
    QVERIFY(dd.samplesText().contains(QStringLiteral("No text samples stored")));
    QVERIFY(!dd.noteText().contains(how));
}

void DrillDownTest::colourScale() {
    using palette::mismatchHeat, palette::inkOn;
    QCOMPARE(mismatchHeat(0), QColor(Qt::white));
    QCOMPARE(mismatchHeat(1e-9), QColor(Qt::white));
    const QColor mid = mismatchHeat(1e-3), hi = mismatchHeat(5);
    QVERIFY(mid.green() < 255 && mid.green() > hi.green());
    QCOMPARE(hi, mismatchHeat(1));
    QVERIFY(hi.red() > hi.green() + 100);
    // Token text stays readable: dark on the pale end, white from 0.1 up.
    QCOMPARE(inkOn(mismatchHeat(1e-2)), QColor(Qt::black));
    QCOMPARE(inkOn(mismatchHeat(0.1)), QColor(Qt::white));
    QCOMPARE(inkOn(mismatchHeat(1)), QColor(Qt::white));
}

namespace {

// Whether a pixel within `radius` of `centre` is within `tolerance` (per
// channel) of `colour`.
bool colourNear(const QImage& image, QPoint centre, const QColor& colour, int radius, int tolerance) {
    for (int dy = -radius; dy <= radius; ++dy)
        for (int dx = -radius; dx <= radius; ++dx) {
            const QPoint p = centre + QPoint(dx, dy);
            if (!image.rect().contains(p)) continue;
            const QColor c = image.pixelColor(p);
            if (std::abs(c.red() - colour.red()) <= tolerance && std::abs(c.green() - colour.green()) <= tolerance &&
                std::abs(c.blue() - colour.blue()) <= tolerance)
                return true;
        }
    return false;
}

// Where a point of `series` is drawn, in the pixels of the view's viewport.
QPoint viewPixel(QChartView* view, QAbstractSeries* series, QPointF value) {
    return view->mapFromScene(view->chart()->mapToScene(view->chart()->mapToPosition(value, series)));
}

QImage viewImage(QChartView* view) { return view->viewport()->grab().toImage().convertToFormat(QImage::Format_RGB32); }

void saveShot(QWidget& widget, const char* name) {
    QVERIFY(testing_shots::save(&widget, QStringLiteral("drill_") + QLatin1String(name)));
}

}  // namespace

// What the user sees on each tab: the tokens where their probabilities put
// them, the F(t) curve through its points, the histogram's bars. Saved as
// PNG too when MLK_SCREENSHOT_DIR is set.
void DrillDownTest::screenshots() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, 0);
    dd.resize(760, 560);
    dd.show();
    const QColor ink = palette::runColour(1);

    dd.tabs()->setCurrentIndex(0);
    QTest::qWait(80);
    {
        auto* view = dd.scatterView()->findChild<QChartView*>();
        QScatterSeries* tokens = dd.scatterSeries();  // not the worst-token rings or the explained token's mark
        QVERIFY(tokens && tokens->count() > 0);
        const QImage image = viewImage(view);
        // Translucent dots, darker where they overlap: the token colour's hue,
        // unlike the white plot and the grey diagonal.
        const auto tokenAt = [&](QPoint centre, int radius) {
            for (int dy = -radius; dy <= radius; ++dy)
                for (int dx = -radius; dx <= radius; ++dx) {
                    const QPoint p = centre + QPoint(dx, dy);
                    if (!image.rect().contains(p)) continue;
                    const QColor c = image.pixelColor(p);
                    if (c.hsvSaturation() > 60 && std::abs(c.hsvHue() - ink.hsvHue()) < 15) return true;
                }
            return false;
        };
        int found = 0;
        for (const QPointF& p : tokens->points()) found += tokenAt(viewPixel(view, tokens, p), 1);
        QVERIFY2(found == tokens->count(), qPrintable(QStringLiteral("%1 of %2").arg(found).arg(tokens->count())));
        // None far off every point: the plot's top-left corner is empty.
        QVERIFY(!tokenAt(viewPixel(view, tokens, QPointF(0.03, 0.97)), 3));
    }
    saveShot(dd, "scatter");

    dd.tabs()->setCurrentIndex(1);
    QTest::qWait(80);
    {
        auto* view = dd.ftView()->findChild<QChartView*>();
        QLineSeries* curve = nullptr;
        for (QAbstractSeries* s : view->chart()->series())
            if (auto* l = qobject_cast<QLineSeries*>(s)) curve = l;
        QVERIFY(curve && curve->count() > 0);
        const QImage image = viewImage(view);
        for (const QPointF& p : curve->points())
            if (p.y() > dd.ftFloor())  // (those at the floor are under their open squares)
                QVERIFY2(colourNear(image, viewPixel(view, curve, p), ink, 2, 30),
                         qPrintable(QStringLiteral("F(%1) = %2").arg(p.x()).arg(p.y())));
    }
    saveShot(dd, "ft");

    dd.tabs()->setCurrentIndex(2);
    QTest::qWait(80);
    {
        auto* view = dd.routerView()->findChild<QChartView*>();
        QVERIFY(view);
        const QImage image = viewImage(view);
        int barPixels = 0;
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x) barPixels += colourNear(image, QPoint(x, y), ink, 0, 6);
        QVERIFY2(barPixels > 200, qPrintable(QString::number(barPixels)));  // the bars, in the palette's colour
    }
    saveShot(dd, "router");
    dd.tabs()->setCurrentIndex(3);
    QTest::qWait(80);
    saveShot(dd, "samples");

    dd.tabs()->setCurrentIndex(4);
    QTest::qWait(80);
    {
        int k3Pixels = 0, diffPixels = 0;
        for (QChartView* view : dd.bucketsView()->findChildren<QChartView*>()) {
            const QImage image = viewImage(view);
            for (int y = 0; y < image.height(); ++y)
                for (int x = 0; x < image.width(); ++x) {
                    k3Pixels += colourNear(image, QPoint(x, y), palette::runColour(2), 0, 6);
                    diffPixels += colourNear(image, QPoint(x, y), palette::runColour(3), 0, 6);
                }
        }
        QVERIFY2(k3Pixels > 200 && diffPixels > 200, qPrintable(QStringLiteral("%1 %2").arg(k3Pixels).arg(diffPixels)));
    }
    saveShot(dd, "buckets");

    dd.setRunStep(*store_, run_, 3);  // a dense step: no router, said in words
    dd.tabs()->setCurrentIndex(2);
    QTest::qWait(80);
    QVERIFY(dd.routerEmpty());
    saveShot(dd, "router_dense");
}

QTEST_MAIN(DrillDownTest)
#include "drilldown_test.moc"
