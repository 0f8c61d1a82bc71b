// `bench`: one RL step by phase for each model preset (or those named by
// --preset), from random weights (the base policy does not change the cost of
// a step): time, the floating-point work the kernels did (kernel_flop_count),
// GFLOP/s and the share of this machine's FP32 FMA peak, measured in the same
// run. `--blas` also times OpenBLAS sgemm at exactly the GEMM shapes each
// phase issued (bench_blas.cpp). `--device cuda` runs both engines on the GPU
// (rollout.device = train.device = cuda; the optimizer steps the weights on
// the host), `--device both` each preset on the CPU and then so, side by
// side; a GPU phase reports its GFLOP/s but no share of the CPU's peak.
#include <chrono>
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/bench_blas.h"
#include "app/cli/commands.h"
#include "core/config/presets.h"
#include "core/engines/device.h"
#include "core/model/model.h"
#include "core/rl/session.h"
#include "kernels/kernels.h"

namespace mlk::cli {

namespace {

constexpr const char* kPhaseNames[3] = {"rollout", "recompute", "train"};

struct PhaseTotals {
    double ms = 0, gflop = 0;
    GemmShapeLog shapes;  // every GEMM the phase issued, over the timed steps
};

// A phase on a device: its GFLOP/s, and a share of the CPU's peak only when
// the CPU ran it (null otherwise).
nlohmann::json phase_json(double ms, double gflop, double peak, const std::string& device) {
    const double gflops = ms > 0 ? gflop / (ms * 1e-3) : 0;
    nlohmann::json j = {{"ms", ms}, {"gflop", gflop}, {"gflops", gflops}, {"device", device}};
    j["percent_of_peak"] = device == "cpu" ? nlohmann::json(100 * gflops / peak) : nlohmann::json(nullptr);
    return j;
}

}  // namespace

int cmd_bench(const Argv& argv) {
    Spec spec;
    spec.values = {"--steps", "--set", "--preset", "--device"};
    spec.repeatable = {"--set", "--preset"};
    spec.flags = {"--json", "--blas"};
    const Args a = parse_args(argv, spec);
    const int steps = parse_steps(a, 5);
    const bool blas = a.has("--blas");
    const std::string device_arg = a.get("--device");
    std::vector<std::optional<Device>> devices{std::nullopt};  // nullopt: as the config says
    if (device_arg == "cpu") devices = {Device::cpu};
    else if (device_arg == "cuda") devices = {Device::cuda};
    else if (device_arg == "both") devices = {Device::cpu, Device::cuda};
    else if (!device_arg.empty())
        throw std::invalid_argument("--device: \"" + device_arg + "\" is not allowed; allowed values: cpu, cuda, both");
    {  // every --set checked once, before the first (slow) preset runs
        Config c;
        for (const auto& kv : a.all("--set")) apply_set(c, kv);
        validate(c);
        for (const auto& d : devices) {  // each device asked for, before any preset runs
            Config on = c;
            if (d) on.rollout.device = on.train.device = *d;
            check_devices(on);
        }
        if (c.kernels.threads > 0) set_num_threads(c.kernels.threads);
    }
    // A model preset benches its model with the default numerics; an RL
    // preset its model and its numerics (FP8 quantises every GEMM input).
    std::vector<std::string> names = a.all("--preset");  // default: every model preset
    for (const auto& n : names) preset_named(n);         // every name checked before the first runs
    if (names.empty()) names = model_preset_names();
    const bool json = a.has("--json");
    const double peak = fma_peak_gflops(num_threads());
    if (!json) {
        std::printf("FP32 FMA peak, %d threads, measured now: %.1f GFLOP/s; %d timed steps per preset\n", num_threads(),
                    peak, steps);
        std::printf("(a phase on a GPU shows \"gpu\" for its share of the CPU peak)\n");
        std::printf("%-26s %8s %8s | %-21s | %-21s | %-21s | %s\n", "preset", "params", "kernels",
                    "rollout ms GF/s %pk", "recompute ms GF/s %pk", "train ms GF/s %pk",
                    "step ms GFLOP GF/s %peak tok/s");
    }
    nlohmann::json all = nlohmann::json::array();
    std::string described_device;
    for (const auto& name : names)
        for (const auto& device : devices) {
            Config c = preset_named(name);
            for (const auto& kv : a.all("--set")) apply_set(c, kv);
            if (device) c.rollout.device = c.train.device = *device;
            ModelConfig m = model_config_of(c);
            ParamLayout layout = make_param_layout(m);
            std::vector<float> params(layout.total);
            init_params(m, layout, params.data(), (uint64_t)c.seed);
            RlSession session(c, params, nullptr, 0, "", 0);
            const std::string rollout_device = session.rollout_device_name();
            const std::string train_device = session.train_device_name();
            for (const std::string& d : {rollout_device, train_device})
                if (!json && d != "cpu" && d != described_device)
                    std::printf("device: %s\n", (described_device = d).c_str());
            const auto on = [](const std::string& d) { return d == "cpu" ? "cpu" : "gpu"; };
            const std::string phase_device[3] = {on(rollout_device), on(train_device), on(train_device)};
            session.step();  // warm caches, scratch buffers and the thread pool

            PhaseTotals ph[3];
            double wall = 0, tok = 0;
            for (int i = 0; i < steps; ++i) {
                // Phase boundaries arrive on this thread, the one the kernels count on.
                int cur = -1;
                double flop0 = 0;
                const auto close = [&] {
                    if (cur >= 0) ph[cur].gflop += (kernel_flop_count() - flop0) * 1e-9;
                    set_gemm_shape_log(nullptr);
                };
                const auto open = [&](int p) {
                    close();
                    cur = p;
                    flop0 = kernel_flop_count();
                    if (blas && p >= 0) set_gemm_shape_log(&ph[p].shapes);
                };
                const auto t0 = std::chrono::steady_clock::now();
                const StepRecord r = session.step([&](Phase p) {
                    open(p == Phase::rollout ? 0 : p == Phase::recompute ? 1 : p == Phase::training ? 2 : -1);
                });
                close();
                wall += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
                ph[0].ms += RlSession::metric(r, "rollout_ms");
                ph[1].ms += RlSession::metric(r, "recompute_ms");
                ph[2].ms += RlSession::metric(r, "train_ms");
                tok += RlSession::metric(r, "tokens_per_s");
            }
            const double step_ms = wall / steps;
            const double step_gflop = (ph[0].gflop + ph[1].gflop + ph[2].gflop) / steps;
            const double step_gflops = step_gflop / (step_ms * 1e-3);
            const char* family = c.kernels.batch_invariant ? "batch-invariant" : "fast";
            const bool all_cpu = rollout_device == "cpu" && train_device == "cpu";
            nlohmann::json j = {
                {"preset", name},           {"params", layout.total},           {"kernels", family},
                {"threads", num_threads()}, {"rollout_device", rollout_device}, {"train_device", train_device},
                {"step_ms", step_ms},       {"step_gflop", step_gflop},         {"step_gflops", step_gflops},
                {"peak_gflops", peak},      {"tokens_per_s", tok / steps}};
            // A step with a GPU phase has no share of the CPU's peak.
            j["percent_of_peak"] = all_cpu ? nlohmann::json(100 * step_gflops / peak) : nlohmann::json(nullptr);
            for (int p = 0; p < 3; ++p) {
                j[kPhaseNames[p]] = phase_json(ph[p].ms / steps, ph[p].gflop / steps, peak, phase_device[p]);
                j[std::string(kPhaseNames[p]) + "_ms"] = ph[p].ms / steps;
            }
            if (!json) {
                const std::string label = all_cpu ? name : name + " (gpu)";
                std::printf("%-26s %8lld %8s |", label.c_str(), (long long)layout.total,
                            c.kernels.batch_invariant ? "bi" : "fast");
                for (int p = 0; p < 3; ++p) {
                    const auto& q = j[kPhaseNames[p]];
                    std::printf(" %7.1f %6.1f ", q["ms"].get<double>(), q["gflops"].get<double>());
                    if (q["percent_of_peak"].is_null()) std::printf("  gpu |");
                    else std::printf("%4.1f%% |", q["percent_of_peak"].get<double>());
                }
                std::printf(" %7.1f %6.2f %6.1f ", step_ms, step_gflop, step_gflops);
                if (all_cpu) std::printf("%4.1f%%", 100 * step_gflops / peak);
                else std::printf("    -");
                std::printf(" %7.0f\n", tok / steps);
            }
            if (blas) {
                const Family fam = c.kernels.batch_invariant ? Family::batch_invariant : Family::fast;
                nlohmann::json bj;
                for (int p = 0; p < 3; ++p) {
                    const GemmComparison g = compare_with_openblas(ph[p].shapes, fam, steps);
                    bj[kPhaseNames[p]] = {
                        {"gemm_shapes", g.shapes},
                        {"gemm_gflop", g.gflop},
                        {"ours_ms", g.ours_ms},
                        {"openblas_ms", g.openblas_ms},
                        {"ours_gflops", g.ours_ms > 0 ? g.gflop / (g.ours_ms * 1e-3) : 0},
                        {"openblas_gflops", g.openblas_ms > 0 ? g.gflop / (g.openblas_ms * 1e-3) : 0}};
                    if (!json)
                        std::printf(
                            "  %-9s GEMMs alone (%zu shapes, %.2f GFLOP/step): ours %.1f ms (%.1f GFLOP/s), OpenBLAS "
                            "sgemm %.1f ms (%.1f GFLOP/s), ours/OpenBLAS time %.2f\n",
                            kPhaseNames[p], g.shapes, g.gflop, g.ours_ms,
                            g.ours_ms > 0 ? g.gflop / (g.ours_ms * 1e-3) : 0, g.openblas_ms,
                            g.openblas_ms > 0 ? g.gflop / (g.openblas_ms * 1e-3) : 0,
                            g.openblas_ms > 0 ? g.ours_ms / g.openblas_ms : 0);
                }
                j["openblas"] = bj;
            }
            all.push_back(j);
            std::fflush(stdout);
        }
    if (json) std::cout << all.dump() << "\n";
    return 0;
}

}  // namespace mlk::cli
