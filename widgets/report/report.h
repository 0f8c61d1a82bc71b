// Run reports: one run, or several compared against a baseline, as one
// self-contained HTML string (tables, images as data: URLs, no external file)
// that is both the .html export and, through QTextDocument::print on a
// QPdfWriter, the PDF. The PDF carries each run's per-step CSV (export_csv,
// full resolution) and the runs' JSON (export_json) as embedded files
// (QPdfWriter::addFileAttachment, Qt >= 6.3); the HTML carries the same files
// as data: download links.
//
// Sections: title, date, application version; runs; summary (final / best /
// mean of the last 10 steps of reward, K3 KL, grad norm, F@2 and chosen
// metrics, collapse and divergence verdicts); key charts with every run
// overlaid; drill-down at one step (probability scatter with the diagonal,
// F(t), router-diff histogram for MoE); configuration (a comparison shows
// only the keys that differ from the baseline); environment; appendix with
// the raw per-step data.
//
// Detectors (also written out in the report):
//  - collapse: m_i = mean of the finite reward_mean values of the 10 steps
//    ending at step i (windows with fewer than 5 finite values are skipped).
//    Collapse at the first i where max_{j<=i} m_j > 0.1 and
//    m_i < 0.5 * max_{j<=i} m_j. Not evaluated with fewer than 10 steps.
//  - divergence: the first step where grad_norm or k3_kl is NaN or infinite,
//    or where k3_kl exceeds 10x its early median (median of the finite k3_kl
//    of the first min(10, ceil(n/2)) steps, checked on the later steps;
//    skipped when that median is 0, as in a truly on-policy run).
#pragma once

#include <QByteArray>
#include <QDateTime>
#include <QString>

#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/store/store.h"

namespace mlk {

// Bad request (unknown run, metric or step, bad file extension): the CLI's exit code 2.
class ReportInputError : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

struct ReportRequest {
    std::vector<int64_t> runs;         // report order; duplicates are ignored
    std::optional<int64_t> baseline;   // default runs[0]; added (first) when not in runs
    std::optional<int64_t> step;       // drill-down step; default: each run's last stored step
    std::vector<std::string> metrics;  // extra metrics for the summary and the charts
    std::string title;                 // default "Run report: NAME" / "Comparison: A vs B, C"
    std::optional<QDateTime> date;     // default now (tests pin it)
    bool appendix = true;              // raw per-step tables at the end
};

// The four metrics every report summarises and charts.
const std::vector<std::string>& report_key_metrics();  // reward_mean, k3_kl, grad_norm, F@2

using Series = std::vector<std::pair<int64_t, double>>;  // (step, value), ascending steps

// Higher is better for rewards, accuracy, ESS, kept fraction, tokens/s;
// lower is better for everything else (mismatch, grad norm, losses, fractions).
bool metric_higher_is_better(const std::string& name);
// Log y axis on charts: k3_kl, F@t, chi2_*, logp_abs_diff_*.
bool metric_prefers_log(const std::string& name);

struct MetricStats {
    int count = 0;                                                  // stored values (steps)
    int nonfinite = 0;                                              // of which NaN / +-Inf
    double final_value = std::numeric_limits<double>::quiet_NaN();  // value at the last stored step
    int64_t final_step = -1;
    double best = std::numeric_limits<double>::quiet_NaN();  // max or min (metric_higher_is_better) of finite values
    int64_t best_step = -1;
    double mean_last =
        std::numeric_limits<double>::quiet_NaN();  // mean of the finite values of the last `last_n` steps
    int last_n = 0;                                // steps in that window (min(last_n, count))
    int last_n_finite = 0;                         // finite values in it
};
MetricStats metric_stats(const Series& s, bool higher_is_better, int last_n = 10);

struct Detection {
    bool evaluated = false;  // enough data to decide
    bool detected = false;
    int64_t step = -1;   // first step at which the rule held
    std::string detail;  // one sentence, shown in the report
};
Detection detect_collapse(const Series& reward_mean);
Detection detect_divergence(const Series& grad_norm, const Series& k3_kl);

// Numbers in the summary tables: "%.5g", or "NaN", "inf", "-inf".
std::string report_number(double v);

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
