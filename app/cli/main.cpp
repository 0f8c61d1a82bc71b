// mismatch-lab-cli: the core without widgets, for scripts, CI and sweeps.
// Exit codes: 0 ok, 2 bad input, 1 failure.
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>

#include "app/cli/args.h"
#include "core/model/checkpoint.h"
#include "core/config/config.h"
#include "core/model/model.h"
#include "core/store/export.h"
#include "core/config/presets.h"
#include "core/rl/probe.h"
#include "core/rl/run_controller.h"

#ifdef MLK_WITH_REPORTS
namespace mlk::cli {
int cmd_report(const std::vector<std::string>& argv);  // app/cli_report.cpp (needs Qt)
}
#endif

using namespace mlk;
using cli::Args;
using cli::UsageError;

namespace {

nlohmann::json read_json_file(const std::string& path, const char* what) {
    std::ifstream in(path);
    if (!in) throw UsageError(std::string(what) + ": cannot open " + path);
    try {
        return nlohmann::json::parse(in);
    } catch (const nlohmann::json::parse_error& e) {
        throw UsageError(std::string(what) + ": " + path + " is not valid JSON: " + e.what());
    }
}

// preset < --config FILE < --set key=value. A preset is an RL preset
// (resources/presets) or a model preset name, which sets model.kind and
// model.size.
Config build_config(const Args& a) {
    Config c;
    if (a.has("--preset")) {
        const std::string p = a.get("--preset");
        bool model = false;
        for (const auto& name : model_preset_names()) model |= name == p;
        if (model) {
            ModelConfig m = model_preset(p);
            c.model.kind = m.kind;
            c.model.size = m.size == "tiny" ? ModelSize::tiny : ModelSize::small;
        } else if (find_preset(p)) {
            c = preset_config(p);
        } else {
            std::string allowed;
            for (const auto& name : model_preset_names()) allowed += name + ", ";
            for (const auto& pr : presets()) allowed += pr.name + ", ";
            allowed.resize(allowed.size() - 2);
            throw ConfigError("--preset: '" + p + "' is unknown; allowed: " + allowed);
        }
    }
    if (a.has("--config")) c = config_merge_json(c, read_json_file(a.get("--config"), "--config"));
    for (const auto& kv : a.all("--set")) apply_set(c, kv);
    validate(c);
    return c;
}

std::vector<float> initial_params(const Config& c, const Args& a, ModelConfig* model_out) {
    ModelConfig m = model_config_of(c);
    if (a.has("--checkpoint")) {
        LoadedCheckpoint ck = load_checkpoint(a.get("--checkpoint"));
        if (ck.model.preset_name() != m.preset_name() || ck.model.hidden_size != m.hidden_size ||
            ck.model.num_layers != m.num_layers || ck.model.vocab_size != m.vocab_size)
            throw UsageError("--checkpoint: " + a.get("--checkpoint") + " holds a " + ck.model.preset_name() +
                             " model but the configuration asks for " + m.preset_name() +
                             " (set model.kind / model.size to match)");
        *model_out = ck.model;
        return ck.params;
    }
    ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), (uint64_t)c.seed);
    *model_out = m;
    return params;
}

int cmd_probe(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--preset", "--set", "--config", "--checkpoint", "--dump"}, {"--json"});
    Config c = build_config(a);
    ModelConfig m;
    std::vector<float> params = initial_params(c, a, &m);
    ProbeResult r = run_probe(c, params);
    nlohmann::json s = probe_summary_json(r);
    if (a.has("--dump")) {
        std::ofstream out(a.get("--dump"));
        if (!out) throw std::runtime_error("--dump: cannot write " + a.get("--dump"));
        out << probe_dump_json(r).dump() << "\n";
    }
    if (a.has("--json")) {
        std::cout << s.dump() << "\n";
    } else {
        std::printf("model %s  kernels %s  rollout %s  train %s  R3 %s\n", m.preset_name().c_str(),
                    c.kernels.batch_invariant ? "batch-invariant" : "fast",
                    std::string(dtype_name(c.rollout.precision)).c_str(),
                    std::string(dtype_name(c.train.precision)).c_str(),
                    std::string(enum_name(c.moe.routing_replay)).c_str());
        for (const char* key :
             {"tokens", "bitwise_equal", "k3_kl", "kl", "logp_abs_diff_mean", "logp_abs_diff_max", "F@1.1", "F@1.5",
              "F@2", "F@5", "F@10", "router_diff_router", "router_diff_token", "router_diff_sequence"})
            std::printf("  %-22s %s\n", key, s[key].dump().c_str());
    }
    return 0;
}

int cmd_checkpoint(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--preset", "--out", "--set", "--config"}, {});
    Config c = build_config(a);
    const std::string out = a.require("--out");
    ModelConfig m = model_config_of(c);
    ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), (uint64_t)c.seed);
    save_checkpoint(out, m, layout, params.data(), {{"seed", std::to_string(c.seed)}, {"source", "initial weights"}});
    std::printf("wrote %s/model.safetensors and %s/config.json (%s, %lld parameters)\n", out.c_str(), out.c_str(),
                m.preset_name().c_str(), (long long)layout.total);
    return 0;
}

// ---- RL runs -------------------------------------------------------------

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

void print_warnings(const Config& c) {
    for (const auto& w : config_warnings(c)) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

std::string fmt_eta(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0) return "?";
    char buf[32];
    if (seconds < 90) std::snprintf(buf, sizeof buf, "%.0fs", seconds);
    else std::snprintf(buf, sizeof buf, "%.0fm%02.0fs", std::floor(seconds / 60), std::fmod(seconds, 60));
    return buf;
}

nlohmann::json json_number(double v) {
    if (std::isfinite(v)) return v;
    return nullptr;
}

// Steps a run to its end (or a stop signal), printing one line per step.
int drive(RunController& rc, bool json) {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const int64_t first = rc.next_step();
    RunStatus status = RunStatus::finished;
    try {
        while (!rc.done()) {
            if (g_stop) {
                status = RunStatus::stopped;
                break;
            }
            StepRecord rec = rc.step();
            const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
            const double per_step = elapsed / (double)(rec.step - first + 1);
            const double eta = per_step * (double)(rc.total_steps() - rec.step - 1);
            if (json) {
                nlohmann::ordered_json j = {{"step", rec.step}};
                for (const auto& [name, v] : rec.metrics) j[name] = json_number(v);
                std::cout << j.dump() << "\n" << std::flush;
            } else {
                auto m = [&](const char* n) { return RlSession::metric(rec, n); };
                std::printf("step %lld/%lld  reward %.3f  k3_kl %.3e  grad_norm %.3f  F@2 %.3e  tok/s %.0f  ETA %s\n",
                            (long long)rec.step + 1, (long long)rc.total_steps(), m("reward_mean"), m("k3_kl"),
                            m("grad_norm"), m("F@2"), m("tokens_per_s"), fmt_eta(eta).c_str());
                std::fflush(stdout);
            }
        }
    } catch (...) {
        rc.finish(RunStatus::failed);
        throw;
    }
    rc.finish(status);
    if (json) {
        std::cout << nlohmann::ordered_json{{"run_id", rc.run_id()}, {"status", run_status_name(status)}}.dump()
                  << "\n";
    } else {
        std::printf("run %lld %s after %lld steps\n", (long long)rc.run_id(), run_status_name(status),
                    (long long)rc.next_step());
    }
    return 0;
}

RunCallbacks cli_callbacks() {
    RunCallbacks cb;
    cb.on_base = [](const BaseProgress& p) {
        if (p.step % 100 == 0 || p.step == p.total)
            std::fprintf(stderr, "base policy: step %d/%d  loss %.3f  held-out reward %.3f\n", p.step, p.total, p.loss,
                         p.eval_reward);
    };
    cb.cancel = &g_stop;
    return cb;
}

int cmd_run(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--preset", "--config", "--set", "--steps", "--db", "--name", "--cache-dir"},
                             {"--json"});
    Config c = build_config(a);
    const int steps = a.get_int("--steps", 0);
    if (a.has("--steps") && steps < 1) throw UsageError("--steps: must be at least 1");
    if (steps > 0) apply_set(c, "rl.steps=" + std::to_string(steps));
    const std::string db = a.require("--db");
    print_warnings(c);
    Store store = Store::open(db);
    const std::string preset = a.get("--preset", "custom");
    const std::string name = a.get("--name", preset);
    RunController rc =
        RunController::create(store, c, preset, name, a.get("--cache-dir", default_cache_dir()), cli_callbacks());
    if (!a.has("--json"))
        std::printf("run %lld: %s, %lld steps, base policy %s (held-out reward %.3f)\n", (long long)rc.run_id(),
                    name.c_str(), (long long)rc.total_steps(), rc.base().from_cache ? "from cache" : "trained",
                    rc.base().eval_reward);
    return drive(rc, a.has("--json"));
}

int64_t parse_run_id(const Args& a) {
    if (a.positional.size() != 1) throw UsageError("expected exactly one RUN id");
    const std::string& s = a.positional[0];
    try {
        size_t used = 0;
        long long id = std::stoll(s, &used);
        if (used == s.size() && id > 0) return id;
    } catch (const std::exception&) {
    }
    throw UsageError("RUN: '" + s + "' is not a run id (a positive integer; see `runs`)");
}

Store open_existing(const Args& a) {
    const std::string db = a.require("--db");
    if (!std::ifstream(db)) throw UsageError("--db: " + db + " does not exist");
    return Store::open(db);
}

int cmd_resume(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--db", "--steps"}, {"--json"});
    const int64_t id = parse_run_id(a);
    const int steps = a.get_int("--steps", 0);
    Store store = open_existing(a);
    if (!store.run_info(id)) throw UsageError("run " + std::to_string(id) + " is not in " + store.path());
    RunController rc = RunController::resume(store, id, cli_callbacks(), steps);
    const int64_t from = *rc.resumed_from();
    if (from < 0)
        std::fprintf(stderr, "resuming run %lld from its base policy (no step checkpoint yet); starting at step 1\n",
                     (long long)id);
    else
        std::fprintf(stderr, "resuming run %lld from the checkpoint of step %lld; continuing at step %lld\n",
                     (long long)id, (long long)from + 1, (long long)from + 2);
    return drive(rc, a.has("--json"));
}

int cmd_runs(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--db"}, {"--json"});
    Store store = open_existing(a);
    auto runs = store.list_runs();
    if (a.has("--json")) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& r : runs)
            j.push_back({{"id", r.id},
                         {"name", r.name},
                         {"preset", r.preset},
                         {"status", r.status},
                         {"steps", r.steps},
                         {"created", r.created}});
        std::cout << j.dump() << "\n";
        return 0;
    }
    std::printf("%-5s %-28s %-26s %-9s %6s  %s\n", "id", "name", "preset", "status", "steps", "created");
    for (const auto& r : runs)
        std::printf("%-5lld %-28s %-26s %-9s %6lld  %s\n", (long long)r.id, r.name.c_str(), r.preset.c_str(),
                    r.status.c_str(), (long long)r.steps, r.created.c_str());
    return 0;
}

int cmd_show(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--db"}, {"--json"});
    const int64_t id = parse_run_id(a);
    Store store = open_existing(a);
    auto info = store.run_info(id);
    if (!info) throw UsageError("run " + std::to_string(id) + " is not in " + store.path());
    MetricTable t = store.all_metrics(id);
    std::printf("run %lld  %s\n  preset %s  status %s  steps %lld  seed %llu  created %s  app %s\n", (long long)id,
                info->name.c_str(), info->preset.c_str(), info->status.c_str(), (long long)info->steps,
                (unsigned long long)info->seed, info->created.c_str(), info->app_version.c_str());
    if (!info->notes.empty()) std::printf("  notes: %s\n", info->notes.c_str());
    Config defaults;
    Config c = config_from_json(nlohmann::json::parse(info->config_json));
    std::printf("configuration (differences from the defaults):\n");
    for (const auto& d : config_diff(defaults, c)) std::printf("  %-34s %s\n", d.key.c_str(), d.b.c_str());
    if (!t.steps.empty()) {
        std::printf("metrics: %-24s %12s %12s %12s\n", "", "first", "last", "best");
        for (const char* n : {"reward_mean", "accuracy", "k3_kl", "grad_norm", "F@2", "entropy", "router_diff_token"}) {
            for (size_t i = 0; i < t.names.size(); ++i) {
                if (t.names[i] != n) continue;
                double best = -INFINITY;
                for (const auto& row : t.values) best = std::fmax(best, row[i]);
                std::printf("  %-30s %12.4g %12.4g %12.4g\n", n, t.values.front()[i], t.values.back()[i], best);
            }
        }
    }
    for (const auto& ck : store.checkpoints(id))
        std::printf("checkpoint step %lld: %s\n", (long long)ck.step + 1, ck.path.c_str());
    return 0;
}

int cmd_presets(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {}, {"--json"});
    if (a.has("--json")) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& p : presets())
            j.push_back({{"name", p.name}, {"description", p.description}, {"config", p.config}});
        std::cout << j.dump(2) << "\n";
        return 0;
    }
    for (const auto& p : presets()) std::printf("%-28s %s\n", p.name.c_str(), p.description.c_str());
    return 0;
}

int cmd_export(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--db", "--format", "--out"}, {});
    const int64_t id = parse_run_id(a);
    const std::string format = a.require("--format"), out = a.require("--out");
    if (format != "csv" && format != "json")
        throw UsageError("--format: '" + format + "' is not allowed; allowed values: csv, json");
    Store store = open_existing(a);
    if (!store.run_info(id)) throw UsageError("run " + std::to_string(id) + " is not in " + store.path());
    std::string text = format == "csv" ? export_csv(store, {id}) : export_json(store, {id}).dump(1) + "\n";
    std::ofstream f(out, std::ios::binary);
    if (!f || !(f << text)) throw std::runtime_error("cannot write " + out);
    std::printf("wrote %s\n", out.c_str());
    return 0;
}

// Milliseconds per RL step by phase for each model preset, from random
// weights (the base policy does not change the cost of a step).
int cmd_bench(const std::vector<std::string>& argv) {
    Args a = cli::parse_args(argv, {"--steps", "--set"}, {"--json"});
    const int steps = a.get_int("--steps", 5);
    nlohmann::json all = nlohmann::json::array();
    if (!a.has("--json"))
        std::printf("%-12s %8s %11s %11s %11s %11s %10s   (%d steps, %d threads)\n", "preset", "params", "rollout_ms",
                    "recompute_ms", "train_ms", "step_ms", "tokens/s", steps, num_threads());
    for (const auto& name : model_preset_names()) {
        Config c;
        ModelConfig pm = model_preset(name);
        c.model.kind = pm.kind;
        c.model.size = pm.size == "tiny" ? ModelSize::tiny : ModelSize::small;
        for (const auto& kv : a.all("--set")) apply_set(c, kv);
        ModelConfig m = model_config_of(c);
        ParamLayout layout = make_param_layout(m);
        std::vector<float> params(layout.total);
        init_params(m, layout, params.data(), (uint64_t)c.seed);
        RlSession session(c, params, nullptr, 0, "", 0);
        session.step();  // warm caches and the thread pool
        double roll = 0, rec = 0, train = 0, tok = 0, wall = 0;
        for (int i = 0; i < steps; ++i) {
            auto t0 = std::chrono::steady_clock::now();
            StepRecord r = session.step();
            wall += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            roll += RlSession::metric(r, "rollout_ms");
            rec += RlSession::metric(r, "recompute_ms");
            train += RlSession::metric(r, "train_ms");
            tok += RlSession::metric(r, "tokens_per_s");
        }
        nlohmann::json j = {{"preset", name},
                            {"params", layout.total},
                            {"rollout_ms", roll / steps},
                            {"recompute_ms", rec / steps},
                            {"train_ms", train / steps},
                            {"step_ms", wall / steps},
                            {"tokens_per_s", tok / steps}};
        all.push_back(j);
        if (!a.has("--json"))
            std::printf("%-12s %8lld %11.1f %11.1f %11.1f %11.1f %10.0f\n", name.c_str(), (long long)layout.total,
                        roll / steps, rec / steps, train / steps, wall / steps, tok / steps);
    }
    if (a.has("--json")) std::cout << all.dump() << "\n";
    return 0;
}

const char* kUsage =
    "usage: mismatch-lab-cli <command> [options]\n"
    "commands:\n"
    "  probe --preset NAME [--set key=value ...] [--config FILE] [--checkpoint DIR] [--json] [--dump FILE]\n"
    "  checkpoint --preset NAME --out DIR [--set key=value ...]\n"
    "  run --preset P [--config FILE] [--set k=v ...] [--steps N] --db FILE [--name NAME] [--json] [--cache-dir DIR]\n"
    "  resume RUN --db FILE [--steps N] [--json]\n"
    "  runs --db FILE [--json]\n"
    "  show RUN --db FILE\n"
    "  presets [--json]\n"
    "  export RUN --db FILE --format csv|json --out FILE\n"
    "  bench [--steps N] [--set k=v ...] [--json]\n"
    "  report RUN [RUN ...] --db FILE --out FILE.html|FILE.pdf [--baseline RUN] [--step N] [--metric NAME ...]\n"
    "presets: a model preset (dense-tiny, moe-tiny, dense-small, moe-small) or an RL preset (see `presets`)\n";

}  // namespace

int main(int argc, char** argv) {
    std::map<std::string, std::function<int(const std::vector<std::string>&)>> commands = {
        {"probe", cmd_probe},
        {"checkpoint", cmd_checkpoint},
        {"run", cmd_run},
        {"resume", cmd_resume},
        {"runs", cmd_runs},
        {"show", cmd_show},
        {"presets", cmd_presets},
        {"export", cmd_export},
        {"bench", cmd_bench},
#ifdef MLK_WITH_REPORTS
        {"report", cli::cmd_report},
#endif
    };
    if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "help") {
        std::fputs(kUsage, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    auto it = commands.find(argv[1]);
    if (it == commands.end()) {
        std::fprintf(stderr, "mismatch-lab-cli: unknown command '%s'\n%s", argv[1], kUsage);
        return 2;
    }
    try {
        return it->second(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const UsageError& e) {
        std::fprintf(stderr, "mismatch-lab-cli %s: %s\n", argv[1], e.what());
        return 2;
    } catch (const std::invalid_argument& e) {  // ConfigError and other bad values
        std::fprintf(stderr, "mismatch-lab-cli %s: %s\n", argv[1], e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mismatch-lab-cli %s: error: %s\n", argv[1], e.what());
        return 1;
    }
}
