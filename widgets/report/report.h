// Run reports: one run, or several compared against a baseline, as one
// self-contained HTML string (tables, images as data: URLs, no external file)
// that is both the .html export and, through QTextDocument::print on a
// QPdfWriter, the PDF. The PDF carries each run's per-step CSV (export_csv,
// full resolution) and the runs' JSON (export_json) as embedded files
// (QPdfWriter::addFileAttachment, Qt >= 6.3); the HTML carries the same files
// as data: download links.
//
// Sections: title, date, application version; runs; summary (final / best /
// mean of the last 10 steps of the catalogue's key metrics and the chosen
// ones, by run_stats; collapse, divergence, blow-up and early-warning
// verdicts, core/metrics/verdicts.h);
// key charts with every run overlaid; drill-down at one step (probability
// scatter with the diagonal, F(t), router-diff histogram for MoE);
// configuration (a comparison shows only the keys that differ from the
// baseline); environment; appendix with the raw per-step data.
//
// Every metric fact (title, unit, better direction, axis, which are key) comes
// from the metric catalogue, every number from value_text, and each run is
// drawn in palette::runColour(run id), the colour the workbench gives it.
#pragma once

#include <QByteArray>
#include <QColor>
#include <QDateTime>
#include <QString>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/metrics/verdicts.h"
#include "core/store/store.h"

namespace mlk {

// Bad request (unknown run, metric or step, bad file extension): the CLI's exit code 2.
class ReportInputError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// How the workbench shows the runs; a report made from the window draws
// them the same way (the CLI's report: the defaults).
struct ReportView {
    std::map<int64_t, QColor> colours;    // run colours the user changed (the others: palette::runColour)
    double smoothing = 0;                 // EMA weight of a smoothed line over the faint raw one; 0 = raw only
    bool group_seeds = false;             // seeds of one configuration: a mean line in a min-max band
    std::vector<std::string> charts;      // the charts on screen, in order; empty = the catalogue's key charts
    std::vector<std::string> log_charts;  // of those, the ones on a log axis
};

struct ReportRequest {
    std::vector<int64_t> runs;         // report order; duplicates are ignored
    std::optional<int64_t> baseline;   // default runs[0]; added (first) when not in runs
    std::optional<int64_t> step;       // drill-down step; default: each run's last stored step
    std::vector<std::string> metrics;  // extra metrics for the summary and the charts
    std::string title;                 // default "Run report: NAME" / "Comparison: A vs B, C"
    std::optional<QDateTime> date;     // default now (tests pin it)
    // Raw per-step tables at the end (dozens of pages for a long run); the
    // per-run CSV is attached either way.
    bool appendix = false;
    ReportView view;
    VerdictThresholds verdicts;  // the summary's verdict rules
};

struct ReportAttachment {
    std::string file_name;  // e.g. "run-3-baseline.csv"
    std::string mime;       // "text/csv", "application/json"
    QByteArray data;
};

struct Report {
    QString title;
    QString html;                               // self-contained; parses as XML after the doctype line
    QString pdf_html;                           // the same, with the data-file links replaced by the
                                                // names of the PDF's attachments
    std::vector<ReportAttachment> attachments;  // per-run CSV (+ JSON of all runs)
    int images = 0;                             // inline data: images
    std::vector<std::string> notes;             // adjustments made, e.g. a step snapped per run
};

// Builds the report from the store. Needs a QApplication (charts). Throws
// ReportInputError for unknown runs / metrics, a step no run has, or no runs.
Report build_report(Store& store, const ReportRequest& req);

// Writers; throw std::runtime_error when the file cannot be written.
void save_report_html(const Report& r, const std::string& path);
void save_report_pdf(const Report& r, const std::string& path);  // A4, attachments embedded
// By extension: .html / .htm or .pdf (case-insensitive); ReportInputError otherwise.
void save_report(const Report& r, const std::string& path);
// True when `path` ends in an extension save_report accepts.
bool report_extension_ok(const std::string& path);

}  // namespace mlk
