// `bench`: one RL step by phase for each model preset (or those named by
// --preset), from random weights (the base policy does not change the cost of
// a step): time, the floating-point work the kernels did (kernel_flop_count),
// GFLOP/s and the share of this machine's FP32 FMA peak, measured in the same
// run. `--blas` also times OpenBLAS sgemm at exactly the GEMM shapes each
// phase issued (bench_blas.cpp). `--device cuda` runs both engines on the GPU
// (rollout.device = train.device = cuda; the optimizer steps the weights on
// the host), `--device both` each preset on the CPU and then so, side by
// side; a GPU phase reports its GFLOP/s but no share of the CPU's peak.
// `--kernels both` runs each preset in both kernel families with their steps
// interleaved (fast, batch-invariant, fast, ...), so that both see the same
// machine, and prints batch-invariant / fast per phase. `--kernels same`
// runs two identical lanes of the config's family the same way: the noise
// floor of that ratio on this machine.
//
// The FMA peak is sampled right before every timed step and a preset's share
// of it is taken against the mean of its own samples: on a shared VM the peak
// moves with the other tenant (110-351 GFLOP/s within minutes on two Xeon
// vCPUs), and one sample at the start would credit or charge a whole run
// with that moment.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/bench_blas.h"
#include "app/cli/commands.h"
#include "core/config/presets.h"
#include "core/engines/device.h"
#include "core/metrics/sweep_stats.h"
#include "core/model/model.h"
#include "core/rl/session.h"
#include "kernels/kernels.h"

namespace mlk::cli {

namespace {

constexpr const char* kPhaseNames[3] = {"rollout", "recompute", "train"};

// One timed step: each phase's and the whole step's time and work.
struct StepSample {
    double ms[4] = {}, gflop[4] = {};  // rollout, recompute, train, step
};

struct PhaseTotals {
    double ms = 0, gflop = 0;
    GemmShapeLog shapes;  // every GEMM the phase issued, over the timed steps
};

// One RlSession of a preset on a device in one kernel family, and its timed steps.
struct Lane {
    Config cfg;
    std::unique_ptr<RlSession> session;
    PhaseTotals ph[3];
    double wall = 0, tok = 0;
    std::vector<StepSample> samples;  // the timed steps, in order
    std::string rollout_device, train_device;
    int64_t params = 0;
};

// Times one step of the lane, its phases apart. Phase boundaries arrive on
// this thread, the one the kernels count on.
void timed_step(Lane& lane, bool blas) {
    StepSample s;
    int cur = -1;
    double flop0 = 0;
    const auto close = [&] {
        if (cur >= 0) s.gflop[cur] += (kernel_flop_count() - flop0) * 1e-9;
        set_gemm_shape_log(nullptr);
    };
    const auto open = [&](int p) {
        close();
        cur = p;
        flop0 = kernel_flop_count();
        if (blas && p >= 0) set_gemm_shape_log(&lane.ph[p].shapes);
    };
    const auto t0 = std::chrono::steady_clock::now();
    const StepRecord r = lane.session->step([&](Phase p) {
        open(p == Phase::rollout ? 0 : p == Phase::recompute ? 1 : p == Phase::training ? 2 : -1);
    });
    close();
    s.ms[3] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.ms[0] = RlSession::metric(r, "rollout_ms");
    s.ms[1] = RlSession::metric(r, "recompute_ms");
    s.ms[2] = RlSession::metric(r, "train_ms");
    for (int p = 0; p < 3; ++p) {
        s.gflop[3] += s.gflop[p];
        lane.ph[p].ms += s.ms[p];
        lane.ph[p].gflop += s.gflop[p];
    }
    lane.wall += s.ms[3];
    lane.samples.push_back(s);
    lane.tok += RlSession::metric(r, "tokens_per_s");
}

// A phase on a device: its GFLOP/s, and a share of the CPU's peak only when
// the CPU ran it (null otherwise).
nlohmann::json phase_json(double ms, double gflop, double peak, const std::string& device) {
    const double gflops = ms > 0 ? gflop / (ms * 1e-3) : 0;
    nlohmann::json j = {{"ms", ms}, {"gflop", gflop}, {"gflops", gflops}, {"device", device}};
    j["percent_of_peak"] = device == "cpu" ? nlohmann::json(100 * gflops / peak) : nlohmann::json(nullptr);
    return j;
}

// OpenBLAS sgemm timed at exactly the GEMM shapes each phase issued (--blas).
nlohmann::json blas_comparison(const PhaseTotals (&ph)[3], const Config& c, int steps, bool json) {
    const Family fam = c.kernels.batch_invariant ? Family::batch_invariant : Family::fast;
    const OpenblasCore oc = openblas_core();
    nlohmann::json bj = {{"core", oc.core}, {"core_chosen_by", oc.chosen_by}};
    if (!oc.detected.empty()) bj["detected_core"] = oc.detected;
    for (int p = 0; p < 3; ++p) {
        const GemmComparison g = compare_with_openblas(ph[p].shapes, fam, steps);
        const double ours = g.ours_ms > 0 ? g.gflop / (g.ours_ms * 1e-3) : 0;
        const double theirs = g.openblas_ms > 0 ? g.gflop / (g.openblas_ms * 1e-3) : 0;
        bj[kPhaseNames[p]] = {{"gemm_shapes", g.shapes},      {"gemm_gflop", g.gflop}, {"ours_ms", g.ours_ms},
                              {"openblas_ms", g.openblas_ms}, {"ours_gflops", ours},   {"openblas_gflops", theirs}};
        if (!json)
            std::printf(
                "  %-9s GEMMs alone (%zu shapes, %.2f GFLOP/step): ours %.1f ms (%.1f GFLOP/s), OpenBLAS "
                "sgemm %.1f ms (%.1f GFLOP/s), ours/OpenBLAS time %.2f\n",
                kPhaseNames[p], g.shapes, g.gflop, g.ours_ms, ours, g.openblas_ms, theirs,
                g.openblas_ms > 0 ? g.ours_ms / g.openblas_ms : 0);
    }
    return bj;
}

// second / first, per phase and for the step, of two lanes' entries of
// interleaved steps (--kernels both: fast, then batch-invariant; --kernels
// same: two identical lanes, whose ratio shows how far this machine moves it
// with nothing to find): their times, and their times per GFLOP (the
// families sample different tokens from the same seed, so their work differs
// a little); and the median over the pairs of steps that ran one after the
// other of each pair's ratio of time per GFLOP, which a burst of the other
// tenant moves by one pair only, where it moves a mean. Added to both
// entries under `key`.
void add_lane_ratio(nlohmann::json& first, nlohmann::json& second, const Lane& first_lane, const Lane& second_lane,
                    const std::string& name, const char* key, const char* label, bool json) {
    const auto ratio = [&](const nlohmann::json& b, const nlohmann::json& a, const char* ms, const char* gflop) {
        const double tb = b[ms].get<double>(), ta = a[ms].get<double>();
        return nlohmann::json{{"time", tb / ta},
                              {"time_per_gflop", (tb / b[gflop].get<double>()) / (ta / a[gflop].get<double>())}};
    };
    // The pairs' median and its bootstrap interval, into entry j.
    const auto add_paired = [&](nlohmann::json& j, int p) {
        std::vector<double> r;
        for (size_t i = 0; i < std::min(first_lane.samples.size(), second_lane.samples.size()); ++i) {
            const StepSample &b = second_lane.samples[i], &a = first_lane.samples[i];
            r.push_back((b.ms[p] / b.gflop[p]) / (a.ms[p] / a.gflop[p]));
        }
        const Interval ci = bootstrap_median(r);
        j["paired_median_time_per_gflop"] = median(r);
        j["paired_median_interval"] = {ci.lo, ci.hi};
    };
    nlohmann::json r;
    for (int p = 0; p < 3; ++p) {
        r[kPhaseNames[p]] = ratio(second[kPhaseNames[p]], first[kPhaseNames[p]], "ms", "gflop");
        add_paired(r[kPhaseNames[p]], p);
    }
    r["step"] = ratio(second, first, "step_ms", "step_gflop");
    add_paired(r["step"], 3);
    first[key] = second[key] = r;
    if (json) return;
    std::printf("%-26s %8s %8s |", name.c_str(), "", label);
    for (const char* p : kPhaseNames)
        std::printf(" time %4.2f per GF %4.2f |", r[p]["time"].get<double>(), r[p]["time_per_gflop"].get<double>());
    std::printf(" step time %4.2f, per GFLOP %4.2f\n", r["step"]["time"].get<double>(),
                r["step"]["time_per_gflop"].get<double>());
    const auto paired_text = [](const nlohmann::json& q) {
        char t[64];
        const auto& ci = q["paired_median_interval"];
        std::snprintf(t, sizeof t, "%4.2f [%4.2f, %4.2f]", q["paired_median_time_per_gflop"].get<double>(),
                      ci[0].is_number() ? ci[0].get<double>() : NAN, ci[1].is_number() ? ci[1].get<double>() : NAN);
        return std::string(t);
    };
    std::printf("%-26s %8s %8s |", "", "", "paired");
    for (const char* p : kPhaseNames) std::printf(" med %-17s |", paired_text(r[p]).c_str());
    std::printf(" step median per GFLOP %s (%zu pairs)\n", paired_text(r["step"]).c_str(),
                std::min(first_lane.samples.size(), second_lane.samples.size()));
}

}  // namespace

int cmd_bench(const Argv& argv) {
    Spec spec;
    spec.values = {"--steps", "--set", "--preset", "--device", "--kernels"};
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
    const std::string kernels_arg = a.get("--kernels");
    std::vector<std::optional<bool>> families{std::nullopt};  // batch-invariant or not; nullopt: as the config says
    if (kernels_arg == "fast") families = {false};
    else if (kernels_arg == "batch-invariant") families = {true};
    else if (kernels_arg == "both") families = {false, true};
    else if (kernels_arg == "same") families = {std::nullopt, std::nullopt};
    else if (!kernels_arg.empty())
        throw std::invalid_argument("--kernels: \"" + kernels_arg +
                                    "\" is not allowed; allowed values: fast, batch-invariant, both, same");
    {  // every --set checked once, before the first (slow) preset runs
        Config c;
        for (const auto& kv : a.all("--set")) apply_set(c, kv);
        validate(c);
        for (const auto& d : devices) {  // each device asked for, before any preset runs
            Config on = c;
            if (d) on.rollout.device = on.train.device = *d;
            require_devices(on);
        }
        if (c.kernels.threads > 0) set_num_threads(c.kernels.threads);
    }
    // A model preset benches its model with the default numerics; an RL
    // preset its model and its numerics (FP8 quantises every GEMM input).
    std::vector<std::string> names = a.all("--preset");  // default: every model preset
    for (const auto& n : names) preset_named(n);         // every name checked before the first runs
    if (names.empty()) names = model_preset_names();
    if (blas) use_openblas_kernels_for_this_cpu(argv);
    const bool json = a.has("--json");
    if (!json) {
        std::printf(
            "FP32 FMA peak, %d threads: sampled before every timed step; %d timed steps per preset and "
            "kernel family\n",
            num_threads(), steps);
        std::printf("(a phase on a GPU shows \"gpu\" for its share of the CPU peak)\n");
        if (families.size() == 2)
            std::printf(
                "(paired: the median over the interleaved pairs of steps of each pair's ratio of time per GFLOP, with "
                "its 95%% bootstrap interval; an interval that holds 1.00 is no measured difference)\n");
        if (blas) {
            const OpenblasCore oc = openblas_core();
            std::printf("OpenBLAS: %s kernels", oc.core.c_str());
            if (oc.chosen_by == "bench")
                std::printf(
                    " (set by OPENBLAS_CORETYPE: OpenBLAS's own detection chose %s, its generic kernels, on "
                    "this CPU)",
                    oc.detected.c_str());
            else if (oc.chosen_by == "environment") std::printf(" (OPENBLAS_CORETYPE)");
            std::printf("\n");
        }
        std::printf("%-26s %8s %8s | %-21s | %-21s | %-21s | %-35s | %s\n", "preset", "params", "kernels",
                    "rollout ms GF/s %pk", "recompute ms GF/s %pk", "train ms GF/s %pk",
                    "step ms GFLOP GF/s %peak tok/s", "peak GF/s mean (min-max)");
    }
    nlohmann::json all = nlohmann::json::array();
    std::string described_device;
    for (const auto& name : names)
        for (const auto& device : devices) {
            std::vector<Lane> lanes(families.size());
            for (size_t f = 0; f < families.size(); ++f) {
                Lane& lane = lanes[f];
                lane.cfg = preset_named(name);
                for (const auto& kv : a.all("--set")) apply_set(lane.cfg, kv);
                if (device) lane.cfg.rollout.device = lane.cfg.train.device = *device;
                if (families[f]) lane.cfg.kernels.batch_invariant = *families[f];
                const ModelConfig m = model_config_of(lane.cfg);
                const ParamLayout layout = make_param_layout(m);
                lane.params = layout.total;
                std::vector<float> params(layout.total);
                init_params(m, layout, params.data(), (uint64_t)lane.cfg.seed);
                lane.session = std::make_unique<RlSession>(lane.cfg, std::move(params), nullptr, 0, "", 0);
                lane.rollout_device = lane.session->rollout_device_name();
                lane.train_device = lane.session->train_device_name();
                for (const std::string& d : {lane.rollout_device, lane.train_device})
                    if (!json && d != "cpu" && d != described_device)
                        std::printf("device: %s\n", (described_device = d).c_str());
                lane.session->step();  // warm caches, scratch buffers and the thread pool
            }
            std::vector<double> peaks;
            for (int i = 0; i < steps; ++i)
                for (Lane& lane : lanes) {
                    peaks.push_back(fma_peak_gflops(num_threads()));
                    timed_step(lane, blas);
                }
            double peak = 0;
            for (double p : peaks) peak += p / peaks.size();
            const auto [peak_min, peak_max] = std::minmax_element(peaks.begin(), peaks.end());
            std::vector<nlohmann::json> entries;  // one per lane, in the lanes' order
            for (Lane& lane : lanes) {
                const Config& c = lane.cfg;
                const auto& ph = lane.ph;
                const auto on = [](const std::string& d) { return d == "cpu" ? "cpu" : "gpu"; };
                const std::string phase_device[3] = {on(lane.rollout_device), on(lane.train_device),
                                                     on(lane.train_device)};
                const double step_ms = lane.wall / steps;
                const double step_gflop = (ph[0].gflop + ph[1].gflop + ph[2].gflop) / steps;
                const double step_gflops = step_gflop / (step_ms * 1e-3);
                const char* family = c.kernels.batch_invariant ? "batch-invariant" : "fast";
                const bool all_cpu = lane.rollout_device == "cpu" && lane.train_device == "cpu";
                nlohmann::json j = {{"preset", name},
                                    {"params", lane.params},
                                    {"kernels", family},
                                    {"threads", num_threads()},
                                    {"rollout_device", lane.rollout_device},
                                    {"train_device", lane.train_device},
                                    {"step_ms", step_ms},
                                    {"step_gflop", step_gflop},
                                    {"step_gflops", step_gflops},
                                    {"peak_gflops", peak},
                                    {"peak_gflops_min", *peak_min},
                                    {"peak_gflops_max", *peak_max},
                                    {"tokens_per_s", lane.tok / steps}};
                // A step with a GPU phase has no share of the CPU's peak.
                j["percent_of_peak"] = all_cpu ? nlohmann::json(100 * step_gflops / peak) : nlohmann::json(nullptr);
                for (int p = 0; p < 3; ++p) {
                    j[kPhaseNames[p]] = phase_json(ph[p].ms / steps, ph[p].gflop / steps, peak, phase_device[p]);
                    j[std::string(kPhaseNames[p]) + "_ms"] = ph[p].ms / steps;
                }
                if (!json) {
                    const std::string label = all_cpu ? name : name + " (gpu)";
                    std::printf("%-26s %8lld %8s |", label.c_str(), (long long)lane.params,
                                c.kernels.batch_invariant ? "bi" : "fast");
                    for (int p = 0; p < 3; ++p) {
                        const auto& q = j[kPhaseNames[p]];
                        std::printf(" %7.1f %6.1f ", q["ms"].get<double>(), q["gflops"].get<double>());
                        if (q["percent_of_peak"].is_null()) std::printf("   gpu |");
                        else std::printf("%5.1f%% |", q["percent_of_peak"].get<double>());
                    }
                    std::printf(" %7.1f %6.2f %6.1f ", step_ms, step_gflop, step_gflops);
                    if (all_cpu) std::printf("%4.1f%%", 100 * step_gflops / peak);
                    else std::printf("    -");
                    std::printf(" %7.0f | %6.1f (%.1f-%.1f)\n", lane.tok / steps, peak, *peak_min, *peak_max);
                }
                if (blas) j["openblas"] = blas_comparison(ph, c, steps, json);
                entries.push_back(std::move(j));
            }
            if (kernels_arg == "both")
                add_lane_ratio(entries[0], entries[1], lanes[0], lanes[1], name, "batch_invariant_over_fast", "bi/fast",
                               json);
            else if (kernels_arg == "same")
                add_lane_ratio(entries[0], entries[1], lanes[0], lanes[1], name, "second_over_first", "2nd/1st", json);
            for (auto& j : entries) all.push_back(std::move(j));
            std::fflush(stdout);
        }
    if (json) std::cout << all.dump() << "\n";
    return 0;
}

}  // namespace mlk::cli
