// Redraw cost of the live chart grid at its worst expected size: 10 runs x
// 10,000 steps x 4 charts in a 1600x1000 window (K3 KL on a log axis). One
// "full redraw" = every chart re-synced, re-thinned and pushed with replace()
// plus the repaint of the whole grid: what a user waits for per live update
// or per zoom. Target: under 16 ms (one frame at 60 Hz).
//
//   mismatch-lab-bench-gui [--runs N] [--steps N] [--iterations N]
//                          [--point-budget N] [--screenshot PATH]
#include <QApplication>
#include <QElapsedTimer>
#include <QLineSeries>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "widgets/charts/chart_grid.h"
#include "widgets/data/run_data.h"

using namespace mlk;

namespace {

struct Options {
    int runs = 10;
    int steps = 10000;
    int iterations = 60;
    int pointBudget = MetricChart::kDefaultPointBudget;
    std::string screenshot;  // --screenshot PATH: the grid after the first draw
};

Options parseOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--screenshot")) {
            o.screenshot = argv[i + 1];
            continue;
        }
        const int value = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--runs")) o.runs = value;
        else if (!std::strcmp(argv[i], "--steps")) o.steps = value;
        else if (!std::strcmp(argv[i], "--iterations")) o.iterations = value;
        else if (!std::strcmp(argv[i], "--point-budget")) o.pointBudget = std::atoi(argv[i + 1]);
    }
    return o;
}

// Noisy curves with the shapes of the real metrics, so thinning and the
// robust range see realistic data (including exact zeros on the log chart).
StepRecord syntheticStep(int run, int64_t step, std::mt19937& rng) {
    std::normal_distribution<double> noise;
    const double t = double(step);
    StepRecord r;
    r.step = step;
    r.metrics = {
        {"reward_mean", 0.2 + 0.6 * (1 - std::exp(-t / (800.0 + 200 * run))) + 0.05 * noise(rng)},
        {"k3_kl", run % 3 == 0 ? 0.0 : 1e-3 / (1 + run) * std::exp(0.3 * noise(rng))},
        {"grad_norm", 1.0 + 0.3 * std::abs(noise(rng)) + (step % 997 == 0 ? 30.0 : 0.0)},
        {"F@2", 0.01 / (1 + run) * std::exp(0.2 * noise(rng))},
    };
    return r;
}

struct Stats {
    double min = 0, median = 0, p95 = 0, max = 0;
};

Stats statsOf(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    const auto at = [&](double q) { return ms[std::min(ms.size() - 1, std::size_t(q * double(ms.size() - 1) + 0.5))]; };
    return {ms.front(), at(0.5), at(0.95), ms.back()};
}

struct Timings {
    std::vector<double> update, paint, total;
};

// One redraw as the user waits for it: data -> series (redrawAllNow), then
// the event loop, which lays out and paints every chart that changed.
void timeRedraw(QApplication& app, ChartGrid& grid, Timings& t) {
    QElapsedTimer clock;
    clock.start();
    grid.redrawAllNow();
    const double updated = double(clock.nsecsElapsed()) / 1e6;
    app.processEvents();
    const double total = double(clock.nsecsElapsed()) / 1e6;
    t.update.push_back(updated);
    t.paint.push_back(total - updated);
    t.total.push_back(total);
}

void report(const char* scenario, const Timings& t) {
    const Stats u = statsOf(t.update), p = statsOf(t.paint), all = statsOf(t.total);
    // The minimum is the cost without the other tenants of a shared VM core.
    std::printf("%-30s min %6.2f  median %6.2f  p95 %6.2f ms  (series update %5.2f + layout/paint %5.2f)  %s\n",
                scenario, all.min, all.median, all.p95, u.median, p.median,
                all.p95 < 16.0 ? "under 16 ms" : "OVER 16 ms");
}

qsizetype pointsInSeries(const ChartGrid& grid, const Options& o) {
    qsizetype points = 0;
    for (MetricChart* chart : grid.charts())
        for (qint64 run = 1; run <= o.runs; ++run) {
            if (QLineSeries* s = chart->rawSeries(run)) points += s->count();
            if (QLineSeries* s = chart->smoothedSeries(run)) points += s->count();
        }
    return points;
}

}  // namespace

int main(int argc, char** argv) {
    // A bench must run on a headless machine; an explicit setting still wins.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const Options options = parseOptions(argc, argv);

    RunDataStore data;
    std::mt19937 rng(42);
    for (int run = 1; run <= options.runs; ++run) {
        data.addRun(
            {run, QStringLiteral("run %1").arg(run), QStringLiteral("running"), QStringLiteral("tiny"), {}, {}});
        std::vector<StepRecord> records;
        records.reserve(std::size_t(options.steps));
        for (int64_t s = 0; s < options.steps; ++s) records.push_back(syntheticStep(run, s, rng));
        data.appendSteps(run, records);
    }

    ChartGrid grid(&data);
    grid.chartFor(QStringLiteral("k3_kl"))->setLogScale(true);
    for (MetricChart* chart : grid.charts()) chart->setPointBudget(options.pointBudget);
    grid.resize(1600, 1000);
    grid.show();
    app.processEvents();

    QElapsedTimer first;
    first.start();
    grid.redrawAllNow();
    app.processEvents();
    const double firstMs = double(first.nsecsElapsed()) / 1e6;

    std::printf(
        "mismatch-lab-bench-gui: %d runs x %d steps x %lld charts, window 1600x1000, point budget %d/chart, "
        "%d iterations per scenario\n",
        options.runs, options.steps, static_cast<long long>(grid.charts().size()), options.pointBudget,
        options.iterations);
    std::printf(
        "first draw (EMA of every point, thinning, layout, paint): %.1f ms; %lld points in the series "
        "(from %lld raw values)\n",
        firstMs, static_cast<long long>(pointsInSeries(grid, options)),
        static_cast<long long>(options.runs) * options.steps * grid.charts().size());

    if (!options.screenshot.empty()) grid.grab().save(QString::fromStdString(options.screenshot));

    // Full redraw: a new shared x window re-thins, replaces and repaints every
    // series of every chart.
    Timings zoom;
    std::uniform_real_distribution<double> start(0, 0.6 * options.steps);
    for (int i = 0; i < options.iterations; ++i) {
        const double lo = std::floor(start(rng));
        grid.setSharedXRange(lo, lo + 0.1 * options.steps + double(i % 5) * 0.05 * options.steps);
        timeRedraw(app, grid, zoom);
    }
    report("full redraw (zoom, all series)", zoom);
    grid.resetZoom();
    timeRedraw(app, grid, zoom);

    // Live, every run gains a step at once: every series changes.
    Timings liveAll;
    int64_t nextStep = options.steps;
    for (int i = 0; i < options.iterations; ++i, ++nextStep) {
        for (int run = 1; run <= options.runs; ++run) data.appendStep(run, syntheticStep(run, nextStep, rng));
        timeRedraw(app, grid, liveAll);
    }
    report("live, all runs +1 step", liveAll);

    // Live, the usual case: one running run among finished ones.
    Timings liveOne;
    for (int i = 0; i < options.iterations; ++i, ++nextStep) {
        data.appendStep(1, syntheticStep(1, nextStep, rng));
        timeRedraw(app, grid, liveOne);
    }
    report("live, 1 of the runs +1 step", liveOne);
    return 0;
}
