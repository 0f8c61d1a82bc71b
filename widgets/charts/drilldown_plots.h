// The drill-down's two XY plots, drawn by the shared axis rules
// (axis_rules.h, painted by axis_frame.h) and in the palette's colours: the
// training-vs-rollout probability scatter with its y = x diagonal, F(t),
// the fraction of tokens whose ratio exceeds t, on log t with the fraction on
// a log axis (values <= 0 held at the log floor, as in every chart) or a
// linear one, and the mismatch by rollout-probability decade. Data in, chart
// out: the panel (widgets/panels/drilldown.h) owns the widgets, the step
// selection and the notes.
#pragma once

#include <QList>
#include <QPointF>
#include <QStringList>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "widgets/charts/axis_frame.h"

QT_BEGIN_NAMESPACE
class QChart;
class QLineSeries;
class QScatterSeries;
QT_END_NAMESPACE

namespace mlk {

// The probability scatter's series: the tokens, rings around the step's
// worst tokens (those "why this token?" explains) and the token it shows.
struct ProbabilityPlot {
    QScatterSeries *tokens = nullptr, *worst = nullptr, *picked = nullptr;
};
// Sets up `chart` as the probability scatter: both axes 0..1, the diagonal
// over the tokens; returns its (empty) series.
ProbabilityPlot buildProbabilityPlot(QChart* chart);

// The probe panel's probability scatter: rollout against training
// probability on log axes (the small probabilities are where the engines
// part), the y = x diagonal, and the previous probe as grey "ghost" points
// under the current ones, for before / after. Probabilities below the axis
// floor (an underflowed exp) are drawn at it.
class LogProbabilityScatter {
public:
    explicit LogProbabilityScatter(QChart* chart);
    void draw(const QList<QPointF>& now, const QList<QPointF>& ghost);
    double floor() const { return floor_; }
    QScatterSeries* current() const { return now_; }
    QScatterSeries* ghost() const { return ghost_; }

private:
    QChart* chart_;
    std::shared_ptr<AxisFrame> frame_;
    QScatterSeries *now_ = nullptr, *ghost_ = nullptr;
    QLineSeries* diagonal_ = nullptr;
    double floor_ = 1e-6;
};

// What drawFtPlot drew.
struct FtPlot {
    QList<QPointF> drawn;  // every finite (t, F) with t > 0, F <= 0 at the floor on a log y
    int atFloor = 0;       // of those, drawn at the floor
    double floor = 0;      // log y: where F <= 0 is drawn (logFloorFor)
    int skipped = 0;       // non-finite or t <= 0: not drawn
    double tMin = 0, tMax = 0;
};

class FtPlotter {
public:
    // Paints its axes into `chart` (which it must outlive no longer than the chart).
    explicit FtPlotter(QChart* chart);
    // Replaces the curve by `points` (t, fraction).
    FtPlot draw(const QList<QPointF>& points, bool logY);

private:
    QChart* chart_;
    std::shared_ptr<AxisFrame> frame_;
};

// One step's mismatch by decade of the rollout probability (the catalogue's
// kProbBucketMetrics, highest decade first): where the tokens are and where
// the K3 KL comes from.
struct ProbBuckets {
    QStringList categories;                     // "[0.1, 1]", ..., "[0, 1e-4)"
    QList<qreal> tokenShare, k3Share, absDiff;  // lowp_frac@, lowp_k3_share@, lowp_abs_diff@; NaN where not stored
    bool stored = false;                        // the step has every bucket metric (older runs have none)
};
ProbBuckets probBucketsFrom(const std::vector<std::pair<std::string, double>>& stepMetrics);

class ProbBucketPlotter {
public:
    // shares: token and K3 shares side by side; diffs: mean |delta log p|.
    ProbBucketPlotter(QChart* shares, QChart* diffs);
    // Redraws both charts; returns the note under them.
    QString draw(const ProbBuckets& buckets);

private:
    QChart *shares_, *diffs_;
    std::shared_ptr<AxisFrame> sharesFrame_, diffsFrame_;
};

}  // namespace mlk
