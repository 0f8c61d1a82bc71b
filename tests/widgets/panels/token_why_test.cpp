// "Why this token?" in the drill-down over a real run: moe-tiny after its
// base-policy warm-up (about 15 s once; cached per user and shared, as the
// CLI suites share theirs), an SGLang-style FP8 rollout with an fp8 KV cache against a
// Megatron bf16 trainer on the fast kernels, PPO anchored on the rollout
// (bypass) at a high learning rate: the collapse demo's numerics on an MoE,
// so F@2 spikes at some steps. The view is checked at the step of the
// largest F@2: choosing a worst token shows its stored numbers, a dot of the
// scatter or a token of the samples selects it, and a token without stored
// detail says where the detail is kept.
// MLK_SCREENSHOT_DIR=<dir> also saves <dir>/why_{token,token_flip,scatter,ft}_f2_spike.png.
#include <algorithm>
#include <cmath>
#include <memory>

#include <QComboBox>
#include <QScatterSeries>
#include <QScrollArea>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBrowser>
#include <QUrl>

#include "core/config/config.h"
#include "core/rl/base_policy.h"
#include "core/rl/session.h"
#include "tests/scratch.h"
#include "tests/screenshot.h"
#include "widgets/panels/drilldown.h"
#include "tests/event_deadline.h"

using mlk::testing_deadline::kEventDeadlineMs;

using namespace mlk;

namespace {

// Power-of-two scales: the coarser grid whose spike step has a router flip
// among its worst tokens, which the screenshots need.
Config spikeConfig() {
    Config c = config_from_json(nlohmann::json::parse(R"({
        "model": {"kind": "moe", "size": "tiny"},
        "rollout": {"profile": "sglang-fp8", "kv_cache_dtype": "fp8_e4m3", "fp8_scale": "pow2"},
        "train": {"profile": "megatron-bf16"},
        "rl": {"old_policy": "bypass", "prompts_per_step": 16, "samples_per_prompt": 4},
        "optim": {"lr": 0.002}})"));
    validate(c);
    return c;
}

constexpr int kSteps = 6;

// As the view prints log-probs (8 significant digits).
QString lp8(double v) { return QString::number(v, 'g', 8); }

}  // namespace

class TokenWhyTest : public QObject {
    Q_OBJECT
private slots:
    void initTestCase();
    void choosingAWorstTokenShowsItsStoredNumbers();
    void scatterAndSamplesSelectTokens();
    void aTokenWithoutDetailSaysWhereDetailIsKept();
    void onlyWorstTokensThatDifferAreRinged();
    void screenshotsAtTheF2Spike();
    void theWhyTabScrollsRatherThanGrowTheWindow();

private:
    std::unique_ptr<QTemporaryDir> dir_;
    std::unique_ptr<Store> store_;
    int64_t run_ = 0, spike_ = 0;
    std::vector<double> f2_;
};

void TokenWhyTest::initTestCase() {
    dir_ = std::make_unique<QTemporaryDir>();
    QVERIFY(dir_->isValid());
    store_ = std::make_unique<Store>(Store::open(dir_->filePath("why.db").toStdString()));
    const Config c = spikeConfig();
    run_ = store_->create_run("fp8 moe spike", "", config_to_json(c).dump(), (uint64_t)c.seed);
    const BasePolicy base = make_base_policy(c, testing_scratch::shared_cache_dir(), {});
    RlSession session(c, base.params, store_.get(), run_, dir_->filePath("ckpt").toStdString());
    for (int s = 0; s < kSteps; ++s) f2_.push_back(RlSession::metric(session.step(), "F@2"));
    spike_ = std::max_element(f2_.begin(), f2_.end()) - f2_.begin();
    QString series;
    for (double f : f2_) series += QString::number(f, 'g', 3) + QLatin1Char(' ');
    qInfo("F@2 by step: %s; the spike at step %d", qPrintable(series), int(spike_));
    std::vector<double> sorted = f2_;
    std::sort(sorted.begin(), sorted.end());
    QVERIFY2(f2_[spike_] > 0 && f2_[spike_] > sorted[kSteps / 2], "an F@2 spike above the run's median");
}

void TokenWhyTest::choosingAWorstTokenShowsItsStoredNumbers() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, spike_);
    TokenWhy* why = dd.whyView();
    const WorstTokens stored = parse_worst_tokens(store_->worst_tokens(run_, spike_));
    QCOMPARE(int(stored.tokens.size()), kWorstTokens);
    QCOMPARE(why->chooser()->count(), kWorstTokens);
    for (int rank : {0, 3, kWorstTokens - 1}) {
        why->chooser()->setCurrentIndex(rank);
        QCOMPARE(why->shownRank(), rank);
        const WorstToken& t = stored.tokens[size_t(rank)];
        const QString text = why->summaryText();
        QVERIFY2(text.contains(lp8(t.lp_roll)) && text.contains(lp8(t.lp_train)), qPrintable(text));
        QVERIFY2(text.contains(QString::number(double(t.lp_train) - double(t.lp_roll), 'g', 5)), qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("sequence %1, response position %2").arg(t.seq).arg(t.pos)),
                 qPrintable(text));
        // Alternatives side by side: the rollout's and the training's top tokens in order.
        QTableWidget* alts = why->alternativesTable();
        QCOMPARE(alts->rowCount(), kTopAlternatives);
        for (int r = 0; r < kTopAlternatives; ++r) {
            QCOMPARE(alts->item(r, 2)->text(), QString::number(t.alt_roll[size_t(r)].lp, 'g', 6));
            QCOMPARE(alts->item(r, 5)->text(), QString::number(t.alt_train[size_t(r)].lp, 'g', 6));
        }
        // One router row per MoE layer; each flip marks the expert on both sides.
        QCOMPARE(why->routerTable()->rowCount(), int(stored.moe_layers.size()));
        QCOMPARE(why->flippedExperts(), 2 * t.flips);
        const QString path = why->pathText();
        QVERIFY2(
            path.contains(QStringLiteral("fp8_e4m3")) && path.contains(QStringLiteral("M = %1").arg(t.rollout_rows)),
            qPrintable(path));
    }
}

void TokenWhyTest::scatterAndSamplesSelectTokens() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, spike_);
    const WorstTokens stored = dd.whyView()->worst();
    // The scatter's dot of worst token 2 is that token.
    const WorstToken& t = stored.tokens[2];
    dd.tabs()->setCurrentIndex(0);
    emit dd.scatterSeries()->clicked(QPointF(std::exp(double(t.lp_roll)), std::exp(double(t.lp_train))));
    QCOMPARE(dd.tabs()->currentWidget(), dd.whyPage());
    // (or a worst token drawn on the same spot: the same log-probs)
    const int shown = dd.whyView()->shownRank();
    QVERIFY(shown >= 0);
    QCOMPARE(stored.tokens[size_t(shown)].lp_roll, t.lp_roll);
    QCOMPARE(stored.tokens[size_t(shown)].lp_train, t.lp_train);
    // A token of the samples view: the first response token of the first sample.
    emit dd.samplesBrowser()->anchorClicked(QUrl(QStringLiteral("tok:0")));
    const QString text = dd.whyView()->summaryText();
    QVERIFY2(text.contains(QStringLiteral("sequence 0, response position 0")), qPrintable(text));
}

// In a bitwise-equal step the sixteen "worst" tokens all have |delta| = 0:
// the scatter must not ring them as if they were a finding.
void TokenWhyTest::onlyWorstTokensThatDifferAreRinged() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, spike_);
    WorstTokens stored = dd.whyView()->worst();
    const auto differing = [](const WorstTokens& w) {
        return std::count_if(w.tokens.begin(), w.tokens.end(),
                             [](const WorstToken& t) { return t.lp_roll != t.lp_train; });
    };
    QVERIFY(differing(stored) > 0);
    QCOMPARE(dd.worstMarks()->count(), qsizetype(differing(stored)));
    // The same tokens, all but the first agreeing bit for bit.
    for (size_t i = 1; i < stored.tokens.size(); ++i) stored.tokens[i].lp_train = stored.tokens[i].lp_roll;
    const int64_t equal = store_->create_run("agreeing", "", store_->run_info(run_)->config_json, 1);
    StepRecord r;
    r.step = 0;
    r.metrics = {{"k3_kl", 0.0}};
    r.worst_tokens_json = worst_tokens_json(stored);
    store_->append_step(equal, r);
    dd.setRunStep(*store_, equal, 0);
    QCOMPARE(dd.whyView()->worst().tokens.size(), stored.tokens.size());  // all still listed
    QCOMPARE(dd.worstMarks()->count(), qsizetype(1));
}

void TokenWhyTest::aTokenWithoutDetailSaysWhereDetailIsKept() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, spike_);
    const WorstTokens stored = dd.whyView()->worst();
    // The scatter dot of least mismatch is no worst token.
    const auto samples = store_->token_samples(run_, spike_);
    const auto calm = std::min_element(samples.begin(), samples.end(), [](const TokenSample& a, const TokenSample& b) {
        return std::abs(a.lp_train - a.lp_roll) < std::abs(b.lp_train - b.lp_roll);
    });
    emit dd.scatterSeries()->clicked(QPointF(std::exp(calm->lp_roll), std::exp(calm->lp_train)));
    QCOMPARE(dd.whyView()->shownRank(), -1);
    const QString text = dd.whyView()->summaryText();
    QVERIFY2(text.contains(lp8(calm->lp_roll)) && text.contains(lp8(calm->lp_train)), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("kept for the step's %1 largest").arg(kWorstTokens)), qPrintable(text));
    QCOMPARE(dd.whyView()->alternativesTable()->rowCount(), 0);
}

// Its tables show every row; on a laptop the tab scrolls them instead of
// holding the window (its central drill-down) taller than the screen.
void TokenWhyTest::theWhyTabScrollsRatherThanGrowTheWindow() {
    const int emptyMinimum = DrillDown().minimumSizeHint().height();
    DrillDown dd;
    dd.setRunStep(*store_, run_, spike_);
    dd.whyView()->showWorst(0);
    dd.tabs()->setCurrentWidget(dd.whyPage());
    dd.resize(900, emptyMinimum);
    dd.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dd));
    // Taller than the other tabs need, and yet it does not raise the minimum.
    QTRY_VERIFY_WITH_TIMEOUT(dd.whyView()->minimumSizeHint().height() > emptyMinimum, kEventDeadlineMs);
    QVERIFY2(dd.minimumSizeHint().height() <= emptyMinimum,
             qPrintable(QString("%1 px against %2").arg(dd.minimumSizeHint().height()).arg(emptyMinimum)));
    QTRY_VERIFY_WITH_TIMEOUT(qobject_cast<QScrollArea*>(dd.whyPage())->verticalScrollBar()->isVisible(),
                             kEventDeadlineMs);
}

void TokenWhyTest::screenshotsAtTheF2Spike() {
    DrillDown dd;
    dd.setRunStep(*store_, run_, spike_);
    dd.resize(1040, 780);
    dd.show();
    // The step's worst token, then the worst one with a router flip.
    const WorstTokens& w = dd.whyView()->worst();
    dd.whyView()->showWorst(0);
    dd.tabs()->setCurrentWidget(dd.whyPage());
    QTest::qWait(100);
    QVERIFY(testing_shots::save(&dd, QStringLiteral("why_token_f2_spike")));
    const auto flipped =
        std::find_if(w.tokens.begin(), w.tokens.end(), [](const WorstToken& t) { return t.flips > 0; });
    QVERIFY2(flipped != w.tokens.end(), "an FP8 rollout of an MoE flips some route among its worst tokens");
    dd.whyView()->showWorst(int(flipped - w.tokens.begin()));
    QTest::qWait(100);
    QVERIFY(testing_shots::save(&dd, QStringLiteral("why_token_flip_f2_spike")));
    // The scatter: the worst tokens ringed, the one explained filled.
    QCOMPARE(int(dd.scatterSeries()->chart()->series().size()), 4);
    dd.tabs()->setCurrentIndex(0);
    QTest::qWait(100);
    QVERIFY(testing_shots::save(&dd, QStringLiteral("why_scatter_f2_spike")));
    dd.tabs()->setCurrentIndex(1);
    QTest::qWait(100);
    QVERIFY(testing_shots::save(&dd, QStringLiteral("why_ft_f2_spike")));
}

QTEST_MAIN(TokenWhyTest)
#include "token_why_test.moc"
