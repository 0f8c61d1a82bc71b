// The report's figures: key charts with every run overlaid, and the drill-down
// at one step (F(t), router-diff histogram, probability scatter per run).
#include <QSize>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "widgets/charts/axis_rules.h"
#include "widgets/data/run_data.h"
#include "widgets/data/series_math.h"
#include "widgets/report/report_builder.h"

namespace mlk::report_detail {

// One chart's runs as the workbench draws them: each run's raw values, a
// smoothed line over them at the screen's weight, and seeds of one
// configuration as a mean line in the min-max band of their (smoothed)
// values, keeping each seed's NaN/Inf markers.
std::vector<report::ChartRun> Builder::chart_runs(const std::string& m) {
    const double w = req.view.smoothing;
    const auto smoothed = [&](const std::vector<double>& ys) { return w > 0 ? debiasedEma(ys, w) : ys; };
    std::map<QString, std::vector<size_t>> groups;
    if (req.view.group_seeds)
        for (size_t i = 0; i < runs.size(); ++i)
            if (!runs[i].seed_group.isEmpty() && !series_of(runs[i], m).empty())
                groups[runs[i].seed_group].push_back(i);
    std::vector<report::ChartRun> out;
    std::set<size_t> drawn;
    for (size_t i = 0; i < runs.size(); ++i) {
        if (drawn.count(i)) continue;
        const auto g = groups.find(runs[i].seed_group);
        if (g != groups.end() && g->second.size() >= 2) {
            // Kept alive for the spans aggregateSeeds reads.
            std::vector<std::vector<double>> steps, values;
            const QString& named = runs[i].group_label.isEmpty() ? runs[i].legend_label : runs[i].group_label;
            report::ChartRun band{seedGroupLabel(named, int(g->second.size())), runs[i].color, {}};
            for (size_t k : g->second) {
                drawn.insert(k);
                std::vector<double> s, v;
                for (const auto& [step, value] : series_of(runs[k], m)) {
                    s.push_back((double)step);
                    v.push_back(value);
                    if (!std::isfinite(value)) band.points.push_back({(double)step, value});
                }
                steps.push_back(std::move(s));
                values.push_back(smoothed(v));
            }
            std::vector<SeedRun> members;
            for (size_t k = 0; k < steps.size(); ++k) members.push_back({steps[k], steps[k], values[k]});
            const SeedAggregate agg = aggregateSeeds(members);
            for (size_t k = 0; k < agg.size(); ++k) {
                band.smooth.push_back({agg.xs[k], agg.mean[k]});
                band.lo.push_back({agg.xs[k], agg.lo[k]});
                band.hi.push_back({agg.xs[k], agg.hi[k]});
            }
            std::sort(band.points.begin(), band.points.end(), [](auto& a, auto& b) { return a.x < b.x; });
            out.push_back(std::move(band));
            continue;
        }
        report::ChartRun c{runs[i].legend_label, runs[i].color, {}};
        std::vector<double> ys;
        for (const auto& [s, v] : series_of(runs[i], m)) {
            c.points.push_back({(double)s, v});
            ys.push_back(v);
        }
        if (w > 0) {
            const std::vector<double> sm = smoothed(ys);
            for (size_t k = 0; k < sm.size(); ++k)
                if (std::isfinite(sm[k])) c.smooth.push_back({c.points[k].x, sm[k]});
        }
        out.push_back(std::move(c));
    }
    return out;
}

QString Builder::charts_section() {
    // No forced page break (a summary a row too long for the first page left
    // a page with that row alone): the PDF writer starts a page here only
    // where the heading would otherwise part from its first chart
    // (report.cpp, kChartsAnchor).
    QString h = QStringLiteral("<h2><a name=\"%1\"></a>%2</h2>\n")
                    .arg(QLatin1String(kChartsAnchor),
                         req.view.charts.empty() ? QStringLiteral("Key charts") : QStringLiteral("Charts"));
    QString how =
        QStringLiteral("Every run overlaid in its own colour, the one the workbench gives it (see the legend)");
    if (req.view.smoothing > 0)
        how += QStringLiteral(", a smoothed line (debiased EMA, weight %1, as on screen) over the faint raw one")
                   .arg(req.view.smoothing);
    if (req.view.group_seeds)
        how += QStringLiteral("; seeds of one configuration as their mean in a min\u2013max band");
    h += QStringLiteral(
             "<p class=\"note\">%1. NaN/Inf values are drawn as triangles at the plot edge; on log scales values "
             "&lt;= 0 are drawn as open circles at a floor. Both are listed under the chart.</p>\n")
             .arg(esc(how));
    for (const auto& m : chart_metrics) {
        std::vector<report::ChartRun> cr = chart_runs(m);
        const bool log = req.view.charts.empty() ? metric_log_axis(m)
                                                 : std::find(req.view.log_charts.begin(), req.view.log_charts.end(),
                                                             m) != req.view.log_charts.end();
        report::ChartSpec spec;
        spec.title = metric_chart_title(m, log);
        spec.yLabel = qs(m);
        spec.yScale = log ? report::Scale::log : report::Scale::linear;
        spec.nonNegative = metricNonNegative(m);
        spec.size = QSize(kPageWidth, 250);
        report::RenderedChart c = report::render_xy_chart(spec, cr);
        h += QStringLiteral("<p class=\"chart\" align=\"center\">%1</p>\n")
                 .arg(img_tag(
                     c, QStringLiteral("chart of ") + qs(m) + (log ? QStringLiteral(" (log scale)") : QString())));
        h += notes_html(c.notes);
        ++out.images;
    }
    return h;
}

QString Builder::drill_section() {
    std::set<int64_t> distinct;
    for (const auto& r : runs)
        if (r.drill_step) distinct.insert(*r.drill_step);
    QString heading;
    if (distinct.size() == 1) heading = QStringLiteral("Drill-down at step %1").arg(*distinct.begin());
    else
        heading = req.step ? QStringLiteral("Drill-down at step %1 (nearest stored step per run)").arg(*req.step)
                           : QStringLiteral("Drill-down at each run's last step");
    QString h = QStringLiteral("<h2 style=\"page-break-before: always\">%1</h2>\n").arg(esc(heading));
    if (distinct.size() > 1) {
        QStringList parts;
        for (const auto& r : runs)
            parts << r.label + QStringLiteral(": ") +
                         (r.drill_step ? QStringLiteral("step %1").arg(*r.drill_step) : QStringLiteral("no steps"));
        h += QStringLiteral("<p class=\"note\">%1</p>\n").arg(esc(parts.join(QStringLiteral("; "))));
    }
    bool router_shown = false;
    h += ft_figure();
    h += router_figure(&router_shown);
    h += scatter_figures(router_shown);
    return h;
}

QString Builder::ft_figure() {
    std::vector<report::ChartRun> cr;
    for (auto& r : runs) {
        report::ChartRun c{r.legend_label, r.color, {}};
        if (r.drill_step)
            for (const auto& p : store.ft_curve(r.info.id, *r.drill_step)) c.points.push_back({p.t, p.frac});
        std::sort(c.points.begin(), c.points.end(), [](auto& a, auto& b) { return a.x < b.x; });
        cr.push_back(std::move(c));
    }
    // Curves are usually 0 long before their largest threshold: plot up to the first
    // threshold past the last non-zero value (at least t = 10) and say what was left out.
    double lastNonZero = -INFINITY, tmax = -INFINITY;
    for (const auto& c : cr)
        for (const auto& p : c.points) {
            tmax = std::max(tmax, p.x);
            if (std::isfinite(p.y) && p.y != 0) lastNonZero = std::max(lastNonZero, p.x);
        }
    double cut = INFINITY;
    for (const auto& c : cr)
        for (const auto& p : c.points)
            if (p.x > lastNonZero) cut = std::min(cut, p.x);
    cut = std::max(cut, 10.0);
    int dropped = 0;
    for (auto& c : cr) {
        const auto n0 = c.points.size();
        c.points.erase(std::remove_if(c.points.begin(), c.points.end(),
                                      [&](const report::XY& p) { return p.x > cut && p.y == 0; }),
                       c.points.end());
        dropped += (int)(n0 - c.points.size());
    }
    report::ChartSpec spec;
    spec.title = QStringLiteral("F(t): fraction of tokens with max(\u03c1, 1/\u03c1) > t");
    spec.xLabel = QStringLiteral("threshold t (log)");
    spec.yLabel = QStringLiteral("F(t) (log)");
    spec.xScale = report::Scale::log;
    spec.yScale = report::Scale::log;
    spec.integerX = false;
    spec.size = QSize(kPageWidth, 240);
    report::RenderedChart c = report::render_xy_chart(spec, cr);
    if (dropped > 0)
        c.notes << QStringLiteral(
                       "F(t) is 0 for every run beyond t = %1: %2 zero point(s) at larger t (up to %3) "
                       "are not drawn.")
                       .arg(QString::number(cut, 'g', 6), QString::number(dropped), QString::number(tmax, 'g', 6));
    ++out.images;
    return QStringLiteral("<h3>F(t) curve</h3>\n<p class=\"chart\" align=\"center\">%1</p>\n")
               .arg(img_tag(c, QStringLiteral("F(t) curve"))) +
           notes_html(c.notes);
}

// MoE runs only: the share of (token, layer) pairs by how many experts differ.
QString Builder::router_figure(bool* shown) {
    std::vector<std::pair<RunData*, std::vector<RouterBin>>> hists;
    int32_t maxd = 0;
    for (auto& r : runs) {
        if (!r.drill_step) continue;
        auto bins = store.router_hist(r.info.id, *r.drill_step);
        if (bins.empty()) continue;
        for (const auto& b : bins) maxd = std::max(maxd, b.d);
        hists.emplace_back(&r, std::move(bins));
    }
    QString h = QStringLiteral("<h3>Router-diff histogram</h3>\n");
    *shown = !hists.empty();
    if (hists.empty())
        return h + QStringLiteral(
                       "<p class=\"note\">No router histogram at this step: no run of the report has MoE "
                       "layers (dense models route nothing).</p>\n");
    QStringList cats;
    for (int d = 0; d <= maxd; ++d) cats << QString::number(d);
    std::vector<report::BarRun> bars;
    QString counts = table_open() + QStringLiteral("<tr><th>run</th>");
    for (int d = 0; d <= maxd; ++d) counts += QStringLiteral("<th>d = %1</th>").arg(d);
    counts += QStringLiteral("<th>total</th></tr>\n");
    for (auto& [r, bins] : hists) {
        std::vector<int64_t> c(maxd + 1, 0);
        int64_t total = 0;
        for (const auto& b : bins) c[b.d] += b.count, total += b.count;
        report::BarRun br{r->label, r->color, {}};
        counts += QStringLiteral("<tr><td>%1</td>").arg(esc(r->label));
        for (int d = 0; d <= maxd; ++d) {
            br.values.push_back(total > 0 ? 100.0 * c[d] / total : 0.0);
            counts += QStringLiteral("<td class=\"num\">%1</td>").arg(c[d]);
        }
        counts += QStringLiteral("<td class=\"num\">%1</td></tr>\n").arg(total);
        bars.push_back(std::move(br));
    }
    counts += QStringLiteral("</table>\n");
    report::ChartSpec spec;
    spec.title = QStringLiteral("Router diff: rollout top-k experts missing from the training top-k");
    spec.xLabel = QStringLiteral("d = experts that differ per (token, MoE layer)");
    spec.yLabel = QStringLiteral("% of pairs");
    spec.size = QSize(kPageWidth, 230);
    report::RenderedChart c = report::render_bar_chart(spec, cats, bars);
    h += QStringLiteral("<p class=\"chart\" align=\"center\">%1</p>\n")
             .arg(img_tag(c, QStringLiteral("router-diff histogram")));
    h += notes_html(c.notes) + counts;
    ++out.images;
    QStringList dense;
    for (auto& r : runs)
        if (std::none_of(hists.begin(), hists.end(), [&](auto& p) { return p.first == &r; })) dense << r.label;
    if (!dense.isEmpty())
        h += QStringLiteral(
                 "<p class=\"note\">No router histogram stored for %1 (dense model or no "
                 "MoE data at this step).</p>\n")
                 .arg(esc(dense.join(QStringLiteral(", "))));
    return h;
}

// Probability scatter per run, two per row.
QString Builder::scatter_figures(bool after_router) {
    // With a router histogram the scatter grid no longer fits below: start it on a new page
    // rather than leaving its heading alone at the bottom.
    QString h = QStringLiteral("<h3%1>Training vs rollout probability of the sampled tokens</h3>\n")
                    .arg(after_router ? QStringLiteral(" style=\"page-break-before: always\"") : QString());
    h += QStringLiteral(
        "<p class=\"note\">Each point is one stored token sample: x = rollout probability "
        "exp(lp_roll), y = training probability exp(lp_train). On the dashed diagonal the two "
        "engines agree.</p>\n");
    h += QStringLiteral("<table class=\"layout\" border=\"0\" cellspacing=\"0\" cellpadding=\"2\" width=\"100%\">\n");
    int col = 0;
    const int cellW = kPageWidth / 2 - 6;
    for (auto& r : runs) {
        if (col == 0) h += QStringLiteral("<tr>");
        h += QStringLiteral("<td valign=\"top\" width=\"50%\">");
        std::vector<TokenSample> toks;
        if (r.drill_step) toks = store.token_samples(r.info.id, *r.drill_step);
        report::ChartRun c{r.label, r.color, {}};
        double maxdp = 0, maxr = 0;
        int nonfinite = 0;
        for (const auto& t : toks) {
            const double pr = std::exp(t.lp_roll), pt = std::exp(t.lp_train);
            c.points.push_back({pr, pt});
            if (std::isfinite(pr) && std::isfinite(pt)) {
                maxdp = std::max(maxdp, std::abs(pt - pr));
                maxr = std::max(maxr, std::abs(t.lp_train - t.lp_roll));
            } else {
                ++nonfinite;
            }
        }
        report::ChartSpec spec;
        spec.title = r.label + (r.drill_step ? QStringLiteral(", step %1").arg(*r.drill_step) : QString());
        spec.xLabel = QStringLiteral("rollout probability");
        spec.yLabel = QStringLiteral("training probability");
        spec.lines = false;
        spec.diagonal = true;
        spec.integerX = false;
        spec.xMin = 0, spec.xMax = 1, spec.yMin = 0, spec.yMax = 1;
        spec.size = QSize(cellW, cellW * 9 / 10);
        report::RenderedChart rc = report::render_xy_chart(spec, {c});
        h += img_tag(rc, QStringLiteral("probability scatter of ") + r.label);
        ++out.images;
        if (toks.empty()) h += QStringLiteral("<p class=\"note\">No token samples stored at this step.</p>");
        else
            h += QStringLiteral(
                     "<p class=\"note\">%1 tokens; max |p_train \u2212 p_roll| = %2; max |lp_train \u2212 "
                     "lp_roll| = %3%4</p>")
                     .arg(toks.size())
                     .arg(num(maxdp), num(maxr),
                          nonfinite ? QStringLiteral("; %1 non-finite sample(s) at the edge").arg(nonfinite)
                                    : QString());
        h += notes_html(rc.notes);
        h += QStringLiteral("</td>");
        if (++col == 2) h += QStringLiteral("</tr>\n"), col = 0;
    }
    if (col == 1) h += QStringLiteral("<td width=\"50%\"></td></tr>\n");
    h += QStringLiteral("</table>\n");
    return h;
}

}  // namespace mlk::report_detail
