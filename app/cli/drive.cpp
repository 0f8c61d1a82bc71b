#include "app/cli/drive.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "core/model/params.h"
#include "core/rl/footprint.h"

namespace mlk::cli {

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

}  // namespace

void print_warnings(const Config& c) {
    for (const auto& w : config_warnings(c)) std::fprintf(stderr, "warning: %s\n", w.c_str());
}

void print_footprint(const Config& c) {
    std::printf("model %s: %s\n", model_config_of(c).preset_name().c_str(), footprint_text(model_footprint(c)).c_str());
    std::fflush(stdout);  // before minutes of warm-up, also into a pipe
}

RunCallbacks cli_callbacks() {
    // From here on SIGINT / SIGTERM / SIGHUP (Ctrl-C, a service manager or a
    // batch system, a closed terminal) stop the run at the next step (or the
    // warm-up at its next step) with a resumable state, instead of killing
    // the process mid-write.
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGHUP, on_signal);
    RunCallbacks cb;
    cb.on_base = [layers = 0](const BaseProgress& p) mutable {
        // A growing warm-up also reports the step where the grown model takes over.
        const bool grown_now = layers != 0 && p.layers != layers;
        layers = p.layers;
        if (p.step % 100 != 0 && p.step != p.total && !grown_now) return;
        const std::string depth = p.layers < p.model_layers ? "  (" + std::to_string(p.layers) + " of " +
                                                                  std::to_string(p.model_layers) + " layers)"
                                  : grown_now ? "  (grown to " + std::to_string(p.layers) + " layers)"
                                              : std::string();
        std::fprintf(stderr, "base policy: step %d/%d  loss %.3f  held-out reward %.3f%s\n", p.step, p.total, p.loss,
                     p.eval_reward, depth.c_str());
    };
    cb.cancel = &g_stop;
    return cb;
}

bool stop_requested() { return g_stop; }

int drive(RunController& rc, bool json, bool lines) {
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
            if (lines && json) {
                nlohmann::ordered_json j = {{"step", rec.step}};
                for (const auto& [name, v] : rec.metrics) j[name] = json_number(v);
                std::cout << j.dump() << "\n" << std::flush;
            } else if (lines) {
                auto m = [&](const char* n) { return RlSession::metric(rec, n); };
                std::printf("step %lld/%lld  reward %.3f  k3_kl %.3e  grad_norm %.3f  F@2 %.3e  tok/s %.0f  ETA %s\n",
                            (long long)rec.step + 1, (long long)rc.total_steps(), m("reward_mean"), m("k3_kl"),
                            m("grad_norm"), m("F@2"), m("tokens_per_s"), eta_text(eta).c_str());
                std::fflush(stdout);
            }
            if (!rc.divergence().empty()) {
                status = RunStatus::diverged;
                break;
            }
        }
    } catch (const std::exception& e) {
        // Said at once: recording the failure may itself wait on the store
        // (a database locked by another process: up to its busy timeout).
        std::fprintf(stderr, "run %lld failed; recording it (`resume` continues from its last checkpoint)\n",
                     (long long)rc.run_id());
        std::fflush(stderr);
        rc.finish(RunStatus::failed, e.what());
        throw;
    }
    rc.finish(status);
    if (lines && json) {
        std::cout << nlohmann::ordered_json{{"run_id", rc.run_id()}, {"status", run_status_name(status)}}.dump()
                  << "\n";
    } else if (lines) {
        std::printf("run %lld %s after %lld steps\n", (long long)rc.run_id(), run_status_name(status),
                    (long long)rc.next_step());
    }
    if (status == RunStatus::diverged) {
        std::fprintf(stderr, "error: run %lld %s (the steps before it are stored)\n", (long long)rc.run_id(),
                     rc.divergence().c_str());
        return 1;
    }
    return status == RunStatus::stopped ? kExitStopped : 0;
}

int stopped_in_warmup(const StoppedInWarmup& e, const std::string& db, bool json) {
    if (json)
        std::cout
            << nlohmann::ordered_json{{"run_id", e.run_id}, {"status", run_status_name(RunStatus::stopped)}}.dump()
            << "\n";
    else
        std::printf(
            "run %lld stopped during the base-policy warm-up; `mismatch-lab-cli resume %lld --db %s` "
            "warms up again and runs it\n",
            (long long)e.run_id, (long long)e.run_id, db.c_str());
    return kExitStopped;
}

}  // namespace mlk::cli
