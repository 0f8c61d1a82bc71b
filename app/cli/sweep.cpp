// `sweep`: presets x a grid of settings, each configuration with seeds
// 1..N, run one after another into one store. The same command again finds
// its sweep by the hash of the normalised spec, skips the runs that ended
// and resumes (or restarts) the ones a kill or a stop left behind.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/drive.h"
#include "core/config/presets.h"
#include "core/config/sweep.h"
#include "core/metrics/verdicts.h"
#include "core/store/sweep_summary.h"
#include "core/rl/base_policy.h"

namespace mlk::cli {

namespace {

int list_families(bool json) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& f : sweep_families()) {
        if (json)
            all.push_back({{"name", f.name},
                           {"description", f.description},
                           {"presets", f.spec.presets},
                           {"seeds", f.spec.seeds},
                           {"steps", f.spec.steps}});
        else std::printf("%-18s %s\n", f.name.c_str(), f.description.c_str());
    }
    if (json) std::cout << all.dump() << "\n";
    return 0;
}

nlohmann::ordered_json interval_json(const Interval& ci) {
    return nlohmann::ordered_json::array({json_number(ci.lo), json_number(ci.hi)});
}

// The verdict table of a sweep, read back from the store: every run of it,
// this invocation's and earlier ones'. `grid`: each configuration's grid
// settings as the command line named them (empty for `--summary`, which
// shows the settings in which the configurations differ).
void print_summary(Store& store, int64_t sweep_id, const VerdictThresholds& th, const std::string& baseline, bool json,
                   const std::map<std::string, nlohmann::ordered_json>& grid, double wall_seconds) {
    const SweepSummary sum = summarize_sweep(store, sweep_id, th, baseline);
    nlohmann::ordered_json out = {{"sweep_id", sweep_id},
                                  {"seeds", sum.seeds},
                                  {"steps", sum.steps},
                                  {"baseline", sum.configs.empty() ? "" : sum.configs[sum.baseline].name},
                                  {"thresholds", verdict_thresholds_json(th)},
                                  {"wall_seconds", json_number(wall_seconds)},
                                  {"configs", nlohmann::ordered_json::array()}};
    if (!json)
        std::printf("\n%4s %5s %5s %5s %5s  %-17s %-7s %-7s %-8s %-28s %s\n", "runs", "coll.", "div.", "blow", "warn",
                    "final reward", "best", "AUC", "coll. at", "delta final [95% CI]", "configuration");
    for (size_t i = 0; i < sum.configs.size(); ++i) {
        const SweepConfigInfo& info = sum.configs[i];
        const ConfigSummary& c = sum.stats[i];
        const auto g = grid.find(info.name);
        out["configs"].push_back({{"name", info.name},
                                  {"preset", info.preset},
                                  {"settings", g != grid.end() ? g->second : info.differs},
                                  {"runs", (int)c.runs.size()},
                                  {"collapsed", c.collapsed},
                                  {"diverged", c.diverged},
                                  {"blown_up", c.blown_up},
                                  {"warned", c.warned},
                                  {"recovered_dips", c.recovered_dips},
                                  {"final_reward_mean", json_number(c.final_reward.mean)},
                                  {"final_reward_std", json_number(c.final_reward.std)},
                                  {"best_reward_mean", json_number(c.best_reward.mean)},
                                  {"auc_mean", json_number(c.auc.mean)},
                                  {"auc_std", json_number(c.auc.std)},
                                  {"median_collapse_step", json_number(c.median_collapse_step)},
                                  {"median_warning_lead", json_number(c.median_warning_lead)},
                                  {"baseline", c.baseline},
                                  {"delta_final_reward", json_number(c.delta_final)},
                                  {"delta_final_reward_ci", interval_json(c.delta_final_ci)},
                                  {"delta_auc", json_number(c.delta_auc)},
                                  {"delta_auc_ci", interval_json(c.delta_auc_ci)}});
        if (json) continue;
        const std::string spread = spread_text(c.final_reward, "+-"),
                          delta = delta_text(c.delta_final, c.delta_final_ci);
        std::printf("%4d %5d %5d %5d %5d  %-17s %-7s %-7s %-8s %-28s %s\n", (int)c.runs.size(), c.collapsed, c.diverged,
                    c.blown_up, c.warned, spread.empty() ? "-" : spread.c_str(),
                    value_text(c.best_reward.mean, 3).c_str(), value_text(c.auc.mean, 3).c_str(),
                    std::isfinite(c.median_collapse_step) ? value_text(c.median_collapse_step, 4).c_str() : "-",
                    c.baseline      ? "(baseline)"
                    : delta.empty() ? "-"
                                    : delta.c_str(),
                    info.name.c_str());
    }
    if (json) {
        std::cout << out.dump() << "\n";
        return;
    }
    std::printf(
        "final reward: mean +- sd over seeds of each run's last-%d-step mean; best: the highest %d-step mean;\n"
        "AUC: mean reward over all steps; coll. at: median step where the collapses began; warn: runs with\n"
        "an R3 early warning; delta: against the baseline, with a %d-resample bootstrap interval.\n",
        th.window, th.window, kBootstrapResamples);
    std::printf("%s\n%s\n%s\n%s\n", collapse_rule_text(th).c_str(), divergence_rule_text().c_str(),
                blowup_rule_text(th).c_str(), warning_rule_text(th).c_str());
    if (std::isfinite(wall_seconds)) std::printf("wall time: %s\n", eta_text(wall_seconds).c_str());
}

}  // namespace

int cmd_sweep(const Argv& argv) {
    Spec spec_opts;
    spec_opts.values = {"--db",        "--preset", "--grid",    "--seeds",    "--steps",
                        "--cache-dir", "--family", "--verdict", "--baseline", "--summary"};
    spec_opts.repeatable = {"--preset", "--grid", "--verdict"};
    spec_opts.flags = {"--json", "--list"};
    const Args a = parse_args(argv, spec_opts);
    const bool json = a.has("--json");
    if (a.has("--list")) return list_families(json);
    const VerdictThresholds th = parse_verdict_options(a);
    const std::string baseline = a.has("--baseline") ? a.get("--baseline") : std::string();
    if (a.has("--summary")) {
        for (const char* o : {"--preset", "--grid", "--family", "--seeds", "--steps"})
            if (a.has(o))
                throw UsageError(std::string("--summary: reads a stored sweep; ") + o + " is not allowed with it");
        const int64_t id = parse_integer("--summary", a.get("--summary"), 1, INT64_MAX);
        Store store = open_existing_store(a);
        if (!store.sweep_spec_json(id))
            throw UsageError("--summary: sweep " + std::to_string(id) + " is not in " + store.path());
        try {
            print_summary(store, id, th, baseline, json, {}, NAN);
        } catch (const std::invalid_argument& e) {
            throw UsageError(std::string("--baseline: ") + e.what());
        }
        return 0;
    }

    // Everything is checked before the store is opened: bad input writes nothing.
    SweepSpec spec;
    if (a.has("--family")) {
        if (a.has("--preset") || a.has("--grid"))
            throw UsageError("--family: a family brings its own presets and grid; allowed with it: --seeds, --steps");
        spec = sweep_family(a.get("--family")).spec;
    }
    if (a.has("--preset")) spec.presets = a.all("--preset");
    for (const auto& g : a.all("--grid")) add_grid_option(spec, g);
    if (a.has("--seeds")) spec.seeds = (int)parse_integer("--seeds", a.get("--seeds"), 1, kMaxSweepSeeds);
    spec.steps = parse_steps(a, spec.steps);
    const std::vector<SweepConfig> configs = expand_sweep(spec, preset_named);
    if (!baseline.empty() &&
        std::none_of(configs.begin(), configs.end(), [&](const SweepConfig& c) { return c.name == baseline; })) {
        std::string names;
        for (const auto& c : configs) names += (names.empty() ? "" : ", ") + c.name;
        throw UsageError("--baseline: '" + baseline +
                         "' is not a configuration of this sweep; its configurations: " + names);
    }
    for (const std::string& w : sweep_warnings(spec, configs)) std::fprintf(stderr, "warning: --grid %s\n", w.c_str());
    const nlohmann::json identity = sweep_identity(configs, spec);
    const std::string hash = sweep_hash(identity);
    db_path(a);
    const std::string cache = directory_option(a, "--cache-dir", default_cache_dir());

    Store store = writable(open_store(a));
    const int64_t sweep_id = store.open_sweep(hash, identity.dump());
    std::map<std::pair<std::string, int64_t>, int64_t> slots;  // (config name, seed) -> run id
    for (const SweepRun& r : store.sweep_runs(sweep_id)) slots[{r.config_name, r.seed}] = r.run_id;
    const int total = (int)configs.size() * spec.seeds;
    if (!json)
        std::printf("sweep %lld (%s): %zu configurations x %d seeds = %d runs into %s\n", (long long)sweep_id,
                    hash.c_str(), configs.size(), spec.seeds, total, store.path().c_str());
    std::fflush(stdout);

    RunCallbacks cb = cli_callbacks();
    using Clock = std::chrono::steady_clock;
    const auto sweep_start = Clock::now();
    double run_seconds = 0;
    int done = 0, ran = 0, failed = 0;
    bool stopped = false;
    for (const SweepConfig& sc : configs) {
        for (int seed = 1; seed <= spec.seeds && !stopped; ++seed) {
            const Config cfg = sweep_run_config(sc, spec, seed);
            const std::string name = sweep_run_name(sc, seed);
            const auto slot = slots.find({sc.name, seed});
            int64_t id = 0;  // 0: no run yet
            std::string action;
            if (slot != slots.end()) {
                id = slot->second;
                const std::optional<RunInfo> info = store.run_info(id);
                if (info && sweep_slot_ended(info->status)) action = "skipped (" + info->status + " before)";
                else if (info && run_status_live(info->status)) action = "skipped (another process is writing it)";
                else if (!info) id = 0;  // deleted since: run it anew
            }
            const auto t0 = Clock::now();
            if (action.empty()) {
                try {
                    std::optional<RunController> rc;
                    if (id) {
                        rc.emplace(RunController::resume(store, id, cb, 0, cache));
                        const int64_t from = *rc->resumed_from();
                        action = from < 0 ? "restarted (no step checkpoint)"
                                          : "resumed from the checkpoint of step " + std::to_string(from + 1);
                    } else {
                        rc.emplace(
                            RunController::create(store, cfg, sc.preset, name, cache, cb, 0,
                                                  SweepRun{sweep_id, 0, sc.name, seed, sweep_run_tags(sc.name, seed)}));
                        id = rc->run_id();
                        action = "ran";
                    }
                    drive(*rc, json, false);
                } catch (const StoppedInWarmup& e) {
                    id = e.run_id;
                    action = "stopped in the warm-up";
                } catch (const WarmupCancelled&) {
                    action = "stopped in the warm-up";
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "error: %s %s: %s\n", sc.name.c_str(),
                                 ("seed=" + std::to_string(seed)).c_str(), e.what());
                    action = "failed";
                }
                run_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
                ++ran;
            }
            ++done;
            RunOutcome o;
            o.status = "failed";
            if (id) o = stored_run_outcome(store, id, th);
            if (!sweep_slot_ended(o.status)) ++failed;
            const double eta = ran ? run_seconds / ran * (total - done) : NAN;
            if (json) {
                std::cout << nlohmann::ordered_json{{"run_id", id ? nlohmann::json(id) : nlohmann::json()},
                                                    {"name", name},
                                                    {"config", sc.name},
                                                    {"seed", seed},
                                                    {"action", action},
                                                    {"status", o.status},
                                                    {"final_reward", json_number(o.final_reward)},
                                                    {"collapsed", o.verdicts.collapse.detected},
                                                    {"collapse_step", o.verdicts.collapse.detected
                                                                          ? nlohmann::json(o.verdicts.collapse.step)
                                                                          : nlohmann::json()},
                                                    {"diverged", o.verdicts.divergence.detected},
                                                    {"blown_up", o.verdicts.blowup.detected},
                                                    {"warned", o.warned()},
                                                    {"done", done},
                                                    {"total", total}}
                                 .dump()
                          << "\n";
            } else {
                std::printf("[%d/%d] run %s %s: %s, %s, final reward %s  ETA %s\n", done, total,
                            id ? std::to_string(id).c_str() : "-", name.c_str(), action.c_str(), o.status.c_str(),
                            value_text(o.final_reward, 4).c_str(), eta_text(eta).c_str());
            }
            std::fflush(stdout);
            if (stop_requested()) stopped = true;
        }
    }

    std::map<std::string, nlohmann::ordered_json> grid;
    for (const SweepConfig& sc : configs) {
        nlohmann::ordered_json settings = nlohmann::ordered_json::object();
        for (const auto& [k, v] : sc.settings) settings[k] = config_get(sc.config, k);
        grid[sc.name] = settings;
    }
    print_summary(store, sweep_id, th, baseline, json, grid,
                  std::chrono::duration<double>(Clock::now() - sweep_start).count());
    if (stopped)
        std::fprintf(stderr, "sweep %lld stopped; the same command goes on where it stopped\n", (long long)sweep_id);
    return stopped ? kExitStopped : failed > 0 ? 1 : 0;
}

}  // namespace mlk::cli
