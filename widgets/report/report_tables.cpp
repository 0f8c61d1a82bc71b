// The report's tables: configuration (all of one run, or what differs from the
// baseline), the environment that generated it, and the raw per-step data.
#include <QSysInfo>
#include <QtGlobal>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <thread>

#include <sqlite3.h>

#include "core/config/profiles.h"
#include "core/config/config.h"
#include "core/engines/machine.h"
#include "core/model/params.h"
#include "core/store/export.h"
#include "kernels/cpu/features.h"
#include "kernels/kernels.h"
#include "widgets/report/report_builder.h"

namespace mlk::report_detail {

namespace {

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

}  // namespace

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
            "bold (and shaded, as in the workbench) with the default beside them.</p>\n");
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
            h += differs ? QStringLiteral(
                               "<tr><td class=\"key\">%1</td><td>%2</td><td class=\"changed\"><b>%3</b></td>"
                               "<td>%4</td></tr>\n")
                               .arg(esc(k.key), esc(k.label), esc(v), esc(dv))
                         : QStringLiteral("<tr><td class=\"key\">%1</td><td>%2</td><td>%3</td><td></td></tr>\n")
                               .arg(esc(k.key), esc(k.label), esc(v));
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
                                   : QStringLiteral("<td class=\"changed\"><b>%1</b></td>").arg(esc(v));
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
        "report, which need not be those that made the runs.</p>\n");
    h += table_open();
    auto row = [&](const QString& k, const QString& v) {
        h += QStringLiteral("<tr><th width=\"28%\">%1</th><td>%2</td></tr>\n").arg(esc(k), esc(v));
    };
    row(QStringLiteral("Application"), QStringLiteral("Mismatch Lab ") + QStringLiteral(MLK_VERSION));
    row(QStringLiteral("CPU"), qs(cpu_model_name()));
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
    h += QStringLiteral("<h3>Numerics and kernels per run</h3>\n") + table_open() +
         QStringLiteral(
             "<tr><th>run</th><th>model</th><th>rollout numerics</th><th>training numerics</th>"
             "<th>batch-invariant kernels</th><th>kernel threads</th><th>routing replay</th></tr>\n");
    for (const auto& r : runs) {
        if (!r.cfg) {
            h += QStringLiteral("<tr><td>%1</td><td colspan=\"6\">configuration unreadable</td></tr>\n")
                     .arg(esc(r.label));
            continue;
        }
        const Config& c = *r.cfg;
        // A built model (size "custom") names its dimensions: the name alone would hide them.
        const ModelConfig m = model_config_of(c);
        const std::string model =
            m.size == "custom" ? m.preset_name() + " (" + architecture_text(m) + ")" : m.preset_name();
        // The profile (with its one precision where that is read) and what
        // each rounding point resolves to: a named profile does not read
        // `precision`, nor does a simple one whose points are all set.
        const std::vector<NumericsKeyWithoutEffect> unread = numerics_keys_without_effect(c);
        const auto numerics = [&](const char* engine, const RoundingPoints& p, Dtype precision, const EngineNumerics& n,
                                  bool kv) {
            std::string name(enum_name(p.profile));
            const std::string key = std::string(engine) + ".precision";
            if (std::none_of(unread.begin(), unread.end(), [&](const auto& u) { return u.key == key; }))
                name += " " + std::string(dtype_name(precision));
            return esc(name) + QStringLiteral("<br/><span class=\"note\">%1</span>").arg(esc(numerics_text(n, kv)));
        };
        h += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td></tr>\n")
                 .arg(esc(r.label), esc(model),
                      numerics("rollout", c.rollout, c.rollout.precision, rollout_numerics(c), true),
                      numerics("train", c.train, c.train.precision, train_numerics(c), false),
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
                    const double v = at[c] >= 0 ? t.values[s][at[c]] : std::numeric_limits<double>::quiet_NaN();
                    h += QStringLiteral("<td class=\"num\">%1</td>").arg(num(v, 6));
                }
                h += QStringLiteral("</tr>\n");
            }
            h += QStringLiteral("</table>\n");
        }
    }
    return h;
}

}  // namespace mlk::report_detail
