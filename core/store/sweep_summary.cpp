#include "core/store/sweep_summary.h"

#include <map>
#include <set>
#include <stdexcept>

namespace mlk {

RunSeries read_run_series(Store& store, int64_t run_id) {
    RunSeries s;
    s.reward_mean = store.metric_series(run_id, "reward_mean");
    s.grad_norm = store.metric_series(run_id, "grad_norm");
    s.k3_kl = store.metric_series(run_id, "k3_kl");
    s.f_at_2 = store.metric_series(run_id, "F@2");
    return s;
}

RunOutcome stored_run_outcome(Store& store, int64_t run_id, const VerdictThresholds& t) {
    const std::optional<RunInfo> info = store.run_info(run_id);
    if (!info) throw StoreError("run " + std::to_string(run_id) + " does not exist");
    RunOutcome o = run_outcome(read_run_series(store, run_id), t, info->status == run_status_name(RunStatus::diverged));
    o.run_id = run_id;
    o.seed = (int64_t)info->seed;
    o.status = info->status;
    return o;
}

int SweepSummary::runs_stored() const {
    int n = 0;
    for (const auto& c : stats) n += (int)c.runs.size();
    return n;
}

int SweepSummary::runs_in_progress() const {
    int n = 0;
    for (const auto& c : configs) n += c.in_progress;
    return n;
}

SweepSummary summarize_sweep(Store& store, int64_t sweep_id, const VerdictThresholds& t, const std::string& baseline) {
    const std::optional<std::string> spec_text = store.sweep_spec_json(sweep_id);
    if (!spec_text) throw StoreError("sweep " + std::to_string(sweep_id) + " does not exist");
    const nlohmann::json spec = nlohmann::json::parse(*spec_text);
    SweepSummary out;
    out.sweep_id = sweep_id;
    out.thresholds = t;
    out.seeds = spec.value("seeds", 0);
    out.steps = spec.value("steps", 0);
    const nlohmann::json& configs = spec.at("configs");
    // A key differs when some configuration's value (or absence) is not the first's.
    std::set<std::string> differing;
    for (const auto& c : configs)
        for (const auto& [k, v] : c.at("config").items())
            for (const auto& other : configs)
                if (!other.at("config").contains(k) || other.at("config").at(k) != v) differing.insert(k);
    std::map<std::string, std::vector<RunOutcome>> by_name;
    std::map<std::string, int> in_progress;
    for (const SweepRun& r : store.sweep_runs(sweep_id)) {
        RunOutcome o = stored_run_outcome(store, r.run_id, t);
        if (o.status == run_status_name(RunStatus::running) || o.status == run_status_name(RunStatus::paused)) {
            ++in_progress[r.config_name];
            continue;
        }
        o.seed = r.seed;  // the slot's seed, as the sweep counts them
        by_name[r.config_name].push_back(std::move(o));
    }
    std::vector<std::pair<std::string, std::vector<RunOutcome>>> groups;
    std::string names;
    for (const auto& c : configs) {
        SweepConfigInfo info{c.at("name").get<std::string>(), c.value("preset", std::string()), {}};
        info.in_progress = in_progress[info.name];
        for (const auto& k : differing)
            if (c.at("config").contains(k)) info.differs[k] = c.at("config").at(k);
        std::vector<RunOutcome> runs = std::move(by_name[info.name]);
        std::sort(runs.begin(), runs.end(), [](const auto& a, const auto& b) { return a.seed < b.seed; });
        if (!baseline.empty() && info.name == baseline) out.baseline = out.configs.size();
        names += (names.empty() ? "" : ", ") + info.name;
        groups.emplace_back(info.name, std::move(runs));
        out.configs.push_back(std::move(info));
    }
    if (!baseline.empty() && (out.configs.empty() || out.configs[out.baseline].name != baseline))
        throw std::invalid_argument("baseline '" + baseline + "' is not a configuration of sweep " +
                                    std::to_string(sweep_id) + "; its configurations: " + names);
    out.stats = summarize_configs(std::move(groups), out.baseline);
    return out;
}

}  // namespace mlk
