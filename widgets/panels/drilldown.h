// DrillDown: the mismatch of one run at one step, from the store's drill-down
// tables (core/store/store.h):
//   (a) "Probabilities": training vs rollout probability of the sampled
//       tokens (exp of the log-probs, both axes 0..1, diagonal y = x; the R3
//       paper's Figure 2). Points off the diagonal are the mismatch.
//   (b) "F(t)": fraction of tokens with max(rho, 1/rho) > t, log t on x, log
//       fraction on y. QLogValueAxis hides a whole series with one value <= 0,
//       so zeros are clamped to a floor (a decade below the smallest positive
//       value) and a note says how many.
//   (c) "Router": histogram of d = rollout top-k experts missing from the
//       training top-k per (token, layer); a dense model has none (note).
//   (d) "Samples": prompt, reward and the response token by token, each
//       token's background encoding |lp_train - lp_roll| (white -> red, log
//       scale, legend), router flips underlined with a superscript count, and
//       a tooltip with both log-probs and the difference.
//   (e) "By probability": for the step's response tokens by decade of the
//       rollout probability, the share of tokens beside the share of K3 KL,
//       and the mean |lp_train - lp_roll| (stored step metrics).
//   (f) "Why this token?" (token_why.h): the step's largest-|delta log p|
//       tokens explained: alternatives, routes, rounding points, kernel
//       paths. Clicking a dot in (a) or a token in (d) shows that token here.
// A step selector (slider + spin box, snapping to stored steps) reloads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <QList>
#include <QString>
#include <QWidget>

#include "core/store/store.h"
#include "widgets/charts/drilldown_plots.h"
#include "widgets/panels/token_why.h"

class QChart;
class QChartView;
class QLabel;
class QSlider;
class QSpinBox;
class QStackedWidget;
class QTabWidget;
class QTextBrowser;
class QScatterSeries;
class QScrollArea;
class QLineSeries;
class QBarSet;
class QCheckBox;

namespace mlk {

class DrillDown : public QWidget {
    Q_OBJECT
public:
    explicit DrillDown(QWidget* parent = nullptr);

    // Shows run `runId` at `step` (snapped to the nearest stored step). The
    // store is not owned and is kept for the step selector: it must outlive
    // this widget or be replaced (setRunStep again / clear()).
    void setRunStep(Store& store, int64_t runId, int64_t step);
    void clear();
    // Reloads the run's step list (for a live run) and the current step.
    void reload();

    int64_t runId() const { return runId_; }
    int64_t step() const { return step_; }
    std::vector<int64_t> availableSteps() const { return steps_; }

    // ---- for tests and exports ----
    int scatterPointCount() const;
    QList<QPointF> scatterPoints() const;  // (rollout prob, training prob)
    QList<QPointF> ftPoints() const;       // as drawn (zeros clamped when log y)
    int ftClampedCount() const { return ftClamped_; }
    double ftFloor() const { return ftFloor_; }
    QList<qreal> histogramValues() const;     // bar heights, by d ascending
    QStringList histogramCategories() const;  // "0", "1", ...
    bool routerEmpty() const { return routerEmpty_; }
    ProbBuckets probBuckets() const { return buckets_; }  // as drawn
    QString samplesHtml() const { return samplesHtml_; }
    QString samplesText() const;  // plain text of the samples view
    QString noteText() const;     // notes of every view, joined

    QTabWidget* tabs() const { return tabs_; }
    // The views (tabs), for screenshots.
    QWidget* scatterView() const;
    QWidget* ftView() const;
    QWidget* routerView() const;
    QWidget* samplesView() const;
    QWidget* bucketsView() const { return bucketsPage_; }
    TokenWhy* whyView() const { return why_; }
    QWidget* whyPage() const { return whyPage_; }               // its tab: why_ in a scroll area
    QScatterSeries* scatterSeries() const { return scatter_; }  // its clicked() picks a token
    QScatterSeries* worstMarks() const { return worstMarks_; }  // rings: the worst tokens that differ
    QTextBrowser* samplesBrowser() const { return samples_; }   // its anchorClicked() picks a token
    // Shows `pick` in "Why this token?" and brings that tab forward.
    void explainToken(const TokenPick& pick);

signals:
    void stepChanged(int64_t step);

private:
    QString noRunHint() const;
    void buildUi();
    void loadStep(int64_t step);
    void fillScatter(const std::vector<TokenSample>& ts);
    void fillFt(const std::vector<FtPoint>& ft);
    void fillRouter(const std::vector<RouterBin>& rh);
    void fillSamples(const std::vector<TextSample>& ts);
    void fillBuckets(const std::vector<std::pair<std::string, double>>& stepMetrics);
    void redrawFt();
    void setStepControls();
    void markWorst();

    Store* store_ = nullptr;
    int64_t runId_ = -1;
    int64_t step_ = -1;
    std::vector<int64_t> steps_;
    bool updatingControls_ = false;

    QLabel* header_ = nullptr;
    QSlider* slider_ = nullptr;
    QSpinBox* stepSpin_ = nullptr;
    QTabWidget* tabs_ = nullptr;

    QWidget* scatterPage_ = nullptr;
    QChartView* scatterView_ = nullptr;
    QScatterSeries* scatter_ = nullptr;
    QScatterSeries *worstMarks_ = nullptr, *pickedMark_ = nullptr;  // rings round the worst tokens; the explained one
    QLabel* scatterNote_ = nullptr;
    std::vector<TokenSample> scatterTokens_;  // the drawn dots' tokens, in the series' order

    QWidget* ftPage_ = nullptr;
    QChartView* ftView_ = nullptr;
    QLabel* ftNote_ = nullptr;
    QCheckBox* ftLogY_ = nullptr;
    std::unique_ptr<FtPlotter> ftPlotter_;  // the F(t) chart, by the shared axis rules
    std::vector<FtPoint> ftRaw_;
    QList<QPointF> ftDrawn_;
    int ftClamped_ = 0;
    double ftFloor_ = 0;

    QWidget* routerPage_ = nullptr;
    QStackedWidget* routerStack_ = nullptr;
    QChartView* routerView_ = nullptr;
    std::shared_ptr<AxisFrame> routerFrame_;  // the histogram's count axis, by the shared axis rules
    QLabel* routerNote_ = nullptr;
    QLabel* routerEmptyLabel_ = nullptr;
    QList<qreal> histValues_;
    QStringList histCats_;
    bool routerEmpty_ = true;

    QWidget* bucketsPage_ = nullptr;
    std::unique_ptr<ProbBucketPlotter> bucketsPlotter_;
    QLabel* bucketsNote_ = nullptr;
    ProbBuckets buckets_;

    QWidget* samplesPage_ = nullptr;
    QTextBrowser* samples_ = nullptr;
    QString samplesHtml_;
    std::vector<TokenPick> samplePicks_;  // what each token link of the samples names
    int samplesPerPrompt_ = 1;            // the run's: a sample's sequence in the batch

    TokenWhy* why_ = nullptr;
    QScrollArea* whyPage_ = nullptr;
};

}  // namespace mlk
