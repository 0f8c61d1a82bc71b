// `sweep`: presets x a grid of settings, each configuration with seeds
// 1..N, run one after another into one store. The same command again finds
// its sweep by the hash of the normalised spec, skips the runs that ended
// and resumes (or restarts) the ones a kill or a stop left behind.
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
#include "core/rl/base_policy.h"

namespace mlk::cli {

namespace {

nlohmann::json json_number(double v) {
    if (std::isfinite(v)) return v;
    return nullptr;
}

std::string eta_text(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    char buf[32];
    if (seconds < 90) std::snprintf(buf, sizeof buf, "%.0fs", seconds);
    else std::snprintf(buf, sizeof buf, "%.0fm%02.0fs", std::floor(seconds / 60), std::fmod(seconds, 60));
    return buf;
}

// What the store says of one run: its status and the verdicts every reader uses.
struct RunOutcome {
    std::string status;
    double final_reward = RunStats::kNone, best_reward = RunStats::kNone;
    bool collapsed = false, diverged = false;
};

RunOutcome outcome_of(Store& store, int64_t id) {
    RunOutcome o;
    const std::optional<RunInfo> info = store.run_info(id);
    o.status = info ? info->status : "missing";
    const auto reward = store.metric_series(id, "reward_mean");
    const RunStats st = run_stats(reward, "reward_mean");
    o.final_reward = st.final_value;
    o.best_reward = st.best;
    o.collapsed = detect_collapse(reward).detected;
    o.diverged = o.status == run_status_name(RunStatus::diverged) ||
                 detect_divergence(store.metric_series(id, "grad_norm"), store.metric_series(id, "k3_kl")).detected;
    return o;
}

// A run that ended and is kept as it is; the others are run again.
bool ended(const std::string& status) {
    return status == run_status_name(RunStatus::finished) || status == run_status_name(RunStatus::diverged);
}

int list_families(bool json) {
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (const auto& f : sweep_families()) {
        if (json)
            all.push_back({{"name", f.name}, {"description", f.description}, {"presets", f.spec.presets},
                           {"seeds", f.spec.seeds}, {"steps", f.spec.steps}});
        else
            std::printf("%-18s %s\n", f.name.c_str(), f.description.c_str());
    }
    if (json) std::cout << all.dump() << "\n";
    return 0;
}

}  // namespace

int cmd_sweep(const Argv& argv) {
    Spec spec_opts;
    spec_opts.values = {"--db", "--preset", "--grid", "--seeds", "--steps", "--cache-dir", "--family"};
    spec_opts.repeatable = {"--preset", "--grid"};
    spec_opts.flags = {"--json", "--list"};
    const Args a = parse_args(argv, spec_opts);
    const bool json = a.has("--json");
    if (a.has("--list")) return list_families(json);

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
    const nlohmann::json identity = sweep_identity(configs, spec);
    const std::string hash = sweep_hash(identity);
    db_path(a);
    const std::string cache = directory_option(a, "--cache-dir", default_cache_dir());

    Store store = open_store(a);
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
    double run_seconds = 0;
    int done = 0, ran = 0, failed = 0;
    bool stopped = false;
    for (const SweepConfig& sc : configs) {
        for (int seed = 1; seed <= spec.seeds && !stopped; ++seed) {
            const Config cfg = sweep_run_config(sc, spec, seed);
            const std::string name = default_run_name(sc.preset, preset_named(sc.preset), cfg);
            const auto slot = slots.find({sc.name, seed});
            int64_t id = 0;  // 0: no run yet
            std::string action;
            if (slot != slots.end()) {
                id = slot->second;
                const std::optional<RunInfo> info = store.run_info(id);
                if (info && ended(info->status)) action = "skipped (" + info->status + " before)";
                else if (info && (info->status == "running" || info->status == "paused"))
                    action = "skipped (another process is writing it)";
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
                        const nlohmann::json tags = {sc.name, "seed=" + std::to_string(seed)};
                        rc.emplace(RunController::create(store, cfg, sc.preset, name, cache, cb, 0,
                                                         SweepRun{sweep_id, 0, sc.name, seed, tags.dump()}));
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
                    std::fprintf(stderr, "error: %s %s: %s\n", sc.name.c_str(), ("seed=" + std::to_string(seed)).c_str(),
                                 e.what());
                    action = "failed";
                }
                run_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
                ++ran;
            }
            ++done;
            const RunOutcome o = id ? outcome_of(store, id) : RunOutcome{"failed"};
            if (!ended(o.status)) ++failed;
            const double eta = ran ? run_seconds / ran * (total - done) : NAN;
            if (json) {
                std::cout << nlohmann::ordered_json{{"run_id", id ? nlohmann::json(id) : nlohmann::json()},
                                                    {"name", name},
                                                    {"config", sc.name},
                                                    {"seed", seed},
                                                    {"action", action},
                                                    {"status", o.status},
                                                    {"final_reward", json_number(o.final_reward)},
                                                    {"collapsed", o.collapsed},
                                                    {"diverged", o.diverged},
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

    // The summary reads every run of the sweep back from the store, so a
    // resumed sweep reports the runs of earlier invocations too.
    slots.clear();
    for (const SweepRun& r : store.sweep_runs(sweep_id)) slots[{r.config_name, r.seed}] = r.run_id;
    nlohmann::ordered_json summary = {{"sweep_id", sweep_id}, {"configs", nlohmann::ordered_json::array()}};
    for (const SweepConfig& sc : configs) {
        std::vector<double> finals, bests;
        int collapsed = 0, diverged = 0;
        for (int seed = 1; seed <= spec.seeds; ++seed) {
            const auto slot = slots.find({sc.name, seed});
            if (slot == slots.end()) continue;
            const RunOutcome o = outcome_of(store, slot->second);
            finals.push_back(o.final_reward);
            bests.push_back(o.best_reward);
            collapsed += o.collapsed;
            diverged += o.diverged;
        }
        nlohmann::ordered_json settings = nlohmann::ordered_json::object();
        for (const auto& [k, v] : sc.settings) settings[k] = config_get(sc.config, k);
        const Spread f = spread(finals), b = spread(bests);
        summary["configs"].push_back({{"name", sc.name},
                                      {"preset", sc.preset},
                                      {"settings", settings},
                                      {"runs", (int)finals.size()},
                                      {"collapsed", collapsed},
                                      {"diverged", diverged},
                                      {"final_reward_mean", json_number(f.mean)},
                                      {"final_reward_std", json_number(f.std)},
                                      {"best_reward_mean", json_number(b.mean)}});
        if (!json)
            std::printf("%-40s runs %d  collapsed %d  diverged %d  final reward %s +- %s  best %s\n", sc.name.c_str(),
                        (int)finals.size(), collapsed, diverged, value_text(f.mean, 4).c_str(),
                        value_text(f.std, 3).c_str(), value_text(b.mean, 4).c_str());
    }
    if (json) std::cout << summary.dump() << "\n";
    if (stopped)
        std::fprintf(stderr, "sweep %lld stopped; the same command goes on where it stopped\n", (long long)sweep_id);
    return failed > 0 && !stopped ? 1 : 0;
}

}  // namespace mlk::cli
