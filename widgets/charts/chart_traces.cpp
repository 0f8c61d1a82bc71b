#include "widgets/charts/chart_traces.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <utility>

#include "widgets/charts/axis_rules.h"

namespace mlk {

// --- What is shown ------------------------------------------------------------

bool ChartTraces::setHidden(qint64 runId, bool hidden) {
    if (hidden == hidden_.contains(runId)) return false;
    if (hidden) hidden_.insert(runId);
    else hidden_.remove(runId);
    return true;
}

void ChartTraces::setSmoothing(double weight) {
    smoothing_ = weight;
    for (auto& [id, trace] : traces_) resetDerived(trace);
}

// --- Following the store ----------------------------------------------------------

ChartTraces::RunChanges ChartTraces::syncRuns(RunDataStore& data, const QString& metric, const QList<RunMeta>& metas) {
    RunChanges changes;
    QSet<qint64> wanted;
    QList<qint64> shownIds;
    QStringList shownNames;
    for (const RunMeta& meta : metas)
        if (!visibleFilter_ || visibleFilter_->contains(meta.id)) shownIds << meta.id, shownNames << meta.name;
    const QStringList legend = legendLabels(shownIds, shownNames),
                      legendWithIds = legendLabels(shownIds, shownNames, true);
    qsizetype shown = 0;  // the run's place in shownIds: the loop below walks the same runs in order
    for (const RunMeta& meta : metas) {
        if (visibleFilter_ && !visibleFilter_->contains(meta.id)) continue;
        const qsizetype at = shown++;
        wanted.insert(meta.id);
        auto [it, inserted] = traces_.try_emplace(meta.id);
        Trace& trace = it->second;
        if (inserted) {
            trace.runId = meta.id;
            resetDerived(trace);
        }
        const QString label = runLabel(meta.id, meta.name);
        const bool restyle = trace.name != label || trace.legendName != legend[at] || trace.colour != meta.colour;
        trace.name = label;
        trace.legendName = legend[at];
        trace.legendNameWithId = legendWithIds[at];
        trace.colour = meta.colour;
        updateData(data, metric, trace);
        // Series only for runs that have this metric: no empty legend entries.
        if (!trace.plotted() && trace.cursor.data.size() > 0) changes.gotData.push_back(&trace);
        else if (restyle) changes.restyled.push_back(&trace);
    }
    for (auto it = traces_.begin(); it != traces_.end();) {
        if (wanted.contains(it->first)) {
            ++it;
            continue;
        }
        changes.removed.push_back(std::move(it->second));
        it = traces_.erase(it);
    }
    return changes;
}

void ChartTraces::syncGroups(const QList<RunMeta>& metas) {
    std::map<QString, QList<qint64>> byKey;
    if (groupSeeds_)
        for (const RunMeta& meta : metas) {
            const auto it = traces_.find(meta.id);
            if (it == traces_.end() || !it->second.plotted() || meta.seedGroup.isEmpty()) continue;
            byKey[meta.seedGroup].append(meta.id);
        }
    groupOf_.clear();
    for (auto it = groups_.begin(); it != groups_.end();) {
        const auto wanted = byKey.find(it->first);
        if (wanted != byKey.end() && wanted->second.size() >= 2) {
            ++it;
            continue;
        }
        it = groups_.erase(it);
    }
    for (const auto& [key, members] : byKey) {
        if (members.size() < 2) continue;  // a lone seed is drawn as a run
        SeedGroup& group = groups_[key];
        group.members = members;
        const Trace& first = traces_.at(members.front());
        group.colour = first.colour;
        group.name = seedGroupLabel(first.name, int(members.size()));
        group.legendName = seedGroupLabel(first.legendName, int(members.size()));
        group.legendNameWithId = seedGroupLabel(first.legendNameWithId, int(members.size()));
        for (qint64 id : members) groupOf_.insert(id, key);
    }
}

void ChartTraces::resetDerived(Trace& trace) {
    trace.processed = 0;
    trace.ema = {};
    trace.smoothed.clear();
    trace.nonFinite.clear();
    trace.smallestPositive = kInfinity;
    trace.thinning.reset();
    trace.elapsed.clear();
    trace.firstTime = std::numeric_limits<double>::quiet_NaN();
    ++derivedVersion_;  // seed groups built on this trace must be re-aggregated
}

void ChartTraces::updateData(RunDataStore& data, const QString& metric, Trace& trace) {
    if (data.syncSeries(trace.runId, metric, trace.cursor) == SyncResult::replaced) resetDerived(trace);
    const MetricSeries& series = trace.cursor.data;
    const std::size_t from = trace.processed;
    if (from >= series.size()) return;
    const std::span<const double> xs(series.steps.data() + from, series.size() - from);
    const std::span<const double> ys(series.values.data() + from, series.size() - from);
    extendDebiasedEma(ys, smoothing_, trace.ema, trace.smoothed);
    for (NonFinitePoint p : nonFinitePoints(xs, ys)) {
        p.index += from;
        trace.nonFinite.push_back(p);
    }
    trace.smallestPositive = std::min(trace.smallestPositive, smallestPositive(ys));
    extendElapsed(trace);
    trace.processed = series.size();
}

void ChartTraces::extendElapsed(Trace& trace) {
    const std::vector<double>& times = trace.cursor.data.times;
    if (std::isnan(trace.firstTime)) {
        // Steps before the first known time (a schema-v1 database resumed
        // later) are placed at 0.
        const auto known = std::find_if(times.begin(), times.end(), [](double t) { return std::isfinite(t); });
        if (known == times.end()) return;
        trace.firstTime = *known;
        trace.elapsed.clear();
    }
    for (std::size_t i = trace.elapsed.size(); i < times.size(); ++i) {
        const double previous = trace.elapsed.empty() ? 0.0 : trace.elapsed.back();
        const double since = times[i] - trace.firstTime;
        trace.elapsed.push_back(std::isfinite(since) ? std::max(previous, since) : previous);
    }
}

// --- Reading -----------------------------------------------------------------------

const Trace* ChartTraces::find(qint64 runId) const {
    const auto it = traces_.find(runId);
    return it == traces_.end() ? nullptr : &it->second;
}

const std::vector<double>& ChartTraces::xsOf(const Trace& trace) const {
    return xAxis_ == ChartXAxis::wallTime ? trace.elapsed : trace.cursor.data.steps;
}

bool ChartTraces::isShown(const Trace& trace) const {
    return trace.plotted() && !hidden_.contains(trace.runId) && !groupOf_.contains(trace.runId) &&
           (xAxis_ == ChartXAxis::step || trace.elapsed.size() == trace.cursor.data.size());
}

bool ChartTraces::isInShownGroup(const Trace& trace) const {
    return trace.plotted() && !hidden_.contains(trace.runId) && groupOf_.contains(trace.runId) &&
           (xAxis_ == ChartXAxis::step || trace.elapsed.size() == trace.cursor.data.size());
}

bool ChartTraces::allHidden(const SeedGroup& group) const {
    return std::all_of(group.members.begin(), group.members.end(), [this](qint64 id) { return hidden_.contains(id); });
}

XRange ChartTraces::dataXExtent() const {
    double lo = kInfinity, hi = -kInfinity;
    for (const auto& [id, trace] : traces_) {
        if (!(isShown(trace) || isInShownGroup(trace)) || trace.cursor.data.size() == 0) continue;
        lo = std::min(lo, xsOf(trace).front());
        hi = std::max(hi, xsOf(trace).back());
    }
    if (lo > hi) return {0, 1};
    return dataXRange(lo, hi, xAxis_ == ChartXAxis::step ? 1 : 0);
}

double ChartTraces::logFloor() const {
    double smallest = kInfinity;
    for (const auto& [id, trace] : traces_)
        if (isShown(trace) || isInShownGroup(trace)) smallest = std::min(smallest, trace.smallestPositive);
    return logFloorFor(smallest);
}

int ChartTraces::untimedRuns() const {
    return static_cast<int>(std::count_if(traces_.begin(), traces_.end(), [this](const auto& t) {
        const Trace& trace = t.second;
        return trace.plotted() && !hidden_.contains(trace.runId) && trace.elapsed.size() != trace.cursor.data.size();
    }));
}

// --- A redraw ------------------------------------------------------------------------

int ChartTraces::bucketsPerRun(int pixels, int pointBudget) const {
    if (pointBudget <= 0) return pixels;
    const auto shown =
        std::count_if(traces_.begin(), traces_.end(), [this](const auto& t) { return isShown(t.second); });
    // Up to 4 points per bucket and run. Below the budget every pixel column
    // keeps its own min/max; above it columns are merged, never below
    // kMinBuckets, so many runs cost the same as a few.
    const int affordable = pointBudget / (4 * std::max<int>(1, static_cast<int>(shown)));
    return std::clamp(affordable, std::min(pixels, kMinBuckets), pixels);
}

ThinnedView ChartTraces::thin(XRange x, int buckets) {
    ThinnedView view;
    for (auto& [id, trace] : traces_) {
        // A seed in a group keeps its NaN/Inf markers: the band's mean skips
        // such values, and they must not vanish silently.
        if (isInShownGroup(trace)) noteMarkerEdges(trace, x, view);
        if (!isShown(trace)) continue;
        const MetricSeries& data = trace.cursor.data;
        const std::vector<double>& xs = xsOf(trace);
        auto& cached = trace.thinning;
        if (!cached || !(cached->x == x) || cached->buckets != buckets || cached->points != data.size() ||
            cached->log != log_ || cached->axis != xAxis_) {
            Trace::Thinning fresh{x,  buckets, data.size(), log_, xAxis_, thinMinMax(xs, data.values, x, buckets),
                                  {}, 0};
            // Weight 0: the smoothed line is the raw data, drawn once.
            fresh.smooth = smoothing_ > 0 ? thinMinMax(xs, trace.smoothed, x, buckets) : fresh.raw;
            if (log_) {
                const auto [first, last] = indicesInRange(xs, x);
                fresh.atFloor = static_cast<int>(countNonPositive(std::span(data.values).subspan(first, last - first)));
            }
            cached = std::move(fresh);
        }
        view.runs.push_back({&trace, cached->raw, cached->smooth});
        view.valuesAtFloor += cached->atFloor;
        noteMarkerEdges(trace, x, view);
    }
    for (const ThinnedView::Run& run : view.runs)
        for (const QPointF& p : run.raw) view.visibleValues.push_back(p.y());

    for (auto& [key, group] : groups_) {
        aggregate(group);
        const SeedAggregate& a = group.aggregate;
        group.mean = thinMinMax(a.xs, a.mean, x, buckets);
        group.lo = thinMinMax(a.xs, a.lo, x, buckets);
        group.hi = thinMinMax(a.xs, a.hi, x, buckets);
        for (const QList<QPointF>* line : {&group.mean, &group.lo, &group.hi})
            for (const QPointF& p : *line) view.visibleValues.push_back(p.y());
        if (log_) {
            // A band reaching 0 (seeds of a truly on-policy run: K3 KL
            // exactly 0) is drawn at the floor, so the floor must be in
            // range and in the note, as for a run's own values.
            const auto [first, last] = indicesInRange(a.xs, x);
            view.valuesAtFloor += static_cast<int>(countNonPositive(std::span(a.lo).subspan(first, last - first)));
        }
    }
    return view;
}

void ChartTraces::aggregate(SeedGroup& group) {
    QList<qint64> aggregated;
    std::vector<std::size_t> signature{derivedVersion_, std::size_t(xAxis_)};
    for (qint64 id : group.members) {
        const Trace& trace = traces_.at(id);
        if (!isInShownGroup(trace)) continue;
        aggregated.append(id);
        signature.insert(signature.end(), {std::size_t(id), trace.processed});
    }
    if (signature == group.signature) return;
    group.signature = std::move(signature);
    group.aggregated = aggregated;
    std::vector<SeedRun> runs;
    for (qint64 id : aggregated) {
        const Trace& trace = traces_.at(id);
        runs.push_back({trace.cursor.data.steps, xsOf(trace), trace.smoothed});
    }
    group.aggregate = aggregateSeeds(runs);
}

void ChartTraces::noteMarkerEdges(const Trace& trace, XRange x, ThinnedView& view) const {
    const std::vector<double>& xs = xsOf(trace);
    for (const NonFinitePoint& p : trace.nonFinite) {
        if (xs[p.index] < x.lo || xs[p.index] > x.hi) continue;
        (p.kind == NonFiniteKind::negativeInf ? view.markersAtBottom : view.markersAtTop) = true;
    }
}

}  // namespace mlk
