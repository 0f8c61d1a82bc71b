// The report's front matter, runs, summary (statistics and verdicts) and data files.
#include "widgets/report/report_builder.h"

#include <QByteArray>
#include <QDateTime>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/metrics/catalogue.h"
#include "core/metrics/verdicts.h"
#include "core/store/export.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_data.h"

namespace mlk::report_detail {

namespace {

std::string sanitize_file_part(const std::string& s) {
    std::string o;
    for (char c : s) o += (std::isalnum((unsigned char)c) || c == '-' || c == '_') ? c : '_';
    if (o.size() > 40) o.resize(40);
    return o;
}

std::string range_text(const std::vector<int64_t>& steps) {
    if (steps.empty()) return "none";
    return std::to_string(steps.front()) + "\u2013" + std::to_string(steps.back());
}

QString direction_text(const MetricInfo* m) {
    if (!m || m->better == Better::none) return QStringLiteral("no better direction");
    return m->better == Better::higher ? QStringLiteral("higher is better") : QStringLiteral("lower is better");
}

}  // namespace

QString breakable(const std::string& s) {
    QString e = esc(s);
    e.replace(QLatin1Char('_'), QStringLiteral("_&#8203;"));
    return e;
}

QString table_open(const QString& cls) {
    return QStringLiteral("<table class=\"%1\" border=\"1\" cellspacing=\"0\" cellpadding=\"3\" width=\"100%\">")
        .arg(cls);
}

QString img_tag(const report::RenderedChart& c, const QString& alt) {
    return QStringLiteral("<img src=\"%1\" width=\"%2\" height=\"%3\" alt=\"%4\"/>")
        .arg(report::png_data_url(c.png))
        .arg(c.size.width())
        .arg(c.size.height())
        .arg(esc(alt));
}

QString notes_html(const QStringList& notes) {
    if (notes.isEmpty()) return {};
    QString h = QStringLiteral("<p class=\"note\">");
    for (int i = 0; i < notes.size(); ++i) h += (i ? QStringLiteral("<br/>") : QString()) + esc(notes[i]);
    return h + QStringLiteral("</p>\n");
}

QString swatch(const QColor& c) { return QStringLiteral("<span style=\"color:%1\">\u25a0</span>").arg(c.name()); }

QString metric_chart_title(const std::string& name, bool log) {
    const MetricInfo* m = find_metric(name);
    QString t = m ? QString::fromUtf8(m->title.data(), (qsizetype)m->title.size()) : qs(name);
    if (m && !m->unit.empty()) t += QStringLiteral(" (%1)").arg(QString::fromUtf8(m->unit.data(), m->unit.size()));
    return log ? t + QStringLiteral(", log scale") : t;
}

bool metric_log_axis(const std::string& name) {
    const MetricInfo* m = find_metric(name);
    return m && m->axis == Axis::log;
}

const std::vector<MetricPoint>& Builder::series_of(RunData& r, const std::string& name) {
    auto it = r.series.find(name);
    if (it == r.series.end()) it = r.series.emplace(name, store.metric_series(r.info.id, name)).first;
    return it->second;
}

void Builder::resolve() {
    std::vector<int64_t> ids;
    for (int64_t id : req.runs)
        if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    if (req.baseline) {
        ids.erase(std::remove(ids.begin(), ids.end(), *req.baseline), ids.end());
        ids.insert(ids.begin(), *req.baseline);
    }
    if (ids.empty()) throw ReportInputError("no run given: name at least one RUN id");
    std::set<std::string> stored;
    for (int64_t id : ids) {
        auto info = store.run_info(id);
        if (!info)
            throw ReportInputError("unknown run id " + std::to_string(id) + ": not in " + store.path() +
                                   " (see `mismatch-lab-cli runs`)");
        RunData r;
        r.info = *info;
        const auto own = req.view.colours.find(info->id);
        r.color = own != req.view.colours.end() && own->second.isValid() ? own->second : palette::runColour(info->id);
        r.seed_group = seedGroupOf(info->config_json);
        r.label = runLabel(info->id, qs(info->name));
        r.steps = store.steps(info->id);
        try {
            r.cfg = stored_config_from_json(nlohmann::json::parse(info->config_json));
        } catch (const std::exception& e) {
            r.cfg_error = e.what();
        }
        for (auto& n : store.metric_names(info->id)) stored.insert(n);
        runs.push_back(std::move(r));
    }
    QList<qint64> runIds;
    QStringList names;
    for (const RunData& r : runs) runIds << r.info.id, names << qs(r.info.name);
    const QStringList legend = legendLabels(runIds, names);
    for (size_t i = 0; i < runs.size(); ++i) runs[i].legend_label = legend[qsizetype(i)];
    metrics = key_metric_names();
    for (const auto& m : req.metrics) {
        if (!stored.count(m)) {
            std::string all;
            for (const auto& n : order_metric_names({stored.begin(), stored.end()}))
                all += (all.empty() ? "" : ", ") + n;
            throw ReportInputError("unknown metric '" + m + "': not stored for the runs of this report; stored: " +
                                   (all.empty() ? std::string("none") : all));
        }
        if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    }
    chart_metrics = req.view.charts.empty() ? metrics : req.view.charts;
    resolve_drill_steps();
    if (!req.title.empty()) {
        out.title = qs(req.title);
    } else if (runs.size() == 1) {
        out.title = QStringLiteral("Run report: ") + runs[0].label;
    } else {
        QStringList others;
        for (size_t i = 1; i < runs.size(); ++i) others << runs[i].label;
        out.title = QStringLiteral("Comparison: baseline ") + runs[0].label + QStringLiteral(" vs ") +
                    others.join(QStringLiteral(", "));
    }
}

// The drill-down step of each run: the requested one, or the nearest stored
// step (with a note); by default each run's last step.
void Builder::resolve_drill_steps() {
    if (!req.step) {
        for (auto& r : runs)
            if (!r.steps.empty()) r.drill_step = r.steps.back();
        return;
    }
    const int64_t want = *req.step;
    bool any = false;
    for (auto& r : runs) any |= std::binary_search(r.steps.begin(), r.steps.end(), want);
    if (!any) {
        std::string have;
        for (auto& r : runs)
            have += (have.empty() ? "" : "; ") + std::string("run ") + std::to_string(r.info.id) + ": " +
                    range_text(r.steps);
        throw ReportInputError("--step " + std::to_string(want) + " is not stored for any run of the report (" + have +
                               ")");
    }
    for (auto& r : runs) {
        if (r.steps.empty()) continue;
        int64_t best = r.steps.front();
        for (int64_t s : r.steps)
            if (std::llabs(s - want) < std::llabs(best - want)) best = s;
        r.drill_step = best;
        if (best != want)
            out.notes.push_back("run " + std::to_string(r.info.id) + " has no step " + std::to_string(want) +
                                "; its drill-down shows the nearest stored step " + std::to_string(best));
    }
}

Report Builder::finish(QString body) {
    body += QStringLiteral("</body>\n</html>\n");
    out.pdf_html = body;
    out.pdf_html.replace(files_marker(), files_pdf);
    out.html = std::move(body);
    out.html.replace(files_marker(), files_html);
    return std::move(out);
}

QString Builder::head() {
    const QDateTime date = req.date ? *req.date : QDateTime::currentDateTime();
    QString h = QStringLiteral("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"/>\n<title>%1</title>\n")
                    .arg(esc(out.title));
    h += QStringLiteral(
             "<style type=\"text/css\">\n"
             "body { font-family: 'DejaVu Sans', 'Helvetica', sans-serif; font-size: 9pt; color: #202020; }\n"
             "h1 { font-size: 16pt; margin-bottom: 2px; }\n"
             "h2 { font-size: 12.5pt; margin-top: 16px; margin-bottom: 4px; color: #1b3a5c; }\n"
             "h3 { font-size: 10pt; margin-top: 10px; margin-bottom: 3px; }\n"
             "table.grid { border-collapse: collapse; border-color: #b0b0b0; margin-bottom: 6px; }\n"
             "table.data { border-collapse: collapse; border-color: #c8c8c8; font-size: 7pt; margin-bottom: 8px; }\n"
             "table.layout { border-width: 0; }\n"
             "th { background-color: #e8edf3; font-weight: bold; text-align: left; }\n"
             "td.num { text-align: right; white-space: nowrap; }\n"
             "td.key, th.key { white-space: nowrap; }\n"
             "table.data th { text-align: right; }\n"
             "tr.section td { background-color: #f3f3f3; font-weight: bold; }\n"
             "td.changed { background-color: %4; }\n"
             "p.meta { color: %3; margin-top: 0; }\n"
             "p.note { color: %3; font-size: 8pt; margin-top: 1px; }\n"
             "p.chart { margin-top: 8px; margin-bottom: 0; }\n"
             "span.yes { color: %1; font-weight: bold; }\n"
             "span.no { color: %2; }\n"
             "span.na { color: %3; }\n"
             "</style>\n</head>\n<body>\n")
             .arg(palette::statusColour("failed").name(), palette::statusColour("finished").name(),
                  palette::neutralInk().name(), palette::changedSetting().name());
    h += QStringLiteral("<h1>%1</h1>\n").arg(esc(out.title));
    h += QStringLiteral("<p class=\"meta\">Generated %1 by Mismatch Lab %2 from %3. %4</p>\n")
             .arg(esc(date.toString(Qt::ISODate)), esc(QStringLiteral(MLK_VERSION)), esc(store.path()),
                  meta_note         ? esc(*meta_note)
                  : runs.size() > 1 ? QStringLiteral("Baseline: %1; %2 run(s) compared against it.")
                                          .arg(esc(runs[0].label), QString::number(runs.size() - 1))
                                    : QString());
    return h;
}

bool Builder::same_for_every_run(std::string RunInfo::*field) const {
    return std::all_of(runs.begin(), runs.end(),
                       [&](const RunData& r) { return r.info.*field == runs.front().info.*field; });
}

QString Builder::runs_section() {
    const bool many = runs.size() > 1;
    // One app version for every run (the usual case) is a line under the
    // table, not a column: ten columns broke words mid-way at 9 pt.
    const bool one_version = same_for_every_run(&RunInfo::app_version);
    QString h = QStringLiteral("<h2>Runs</h2>\n") + table_open();
    h += QStringLiteral(
             "<tr><th></th><th>id</th><th>name</th>%1<th>preset</th><th>status</th>"
             "<th class=\"key\">steps</th><th class=\"key\">seed</th><th>created (UTC)</th>%2</tr>\n")
             .arg(many ? QStringLiteral("<th>role</th>") : QString(),
                  one_version ? QString() : QStringLiteral("<th>app version</th>"));
    for (size_t i = 0; i < runs.size(); ++i) {
        const RunInfo& r = runs[i].info;
        const QString status = QStringLiteral("<span style=\"color:%1\">%2</span>")
                                   .arg(palette::statusColour(r.status).name(), esc(r.status));
        h += QStringLiteral(
                 "<tr><td>%1</td><td class=\"num\">%2</td><td>%3</td>%4<td>%5</td><td class=\"key\">%6</td>"
                 "<td class=\"num\">%7</td><td class=\"num\">%8</td><td class=\"key\">%9</td>%10</tr>\n")
                 .arg(swatch(runs[i].color), QString::number(r.id), esc(r.name),
                      !many    ? QString()
                      : i == 0 ? QStringLiteral("<td class=\"key\">baseline</td>")
                               : QStringLiteral("<td class=\"key\">compared</td>"),
                      esc(r.preset), status, QString::number(r.steps), QString::number(r.seed),
                      esc(utcTimeText(r.created)),
                      one_version ? QString() : QStringLiteral("<td>%1</td>").arg(esc(r.app_version)));
    }
    h += QStringLiteral("</table>\n");
    if (one_version && !runs.empty())
        h += QStringLiteral("<p class=\"note\">%1 made by Mismatch Lab %2.</p>\n")
                 .arg(many ? QStringLiteral("All runs") : QStringLiteral("The run"),
                      runs.front().info.app_version.empty() ? QStringLiteral("(version not recorded)")
                                                            : esc(runs.front().info.app_version));
    h += machines_note();
    for (const auto& r : runs)
        if (!r.info.notes.empty())
            h += QStringLiteral("<p class=\"note\">Notes on %1: %2</p>\n").arg(esc(r.label), esc(r.info.notes));
    return h;
}

// Where the runs were made: their timings, and on a GPU the fast family's
// bits, depend on it. One machine for every run (the usual case) is a line.
QString Builder::machines_note() {
    const bool one_machine = same_for_every_run(&RunInfo::machine);
    if (runs.empty() || (one_machine && runs.front().info.machine.empty())) return {};
    const auto machine = [](const RunInfo& r) {
        return r.machine.empty() ? QStringLiteral("(not recorded)") : esc(r.machine);
    };
    if (one_machine)
        return QStringLiteral("<p class=\"note\">%1 on %2.</p>\n")
            .arg(runs.size() > 1 ? QStringLiteral("All runs ran") : QStringLiteral("The run ran"),
                 machine(runs.front().info));
    QString h = QStringLiteral(
                    "<p class=\"note\">The runs ran on different machines (their timings, and on a GPU "
                    "the fast family's bits, depend on it):</p>\n") +
                table_open() + QStringLiteral("<tr><th>run</th><th>ran on</th></tr>\n");
    for (const auto& r : runs)
        h += QStringLiteral("<tr><td>%1</td><td>%2</td></tr>\n").arg(esc(r.label), machine(r.info));
    return h + QStringLiteral("</table>\n");
}

QString Builder::summary_section() {
    QString h = QStringLiteral("<h2>Summary</h2>\n");
    h += table_open() + QStringLiteral(
                            "<tr><th>run</th><th>collapse</th><th>divergence</th><th>mismatch blow-up</th>"
                            "<th>early warnings</th></tr>\n");
    auto verdict = [](const Verdict& d) {
        const QString cls = !d.evaluated ? QStringLiteral("na")
                            : d.detected ? QStringLiteral("yes")
                                         : QStringLiteral("no");
        const QString word = !d.evaluated ? QStringLiteral("not evaluated")
                             : d.detected ? QStringLiteral("DETECTED")
                                          : QStringLiteral("none");
        return QStringLiteral("<span class=\"%1\">%2</span>: %3").arg(cls, word, esc(d.detail));
    };
    const VerdictThresholds& th = req.verdicts;
    for (auto& r : runs) {
        RunSeries s;
        s.reward_mean = series_of(r, "reward_mean");
        s.grad_norm = series_of(r, "grad_norm");
        s.k3_kl = series_of(r, "k3_kl");
        s.f_at_2 = series_of(r, "F@2");
        const RunVerdicts v = judge_run(s, th, r.info.status == run_status_name(RunStatus::diverged));
        h += QStringLiteral(
                 "<tr><td>%1&#160;%2</td><td>%3</td><td>%4</td><td>%5</td><td>F@2 %6<br/>grad_norm %7</td></tr>\n")
                 .arg(swatch(r.color), esc(r.label), verdict(v.collapse), verdict(v.divergence), verdict(v.blowup),
                      verdict(v.f2_warning), verdict(v.grad_fall));
    }
    h += QStringLiteral("</table>\n<p class=\"note\">%1 %2 %3 %4</p>\n")
             .arg(esc(collapse_rule_text(th)), esc(divergence_rule_text()), esc(blowup_rule_text(th)),
                  esc(warning_rule_text(th)));

    h += table_open() +
         QStringLiteral(
             "<thead><tr><th>run</th><th class=\"key\">final</th><th class=\"key\">step</th>"
             "<th class=\"key\">best</th><th class=\"key\">step</th><th class=\"key\">mean of last %1</th>"
             "<th class=\"key\">NaN/Inf</th></tr></thead>\n")
             .arg(kLastN);
    // Each metric heads its own rows, across the table: the run cells may
    // wrap (a sweep run's name), the numbers may not. A metric cell spanning
    // its runs' rows would run taller than them and a page break split it, its
    // last line alone on the next page under a repeated header.
    for (const auto& m : metrics) {
        const MetricInfo* info = find_metric(m);
        h += QStringLiteral(
                 "<tr class=\"section\"><td colspan=\"7\">%1&#160; <span style=\"font-weight: normal\">"
                 "%2 &#183;</span> <span class=\"na\" style=\"font-weight: normal\">%3</span></td></tr>\n")
                 .arg(esc(m), info ? esc(QString::fromUtf8(info->title.data(), info->title.size())) : QString(),
                      direction_text(info));
        for (size_t i = 0; i < runs.size(); ++i) {
            RunData& r = runs[i];
            const std::vector<MetricPoint>& s = series_of(r, m);
            h += QStringLiteral("<tr>");
            if (s.empty()) {
                h += QStringLiteral(
                         "<td>%1</td><td colspan=\"6\"><span class=\"na\">not stored for this "
                         "run</span></td></tr>\n")
                         .arg(esc(r.legend_label));
                continue;
            }
            const RunStats st = run_stats(s, m, kLastN);
            QString mean = num(st.mean_last);
            if (st.last_n_finite < st.last_n)
                mean += QStringLiteral(" (%1 of %2 finite)").arg(st.last_n_finite).arg(st.last_n);
            h += QStringLiteral(
                     "<td>%1</td><td class=\"num\">%2</td><td class=\"num\">%3</td><td "
                     "class=\"num\">%4</td><td class=\"num\">%5</td><td class=\"num\">%6</td><td "
                     "class=\"num\">%7</td></tr>\n")
                     .arg(esc(r.legend_label), num(st.final_value), QString::number(st.final_step),
                          st.best_step >= 0 ? num(st.best) : QStringLiteral("\u2014"),
                          st.best_step >= 0 ? QString::number(st.best_step) : QStringLiteral("\u2014"), mean,
                          st.nonfinite() ? QStringLiteral("<span class=\"yes\">%1</span>").arg(st.nonfinite())
                                         : QStringLiteral("0"));
        }
    }
    h += QStringLiteral("</table>\n");
    for (const auto& n : out.notes) h += QStringLiteral("<p class=\"note\">%1.</p>\n").arg(esc(n));
    return h;
}

void Builder::attachments() {
    std::vector<int64_t> ids;
    for (const auto& r : runs) {
        ids.push_back(r.info.id);
        const std::string csv = export_csv(store, {r.info.id});
        out.attachments.push_back({"run-" + std::to_string(r.info.id) + "-" + sanitize_file_part(r.info.name) + ".csv",
                                   "text/csv", QByteArray::fromStdString(csv)});
    }
    out.attachments.push_back(
        {"runs.json", "application/json", QByteArray::fromStdString(export_json(store, ids).dump(1) + "\n")});
    files_html = QStringLiteral("<p class=\"note\">Data files (full resolution, embedded in this page): ");
    files_pdf = QStringLiteral(
        "<p class=\"note\">Data files attached to this PDF (full resolution; open the "
        "viewer's attachment panel or run pdfdetach): ");
    for (size_t i = 0; i < out.attachments.size(); ++i) {
        const auto& a = out.attachments[i];
        const QString sep = i ? QStringLiteral(", ") : QString();
        files_html += sep + QStringLiteral("<a href=\"data:%1;base64,%2\" download=\"%3\">%3</a>")
                                .arg(qs(a.mime), QString::fromLatin1(a.data.toBase64()), esc(a.file_name));
        files_pdf += sep + esc(a.file_name);
    }
    files_html += QStringLiteral(".</p>\n");
    files_pdf += QStringLiteral(".</p>\n");
}

}  // namespace mlk::report_detail
