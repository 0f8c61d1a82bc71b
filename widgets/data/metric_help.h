// What the workbench says about a metric wherever one is shown (chart titles,
// the metric pickers, the metric summary, the drill-down, the probe panel,
// the glossary): its catalogue title, and one tooltip with the title, the
// stored key, the one-line meaning, the formula and which way is good. One
// routine, so a tooltip reads the same on every panel.
#pragma once

#include <QString>

namespace mlk {

struct MetricInfo;

// The catalogue title ("K3 KL (rollout ‖ train)"); the key itself for a
// metric the catalogue does not know (an older or newer database's).
QString metricTitle(const QString& name);
// "lower is better", "higher is better" or "no good direction: read it beside
// the others", from MetricInfo::better.
QString metricDirectionText(const MetricInfo& info);
// Rich text for a tooltip: title and key, meaning, formula (when there is
// one), unit, direction. For an unknown metric: the key and a line saying the
// catalogue has no entry for it. `lead`, when given, is a first line saying
// what is shown of the metric there ("Mean over the run's steps of:").
QString metricToolTip(const QString& name, const QString& lead = {});
// The same text as paragraphs, for a page that lists many metrics (the
// glossary) rather than a tooltip.
QString metricHelpHtml(const QString& name);

}  // namespace mlk
