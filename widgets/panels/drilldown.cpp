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
#include <QScrollBar>
#include <QSlider>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTextBlock>
#include <QTextBrowser>
#include <QToolTip>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "widgets/data/metric_help.h"
#include "core/metrics/run_stats.h"
#include "widgets/data/palette.h"

namespace mlk {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

QString num(double v, int prec = 4) { return qs(value_text(v, prec)); }

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

// 12 -> "¹²": full-size superscript glyphs stay readable where <sup> shrinks.
QString superscript(int n) {
    static const char16_t digits[] = {u'\u2070', u'\u00B9', u'\u00B2', u'\u00B3', u'\u2074',
                                      u'\u2075', u'\u2076', u'\u2077', u'\u2078', u'\u2079'};
    QString out;
    for (QChar c : QString::number(n)) out += QChar(digits[c.digitValue()]);
    return out;
}

QChartView* makeView(QChart* chart, QWidget* parent) {
    chart->setMargins(QMargins(4, 4, 4, 4));
    chart->setBackgroundRoundness(0);
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto* v = new QChartView(chart, parent);
    v->setRenderHint(QPainter::Antialiasing);
    v->setMinimumSize(280, 220);
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
        scatter_ = buildProbabilityPlot(scatterView_->chart());  // after makeView: it fits the margins
        connect(scatter_, &QScatterSeries::hovered, this, [this](const QPointF& p, bool state) {
            if (!state) {
                QToolTip::hideText();
                return;
            }
            const double lr = std::log(p.x()), lt = std::log(p.y());
            QToolTip::showText(QCursor::pos(),
                               tr("p_roll = %1, p_train = %2\nlp_roll = %3, lp_train = %4\n|\u0394 log p| = %5")
                                   .arg(num(p.x()), num(p.y()), num(lr), num(lt), num(std::abs(lt - lr))),
                               scatterView_);
        });
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
        for (QChartView* v : {shares, diffs}) v->setMinimumHeight(110);  // two charts in one tab's usual height
        bucketsPlotter_ = std::make_unique<ProbBucketPlotter>(shares->chart(), diffs->chart());
        bucketsNote_ = makeNote(bucketsPage_);
        l->addWidget(shares, 3);
        l->addWidget(diffs, 2);
        l->addWidget(bucketsNote_);
        tabs_->addTab(bucketsPage_, tr("By probability"));
    }
    // Each tab's tooltip: the catalogue's word on the metric it draws.
    tabs_->setTabToolTip(0, metricToolTip("logp_abs_diff_mean", tr("Each dot a sampled token, off the diagonal by:")));
    tabs_->setTabToolTip(1, metricToolTip("F@2", tr("The curve F(t) over every t; at t = 2:")));
    tabs_->setTabToolTip(2, metricToolTip("router_diff_router"));
    tabs_->setTabToolTip(4, metricToolTip("lowp_k3_share@0", tr("The K3 KL share of each decade; the lowest:")));

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
    fillScatter({});
    fillFt({});
    fillRouter({});
    fillBuckets({});
    fillSamples({});
}

void DrillDown::setRunStep(Store& store, int64_t runId, int64_t step) {
    store_ = &store;
    runId_ = runId;
    step_ = -1;
    reload();
    if (steps_.empty()) {
        header_->setText(tr("Run %1: no steps stored yet").arg(runId));
        fillScatter({});
        fillFt({});
        fillRouter({});
        fillBuckets({});
        fillSamples({});
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
    } catch (const StoreError& e) {
        header_->setText(tr("Run %1 \u00B7 step %2: %3").arg(runId_).arg(step).arg(qs(e.what())));
    }
    emit stepChanged(step);
}

// ---- (a) -------------------------------------------------------------------------
void DrillDown::fillScatter(const std::vector<TokenSample>& ts) {
    QList<QPointF> pts;
    pts.reserve(static_cast<qsizetype>(ts.size()));
    int nonFinite = 0, identical = 0;
    double sumAbs = 0, maxAbs = 0;
    for (const TokenSample& t : ts) {
        const double pr = std::exp(t.lp_roll), pt = std::exp(t.lp_train);
        if (!std::isfinite(pr) || !std::isfinite(pt)) {
            ++nonFinite;
            continue;
        }
        pts << QPointF(pr, pt);
        const double d = std::abs(t.lp_train - t.lp_roll);
        sumAbs += d;
        maxAbs = std::max(maxAbs, d);
        if (t.lp_train == t.lp_roll) ++identical;
    }
    scatter_->replace(pts);
    QString note;
    if (ts.empty()) {
        note = tr("No token samples stored for this step.");
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
    if (ftRaw_.empty()) notes << tr("No F(t) curve stored for this step.");
    if (ftClamped_)
        notes << QStringLiteral("<span style='color:%1'>%2</span>")
                     .arg(palette::floorMarker().name(),
                          tr("%n point(s) with F(t) = 0 drawn at the floor %1 (a log axis cannot show 0); "
                             "open squares mark them.",
                             nullptr, ftClamped_)
                              .arg(num(ftFloor_)));
    if (plot.skipped) notes << tr("%n non-finite point(s) not drawn.", nullptr, plot.skipped);
    if (notes.isEmpty() && !ftRaw_.empty())
        notes << tr("%1 thresholds from t = %2 to %3.").arg(plot.drawn.size()).arg(num(plot.tMin)).arg(num(plot.tMax));
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
                   : tr("No run selected."));
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
    QString h;
    h += QStringLiteral("<html><body style='font-family:sans-serif'>");
    // legend
    h += QStringLiteral("<p style='margin:2px'><b>%1</b> ").arg(tr("|lp_train \u2212 lp_roll|:"));
    const double stops[] = {0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1};
    const char* names[] = {"\u2264 1e-6", "1e-5", "1e-4", "1e-3", "0.01", "0.1", "\u2265 1"};
    for (int i = 0; i < 7; ++i) {
        const QColor c = palette::mismatchHeat(stops[i]);
        h += QStringLiteral("<span style='background-color:%1; color:%2; font-family:monospace'>&nbsp;%3&nbsp;</span> ")
                 .arg(c.name(), palette::inkOn(c).name(), QString::fromUtf8(names[i]));
    }
    h += QStringLiteral(
             " &nbsp; <span style='text-decoration:underline'>%1</span><span "
             "style='color:%3; font-weight:bold'>\u207F</span> = %2</p>")
             .arg(tr("token"), tr("n router flips (MoE)"), palette::routerFlip().name());
    h += QStringLiteral("<hr/>");

    if (ts.empty())
        h += QStringLiteral("<p style='color:%2'>%1</p>")
                 .arg(tr("No text samples stored for this step."), palette::secondaryText().name());

    for (const TextSample& s : ts) {
        h += QStringLiteral("<p style='margin-top:8px; margin-bottom:2px'><b>%1</b> &nbsp; %2 <b>%3</b></p>")
                 .arg(tr("Sample %1").arg(s.idx), tr("reward"),
                      std::isfinite(s.reward) ? QString::number(s.reward, 'f', 2) : num(s.reward));
        h += QStringLiteral(
                 "<p style='margin:2px'>%1 <span style='font-family:monospace; background-color:%3'>"
                 "%2</span></p>")
                 .arg(tr("Prompt:"), qs(s.prompt).toHtmlEscaped(), palette::codeBackground().name());
        nlohmann::json toks;
        bool ok = true;
        try {
            toks = nlohmann::json::parse(s.tokens_json.empty() ? std::string("[]") : s.tokens_json);
            ok = toks.is_array();
        } catch (const nlohmann::json::exception&) {
            ok = false;
        }
        h += QStringLiteral("<p style='margin:2px'>%1 <span style='font-family:monospace; font-size:14pt'>")
                 .arg(tr("Response:"));
        if (!ok || toks.empty()) {
            h += QStringLiteral("<span>%1</span></span>").arg(qs(s.response).toHtmlEscaped());
            if (!ok)
                h += QStringLiteral(" <span style='color:%2; font-size:9pt'>%1</span>")
                         .arg(tr("(per-token data unreadable)"), palette::errorTone().ink.name());
            h += QStringLiteral("</p>");
            continue;
        }
        int nFlipTokens = 0;
        double maxD = 0;
        for (const auto& t : toks) {
            auto numOf = [&](const char* k) {
                auto it = t.find(k);
                return it != t.end() && it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
            };
            const double lr = numOf("lp_roll"), lt = numOf("lp_train");
            const int flips = t.contains("flips") && t["flips"].is_number() ? t["flips"].get<int>() : 0;
            const QString text =
                t.contains("text") && t["text"].is_string() ? qs(t["text"].get<std::string>()) : QStringLiteral("?");
            // Tool output a multi-turn environment inserted: context, no mismatch of the policy's.
            const bool env = t.contains("env") && t["env"].is_boolean() && t["env"].get<bool>();
            const double d = std::abs(lt - lr);
            if (std::isfinite(d) && !env) maxD = std::max(maxD, d);
            const QColor bg = env ? palette::codeBackground() : palette::mismatchHeat(d);
            QString tip = tr("token \u201C%1\u201D (id %2)\nlp_roll = %3\nlp_train = %4\nlp_train \u2212 lp_roll = %5")
                              .arg(text)
                              .arg(t.contains("id") ? QString::fromStdString(t["id"].dump()) : QStringLiteral("?"))
                              .arg(num(lr, 8), num(lt, 8), num(lt - lr, 4));
            if (flips > 0) tip += tr("\nrouter flips: %1").arg(flips);
            if (env) tip += tr("\ninserted by the environment: excluded from the loss and every metric");
            QString style = QStringLiteral("background-color:%1; color:%2").arg(bg.name(), palette::inkOn(bg).name());
            if (env) style += QStringLiteral("; font-style:italic");
            if (flips > 0) style += QStringLiteral("; text-decoration:underline");
            QString shown = text.toHtmlEscaped();
            if (text == QLatin1String(" ")) shown = QStringLiteral("&#x2423;");
            h += QStringLiteral("<span title=\"%1\" style='%2'>%3</span>").arg(tip.toHtmlEscaped(), style, shown);
            if (flips > 0) {
                ++nFlipTokens;
                h += QStringLiteral("<span class='flip' style='color:%2; font-weight:bold'>%1</span>")
                         .arg(superscript(flips), palette::routerFlip().name());
            }
            h += QStringLiteral("&#x200A;");  // hair space between chips
        }
        h += QStringLiteral("</span></p><p style='margin:2px; color:%2; font-size:9pt'>%1</p>")
                 .arg(tr("%1 tokens \u00B7 max |\u0394 log p| = %2 \u00B7 %3 with router flips")
                          .arg(toks.size())
                          .arg(num(maxD, 3))
                          .arg(nFlipTokens),
                      palette::secondaryText().name());
    }
    h += QStringLiteral("</body></html>");
    samplesHtml_ = h;
    const int scroll = samples_->verticalScrollBar()->value();
    samples_->setHtml(h);
    samples_->verticalScrollBar()->setValue(scroll);
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
