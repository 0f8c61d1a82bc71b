// Sweep reports: one stored sweep (mismatch-lab-cli sweep) as one
// self-contained HTML / PDF, written by the run report's save_report and
// built from the run report's sections where they fit.
//
// Sections: title, date, application version; the sweep's spec (each
// configuration with the settings that tell it apart, seeds, steps); the
// verdict table (configuration x verdict counts x final / best reward and
// AUC with their spread over seeds, collapse step, delta against the baseline
// with its bootstrap interval) with the rules and the thresholds in force;
// key charts, reward_mean first, each configuration one seed group (mean
// line in its min-max band, in the colour the workbench gives the group: its
// first run's); every run per configuration and seed; the configuration diff
// against the baseline; environment. Each run's CSV is attached as in a run
// report.
//
// Every number comes from summarize_sweep (core/store/sweep_summary.h) and
// goes through value_text; the sweep table in the workbench shows the same
// text (widgets/data/sweep_text.h).
#pragma once

#include <QDateTime>
#include <QString>

#include <cstdint>
#include <optional>
#include <string>

#include "core/store/store.h"
#include "widgets/report/report.h"

namespace mlk {

struct SweepReportRequest {
    int64_t sweep_id = 0;
    std::string baseline;  // a configuration's name; empty: the first configuration
    VerdictThresholds thresholds;
    ReportView view;                // colours, smoothing, charts; seeds are always grouped by configuration
    std::string title;              // default "Sweep N: A vs B, C"
    std::optional<QDateTime> date;  // default now
};

// Throws ReportInputError naming the field (--sweep, --baseline) for an
// unknown sweep or baseline, or a sweep without a stored run. Needs a
// QApplication (charts).
Report build_sweep_report(Store& store, const SweepReportRequest& req);

}  // namespace mlk
