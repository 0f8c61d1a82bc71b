// `show`: one run's metadata, its settings that differ from the defaults,
// statistics of its main metrics (run_stats: best by each metric's
// direction), its verdicts (core/metrics/verdicts.h; thresholds from
// `--verdict key=value`), and its checkpoints.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/metrics/run_stats.h"
#include "core/metrics/verdicts.h"
#include "core/store/sweep_summary.h"

namespace mlk::cli {

namespace {

constexpr int kLastN = 10;

// The metrics `show` summarises: the key charts, then a few that say what
// kind of run it is.
std::vector<std::string> shown_metrics() {
    std::vector<std::string> v = key_metric_names();
    for (const char* n : {"accuracy", "entropy", "router_diff_token"}) v.emplace_back(n);
    return order_metric_names(v);
}

}  // namespace

int cmd_show(const Argv& argv) {
    Spec spec;
    spec.values = {"--db", "--verdict"};
    spec.repeatable = {"--verdict"};
    spec.positional = "RUN id";
    spec.min_positional = spec.max_positional = 1;
    const Args a = parse_args(argv, spec);
    const int64_t id = parse_run_id("RUN", a.positional[0]);
    const VerdictThresholds th = parse_verdict_options(a);
    Store store = open_existing_store(a);
    const auto info = store.run_info(id);
    if (!info)
        throw UsageError("RUN: run " + std::to_string(id) + " is not in " + store.path() +
                         " (see `mismatch-lab-cli runs`)");
    std::printf("run %lld  %s\n  preset %s  status %s  steps %lld  seed %llu  created %s  app %s\n", (long long)id,
                info->name.c_str(), info->preset.c_str(), info->status.c_str(), (long long)info->steps,
                (unsigned long long)info->seed, info->created.c_str(), info->app_version.c_str());
    if (!info->machine.empty()) std::printf("  ran on %s\n", info->machine.c_str());
    if (!info->error.empty()) std::printf("  error: %s\n", info->error.c_str());
    if (info->status == kInterruptedStatus)
        std::printf("  its process is gone: `mismatch-lab-cli resume %lld --db %s` continues it\n", (long long)id,
                    store.path().c_str());
    if (!info->notes.empty()) std::printf("  notes: %s\n", info->notes.c_str());
    const Config defaults;
    const Config c = stored_config_from_json(nlohmann::json::parse(info->config_json));
    std::printf("configuration (differences from the defaults):\n");
    for (const auto& d : config_diff(defaults, c)) std::printf("  %-34s %s\n", d.key.c_str(), d.b.c_str());
    // As the report's "Settings without effect" says them: a changed setting the run did not read.
    for (const std::string& w : config_warnings(c)) std::printf("  without effect: %s\n", w.c_str());

    bool header = false;
    for (const auto& n : shown_metrics()) {
        const auto series = store.metric_series(id, n);
        if (series.empty()) continue;
        if (!header) {
            std::printf("metrics: %-22s %12s %12s %12s %6s %12s %8s\n", "", "first", "final", "best", "step",
                        ("last " + std::to_string(kLastN) + " mean").c_str(), "NaN/Inf");
            header = true;
        }
        const RunStats st = run_stats(series, n, kLastN);
        const bool has_best = st.best_step >= 0;
        std::printf("  %-30s %12s %12s %12s %6s %12s %8d\n", n.c_str(), value_text(series.front().second).c_str(),
                    value_text(st.final_value).c_str(), has_best ? value_text(st.best).c_str() : "-",
                    has_best ? std::to_string(st.best_step).c_str() : "-", value_text(st.mean_last).c_str(),
                    st.nonfinite());
    }
    if (header) {
        std::printf(
            "  (best: the highest or lowest finite value, as the metric's direction says; `metrics` lists them)\n");
        const RunOutcome o = stored_run_outcome(store, id, th);
        std::printf("collapse:   %s\n", verdict_text(o.verdicts.collapse).c_str());
        std::printf("divergence: %s\n", verdict_text(o.verdicts.divergence).c_str());
        std::printf("blow-up:    %s\n", verdict_text(o.verdicts.blowup).c_str());
        std::printf("warnings:   F@2: %s\n            grad_norm: %s\n", verdict_text(o.verdicts.f2_warning).c_str(),
                    verdict_text(o.verdicts.grad_fall).c_str());
    }
    for (const auto& ck : store.checkpoints(id))
        std::printf("checkpoint step %lld: %s\n", (long long)ck.step + 1, ck.path.c_str());
    return 0;
}

}  // namespace mlk::cli
