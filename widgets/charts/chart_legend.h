// The Qt Charts side of a metric chart's runs and seed groups: per run, the
// series holding its drawn points (painted by the line layer, line_layer.h,
// not by Qt Charts), its NaN/Inf marker series and a legend entry that
// toggles the run (dimmed while hidden); per seed group, one legend entry.
// Each run in its own colour (palette::runColour(id) unless the user chose
// another), NaN/Inf markers edged in the palette's marker colour.
#pragma once

#include <QObject>
#include <QString>

#include "widgets/charts/chart_traces.h"

QT_BEGIN_NAMESPACE
class QAbstractAxis;
class QChart;
class QWidget;
class QXYSeries;
QT_END_NAMESPACE

namespace mlk {

class ChartLegend : public QObject {
    Q_OBJECT

public:
    static constexpr int kRawAlpha = 70;  // the raw line under the smoothed one
    // 1 px lines take QPainter's cosmetic fast path; a 2 px pen goes through
    // the general stroker, measured ~25x slower per point with antialiasing
    // (Qt 6.4, 2 cores). The smoothed line stands out by opacity, not width.
    static constexpr double kLineWidth = 1.0;

    // `view` gives the legend's text colour.
    ChartLegend(QChart* chart, ChartTraces& traces, const QWidget* view, QObject* parent = nullptr);

    // The axes every marker and legend series is attached to.
    void setAxes(QAbstractAxis* x, QAbstractAxis* y);
    // A new y axis (log <-> linear): marker series are emptied first (points
    // prepared for the other scale must never meet a log axis) and attached
    // to it; the caller redraws.
    void replaceYAxis(QAbstractAxis* y);

    void create(Trace& trace);
    void destroy(Trace& trace);
    // Colours, names and visibility of the run's series after a change of
    // colour, name, smoothing or hidden state.
    void style(Trace& trace);
    // Legends of new groups, removed ones gone, every group's name, colour and
    // dimming, and the runs' own entries when who is grouped changed.
    void syncGroups(ChartTraces::GroupChanges& changes);
    // Qt gives a bottom legend's entries equal shares of its width and cuts
    // each label at the right: eight runs of one sweep all read "is_l...".
    // Where the labels do not fit `width` whole, each starts with its run's
    // "#id", which then survives the cut; where a share cannot hold the id
    // and a few letters more (six runs in half a laptop's chart area showed
    // bare colour boxes), a run's entry is its "#id" alone.
    enum class Names { whole, idsFirst, idsOnly };
    void fitTo(double width);
    Names names() const { return names_; }

signals:
    void runClicked(qint64 runId);
    void groupClicked(const QString& key);

private:
    void attach(QXYSeries* series);
    void applyLegend(Trace& trace);
    QString nameOf(const Trace& trace) const;
    const QString& nameOf(const SeedGroup& group) const {
        return names_ == Names::whole ? group.legendName : group.legendNameWithId;
    }

    QChart* chart_;
    ChartTraces& traces_;
    const QWidget* view_;
    QAbstractAxis* x_ = nullptr;
    QAbstractAxis* y_ = nullptr;
    Names names_ = Names::whole;
};

}  // namespace mlk
