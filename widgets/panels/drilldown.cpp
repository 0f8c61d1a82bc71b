#include "widgets/panels/drilldown.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <QAbstractTextDocumentLayout>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QCursor>
#include <QHBoxLayout>
#include <QHelpEvent>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QScatterSeries>
#include <QScrollArea>
#include <QScrollBar>
#include <QSlider>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTextBlock>
#include <QTextBrowser>
#include <QToolTip>
#include <QUrl>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "widgets/data/metric_help.h"
#include "core/metrics/run_stats.h"
#include "widgets/data/palette.h"
#include "widgets/panels/drilldown_samples.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace {

// A text browser that shows the tooltip of the character under the mouse
// (set from the HTML title attribute of each token span).
class TokenBrowser : public QTextBrowser {
public:
    using QTextBrowser::QTextBrowser;

protected:
    bool event(QEvent* e) override {
        if (e->type() == QEvent::ToolTip) {
            auto* he = static_cast<QHelpEvent*>(e);
            const QPoint docPos =
                he->pos() + QPoint(horizontalScrollBar()->value(), verticalScrollBar()->value()) - viewport()->pos();
            const int pos = document()->documentLayout()->hitTest(docPos, Qt::ExactHit);
            QString tip;
            if (pos >= 0) {
                QTextCursor c(document());
                c.setPosition(pos);
                c.movePosition(QTextCursor::NextCharacter, QTextCursor::KeepAnchor);
                tip = c.charFormat().toolTip();
            }
            if (tip.isEmpty()) QToolTip::hideText();
            else QToolTip::showText(he->globalPos(), tip, this);
            return true;
        }
        return QTextBrowser::event(e);
    }
};

QChartView* makeView(QChart* chart, QWidget* parent) {
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto* v = new QChartView(chart, parent);
    v->setRenderHint(QPainter::Antialiasing);
    // Its minimum is the window's too (the drill-down is the central
    // widget's other tab): 220 held a 1024 x 768 projector's window taller
    // than the screen in presentation mode.
    v->setMinimumSize(280, 170);
    return v;
}

QLabel* makeNote(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setTextFormat(Qt::RichText);
    l->setStyleSheet(QStringLiteral("color: %1; padding: 2px 4px;").arg(palette::secondaryText().name()));
    return l;
}

}  // namespace

DrillDown::DrillDown(QWidget* parent) : QWidget(parent) { buildUi(); }

void DrillDown::buildUi() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(4, 4, 4, 4);
    outer->setSpacing(4);

    // ---- step selector ------------------------------------------------------
    auto* top = new QHBoxLayout;
    header_ = new QLabel(tr("No run selected"), this);
    header_->setObjectName(QStringLiteral("drillHeader"));
    auto* prev = new QPushButton(QStringLiteral("\u25C0"), this);
    auto* next = new QPushButton(QStringLiteral("\u25B6"), this);
    prev->setToolTip(tr("Previous stored step"));
    next->setToolTip(tr("Next stored step"));
    prev->setFixedWidth(32);
    next->setFixedWidth(32);
    slider_ = new QSlider(Qt::Horizontal, this);
    slider_->setObjectName(QStringLiteral("stepSlider"));
    slider_->setToolTip(tr("Step of the run to inspect"));
    stepSpin_ = new QSpinBox(this);
    stepSpin_->setObjectName(QStringLiteral("stepSpin"));
    stepSpin_->setPrefix(tr("step "));
    stepSpin_->setKeyboardTracking(false);
    top->addWidget(header_);
    top->addWidget(prev);
    top->addWidget(slider_, 1);
    top->addWidget(next);
    top->addWidget(stepSpin_);
    outer->addLayout(top);

    connect(slider_, &QSlider::valueChanged, this, [this](int i) {
        if (updatingControls_ || i < 0 || i >= static_cast<int>(steps_.size())) return;
        loadStep(steps_[static_cast<size_t>(i)]);
    });
    connect(stepSpin_, &QSpinBox::valueChanged, this, [this](int v) {
        if (updatingControls_ || steps_.empty()) return;
        // snap to the nearest stored step
        auto it = std::lower_bound(steps_.begin(), steps_.end(), static_cast<int64_t>(v));
        if (it == steps_.end()) --it;
        else if (it != steps_.begin() && *it != v && v - *(it - 1) < *it - v) --it;
        loadStep(*it);
    });
    connect(prev, &QPushButton::clicked, this, [this] { slider_->setValue(slider_->value() - 1); });
    connect(next, &QPushButton::clicked, this, [this] { slider_->setValue(slider_->value() + 1); });

    tabs_ = new QTabWidget(this);
    outer->addWidget(tabs_, 1);

    // ---- (a) scatter ----------------------------------------------------------
    {
        scatterPage_ = new QWidget(tabs_);
        auto* l = new QVBoxLayout(scatterPage_);
        l->setContentsMargins(0, 0, 0, 0);
        scatterView_ = makeView(new QChart, scatterPage_);
        const ProbabilityPlot plot =
            buildProbabilityPlot(scatterView_->chart());  // after makeView: it fits the margins
        scatter_ = plot.tokens, worstMarks_ = plot.worst, pickedMark_ = plot.picked;
        connect(scatter_, &QScatterSeries::hovered, this, [this](const QPointF& p, bool state) {
            if (!state) {
                QToolTip::hideText();
                return;
            }
            const double lr = std::log(p.x()), lt = std::log(p.y());
            QToolTip::showText(
                QCursor::pos(),
                tr("p_roll = %1, p_train = %2\nlp_roll = %3, lp_train = %4\n|\u0394 log p| = %5")
                    .arg(num(p.x(), 4), num(p.y(), 4), num(lr, 4), num(lt, 4), num(std::abs(lt - lr), 4)),
                scatterView_);
        });
        // A click asks "why this token?"; of dots drawn on top of each other
        // (same log-probs), one with stored detail.
        const auto pickDot = [this](const QPointF& p) {
            const QList<QPointF> pts = scatter_->points();
            const TokenSample* hit = nullptr;
            for (qsizetype i = 0; i < pts.size() && i < static_cast<qsizetype>(scatterTokens_.size()); ++i) {
                if (pts[i] != p) continue;
                const TokenSample& t = scatterTokens_[static_cast<size_t>(i)];
                if (!hit) hit = &t;
                for (const WorstToken& w : why_->worst().tokens)
                    if (w.seq == t.seq && w.pos == t.pos) hit = &t;
            }
            if (hit) explainToken({hit->seq, hit->pos, hit->token, hit->lp_roll, hit->lp_train, -1});
        };
        for (QScatterSeries* s : {scatter_, worstMarks_, pickedMark_})
            connect(s, &QScatterSeries::clicked, this, pickDot);
        scatterNote_ = makeNote(scatterPage_);
        l->addWidget(scatterView_, 1);
        l->addWidget(scatterNote_);
        tabs_->addTab(scatterPage_, tr("Probabilities"));
    }

    // ---- (b) F(t) ---------------------------------------------------------------
    {
        ftPage_ = new QWidget(tabs_);
        auto* l = new QVBoxLayout(ftPage_);
        l->setContentsMargins(0, 0, 0, 0);
        ftView_ = makeView(new QChart, ftPage_);
        ftPlotter_ = std::make_unique<FtPlotter>(ftView_->chart());
        auto* row = new QHBoxLayout;
        ftNote_ = makeNote(ftPage_);
        ftLogY_ = new QCheckBox(tr("Log y"), ftPage_);
        ftLogY_->setChecked(true);
        ftLogY_->setToolTip(tr("Logarithmic fraction axis; zeros are drawn at a floor and counted in the note"));
        connect(ftLogY_, &QCheckBox::toggled, this, [this] { redrawFt(); });
        row->addWidget(ftNote_, 1);
        row->addWidget(ftLogY_, 0, Qt::AlignTop);
        l->addWidget(ftView_, 1);
        l->addLayout(row);
        tabs_->addTab(ftPage_, tr("F(t)"));
    }

    // ---- (c) router histogram -----------------------------------------------------
    {
        routerPage_ = new QWidget(tabs_);
        auto* l = new QVBoxLayout(routerPage_);
        l->setContentsMargins(0, 0, 0, 0);
        routerStack_ = new QStackedWidget(routerPage_);
        routerView_ = makeView(new QChart, routerStack_);
        routerFrame_ = std::make_shared<AxisFrame>(routerView_->chart()->font());
        addAxisFrame(routerView_->chart(), routerFrame_);
        routerEmptyLabel_ = new QLabel(routerStack_);
        routerEmptyLabel_->setAlignment(Qt::AlignCenter);
        routerEmptyLabel_->setWordWrap(true);
        routerEmptyLabel_->setStyleSheet(
            QStringLiteral("color: %1; font-size: 13pt;").arg(palette::secondaryText().name()));
        routerStack_->addWidget(routerView_);
        routerStack_->addWidget(routerEmptyLabel_);
        routerNote_ = makeNote(routerPage_);
        l->addWidget(routerStack_, 1);
        l->addWidget(routerNote_);
        tabs_->addTab(routerPage_, tr("Router"));
    }

    // ---- (d) samples ---------------------------------------------------------------
    {
        samplesPage_ = new QWidget(tabs_);
        auto* l = new QVBoxLayout(samplesPage_);
        l->setContentsMargins(0, 0, 0, 0);
        samples_ = new TokenBrowser(samplesPage_);
        samples_->setObjectName(QStringLiteral("samplesBrowser"));
        samples_->setOpenLinks(false);
        samples_->setMouseTracking(true);
        connect(samples_, &QTextBrowser::anchorClicked, this, [this](const QUrl& url) {
            bool ok = false;
            const int n = url.toString().section(QLatin1Char(':'), 1).toInt(&ok);
            if (ok && n >= 0 && n < static_cast<int>(samplePicks_.size()))
                explainToken(samplePicks_[static_cast<size_t>(n)]);
        });
        l->addWidget(samples_, 1);
        tabs_->addTab(samplesPage_, tr("Samples"));
    }

    // ---- (e) by rollout probability --------------------------------------------------
    {
        bucketsPage_ = new QWidget(tabs_);
        auto* l = new QVBoxLayout(bucketsPage_);
        l->setContentsMargins(0, 0, 0, 0);
        QChartView* shares = makeView(new QChart, bucketsPage_);
        QChartView* diffs = makeView(new QChart, bucketsPage_);
        for (QChartView* v : {shares, diffs}) v->setMinimumHeight(85);  // two charts in one tab's usual height
        bucketsPlotter_ = std::make_unique<ProbBucketPlotter>(shares->chart(), diffs->chart());
        bucketsNote_ = makeNote(bucketsPage_);
        l->addWidget(shares, 3);
        l->addWidget(diffs, 2);
        l->addWidget(bucketsNote_);
        tabs_->addTab(bucketsPage_, tr("By probability"));
    }

    // ---- (f) why this token ----------------------------------------------------------
    // In a scroll area: its tables show every row (twelve layers of routes
    // on a deep MoE), which without one would hold the window taller than a
    // laptop's screen while this tab is open.
    whyPage_ = new QScrollArea(tabs_);
    whyPage_->setWidgetResizable(true);
    whyPage_->setFrameShape(QFrame::NoFrame);
    why_ = new TokenWhy(whyPage_);
    whyPage_->setWidget(why_);
    tabs_->addTab(whyPage_, tr("Why this token?"));
    connect(why_, &TokenWhy::shownChanged, this, &DrillDown::markWorst);
    // Each tab's tooltip: the catalogue's word on the metric it draws.
    tabs_->setTabToolTip(0, metricToolTip("logp_abs_diff_mean", tr("Each dot a sampled token, off the diagonal by:")));
    tabs_->setTabToolTip(1, metricToolTip("F@2", tr("The curve F(t) over every t; at t = 2:")));
    tabs_->setTabToolTip(2, metricToolTip("router_diff_router"));
    tabs_->setTabToolTip(4, metricToolTip("lowp_k3_share@0", tr("The K3 KL share of each decade; the lowest:")));
    tabs_->setTabToolTip(
        5, metricToolTip("logp_abs_diff_max", tr("The step's largest mismatches, explained; the largest:")));

    clear();
}

QWidget* DrillDown::scatterView() const { return scatterPage_; }
QWidget* DrillDown::ftView() const { return ftPage_; }
QWidget* DrillDown::routerView() const { return routerPage_; }
QWidget* DrillDown::samplesView() const { return samplesPage_; }

void DrillDown::clear() {
    store_ = nullptr;
    runId_ = -1;
    step_ = -1;
    steps_.clear();
    header_->setText(tr("No run selected"));
    setStepControls();
    // Every tab says how to get a run here (the fills below read store_).
    fillScatter({});
    fillFt({});
    fillRouter({});
    fillBuckets({});
    fillSamples({});
    why_->setStep({}, noRunHint());
}

QString DrillDown::noRunHint() const {
    return tr("No run selected: select one in the Runs list, or double-click it to open it here.");
}

void DrillDown::setRunStep(Store& store, int64_t runId, int64_t step) {
    store_ = &store;
    runId_ = runId;
    step_ = -1;
    samplesPerPrompt_ = Config{}.rl.samples_per_prompt;
    try {  // which batch sequence a text sample is; the default for a configuration that does not read
        if (const auto info = store.run_info(runId))
            samplesPerPrompt_ = stored_config_from_json(nlohmann::json::parse(info->config_json)).rl.samples_per_prompt;
    } catch (const std::exception&) {
    }
    reload();
    if (steps_.empty()) {
        header_->setText(tr("Run %1: no steps stored yet").arg(runId));
        fillScatter({});
        fillFt({});
        fillRouter({});
        fillBuckets({});
        fillSamples({});
        why_->setStep({});
        return;
    }
    auto it = std::lower_bound(steps_.begin(), steps_.end(), step);
    if (it == steps_.end()) --it;
    else if (it != steps_.begin() && *it != step && step - *(it - 1) < *it - step) --it;
    loadStep(*it);
}

void DrillDown::reload() {
    if (!store_ || runId_ < 0) return;
    try {
        steps_ = store_->steps(runId_);
    } catch (const StoreError& e) {
        steps_.clear();
        header_->setText(tr("Run %1: %2").arg(runId_).arg(qs(e.what())));
    }
    setStepControls();
    if (step_ >= 0) {
        const int64_t s = step_;
        step_ = -1;
        loadStep(s);
    }
}

void DrillDown::setStepControls() {
    updatingControls_ = true;
    const bool any = !steps_.empty();
    slider_->setEnabled(steps_.size() > 1);
    stepSpin_->setEnabled(any);
    slider_->setRange(0, any ? static_cast<int>(steps_.size()) - 1 : 0);
    stepSpin_->setRange(any ? static_cast<int>(steps_.front()) : 0, any ? static_cast<int>(steps_.back()) : 0);
    if (any && step_ >= 0) {
        auto it = std::lower_bound(steps_.begin(), steps_.end(), step_);
        slider_->setValue(static_cast<int>(it - steps_.begin()));
        stepSpin_->setValue(static_cast<int>(step_));
    }
    updatingControls_ = false;
}

void DrillDown::loadStep(int64_t step) {
    if (!store_ || runId_ < 0) return;
    if (step == step_) {
        setStepControls();  // snap the controls back
        return;
    }
    step_ = step;
    setStepControls();
    header_->setText(tr("Run %1 \u00B7 step %2").arg(runId_).arg(step));
    try {
        fillScatter(store_->token_samples(runId_, step));
        fillFt(store_->ft_curve(runId_, step));
        fillRouter(store_->router_hist(runId_, step));
        fillBuckets(store_->step_metrics(runId_, step));
        fillSamples(store_->text_samples(runId_, step));
        try {
            why_->setStep(parse_worst_tokens(store_->worst_tokens(runId_, step)));
        } catch (const std::invalid_argument& e) {
            why_->setStep({}, tr("This step's worst tokens are unreadable: %1").arg(qs(e.what())));
        }
    } catch (const StoreError& e) {
        header_->setText(tr("Run %1 \u00B7 step %2: %3").arg(runId_).arg(step).arg(qs(e.what())));
    }
    emit stepChanged(step);
}

// ---- (a) -------------------------------------------------------------------------
void DrillDown::fillScatter(const std::vector<TokenSample>& ts) {
    QList<QPointF> pts;
    pts.reserve(static_cast<qsizetype>(ts.size()));
    scatterTokens_.clear();
    int nonFinite = 0, identical = 0;
    double sumAbs = 0, maxAbs = 0;
    for (const TokenSample& t : ts) {
        const double pr = std::exp(t.lp_roll), pt = std::exp(t.lp_train);
        if (!std::isfinite(pr) || !std::isfinite(pt)) {
            ++nonFinite;
            continue;
        }
        pts << QPointF(pr, pt);
        scatterTokens_.push_back(t);
        const double d = std::abs(t.lp_train - t.lp_roll);
        sumAbs += d;
        maxAbs = std::max(maxAbs, d);
        if (t.lp_train == t.lp_roll) ++identical;
    }
    scatter_->replace(pts);
    QString note;
    if (ts.empty()) {
        note = store_ ? tr("No token samples stored for this step.") : noRunHint();
    } else {
        const int n = static_cast<int>(pts.size());
        note = tr("%1 tokens \u00B7 mean |\u0394 log p| = %2 \u00B7 max = %3 \u00B7 %4 bitwise identical")
                   .arg(n)
                   .arg(num(n ? sumAbs / n : 0, 3))
                   .arg(num(maxAbs, 3))
                   .arg(identical);
        if (nonFinite)
            note += QStringLiteral(" \u00B7 <span style='color:%2'>%1</span>")
                        .arg(tr("%n token(s) with a non-finite log-prob not drawn", nullptr, nonFinite),
                             palette::errorTone().ink.name());
    }
    scatterNote_->setText(note);
}

int DrillDown::scatterPointCount() const { return static_cast<int>(scatter_->count()); }
QList<QPointF> DrillDown::scatterPoints() const { return scatter_->points(); }

// ---- (b) -------------------------------------------------------------------------
void DrillDown::fillFt(const std::vector<FtPoint>& ft) {
    ftRaw_ = ft;
    redrawFt();
}

void DrillDown::redrawFt() {
    QList<QPointF> points;
    for (const FtPoint& p : ftRaw_) points << QPointF(p.t, p.frac);
    const FtPlot plot = ftPlotter_->draw(points, ftLogY_->isChecked());
    ftDrawn_ = plot.drawn;
    ftFloor_ = plot.floor;
    ftClamped_ = plot.atFloor;

    QStringList notes;
    if (ftRaw_.empty()) notes << (store_ ? tr("No F(t) curve stored for this step.") : noRunHint());
    if (ftClamped_)
        notes << QStringLiteral("<span style='color:%1'>%2</span>")
                     .arg(palette::floorMarker().name(),
                          tr("%n point(s) with F(t) = 0 drawn at the floor %1 (a log axis cannot show 0); "
                             "open squares mark them.",
                             nullptr, ftClamped_)
                              .arg(num(ftFloor_, 4)));
    if (plot.skipped) notes << tr("%n non-finite point(s) not drawn.", nullptr, plot.skipped);
    if (notes.isEmpty() && !ftRaw_.empty())
        notes << tr("%1 thresholds from t = %2 to %3.")
                     .arg(plot.drawn.size())
                     .arg(num(plot.tMin, 4))
                     .arg(num(plot.tMax, 4));
    ftNote_->setText(notes.join(QStringLiteral(" ")));
}

QList<QPointF> DrillDown::ftPoints() const { return ftDrawn_; }

// ---- (c) -------------------------------------------------------------------------
void DrillDown::fillRouter(const std::vector<RouterBin>& rh) {
    QChart* chart = routerView_->chart();
    chart->removeAllSeries();
    histValues_.clear();
    histCats_.clear();
    routerEmpty_ = rh.empty();
    if (routerEmpty_) {
        routerEmptyLabel_->setText(
            store_ ? tr("Dense model: no router.\n\nThis step has no router-diff histogram; a MoE model "
                        "(model.kind = moe) records how many of the rollout's top-k experts the training "
                        "engine did not pick.")
                   : noRunHint());
        routerStack_->setCurrentWidget(routerEmptyLabel_);
        routerNote_->setText(store_ ? tr("Dense model: no router.") : QString());
        return;
    }
    routerStack_->setCurrentWidget(routerView_);
    chart->setTitle(tr("Router diff: rollout top-k experts missing from the training top-k"));
    auto* set = new QBarSet(tr("(token, layer) pairs"));
    set->setColor(palette::runColour(1));
    set->setLabelColor(palette::neutralInk());
    int64_t total = 0, flipped = 0;
    double maxCount = 0;
    for (const RouterBin& b : rh) {
        *set << static_cast<qreal>(b.count);
        histValues_ << static_cast<qreal>(b.count);
        histCats_ << QString::number(b.d);
        total += b.count;
        if (b.d > 0) flipped += b.count;
        maxCount = std::max(maxCount, static_cast<double>(b.count));
    }
    auto* series = new QBarSeries;
    series->append(set);
    series->setLabelsVisible(true);
    series->setLabelsPosition(QAbstractBarSeries::LabelsOutsideEnd);
    series->setLabelsFormat(QStringLiteral("@value"));
    chart->addSeries(series);
    setBarAxes(chart, series, histCats_, tr("d = experts flipped"), maxCount, tr("count"), *routerFrame_);
    chart->legend()->setVisible(false);
    routerNote_->setText(tr("%1 (token, layer) pairs \u00B7 %2 with at least one flipped expert (%3%)")
                             .arg(total)
                             .arg(flipped)
                             .arg(total ? QString::number(100.0 * flipped / total, 'f', 2) : QStringLiteral("0")));
}

QList<qreal> DrillDown::histogramValues() const { return histValues_; }
QStringList DrillDown::histogramCategories() const { return histCats_; }

// ---- (e) -------------------------------------------------------------------------
void DrillDown::fillBuckets(const std::vector<std::pair<std::string, double>>& stepMetrics) {
    buckets_ = probBucketsFrom(stepMetrics);
    const QString note = bucketsPlotter_->draw(buckets_);
    bucketsNote_->setText(store_ ? note : QString());
}

// ---- (d) -------------------------------------------------------------------------
void DrillDown::fillSamples(const std::vector<TextSample>& ts) {
    const QString h = mlk::samplesHtml(ts, samplesPerPrompt_, samplePicks_,
                                       store_ ? tr("No text samples stored for this step.") : noRunHint());
    samplesHtml_ = h;
    const int scroll = samples_->verticalScrollBar()->value();
    samples_->setHtml(h);
    samples_->verticalScrollBar()->setValue(scroll);
}

void DrillDown::explainToken(const TokenPick& pick) {
    TokenPick p = pick;
    for (const TokenPick& s : samplePicks_)  // a dot of the scatter: its flips, if the samples hold it
        if (p.flips < 0 && s.seq == p.seq && s.pos == p.pos) p.flips = s.flips;
    why_->showToken(p);
    tabs_->setCurrentWidget(whyPage_);
}

// Rings around the step's worst tokens in the scatter, the explained one
// filled. A "worst" token whose two log-probs are equal is no mismatch: in a
// bitwise-equal step all sixteen are, and rings on them read as a finding.
void DrillDown::markWorst() {
    QList<QPointF> rings, picked;
    for (const WorstToken& t : why_->worst().tokens)
        if (t.lp_roll != t.lp_train)
            rings << QPointF(std::exp(static_cast<double>(t.lp_roll)), std::exp(static_cast<double>(t.lp_train)));
    const TokenPick shown = why_->shown();
    if (shown.seq >= 0 && std::isfinite(shown.lp_roll) && std::isfinite(shown.lp_train))
        picked << QPointF(std::exp(shown.lp_roll), std::exp(shown.lp_train));
    worstMarks_->replace(rings);
    pickedMark_->replace(picked);
}

QString DrillDown::samplesText() const { return samples_->toPlainText(); }

QString DrillDown::noteText() const {
    QStringList n;
    for (QLabel* l : {scatterNote_, ftNote_, routerNote_, bucketsNote_}) {
        QTextDocument d;
        d.setHtml(l->text());
        n << d.toPlainText();
    }
    return n.join(QLatin1Char('\n'));
}

}  // namespace mlk
