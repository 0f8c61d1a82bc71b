#include "widgets/report/report.h"

#include <QApplication>
#include <QFile>
#include <QFont>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QSysInfo>
#include <QTextDocument>
#include <QtGlobal>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "core/config/config.h"
#include "core/store/export.h"
#include "core/metrics/catalogue.h"
#include "kernels/cpu/features.h"
#include "kernels/kernels.h"
#include "widgets/charts/report_charts.h"

#ifndef MLK_VERSION
#define MLK_VERSION "unknown"
#endif

namespace mlk {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kLastN = 10;
constexpr int kAppendixColumns = 8;  // metric columns per appendix table
constexpr int kPageWidth = 640;      // usable width of an A4 page at 96 dpi with 2 cm margins

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString esc(const QString& s) { return s.toHtmlEscaped(); }
QString esc(const std::string& s) { return qs(s).toHtmlEscaped(); }
QString num(double v) { return qs(report_number(v)); }

// Long names (metric columns) may wrap after an underscore.
QString breakable(const std::string& s) {
    QString e = esc(s);
    e.replace(QLatin1Char('_'), QStringLiteral("_&#8203;"));
    return e;
}

std::string sanitize_file_part(const std::string& s) {
    std::string o;
    for (char c : s) o += (std::isalnum((unsigned char)c) || c == '-' || c == '_') ? c : '_';
    if (o.size() > 40) o.resize(40);
    return o;
}

struct RunData {
    RunInfo info;
    std::optional<Config> cfg;
    std::string cfg_error;
    QColor color;
    QString label;  // "name (#id)"
    std::vector<int64_t> steps;
    std::map<std::string, Series> series;
    std::optional<int64_t> drill_step;
};

const Series& series_of(RunData& r, Store& store, const std::string& name) {
    auto it = r.series.find(name);
    if (it == r.series.end()) it = r.series.emplace(name, store.metric_series(r.info.id, name)).first;
    return it->second;
}

QString metric_title(const std::string& m) {
    static const std::map<std::string, QString> titles = {
        {"reward_mean", QStringLiteral("Reward (batch mean)")},
        {"k3_kl", QStringLiteral("K3 KL (rollout \u2016 train), log scale")},
        {"grad_norm", QStringLiteral("Gradient norm (before clipping)")},
        {"F@2", QStringLiteral("F(t = 2): fraction of tokens with max(\u03c1, 1/\u03c1) > 2, log scale")},
    };
    auto it = titles.find(m);
    if (it != titles.end()) return it->second;
    return qs(m) + (metric_prefers_log(m) ? QStringLiteral(", log scale") : QString());
}

QString cpu_model() {
    QFile f(QStringLiteral("/proc/cpuinfo"));
    if (f.open(QIODevice::ReadOnly)) {
        const QList<QByteArray> lines = f.readAll().split('\n');
        for (const QByteArray& l : lines)
            if (l.startsWith("model name")) return QString::fromUtf8(l.mid(l.indexOf(':') + 1)).trimmed();
    }
    return QSysInfo::currentCpuArchitecture();
}

QString build_description() {
    QString compiler;
#if defined(__clang__)
    compiler = QStringLiteral("Clang ") + QStringLiteral(__clang_version__);
#elif defined(__GNUC__)
    compiler = QStringLiteral("GCC ") + QStringLiteral(__VERSION__);
#else
    compiler = QStringLiteral("unknown compiler");
#endif
    QString type;
#if defined(NDEBUG) && defined(__OPTIMIZE__)
    type = QStringLiteral("optimised, assertions off (Release / RelWithDebInfo)");
#elif defined(__OPTIMIZE__)
    type = QStringLiteral("optimised, assertions on");
#else
    type = QStringLiteral("unoptimised (Debug)");
#endif
    return type + QStringLiteral("; ") + compiler + QStringLiteral("; C++ ") + QString::number(__cplusplus);
}

QString table_open(const QString& cls = QStringLiteral("grid")) {
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

std::string range_text(const std::vector<int64_t>& steps) {
    if (steps.empty()) return "none";
    return std::to_string(steps.front()) + "\u2013" + std::to_string(steps.back());
}

}  // namespace

// ---------------------------------------------------------------------------
// Statistics and detectors

const std::vector<std::string>& report_key_metrics() {
    static const std::vector<std::string> m = {"reward_mean", "k3_kl", "grad_norm", "F@2"};
    return m;
}

bool metric_higher_is_better(const std::string& n) {
    static const std::set<std::string> higher = {"reward_mean", "accuracy", "ess", "kept_token_fraction",
                                                 "tokens_per_s"};
    return higher.count(n) > 0;
}

bool metric_prefers_log(const std::string& n) {
    return n == "k3_kl" || n.rfind("F@", 0) == 0 || n.rfind("chi2_", 0) == 0 || n.rfind("logp_abs_diff", 0) == 0;
}

std::string report_number(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.5g", v);
    return buf;
}

MetricStats metric_stats(const Series& s, bool higher, int last_n) {
    MetricStats st;
    st.count = (int)s.size();
    for (const auto& [step, v] : s) {
        if (!std::isfinite(v)) {
            ++st.nonfinite;
            continue;
        }
        if (std::isnan(st.best) || (higher ? v > st.best : v < st.best)) st.best = v, st.best_step = step;
    }
    if (!s.empty()) st.final_value = s.back().second, st.final_step = s.back().first;
    st.last_n = std::min<int>(last_n, (int)s.size());
    double sum = 0;
    for (size_t i = s.size() - st.last_n; i < s.size(); ++i)
        if (std::isfinite(s[i].second)) sum += s[i].second, ++st.last_n_finite;
    if (st.last_n_finite > 0) st.mean_last = sum / st.last_n_finite;
    return st;
}

Detection detect_collapse(const Series& r) {
    Detection d;
    constexpr int W = 10;
    if ((int)r.size() < W) {
        d.detail = "not evaluated: " + std::to_string(r.size()) + " reward value(s), the rule needs at least 10 steps";
        return d;
    }
    d.evaluated = true;
    double best = -INFINITY;
    int64_t best_end = -1;
    double last_mean = kNaN;
    for (size_t end = W - 1; end < r.size(); ++end) {
        double sum = 0;
        int n = 0;
        for (size_t i = end + 1 - W; i <= end; ++i)
            if (std::isfinite(r[i].second)) sum += r[i].second, ++n;
        if (n < W / 2) continue;
        const double m = sum / n;
        last_mean = m;
        if (m > best) best = m, best_end = r[end].first;
        if (best > 0.1 && m < 0.5 * best) {
            d.detected = true;
            d.step = r[end].first;
            d.detail = "yes: at step " + std::to_string(d.step) + " the 10-step reward mean " + report_number(m) +
                       " fell below 50% of its best " + report_number(best) + " (10 steps ending at step " +
                       std::to_string(best_end) + ")";
            return d;
        }
    }
    if (best == -INFINITY) {
        d.evaluated = false;
        d.detail = "not evaluated: no 10-step window with at least 5 finite reward values";
    } else if (best <= 0.1) {
        d.detail = "no: the 10-step reward mean never exceeded 0.1 (best " + report_number(best) + ")";
    } else {
        d.detail = "no: last 10-step reward mean " + report_number(last_mean) + ", best " + report_number(best) +
                   " (ending at step " + std::to_string(best_end) + ")";
    }
    return d;
}

Detection detect_divergence(const Series& g, const Series& k) {
    Detection d;
    if (g.empty() && k.empty()) {
        d.detail = "not evaluated: neither grad_norm nor k3_kl is stored";
        return d;
    }
    d.evaluated = true;
    // 1) non-finite grad_norm / k3_kl
    int64_t first = INT64_MAX;
    std::string what;
    for (const auto& [s, v] : g)
        if (!std::isfinite(v) && s < first) first = s, what = "grad_norm is " + report_number(v);
    for (const auto& [s, v] : k)
        if (!std::isfinite(v) && s < first) first = s, what = "k3_kl is " + report_number(v);
    // 2) k3_kl above 10x its early median
    std::string ratio_note;
    int64_t ratio_step = INT64_MAX;
    std::string ratio_what;
    if (!k.empty()) {
        const size_t early = std::min<size_t>(10, std::max<size_t>(1, (k.size() + 1) / 2));
        std::vector<double> e;
        for (size_t i = 0; i < early; ++i)
            if (std::isfinite(k[i].second)) e.push_back(k[i].second);
        if (e.empty()) {
            ratio_note = "k3_kl ratio test skipped (no finite early value)";
        } else {
            std::sort(e.begin(), e.end());
            const double med = e.size() % 2 ? e[e.size() / 2] : 0.5 * (e[e.size() / 2 - 1] + e[e.size() / 2]);
            if (med <= 0) {
                ratio_note = "k3_kl ratio test skipped (early median " + report_number(med) + ")";
            } else if (early >= k.size()) {
                ratio_note = "k3_kl ratio test needs steps after the early window";
            } else {
                for (size_t i = early; i < k.size(); ++i)
                    if (std::isfinite(k[i].second) && k[i].second > 10 * med) {
                        ratio_step = k[i].first;
                        char buf[64];
                        std::snprintf(buf, sizeof buf, "%.3g", k[i].second / med);
                        ratio_what = "k3_kl " + report_number(k[i].second) + " is " + buf + "x its early median " +
                                     report_number(med) + " (steps " + std::to_string(k[0].first) + "\u2013" +
                                     std::to_string(k[early - 1].first) + ")";
                        break;
                    }
                if (ratio_step == INT64_MAX)
                    ratio_note = "k3_kl stayed within 10x its early median " + report_number(med);
            }
        }
    }
    if (ratio_step < first) first = ratio_step, what = ratio_what;
    if (first != INT64_MAX) {
        d.detected = true;
        d.step = first;
        d.detail = "yes: at step " + std::to_string(first) + " " + what;
    } else {
        d.detail = "no: grad_norm and k3_kl finite throughout";
        if (!ratio_note.empty()) d.detail += "; " + ratio_note;
    }
    return d;
}

// ---------------------------------------------------------------------------
// Building

namespace {

struct Builder {
    Store& store;
    const ReportRequest& req;
    std::vector<RunData> runs;
    std::vector<std::string> metrics;  // summary / chart metrics
    Report out;
    QString files_html, files_pdf;  // the data-files paragraph of each flavour

    Builder(Store& s, const ReportRequest& r) : store(s), req(r) {}

    void resolve();
    QString head();
    QString runs_section();
    QString summary_section();
    QString charts_section();
    QString drill_section();
    QString config_section();
    QString environment_section();
    QString appendix_section();
    void attachments();
};

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
    for (size_t i = 0; i < ids.size(); ++i) {
        auto info = store.run_info(ids[i]);
        if (!info)
            throw ReportInputError("unknown run id " + std::to_string(ids[i]) + ": not in " + store.path() +
                                   " (see `mismatch-lab-cli runs`)");
        RunData r;
        r.info = *info;
        r.color = report::run_color((int)i);
        r.label = qs(info->name) + QStringLiteral(" (#%1)").arg(info->id);
        r.steps = store.steps(info->id);
        try {
            r.cfg = config_from_json(nlohmann::json::parse(info->config_json));
        } catch (const std::exception& e) {
            r.cfg_error = e.what();
        }
        for (auto& n : store.metric_names(info->id)) stored.insert(n);
        runs.push_back(std::move(r));
    }
    metrics = report_key_metrics();
    for (const auto& m : req.metrics) {
        if (!stored.count(m)) {
            std::string all;
            for (const auto& n : stored) all += (all.empty() ? "" : ", ") + n;
            throw ReportInputError("unknown metric '" + m + "': not stored for the runs of this report; stored: " +
                                   (all.empty() ? std::string("none") : all));
        }
        if (std::find(metrics.begin(), metrics.end(), m) == metrics.end()) metrics.push_back(m);
    }
    // Drill-down step per run.
    if (req.step) {
        const int64_t want = *req.step;
        bool any = false;
        for (auto& r : runs) any |= std::binary_search(r.steps.begin(), r.steps.end(), want);
        if (!any) {
            std::string have;
            for (auto& r : runs)
                have += (have.empty() ? "" : "; ") + std::string("run ") + std::to_string(r.info.id) + ": " +
                        range_text(r.steps);
            throw ReportInputError("--step " + std::to_string(want) + " is not stored for any run of the report (" +
                                   have + ")");
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
    } else {
        for (auto& r : runs)
            if (!r.steps.empty()) r.drill_step = r.steps.back();
    }
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
        "p.meta { color: #505050; margin-top: 0; }\n"
        "p.note { color: #505050; font-size: 8pt; margin-top: 1px; }\n"
        "p.chart { margin-top: 8px; margin-bottom: 0; }\n"
        "span.yes { color: #b00000; font-weight: bold; }\n"
        "span.no { color: #1a6b1a; }\n"
        "span.na { color: #707070; }\n"
        "</style>\n</head>\n<body>\n");
    h += QStringLiteral("<h1>%1</h1>\n").arg(esc(out.title));
    h += QStringLiteral("<p class=\"meta\">Generated %1 by Mismatch Lab %2 from %3. %4</p>\n")
             .arg(esc(date.toString(Qt::ISODate)), esc(QStringLiteral(MLK_VERSION)), esc(store.path()),
                  runs.size() > 1 ? QStringLiteral("Baseline: %1; %2 run(s) compared against it.")
                                        .arg(esc(runs[0].label), QString::number(runs.size() - 1))
                                  : QString());
    return h;
}

QString Builder::runs_section() {
    const bool many = runs.size() > 1;
    QString h = QStringLiteral("<h2>Runs</h2>\n") + table_open();
    h += QStringLiteral(
             "<tr><th></th><th>id</th><th>name</th>%1<th>preset</th><th>status</th>"
             "<th>steps</th><th>seed</th><th>created (UTC)</th><th>app version</th></tr>\n")
             .arg(many ? QStringLiteral("<th>role</th>") : QString());
    for (size_t i = 0; i < runs.size(); ++i) {
        const RunInfo& r = runs[i].info;
        QString created = qs(r.created.substr(0, 19));
        created.replace(QLatin1Char('T'), QLatin1Char(' '));
        h += QStringLiteral(
                 "<tr><td>%1</td><td class=\"num\">%2</td><td>%3</td>%4<td>%5</td><td>%6</td>"
                 "<td class=\"num\">%7</td><td class=\"num\">%8</td><td class=\"key\">%9</td><td>%10</td></tr>\n")
                 .arg(swatch(runs[i].color), QString::number(r.id), esc(r.name),
                      !many    ? QString()
                      : i == 0 ? QStringLiteral("<td>baseline</td>")
                               : QStringLiteral("<td>compared</td>"),
                      esc(r.preset), esc(r.status), QString::number(r.steps), QString::number(r.seed), esc(created),
                      esc(r.app_version));
    }
    h += QStringLiteral("</table>\n");
    for (const auto& r : runs)
        if (!r.info.notes.empty())
            h += QStringLiteral("<p class=\"note\">Notes on %1: %2</p>\n").arg(esc(r.label), esc(r.info.notes));
    return h;
}

QString Builder::summary_section() {
    QString h = QStringLiteral("<h2>Summary</h2>\n");
    // Verdicts.
    h += table_open() + QStringLiteral("<tr><th>run</th><th>collapse</th><th>divergence</th></tr>\n");
    auto verdict = [](const Detection& d) {
        const QString cls = !d.evaluated ? QStringLiteral("na")
                            : d.detected ? QStringLiteral("yes")
                                         : QStringLiteral("no");
        const QString word = !d.evaluated ? QStringLiteral("not evaluated")
                             : d.detected ? QStringLiteral("DETECTED")
                                          : QStringLiteral("none");
        std::string detail = d.detail;
        auto colon = detail.find(": ");
        if (colon != std::string::npos && colon < 16) detail = detail.substr(colon + 2);
        return QStringLiteral("<span class=\"%1\">%2</span>: %3").arg(cls, word, esc(detail));
    };
    for (auto& r : runs) {
        const Detection c = detect_collapse(series_of(r, store, "reward_mean"));
        const Detection d = detect_divergence(series_of(r, store, "grad_norm"), series_of(r, store, "k3_kl"));
        h += QStringLiteral("<tr><td>%1&#160;%2</td><td>%3</td><td>%4</td></tr>\n")
                 .arg(swatch(r.color), esc(r.label), verdict(c), verdict(d));
    }
    h += QStringLiteral(
        "</table>\n<p class=\"note\">Collapse: the mean reward over 10 steps falls below 50% of "
        "its best 10-step mean after that best exceeded 0.1 (windows with fewer than 5 finite "
        "values skipped; needs at least 10 steps). Divergence: grad_norm or k3_kl NaN/infinite, "
        "or k3_kl above 10\u00d7 its early median (median of the first min(10, n/2) steps, "
        "checked on later steps; skipped when that median is 0).</p>\n");

    // Metric table.
    h += table_open() +
         QStringLiteral(
             "<thead><tr><th>metric</th><th>run</th><th class=\"key\">final</th><th class=\"key\">step</th>"
             "<th class=\"key\">best</th><th class=\"key\">step</th><th class=\"key\">mean of last %1</th>"
             "<th class=\"key\">NaN/Inf</th></tr></thead>\n")
             .arg(kLastN);
    for (const auto& m : metrics) {
        const bool higher = metric_higher_is_better(m);
        for (size_t i = 0; i < runs.size(); ++i) {
            RunData& r = runs[i];
            const Series& s = series_of(r, store, m);
            h += QStringLiteral("<tr>");
            if (i == 0)
                h += QStringLiteral(
                         "<td rowspan=\"%1\" class=\"key\"><b>%2</b><br/><span class=\"na\">best = %3</span></td>")
                         .arg(runs.size())
                         .arg(esc(m), higher ? QStringLiteral("max") : QStringLiteral("min"));
            if (s.empty()) {
                h += QStringLiteral(
                         "<td class=\"key\">%1</td><td colspan=\"6\"><span class=\"na\">not stored for this "
                         "run</span></td></tr>\n")
                         .arg(esc(r.label));
                continue;
            }
            const MetricStats st = metric_stats(s, higher, kLastN);
            QString mean = num(st.mean_last);
            if (st.last_n_finite < st.last_n)
                mean += QStringLiteral(" (%1 of %2 finite)").arg(st.last_n_finite).arg(st.last_n);
            h += QStringLiteral(
                     "<td class=\"key\">%1</td><td class=\"num\">%2</td><td class=\"num\">%3</td><td "
                     "class=\"num\">%4</td>"
                     "<td class=\"num\">%5</td><td class=\"num\">%6</td><td class=\"num\">%7</td></tr>\n")
                     .arg(esc(r.label), num(st.final_value), QString::number(st.final_step),
                          st.best_step >= 0 ? num(st.best) : QStringLiteral("\u2014"),
                          st.best_step >= 0 ? QString::number(st.best_step) : QStringLiteral("\u2014"), mean,
                          st.nonfinite ? QStringLiteral("<span class=\"yes\">%1</span>").arg(st.nonfinite)
                                       : QStringLiteral("0"));
        }
    }
    h += QStringLiteral("</table>\n");
    for (const auto& n : out.notes) h += QStringLiteral("<p class=\"note\">%1.</p>\n").arg(esc(n));
    return h;
}

QString Builder::charts_section() {
    QString h = QStringLiteral("<h2 style=\"page-break-before: always\">Key charts</h2>\n");
    h += QStringLiteral(
        "<p class=\"note\">Every run overlaid, one colour per run (see the legend). NaN/Inf values "
        "are drawn as triangles at the plot edge; on log scales values &lt;= 0 are drawn as open "
        "circles at a floor. Both are listed under the chart.</p>\n");
    for (const auto& m : metrics) {
        std::vector<report::ChartRun> cr;
        for (auto& r : runs) {
            report::ChartRun c{r.label, r.color, {}};
            for (const auto& [s, v] : series_of(r, store, m)) c.points.push_back({(double)s, v});
            cr.push_back(std::move(c));
        }
        report::ChartSpec spec;
        spec.title = metric_title(m);
        spec.yLabel = qs(m);
        spec.yScale = metric_prefers_log(m) ? report::Scale::log : report::Scale::linear;
        spec.size = QSize(kPageWidth, 250);
        report::RenderedChart c = report::render_xy_chart(spec, cr);
        h += QStringLiteral("<p class=\"chart\" align=\"center\">%1</p>\n")
                 .arg(img_tag(c, QStringLiteral("chart of ") + qs(m)));
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

    // F(t) overlay.
    {
        std::vector<report::ChartRun> cr;
        for (auto& r : runs) {
            report::ChartRun c{r.label, r.color, {}};
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
        h += QStringLiteral("<h3>F(t) curve</h3>\n<p class=\"chart\" align=\"center\">%1</p>\n")
                 .arg(img_tag(c, QStringLiteral("F(t) curve")));
        h += notes_html(c.notes);
        ++out.images;
    }

    // Router-diff histogram (MoE runs).
    bool router_shown = false;
    {
        std::vector<std::pair<RunData*, std::vector<RouterBin>>> hists;
        int32_t maxd = 0;
        for (auto& r : runs) {
            if (!r.drill_step) continue;
            auto bins = store.router_hist(r.info.id, *r.drill_step);
            if (bins.empty()) continue;
            for (const auto& b : bins) maxd = std::max(maxd, b.d);
            hists.emplace_back(&r, std::move(bins));
        }
        h += QStringLiteral("<h3>Router-diff histogram</h3>\n");
        router_shown = !hists.empty();
        if (hists.empty()) {
            h += QStringLiteral(
                "<p class=\"note\">No router histogram at this step: no run of the report has MoE "
                "layers (dense models route nothing).</p>\n");
        } else {
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
            h += notes_html(c.notes);
            h += counts;
            ++out.images;
            QStringList dense;
            for (auto& r : runs)
                if (std::none_of(hists.begin(), hists.end(), [&](auto& p) { return p.first == &r; })) dense << r.label;
            if (!dense.isEmpty())
                h += QStringLiteral(
                         "<p class=\"note\">No router histogram stored for %1 (dense model or no "
                         "MoE data at this step).</p>\n")
                         .arg(esc(dense.join(QStringLiteral(", "))));
        }
    }

    // Probability scatter per run, two per row.
    // With a router histogram the scatter grid no longer fits below: start it on a new page
    // rather than leaving its heading alone at the bottom.
    h += QStringLiteral("<h3%1>Training vs rollout probability of the sampled tokens</h3>\n")
             .arg(router_shown ? QStringLiteral(" style=\"page-break-before: always\"") : QString());
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

QString Builder::config_section() {
    QString h = QStringLiteral("<h2 style=\"page-break-before: always\">Configuration</h2>\n");
    for (const auto& r : runs)
        if (!r.cfg)
            h += QStringLiteral(
                     "<p class=\"note\">The stored configuration of %1 could not be read (%2); its raw "
                     "JSON:</p>\n<pre>%3</pre>\n")
                     .arg(esc(r.label), esc(r.cfg_error), esc(r.info.config_json));
    const Config defaults;
    if (runs.size() == 1) {
        if (!runs[0].cfg) return h;
        const Config& c = *runs[0].cfg;
        h += QStringLiteral(
            "<p class=\"note\">Every setting of the run; values that differ from the defaults are in "
            "bold with the default beside them.</p>\n");
        h += table_open() +
             QStringLiteral("<thead><tr><th>key</th><th>setting</th><th>value</th><th>default</th></tr></thead>\n");
        std::string section;
        for (const auto& k : config_schema()) {
            if (k.section != section) {
                section = k.section;
                h += QStringLiteral("<tr class=\"section\"><td colspan=\"4\">%1</td></tr>\n").arg(esc(section));
            }
            const std::string v = config_value_text(c, k.key), dv = config_value_text(defaults, k.key);
            const bool differs = v != dv;
            h += QStringLiteral("<tr><td class=\"key\">%1</td><td>%2</td><td>%3</td><td>%4</td></tr>\n")
                     .arg(esc(k.key), esc(k.label), differs ? QStringLiteral("<b>%1</b>").arg(esc(v)) : esc(v),
                          differs ? esc(dv) : QString());
        }
        h += QStringLiteral("</table>\n");
    } else {
        if (!runs[0].cfg) return h;
        std::set<std::string> keys;
        for (size_t i = 1; i < runs.size(); ++i)
            if (runs[i].cfg)
                for (const auto& d : config_diff(*runs[0].cfg, *runs[i].cfg)) keys.insert(d.key);
        if (keys.empty()) {
            h += QStringLiteral("<p>Every compared run has the baseline's configuration (seed included).</p>\n");
        } else {
            h += QStringLiteral(
                     "<p class=\"note\">Only the %1 key(s) where some run differs from the baseline; a "
                     "value equal to the baseline's is shown as =.</p>\n")
                     .arg(keys.size());
            h += table_open() + QStringLiteral("<tr><th>key</th><th>setting</th>");
            for (size_t i = 0; i < runs.size(); ++i)
                h += QStringLiteral("<th>%1&#160;%2%3</th>")
                         .arg(swatch(runs[i].color), esc(runs[i].label),
                              i == 0 ? QStringLiteral(" (baseline)") : QString());
            h += QStringLiteral("</tr>\n");
            for (const auto& k : config_schema()) {
                if (!keys.count(k.key)) continue;
                const std::string base = config_value_text(*runs[0].cfg, k.key);
                h += QStringLiteral("<tr><td class=\"key\">%1</td><td>%2</td><td>%3</td>")
                         .arg(esc(k.key), esc(k.label), esc(base));
                for (size_t i = 1; i < runs.size(); ++i) {
                    if (!runs[i].cfg) {
                        h += QStringLiteral("<td>?</td>");
                        continue;
                    }
                    const std::string v = config_value_text(*runs[i].cfg, k.key);
                    h += v == base ? QStringLiteral("<td><span class=\"na\">=</span></td>")
                                   : QStringLiteral("<td><b>%1</b></td>").arg(esc(v));
                }
                h += QStringLiteral("</tr>\n");
            }
            h += QStringLiteral("</table>\n");
        }
    }
    for (const auto& r : runs) {
        if (!r.cfg) continue;
        const auto warnings = config_warnings(*r.cfg);
        if (warnings.empty()) continue;
        h += QStringLiteral("<p class=\"note\">Settings without effect in %1:").arg(esc(r.label));
        for (const auto& w : warnings) h += QStringLiteral("<br/>\u2022 ") + esc(w);
        h += QStringLiteral("</p>\n");
    }
    return h;
}

QString Builder::environment_section() {
    QString h = QStringLiteral(
        "<h2>Environment</h2>\n<p class=\"note\">The machine and build that generated this "
        "report; each run's own application version is in the Runs table.</p>\n");
    h += table_open();
    auto row = [&](const QString& k, const QString& v) {
        h += QStringLiteral("<tr><th width=\"28%\">%1</th><td>%2</td></tr>\n").arg(esc(k), esc(v));
    };
    row(QStringLiteral("Application"), QStringLiteral("Mismatch Lab ") + QStringLiteral(MLK_VERSION));
    row(QStringLiteral("CPU"), cpu_model());
    row(QStringLiteral("Threads"), QStringLiteral("%1 hardware threads; kernel pool %2; SIMD path %3")
                                       .arg(std::thread::hardware_concurrency())
                                       .arg(num_threads())
                                       .arg(QString::fromLatin1(cpu::isa_name(cpu::active_isa()))));
    const QString kv = QSysInfo::kernelVersion();
    const QStringList kp = kv.split(QLatin1Char('.'));
    QString kernelType = QSysInfo::kernelType();
    if (kernelType == QLatin1String("linux")) kernelType = QStringLiteral("Linux");
    else if (!kernelType.isEmpty()) kernelType[0] = kernelType[0].toUpper();
    row(QStringLiteral("Kernel"),
        QStringLiteral("%1 %2 (%3)").arg(kernelType, kp.size() >= 2 ? kp[0] + "." + kp[1] : kv, kv));
    row(QStringLiteral("Operating system"), QSysInfo::prettyProductName());
    row(QStringLiteral("Build"), build_description());
    row(QStringLiteral("Libraries"),
        QStringLiteral("Qt %1, SQLite %2")
            .arg(QString::fromLatin1(qVersion()), QString::fromLatin1(sqlite3_libversion())));
    h += QStringLiteral("</table>\n");
    h += QStringLiteral("<h3>Precisions and kernels per run</h3>\n") + table_open() +
         QStringLiteral(
             "<tr><th>run</th><th>model</th><th>rollout precision</th><th>training precision</th>"
             "<th>batch-invariant kernels</th><th>kernel threads</th><th>routing replay</th></tr>\n");
    for (const auto& r : runs) {
        if (!r.cfg) {
            h += QStringLiteral("<tr><td>%1</td><td colspan=\"6\">configuration unreadable</td></tr>\n")
                     .arg(esc(r.label));
            continue;
        }
        const Config& c = *r.cfg;
        h +=
            QStringLiteral(
                "<tr><td>%1</td><td>%2-%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td><td>%8</td></tr>\n")
                .arg(esc(r.label), esc(std::string(enum_name(c.model.kind))), esc(std::string(enum_name(c.model.size))),
                     esc(std::string(enum_name(c.rollout.precision))), esc(std::string(enum_name(c.train.precision))),
                     c.kernels.batch_invariant ? QStringLiteral("on") : QStringLiteral("off"),
                     c.kernels.threads == 0 ? QStringLiteral("all cores") : QString::number(c.kernels.threads),
                     esc(std::string(enum_name(c.moe.routing_replay))));
    }
    h += QStringLiteral("</table>\n");
    return h;
}

QString Builder::appendix_section() {
    QString h = QStringLiteral("<h2 style=\"page-break-before: always\">Appendix: per-step data</h2>\n");
    h += QStringLiteral(
        "<p class=\"note\">Every stored step and metric, 6 significant digits (the attached CSV "
        "files hold full precision). NaN: stored NaN or a metric absent at that step.</p>\n");
    for (size_t ri = 0; ri < runs.size(); ++ri) {
        RunData& r = runs[ri];
        h += QStringLiteral("<h3>%1&#160;%2</h3>\n").arg(swatch(r.color), esc(r.label));
        MetricTable t = store.all_metrics(r.info.id);
        if (t.steps.empty()) {
            h += QStringLiteral("<p class=\"note\">No steps stored.</p>\n");
            continue;
        }
        const std::vector<std::string> cols = export_columns(store, {r.info.id});
        std::vector<int> at(cols.size(), -1);
        for (size_t c = 0; c < cols.size(); ++c)
            for (size_t n = 0; n < t.names.size(); ++n)
                if (t.names[n] == cols[c]) at[c] = (int)n;
        for (size_t c0 = 0; c0 < cols.size(); c0 += kAppendixColumns) {
            const size_t c1 = std::min(cols.size(), c0 + kAppendixColumns);
            h += QStringLiteral(
                "<table class=\"data\" border=\"1\" cellspacing=\"0\" cellpadding=\"2\" "
                "width=\"100%\">\n<thead><tr><th>step</th>");
            for (size_t c = c0; c < c1; ++c) h += QStringLiteral("<th>%1</th>").arg(breakable(cols[c]));
            h += QStringLiteral("</tr></thead>\n");
            for (size_t s = 0; s < t.steps.size(); ++s) {
                h += QStringLiteral("<tr><td class=\"num\">%1</td>").arg(t.steps[s]);
                for (size_t c = c0; c < c1; ++c) {
                    const double v = at[c] >= 0 ? t.values[s][at[c]] : kNaN;
                    QString text;
                    if (std::isfinite(v)) text = QString::asprintf("%.6g", v);
                    else text = num(v);
                    h += QStringLiteral("<td class=\"num\">%1</td>").arg(text);
                }
                h += QStringLiteral("</tr>\n");
            }
            h += QStringLiteral("</table>\n");
        }
    }
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

}  // namespace

Report build_report(Store& store, const ReportRequest& req) {
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        throw std::runtime_error("build_report needs a QApplication (charts are drawn with Qt Charts)");
    Builder b(store, req);
    b.resolve();
    b.attachments();
    const QString marker = QStringLiteral("<!--MLK-DATA-FILES-->");
    QString body = b.head() + b.runs_section() + marker + b.summary_section() + b.charts_section() + b.drill_section() +
                   b.config_section() + b.environment_section();
    if (req.appendix) body += b.appendix_section();
    body += QStringLiteral("</body>\n</html>\n");
    b.out.pdf_html = body;
    b.out.pdf_html.replace(marker, b.files_pdf);
    b.out.html = std::move(body);
    b.out.html.replace(marker, b.files_html);
    return std::move(b.out);
}

bool report_extension_ok(const std::string& path) {
    const QString p = qs(path).toLower();
    return p.endsWith(QLatin1String(".html")) || p.endsWith(QLatin1String(".htm")) || p.endsWith(QLatin1String(".pdf"));
}

void save_report_html(const Report& r, const std::string& path) {
    QFile f(qs(path));
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        throw std::runtime_error("cannot write " + path + ": " + f.errorString().toStdString());
    const QByteArray bytes = r.html.toUtf8();
    if (f.write(bytes) != bytes.size() || !f.flush())
        throw std::runtime_error("cannot write " + path + ": " + f.errorString().toStdString());
}

void save_report_pdf(const Report& r, const std::string& path) {
    {
        QFile probe(qs(path));
        if (!probe.open(QIODevice::WriteOnly | QIODevice::Truncate))
            throw std::runtime_error("cannot write " + path + ": " + probe.errorString().toStdString());
    }
    QTextDocument doc;
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPointSizeF(9);
    doc.setDefaultFont(font);
    doc.setHtml(r.pdf_html.isEmpty() ? r.html : r.pdf_html);
    QPdfWriter w(qs(path));
    w.setPageSize(QPageSize(QPageSize::A4));
    w.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout::Millimeter);  // QTextDocument::print adds 2 cm
    w.setResolution(300);
    w.setTitle(r.title);
    w.setCreator(QStringLiteral("Mismatch Lab ") + QStringLiteral(MLK_VERSION));
    for (const auto& a : r.attachments) w.addFileAttachment(qs(a.file_name), a.data, qs(a.mime));
    doc.print(&w);
}

void save_report(const Report& r, const std::string& path) {
    const QString p = qs(path).toLower();
    if (p.endsWith(QLatin1String(".pdf"))) save_report_pdf(r, path);
    else if (p.endsWith(QLatin1String(".html")) || p.endsWith(QLatin1String(".htm"))) save_report_html(r, path);
    else throw ReportInputError("--out: '" + path + "' must end in .html, .htm or .pdf");
}

}  // namespace mlk
