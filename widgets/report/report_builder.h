// Internals of build_report (report.cpp), not part of the library's API: the
// report's runs as loaded from the store, the HTML helpers every section uses,
// and the Builder whose sections live in report_builder.cpp (runs, summary,
// data files), report_figures.cpp (key charts, drill-down) and
// report_tables.cpp (configuration, environment, appendix).
#pragma once

#include <QColor>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/config/settings.h"
#include "core/metrics/run_stats.h"
#include "widgets/data/qt_text.h"
#include "core/store/store.h"
#include "widgets/charts/report_charts.h"
#include "widgets/report/report.h"

#ifndef MLK_VERSION
#define MLK_VERSION "unknown"
#endif

namespace mlk::report_detail {

inline constexpr int kLastN = 10;           // "mean of the last N steps" in the summary
inline constexpr int kAppendixColumns = 8;  // metric columns per appendix table
inline constexpr double kPageMarginCm = 2;  // every side of a PDF page (report.cpp)
inline constexpr int kPageWidth = 640;      // usable width of an A4 page at 96 dpi with those margins
// The charts heading's anchor, by which the PDF writer finds it (report.cpp).
inline constexpr const char* kChartsAnchor = "charts";

inline QString esc(const QString& s) { return s.toHtmlEscaped(); }
inline QString esc(const std::string& s) { return qs(s).toHtmlEscaped(); }

// Long names (metric columns) may wrap after an underscore.
QString breakable(const std::string& s);
QString table_open(const QString& cls = QStringLiteral("grid"));
QString img_tag(const report::RenderedChart& c, const QString& alt);
QString notes_html(const QStringList& notes);
// A square of the run's colour before its name.
QString swatch(const QColor& c);
// A chart's title and y axis from the catalogue; a metric it does not know
// (from an older or newer version) gets its name and a linear axis.
// The chart title of a metric, ", log scale" added when drawn on one.
QString metric_chart_title(const std::string& name, bool log);
bool metric_log_axis(const std::string& name);

struct RunData {
    RunInfo info;
    std::optional<Config> cfg;
    std::string cfg_error;
    QColor color;   // the colour the GUI gives the run (ReportView::colours, else palette::runColour)
    QString label;  // runLabel: "#id name"
    // For chart legends and the per-metric table, where a long name is cut
    // or wraps: the words of the name the other runs lack (legendLabels); the
    // runs table names each run whole, with its id.
    QString legend_label;
    QString seed_group;   // seedGroupOf(config): runs that differ in the seed only share it
    QString group_label;  // what a seed group is named after (seedGroupLabel); empty: its first run's label
    std::vector<int64_t> steps;
    std::map<std::string, std::vector<MetricPoint>> series;
    std::optional<int64_t> drill_step;
};

struct Builder {
    Store& store;
    const ReportRequest& req;
    std::vector<RunData> runs;               // baseline first
    std::vector<std::string> metrics;        // summary metrics: the key ones, then the requested ones
    std::vector<std::string> chart_metrics;  // the charts: the screen's (ReportView::charts), else `metrics`
    Report out;
    QString files_html, files_pdf;     // the data-files paragraph of each flavour
    std::optional<QString> meta_note;  // after the generation line; default: the baseline and the compared runs

    Builder(Store& s, const ReportRequest& r) : store(s), req(r) {}

    // Loads the runs and checks the request; throws ReportInputError.
    void resolve();
    const std::vector<MetricPoint>& series_of(RunData& r, const std::string& metric);

    QString head();
    QString runs_section();
    QString machines_note();
    bool same_for_every_run(std::string RunInfo::*field) const;  // true for no runs
    QString summary_section();
    QString charts_section();
    std::vector<report::ChartRun> chart_runs(const std::string& metric);
    QString drill_section();
    QString config_section();
    QString environment_section();
    QString appendix_section();
    void attachments();
    // Where the data-files paragraph goes: each flavour gets its own text there.
    static QString files_marker() { return QStringLiteral("<!--MLK-DATA-FILES-->"); }
    // The report from its body (sections, the marker among them): closes the
    // document and fills in each flavour's data-files paragraph.
    Report finish(QString body);

private:
    void resolve_drill_steps();
    QString ft_figure();
    QString router_figure(bool* shown);
    QString scatter_figures(bool after_router);
};

}  // namespace mlk::report_detail
