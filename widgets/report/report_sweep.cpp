// The sweep report: the run report's Builder over every run of the sweep
// (seed groups by configuration, the attachments, the charts, the
// configuration diff and environment over one run per configuration), with
// the sweep's own sections (spec, verdict table, runs by seed) from
// summarize_sweep.
#include "widgets/report/report_sweep.h"

#include <QApplication>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/store/sweep_summary.h"
#include "widgets/data/palette.h"
#include "widgets/data/sweep_text.h"
#include "widgets/report/report_builder.h"

namespace mlk {

using report_detail::esc;

namespace {

const QString kDash = QStringLiteral("\u2014");

// Per configuration: its colour on the charts (the seed group's, its first
// run's) and where its runs sit in the Builder.
struct ConfigView {
    QColor colour = palette::neutralInk();
    std::vector<size_t> members;  // indices into Builder::runs, ascending run id
};

QString settings_text(const nlohmann::ordered_json& differs) {
    QStringList parts;
    for (const auto& [k, v] : differs.items())
        parts << qs(k) + QStringLiteral("=") + qs(v.is_string() ? v.get<std::string>() : v.dump());
    return parts.isEmpty() ? kDash : parts.join(QStringLiteral(", "));
}

QString verdict_td(const Verdict& v) {
    const QString cls = !v.evaluated ? QStringLiteral("na") : v.detected ? QStringLiteral("yes") : QStringLiteral("no");
    return QStringLiteral("<td title=\"%1\"><span class=\"%2\">%3</span></td>")
        .arg(esc(v.detail), cls, esc(sweepVerdictCell(v)));
}

class SweepSections {
public:
    SweepSections(const SweepSummary& sum, const SweepInfo& info, std::vector<ConfigView> views)
        : sum_(sum), info_(info), views_(std::move(views)) {}

    QString spec() const {
        QString h = QStringLiteral(
                        "<h2>Sweep</h2>\n<p>Sweep %1 (spec %2, created %3 UTC): %4 configuration(s) \u00d7 %5 "
                        "seed(s) \u00d7 %6 steps; %7 of %8 runs ended.</p>\n")
                        .arg(sum_.sweep_id)
                        .arg(esc(info_.spec_hash), esc(utcTimeText(info_.created)))
                        .arg(sum_.configs.size())
                        .arg(sum_.seeds)
                        .arg(sum_.steps)
                        .arg(sum_.runs_stored())
                        .arg(sum_.runs_expected());
        h += report_detail::table_open() + QStringLiteral(
                                               "<tr><th></th><th>configuration</th><th>role</th><th>preset</th>"
                                               "<th>settings that tell it apart</th><th>runs</th></tr>\n");
        for (size_t i = 0; i < sum_.configs.size(); ++i) {
            const SweepConfigInfo& c = sum_.configs[i];
            h += QStringLiteral(
                     "<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td class=\"num\">%6/%7</td></tr>\n")
                     .arg(report_detail::swatch(views_[i].colour), esc(c.name),
                          i == sum_.baseline ? QStringLiteral("baseline") : QStringLiteral("compared"), esc(c.preset),
                          esc(settings_text(c.differs)))
                     .arg(sum_.stats[i].runs.size())
                     .arg(sum_.seeds);
        }
        return h + QStringLiteral("</table>\n");
    }

    QString verdicts() const {
        const VerdictThresholds& th = sum_.thresholds;
        QString h = QStringLiteral("<h2>Verdicts</h2>\n") + report_detail::table_open(QStringLiteral("data")) +
                    QStringLiteral(
                        "<tr><th width=\"15%\">configuration</th><th width=\"5%\">runs</th><th width=\"6%\">coll.</th>"
                        "<th width=\"5%\">div.</th><th width=\"7%\">blow-up</th><th width=\"6%\">warned</th>"
                        "<th width=\"9%\">final</th><th width=\"8%\">best</th><th width=\"8%\">AUC</th>"
                        "<th width=\"11%\" class=\"key\">coll. at</th><th width=\"10%\">\u0394 final [95% CI]</th>"
                        "<th width=\"10%\">\u0394 AUC [95% CI]</th></tr>\n");
        // Spreads and intervals take two lines: on one the table is wider
        // than the page and squeezes the headers into a letter a line.
        const auto two_lines = [](QString t, const QString& at) {
            return t.replace(at, QStringLiteral("<br/>") + at.mid(1));  // the break for the space before
        };
        const palette::Tone bad = palette::errorTone();
        for (size_t i = 0; i < sum_.configs.size(); ++i) {
            const ConfigSummary& c = sum_.stats[i];
            const int n = (int)c.runs.size();
            const bool mostly = n > 0 && 2 * c.collapsed >= n;
            auto delta = [&](double d, const Interval& ci) {
                if (c.baseline) return QStringLiteral("<td>(baseline)</td>");
                const QString t = two_lines(esc(sweepDeltaText(d, ci)), QStringLiteral(" ["));
                if (!interval_excludes_zero(ci)) return QStringLiteral("<td class=\"num\">%1</td>").arg(t);
                const QColor ink = d > 0 ? palette::okTone().ink : bad.ink;
                return QStringLiteral("<td class=\"num\"><b style=\"color:%1\">%2</b></td>").arg(ink.name(), t);
            };
            // The name may wrap: on one line a long one squeezed the counts'
            // headers into a letter a line and pushed the intervals off the page.
            h += QStringLiteral("<tr><td>%1&#160;%2</td><td class=\"num\">%3/%4</td>")
                     .arg(report_detail::swatch(views_[i].colour), esc(sum_.configs[i].name))
                     .arg(n)
                     .arg(sum_.seeds);
            h += mostly ? QStringLiteral("<td class=\"num\" style=\"background-color:%1; color:%2\"><b>%3</b></td>")
                              .arg(bad.fill.name(), bad.ink.name())
                              .arg(c.collapsed)
                        : QStringLiteral("<td class=\"num\">%1</td>").arg(c.collapsed);
            h += QStringLiteral(
                     "<td class=\"num\">%1</td><td class=\"num\">%2</td><td class=\"num\">%3</td>"
                     "<td class=\"num\">%4</td><td class=\"num\">%5</td><td class=\"num\">%6</td>"
                     "<td class=\"num\">%7</td>")
                     .arg(c.diverged)
                     .arg(c.blown_up)
                     .arg(c.warned)
                     .arg(two_lines(esc(sweepSpreadText(c.final_reward)), QStringLiteral(" \u00b1 ")),
                          two_lines(esc(sweepSpreadText(c.best_reward)), QStringLiteral(" \u00b1 ")),
                          two_lines(esc(sweepSpreadText(c.auc)), QStringLiteral(" \u00b1 ")),
                          std::isfinite(c.median_collapse_step) ? num(c.median_collapse_step, 4) : kDash);
            h +=
                delta(c.delta_final, c.delta_final_ci) + delta(c.delta_auc, c.delta_auc_ci) + QStringLiteral("</tr>\n");
        }
        h += QStringLiteral("</table>\n");
        h += QStringLiteral(
                 "<p class=\"note\">Runs: stored of the seeds; coll.: collapsed; div.: diverged; final: the final "
                 "reward, "
                 "mean \u00b1 sd over seeds of each run's last-%1-step mean; best: "
                 "the highest %1-step mean; AUC: the mean reward over all steps; coll. at: the median step "
                 "where the collapses began; warned: runs with an R3 early warning; \u0394: against the baseline "
                 "%2, with a %3-resample bootstrap interval (bold where it excludes 0). A collapsed count shaded "
                 "is half the runs or more.</p>\n")
                 .arg(th.window)
                 .arg(esc(sum_.configs[sum_.baseline].name))
                 .arg(kBootstrapResamples);
        QStringList thresholds;
        const nlohmann::json in_force = verdict_thresholds_json(th);  // items() does not keep a temporary alive
        for (const auto& [k, v] : in_force.items()) thresholds << qs(k) + QStringLiteral("=") + qs(v.dump());
        h += QStringLiteral("<p class=\"note\">%1<br/>%2<br/>%3<br/>%4<br/>Thresholds in force: %5.</p>\n")
                 .arg(esc(collapse_rule_text(th)), esc(divergence_rule_text()), esc(blowup_rule_text(th)),
                      esc(warning_rule_text(th)), esc(thresholds.join(QStringLiteral(", "))));
        return h;
    }

    QString seeds() const {
        QString h = QStringLiteral("<h2 style=\"page-break-before: always\">Runs by configuration and seed</h2>\n") +
                    report_detail::table_open(QStringLiteral("data")) +
                    QStringLiteral(
                        "<tr><th>configuration</th><th>seed</th><th>run</th><th>status</th><th>final</th>"
                        "<th>best</th><th>AUC</th><th>collapse</th><th>divergence</th><th>blow-up</th>"
                        "<th>F@2 warning</th><th>grad_norm fall</th></tr>\n");
        for (size_t i = 0; i < sum_.configs.size(); ++i) {
            const ConfigSummary& c = sum_.stats[i];
            if (c.runs.empty())
                h += QStringLiteral(
                         "<tr><td>%1</td><td colspan=\"11\"><span class=\"na\">no run stored</span></td></tr>\n")
                         .arg(esc(sum_.configs[i].name));
            for (size_t k = 0; k < c.runs.size(); ++k) {
                const RunOutcome& o = c.runs[k];
                h += QStringLiteral("<tr>");
                if (k == 0)
                    h += QStringLiteral("<td class=\"key\" rowspan=\"%1\">%2&#160;%3</td>")
                             .arg(c.runs.size())
                             .arg(report_detail::swatch(views_[i].colour), esc(sum_.configs[i].name));
                h += QStringLiteral(
                         "<td class=\"num\">%1</td><td class=\"num\">%2</td><td><span style=\"color:%3\">%4</span></td>"
                         "<td class=\"num\">%5</td><td class=\"num\">%6</td><td class=\"num\">%7</td>")
                         .arg(o.seed)
                         .arg(o.run_id)
                         .arg(palette::statusColour(o.status).name(), esc(o.status), num(o.final_reward, 4),
                              num(o.best_reward, 4), num(o.auc, 4));
                const RunVerdicts& v = o.verdicts;
                h += verdict_td(v.collapse) + verdict_td(v.divergence) + verdict_td(v.blowup) +
                     verdict_td(v.f2_warning) + verdict_td(v.grad_fall) + QStringLiteral("</tr>\n");
            }
        }
        h += QStringLiteral(
            "</table>\n<p class=\"note\">A verdict's step is where its rule first held (a collapse: "
            "where the unrecovered fall began); in the HTML each cell's tooltip holds the evidence.</p>\n");
        return h;
    }

private:
    const SweepSummary& sum_;
    const SweepInfo& info_;
    std::vector<ConfigView> views_;
};

}  // namespace

Report build_sweep_report(Store& store, const SweepReportRequest& req) {
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        throw std::runtime_error("build_sweep_report needs a QApplication (charts are drawn with Qt Charts)");
    std::optional<SweepInfo> info;
    for (SweepInfo& s : store.list_sweeps())
        if (s.id == req.sweep_id) info = std::move(s);
    if (!info)
        throw ReportInputError("--sweep: sweep " + std::to_string(req.sweep_id) + " is not in " + store.path() +
                               " (see `mismatch-lab-cli sweep --summary`)");
    SweepSummary sum;
    try {
        sum = summarize_sweep(store, req.sweep_id, req.thresholds, req.baseline);
    } catch (const std::invalid_argument& e) {
        throw ReportInputError(std::string("--baseline: ") + e.what());
    }
    if (sum.runs_stored() == 0)
        throw ReportInputError("--sweep: sweep " + std::to_string(req.sweep_id) + " has no stored run yet");

    // Every run, by configuration (baseline first) and run id: a seed
    // group's first member is its lowest id, as on screen.
    std::vector<size_t> order{sum.baseline};
    for (size_t i = 0; i < sum.configs.size(); ++i)
        if (i != sum.baseline) order.push_back(i);
    ReportRequest rr;
    std::map<int64_t, size_t> config_of;
    for (size_t i : order) {
        std::vector<int64_t> ids;
        for (const RunOutcome& o : sum.stats[i].runs) ids.push_back(o.run_id);
        std::sort(ids.begin(), ids.end());
        for (int64_t id : ids) config_of[id] = i;
        rr.runs.insert(rr.runs.end(), ids.begin(), ids.end());
    }
    rr.view = req.view;
    rr.view.group_seeds = true;
    rr.verdicts = req.thresholds;
    rr.date = req.date;
    if (!req.title.empty()) {
        rr.title = req.title;
    } else {
        std::string others;
        for (size_t k = 1; k < order.size(); ++k) others += (k > 1 ? ", " : "") + sum.configs[order[k]].name;
        rr.title =
            "Sweep " + std::to_string(sum.sweep_id) + ": " +
            (others.empty() ? sum.configs[order[0]].name : "baseline " + sum.configs[order[0]].name + " vs " + others);
    }

    report_detail::Builder b(store, rr);
    b.resolve();
    std::vector<ConfigView> views(sum.configs.size());
    // Legends name a configuration by what the others lack, as run legends do.
    QStringList names;
    for (const auto& c : sum.configs) names << qs(c.name);
    const QStringList legend = legendLabels({}, names);
    for (size_t k = 0; k < b.runs.size(); ++k) {
        report_detail::RunData& r = b.runs[k];
        const size_t c = config_of.at(r.info.id);
        // One group per configuration, whatever else its runs' settings say.
        r.seed_group = QStringLiteral("sweep configuration %1").arg(c);
        r.group_label = legend[qsizetype(c)];
        if (views[c].members.empty()) views[c].colour = r.color;
        views[c].members.push_back(k);
    }
    // The reward first: the verdicts are read off it.
    auto& cm = b.chart_metrics;
    cm.erase(std::remove(cm.begin(), cm.end(), std::string("reward_mean")), cm.end());
    cm.insert(cm.begin(), "reward_mean");
    b.meta_note = QStringLiteral("Baseline: %1; %2 configuration(s) compared against it.")
                      .arg(qs(sum.configs[sum.baseline].name))
                      .arg(sum.configs.size() - 1);
    b.attachments();

    const SweepSections s(sum, *info, views);
    QString body = b.head() + s.spec() + b.files_marker() + s.verdicts() + b.charts_section() + s.seeds();
    // Where they ran over every run of the sweep; the configuration diff and
    // environment over one run per configuration (its first), named after
    // the configuration: seeds would only repeat it.
    const QString machines = b.machines_note();
    std::vector<report_detail::RunData> all = std::move(b.runs);
    b.runs.clear();
    for (size_t i : order) {
        if (views[i].members.empty()) continue;
        report_detail::RunData r = all[views[i].members.front()];
        r.label = qs(sum.configs[i].name);
        b.runs.push_back(std::move(r));
    }
    body += b.config_section() + b.environment_section() + machines;
    b.runs = std::move(all);
    return b.finish(std::move(body));
}

}  // namespace mlk
