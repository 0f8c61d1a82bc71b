// DrillDown over a temporary store: a MoE step with token samples, an F(t)
// curve containing zeros, a router histogram and text samples with router
// flips; a dense step without a histogram.
// MLK_SCREENSHOT_DIR=<dir> also saves <dir>/drill_{scatter,ft,router,samples}.png.
#include <cmath>
#include <memory>

#include <QAbstractTextDocumentLayout>
#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QPixmap>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>

#include <nlohmann/json.hpp>

#include "core/store/store.h"
#include "widgets/panels/drilldown.h"

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
    void stepSelectorAndDenseStep();
    void colourScale();
    void screenshots();

private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<Store> store_;
    int64_t run_ = 0;
    std::vector<TokenSample> tokens_;
    std::vector<RouterBin> hist_ = {{0, 5120}, {1, 431}, {2, 37}, {3, 0}};
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

void DrillDownTest::colourScale() {
    QCOMPARE(DrillDown::diffColour(0), QColor(Qt::white));
    QCOMPARE(DrillDown::diffColour(1e-9), QColor(Qt::white));
    const QColor mid = DrillDown::diffColour(1e-3), hi = DrillDown::diffColour(5);
    QVERIFY(mid.green() < 255 && mid.green() > hi.green());
    QCOMPARE(hi, DrillDown::diffColour(1));
    QVERIFY(hi.red() > hi.green() + 100);
}

void DrillDownTest::screenshots() {
    const QByteArray dir = qgetenv("MLK_SCREENSHOT_DIR");
    DrillDown dd;
    dd.setRunStep(*store_, run_, 0);
    dd.resize(760, 560);
    dd.show();
    const char* names[] = {"scatter", "ft", "router", "samples"};
    for (int i = 0; i < 4; ++i) {
        dd.tabs()->setCurrentIndex(i);
        QTest::qWait(80);
        {
            const QPixmap shot = dd.grab();  // rendered in every run; saved when asked

            QVERIFY(!shot.isNull() && shot.width() >= 200 && shot.height() >= 150);

            if (!dir.isEmpty()) QVERIFY(shot.save(QString::fromLocal8Bit(dir) + "/drill_" + names[i] + ".png"));
        }
    }
    dd.setRunStep(*store_, run_, 3);
    dd.tabs()->setCurrentIndex(2);
    QTest::qWait(80);
    {
        const QPixmap shot = dd.grab();  // rendered in every run; saved when asked

        QVERIFY(!shot.isNull() && shot.width() >= 200 && shot.height() >= 150);

        if (!dir.isEmpty()) QVERIFY(shot.save(QString::fromLocal8Bit(dir) + "/drill_router_dense.png"));
    }
}

QTEST_MAIN(DrillDownTest)
#include "drilldown_test.moc"
